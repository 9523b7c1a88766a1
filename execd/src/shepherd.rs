//! The supervisor of one job task (`gantry-execd shepherd DIR`), SGE's shepherd.
//!
//! It runs in its own session, so it outlives a restart of the execd that started it,
//! and it stays root (as its real and saved identity) for the whole task, so that the
//! job's owner can neither signal nor trace it. It creates the task's TMPDIR under the
//! execd's own directory and hands it over through a descriptor (see [`private_fs`]),
//! opens the job's output files with the owner's rights, starts the job in a process
//! group and, where the host has one, a control group of its own, as the owner with no
//! privilege left, enforces `h_rt`/`s_rt`, waits, ends whatever the job left behind,
//! and writes the report the execd sends to the master.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gantry_common::os_error::strerror;
use gantry_common::procedure::ProcedureKind;
use gantry_proto::{JobReport, JobScript, JobStart, ShepherdFailure};
use nix::sys::signal::Signal;
use nix::unistd::{Gid, Pid, Uid};

use crate::cgroup::TaskGroup;
use crate::private_fs;
use crate::processes::TaskProcesses;
use crate::spawn;

use limits::{limit, limits, time_of};

mod environment;
mod files;
mod limits;
mod procedures;
pub mod session;
mod terminal;
use environment::{bind_to, job_environment, pe_hostfile, PE_HOSTFILE};
use files::{create_tmpdir, ActingAsOwner};
pub use files::{expand_path, output_path};
pub use procedures::{look_up_users, ProcedureUser};
use terminal::Terminal;

pub const START_FILE: &str = "start.bin";

/// What the execd hands a shepherd: the master's order, and the owner's account as the
/// execd looked it up. The shepherd never calls the name service itself, so that
/// `deploy/build.sh` can link it statically: it starts once per task.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Order {
    pub start: JobStart,
    pub account: Option<Account>,
    /// Where to create the task's control group, if the host has cgroup v2.
    pub cgroup_parent: Option<PathBuf>,
    /// Where to create its groups in the cgroup v1 controllers that limit it:
    /// (controller, parent).
    pub controller_parents: Vec<(String, PathBuf)>,
    /// The cores the execd chose for a `-binding` request.
    pub binding: Option<crate::binding::TaskBinding>,
    /// The users the task's procedures name (`root@/path` in a prolog).
    pub procedure_users: Vec<ProcedureUser>,
}

/// A user's name, home and groups.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Account {
    pub name: String,
    pub home: String,
    pub groups: Vec<u32>,
    /// The login shell (an interactive job's shell).
    pub shell: String,
}

pub const SCRIPT_FILE: &str = "script";
pub const PID_FILE: &str = "pids";
pub const REPORT_FILE: &str = "report";

pub fn now() -> i64 {
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

struct Failure {
    code: ShepherdFailure,
    reason: String,
    /// Who met it (the owner while the shepherd acts as them), for SGE's `[uid:pid]`.
    uid: u32,
}

fn fail(code: ShepherdFailure, reason: impl Into<String>) -> Failure {
    Failure {
        code,
        reason: reason.into(),
        uid: nix::unistd::geteuid().as_raw(),
    }
}

impl Failure {
    /// The reason as SGE's shepherd words it for `qstat -j` and mail: when, who
    /// (`[uid:pid]`, the pid the shepherd's), what.
    fn stated(&self) -> String {
        format!(
            "{} [{}:{}]: {}",
            gantry_common::dates::local_time(now(), "%m/%d/%Y %H:%M:%S"),
            self.uid,
            std::process::id(),
            self.reason
        )
    }
}

/// The shepherd's notes on a task, in the task directory's `pids` file (root's, beside
/// the report): what the execd needs to end the task and clean up after it if the
/// shepherd itself dies. One `key=value` per line, appended as they become known.
pub struct TaskNotes {
    file: Option<File>,
}

impl TaskNotes {
    fn add(&mut self, key: &str, value: impl std::fmt::Display) {
        if let Some(f) = self.file.as_mut() {
            let _ = writeln!(f, "{key}={value}");
        }
    }
}

/// What the `pids` file says about a task.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    pub shepherd: Option<i32>,
    /// The job's process group (its first process).
    pub job: Option<i32>,
    /// When the job started (Unix seconds).
    pub start: Option<i64>,
    pub tmpdir: Option<PathBuf>,
    pub cgroup: Option<PathBuf>,
    /// Things the shepherd saw that the execd should log.
    pub notes: Vec<String>,
}

impl TaskRecord {
    pub fn parse(text: &str) -> TaskRecord {
        let mut r = TaskRecord::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            match key {
                "shepherd" => r.shepherd = value.trim().parse().ok(),
                "job" => r.job = value.trim().parse().ok(),
                "start" => r.start = value.trim().parse().ok(),
                "tmpdir" => r.tmpdir = Some(PathBuf::from(value)),
                "cgroup" => r.cgroup = Some(PathBuf::from(value)),
                "note" => r.notes.push(value.to_string()),
                _ => {}
            }
        }
        r
    }

    pub fn read(dir: &Path) -> TaskRecord {
        TaskRecord::parse(&std::fs::read_to_string(dir.join(PID_FILE)).unwrap_or_default())
    }
}

/// What a task holds on the host besides its processes, released when it ends.
#[derive(Default)]
struct Held {
    tmpdir: Option<PathBuf>,
    group: Option<TaskGroup>,
    controllers: Option<crate::cgroup::controllers::ControllerGroups>,
}

/// Run the shepherd for the job directory `dir`; returns the process exit code.
///
/// The shepherd keeps the identity it was started with (root) as its real and saved
/// user and group: the job's owner cannot signal, trace or kill it. It takes the owner's
/// identity only as its effective one, while it opens the job's files, and the job's
/// own process drops every privilege before it executes the job.
pub fn run(dir: &Path) -> i32 {
    let Ok(bytes) = std::fs::read(dir.join(START_FILE)) else {
        return 2;
    };
    let Ok(order) = gantry_proto::decode::<Order>(&bytes) else {
        return 2;
    };
    let start = &order.start;
    let _ = nix::unistd::setsid();
    // Before any thread starts: a migration request waits for the checkpointer's thread.
    crate::checkpoint::block_migrate_signal();
    // Processes the job leaves behind when their parents end become the shepherd's
    // children, so that it can end them too.
    let _ = nix::sys::prctl::set_child_subreaper(true);
    let Ok(mut report_file) = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o644)
        .open(dir.join(REPORT_FILE))
    else {
        return 3;
    };
    let mut notes = TaskNotes {
        file: std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .mode(0o644)
            .open(dir.join(PID_FILE))
            .ok(),
    };
    notes.add("shepherd", std::process::id());
    // Start and end stay 0 (`-/-`) unless the job itself starts.
    let started = 0;
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
        accounted: Default::default(),
        checkpointed: false,
        pe_task: start.pe_task,
    };
    let mut held = Held::default();
    if let Err(f) = supervise(dir, &order, &mut report, &mut notes, &mut held) {
        report.failed = f.code.code();
        report.failure = f.stated();
    }
    if let Some(tmpdir) = &held.tmpdir {
        if let Err(e) = private_fs::remove_task_tmpdir(tmpdir) {
            notes.add(
                "note",
                format!(
                    "cannot remove TMPDIR {}: {}",
                    tmpdir.display(),
                    strerror(&e)
                ),
            );
        }
    }
    if let Some(groups) = &held.controllers {
        limits::account_controllers(groups, start, &mut report);
        groups.remove();
    }
    if let Some(group) = &held.group {
        let _ = group.remove();
    }
    if report.start_time != 0 {
        report.end_time = now();
    }
    let _ = report_file.write_all(&encode_report(&report));
    let _ = report_file.sync_data();
    0
}

fn supervise(
    dir: &Path,
    order: &Order,
    report: &mut JobReport,
    notes: &mut TaskNotes,
    held: &mut Held,
) -> Result<(), Failure> {
    let start = &order.start;
    let user = order.account.clone().ok_or_else(|| {
        fail(
            ShepherdFailure::BeforeJob,
            format!(
                "can't get password entry for user \"{}\" (uid {})",
                start.owner.user, start.owner.uid
            ),
        )
    })?;
    let (uid, gid) = (start.owner.uid, start.owner.gid);
    let home = user.home.clone();
    let tmpdir = create_tmpdir(start, order.binding.as_ref(), notes)?;
    notes.add("tmpdir", tmpdir.display());
    held.tmpdir = Some(tmpdir.clone());
    if let Some(parent) = &order.cgroup_parent {
        // Named for the host as well: execds sharing one hierarchy (several on a
        // machine, as tests and simulations run them) never share a group.
        let name = format!("{}.{}.{}", start.host, start.job_id, start.task_id);
        match TaskGroup::create(parent, &name) {
            Ok(group) => {
                notes.add("cgroup", group.path.display());
                held.group = Some(group);
            }
            Err(e) => notes.add(
                "note",
                format!("no control group for the task: {}", strerror(&e)),
            ),
        }
    }
    if start.pe_task.is_none() && !order.controller_parents.is_empty() {
        let name = format!("{}.{}.{}", start.host, start.job_id, start.task_id);
        held.controllers =
            limits::join_controllers(&order.controller_parents, &name, start, notes)?;
    }
    let script_path = dir.join(SCRIPT_FILE);
    let cwd = PathBuf::from(start.spec.cwd.clone().unwrap_or_else(|| home.clone()));
    let interactive = matches!(start.spec.script, JobScript::Interactive { .. });
    // The job's files are found and opened with the owner's rights, never root's.
    let (out_path, err_path, stdin, stdout, stderr) = {
        let _owner = ActingAsOwner::enter(uid, gid, &user.groups).map_err(|e| {
            fail(
                ShepherdFailure::OpenOutput,
                format!("cannot take the identity of the job owner: {}", e.desc()),
            )
        })?;
        if !cwd.is_dir() {
            return Err(fail(
                ShepherdFailure::NoCwd,
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
                        ShepherdFailure::OpenOutput,
                        format!(
                            "can't open output file \"{}\": {}",
                            p.display(),
                            strerror(&e)
                        ),
                    )
                })
        };
        // An interactive job's streams go to its session, not to files.
        let open = |p: &Path| match interactive {
            true => std::fs::File::options()
                .write(true)
                .open("/dev/null")
                .map_err(|e| {
                    fail(
                        ShepherdFailure::OpenOutput,
                        format!("/dev/null: {}", strerror(&e)),
                    )
                }),
            false => open(p),
        };
        let stdout = open(&out_path)?;
        let stderr = if start.spec.merge_output {
            stdout.try_clone().map_err(|e| {
                fail(
                    ShepherdFailure::OpenOutput,
                    format!("can't duplicate output: {}", strerror(&e)),
                )
            })?
        } else {
            open(&err_path)?
        };
        // `-i`: a file the owner may read, found as an output path is.
        let stdin = match files::for_this_host(&start.spec.stdin_path, &start.host) {
            Some(p) => {
                let p = PathBuf::from(expand_path(p, start, &home));
                let p = if p.is_absolute() { p } else { cwd.join(p) };
                Some(std::fs::File::open(&p).map_err(|e| {
                    fail(
                        ShepherdFailure::OpenOutput,
                        format!(
                            "can't open input file \"{}\": {}",
                            p.display(),
                            strerror(&e)
                        ),
                    )
                })?)
            }
            None => None,
        };
        // An interactive job's streams are its session's (SGE says /dev/null).
        let (out_path, err_path) = match interactive {
            true => (PathBuf::from("/dev/null"), PathBuf::from("/dev/null")),
            false => (out_path, err_path),
        };
        (out_path, err_path, stdin, stdout, stderr)
    };
    // The prolog's and epilog's output goes where the job's does.
    let duplicate = |f: &File| {
        f.try_clone().map_err(|e| {
            fail(
                ShepherdFailure::OpenOutput,
                format!("can't duplicate output: {}", strerror(&e)),
            )
        })
    };
    let (procedure_out, procedure_err) = (duplicate(&stdout)?, duplicate(&stderr)?);
    let shell = files::for_this_host(&start.spec.shell, &start.host)
        .map(str::to_string)
        .or_else(|| setting(start, "shell").map(str::to_string))
        .unwrap_or_else(|| "/bin/sh".to_string());
    // A binary job runs its command directly, unless `-shell y` asks for the shell,
    // which then gets the command line as SGE gives it: `shell -c "command args"`.
    // An interactive job runs in its owner's login shell (SGE's qrsh_starter), a
    // command with `-c`.
    let shell = match &start.spec.script {
        JobScript::Interactive { .. }
            if files::for_this_host(&start.spec.shell, &start.host).is_none()
                && !user.shell.is_empty() =>
        {
            user.shell.clone()
        }
        _ => shell,
    };
    let what = match &start.spec.script {
        JobScript::Binary { command } if !start.spec.binary_shell => command.clone(),
        // `qrsh -noshell`: the command itself.
        JobScript::Interactive {
            command: Some(command),
            ..
        } if !start.spec.binary_shell => command.clone(),
        _ => shell.clone(),
    };
    // A job restarting from a checkpoint of a `hibernator`, `cpr` or `cray-ckpt`
    // environment runs the environment's restart command in its place, as SGE's does.
    let restart_command = start
        .checkpoint
        .as_ref()
        .filter(|c| {
            start.restarted == 2
                && gantry_common::ckpt::Method::of(&c.env.interface)
                    == gantry_common::ckpt::Method::Commands { restart: true }
                && !c.env.restart_command.eq_ignore_ascii_case("none")
        })
        .map(|c| {
            gantry_common::ckpt::expand_command(&c.env.restart_command, |name| {
                ckpt_variable(start, &user.name, c, None, name)
            })
        });
    let what = if restart_command.is_some() {
        shell.clone()
    } else {
        what
    };
    let mut env = match &start.spec.script {
        // A login session (qlogin, qrsh without a command) starts as a login does: its
        // shell reads the profile, and none of the job's variables are given (SGE's).
        JobScript::Interactive { command: None, .. } => {
            environment::login_environment(start, &user, &home, &shell)
        }
        _ => job_environment(
            start, &user, &home, &tmpdir, &shell, &cwd, &out_path, &err_path,
        ),
    };
    // The commands a job runs (qsub, qstat, qrsh) talk to this host's execd, as SGE's
    // find their cell by SGE_ROOT and SGE_CELL: the task's directory is in its home.
    if let Some(execd_home) = dir.parent().and_then(Path::parent) {
        if !matches!(
            start.spec.script,
            JobScript::Interactive { command: None, .. }
        ) {
            // And as Grid Engine's: programs that look for it by SGE_ROOT and ARC (Open
            // MPI) find Gantry's commands in $SGE_ROOT/bin/$ARC.
            let arch = gantry_common::load::sge_arch();
            let set = [
                ("GANTRY_HOME", execd_home.to_string_lossy().into_owned()),
                (
                    "SGE_ROOT",
                    crate::sge_root::root(execd_home)
                        .to_string_lossy()
                        .into_owned(),
                ),
                ("SGE_CELL", "default".to_string()),
                ("ARC", arch.clone()),
                ("SGE_ARCH", arch),
            ];
            for (name, value) in set {
                env.retain(|(k, _)| k != name);
                env.push((name.to_string(), value));
            }
        }
    }
    // `-binding env`: the job is told its processors, as SGE tells it.
    if let Some(b) = order
        .binding
        .as_ref()
        .filter(|b| b.kind == gantry_common::binding::BindingType::Env)
    {
        let cpus: Vec<String> = b.cpus.iter().map(u32::to_string).collect();
        env.push(("SGE_BINDING".to_string(), cpus.join(" ")));
    }
    // `starter_method`: the queue's job starter runs in the shell's place, given the
    // script (or command) and its arguments, and told the shell (SGE's). Not for a
    // restart command or an interactive job.
    let starter = setting(start, "starter_method")
        .filter(|s| !gantry_common::procedure::is_none(s))
        .filter(|_| !interactive && restart_command.is_none())
        .map(str::to_string);
    if starter.is_some() {
        let login = environment::login_name(&shell, setting(start, "login_shells")).is_some();
        let set = [
            ("SGE_STARTER_SHELL_PATH", shell.clone()),
            (
                "SGE_STARTER_SHELL_START_MODE",
                setting(start, "shell_start_mode")
                    .unwrap_or("posix_compliant")
                    .to_string(),
            ),
            ("SGE_STARTER_USE_LOGIN_SHELL", login.to_string()),
        ];
        for (name, value) in set {
            env.retain(|(k, _)| k != name);
            env.push((name.to_string(), value));
        }
    }
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map_or(environment::DEFAULT_PATH, |(_, v)| v.as_str());
    let mut args = vec![what.clone()];
    match &start.spec.script {
        _ if restart_command.is_some() => {
            args.push("-c".to_string());
            args.push(restart_command.clone().unwrap_or_default());
        }
        JobScript::Script { .. } => {
            if let Some(name) = environment::login_name(&shell, setting(start, "login_shells")) {
                args[0] = name;
            }
            args.push(script_path.to_string_lossy().into_owned());
            args.extend(start.spec.args.iter().cloned());
        }
        JobScript::Binary { command } if start.spec.binary_shell => {
            let line: Vec<&str> = std::iter::once(command.as_str())
                .chain(start.spec.args.iter().map(String::as_str))
                .collect();
            args.push("-c".to_string());
            args.push(line.join(" "));
        }
        JobScript::Binary { .. } => args.extend(start.spec.args.iter().cloned()),
        JobScript::Interactive {
            command: Some(_), ..
        } if !start.spec.binary_shell => args.extend(start.spec.args.iter().cloned()),
        JobScript::Interactive {
            command: Some(command),
            ..
        } => {
            let line: Vec<&str> = std::iter::once(command.as_str())
                .chain(start.spec.args.iter().map(String::as_str))
                .collect();
            args.push("-c".to_string());
            args.push(line.join(" "));
        }
        // A login shell: its name with a `-` before it, as `login` starts one.
        JobScript::Interactive { command: None, .. } => {
            let name = Path::new(&shell)
                .file_name()
                .map_or_else(|| shell.clone(), |n| n.to_string_lossy().into_owned());
            args[0] = format!("-{name}");
        }
    }
    let (what, args) = match &starter {
        Some(starter) => {
            let job = match &start.spec.script {
                JobScript::Binary { command } => command.clone(),
                _ => script_path.to_string_lossy().into_owned(),
            };
            let argv = [starter.clone(), job]
                .into_iter()
                .chain(start.spec.args.iter().cloned())
                .collect();
            (starter.clone(), argv)
        }
        None => (what, args),
    };
    // Why the job could not be started, in SGE's shepherd's words: a shell it cannot
    // find, or a command it could not execute.
    let runs_a_shell = what == shell && starter.is_none();
    let cant_start = |e: std::io::Error| {
        let reason = if runs_a_shell && e.raw_os_error() == Some(nix::libc::ENOENT) {
            format!("unable to find shell \"{what}\"")
        } else {
            gantry_common::os_error::exec_failed(&what, &e)
        };
        fail(ShepherdFailure::NoShell, reason)
    };
    // The prolog, then the parallel environment's start procedure (by the job's first
    // task only, not by those `qrsh -inherit` starts).
    let runner = procedures::Runner {
        start,
        owner: spawn::Identity {
            uid,
            gid,
            groups: user.groups.clone(),
            drop_privileges: nix::unistd::geteuid().as_raw() != uid,
        },
        owner_name: &user.name,
        users: &order.procedure_users,
        env: env.clone(),
        cwd: &cwd,
        tmpdir: &tmpdir,
        group: held.group.as_ref().map(|g| g.path.as_path()),
    };
    let job_streams = procedures::Streams {
        stdout: &procedure_out,
        stderr: &procedure_err,
    };
    let pe_streams = match start.pe_task {
        None if start.pe.is_some()
            && (runner.has(ProcedureKind::PeStart) || runner.has(ProcedureKind::PeStop)) =>
        {
            Some(runner.pe_streams(&out_path, &user)?)
        }
        _ => None,
    };
    let pe_streams = pe_streams.as_ref().map(|(out, err)| procedures::Streams {
        stdout: out,
        stderr: err,
    });
    if start.pe_task.is_none() {
        runner.run(ProcedureKind::Prolog, job_streams, &[])?;
        if let Some(streams) = &pe_streams {
            runner.run(ProcedureKind::PeStart, *streams, &[])?;
        }
    }
    let (group, group_procs) = match &held.group {
        Some(g) => (
            Some(spawn::open_group_dir(&g.path).map_err(|e| {
                fail(
                    ShepherdFailure::BeforeJob,
                    format!("cannot open the task's control group: {}", strerror(&e)),
                )
            })?),
            g.procs_for_joining().ok(),
        ),
        None => (None, None),
    };
    // `-pty y`: a pseudo terminal, the job's controlling terminal; what the job writes
    // to it goes to its standard output file.
    // An interactive job's session: joined before the job starts, so that nothing it
    // writes is lost; its streams are pipes, or a terminal.
    let (session, stdin, stdout, stderr, session_terminal) = if interactive {
        let key = start.session_key.clone().unwrap_or_default();
        let conn = session::accept(dir, &key, session::JOIN_TIMEOUT)
            .map_err(|e| fail(ShepherdFailure::BeforeJob, e))?;
        let streams = match session::streams(start.spec.pty, uid, gid) {
            Ok(s) => s,
            Err(e) => {
                let why = format!("can't open the job's streams: {}", strerror(&e));
                session::fail(conn, &why);
                return Err(fail(ShepherdFailure::NoShell, why));
            }
        };
        (
            Some((conn, streams.local)),
            Some(streams.stdin),
            streams.stdout,
            streams.stderr,
            streams.terminal,
        )
    } else {
        (None, stdin, stdout, stderr, None)
    };
    let terminal = if start.spec.pty && !interactive {
        let out = stdout.try_clone().map_err(|e| {
            fail(
                ShepherdFailure::OpenOutput,
                format!("can't duplicate output: {}", strerror(&e)),
            )
        })?;
        Some(Terminal::open(uid, gid, out).map_err(|e| {
            fail(
                ShepherdFailure::NoShell,
                format!("can't open a pseudo terminal for the job: {}", strerror(&e)),
            )
        })?)
    } else {
        None
    };
    // A command that cannot be found ends a session with why, as its start would.
    let program = match spawn::resolve(&what, path) {
        Ok(p) => p,
        Err(e) => {
            if let Some((conn, _)) = session {
                session::fail(conn, &format!("can't start \"{what}\": {}", strerror(&e)));
            }
            return Err(cant_start(e));
        }
    };
    let job = spawn::JobProcess {
        program,
        args: spawn::cstrings(&args).map_err(cant_start)?,
        env: spawn::environment(&env).map_err(cant_start)?,
        cwd: spawn::cpath(&cwd).map_err(cant_start)?,
        stdin,
        stdout,
        stderr,
        who: spawn::Identity {
            uid,
            gid,
            groups: user.groups.clone(),
            drop_privileges: nix::unistd::geteuid().as_raw() != uid,
        },
        rlimits: limits(start),
        group,
        group_procs,
        terminal: session_terminal
            .or_else(|| terminal.as_ref().and_then(|t| t.slave.try_clone().ok())),
    };
    // `-binding set`: the job's processes run on its cores' processors only (the
    // affinity is inherited by the job from this shepherd).
    if let Some(b) = order
        .binding
        .as_ref()
        .filter(|b| b.kind == gantry_common::binding::BindingType::Set)
    {
        match bind_to(&b.cpus) {
            Ok(()) => notes.add("binding", b.cores_text()),
            Err(e) => notes.add(
                "note",
                format!(
                    "cannot bind the job to processors {:?}: {e}; it runs unbound",
                    b.cpus
                ),
            ),
        }
    }
    let spawned = spawn::spawn(&job);
    let (session, child) = match (session, spawned) {
        (Some((conn, _)), Err(e)) => {
            session::fail(conn, &format!("can't start \"{what}\": {}", strerror(&e)));
            (None, Err(e))
        }
        (session, r) => (session, r),
    };
    let child = child.map_err(|e| match e.raw_os_error() {
        // The working directory, entered with the owner's rights, is not theirs.
        Some(nix::libc::EACCES | nix::libc::ENOTDIR) if !cwd_is_ok(&cwd, &job) => fail(
            ShepherdFailure::NoCwd,
            format!("error: can't chdir to {}: {}", cwd.display(), strerror(&e)),
        ),
        _ => cant_start(e),
    })?;
    drop(job);
    // The job's side of the terminal is the job's alone now.
    let terminal = terminal.map(Terminal::relay);
    let pgid = Pid::from_raw(child);
    // Every process of the job, wherever it goes: what each signal below reaches.
    let processes = TaskProcesses::new(
        held.group.clone(),
        Some(Pid::from_raw(std::process::id() as i32)),
        Some(pgid),
    );
    let relay = match session {
        Some((conn, local)) => Some(
            session::Relay::start(conn, local, processes.clone()).map_err(|e| {
                processes.kill();
                fail(
                    ShepherdFailure::NoShell,
                    format!("the session failed: {}", strerror(&e)),
                )
            })?,
        ),
        None => None,
    };
    report.start_time = now();
    notes.add("job", child);
    notes.add("start", report.start_time);
    let checkpointer = start.checkpoint.as_ref().map(|c| {
        crate::checkpoint::Checkpointer::start(
            c,
            processes.clone(),
            crate::checkpoint::CommandContext {
                env: env.clone(),
                cwd: cwd.clone(),
                uid,
                gid,
                groups: user.groups.clone(),
                drop_privileges: nix::unistd::geteuid().as_raw() != uid,
                variables: gantry_common::ckpt::VARIABLES
                    .iter()
                    .map(|v| (*v, ckpt_variable(start, &user.name, c, Some(child), v)))
                    .collect(),
            },
        )
    });
    // Run-time limits.
    let notify = setting(start, "notify").and_then(time_of).unwrap_or(60.0);
    if let Some(s_rt) = limit(start, "s_rt", time_of) {
        let processes = processes.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs_f64(s_rt));
            processes.signal(Signal::SIGUSR1);
            std::thread::sleep(Duration::from_secs_f64(notify));
            processes.kill();
        });
    }
    let h_rt = limit(start, "h_rt", time_of);
    let h_rt_reached = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    if let Some(h_rt) = h_rt {
        let reached = std::sync::Arc::clone(&h_rt_reached);
        let processes = processes.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs_f64(h_rt));
            reached.store(true, std::sync::atomic::Ordering::SeqCst);
            processes.kill();
        });
    }
    let status = loop {
        match nix::sys::wait::waitpid(pgid, None) {
            Ok(status) => break status,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => {
                return Err(fail(
                    ShepherdFailure::NoShell,
                    format!("waiting for the job failed: {}", e.desc()),
                ))
            }
        }
    };
    if let Some(c) = &checkpointer {
        c.job_ended();
    }
    // Whatever the job left goes with it: its process group, its control group, and
    // every process that ended up a child of the shepherd.
    end_what_is_left(&processes);
    if let Some(t) = terminal {
        t.finish();
    }
    if let Some(c) = checkpointer {
        let outcome = c.finish();
        for n in outcome.notes {
            notes.add("note", n);
        }
        if outcome.migrated {
            report.failed = ShepherdFailure::Migrate.code();
            report.failure = "the checkpointing job was migrated".to_string();
            report.checkpointed = outcome.checkpointed;
        }
    }
    let exit_status = match status {
        nix::sys::wait::WaitStatus::Exited(_, code) => code,
        nix::sys::wait::WaitStatus::Signaled(_, sig, _) => 128 + sig as i32,
        _ => 0,
    };
    if let Some(relay) = relay {
        relay.finish(exit_status);
    }
    match status {
        nix::sys::wait::WaitStatus::Exited(_, code) => report.exit_status = code,
        nix::sys::wait::WaitStatus::Signaled(_, sig, _) => {
            report.signal = Some(sig as i32);
            report.exit_status = 128 + sig as i32;
            // Killed at its h_rt: SGE 8.1.9 accounts it as failed 37.
            if sig == Signal::SIGKILL
                && h_rt_reached.load(std::sync::atomic::Ordering::SeqCst)
                && report.failed == 0
            {
                report.failed = ShepherdFailure::EnforcedLimit.code();
                report.failure = format!(
                    "the job reached its h_rt limit of {} s",
                    h_rt.unwrap_or_default()
                );
            }
        }
        _ => {}
    }
    // The parallel environment's stop procedure, then the epilog.
    if start.pe_task.is_none() {
        let exit = [("SGE_JOBEXIT_STAT", report.exit_status.to_string())];
        let after = match &pe_streams {
            Some(streams) => runner.run(ProcedureKind::PeStop, *streams, &exit),
            None => Ok(()),
        }
        .and_then(|()| runner.run(ProcedureKind::Epilog, job_streams, &exit));
        end_what_is_left(&processes);
        if let Err(f) = after {
            crate::usage::account_children(report);
            return Err(f);
        }
    }
    crate::usage::account_children(report);
    // Processes nobody waited for (killed above) count too.
    if let Some(cpu) = held.group.as_ref().and_then(TaskGroup::cpu_usage) {
        report.utime_us = report.utime_us.max(cpu.user_us);
        report.stime_us = report.stime_us.max(cpu.system_us);
    }
    Ok(())
}

/// The value of SGE's variable `name` in a checkpointing command (`$job_id`, ...).
fn ckpt_variable(
    start: &JobStart,
    owner: &str,
    c: &gantry_proto::Checkpointing,
    job_pid: Option<i32>,
    name: &str,
) -> String {
    match name {
        "host" => start.host.clone(),
        "job_owner" => owner.to_string(),
        "job_id" => start.job_id.to_string(),
        "job_name" => start.spec.name.clone(),
        "queue" => start.queue.split('@').next().unwrap_or("").to_string(),
        "job_pid" => job_pid.map(|p| p.to_string()).unwrap_or_default(),
        "ckpt_dir" => c.env.ckpt_dir.clone(),
        "ckpt_signal" => c.env.signal.clone(),
        _ => String::new(),
    }
}

/// Can the owner enter `cwd`? (Checked only to name the right failure.)
fn cwd_is_ok(cwd: &Path, job: &spawn::JobProcess) -> bool {
    match ActingAsOwner::enter(job.who.uid, job.who.gid, &job.who.groups) {
        Ok(_owner) => std::fs::read_dir(cwd).is_ok(),
        Err(_) => false,
    }
}

/// Kill everything left of the job once its first process has ended, and wait until
/// nothing is left (at most a minute; a process the kernel will not let go of, stuck
/// in uninterruptible sleep, is not waited for longer).
fn end_what_is_left(processes: &TaskProcesses) {
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        processes.kill();
        // Reap what has ended (the job's processes re-parented to the shepherd too).
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) | Err(_) => break,
                Ok(_) => continue,
            }
        }
        if !processes.any_left() || std::time::Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests;
