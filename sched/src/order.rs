//! The order stage: which pending jobs a cycle considers, and in which order it serves
//! them. The order is a trait so that another policy (group quotas serve groups in
//! starvation order) replaces the default without touching the other stages.

use gantry_common::job::Job;

use crate::time::Time;
use crate::view::ClusterView;

/// An order in which a cycle serves jobs.
pub trait JobOrder: std::fmt::Debug {
    /// What the order is (for diagnostics).
    fn name(&self) -> &'static str;

    /// Put the jobs in the order the cycle serves them.
    fn sort(&self, jobs: &mut [&Job]);
}

/// SGE's order without share-based policies: the higher priority (`-p`) first, then
/// the earlier submission (the lower job id).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PriorityThenSubmission;

impl JobOrder for PriorityThenSubmission {
    fn name(&self) -> &'static str {
        "priority, then submission"
    }

    fn sort(&self, jobs: &mut [&Job]) {
        jobs.sort_by(|a, b| b.spec.priority.cmp(&a.spec.priority).then(a.id.cmp(&b.id)));
    }
}

impl<'a> ClusterView<'a> {
    /// Does a cycle at `now` consider the job at all: not held, no start time (`-a`)
    /// still ahead, no predecessor (`-hold_jid`) still in the system?
    pub fn eligible(&self, job: &Job, now: Time) -> bool {
        !job.spec.hold
            && job.spec.start_after.is_none_or(|t| t <= now.secs())
            && !job
                .spec
                .hold_jids
                .iter()
                .any(|r| self.predecessor_active(r))
    }

    /// The jobs with pending tasks a cycle at `now` considers, in `order`.
    pub fn pending_in_order(&self, now: Time, order: &dyn JobOrder) -> Vec<&'a Job> {
        let mut jobs = self.pending_eligible(now);
        order.sort(&mut jobs);
        jobs
    }

    /// The jobs with pending tasks a cycle at `now` considers, in no order.
    pub fn pending_eligible(&self, now: Time) -> Vec<&'a Job> {
        self.jobs
            .values()
            .map(|j| &**j)
            .filter(|j| j.tasks.has_pending() && self.eligible(j, now))
            .collect()
    }
}
