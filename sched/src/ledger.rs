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

use gantry_proto::{AdvanceReservation, ArId, ArState, JobId};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use gantry_common::job::Job;

use crate::book::{holds_resources, running_demand, TasksHeld};
use crate::calendar::BookingId;
use crate::model::{PeHold, Snapshot};
use crate::time::Time;
use crate::view::ClusterView;

/// The bookings of a snapshot, by what they were made for.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    /// Every job of the table last brought up to (booked or not), by id.
    jobs: HashMap<JobId, HeldJob, foldhash::fast::RandomState>,
    /// The same jobs in id order with the address of the `Arc` each was seen as: what
    /// is compared with the job table (a flat array, read in one pass; the `Arc`s held
    /// in `jobs` keep the addresses from being reused).
    addresses: Vec<(JobId, usize)>,
    /// When the bookings of a job must be made again, earliest first.
    renewals: BTreeSet<(Time, JobId)>,
    /// The jobs bound to a reservation: booked or not as the reservation holds or not.
    bound: BTreeSet<JobId>,
    ars: BTreeMap<ArId, HeldAr>,
    /// The booked jobs that hold parallel environment slots.
    parallel: BTreeSet<JobId>,
    /// The jobs with running tasks (booked or not: those of a reservation too).
    running: BTreeSet<JobId>,
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
    /// The job as booked: while it is held, its address in `addresses` is no other
    /// job's.
    job: Arc<Job>,
    /// Its reservation, and whether that held resources (the job then inside what it
    /// holds, not booked here).
    ar: Option<(ArId, bool)>,
    bookings: Vec<BookingId>,
    held: TasksHeld,
}

/// A reservation as booked: what can change of a granted one is its state (its error
/// list books nothing); its window and grants never change.
#[derive(Debug)]
struct HeldAr {
    state: ArState,
    start: i64,
    end: i64,
    bookings: Vec<BookingId>,
    /// The parallel environment slots it holds over its window.
    pe: Option<PeHold>,
}

impl Snapshot {
    fn release_all(&mut self, bookings: &[BookingId]) {
        for &b in bookings {
            // Every id was booked on this calendar and released only here.
            let _ = self.calendar.release(b);
        }
    }
}

impl Ledger {
    /// Bring what the ledger booked on `snap` (judged for `now`) up to the jobs and
    /// reservations of `view` at `now`, and count the slots of the parallel
    /// environments: the snapshot then holds what [`ClusterView::finish_snapshot`]
    /// would have booked.
    pub(crate) fn bring_up_to_date(&mut self, view: &ClusterView, snap: &mut Snapshot, now: Time) {
        // The job table and the reservations are compared every time, not kept: a
        // table held here would make the master's next change copy it whole.
        self.jobs_up_to_date(view, snap, now);
        self.ars_up_to_date(view, snap, now);

        snap.pe_used.clear();
        snap.pe_holds.clear();
        snap.pe_ahead.clear();
        let jobs = self
            .parallel
            .iter()
            .filter_map(|id| self.jobs.get(id))
            .flat_map(|h| h.held.pe.iter());
        let ars = self.ars.values().filter_map(|h| h.pe.as_ref());
        for hold in jobs.chain(ars) {
            snap.hold_pe(hold.clone());
        }
    }

    /// The jobs with running tasks, as last brought up to date.
    pub(crate) fn running(&self) -> Vec<&Job> {
        self.running
            .iter()
            .filter_map(|id| self.jobs.get(id))
            .map(|h| &*h.job)
            .collect()
    }

    /// The jobs that changed since the last time, or whose bookings are due again.
    fn changed_jobs(&mut self, view: &ClusterView, now: Time) -> Vec<JobId> {
        let mut changed: Vec<JobId> = Vec::new();
        let mut addresses = Vec::with_capacity(view.jobs.len());
        let mut seen = self.addresses.iter().peekable();
        for (&id, job) in view.jobs {
            let address = Arc::as_ptr(job) as usize;
            addresses.push((id, address));
            while let Some(&(gone, _)) = seen.next_if(|(s, _)| *s < id) {
                changed.push(gone);
            }
            match seen.next_if(|(s, _)| *s == id) {
                Some(&(_, was)) if was == address => {}
                _ => changed.push(id),
            }
        }
        changed.extend(seen.map(|(id, _)| *id));
        self.addresses = addresses;
        while let Some(&(t, id)) = self.renewals.first() {
            if now < t {
                break;
            }
            changed.push(id);
            self.renewals.pop_first();
        }
        for &id in &self.bound {
            if let Some((ar, was)) = self.jobs.get(&id).and_then(|h| h.ar) {
                if was != view.ars.get(&ar).is_some_and(crate::ar::holds) {
                    changed.push(id);
                }
            }
        }
        changed.sort_unstable();
        changed.dedup();
        changed
    }

    fn jobs_up_to_date(&mut self, view: &ClusterView, snap: &mut Snapshot, now: Time) {
        let changed = self.changed_jobs(view, now);
        for &id in &changed {
            if let Some(h) = self.jobs.remove(&id) {
                if !h.bookings.is_empty() {
                    self.counters.released += 1;
                }
                snap.release_all(&h.bookings);
                self.parallel.remove(&id);
                self.running.remove(&id);
                if let Some(t) = h.held.renew_at {
                    self.renewals.remove(&(t, id));
                }
                self.bound.remove(&id);
            }
        }
        let index = std::mem::take(&mut snap.instance_index);
        for id in changed {
            let Some(job) = view.jobs.get(&id) else {
                continue;
            };
            let in_reservation = view.in_holding_reservation(job);
            let mut bookings = Vec::new();
            let held = if !in_reservation && holds_resources(job) {
                self.counters.booked += 1;
                let d = running_demand(&snap.catalog, job, snap.default_duration);
                snap.hold_tasks(job, &d, &index, now, Some(&mut bookings))
            } else {
                TasksHeld::default()
            };
            if !held.pe.is_empty() {
                self.parallel.insert(id);
            }
            if let Some(t) = held.renew_at {
                self.renewals.insert((t, id));
            }
            if job.spec.ar.is_some() {
                self.bound.insert(id);
            }
            if job
                .tasks
                .placed_states()
                .any(|t| matches!(t, gantry_common::job::TaskState::Running { .. }))
            {
                self.running.insert(id);
            }
            self.jobs.insert(
                id,
                HeldJob {
                    job: Arc::clone(job),
                    ar: job.spec.ar.map(|ar| (ar, in_reservation)),
                    bookings,
                    held,
                },
            );
        }
        snap.instance_index = index;
    }

    fn ars_up_to_date(&mut self, view: &ClusterView, snap: &mut Snapshot, now: Time) {
        let gone: Vec<ArId> = self
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
                    state: ar.state,
                    start: ar.start,
                    end: ar.end,
                    bookings,
                    pe,
                },
            );
        }
    }
}

impl HeldAr {
    /// Does `ar` hold what this booked?
    fn same_hold(&self, ar: &AdvanceReservation) -> bool {
        self.state == ar.state && self.start == ar.start && self.end == ar.end
    }

    /// Booked, and its window over.
    fn ended(&self, now: Time) -> bool {
        !self.bookings.is_empty() && Time::from_secs(self.end) <= now
    }
}
