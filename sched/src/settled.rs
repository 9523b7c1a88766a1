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

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;

use gantry_common::job::Job;

use crate::model::{Demand, Snapshot};
use crate::place::category_key;
use crate::quota::Quotas;
use crate::view::ClusterView;

/// The hash categories are looked up by from one cycle to the next: fixed, as the key
/// of a job of the last cycle is hashed again in this one.
fn key_hash(job: &Job) -> u64 {
    foldhash::fast::FixedState::default().hash_one(category_key(job))
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
    noted: Vec<u64>,
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
        if self.exhausted.is_empty() {
            return false;
        }
        let key = category_key(job);
        self.exhausted
            .get(&key_hash(job))
            .is_some_and(|jobs| jobs.iter().any(|j| category_key(j) == key))
    }

    /// Note the categories a dispatch pass left without room (by a job of each).
    pub(crate) fn note(&mut self, jobs: impl Iterator<Item = u64>) {
        self.noted.extend(jobs);
    }

    /// Settle a cycle on the last one's outcome: `snap` judged and its bookings brought
    /// up to date (`released`: that released some), `refreshed` the hosts (by index)
    /// whose values were built again from a new report.
    pub(crate) fn settle(
        last: Option<Aftermath>,
        view: &ClusterView,
        snap: &Snapshot,
        released: bool,
        refreshed: &[usize],
    ) -> (Settled, Result<(), Unsettled>) {
        let whole = |why| {
            let settled = Settled {
                exhausted: HashMap::new(),
                loosened: vec![true; snap.instances.len()],
                noted: Vec::new(),
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
        if snap.group_order.is_some() {
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
        let mut exhausted: HashMap<u64, Vec<Arc<Job>>> = HashMap::new();
        for job in last.exhausted {
            exhausted.entry(key_hash(&job)).or_default().push(job);
        }
        let settled = Settled {
            exhausted,
            loosened,
            noted: Vec::new(),
        };
        (settled, Ok(()))
    }

    /// What this cycle leaves for the next: `snap` as the cycle left it, `decisions`
    /// what it decided.
    pub(crate) fn aftermath(
        self,
        view: &ClusterView,
        snap: &Snapshot,
        decisions: &crate::cycle::Decisions,
    ) -> Aftermath {
        Aftermath {
            exhausted: self
                .noted
                .iter()
                .filter_map(|id| view.jobs.get(id).cloned())
                .collect(),
            placed_or_reserved: !decisions.dispatches.is_empty()
                || !decisions.reservations.is_empty(),
            unusable: snap
                .instances
                .iter()
                .map(|i| i.unusable.is_some())
                .collect(),
            weights: snap.hosts.iter().map(|h| h.weight).collect(),
            quotas: view.quota_book.cycle_quotas(),
        }
    }
}
