//! Checkpointing in the shepherd (`checkpoint(5)`, `qsub -ckpt -c`), as SGE's shepherd
//! carries it out.
//!
//! - `when` m: every `interval_secs`, an environment with commands (`application-level`,
//!   `hibernator`, `cpr`, `cray-ckpt`) runs its `ckpt_command`; a `userdefined` or
//!   `transparent` one sends the job its `signal`.
//! - A migration request (the execd sends the shepherd `SIGTTOU` when a job whose `when`
//!   has x is suspended): an environment with commands runs its `migr_command`, then the
//!   job is killed; a signal environment's job is killed at once. The task is reported
//!   as migrating (`failed` 24) and the master puts it back to pending: it runs again,
//!   `RESTARTED=2` when a checkpoint or migration command succeeded (a checkpoint is in
//!   the arena), 1 otherwise. SGE leaves the ending to the migration command; Gantry
//!   kills the job once the command is done, so that a command that does not end it
//!   cannot leave a job running that its master counts as suspended.
//! - A job that ends on its own (or is deleted) runs the environment's `clean_command`.
//!
//! The commands run as the job's owner, with its environment, in its working directory,
//! through `/bin/sh -c`, with `$job_id`, `$job_pid`, `$ckpt_dir` and SGE's other
//! variables replaced; they are waited for, one at a time.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_common::ckpt::{expand_command, Method};
use gantry_proto::Checkpointing;
use nix::sys::signal::{SigSet, Signal};

use crate::processes::TaskProcesses;
use nix::unistd::Pid;

use crate::spawn;

/// The signal by which the execd asks a shepherd to migrate its job (SGE's too).
pub const MIGRATE: Signal = Signal::SIGTTOU;

/// Block the migration signal in the calling thread (and so in every thread it starts
/// later): it is taken by the checkpointer's own thread with `sigwait`. The job's
/// process starts with no signal blocked.
pub fn block_migrate_signal() {
    let _ = SigSet::from_iter([MIGRATE]).thread_block();
}

/// How a command runs: as the job runs, without its standard streams.
pub struct CommandContext {
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
    pub drop_privileges: bool,
    /// SGE's variables (`$host`, `$job_id`, ...) and their values.
    pub variables: Vec<(&'static str, String)>,
}

impl CommandContext {
    /// Run `cmd` (unless `none`) and wait for it: did it succeed?
    fn run(&self, what: &str, cmd: &str, notes: &Mutex<Vec<String>>) -> bool {
        if cmd.trim().is_empty() || cmd.eq_ignore_ascii_case("none") {
            return false;
        }
        let line = expand_command(cmd, |name| {
            self.variables
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        });
        match self.spawn_and_wait(&line) {
            Ok(true) => true,
            Ok(false) => {
                note(notes, format!("the {what} command \"{line}\" failed"));
                false
            }
            Err(e) => {
                note(
                    notes,
                    format!("cannot run the {what} command \"{line}\": {e}"),
                );
                false
            }
        }
    }

    fn spawn_and_wait(&self, line: &str) -> std::io::Result<bool> {
        let null = |write: bool| {
            std::fs::OpenOptions::new()
                .read(!write)
                .write(write)
                .open("/dev/null")
        };
        let process = spawn::JobProcess {
            program: spawn::cstring("/bin/sh")?,
            args: vec![
                spawn::cstring("sh")?,
                spawn::cstring("-c")?,
                spawn::cstring(line)?,
            ],
            env: self
                .env
                .iter()
                .map(|(k, v)| spawn::cstring(format!("{k}={v}")))
                .collect::<Result<_, _>>()?,
            cwd: spawn::cpath(&self.cwd)?,
            stdin: Some(null(false)?),
            stdout: null(true)?,
            stderr: null(true)?,
            who: spawn::Identity {
                uid: self.uid,
                gid: self.gid,
                groups: self.groups.clone(),
                drop_privileges: self.drop_privileges,
            },
            rlimits: Vec::new(),
            group: None,
            group_procs: None,
            terminal: None,
        };
        let pid = Pid::from_raw(spawn::spawn(&process)?);
        loop {
            match nix::sys::wait::waitpid(pid, None) {
                Ok(nix::sys::wait::WaitStatus::Exited(_, code)) => return Ok(code == 0),
                Ok(nix::sys::wait::WaitStatus::Signaled(..)) => return Ok(false),
                Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
}

fn note(notes: &Mutex<Vec<String>>, text: String) {
    if let Ok(mut n) = notes.lock() {
        n.push(text);
    }
}

#[derive(Default)]
struct Progress {
    /// The job has ended: nothing more is done to it.
    done: bool,
    migrated: bool,
    /// A checkpoint or migration command succeeded.
    arena: bool,
}

/// How a checkpointing task ended.
pub struct Outcome {
    pub migrated: bool,
    pub checkpointed: bool,
    /// What went wrong on the way, for the execd's log.
    pub notes: Vec<String>,
}

/// The checkpointing of one running job.
pub struct Checkpointer {
    ckpt: Checkpointing,
    method: Method,
    /// Every process of the job, which its signal and a migration's kill reach.
    processes: TaskProcesses,
    context: Arc<CommandContext>,
    progress: Arc<Mutex<Progress>>,
    notes: Arc<Mutex<Vec<String>>>,
}

impl Checkpointer {
    /// Start checkpointing the job of `processes`: the periodic checkpoints, and the
    /// thread that takes migration requests.
    pub fn start(
        ckpt: &Checkpointing,
        processes: TaskProcesses,
        context: CommandContext,
    ) -> Checkpointer {
        let c = Checkpointer {
            ckpt: ckpt.clone(),
            method: Method::of(&ckpt.env.interface),
            processes,
            context: Arc::new(context),
            progress: Arc::new(Mutex::new(Progress::default())),
            notes: Arc::new(Mutex::new(Vec::new())),
        };
        if ckpt.when.contains('m') && ckpt.interval_secs > 0 {
            let me = c.handle();
            let every = Duration::from_secs(ckpt.interval_secs);
            std::thread::spawn(move || loop {
                std::thread::sleep(every);
                if !me.checkpoint() {
                    break;
                }
            });
        }
        let me = c.handle();
        std::thread::spawn(move || {
            let set = SigSet::from_iter([MIGRATE]);
            while let Ok(sig) = set.wait() {
                if sig == MIGRATE && !me.migrate() {
                    break;
                }
            }
        });
        c
    }

    fn handle(&self) -> Checkpointer {
        Checkpointer {
            ckpt: self.ckpt.clone(),
            method: self.method,
            processes: self.processes.clone(),
            context: Arc::clone(&self.context),
            progress: Arc::clone(&self.progress),
            notes: Arc::clone(&self.notes),
        }
    }

    fn signal(&self) -> Option<Signal> {
        gantry_common::signal::number(&self.ckpt.env.signal).and_then(|n| Signal::try_from(n).ok())
    }

    /// One periodic checkpoint; false once the job is gone.
    fn checkpoint(&self) -> bool {
        let Ok(mut p) = self.progress.lock() else {
            return false;
        };
        if p.done || p.migrated {
            return false;
        }
        match self.method {
            Method::Commands { .. } => {
                if self
                    .context
                    .run("checkpoint", &self.ckpt.env.ckpt_command, &self.notes)
                {
                    p.arena = true;
                }
            }
            Method::Signal => {
                if let Some(sig) = self.signal() {
                    self.processes.signal(sig);
                }
            }
        }
        true
    }

    /// A migration request; false once the job is gone.
    fn migrate(&self) -> bool {
        let Ok(mut p) = self.progress.lock() else {
            return false;
        };
        if p.done {
            return false;
        }
        if p.migrated {
            return true;
        }
        p.migrated = true;
        if let Method::Commands { .. } = self.method {
            if self
                .context
                .run("migration", &self.ckpt.env.migr_command, &self.notes)
            {
                p.arena = true;
            }
        }
        self.processes.kill();
        true
    }

    /// The job's first process has ended: no checkpoint or migration starts from now
    /// on (one under way is waited for), so that a migration request that comes late
    /// cannot turn a job that finished into one that runs again.
    pub fn job_ended(&self) {
        if let Ok(mut p) = self.progress.lock() {
            p.done = true;
        }
    }

    /// After the job and what it left are gone: clean up after a job that was not
    /// migrated, and say how it ended.
    pub fn finish(self) -> Outcome {
        self.job_ended();
        let (migrated, arena) = match self.progress.lock() {
            Ok(p) => (p.migrated, p.arena),
            Err(_) => (false, false),
        };
        if !migrated {
            if let Method::Commands { .. } = self.method {
                self.context
                    .run("clean", &self.ckpt.env.clean_command, &self.notes);
            }
        }
        Outcome {
            migrated,
            checkpointed: migrated && arena,
            notes: self.notes.lock().map(|n| n.clone()).unwrap_or_default(),
        }
    }
}
