//! The book stage: what a placement takes, debited where the cycle reads it (every
//! layer's consumables, the admit stage's gates) and the load a start adds to its host;
//! and what the running tasks hold, booked when a snapshot is finished.

use gantry_proto::{Consumable, JobId};
use std::collections::HashMap;
use std::sync::Arc;

use gantry_common::job::{Job, TaskState};

use crate::calendar::BookingId;
use crate::gate::Gates;
use crate::matching::*;
use crate::model::*;
use crate::place::grants_total;
use crate::time::{Span, Time};
use crate::view::ClusterView;

impl Snapshot {
    /// Book a placement: its consumables on every layer and under every gate (unless
    /// its allocation already did), and the load its start adds to its hosts.
    pub fn book(&mut self, gates: &mut Gates, d: &Demand, p: &crate::place::Placement) {
        if !p.booked {
            self.debit(gates, d, &p.grants, 1.0);
        }
        self.started(&p.grants);
    }

    /// Jobs just placed raise their hosts' adjusted load at once (a full weight per
    /// slot), which may put queue instances there over their load thresholds for the
    /// rest of the cycle.
    pub(crate) fn started(&mut self, grants: &[(usize, u32)]) {
        if self.adjustments.is_empty() {
            return;
        }
        for &(inst, slots) in grants {
            let h = self.instances[inst].host;
            let host = &mut self.hosts[h];
            host.weight += slots as f64;
            adjust(
                &self.catalog,
                &self.adjustments,
                &mut host.layer,
                &host.reported,
                host.weight,
                host.nproc,
            );
            for i in self.hosts[h].instances.clone() {
                if self.instances[i].unusable.is_none() {
                    self.instances[i].unusable = overload_message(
                        &self.catalog,
                        &self.hosts[h],
                        &self.adjustments,
                        &self.instances[i].thresholds,
                    )
                    .map(Unusable::Overloaded);
                }
            }
        }
    }

    /// Debit (or with a negative sign, credit) a job's consumables on the layers of the
    /// queue instances it was granted: booked from now for its run time.
    pub fn debit(&mut self, gates: &mut Gates, d: &Demand, grants: &[(usize, u32)], sign: f64) {
        gates.book(self, d, grants, sign);
        let from = self.now;
        self.hold(d, grants, sign, from, d.until(from));
    }

    /// Book `amount` of `attr` over `span` on one layer: the global one (None), or
    /// queue instance `inst`'s with its host's too (`host` true) or alone.
    fn book_layers(
        &mut self,
        inst: Option<(usize, bool)>,
        attr: usize,
        amount: f64,
        (from, until): (Time, Option<Time>),
        mut ids: Option<&mut Vec<BookingId>>,
    ) {
        let Some((inst, with_host)) = inst else {
            let layer = &mut self.global;
            layer.book(&mut self.calendar, attr, amount, from, until, ids);
            return;
        };
        if with_host {
            let host = self.instances[inst].host;
            let layer = &mut self.hosts[host].layer;
            layer.book(
                &mut self.calendar,
                attr,
                amount,
                from,
                until,
                ids.as_deref_mut(),
            );
        }
        let layer = &mut self.instances[inst].layer;
        layer.book(&mut self.calendar, attr, amount, from, until, ids);
    }

    /// Book an EXCL attribute: once globally, once on each host and on each queue
    /// instance a task holds slots in, however many slots.
    fn hold_exclusive(
        &mut self,
        attr: usize,
        amount: f64,
        grants: &[(usize, u32)],
        span: (Time, Option<Time>),
        mut ids: Option<&mut Vec<BookingId>>,
    ) {
        if grants.is_empty() {
            return;
        }
        self.book_layers(None, attr, amount, span, ids.as_deref_mut());
        let mut hosts: Vec<usize> = Vec::new();
        for &(inst, _) in grants {
            let host = self.instances[inst].host;
            let first_on_host = !hosts.contains(&host);
            if first_on_host {
                hosts.push(host);
            }
            let at = Some((inst, first_on_host));
            self.book_layers(at, attr, amount, span, ids.as_deref_mut());
        }
    }

    /// Book a job's consumables on the layers of its grants over `[from, until)` (a
    /// credit is a negative booking of the same interval).
    pub fn hold(
        &mut self,
        d: &Demand,
        grants: &[(usize, u32)],
        sign: f64,
        from: Time,
        until: Option<Time>,
    ) {
        self.hold_recorded(d, grants, sign, (from, until), None);
    }

    /// [`Snapshot::hold`], each amount with `ids` a booking of its own whose id goes
    /// there (to release them when the task ends).
    pub(crate) fn hold_recorded(
        &mut self,
        d: &Demand,
        grants: &[(usize, u32)],
        sign: f64,
        span: (Time, Option<Time>),
        mut ids: Option<&mut Vec<BookingId>>,
    ) {
        let total: u32 = grants.iter().map(|(_, n)| n).sum();
        let consumables: Vec<(usize, f64, Consumable)> = d.consumables(&self.catalog).collect();
        for (attr, amount, kind) in consumables {
            if self.catalog.exclusive.contains(&attr) {
                self.hold_exclusive(attr, sign * amount, grants, span, ids.as_deref_mut());
                continue;
            }
            let per_slot = kind != Consumable::Job;
            let global = if per_slot {
                amount * total as f64
            } else {
                amount
            };
            self.book_layers(None, attr, sign * global, span, ids.as_deref_mut());
            for (n, (inst, slots)) in grants.iter().enumerate() {
                let here = match (per_slot, n) {
                    (true, _) => amount * *slots as f64,
                    (false, 0) => amount,
                    (false, _) => 0.0,
                };
                let at = Some((*inst, true));
                self.book_layers(at, attr, sign * here, span, ids.as_deref_mut());
            }
        }
    }
}

/// A running job's demand as booked (a job whose requests no longer resolve holds its
/// slots and nothing else).
pub(crate) fn running_demand(
    catalog: &Catalog,
    job: &Job,
    default_run_time: Option<Span>,
) -> Demand {
    demand(catalog, job)
        .unwrap_or_else(|_| Demand {
            hard: Vec::new(),
            soft: Vec::new(),
            queues: Vec::new(),
            soft_queues: Vec::new(),
            masterq: Vec::new(),
            ckpt: None,
            user: String::new(),
            groups: Vec::new(),
            project: None,
            account: String::new(),
            slots: 1,
            pe: None,
            part: Part::Whole,
            granted_pe: None,
            category: 0,
            quota_exempt: true,
            queue_kind: crate::model::QueueKind::Batch,
            run_time: None,
        })
        .with_default_run_time(default_run_time)
}

/// Does a job have tasks that hold what they were granted (running, or being deleted)?
pub(crate) fn holds_resources(job: &Job) -> bool {
    job.tasks
        .placed_states()
        .any(|t| matches!(t, TaskState::Running { .. } | TaskState::Deleting { .. }))
}

/// What a job's running tasks hold besides their bookings.
#[derive(Debug, Clone, Default)]
pub(crate) struct TasksHeld {
    /// Parallel environment slots, each over its task's interval.
    pub pe: Vec<PeHold>,
    /// From when the bookings read differently (a task past its run time holds until
    /// just after now, one started after now holds from now): booked again then.
    pub renew_at: Option<Time>,
}

impl Snapshot {
    /// Book what the running tasks of `job` hold (`d` its demand) on every layer, from
    /// their start until their run time is over; with `ids`, each a booking of its own.
    pub(crate) fn hold_tasks(
        &mut self,
        job: &Job,
        d: &Demand,
        index: &InstanceIndex,
        now: Time,
        mut ids: Option<&mut Vec<BookingId>>,
    ) -> TasksHeld {
        let mut held = TasksHeld::default();
        let soon = now + Span::from_millis(1);
        for t in job.tasks.placed_states() {
            if let TaskState::Running {
                grants,
                pe,
                start_time,
                ..
            }
            | TaskState::Deleting {
                grants,
                pe,
                start_time,
                ..
            } = t
            {
                let granted: Vec<(usize, u32)> = grants
                    .iter()
                    .filter_map(|g| index.get(&g.queue, &g.host).map(|i| (i, g.slots)))
                    .collect();
                // From its start until its run time is over; a task still running past
                // it holds what it has for as long as it runs.
                let start = Time::from_secs(*start_time);
                let from = start.min(now);
                let end = d.until(from);
                let until = end.map(|end| end.max(soon));
                if let Some(pe) = pe {
                    held.pe.push(PeHold {
                        pe: pe.clone(),
                        slots: grants_total(&granted),
                        from,
                        until,
                    });
                }
                let renew = match end {
                    _ if start > now => Some(soon),
                    Some(end) if end <= now => Some(soon),
                    end => end,
                };
                held.renew_at = match (held.renew_at, renew) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                self.hold_recorded(d, &granted, 1.0, (from, until), ids.as_deref_mut());
            }
        }
        held
    }
}

impl<'a> ClusterView<'a> {
    /// Book what the running tasks of the jobs `which` picks hold, on every layer and
    /// in their parallel environments.
    pub(crate) fn book_running(
        &self,
        snap: &mut Snapshot,
        now: Time,
        which: impl Fn(&Job) -> bool,
    ) {
        // The index and the demands are the snapshot's; out of it while it is booked on.
        let index = std::mem::take(&mut snap.instance_index);
        let mut known = std::mem::take(&mut snap.running_demands);
        let mut demands: HashMap<JobId, (Arc<Job>, Demand), foldhash::fast::RandomState> =
            HashMap::default();
        for job in self.jobs.values().filter(|j| which(j)) {
            if !holds_resources(job) {
                continue;
            }
            let d = match known.remove(&job.id) {
                Some((was, d)) if Arc::ptr_eq(&was, job) => d,
                _ => running_demand(&snap.catalog, job, snap.default_duration),
            };
            for h in snap.hold_tasks(job, &d, &index, now, None).pe {
                snap.hold_pe(h);
            }
            demands.insert(job.id, (Arc::clone(job), d));
        }
        snap.instance_index = index;
        snap.running_demands = demands;
    }
}
