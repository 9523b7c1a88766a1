//! `gantry-execd simulate`: many execution hosts in one process, for measuring the
//! master at scale (as SGE's `SIMULATE_EXECDS` does from the other side). Each
//! simulated host joins the cell with the token and keeps its own certificate in its
//! own home (`HOME/<name>`, so a restart reuses it), keeps its own QUIC connection
//! through the real execd's session (the same registration, load reports, reconnection
//! and report spool), reports load values built as a real sensor's are (the configured
//! `num_proc` and memory, `mem_free` less what its running jobs request, a load that
//! follows its running slots), accepts started jobs without creating any process, and
//! reports each finished after the seconds its first argument gives (3 without one, as
//! SGE does). Reports are kept on disk until the master acknowledges them, as a real
//! execd keeps them: a completion is neither lost nor counted twice across a restart of
//! the simulator or of the master.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_common::load::{load_values, sge_arch, topology, HostSample};
use gantry_net::cell::write_file_atomic;
use gantry_proto::{JobReport, JobStart, LoadValue, TaskUsage};
use tokio::sync::mpsc::UnboundedSender;
use tracing::warn;

use crate::jobs::{killed_before_start, TaskKey};

/// A simulated task: a job's own (a simulated host runs no `qrsh -inherit` task).
type SimKey = (gantry_proto::JobId, gantry_proto::TaskId);
use crate::session::ExecHost;
use crate::shepherd::{decode_report, encode_report, REPORT_FILE};

/// How long a job without a first argument runs (SGE's simulated hosts: 3 s).
pub const DEFAULT_SECONDS: f64 = 3.0;

/// The file a simulated task's start is kept in: its end time, slots and memory.
const STARTED_FILE: &str = "started";

/// What every simulated host offers.
#[derive(Debug, Clone)]
pub struct SimSpec {
    pub num_proc: u32,
    /// Bytes.
    pub mem_total: f64,
}

/// A simulated task: when it ends, the slots and memory it holds.
#[derive(Debug, Clone, Copy, PartialEq)]
struct SimTask {
    start_time: i64,
    end_time: f64,
    slots: u32,
    mem: f64,
}

/// One simulated host.
#[derive(Clone)]
pub struct SimHost {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    dir: PathBuf,
    spec: SimSpec,
    finished: UnboundedSender<JobReport>,
    running: Mutex<HashMap<SimKey, (SimTask, tokio::task::AbortHandle)>>,
}

/// Seconds since the epoch, with their fraction.
fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn task_dir(base: &Path, key: SimKey) -> PathBuf {
    base.join(format!("{}.{}", key.0, key.1))
}

/// The seconds a simulated job runs: its first argument, else [`DEFAULT_SECONDS`].
pub fn run_seconds(start: &JobStart) -> f64 {
    start
        .spec
        .args
        .first()
        .and_then(|a| a.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(DEFAULT_SECONDS)
}

/// The memory a task holds: its `h_vmem` or `mem_free` request per slot, times its
/// slots.
fn requested_memory(start: &JobStart) -> f64 {
    let per_slot = start
        .spec
        .hard_resources
        .iter()
        .filter(|(k, _)| matches!(k.as_str(), "h_vmem" | "mem_free" | "mf"))
        .filter_map(|(_, v)| gantry_common::value::parse_memory(v).ok())
        .fold(0.0, f64::max);
    per_slot * start.slots as f64
}

impl SimHost {
    /// Host `name` keeping its tasks in `home/jobs`; the tasks a previous run left
    /// running go on until their end time.
    pub fn new(
        home: &Path,
        name: &str,
        spec: SimSpec,
        finished: UnboundedSender<JobReport>,
    ) -> std::io::Result<SimHost> {
        let dir = home.join("jobs");
        std::fs::create_dir_all(&dir)?;
        let host = SimHost {
            inner: Arc::new(Inner {
                name: name.to_string(),
                dir,
                spec,
                finished,
                running: Mutex::new(HashMap::new()),
            }),
        };
        host.adopt();
        Ok(host)
    }

    /// Take up the tasks a previous run started and did not finish.
    fn adopt(&self) {
        let Ok(entries) = std::fs::read_dir(&self.inner.dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.join(REPORT_FILE).exists() {
                continue;
            }
            let key = e.file_name().to_str().and_then(|n| {
                let (j, t) = n.split_once('.')?;
                Some((j.parse().ok()?, t.parse().ok()?))
            });
            let started = std::fs::read(path.join(STARTED_FILE))
                .ok()
                .and_then(|b| gantry_proto::decode::<(i64, f64, u32, f64, String)>(&b).ok());
            if let (Some(key), Some((start_time, end_time, slots, mem, queue))) = (key, started) {
                let task = SimTask {
                    start_time,
                    end_time,
                    slots,
                    mem,
                };
                self.run(key, task, queue);
            }
        }
    }

    /// Keep a task running until its end time, then report it.
    fn run(&self, key: SimKey, task: SimTask, queue: String) {
        let host = self.clone();
        let wait = (task.end_time - now_secs()).max(0.0);
        // Inserted under the lock the timer's end takes: it cannot end the task before
        // the task is there, whatever thread runs it.
        let Ok(mut running) = self.inner.running.lock() else {
            return;
        };
        let handle = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs_f64(wait)).await;
            host.finish(key, 0, None, &queue);
        })
        .abort_handle();
        running.insert(key, (task, handle));
    }

    /// A task ended (`signal`: killed by it): its report kept on disk until the master
    /// acknowledges it, and sent.
    fn finish(&self, key: SimKey, exit_status: i32, signal: Option<i32>, queue: &str) {
        let task = match self.inner.running.lock() {
            Ok(mut running) => running.remove(&key),
            Err(_) => None,
        };
        let Some((task, handle)) = task else {
            return; // ended already
        };
        handle.abort();
        let report = JobReport {
            job_id: key.0,
            task_id: key.1,
            host: self.inner.name.clone(),
            queue: queue.to_string(),
            exit_status,
            signal,
            failed: 0,
            failure: String::new(),
            start_time: task.start_time,
            end_time: now_secs() as i64,
            utime_us: 0,
            stime_us: 0,
            maxrss_kb: 0,
            accounted: Default::default(),
            checkpointed: false,
            pe_task: None,
        };
        let path = task_dir(&self.inner.dir, key).join(REPORT_FILE);
        if let Err(e) = write_file_atomic(&path, &encode_report(&report), 0o644) {
            warn!(host = %self.inner.name, job = %key.0, task = %key.1, "cannot keep the report: {e}");
        }
        let _ = self.inner.finished.send(report);
    }

    /// The queue a running task was started in (from its start file).
    fn queue_of(&self, key: SimKey) -> String {
        std::fs::read(task_dir(&self.inner.dir, key).join(STARTED_FILE))
            .ok()
            .and_then(|b| gantry_proto::decode::<(i64, f64, u32, f64, String)>(&b).ok())
            .map(|s| s.4)
            .unwrap_or_default()
    }

    fn end(&self, key: SimKey, signal: i32) {
        let dir = task_dir(&self.inner.dir, key);
        if !dir.exists() {
            // Never started here (its order lost with a session): reported killed, so
            // that the master can end it.
            if std::fs::create_dir(&dir).is_ok() {
                let now = now_secs() as i64;
                let report = killed_before_start((key.0, key.1, 0), &self.inner.name, now);
                let _ = write_file_atomic(&dir.join(REPORT_FILE), &encode_report(&report), 0o644);
                let _ = self.inner.finished.send(report);
            }
            return;
        }
        let queue = self.queue_of(key);
        self.finish(key, 128 + signal, Some(signal), &queue);
    }
}

impl ExecHost for SimHost {
    fn load_values(&mut self) -> Vec<LoadValue> {
        let (slots, mem) = match self.inner.running.lock() {
            Ok(running) => running
                .values()
                .fold((0u32, 0.0), |(s, m), (t, _)| (s + t.slots, m + t.mem)),
            Err(_) => (0, 0.0),
        };
        let spec = &self.inner.spec;
        let load = slots as f64;
        load_values(&HostSample {
            arch: sge_arch(),
            num_proc: spec.num_proc,
            sockets: 1,
            cores: spec.num_proc,
            threads: spec.num_proc,
            topology: topology(1, spec.num_proc, spec.num_proc),
            load_1: load,
            load_5: load,
            load_15: load,
            mem_total: spec.mem_total,
            mem_free: (spec.mem_total - mem).max(0.0),
            swap_total: 0.0,
            swap_free: 0.0,
            cpu: (100.0 * load / spec.num_proc.max(1) as f64).min(100.0),
        })
    }

    fn running(&self) -> Vec<TaskKey> {
        let mut keys: Vec<TaskKey> = match self.inner.running.lock() {
            Ok(running) => running.keys().map(|&(j, t)| (j, t, 0)).collect(),
            Err(_) => Vec::new(),
        };
        keys.sort_unstable();
        keys
    }

    fn unacknowledged(&self) -> Vec<JobReport> {
        let mut out: Vec<JobReport> = std::fs::read_dir(&self.inner.dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| decode_report(&std::fs::read(e.path().join(REPORT_FILE)).ok()?))
                    .collect()
            })
            .unwrap_or_default();
        out.sort_by_key(|r| (r.job_id, r.task_id));
        out
    }

    fn usage(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = Vec<TaskUsage>> + Send>> {
        // No process: nothing measured.
        Box::pin(async { Vec::new() })
    }

    fn start(&self, start: JobStart) {
        let key = (start.job_id, start.task_id);
        let dir = task_dir(&self.inner.dir, key);
        // Created exclusively: an existing one means the task was started already (a
        // repeated order after a reconnect).
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return,
            Err(e) => {
                warn!(host = %self.inner.name, job = %key.0, task = %key.1, "cannot keep the task: {e}");
                return;
            }
        }
        let now = now_secs();
        let task = SimTask {
            start_time: now as i64,
            end_time: now + run_seconds(&start),
            slots: start.slots,
            mem: requested_memory(&start),
        };
        let record = (
            task.start_time,
            task.end_time,
            task.slots,
            task.mem,
            start.queue.clone(),
        );
        // Not synced (thousands of starts a second would wait for the disk): a start
        // lost in a crash is a task the host does not run when it registers again,
        // and the master sends its order again.
        match gantry_proto::encode(&record) {
            Ok(bytes) => {
                if let Err(e) = std::fs::write(dir.join(STARTED_FILE), &bytes) {
                    warn!(host = %self.inner.name, "cannot keep the task's start: {e}");
                }
            }
            Err(e) => warn!(host = %self.inner.name, "cannot encode the task's start: {e}"),
        }
        self.run(key, task, start.queue);
    }

    fn kill(&self, key: TaskKey) {
        self.end((key.0, key.1), 9);
    }

    /// A simulated task has no process: SIGKILL and SIGTERM end it; a suspension or
    /// any other signal changes nothing.
    fn signal(&self, key: TaskKey, signal: i32) {
        if signal == 9 || signal == 15 {
            self.end((key.0, key.1), signal);
        }
    }

    fn acknowledge(&self, key: TaskKey) {
        let dir = task_dir(&self.inner.dir, (key.0, key.1));
        if dir.join(REPORT_FILE).exists() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    fn end_all_for_shutdown(&self) {
        for key in self.running() {
            self.end((key.0, key.1), 9);
        }
    }
}

/// The name of simulated host `n` (from 1): `sim0001`.
pub fn host_name(prefix: &str, n: usize) -> String {
    format!("{prefix}{n:04}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_proto::{JobId, TaskId};

    fn start(args: &[&str], slots: u32, hard: &[(&str, &str)]) -> JobStart {
        JobStart {
            job_id: JobId(1),
            task_id: TaskId(1),
            spec: gantry_proto::JobSpec {
                args: args.iter().map(|a| a.to_string()).collect(),
                hard_resources: hard
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ..gantry_proto::JobSpec::binary("sleep", "sleep", "head")
            },
            owner: gantry_proto::JobOwner {
                user: "u1".into(),
                uid: 1000,
                gid: 1000,
                groups: vec!["u1".into()],
            },
            queue: "sim.q".into(),
            host: "sim0001".into(),
            slots,
            submit_time: 0,
            queue_settings: Vec::new(),
            pe: None,
            granted: Vec::new(),
            restarted: 0,
            checkpoint: None,
            session_key: None,
            pe_task: None,
        }
    }

    #[test]
    fn a_simulated_job_runs_its_first_argument_s_seconds() {
        assert_eq!(run_seconds(&start(&["30"], 1, &[])), 30.0);
        assert_eq!(run_seconds(&start(&["0.5", "x"], 1, &[])), 0.5);
        assert_eq!(run_seconds(&start(&[], 1, &[])), 3.0);
        assert_eq!(run_seconds(&start(&["soon"], 1, &[])), 3.0);
        assert_eq!(run_seconds(&start(&["-1"], 1, &[])), 3.0);
        assert_eq!(
            requested_memory(&start(&[], 2, &[("h_vmem", "1G")])),
            2.0 * 1073741824.0
        );
        assert_eq!(requested_memory(&start(&[], 4, &[])), 0.0);
        assert_eq!(host_name("sim", 7), "sim0007");
    }
}
