//! The usage book: what running jobs use under the quota sets, kept by the cluster
//! state as tasks start and end, and the state a cycle starts from.

use std::collections::HashMap;
use std::sync::Arc;

use gantry_common::rqs::QuotaSet;

use gantry_common::job::{Job, TaskState};

use crate::model::Catalog;

use super::*;

/// The quota sets compiled for the current configuration, and what running jobs use
/// under them: kept by the cluster state, task start by task end.
#[derive(Debug, Clone, Default)]
pub struct QuotaBook {
    pub quotas: Arc<Quotas>,
    pub usage: Usage,
    pub catalog: Option<Arc<Catalog>>,
    /// Host -> the host groups it belongs to.
    pub(crate) memberships: HashMap<String, Vec<String>>,
    /// The configuration changed (sets, usersets, host groups, complex): rebuild.
    stale: bool,
    /// A catalog of the complex built ahead, off the thread that answers clients (a
    /// `qconf -Mc` of a long list); used by the rebuild if it is of the complex then.
    prepared: Option<Arc<Catalog>>,
    /// How many counters the last scheduling cycle used (to size the next one's).
    cycle_counters: usize,
    /// The plans of the consumers counted since the last rebuild, by what decides them
    /// (a commit of many dispatches counts many tasks of few kinds).
    plans: HashMap<CountedKey, Arc<Plan>>,
}

/// What decides a counted task's plan: its owner, the owner's groups, its project, the
/// parallel environment it was granted and its hard requests.
type CountedKey = (
    String,
    Vec<String>,
    Option<String>,
    Option<String>,
    Vec<(String, String)>,
);

/// The plans a book keeps at most; more distinct consumers start the memo over.
const MAX_PLANS: usize = 4096;

impl QuotaBook {
    /// Something quota matching depends on changed: the book is rebuilt when the
    /// change is settled.
    pub fn mark_stale(&mut self) {
        self.stale = true;
    }

    pub fn is_stale(&self) -> bool {
        self.stale
    }

    /// Offer a catalog built ahead for the next rebuild.
    pub fn prepare_catalog(&mut self, catalog: Arc<Catalog>) {
        self.prepared = Some(catalog);
    }

    /// Rebuild the book if the configuration changed: compile the sets (in SGE's order),
    /// then count every running task once. `memberships` is host -> its host groups.
    pub fn settle(
        &mut self,
        complexes: &[gantry_proto::ComplexAttr],
        sets: Vec<QuotaSet>,
        usersets: HashMap<String, Vec<String>>,
        memberships: HashMap<String, Vec<String>>,
        jobs: &crate::model::JobTable,
    ) {
        if !self.stale {
            return;
        }
        let catalog = match self.prepared.take() {
            Some(c) if c.attrs == complexes => c,
            _ => Arc::new(Catalog::new(complexes)),
        };
        *self = QuotaBook {
            quotas: Arc::new(Quotas::new(sets, &catalog, usersets)),
            usage: Usage::default(),
            catalog: Some(catalog),
            memberships,
            stale: false,
            prepared: None,
            cycle_counters: self.cycle_counters,
            plans: HashMap::new(),
        };
        if self.quotas.is_empty() {
            return;
        }
        for job in jobs.values() {
            self.count(job, 1.0);
        }
    }

    /// Would [`QuotaBook::count`] change anything for this job (it has tasks placed and
    /// sets to count them under)? A caller sharing the book asks before it copies it.
    pub fn counts(&self, job: &Job) -> bool {
        !(self.stale || self.quotas.is_empty() || job.quota_exempt())
            && job.tasks.placed_states().next().is_some()
    }

    /// Count (or with `sign` -1 uncount) what a job's running tasks use under every
    /// set's effective rule, grant by grant.
    pub fn count(&mut self, job: &Job, sign: f64) {
        if !self.counts(job) {
            return;
        }
        let Some(catalog) = self.catalog.clone() else {
            return;
        };
        let mut d = None;
        for t in job.tasks.placed_states() {
            let (TaskState::Running { grants, pe, .. } | TaskState::Deleting { grants, pe, .. }) =
                t
            else {
                continue;
            };
            let key: CountedKey = (
                job.owner.user.clone(),
                job.owner.groups.clone(),
                job.spec.project.clone(),
                pe.clone(),
                job.spec.hard_resources.clone(),
            );
            let plan = match self.plans.get(&key) {
                Some(plan) => plan.clone(),
                None => {
                    let Some(d) = d
                        .get_or_insert_with(|| crate::model::demand(&catalog, job).ok())
                        .as_ref()
                    else {
                        return;
                    };
                    let consumer = Consumer::of(d, pe.as_deref());
                    let plan =
                        Arc::new(
                            self.quotas
                                .plan(&catalog, d, &consumer, &mut self.usage, false),
                        );
                    if self.plans.len() >= MAX_PLANS {
                        self.plans.clear();
                    }
                    self.plans.insert(key, plan.clone());
                    plan
                }
            };
            for (n, g) in grants.iter().enumerate() {
                let gates = self.gates_of_grant(&plan, g);
                Quotas::debit(&gates, &mut self.usage, g.slots, n == 0, sign);
            }
        }
    }

    /// The gates of `plan` at a grant's queue instance, as counting reads them.
    fn gates_of_grant(&mut self, plan: &Plan, g: &gantry_proto::Grant) -> Vec<RuleCheck> {
        let place = Place {
            queue: &g.queue,
            host: &g.host,
            host_groups: self.memberships.get(&g.host).map_or(&[][..], Vec::as_slice),
        };
        self.quotas
            .gates_at(plan, &place, &mut self.usage, &|_| None)
    }

    /// The limits what the running `job` uses is past, with every running task counted
    /// (as under a quota set made stricter than what runs): `exceeds limit "user1/////"
    /// in rule "max_u_slots/1"` each, the consumer and rule as `qstat -j` names them.
    pub fn over_limits(&mut self, job: &Job) -> Vec<String> {
        let mut over: Vec<String> = Vec::new();
        let Some(catalog) = self.catalog.clone().filter(|_| self.counts(job)) else {
            return over;
        };
        let Ok(d) = crate::model::demand(&catalog, job) else {
            return over;
        };
        for t in job.tasks.placed_states() {
            let (TaskState::Running { grants, pe, .. } | TaskState::Deleting { grants, pe, .. }) =
                t
            else {
                continue;
            };
            let consumer = Consumer::of(&d, pe.as_deref());
            let plan = self
                .quotas
                .plan(&catalog, &d, &consumer, &mut self.usage, false);
            for (n, g) in grants.iter().enumerate() {
                let gates = self.gates_of_grant(&plan, g);
                for gate in gates.iter().filter(|g| !g.allows(&self.usage, 0, n == 0)) {
                    let denial = self.quotas.denial(gate, &self.usage);
                    let text = format!(
                        "exceeds limit \"{}\" in rule \"{}\"",
                        denial.key, denial.rule
                    );
                    if !over.contains(&text) {
                        over.push(text);
                    }
                }
            }
        }
        over
    }

    /// The quota state a scheduling cycle starts from (none without an enabled set).
    /// The quota sets a cycle counts under (None: no set is enabled).
    pub fn cycle_quotas(&self) -> Option<Arc<Quotas>> {
        self.quotas
            .sets
            .iter()
            .any(|s| s.enabled)
            .then(|| self.quotas.clone())
    }

    pub fn cycle(&self) -> Option<QuotaCycle> {
        if !self.quotas.sets.iter().any(|s| s.enabled) {
            return None;
        }
        let mut usage = self.usage.clone();
        usage.reserve(self.cycle_counters);
        let mut cycle = QuotaCycle::new(self.quotas.clone(), usage);
        // As a rule a counter is checked through one gate: room for as many gates as
        // the counters of the last cycle, taken at once rather than grown into by
        // copying (megabytes in a big cluster, on fresh pages each time).
        cycle.reserve_gates(self.cycle_counters);
        Some(cycle)
    }

    /// A cycle used so many counters: the next one starts with room for as many (the
    /// largest seen; a `qstat -j` or `-w v` snapshot needs fewer).
    pub fn note_cycle_counters(&mut self, counters: usize) {
        self.cycle_counters = self.cycle_counters.max(counters);
    }
}
