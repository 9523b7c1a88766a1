//! The master's side of the scheduler: its state lent to `gantry_sched` as a
//! [`ClusterView`]. The resource model, matching, the quota engine and the cycle are in
//! the `gantry-sched` crate; what the master's callers and tests name is re-exported here.

use gantry_proto::JobId;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::core::state::ClusterState;
use gantry_common::job::Job;

pub use gantry_sched::cycle::{
    CannotRun, Decisions, Dispatch, SchedConf, ThresholdActions, Trigger,
};
pub use gantry_sched::kept::{KeptCounters, KeptSnapshot};
pub use gantry_sched::matching::*;
pub use gantry_sched::model::*;
pub use gantry_sched::time::{Span, Time};
pub use gantry_sched::view::{ClusterImage, ClusterView, HostRuntime, JobTable, RuntimeTable};

/// A cycle's dispatches after [`ClusterState::revalidate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Revalidated {
    /// Still valid: to commit and send.
    pub kept: Vec<Dispatch>,
    /// How many were dropped.
    pub dropped: usize,
}

impl ClusterState {
    /// The state as the scheduler reads it: its input, with the global configuration's
    /// limits.
    pub fn view(&self) -> ClusterView<'_> {
        ClusterView {
            max_unheard: self.max_unheard(),
            max_aj_instances: self.max_aj_instances(),
            ..self.input.view()
        }
    }

    /// `max_aj_instances`: at most so many tasks of one array job run at once.
    fn max_aj_instances(&self) -> Option<u32> {
        self.global()
            .get("max_aj_instances")
            .and_then(|v| v.parse::<u32>().ok())
            .filter(|n| *n > 0)
    }

    /// The state as a cycle on another thread reads it: its input, shared, not copied
    /// (see [`ClusterImage`]).
    pub fn image(&self) -> ClusterImage {
        ClusterImage {
            max_unheard: self.max_unheard(),
            max_aj_instances: self.max_aj_instances(),
            ..self.input.clone()
        }
    }

    /// A cycle's dispatches, decided on an image taken at configuration generation
    /// `generation`, checked against the state now, before they are committed. The
    /// master changed its state meanwhile; what may make a decision wrong:
    /// - the configuration or a queue instance's state changed (a queue disabled, a
    ///   host deleted, a quota set or a complex edited): every dispatch is dropped;
    /// - the job changed or went (deleted, held, altered, another task of it ended in
    ///   error): its dispatches are dropped;
    /// - the host's execd is gone: its dispatches are dropped.
    ///
    /// Nothing else can take what a dispatch was given: only a cycle starts tasks, one
    /// cycle runs at a time, and tasks that end or leave only free resources. Load values
    /// reported meanwhile are read by the next cycle, as SGE's scheduler reads the loads
    /// of the moment its cycle began. A dropped job is considered again by the next
    /// cycle.
    pub fn revalidate(
        &self,
        image: &ClusterImage,
        generation: u64,
        dispatches: Vec<Dispatch>,
        connected: &HashSet<String>,
    ) -> Revalidated {
        if generation != self.config_generation {
            return Revalidated {
                dropped: dispatches.len(),
                kept: Vec::new(),
            };
        }
        let total = dispatches.len();
        let kept: Vec<Dispatch> = dispatches
            .into_iter()
            .filter(|d| {
                let unchanged = match (image.jobs.get(&d.job_id), self.input.jobs.get(&d.job_id)) {
                    (Some(then), Some(now)) => Arc::ptr_eq(then, now),
                    _ => false,
                };
                unchanged && connected.contains(&d.host)
            })
            .collect();
        Revalidated {
            dropped: total - kept.len(),
            kept,
        }
    }

    /// See [`ClusterView::load_alarm`].
    pub fn load_alarm(&self, q: &gantry_proto::ClusterQueue, host: &str) -> Option<String> {
        self.view().load_alarm(q, host)
    }

    /// See [`ClusterView::threshold_alarms`].
    pub fn threshold_alarms(
        &self,
        q: &gantry_proto::ClusterQueue,
        host: &str,
        key: &str,
    ) -> Vec<(String, String, String)> {
        self.view().threshold_alarms(q, host, key)
    }

    /// See [`ClusterView::suspend_alarm`].
    pub fn suspend_alarm(&self, q: &gantry_proto::ClusterQueue, host: &str) -> Option<String> {
        self.view().suspend_alarm(q, host)
    }

    /// See [`ClusterView::threshold_actions`].
    pub fn threshold_actions(
        &self,
        now: Time,
        last: &HashMap<(String, String), i64>,
    ) -> ThresholdActions {
        self.view().threshold_actions(now, last)
    }

    /// See [`ClusterView::sched_conf`].
    pub fn sched_conf(&self) -> SchedConf {
        self.view().sched_conf()
    }

    /// See [`ClusterView::snapshot`].
    pub fn snapshot(&self, connected: &HashSet<String>, now: Time) -> Snapshot {
        self.view().snapshot(connected, now)
    }

    /// See [`ClusterView::snapshot_at`].
    pub fn snapshot_at(&self, connected: &HashSet<String>, now: Time, adjusted: bool) -> Snapshot {
        self.view().snapshot_at(connected, now, adjusted)
    }

    /// See [`ClusterView::schedule`].
    pub fn schedule(&self, now: Time, connected: &HashSet<String>) -> Decisions {
        self.view().schedule(now, connected)
    }

    /// See [`ClusterView::dispatch`].
    pub fn dispatch(
        &self,
        snap: &mut Snapshot,
        state: &mut gantry_sched::Pass,
        now: Time,
    ) -> Vec<Dispatch> {
        self.view().dispatch(snap, state, now)
    }

    /// See [`ClusterView::could_ever_run`].
    pub fn could_ever_run(&self, job: &Job) -> Result<u32, CannotRun> {
        self.view().could_ever_run(job)
    }

    /// See [`ClusterView::quota_blocked_jobs`].
    pub fn quota_blocked_jobs(&self, connected: &HashSet<String>, now: Time) -> Vec<JobId> {
        self.view().quota_blocked_jobs(connected, now)
    }

    /// See [`ClusterView::explain`].
    pub fn explain(&self, job: &Job, connected: &HashSet<String>, now: Time) -> Vec<String> {
        self.view().explain(job, connected, now)
    }
}

#[cfg(test)]
mod tests;
