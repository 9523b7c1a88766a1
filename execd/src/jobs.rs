//! The execd's jobs: one directory per task under `HOME/jobs`, a shepherd per task, and
//! reports kept on disk until the master acknowledges them, so that no completion is lost
//! or counted twice across execd restarts, master restarts or network cuts.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_common::cell::write_file_atomic;
use gantry_common::recent::{Recent, NAME_SERVICE_TTL};
use gantry_proto::{JobReport, JobScript, JobStart};
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::{Gid, Pid, Uid, User};
use tokio::sync::mpsc::UnboundedSender;
use tracing::{info, warn};

use crate::shepherd::{
    decode_report, Account, Order, PID_FILE, REPORT_FILE, SCRIPT_FILE, START_FILE,
};

/// A task key.
pub type TaskKey = (u64, u32);

#[derive(Clone)]
pub struct Jobs {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    /// The shepherd: `gantry-shepherd` next to this executable, else `gantry-execd shepherd`.
    shepherd: (PathBuf, Option<&'static str>),
    host: String,
    /// Finished tasks go here as they end (the session forwards them when connected).
    finished: UnboundedSender<JobReport>,
    /// Tasks whose shepherd runs now.
    running: Mutex<BTreeSet<TaskKey>>,
    /// Job owners' accounts, looked up once a minute at most.
    accounts: Mutex<Recent<(u32, u32), Account>>,
}

fn task_dir(base: &Path, key: TaskKey) -> PathBuf {
    base.join(format!("{}.{}", key.0, key.1))
}

fn parse_key(name: &str) -> Option<TaskKey> {
    let (j, t) = name.split_once('.')?;
    Some((j.parse().ok()?, t.parse().ok()?))
}

fn pids(dir: &Path) -> (Option<i32>, Option<i32>) {
    let text = std::fs::read_to_string(dir.join(PID_FILE)).unwrap_or_default();
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().parse().ok())
    };
    (get("shepherd="), get("job="))
}

fn read_report(dir: &Path) -> Option<JobReport> {
    decode_report(&std::fs::read(dir.join(REPORT_FILE)).ok()?)
}

impl Jobs {
    pub fn new(
        home: &Path,
        host: &str,
        finished: UnboundedSender<JobReport>,
    ) -> std::io::Result<Jobs> {
        let dir = home.join("jobs");
        std::fs::create_dir_all(&dir)?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
        Ok(Jobs {
            inner: Arc::new(Inner {
                dir,
                shepherd: {
                    let exe = std::env::current_exe()?;
                    let small = exe.with_file_name("gantry-shepherd");
                    if small.exists() {
                        (small, None)
                    } else {
                        (exe, Some("shepherd"))
                    }
                },
                host: host.to_string(),
                finished,
                running: Mutex::new(BTreeSet::new()),
                accounts: Mutex::new(Recent::new(NAME_SERVICE_TTL)),
            }),
        })
    }

    /// Tasks whose shepherd runs now.
    pub fn running(&self) -> Vec<TaskKey> {
        self.inner
            .running
            .lock()
            .map(|r| r.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Reports on disk not yet acknowledged by the master.
    pub fn unacknowledged(&self) -> Vec<JobReport> {
        let mut out = Vec::new();
        let Ok(entries) = std::fs::read_dir(&self.inner.dir) else {
            return out;
        };
        for e in entries.flatten() {
            if let Some(r) = read_report(&e.path()) {
                out.push(r);
            }
        }
        out.sort_by_key(|r| (r.job_id, r.task_id));
        out
    }

    /// The master has the report: forget the task.
    pub fn acknowledge(&self, key: TaskKey) {
        let dir = task_dir(&self.inner.dir, key);
        if read_report(&dir).is_some() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    /// A job owner's account, from the cache if it is fresh.
    fn account(&self, uid: u32, gid: u32) -> Option<Account> {
        let mut cache = self.inner.accounts.lock().ok()?;
        cache.get_or_lookup((uid, gid), || lookup_account(uid, gid))
    }

    /// Start a task: write its directory, then its shepherd.
    pub fn start(&self, start: JobStart) {
        let key = (start.job_id, start.task_id);
        let dir = task_dir(&self.inner.dir, key);
        if dir.exists() {
            // Already started (a repeated order after a reconnect).
            return;
        }
        let result = (|| -> std::io::Result<()> {
            std::fs::create_dir(&dir)?;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
            // Not fsynced: if the host crashes before the job starts, the master sends
            // the order again when this execd registers without the task.
            if let JobScript::Script { contents, .. } = &start.spec.script {
                write_private(&dir.join(SCRIPT_FILE), contents, 0o700)?;
            }
            let order = Order {
                account: self.account(start.owner.uid, start.owner.gid),
                start: start.clone(),
            };
            let bytes = gantry_proto::encode(&order).map_err(std::io::Error::other)?;
            write_private(&dir.join(START_FILE), &bytes, 0o600)?;
            Ok(())
        })();
        if let Err(e) = result {
            warn!(
                job = start.job_id,
                task = start.task_id,
                "cannot prepare the job: {e}"
            );
            let report = failed_report(
                &start,
                &self.inner.host,
                format!("cannot prepare the job directory: {e}"),
            );
            let _ = std::fs::create_dir_all(&dir);
            let _ = write_file_atomic(
                &dir.join(REPORT_FILE),
                &crate::shepherd::encode_report(&report),
                0o644,
            );
            let _ = self.inner.finished.send(report);
            return;
        }
        let (program, sub) = &self.inner.shepherd;
        let child = tokio::process::Command::new(program)
            .args(sub.iter())
            .arg(&dir)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(false)
            .spawn();
        match child {
            Ok(mut child) => {
                self.mark_running(key, true);
                let jobs = self.clone();
                tokio::spawn(async move {
                    let _ = child.wait().await;
                    jobs.shepherd_done(key);
                });
            }
            Err(e) => {
                warn!("cannot start the shepherd: {e}");
                let report = failed_report(
                    &start,
                    &self.inner.host,
                    format!("cannot start the shepherd: {e}"),
                );
                let _ = write_file_atomic(
                    &dir.join(REPORT_FILE),
                    &crate::shepherd::encode_report(&report),
                    0o644,
                );
                let _ = self.inner.finished.send(report);
            }
        }
    }

    fn mark_running(&self, key: TaskKey, on: bool) {
        if let Ok(mut r) = self.inner.running.lock() {
            if on {
                r.insert(key);
            } else {
                r.remove(&key);
            }
        }
    }

    /// A shepherd is gone: its report (or, if it wrote none, a failure) goes to the master.
    fn shepherd_done(&self, key: TaskKey) {
        self.mark_running(key, false);
        let dir = task_dir(&self.inner.dir, key);
        let report = match read_report(&dir) {
            Some(r) => r,
            None => {
                let start = std::fs::read(dir.join(START_FILE))
                    .ok()
                    .and_then(|b| gantry_proto::decode::<Order>(&b).ok())
                    .map(|o| o.start);
                let report = match start {
                    Some(s) => failed_report(
                        &s,
                        &self.inner.host,
                        "the job's shepherd ended without a report".into(),
                    ),
                    None => return,
                };
                let _ = write_file_atomic(
                    &dir.join(REPORT_FILE),
                    &crate::shepherd::encode_report(&report),
                    0o644,
                );
                report
            }
        };
        info!(
            job = key.0,
            task = key.1,
            exit = report.exit_status,
            "job finished"
        );
        let _ = self.inner.finished.send(report);
    }

    /// Kill a task's process group.
    pub fn kill(&self, key: TaskKey) {
        let dir = task_dir(&self.inner.dir, key);
        match pids(&dir) {
            (_, Some(job)) => {
                let _ = killpg(Pid::from_raw(job), Signal::SIGKILL);
            }
            (Some(shepherd), None) => {
                let _ = kill(Pid::from_raw(shepherd), Signal::SIGKILL);
            }
            _ => {}
        }
    }

    /// Send a signal to a task's process group (suspend and resume).
    pub fn signal(&self, key: TaskKey, signal: i32) {
        let dir = task_dir(&self.inner.dir, key);
        if let (_, Some(job)) = pids(&dir) {
            if let Ok(sig) = Signal::try_from(signal) {
                let _ = killpg(Pid::from_raw(job), sig);
            }
        }
    }

    /// After an execd restart: watch the shepherds that kept running, and report those
    /// that ended while the execd was away.
    pub fn adopt(&self) {
        let Ok(entries) = std::fs::read_dir(&self.inner.dir) else {
            return;
        };
        for e in entries.flatten() {
            let Some(key) = e.file_name().to_str().and_then(parse_key) else {
                continue;
            };
            let dir = e.path();
            if read_report(&dir).is_some() {
                continue; // sent with the unacknowledged reports
            }
            let alive = pids(&dir)
                .0
                .is_some_and(|p| kill(Pid::from_raw(p), None).is_ok());
            if alive {
                info!(job = key.0, task = key.1, "adopting a running job");
                self.mark_running(key, true);
                let jobs = self.clone();
                tokio::spawn(async move {
                    let (shepherd, _) = pids(&dir);
                    loop {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        let gone = shepherd.is_none_or(|p| kill(Pid::from_raw(p), None).is_err());
                        if read_report(&dir).is_some() || gone {
                            break;
                        }
                    }
                    jobs.shepherd_done(key);
                });
            } else {
                self.shepherd_done(key);
            }
        }
    }
}

/// Look up a user's account (name, home directory, supplementary groups).
fn lookup_account(uid: u32, gid: u32) -> Option<Account> {
    let user = User::from_uid(Uid::from_raw(uid)).ok().flatten()?;
    let cname = std::ffi::CString::new(user.name.clone()).ok()?;
    let groups = nix::unistd::getgrouplist(&cname, Gid::from_raw(gid))
        .map(|g| g.into_iter().map(Gid::as_raw).collect())
        .unwrap_or_else(|_| vec![gid]);
    Some(Account {
        name: user.name,
        home: user.dir.to_string_lossy().into_owned(),
        groups,
    })
}

/// Create a file with a mode (no fsync).
fn write_private(path: &Path, contents: &[u8], mode: u32) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    f.write_all(contents)
}

fn failed_report(start: &JobStart, host: &str, why: String) -> JobReport {
    let now = gantry_common::cell::unix_now() as i64;
    JobReport {
        job_id: start.job_id,
        task_id: start.task_id,
        host: host.to_string(),
        queue: start.queue.clone(),
        exit_status: 1,
        signal: None,
        failed: 100,
        failure: why,
        start_time: now,
        end_time: now,
        utime_us: 0,
        stime_us: 0,
        maxrss_kb: 0,
    }
}
