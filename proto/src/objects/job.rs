//! Jobs as the protocol carries them: the specification a submission makes, what the
//! master sends an execd to start a task, what an execd reports of its end, the
//! accounting record, and what `qstat` and `qalter` exchange.

use serde::{Deserialize, Serialize};

use super::failure::ShepherdFailure;
use crate::ids::{ArId, JobId, TaskId};

/// What a job runs: a script (its contents travel with the job) or a binary (`-b y`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobScript {
    Script {
        path: String,
        contents: Vec<u8>,
    },
    Binary {
        command: String,
    },
    /// `qrsh [command]` or `qlogin`: the task's standard streams, or its terminal, are
    /// carried to the command that submitted it ([`crate::SessionFrame`]). Without a
    /// command, a login shell.
    Interactive {
        kind: InteractiveKind,
        command: Option<String>,
    },
}

impl JobScript {
    /// What `qstat -j` shows as the job's `script_file`: the script's path, the
    /// binary's command, an interactive job's command (SGE's `QRLOGIN` or `QLOGIN` for
    /// a login session).
    pub fn script_file(&self) -> &str {
        match self {
            JobScript::Script { path, .. } => path,
            JobScript::Binary { command } => command,
            JobScript::Interactive {
                command: Some(command),
                ..
            } => command,
            JobScript::Interactive {
                kind: InteractiveKind::Qrsh,
                command: None,
            } => "QRLOGIN",
            JobScript::Interactive {
                kind: InteractiveKind::Qlogin,
                command: None,
            } => "QLOGIN",
        }
    }
}

/// Which command an interactive job came from (SGE's `QRSH` and `QLOGIN` job types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum InteractiveKind {
    Qrsh,
    Qlogin,
}

/// An array's task range `first-last:step`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRange {
    pub first: u32,
    pub last: u32,
    pub step: u32,
}

/// A job as submitted: everything `qsub` collected from the defaults files, the script's
/// `#$` lines and the command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSpec {
    pub name: String,
    pub script: JobScript,
    pub args: Vec<String>,
    /// `-S`; the queue's shell when absent.
    pub shell: Option<String>,
    /// The working directory (`-cwd`, `-wd`, else the user's home).
    pub cwd: Option<String>,
    pub stdout_path: Option<String>,
    pub stderr_path: Option<String>,
    /// `-j y`
    pub merge_output: bool,
    /// The submission environment: `SGE_O_*` values and `-v`/`-V` variables.
    pub env: Vec<(String, String)>,
    pub hard_resources: Vec<(String, String)>,
    pub soft_resources: Vec<(String, String)>,
    pub queues: Vec<String>,
    /// `-h`: the user hold (its owner, an operator or a manager sets and releases it).
    pub hold: bool,
    /// `qhold -h o`: the operator hold (operators and managers only).
    pub operator_hold: bool,
    /// `qhold -h s`: the system hold (managers only).
    pub system_hold: bool,
    pub hold_jids: Vec<String>,
    /// `-a`: not before this time (Unix seconds).
    pub start_after: Option<i64>,
    pub priority: i32,
    pub array: Option<TaskRange>,
    /// `-tc`
    pub max_running_tasks: Option<u32>,
    pub account: String,
    pub project: Option<String>,
    pub submit_host: String,
    /// `-pe name slot_range`
    pub pe: Option<(String, String)>,
    /// `-ar id`
    pub ar: Option<ArId>,
    /// `-m`: when mail is sent, SGE's letters in its order (`a` abort, `b` beginning,
    /// `e` end, `n` never, `s` suspension); empty when not given.
    pub mail_options: String,
    /// `-M`: who gets the mail (`user[@host]`); empty: the owner at the submit host.
    pub mail_list: Vec<String>,
    /// `-R y`: ask for a resource reservation.
    pub reserve: bool,
    /// `-ac`/`-sc`: the job's context, variables and values (`qstat -j` `context`).
    pub context: Vec<(String, String)>,
    /// `-i`: the file the job reads as its standard input.
    pub stdin_path: Option<String>,
    /// `-r y|n`: may the job run again when its host fails under it? Without, the
    /// queue's `rerun` decides.
    pub restart: Option<bool>,
    /// `-notify`: warn the job (`SIGUSR1` before a suspension, `SIGUSR2` before a
    /// kill) the queue's `notify` time ahead.
    pub notify: bool,
    /// `-hold_jid_ad`: array jobs (ids or names) whose task N must have left the system
    /// before this job's task N may start.
    pub hold_jids_ad: Vec<String>,
    /// `-soft -q`: queues the job prefers (a soft request, as `-soft -l`).
    pub soft_queues: Vec<String>,
    /// `-dl`: the deadline initiation time (seconds since the epoch), for users in
    /// `deadlineusers`.
    pub deadline: Option<i64>,
    /// `-js`: the job's share among its owner's jobs.
    pub job_share: u32,
    /// `-shell y` (with `-b y`): the command line goes through the job's shell (`shell
    /// -c "command args"`, as SGE runs it); without it Gantry executes the command
    /// directly with its arguments as given (SGE's `-shell n`).
    pub binary_shell: bool,
    /// `-now y`: start at once or not at all.
    pub immediate: bool,
    /// `-pty y`: the job runs with a pseudo terminal as its controlling terminal.
    pub pty: bool,
    /// `-binding`, as SGE prints it (`set linear:2`).
    pub binding: Option<String>,
    /// `-masterq`: the queues (instances) a parallel job's master task may run in.
    pub masterq: Vec<String>,
    /// `-ckpt`: the checkpointing environment (the job runs only in queues listing it).
    pub ckpt: Option<String>,
    /// `-c`: when to checkpoint (`smxr` letters or `n`), or an interval, as given.
    pub ckpt_when: Option<String>,
    /// `-C`: the prefix the script's embedded options were read with, when given.
    pub directive_prefix: Option<String>,
    /// `-w n|w|e`: how the job was verified at submission (or by `qalter -w`), kept as
    /// SGE keeps it (`qstat -j`'s `verify_suitable_queues`).
    pub verify: Verify,
}

impl JobSpec {
    /// Is the job held by any of its holds (user, operator, system)? Predecessors
    /// (`-hold_jid`) are not a hold of the job's own.
    pub fn held(&self) -> bool {
        self.hold || self.operator_hold || self.system_hold
    }

    /// A `qsub -b y COMMAND` job as qsub starts it before any option: no requests, the
    /// account `sge`, everything else unset. Callers set what differs.
    pub fn binary(name: &str, command: &str, submit_host: &str) -> JobSpec {
        JobSpec {
            name: name.into(),
            script: JobScript::Binary {
                command: command.into(),
            },
            args: Vec::new(),
            shell: None,
            cwd: None,
            stdout_path: None,
            stderr_path: None,
            merge_output: false,
            env: Vec::new(),
            hard_resources: Vec::new(),
            soft_resources: Vec::new(),
            queues: Vec::new(),
            hold: false,
            operator_hold: false,
            system_hold: false,
            hold_jids: Vec::new(),
            start_after: None,
            priority: 0,
            array: None,
            max_running_tasks: None,
            account: "sge".into(),
            project: None,
            submit_host: submit_host.into(),
            pe: None,
            ar: None,
            mail_options: String::new(),
            mail_list: Vec::new(),
            reserve: false,
            context: Vec::new(),
            stdin_path: None,
            restart: None,
            notify: false,
            hold_jids_ad: Vec::new(),
            soft_queues: Vec::new(),
            deadline: None,
            job_share: 0,
            binary_shell: false,
            pty: false,
            immediate: false,
            binding: None,
            masterq: Vec::new(),
            ckpt: None,
            ckpt_when: None,
            directive_prefix: None,
            verify: Verify::None,
        }
    }
}

/// `qsub`/`qalter -ac`, `-dc`, `-sc`: a change to a job's context, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ContextChange {
    /// `-ac name[=value],...`: add or replace these.
    Add(Vec<(String, String)>),
    /// `-dc name,...`: remove these.
    Delete(Vec<String>),
    /// `-sc name[=value],...`: the context becomes exactly these.
    Set(Vec<(String, String)>),
}

/// `qsub -w`: how hard to check that a job could ever run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Verify {
    /// `-w n` (the default)
    #[default]
    None,
    /// `-w e`: refuse a job no queue instance could ever run.
    Error,
    /// `-w w`: accept it, with a warning.
    Warning,
    /// `-w v`: only say whether it could run; do not submit.
    Verify,
    /// `-w p`: only say whether it could start now, on what is free; do not submit.
    Poke,
}

impl Verify {
    /// SGE's number for the mode (`JB_verify_suitable_queues`, `qstat -j`'s
    /// `verify_suitable_queues`): its letters `nwevp` in that order.
    pub fn sge_number(self) -> u8 {
        match self {
            Verify::None => 0,
            Verify::Warning => 1,
            Verify::Error => 2,
            Verify::Verify => 3,
            Verify::Poke => 4,
        }
    }
}

/// The owner of a job, as the daemon established it at submission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobOwner {
    pub user: String,
    pub uid: u32,
    pub gid: u32,
    /// The Unix groups of the owner (primary first), for `@group` entries of usersets.
    pub groups: Vec<String>,
}

/// A task the master tells an execd to start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobStart {
    pub job_id: JobId,
    pub task_id: TaskId,
    pub spec: JobSpec,
    pub owner: JobOwner,
    pub queue: String,
    pub host: String,
    pub slots: u32,
    pub submit_time: i64,
    /// Queue limits and settings the job runs under (`h_rt`, `shell`, `tmpdir`, ...), and
    /// the global configuration's `mailer` when the job asks for mail.
    pub queue_settings: Vec<(String, String)>,
    /// The parallel environment the job was granted, if any.
    pub pe: Option<String>,
    /// Every queue instance the job was granted slots in, the master queue first
    /// (`PE_HOSTFILE`, `NHOSTS`, `NQUEUES`).
    pub granted: Vec<Grant>,
    /// How the task runs again (`RESTARTED`): 0 the first time, 1 after its host failed
    /// under it or it migrated, 2 after it migrated with a checkpoint in the arena.
    pub restarted: u32,
    /// The job's checkpointing environment, as the task runs under it.
    pub checkpoint: Option<Checkpointing>,
    /// An interactive job's session key: the master presents it when it joins the
    /// task's session for the job's owner ([`crate::TaskAttach`]).
    pub session_key: Option<Vec<u8>>,
    /// A task of the running job started by `qrsh -inherit`: its number in the job
    /// (SGE's pe task id is this number and the host's short name, `1.node2`).
    pub pe_task: Option<u32>,
}

/// A checkpointing job's environment and when it is checkpointed (`checkpoint(5)`,
/// `qsub -ckpt -c`), as the shepherd carries it out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpointing {
    pub env: Ckpt,
    /// The job's `-c` letters, else the environment's `when`.
    pub when: String,
    /// Seconds between checkpoints (`when` m: the larger of the queue's
    /// `min_cpu_interval` and the job's `-c` interval); 0 for none.
    pub interval_secs: u64,
}

/// A checkpointing environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ckpt {
    pub name: String,
    pub interface: String,
    pub ckpt_command: String,
    pub migr_command: String,
    pub restart_command: String,
    pub clean_command: String,
    pub ckpt_dir: String,
    pub signal: String,
    /// When to checkpoint: letters of `smxr`, or `n` (never).
    pub when: String,
}

impl Ckpt {
    /// A checkpointing environment with SGE's template values.
    pub fn new(name: &str) -> Ckpt {
        Ckpt {
            name: name.to_string(),
            interface: "userdefined".into(),
            ckpt_command: "none".into(),
            migr_command: "none".into(),
            restart_command: "none".into(),
            clean_command: "none".into(),
            ckpt_dir: "/tmp".into(),
            signal: "none".into(),
            when: "sx".into(),
        }
    }
}

/// Slots a job was granted in one queue instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub queue: String,
    pub host: String,
    pub slots: u32,
}

/// How a task ended, as its supervisor recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobReport {
    pub job_id: JobId,
    pub task_id: TaskId,
    pub host: String,
    pub queue: String,
    /// The exit status SGE reports: the exit code, or 128 + signal.
    pub exit_status: i32,
    /// The signal that ended the job, if one did.
    pub signal: Option<i32>,
    /// 0 when the job could be started; otherwise SGE's failure code
    /// ([`ShepherdFailure::code`]) and why.
    pub failed: u32,
    pub failure: String,
    pub start_time: i64,
    pub end_time: i64,
    /// Microseconds.
    pub utime_us: u64,
    pub stime_us: u64,
    /// Kilobytes.
    pub maxrss_kb: u64,
    /// The rest of what `qacct` shows of the task's use of the host.
    pub accounted: AccountedUsage,
    /// A checkpointing job left a checkpoint (its checkpoint or migration command
    /// succeeded): it restarts from it (`RESTARTED=2`).
    pub checkpointed: bool,
    /// A task started by `qrsh -inherit`: its number in the job.
    pub pe_task: Option<u32>,
}

/// What an accounting record holds of a task's use beyond its CPU time and largest
/// resident set: the other `getrusage` counts of its processes (SGE's `ru_*` lines of
/// `qacct`), and what the execd measured while it ran (`mem`, `io`, `iow`, `maxvmem`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountedUsage {
    pub minflt: u64,
    pub majflt: u64,
    pub nswap: u64,
    pub inblock: u64,
    pub oublock: u64,
    pub msgsnd: u64,
    pub msgrcv: u64,
    pub nsignals: u64,
    pub nvcsw: u64,
    pub nivcsw: u64,
    /// Virtual memory over time, byte seconds.
    pub mem_byte_s: u64,
    /// Bytes read and written.
    pub io_bytes: u64,
    /// Time waited for I/O, microseconds.
    pub iow_us: u64,
    /// The largest virtual memory measured, bytes.
    pub maxvmem_bytes: u64,
}

impl AccountedUsage {
    /// What several tasks used together: counts and amounts add up, the largest
    /// virtual memory is the largest of any.
    pub fn add(&mut self, o: &AccountedUsage) {
        self.minflt += o.minflt;
        self.majflt += o.majflt;
        self.nswap += o.nswap;
        self.inblock += o.inblock;
        self.oublock += o.oublock;
        self.msgsnd += o.msgsnd;
        self.msgrcv += o.msgrcv;
        self.nsignals += o.nsignals;
        self.nvcsw += o.nvcsw;
        self.nivcsw += o.nivcsw;
        self.mem_byte_s += o.mem_byte_s;
        self.io_bytes += o.io_bytes;
        self.iow_us += o.iow_us;
        self.maxvmem_bytes = self.maxvmem_bytes.max(o.maxvmem_bytes);
    }
}

/// What the C library calls a signal (`strsignal(3)` of glibc on Linux): SGE's `qacct`
/// names the signal of an exit status of 128 or more with it (`137 (Killed)`).
pub fn signal_description(signal: i32) -> String {
    const NAMES: [&str; 31] = [
        "Hangup",
        "Interrupt",
        "Quit",
        "Illegal instruction",
        "Trace/breakpoint trap",
        "Aborted",
        "Bus error",
        "Floating point exception",
        "Killed",
        "User defined signal 1",
        "Segmentation fault",
        "User defined signal 2",
        "Broken pipe",
        "Alarm clock",
        "Terminated",
        "Stack fault",
        "Child exited",
        "Continued",
        "Stopped (signal)",
        "Stopped",
        "Stopped (tty input)",
        "Stopped (tty output)",
        "Urgent I/O condition",
        "CPU time limit exceeded",
        "File size limit exceeded",
        "Virtual timer expired",
        "Profiling timer expired",
        "Window changed",
        "I/O possible",
        "Power failure",
        "Bad system call",
    ];
    // glibc keeps 32 and 33 for its threads; the real-time signals start at 34.
    match signal {
        1..=31 => NAMES[signal as usize - 1].to_string(),
        34..=64 => format!("Real-time signal {}", signal - 34),
        _ => format!("Unknown signal {signal}"),
    }
}

impl JobReport {
    /// A task's report with nothing in it yet: no exit status, no failure, no usage,
    /// started and ended at `now`.
    pub fn empty(job_id: JobId, task_id: TaskId, host: &str, now: i64) -> JobReport {
        JobReport {
            job_id,
            task_id,
            host: host.to_string(),
            queue: String::new(),
            exit_status: 0,
            signal: None,
            failed: 0,
            failure: String::new(),
            start_time: now,
            end_time: now,
            utime_us: 0,
            stime_us: 0,
            maxrss_kb: 0,
            accounted: AccountedUsage::default(),
            checkpointed: false,
            pe_task: None,
        }
    }

    /// The failure the report states, if it is one Gantry gives.
    pub fn shepherd_failure(&self) -> Option<ShepherdFailure> {
        ShepherdFailure::from_code(self.failed)
    }
}

/// One finished task's accounting record (`qacct`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountingRecord {
    pub job_id: JobId,
    pub task_id: Option<TaskId>,
    pub job_name: String,
    pub owner: String,
    pub group: String,
    pub account: String,
    pub project: Option<String>,
    pub priority: i32,
    pub slots: u32,
    pub submit_time: i64,
    /// How many runs of the task ended before this one (interrupted by a host failure
    /// or a migration, each accounted): records of one task are told apart by it.
    pub attempt: u32,
    /// The advance reservation the job ran in: its id and submission time.
    pub ar: Option<(ArId, i64)>,
    /// The parallel environment granted (SGE's `granted_pe`).
    pub granted_pe: Option<String>,
    /// The job's category as SGE writes it into the record (`-l h_rt=60 -pe smp 2`;
    /// empty for a job without requests, which `qacct` shows as `NONE`).
    pub category: String,
    pub report: JobReport,
}

/// What a pending job waits for, as `qstat -s hu|ho|hs|hj|hd|ha` selects it: its user,
/// operator and system holds, predecessors (`-hold_jid`, `-hold_jid_ad`) still in the
/// system, and a start time (`-a`) still to come. Encoded as one byte (the user hold
/// is the bit a plain `held` flag was).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Holds(pub u8);

impl Holds {
    pub const NONE: Holds = Holds(0);
    /// `-h u`: `hu`.
    pub const USER: Holds = Holds(1);
    /// `-h o`: `ho`.
    pub const OPERATOR: Holds = Holds(2);
    /// `-h s`: `hs`.
    pub const SYSTEM: Holds = Holds(4);
    /// `-hold_jid`: `hj`.
    pub const JOB_DEPENDENCY: Holds = Holds(8);
    /// `-hold_jid_ad`: `hd`.
    pub const ARRAY_DEPENDENCY: Holds = Holds(16);
    /// `-a` in the future: `ha` (the state stays `qw`, as SGE's).
    pub const START_TIME: Holds = Holds(32);

    pub fn contains(self, other: Holds) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }

    pub fn with(self, other: Holds, on: bool) -> Holds {
        match on {
            true => Holds(self.0 | other.0),
            false => self,
        }
    }

    pub fn any(self) -> bool {
        self.0 != 0
    }

    /// Shown as the `h` of `hqw`: every hold but a start time.
    pub fn letter_h(self) -> bool {
        self.0 & !Self::START_TIME.0 != 0
    }
}

/// The state of a `qstat` row; [`JobState::letters`] prints it as SGE does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobState {
    /// Waiting to be scheduled: `qw`, or `hqw` when held (`-h`, or a `-hold_jid`
    /// predecessor still in the system); which holds it waits for (`qstat -s hu`).
    Pending { holds: Holds },
    /// Could not be started and waits for `qmod -cj`: `Eqw`.
    Error,
    /// Dispatched, not yet confirmed by its execd: `t`.
    Transferring,
    /// Running: `r`.
    Running,
    /// Suspended with `qmod -sj`: `s`.
    Suspended,
    /// Suspended by its queue instance (`qmod -s`, `suspend_thresholds`): `S`.
    QueueSuspended,
    /// Deletion registered, the task still running: `dr`.
    Deleting,
    /// Finished (`qstat -s z`): `z`.
    Zombie,
}

impl JobState {
    /// SGE's state letters.
    pub fn letters(self) -> &'static str {
        match self {
            JobState::Pending { holds } if holds.letter_h() => "hqw",
            JobState::Pending { .. } => "qw",
            JobState::Error => "Eqw",
            JobState::Transferring => "t",
            JobState::Running => "r",
            JobState::Suspended => "s",
            JobState::QueueSuspended => "S",
            JobState::Deleting => "dr",
            JobState::Zombie => "z",
        }
    }

    /// Shown by `qstat -s p`: waiting, held or in error.
    pub fn is_pending(self) -> bool {
        matches!(self, JobState::Pending { .. } | JobState::Error)
    }

    /// Shown by `qstat -s r`: on an execd and not suspended (`r`, `t`, `dr`).
    pub fn is_running(self) -> bool {
        matches!(
            self,
            JobState::Running | JobState::Transferring | JobState::Deleting
        )
    }

    /// Held (the `h` of `hqw`).
    pub fn is_held(self) -> bool {
        matches!(self, JobState::Pending { holds } if holds.letter_h())
    }

    /// The holds a pending row waits for (none for any other row).
    pub fn holds(self) -> Holds {
        match self {
            JobState::Pending { holds } => holds,
            _ => Holds::NONE,
        }
    }

    /// A pending row held by a user hold (`-h`) or by none.
    pub fn pending(held: bool) -> JobState {
        JobState::Pending {
            holds: if held { Holds::USER } else { Holds::NONE },
        }
    }

    /// A row's letters: [`JobState::letters_restarted`] for a task that runs again.
    pub fn letters_of_row(self, restarted: bool) -> &'static str {
        match restarted {
            true => self.letters_restarted(),
            false => self.letters(),
        }
    }

    /// SGE's letters for a task that runs again (after a host failure or a migration):
    /// `R` in SGE's place for it (`job_get_state_string`), and no `w` (`Rq`, `hRq`,
    /// `Rr`, `dRr`).
    pub fn letters_restarted(self) -> &'static str {
        match self {
            JobState::Pending { holds } if holds.letter_h() => "hRq",
            JobState::Pending { .. } => "Rq",
            JobState::Error => "ERq",
            JobState::Transferring => "Rt",
            JobState::Running => "Rr",
            JobState::Suspended => "Rs",
            JobState::QueueSuspended => "SR",
            JobState::Deleting => "dRr",
            JobState::Zombie => "z",
        }
    }
}

impl JobView {
    /// The row's state as `qstat` prints it.
    pub fn state_letters(&self) -> &'static str {
        self.state.letters_of_row(self.restarted)
    }
}

impl std::fmt::Display for JobState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.letters())
    }
}

/// What became of one item of a request that names several (`qdel`'s jobs and tasks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemResult {
    /// What SGE prints for it.
    pub message: String,
    /// The item was refused (it does not exist, or the caller may not touch it).
    pub refused: bool,
}

/// A job task as `qstat` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobView {
    pub job_id: JobId,
    pub name: String,
    pub owner: String,
    pub priority: i32,
    pub state: JobState,
    pub submit_time: i64,
    /// Running tasks: when they started.
    pub start_time: Option<i64>,
    /// `queue@host` of a running task.
    pub queue: Option<String>,
    pub slots: u32,
    /// The task id of a running task, or the range of pending ones (`2-5:1`), empty for a
    /// plain job.
    pub tasks: String,
    pub hard_resources: Vec<(String, String)>,
    pub hold_jids: Vec<String>,
    pub is_array: bool,
    /// The task runs again (after a host failure or a migration): SGE's `R`.
    pub restarted: bool,
    /// The priority the scheduler's last run gave it (`prior`), in hundred-thousandths
    /// (what `qstat` prints with five decimals); 0 before any.
    pub prio: i64,
}

/// What `qalter`, `qhold` and `qrls` change; `None` leaves a field alone.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct JobChanges {
    /// The user hold set or released.
    pub hold: Option<bool>,
    /// The operator hold (`qhold -h o`) set or released.
    pub operator_hold: Option<bool>,
    /// The system hold (`qhold -h s`) set or released.
    pub system_hold: Option<bool>,
    pub name: Option<String>,
    pub priority: Option<i32>,
    pub hard_resources: Option<Vec<(String, String)>>,
    pub queues: Option<Vec<String>>,
    pub hold_jids: Option<Vec<String>>,
    pub start_after: Option<Option<i64>>,
    /// `-m`, as in [`JobSpec::mail_options`].
    pub mail_options: Option<String>,
    /// `-M`
    pub mail_list: Option<Vec<String>>,
    /// `-R y|n`
    pub reserve: Option<bool>,
    /// `-ac`, `-dc`, `-sc`, in order (none: the context stays).
    pub context: Vec<ContextChange>,
    /// `-r y|n`
    pub restart: Option<bool>,
    /// `-notify`
    pub notify: Option<bool>,
    /// `-hold_jid_ad`
    pub hold_jids_ad: Option<Vec<String>>,
    /// `-dl`
    pub deadline: Option<i64>,
    /// `-js`
    pub job_share: Option<u32>,
    /// `-binding`, as SGE prints it.
    pub binding: Option<String>,
    /// `-masterq`
    pub masterq: Option<Vec<String>>,
    /// `-ckpt`
    pub ckpt: Option<String>,
    /// `-c`
    pub ckpt_when: Option<String>,
    /// `-A`
    pub account: Option<String>,
    /// `-P`
    pub project: Option<String>,
    /// `-o`, `-e`, `-i`
    pub stdout_path: Option<String>,
    pub stderr_path: Option<String>,
    pub stdin_path: Option<String>,
    /// `-j y|n`
    pub merge_output: Option<bool>,
    /// `-S`
    pub shell: Option<String>,
    /// `-wd`, `-cwd`
    pub cwd: Option<String>,
    /// `-pe name range`
    pub pe: Option<(String, String)>,
    /// `-v`, `-V`: the job's whole environment list, as SGE replaces it.
    pub env: Option<Vec<(String, String)>>,
    /// `-tc`
    pub max_running_tasks: Option<u32>,
    /// `-soft -l`, `-soft -q`
    pub soft_resources: Option<Vec<(String, String)>>,
    pub soft_queues: Option<Vec<String>>,
    /// `-u user_list`: besides the jobs named, every job of these users (`*`: all).
    pub users: Vec<String>,
    /// `-w`: how the changed job is verified (`v` and `p` only verify, change nothing).
    pub verify: Verify,
    /// `-ar id`: the advance reservation (only of a job none of whose tasks runs).
    pub ar: Option<ArId>,
    /// `-ot`: the job's own override tickets (managers only).
    pub override_tickets: Option<u32>,
}

/// What a running task has used so far, as its execd measures it (`qstat -j`'s
/// `usage` line), and the cores it was bound to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskUsage {
    pub job_id: JobId,
    pub task_id: TaskId,
    /// CPU seconds (user and system, of every process of the task).
    pub cpu: f64,
    /// Memory over time: the integral of `vmem`, in GB seconds.
    pub mem: f64,
    /// Bytes read and written, in GB.
    pub io: f64,
    /// Virtual memory now and at most, in bytes (None: not measured yet).
    pub vmem: Option<f64>,
    pub maxvmem: Option<f64>,
    /// `-binding`: the cores, `socket,core:...` (None: not bound).
    pub binding: Option<String>,
}

/// A running task of a job, as `qstat -j` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunningTask {
    pub task_id: TaskId,
    pub host: String,
    /// The last measurement its execd sent (None: none yet).
    pub usage: Option<TaskUsage>,
}

/// Everything `qstat -j` shows about a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobDetail {
    pub job_id: JobId,
    pub spec: JobSpec,
    pub owner: JobOwner,
    pub group: String,
    pub submit_time: i64,
    /// Why its pending tasks do not run (SGE's "scheduling info").
    pub reasons: Vec<String>,
    /// Tasks in error state and why (`Eqw`).
    pub errors: Vec<(TaskId, String)>,
    /// Its running tasks, with what they used.
    pub running: Vec<RunningTask>,
    /// A checkpointing job: when it is checkpointed (its `-c` letters, else its
    /// environment's `when`), as SGE shows `checkpoint_attr`.
    pub checkpoint_attr: Option<String>,
    /// The job's own override tickets (`qalter -ot`; 0: none).
    pub override_tickets: u32,
    /// How many times the job was changed (SGE's `version:` line, shown when not 0).
    pub version: u32,
    /// The jobs in the system its `-hold_jid` names (SGE's `jid_predecessor_list`).
    pub predecessors: Vec<JobId>,
    /// The jobs in the system whose `-hold_jid` names this one (`jid_successor_list`).
    pub successors: Vec<JobId>,
    /// Its normalised urgency in the last scheduling cycle (SGE's `JB_nurg`; 0 before
    /// one, and for a job no cycle considered).
    pub nurg: f64,
}

/// The parts of one row's priority (`qstat -pri`, `-urg`, `-ext`): a running task's, or
/// the pending tasks' of a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriorityRow {
    pub job_id: JobId,
    /// The running task (None: the job's pending tasks).
    pub task: Option<TaskId>,
    pub prio: f64,
    pub nurg: f64,
    pub npprior: f64,
    pub ntckts: f64,
    pub urg: f64,
    pub rrcontr: f64,
    pub wtcontr: f64,
    pub dlcontr: f64,
    /// `-p`.
    pub ppri: i32,
    /// Override tickets the job was given itself (`qalter -ot`).
    pub ovrts: u32,
    pub otckt: f64,
    pub ftckt: f64,
    pub stckt: f64,
    pub share: f64,
    pub project: Option<String>,
    pub department: Option<String>,
    /// `-dl`.
    pub deadline: Option<i64>,
    /// A running task's usage so far (CPU seconds, GB seconds, GB), None before its
    /// first measurement.
    pub usage: Option<(f64, f64, f64)>,
}

/// One node of the share tree as `sge_share_mon` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShareTreeNode {
    pub path: String,
    pub user_name: String,
    pub project_name: String,
    pub shares: u32,
    pub job_count: u32,
    pub level: f64,
    pub total: f64,
    pub long_target_share: f64,
    pub short_target_share: f64,
    pub actual_share: f64,
    pub usage: f64,
    /// Decayed (cpu, mem, io).
    pub decayed: (f64, f64, f64),
    /// Long-term (cpu, mem, io).
    pub long_term: (f64, f64, f64),
    pub usage_time: i64,
}
