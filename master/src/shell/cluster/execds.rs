//! The execds: joining, sessions, load reports, task reports and what the master does
//! when a host goes quiet.

use gantry_proto::{FromMaster, JobId, LoadValue, ShepherdFailure, TaskId, ToExecd};
use std::collections::HashSet;
use std::net::SocketAddr;

use actix::prelude::*;
use gantry_common::exechost::{canonical_hostname, valid_hostname};
use gantry_net::cell::{unix_now, JoinToken};
use gantry_net::tls::{certs_from_pem, fingerprint};
use tokio::sync::mpsc::UnboundedSender;
use tracing::{info, warn};

use crate::core::jobs::TaskState;

use super::*;

impl Cluster {
    /// A job left without running (deleted while pending): wake `-sync` waiters.
    pub(super) fn job_ended_without_report(&mut self, id: JobId) {
        if let Some(waiters) = self.start_waiters.remove(&id) {
            for w in waiters {
                let _ = w.send(super::clients::not_scheduled());
            }
        }
        if let Some(waiters) = self.waiters.remove(&id) {
            for w in waiters {
                let _ = w.send(FromMaster::JobEnded {
                    job_id: id,
                    exit_status: 0,
                    signal: None,
                    failed: ShepherdFailure::BeforeJob.code(),
                });
            }
        }
    }

    /// The outcome of a finished job for `-sync y`, from its accounting records.
    pub(super) fn job_outcome(&self, id: JobId) -> Option<FromMaster> {
        let records = self.store.accounting(|r| r.job_id == id).ok()?;
        // Each task's last run (records come in task and attempt order): an
        // interrupted run that ran again is not the job's outcome.
        let mut last = std::collections::BTreeMap::new();
        // The tasks `qrsh -inherit` started are not the job's outcome.
        for r in records.iter().filter(|r| r.report.pe_task.is_none()) {
            last.insert(r.task_id, r);
        }
        let worst = last.values().max_by_key(|r| {
            (
                r.report.failed,
                r.report.signal.is_some(),
                r.report.exit_status,
            )
        })?;
        Some(FromMaster::JobEnded {
            job_id: id,
            exit_status: worst.report.exit_status,
            signal: worst.report.signal,
            failed: worst.report.failed,
        })
    }

    /// Record a burst of task reports in one commit, then acknowledge them; on a spool
    /// error nothing is acknowledged and the batch comes back to be tried again.
    pub(super) fn finish_batch(
        &mut self,
        batch: Vec<(String, gantry_proto::JobReport)>,
    ) -> Result<(), Vec<(String, gantry_proto::JobReport)>> {
        let decided = self.state.decide_reports(&batch, self.unix_now());
        for (host, job_id, task) in &decided.unknown {
            if !matches!(self.store.has_accounting(*job_id, *task), Ok(true)) {
                warn!(job = %job_id, task = %task, host = %host, "report for a task the master does not know; acknowledged");
            }
        }
        if self.commit(&decided.ops).is_err() {
            return Err(batch); // not acknowledged: tried again
        }
        for (_, report) in &batch {
            let outcome = if report.failed == 0 { "done" } else { "failed" };
            self.metrics
                .tasks_finished
                .get_or_create(&crate::shell::metrics::StateLabel {
                    state: outcome.to_string(),
                })
                .inc();
        }
        self.trigger.state_changed = true;
        self.carry_out_effects(decided.effects);
        Ok(())
    }

    pub(super) fn check_reachability(&mut self) {
        let now = self.now();
        let hosts: Vec<String> = self.state.input.exechosts.keys().cloned().collect();
        for host in hosts {
            let heard = self
                .state
                .input
                .runtime
                .get(&host)
                .and_then(|r| r.last_heard)
                .is_some();
            if !heard {
                continue;
            }
            if self.state.is_reachable(&host, now) {
                if self.unreachable.remove(&host) {
                    self.trigger.loads_changed = true;
                }
            } else if self.unreachable.insert(host.clone()) {
                self.trigger.loads_changed = true;
                warn!(
                    host = %host,
                    "execd unreachable: no load report for more than max_unheard ({} s)",
                    self.state.max_unheard()
                );
            }
        }
        self.reschedule_unknown_hosts(now);
    }

    /// `reschedule_unknown`: the tasks of hosts unknown for that long past
    /// `max_unheard` end as reported by their execd would (rescheduled, or killed with
    /// `ENABLE_RESCHEDULE_KILL`), through the reports' own path: accounted once, the
    /// rescheduled ones pending again. A host that comes back later is told to kill
    /// what it still runs of them.
    fn reschedule_unknown_hosts(&mut self, now: crate::core::sched::Time) {
        if self.unreachable.is_empty() {
            return;
        }
        let mut hosts: Vec<String> = self.unreachable.iter().cloned().collect();
        hosts.sort();
        for host in hosts {
            // The host's own configuration's reschedule_unknown, else the global one's.
            let after = self.state.reschedule_unknown(&host);
            if after == 0 {
                continue;
            }
            let deadline = self.state.max_unheard() + after;
            let since = self
                .state
                .input
                .runtime
                .get(&host)
                .and_then(|r| r.last_heard);
            let Some(since) = since else {
                continue;
            };
            if now.secs() - since.secs() < i64::try_from(deadline).unwrap_or(i64::MAX) {
                continue;
            }
            let reports = self.state.unknown_host_reports(&host, now.secs());
            if reports.is_empty() {
                continue;
            }
            warn!(
                host = %host,
                tasks = reports.len(),
                "host unknown for reschedule_unknown past max_unheard: its jobs are rescheduled"
            );
            self.pending_reports.extend(reports);
        }
        if !self.pending_reports.is_empty() && !self.flush_queued {
            self.flush_queued = true;
            if let Some(me) = &self.me {
                me.do_send(FlushReports);
            }
        }
    }
}

/// Why an execd may not join the cell (the execd is told, with its host name).
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    #[error(transparent)]
    Token(#[from] gantry_net::cell::TokenError),
    #[error("the master cannot read its join token: {0}")]
    CannotReadToken(crate::cell::CellError),
    #[error("the join token is not valid (wrong or rotated)")]
    WrongToken,
    #[error("the join token has expired (rotate it with gantry-master token)")]
    Expired,
    #[error("invalid host name \"{0}\"")]
    InvalidHostName(String),
    #[error(transparent)]
    Refused(#[from] crate::core::state::JoinRefused),
    #[error(transparent)]
    Certificate(#[from] gantry_net::tls::TlsError),
    #[error("no certificate issued")]
    NoCertificate,
    #[error("{}", .0.message)]
    Spool(Refusal),
}

/// An execd asks to join with a token.
#[derive(Message)]
#[rtype(result = "Result<ToExecd, JoinError>")]
pub struct Join {
    pub token: String,
    pub hostname: String,
    pub public_key: Vec<u8>,
    pub peer: SocketAddr,
    /// The join came from one of the master's own addresses.
    pub from_masters_machine: bool,
}

impl Handler<Join> for Cluster {
    type Result = Result<ToExecd, JoinError>;

    fn handle(&mut self, msg: Join, _: &mut Self::Context) -> Self::Result {
        let presented = JoinToken::parse(&msg.token)?;
        let current = crate::cell::read_token(&self.paths).map_err(JoinError::CannotReadToken)?;
        if !current.matches(&presented) {
            return Err(JoinError::WrongToken);
        }
        if current.expires_at <= unix_now() {
            return Err(JoinError::Expired);
        }
        if !valid_hostname(&msg.hostname) {
            return Err(JoinError::InvalidHostName(msg.hostname));
        }
        // The name as DNS compares it: `NODE1` or `node1.` is `node1`, so it cannot
        // join beside it.
        let msg = Join {
            hostname: canonical_hostname(&msg.hostname),
            ..msg
        };
        // Before a certificate is issued: a name holds one certificate, and the master's
        // own name is claimed only from its own machine.
        if let Err(reason) = self
            .state
            .join_check(&msg.hostname, msg.from_masters_machine)
        {
            warn!(host = %msg.hostname, peer = %msg.peer, "join refused: {reason}");
            return Err(reason.into());
        }
        let cert_pem = self.ca.issue_host(&msg.hostname, &msg.public_key)?;
        let der = certs_from_pem(&cert_pem)?
            .into_iter()
            .next()
            .ok_or(JoinError::NoCertificate)?;
        let fp = hex::encode(fingerprint(der.as_ref()));
        let change = self.state.join(&msg.hostname, &fp);
        self.commit(&change.ops).map_err(JoinError::Spool)?;
        self.trigger.state_changed = true;
        info!(host = %msg.hostname, peer = %msg.peer, "execd joined the cell; host certificate issued");
        Ok(ToExecd::Joined {
            hostname: msg.hostname,
            host_cert_pem: cert_pem,
            ca_cert_pem: self.ca.cert_pem.clone(),
        })
    }
}

/// Why a connected execd is not registered.
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    #[error("unknown host certificate (the host was deleted or its certificate replaced); join again with a token")]
    UnknownCertificate,
}

/// An execd with a host certificate connected: its host name (the certificate's) and
/// the load report interval.
#[derive(Message)]
#[rtype(result = "Result<(String, u64), RegisterError>")]
pub struct Register {
    pub fingerprint: String,
    pub claimed_hostname: String,
    pub session_id: u64,
    /// None for an execd in the same process (tests).
    pub conn: Option<quinn::Connection>,
    pub to_execd: UnboundedSender<ToExecd>,
}

impl Handler<Register> for Cluster {
    type Result = Result<(String, u64), RegisterError>;

    fn handle(&mut self, msg: Register, _: &mut Self::Context) -> Self::Result {
        let Some(host) = self.state.host_certs.get(&msg.fingerprint).cloned() else {
            return Err(RegisterError::UnknownCertificate);
        };
        if host != msg.claimed_hostname {
            warn!(host = %host, claimed = %msg.claimed_hostname, "execd claims another host name than its certificate's; using the certificate's");
        }
        if let Some(old) = self.sessions.insert(
            host.clone(),
            Session {
                id: msg.session_id,
                conn: msg.conn,
                to_execd: msg.to_execd,
                stopping: false,
            },
        ) {
            old.close(CLOSE_REPLACED, b"replaced by a new connection");
        }
        info!(host = %host, "execd connected");
        Ok((host, self.state.load_report_time()))
    }
}

/// A load report from a connected execd.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Load {
    pub host: String,
    pub values: Vec<LoadValue>,
}

impl Handler<Load> for Cluster {
    type Result = ();

    fn handle(&mut self, msg: Load, _: &mut Self::Context) {
        if !self.state.input.exechosts.contains_key(&msg.host) {
            return;
        }
        let now = self.now();
        if let Some(change) = self.state.slots_for_new_host(&msg.host, &msg.values) {
            if self.commit(&change.ops).is_err() {
                return;
            }
            self.trigger.state_changed = true;
        }
        let was_unreachable = self.unreachable.remove(&msg.host);
        // How much later than its interval the report came (an execd told to report
        // every load_report_time seconds; the first report has no previous one).
        if let Some(previous) = self
            .state
            .input
            .runtime
            .get(&msg.host)
            .and_then(|r| r.last_heard)
        {
            let interval = self.state.load_report_time() as f64;
            let lag = (now.secs_f64() - previous.secs_f64() - interval).max(0.0);
            self.metrics.execd_report_lag_seconds.observe(lag);
        }
        self.state.record_load(&msg.host, msg.values, now);
        if was_unreachable {
            info!(host = %msg.host, "execd reachable again");
        }
        // No cycle from here: the timer runs one when it is due.
        self.trigger.loads_changed = true;
    }
}

/// An execd's connection ended.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SessionEnded {
    pub host: String,
    pub session_id: u64,
    pub reason: String,
}

impl Handler<SessionEnded> for Cluster {
    type Result = ();

    fn handle(&mut self, msg: SessionEnded, _: &mut Self::Context) {
        if self
            .sessions
            .get(&msg.host)
            .is_some_and(|s| s.id == msg.session_id)
        {
            self.sessions.remove(&msg.host);
            info!(host = %msg.host, "execd disconnected: {}", msg.reason);
        }
    }
}

/// Messages about jobs from a connected execd.
#[derive(Message)]
#[rtype(result = "()")]
pub enum ExecdJobs {
    Started {
        host: String,
        job_id: JobId,
        task_id: TaskId,
    },
    Finished {
        host: String,
        report: Box<gantry_proto::JobReport>,
    },
    Running {
        host: String,
        tasks: Vec<(JobId, TaskId)>,
        /// Tasks `qrsh -inherit` started, by number.
        pe_tasks: Vec<(JobId, TaskId, u32)>,
    },
    /// What the host's running tasks used so far.
    Usage {
        host: String,
        tasks: Vec<gantry_proto::TaskUsage>,
    },
}

impl Handler<ExecdJobs> for Cluster {
    type Result = ();

    fn handle(&mut self, msg: ExecdJobs, ctx: &mut Self::Context) {
        match msg {
            ExecdJobs::Started {
                job_id, task_id, ..
            } => {
                self.state.live.started.insert((job_id, task_id));
            }
            ExecdJobs::Usage { host, tasks } => {
                // Kept for the tasks that run on that host only: nothing outlives its task.
                let runs_there = |job: JobId, task: TaskId| {
                    self.state.input.jobs.get(&job).is_some_and(|j| {
                        j.tasks.placed().any(|(t, s)| {
                            t == task
                                && matches!(s, TaskState::Running { host: h, .. } if *h == host)
                        })
                    })
                };
                self.state.live.task_usage.retain(|&(j, t), _| {
                    self.state
                        .input
                        .jobs
                        .get(&j)
                        .is_some_and(|job| job.tasks.contains(t))
                });
                let mut measured = Vec::new();
                for u in tasks {
                    if runs_there(u.job_id, u.task_id) {
                        measured.push((
                            u.job_id,
                            u.task_id,
                            gantry_common::usage::Amounts::new(u.cpu, u.mem, u.io),
                            false,
                        ));
                        self.state.live.task_usage.insert((u.job_id, u.task_id), u);
                    }
                }
                // Charged to the owners' usage: a measurement is cumulative, so one that
                // cannot be written now is counted with the next.
                let ops = self.state.charge_usage(&measured, self.unix_now());
                if !ops.is_empty() {
                    if let Err(r) = self.commit(&ops) {
                        tracing::warn!(host = %host, "usage not recorded: {}", r.message);
                    }
                }
            }
            ExecdJobs::Finished { host, report } => {
                self.job_id_seen(report.job_id);
                self.pending_reports.push((host, *report));
                if !self.flush_queued {
                    self.flush_queued = true;
                    ctx.address().do_send(FlushReports);
                }
            }
            ExecdJobs::Running {
                host,
                tasks,
                pe_tasks,
            } => {
                if let Some(highest) = tasks.iter().map(|(j, _)| *j).max() {
                    self.job_id_seen(highest);
                }
                // Tasks `qrsh -inherit` started that the master does not have running
                // there (their job ended, or was removed, while the execd was away) end.
                let mut kill_pe: Vec<(JobId, TaskId)> = pe_tasks
                    .iter()
                    .filter(|(j, t, n)| {
                        self.state
                            .pe_tasks
                            .get(&(*j, *t))
                            .and_then(|p| p.running.get(n))
                            .is_none_or(|task| task.host != host)
                    })
                    .map(|(j, t, _)| (*j, *t))
                    .collect();
                kill_pe.dedup();
                for (job_id, task_id) in kill_pe {
                    info!(job = %job_id, task = %task_id, host = %host, "killing tasks of a job that the master has not running there");
                    if let Some(s) = self.sessions.get(&host) {
                        let _ = s.to_execd.send(ToExecd::KillPeTasks { job_id, task_id });
                    }
                }
                let running: HashSet<(JobId, TaskId)> = tasks.into_iter().collect();
                // Tasks the master no longer has (deleted with qdel -f while the execd was
                // away) are killed now, and so are those deleted while it was away (the
                // kill order found no session to go to).
                for (job_id, task_id) in &running {
                    let state = self
                        .state
                        .input
                        .jobs
                        .get(job_id)
                        .and_then(|j| j.tasks.get(*task_id));
                    let why = match state {
                        None => Some("killing a task the master no longer has"),
                        Some(TaskState::Deleting { host: h, .. }) if *h == host => {
                            Some("killing a task deleted while its execd was away")
                        }
                        Some(TaskState::Running { host: h, .. }) if *h == host => None,
                        // Rescheduled (reschedule_unknown, qmod -r -f) while the execd
                        // was away: pending again, or running elsewhere.
                        Some(_) => Some("killing a task rescheduled while its execd was away"),
                    };
                    if let Some(why) = why {
                        info!(job = %job_id, task = %task_id, host = %host, "{why}");
                        if let Some(s) = self.sessions.get(&host) {
                            let _ = s.to_execd.send(ToExecd::KillJob {
                                job_id: *job_id,
                                task_id: *task_id,
                            });
                        }
                    }
                }
                // A task deleted while its execd could not hear it, which the execd does
                // not run: either its report comes next (the execd sends its reports
                // after this list) or its start order was lost too. The kill is sent
                // again: an execd that never started the task reports it killed, one
                // holding its report ignores it.
                for job in self.state.input.jobs.values() {
                    for (task, t) in job.tasks.placed() {
                        if let TaskState::Deleting { host: h, .. } = t {
                            if h == &host && !running.contains(&(job.id, task)) {
                                info!(job = %job.id, task = %task, host = %host, "asking again for the end of a task deleted while its execd was away");
                                if let Some(s) = self.sessions.get(&host) {
                                    let _ = s.to_execd.send(ToExecd::KillJob {
                                        job_id: job.id,
                                        task_id: task,
                                    });
                                }
                            }
                        }
                    }
                }
                self.state.live.started.extend(running.iter().copied());
                // Orders lost in a crash or a cut are sent again; the execd ignores a
                // task it already has (finished ones report themselves next).
                let mut resend = Vec::new();
                for job in self.state.input.jobs.values() {
                    for (task, t) in job.tasks.placed() {
                        if let TaskState::Running {
                            host: h,
                            queue,
                            grants,
                            pe,
                            ..
                        } = t
                        {
                            if h == &host && !running.contains(&(job.id, task)) {
                                resend.push(crate::core::sched::Dispatch {
                                    job_id: job.id,
                                    task_id: task,
                                    queue: queue.clone(),
                                    host: h.clone(),
                                    grants: grants.clone(),
                                    pe: pe.clone(),
                                });
                            }
                        }
                    }
                }
                for d in resend {
                    if let (Some(start), Some(s)) = (self.job_start(&d), self.sessions.get(&host)) {
                        let _ = s.to_execd.send(ToExecd::StartJob(Box::new(start)));
                    }
                }
                self.state_changed();
            }
        }
    }
}
