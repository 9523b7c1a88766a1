//! The master's side of the scheduler: its state lent to `gantry_sched` as a
//! [`ClusterView`]. The resource model, matching, the quota engine and the cycle are in
//! the `gantry-sched` crate; what the master's callers and tests name is re-exported here.

use std::collections::{HashMap, HashSet};

use crate::jobs::Job;
use crate::state::ClusterState;

pub use gantry_sched::cycle::{
    CannotRun, Decisions, Dispatch, SchedConf, ThresholdActions, Trigger,
};
pub use gantry_sched::matching::*;
pub use gantry_sched::model::*;
pub use gantry_sched::time::{Span, Time};
pub use gantry_sched::view::{ClusterView, HostRuntime};

impl ClusterState {
    /// The state as the scheduler reads it.
    pub fn view(&self) -> ClusterView<'_> {
        ClusterView {
            complexes: &self.complexes,
            exechosts: &self.exechosts,
            global_host: &self.global_host,
            hostgroups: &self.hostgroups,
            queues: &self.queues,
            usersets: &self.usersets,
            pes: &self.pes,
            sched: &self.sched,
            jobs: &self.jobs,
            runtime: &self.runtime,
            disabled: &self.disabled,
            errored: &self.errored,
            suspended_queues: &self.suspended_queues,
            threshold_suspended: &self.threshold_suspended,
            quota_book: &self.quota_book,
            max_unheard: self.max_unheard(),
            max_aj_instances: self
                .global()
                .get("max_aj_instances")
                .and_then(|v| v.parse::<u32>().ok())
                .filter(|n| *n > 0),
        }
    }

    /// See [`ClusterView::load_alarm`].
    pub fn load_alarm(&self, q: &gantry_proto::ClusterQueue, host: &str) -> Option<String> {
        self.view().load_alarm(q, host)
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
    pub fn dispatch(&self, snap: &mut Snapshot, now: Time) -> Vec<Dispatch> {
        self.view().dispatch(snap, now)
    }

    /// See [`ClusterView::could_ever_run`].
    pub fn could_ever_run(&self, job: &Job) -> Result<(), CannotRun> {
        self.view().could_ever_run(job)
    }

    /// See [`ClusterView::quota_blocked_jobs`].
    pub fn quota_blocked_jobs(&self, connected: &HashSet<String>, now: Time) -> Vec<u64> {
        self.view().quota_blocked_jobs(connected, now)
    }

    /// See [`ClusterView::explain`].
    pub fn explain(&self, job: &Job, connected: &HashSet<String>, now: Time) -> Vec<String> {
        self.view().explain(job, connected, now)
    }
}

#[cfg(test)]
mod tests;
