//! Advance reservations in the master, as pure decisions on the state: granting one
//! (`qrsub`), deleting (`qrdel`), a job's binding to one (`qsub -ar`), and their life on
//! the clock (the window opens, a host it holds goes away and comes back, the window
//! closes and its jobs go). The scheduler's part (where a reservation fits, what it
//! holds in every cycle, its jobs placed inside it) is [`gantry_sched::ar`].

use gantry_proto::{
    AdvanceReservation, ArId, ArSpec, ArState, Caller, FromMaster, ItemResult, JobId, Refusal,
    RefusalKind,
};
use std::collections::{HashMap, HashSet};

use gantry_common::ar::{clock_state, matches_reference, window};
use gantry_common::mail::ArEvent;
use gantry_sched::ar::holds;

use crate::core::decision::{Decision, Effect};
use crate::core::state::SlotCounts;
use crate::core::state::{refuse, ClusterState, Object, Op};
use gantry_common::job::Job;
use gantry_sched::Time;

/// The access list whose members (with the managers) may reserve.
pub const AR_USERS: &str = "arusers";

/// What SGE calls the object in its messages.
const OBJECT: &str = "advance_reservation";

impl ClusterState {
    /// `max_advance_reservations` (0: no limit, as SGE reads it).
    fn max_advance_reservations(&self) -> usize {
        self.global()
            .get("max_advance_reservations")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// `qrsub`: check the request as SGE's `ar_validate` and `ar_mod` do, then place it
    /// on the calendar; granted, the reservation and the next id are written.
    /// `kept` is the snapshot the master keeps for these decisions between them, with
    /// what runs and what is reserved booked (only what changed since the last is
    /// built, booked or released again).
    pub fn decide_submit_ar(
        &self,
        caller: &Caller,
        groups: &[String],
        spec: &ArSpec,
        connected: &HashSet<String>,
        now: Time,
        kept: &mut gantry_sched::KeptSnapshot,
    ) -> Decision {
        match self.grant_ar(caller, groups, spec, connected, now, kept) {
            Ok(d) => d,
            Err(r) => Decision::refused(r),
        }
    }

    fn grant_ar(
        &self,
        caller: &Caller,
        groups: &[String],
        spec: &ArSpec,
        connected: &HashSet<String>,
        now: Time,
        kept: &mut gantry_sched::KeptSnapshot,
    ) -> Result<Decision, Refusal> {
        let member = self.input.usersets.get(AR_USERS).is_some_and(|u| {
            gantry_common::userset::entries_contain(&u.entries, &caller.user, groups)
        });
        if !self.acts_as_manager(caller) && !member {
            return Err(refuse(
                RefusalKind::Denied,
                format!(
                    "denied: \"{}\" must be manager or in userset \"{AR_USERS}\"",
                    caller.user
                ),
            ));
        }
        let (start, end) = window(spec.start, spec.end, spec.duration, now.secs())
            .map_err(|e| refuse(RefusalKind::Invalid, e.to_string()))?;
        if let Some(name) = &spec.name {
            gantry_common::names::verify_name(name, gantry_common::names::NameKind::Job)
                .map_err(|e| refuse(RefusalKind::Invalid, e))?;
        }
        let mut ar = AdvanceReservation {
            id: self.next_ar_id.max(ArId(1)),
            spec: spec.clone(),
            owner: caller.user.clone(),
            group: groups
                .first()
                .cloned()
                .unwrap_or_else(|| caller.gid.to_string()),
            submission_time: now.secs(),
            start,
            end,
            granted: Vec::new(),
            granted_pe: None,
            state: ArState::Waiting,
            errors: Vec::new(),
        };
        if ar.spec.account.is_empty() {
            ar.spec.account = "sge".to_string();
        }
        // The request's resources, queues, parallel environment and checkpointing
        // environment are checked as a job's (SGE's words for unknown ones).
        let request = gantry_sched::ar::request_job(&ar, groups);
        crate::core::jobs::check_spec(self, caller, groups, &request.spec, JobId(0))?;
        if let Some(u) = ar
            .spec
            .users
            .iter()
            .find(|u| u.is_empty() || u.contains(','))
        {
            return Err(refuse(
                RefusalKind::Invalid,
                format!("invalid user name \"{u}\""),
            ));
        }
        let max = self.max_advance_reservations();
        if max > 0 && self.input.ars.len() >= max {
            return Err(refuse(
                RefusalKind::LimitReached,
                format!("rejected: only {max} advance reservations are allowed per cluster"),
            ));
        }
        let granted = kept.reserve(&self.image(), connected, now, &ar, groups);
        if spec.verify {
            let message = match &granted {
                Ok(g) if g.pe.is_some() => format!(
                    "verification: found possible assignment with {} slots",
                    g.grants.iter().map(|g| g.slots).sum::<u32>()
                ),
                Ok(_) => "verification: found suitable queue(s)".to_string(),
                Err(_) => "verification: no suitable queues".to_string(),
            };
            return Ok(Decision {
                ops: Vec::new(),
                effects: Vec::new(),
                reply: FromMaster::Verified { message },
            });
        }
        let granted = granted.map_err(|_| {
            refuse(
                RefusalKind::Invalid,
                format!("{OBJECT}: no suitable queues"),
            )
        })?;
        ar.granted = granted.grants;
        ar.granted_pe = granted.pe;
        ar.state = clock_state(&ar, now.secs());
        let id = ar.id;
        // A window open from now: its start mail now (the clock sends it otherwise).
        let effects = if ar.state == ArState::Running {
            vec![Effect::ArMail(Box::new(ar.clone()), ArEvent::Started)]
        } else {
            Vec::new()
        };
        Ok(Decision {
            ops: vec![
                Op::Put(Object::NextArId(id.next())),
                Op::Put(Object::Ar(ar)),
            ],
            effects,
            reply: FromMaster::Done {
                messages: vec![format!("Your advance reservation {id} has been granted")],
            },
        })
    }

    /// `qrstat`: the reservations `ids` names (ids, names, patterns), else those of
    /// `users` (none: the caller's; `*`: all), each in its state as the clock has it
    /// now.
    pub fn ar_list(
        &self,
        caller: &str,
        users: &[String],
        ids: &[String],
        now: Time,
    ) -> Vec<AdvanceReservation> {
        self.input
            .ars
            .values()
            .filter(|a| {
                if !ids.is_empty() {
                    ids.iter().any(|r| matches_reference(a, r))
                } else if users.is_empty() {
                    a.owner == caller
                } else {
                    users
                        .iter()
                        .any(|u| gantry_common::job::wildcard(u, &a.owner))
                }
            })
            .map(|a| {
                let mut a = a.clone();
                a.state = clock_state(&a, now.secs());
                a
            })
            .collect()
    }

    /// The jobs bound to a reservation.
    fn jobs_of_ar(&self, id: ArId) -> Vec<&Job> {
        self.input
            .jobs
            .values()
            .filter(|j| j.spec.ar == Some(id))
            .map(|j| &**j)
            .collect()
    }

    /// Remove a reservation's jobs (pending ones at once, running ones killed, with
    /// `force` at once too), as a manager would with `qdel`; and the reservation itself
    /// when none of its jobs is left running, else mark it `state` until they are gone.
    fn end_ar(
        &self,
        ar: &AdvanceReservation,
        state: ArState,
        force: bool,
        ops: &mut Vec<Op>,
        effects: &mut Vec<Effect>,
    ) -> bool {
        let ids: Vec<String> = self
            .jobs_of_ar(ar.id)
            .iter()
            .map(|j| j.id.to_string())
            .collect();
        let mut still_running = false;
        if !ids.is_empty() {
            let system = Caller {
                user: "root".to_string(),
                uid: 0,
                gid: 0,
                host: self.master_host.clone(),
            };
            let d = self.delete_jobs_as(&system, &ids, &[], force, true);
            for op in &d.ops {
                if let Op::Put(Object::Job(j)) = op {
                    still_running |= !j.tasks.is_empty();
                }
            }
            ops.extend(d.ops);
            effects.extend(d.effects);
        }
        if still_running {
            let mut ar = ar.clone();
            ar.state = state;
            ops.push(Op::Put(Object::Ar(ar)));
        } else {
            ops.push(Op::Delete(crate::core::state::ar_key(ar.id)));
        }
        still_running
    }

    /// `qrdel`: delete reservations (ids or names, in the order given); only their
    /// owners, operators and managers may.
    pub fn decide_delete_ars(&self, caller: &Caller, refs: &[String], force: bool) -> Decision {
        let manager = self.acts_as_operator(caller);
        let mut results = Vec::new();
        let mut ops = Vec::new();
        let mut effects = Vec::new();
        let mut seen = HashSet::new();
        for r in refs {
            let named: Vec<&AdvanceReservation> = self
                .input
                .ars
                .values()
                .filter(|a| matches_reference(a, r))
                .collect();
            if named.is_empty() {
                results.push(ItemResult {
                    message: format!("denied: {OBJECT} \"{r}\" does not exist"),
                    refused: true,
                });
                continue;
            }
            for ar in named {
                if !seen.insert(ar.id) {
                    continue;
                }
                if ar.owner != caller.user && !manager {
                    results.push(ItemResult {
                        message: self.others_job_refusal(
                            caller,
                            format!(
                                "{} - you do not have the necessary privileges to delete the {OBJECT} \"{}\"",
                                caller.user, ar.id
                            ),
                        ),
                        refused: true,
                    });
                    continue;
                }
                let registered = self.end_ar(ar, ArState::Deleted, force, &mut ops, &mut effects);
                effects.push(Effect::ArMail(Box::new(ar.clone()), ArEvent::Deleted));
                results.push(ItemResult {
                    message: if registered {
                        format!(
                            "{} has registered the {OBJECT} {} for deletion",
                            caller.user, ar.id
                        )
                    } else {
                        format!("{} has deleted {OBJECT} {}", caller.user, ar.id)
                    },
                    refused: false,
                });
            }
        }
        if ops.is_empty() {
            let lines: Vec<String> = results.into_iter().map(|r| r.message).collect();
            return Decision::refused(refuse(RefusalKind::NotFound, lines.join("\n")));
        }
        Decision {
            ops,
            effects,
            reply: FromMaster::Items(results),
        }
    }

    /// The reservations on the clock at `now`: a window that opens (`w` to `r`), one
    /// whose queue instances are not all usable (`e`, and back to `r` when they are), one
    /// that closes (its jobs removed, the reservation with them), and one ended or
    /// deleted whose last job has left (removed). `usable` says whether a queue instance
    /// (queue, host) can run jobs now.
    pub fn decide_ar_clock(&self, now: Time, usable: impl Fn(&str, &str) -> bool) -> Decision {
        let mut ops = Vec::new();
        let mut effects = Vec::new();
        for ar in self.input.ars.values() {
            let at = now.secs();
            if !holds(ar) {
                // Ended or deleted: gone once its jobs are.
                if self.jobs_of_ar(ar.id).is_empty() {
                    ops.push(Op::Delete(crate::core::state::ar_key(ar.id)));
                }
                continue;
            }
            if at >= ar.end {
                self.end_ar(ar, ArState::Exited, false, &mut ops, &mut effects);
                effects.push(Effect::ArMail(Box::new(ar.clone()), ArEvent::Finished));
                continue;
            }
            if at < ar.start {
                continue;
            }
            let errors: Vec<String> = ar
                .granted
                .iter()
                .filter(|g| !usable(&g.queue, &g.host))
                .map(|g| format!("queue instance \"{}@{}\" is not usable", g.queue, g.host))
                .collect();
            let state = if errors.is_empty() {
                ArState::Running
            } else {
                ArState::Error
            };
            if state != ar.state || errors != ar.errors {
                let was = ar.state;
                let mut ar = ar.clone();
                ar.state = state;
                ar.errors = errors;
                let mail = |event| Effect::ArMail(Box::new(ar.clone()), event);
                if was == ArState::Waiting {
                    effects.push(mail(ArEvent::Started));
                }
                match (was, state) {
                    (ArState::Waiting | ArState::Running, ArState::Error) => {
                        effects.push(mail(ArEvent::Error))
                    }
                    (ArState::Error, ArState::Running) => {
                        effects.push(mail(ArEvent::ErrorResolved))
                    }
                    _ => {}
                }
                ops.push(Op::Put(Object::Ar(ar)));
            }
        }
        Decision {
            ops,
            effects,
            reply: FromMaster::Done {
                messages: Vec::new(),
            },
        }
    }

    /// `qsub -ar id`: the reservation exists, the job's run time fits its window, and
    /// with `verify` `-w e` (qsub's default for a job into a reservation) the owner is
    /// in its access list and the job's requests fit what it holds (SGE's checks at
    /// submission).
    pub fn check_ar_job(
        &self,
        job: &Job,
        now: i64,
        verify: gantry_proto::Verify,
    ) -> Result<(), Refusal> {
        let Some(id) = job.spec.ar else {
            return Ok(());
        };
        let Some(ar) = self.input.ars.get(&id).filter(|a| holds(a)) else {
            return Err(refuse(
                RefusalKind::Invalid,
                format!("the advance reservation id {id} is invalid"),
            ));
        };
        let h_rt = job
            .spec
            .hard_resources
            .iter()
            .find(|(k, _)| k == "h_rt")
            .and_then(|(_, v)| gantry_common::value::parse_time(v).ok())
            .map(|s| s as i64);
        if let Some(rt) = h_rt {
            if rt > ar.duration() {
                return Err(refuse(
                    RefusalKind::Invalid,
                    format!("the job duration is longer than duration of the advance reservation id {id}"),
                ));
            }
            if now.max(ar.start) + rt > ar.end {
                return Err(refuse(
                    RefusalKind::Invalid,
                    format!(
                        "the job duration exceeds the end time of the advance reservation id {id}"
                    ),
                ));
            }
        }
        if verify == gantry_proto::Verify::Error
            && (!ar.admits(&job.owner.user, &job.owner.groups)
                || !self.view().could_run_in_reservation(job, ar))
        {
            return Err(refuse(RefusalKind::Invalid, "error: no suitable queues"));
        }
        Ok(())
    }

    /// Slots per queue instance for `qhost -q` and `qstat -f`, counted once for all
    /// hosts: those running tasks use, and those reservations hold.
    pub fn slot_counts(&self, now: Time) -> SlotCounts {
        let mut reserved: HashMap<(String, String), (u32, u32)> = HashMap::new();
        for ar in self.input.ars.values().filter(|a| holds(a)) {
            for g in &ar.granted {
                let e = reserved
                    .entry((g.queue.clone(), g.host.clone()))
                    .or_default();
                e.1 += g.slots;
                if now.secs() >= ar.start {
                    e.0 += g.slots;
                }
            }
        }
        SlotCounts {
            used: self.used_slots(),
            reserved,
        }
    }
}
