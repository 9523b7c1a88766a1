//! Group quotas in the cycle: the *admit* stage's gate (a job's group at its
//! allocation takes no more slots this cycle) and the *order* stage (groups served in
//! starvation order, the root last).

use gantry_proto::{GroupEntry, JobId};
use std::collections::{HashMap, HashSet};

use gantry_common::formula::Formula;
use gantry_common::job::Job;

use crate::decisions::{Dispatch, Misfit};
use crate::gate::Gate;
use crate::groups::{allocate, Allocation, GroupShare};
use crate::model::{Demand, Part, Snapshot};
use crate::order::JobOrder;
use crate::place::{Category, CategoryKey};
use crate::view::ClusterView;
use gantry_common::groups::ROOT;
use weight::SlotWeight;

mod weight;

/// Below this, an amount is nothing.
const EPSILON: f64 = 1e-9;

/// Maps and sets hashed with foldhash: looked up per job and per placement, where
/// SipHash cost a tenth of what group quotas add to a cycle.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
type FastSet<K> = HashSet<K, foldhash::fast::RandomState>;

/// The declared group an account string names (by path, or path and user), else the
/// root.
fn group_named<'a>(declared: &FastSet<String>, account: &'a str) -> &'a str {
    gantry_common::groups::declared_group(account, |n| declared.contains(n)).unwrap_or(ROOT)
}

/// Which group of the gate an account string names.
#[derive(Debug, Clone)]
pub(crate) struct GroupLookup {
    declared: FastSet<String>,
    index: FastMap<String, usize>,
}

impl GroupLookup {
    pub(crate) fn index_of(&self, account: &str) -> Option<usize> {
        self.index
            .get(group_named(&self.declared, account))
            .copied()
    }
}

/// A group's place in the starvation order (`group_sort`, lower served first, given its
/// usage): a value that is not a number (a division by zero: a group of quota 0 with the
/// default `usage/quota`) puts it after every group that has one, before the root.
fn starvation(sort: &Formula, g: &GroupShare, usage: f64) -> f64 {
    let key = sort.eval(&|name| match name {
        "usage" => Some(usage),
        "quota" => Some(g.quota),
        "demand" => Some(g.demand),
        "allocation" => Some(g.allocation),
        "surplus" => Some(g.surplus),
        _ => None,
    });
    if key.is_finite() {
        key
    } else {
        f64::MAX / 2.0
    }
}

/// A cycle's group quotas: the allocation and what each group uses.
#[derive(Debug, Clone)]
pub struct GroupGate {
    pub(crate) lookup: GroupLookup,
    /// Group names, and per group its allocation and the slots its jobs hold (running,
    /// and placed this cycle).
    names: Vec<String>,
    pub(crate) groups: Vec<(f64, f64)>,
    /// Per group, what it asks for in this round's allocation (rounds lower it to
    /// what a group could use), and the pool the allocation shares.
    demand: Vec<f64>,
    pool: f64,
    /// Per group: what its jobs ask for (running and pending); does it take part in
    /// the autoregroup pass; does that pass lift its limit now.
    asked: Vec<f64>,
    autoregroup: Vec<bool>,
    unlimited: Vec<bool>,
    /// A category's group (by the category's number in the cycle): resolved once.
    by_category: Vec<Option<usize>>,
    /// What a job's slots weigh.
    weight: SlotWeight,
}

impl GroupGate {
    /// The group of a demand: by its category when known, else looked up.
    fn group_of(&mut self, d: &Demand) -> Option<usize> {
        if let Some(Some(g)) = self.by_category.get(d.category) {
            return Some(*g);
        }
        let g = self.lookup.index_of(&d.account)?;
        if d.category > 0 {
            if self.by_category.len() <= d.category {
                self.by_category.resize(d.category + 1, None);
            }
            self.by_category[d.category] = Some(g);
        }
        Some(g)
    }

    /// A parallel job's `JOB` consumables (its per-job part) take no slots: its slots
    /// are counted with its per-slot part.
    fn slots_of(d: &Demand, slots: u32) -> Option<f64> {
        (d.part != Part::PerJob).then_some(slots as f64)
    }

    fn refuses(&self, g: usize, weight: f64) -> bool {
        let (allocation, used) = self.groups[g];
        !self.unlimited[g] && used + weight > allocation + EPSILON
    }

    /// After a pass: a group that could not use its allocation asks only for what it
    /// got, and the allocation over `tree` is computed again. The groups that now get
    /// more and still ask for more than they hold (to be served again), or None when no
    /// group would.
    pub(crate) fn next_round(&mut self, tree: &[GroupEntry]) -> Option<HashSet<usize>> {
        let mut lowered = false;
        for (g, (allocation, used)) in self.groups.iter().enumerate() {
            if *used + EPSILON < *allocation && self.demand[g] > *used + EPSILON {
                self.demand[g] = *used;
                lowered = true;
            }
        }
        if !lowered {
            return None;
        }
        let demand: HashMap<String, f64> = self
            .names
            .iter()
            .cloned()
            .zip(self.demand.iter().copied())
            .collect();
        let allocation = allocate(tree, &demand, self.pool, self.weight.is_slots());
        let mut grew = HashSet::new();
        for (g, share) in allocation.groups.iter().enumerate().take(self.groups.len()) {
            if share.allocation > self.groups[g].0 + EPSILON && self.wants_more(g) {
                grew.insert(g);
            }
            self.groups[g].0 = share.allocation;
        }
        (!grew.is_empty()).then_some(grew)
    }

    /// Do the group's jobs ask for more than they hold?
    fn wants_more(&self, g: usize) -> bool {
        self.asked[g] > self.groups[g].1 + EPSILON
    }

    /// The autoregroup pass: when a group with `autoregroup` still asks for more than
    /// it holds, lift the limit of every such group and of the root; the groups to
    /// serve, or None.
    pub(crate) fn open_autoregroup(&mut self) -> Option<HashSet<usize>> {
        let mut open: HashSet<usize> = (0..self.groups.len())
            .filter(|&g| self.autoregroup[g] && self.wants_more(g))
            .collect();
        if open.is_empty() {
            return None;
        }
        open.extend((0..self.groups.len()).filter(|&g| self.autoregroup[g]));
        if let Some(root) = self.names.iter().position(|n| n == ROOT) {
            open.insert(root);
        }
        for &g in &open {
            self.unlimited[g] = true;
        }
        Some(open)
    }
}

impl Gate for GroupGate {
    fn name(&self) -> &'static str {
        "group quotas"
    }

    fn admit(
        &mut self,
        snap: &Snapshot,
        d: &Demand,
        _inst: usize,
        slots: u32,
        detail: bool,
    ) -> Result<(), Misfit> {
        let (Some(g), Some(slots)) = (self.group_of(d), Self::slots_of(d, slots)) else {
            return Ok(());
        };
        if !self.refuses(g, self.weight.of_requests(snap, &d.hard, slots)) {
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

    /// Known only while a weighted slot is a slot (a formula needs the snapshot); on
    /// every instance alike.
    fn known_refused(&self, d: &Demand, _inst: usize, slots: u32) -> Option<Misfit> {
        let known = self.weight.is_slots()
            && d.part != Part::PerJob
            && matches!(self.by_category.get(d.category),
                Some(Some(g)) if self.refuses(*g, slots as f64));
        known.then_some(Misfit::QuotaEverywhere)
    }

    fn book(&mut self, snap: &Snapshot, d: &Demand, grants: &[(usize, u32)], sign: f64) {
        if d.part == Part::PerJob {
            return;
        }
        let slots: f64 = grants.iter().map(|(_, n)| *n as f64).sum();
        if let Some(g) = self.group_of(d) {
            self.groups[g].1 += sign * self.weight.of_requests(snap, &d.hard, slots);
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
    lookup: GroupLookup,
    /// Per group (by the gate's numbers), its key's bits, made to order as the numbers
    /// do (negative ones too).
    keys: Vec<u64>,
    /// Within a group, jobs by their priority ([`crate::priority`]).
    priorities: Option<std::sync::Arc<crate::priority::Priorities>>,
}

impl StarvationOrder {
    fn key_bits(key: f64) -> u64 {
        let bits = key.to_bits();
        if bits >> 63 == 1 {
            !bits
        } else {
            bits | 1 << 63
        }
    }

    fn key(&self, group: Option<usize>, job: &Job) -> (u64, (u64, i64, JobId)) {
        let starvation = group.map_or(u64::MAX, |g| self.keys[g]);
        (
            starvation,
            crate::order::PriorityOrder::new(self.priorities.as_deref()).key(job),
        )
    }

    /// The same order, jobs within a group served by these priorities.
    pub fn with_priorities(mut self, p: std::sync::Arc<crate::priority::Priorities>) -> Self {
        self.priorities = Some(p);
        self
    }

    /// The jobs in order, with each one's group (by the gate's numbers), looked up
    /// once for the sort and the later passes.
    pub(crate) fn sorted<'j>(&self, jobs: Vec<&'j Job>) -> (Vec<&'j Job>, Vec<Option<usize>>) {
        let groups: Vec<Option<usize>> = jobs
            .iter()
            .map(|j| self.lookup.index_of(&j.spec.account))
            .collect();
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        order.sort_by_cached_key(|&i| self.key(groups[i], jobs[i]));
        (
            order.iter().map(|&i| jobs[i]).collect(),
            order.iter().map(|&i| groups[i]).collect(),
        )
    }
}

impl JobOrder for StarvationOrder {
    fn name(&self) -> &'static str {
        "groups in starvation order, then priority, then submission"
    }

    fn sort(&self, jobs: &mut [&Job]) {
        // Each job's group looked up once, not per comparison.
        jobs.sort_by_cached_key(|j| self.key(self.lookup.index_of(&j.spec.account), j));
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
        let declared: FastSet<String> = self.group_tree.iter().map(|g| g.name.clone()).collect();
        let conf = self.sched_conf();
        let weight = SlotWeight::new(&conf.group_slot_weight);
        // Per group named (borrowed from the accounts: no string made per job), what
        // its jobs hold and ask for.
        let mut counted: FastMap<&str, (f64, f64)> = FastMap::default();
        let mut count = |account: &'a str, (running, pending): (f64, f64)| {
            let c = counted
                .entry(group_named(&declared, account))
                .or_insert((0.0, 0.0));
            c.0 += running;
            c.1 += running + pending;
        };
        // A job in an advance reservation runs in what the reservation holds: the
        // reservation counts instead, in its own group (`qrsub -A`), while its window
        // is open, as a running job would.
        for job in self.jobs.values().filter(|j| j.spec.ar.is_none()) {
            count(&job.spec.account, weight.of_job(snap, job));
        }
        for ar in self.ars.values() {
            let open = ar.start <= snap.now.secs() && snap.now.secs() < ar.end;
            if open && crate::ar::holds(ar) {
                count(&ar.spec.account, (weight.of_reservation(snap, ar), 0.0));
            }
        }
        let demand: HashMap<String, f64> =
            counted.iter().map(|(g, c)| (g.to_string(), c.1)).collect();
        let used: FastMap<&str, f64> = counted.iter().map(|(g, c)| (*g, c.0)).collect();
        let pool = weight.pool(snap);
        let mut allocation = allocate(self.group_tree, &demand, pool, weight.is_slots());
        for g in &mut allocation.groups {
            g.running = used.get(g.name.as_str()).copied().unwrap_or(0.0);
        }
        let mut names = Vec::new();
        let mut groups = Vec::new();
        let mut index = FastMap::default();
        let mut keys = Vec::new();
        for g in &allocation.groups {
            let u = used.get(g.name.as_str()).copied().unwrap_or(0.0);
            index.insert(g.name.clone(), names.len());
            names.push(g.name.clone());
            groups.push((g.allocation, u));
            let key = if g.name == ROOT {
                f64::MAX
            } else {
                starvation(&conf.group_sort, g, u)
            };
            keys.push(StarvationOrder::key_bits(key));
        }
        let demand: Vec<f64> = allocation.groups.iter().map(|g| g.demand).collect();
        let autoregroup: Vec<bool> = allocation.groups.iter().map(|g| g.autoregroup).collect();
        let lookup = GroupLookup { declared, index };
        Some((
            allocation,
            GroupGate {
                lookup: lookup.clone(),
                asked: demand.clone(),
                demand,
                pool,
                autoregroup,
                unlimited: vec![false; names.len()],
                names,
                groups,
                by_category: Vec::new(),
                weight,
            },
            StarvationOrder {
                lookup,
                keys,
                priorities: None,
            },
        ))
    }
}

/// What the passes of one cycle's dispatch share: the jobs in order, their categories
/// (numbered across the passes: gates remember things per category), the tasks earlier
/// passes placed (not placed again), the `-R y` jobs already given a reservation, how
/// many more may get one, and which jobs a pass takes.
pub(crate) struct DispatchPass<'j> {
    pub(crate) ordered: Option<Vec<&'j Job>>,
    /// A job's key is every request it makes (a dozen lists and strings), hashed once
    /// per pending job and pass: foldhash, seeded per process, costs a fraction of
    /// SipHash there (7 % of a plain cycle's instructions went to hashing keys).
    pub(crate) categories: HashMap<CategoryKey<'j>, Option<Category>, foldhash::fast::RandomState>,
    /// Per job, how many tasks earlier passes placed: always its first ready ones (a
    /// pass places a job's ready tasks lowest first until one finds no room), noted
    /// from the dispatches before a later pass.
    pub(crate) placed: FastMap<JobId, usize>,
    noted: usize,
    pub(crate) reserved: HashSet<JobId>,
    pub(crate) reservations_left: u32,
    /// A later pass of group quotas: per group (by the group gate's numbers), is it
    /// served; the jobs in an advance reservation are not (the first pass placed them
    /// in it).
    only: Option<Vec<bool>>,
    /// Each ordered job's group, looked up once for the later passes.
    pub(crate) job_groups: Vec<Option<usize>>,
    lookup: Option<GroupLookup>,
}

impl<'j> DispatchPass<'j> {
    pub(crate) fn new(max_reservation: u32) -> DispatchPass<'j> {
        DispatchPass {
            ordered: None,
            categories: HashMap::default(),
            placed: FastMap::default(),
            noted: 0,
            reserved: HashSet::new(),
            reservations_left: max_reservation,
            only: None,
            job_groups: Vec::new(),
            lookup: None,
        }
    }

    /// The next pass serves only `groups` (by the gate's numbers): their categories,
    /// which the group gate closed, are opened again where they stood (the candidates
    /// before were full, and stay so); a parallel job's, whose environment's
    /// allocation starts from the first candidate anyway, from there.
    pub(crate) fn serve_again(&mut self, gate: &GroupGate, groups: HashSet<usize>) {
        let lookup = &gate.lookup;
        for cat in self.categories.values_mut().flatten() {
            if lookup
                .index_of(&cat.demand.account)
                .is_some_and(|g| groups.contains(&g))
            {
                if cat.demand.pe.is_some() {
                    cat.reopen();
                } else {
                    cat.closed = false;
                }
            }
        }
        let mut served = vec![false; gate.groups.len()];
        for g in groups {
            if let Some(s) = served.get_mut(g) {
                *s = true;
            }
        }
        self.only = Some(served);
        self.lookup = Some(lookup.clone());
    }

    /// Does this pass consider the `i`th job in order?
    pub(crate) fn takes(&mut self, i: usize, job: &Job) -> bool {
        let (Some(served), Some(lookup)) = (&self.only, &self.lookup) else {
            return true;
        };
        if job.spec.ar.is_some() {
            return false;
        }
        if self.job_groups.len() <= i {
            self.job_groups.resize(i + 1, None);
            self.job_groups[i] = lookup.index_of(&job.spec.account);
        }
        self.job_groups[i].is_some_and(|g| served[g])
    }

    /// Note what the passes so far placed (`out`, their dispatches).
    pub(crate) fn note(&mut self, out: &[Dispatch]) {
        for d in &out[self.noted..] {
            *self.placed.entry(d.job_id).or_default() += 1;
        }
        self.noted = out.len();
    }
}
