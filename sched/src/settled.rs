//! Categories settled: what found no room at the end of one cycle finds none in the
//! next wherever nothing could have made room since.
//!
//! Within a cycle resources only shrink, so a category with no room left at the end of
//! a cycle had none on any of its candidates at the end. A cycle on the snapshot kept
//! from the last ([`crate::KeptSnapshot`]) starts from the last one's bookings, brought up
//! to date; when that released nothing (no job ended, changed or was taken back, no
//! reservation ended, no quota set changed) and the last cycle placed nothing and
//! reserved nothing (what it placed holds, as it runs, from the second it started; its
//! `-R y` reservations are made afresh), every queue instance holds at most what it held
//! at the end of the last cycle, but for the instances whose host reported new values,
//! those that take jobs again (enabled, reachable, under their thresholds) and, under a
//! quota limit that reads an adjusted load value, those whose recent starts' weight
//! decayed. Such a cycle gives
//! a category the last one left without room only those instances as candidates: a
//! full cluster with thousands of jobs waiting costs a cycle what changed, not every
//! category on every instance.
//!
//! Not settled, always looked at whole: parallel jobs (their allocation adds up slots
//! over several instances), categories that request a value the load adjustments
//! change with time, cycles with group quotas, and a job that asks for a reservation
//! (`-R y`, its category made whole again for it).
//!
//! A *quiet* cycle goes further: when the last cycle left every job it considered in
//! a category without room (one that settles), and since then only jobs of such
//! categories were added or changed (found by comparing the job tables, which share
//! what did not change) and no category finds room on an instance where room may have
//! come, the cycle decides nothing without passing over the pending jobs: a
//! submission to a full cluster costs what was submitted, not the whole queue. Jobs
//! that wait for a time (`-a`) or for other jobs (`-hold_jid`) in a category that has
//! room left make the cycle whole when their time comes or another job changes.

use gantry_proto::JobId;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;

use gantry_common::job::Job;
use imbl::ordmap::DiffItem;

use crate::decisions::Decisions;
use crate::gate::Gates;
use crate::model::{Demand, Snapshot};
use crate::place::{category_key, Category};
use crate::quota::Quotas;
use crate::time::Time;
use crate::view::{ClusterView, JobTable};

/// The hash categories are looked up by from one cycle to the next: fixed, as the key
/// of a job of the last cycle is hashed again in this one.
fn key_hash(job: &Job) -> u64 {
    foldhash::fast::FixedState::default().hash_one(category_key(job))
}

/// Jobs by the hash of their category's key.
fn by_key_hash<J: std::ops::Deref<Target = Job>>(
    jobs: impl IntoIterator<Item = J>,
) -> HashMap<u64, Vec<J>> {
    let mut by_hash: HashMap<u64, Vec<J>> = HashMap::new();
    for job in jobs {
        by_hash.entry(key_hash(&job)).or_default().push(job);
    }
    by_hash
}

/// Is `job` of the category of one of `jobs` (by [`by_key_hash`])?
fn of_a_category_in<J: std::ops::Deref<Target = Job>>(
    jobs: &HashMap<u64, Vec<J>>,
    job: &Job,
) -> bool {
    if jobs.is_empty() {
        return false;
    }
    let key = category_key(job);
    jobs.get(&key_hash(job))
        .is_some_and(|alike| alike.iter().any(|j| category_key(j) == key))
}

/// What a cycle on a kept snapshot leaves for the next one.
#[derive(Debug, Default)]
pub(crate) struct Aftermath {
    /// A job of each category that had no room left at the end (those that settle).
    exhausted: Vec<Arc<Job>>,
    /// Did the cycle place tasks, or reserve for `-R y` jobs?
    placed_or_reserved: bool,
    /// Per queue instance: it took no jobs at all at the end of the cycle.
    unusable: Vec<bool>,
    /// Per host: the weight of its recent starts at the end of the cycle.
    weights: Vec<f64>,
    /// The quota sets the cycle counted under (None: none).
    quotas: Option<Arc<Quotas>>,
    /// Whether the next cycle may be quiet, and what it compares with.
    quiet: Option<Quiet>,
}

/// What a quiet cycle compares with: the last cycle left every job it considered
/// without room.
#[derive(Debug, Clone)]
pub(crate) struct Quiet {
    /// The job table the last cycle saw.
    jobs: Arc<JobTable>,
    /// The earliest start time (`-a`) of a pending job waiting for it whose category
    /// was not left without room: the cycle at that second is whole.
    next_start: Option<i64>,
    /// A pending job waits for others (`-hold_jid`) and its category was not left
    /// without room: a cycle after any other job changed or went is whole.
    dependents: bool,
}

/// For one cycle on a kept snapshot: the categories the last cycle left without room,
/// and where room may have come since.
#[derive(Debug, Clone, Default)]
pub(crate) struct Settled {
    /// A job of each such category, by the hash of its key.
    exhausted: HashMap<u64, Vec<Arc<Job>>>,
    /// Per queue instance: may it have room now for what did not fit at the end of the
    /// last cycle?
    pub(crate) loosened: Vec<bool>,
    /// The jobs of the categories left without room in this cycle, one each.
    noted: Vec<JobId>,
    /// Every job the dispatch pass took found its category without room (see
    /// [`Settled::note`]).
    whole: bool,
    /// The last cycle's [`Quiet`], if it may be followed by a quiet one.
    quiet: Option<Quiet>,
}

/// Why a cycle cannot settle on the last one's outcome, for tests and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsettled {
    /// No cycle before on this snapshot (the first, or the base was rebuilt).
    NoLastCycle,
    /// Bringing the bookings up to date released some (or began them afresh).
    Released,
    /// The last cycle placed tasks (each holds, as it runs, from the second it started,
    /// not from the cycle's instant, or does not hold at all when it did not start) or
    /// reserved for `-R y` jobs (made afresh in every cycle: the next may reserve
    /// elsewhere or not at all).
    Placed,
    /// The quota sets changed.
    Quotas,
    /// Group quotas order the cycle.
    GroupQuotas,
}

/// Does a category of this demand settle (see the module's text)?
pub(crate) fn settles(d: &Demand, adjustments: &[(usize, f64, String)]) -> bool {
    d.pe.is_none()
        && !d
            .hard
            .iter()
            .chain(&d.soft)
            .any(|r| adjustments.iter().any(|(attr, ..)| *attr == r.attr))
}

impl Settled {
    /// Did the last cycle leave this job's category without room?
    pub(crate) fn still_exhausted(&self, job: &Job) -> bool {
        of_a_category_in(&self.exhausted, job)
    }

    /// A job's category, numbered `id` within the cycle, on `snap`: one the last cycle
    /// left without room gets as candidates only the instances where room may have
    /// come since.
    pub(crate) fn category(&self, snap: &Snapshot, job: &Job, id: usize) -> Option<Category> {
        let only = self
            .still_exhausted(job)
            .then_some(self.loosened.as_slice());
        snap.category_among(job, id, only)
    }

    /// Note the categories a dispatch pass left without room (by a job of each);
    /// `whole`: every job the pass took was in one of them, none in an advance
    /// reservation or asking for a reservation.
    pub(crate) fn note(&mut self, jobs: impl Iterator<Item = JobId>, whole: bool) {
        self.noted.extend(jobs);
        self.whole = whole;
    }

    /// Settle a cycle on the last one's outcome: `snap` judged and its bookings brought
    /// up to date (`released`: that released some), `refreshed` the hosts (by index)
    /// whose values were built again from a new report; `group_quotas`: the cycle
    /// serves groups in order.
    pub(crate) fn settle(
        last: Option<Aftermath>,
        view: &ClusterView,
        snap: &Snapshot,
        released: bool,
        refreshed: &[usize],
        group_quotas: bool,
    ) -> (Settled, Result<(), Unsettled>) {
        let whole = |why| {
            let settled = Settled {
                exhausted: HashMap::new(),
                loosened: vec![true; snap.instances.len()],
                noted: Vec::new(),
                whole: false,
                quiet: None,
            };
            (settled, Err(why))
        };
        let Some(last) = last else {
            return whole(Unsettled::NoLastCycle);
        };
        if last.unusable.len() != snap.instances.len() || last.weights.len() != snap.hosts.len() {
            return whole(Unsettled::NoLastCycle);
        }
        if released {
            return whole(Unsettled::Released);
        }
        if group_quotas {
            return whole(Unsettled::GroupQuotas);
        }
        let quotas = view.quota_book.cycle_quotas();
        let same_quotas = match (&quotas, &last.quotas) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same_quotas {
            return whole(Unsettled::Quotas);
        }
        if last.placed_or_reserved {
            return whole(Unsettled::Placed);
        }
        let mut host_loosened = vec![false; snap.hosts.len()];
        for &h in refreshed {
            host_loosened[h] = true;
        }
        // A dynamic limit may read a value the load adjustments lower as the weight of
        // the recent starts decays.
        let adjusted: Vec<usize> = snap.adjustments.iter().map(|(a, ..)| *a).collect();
        if quotas
            .as_ref()
            .is_some_and(|q| q.dynamic_limits_read(&adjusted))
        {
            for (h, host) in snap.hosts.iter().enumerate() {
                host_loosened[h] |= host.weight < last.weights[h];
            }
        }
        let loosened = snap
            .instances
            .iter()
            .zip(&last.unusable)
            .map(|(inst, &was)| host_loosened[inst.host] || (was && inst.unusable.is_none()))
            .collect();
        let exhausted = by_key_hash(last.exhausted);
        let settled = Settled {
            exhausted,
            loosened,
            noted: Vec::new(),
            whole: false,
            quiet: last.quiet,
        };
        (settled, Ok(()))
    }

    /// A quiet cycle on `snap` (settled, judged, `gates` open) for the job table
    /// `jobs` at `now`: the [`Quiet`] for the next cycle when this one can decide
    /// nothing (see the module's text), None when it is to pass over the jobs.
    pub(crate) fn quiet_cycle(
        &self,
        snap: &mut Snapshot,
        gates: &mut Gates,
        jobs: &Arc<JobTable>,
        now: Time,
    ) -> Option<Quiet> {
        let settled = self;
        let last = settled.quiet.as_ref()?;
        let next = Quiet {
            jobs: jobs.clone(),
            ..last.clone()
        };
        if next.next_start.is_some_and(|t| t <= now.secs()) {
            return None;
        }
        for item in last.jobs.diff(jobs) {
            let job = match item {
                DiffItem::Remove(..) if next.dependents => return None,
                DiffItem::Remove(..) => continue,
                DiffItem::Update { .. } if next.dependents => return None,
                DiffItem::Add(_, job) | DiffItem::Update { new: (_, job), .. } => job,
            };
            if !job.tasks.has_pending() {
                continue;
            }
            if job.spec.immediate
                || job.spec.ar.is_some()
                || job.spec.reserve
                || !job.spec.hold_jids.is_empty()
                || !settled.still_exhausted(job)
            {
                return None;
            }
        }
        // Room may have come on some instances: a category that finds it there makes
        // the cycle whole (which then places the first of its jobs in order).
        if settled.loosened.iter().any(|&l| l) {
            let exemplars: Vec<Arc<Job>> = settled.exhausted.values().flatten().cloned().collect();
            for (n, job) in exemplars.iter().enumerate() {
                let Some(mut cat) = settled.category(snap, job, n + 1) else {
                    continue; // requests what the complex no longer has: placed nowhere
                };
                if snap.place_task(gates, &mut cat).is_some() {
                    return None;
                }
            }
        }
        Some(next)
    }

    /// What a quiet cycle leaves for the next: the categories still without room,
    /// `quiet` from [`Settled::quiet_cycle`].
    pub(crate) fn quiet_aftermath(
        self,
        view: &ClusterView,
        snap: &Snapshot,
        quiet: Quiet,
    ) -> Aftermath {
        Aftermath {
            exhausted: self.exhausted.into_values().flatten().collect(),
            placed_or_reserved: false,
            unusable: unusable(snap),
            weights: snap.hosts.iter().map(|h| h.weight).collect(),
            quotas: view.quota_book.cycle_quotas(),
            quiet: Some(quiet),
        }
    }

    /// What this cycle leaves for the next: `snap` as the cycle left it, `decisions`
    /// what it decided, on the job table `jobs` at `now`.
    pub(crate) fn aftermath(
        self,
        view: &ClusterView,
        snap: &Snapshot,
        decisions: &Decisions,
        group_quotas: bool,
        jobs: &Arc<JobTable>,
        now: Time,
    ) -> Aftermath {
        let exhausted: Vec<Arc<Job>> = self
            .noted
            .iter()
            .filter_map(|id| view.jobs.get(id).cloned())
            .collect();
        let decided_nothing = decisions.dispatches.is_empty()
            && decisions.reservations.is_empty()
            && decisions.immediate_unplaced.is_empty();
        let quiet = (self.whole && decided_nothing && !group_quotas)
            .then(|| waiting(view, &exhausted, jobs, now))
            .flatten();
        Aftermath {
            exhausted,
            placed_or_reserved: !decisions.dispatches.is_empty()
                || !decisions.reservations.is_empty(),
            unusable: unusable(snap),
            weights: snap.hosts.iter().map(|h| h.weight).collect(),
            quotas: view.quota_book.cycle_quotas(),
            quiet,
        }
    }
}

/// Per queue instance: it takes no jobs at all.
fn unusable(snap: &Snapshot) -> Vec<bool> {
    snap.instances
        .iter()
        .map(|i| i.unusable.is_some())
        .collect()
}

/// After a cycle that left every job it considered without room (`exhausted`, a job
/// of each category): what the jobs it did not consider wait for, as a [`Quiet`] for
/// the next cycle; None when one of them asks for what a quiet cycle does not look
/// at (`-now y`, an advance reservation, a reservation).
fn waiting(
    view: &ClusterView,
    exhausted: &[Arc<Job>],
    jobs: &Arc<JobTable>,
    now: Time,
) -> Option<Quiet> {
    let by_hash = by_key_hash(exhausted.iter().map(|j| &**j));
    let without_room = |job: &Job| of_a_category_in(&by_hash, job);
    let mut quiet = Quiet {
        jobs: jobs.clone(),
        next_start: None,
        dependents: false,
    };
    for job in view.jobs.values().filter(|j| j.tasks.has_pending()) {
        if job.spec.immediate || job.spec.ar.is_some() || job.spec.reserve {
            return None;
        }
        // Held: released by a change of the job itself, which the next cycle sees.
        if job.spec.held() || view.eligible(job, now) || without_room(job) {
            continue;
        }
        match job.spec.start_after.filter(|&t| t > now.secs()) {
            Some(t) => quiet.next_start = Some(quiet.next_start.map_or(t, |n| n.min(t))),
            None => quiet.dependents = true,
        }
    }
    Some(quiet)
}
