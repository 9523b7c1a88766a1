//! Resource reservation (`qsub -R y`, `max_reservation`) and backfilling, on the
//! calendar (SGE's `sched_conf(5)`).
//!
//! A pending job that asked for a reservation and cannot start now is given, among the
//! first `max_reservation` such jobs by priority, the earliest time its resources are
//! free on the calendar, and is booked there for its run time (its `h_rt`, else
//! `default_duration`; without either, from then on). The cycle goes on with the jobs
//! after it: they start only where they end before the reserved time, or where they do
//! not touch what it holds. That is backfilling, and it falls out of the calendar: a job
//! is placed only where its whole run time fits beside every booking.
//!
//! Reservations are made afresh in every cycle: a job that ends early frees its
//! resources sooner, and the reserved job moves forward with them.

use gantry_common::job::Job;
use gantry_proto::TaskId;

pub use crate::decisions::Reservation;
use crate::gate::Gates;
use crate::model::*;
use crate::place::Category;
use crate::time::Time;

/// At most this many start times are tried for one job (the earliest ones): each is one
/// placement attempt.
const MAX_START_TIMES: usize = 64;

impl Snapshot {
    /// What one slot of a demand takes of each booked resource of an instance's three
    /// layers: (resource, amount). Offers nothing has booked yet have no resource, and
    /// hold nothing back.
    fn booked_wants(&self, d: &Demand, inst: usize) -> Vec<(crate::calendar::ResourceId, f64)> {
        let mut out = Vec::new();
        for (attr, amount, _) in d.consumables(&self.catalog) {
            for (_, layer) in self.layers(inst) {
                if let Some(r) = layer.get(attr).and_then(|o| o.resource) {
                    out.push((r, amount));
                }
            }
        }
        out
    }

    /// The times after `from` at which a placement of the demand may succeed, earliest
    /// first: the earliest time one slot fits on each candidate, and the ends of the
    /// bookings on the candidates' resources (only an end frees anything, and a parallel
    /// job may need several to have ended).
    fn start_times(&self, d: &Demand, candidates: &[usize], from: Time) -> Vec<Time> {
        let mut times: Vec<Time> = Vec::new();
        for &inst in candidates {
            let wants = self.booked_wants(d, inst);
            if let Ok(Some(t)) = self.calendar.earliest_fit_all(&wants, from, d.run_time) {
                times.push(t);
            }
            for (r, _) in wants {
                if let Ok(ends) = self.calendar.ends_after(r, from) {
                    times.extend(ends);
                }
            }
        }
        times.sort_unstable();
        times.dedup();
        times.retain(|&t| t > from);
        times.truncate(MAX_START_TIMES);
        times
    }

    /// Reserve the next task of a job that cannot start now: the earliest start time at
    /// which a placement of it succeeds, booked from then for its run time (and under
    /// the admit stage's gates, as a start is). None when no time on the calendar gives
    /// it room.
    pub(crate) fn reserve_job(
        &mut self,
        gates: &mut Gates,
        cat: &Category,
        job: &Job,
        task_id: TaskId,
    ) -> Option<Reservation> {
        let now = self.now;
        let candidates = cat.candidates.clone();
        // Not now: that was tried.
        for t in self.start_times(&cat.demand, &candidates, now) {
            self.now = t;
            let mut trial = cat.clone();
            trial.reopen();
            let placed = self.place_task(gates, &mut trial);
            if let Some(p) = &placed {
                if !p.booked {
                    self.debit(gates, &trial.demand, &p.grants, 1.0);
                }
            }
            self.now = now;
            if let Some(p) = placed {
                let grants = self.grants_named(&p.grants);
                return Some(Reservation {
                    job_id: job.id,
                    task_id,
                    start: t,
                    grants,
                    pe: p.pe,
                });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests;
