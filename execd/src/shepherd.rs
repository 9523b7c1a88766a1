//! The supervisor of one job task (`gantry-execd shepherd DIR`), SGE's shepherd.
//!
//! It runs in its own session, so it outlives a restart of the execd that started it.
//! Before dropping privileges it opens the files only root may create in the job's
//! directory (the pid file and the report); then it becomes the job's owner, creates the
//! private TMPDIR, starts the job in a process group of its own with the SGE environment
//! and limits, enforces `h_rt`/`s_rt`, waits, and writes the report the execd sends to
//! the master.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gantry_common::value::{parse_memory, parse_time};
use gantry_proto::{JobReport, JobScript, JobStart};
use nix::sys::resource::{setrlimit, Resource};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::{Gid, Pid, Uid};

pub const START_FILE: &str = "start.bin";

/// What the execd hands a shepherd: the master's order, and the owner's account as the
/// execd looked it up. The shepherd never calls the name service itself, so that
/// `deploy/build.sh` can link it statically: it starts once per task.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Order {
    pub start: JobStart,
    pub account: Option<Account>,
}

/// A user's name, home and groups.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Account {
    pub name: String,
    pub home: String,
    pub groups: Vec<u32>,
}

pub const SCRIPT_FILE: &str = "script";
pub const PID_FILE: &str = "pids";
pub const REPORT_FILE: &str = "report";

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A report is framed as `GNTYREP1`, a 4-byte length, postcard; a file without the
/// whole frame is not a report (yet).
pub fn encode_report(r: &JobReport) -> Vec<u8> {
    let body = gantry_proto::encode(r).unwrap_or_default();
    let mut out = b"GNTYREP1".to_vec();
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

pub fn decode_report(bytes: &[u8]) -> Option<JobReport> {
    let rest = bytes.strip_prefix(b"GNTYREP1")?;
    let len = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    gantry_proto::decode(rest.get(4..4 + len)?).ok()
}

/// The value of a queue setting.
fn setting<'a>(start: &'a JobStart, key: &str) -> Option<&'a str> {
    start
        .queue_settings
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// A job's hard request for `key`, else the queue's limit.
fn limit(start: &JobStart, key: &str, parse: fn(&str) -> Option<f64>) -> Option<f64> {
    let job = start
        .spec
        .hard_resources
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| parse(v));
    let queue = setting(start, key).and_then(parse);
    match (job, queue) {
        (Some(j), Some(q)) => Some(j.min(q)),
        (a, b) => a.or(b),
    }
    .filter(|v| v.is_finite())
}

fn time_of(s: &str) -> Option<f64> {
    parse_time(s).ok()
}

fn mem_of(s: &str) -> Option<f64> {
    parse_memory(s).ok()
}

/// Expand `$JOB_ID $TASK_ID $JOB_NAME $USER $HOME $HOSTNAME` in an output path.
pub fn expand_path(path: &str, start: &JobStart, home: &str) -> String {
    let task = if start.spec.array.is_some() {
        start.task_id.to_string()
    } else {
        "undefined".to_string()
    };
    let mut out = path.to_string();
    for (var, val) in [
        ("$JOB_ID", start.job_id.to_string()),
        ("$TASK_ID", task),
        ("$JOB_NAME", start.spec.name.clone()),
        ("$USER", start.owner.user.clone()),
        ("$HOME", home.to_string()),
        ("$HOSTNAME", start.host.clone()),
    ] {
        out = out.replace(var, &val);
    }
    out
}

/// Where a stream goes: `-o`/`-e` (a directory gets SGE's default name inside it), else
/// `<cwd>/<name>.o<id>[.<task>]`.
pub fn output_path(start: &JobStart, cwd: &Path, home: &str, letter: char) -> PathBuf {
    let default_name = match start.spec.array {
        Some(_) => format!(
            "{}.{letter}{}.{}",
            start.spec.name, start.job_id, start.task_id
        ),
        None => format!("{}.{letter}{}", start.spec.name, start.job_id),
    };
    let given = if letter == 'o' {
        &start.spec.stdout_path
    } else {
        &start.spec.stderr_path
    };
    match given {
        Some(p) => {
            let p = PathBuf::from(expand_path(p, start, home));
            let p = if p.is_absolute() { p } else { cwd.join(p) };
            if p.is_dir() {
                p.join(default_name)
            } else {
                p
            }
        }
        None => cwd.join(default_name),
    }
}

struct Failure {
    code: u32,
    reason: String,
}

fn fail(code: u32, reason: impl Into<String>) -> Failure {
    Failure {
        code,
        reason: reason.into(),
    }
}

/// Run the shepherd for the job directory `dir`; returns the process exit code.
pub fn run(dir: &Path) -> i32 {
    let Ok(bytes) = std::fs::read(dir.join(START_FILE)) else {
        return 2;
    };
    let Ok(order) = gantry_proto::decode::<Order>(&bytes) else {
        return 2;
    };
    let start = &order.start;
    let _ = nix::unistd::setsid();
    let Ok(mut report_file) = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o644)
        .open(dir.join(REPORT_FILE))
    else {
        return 3;
    };
    let mut pid_file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o644)
        .open(dir.join(PID_FILE))
        .ok();
    if let Some(f) = pid_file.as_mut() {
        let _ = writeln!(f, "shepherd={}", std::process::id());
    }
    let started = now();
    let mut report = JobReport {
        job_id: start.job_id,
        task_id: start.task_id,
        host: start.host.clone(),
        queue: start.queue.clone(),
        exit_status: 0,
        signal: None,
        failed: 0,
        failure: String::new(),
        start_time: started,
        end_time: started,
        utime_us: 0,
        stime_us: 0,
        maxrss_kb: 0,
    };
    if let Err(f) = supervise(
        dir,
        start,
        order.account.as_ref(),
        &mut report,
        pid_file.as_mut(),
    ) {
        report.failed = f.code;
        report.failure = f.reason;
        report.exit_status = 1;
    }
    report.end_time = now();
    let _ = report_file.write_all(&encode_report(&report));
    let _ = report_file.sync_data();
    0
}

fn supervise(
    dir: &Path,
    start: &JobStart,
    account: Option<&Account>,
    report: &mut JobReport,
    pid_file: Option<&mut File>,
) -> Result<(), Failure> {
    let user = account.cloned().ok_or_else(|| {
        fail(
            1,
            format!(
                "can't get password entry for user \"{}\" (uid {})",
                start.owner.user, start.owner.uid
            ),
        )
    })?;
    let home = user.home.clone();
    let tmp_base = setting(start, "tmpdir").unwrap_or("/tmp");
    let tmpdir = PathBuf::from(tmp_base).join(format!(
        "{}.{}.{}",
        start.job_id,
        start.task_id,
        start.queue.split('@').next().unwrap_or("queue")
    ));
    std::fs::create_dir_all(&tmpdir)
        .map_err(|e| fail(1, format!("cannot create TMPDIR {}: {e}", tmpdir.display())))?;
    let _ = std::fs::set_permissions(&tmpdir, std::fs::Permissions::from_mode(0o700));
    let _ = nix::unistd::chown(
        &tmpdir,
        Some(Uid::from_raw(start.owner.uid)),
        Some(Gid::from_raw(start.owner.gid)),
    );
    if start.pe.is_some() {
        // The hosts and slots the job was granted, as SGE writes `$PE_HOSTFILE`.
        let path = tmpdir.join(PE_HOSTFILE);
        std::fs::write(&path, pe_hostfile(start))
            .map_err(|e| fail(1, format!("cannot write {}: {e}", path.display())))?;
        let _ = nix::unistd::chown(
            &path,
            Some(Uid::from_raw(start.owner.uid)),
            Some(Gid::from_raw(start.owner.gid)),
        );
    }
    let script_path = dir.join(SCRIPT_FILE);
    if matches!(start.spec.script, JobScript::Script { .. }) {
        let _ = nix::unistd::chown(
            &script_path,
            Some(Uid::from_raw(start.owner.uid)),
            Some(Gid::from_raw(start.owner.gid)),
        );
    }
    // Become the job's owner (unless this execd runs as that user already).
    if nix::unistd::geteuid() != Uid::from_raw(start.owner.uid) {
        let groups: Vec<Gid> = user.groups.iter().map(|g| Gid::from_raw(*g)).collect();
        nix::unistd::setgroups(&groups).map_err(|e| fail(26, format!("setgroups: {e}")))?;
        nix::unistd::setgid(Gid::from_raw(start.owner.gid))
            .map_err(|e| fail(26, format!("setgid: {e}")))?;
        nix::unistd::setuid(Uid::from_raw(start.owner.uid))
            .map_err(|e| fail(26, format!("setuid: {e}")))?;
    }
    let cwd = PathBuf::from(start.spec.cwd.clone().unwrap_or_else(|| home.clone()));
    if !cwd.is_dir() {
        return Err(fail(
            26,
            format!(
                "error: can't chdir to {}: No such file or directory",
                cwd.display()
            ),
        ));
    }
    let out_path = output_path(start, &cwd, &home, 'o');
    let err_path = if start.spec.merge_output {
        out_path.clone()
    } else {
        output_path(start, &cwd, &home, 'e')
    };
    let open = |p: &Path| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o644)
            .open(p)
            .map_err(|e| {
                fail(
                    26,
                    format!("can't open output file \"{}\": {e}", p.display()),
                )
            })
    };
    let stdout = open(&out_path)?;
    let stderr = if start.spec.merge_output {
        stdout
            .try_clone()
            .map_err(|e| fail(26, format!("can't duplicate output: {e}")))?
    } else {
        open(&err_path)?
    };
    // Limits, inherited by the job.
    if let Some(v) = limit(start, "h_vmem", mem_of) {
        let _ = setrlimit(Resource::RLIMIT_AS, v as u64, v as u64);
    }
    if let Some(v) = limit(start, "s_vmem", mem_of) {
        let hard = limit(start, "h_vmem", mem_of).map_or(u64::MAX, |h| h as u64);
        let _ = setrlimit(Resource::RLIMIT_AS, v as u64, hard);
    }
    if let Some(v) = limit(start, "h_cpu", time_of) {
        let _ = setrlimit(Resource::RLIMIT_CPU, v as u64, v as u64);
    }
    if let Some(v) = limit(start, "s_cpu", time_of) {
        let hard = limit(start, "h_cpu", time_of).map_or(u64::MAX, |h| h as u64);
        let _ = setrlimit(Resource::RLIMIT_CPU, v as u64, hard);
    }
    let shell = start
        .spec
        .shell
        .clone()
        .or_else(|| setting(start, "shell").map(str::to_string))
        .unwrap_or_else(|| "/bin/sh".to_string());
    let mut cmd = match &start.spec.script {
        JobScript::Script { .. } => {
            let mut c = Command::new(&shell);
            c.arg(&script_path);
            c
        }
        JobScript::Binary { command } => Command::new(command),
    };
    cmd.args(&start.spec.args)
        .current_dir(&cwd)
        .env_clear()
        .envs(job_environment(
            start, &user, &home, &tmpdir, &shell, &cwd, &out_path, &err_path,
        ))
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0);
    let mut child = cmd.spawn().map_err(|e| {
        let what = match &start.spec.script {
            JobScript::Script { .. } => shell.clone(),
            JobScript::Binary { command } => command.clone(),
        };
        fail(27, format!("can't start \"{what}\": {e}"))
    })?;
    let pgid = Pid::from_raw(child.id() as i32);
    if let Some(f) = pid_file {
        let _ = writeln!(f, "job={}", child.id());
    }
    report.start_time = now();
    // Run-time limits.
    let notify = setting(start, "notify").and_then(time_of).unwrap_or(60.0);
    if let Some(s_rt) = limit(start, "s_rt", time_of) {
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs_f64(s_rt));
            let _ = killpg(pgid, Signal::SIGUSR1);
            std::thread::sleep(Duration::from_secs_f64(notify));
            let _ = killpg(pgid, Signal::SIGKILL);
        });
    }
    if let Some(h_rt) = limit(start, "h_rt", time_of) {
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs_f64(h_rt));
            let _ = killpg(pgid, Signal::SIGKILL);
        });
    }
    let status = child
        .wait()
        .map_err(|e| fail(27, format!("waiting for the job failed: {e}")))?;
    // Whatever the job left in its process group goes with it.
    let _ = killpg(pgid, Signal::SIGKILL);
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => report.exit_status = code,
        (None, Some(sig)) => {
            report.signal = Some(sig);
            report.exit_status = 128 + sig;
        }
        _ => {}
    }
    if let Ok(usage) = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
    {
        let us = |t: nix::sys::time::TimeVal| (t.tv_sec() as u64) * 1_000_000 + t.tv_usec() as u64;
        report.utime_us = us(usage.user_time());
        report.stime_us = us(usage.system_time());
        report.maxrss_kb = usage.max_rss() as u64;
    }
    let _ = std::fs::remove_dir_all(&tmpdir);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn job_environment(
    start: &JobStart,
    user: &Account,
    home: &str,
    tmpdir: &Path,
    shell: &str,
    cwd: &Path,
    out_path: &Path,
    err_path: &Path,
) -> Vec<(String, String)> {
    let spec = &start.spec;
    let mut env: Vec<(String, String)> = spec.env.clone();
    let (task, first, last, step) = match spec.array {
        Some(r) => (
            start.task_id.to_string(),
            r.first.to_string(),
            r.last.to_string(),
            r.step.to_string(),
        ),
        None => (
            "undefined".to_string(),
            "undefined".to_string(),
            "undefined".to_string(),
            "undefined".to_string(),
        ),
    };
    let tmp = tmpdir.to_string_lossy().into_owned();
    let mut hosts: Vec<&str> = start.granted.iter().map(|g| g.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let mut set = vec![
        ("HOME", home.to_string()),
        ("USER", user.name.clone()),
        ("LOGNAME", user.name.clone()),
        ("SHELL", shell.to_string()),
        ("PATH", format!("{tmp}:/usr/local/bin:/usr/bin:/bin")),
        ("JOB_ID", start.job_id.to_string()),
        ("JOB_NAME", spec.name.clone()),
        ("REQUEST", spec.name.clone()),
        (
            "JOB_SCRIPT",
            match &spec.script {
                JobScript::Script { path, .. } => path.clone(),
                JobScript::Binary { command } => command.clone(),
            },
        ),
        ("SGE_TASK_ID", task),
        ("SGE_TASK_FIRST", first),
        ("SGE_TASK_LAST", last),
        ("SGE_TASK_STEPSIZE", step),
        ("NSLOTS", start.slots.to_string()),
        ("NHOSTS", hosts.len().max(1).to_string()),
        ("NQUEUES", start.granted.len().max(1).to_string()),
        (
            "QUEUE",
            start.queue.split('@').next().unwrap_or("").to_string(),
        ),
        ("HOSTNAME", start.host.clone()),
        ("TMPDIR", tmp.clone()),
        ("TMP", tmp),
        ("ENVIRONMENT", "BATCH".to_string()),
        ("SGE_CWD_PATH", cwd.to_string_lossy().into_owned()),
        ("SGE_STDOUT_PATH", out_path.to_string_lossy().into_owned()),
        ("SGE_STDERR_PATH", err_path.to_string_lossy().into_owned()),
        ("SGE_ACCOUNT", spec.account.clone()),
    ];
    if let Some(pe) = &start.pe {
        set.push(("PE", pe.clone()));
        set.push((
            "PE_HOSTFILE",
            tmpdir.join(PE_HOSTFILE).to_string_lossy().into_owned(),
        ));
    }
    for (k, v) in set {
        env.retain(|(ek, _)| ek != k);
        env.push((k.to_string(), v));
    }
    env
}

/// The name of the PE host file in the task's TMPDIR.
const PE_HOSTFILE: &str = "pe_hostfile";

/// `host slots queue@host UNDEFINED`, one line per granted queue instance, the master
/// queue first.
fn pe_hostfile(start: &JobStart) -> String {
    start
        .granted
        .iter()
        .map(|g| format!("{} {} {}@{} UNDEFINED\n", g.host, g.slots, g.queue, g.host))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_proto::{JobOwner, JobSpec, TaskRange};

    fn start() -> JobStart {
        JobStart {
            job_id: 42,
            task_id: 3,
            spec: JobSpec {
                name: "hello".into(),
                script: JobScript::Binary {
                    command: "/bin/true".into(),
                },
                args: vec![],
                shell: None,
                cwd: None,
                stdout_path: None,
                stderr_path: None,
                merge_output: false,
                env: vec![],
                hard_resources: vec![("h_rt".into(), "0:1:0".into())],
                soft_resources: vec![],
                queues: vec![],
                hold: false,
                hold_jids: vec![],
                start_after: None,
                priority: 0,
                array: Some(TaskRange {
                    first: 1,
                    last: 5,
                    step: 1,
                }),
                max_running_tasks: None,
                account: "sge".into(),
                project: None,
                submit_host: "head".into(),
                pe: None,
                ar: None,
            },
            owner: JobOwner {
                user: "u1".into(),
                uid: 1000,
                gid: 1000,
                groups: vec!["u1".into()],
            },
            queue: "all.q@n1".into(),
            host: "n1".into(),
            slots: 1,
            submit_time: 0,
            queue_settings: vec![("h_rt".into(), "0:0:30".into())],
            pe: None,
            granted: vec![gantry_proto::Grant {
                queue: "all.q".into(),
                host: "n1".into(),
                slots: 1,
            }],
        }
    }

    #[test]
    fn the_pe_hostfile_lists_every_grant() {
        let mut s = start();
        s.pe = Some("mpi".into());
        s.granted.push(gantry_proto::Grant {
            queue: "all.q".into(),
            host: "n2".into(),
            slots: 3,
        });
        assert_eq!(
            pe_hostfile(&s),
            "n1 1 all.q@n1 UNDEFINED\nn2 3 all.q@n2 UNDEFINED\n"
        );
    }

    #[test]
    fn paths_and_limits() {
        let s = start();
        assert_eq!(
            expand_path(
                "$HOME/out/$JOB_NAME.$JOB_ID.$TASK_ID.$USER@$HOSTNAME",
                &s,
                "/home/u1"
            ),
            "/home/u1/out/hello.42.3.u1@n1"
        );
        assert_eq!(
            output_path(&s, Path::new("/nonexistent"), "/home/u1", 'o'),
            PathBuf::from("/nonexistent/hello.o42.3")
        );
        assert_eq!(
            limit(&s, "h_rt", time_of),
            Some(30.0),
            "the queue's smaller limit wins"
        );
        assert_eq!(limit(&s, "h_vmem", mem_of), None);
    }

    #[test]
    fn reports_round_trip_and_partial_ones_are_not_reports() {
        let r = JobReport {
            job_id: 1,
            task_id: 1,
            host: "h".into(),
            queue: "all.q@h".into(),
            exit_status: 3,
            signal: None,
            failed: 0,
            failure: String::new(),
            start_time: 1,
            end_time: 2,
            utime_us: 5,
            stime_us: 6,
            maxrss_kb: 7,
        };
        let bytes = encode_report(&r);
        assert_eq!(decode_report(&bytes), Some(r));
        assert_eq!(decode_report(&bytes[..bytes.len() - 1]), None);
        assert_eq!(decode_report(b""), None);
    }
}
