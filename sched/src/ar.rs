//! Advance reservations on the calendar.
//!
//! - Granting (`qrsub`): the reservation's request is placed as a job of the same
//!   request would be, at its start for its duration, on a snapshot where the running
//!   tasks and every other reservation are booked, load thresholds aside (SGE imagines
//!   the cluster without load for a reservation: a time to come has no load yet).
//! - In every cycle a reservation not yet over holds what it was granted over its
//!   window, so that an ordinary job only starts where it ends before the window opens
//!   (a job without a run time holds from its start on, and so never overlaps one).
//!   Jobs running in a reservation are inside what it holds and are not booked again.
//! - A reservation's own jobs are placed on a snapshot of the reservation alone: its
//!   queue instances, with what it holds as their capacities, less what its running jobs
//!   take. Its jobs thus never use more than it was granted, and never anything else.

use gantry_proto::{AdvanceReservation, ArId, ArState, Grant, JobId, JobOwner, JobSpec};
use std::collections::{HashMap, HashSet};

use gantry_common::job::Job;

use crate::calendar::Calendar;
use crate::decisions::{CannotRun, Dispatch};
use crate::gate::Gates;
use crate::matching::Check;
use crate::model::*;
use crate::place::{category_key, Category, CategoryKey};
use crate::time::{Span, Time};
use crate::view::ClusterView;

/// Where a reservation was granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Granted {
    /// The queue instances and slots, the master queue first.
    pub grants: Vec<Grant>,
    /// The parallel environment and its slots, for a `-pe` request.
    pub pe: Option<(String, u32)>,
}

/// Does a reservation hold its resources (granted, not deleted, not over)?
pub fn holds(ar: &AdvanceReservation) -> bool {
    matches!(
        ar.state,
        ArState::Waiting | ArState::Running | ArState::Error
    )
}

/// Does a reservation take jobs at `at`: its window open, and not in error with hard
/// error handling (`-he y`)?
pub fn takes_jobs(ar: &AdvanceReservation, at: Time) -> bool {
    let open = Time::from_secs(ar.start) <= at && at < Time::from_secs(ar.end);
    open && match ar.state {
        ArState::Running => true,
        ArState::Error => !ar.spec.hard_error,
        _ => false,
    }
}

/// The state letter of a reservation at `at` (`qrstat`'s).
pub fn clock_letter(ar: &AdvanceReservation, at: Time) -> char {
    gantry_common::ar::clock_state(ar, at.secs()).letter()
}

/// The job a reservation's request is placed as: its requests, owned by its owner (the
/// groups for `@group` access entries), in the reservation (which exempts it from the
/// resource quota sets, as the reservation's jobs are).
pub fn request_job(ar: &AdvanceReservation, groups: &[String]) -> Job {
    let mut spec = JobSpec::binary("advance_reservation", "", &ar.spec.submit_host);
    spec.hard_resources = ar.spec.resources.clone();
    spec.queues = ar.spec.queues.clone();
    spec.masterq = ar.spec.masterq.clone();
    spec.pe = ar.spec.pe.clone();
    spec.ckpt = ar.spec.ckpt.clone();
    spec.ar = Some(ar.id);
    Job {
        id: JobId(0),
        spec,
        owner: JobOwner {
            user: ar.owner.clone(),
            uid: 0,
            gid: 0,
            groups: groups.to_vec(),
        },
        submit_time: ar.submission_time,
        tasks: gantry_common::tasks::Tasks::single(),
        suspended: Default::default(),
        restarted: Default::default(),
        ckpt_arena: Default::default(),
        failed_starts: Default::default(),
        version: 0,
    }
}

/// The demand of a reservation's request, with its window as its run time.
pub(crate) fn request_demand(catalog: &Catalog, ar: &AdvanceReservation) -> Option<Demand> {
    let mut d = demand(catalog, &request_job(ar, &[])).ok()?;
    d.run_time = Some(Span::from_secs(ar.end - ar.start));
    Some(d)
}

/// The instances of a snapshot a reservation's grants name, with their slots (grants
/// on instances the snapshot no longer has are left out).
fn granted_instances(snap: &Snapshot, grants: &[Grant]) -> Vec<(usize, u32)> {
    grants
        .iter()
        .filter_map(|g| {
            snap.instance_index
                .get(&g.queue, &g.host)
                .map(|i| (i, g.slots))
        })
        .collect()
}

impl Snapshot {
    /// Book what every reservation still holding resources was granted, over its window,
    /// and count the slots of the parallel environments of those whose window is open.
    pub(crate) fn book_reservations<'a>(
        &mut self,
        ars: impl Iterator<Item = &'a AdvanceReservation>,
    ) {
        for ar in ars {
            if let Some(h) = self.hold_reservation(ar, None) {
                self.hold_pe(h);
            }
        }
    }

    /// Book what a reservation holds over its window if it still holds anything (with
    /// `ids`, each amount a booking of its own): the parallel environment slots it
    /// holds over its window (counted now once the window is open).
    pub(crate) fn hold_reservation(
        &mut self,
        ar: &AdvanceReservation,
        ids: Option<&mut Vec<crate::calendar::BookingId>>,
    ) -> Option<PeHold> {
        let (from, until) = (Time::from_secs(ar.start), Time::from_secs(ar.end));
        if !holds(ar) || until <= self.now {
            return None;
        }
        let d = request_demand(&self.catalog, ar)?;
        let grants = granted_instances(self, &ar.granted);
        self.hold_recorded(&d, &grants, 1.0, (from, Some(until)), ids);
        let (pe, slots) = ar.granted_pe.clone()?;
        Some(PeHold {
            pe,
            slots,
            from,
            until: Some(until),
        })
    }

    /// The snapshot a reservation's jobs are placed on: the reservation's queue
    /// instances only, each offering what the reservation holds there (its slots and
    /// consumables, on the instance, its host and the global host), nothing booked yet.
    /// The caller books the reservation's running jobs.
    pub(crate) fn reservation_view(&mut self, ar: &AdvanceReservation) -> Snapshot {
        // The running jobs' demands stay here: the copy books only the reservation's.
        let demands = std::mem::take(&mut self.running_demands);
        let mut s = self.clone();
        self.running_demands = demands;
        let grants = granted_instances(&s, &ar.granted);
        s.order = grants.iter().map(|&(i, _)| i).collect();
        // What the reservation holds per layer, read off a calendar of its own.
        s.unbook_everything();
        if let Some(d) = request_demand(&s.catalog, ar) {
            let t = s.now;
            s.hold(&d, &grants, 1.0, t, None);
            let calendar = std::mem::take(&mut s.calendar);
            let capacities = |layer: &mut Layer| {
                for (_, offer) in &mut layer.entries {
                    if let Some(r) = offer.resource.take() {
                        let held = calendar.used_at(r, t).unwrap_or(0.0);
                        offer.fixed = Some(gantry_common::value::Value::Num(held));
                    }
                }
            };
            capacities(&mut s.global);
            for h in &mut s.hosts {
                capacities(&mut h.layer);
            }
            for i in &mut s.instances {
                capacities(&mut i.layer);
            }
        }
        // Its parallel environment offers the slots it was granted; no other offers any.
        let mut used = std::collections::HashMap::new();
        for (name, pe) in &s.pes {
            let offered = match &ar.granted_pe {
                Some((granted, slots)) if granted == name => *slots,
                _ => 0,
            };
            used.insert(name.clone(), pe.slots.saturating_sub(offered));
        }
        s.pe_used = used;
        s.pe_holds.clear();
        s.pe_ahead.clear();
        s
    }

    /// Forget every booking of every layer, and the calendar with them.
    pub(crate) fn unbook_everything(&mut self) {
        self.calendar = Calendar::new();
        self.global.unbook_all();
        for h in &mut self.hosts {
            h.layer.unbook_all();
        }
        for i in &mut self.instances {
            i.layer.unbook_all();
        }
    }
}

/// An advance reservation's part of a cycle: its snapshot, its jobs' categories, and
/// its end less `DURATION_OFFSET` (no job of it may run beyond).
pub(crate) struct ReservationCycle<'j> {
    snap: Snapshot,
    categories: HashMap<CategoryKey<'j>, Option<Category>>,
    end: Time,
}

impl<'a> ClusterView<'a> {
    /// The snapshot and categories a cycle places the jobs of reservation `id` with:
    /// None while the reservation does not take jobs (not open, or in error with hard
    /// error handling).
    pub(crate) fn reservation_cycle<'j>(
        &self,
        snap: &mut Snapshot,
        id: ArId,
        at: Time,
    ) -> Option<ReservationCycle<'j>> {
        let ar = self.ars.get(&id)?;
        if !takes_jobs(ar, at) {
            return None;
        }
        let mut view = snap.reservation_view(ar);
        self.book_running(&mut view, at, |job| job.spec.ar == Some(id));
        Some(ReservationCycle {
            snap: view,
            categories: HashMap::new(),
            end: Time::from_secs(ar.end) - self.sched_conf().duration_offset,
        })
    }

    /// Place a reservation's job on its snapshot, as far as its run time ends within
    /// the reservation's window.
    pub(crate) fn place_in_reservation<'j>(
        &self,
        rc: &mut ReservationCycle<'j>,
        job: &'j Job,
        at: Time,
        max_aj_instances: Option<u32>,
        out: &mut Vec<Dispatch>,
    ) {
        let next = rc.categories.len() + 1;
        let entry = rc
            .categories
            .entry(category_key(job))
            .or_insert_with(|| rc.snap.category(job, next));
        let Some(cat) = entry.as_mut() else {
            return;
        };
        if cat.exhausted() || cat.demand.run_time.is_some_and(|r| at + r > rc.end) {
            return;
        }
        // A reservation's jobs are placed in what it holds, under no gate.
        let mut gates = Gates::default();
        self.place_tasks(&mut rc.snap, &mut gates, cat, job, 0, max_aj_instances, out);
    }

    /// Is job `job` one of a reservation that holds its resources (and so placed and
    /// booked inside it)?
    pub fn in_holding_reservation(&self, job: &Job) -> bool {
        job.spec
            .ar
            .and_then(|id| self.ars.get(&id))
            .is_some_and(holds)
    }

    /// Could a job run in a reservation at all: its requests against what the
    /// reservation holds, with none of its jobs running (`qsub -ar`'s check).
    pub fn could_run_in_reservation(&self, job: &Job, ar: &AdvanceReservation) -> bool {
        // The configured values alone: the reservation's snapshot books nothing of what
        // runs, and every instance of it counts, whatever its state now.
        let mut snap = self.snapshot_base();
        snap.now = Time::from_secs(ar.start);
        let mut view = snap.reservation_view(ar);
        view.category(job, 1)
            .and_then(|mut cat| view.place_task(&mut Gates::default(), &mut cat))
            .is_some()
    }

    /// Grant a reservation (`ar` with its window set, nothing granted yet): where its
    /// request fits over its whole window, beside the running tasks and the other
    /// reservations. Every user of its `-u` list must have access to every queue
    /// instance it gets; `-now y` takes only interactive instances.
    pub fn reserve(
        &self,
        ar: &AdvanceReservation,
        groups: &[String],
        connected: &HashSet<String>,
        now: Time,
    ) -> Result<Granted, CannotRun> {
        let mut snap = self.snapshot_at(connected, now, false);
        let mut gates = self.reservation_gates();
        self.reserve_on(&mut snap, &mut gates, ar, groups)
    }

    /// The gates a reservation is granted under: the quota sets. Group quotas allocate
    /// a cycle's slots among that cycle's demand: they do not limit a grant for a
    /// window; the reservation counts in its group once its window opens.
    pub(crate) fn reservation_gates(&self) -> Gates {
        let mut gates = Gates::default();
        if let Some(quota) = self.quota_book.cycle() {
            gates.register(Box::new(quota));
        }
        gates
    }

    /// [`ClusterView::reserve`] on a snapshot finished for now (a kept one: whatever
    /// this changes in it, finishing it again sets afresh).
    pub fn reserve_on(
        &self,
        snap: &mut Snapshot,
        gates: &mut Gates,
        ar: &AdvanceReservation,
        groups: &[String],
    ) -> Result<Granted, CannotRun> {
        if ar.spec.interactive {
            // Interactive instances are taken as batch ones for it: on a copy, as that
            // is part of what a kept snapshot keeps.
            let mut copy = snap.clone();
            return self.reserve_in(&mut copy, gates, ar, groups);
        }
        self.reserve_in(snap, gates, ar, groups)
    }

    fn reserve_in(
        &self,
        snap: &mut Snapshot,
        gates: &mut Gates,
        ar: &AdvanceReservation,
        groups: &[String],
    ) -> Result<Granted, CannotRun> {
        // A window to come has no load yet.
        for i in &mut snap.instances {
            if matches!(
                i.unusable,
                Some(Unusable::Overloaded(_) | Unusable::SuspendAlarm(_))
            ) {
                i.unusable = None;
            }
        }
        let job = request_job(ar, groups);
        let mut d = demand(&snap.catalog, &job).map_err(CannotRun::Demand)?;
        let users: Vec<&String> = ar
            .spec
            .users
            .iter()
            .filter(|u| !u.starts_with('@') && u.as_str() != "*")
            .collect();
        let order = std::mem::take(&mut snap.order);
        snap.order = order
            .into_iter()
            .filter(|&inst| {
                let i = &snap.instances[inst];
                let h = &snap.hosts[i.host];
                let access = |user: &str| {
                    let mut du = d.clone();
                    du.user = user.to_string();
                    du.groups.clear();
                    let ok = |allow: &[String], deny: &[String]| {
                        (allow.is_empty() || snap.in_userset(&du, allow))
                            && !snap.in_userset(&du, deny)
                    };
                    ok(&h.user_lists, &h.xuser_lists) && ok(&i.user_lists, &i.xuser_lists)
                };
                (!ar.spec.interactive || i.interactive) && users.iter().all(|u| access(u))
            })
            .collect();
        if ar.spec.interactive {
            for &inst in &snap.order {
                snap.instances[inst].batch = true;
            }
        }
        // A parallel environment's slots over the window: the most the running tasks
        // and the other reservations hold at any instant of it.
        let (from, until) = (Time::from_secs(ar.start), Time::from_secs(ar.end));
        let names: Vec<String> = snap.pes.keys().cloned().collect();
        for pe in names {
            let peak = pe_peak(&snap.pe_holds, &pe, from, until);
            snap.pe_used.insert(pe, peak);
        }
        snap.now = from;
        d.run_time = Some(Span::from_secs(ar.end - ar.start));
        d.category = 1;
        let candidates = snap.static_candidates(&d, None);
        let mut cat = Category {
            demand: d,
            candidates,
            cursor: 0,
            closed: false,
            job: JobId(0),
            restricted: false,
        };
        let Some(placed) = snap.place_task(gates, &mut cat) else {
            let reasons = snap
                .order
                .iter()
                .filter_map(|&inst| {
                    let i = &snap.instances[inst];
                    snap.matches(gates, &cat.demand, inst, Check::All(cat.demand.slots))
                        .err()
                        .map(|m| m.message(&i.queue, &snap.hosts[i.host].name))
                })
                .collect();
            return Err(CannotRun::Nowhere(reasons));
        };
        let grants = snap.grants_named(&placed.grants);
        let total = grants.iter().map(|g| g.slots).sum();
        Ok(Granted {
            grants,
            pe: placed.pe.map(|pe| (pe, total)),
        })
    }
}

#[cfg(test)]
mod tests;
