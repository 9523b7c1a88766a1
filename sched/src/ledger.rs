//! What the running tasks and the advance reservations hold, kept booked on a snapshot
//! from one question to the next.
//!
//! A cycle books everything that runs afresh on its snapshot. Granting an advance
//! reservation asks one question of the calendar per `qrsub`, and booking 10,000
//! running tasks again for each costs several times the question. A [`Ledger`] keeps,
//! per job and per reservation, the bookings made for it with what they were made from
//! (the job's `Arc`: the master's copy-on-write makes every change of a job a new one;
//! the reservation itself). Bringing the calendar up to date books what started,
//! releases what ended and books again what changed; everything else stays booked.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use gantry_common::job::Job;
use gantry_proto::AdvanceReservation;

use crate::book::{holds_resources, running_demand, TasksHeld};
use crate::calendar::BookingId;
use crate::model::Snapshot;
use crate::time::Time;
use crate::view::{ClusterImage, ClusterView, JobTable};

/// The bookings of a snapshot, by what they were made for.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    jobs: BTreeMap<u64, HeldJob>,
    ars: BTreeMap<u64, HeldAr>,
    /// The job table and reservations last brought up to (held: an `Arc` still held
    /// is never another's, so the same one means nothing changed).
    jobs_seen: Option<Arc<JobTable>>,
    ars_seen: Option<Arc<BTreeMap<u64, AdvanceReservation>>>,
    /// The earliest time a job's bookings must be made again.
    next_renewal: Option<Time>,
    /// The slots the booked jobs hold per parallel environment.
    pe_jobs: HashMap<String, u32>,
    pub counters: LedgerCounters,
}

/// How a ledger was brought up to date, for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LedgerCounters {
    /// Jobs and reservations booked (again).
    pub booked: u64,
    /// Jobs and reservations whose bookings were released.
    pub released: u64,
}

#[derive(Debug)]
struct HeldJob {
    job: Arc<Job>,
    /// Its reservation (the job's own, kept here so that an unchanged job is never
    /// read: 10,000 jobs read are as many cache misses).
    ar: Option<u64>,
    /// It was in a reservation holding resources (inside what that holds, not booked).
    in_reservation: bool,
    bookings: Vec<BookingId>,
    held: TasksHeld,
}

#[derive(Debug)]
struct HeldAr {
    ar: AdvanceReservation,
    bookings: Vec<BookingId>,
    /// Its parallel environment, slots and window start.
    pe: Option<(String, u32, Time)>,
}

impl Snapshot {
    fn release_all(&mut self, bookings: &[BookingId]) {
        for &b in bookings {
            // Every id was booked on this calendar and released only here.
            let _ = self.calendar.release(b);
        }
    }
}

/// Is `seen` the very `now`?
fn same<T>(seen: &Option<Arc<T>>, now: &Arc<T>) -> bool {
    seen.as_ref().is_some_and(|a| Arc::ptr_eq(a, now))
}

impl Ledger {
    /// Bring what the ledger booked on `snap` (judged for `now`) up to the jobs and
    /// reservations of `image` at `now`, and count the slots of the parallel
    /// environments: the snapshot then holds what [`ClusterView::finish_snapshot`]
    /// would have booked.
    pub(crate) fn bring_up_to_date(
        &mut self,
        image: &ClusterImage,
        snap: &mut Snapshot,
        now: Time,
    ) {
        let view = image.view();
        let ars_same = same(&self.ars_seen, &image.ars);
        let renewal_due = self.next_renewal.is_some_and(|t| now >= t);
        if !(ars_same && same(&self.jobs_seen, &image.jobs) && !renewal_due) {
            self.jobs_up_to_date(&view, snap, now);
        }
        if !ars_same || self.ars.values().any(|h| h.ended(now)) {
            self.ars_up_to_date(&view, snap, now);
        }
        self.jobs_seen = Some(Arc::clone(&image.jobs));
        self.ars_seen = Some(Arc::clone(&image.ars));

        snap.pe_used.clear();
        let jobs = self
            .pe_jobs
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(pe, n)| (pe.clone(), *n));
        let ars = self
            .ars
            .values()
            .filter_map(|h| h.pe.clone())
            .filter(|(_, _, from)| *from <= now)
            .map(|(pe, slots, _)| (pe, slots));
        for (pe, slots) in jobs.chain(ars) {
            *snap.pe_used.entry(pe).or_insert(0) += slots;
        }
    }

    fn jobs_up_to_date(&mut self, view: &ClusterView, snap: &mut Snapshot, now: Time) {
        let current = |held: &HeldJob, job: &Arc<Job>| {
            Arc::ptr_eq(&held.job, job)
                && held.held.renew_at.is_none_or(|t| now < t)
                && held.ar.is_none_or(|id| {
                    held.in_reservation == view.ars.get(&id).is_some_and(crate::ar::holds)
                })
        };
        // Both in id order: one pass over both finds what changed.
        let mut stale: Vec<u64> = Vec::new();
        let mut fresh: Vec<&Arc<Job>> = Vec::new();
        {
            let mut held = self.jobs.iter().peekable();
            for (id, job) in view.jobs {
                while let Some((h, _)) = held.next_if(|(h, _)| *h < id) {
                    stale.push(*h);
                }
                match held.next_if(|(h, _)| *h == id) {
                    Some((_, h)) if current(h, job) => {}
                    Some(_) => {
                        stale.push(*id);
                        fresh.push(job);
                    }
                    None => fresh.push(job),
                }
            }
            stale.extend(held.map(|(id, _)| *id));
        }
        for id in stale {
            if let Some(h) = self.jobs.remove(&id) {
                if !h.bookings.is_empty() {
                    self.counters.released += 1;
                }
                snap.release_all(&h.bookings);
                for (pe, slots) in &h.held.pe {
                    if let Some(n) = self.pe_jobs.get_mut(pe) {
                        *n = n.saturating_sub(*slots);
                    }
                }
            }
        }
        let index = std::mem::take(&mut snap.instance_index);
        for job in fresh {
            let in_reservation = view.in_holding_reservation(job);
            let mut bookings = Vec::new();
            let held = if !in_reservation && holds_resources(job) {
                self.counters.booked += 1;
                let d = running_demand(&snap.catalog, job, snap.default_duration);
                snap.hold_tasks(job, &d, &index, now, Some(&mut bookings))
            } else {
                TasksHeld::default()
            };
            for (pe, slots) in &held.pe {
                *self.pe_jobs.entry(pe.clone()).or_insert(0) += slots;
            }
            self.jobs.insert(
                job.id,
                HeldJob {
                    job: Arc::clone(job),
                    ar: job.spec.ar,
                    in_reservation,
                    bookings,
                    held,
                },
            );
        }
        snap.instance_index = index;
        self.next_renewal = self.jobs.values().filter_map(|h| h.held.renew_at).min();
    }

    fn ars_up_to_date(&mut self, view: &ClusterView, snap: &mut Snapshot, now: Time) {
        let gone: Vec<u64> = self
            .ars
            .iter()
            .filter(|(id, h)| view.ars.get(id).is_none_or(|ar| !h.same_hold(ar)) || h.ended(now))
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            if let Some(h) = self.ars.remove(&id) {
                self.counters.released += 1;
                snap.release_all(&h.bookings);
            }
        }
        for ar in view.ars.values() {
            if self.ars.contains_key(&ar.id) {
                continue;
            }
            let mut bookings = Vec::new();
            let pe = snap.hold_reservation(ar, Some(&mut bookings));
            self.counters.booked += 1;
            self.ars.insert(
                ar.id,
                HeldAr {
                    ar: ar.clone(),
                    bookings,
                    pe,
                },
            );
        }
    }
}

impl HeldAr {
    /// Does `ar` hold what this booked? A reservation changes only its state once
    /// granted (and its error list, which books nothing).
    fn same_hold(&self, ar: &AdvanceReservation) -> bool {
        let held = &self.ar;
        held.state == ar.state
            && held.start == ar.start
            && held.end == ar.end
            && held.granted_pe == ar.granted_pe
            && held.granted == ar.granted
            && held.spec == ar.spec
    }

    /// Booked, and its window over.
    fn ended(&self, now: Time) -> bool {
        !self.bookings.is_empty() && Time::from_secs(self.ar.end) <= now
    }
}
