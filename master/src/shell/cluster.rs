//! The Cluster actor: the single writer of the cell's state. Requests are decided by the
//! pure functions in [`crate::core::state`]; a change is committed to the spool before it is
//! applied and acknowledged.

use gantry_proto::{FromMaster, JobId, JobScript, Refusal, RefusalKind, ToExecd};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use gantry_net::cell::MasterPaths;
use gantry_net::tls::Ca;
use tokio::sync::mpsc::UnboundedSender;
use tracing::{error, info, warn};

use crate::core::jobs::TaskState;
use crate::core::sched::{Decisions, Time, Trigger};
use crate::core::state::{ClusterState, Object, Op};
use crate::spool::store::Store;

mod clients;
mod execds;
mod jobs;
mod listings;
pub mod observe;
mod rate;

pub use clients::{
    call, carry_session, join_session, list_jobs_writing, Answer, ClientCall, WaitJob,
};
pub use execds::{ExecdJobs, Join, Load, Register, SessionEnded};
pub use listings::ListingError;

/// A connected execd.
struct Session {
    id: u64,
    /// The QUIC connection, to close it (none for an execd in the same process).
    conn: Option<quinn::Connection>,
    to_execd: UnboundedSender<ToExecd>,
    /// Told to shut down (`qconf -ke[j]`): no job is dispatched to it any more.
    stopping: bool,
}

impl Session {
    fn close(&self, code: u32, reason: &[u8]) {
        if let Some(conn) = &self.conn {
            conn.close(code.into(), reason);
        }
    }
}

/// The master's one clock: the time of day, or a time a test sets.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    manual: Option<Arc<std::sync::atomic::AtomicI64>>,
}

impl Clock {
    /// The time of day, as SGE's qmaster keeps it.
    pub fn system() -> Clock {
        Clock::default()
    }

    /// A clock that stands at `at` until it is set.
    pub fn manual(at: Time) -> Clock {
        Clock {
            manual: Some(Arc::new(std::sync::atomic::AtomicI64::new(at.millis()))),
        }
    }

    /// Move a manual clock (a system clock ignores it).
    pub fn set(&self, at: Time) {
        if let Some(ms) = &self.manual {
            ms.store(at.millis(), std::sync::atomic::Ordering::Relaxed);
        }
    }

    pub fn now(&self) -> Time {
        match &self.manual {
            Some(ms) => Time::from_millis(ms.load(std::sync::atomic::Ordering::Relaxed)),
            None => {
                let ms = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
                Time::from_millis(ms)
            }
        }
    }
}

pub struct Cluster {
    state: ClusterState,
    store: Store,
    paths: MasterPaths,
    ca: Ca,
    sessions: HashMap<String, Session>,
    /// Hosts already logged as unreachable (so the log says it once).
    unreachable: HashSet<String>,
    /// `qsub -sync y` clients waiting for a job's end.
    waiters: HashMap<JobId, Vec<tokio::sync::oneshot::Sender<FromMaster>>>,
    /// `qsub -now y` clients waiting for a job's start.
    start_waiters: HashMap<JobId, Vec<tokio::sync::oneshot::Sender<FromMaster>>>,
    /// A scheduling pass is queued behind the messages already waiting, so that a burst
    /// of submissions or completions is scheduled (and its dispatches committed) at once.
    schedule_queued: bool,
    /// What changed since the last cycle: whether one is due.
    trigger: Trigger,
    /// The scheduler's thread (none until the actor has started, or if it could not be
    /// started: then cycles run on the actor's thread).
    cycle_thread: Option<crate::shell::cycle_thread::CycleThread>,
    /// A cycle runs on the scheduler's thread; its decisions come back as [`CycleDone`].
    cycle_in_flight: bool,
    /// Task reports waiting to be recorded together (one commit per burst).
    pending_reports: Vec<(String, gantry_proto::JobReport)>,
    flush_queued: bool,
    unix_groups: crate::shell::names::UnixGroups,
    host_names: crate::shell::names::HostNames,
    /// This actor, to queue work for a turn of its own (a spool checkpoint).
    me: Option<Addr<Cluster>>,
    checkpoint_queued: bool,
    /// Job scripts, in the spool beside the database (jobs hold none in memory).
    scripts: crate::spool::scripts::JobScripts,
    /// The bytes each user's job scripts hold in the spool.
    script_bytes: crate::spool::scripts::ScriptBytes,
    clock: Clock,
    /// When the actor started (its first tick).
    booted: Option<Time>,
    /// What each user asked in the current second (`MAX_REQUESTS_PER_USER`).
    request_rate: rate::RequestRate,
    /// The snapshot advance reservations are granted on, kept between `qrsub`s.
    ar_snapshot: gantry_sched::KeptSnapshot,
    /// What `/metrics` counts (see [`crate::shell::metrics`]).
    metrics: Arc<crate::shell::metrics::Metrics>,
    /// The HTTP listener's settings, as the global configuration has them now.
    http_settings: tokio::sync::watch::Sender<gantry_common::config::HttpSettings>,
}

/// Why the master cannot start on its spool.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] crate::spool::store::StoreError),
    #[error("{}: {source}", dir.display())]
    Scripts {
        dir: std::path::PathBuf,
        source: std::io::Error,
    },
}

/// How long a due checkpoint waits (the journal is durable meanwhile).
const CHECKPOINT_DELAY: Duration = Duration::from_millis(100);

/// How long after a failed checkpoint the next is tried.
const CHECKPOINT_RETRY: Duration = Duration::from_secs(1);

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
            let metrics = act.metrics.clone();
            let begun = std::time::Instant::now();
            let started = act.store.checkpoint_due()
                && act.store.start_checkpoint(move || {
                    metrics
                        .spool_checkpoint_seconds
                        .observe(begun.elapsed().as_secs_f64());
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

    fn handle(&mut self, _: CheckpointDone, ctx: &mut Self::Context) {
        match self.store.finish_checkpoint() {
            Ok(()) => {
                self.checkpoint_queued = false;
                self.queue_checkpoint();
            }
            Err(e) => {
                // The store said so at the first failure; tried again a second later
                // (a full disk: until space returns), none queued meanwhile.
                tracing::debug!("spool checkpoint failed (the journal keeps the changes): {e}");
                ctx.run_later(CHECKPOINT_RETRY, |act, _| {
                    act.checkpoint_queued = false;
                    act.queue_checkpoint();
                });
            }
        }
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
struct CycleDone(crate::shell::cycle_thread::CycleOutcome);

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
    ) -> Result<Cluster, StartError> {
        let mut state = ClusterState {
            master_host: master_host.to_string(),
            ..ClusterState::default()
        };
        let ops: Vec<Op> = store.load()?.into_iter().map(Op::Put).collect();
        state.apply_all(&ops);
        state.next_job_id = store.next_job_id()?;
        state.live.session_secret = rand::random();
        let scripts_dir = paths.home.join("job_scripts");
        let scripts_error = |source| StartError::Scripts {
            dir: scripts_dir.clone(),
            source,
        };
        let scripts =
            crate::spool::scripts::JobScripts::open(&scripts_dir).map_err(scripts_error)?;
        scripts.remove_partial_writes();
        // A job spooled with its script inside (a cell from before job_scripts): the
        // script moves out, so that memory holds none.
        let inline: Vec<JobId> = state
            .input.jobs
            .values()
            .filter(|j| matches!(&j.spec.script, JobScript::Script { contents, .. } if !contents.is_empty()))
            .map(|j| j.id)
            .collect();
        for id in inline {
            let Some(job) = Arc::make_mut(&mut state.input.jobs).get_mut(&id) else {
                continue;
            };
            let job = Arc::make_mut(job);
            if let JobScript::Script { contents, .. } = &mut job.spec.script {
                if !contents.is_empty() {
                    scripts.put(job.id, contents).map_err(scripts_error)?;
                    *contents = Vec::new();
                }
            }
        }
        for id in scripts.jobs() {
            if !state.input.jobs.contains_key(&id) {
                let _ = scripts.remove(id);
            }
        }
        let mut script_bytes = crate::spool::scripts::ScriptBytes::default();
        for job in state.input.jobs.values() {
            if let (JobScript::Script { .. }, Some(bytes)) =
                (&job.spec.script, scripts.size(job.id))
            {
                script_bytes.add(job.id, job.owner.uid, bytes);
            }
        }
        let http_settings = gantry_common::config::HttpSettings::of(&state.global());
        gantry_net::log::set_loglevel(state.global().get("loglevel").unwrap_or("log_warning"));
        Ok(Cluster {
            state,
            store,
            paths,
            ca,

            sessions: HashMap::new(),
            unreachable: HashSet::new(),
            waiters: HashMap::new(),
            start_waiters: HashMap::new(),
            schedule_queued: false,
            trigger: Trigger::default(),
            cycle_thread: None,
            cycle_in_flight: false,
            pending_reports: Vec::new(),
            flush_queued: false,
            unix_groups: Default::default(),
            host_names: Default::default(),
            me: None,
            checkpoint_queued: false,
            scripts,
            script_bytes,
            clock: Clock::system(),
            booted: None,
            request_rate: rate::RequestRate::default(),
            ar_snapshot: Default::default(),
            metrics: Arc::default(),
            http_settings: tokio::sync::watch::Sender::new(http_settings),
        })
    }

    /// The counters `/metrics` shows, shared with the doors that add to them.
    pub fn metrics(&self) -> Arc<crate::shell::metrics::Metrics> {
        Arc::clone(&self.metrics)
    }

    /// The HTTP listener's settings, told of every change of the global configuration.
    pub fn http_settings(
        &self,
    ) -> tokio::sync::watch::Receiver<gantry_common::config::HttpSettings> {
        self.http_settings.subscribe()
    }

    /// The same master on another clock (a test's).
    pub fn with_clock(mut self, clock: Clock) -> Cluster {
        self.clock = clock;
        self
    }

    /// The master's one clock for the scheduler and for host liveness: the time of day,
    /// as SGE's qmaster keeps it.
    fn now(&self) -> Time {
        self.clock.now()
    }

    /// An execd reported a task of job `id`: a job id the spool may have lost (a damaged
    /// journal recovered without it) is never handed out again.
    fn job_id_seen(&mut self, id: JobId) {
        if id >= self.state.next_job_id {
            warn!(
                job = %id,
                "an execd reports a job id the spool does not know; job ids continue above it"
            );
            if self.commit(&[Op::NextJobId(id.next())]).is_err() {
                // Not durable: at least this run of the master does not reuse it.
                self.state.next_job_id = id.next();
            } else {
                self.trigger.state_changed = true;
            }
        }
    }

    /// The order for a dispatched task, with the job script read from the spool.
    fn job_start(&self, d: &crate::core::sched::Dispatch) -> Option<gantry_proto::JobStart> {
        let mut start = self.state.job_start(d)?;
        if let JobScript::Script { contents, .. } = &mut start.spec.script {
            match self.scripts.get(d.job_id) {
                Ok(script) => *contents = script,
                Err(e) => {
                    error!(
                        job = %d.job_id,
                        task = %d.task_id,
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

    /// Persist, then apply, then act on what changed. A job's script goes to the spool's
    /// script directory first; if the rest cannot be written, it goes again.
    fn commit(&mut self, ops: &[Op]) -> Result<(), Refusal> {
        let started = Instant::now();
        let mut written: Vec<JobId> = Vec::new();
        for op in ops {
            if let Op::Script { job, contents } = op {
                if let Err(e) = self.scripts.put(*job, contents) {
                    error!(job = %job, "cannot spool the job script: {e}");
                    for id in written {
                        let _ = self.scripts.remove(id);
                    }
                    return Err(Refusal {
                        kind: RefusalKind::Internal,
                        message: format!("error: the master could not spool the job script: {e}"),
                    });
                }
                written.push(*job);
            }
        }
        let result = self.store.commit(ops);
        self.metrics
            .spool_commit_seconds
            .observe(started.elapsed().as_secs_f64());
        tracing::debug!(
            ops = ops.len(),
            micros = started.elapsed().as_micros() as u64,
            "spool commit"
        );
        if let Err(e) = result {
            error!("could not write the spool: {e}");
            for id in written {
                let _ = self.scripts.remove(id);
            }
            return Err(Refusal {
                kind: RefusalKind::Internal,
                message: format!("error: the master could not write its spool: {e}"),
            });
        }
        self.state.apply_all(ops);
        for id in written {
            let owner = self.state.input.jobs.get(&id).map(|j| j.owner.uid);
            if let (Some(uid), Some(bytes)) = (owner, self.scripts.size(id)) {
                self.script_bytes.add(id, uid, bytes);
            }
        }
        self.queue_checkpoint();
        for op in ops {
            if let Some(id) = match op {
                Op::Delete(key) => crate::core::state::job_of_key(key),
                _ => None,
            } {
                self.script_bytes.remove(id);
                if let Err(e) = self.scripts.remove(id) {
                    warn!(
                        job = %id,
                        "cannot remove the job's script from the spool: {e}"
                    );
                }
            }
        }
        let config_changed = ops
            .iter()
            .any(|op| matches!(op, Op::Put(crate::core::state::Object::Config(_))));
        if config_changed {
            gantry_net::log::set_loglevel(
                self.state.global().get("loglevel").unwrap_or("log_warning"),
            );
            let http = gantry_common::config::HttpSettings::of(&self.state.global());
            self.http_settings.send_if_modified(|now| {
                let changed = *now != http;
                *now = http;
                changed
            });
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
                s.close(CLOSE_DELETED, b"exec host deleted");
            }
            Arc::make_mut(&mut self.state.input.runtime).remove(&host);
        }
        Ok(())
    }

    /// Advance reservations on the clock: windows that open and close, hosts that go
    /// away under one and come back. A host is usable when its execd is connected, its
    /// instance not in error; after the master starts, a host whose execd has not come
    /// back yet counts as usable for `max_unheard` (its execd reconnects meanwhile).
    fn ar_clock(&mut self) {
        if self.state.input.ars.is_empty() {
            return;
        }
        let now = self.now();
        let grace = crate::core::sched::Span::from_secs(self.state.max_unheard() as i64);
        let starting = self.booted.is_some_and(|b| now.since(b) < grace);
        let state = &self.state;
        let sessions = &self.sessions;
        let d = state.decide_ar_clock(now, |queue, host| {
            let connected = sessions.get(host).is_some_and(|s| !s.stopping);
            let unheard = state
                .input
                .runtime
                .get(host)
                .is_none_or(|r| r.last_heard.is_none());
            (connected || (starting && unheard))
                && !state
                    .input
                    .errored
                    .contains(&(queue.to_string(), host.to_string()))
        });
        if !d.ops.is_empty() {
            self.carry_out(d.asking_for_cycle());
        }
    }

    /// The clock's time in Unix seconds (start and end times of jobs).
    fn unix_now(&self) -> i64 {
        self.now().secs()
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
        let request = crate::shell::cycle_thread::CycleRequest {
            image: self.state.image(),
            generation: self.state.config_generation,
            connected: self.dispatchable(),
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

    /// The hosts jobs may be dispatched to: those whose execd is connected and not
    /// shutting down.
    fn dispatchable(&self) -> HashSet<String> {
        dispatchable_of(&self.sessions)
    }

    /// A cycle's decisions: checked against the state now, persisted, then sent.
    fn cycle_done(&mut self, outcome: crate::shell::cycle_thread::CycleOutcome) {
        self.cycle_in_flight = false;
        let crate::shell::cycle_thread::CycleOutcome {
            request,
            decisions:
                Decisions {
                    dispatches,
                    quota_counters,
                    immediate_unplaced,
                    reservations,
                    groups,
                    quiet,
                    priorities,
                    considered,
                    categories,
                },
            took,
        } = outcome;
        let connected: HashSet<String> = self.dispatchable();
        let checked =
            self.state
                .revalidate(&request.image, request.generation, dispatches, &connected);
        let tree = request.image.group_tree.clone();
        // The image no longer holds the state's parts: changing them costs no copy.
        drop(request);
        Arc::make_mut(&mut self.state.input.quota_book).note_cycle_counters(quota_counters);
        self.metrics.cycle_seconds.observe(took.as_secs_f64());
        if !quiet {
            self.metrics.cycle_considered(considered, categories);
        }
        tracing::debug!(
            micros = took.as_micros() as u64,
            kept = checked.kept.len(),
            dropped = checked.dropped,
            quiet,
            "cycle done"
        );
        // The tree's allocation, group by group (`qquota -g` shows the same).
        for g in groups.iter().flat_map(|a| &a.groups) {
            tracing::debug!(
                group = %g.name,
                quota = g.quota,
                demand = g.demand,
                running = g.running,
                surplus = g.surplus,
                allocation = g.allocation,
                "group allocation"
            );
        }
        self.state.live.group_allocation = groups.map(|a| (tree, a));
        if priorities.is_some() {
            self.state.live.priorities = priorities;
        }
        if checked.dropped > 0 {
            // The jobs it dropped are decided again on the state as it is now.
            self.trigger.state_changed = true;
        }
        // The cycle's resource reservations replace the last one's (`qstat -j`).
        self.state.live.reservations = reservations.into_iter().map(|r| (r.job_id, r)).collect();
        let decisions = checked.kept;
        if !decisions.is_empty() {
            self.dispatch(&decisions);
        }
        if !immediate_unplaced.is_empty() {
            self.remove_unplaced_immediate_jobs(&immediate_unplaced);
        }
        if self.trigger.state_changed || self.trigger.loads_changed {
            self.queue_cycle();
        }
    }

    /// `qsub -now y` jobs a cycle could not start whole are removed, as SGE removes them:
    /// they were not to wait. Only a job that is still as the cycle saw it goes (nothing
    /// of it started or failed since); its waiting `qsub` is told.
    fn remove_unplaced_immediate_jobs(&mut self, ids: &[JobId]) {
        let gone: Vec<JobId> = ids
            .iter()
            .copied()
            .filter(|id| {
                self.state.input.jobs.get(id).is_some_and(|j| {
                    j.spec.immediate && j.tasks.has_pending() && j.tasks.placed().next().is_none()
                })
            })
            .collect();
        if gone.is_empty() {
            return;
        }
        let ops: Vec<Op> = gone
            .iter()
            .flat_map(|&id| self.state.removal_ops(id))
            .collect();
        if self.commit(&ops).is_err() {
            return; // still pending: the next cycle decides again
        }
        self.trigger.state_changed = true;
        for id in gone {
            info!(job = %id, "immediate job could not be scheduled: removed");
            if let Some(waiters) = self.start_waiters.remove(&id) {
                for w in waiters {
                    let _ = w.send(crate::shell::cluster::clients::not_scheduled());
                }
            }
            self.job_ended_without_report(id);
        }
    }

    /// Commit the dispatches, then send them to their execds.
    fn dispatch(&mut self, decisions: &[crate::core::sched::Dispatch]) {
        self.metrics.tasks_dispatched.inc_by(decisions.len() as u64);
        let now = self.unix_now();
        let mut changed: HashMap<JobId, crate::core::jobs::Job> = HashMap::new();
        for d in decisions {
            let Some(job) = self.state.input.jobs.get(&d.job_id) else {
                continue;
            };
            let job = changed
                .entry(d.job_id)
                .or_insert_with(|| crate::core::jobs::Job::clone(job));
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
        if self.commit(&ops).is_err() {
            return;
        }
        tracing::debug!(n = decisions.len(), "dispatching");
        for d in decisions {
            if let Some(waiters) = self.start_waiters.remove(&d.job_id) {
                for w in waiters {
                    let _ = w.send(FromMaster::JobStarted { job_id: d.job_id });
                }
            }
        }
        for d in decisions {
            if let (Some(start), Some(session)) = (self.job_start(d), self.sessions.get(&d.host)) {
                let _ = session.to_execd.send(ToExecd::StartJob(Box::new(start)));
            }
        }
    }
}

/// The hosts jobs may be dispatched to, of these sessions: those whose execd is not
/// shutting down.
fn dispatchable_of(sessions: &HashMap<String, Session>) -> HashSet<String> {
    sessions
        .iter()
        .filter(|(_, s)| !s.stopping)
        .map(|(h, _)| h.clone())
        .collect()
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
        match crate::shell::cycle_thread::CycleThread::start(move |outcome| {
            me.do_send(CycleDone(outcome))
        }) {
            Ok(thread) => self.cycle_thread = Some(thread),
            Err(e) => error!(
                "cannot start the scheduler's thread ({e}): cycles run on the master's thread"
            ),
        }
        self.booted = Some(self.now());
        ctx.run_interval(Duration::from_secs(1), |act, _| {
            act.check_reachability();
            act.ar_clock();
            act.apply_suspend_thresholds();
            act.queue_cycle();
        });
        info!(
            hosts = self.state.input.exechosts.len(),
            "cluster state loaded from the spool"
        );
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
            s.close(CLOSE_SHUTDOWN, b"master shutting down");
        }
        if let Err(e) = self.store.close() {
            warn!("spool checkpoint at shutdown failed (the journal keeps the changes): {e}");
        }
    }
}
