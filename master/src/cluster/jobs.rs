//! The job requests the actor answers itself (they read its sessions, its spool or its
//! list of finished jobs, or send to execds): submission, deletion, alteration,
//! suspension, error clearing, and the suspend thresholds' actions.

use gantry_proto::{Caller, FromMaster, JobScript, Refusal, RefusalKind, ToExecd};
use tracing::{error, info, warn};

use crate::jobs::TaskState;

use super::*;

impl Cluster {
    pub(super) fn submit(
        &mut self,
        caller: &Caller,
        mut spec: gantry_proto::JobSpec,
        verify: gantry_proto::Verify,
    ) -> FromMaster {
        use gantry_proto::Verify;
        let id = self.state.next_job_id.max(1);
        // The script leaves the specification before anything copies it.
        let script = match &mut spec.script {
            JobScript::Script { contents, .. } => {
                if let Err(r) = crate::jobs::check_script_size(&self.state, contents.len()) {
                    return FromMaster::Refused(r);
                }
                let held = self.script_bytes.of_user(caller.uid);
                if let Err(r) =
                    crate::jobs::check_user_scripts_size(&self.state, held, contents.len())
                {
                    return FromMaster::Refused(r);
                }
                Some(std::mem::take(contents))
            }
            JobScript::Binary { .. } => None,
        };
        let job = match crate::jobs::validate_submission(
            &self.state,
            caller,
            &self.unix_groups.of(&caller.user, caller.gid),
            &spec,
            id,
            self.unix_now(),
        ) {
            Ok(j) => j,
            Err(r) => return FromMaster::Refused(r),
        };
        if verify == Verify::Poke {
            let connected: std::collections::HashSet<String> = self.dispatchable();
            let message = match self
                .state
                .view()
                .could_run_now(&job, &connected, self.now())
            {
                Ok(slots) if job.spec.pe.is_some() => {
                    format!("verification: found possible assignment with {slots} slots")
                }
                Ok(_) => "verification: found suitable queue(s)".to_string(),
                Err(_) => "verification: no suitable queues".to_string(),
            };
            return FromMaster::Verified { message };
        }
        let possible = if verify == Verify::None {
            Ok(0)
        } else {
            self.state.could_ever_run(&job)
        };
        match verify {
            Verify::Verify => {
                return FromMaster::Verified {
                    message: match possible {
                        Ok(slots) if job.spec.pe.is_some() => {
                            format!("verification: found possible assignment with {slots} slots")
                        }
                        Ok(_) => "verification: found suitable queue(s)".into(),
                        Err(_) => "verification: no suitable queues".into(),
                    },
                }
            }
            Verify::Error if possible.is_err() => {
                return FromMaster::Refused(Refusal {
                    kind: RefusalKind::Invalid,
                    message: "error: no suitable queues".into(),
                })
            }
            _ => {}
        }
        let warnings = if verify == Verify::Warning && possible.is_err() {
            vec!["warning: no suitable queues".to_string()]
        } else {
            Vec::new()
        };
        let reply = FromMaster::Submitted {
            job_id: id,
            name: job.spec.name.clone(),
            array: job.spec.array,
            warnings,
        };
        // The script goes to the spool first; the job's record holds none of it.
        if let Some(contents) = &script {
            if let Err(e) = self.scripts.put(id, contents) {
                error!(job = id, "cannot spool the job script: {e}");
                return FromMaster::Refused(Refusal {
                    kind: RefusalKind::Internal,
                    message: format!("error: the master could not spool the job script: {e}"),
                });
            }
        }
        drop(script);
        let spooled = matches!(job.spec.script, JobScript::Script { .. });
        let ops = [Op::NextJobId(id + 1), Op::Put(Object::Job(job))];
        if let Err(r) = self.commit(&ops) {
            if spooled {
                let _ = self.scripts.remove(id);
            }
            return FromMaster::Refused(r);
        }
        if let (true, Some(bytes)) = (spooled, self.scripts.size(id)) {
            self.script_bytes.add(id, caller.uid, bytes);
        }
        reply
    }

    /// Stop or continue jobs as their queues' `suspend_thresholds` say (once a second).
    pub(super) fn apply_suspend_thresholds(&mut self) {
        let at = self.now();
        let now = at.secs();
        let actions = self.state.threshold_actions(at, &self.threshold_acted);
        if actions.suspend.is_empty() && actions.resume.is_empty() {
            return;
        }
        let mut set = (*self.state.threshold_suspended).clone();
        // Forget tasks that ended.
        set.retain(|(j, t)| {
            self.state
                .jobs
                .get(j)
                .is_some_and(|job| matches!(job.tasks.get(*t), Some(TaskState::Running { .. })))
        });
        for (j, t, _) in &actions.suspend {
            set.insert((*j, *t));
        }
        for (j, t, _) in &actions.resume {
            set.remove(&(*j, *t));
        }
        if self
            .commit(&[Op::Put(Object::ThresholdSuspended(
                set.into_iter().collect(),
            ))])
            .is_err()
        {
            return;
        }
        for key in actions.acted {
            self.threshold_acted.insert(key, now);
        }
        for (list, signal, what) in [
            (
                &actions.suspend,
                crate::decide::libc_signal::SIGSTOP,
                "suspended",
            ),
            (
                &actions.resume,
                crate::decide::libc_signal::SIGCONT,
                "unsuspended",
            ),
        ] {
            for (job_id, task_id, host) in list {
                info!(job = job_id, task = task_id, host = %host, "{what} by suspend_thresholds");
                if let Some(s) = self.sessions.get(host) {
                    let _ = s.to_execd.send(ToExecd::SignalJob {
                        job_id: *job_id,
                        task_id: *task_id,
                        signal,
                    });
                }
            }
        }
    }

    /// Carry out a decision: its writes committed, then its effects, then its reply.
    pub(super) fn carry_out(&mut self, decision: crate::decide::Decision) -> FromMaster {
        let crate::decide::Decision {
            ops,
            effects,
            reply,
        } = decision;
        if !ops.is_empty() {
            if let Err(r) = self.commit(&ops) {
                return FromMaster::Refused(r);
            }
            self.state_changed();
        }
        self.carry_out_effects(effects);
        reply
    }

    /// What a decision does once its writes are durable, in order.
    pub(super) fn carry_out_effects(&mut self, effects: Vec<crate::decide::Effect>) {
        use crate::decide::Effect;
        // `finished_jobs`, read once per burst.
        let mut finished_jobs: Option<usize> = None;
        for effect in effects {
            match effect {
                Effect::Send { host, order } => {
                    if let Some(s) = self.sessions.get(&host) {
                        let _ = s.to_execd.send(order);
                    }
                }
                Effect::JobLeft(id) => self.job_ended_without_report(id),
                Effect::Forget { job, task } => {
                    self.started.remove(&(job, task));
                }
                Effect::Finished(view) => {
                    let keep = *finished_jobs.get_or_insert_with(|| {
                        self.state
                            .global()
                            .get("finished_jobs")
                            .and_then(|v| v.parse().ok())
                            .unwrap_or(100)
                    });
                    self.finished.push_back(*view);
                    while self.finished.len() > keep {
                        self.finished.pop_front();
                    }
                }
                Effect::ArMail(ar, event) => self.send_ar_mail(&ar, event),
                Effect::JobEnded(id) => {
                    if let Some(waiters) = self.waiters.remove(&id) {
                        let outcome = self.job_outcome(id);
                        for w in waiters {
                            if let Some(o) = outcome.clone() {
                                let _ = w.send(o);
                            }
                        }
                    }
                }
            }
        }
    }

    /// An advance reservation's mail, through the global configuration's `mailer`, as
    /// its owner, to its `-M` list (else the owner at the submit host), if its `-m`
    /// options ask for the event; sent in the background.
    fn send_ar_mail(
        &self,
        ar: &gantry_proto::AdvanceReservation,
        event: gantry_common::mail::ArEvent,
    ) {
        use gantry_common::mail;
        if !mail::wanted(&ar.spec.mail_options, event.letter()) {
            return;
        }
        let Some(mailer) = self.state.global().get("mailer").map(str::to_string) else {
            return;
        };
        let Ok(Some(owner)) = nix::unistd::User::from_name(&ar.owner) else {
            warn!(
                ar = ar.id,
                "no mail: its owner \"{}\" is unknown here", ar.owner
            );
            return;
        };
        let time = match event {
            mail::ArEvent::Started => ar.start,
            mail::ArEvent::Finished => ar.end,
            _ => self.unix_now(),
        };
        let m = mail::reservation(
            ar.id,
            ar.spec.name.as_deref(),
            &ar.owner,
            event,
            &gantry_common::dates::local_time(time, "%m/%d/%Y %H:%M:%S"),
        );
        let user = gantry_net::mailer::MailUser {
            uid: owner.uid.as_raw(),
            gid: owner.gid.as_raw(),
            name: owner.name.clone(),
            home: owner.dir.to_string_lossy().into_owned(),
        };
        for to in mail::recipients(&ar.spec.mail_list, &ar.owner, &ar.spec.submit_host) {
            info!(
                ar = ar.id,
                "sending mail to user \"{to}\"|mailer \"{mailer}\"|\"{}\"", m.subject
            );
            let mut command = gantry_net::mailer::command(&mailer, &to, &m.subject, &user);
            let body = m.body.clone().into_bytes();
            let (id, mailer) = (ar.id, mailer.clone());
            tokio::spawn(async move {
                if let Err(e) = gantry_net::mailer::run(&mut command, &body).await {
                    warn!(ar = id, "mailer \"{mailer}\": {e}");
                }
            });
        }
    }
}
