//! The procedures the shepherd runs around the job, as SGE's does: the queue's (or the
//! cluster's) `prolog` before it and `epilog` after it, its parallel environment's
//! `start_proc_args` and `stop_proc_args` between them (see
//! [`gantry_common::procedure`]). Each runs with the job's environment, in its working
//! directory and its control group, as the job's owner or the user its `user@` names;
//! the prolog's and epilog's output goes to the job's output files, a parallel
//! environment's to `REQNAME.poJID` and `REQNAME.peJID`. The execd looks the named
//! users up (the shepherd never calls the name service: see [`super::Order`]).

use std::ffi::CString;

use gantry_common::procedure::{self, ExitReason, ProcedureKind, Verdict};
use nix::unistd::User;

use super::*;

/// A user a procedure's `user@` names, as the execd looked it up.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcedureUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
}

/// The setting each procedure of a task comes in (see the master's `job_start`).
pub fn setting_key(kind: ProcedureKind) -> &'static str {
    match kind {
        ProcedureKind::Prolog => "prolog",
        ProcedureKind::PeStart => "pe_start_proc_args",
        ProcedureKind::PeStop => "pe_stop_proc_args",
        ProcedureKind::Epilog => "epilog",
    }
}

const KINDS: [ProcedureKind; 4] = [
    ProcedureKind::Prolog,
    ProcedureKind::PeStart,
    ProcedureKind::PeStop,
    ProcedureKind::Epilog,
];

/// The users the task's procedures name with `user@`, looked up (by the execd). One
/// that is unknown here is left out: its procedure fails before it starts.
pub fn look_up_users(start: &JobStart) -> Vec<ProcedureUser> {
    let mut users: Vec<ProcedureUser> = Vec::new();
    for kind in KINDS {
        let Some(text) = setting(start, setting_key(kind)) else {
            continue;
        };
        let Ok(Some(p)) = procedure::command_line(kind, text, |_| String::new()) else {
            continue;
        };
        let Some(name) = p.user else { continue };
        if users.iter().any(|u| u.name == name) {
            continue;
        }
        let Some(user) = User::from_name(&name).ok().flatten() else {
            continue;
        };
        let groups = CString::new(name.clone())
            .ok()
            .and_then(|c| nix::unistd::getgrouplist(&c, user.gid).ok())
            .map_or_else(
                || vec![user.gid.as_raw()],
                |g| g.into_iter().map(Gid::as_raw).collect(),
            );
        users.push(ProcedureUser {
            name,
            uid: user.uid.as_raw(),
            gid: user.gid.as_raw(),
            groups,
        });
    }
    users
}

/// What every procedure of a task shares: the job's environment, working directory,
/// owner and control group.
pub(super) struct Runner<'a> {
    pub start: &'a JobStart,
    pub owner: spawn::Identity,
    pub owner_name: &'a str,
    pub users: &'a [ProcedureUser],
    pub env: Vec<(String, String)>,
    pub cwd: &'a Path,
    pub tmpdir: &'a Path,
    pub group: Option<&'a Path>,
}

/// Where a procedure's output goes.
#[derive(Clone, Copy)]
pub(super) struct Streams<'a> {
    pub stdout: &'a File,
    pub stderr: &'a File,
}

impl Runner<'_> {
    /// Whether the task has the procedure.
    pub fn has(&self, kind: ProcedureKind) -> bool {
        setting(self.start, setting_key(kind)).is_some_and(|t| !procedure::is_none(t))
    }

    /// The value of a procedure's `$variable`.
    fn variable(&self, name: &str) -> String {
        let s = self.start;
        match name {
            "host" => s.host.split('.').next().unwrap_or(&s.host).to_string(),
            "job_owner" => self.owner_name.to_string(),
            "job_id" => s.job_id.to_string(),
            "job_name" => s.spec.name.clone(),
            // SGE's word when the job has no processor set.
            "processors" => "UNDEFINED".to_string(),
            "queue" => s.queue.split('@').next().unwrap_or("").to_string(),
            "pe_hostfile" => self.tmpdir.join(PE_HOSTFILE).to_string_lossy().into_owned(),
            "pe" => s.pe.clone().unwrap_or_default(),
            "pe_slots" => s.slots.to_string(),
            _ => String::new(),
        }
    }

    /// Run the procedure `kind` if the task has one, and wait for it; `extra` are
    /// variables of its environment beyond the job's (the epilog's
    /// `SGE_JOBEXIT_STAT`). A status other than 0 is the failure it means.
    pub fn run(
        &self,
        kind: ProcedureKind,
        streams: Streams<'_>,
        extra: &[(&str, String)],
    ) -> Result<(), Failure> {
        let (before, during) = codes(kind);
        let Some(text) = setting(self.start, setting_key(kind)) else {
            return Ok(());
        };
        let command = procedure::command_line(kind, text, |n| self.variable(n))
            .map_err(|e| fail(before, e.to_string()))?;
        let Some(command) = command else {
            return Ok(());
        };
        let who = match &command.user {
            None => spawn::Identity {
                uid: self.owner.uid,
                gid: self.owner.gid,
                groups: self.owner.groups.clone(),
                drop_privileges: self.owner.drop_privileges,
            },
            Some(name) => {
                let u = self.users.iter().find(|u| &u.name == name).ok_or_else(|| {
                    fail(
                        before,
                        format!("can't get password entry for user \"{name}\""),
                    )
                })?;
                spawn::Identity {
                    uid: u.uid,
                    gid: u.gid,
                    groups: u.groups.clone(),
                    drop_privileges: nix::unistd::geteuid().as_raw() != u.uid,
                }
            }
        };
        let program = command.argv.first().cloned().unwrap_or_default();
        let cant_start =
            |e: std::io::Error| fail(during, gantry_common::os_error::exec_failed(&program, &e));
        let mut env = self.env.clone();
        for (k, v) in extra {
            env.retain(|(ek, _)| ek != k);
            env.push((k.to_string(), v.clone()));
        }
        let path = env
            .iter()
            .rev()
            .find(|(k, _)| k == "PATH")
            .map_or(environment::DEFAULT_PATH, |(_, v)| v.as_str());
        let clone = |f: &File| {
            f.try_clone()
                .map_err(|e| fail(before, format!("can't duplicate output: {}", strerror(&e))))
        };
        // The procedure joins the task's control group after its fork rather than being
        // cloned into it: once the job's processes were killed through `cgroup.kill`,
        // Linux 6.18 kills at birth every process cloned into that group (seen here:
        // the epilog died of SIGKILL before its exec); one that joins is not killed.
        let group_procs = self.group.and_then(|g| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(g.join("cgroup.procs"))
                .ok()
        });
        let process = spawn::JobProcess {
            program: spawn::resolve(&program, path).map_err(cant_start)?,
            args: spawn::cstrings(&command.argv).map_err(cant_start)?,
            env: spawn::environment(&env).map_err(cant_start)?,
            cwd: spawn::cpath(self.cwd).map_err(cant_start)?,
            stdin: None,
            stdout: clone(streams.stdout)?,
            stderr: clone(streams.stderr)?,
            who,
            rlimits: Vec::new(),
            group: None,
            group_procs,
            terminal: None,
        };
        let pid = spawn::spawn(&process).map_err(cant_start)?;
        drop(process);
        let status = loop {
            match nix::sys::wait::waitpid(Pid::from_raw(pid), None) {
                Ok(status) => break status,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => {
                    return Err(fail(
                        during,
                        format!("waiting for the {} failed: {}", kind.name(), e.desc()),
                    ))
                }
            }
        };
        let exit_status = match status {
            nix::sys::wait::WaitStatus::Exited(_, code) => code,
            nix::sys::wait::WaitStatus::Signaled(_, sig, _) => 128 + sig as i32,
            _ => 0,
        };
        let reason = ExitReason { kind, exit_status }.to_string();
        match procedure::verdict(exit_status) {
            Verdict::Success => Ok(()),
            Verdict::Reschedule => Err(fail(ShepherdFailure::Reschedule, reason)),
            Verdict::JobError => Err(fail(ShepherdFailure::ApplicationError, reason)),
            Verdict::QueueError => Err(fail(during, reason)),
        }
    }

    /// A parallel environment procedure's output files: `REQNAME.poJID` and
    /// `REQNAME.peJID` (`.poJID.TASK` of an array task) beside the job's standard
    /// output, opened with the owner's rights.
    pub fn pe_streams(&self, out_path: &Path, user: &Account) -> Result<(File, File), Failure> {
        let dir = out_path
            .parent()
            .filter(|d| !d.as_os_str().is_empty() && d.is_dir())
            .unwrap_or(self.cwd);
        let s = self.start;
        let name = |letter: &str| match s.spec.array {
            Some(_) => format!("{}.{letter}{}.{}", s.spec.name, s.job_id, s.task_id),
            None => format!("{}.{letter}{}", s.spec.name, s.job_id),
        };
        let _owner =
            ActingAsOwner::enter(self.owner.uid, self.owner.gid, &user.groups).map_err(|e| {
                fail(
                    ShepherdFailure::BeforePeStart,
                    format!("cannot take the identity of the job owner: {}", e.desc()),
                )
            })?;
        let open = |letter: &str| {
            let p = dir.join(name(letter));
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o644)
                .open(&p)
                .map_err(|e| {
                    fail(
                        ShepherdFailure::BeforePeStart,
                        format!(
                            "can't open output file \"{}\": {}",
                            p.display(),
                            strerror(&e)
                        ),
                    )
                })
        };
        Ok((open("po")?, open("pe")?))
    }
}

/// The failures "before" and "in" a procedure.
fn codes(kind: ProcedureKind) -> (ShepherdFailure, ShepherdFailure) {
    match kind {
        ProcedureKind::Prolog => (ShepherdFailure::BeforeProlog, ShepherdFailure::InProlog),
        ProcedureKind::PeStart => (ShepherdFailure::BeforePeStart, ShepherdFailure::InPeStart),
        ProcedureKind::PeStop => (ShepherdFailure::BeforePeStop, ShepherdFailure::InPeStop),
        ProcedureKind::Epilog => (ShepherdFailure::BeforeEpilog, ShepherdFailure::InEpilog),
    }
}
