//! The snapshot kept from one cycle to the next, on the scheduler's thread.
//!
//! Most of a snapshot changes only with the configuration: the catalog, every layer's
//! configured values, the queue instances' own values. A load report changes one host's
//! reported values. Building all of it afresh for every cycle costs as much as a tenth
//! of a cycle on 1,000 hosts, so [`KeptSnapshot`] keeps the base of the last snapshot and
//! the parts of the [`ClusterImage`] it was built from. For the next image it rebuilds
//! the base only when a configuration part is another `Arc` than before, and otherwise
//! only the hosts whose report is another `Arc`; then it finishes the snapshot for the
//! cycle as a fresh one is finished (bookings, adjustments, queue instance states,
//! candidate order), which sets again whatever the last cycle changed.
//!
//! Holding the `Arc`s it compares makes the comparison sound: an `Arc` still held is
//! never freed, so a new one cannot take its address, and the master's copy-on-write
//! always makes a new one for a part that is shared.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use gantry_common::pe::Pe;
use gantry_proto::{
    AdvanceReservation, ClusterQueue, ComplexAttr, Config, ExecHost, HostGroup, UserSet,
};

use crate::ar::Granted;
use crate::decisions::{CannotRun, Decisions};
use crate::ledger::{Ledger, LedgerCounters};
use crate::model::Snapshot;
use crate::pass::Pass;
use crate::settled::{Aftermath, Settled, Unsettled};
use crate::time::Time;
use crate::view::{ClusterImage, ClusterView, HostRuntime};

/// The configuration parts of an image that a snapshot's base is built from.
#[derive(Debug, Clone)]
struct Sources {
    complexes: Arc<Vec<ComplexAttr>>,
    exechosts: Arc<BTreeMap<String, ExecHost>>,
    global_host: Arc<Option<ExecHost>>,
    hostgroups: Arc<BTreeMap<String, HostGroup>>,
    queues: Arc<BTreeMap<String, ClusterQueue>>,
    usersets: Arc<BTreeMap<String, UserSet>>,
    pes: Arc<BTreeMap<String, Pe>>,
    sched: Arc<Option<Config>>,
}

impl Sources {
    fn of(image: &ClusterImage) -> Sources {
        Sources {
            complexes: image.complexes.clone(),
            exechosts: image.exechosts.clone(),
            global_host: image.global_host.clone(),
            hostgroups: image.hostgroups.clone(),
            queues: image.queues.clone(),
            usersets: image.usersets.clone(),
            pes: image.pes.clone(),
            sched: image.sched.clone(),
        }
    }

    /// Is every part the very one the image has?
    fn same_as(&self, image: &ClusterImage) -> bool {
        Arc::ptr_eq(&self.complexes, &image.complexes)
            && Arc::ptr_eq(&self.exechosts, &image.exechosts)
            && Arc::ptr_eq(&self.global_host, &image.global_host)
            && Arc::ptr_eq(&self.hostgroups, &image.hostgroups)
            && Arc::ptr_eq(&self.queues, &image.queues)
            && Arc::ptr_eq(&self.usersets, &image.usersets)
            && Arc::ptr_eq(&self.pes, &image.pes)
            && Arc::ptr_eq(&self.sched, &image.sched)
    }
}

/// A snapshot with what it was built from.
#[derive(Debug)]
struct Kept {
    sources: Sources,
    /// Per host of the snapshot (same index), the report its values came from.
    reports: Vec<Option<Arc<HostRuntime>>>,
    snap: Snapshot,
    /// The last cycle's state on the snapshot, with what it keeps for the next.
    state: Pass,
    /// What is booked on the snapshot, by job and reservation, kept booked between
    /// cycles and questions; None when it is to be booked afresh.
    ledger: Option<Ledger>,
    /// The hosts (by index) whose values were built again since the last cycle.
    refreshed: Vec<usize>,
    /// What the last cycle left for the next to settle on (None: none, or the bookings
    /// were made afresh since).
    last: Option<Aftermath>,
    /// The ledger's count of releases when the last cycle had brought it up to date.
    released_seen: u64,
}

/// How a kept snapshot was brought up to date, for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeptCounters {
    /// Bases built whole (the first, and after each configuration change).
    pub rebuilt: u64,
    /// Hosts whose values were built again after a new report.
    pub hosts_refreshed: u64,
    /// Ledgers begun afresh (the first question, and after a base was rebuilt or a
    /// host's values came to define other attributes).
    pub ledgers_begun: u64,
    /// Cycles that settled on the last one's outcome (see [`crate::settled`]).
    pub settled: u64,
    /// Settled cycles that were quiet: nothing to decide, no pass over the jobs.
    pub quiet: u64,
    /// Why the last cycle that did not settle looked at every category whole.
    pub unsettled: Option<Unsettled>,
}

/// The snapshot the scheduler's thread keeps between cycles.
#[derive(Debug, Default)]
pub struct KeptSnapshot {
    kept: Option<Kept>,
    pub counters: KeptCounters,
}

impl KeptSnapshot {
    /// The kept snapshot's base brought up to `image`: built again after a
    /// configuration change, else only the hosts with a new report. Taken out of
    /// `self` while it is changed: a panic on the way leaves nothing half-changed
    /// behind, and the next call builds afresh.
    fn refreshed(&mut self, image: &ClusterImage) -> Kept {
        let view = image.view();
        match self.kept.take() {
            Some(mut k) if k.sources.same_as(image) => {
                for (n, report) in k.reports.iter_mut().enumerate() {
                    let host = &mut k.snap.hosts[n];
                    let now_report = image.runtime.get(&host.name);
                    let same = match (report.as_ref(), now_report) {
                        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                        (None, None) => true,
                        _ => false,
                    };
                    if same {
                        continue;
                    }
                    let mut values =
                        view.host_values(&k.snap.catalog, &k.snap.adjustments, &host.name);
                    // Kept booked: the bookings move to the new values, or are all made
                    // again when the host's attributes changed.
                    if k.ledger.is_some()
                        && !values
                            .layer
                            .take_resources(&host.layer, &mut k.snap.calendar)
                    {
                        k.ledger = None;
                    }
                    host.layer = values.layer;
                    host.nproc = values.nproc;
                    host.reported = values.reported;
                    *report = now_report.cloned();
                    k.refreshed.push(n);
                    self.counters.hosts_refreshed += 1;
                }
                k
            }
            _ => {
                self.counters.rebuilt += 1;
                let snap = view.snapshot_base();
                Kept {
                    sources: Sources::of(image),
                    reports: snap
                        .hosts
                        .iter()
                        .map(|h| image.runtime.get(&h.name).cloned())
                        .collect(),
                    snap,
                    state: Pass::default(),
                    ledger: None,
                    refreshed: Vec::new(),
                    last: None,
                    released_seen: 0,
                }
            }
        }
    }

    /// The kept ledger brought up to `view` at `now` on the judged snapshot (begun
    /// afresh when there is none); whether it released anything since the last cycle.
    fn book_up_to_date(&mut self, kept: &mut Kept, view: &ClusterView, now: Time) -> bool {
        let ledger = match kept.ledger.as_mut() {
            Some(ledger) => ledger,
            None => {
                self.counters.ledgers_begun += 1;
                kept.snap.unbook_everything();
                kept.last = None;
                kept.released_seen = 0;
                kept.ledger.insert(Ledger::default())
            }
        };
        ledger.bring_up_to_date(view, &mut kept.snap, now);
        ledger.counters.released != kept.released_seen
    }

    /// The snapshot for a cycle on `image` at `now`, as
    /// [`crate::ClusterView::snapshot_at`] would build it (load adjustments included),
    /// from the kept one where the image allows.
    pub fn snapshot(
        &mut self,
        image: &ClusterImage,
        connected: &HashSet<String>,
        now: Time,
    ) -> &mut Snapshot {
        let mut kept = self.refreshed(image);
        // Booked afresh.
        kept.ledger = None;
        kept.last = None;
        image
            .view()
            .finish_snapshot(&mut kept.snap, connected, now, true);
        &mut self.kept.insert(kept).snap
    }

    /// One scheduling cycle on `image` at `now`: what
    /// [`crate::ClusterView::schedule`] decides, on the kept snapshot with what runs
    /// kept booked (what the cycle books is taken back after it: the next cycle finds
    /// what it placed running), settled on the last cycle's outcome where nothing can
    /// have made room since (see [`crate::settled`]).
    pub fn schedule(
        &mut self,
        image: &ClusterImage,
        now: Time,
        connected: &HashSet<String>,
    ) -> Decisions {
        let view = image.view();
        // Out while the cycle changes it, as above.
        let mut kept = self.refreshed(image);
        // What runs first: the judge then looks for the load of recent starts in the
        // jobs that run only.
        kept.snap.now = now;
        kept.snap.default_duration = view.sched_conf().default_duration;
        let released = self.book_up_to_date(&mut kept, &view, now);
        let running = kept.ledger.as_ref().map(|l| l.running());
        view.judge_instances(&mut kept.snap, connected, now, true, running.as_deref());
        view.open_gates(&kept.snap, &mut kept.state);
        let refreshed = std::mem::take(&mut kept.refreshed);
        let group_quotas = kept.state.group_order.is_some();
        let (settled, how) = Settled::settle(
            kept.last.take(),
            &view,
            &kept.snap,
            released,
            &refreshed,
            group_quotas,
        );
        match how {
            Ok(()) => self.counters.settled += 1,
            Err(why) => self.counters.unsettled = Some(why),
        }
        kept.snap.calendar.begin_trial();
        let quiet = how.ok().and_then(|()| {
            settled.quiet_cycle(&mut kept.snap, &mut kept.state.gates, &image.jobs, now)
        });
        kept.state.settled = Some(settled);
        let decisions = match quiet {
            Some(quiet) => {
                self.counters.quiet += 1;
                let decisions = Decisions {
                    quota_counters: kept.state.close_gates(),
                    quiet: true,
                    priorities: kept.state.priorities.clone(),
                    ..Decisions::default()
                };
                kept.last = kept
                    .state
                    .settled
                    .take()
                    .map(|s| s.quiet_aftermath(&view, &kept.snap, quiet));
                decisions
            }
            None => {
                let decisions = view.decide_on(&mut kept.snap, &mut kept.state, now);
                kept.last = kept.state.settled.take().map(|s| {
                    s.aftermath(
                        &view,
                        &kept.snap,
                        &decisions,
                        group_quotas,
                        &image.jobs,
                        now,
                    )
                });
                decisions
            }
        };
        kept.snap.calendar.rollback();
        kept.released_seen = kept.ledger.as_ref().map_or(0, |l| l.counters.released);
        self.kept = Some(kept);
        decisions
    }

    /// Grant advance reservation `ar` on `image` at `now`: what
    /// [`crate::ClusterView::reserve`] answers, on the kept snapshot with what runs
    /// and what is reserved kept booked between the questions (only what started,
    /// ended or changed since the last is booked or released), and the answer's own
    /// bookings taken back.
    pub fn reserve(
        &mut self,
        image: &ClusterImage,
        connected: &HashSet<String>,
        now: Time,
        ar: &AdvanceReservation,
        groups: &[String],
    ) -> Result<Granted, CannotRun> {
        let view = image.view();
        let mut kept = self.refreshed(image);
        view.judge_instances(&mut kept.snap, connected, now, false, None);
        self.book_up_to_date(&mut kept, &view, now);
        let mut gates = view.reservation_gates();
        kept.snap.calendar.begin_trial();
        let granted = view.reserve_on(&mut kept.snap, &mut gates, ar, groups);
        kept.snap.calendar.rollback();
        self.kept = Some(kept);
        granted
    }

    /// What the kept ledger did so far (None: nothing is kept booked).
    pub fn ledger_counters(&self) -> Option<LedgerCounters> {
        Some(self.kept.as_ref()?.ledger.as_ref()?.counters)
    }

    /// Forget the kept snapshot: the next cycle builds afresh.
    pub fn forget(&mut self) {
        self.kept = None;
    }
}

#[cfg(test)]
mod tests;
