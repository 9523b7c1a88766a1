//! The master's side of the resource quota sets: the book kept in the cluster state,
//! rebuilt when the configuration it depends on changes and counted as tasks start and
//! end. The engine itself is `gantry_sched::quota`.

use std::sync::Arc;

use gantry_proto::{QuotaQuery, QuotaRow};

use crate::core::state::ClusterState;
use gantry_common::job::Job;
use gantry_sched::Catalog;

pub use gantry_sched::quota::*;

impl ClusterState {
    /// Something quota matching depends on changed: the book is rebuilt when the
    /// change is settled.
    pub(crate) fn quotas_changed(&mut self) {
        Arc::make_mut(&mut self.input.quota_book).mark_stale();
    }

    /// Offer a catalog built ahead for the next rebuild (see [`QuotaBook`]).
    pub(crate) fn prepare_catalog(&mut self, catalog: Arc<Catalog>) {
        Arc::make_mut(&mut self.input.quota_book).prepare_catalog(catalog);
    }

    /// Rebuild the book if the configuration changed: compile the sets, then count
    /// every running task once.
    pub fn settle_quotas(&mut self) {
        if !self.input.quota_book.is_stale() {
            return;
        }
        let sets = self.quota_sets_in_order().into_iter().cloned().collect();
        let usersets = self
            .input
            .usersets
            .values()
            .map(|u| (u.name.clone(), u.entries.clone()))
            .collect();
        let memberships = gantry_sched::view::memberships(&self.input.hostgroups);
        Arc::make_mut(&mut self.input.quota_book).settle(
            &self.input.complexes,
            sets,
            usersets,
            memberships,
            &self.input.jobs,
        );
    }

    /// Count (or with `sign` -1 uncount) what a job's running tasks use under every
    /// set's effective rule, grant by grant.
    pub(crate) fn count_quota_usage(&mut self, job: &Job, sign: f64) {
        if self.input.quota_book.counts(job) {
            Arc::make_mut(&mut self.input.quota_book).count(job, sign);
        }
    }

    /// The quota state a scheduling cycle starts from (none without an enabled set).
    pub fn quota_cycle(&self) -> Option<QuotaCycle> {
        self.input.quota_book.cycle()
    }

    /// `qquota`: every enabled rule with usage, for the consumers the query names
    /// (`groups_of` gives a user's Unix groups, for `@group` userset entries).
    pub fn quota_rows(
        &self,
        query: &QuotaQuery,
        caller: &str,
        groups_of: &dyn Fn(&str) -> Vec<String>,
    ) -> Vec<QuotaRow> {
        self.view().quota_rows(query, caller, groups_of)
    }
}

#[cfg(test)]
mod tests;

impl ClusterState {
    /// `qquota -g` before a cycle has allocated the tree: every group as the first
    /// round of the next cycle allocates (the root first; nothing without a tree).
    pub fn group_rows(&self) -> Vec<gantry_proto::GroupRow> {
        match self.view().group_allocation() {
            Some(allocation) => self.group_rows_of(allocation),
            None => Vec::new(),
        }
    }

    /// `qquota -g`'s rows of an allocation.
    pub fn group_rows_of(
        &self,
        allocation: gantry_sched::groups::Allocation,
    ) -> Vec<gantry_proto::GroupRow> {
        allocation
            .groups
            .into_iter()
            .map(|g| gantry_proto::GroupRow {
                configured: self
                    .input
                    .group_tree
                    .iter()
                    .find(|e| e.name == g.name)
                    .map(|e| e.quota),
                name: g.name,
                accept_surplus: g.accept_surplus,
                autoregroup: g.autoregroup,
                quota: g.quota,
                subtree_quota: g.subtree_quota,
                demand: g.demand,
                running: g.running,
                surplus: g.surplus,
                allocation: g.allocation,
            })
            .collect()
    }
}
