//! The execd's jobs: one directory per task under `HOME/jobs`, a shepherd per task, and
//! reports kept on disk until the master acknowledges them, so that no completion is lost
//! or counted twice across execd restarts, master restarts or network cuts.

use gantry_proto::{JobId, JobReport, JobScript, JobStart, ShepherdFailure, TaskId};
use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_common::recent::{Recent, NAME_SERVICE_TTL};
use gantry_net::cell::write_file_atomic;
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::{Gid, Pid, Uid, User};
use std::process::ExitStatus;
use tokio::sync::mpsc::UnboundedSender;
use tracing::{info, warn};

use crate::cgroup::TaskGroup;
use crate::mail::Plan;
use crate::private_fs::{self, Dir};
use crate::processes::{is_shepherd_of, TaskProcesses};
/// `qmod -r` asked for the task to run again: its end is reported as a rescheduling.
const RESCHEDULE_FILE: &str = "reschedule";

use crate::shepherd::{
    decode_report, Account, Order, TaskRecord, REPORT_FILE, SCRIPT_FILE, START_FILE,
};

/// A task key: the job, its array task, and 0 for the job's own task or the number of
/// a task `qrsh -inherit` started in it.
pub type TaskKey = (JobId, TaskId, u32);

/// The key of a task a start order names.
pub fn key_of(start: &JobStart) -> TaskKey {
    (start.job_id, start.task_id, start.pe_task.unwrap_or(0))
}

/// The directory name of a task: `job.task`, and `job.task.n` for a task `qrsh
/// -inherit` started.
pub fn task_name(key: TaskKey) -> String {
    match key.2 {
        0 => format!("{}.{}", key.0, key.1),
        n => format!("{}.{}.{n}", key.0, key.1),
    }
}

#[derive(Clone)]
pub struct Jobs {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    /// `dir`, held open: task directories are created through it.
    jobs_dir: Dir,
    /// Where task control groups go (cgroup v2), if this host has a writable hierarchy.
    cgroup_parent: Option<PathBuf>,
    controller_parents: Vec<(String, PathBuf)>,
    /// The shepherd: `gantry-shepherd` next to this executable, else `gantry-execd shepherd`.
    shepherd: (PathBuf, Option<&'static str>),
    host: String,
    /// Finished tasks go here as they end (the session forwards them when connected).
    finished: UnboundedSender<JobReport>,
    /// Tasks whose shepherd runs now.
    running: Mutex<BTreeSet<TaskKey>>,
    /// Job owners' accounts, looked up once a minute at most.
    accounts: Mutex<Recent<(u32, u32), Account>>,
    /// The mail plans of running tasks whose job asked for mail (`qsub -m`).
    mail: Mutex<HashMap<TaskKey, Plan>>,
    /// Running tasks whose job asked to be warned before a suspension or kill
    /// (`qsub -notify`), with their queue's `notify` time.
    notify: Mutex<HashMap<TaskKey, Duration>>,
    /// Per task, how many suspensions and resumptions were asked for: a suspension
    /// waiting out its `notify` time happens only if nothing was asked since.
    suspend_orders: Mutex<HashMap<TaskKey, u64>>,
    /// This host's processors, for `-binding`.
    topology: gantry_common::binding::Topology,
    /// The cores running tasks were bound to.
    bound: Mutex<HashMap<TaskKey, Vec<(u32, u32)>>>,
    /// What running tasks used, up to their last measurement.
    used: Mutex<HashMap<TaskKey, crate::usage::Accumulated>>,
}

fn task_dir(base: &Path, key: TaskKey) -> PathBuf {
    base.join(task_name(key))
}

fn parse_key(name: &str) -> Option<TaskKey> {
    let mut parts = name.split('.');
    let job = parts.next()?.parse().ok()?;
    let task = parts.next()?.parse().ok()?;
    let pe_task = match parts.next() {
        None => 0,
        Some(n) => n.parse().ok().filter(|n| *n > 0)?,
    };
    parts.next().is_none().then_some((job, task, pe_task))
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
        let jobs_dir = Dir::open_no_follow(&dir)?;
        if !jobs_dir.is_private()? {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "{} must be a directory of this execd's user that nobody else may write to",
                    dir.display()
                ),
            ));
        }
        let cgroup_parent = crate::cgroup::parent();
        match &cgroup_parent {
            Some(p) => info!("each job task gets a control group in {}", p.display()),
            None => info!("no writable cgroup v2 hierarchy: job tasks are tracked by the shepherd's process tree (see docs/admin/execution-hosts.md)"),
        }
        let unit = crate::cgroup::controllers::unit_of(
            &std::fs::canonicalize(home).unwrap_or_else(|_| home.to_path_buf()),
        );
        let controller_parents = crate::cgroup::controllers::parents(&unit);
        match controller_parents.is_empty() {
            false => info!(
                "job tasks are limited in the cgroup v1 controllers {}",
                controller_parents
                    .iter()
                    .map(|(c, p)| format!("{c} ({})", p.display()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            true => info!("no writable cgroup v1 memory, pids or cpu controller: job tasks are limited by setrlimit only"),
        }
        Ok(Jobs {
            inner: Arc::new(Inner {
                dir,
                jobs_dir,
                cgroup_parent,
                controller_parents,
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
                mail: Mutex::new(HashMap::new()),
                notify: Mutex::new(HashMap::new()),
                suspend_orders: Mutex::new(HashMap::new()),
                topology: crate::binding::host_topology(),
                bound: Mutex::new(HashMap::new()),
                used: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// Tasks whose shepherd runs now.
    /// The socket of a running interactive task's session (its shepherd listens on it
    /// once the task has started).
    pub fn session_socket(&self, key: TaskKey) -> Option<PathBuf> {
        let running = self.inner.running.lock().ok()?.contains(&key);
        running.then(|| crate::shepherd::session::socket_path(&task_dir(&self.inner.dir, key)))
    }

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
        out.sort_by_key(|r| (r.job_id, r.task_id, r.pe_task));
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
        let key = key_of(&start);
        let name = task_name(key);
        let dir = task_dir(&self.inner.dir, key);
        let account = self.account(start.owner.uid, start.owner.gid);
        let result = (|| -> std::io::Result<()> {
            // Created exclusively, in the execd's own directory: an existing one means
            // the task was started already (a repeated order after a reconnect).
            let task = self.inner.jobs_dir.create_dir(&name, 0o755)?;
            // Not fsynced: if the host crashes before the job starts, the master sends
            // the order again when this execd registers without the task.
            if let JobScript::Script { contents, .. } = &start.spec.script {
                // The job's shell reads it as the owner.
                let mut script = task.create_file(SCRIPT_FILE, 0o700)?;
                script.write_all(contents)?;
                nix::unistd::fchown(
                    script.as_fd(),
                    Some(Uid::from_raw(start.owner.uid)),
                    Some(Gid::from_raw(start.owner.gid)),
                )?;
            }
            let order = Order {
                account: account.clone(),
                start: start.clone(),
                cgroup_parent: self.inner.cgroup_parent.clone(),
                controller_parents: self.inner.controller_parents.clone(),
                binding: self.bind(key, &start),
                procedure_users: crate::shepherd::look_up_users(&start),
            };
            let bytes = gantry_proto::encode(&order).map_err(std::io::Error::other)?;
            task.create_file(START_FILE, 0o600)?.write_all(&bytes)?;
            Ok(())
        })();
        match result {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return,
            Err(e) => {
                warn!(
                    job = %start.job_id,
                    task = %start.task_id,
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
                if let Some(plan) = Plan::of(&start, account, crate::shepherd::now()) {
                    plan.started();
                    self.remember_mail(key, plan);
                }
                self.remember_notify(key, &start);
                let jobs = self.clone();
                tokio::spawn(async move {
                    let how = child.wait().await.ok();
                    jobs.shepherd_done(key, how).await;
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

    /// `-binding`: the cores a task gets (none free as asked: it runs unbound, as in
    /// SGE), held until it ends.
    fn bind(&self, key: TaskKey, start: &JobStart) -> Option<crate::binding::TaskBinding> {
        use gantry_common::binding::{choose, parse};
        let request = parse(start.spec.binding.as_deref()?).ok()?;
        let mut bound = self.inner.bound.lock().ok()?;
        let in_use = bound.values().flatten().copied().collect();
        let Some(cores) = choose(&self.inner.topology, &in_use, &request.strategy) else {
            info!(
                job = %key.0,
                task = %key.1,
                "no cores free as the binding asks: the task runs unbound"
            );
            return None;
        };
        let cpus = self.inner.topology.processors(&cores);
        bound.insert(key, cores.clone());
        Some(crate::binding::TaskBinding {
            kind: request.kind,
            cores,
            cpus,
        })
    }

    /// SGE's `m_topology_inuse`: this host's topology with the cores bound tasks hold in
    /// lower case (`SccCC`); None while no task is bound (the sensor's value stands).
    pub fn topology_inuse(&self) -> Option<String> {
        let bound = self.inner.bound.lock().ok()?;
        if bound.is_empty() {
            return None;
        }
        let in_use = bound.values().flatten().copied().collect();
        Some(self.inner.topology.text(&in_use))
    }

    /// Measure every running task (its processes now) and say what each has used so
    /// far, with the cores it is bound to.
    pub fn usage(&self) -> Vec<gantry_proto::TaskUsage> {
        let now = std::time::Instant::now();
        let mut out = Vec::new();
        // The tasks `qrsh -inherit` started are accounted when they end.
        for key in self.running().into_iter().filter(|k| k.2 == 0) {
            let dir = task_dir(&self.inner.dir, key);
            let record = TaskRecord::read(&dir);
            let tree = match &record.cgroup {
                Some(_) => Vec::new(),
                None => task_processes(&record, &dir).pids(),
            };
            let Some(sample) = crate::usage::sample(record.job, record.cgroup.as_deref(), &tree)
            else {
                continue;
            };
            let Ok(mut used) = self.inner.used.lock() else {
                break;
            };
            let a = used
                .entry(key)
                .and_modify(|a| a.add(sample, now))
                .or_insert_with(|| crate::usage::Accumulated::first(sample, now));
            let binding = self.inner.bound.lock().ok().and_then(|b| {
                b.get(&key).map(|cores| {
                    let list: Vec<String> = cores.iter().map(|(s, c)| format!("{s},{c}")).collect();
                    list.join(":")
                })
            });
            out.push(gantry_proto::TaskUsage {
                job_id: key.0,
                task_id: key.1,
                cpu: a.last.cpu,
                mem: a.mem,
                io: a.last.io / 1e9,
                vmem: (a.last.vmem > 0.0).then_some(a.last.vmem),
                maxvmem: (a.maxvmem > 0.0).then_some(a.maxvmem),
                binding,
            });
        }
        out
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

    /// A shepherd is gone: its report goes to the master. A shepherd that ended without
    /// one (killed, or crashed) leaves the task to the execd: everything left of it is
    /// killed, what it used is accounted, and the task stays running (its slot taken)
    /// until no process of it is left.
    async fn shepherd_done(&self, key: TaskKey, how: Option<ExitStatus>) {
        let dir = task_dir(&self.inner.dir, key);
        let record = TaskRecord::read(&dir);
        for note in &record.notes {
            warn!(job = %key.0, task = %key.1, "{note}");
        }
        let mut report = match read_report(&dir) {
            Some(r) => r,
            None => {
                let start = std::fs::read(dir.join(START_FILE))
                    .ok()
                    .and_then(|b| gantry_proto::decode::<Order>(&b).ok())
                    .map(|o| o.start);
                let Some(start) = start else {
                    self.mark_running(key, false);
                    return;
                };
                let how = match how {
                    Some(status) => describe_exit(status),
                    None => "ended while the execd was away".to_string(),
                };
                warn!(
                    job = %key.0,
                    task = %key.1,
                    "the job's shepherd {how} without a report: ending what is left of the task"
                );
                let report = end_orphaned_task(&start, &self.inner.host, &record, &how).await;
                let _ = write_file_atomic(
                    &dir.join(REPORT_FILE),
                    &crate::shepherd::encode_report(&report),
                    0o644,
                );
                report
            }
        };
        // Asked to run again: whatever ended the task (the kill, or its shepherd killed
        // before the job started), it ends for rescheduling.
        if dir.join(RESCHEDULE_FILE).exists() {
            report.failed = ShepherdFailure::Reschedule.code();
            report.failure = "rescheduled by qmod -r".to_string();
            let _ = write_file_atomic(
                &dir.join(REPORT_FILE),
                &crate::shepherd::encode_report(&report),
                0o644,
            );
        }
        let measured = self.inner.used.lock().ok().and_then(|mut u| u.remove(&key));
        if let Some(a) = measured {
            // What the execd measured while the task ran goes into its record, kept
            // with the report for a resend after a restart.
            report.accounted.mem_byte_s = (a.mem * 1e9) as u64;
            report.accounted.io_bytes = a.last.io as u64;
            report.accounted.maxvmem_bytes = a.maxvmem as u64;
            let _ = write_file_atomic(
                &dir.join(REPORT_FILE),
                &crate::shepherd::encode_report(&report),
                0o644,
            );
        }
        self.mark_running(key, false);
        info!(
            job = %key.0,
            task = %key.1,
            exit = report.exit_status,
            "job finished"
        );
        if let Some(plan) = self.inner.mail.lock().ok().and_then(|mut m| m.remove(&key)) {
            plan.ended(&report);
        }
        if let Ok(mut n) = self.inner.notify.lock() {
            n.remove(&key);
        }
        if let Ok(mut o) = self.inner.suspend_orders.lock() {
            o.remove(&key);
        }
        if let Ok(mut b) = self.inner.bound.lock() {
            b.remove(&key);
        }
        let _ = self.inner.finished.send(report);
    }

    /// Kill a task: its process group (the shepherd then ends the rest), and its control
    /// group; a task whose job has not started yet, through its shepherd. A job that
    /// asked for `-notify` gets `SIGUSR2` first, and the kill its queue's `notify` time
    /// later.
    pub fn kill(&self, key: TaskKey) {
        if self.report_unstarted(key) {
            return;
        }
        if let Some(delay) = self.warn(key, Signal::SIGUSR2) {
            let jobs = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                jobs.kill_now(key);
            });
            return;
        }
        self.kill_now(key);
    }

    /// End the tasks `qrsh -inherit` started in a job's task on this host: each its
    /// process group and control group (their sessions then end with them).
    pub fn kill_pe_tasks(&self, job: JobId, task: TaskId) {
        for key in self.running() {
            if key.0 == job && key.1 == task && key.2 > 0 {
                info!(job = %job, task = %task, pe_task = key.2, "killing a task of the job");
                self.kill_now(key);
            }
        }
    }

    /// A kill for a task this host has no trace of (its start order was lost with a
    /// session): reported killed, kept until acknowledged like any report, so that the
    /// master can end it. False when the task is known here.
    fn report_unstarted(&self, key: TaskKey) -> bool {
        let name = task_name(key);
        if task_dir(&self.inner.dir, key).exists()
            || self.inner.jobs_dir.create_dir(&name, 0o755).is_err()
        {
            return false;
        }
        let report =
            killed_before_start(key, &self.inner.host, gantry_net::cell::unix_now() as i64);
        let _ = write_file_atomic(
            &task_dir(&self.inner.dir, key).join(REPORT_FILE),
            &crate::shepherd::encode_report(&report),
            0o644,
        );
        let _ = self.inner.finished.send(report);
        true
    }

    /// `qmod -r`: kill the task and report it ended for rescheduling (SGE's failure 25),
    /// which its master takes as "run it again". A marker in the task's directory says
    /// so, and outlives an execd restart; a task unknown here is left alone.
    pub fn reschedule(&self, key: TaskKey) {
        let dir = task_dir(&self.inner.dir, key);
        if !dir.join(START_FILE).exists() {
            return;
        }
        if let Err(e) = write_file_atomic(&dir.join(RESCHEDULE_FILE), b"", 0o644) {
            warn!(job = %key.0, task = %key.1, "cannot mark the task for rescheduling: {e}");
            return;
        }
        info!(job = %key.0, task = %key.1, "rescheduling the task");
        self.kill_now(key);
    }

    fn kill_now(&self, key: TaskKey) {
        let dir = task_dir(&self.inner.dir, key);
        let record = TaskRecord::read(&dir);
        match (record.shepherd, record.job) {
            (_, Some(_)) => task_processes(&record, &dir).kill(),
            // Not started yet: the shepherd itself goes.
            (Some(shepherd), None) if is_shepherd_of(shepherd, &dir) => {
                let _ = kill(Pid::from_raw(shepherd), Signal::SIGKILL);
            }
            _ => {}
        }
    }

    /// `-notify`: send the warning to a running job that asked for it; the time to wait
    /// before acting.
    fn warn(&self, key: TaskKey, warning: Signal) -> Option<Duration> {
        let delay = *self.inner.notify.lock().ok()?.get(&key)?;
        let dir = task_dir(&self.inner.dir, key);
        let record = TaskRecord::read(&dir);
        record.job?;
        info!(
            job = %key.0,
            task = %key.1,
            "notifying the job with {warning}"
        );
        task_processes(&record, &dir)
            .signal(warning)
            .then_some(delay)
    }

    /// Send a signal to every process of a task (suspend and resume: its control group
    /// frozen and thawed where it has one). A job that asked
    /// for `-notify` gets `SIGUSR1` before a suspension, which comes its queue's
    /// `notify` time later.
    pub fn signal(&self, key: TaskKey, signal: i32) {
        let Ok(sig) = Signal::try_from(signal) else {
            return;
        };
        // A checkpointing job whose `when` has x migrates instead of stopping, as SGE's
        // execd turns the suspension into a migration.
        if sig == Signal::SIGSTOP && self.migrates_on_suspend(key) {
            self.migrate(key);
            return;
        }
        let order = self.inner.suspend_orders.lock().ok().map(|mut o| {
            let n = o.entry(key).or_insert(0);
            *n += 1;
            *n
        });
        if sig == Signal::SIGSTOP {
            if let Some(delay) = self.warn(key, Signal::SIGUSR1) {
                let jobs = self.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    // Resumed (or suspended again) meanwhile: that order stands.
                    let latest = jobs
                        .inner
                        .suspend_orders
                        .lock()
                        .ok()
                        .and_then(|o| o.get(&key).copied());
                    if latest == order {
                        jobs.signal_now(key, sig);
                    }
                });
                return;
            }
        }
        self.signal_now(key, sig);
    }

    /// Does the task's checkpointing environment say `when` has this letter (x: it
    /// migrates when suspended; s: when its execd shuts down with its jobs)?
    fn checkpoints_when(&self, key: TaskKey, letter: char) -> bool {
        std::fs::read(task_dir(&self.inner.dir, key).join(START_FILE))
            .ok()
            .and_then(|b| gantry_proto::decode::<Order>(&b).ok())
            .and_then(|o| o.start.checkpoint)
            .is_some_and(|c| c.when.contains(letter))
    }

    fn migrates_on_suspend(&self, key: TaskKey) -> bool {
        self.checkpoints_when(key, 'x')
    }

    /// `qconf -kej`: end every task before the execd shuts down; a checkpointing job
    /// whose `when` has s migrates (it runs again elsewhere or later), the others are
    /// killed, as SGE's execd does.
    pub fn end_all_for_shutdown(&self) {
        for key in self.running() {
            if self.checkpoints_when(key, 's') {
                self.migrate(key);
            } else {
                info!(
                    job = %key.0,
                    task = %key.1,
                    "killing the job: its execd shuts down"
                );
                self.kill_now(key);
            }
        }
    }

    /// Ask the task's shepherd to migrate its job (checkpoint, end it, report it as
    /// migrating).
    fn migrate(&self, key: TaskKey) {
        let record = TaskRecord::read(&task_dir(&self.inner.dir, key));
        if let Some(shepherd) = record.shepherd {
            info!(job = %key.0, task = %key.1, "migrating the checkpointing job");
            let _ = kill(Pid::from_raw(shepherd), crate::checkpoint::MIGRATE);
        }
    }

    fn signal_now(&self, key: TaskKey, sig: Signal) {
        let dir = task_dir(&self.inner.dir, key);
        let record = TaskRecord::read(&dir);
        if record.job.is_some() {
            let processes = task_processes(&record, &dir);
            let done = match sig {
                Signal::SIGSTOP => processes.suspend(),
                Signal::SIGCONT => processes.resume(),
                other => processes.signal(other),
            };
            if done && matches!(sig, Signal::SIGSTOP | Signal::SIGCONT) {
                let plan = self
                    .inner
                    .mail
                    .lock()
                    .ok()
                    .and_then(|m| m.get(&key).cloned());
                if let Some(plan) = plan {
                    plan.suspension(sig == Signal::SIGSTOP);
                }
            }
        }
    }

    fn remember_notify(&self, key: TaskKey, start: &JobStart) {
        if !start.spec.notify {
            return;
        }
        let secs = start
            .queue_settings
            .iter()
            .find(|(k, _)| k == "notify")
            .and_then(|(_, v)| gantry_common::value::parse_time(v).ok())
            .filter(|t| t.is_finite() && *t >= 0.0)
            .unwrap_or(60.0);
        if let Ok(mut n) = self.inner.notify.lock() {
            n.insert(key, Duration::from_secs_f64(secs));
        }
    }

    fn remember_mail(&self, key: TaskKey, plan: Plan) {
        if let Ok(mut m) = self.inner.mail.lock() {
            m.insert(key, plan);
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
            // The mails still to send (not the start's: it was sent before).
            let order = std::fs::read(dir.join(START_FILE))
                .ok()
                .and_then(|b| gantry_proto::decode::<Order>(&b).ok());
            let record = TaskRecord::read(&dir);
            if let Some(order) = order {
                let started = record.start.unwrap_or(order.start.submit_time);
                self.remember_notify(key, &order.start);
                if let (Some(b), Ok(mut bound)) = (&order.binding, self.inner.bound.lock()) {
                    bound.insert(key, b.cores.clone());
                }
                if let Some(plan) = Plan::of(&order.start, order.account, started) {
                    self.remember_mail(key, plan);
                }
            }
            // A shepherd that had not written its pid when the execd went away is
            // looked for among the processes: taken for gone, its task would be
            // ended and accounted while it runs on (and accounted again at its end).
            let shepherd = record
                .shepherd
                .or_else(|| crate::processes::find_shepherd_of(&dir));
            let alive = shepherd.is_some_and(|p| kill(Pid::from_raw(p), None).is_ok());
            self.mark_running(key, true);
            let jobs = self.clone();
            if alive {
                info!(job = %key.0, task = %key.1, "adopting a running job");
            }
            tokio::spawn(async move {
                loop {
                    let gone = shepherd.is_none_or(|p| kill(Pid::from_raw(p), None).is_err());
                    if read_report(&dir).is_some() || gone {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                jobs.shepherd_done(key, None).await;
            });
        }
    }
}

/// Every process of the task in `dir` as its `pids` file names them: its control
/// group, the tree below its shepherd (while that pid is still its shepherd), its job's
/// process group.
fn task_processes(record: &TaskRecord, dir: &Path) -> TaskProcesses {
    TaskProcesses::new(
        record.cgroup.clone().map(|path| TaskGroup { path }),
        record
            .shepherd
            .filter(|p| is_shepherd_of(*p, dir))
            .map(Pid::from_raw),
        record.job.map(Pid::from_raw),
    )
}

fn describe_exit(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (_, Some(sig)) => format!(
            "was killed by {}",
            Signal::try_from(sig).map_or_else(|_| format!("signal {sig}"), |s| s.to_string())
        ),
        (Some(code), _) => format!("exited with status {code}"),
        _ => "ended".to_string(),
    }
}

/// The task of a shepherd that died: kill everything left of it (its control group and
/// process group), wait until no process of it is left, and account what it used: the
/// real wall clock from the job's start, and its CPU time (the control group's, else
/// what its processes had used when they were killed). Its TMPDIR is removed.
async fn end_orphaned_task(
    start: &JobStart,
    host: &str,
    record: &TaskRecord,
    how: &str,
) -> JobReport {
    let group = record.cgroup.clone().map(|path| TaskGroup { path });
    let pgid = record.job.map(Pid::from_raw);
    // CPU time of the processes still there, for hosts without a control group.
    let sampled = pgid.map(cpu_of_process_group).unwrap_or_default();
    let mut waited = Duration::ZERO;
    loop {
        if let Some(g) = &group {
            g.kill_all();
        }
        if let Some(p) = pgid {
            let _ = killpg(p, Signal::SIGKILL);
        }
        let left = group.as_ref().is_some_and(TaskGroup::populated)
            || pgid.is_some_and(|p| killpg(p, None).is_ok());
        if !left {
            break;
        }
        if waited.as_secs() > 0 && waited.as_millis() % 60_000 < 50 {
            warn!(
                job = %start.job_id,
                task = %start.task_id,
                "processes of the task do not end; its slot stays taken"
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += Duration::from_millis(50);
    }
    let cpu = group.as_ref().and_then(TaskGroup::cpu_usage);
    if let Some(g) = &group {
        let _ = g.remove();
    }
    if let Some(tmpdir) = &record.tmpdir {
        if let Err(e) = private_fs::remove_task_tmpdir(tmpdir) {
            warn!(
                job = %start.job_id,
                task = %start.task_id,
                "cannot remove TMPDIR {}: {e}",
                tmpdir.display()
            );
        }
    }
    let now = gantry_net::cell::unix_now() as i64;
    let (utime_us, stime_us) = match cpu {
        Some(c) => (c.user_us, c.system_us),
        None => sampled,
    };
    JobReport {
        job_id: start.job_id,
        task_id: start.task_id,
        host: host.to_string(),
        queue: start.queue.clone(),
        exit_status: 128 + Signal::SIGKILL as i32,
        signal: Some(Signal::SIGKILL as i32),
        failed: ShepherdFailure::AfterJob.code(),
        failure: format!("the job's shepherd {how}; the execd killed what was left of the task"),
        start_time: record.start.unwrap_or(now),
        end_time: now,
        utime_us,
        stime_us,
        maxrss_kb: 0,
        accounted: Default::default(),
        checkpointed: false,
        pe_task: start.pe_task,
    }
}

/// User and system CPU time (microseconds) of the processes in a process group, with
/// that of their children they waited for.
fn cpu_of_process_group(pgid: Pid) -> (u64, u64) {
    let tick = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|t| *t > 0)
        .unwrap_or(100) as u64;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return (0, 0);
    };
    let mut total = (0u64, 0u64);
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        // After "pid (comm)": state ppid pgrp session tty tpgid flags minflt cminflt
        // majflt cmajflt utime stime cutime cstime ...
        let f: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        if f.get(2).and_then(|v| v.parse::<i32>().ok()) != Some(pgid.as_raw()) {
            continue;
        }
        total.0 += (num(11) + num(13)) * 1_000_000 / tick;
        total.1 += (num(12) + num(14)) * 1_000_000 / tick;
    }
    total
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
        shell: user.shell.to_string_lossy().into_owned(),
    })
}

/// The report of a task killed before it started here: SIGKILL, no run time.
pub fn killed_before_start(key: TaskKey, host: &str, now: i64) -> JobReport {
    JobReport {
        exit_status: 128 + 9,
        signal: Some(9),
        pe_task: (key.2 > 0).then_some(key.2),
        ..JobReport::empty(key.0, key.1, host, now)
    }
}

fn failed_report(start: &JobStart, host: &str, why: String) -> JobReport {
    let now = gantry_net::cell::unix_now() as i64;
    JobReport {
        queue: start.queue.clone(),
        exit_status: 1,
        signal: None,
        failed: ShepherdFailure::AfterJob.code(),
        failure: why,
        ..killed_before_start(key_of(start), host, now)
    }
}
