//! The dispatch part of a cycle: the stages in turn over the pending jobs (*order*
//! them, *place* each task where the layers and the *admit* stage's gates allow,
//! *book* what it takes), in one pass or, with group quotas, in rounds.

use gantry_proto::ArId;
use std::collections::HashMap;

use gantry_common::job::Job;

use crate::decisions::Dispatch;
use crate::gate::Gates;
use crate::group_rounds::{DispatchPass, GroupGate, StarvationOrder};
use crate::model::Snapshot;
use crate::order::JobOrder;
use crate::pass::Pass;
use crate::place::{category_key, Category, CategoryKey};
use crate::time::Time;
use crate::view::ClusterView;

impl<'a> ClusterView<'a> {
    /// The dispatch part of a cycle, on a prepared snapshot, in SGE's default order, or
    /// with group quotas in their rounds (see [`ClusterView::dispatch_groups`]).
    pub fn dispatch(&self, snap: &mut Snapshot, state: &mut Pass, at: Time) -> Vec<Dispatch> {
        match state.group_order.take() {
            Some(order) => {
                let out = self.dispatch_groups(snap, state, at, &order);
                state.group_order = Some(order);
                out
            }
            None => {
                let priorities = state.priorities.clone();
                let order = crate::order::PriorityOrder::new(priorities.as_deref());
                self.dispatch_in(snap, state, at, &order)
            }
        }
    }

    /// The dispatch part of a cycle in one pass over every eligible pending job.
    pub fn dispatch_in(
        &self,
        snap: &mut Snapshot,
        state: &mut Pass,
        at: Time,
        order: &dyn JobOrder,
    ) -> Vec<Dispatch> {
        let mut pass: DispatchPass<'_> = DispatchPass::new(self.sched_conf().max_reservation);
        let mut out = Vec::new();
        self.dispatch_pass(snap, state, at, order, &mut pass, &mut out);
        if let Some(settled) = state.settled.as_mut() {
            let adjustments = &snap.adjustments;
            let settles =
                |c: &Category| c.exhausted() && crate::settled::settles(&c.demand, adjustments);
            let whole = pass
                .categories
                .values()
                .all(|c| c.as_ref().is_some_and(settles))
                && pass
                    .ordered
                    .iter()
                    .flatten()
                    .all(|j| j.spec.ar.is_none() && !j.spec.reserve);
            settled.note(
                pass.categories
                    .values()
                    .flatten()
                    .filter(|c| settles(c))
                    .map(|c| c.job),
                whole,
            );
        }
        out
    }

    /// One pass of the dispatch part of a cycle, its stages in turn: *order* the
    /// eligible pending jobs (those `pass` takes); per job, its category's candidates;
    /// per task, *place* it (the layers and the *admit* stage's gates decide where) and
    /// *book* what it takes. What it places is added to `out` and noted in `pass`,
    /// which keeps the jobs in order and their categories for the next pass.
    pub(crate) fn dispatch_pass(
        &self,
        snap: &mut Snapshot,
        state: &mut Pass,
        at: Time,
        order: &dyn JobOrder,
        pass: &mut DispatchPass<'a>,
        out: &mut Vec<Dispatch>,
    ) {
        let max_aj_instances = self.max_aj_instances;
        // Per advance reservation with jobs to place: its own snapshot and categories.
        let mut reservations: HashMap<ArId, Option<crate::ar::ReservationCycle>> = HashMap::new();
        let jobs = match pass.ordered.take() {
            Some(jobs) => jobs,
            None => {
                pass.job_groups.clear();
                self.pending_in_order(at, order)
            }
        };
        // The key of the job before when its category had no room left: jobs alike one
        // after another (a bulk submission) need no lookup to find that again (a job
        // asking for a reservation still gets one).
        let mut exhausted_before: Option<CategoryKey<'a>> = None;
        let mut considered = 0;
        for (i, &job) in jobs.iter().enumerate() {
            if !pass.takes(i, job) {
                continue;
            }
            considered += 1;
            if let Some(id) = job.spec.ar {
                let entry = reservations
                    .entry(id)
                    .or_insert_with(|| self.reservation_cycle(snap, id, at));
                if let Some(rc) = entry.as_mut() {
                    self.place_in_reservation(rc, job, at, max_aj_instances, out);
                }
                continue;
            }
            let key = category_key(job);
            if !job.spec.reserve && exhausted_before == Some(key) {
                continue;
            }
            exhausted_before = None;
            let next_category = pass.categories.len() + 1;
            let entry = pass
                .categories
                .entry(key)
                .or_insert_with(|| match &state.settled {
                    Some(settled) => settled.category(snap, job, next_category),
                    None => snap.category(job, next_category),
                });
            let Some(cat) = entry.as_mut() else {
                continue; // requests the complex no longer has
            };
            // A reservation is made on every candidate, not only where room may have
            // come since the last cycle.
            if cat.restricted && job.spec.reserve && pass.reservations_left > 0 {
                if let Some(whole) = snap.category(job, cat.demand.category) {
                    *cat = whole;
                }
            }
            let before = out.len();
            let earlier = pass.placed.get(&job.id).copied().unwrap_or(0);
            let placed_before = earlier > 0;
            self.place_job(
                snap,
                &mut state.gates,
                cat,
                job,
                earlier,
                max_aj_instances,
                out,
            );
            let placed_none = out.len() == before;
            // `-R y`: a job none of whose tasks started gets the earliest time its next
            // task fits, booked, so that the jobs after it only backfill around it.
            if job.spec.reserve
                && placed_none
                && !placed_before
                && pass.reservations_left > 0
                && pass.reserved.insert(job.id)
            {
                if let Some(task) = job.tasks.pending().iter().next() {
                    if let Some(r) = snap.reserve_job(&mut state.gates, cat, job, task) {
                        state.reservations.push(r);
                        pass.reservations_left -= 1;
                    }
                }
            }
            if cat.exhausted() {
                exhausted_before = Some(key);
            }
        }
        state.considered = state.considered.max(considered);
        state.categories = state.categories.max(pass.categories.len());
        pass.ordered = Some(jobs);
    }

    /// Place what a cycle can of one job with its category.
    #[allow(clippy::too_many_arguments)]
    fn place_job(
        &self,
        snap: &mut Snapshot,
        gates: &mut Gates,
        cat: &mut Category,
        job: &Job,
        earlier: usize,
        max_aj_instances: Option<u32>,
        out: &mut Vec<Dispatch>,
    ) {
        if cat.exhausted() {
            return;
        }
        // `-now y`: every pending task starts in this cycle or none does. One task is
        // placed or not, with nothing to take back.
        if !job.spec.immediate || job.tasks.pending().len() == 1 {
            self.place_tasks(snap, gates, cat, job, earlier, max_aj_instances, out);
            return;
        }
        // Several are placed on a copy, kept only when all of them found room.
        let mut trial = snap.clone();
        let mut trial_gates = gates.clone();
        let mut trial_cat = cat.clone();
        let mut placed = Vec::new();
        self.place_tasks(
            &mut trial,
            &mut trial_gates,
            &mut trial_cat,
            job,
            earlier,
            max_aj_instances,
            &mut placed,
        );
        if placed.len() as u64 == job.tasks.pending().len() {
            *snap = trial;
            *gates = trial_gates;
            *cat = trial_cat;
            out.extend(placed);
        }
    }

    /// Place a job's pending tasks (but the first `earlier` ready ones, which earlier
    /// passes of the cycle placed),
    /// lowest first, as far as its category has room in this cycle; each placement is
    /// booked on the snapshot and added to `out`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn place_tasks(
        &self,
        snap: &mut Snapshot,
        gates: &mut Gates,
        cat: &mut Category,
        job: &Job,
        earlier: usize,
        max_aj_instances: Option<u32>,
        out: &mut Vec<Dispatch>,
    ) {
        // Lowest task first; the ids are produced as they are taken, so a cycle costs
        // what it dispatches, not the size of the array. `running` counts the tasks
        // that hold slots, those dispatched in this cycle included.
        let already = (job.tasks.holding_slots() + earlier) as u32;
        // `-hold_jid_ad`: task N waits while task N of a predecessor is in the system.
        let predecessors = self.array_predecessors(job);
        let ready = job
            .tasks
            .pending()
            .iter()
            .filter(|t| !crate::view::waits_for_array_task(&predecessors, *t))
            .skip(earlier);
        for (running, task_id) in (already..).zip(ready) {
            if job.spec.max_running_tasks.is_some_and(|tc| running >= tc)
                || (job.is_array() && max_aj_instances.is_some_and(|m| running >= m))
            {
                break;
            }
            let Some(placed) = snap.place_task(gates, cat) else {
                break; // nothing left for this category in this cycle
            };
            snap.book(gates, &cat.demand, &placed);
            let grants = snap.grants_named(&placed.grants);
            out.push(Dispatch {
                job_id: job.id,
                task_id,
                queue: grants[0].queue.clone(),
                host: grants[0].host.clone(),
                grants,
                pe: placed.pe,
            });
        }
    }

    /// The dispatch part of a cycle with group quotas, in HTCondor's rounds: a first
    /// pass over every job, groups in starvation order, each up to its allocation;
    /// then, up to `group_quota_rounds` passes in all, a group that could not use its
    /// allocation (its jobs fit nowhere else) asks only for what it got, the
    /// allocation is computed again, and the groups that get more and had jobs held
    /// back by their allocation are served again; at last, when a group with
    /// `autoregroup` still has jobs held back by its allocation, one more pass serves
    /// those jobs and the root's (by priority, then submission) with no group limit
    /// but the cluster's room, as HTCondor negotiates them in the root group with the
    /// whole pool for quota.
    pub(crate) fn dispatch_groups(
        &self,
        snap: &mut Snapshot,
        state: &mut Pass,
        at: Time,
        order: &StarvationOrder,
    ) -> Vec<Dispatch> {
        // Each pass over the jobs in the first's order, with its categories.
        let conf = self.sched_conf();
        let mut pass = DispatchPass::new(conf.max_reservation);
        let (jobs, groups) = order.sorted(self.pending_eligible(at));
        pass.ordered = Some(jobs);
        pass.job_groups = groups;
        let mut out = Vec::new();
        self.dispatch_pass(snap, state, at, order, &mut pass, &mut out);
        for _ in 1..conf.group_quota_rounds.max(1) {
            let Some(gate) = state.gates.get_mut::<GroupGate>() else {
                break;
            };
            let Some(grew) = gate.next_round(self.group_tree) else {
                break;
            };
            pass.note(&out);
            pass.serve_again(gate, grew);
            self.dispatch_pass(snap, state, at, order, &mut pass, &mut out);
        }
        if let Some(gate) = state.gates.get_mut::<GroupGate>() {
            if let Some(open) = gate.open_autoregroup() {
                pass.note(&out);
                pass.serve_again(gate, open);
                // In the root, by priority then submission.
                pass.ordered = None;
                let priorities = state.priorities.clone();
                let order = crate::order::PriorityOrder::new(priorities.as_deref());
                self.dispatch_pass(snap, state, at, &order, &mut pass, &mut out);
            }
        }
        // The allocation handed out is the last round's.
        if let (Some(gate), Some(allocation)) = (
            state.gates.get::<GroupGate>(),
            state.group_allocation.as_mut(),
        ) {
            for (share, (a, used)) in allocation.groups.iter_mut().zip(&gate.groups) {
                share.allocation = *a;
                share.running = *used;
                share.surplus = (a - share.demand.min(share.quota)).max(0.0);
            }
        }
        out
    }
}
