//! `qalter`: a change to pending (and some running) jobs, decided as a pure function
//! of the state.

use super::*;

impl ClusterState {
    /// `groups`: the caller's Unix groups (for `@group` entries of `deadlineusers`).
    /// `connected` and `now`: for `-w p`, what could start now.
    pub fn decide_alter_jobs(
        &self,
        caller: &Caller,
        groups: &[String],
        ids: &[String],
        changes: &gantry_proto::JobChanges,
        connected: &std::collections::HashSet<String>,
        now: gantry_sched::Time,
    ) -> Decision {
        let refused = |kind, message: String| Decision::refused(Refusal { kind, message });
        let mut changes = changes.clone();
        if let Some(list) = changes.hard_resources.as_mut() {
            if let Err(r) = crate::core::jobs::check_resources(self, list) {
                return Decision::refused(r);
            }
        }
        if let Some(q) = &changes.queues {
            if let Err(r) = crate::core::jobs::check_queues(self, q) {
                return Decision::refused(r);
            }
        }
        if let Some(q) = &changes.masterq {
            if let Err(r) = crate::core::jobs::check_queues(self, q) {
                return Decision::refused(r);
            }
        }
        if let Some(c) = &changes.ckpt {
            if !self.ckpts.contains_key(c) {
                return refused(
                    RefusalKind::Invalid,
                    format!("job rejected: the requested checkpointing environment \"{c}\" does not exist"),
                );
            }
        }
        if let Err(e) = gantry_common::mail::check(
            changes.mail_options.as_deref().unwrap_or(""),
            changes.mail_list.as_deref().unwrap_or(&[]),
        ) {
            return refused(RefusalKind::Invalid, e);
        }
        let manager = self.acts_as_operator(caller);
        // SGE's job version counts the changes its qmaster marks as modifying the job
        // (sge_job_qmaster.c's MOD_EVENT): not its priority, share, context, account,
        // mail, paths, shell, working directory or environment.
        let c = &changes;
        let versioned = [
            c.hold.is_some(),
            c.operator_hold.is_some(),
            c.system_hold.is_some(),
            c.name.is_some(),
            c.hard_resources.is_some(),
            c.soft_resources.is_some(),
            c.queues.is_some(),
            c.soft_queues.is_some(),
            c.masterq.is_some(),
            c.hold_jids.is_some(),
            c.hold_jids_ad.is_some(),
            c.start_after.is_some(),
            c.deadline.is_some(),
            c.reserve.is_some(),
            c.restart.is_some(),
            c.notify.is_some(),
            c.binding.is_some(),
            c.ckpt.is_some(),
            c.pe.is_some(),
            c.max_running_tasks.is_some(),
        ]
        .contains(&true);
        let mut ops = Vec::new();
        let mut messages = Vec::new();
        // `-u`: every pending job of the users, besides those named.
        let mut refs: Vec<String> = ids.to_vec();
        if !changes.users.is_empty() {
            let named: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
            for job in self.input.jobs.values() {
                let theirs = changes
                    .users
                    .iter()
                    .any(|u| u == "*" || u == &job.owner.user);
                let id = job.id.to_string();
                if theirs && job.tasks.has_pending() && !named.contains(id.as_str()) {
                    refs.push(id);
                }
            }
        }
        // A job name (wildcards allowed) stands for every job of that name, as in SGE.
        let refs: Vec<String> = refs
            .into_iter()
            .flat_map(|r| match crate::core::jobs::parse_job_ref(&r) {
                Some(_) => vec![r],
                None => {
                    // Jobs with nothing left to wait are not what a name alters.
                    let named: Vec<gantry_proto::JobId> =
                        crate::core::jobs::jobs_named(&self.input.jobs, std::slice::from_ref(&r))
                            .into_iter()
                            .filter(|id| {
                                self.input
                                    .jobs
                                    .get(id)
                                    .is_some_and(|j| j.tasks.has_pending())
                            })
                            .collect();
                    match named.is_empty() {
                        true => vec![r],
                        false => named.into_iter().map(|id| id.to_string()).collect(),
                    }
                }
            })
            .collect();
        for text in &refs {
            let job_messages_start = messages.len();
            let Some((id, _)) = crate::core::jobs::parse_job_ref(text) else {
                return refused(
                    RefusalKind::Invalid,
                    format!("denied: job \"{text}\" does not exist"),
                );
            };
            let Some(job) = self.input.jobs.get(&id) else {
                return refused(
                    RefusalKind::NotFound,
                    format!("denied: job \"{id}\" does not exist"),
                );
            };
            if job.owner.user != caller.user && !manager {
                return refused(
                    RefusalKind::OwnerRequired,
                    self.others_job_refusal(
                        caller,
                        // SGE's qalter words.
                        format!(
                            "denied: \"{}\" must be at least owner of job {id} to change job attributes",
                            caller.user
                        ),
                    ),
                );
            }
            // The ticket policies' own attributes (`-ot`, `-js`) change running jobs
            // too, as in SGE: the next scheduling run gives their tasks the tickets.
            let policy_only = gantry_proto::JobChanges {
                override_tickets: None,
                job_share: None,
                ..changes.clone()
            } == gantry_proto::JobChanges::default();
            if !job.tasks.has_pending() && !policy_only {
                return refused(
                    RefusalKind::Invalid,
                    format!("denied: job \"{id}\" has no pending tasks; only pending jobs can be changed"),
                );
            }
            if let Some(ot) = changes.override_tickets {
                if !manager {
                    return refused(
                        RefusalKind::Denied,
                        format!(
                            "denied: \"{}\" must be operator to change amount of override tickets",
                            caller.user
                        ),
                    );
                }
                ops.push(if ot == 0 {
                    Op::Delete(crate::core::state::override_key(id))
                } else {
                    Op::Put(Object::JobOverride {
                        job: id,
                        tickets: ot,
                    })
                });
                messages.push(format!(
                    "{}@{} sets override tickets of job {id} to {ot}",
                    caller.user, caller.host
                ));
            }
            let mut job = crate::core::jobs::Job::clone(job);
            let spec = &mut job.spec;
            // Each hold that changes needs its right: the owner's for the user hold, an
            // operator's for the operator hold, a manager's for the system hold.
            let operator = self.acts_as_operator(caller);
            let manager_rights = self.acts_as_manager(caller);
            let mut hold_changed = false;
            for (wanted, held, needs) in [
                (changes.hold, &mut spec.hold, None),
                (
                    changes.operator_hold,
                    &mut spec.operator_hold,
                    Some(("operator", "operator", operator)),
                ),
                (
                    changes.system_hold,
                    &mut spec.system_hold,
                    Some(("manager", "manager", manager_rights)),
                ),
            ] {
                let Some(w) = wanted.filter(|w| w != held) else {
                    continue;
                };
                if let Some((role, kind, false)) = needs {
                    return refused(
                        RefusalKind::OperatorRequired,
                        format!(
                            "denied: \"{}\" must be {role} to {} {kind} hold",
                            caller.user,
                            if w { "set" } else { "remove" }
                        ),
                    );
                }
                *held = w;
                hold_changed = true;
            }
            if hold_changed {
                messages.push(format!("modified hold of job {id}"));
            }
            if let Some(m) = &changes.mail_options {
                spec.mail_options = m.clone();
                messages.push(format!("modified mail options of job {id}"));
            }
            if let Some(l) = &changes.mail_list {
                spec.mail_list = l.clone();
                messages.push(format!("modified mail list of job {id}"));
            }
            if !changes.context.is_empty() {
                for change in &changes.context {
                    gantry_common::context::apply(&mut spec.context, change);
                }
                if let Err(e) = gantry_common::context::check(&spec.context) {
                    return refused(RefusalKind::Invalid, e);
                }
                messages.push(format!("modified context of job {id}"));
            }
            if let Some(h) = &changes.hold_jids_ad {
                spec.hold_jids_ad = h.clone();
                if let Err(r) = crate::core::jobs::check_array_dependencies(self, spec, id) {
                    return Decision::refused(r);
                }
                messages.push(format!("modified job predecessor list of job {id}"));
            }
            if let Some(n) = changes.notify {
                spec.notify = n;
                messages.push(format!("modified notify flag of job {id}"));
            }
            if let Some(dl) = changes.deadline {
                let deadline_user = self.input.usersets.get("deadlineusers").is_some_and(|u| {
                    gantry_common::userset::entries_contain(&u.entries, &caller.user, groups)
                });
                if !deadline_user {
                    return refused(
                        RefusalKind::Denied,
                        format!(
                            "job rejected: the user \"{}\" is not a deadline initiation user",
                            caller.user
                        ),
                    );
                }
                spec.deadline = Some(dl);
                messages.push(format!("modified deadline time of job {id}"));
            }
            if let Some(b) = &changes.binding {
                spec.binding = Some(b.clone());
                messages.push(format!("modified binding of job {id}"));
            }
            if let Some(q) = &changes.masterq {
                if spec.pe.is_none() {
                    return refused(
                        RefusalKind::Invalid,
                        "job rejected: specification of master queue is not allowed for non-parallel jobs"
                            .to_string(),
                    );
                }
                spec.masterq = q.clone();
                messages.push(format!("modified master queue list of job {id}"));
            }
            if let Some(c) = &changes.ckpt {
                spec.ckpt = Some(c.clone());
                messages.push(format!("modified checkpoint object of job {id}"));
            }
            if let Some(w) = &changes.ckpt_when {
                if spec.ckpt.is_none() {
                    return refused(
                        RefusalKind::Invalid,
                        "job rejected: checkpointing without checkpointing environment requested"
                            .to_string(),
                    );
                }
                spec.ckpt_when = Some(w.clone());
                messages.push(format!("modified checkpoint attribute of job {id}"));
            }
            if let Some(ar) = changes.ar {
                // SGE's sge_job_qmaster.c: a job with a running task keeps its
                // reservation.
                if job
                    .tasks
                    .placed_states()
                    .any(|t| matches!(t, TaskState::Running { .. } | TaskState::Deleting { .. }))
                {
                    return refused(
                        RefusalKind::Invalid,
                        format!("job {id} can't modify running jobs"),
                    );
                }
                job.spec.ar = Some(ar);
                if let Err(r) = self.check_ar_job(&job, now.secs(), gantry_proto::Verify::Error) {
                    return Decision::refused(r);
                }
                messages.push(format!(
                    "{}@{} sets job advance reservation of job {id} to {ar}",
                    caller.user, caller.host
                ));
            }
            let spec = &mut job.spec;
            if let Some(js) = changes.job_share {
                spec.job_share = js;
                messages.push(format!(
                    "{}@{} sets job share of job {id} to {js}",
                    caller.user, caller.host
                ));
            }
            if let Some(r) = changes.restart {
                spec.restart = Some(r);
                messages.push(format!("modified restart behaviour of job {id}"));
            }
            if let Some(r) = changes.reserve {
                spec.reserve = r;
                messages.push(format!("modified reservation behaviour of job {id}"));
            }
            if let Some(n) = &changes.name {
                if let Err(e) = gantry_common::names::verify_job_name(n) {
                    return refused(RefusalKind::Invalid, e);
                }
                spec.name = n.clone();
                messages.push(format!("modified job name of job {id}"));
            }
            if let Some(p) = changes.priority {
                spec.priority = p;
                // SGE's words for this one change.
                messages.push(format!(
                    "{}@{} sets scheduling priority of job {id} to {p}",
                    caller.user, caller.host
                ));
            }
            if let Some(r) = &changes.hard_resources {
                spec.hard_resources = r.clone();
                messages.push(format!("modified hard resource list of job {id}"));
            }
            if let Some(q) = &changes.queues {
                spec.queues = q.clone();
                messages.push(format!("modified hard queue list of job {id}"));
            }
            if let Some(h) = &changes.hold_jids {
                spec.hold_jids = h.clone();
                messages.push(format!("modified job predecessor list of job {id}"));
            }
            if let Some(a) = changes.start_after {
                spec.start_after = a;
                messages.push(format!("modified start time of job {id}"));
            }
            if let Some(a) = &changes.account {
                // A job that runs stays in its group of hierarchical group quotas: its
                // running tasks are that group's usage.
                let group = |account: &str| {
                    gantry_common::groups::group_of(&self.input.group_tree, account)
                        .map(|g| g.name.clone())
                };
                if group(a) != group(&spec.account) && job.tasks.holding_slots() > 0 {
                    return refused(
                        RefusalKind::Invalid,
                        format!("job {id} can't modify running jobs"),
                    );
                }
                spec.account = a.clone();
                messages.push(format!("modified account of job {id}"));
            }
            if let Some(p) = &changes.project {
                spec.project = Some(p.clone());
                messages.push(format!("modified project of job {id}"));
            }
            if let Some(o) = &changes.stdout_path {
                spec.stdout_path = Some(o.clone());
                messages.push(format!("modified stdout path list of job {id}"));
            }
            if let Some(e) = &changes.stderr_path {
                spec.stderr_path = Some(e.clone());
                messages.push(format!("modified stderr path list of job {id}"));
            }
            if let Some(i) = &changes.stdin_path {
                spec.stdin_path = Some(i.clone());
                messages.push(format!("modified stdin path list of job {id}"));
            }
            if let Some(j) = changes.merge_output {
                spec.merge_output = j;
                messages.push(format!("modified output merge behaviour of job {id}"));
            }
            if let Some(sh) = &changes.shell {
                spec.shell = Some(sh.clone());
                messages.push(format!("modified shell list of job {id}"));
            }
            if let Some(wd) = &changes.cwd {
                spec.cwd = Some(wd.clone());
                messages.push(format!("modified working directory of job {id}"));
            }
            if let Some(pe) = &changes.pe {
                spec.pe = Some(pe.clone());
                messages.push(format!("modified parallel environment of job {id}"));
                messages.push(format!("modified slot range of job {id}"));
            }
            if let Some(env) = &changes.env {
                // The user's variables are replaced; those the submission recorded
                // (`SGE_O_HOME`, `SGE_O_WORKDIR`, ...) stay.
                spec.env.retain(|(k, _)| k.starts_with("SGE_O_"));
                spec.env.extend(
                    env.iter()
                        .filter(|(k, _)| !k.starts_with("SGE_O_"))
                        .cloned(),
                );
                messages.push(format!("modified environment of job {id}"));
            }
            if let Some(tc) = changes.max_running_tasks {
                // SGE's refusal for a job that is no array (sge_job_qmaster.c).
                if spec.array.is_none() {
                    return refused(
                        RefusalKind::Invalid,
                        "ERROR! invalid option argument \"task concurrency\"".to_string(),
                    );
                }
                spec.max_running_tasks = Some(tc);
                messages.push(format!("modified task concurrency of job {id}"));
            }
            if let Some(r) = &changes.soft_resources {
                spec.soft_resources = r.clone();
                messages.push(format!("modified soft resource list of job {id}"));
            }
            if let Some(q) = &changes.soft_queues {
                spec.soft_queues = q.clone();
                messages.push(format!("modified soft queue list of job {id}"));
            }
            // The job as changed gets a submission's checks (the names, the resource
            // requests completed, queues, project access, the parallel environment),
            // and nothing changes if it fails them.
            job.spec = match crate::core::jobs::check_spec(self, caller, groups, &job.spec, id) {
                Ok(spec) => spec,
                Err(r) => return Decision::refused(r),
            };
            // `-w`: the changed job verified as a submitted one is (sge_job_qmaster.c's
            // verify_suitable_queues); `v` and `p` say what they found and change nothing.
            use gantry_proto::Verify;
            let could = |poke: bool| {
                if poke {
                    self.view().could_run_now(&job, connected, now)
                } else {
                    self.could_ever_run(&job)
                }
            };
            match changes.verify {
                // A held job is not verified (SGE 8.1.9's words).
                Verify::Verify | Verify::Poke if job.spec.held() => {
                    messages.truncate(job_messages_start);
                    messages.push("verification: job is already running or is held".to_string());
                    continue;
                }
                Verify::Verify | Verify::Poke => {
                    messages.truncate(job_messages_start);
                    messages.push(match could(changes.verify == Verify::Poke) {
                        // `-w v` words a parallel job's as any other's (SGE 8.1.9).
                        Ok(slots) if job.spec.pe.is_some() && changes.verify == Verify::Poke => {
                            format!("verification: found possible assignment with {slots} slots")
                        }
                        Ok(_) => "verification: found suitable queue(s)".to_string(),
                        Err(_) => "verification: no suitable queues".to_string(),
                    });
                    continue;
                }
                Verify::Error if could(false).is_err() => {
                    return refused(
                        RefusalKind::Invalid,
                        "error: no suitable queues".to_string(),
                    )
                }
                Verify::Warning if could(false).is_err() => {
                    messages.push("warning: no suitable queues".to_string());
                }
                _ => {}
            }
            // The mode is kept, as SGE keeps it (`verify_suitable_queues`).
            if matches!(changes.verify, Verify::Error | Verify::Warning) {
                job.spec.verify = changes.verify;
            }
            // A project and override tickets count only when they change (SGE's too).
            let new_project = c.project.as_ref().is_some_and(|p| {
                self.input.jobs.get(&job.id).map(|o| &o.spec.project) != Some(&Some(p.clone()))
            });
            let new_tickets = c
                .override_tickets
                .is_some_and(|t| self.input.job_otickets.get(&job.id).copied().unwrap_or(0) != t);
            if versioned || new_project || new_tickets {
                job.version += 1;
            }
            ops.push(Op::Put(Object::Job(job)));
        }
        Decision {
            ops,
            effects: Vec::new(),
            reply: FromMaster::Done { messages },
        }
    }
}
