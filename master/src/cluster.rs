//! The Cluster actor: the single writer of the cell's state. Requests are decided by the
//! pure functions in [`crate::state`]; a change is committed to the spool before it is
//! applied and acknowledged.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use gantry_common::exechost::valid_hostname;
use gantry_net::cell::{unix_now, JoinToken, MasterPaths};
use gantry_net::tls::{certs_from_pem, fingerprint, Ca};
use gantry_proto::{
    Caller, FromMaster, JobScript, LoadValue, Refusal, RefusalKind, ShepherdFailure, ToExecd,
    ToMaster,
};
use tokio::sync::mpsc::UnboundedSender;
use tracing::{error, info, warn};

use crate::jobs::TaskState;
use crate::sched::{Decisions, Time, Trigger};
use crate::state::{ClusterState, Object, Op, Reply};
use crate::store::Store;

/// A connected execd.
struct Session {
    id: u64,
    conn: quinn::Connection,
    to_execd: UnboundedSender<ToExecd>,
}

pub struct Cluster {
    state: ClusterState,
    store: Store,
    paths: MasterPaths,
    ca: Ca,
    sessions: HashMap<String, Session>,
    /// Hosts already logged as unreachable (so the log says it once).
    unreachable: HashSet<String>,
    /// Tasks whose execd confirmed the start (`r` rather than `t`).
    started: HashSet<(u64, u32)>,
    /// `qsub -sync y` clients waiting for a job's end.
    waiters: HashMap<u64, Vec<tokio::sync::oneshot::Sender<FromMaster>>>,
    /// A scheduling pass is queued behind the messages already waiting, so that a burst
    /// of submissions or completions is scheduled (and its dispatches committed) at once.
    schedule_queued: bool,
    /// What changed since the last cycle: whether one is due.
    trigger: Trigger,
    /// The scheduler's thread (none until the actor has started, or if it could not be
    /// started: then cycles run on the actor's thread).
    cycle_thread: Option<crate::cycle_thread::CycleThread>,
    /// A cycle runs on the scheduler's thread; its decisions come back as [`CycleDone`].
    cycle_in_flight: bool,
    /// Task reports waiting to be recorded together (one commit per burst).
    pending_reports: Vec<(String, gantry_proto::JobReport)>,
    flush_queued: bool,
    /// The last `finished_jobs` jobs that ended, for `qstat -s z` (in memory, as SGE).
    finished: std::collections::VecDeque<gantry_proto::JobView>,
    /// When `suspend_thresholds` last stopped or continued a job in a queue instance.
    threshold_acted: HashMap<(String, String), i64>,
    unix_groups: crate::names::UnixGroups,
    /// This actor, to queue work for a turn of its own (a spool checkpoint).
    me: Option<Addr<Cluster>>,
    checkpoint_queued: bool,
    /// Job scripts, in the spool beside the database (jobs hold none in memory).
    scripts: crate::scripts::JobScripts,
}

/// How long a due checkpoint waits (the journal is durable meanwhile).
const CHECKPOINT_DELAY: Duration = Duration::from_millis(100);

/// Move the journaled changes into the database.
#[derive(Message)]
#[rtype(result = "()")]
struct CheckpointSpool;

impl Handler<CheckpointSpool> for Cluster {
    type Result = ();

    fn handle(&mut self, _: CheckpointSpool, ctx: &mut Self::Context) {
        // A moment later: requests that arrived while the change that made it due was
        // being applied (a 200,000-attribute complex takes some 80 ms) go first. The
        // database's transaction then runs on a thread of its own.
        ctx.run_later(CHECKPOINT_DELAY, |act, _| {
            let me = act.me.clone();
            let started = act.store.checkpoint_due()
                && act.store.start_checkpoint(move || {
                    if let Some(me) = me {
                        me.do_send(CheckpointDone);
                    }
                });
            // Until it is done, no other is queued.
            act.checkpoint_queued = started;
        });
    }
}

/// The spool checkpoint's thread has ended its transaction.
#[derive(Message)]
#[rtype(result = "()")]
struct CheckpointDone;

impl Handler<CheckpointDone> for Cluster {
    type Result = ();

    fn handle(&mut self, _: CheckpointDone, _: &mut Self::Context) {
        if let Err(e) = self.store.finish_checkpoint() {
            warn!("spool checkpoint failed (the journal keeps the changes): {e}");
        }
        self.checkpoint_queued = false;
        self.queue_checkpoint();
    }
}

/// Record the task reports received so far.
#[derive(Message)]
#[rtype(result = "()")]
struct FlushReports;

impl Handler<FlushReports> for Cluster {
    type Result = ();

    fn handle(&mut self, _: FlushReports, ctx: &mut Self::Context) {
        self.flush_queued = false;
        let batch = std::mem::take(&mut self.pending_reports);
        if let Err(batch) = self.finish_batch(batch) {
            // The spool refused the write: keep the reports (unacknowledged) and try again
            // in a second, so that no completion is lost while the master runs.
            self.pending_reports.extend(batch);
            self.flush_queued = true;
            ctx.run_later(Duration::from_secs(1), |_, ctx| {
                ctx.address().do_send(FlushReports);
            });
        }
        self.state_changed();
    }
}

/// Run a scheduling pass (queued by [`Cluster::state_changed`] and the timer).
#[derive(Message)]
#[rtype(result = "()")]
struct RunSchedule;

impl Handler<RunSchedule> for Cluster {
    type Result = ();

    fn handle(&mut self, _: RunSchedule, _: &mut Self::Context) {
        tracing::debug!("scheduling pass");
        self.schedule_queued = false;
        self.schedule();
    }
}

/// A cycle ended on the scheduler's thread.
#[derive(Message)]
#[rtype(result = "()")]
struct CycleDone(crate::cycle_thread::CycleOutcome);

impl Handler<CycleDone> for Cluster {
    type Result = ();

    fn handle(&mut self, msg: CycleDone, _: &mut Self::Context) {
        self.cycle_done(msg.0);
    }
}

impl Cluster {
    pub fn new(
        store: Store,
        paths: MasterPaths,
        ca: Ca,
        master_host: &str,
    ) -> Result<Cluster, String> {
        let mut state = ClusterState {
            master_host: master_host.to_string(),
            ..ClusterState::default()
        };
        let ops: Vec<Op> = store
            .load()
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(Op::Put)
            .collect();
        state.apply_all(&ops);
        state.next_job_id = store.next_job_id().map_err(|e| e.to_string())?;
        let scripts_dir = paths.home.join("job_scripts");
        let scripts = crate::scripts::JobScripts::open(&scripts_dir)
            .map_err(|e| format!("{}: {e}", scripts_dir.display()))?;
        scripts.remove_partial_writes();
        // A job spooled with its script inside (a cell from before job_scripts): the
        // script moves out, so that memory holds none.
        for job in Arc::make_mut(&mut state.jobs).values_mut() {
            let job = Arc::make_mut(job);
            if let JobScript::Script { contents, .. } = &mut job.spec.script {
                if !contents.is_empty() {
                    scripts
                        .put(job.id, contents)
                        .map_err(|e| format!("{}: {e}", scripts_dir.display()))?;
                    *contents = Vec::new();
                }
            }
        }
        for id in scripts.jobs() {
            if !state.jobs.contains_key(&id) {
                let _ = scripts.remove(id);
            }
        }
        Ok(Cluster {
            state,
            store,
            paths,
            ca,

            sessions: HashMap::new(),
            unreachable: HashSet::new(),
            started: HashSet::new(),
            waiters: HashMap::new(),
            schedule_queued: false,
            trigger: Trigger::default(),
            cycle_thread: None,
            cycle_in_flight: false,
            pending_reports: Vec::new(),
            flush_queued: false,
            finished: std::collections::VecDeque::new(),
            threshold_acted: HashMap::new(),
            unix_groups: Default::default(),
            me: None,
            checkpoint_queued: false,
            scripts,
        })
    }

    /// The master's one clock for the scheduler and for host liveness: the time of day,
    /// as SGE's qmaster keeps it.
    fn now(&self) -> Time {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        Time::from_millis(ms)
    }

    /// An execd reported a task of job `id`: a job id the spool may have lost (a damaged
    /// journal recovered without it) is never handed out again.
    fn job_id_seen(&mut self, id: u64) {
        if id >= self.state.next_job_id {
            warn!(
                job = id,
                "an execd reports a job id the spool does not know; job ids continue above it"
            );
            if self.commit(&[Op::NextJobId(id + 1)]).is_err() {
                // Not durable: at least this run of the master does not reuse it.
                self.state.next_job_id = id + 1;
            }
        }
    }

    /// The order for a dispatched task, with the job script read from the spool.
    fn job_start(&self, d: &crate::sched::Dispatch) -> Option<gantry_proto::JobStart> {
        let mut start = self.state.job_start(d)?;
        if let JobScript::Script { contents, .. } = &mut start.spec.script {
            match self.scripts.get(d.job_id) {
                Ok(script) => *contents = script,
                Err(e) => {
                    error!(
                        job = d.job_id,
                        task = d.task_id,
                        "the job script is missing from the spool ({e}): the task is not sent"
                    );
                    return None;
                }
            }
        }
        Some(start)
    }

    /// A due checkpoint waits for a turn of its own: the request that made it due is
    /// answered first, and requests already waiting go before it.
    fn queue_checkpoint(&mut self) {
        if self.store.checkpoint_due() && !self.checkpoint_queued {
            if let Some(me) = &self.me {
                self.checkpoint_queued = true;
                me.do_send(CheckpointSpool);
            }
        }
    }

    /// Persist, then apply, then act on what changed.
    fn commit(&mut self, ops: &[Op]) -> Result<(), Refusal> {
        let started = Instant::now();
        let result = self.store.commit(ops);
        tracing::debug!(
            ops = ops.len(),
            micros = started.elapsed().as_micros() as u64,
            "spool commit"
        );
        if let Err(e) = result {
            error!("could not write the spool: {e}");
            return Err(Refusal {
                kind: RefusalKind::Internal,
                message: format!("error: the master could not write its spool: {e}"),
            });
        }
        self.state.apply_all(ops);
        self.trigger.state_changed = true;
        self.queue_checkpoint();
        for op in ops {
            if let Some(id) = match op {
                Op::Delete(key) => crate::state::job_of_key(key),
                _ => None,
            } {
                if let Err(e) = self.scripts.remove(id) {
                    warn!(
                        job = id,
                        "cannot remove the job's script from the spool: {e}"
                    );
                }
            }
        }
        let config_changed = ops
            .iter()
            .any(|op| matches!(op, Op::Put(crate::state::Object::Config(_))));
        if config_changed {
            let settings = ToExecd::Settings {
                load_report_time_secs: self.state.load_report_time(),
            };
            for s in self.sessions.values() {
                let _ = s.to_execd.send(settings.clone());
            }
        }
        // Execds whose host lost its certificate (deleted) are disconnected.
        let hosts_with_certs: HashSet<&String> = self.state.host_certs.values().collect();
        let gone: Vec<String> = self
            .sessions
            .keys()
            .filter(|h| !hosts_with_certs.contains(h))
            .cloned()
            .collect();
        for host in gone {
            if let Some(s) = self.sessions.remove(&host) {
                info!(host = %host, "exec host deleted: closing its execd's connection");
                s.conn.close(CLOSE_DELETED.into(), b"exec host deleted");
            }
            Arc::make_mut(&mut self.state.runtime).remove(&host);
        }
        Ok(())
    }

    fn unix_now() -> i64 {
        unix_now() as i64
    }

    /// The cluster state changed: schedule after the messages already queued have been
    /// handled, so that answers go out first and a burst is scheduled in one pass. Every
    /// trigger of a cycle comes through here or through the timer, and the cycle runs
    /// only if [`gantry_sched::ClusterView::cycle_due`] says so.
    fn state_changed(&mut self) {
        self.trigger.state_changed = true;
        self.queue_cycle();
    }

    fn queue_cycle(&mut self) {
        if !self.schedule_queued {
            if let Some(me) = &self.me {
                self.schedule_queued = true;
                // Through the mailbox (ctx.notify would not wake the actor by itself).
                me.do_send(RunSchedule);
            }
        }
    }

    /// Run the scheduler if a cycle is due: on the scheduler's thread, on an image of
    /// the state, while this actor goes on answering; [`Cluster::cycle_done`] commits
    /// what it decides.
    fn schedule(&mut self) {
        if self.cycle_in_flight {
            // The trigger keeps what changes meanwhile; the end of that cycle looks.
            return;
        }
        if self.sessions.is_empty() {
            // No execd to start anything on: a cycle could only find nothing, at a cost
            // that grows with the pending jobs (paid after every submission).
            return;
        }
        let at = self.now();
        if !self.state.view().cycle_due(&self.trigger, at) {
            // Nothing waits, or nothing a cycle reads has changed since the last one:
            // it could only decide what the last one did.
            return;
        }
        self.trigger = Trigger::ran(at);
        let request = crate::cycle_thread::CycleRequest {
            image: self.state.image(),
            generation: self.state.config_generation,
            connected: self.sessions.keys().cloned().collect(),
            at,
        };
        let request = match &self.cycle_thread {
            Some(thread) => match thread.run(request) {
                Ok(()) => {
                    self.cycle_in_flight = true;
                    return;
                }
                Err(request) => {
                    error!("the scheduler's thread is gone: cycles run on the master's thread");
                    self.cycle_thread = None;
                    *request
                }
            },
            None => request,
        };
        self.cycle_done(request.run());
    }

    /// A cycle's decisions: checked against the state now, persisted, then sent.
    fn cycle_done(&mut self, outcome: crate::cycle_thread::CycleOutcome) {
        self.cycle_in_flight = false;
        let crate::cycle_thread::CycleOutcome {
            request,
            decisions:
                Decisions {
                    dispatches,
                    quota_counters,
                },
            took,
        } = outcome;
        let connected: HashSet<String> = self.sessions.keys().cloned().collect();
        let checked =
            self.state
                .revalidate(&request.image, request.generation, dispatches, &connected);
        // The image no longer holds the state's parts: changing them costs no copy.
        drop(request);
        Arc::make_mut(&mut self.state.quota_book).note_cycle_counters(quota_counters);
        tracing::debug!(
            micros = took.as_micros() as u64,
            kept = checked.kept.len(),
            dropped = checked.dropped,
            "cycle done"
        );
        if checked.dropped > 0 {
            // The jobs it dropped are decided again on the state as it is now.
            self.trigger.state_changed = true;
        }
        let decisions = checked.kept;
        if !decisions.is_empty() {
            self.dispatch(&decisions);
        }
        if self.trigger.state_changed || self.trigger.loads_changed {
            self.queue_cycle();
        }
    }

    /// Commit the dispatches, then send them to their execds.
    fn dispatch(&mut self, decisions: &[crate::sched::Dispatch]) {
        let now = Self::unix_now();
        let mut changed: HashMap<u64, crate::jobs::Job> = HashMap::new();
        for d in decisions {
            let Some(job) = self.state.jobs.get(&d.job_id) else {
                continue;
            };
            let job = changed
                .entry(d.job_id)
                .or_insert_with(|| crate::jobs::Job::clone(job));
            job.tasks.insert(
                d.task_id,
                TaskState::Running {
                    host: d.host.clone(),
                    queue: d.queue.clone(),
                    start_time: now,
                    grants: d.grants.clone(),
                    pe: d.pe.clone(),
                },
            );
        }
        let ops: Vec<Op> = changed
            .into_values()
            .map(|j| Op::Put(Object::Job(j)))
            .collect();
        // The cycle decided these changes itself: they do not call for another.
        let changed_meanwhile = self.trigger.state_changed;
        if self.commit(&ops).is_err() {
            return;
        }
        self.trigger.state_changed = changed_meanwhile;
        tracing::debug!(n = decisions.len(), "dispatching");
        for d in decisions {
            if let (Some(start), Some(session)) = (self.job_start(d), self.sessions.get(&d.host)) {
                let _ = session.to_execd.send(ToExecd::StartJob(Box::new(start)));
            }
        }
    }

    fn submit(
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
            Self::unix_now(),
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

    fn delete_jobs(
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
        let mut messages = Vec::new();
        let mut ops = Vec::new();
        let mut kills = Vec::new();
        let mut failed = false;
        for (id, range) in targets {
            let Some(job) = self.state.jobs.get(&id) else {
                messages.push(format!("denied: job \"{id}\" does not exist"));
                failed = true;
                continue;
            };
            if job.owner.user != caller.user && !manager {
                messages.push(self.state.others_job_refusal(
                    caller,
                    format!(
                        "{} - you do not have the necessary privileges to delete the job \"{id}\"",
                        caller.user
                    ),
                ));
                failed = true;
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
                        messages.push(format!("{user} has deleted job-array task {id}.{t}"))
                    }
                    _ => messages.push(format!(
                        "{user} has deleted job-array tasks {} of job {id}",
                        deleted_tasks.ranges_text()
                    )),
                }
                for t in &registered_tasks {
                    messages.push(format!(
                        "{user} has registered the job-array task {id}.{t} for deletion"
                    ));
                }
            } else if !registered_tasks.is_empty() {
                messages.push(format!(
                    "{} has registered the job {id} for deletion",
                    caller.user
                ));
            } else {
                messages.push(format!("{} has deleted job {id}", caller.user));
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
        if failed && ops.is_empty() {
            FromMaster::Refused(Refusal {
                kind: RefusalKind::NotFound,
                message: messages.join("\n"),
            })
        } else {
            FromMaster::Done { messages }
        }
    }

    fn alter_jobs(
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
    fn apply_suspend_thresholds(&mut self) {
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
    fn suspend_queues(&mut self, caller: &Caller, targets: &[String], suspend: bool) -> FromMaster {
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

    fn suspend_jobs(&mut self, caller: &Caller, ids: &[String], suspend: bool) -> FromMaster {
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

    fn clear_job_errors(&mut self, caller: &Caller, ids: &[String]) -> FromMaster {
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

    /// A job left without running (deleted while pending): wake `-sync` waiters.
    fn job_ended_without_report(&mut self, id: u64) {
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
    fn job_outcome(&self, id: u64) -> Option<FromMaster> {
        let records = self.store.accounting(|r| r.job_id == id).ok()?;
        let worst = records.iter().max_by_key(|r| {
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

    /// Record a batch of task reports in one spool commit, then acknowledge them. A
    /// report for a task already accounted (repeated after a reconnect) is only
    /// acknowledged.
    fn finish_batch(
        &mut self,
        batch: Vec<(String, gantry_proto::JobReport)>,
    ) -> Result<(), Vec<(String, gantry_proto::JobReport)>> {
        let kept = batch.clone();
        let mut ops = Vec::new();
        let mut changed: HashMap<u64, crate::jobs::Job> = HashMap::new();
        let mut acks: Vec<(String, u64, u32)> = Vec::new();
        let mut recorded: Vec<(u64, u32)> = Vec::new();
        let mut seen: HashSet<(u64, u32)> = HashSet::new();
        let mut errored_now: Option<HashSet<(String, String)>> = None;
        for (host, report) in batch {
            let key = (report.job_id, report.task_id);
            tracing::debug!(job = key.0, task = key.1, host = %host, "task report");
            acks.push((host.clone(), key.0, key.1));
            if !seen.insert(key) {
                continue;
            }
            let known = changed
                .get(&key.0)
                .or_else(|| self.state.jobs.get(&key.0).map(|j| &**j))
                .and_then(|j| j.tasks.get(key.1))
                .is_some_and(|t| {
                    matches!(t, TaskState::Running { .. } | TaskState::Deleting { .. })
                });
            if !known {
                // Removed with qdel -f while the host was away: accounted now.
                if let Some(waiting) = self.state.forced_away.get(&key) {
                    let mut record = waiting.clone();
                    record.report = report.clone();
                    ops.push(Op::Account(Box::new(record)));
                    ops.push(Op::Delete(crate::state::forced_key(key.0, key.1)));
                    recorded.push(key);
                    continue;
                }
                let task = if self.state.jobs.get(&key.0).is_some_and(|j| j.is_array()) {
                    key.1
                } else {
                    0
                };
                if !matches!(self.store.has_accounting(key.0, task), Ok(true)) {
                    warn!(job = key.0, task = key.1, host = %host, "report for a task the master does not know; acknowledged");
                }
                continue;
            }
            let Some(current) = self.state.jobs.get(&key.0) else {
                continue;
            };
            let job = changed
                .entry(key.0)
                .or_insert_with(|| crate::jobs::Job::clone(current));
            // A job that could not even be started (no working directory, no output
            // file, no shell) waits in error state, as SGE's Eqw, unless it was deleted.
            // The host could not start it (unknown user there, no TMPDIR): the queue
            // instance goes into error state `E` and the task back to pending, as SGE.
            let failure = report.shepherd_failure();
            if failure == Some(ShepherdFailure::BeforeJob) {
                if let Some(TaskState::Running { host, queue, .. }) = job.tasks.get(key.1) {
                    warn!(
                        job = key.0,
                        task = key.1,
                        queue = %queue,
                        host = %host,
                        "queue instance set to error state: {}",
                        report.failure
                    );
                    let mut errored = errored_now
                        .take()
                        .unwrap_or_else(|| (*self.state.errored).clone());
                    errored.insert((queue.clone(), host.clone()));
                    errored_now = Some(errored);
                    job.tasks.insert(key.1, TaskState::Pending);
                    recorded.push(key);
                    continue;
                }
            }
            let setup_failure = failure.is_some_and(ShepherdFailure::is_job_error);
            if setup_failure && matches!(job.tasks.get(key.1), Some(TaskState::Running { .. })) {
                info!(
                    job = key.0,
                    task = key.1,
                    "task could not be started: {}",
                    report.failure
                );
                job.tasks.insert(
                    key.1,
                    TaskState::Error {
                        reason: report.failure.clone(),
                    },
                );
                recorded.push(key);
                continue;
            }
            let Some(record) = self.state.accounting_record(&report) else {
                continue;
            };
            ops.push(Op::Account(Box::new(record)));
            job.tasks.remove(key.1);
            recorded.push(key);
        }
        if let Some(errored) = errored_now {
            let mut list: Vec<(String, String)> = errored.into_iter().collect();
            list.sort();
            ops.push(Op::Put(Object::ErrorQueues(list)));
        }
        let mut done_jobs = Vec::new();
        let mut zombies = Vec::new();
        for (id, job) in changed {
            if job.tasks.is_empty() {
                ops.push(Op::Delete(crate::state::job_key(id)));
                done_jobs.push(id);
                zombies.push(crate::jobs::zombie_view(&job, Self::unix_now()));
            } else {
                ops.push(Op::Put(Object::Job(job)));
            }
        }
        if self.commit(&ops).is_err() {
            return Err(kept); // not acknowledged: tried again
        }
        for key in recorded {
            self.started.remove(&key);
        }
        let keep: usize = self
            .state
            .global()
            .get("finished_jobs")
            .and_then(|v| v.parse().ok())
            .unwrap_or(100);
        for z in zombies {
            self.finished.push_back(z);
        }
        while self.finished.len() > keep {
            self.finished.pop_front();
        }
        for (host, job_id, task_id) in acks {
            if let Some(s) = self.sessions.get(&host) {
                let _ = s.to_execd.send(ToExecd::ReportAck { job_id, task_id });
            }
        }
        for id in done_jobs {
            if let Some(waiters) = self.waiters.remove(&id) {
                let outcome = self.job_outcome(id);
                for w in waiters {
                    if let Some(o) = outcome.clone() {
                        let _ = w.send(o);
                    }
                }
            }
        }
        Ok(())
    }

    fn check_reachability(&mut self) {
        let now = self.now();
        let hosts: Vec<String> = self.state.exechosts.keys().cloned().collect();
        for host in hosts {
            let heard = self
                .state
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
    }
}

/// QUIC application close codes.
pub const CLOSE_DELETED: u32 = 1;
pub const CLOSE_REPLACED: u32 = 2;
pub const CLOSE_REFUSED: u32 = 3;
pub const CLOSE_SHUTDOWN: u32 = 4;

impl Actor for Cluster {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.me = Some(ctx.address());
        let me = ctx.address();
        match crate::cycle_thread::CycleThread::start(move |outcome| me.do_send(CycleDone(outcome)))
        {
            Ok(thread) => self.cycle_thread = Some(thread),
            Err(e) => error!(
                "cannot start the scheduler's thread ({e}): cycles run on the master's thread"
            ),
        }
        ctx.run_interval(Duration::from_secs(1), |act, _| {
            act.check_reachability();
            act.apply_suspend_thresholds();
            act.queue_cycle();
        });
        info!(
            hosts = self.state.exechosts.len(),
            "cluster state loaded from the spool"
        );
    }
}

/// `qstat -u`'s user list with `$user`, SGE's placeholder for the current user, replaced
/// by the caller's name.
fn users_with_caller(users: &[String], caller: &str) -> Vec<String> {
    users
        .iter()
        .map(|u| {
            if u == "$user" {
                caller.to_string()
            } else {
                u.clone()
            }
        })
        .collect()
}

/// A client request with the caller established by the endpoint.
#[derive(Message)]
#[rtype(result = "FromMaster")]
pub struct ClientCall {
    pub caller: Caller,
    pub request: ToMaster,
}

impl Handler<ClientCall> for Cluster {
    type Result = MessageResult<ClientCall>;

    fn handle(&mut self, msg: ClientCall, _: &mut Self::Context) -> Self::Result {
        // A submission is taken by value: its script (megabytes, maybe) is moved to the
        // spool, never copied.
        let msg = match msg.request {
            ToMaster::Submit { spec, verify } => {
                let reply = self.submit(&msg.caller, *spec, verify);
                self.state_changed();
                return MessageResult(reply);
            }
            request => ClientCall {
                caller: msg.caller,
                request,
            },
        };
        match &msg.request {
            ToMaster::ShowJobs { users } => {
                let users = users_with_caller(users, &msg.caller.user);
                return MessageResult(FromMaster::Jobs(
                    self.state.job_views(&users, &self.started),
                ));
            }
            ToMaster::JobDetails { ids } => {
                let connected: HashSet<String> = self.sessions.keys().cloned().collect();
                let wanted: Vec<u64> = ids
                    .iter()
                    .filter_map(|t| crate::jobs::parse_job_ref(t).map(|r| r.0))
                    .collect();
                let mut details = Vec::new();
                for id in &wanted {
                    let Some(job) = self.state.jobs.get(id) else {
                        return MessageResult(FromMaster::Refused(Refusal {
                            kind: RefusalKind::NotFound,
                            message: format!("Following jobs do not exist: \n{id}"),
                        }));
                    };
                    let group = crate::jobs::group_name(job);
                    details.push(gantry_proto::JobDetail {
                        job_id: job.id,
                        spec: job.spec.clone(),
                        owner: job.owner.clone(),
                        group,
                        submit_time: job.submit_time,
                        reasons: self.state.explain(job, &connected, self.now()),
                        errors: job
                            .tasks
                            .placed()
                            .filter_map(|(t, s)| match s {
                                TaskState::Error { reason } => Some((t, reason.clone())),
                                _ => None,
                            })
                            .collect(),
                    });
                }
                return MessageResult(FromMaster::JobDetails(details));
            }
            ToMaster::ShowQuotas(query) => {
                let rows = self.state.quota_rows(query, &msg.caller.user, &|user| {
                    self.unix_groups.of_name(user)
                });
                return MessageResult(FromMaster::Quotas(rows));
            }
            ToMaster::SchedulingSummary => {
                let connected: HashSet<String> = self.sessions.keys().cloned().collect();
                let blocked = self.state.quota_blocked_jobs(&connected, self.now());
                let summary = if blocked.is_empty() {
                    Vec::new()
                } else {
                    vec![(
                        "Jobs dropped because of exceeding limit in rule".to_string(),
                        blocked,
                    )]
                };
                return MessageResult(FromMaster::SchedulingSummary(summary));
            }
            ToMaster::ShowFinishedJobs { users } => {
                let users = users_with_caller(users, &msg.caller.user);
                let views = self
                    .finished
                    .iter()
                    .filter(|v| users.is_empty() || users.iter().any(|u| u == "*" || u == &v.owner))
                    .cloned()
                    .collect();
                return MessageResult(FromMaster::Jobs(views));
            }
            ToMaster::SuspendJobs { ids, suspend } => {
                return MessageResult(self.suspend_jobs(&msg.caller, ids, *suspend));
            }
            ToMaster::ChangeQueueInstances { targets, change }
                if *change != gantry_proto::QueueChange::ClearError =>
            {
                let suspend = *change == gantry_proto::QueueChange::Suspend;
                let reply = self.suspend_queues(&msg.caller, targets, suspend);
                self.state_changed();
                return MessageResult(reply);
            }
            ToMaster::ClearJobErrors { ids } => {
                let reply = self.clear_job_errors(&msg.caller, ids);
                self.state_changed();
                return MessageResult(reply);
            }
            ToMaster::AlterJobs { ids, changes } => {
                let reply = self.alter_jobs(&msg.caller, ids, changes);
                self.state_changed();
                return MessageResult(reply);
            }
            ToMaster::DeleteJobs { ids, users, force } => {
                return MessageResult(self.delete_jobs(&msg.caller, ids, users, *force))
            }
            ToMaster::Accounting { job } => {
                let keep = |r: &gantry_proto::AccountingRecord| match job {
                    None => true,
                    Some(j) => match j.parse::<u64>() {
                        Ok(id) => r.job_id == id,
                        Err(_) => &r.job_name == j,
                    },
                };
                return MessageResult(match self.store.accounting(keep) {
                    Ok(records) => FromMaster::Accounting(records),
                    Err(e) => FromMaster::Refused(Refusal {
                        kind: RefusalKind::Internal,
                        message: format!("error: reading the accounting: {e}"),
                    }),
                });
            }
            _ => {}
        }
        let now = self.now();
        let decided = self.state.handle(&msg.caller, &msg.request, now);
        MessageResult(self.decided(&msg.caller, decided))
    }
}

impl Cluster {
    /// Answer a decided request: commit a change (and log what it did), or pass on an
    /// answer or a refusal.
    fn decided(&mut self, caller: &Caller, decided: Result<Reply, Refusal>) -> FromMaster {
        match decided {
            Ok(Reply::Answer(a)) => a,
            Ok(Reply::Change(change)) => match self.commit(&change.ops) {
                Ok(()) => {
                    self.state_changed();
                    // A list of 200,000 attributes changes 200,000 things: the log
                    // names the first few and counts the rest.
                    const LOGGED: usize = 10;
                    let mut logged =
                        change.messages[..change.messages.len().min(LOGGED)].join("; ");
                    if change.messages.len() > LOGGED {
                        logged.push_str(&format!(
                            "; and {} more changes",
                            change.messages.len() - LOGGED
                        ));
                    }
                    info!(user = %caller.user, host = %caller.host, "{logged}");
                    FromMaster::Done {
                        messages: change.messages,
                    }
                }
                Err(r) => FromMaster::Refused(r),
            },
            Err(r) => FromMaster::Refused(r),
        }
    }
}

/// An execd asks to join with a token.
#[derive(Message)]
#[rtype(result = "Result<ToExecd, String>")]
pub struct Join {
    pub token: String,
    pub hostname: String,
    pub public_key: Vec<u8>,
    pub peer: SocketAddr,
    /// The join came from one of the master's own addresses.
    pub from_masters_machine: bool,
}

impl Handler<Join> for Cluster {
    type Result = Result<ToExecd, String>;

    fn handle(&mut self, msg: Join, _: &mut Self::Context) -> Self::Result {
        let presented = JoinToken::parse(&msg.token).map_err(|e| e.to_string())?;
        let current = crate::cell::read_token(&self.paths)
            .map_err(|e| format!("the master cannot read its join token: {e}"))?;
        if !current.matches(&presented) {
            return Err("the join token is not valid (wrong or rotated)".into());
        }
        if current.expires_at <= unix_now() {
            return Err("the join token has expired (rotate it with gantry-master token)".into());
        }
        if !valid_hostname(&msg.hostname) {
            return Err(format!("invalid host name \"{}\"", msg.hostname));
        }
        // Before a certificate is issued: a name holds one certificate, and the master's
        // own name is claimed only from its own machine.
        if let Err(reason) = self
            .state
            .join_check(&msg.hostname, msg.from_masters_machine)
        {
            warn!(host = %msg.hostname, peer = %msg.peer, "join refused: {reason}");
            return Err(reason);
        }
        let cert_pem = self
            .ca
            .issue_host(&msg.hostname, &msg.public_key)
            .map_err(|e| e.to_string())?;
        let der = certs_from_pem(&cert_pem)
            .map_err(|e| e.to_string())?
            .into_iter()
            .next()
            .ok_or("no certificate issued")?;
        let fp = hex::encode(fingerprint(der.as_ref()));
        let change = self.state.join(&msg.hostname, &fp);
        self.commit(&change.ops).map_err(|r| r.message)?;
        info!(host = %msg.hostname, peer = %msg.peer, "execd joined the cell; host certificate issued");
        Ok(ToExecd::Joined {
            hostname: msg.hostname,
            host_cert_pem: cert_pem,
            ca_cert_pem: self.ca.cert_pem.clone(),
        })
    }
}

/// An execd with a host certificate connected.
#[derive(Message)]
#[rtype(result = "Result<(String, u64), String>")]
pub struct Register {
    pub fingerprint: String,
    pub claimed_hostname: String,
    pub session_id: u64,
    pub conn: quinn::Connection,
    pub to_execd: UnboundedSender<ToExecd>,
}

impl Handler<Register> for Cluster {
    type Result = Result<(String, u64), String>;

    fn handle(&mut self, msg: Register, _: &mut Self::Context) -> Self::Result {
        let Some(host) = self.state.host_certs.get(&msg.fingerprint).cloned() else {
            return Err("unknown host certificate (the host was deleted or its certificate replaced); join again with a token".into());
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
            },
        ) {
            old.conn
                .close(CLOSE_REPLACED.into(), b"replaced by a new connection");
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
        if !self.state.exechosts.contains_key(&msg.host) {
            return;
        }
        let now = self.now();
        if let Some(change) = self.state.slots_for_new_host(&msg.host, &msg.values) {
            if self.commit(&change.ops).is_err() {
                return;
            }
        }
        let was_unreachable = self.unreachable.remove(&msg.host);
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

/// Close every execd connection (shutdown).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown;

impl Handler<Shutdown> for Cluster {
    type Result = ();

    fn handle(&mut self, _: Shutdown, _: &mut Self::Context) {
        for (_, s) in self.sessions.drain() {
            s.conn.close(CLOSE_SHUTDOWN.into(), b"master shutting down");
        }
        if let Err(e) = self.store.close() {
            warn!("spool checkpoint at shutdown failed (the journal keeps the changes): {e}");
        }
    }
}

/// `qsub -sync y`: answer now if the job has ended, else when it does.
#[derive(Message)]
#[rtype(result = "()")]
pub struct WaitJob {
    pub job_id: u64,
    pub reply: tokio::sync::oneshot::Sender<FromMaster>,
}

impl Handler<WaitJob> for Cluster {
    type Result = ();

    fn handle(&mut self, msg: WaitJob, _: &mut Self::Context) {
        if self.state.jobs.contains_key(&msg.job_id) {
            self.waiters.entry(msg.job_id).or_default().push(msg.reply);
            return;
        }
        let answer = self.job_outcome(msg.job_id).unwrap_or_else(|| {
            FromMaster::Refused(Refusal {
                kind: RefusalKind::NotFound,
                message: format!("denied: job \"{}\" does not exist", msg.job_id),
            })
        });
        let _ = msg.reply.send(answer);
    }
}

/// A client request, whatever its kind: waits are answered when the job ends.
pub async fn call(cluster: &Addr<Cluster>, caller: Caller, request: ToMaster) -> FromMaster {
    let gone = || {
        FromMaster::Refused(Refusal {
            kind: RefusalKind::Internal,
            message: "error: the master is shutting down".into(),
        })
    };
    if let ToMaster::WaitJob { job_id } = request {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if cluster.send(WaitJob { job_id, reply: tx }).await.is_err() {
            return gone();
        }
        return rx.await.unwrap_or_else(|_| gone());
    }
    let request = match request {
        ToMaster::ModifyObject {
            kind: gantry_proto::ObjectKind::Complex,
            text,
        } if text.len() > LARGE_EDIT => {
            return replace_complexes_off_thread(cluster, caller, text)
                .await
                .unwrap_or_else(gone)
        }
        other => other,
    };
    cluster
        .send(ClientCall { caller, request })
        .await
        .unwrap_or_else(|_| gone())
}

/// A complex file larger than this is read and checked on a blocking thread, so that
/// the thread answering clients (and the Cluster actor) is not held by it.
const LARGE_EDIT: usize = 256 << 10;

/// `qconf -Mc` with a large file: read and check the list off the actor's thread, then
/// let the actor check what depends on its state (attributes in use) and commit.
async fn replace_complexes_off_thread(
    cluster: &Addr<Cluster>,
    caller: Caller,
    text: String,
) -> Option<FromMaster> {
    let current = match cluster
        .send(ComplexForEdit {
            caller: caller.clone(),
        })
        .await
        .ok()?
    {
        Ok(c) => c,
        Err(r) => return Some(FromMaster::Refused(r)),
    };
    let who = format!("{}@{}", caller.user, caller.host);
    let checked = tokio::task::spawn_blocking(move || {
        let list = gantry_common::complex::parse_complexes(&text).map_err(|e| e.to_string())?;
        gantry_common::complex::check_complexes(&list, &current)?;
        let messages = crate::admin::complex_changes(&who, &current, &list);
        let catalog = crate::sched::Catalog::new(&list);
        Ok::<_, String>(ReplaceComplexes {
            caller,
            list,
            messages,
            catalog,
            checked_against: current,
        })
    })
    .await
    .ok()?;
    match checked {
        Ok(prepared) => cluster.send(prepared).await.ok(),
        Err(message) => Some(FromMaster::Refused(crate::state::refuse(
            RefusalKind::Invalid,
            message,
        ))),
    }
}

/// The complex as it is, for a manager who replaces it.
#[derive(Message)]
#[rtype(result = "Result<Vec<gantry_proto::ComplexAttr>, Refusal>")]
struct ComplexForEdit {
    caller: Caller,
}

impl Handler<ComplexForEdit> for Cluster {
    type Result = Result<Vec<gantry_proto::ComplexAttr>, Refusal>;

    fn handle(&mut self, msg: ComplexForEdit, _: &mut Self::Context) -> Self::Result {
        self.state.manager_check(&msg.caller)?;
        Ok((*self.state.complexes).clone())
    }
}

/// A complex list read and checked (against `checked_against`) off this thread.
#[derive(Message)]
#[rtype(result = "FromMaster")]
struct ReplaceComplexes {
    caller: Caller,
    list: Vec<gantry_proto::ComplexAttr>,
    /// What replacing `checked_against` with `list` does.
    messages: Vec<String>,
    /// The catalog of `list`, for the quota book's rebuild.
    catalog: crate::sched::Catalog,
    checked_against: Vec<gantry_proto::ComplexAttr>,
}

impl Handler<ReplaceComplexes> for Cluster {
    type Result = MessageResult<ReplaceComplexes>;

    fn handle(&mut self, msg: ReplaceComplexes, _: &mut Self::Context) -> Self::Result {
        let ReplaceComplexes {
            caller,
            list,
            messages,
            catalog,
            checked_against,
        } = msg;
        let decided = self.state.manager_check(&caller).and_then(|()| {
            if *self.state.complexes == checked_against {
                self.state.prepare_catalog(catalog);
                self.state.replace_complexes_saying(list, messages)
            } else {
                // Someone changed the complex in the meantime: check against it here.
                gantry_common::complex::check_complexes(&list, &self.state.complexes)
                    .map_err(|m| crate::state::refuse(RefusalKind::Invalid, m))?;
                let who = format!("{}@{}", caller.user, caller.host);
                self.state.replace_complexes(&who, list)
            }
        });
        MessageResult(self.decided(&caller, decided))
    }
}

/// Messages about jobs from a connected execd.
#[derive(Message)]
#[rtype(result = "()")]
pub enum ExecdJobs {
    Started {
        host: String,
        job_id: u64,
        task_id: u32,
    },
    Finished {
        host: String,
        report: gantry_proto::JobReport,
    },
    Running {
        host: String,
        tasks: Vec<(u64, u32)>,
    },
}

impl Handler<ExecdJobs> for Cluster {
    type Result = ();

    fn handle(&mut self, msg: ExecdJobs, ctx: &mut Self::Context) {
        match msg {
            ExecdJobs::Started {
                job_id, task_id, ..
            } => {
                self.started.insert((job_id, task_id));
            }
            ExecdJobs::Finished { host, report } => {
                self.job_id_seen(report.job_id);
                self.pending_reports.push((host, report));
                if !self.flush_queued {
                    self.flush_queued = true;
                    ctx.address().do_send(FlushReports);
                }
            }
            ExecdJobs::Running { host, tasks } => {
                if let Some(highest) = tasks.iter().map(|(j, _)| *j).max() {
                    self.job_id_seen(highest);
                }
                let running: HashSet<(u64, u32)> = tasks.into_iter().collect();
                // Tasks the master no longer has (deleted with qdel -f while the execd was
                // away) are killed now.
                for (job_id, task_id) in &running {
                    let known = self
                        .state
                        .jobs
                        .get(job_id)
                        .is_some_and(|j| j.tasks.contains(*task_id));
                    if !known {
                        info!(job = job_id, task = task_id, host = %host, "killing a task the master no longer has");
                        if let Some(s) = self.sessions.get(&host) {
                            let _ = s.to_execd.send(ToExecd::KillJob {
                                job_id: *job_id,
                                task_id: *task_id,
                            });
                        }
                    }
                }
                self.started.extend(running.iter().copied());
                // Orders lost in a crash or a cut are sent again; the execd ignores a
                // task it already has (finished ones report themselves next).
                let mut resend = Vec::new();
                for job in self.state.jobs.values() {
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
                                resend.push(crate::sched::Dispatch {
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

/// Signal numbers sent to execds (Linux values, as the execds run Linux).
mod libc_signal {
    pub const SIGSTOP: i32 = nix::sys::signal::Signal::SIGSTOP as i32;
    pub const SIGCONT: i32 = nix::sys::signal::Signal::SIGCONT as i32;
}
