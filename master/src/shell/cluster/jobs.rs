//! The job requests the actor answers itself (they read its sessions, its spool or its
//! list of finished jobs, or send to execds): submission, deletion, alteration,
//! suspension, error clearing, and the suspend thresholds' actions.

use gantry_proto::{FromMaster, Refusal, RefusalKind, ToExecd};
use tracing::{info, warn};

use crate::core::jobs::TaskState;

use super::*;

impl Cluster {
    /// Stop or continue jobs as their queues' `suspend_thresholds` say (once a second).
    pub(super) fn apply_suspend_thresholds(&mut self) {
        let at = self.now();
        let now = at.secs();
        let actions = self
            .state
            .threshold_actions(at, &self.state.live.threshold_acted);
        if actions.suspend.is_empty() && actions.resume.is_empty() {
            return;
        }
        let mut set = (*self.state.input.threshold_suspended).clone();
        // Forget tasks that ended.
        set.retain(|(j, t)| {
            self.state
                .input
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
        self.trigger.state_changed = true;
        for key in actions.acted {
            self.state.live.threshold_acted.insert(key, now);
        }
        for (list, signal, what) in [
            (
                &actions.suspend,
                crate::core::decide::libc_signal::SIGSTOP,
                "suspended",
            ),
            (
                &actions.resume,
                crate::core::decide::libc_signal::SIGCONT,
                "unsuspended",
            ),
        ] {
            for (job_id, task_id, host) in list {
                info!(job = %job_id, task = %task_id, host = %host, "{what} by suspend_thresholds");
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
    pub(super) fn carry_out(&mut self, decision: crate::core::decision::Decision) -> FromMaster {
        let crate::core::decision::Decision {
            ops,
            effects,
            mut reply,
        } = decision;
        if !ops.is_empty() {
            if let Err(r) = self.commit(&ops) {
                return FromMaster::Refused(r);
            }
        }
        for effect in &effects {
            match effect {
                crate::core::decision::Effect::AnswerWithAccounting { job } => {
                    reply = self.accounting(job.as_deref());
                }
                crate::core::decision::Effect::AnswerWithBackup { path } => {
                    reply = self.backup(path);
                }
                _ => {}
            }
        }
        self.carry_out_effects(effects);
        reply
    }

    /// `qacct`: the spool's accounting records of every job, or of the job of this id
    /// or name.
    fn accounting(&self, job: Option<&str>) -> FromMaster {
        let keep = |r: &gantry_proto::AccountingRecord| match job {
            None => true,
            Some(j) => match j.parse::<JobId>() {
                Ok(id) => r.job_id == id,
                Err(_) => r.job_name == j,
            },
        };
        match self.store.accounting(keep) {
            Ok(records) => FromMaster::Accounting(records),
            Err(e) => FromMaster::Refused(Refusal {
                kind: RefusalKind::Internal,
                message: format!("error: reading the accounting: {e}"),
            }),
        }
    }

    /// `gantry-master backup`: the cell as of now, written to `path` (a new file).
    fn backup(&self, path: &str) -> FromMaster {
        use crate::spool::store::backup;
        let to = std::path::Path::new(path);
        let written =
            backup::cell_files(&self.paths.home).and_then(|files| self.store.backup(to, &files));
        match written {
            Ok(contents) => {
                info!("backup of the cell written to {path}: {contents}");
                FromMaster::Done {
                    messages: vec![format!("backup of the cell written to {path}: {contents}")],
                }
            }
            Err(e) => FromMaster::Refused(Refusal {
                kind: RefusalKind::Internal,
                message: format!("error: cannot write the backup: {e}"),
            }),
        }
    }

    /// What a decision does once its writes are durable, in order.
    pub(super) fn carry_out_effects(&mut self, effects: Vec<crate::core::decision::Effect>) {
        use crate::core::decision::Effect;
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
                    self.state.live.started.remove(&(job, task));
                }
                Effect::Finished(view) => {
                    let keep = *finished_jobs.get_or_insert_with(|| {
                        self.state
                            .global()
                            .get("finished_jobs")
                            .and_then(|v| v.parse().ok())
                            .unwrap_or(100)
                    });
                    self.state.live.finished.push_back(*view);
                    while self.state.live.finished.len() > keep {
                        self.state.live.finished.pop_front();
                    }
                }
                Effect::ArMail(ar, event) => self.send_ar_mail(&ar, event),
                Effect::Log { user, host, line } => info!(user = %user, host = %host, "{line}"),
                Effect::StopExecd { host, kill_jobs } => {
                    if let Some(s) = self.sessions.get_mut(&host) {
                        if s.to_execd.send(ToExecd::Shutdown { kill_jobs }).is_ok() {
                            s.stopping = true;
                        }
                    }
                }
                Effect::ShutDownMaster => {
                    // The master's own shutdown (as on SIGTERM), once the answer is out.
                    actix::spawn(async {
                        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGTERM);
                    });
                }
                // Answered in `carry_out`.
                Effect::AnswerWithAccounting { .. } | Effect::AnswerWithBackup { .. } => {}
                Effect::Schedule => self.state_changed(),
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
                ar = %ar.id,
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
                ar = %ar.id,
                "sending mail to user \"{to}\"|mailer \"{mailer}\"|\"{}\"", m.subject
            );
            let mut command = gantry_net::mailer::command(&mailer, &to, &m.subject, &user);
            let body = m.body.clone().into_bytes();
            let (id, mailer) = (ar.id, mailer.clone());
            tokio::spawn(async move {
                if let Err(e) = gantry_net::mailer::run(&mut command, &body).await {
                    warn!(ar = %id, "mailer \"{mailer}\": {e}");
                }
            });
        }
    }
}
