//! A cycle's explanations: whether a job could ever run, or run now (`qsub -w`), and
//! why its pending tasks are not dispatched (`qstat -j`), in SGE's words.

use gantry_proto::JobId;
use std::collections::HashSet;

use gantry_common::job::Job;

use crate::calendar::Calendar;
use crate::decisions::{CannotRun, Misfit};
use crate::matching::*;
use crate::model::*;
use crate::pass::Pass;
use crate::place::grants_total;
use crate::quota::QuotaCycle;
use crate::time::Time;
use crate::view::ClusterView;

impl<'a> ClusterView<'a> {
    /// Could any queue instance ever run this job (its requests against the instances'
    /// configured and last reported values, with nothing running)? The slots it would
    /// get.
    pub fn could_ever_run(&self, job: &Job) -> Result<u32, CannotRun> {
        let all: HashSet<String> = self.exechosts.keys().cloned().collect();
        // Every host counts, however long ago it reported.
        let mut snap = self.snapshot(&all, Time::MAX);
        for i in &mut snap.instances {
            i.unusable = None;
        }
        // Nothing running: every consumable at its full capacity.
        for layer in std::iter::once(&mut snap.global)
            .chain(snap.hosts.iter_mut().map(|h| &mut h.layer))
            .chain(snap.instances.iter_mut().map(|i| &mut i.layer))
        {
            layer.unbook_all();
        }
        snap.calendar = Calendar::new();
        let mut state = self.open_pass(&snap);
        state.gates.forget_bookings();
        let gates = &mut state.gates;
        let d = demand(&snap.catalog, job).map_err(CannotRun::Demand)?;
        let mut reasons = Vec::new();
        for &inst in &snap.order {
            match snap.matches(gates, &d, inst, Check::All(d.slots)) {
                Ok(()) => {
                    // The slots it would get there (a parallel job: as many as its range
                    // and the empty cluster allow), as SGE's `-w v` says them.
                    let placed = snap
                        .category(job, 1)
                        .and_then(|mut cat| snap.place_task(gates, &mut cat));
                    return match (placed, &d.pe) {
                        (Some(p), _) => Ok(p.grants.iter().map(|&(_, slots)| slots).sum()),
                        // A parallel job the empty cluster cannot hold, however its
                        // instances take it one by one.
                        (None, Some(per)) => {
                            let candidates = snap.clone().static_candidates(&d, None);
                            Err(CannotRun::Nowhere(vec![pe_offers_too_few(
                                &snap,
                                gates,
                                &d,
                                per,
                                &candidates,
                            )]))
                        }
                        (None, None) => Ok(d.slots),
                    };
                }
                Err(m) => {
                    let i = &snap.instances[inst];
                    reasons.push(m.message(&i.queue, &snap.hosts[i.host].name));
                }
            }
        }
        Err(CannotRun::Nowhere(reasons))
    }

    /// `qsub -w p`: could the job start now, on what the cluster has free (its running
    /// jobs, its load, the quota sets as they stand)? The slots it would get.
    pub fn could_run_now(
        &self,
        job: &Job,
        connected: &HashSet<String>,
        at: Time,
    ) -> Result<u32, CannotRun> {
        self.placement_now(job, connected, at)
            .map(|grants| grants.iter().map(|(_, _, slots)| slots).sum())
    }

    /// Where `job` would start now, on what is free (the what-if of the HTTP API):
    /// each queue instance granted as (queue, host, slots), the master queue first;
    /// else why every instance turns it away.
    pub fn placement_now(
        &self,
        job: &Job,
        connected: &HashSet<String>,
        at: Time,
    ) -> Result<Vec<(String, String, u32)>, CannotRun> {
        let mut snap = self.snapshot_at(connected, at, true);
        let mut state = self.open_pass(&snap);
        let placed = snap
            .category(job, 1)
            .and_then(|mut cat| snap.place_task(&mut state.gates, &mut cat));
        match placed {
            Some(p) => Ok(p
                .grants
                .iter()
                .map(|&(i, slots)| {
                    let instance = &snap.instances[i];
                    (
                        instance.queue.clone(),
                        snap.hosts[instance.host].name.clone(),
                        slots,
                    )
                })
                .collect()),
            None => Err(CannotRun::Nowhere(self.explain(job, connected, at))),
        }
    }

    /// `qstat -j` without a job: the pending jobs (not held, not waiting) that some
    /// queue instance would take but for a resource quota rule, and that no instance
    /// takes now.
    pub fn quota_blocked_jobs(&self, connected: &HashSet<String>, at: Time) -> Vec<JobId> {
        let snap = self.snapshot_at(connected, at, true);
        let mut state = self.open_pass(&snap);
        if state.gates.get::<QuotaCycle>().is_none() {
            return Vec::new();
        }
        let gates = &mut state.gates;
        let mut out = Vec::new();
        for job in self.jobs.values() {
            if !job.tasks.has_pending() || !self.eligible(job, at) {
                continue;
            }
            let Ok(d) = demand(&snap.catalog, job) else {
                continue;
            };
            let mut denied = false;
            let mut runnable = false;
            for &inst in &snap.order {
                if !snap.fits(gates, &d, inst, Check::Static) {
                    continue;
                }
                match snap.check(gates, &d, inst, Check::Consumables(d.slots), true) {
                    Ok(()) => runnable = true,
                    Err(Misfit::Quota(_)) => denied = true,
                    Err(_) => {}
                }
            }
            if denied && !runnable {
                out.push(job.id);
            }
        }
        out
    }

    /// Why a job that fits where the cluster stands waits anyway: the slots other jobs'
    /// resource reservations (`-R y`, the last cycle's) hold in the queue instances it
    /// would use before it ends, in SGE's words (`(-l h_rt=600) cannot run in queue
    /// "all.q@vm" because it offers only qc:slots=0.000000 due to a reservation`).
    pub fn held_back_by_reservations<'r>(
        &self,
        job: &Job,
        connected: &HashSet<String>,
        at: Time,
        reservations: impl Iterator<Item = &'r crate::decisions::Reservation>,
    ) -> Vec<String> {
        let snap = self.snapshot_at(connected, at, true);
        let Ok(d) = demand(&snap.catalog, job) else {
            return Vec::new();
        };
        let Some(slots_attr) = snap.catalog.id("slots") else {
            return Vec::new();
        };
        let ends = d.until(at);
        let mut reasons = Vec::new();
        for r in reservations.filter(|r| r.job_id != job.id) {
            // A job that ends before the reservation starts does not touch it.
            if ends.is_some_and(|end| end <= r.start) {
                continue;
            }
            for g in &r.grants {
                let Some(inst) = snap.order.iter().copied().find(|&i| {
                    snap.instances[i].queue == g.queue
                        && snap.hosts[snap.instances[i].host].name == g.host
                }) else {
                    continue;
                };
                let Some((free, _)) = snap.instances[inst]
                    .layer
                    .get(slots_attr)
                    .and_then(|o| crate::model::available(o, snap.used(o, None)))
                else {
                    continue;
                };
                let left = (free - f64::from(g.slots)).max(0.0);
                if left + 1e-9 < f64::from(d.slots) {
                    let text = format!(
                        "(-l {}) cannot run in queue \"{}@{}\" because it offers only qc:slots={left:.6} due to a reservation",
                        d.request_list(&snap.catalog),
                        g.queue,
                        g.host
                    );
                    if !reasons.contains(&text) {
                        reasons.push(text);
                    }
                }
            }
        }
        reasons
    }

    /// Why a job's pending tasks are not dispatched, in SGE's words.
    pub fn explain(&self, job: &Job, connected: &HashSet<String>, at: Time) -> Vec<String> {
        let now = at.secs();
        let mut reasons = Vec::new();
        // SCHEDD_INFO_JOBINERROR_: a task waits in error state (`qmod -cj` clears it).
        if job.tasks.has_errors() {
            reasons.push("Job is in error state".to_string());
        }
        if !job.tasks.has_pending() {
            // SGE shows its last run's word on the queue instances it dropped (full,
            // disabled, suspended, ...) for every job, one whose tasks all run too.
            let snap = self.snapshot_at(connected, at, true);
            let mut dropped = 0;
            for &inst in &snap.order {
                let i = &snap.instances[inst];
                let host = &snap.hosts[i.host].name;
                let text = match &i.unusable {
                    Some(u) => Misfit::Unusable(u.clone()).message(&i.queue, host),
                    None if is_full(&snap, inst) => {
                        format!(
                            "queue instance \"{}@{host}\" dropped because it is full",
                            i.queue
                        )
                    }
                    None => continue,
                };
                dropped += 1;
                reasons.push(text);
            }
            if dropped > 0 && dropped == snap.order.len() {
                reasons.push("All queues dropped because of overload or full".to_string());
            }
            return reasons;
        }
        // SGE's reasons for a job its scheduler does not look at (sge_job_schedd.c):
        // SCHEDD_INFO_JOBHOLD_ (msg_schedd.h 47074), _EXECTIME_ (47072), _JOBDEPEND_
        // (47076, for -hold_jid and -hold_jid_ad alike).
        if job.spec.held() {
            reasons.push("Job is in hold state".to_string());
        }
        if job.spec.start_after.is_some_and(|t| t > now) {
            reasons.push("execution time not reached".to_string());
        }
        let predecessors = self.array_predecessors(job);
        let waits_for_jobs = job
            .spec
            .hold_jids
            .iter()
            .any(|r| self.predecessor_active(r));
        let waits_for_tasks = !predecessors.is_empty()
            && job
                .tasks
                .pending()
                .iter()
                .all(|t| crate::view::waits_for_array_task(&predecessors, t));
        if waits_for_jobs || waits_for_tasks {
            reasons.push("job dropped because of job dependencies".to_string());
        }
        let mut snap = self.snapshot_at(connected, at, true);
        let mut state = self.open_pass(&snap);
        if let Some(id) = job.spec.ar {
            // A reservation's job waits for its window and runs only inside it.
            let Some(ar) = self.ars.get(&id) else {
                reasons.push(format!(
                    "the advance reservation {id} is no longer available"
                ));
                return reasons;
            };
            if at < Time::from_secs(ar.start) {
                reasons.push("execution time not reached".to_string());
                return reasons;
            }
            if !crate::ar::takes_jobs(ar, at) {
                reasons.push(format!(
                    "the advance reservation {id} takes no jobs in state {}",
                    crate::ar::clock_letter(ar, at)
                ));
                return reasons;
            }
            let rt = demand(&snap.catalog, job).ok().and_then(|d| d.run_time);
            if rt.is_some_and(|r| {
                at + r + self.sched_conf().duration_offset > Time::from_secs(ar.end)
            }) {
                reasons.push(format!(
                    "the job duration exceeds the end time of the advance reservation id {id}"
                ));
                return reasons;
            }
            let mut view = snap.reservation_view(ar);
            self.book_running(&mut view, at, |j| j.spec.ar == Some(id));
            snap = view;
            // A reservation's jobs are not counted under the gates.
            state = Pass::default();
        }
        let d = match demand(&snap.catalog, job) {
            Ok(d) => d,
            Err(e) => {
                reasons.push(e.to_string());
                return reasons;
            }
        };
        let mut dropped_for_load_or_full = 0;
        for &inst in &snap.order {
            let i = &snap.instances[inst];
            let host = &snap.hosts[i.host].name;
            if is_full(&snap, inst) {
                dropped_for_load_or_full += 1;
                reasons.push(format!(
                    "queue instance \"{}@{host}\" dropped because it is full",
                    i.queue
                ));
                // A group at its allocation (Gantry's hierarchical group quotas) is
                // said as well: it decides where the next free slot goes.
                if let Err(m @ Misfit::GroupAtAllocation { .. }) =
                    snap.matches(&mut state.gates, &d, inst, Check::All(d.slots))
                {
                    let text = m.message(&i.queue, host);
                    if !reasons.contains(&text) {
                        reasons.push(text);
                    }
                }
                continue;
            }
            match snap.matches(&mut state.gates, &d, inst, Check::All(d.slots)) {
                Ok(()) => {}
                Err(m) => {
                    // A disabled, unreachable, suspended or overloaded instance is
                    // dropped as a full one is (SGE counts them all).
                    if matches!(m, Misfit::Unusable(_)) || slots_exhausted(&snap, &m) {
                        dropped_for_load_or_full += 1;
                    }
                    if matches!(m, Misfit::Quota(_) | Misfit::GroupAtAllocation { .. }) {
                        let text = m.message(&i.queue, host);
                        if !reasons.contains(&text) {
                            reasons.push(text);
                        }
                        continue;
                    }
                    let text = if slots_exhausted(&snap, &m) {
                        format!(
                            "queue instance \"{}@{host}\" dropped because it is full",
                            i.queue
                        )
                    } else {
                        m.message(&i.queue, host)
                    };
                    reasons.push(text);
                }
            }
        }
        let all_dropped = !snap.order.is_empty() && dropped_for_load_or_full == snap.order.len();
        if all_dropped {
            reasons.push("All queues dropped because of overload or full".to_string());
        }
        // With every queue dropped SGE never gets to the parallel environment.
        if let Some(per) = d.pe.as_ref().filter(|_| !all_dropped) {
            let mut trial = snap.clone();
            let candidates = trial.static_candidates(&d, None);
            if trial
                .allocate_pe(&mut state.gates.clone(), &d, per, &candidates)
                .is_none()
            {
                reasons.push(pe_offers_too_few(&snap, &state.gates, &d, per, &candidates));
            }
        }
        reasons
    }
}

/// SGE drops a queue instance without a free slot before it looks at a job's requests
/// or quotas: it is full, whatever else the job asks for.
fn is_full(snap: &Snapshot, inst: usize) -> bool {
    let i = &snap.instances[inst];
    i.unusable.is_none()
        && snap
            .catalog
            .id("slots")
            .and_then(|a| i.layer.get(a))
            .and_then(|o| crate::model::available(o, snap.used(o, None)))
            .is_some_and(|(left, _)| left < 1.0 - 1e-9)
}

/// `cannot run in PE "smp" because it only offers N slots`: what the parallel
/// environment could give the job with any slot count. A `$pe_slots` environment, whose
/// job must fit on one host, offers SGE's 0 when no host takes the whole request.
fn pe_offers_too_few(
    snap: &Snapshot,
    gates: &crate::gate::Gates,
    d: &Demand,
    per: &PeRequest,
    candidates: &[usize],
) -> String {
    let any = PeRequest {
        min: 1,
        ..per.clone()
    };
    let offered =
        snap.clone()
            .allocate_pe(&mut gates.clone(), d, &any, candidates)
            .map_or(0, |(name, g)| {
                let one_host = snap.pes.get(&name).is_some_and(|pe| {
                    pe.allocation_rule == gantry_common::pe::AllocationRule::PeSlots
                });
                if one_host {
                    0
                } else {
                    grants_total(&g)
                }
            });
    format!(
        "cannot run in PE \"{}\" because it only offers {offered} slots",
        per.pattern
    )
}
