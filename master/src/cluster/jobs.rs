//! The job requests the actor answers itself (they read its sessions, its spool or its
//! list of finished jobs, or send to execds): submission, deletion, alteration,
//! suspension, error clearing, and the suspend thresholds' actions.

use gantry_proto::{Caller, FromMaster, ItemResult, JobScript, Refusal, RefusalKind, ToExecd};
use tracing::{error, info};

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
        let possible = verify == Verify::None || self.state.could_ever_run(&job).is_ok();
        match verify {
            Verify::Verify => {
                return FromMaster::Verified {
                    message: if possible {
                        "verification: found suitable queue(s)".into()
                    } else {
                        "verification: no suitable queues".into()
                    },
                }
            }
            Verify::Error if !possible => {
                return FromMaster::Refused(Refusal {
                    kind: RefusalKind::Invalid,
                    message: "error: no suitable queues".into(),
                })
            }
            _ => {}
        }
        let reply = FromMaster::Submitted {
            job_id: id,
            name: job.spec.name.clone(),
            array: job.spec.array,
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
        reply
    }

    pub(super) fn delete_jobs(
        &mut self,
        caller: &Caller,
        ids: &[String],
        users: &[String],
        force: bool,
    ) -> FromMaster {
        let manager = self.state.acts_as_manager(caller);
        // With -f a running task is removed at once, without waiting for its report; it
        // is killed now if its execd is there, else when the execd registers again (a
        // late report is acknowledged without a record).
        let mut targets: Vec<(u64, Option<(u32, u32)>)> = Vec::new();
        // Job names and patterns (`'*'`): the jobs of the users given with -u, else the
        // caller's own.
        let mut patterns: Vec<&str> = Vec::new();
        for text in ids {
            match crate::jobs::parse_job_ref(text) {
                Some(t) => targets.push(t),
                None if !text.is_empty() && !text.contains(['/', ' ']) => patterns.push(text),
                None => {
                    return FromMaster::Refused(Refusal {
                        kind: RefusalKind::Invalid,
                        message: format!("denied: job \"{text}\" does not exist"),
                    })
                }
            }
        }
        let owned_by = |job: &crate::jobs::Job| {
            if users.is_empty() {
                job.owner.user == caller.user
            } else {
                users.iter().any(|u| u == "*" || *u == job.owner.user)
            }
        };
        for pattern in &patterns {
            let before = targets.len();
            for job in self.state.jobs.values() {
                if owned_by(job) && crate::jobs::wildcard(pattern, &job.spec.name) {
                    targets.push((job.id, None));
                }
            }
            if targets.len() == before && *pattern != "*" {
                return FromMaster::Refused(Refusal {
                    kind: RefusalKind::NotFound,
                    message: format!("denied: job \"{pattern}\" does not exist"),
                });
            }
        }
        if patterns.is_empty() {
            for job in self.state.jobs.values() {
                if !users.is_empty() && owned_by(job) {
                    targets.push((job.id, None));
                }
            }
        }
        targets.sort();
        targets.dedup();
        let mut results: Vec<ItemResult> = Vec::new();
        let done = |message: String| ItemResult {
            message,
            refused: false,
        };
        let refused = |message: String| ItemResult {
            message,
            refused: true,
        };
        let mut ops = Vec::new();
        let mut kills = Vec::new();
        for (id, range) in targets {
            let Some(job) = self.state.jobs.get(&id) else {
                results.push(refused(format!("denied: job \"{id}\" does not exist")));
                continue;
            };
            if job.owner.user != caller.user && !manager {
                results.push(refused(self.state.others_job_refusal(
                    caller,
                    format!(
                        "{} - you do not have the necessary privileges to delete the job \"{id}\"",
                        caller.user
                    ),
                )));
                continue;
            }
            let mut job = crate::jobs::Job::clone(job);
            // Pending tasks go at once, as ranges (an array may have many).
            let (lo, hi) = range.unwrap_or((0, u32::MAX));
            let mut deleted_tasks = job.tasks.pending_mut().remove_within(lo, hi);
            let mut registered_tasks = Vec::new();
            // The others (running, being deleted, in error) one by one.
            let selected: Vec<(u32, TaskState)> = job
                .tasks
                .placed()
                .filter(|(t, _)| (lo..=hi).contains(t))
                .map(|(t, state)| (t, state.clone()))
                .collect();
            for (t, state) in selected {
                match state {
                    TaskState::Pending | TaskState::Error { .. } => {
                        job.tasks.remove(t);
                        deleted_tasks.insert(t);
                    }
                    TaskState::Running {
                        host,
                        queue,
                        start_time,
                        ..
                    }
                    | TaskState::Deleting {
                        host,
                        queue,
                        start_time,
                        ..
                    } if force => {
                        // Accounted when its host reports the end (SGE accounts it too);
                        // until then, its record waits in the spool.
                        let waiting = gantry_proto::JobReport {
                            job_id: id,
                            task_id: t,
                            host: host.clone(),
                            queue: format!("{queue}@{host}"),
                            exit_status: 0,
                            signal: None,
                            failed: 0,
                            failure: String::new(),
                            start_time,
                            end_time: start_time,
                            utime_us: 0,
                            stime_us: 0,
                            maxrss_kb: 0,
                        };
                        if let Some(record) = self.state.accounting_record(&waiting) {
                            ops.push(Op::Put(Object::ForcedAway(Box::new(record))));
                        }
                        job.tasks.remove(t);
                        self.started.remove(&(id, t));
                        kills.push((host, id, t));
                        deleted_tasks.insert(t);
                    }
                    TaskState::Running {
                        host,
                        queue,
                        start_time,
                        grants,
                        pe,
                    } => {
                        job.tasks.insert(
                            t,
                            TaskState::Deleting {
                                host: host.clone(),
                                queue,
                                start_time,
                                grants,
                                pe,
                            },
                        );
                        kills.push((host, id, t));
                        registered_tasks.push(t);
                    }
                    TaskState::Deleting { host, .. } => {
                        kills.push((host, id, t));
                        registered_tasks.push(t);
                    }
                }
            }
            let named_tasks = range.is_some() && job.is_array();
            if named_tasks && !(deleted_tasks.is_empty() && registered_tasks.is_empty()) {
                // `qdel 7.2-5`: SGE names the tasks, not the job.
                let user = &caller.user;
                match (deleted_tasks.len(), deleted_tasks.first()) {
                    (0, _) | (_, None) => {}
                    (1, Some(t)) => {
                        results.push(done(format!("{user} has deleted job-array task {id}.{t}")))
                    }
                    _ => results.push(done(format!(
                        "{user} has deleted job-array tasks {} of job {id}",
                        deleted_tasks.ranges_text()
                    ))),
                }
                for t in &registered_tasks {
                    results.push(done(format!(
                        "{user} has registered the job-array task {id}.{t} for deletion"
                    )));
                }
            } else if !registered_tasks.is_empty() {
                results.push(done(format!(
                    "{} has registered the job {id} for deletion",
                    caller.user
                )));
            } else {
                results.push(done(format!("{} has deleted job {id}", caller.user)));
            }
            if job.tasks.is_empty() {
                ops.push(Op::Delete(crate::state::job_key(id)));
                self.job_ended_without_report(id);
            } else {
                ops.push(Op::Put(Object::Job(job)));
            }
        }
        if let Err(r) = self.commit(&ops) {
            return FromMaster::Refused(r);
        }
        for (host, job_id, task_id) in kills {
            if let Some(s) = self.sessions.get(&host) {
                let _ = s.to_execd.send(ToExecd::KillJob { job_id, task_id });
            }
        }
        self.state_changed();
        if ops.is_empty() && results.iter().any(|r| r.refused) {
            let lines: Vec<String> = results.into_iter().map(|r| r.message).collect();
            FromMaster::Refused(Refusal {
                kind: RefusalKind::NotFound,
                message: lines.join("\n"),
            })
        } else {
            FromMaster::Items(results)
        }
    }

    pub(super) fn alter_jobs(
        &mut self,
        caller: &Caller,
        ids: &[String],
        changes: &gantry_proto::JobChanges,
    ) -> FromMaster {
        let refused = |kind, message: String| FromMaster::Refused(Refusal { kind, message });
        let mut changes = changes.clone();
        if let Some(list) = changes.hard_resources.as_mut() {
            if let Err(r) = crate::jobs::check_resources(&self.state, list) {
                return FromMaster::Refused(r);
            }
        }
        if let Some(q) = &changes.queues {
            if let Err(r) = crate::jobs::check_queues(&self.state, q) {
                return FromMaster::Refused(r);
            }
        }
        let manager = self.state.acts_as_manager(caller);
        let mut ops = Vec::new();
        let mut messages = Vec::new();
        for text in ids {
            let Some((id, _)) = crate::jobs::parse_job_ref(text) else {
                return refused(
                    RefusalKind::Invalid,
                    format!("denied: job \"{text}\" does not exist"),
                );
            };
            let Some(job) = self.state.jobs.get(&id) else {
                return refused(
                    RefusalKind::NotFound,
                    format!("denied: job \"{id}\" does not exist"),
                );
            };
            if job.owner.user != caller.user && !manager {
                return refused(
                    RefusalKind::Denied,
                    self.state.others_job_refusal(
                        caller,
                        format!(
                            "{} - you do not have the necessary privileges to modify the job \"{id}\"",
                            caller.user
                        ),
                    ),
                );
            }
            if !job.tasks.has_pending() {
                return refused(
                    RefusalKind::Invalid,
                    format!("denied: job \"{id}\" has no pending tasks; only pending jobs can be changed"),
                );
            }
            let mut job = crate::jobs::Job::clone(job);
            let spec = &mut job.spec;
            if let Some(h) = changes.hold {
                spec.hold = h;
                messages.push(format!("modified hold of job {id}"));
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
                messages.push(format!("modified priority of job {id}"));
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
            ops.push(Op::Put(Object::Job(job)));
        }
        if let Err(r) = self.commit(&ops) {
            return FromMaster::Refused(r);
        }
        FromMaster::Done { messages }
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
            (&actions.suspend, libc_signal::SIGSTOP, "suspended"),
            (&actions.resume, libc_signal::SIGCONT, "unsuspended"),
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

    /// `qmod -s` / `-us` on queue instances: no new jobs start there, and the jobs
    /// running there are stopped (state `S`) or continued (unless suspended themselves).
    pub(super) fn suspend_queues(
        &mut self,
        caller: &Caller,
        targets: &[String],
        suspend: bool,
    ) -> FromMaster {
        if let Err(r) = self.state.manager_check(caller) {
            return FromMaster::Refused(r);
        }
        let instances = match self.state.queue_instances_named(targets) {
            Ok(i) => i,
            Err(r) => return FromMaster::Refused(r),
        };
        let mut set = (*self.state.suspended_queues).clone();
        let mut messages = Vec::new();
        for key in &instances {
            let changed = if suspend {
                set.insert(key.clone())
            } else {
                set.remove(key)
            };
            messages.push(if changed {
                format!(
                    "{}@{} changed state of \"{}@{}\" ({})",
                    caller.user,
                    caller.host,
                    key.0,
                    key.1,
                    if suspend { "suspended" } else { "unsuspended" }
                )
            } else {
                format!(
                    "Queue instance \"{}@{}\" is already in the specified state: {}",
                    key.0,
                    key.1,
                    if suspend { "suspended" } else { "unsuspended" }
                )
            });
        }
        let mut list: Vec<(String, String)> = set.into_iter().collect();
        list.sort();
        if let Err(r) = self.commit(&[Op::Put(Object::SuspendedQueues(list))]) {
            return FromMaster::Refused(r);
        }
        let signal = if suspend {
            libc_signal::SIGSTOP
        } else {
            libc_signal::SIGCONT
        };
        for job in self.state.jobs.values() {
            for (task, t) in job.tasks.placed() {
                let TaskState::Running { host, queue, .. } = t else {
                    continue;
                };
                // A job suspended on its own stays stopped when its queue resumes.
                if !instances.contains(&(queue.clone(), host.clone()))
                    || (!suspend && job.suspended.contains(&task))
                {
                    continue;
                }
                if let Some(s) = self.sessions.get(host) {
                    let _ = s.to_execd.send(ToExecd::SignalJob {
                        job_id: job.id,
                        task_id: task,
                        signal,
                    });
                }
            }
        }
        FromMaster::Done { messages }
    }

    pub(super) fn suspend_jobs(
        &mut self,
        caller: &Caller,
        ids: &[String],
        suspend: bool,
    ) -> FromMaster {
        let manager = self.state.acts_as_manager(caller);
        let mut ops = Vec::new();
        let mut messages = Vec::new();
        let mut signals = Vec::new();
        for text in ids {
            let found =
                crate::jobs::parse_job_ref(text).and_then(|(id, _)| self.state.jobs.get(&id));
            let Some(job) = found else {
                return FromMaster::Refused(Refusal {
                    kind: RefusalKind::NotFound,
                    message: format!("denied: job \"{text}\" does not exist"),
                });
            };
            if job.owner.user != caller.user && !manager {
                return FromMaster::Refused(Refusal {
                    kind: RefusalKind::Denied,
                    message: self.state.others_job_refusal(
                        caller,
                        format!(
                            "{} - you do not have the necessary privileges to modify the job \"{}\"",
                            caller.user, job.id
                        ),
                    ),
                });
            }
            let mut job = crate::jobs::Job::clone(job);
            let mut any = false;
            for (task, t) in job.tasks.placed() {
                if let TaskState::Running { host, .. } = t {
                    any = true;
                    signals.push((host.clone(), job.id, task));
                }
            }
            if !any {
                return FromMaster::Refused(Refusal {
                    kind: RefusalKind::Invalid,
                    message: format!("denied: job \"{}\" is not running", job.id),
                });
            }
            for (_, _, task) in signals.iter().filter(|(_, j, _)| *j == job.id) {
                if suspend {
                    job.suspended.insert(*task);
                } else {
                    job.suspended.remove(task);
                }
            }
            messages.push(format!(
                "{} - {} job {}",
                caller.user,
                if suspend { "suspended" } else { "unsuspended" },
                job.id
            ));
            ops.push(Op::Put(Object::Job(job)));
        }
        if let Err(r) = self.commit(&ops) {
            return FromMaster::Refused(r);
        }
        let signal = if suspend {
            libc_signal::SIGSTOP
        } else {
            libc_signal::SIGCONT
        };
        for (host, job_id, task_id) in signals {
            if let Some(s) = self.sessions.get(&host) {
                let _ = s.to_execd.send(ToExecd::SignalJob {
                    job_id,
                    task_id,
                    signal,
                });
            }
        }
        FromMaster::Done { messages }
    }

    pub(super) fn clear_job_errors(&mut self, caller: &Caller, ids: &[String]) -> FromMaster {
        let manager = self.state.acts_as_manager(caller);
        let mut ops = Vec::new();
        let mut messages = Vec::new();
        for text in ids {
            let Some((id, _)) = crate::jobs::parse_job_ref(text) else {
                return FromMaster::Refused(Refusal {
                    kind: RefusalKind::Invalid,
                    message: format!("denied: job \"{text}\" does not exist"),
                });
            };
            let Some(job) = self.state.jobs.get(&id) else {
                return FromMaster::Refused(Refusal {
                    kind: RefusalKind::NotFound,
                    message: format!("denied: job \"{id}\" does not exist"),
                });
            };
            if job.owner.user != caller.user && !manager {
                return FromMaster::Refused(Refusal {
                    kind: RefusalKind::Denied,
                    message: self.state.others_job_refusal(
                        caller,
                        format!(
                            "{} - you do not have the necessary privileges to modify the job \"{id}\"",
                            caller.user
                        ),
                    ),
                });
            }
            let mut job = crate::jobs::Job::clone(job);
            job.tasks.clear_errors();
            messages.push(format!(
                "{} has cleared the error state of job {id}",
                caller.user
            ));
            ops.push(Op::Put(Object::Job(job)));
        }
        if let Err(r) = self.commit(&ops) {
            return FromMaster::Refused(r);
        }
        FromMaster::Done { messages }
    }
}

/// Signal numbers sent to execds (Linux values, as the execds run Linux).
mod libc_signal {
    pub const SIGSTOP: i32 = nix::sys::signal::Signal::SIGSTOP as i32;
    pub const SIGCONT: i32 = nix::sys::signal::Signal::SIGCONT as i32;
}
