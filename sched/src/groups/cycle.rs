//! Group quotas in the cycle: the *admit* stage's gate (a job's group at its
//! allocation takes no more slots this cycle) and the *order* stage (groups served in
//! starvation order, the root last).

use std::collections::{HashMap, HashSet};

use gantry_common::job::{Job, TaskState};

use super::{allocate, Allocation};
use crate::admit::Gate;
use crate::model::{Demand, Misfit, Snapshot};
use crate::order::JobOrder;
use crate::view::ClusterView;
use gantry_common::groups::ROOT;

/// Below this, an amount is nothing.
const EPSILON: f64 = 1e-9;

/// The declared group an account string names (by path, or path and user), else the
/// root.
fn group_named<'a>(declared: &HashSet<String>, account: &'a str) -> &'a str {
    gantry_common::groups::declared_group(account, |n| declared.contains(n)).unwrap_or(ROOT)
}

/// The slots a pending task of the job takes (a parallel job: its range's minimum).
fn task_slots(job: &Job) -> f64 {
    job.spec
        .pe
        .as_ref()
        .and_then(|(_, range)| gantry_common::pe::parse_slot_range(range))
        .map_or(1.0, |(min, _)| min as f64)
}

/// The slots a job's tasks hold now (running or being deleted).
fn running_slots(job: &Job) -> f64 {
    job.tasks
        .placed_states()
        .map(|t| match t {
            TaskState::Running { grants, .. } | TaskState::Deleting { grants, .. } => {
                grants.iter().map(|g| g.slots as f64).sum()
            }
            _ => 0.0,
        })
        .sum()
}

/// A cycle's group quotas: the allocation and what each group uses.
#[derive(Debug, Clone)]
pub struct GroupGate {
    declared: HashSet<String>,
    /// Group names, and per group its allocation and the slots its jobs hold (running,
    /// and placed this cycle).
    names: Vec<String>,
    groups: Vec<(f64, f64)>,
    index: HashMap<String, usize>,
    /// A category's group (by the category's number in the cycle): resolved once.
    by_category: Vec<Option<usize>>,
}

impl GroupGate {
    /// The group of a demand: by its category when known, else looked up.
    fn group_of(&mut self, d: &Demand) -> Option<usize> {
        if let Some(Some(g)) = self.by_category.get(d.category) {
            return Some(*g);
        }
        let g = self
            .index
            .get(group_named(&self.declared, &d.account))
            .copied()?;
        if d.category > 0 {
            if self.by_category.len() <= d.category {
                self.by_category.resize(d.category + 1, None);
            }
            self.by_category[d.category] = Some(g);
        }
        Some(g)
    }

    fn refuses(&self, g: usize, slots: u32) -> bool {
        let (allocation, used) = self.groups[g];
        used + slots as f64 > allocation + EPSILON
    }
}

impl Gate for GroupGate {
    fn name(&self) -> &'static str {
        "group quotas"
    }

    fn admit(
        &mut self,
        _snap: &Snapshot,
        d: &Demand,
        _inst: usize,
        slots: u32,
        detail: bool,
    ) -> Result<(), Misfit> {
        let Some(g) = self.group_of(d) else {
            return Ok(());
        };
        if !self.refuses(g, slots) {
            return Ok(());
        }
        // The allocation decides on every queue instance alike.
        Err(if detail {
            Misfit::GroupAtAllocation {
                group: self.names[g].clone(),
                allocation: self.groups[g].0,
            }
        } else {
            Misfit::QuotaEverywhere
        })
    }

    fn known_refused(&self, d: &Demand, _inst: usize, slots: u32) -> bool {
        matches!(self.by_category.get(d.category), Some(Some(g)) if self.refuses(*g, slots))
    }

    fn book(&mut self, _snap: &Snapshot, d: &Demand, grants: &[(usize, u32)], sign: f64) {
        let slots: f64 = grants.iter().map(|(_, n)| *n as f64).sum();
        if let Some(g) = self.group_of(d) {
            self.groups[g].1 += sign * slots;
        }
    }

    /// With nothing running, a group's allocation is not known either: it follows the
    /// demand, which the job asked about is not part of yet (`qsub -w v`). No limit.
    fn forget_bookings(&mut self) {
        for (allocation, used) in &mut self.groups {
            *allocation = f64::INFINITY;
            *used = 0.0;
        }
    }

    fn clone_box(&self) -> Box<dyn Gate> {
        Box::new(self.clone())
    }
}

/// Groups served in starvation order: the least used for its quota first (a group of
/// quota 0 after every other), the root last; within a group by priority, then
/// submission.
#[derive(Debug, Clone)]
pub struct StarvationOrder {
    declared: HashSet<String>,
    keys: HashMap<String, f64>,
}

impl JobOrder for StarvationOrder {
    fn name(&self) -> &'static str {
        "groups in starvation order, then priority, then submission"
    }

    fn sort(&self, jobs: &mut [&Job]) {
        // Each job's group looked up once, not per comparison. Keys are never negative:
        // their bits order as the numbers do.
        let key = |j: &Job| {
            let g = group_named(&self.declared, &j.spec.account);
            let starvation = self.keys.get(g).copied().unwrap_or(f64::MAX).max(0.0);
            (
                starvation.to_bits(),
                std::cmp::Reverse(j.spec.priority),
                j.id,
            )
        };
        jobs.sort_by_cached_key(|j| key(j));
    }
}

impl<'a> ClusterView<'a> {
    /// The group quotas as the next cycle at `now` allocates them (`qquota -g`), on
    /// the configured snapshot (every queue instance's slots the pool), or None
    /// without a tree.
    pub fn group_allocation(&self) -> Option<Allocation> {
        if self.group_tree.is_empty() {
            return None;
        }
        let snap = self.snapshot_base();
        self.group_quotas(&snap).map(|(a, _, _)| a)
    }

    /// This cycle's group quotas over the snapshot's pool (every queue instance's
    /// slots), or None without a tree: the allocation, its gate and its order.
    pub fn group_quotas(
        &self,
        snap: &Snapshot,
    ) -> Option<(Allocation, GroupGate, StarvationOrder)> {
        if self.group_tree.is_empty() {
            return None;
        }
        let declared: HashSet<String> = self.group_tree.iter().map(|g| g.name.clone()).collect();
        let mut demand: HashMap<String, f64> = HashMap::new();
        let mut used: HashMap<String, f64> = HashMap::new();
        for job in self.jobs.values() {
            let g = group_named(&declared, &job.spec.account);
            let running = running_slots(job);
            let pending = job.tasks.pending().len() as f64 * task_slots(job);
            *demand.entry(g.to_string()).or_insert(0.0) += running + pending;
            *used.entry(g.to_string()).or_insert(0.0) += running;
        }
        let slots = snap.catalog.id("slots");
        let pool: f64 = snap
            .instances
            .iter()
            .filter_map(|i| {
                let o = i.layer.get(slots?)?;
                match o.fixed {
                    Some(gantry_common::value::Value::Num(n)) => Some(n),
                    _ => None,
                }
            })
            .sum();
        let mut allocation = allocate(self.group_tree, &demand, pool, true);
        for g in &mut allocation.groups {
            g.running = used.get(&g.name).copied().unwrap_or(0.0);
        }
        let mut names = Vec::new();
        let mut groups = Vec::new();
        let mut index = HashMap::new();
        let mut keys = HashMap::new();
        for g in &allocation.groups {
            let u = used.get(&g.name).copied().unwrap_or(0.0);
            index.insert(g.name.clone(), names.len());
            names.push(g.name.clone());
            groups.push((g.allocation, u));
            let key = if g.name == ROOT {
                f64::MAX
            } else if g.quota > EPSILON {
                u / g.quota
            } else {
                f64::MAX / 2.0
            };
            keys.insert(g.name.clone(), key);
        }
        Some((
            allocation,
            GroupGate {
                declared: declared.clone(),
                names,
                groups,
                index,
                by_category: Vec::new(),
            },
            StarvationOrder { declared, keys },
        ))
    }
}
