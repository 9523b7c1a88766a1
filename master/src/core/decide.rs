//! The job requests the actor answers, decided as pure functions of the state: each
//! returns a [`Decision`], the spool writes to commit, what to do once they are durable
//! ([`Effect`]: orders to execds, waiters to wake) and the reply. The Cluster actor
//! commits, then carries out the effects, then answers; a refused request writes
//! nothing and has no effect.

use gantry_proto::{Caller, FromMaster, ItemResult, JobId, Refusal, RefusalKind, TaskId, ToExecd};

pub use crate::core::decision::{Decision, Effect};
use crate::core::state::{ClusterState, Object, Op};
use gantry_common::job::TaskState;
use gantry_common::pe_tasks::PeTasks;

mod alter;
mod reschedule;

/// What a burst of task reports does.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportsDecided {
    pub ops: Vec<Op>,
    /// Acknowledgements, forgotten confirmations, finished jobs, waiters to answer.
    pub effects: Vec<Effect>,
    /// Reports of tasks the state does not have (host, job, task as accounted):
    /// acknowledged all the same; the master logs those it has no record of.
    pub unknown: Vec<(String, JobId, TaskId)>,
}

fn kill(host: String, job_id: JobId, task_id: TaskId) -> Effect {
    Effect::Send {
        host,
        order: ToExecd::KillJob { job_id, task_id },
    }
}

/// Signal numbers sent to execds (Linux values, as the execds run Linux).
pub(crate) mod libc_signal {
    pub const SIGSTOP: i32 = nix::sys::signal::Signal::SIGSTOP as i32;
    pub const SIGCONT: i32 = nix::sys::signal::Signal::SIGCONT as i32;
}

impl ClusterState {
    pub fn decide_delete_jobs(
        &self,
        caller: &Caller,
        ids: &[String],
        users: &[String],
        force: bool,
    ) -> Decision {
        self.delete_jobs_as(caller, ids, users, force, self.acts_as_operator(caller))
    }

    /// [`ClusterState::decide_delete_jobs`] with the caller's rights given: the master
    /// deletes the jobs of an advance reservation that ends or is deleted as a manager.
    pub(crate) fn delete_jobs_as(
        &self,
        caller: &Caller,
        ids: &[String],
        users: &[String],
        force: bool,
        manager: bool,
    ) -> Decision {
        // With -f a running task is removed at once, without waiting for its report; it
        // is killed now if its execd is there, else when the execd registers again (a
        // late report is acknowledged without a record).
        let mut targets: Vec<(JobId, Option<(TaskId, TaskId)>)> = Vec::new();
        // Job names and patterns (`'*'`): the jobs of the users given with -u, else the
        // caller's own.
        let mut patterns: Vec<&str> = Vec::new();
        for text in ids {
            match crate::core::jobs::parse_job_ref(text) {
                Some(t) => targets.push(t),
                None if !text.is_empty() && !text.contains(['/', ' ']) => patterns.push(text),
                None => {
                    return Decision::refused(Refusal {
                        kind: RefusalKind::Invalid,
                        message: format!("denied: job \"{text}\" does not exist"),
                    })
                }
            }
        }
        let owned_by = |job: &crate::core::jobs::Job| {
            if users.is_empty() {
                job.owner.user == caller.user
            } else {
                users.iter().any(|u| u == "*" || *u == job.owner.user)
            }
        };
        for pattern in &patterns {
            let before = targets.len();
            for job in self.input.jobs.values() {
                if owned_by(job) && gantry_common::job::wildcard(pattern, &job.spec.name) {
                    targets.push((job.id, None));
                }
            }
            if targets.len() == before && *pattern != "*" {
                let whose = if users.is_empty() {
                    caller.user.clone()
                } else {
                    users.join(",")
                };
                return Decision::refused(Refusal {
                    kind: RefusalKind::NotFound,
                    message: format!("The job {pattern} of user(s) {whose} does not exist"),
                });
            }
        }
        if patterns.is_empty() {
            for job in self.input.jobs.values() {
                if !users.is_empty() && owned_by(job) {
                    targets.push((job.id, None));
                }
            }
            // `qdel -u` of users without a job: SGE's words.
            if !users.is_empty() && ids.is_empty() && targets.is_empty() {
                return Decision::refused(Refusal {
                    kind: RefusalKind::NotFound,
                    message: format!(
                        "There is no job registered for the following users: {}",
                        users.join(",")
                    ),
                });
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
        let mut effects = Vec::new();
        for (id, range) in targets {
            let Some(job) = self.input.jobs.get(&id) else {
                results.push(refused(format!("denied: job \"{id}\" does not exist")));
                continue;
            };
            if job.owner.user != caller.user && !manager {
                results.push(refused(self.others_job_refusal(
                    caller,
                    format!(
                        "{} - you do not have the necessary privileges to delete the job \"{id}\"",
                        caller.user
                    ),
                )));
                continue;
            }
            let mut job = crate::core::jobs::Job::clone(job);
            // Pending tasks go at once, as ranges (an array may have many).
            let (lo, hi) = range.unwrap_or((TaskId(0), TaskId(u32::MAX)));
            let mut deleted_tasks = job.tasks.pending_mut().remove_within(lo, hi);
            let mut registered_tasks = Vec::new();
            // The others (running, being deleted, in error) one by one.
            let selected: Vec<(TaskId, TaskState)> = job
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
                            queue: format!("{queue}@{host}"),
                            ..gantry_proto::JobReport::empty(id, t, &host, start_time)
                        };
                        if let Some(record) = self.accounting_record(&waiting) {
                            ops.push(Op::Put(Object::ForcedAway(Box::new(record))));
                        }
                        job.tasks.remove(t);
                        effects.push(Effect::Forget { job: id, task: t });
                        effects.push(kill(host, id, t));
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
                        effects.push(kill(host, id, t));
                        registered_tasks.push(t);
                    }
                    TaskState::Deleting { host, .. } => {
                        effects.push(kill(host, id, t));
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
                ops.extend(self.removal_ops(id));
                effects.push(Effect::JobLeft(id));
            } else {
                ops.push(Op::Put(Object::Job(job)));
            }
        }
        if ops.is_empty() && results.iter().any(|r| r.refused) {
            let lines: Vec<String> = results.into_iter().map(|r| r.message).collect();
            return Decision::refused(Refusal {
                kind: RefusalKind::NotFound,
                message: lines.join("\n"),
            });
        }
        Decision {
            ops,
            effects,
            reply: FromMaster::Items(results),
        }
    }
    /// `qmod -s` / `-us` on queue instances: no new jobs start there, and the jobs
    /// running there are stopped (state `S`) or continued (unless suspended themselves).
    pub fn decide_suspend_queues(
        &self,
        caller: &Caller,
        targets: &[String],
        suspend: bool,
        force: bool,
    ) -> Decision {
        if let Err(r) = self.operator_check(caller) {
            return Decision::refused(r);
        }
        let instances = match self.queue_instances_named(targets) {
            Ok(i) => i,
            Err(r) => return Decision::refused(r),
        };
        let mut set = (*self.input.suspended_queues).clone();
        let mut messages = Vec::new();
        for key in &instances {
            let changed = if suspend {
                set.insert(key.clone())
            } else {
                set.remove(key)
            };
            messages.push(if changed || force {
                format!(
                    "{}@{} {} of \"{}@{}\" ({})",
                    caller.user,
                    caller.host,
                    if force {
                        "forced state change"
                    } else {
                        "changed state"
                    },
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

        let signal = if suspend {
            libc_signal::SIGSTOP
        } else {
            libc_signal::SIGCONT
        };
        let mut effects = Vec::new();
        for job in self.input.jobs.values() {
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
                effects.push(Effect::Send {
                    host: host.clone(),
                    order: ToExecd::SignalJob {
                        job_id: job.id,
                        task_id: task,
                        signal,
                    },
                });
            }
        }
        Decision {
            ops: vec![Op::Put(Object::SuspendedQueues(list))],
            effects,
            reply: FromMaster::Done { messages },
        }
    }
    pub fn decide_suspend_jobs(
        &self,
        caller: &Caller,
        ids: &[String],
        suspend: bool,
        force: bool,
    ) -> Decision {
        let manager = self.acts_as_operator(caller);
        let mut ops = Vec::new();
        let mut messages = Vec::new();
        let mut signals = Vec::new();
        for text in ids {
            let found =
                crate::core::jobs::parse_job_ref(text).and_then(|(id, _)| self.input.jobs.get(&id));
            let Some(job) = found else {
                return Decision::refused(Refusal {
                    kind: RefusalKind::NotFound,
                    message: format!("denied: job \"{text}\" does not exist"),
                });
            };
            if job.owner.user != caller.user && !manager {
                return Decision::refused(Refusal {
                    kind: RefusalKind::Denied,
                    message: self.others_job_refusal(
                        caller,
                        format!(
                            "{} - you do not have the necessary privileges to modify the job \"{}\"",
                            caller.user, job.id
                        ),
                    ),
                });
            }
            let mut job = crate::core::jobs::Job::clone(job);
            let mut any = false;
            let mut already = true;
            let from = signals.len();
            for (task, t) in job.tasks.placed() {
                if let TaskState::Running { host, .. } = t {
                    any = true;
                    already &= job.suspended.contains(&task) == suspend;
                    signals.push((host.clone(), job.id, task));
                }
            }
            if !any {
                return Decision::refused(Refusal {
                    kind: RefusalKind::Invalid,
                    message: format!("denied: job \"{}\" is not running", job.id),
                });
            }
            let user = &caller.user;
            // SGE's words for each case, its inconsistencies included.
            messages.push(match (already, force, suspend) {
                (true, false, true) => format!("{user} - job {} is already suspended", job.id),
                (true, false, false) => {
                    format!("{user} - job {} is already unsuspended", job.id)
                }
                (_, true, true) => format!("{user} - forced suspension of job {}", job.id),
                (false, true, false) => format!(
                    "{user}@{} forced unsuspension of job {}",
                    caller.host, job.id
                ),
                (true, true, false) => format!("{user} - forced enabling of job {}", job.id),
                (false, false, s) => format!(
                    "{user} - {} job {}",
                    if s { "suspended" } else { "unsuspended" },
                    job.id
                ),
            });
            if already && !force {
                signals.truncate(from);
                continue;
            }
            for (_, _, task) in signals.iter().filter(|(_, j, _)| *j == job.id) {
                if suspend {
                    job.suspended.insert(*task);
                } else {
                    job.suspended.remove(task);
                }
            }
            ops.push(Op::Put(Object::Job(job)));
        }
        let signal = if suspend {
            libc_signal::SIGSTOP
        } else {
            libc_signal::SIGCONT
        };
        let effects = signals
            .into_iter()
            .map(|(host, job_id, task_id)| Effect::Send {
                host,
                order: ToExecd::SignalJob {
                    job_id,
                    task_id,
                    signal,
                },
            })
            .collect();
        Decision {
            ops,
            effects,
            reply: FromMaster::Done { messages },
        }
    }
    pub fn decide_clear_job_errors(&self, caller: &Caller, ids: &[String]) -> Decision {
        let manager = self.acts_as_operator(caller);
        let mut ops = Vec::new();
        let mut messages = Vec::new();
        for text in ids {
            let Some((id, _)) = crate::core::jobs::parse_job_ref(text) else {
                return Decision::refused(Refusal {
                    kind: RefusalKind::Invalid,
                    message: format!("denied: job \"{text}\" does not exist"),
                });
            };
            let Some(job) = self.input.jobs.get(&id) else {
                return Decision::refused(Refusal {
                    kind: RefusalKind::NotFound,
                    message: format!("denied: job \"{id}\" does not exist"),
                });
            };
            if job.owner.user != caller.user && !manager {
                return Decision::refused(Refusal {
                    kind: RefusalKind::Denied,
                    message: self.others_job_refusal(
                        caller,
                        format!(
                            "{} - you do not have the necessary privileges to modify the job \"{id}\"",
                            caller.user
                        ),
                    ),
                });
            }
            let mut job = crate::core::jobs::Job::clone(job);
            job.tasks.clear_errors();
            messages.push(format!(
                "{} has cleared the error state of job {id}",
                caller.user
            ));
            ops.push(Op::Put(Object::Job(job)));
        }
        Decision {
            ops,
            effects: Vec::new(),
            reply: FromMaster::Done { messages },
        }
    }

    /// A burst of task reports from execds, recorded in one commit: each finished task
    /// accounted and removed from its job; a task that could not start waits in error
    /// (`Eqw`), or goes back to pending and puts its queue instance in error (`E`) when
    /// the host could not start it at all, as SGE does; a task removed with `qdel -f`
    /// while its host was away is accounted from the record that waited for it. A
    /// report that comes again (its acknowledgement was lost) is acknowledged again and
    /// recorded once. `now` (Unix seconds) is when finished jobs are shown to end.
    pub fn decide_reports(
        &self,
        batch: &[(String, gantry_proto::JobReport)],
        now: i64,
    ) -> ReportsDecided {
        use gantry_common::job::Job;
        use gantry_proto::ShepherdFailure;
        use std::collections::{HashMap, HashSet};
        let mut ops = Vec::new();
        let mut changed: HashMap<JobId, Job> = HashMap::new();
        let mut acks = Vec::new();
        let mut recorded: Vec<(JobId, TaskId)> = Vec::new();
        let mut unknown = Vec::new();
        let mut seen: HashSet<(JobId, TaskId)> = HashSet::new();
        let mut errored_now: Option<std::collections::BTreeMap<(String, String), String>> = None;
        // What each accounted run measured, charged to its owner's usage.
        let mut measured = Vec::new();
        // The tasks `qrsh -inherit` started, as the reports change them.
        let mut pe_changed: HashMap<(JobId, TaskId), PeTasks> = HashMap::new();
        let mut seen_pe: HashSet<(JobId, TaskId, u32)> = HashSet::new();
        for (host, report) in batch {
            let key = (report.job_id, report.task_id);
            tracing::debug!(job = %key.0, task = %key.1, pe_task = ?report.pe_task, host = %host, "task report");
            acks.push(Effect::Send {
                host: host.clone(),
                order: ToExecd::ReportAck {
                    job_id: key.0,
                    task_id: key.1,
                    pe_task: report.pe_task,
                },
            });
            if let Some(n) = report.pe_task {
                // A task of a running job: accounted (or summed into the job's record),
                // its slot free again. One that is not running came again.
                if !seen_pe.insert((key.0, key.1, n)) {
                    continue;
                }
                if let Some(Some(record)) = self
                    .pe_tasks_changing(&mut pe_changed, key)
                    .and_then(|t| t.end_task(report))
                {
                    ops.push(Op::Account(Box::new(record)));
                }
                continue;
            }
            if !seen.insert(key) {
                continue;
            }
            let known = changed
                .get(&key.0)
                .or_else(|| self.input.jobs.get(&key.0).map(|j| &**j))
                .and_then(|j| j.tasks.get(key.1))
                // From the host it runs on: a host that comes back after its task was
                // rescheduled reports the old run, accounted already.
                .is_some_and(|t| {
                    matches!(t, TaskState::Running { host: h, .. } | TaskState::Deleting { host: h, .. } if h == host)
                });
            if !known {
                // Removed with qdel -f while the host was away: accounted now.
                if let Some(waiting) = self.forced_away.get(&key) {
                    let mut record = waiting.clone();
                    record.report = report.clone();
                    ops.push(Op::Account(Box::new(record)));
                    measured.push((key.0, key.1, self.final_measurement(report), true));
                    ops.push(Op::Delete(crate::core::state::forced_key(key.0, key.1)));
                    recorded.push(key);
                    continue;
                }
                let task = if self.input.jobs.get(&key.0).is_some_and(|j| j.is_array()) {
                    key.1
                } else {
                    TaskId(0)
                };
                unknown.push((host.clone(), key.0, task));
                continue;
            }
            let Some(current) = self.input.jobs.get(&key.0) else {
                continue;
            };
            let job = changed.entry(key.0).or_insert_with(|| Job::clone(current));
            // Its tasks started by `qrsh -inherit` end with it, as SGE ends them.
            if let Some(tasks) = self.pe_tasks_changing(&mut pe_changed, key) {
                for host in tasks.hosts() {
                    acks.push(Effect::Send {
                        host,
                        order: ToExecd::KillPeTasks {
                            job_id: key.0,
                            task_id: key.1,
                        },
                    });
                }
                tasks.end_job(None);
            }
            // A job that could not even be started (no working directory, no output
            // file, no shell) waits in error state, as SGE's Eqw, unless it was deleted.
            // The host could not start it (unknown user there, no TMPDIR, a prolog that
            // failed): the queue instance goes into error state `E` and the task back to
            // pending, as SGE. Either way the attempt is accounted, as SGE accounts it.
            let failure = report.shepherd_failure();
            if let (Some(f), Some(TaskState::Running { host, queue, .. })) =
                (failure.filter(|f| f.is_queue_error()), job.tasks.get(key.1))
            {
                tracing::warn!(
                    job = %key.0,
                    task = %key.1,
                    queue = %queue,
                    host = %host,
                    "queue instance set to error state: {}",
                    report.failure
                );
                let mut errored = errored_now
                    .take()
                    .unwrap_or_else(|| self.queue_errors.clone());
                errored.insert(
                    (queue.clone(), host.clone()),
                    format!(
                        "queue {queue} marked QERROR as result of job {}'s failure at host {host}",
                        key.0
                    ),
                );
                errored_now = Some(errored);
                if f.runs_again() {
                    // Recorded as SGE 8.1.9 records an attempt it reschedules: no slots,
                    // no start and no end (`-/-`), even where the job ran before an
                    // epilog failed.
                    if let Some(mut record) = self.accounting_record(report) {
                        record.slots = 0;
                        record.report.start_time = 0;
                        record.report.end_time = 0;
                        ops.push(Op::Account(Box::new(record)));
                    }
                    job.tasks.insert(key.1, TaskState::Pending);
                    job.failed_starts.insert(key.1, report.failure.clone());
                    recorded.push(key);
                    continue;
                }
            }
            // The host failed under the task (its shepherd ended without a report: the
            // host or its execd went down): a rerunnable job runs again, as SGE
            // reschedules it; any other is accounted as failed below. A checkpointing
            // job that migrated (suspended with `when` x) runs again too, from its
            // checkpoint if it left one. Either way the interrupted run is accounted, as
            // SGE's job_exit does.
            let again = match (failure, job.tasks.get(key.1)) {
                (
                    Some(ShepherdFailure::Migrate | ShepherdFailure::Reschedule),
                    Some(TaskState::Running { .. }),
                ) => true,
                (Some(ShepherdFailure::AfterJob), Some(TaskState::Running { host, queue, .. })) => {
                    self.rerunnable(job, queue, host)
                }
                _ => false,
            };
            if again {
                tracing::info!(
                    job = %key.0,
                    task = %key.1,
                    host = %report.host,
                    "rescheduled: {} ({})",
                    if failure == Some(ShepherdFailure::Migrate) {
                        "the task migrated"
                    } else if failure == Some(ShepherdFailure::Reschedule) {
                        "a procedure or qmod -r asked for it"
                    } else {
                        "the task ended with its host"
                    },
                    report.failure
                );
                if let Some(record) = self.accounting_record(report) {
                    ops.push(Op::Account(Box::new(record)));
                }
                measured.push((key.0, key.1, self.final_measurement(report), true));
                job.tasks.insert(key.1, TaskState::Pending);
                job.suspended.remove(&key.1);
                *job.restarted.entry(key.1).or_insert(0) += 1;
                if report.checkpointed {
                    job.ckpt_arena.insert(key.1);
                }
                recorded.push(key);
                continue;
            }
            // An interactive job whose task could not start ends with its session (its
            // command has gone): accounted, not kept in error for a `qmod -cj`.
            let interactive =
                matches!(job.spec.script, gantry_proto::JobScript::Interactive { .. });
            let setup_failure = failure.is_some_and(ShepherdFailure::is_job_error) && !interactive;
            if setup_failure && matches!(job.tasks.get(key.1), Some(TaskState::Running { .. })) {
                tracing::info!(
                    job = %key.0,
                    task = %key.1,
                    "task could not be started: {}",
                    report.failure
                );
                if let Some(record) = self.accounting_record(report) {
                    ops.push(Op::Account(Box::new(record)));
                }
                job.tasks.insert(
                    key.1,
                    TaskState::Error {
                        reason: report.failure.clone(),
                    },
                );
                job.failed_starts.remove(&key.1);
                recorded.push(key);
                continue;
            }
            let Some(record) = self.accounting_record(report) else {
                continue;
            };
            // `accounting_summary TRUE`: the job's record waits for its tasks'.
            let held = pe_changed
                .get_mut(&key)
                .is_some_and(|t| t.end_job(Some(report)));
            if !held {
                ops.push(Op::Account(Box::new(record)));
            }
            measured.push((key.0, key.1, self.final_measurement(report), true));
            job.tasks.remove(key.1);
            job.failed_starts.remove(&key.1);
            recorded.push(key);
        }
        for (_, tasks) in pe_changed {
            ops.extend(crate::core::pe_tasks::settled(tasks));
        }
        ops.extend(self.charge_usage(&measured, now));
        if let Some(errored) = errored_now {
            ops.push(Op::Put(Object::ErrorQueues(
                crate::core::state::QueueInError::list(errored),
            )));
        }
        let mut done_jobs = Vec::new();
        let mut finished = Vec::new();
        for (id, job) in changed {
            if job.tasks.is_empty() {
                ops.extend(self.removal_ops(id));
                done_jobs.push(Effect::JobEnded(id));
                finished.push(Effect::Finished(Box::new(crate::core::jobs::zombie_view(
                    &job, now,
                ))));
            } else {
                ops.push(Op::Put(Object::Job(job)));
            }
        }
        let mut effects: Vec<Effect> = recorded
            .into_iter()
            .map(|(job, task)| Effect::Forget { job, task })
            .collect();
        effects.extend(finished);
        effects.extend(acks);
        effects.extend(done_jobs);
        ReportsDecided {
            ops,
            effects,
            unknown,
        }
    }
}

impl ClusterState {
    /// A job's tasks of `qrsh -inherit` as a burst of reports changes them: taken from
    /// the state the first time the burst touches them.
    fn pe_tasks_changing<'a>(
        &self,
        changing: &'a mut std::collections::HashMap<(JobId, TaskId), PeTasks>,
        key: (JobId, TaskId),
    ) -> Option<&'a mut PeTasks> {
        if let (std::collections::hash_map::Entry::Vacant(e), Some(t)) =
            (changing.entry(key), self.pe_tasks.get(&key))
        {
            e.insert(t.clone());
        }
        changing.get_mut(&key)
    }
}

#[cfg(test)]
mod tests;
