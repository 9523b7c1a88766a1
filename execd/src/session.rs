//! The execd's connection to the master: mutual TLS, registration, load reports every
//! `load_report_time`, and reconnection with backoff when the master goes away.

use std::net::SocketAddr;
use std::time::Duration;

use gantry_net::tls::{host_client_config, MASTER_SERVER_NAME};
use gantry_net::transport::{expect_hello_reply, read_frame, write_frame, TransportError};
use gantry_proto::{FromExecd, Hello, PeerRole, ToExecd, PROTOCOL_VERSION};
use tokio::sync::watch;
use tracing::{error, info, warn};

use crate::identity::Identity;
use crate::jobs::{Jobs, TaskKey};
use crate::sensor::Sensor;
use gantry_proto::{JobReport, JobStart, LoadValue, TaskUsage};
use tokio::sync::mpsc::UnboundedReceiver;

/// What a session needs of the host it speaks for: its load values, and its tasks
/// (started, signalled, their reports kept until the master acknowledges them). A
/// real host runs processes ([`RealHost`]); a simulated one only keeps time
/// (`crate::simulate`), and the master cannot tell them apart.
pub trait ExecHost: Send + 'static {
    /// The load values of a report now.
    fn load_values(&mut self) -> Vec<LoadValue>;
    /// Tasks that run now.
    fn running(&self) -> Vec<TaskKey>;
    /// Reports not yet acknowledged by the master, oldest task first.
    fn unacknowledged(&self) -> Vec<JobReport>;
    /// What running tasks used so far (may read files: run off the session's thread).
    fn usage(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = Vec<TaskUsage>> + Send>>;
    fn start(&self, start: JobStart);
    fn kill(&self, key: TaskKey);
    /// `qmod -r`: end the task, reported ended for rescheduling (a simulated host
    /// ends it as a kill).
    fn reschedule(&self, key: TaskKey) {
        self.kill(key);
    }
    fn signal(&self, key: TaskKey, signal: i32);
    /// End the tasks `qrsh -inherit` started in a job's task here (a simulated host
    /// runs none).
    fn kill_pe_tasks(&self, _job: gantry_proto::JobId, _task: gantry_proto::TaskId) {}
    /// The master has the report: forget the task.
    fn acknowledge(&self, key: TaskKey);
    /// `qconf -kej`: end every task, reporting each.
    fn end_all_for_shutdown(&self);
    /// Where a running interactive task's shepherd waits for its session (nowhere on
    /// a simulated host).
    fn session_sockets(&self) -> crate::interactive::SessionSockets {
        crate::interactive::SessionSockets::new(|_| None)
    }
}

/// A compute host: its sensor and its jobs' processes.
pub struct RealHost {
    pub sensor: Sensor,
    pub jobs: Jobs,
}

impl ExecHost for RealHost {
    fn load_values(&mut self) -> Vec<LoadValue> {
        let mut values = self.sensor.load_values();
        if let Some(inuse) = self.jobs.topology_inuse() {
            for v in values.iter_mut().filter(|v| v.name == "m_topology_inuse") {
                v.value = inuse.clone();
            }
        }
        values
    }

    fn running(&self) -> Vec<TaskKey> {
        self.jobs.running()
    }

    fn unacknowledged(&self) -> Vec<JobReport> {
        self.jobs.unacknowledged()
    }

    fn usage(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = Vec<TaskUsage>> + Send>> {
        // Reading every task's control group or /proc is file I/O: off the session's
        // thread.
        let jobs = self.jobs.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || jobs.usage())
                .await
                .unwrap_or_default()
        })
    }

    fn start(&self, start: JobStart) {
        self.jobs.start(start);
    }

    fn kill(&self, key: TaskKey) {
        self.jobs.kill(key);
    }

    fn reschedule(&self, key: TaskKey) {
        self.jobs.reschedule(key);
    }

    fn signal(&self, key: TaskKey, signal: i32) {
        self.jobs.signal(key, signal);
    }

    fn kill_pe_tasks(&self, job: gantry_proto::JobId, task: gantry_proto::TaskId) {
        self.jobs.kill_pe_tasks(job, task);
    }

    fn acknowledge(&self, key: TaskKey) {
        self.jobs.acknowledge(key);
    }

    fn end_all_for_shutdown(&self) {
        self.jobs.end_all_for_shutdown();
    }

    fn session_sockets(&self) -> crate::interactive::SessionSockets {
        let jobs = self.jobs.clone();
        crate::interactive::SessionSockets::new(move |key| jobs.session_socket(key))
    }
}

/// Backoff between connection attempts: 1 s doubling to 30 s, with jitter, reset after
/// a session that lasted.
pub struct Backoff {
    next: Duration,
}

impl Backoff {
    pub const MIN: Duration = Duration::from_secs(1);
    pub const MAX: Duration = Duration::from_secs(30);

    pub fn new() -> Self {
        Backoff { next: Self::MIN }
    }

    pub fn reset(&mut self) {
        self.next = Self::MIN;
    }

    /// The delay before the next attempt: the current step plus up to a fifth of it at
    /// random (so that many execds do not retry in step), never above [`Self::MAX`].
    pub fn next_delay(&mut self) -> Duration {
        let base = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        let jitter = rand::random::<f64>() * 0.2 * base.as_secs_f64();
        (base + Duration::from_secs_f64(jitter)).min(Self::MAX)
    }

    /// The delay after losing a session that was up: the master was there a moment
    /// ago (a restart, a network blip), so the first attempt comes at once, spread over
    /// a quarter of a second across execds; failures after it back off as usual.
    pub fn after_session(&mut self) -> Duration {
        self.reset();
        Duration::from_secs_f64(rand::random::<f64>() * 0.25)
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

/// Why a session ended.
#[derive(Debug)]
enum Ended {
    /// The master refused us; retrying may still help (e.g. after a re-add).
    Refused(String),
    /// No session came about (the master unreachable, the handshake cut).
    Lost(String),
    /// A session that was up ended (a master restart ends it with a stateless reset).
    Dropped(String),
    /// The master told the execd to shut down (`qconf -ke[j]`), and it is done.
    Stopped,
}

/// Keep a session with the master forever, reconnecting with backoff. The current
/// connection is published on `current` for the client relay.
pub async fn run<H: ExecHost>(
    endpoint: quinn::Endpoint,
    masters: Vec<SocketAddr>,
    id: Identity,
    mut host: H,
    current: watch::Sender<Option<quinn::Connection>>,
    mut finished: UnboundedReceiver<JobReport>,
    shutdown: std::sync::Arc<tokio::sync::Notify>,
) {
    let mut backoff = Backoff::new();
    let mut stopping = None;
    loop {
        let started = std::time::Instant::now();
        let ended = session(
            &endpoint,
            &masters,
            &id,
            &mut host,
            &current,
            &mut finished,
            &mut stopping,
        )
        .await;
        if matches!(ended, Ended::Stopped) {
            shutdown.notify_one();
            return;
        }
        current.send_replace(None);
        let delay = match ended {
            Ended::Dropped(_) => backoff.after_session(),
            _ => {
                if started.elapsed() > Duration::from_secs(60) {
                    backoff.reset();
                }
                backoff.next_delay()
            }
        };
        let master = masters
            .iter()
            .map(SocketAddr::to_string)
            .collect::<Vec<_>>()
            .join(",");
        match ended {
            Ended::Refused(reason) => error!(
                "the master at {master} refused this execd: {reason}; retrying in {:.1} s",
                delay.as_secs_f64()
            ),
            Ended::Lost(reason) | Ended::Dropped(reason) => warn!(
                "connection to the master at {master} lost: {reason}; reconnecting in {:.1} s",
                delay.as_secs_f64()
            ),
            Ended::Stopped => {}
        }
        tokio::time::sleep(delay).await;
    }
}

/// How long an execd told to end its jobs and shut down waits for them to end and
/// their reports to be acknowledged.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(60);

/// Why no master could be reached: the last attempt's failure.
#[derive(Debug, thiserror::Error)]
enum ConnectError {
    #[error("no master address")]
    NoAddress,
    #[error("{addr}: {source}")]
    Connect {
        addr: SocketAddr,
        source: quinn::ConnectError,
    },
    #[error("{addr}: {source}")]
    Handshake {
        addr: SocketAddr,
        source: quinn::ConnectionError,
    },
    #[error("a connection attempt ended: {0}")]
    Attempt(#[from] tokio::task::JoinError),
}

/// Connect to whichever of the masters completes the handshake first: the active one
/// (a standby master does not listen until it takes over, a dead one does not answer).
async fn connect_any(
    endpoint: &quinn::Endpoint,
    config: quinn::ClientConfig,
    masters: &[SocketAddr],
) -> Result<(quinn::Connection, SocketAddr), ConnectError> {
    let mut attempts = tokio::task::JoinSet::new();
    let mut last = ConnectError::NoAddress;
    for &addr in masters {
        match endpoint.connect_with(config.clone(), addr, MASTER_SERVER_NAME) {
            Ok(connecting) => {
                attempts.spawn(async move { (addr, connecting.await) });
            }
            Err(source) => last = ConnectError::Connect { addr, source },
        }
    }
    while let Some(done) = attempts.join_next().await {
        match done {
            Ok((addr, Ok(conn))) => return Ok((conn, addr)),
            Ok((addr, Err(source))) => last = ConnectError::Handshake { addr, source },
            Err(e) => last = e.into(),
        }
    }
    Err(last)
}

async fn session<H: ExecHost>(
    endpoint: &quinn::Endpoint,
    masters: &[SocketAddr],
    id: &Identity,
    jobs: &mut H,
    current: &watch::Sender<Option<quinn::Connection>>,
    finished: &mut UnboundedReceiver<JobReport>,
    stopping: &mut Option<std::time::Instant>,
) -> Ended {
    let config = match host_client_config(&id.ca_pem, &id.cert_pem, &id.key_pem, PROTOCOL_VERSION) {
        Ok(c) => c,
        Err(e) => return Ended::Refused(format!("bad host identity: {e}")),
    };
    let (conn, master) = match connect_any(endpoint, config, masters).await {
        Ok(c) => c,
        Err(e) => return Ended::Lost(e.to_string()),
    };
    let (mut send, mut recv) = match conn.open_bi().await {
        Ok(s) => s,
        Err(e) => return Ended::Lost(e.to_string()),
    };
    let hello = Hello::new(PeerRole::Execd, env!("CARGO_PKG_VERSION"));
    let register = FromExecd::Register {
        hostname: id.hostname.clone(),
    };
    if let Err(e) = async {
        write_frame(&mut send, &hello).await?;
        write_frame(&mut send, &register).await
    }
    .await
    {
        return Ended::Lost(e.to_string());
    }
    match expect_hello_reply(&mut recv).await {
        Ok(()) => {}
        Err(TransportError::VersionMismatch(m)) => return Ended::Refused(m),
        Err(e) => return Ended::Lost(close_reason(&conn).unwrap_or_else(|| e.to_string())),
    }
    let mut interval = match read_frame::<_, ToExecd>(&mut recv).await {
        Ok(ToExecd::Settings {
            load_report_time_secs,
        }) => Duration::from_secs(load_report_time_secs.max(1)),
        Ok(ToExecd::Refused { reason }) => return Ended::Refused(reason),
        Ok(other) => return Ended::Lost(format!("unexpected message {other:?}")),
        Err(e) => return Ended::Lost(close_reason(&conn).unwrap_or_else(|| e.to_string())),
    };
    info!(
        host = %id.hostname,
        "connected to the master at {master}; reporting load every {} s",
        interval.as_secs()
    );
    current.send_replace(Some(conn.clone()));
    // Whatever ended while we were away is on disk: report it all (the channel only
    // repeats part of it).
    while finished.try_recv().is_ok() {}
    let catch_up = async {
        write_frame(&mut send, &{
            let (tasks, pe_tasks): (Vec<_>, Vec<_>) =
                jobs.running().into_iter().partition(|k| k.2 == 0);
            FromExecd::RunningJobs {
                tasks: tasks.into_iter().map(|(j, t, _)| (j, t)).collect(),
                pe_tasks,
            }
        })
        .await?;
        for report in jobs.unacknowledged() {
            write_frame(&mut send, &FromExecd::JobFinished(report)).await?;
        }
        Ok::<(), TransportError>(())
    };
    if let Err(e) = catch_up.await {
        return Ended::Lost(close_reason(&conn).unwrap_or_else(|| e.to_string()));
    }
    // Frames from the master are read by their own task: reading a frame inside
    // select! could be cancelled half-way and lose the stream's framing.
    let (from_master_tx, mut from_master) = tokio::sync::mpsc::unbounded_channel();
    let reader = tokio::spawn(async move {
        loop {
            let msg = read_frame::<_, ToExecd>(&mut recv).await;
            let end = msg.is_err();
            if from_master_tx.send(msg).is_err() || end {
                break;
            }
        }
    });
    let _reader = AbortOnDrop(reader);
    // Streams the master opens: interactive sessions it joins for their jobs' owners.
    let sessions = {
        let conn = conn.clone();
        let sockets = jobs.session_sockets();
        tokio::spawn(async move {
            while let Ok((send, recv)) = conn.accept_bi().await {
                tokio::spawn(crate::interactive::join(send, recv, sockets.clone()));
            }
        })
    };
    let _sessions = AbortOnDrop(sessions);
    let mut ticker = tokio::time::interval(interval);
    let mut stop_check = tokio::time::interval(Duration::from_millis(200));
    loop {
        tokio::select! {
            _ = stop_check.tick(), if stopping.is_some() => {
                // Stopped once every job has ended and the master has every report.
                let done = jobs.running().is_empty() && jobs.unacknowledged().is_empty();
                let late = stopping.is_some_and(|t| t.elapsed() > SHUTDOWN_GRACE);
                if done || late {
                    if late {
                        warn!("shutting down with jobs or reports left after {} s", SHUTDOWN_GRACE.as_secs());
                    }
                    return Ended::Stopped;
                }
            }
            Some(report) = finished.recv() => {
                if let Err(e) = write_frame(&mut send, &FromExecd::JobFinished(report)).await {
                    return Ended::Dropped(close_reason(&conn).unwrap_or_else(|| e.to_string()));
                }
            }
            _ = ticker.tick() => {
                let values = jobs.load_values();
                if let Err(e) = write_frame(&mut send, &FromExecd::LoadReport { values }).await {
                    return Ended::Dropped(close_reason(&conn).unwrap_or_else(|| e.to_string()));
                }
                let tasks = jobs.usage().await;
                if !tasks.is_empty() {
                    if let Err(e) = write_frame(&mut send, &FromExecd::TaskUsage { tasks }).await {
                        return Ended::Dropped(close_reason(&conn).unwrap_or_else(|| e.to_string()));
                    }
                }
            }
            msg = from_master.recv() => match msg.unwrap_or(Err(TransportError::Closed)) {
                Ok(ToExecd::Settings { load_report_time_secs }) => {
                    let new = Duration::from_secs(load_report_time_secs.max(1));
                    if new != interval {
                        info!("load_report_time is now {} s", new.as_secs());
                        interval = new;
                        ticker = tokio::time::interval(interval);
                    }
                }
                Ok(ToExecd::Refused { reason }) => return Ended::Refused(reason),
                Ok(ToExecd::StartJob(start)) => {
                    let (job_id, task_id, pe_task) = (start.job_id, start.task_id, start.pe_task);
                    jobs.start(*start);
                    // A job's start is confirmed; a task in a running job is not.
                    if pe_task.is_some() {
                        continue;
                    }
                    if let Err(e) = write_frame(&mut send, &FromExecd::JobStarted { job_id, task_id }).await {
                        return Ended::Dropped(close_reason(&conn).unwrap_or_else(|| e.to_string()));
                    }
                }
                Ok(ToExecd::KillJob { job_id, task_id }) => jobs.kill((job_id, task_id, 0)),
                Ok(ToExecd::RescheduleJob { job_id, task_id }) => jobs.reschedule((job_id, task_id, 0)),
                Ok(ToExecd::KillPeTasks { job_id, task_id }) => jobs.kill_pe_tasks(job_id, task_id),
                Ok(ToExecd::SignalJob { job_id, task_id, signal }) => jobs.signal((job_id, task_id, 0), signal),
                Ok(ToExecd::ReportAck { job_id, task_id, pe_task }) => {
                    jobs.acknowledge((job_id, task_id, pe_task.unwrap_or(0)))
                }
                Ok(ToExecd::Shutdown { kill_jobs }) => {
                    info!("the master tells this execd to shut down{}", if kill_jobs { " and end its jobs" } else { "" });
                    if !kill_jobs {
                        return Ended::Stopped;
                    }
                    jobs.end_all_for_shutdown();
                    stopping.get_or_insert_with(std::time::Instant::now);
                }
                Ok(other) => warn!("unexpected message from the master: {other:?}"),
                Err(e) => return Ended::Dropped(close_reason(&conn).unwrap_or_else(|| e.to_string())),
            }
        }
    }
}

/// Aborts a task when dropped (when the session ends).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The reason the master gave when it closed the connection, if it did.
fn close_reason(conn: &quinn::Connection) -> Option<String> {
    match conn.close_reason()? {
        quinn::ConnectionError::ApplicationClosed(c) => {
            Some(String::from_utf8_lossy(&c.reason).into_owned())
        }
        other => Some(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_ceiling_and_resets() {
        let mut b = Backoff::new();
        let d: Vec<f64> = (0..8).map(|_| b.next_delay().as_secs_f64()).collect();
        assert!(d[0] >= 1.0 && d[0] < 1.21);
        assert!(d[1] >= 2.0 && d[1] < 2.41);
        // The documented ceiling holds, jitter included, however many failures.
        assert_eq!(d[7], 30.0, "{d:?}");
        assert!((0..100).all(|_| b.next_delay() <= Backoff::MAX));
        b.reset();
        assert!(b.next_delay().as_secs_f64() < 1.21);
        // After a session that was up: at once (within a quarter second), then as usual.
        assert!(b.after_session() <= Duration::from_millis(250));
        assert!(b.next_delay().as_secs_f64() < 1.21);
    }
}
