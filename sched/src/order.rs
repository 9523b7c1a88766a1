//! The order stage: which pending jobs a cycle considers, and in which order it serves
//! them. The order is a trait so that another policy (group quotas serve groups in
//! starvation order) replaces the default without touching the other stages.

use gantry_common::job::Job;

use crate::priority::Priorities;
use crate::time::Time;
use crate::view::ClusterView;

/// An order in which a cycle serves jobs.
pub trait JobOrder: std::fmt::Debug {
    /// What the order is (for diagnostics).
    fn name(&self) -> &'static str;

    /// Put the jobs in the order the cycle serves them.
    fn sort(&self, jobs: &mut [&Job]);
}

/// SGE's order: the higher priority (`prio`, [`crate::priority`]) first, then the
/// earlier submission, then the lower job id. Without priorities worked out, the POSIX
/// priority (`-p`) stands for them.
#[derive(Debug, Clone, Copy)]
pub struct PriorityOrder<'p> {
    priorities: Option<&'p Priorities>,
}

impl<'p> PriorityOrder<'p> {
    pub fn new(priorities: Option<&'p Priorities>) -> PriorityOrder<'p> {
        PriorityOrder { priorities }
    }

    /// The key a job is served by: lower first.
    pub fn key(&self, job: &Job) -> (u64, i64, gantry_proto::JobId) {
        let prio = match self.priorities {
            Some(p) => p
                .jobs
                .get(&job.id)
                .and_then(|j| j.pending_prio())
                .unwrap_or(0.0),
            None => f64::from(job.spec.priority),
        };
        (descending(prio), job.submit_time, job.id)
    }
}

/// A number's place in a descending order, as bits that sort ascending.
pub fn descending(x: f64) -> u64 {
    let bits = x.to_bits();
    let ascending = if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    };
    !ascending
}

impl JobOrder for PriorityOrder<'_> {
    fn name(&self) -> &'static str {
        "priority (tickets, urgency, -p), then submission"
    }

    fn sort(&self, jobs: &mut [&Job]) {
        jobs.sort_by_cached_key(|j| self.key(j));
    }
}

impl<'a> ClusterView<'a> {
    /// Does a cycle at `now` consider the job at all: not held, no start time (`-a`)
    /// still ahead, no predecessor (`-hold_jid`) still in the system, and not every
    /// pending task waiting for its array predecessors' (`-hold_jid_ad`: SGE keeps those
    /// tasks on a hold list of their own)?
    pub fn eligible(&self, job: &Job, now: Time) -> bool {
        !job.spec.held()
            && job.spec.start_after.is_none_or(|t| t <= now.secs())
            && !job
                .spec
                .hold_jids
                .iter()
                .any(|r| self.predecessor_active(r))
            && (job.spec.hold_jids_ad.is_empty() || {
                let predecessors = self.array_predecessors(job);
                !job.tasks
                    .pending()
                    .iter()
                    .all(|t| crate::view::waits_for_array_task(&predecessors, t))
            })
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
