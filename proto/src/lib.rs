//! Gantry's wire protocol: plain data, no logic.
//!
//! Every message between a client command, the master and an execd is a serde type here,
//! encoded with postcard and framed with a 4-byte big-endian length. postcard is
//! positional: reordering a field or a variant changes the bytes on the wire, so
//! `tests/golden.rs` pins representative encodings, and any change to them must come with
//! a bump of [`PROTOCOL_VERSION`].
//!
//! Message names say their direction: [`ToMaster`]/[`FromMaster`] for client requests,
//! [`FromExecd`]/[`ToExecd`] between execd and master.

use serde::{Deserialize, Serialize};

pub mod frame;
pub mod ids;
pub mod objects;
pub mod rows;
pub mod selection;
pub mod whatif;

pub mod bytes;
pub use ids::{ArId, JobId, TaskId};
pub use objects::*;
pub use rows::*;
pub use selection::*;
pub use whatif::{QuotaWhatIf, WhatIf};

/// The protocol version. Both daemons and every client speak exactly one version; peers
/// with another version are refused with a message naming both.
pub const PROTOCOL_VERSION: u32 = 44;

/// Magic bytes at the start of every [`Hello`]: "GNTY".
pub const HELLO_MAGIC: [u8; 4] = *b"GNTY";

/// The ALPN protocol name for this protocol version, e.g. `gantry/1`.
pub fn alpn_current() -> Vec<u8> {
    alpn_for(PROTOCOL_VERSION)
}

/// The ALPN protocol name of a given protocol version.
pub fn alpn_for(version: u32) -> Vec<u8> {
    format!("gantry/{version}").into_bytes()
}

/// Every Gantry peer also offers this ALPN name, last. It is only ever negotiated when the
/// two peers share no protocol version; the connection then exists only to exchange
/// [`Hello`]s so that both sides can report which versions they speak.
pub const ALPN_VERSION_PROBE: &[u8] = b"gantry";

/// The first frame on every connection (client socket and QUIC control stream). Its
/// encoding must never change between versions: it is how peers of different versions
/// find out about each other.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    pub magic: [u8; 4],
    pub protocol_version: u32,
    pub role: PeerRole,
    /// The sender's software version (e.g. "0.1.0"), for logs.
    pub software: String,
}

impl Hello {
    pub fn new(role: PeerRole, software: &str) -> Self {
        Hello {
            magic: HELLO_MAGIC,
            protocol_version: PROTOCOL_VERSION,
            role,
            software: software.to_string(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PeerRole {
    Client,
    Execd,
    Master,
}

/// The answer to a [`Hello`] on the client socket: also stable across versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum HelloReply {
    Accepted {
        protocol_version: u32,
    },
    VersionMismatch {
        daemon_version: u32,
        message: String,
    },
}

/// Who is asking: established by the daemon that accepted the local connection, from the
/// kernel (`SO_PEERCRED`), never from anything the client sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    pub user: String,
    pub uid: u32,
    pub gid: u32,
    /// The host the caller is on (the master's own name, or the relaying execd's).
    pub host: String,
}

/// A request from a client command to the master (directly, or relayed by an execd).
/// Its kind (`&'static str::from(&request)`, the variant's name) labels the master's
/// request metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, strum::IntoStaticStr)]
pub enum ToMaster {
    /// `qhost`: every exec host with its load values (optionally only some hosts).
    HostInfo,
    /// `qconf -sel`
    ShowExecHostList,
    /// `qconf -se host`
    ShowExecHost { host: String },
    /// `qconf -ae host` / `qconf -Ae file` / `qconf -ae` (editor): the object as text.
    AddExecHost { text: String },
    /// `qconf -de host_list`
    DeleteExecHosts { hosts: Vec<String> },
    /// `qconf -sconf [global]`
    ShowConfig { name: String },
    /// `qconf -mconf` / `-Mconf`: the whole configuration as text.
    ModifyConfig { name: String, text: String },
    /// `qconf -sm`
    ShowManagers,
    /// `qconf -am user_list`
    AddManagers { users: Vec<String> },
    /// `qconf -dm user_list`
    DeleteManagers { users: Vec<String> },
    /// `qconf -so`
    ShowOperators,
    /// `qconf -ao user_list`
    AddOperators { users: Vec<String> },
    /// `qconf -do user_list`
    DeleteOperators { users: Vec<String> },
    /// `qconf -sc`
    ShowComplexes,
    /// `qconf -sql`
    ShowQueueList,
    /// `qconf -sq queue`
    ShowQueue { name: String },
    /// `qconf -shgrpl`
    ShowHostGroupList,
    /// `qconf -shgrp group`
    ShowHostGroup { name: String },
    /// `qsub`
    Submit { spec: Box<JobSpec>, verify: Verify },
    /// `qstat`: the jobs of these users (all if empty).
    ShowJobs { users: Vec<String> },
    /// `qdel`: job ids or `id.task` (all the caller's jobs with `-u`).
    DeleteJobs {
        ids: Vec<String>,
        users: Vec<String>,
        force: bool,
    },
    /// `qsub -sync y`: answer when the job has ended.
    WaitJob { job_id: JobId },
    /// `qacct -j`: the accounting records of a job id or name (all if absent).
    Accounting { job: Option<String> },
    /// `qstat -j`: everything about some jobs (all the caller may see if empty).
    JobDetails { ids: Vec<String> },
    /// `qalter`, `qhold`, `qrls`: change pending jobs (`id` or `id.task` references).
    AlterJobs {
        ids: Vec<String>,
        changes: Box<JobChanges>,
    },
    /// `qmod -d` / `qmod -e`: disable or enable queue instances (`queue`, `queue@host`,
    /// `@host`... as Grid Engine's wildcard queue list).
    SetQueueState {
        targets: Vec<String>,
        disable: bool,
        /// `-f`: changed whatever state the instance is in already.
        force: bool,
    },
    /// `qconf -mattr OBJECT ATTR VALUE TARGETS`
    ModifyAttribute {
        object: String,
        attr: String,
        value: String,
        targets: Vec<String>,
    },
    /// `qmod -cj`: clear the error state of jobs (`Eqw` back to `qw`).
    ClearJobErrors { ids: Vec<String> },
    /// `qstat -s z`: recently finished jobs of these users (all if empty).
    ShowFinishedJobs { users: Vec<String> },
    /// `qmod -sj` / `qmod -usj`: suspend or resume running jobs.
    SuspendJobs {
        ids: Vec<String>,
        suspend: bool,
        /// `-f`: signalled whatever state the job is in already.
        force: bool,
    },
    /// `qconf -ahgrp` / `-Ahgrp`: a new host group, as text.
    AddHostGroup { text: String },
    /// `qconf -mhgrp` / `-Mhgrp`: a changed host group, as text.
    ModifyHostGroup { text: String },
    /// `qconf -dhgrp group`
    DeleteHostGroup { name: String },
    /// `qconf -sul`
    ShowUserSetList,
    /// `qconf -su list`
    ShowUserSets { names: Vec<String> },
    /// `qconf -au users lists` (a list that does not exist is created as an ACL).
    AddUsersToSets {
        users: Vec<String>,
        sets: Vec<String>,
    },
    /// `qconf -du users lists`
    DeleteUsersFromSets {
        users: Vec<String>,
        sets: Vec<String>,
    },
    /// `qconf -dul lists`
    DeleteUserSets { names: Vec<String> },
    /// `qconf -Au file`
    AddUserSet { text: String },
    /// `qconf -Mu file`
    ModifyUserSet { text: String },
    /// `qconf -s<object> name` (`-ssconf`, `-sq`, `-sp`, `-sprj`, ...): the object as text.
    ShowObject { kind: ObjectKind, name: String },
    /// `qconf -s<object>l`: the names of all objects of a kind.
    ShowObjectList { kind: ObjectKind },
    /// `qconf -a<object>` / `-A<object>`: a new object, as text.
    AddObject { kind: ObjectKind, text: String },
    /// `qconf -m<object>` / `-M<object>`: a changed object, as text (for the complex,
    /// the whole list).
    ModifyObject { kind: ObjectKind, text: String },
    /// `qconf -d<object> names`
    DeleteObjects {
        kind: ObjectKind,
        names: Vec<String>,
    },
    /// `qconf -aattr/-mattr/-dattr/-rattr OBJECT ATTR VALUE TARGETS` (the file variants
    /// send one request per line of the file).
    EditAttribute {
        op: AttrOp,
        object: String,
        attr: String,
        value: String,
        targets: Vec<String>,
    },
    /// `qmod -c/-cq`, `-s/-sq`, `-us/-usq`: clear the error state of queue instances,
    /// suspend them (and their jobs) or resume them.
    ChangeQueueInstances {
        targets: Vec<String>,
        change: QueueChange,
        /// `-f`: changed whatever state the instance is in already.
        force: bool,
    },
    /// `qmod -r`, `-rj`, `-rq`: reschedule running jobs (`-f`: not rerunnable ones too).
    RescheduleJobs {
        targets: Vec<String>,
        kind: RescheduleTargets,
        force: bool,
    },
    /// `qconf -Mrqs file` (no name) and `-mrqs` (no name): every object of the kind
    /// replaced by those in the text.
    ReplaceObjects { kind: ObjectKind, text: String },
    /// `qquota`: the usage of every enabled resource quota rule that matches the query.
    ShowQuotas(QuotaQuery),
    /// `qstat -j` without a job: which pending jobs each kind of reason holds back.
    SchedulingSummary,
    /// `qsub -now y`: answer when the job has started, or was removed because it could
    /// not start at once.
    WaitStart { job_id: JobId },
    /// `qconf -ke[j] host_list|all` (no hosts: all): shut the execds down, with `-kej`
    /// after ending their jobs.
    KillExecds { hosts: Vec<String>, kill_jobs: bool },
    /// `qconf -km`: shut the master down.
    KillMaster,
    /// `qrsub`: grant an advance reservation (or with `-w v`, say whether it could be).
    SubmitAr { spec: Box<ArSpec> },
    /// `qrstat`: the advance reservations named (`-ar`: ids, names or patterns), else
    /// those of the users given (empty: the caller's; `*`: everyone's).
    ShowArs {
        users: Vec<String>,
        ids: Vec<String>,
    },
    /// `qrdel`: delete advance reservations (ids or names), with `-f` their jobs at
    /// once whatever their execds say.
    DeleteArs { ids: Vec<String>, force: bool },
    /// `qquota -g`: each group of the group quota tree as the next cycle allocates.
    ShowGroups,
    /// `qstat`'s default listing: the jobs of these users (all if empty) as the job
    /// lines it prints (see [`JobLine`]).
    ShowJobLines { users: Vec<String> },
    /// `qconf -clearusage`: forget the share-tree usage of these users (all users and
    /// projects if empty).
    ClearUsage { users: Vec<String> },
    /// `qstat -pri/-urg/-ext`: the parts of the priority of these users' jobs (all if
    /// empty) as the scheduler's last run worked them out.
    ShowPriorities { users: Vec<String> },
    /// `sge_share_mon`: the share tree's nodes with their usage and targets.
    ShowShareTree,
    /// `qrsh`/`qlogin`: join the session of this interactive job, which the caller
    /// owns and which runs. Answered with [`FromMaster::Attached`], after which the
    /// connection carries [`SessionFrame`]s both ways until the job ends.
    Attach { job_id: JobId },
    /// `qrsh -inherit host command`, from inside a running parallel job: start the
    /// command as a task of the job on one of its granted hosts, and join its session
    /// as [`ToMaster::Attach`] joins a job's.
    InheritTask(Box<PeTaskRequest>),
    /// `qstat -g t`: the master and slave lines of these users' running tasks.
    ShowTaskLines { users: Vec<String> },
    /// `qhost -h`: which of these names are no host of the cell's and do not resolve
    /// in the master's name service, answered with [`FromMaster::Names`] (the job
    /// commands, linked statically, never call the name service themselves).
    UnresolvedHosts { names: Vec<String> },
    /// `qselect` and `qstat`'s queue selection (`-q`, `-qs`, `-U`, `-pe`, `-l`),
    /// answered with [`FromMaster::QueuesSelected`].
    SelectQueues(QueueSelection),
    /// The HTTP API's what-if: would this job start now, where, and if not, why;
    /// nothing is submitted. Answered with [`FromMaster::WhatIf`].
    WhatIf { spec: Box<JobSpec> },
    /// The HTTP API's what-if of quota sets (`qconf -Arqs` text, each set replacing
    /// the one of its name or added): which running jobs would be past a limit, which
    /// pending tasks would start. Answered with [`FromMaster::QuotaWhatIf`].
    WhatIfQuota { rqs: String },
    /// `gantry-master backup`: write a backup of the cell (its spool as of now, job
    /// scripts, certificates and settings) to this new file on the master's host.
    /// Managers only; answered with [`FromMaster::Done`].
    Backup { path: String },
    /// `qconf -Aconf/-aconf HOST`: add a host-local configuration.
    AddConfig { name: String, text: String },
    /// `qconf -dconf host_list`: delete host-local configurations.
    DeleteConfigs { names: Vec<String> },
    /// `qconf -sconfl`: the hosts that have a local configuration, answered with
    /// [`FromMaster::Names`].
    ShowConfigList,
}

/// `qstat -g t`: the lines of one running task of a job, in its granted queue
/// instances' order: `MASTER` in the master queue, then a `SLAVE` per slot a task may
/// take (SGE's: the job's slots in each queue instance, in the master queue one less
/// when the PE's `job_is_first_task` is TRUE).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskLines {
    pub job_id: JobId,
    /// As the job's row shows it (`tasks` of [`JobView`]: empty for a job that is not
    /// an array).
    pub tasks: String,
    /// `(queue instance, master)`.
    pub lines: Vec<(String, bool)>,
    /// The task's last measured usage (`qstat -t`'s cpu, mem, io), None before its
    /// execd's first measurement.
    pub usage: Option<TaskUsage>,
}

impl ToMaster {
    /// Is this a request whose connection carries a session once it is granted?
    pub fn opens_session(&self) -> bool {
        matches!(self, ToMaster::Attach { .. } | ToMaster::InheritTask(_))
    }
}

/// `qrsh -inherit`: what to start, where, as a task of which running job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeTaskRequest {
    pub job_id: JobId,
    /// The array task (`SGE_TASK_ID`; 0 for a job that is not an array).
    pub task_id: TaskId,
    /// The host as the caller named it (`n1`, `n1.example.com`, `localhost`).
    pub host: String,
    /// The command and its arguments.
    pub command: Vec<String>,
    /// `-V`, `-v`: variables the task gets over the job's own.
    pub env: Vec<(String, String)>,
    /// `-cwd`: the caller's working directory (else the job's).
    pub cwd: Option<String>,
    /// `-noshell`: run the command itself, not through the owner's shell.
    pub noshell: bool,
    /// `-pty y`: a pseudo terminal.
    pub pty: bool,
}

/// What `qquota` asks about. An empty list means "any"; `users` empty means the caller
/// (SGE's default), `*` in it means every user.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct QuotaQuery {
    pub users: Vec<String>,
    pub hosts: Vec<String>,
    pub queues: Vec<String>,
    pub projects: Vec<String>,
    pub pes: Vec<String>,
    /// `-l`: only these resources (names or shortcuts).
    pub resources: Vec<String>,
}

/// One line group of `qquota`: a rule (`set/name` or `set/N`) for one consumer (the
/// members of its expanded filters) and its limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaRow {
    /// `max_u_slots/1`, `per_group/testers`
    pub rule: String,
    /// The rule's filters as `qquota` prints them: (`users`, `user1`) for a member of an
    /// expanded list, (`hosts`, `@allhosts`) for a plain list as written; excluded names
    /// keep their `!`.
    pub filters: Vec<(String, String)>,
    pub limits: Vec<QuotaLimit>,
}

/// One limit of a [`QuotaRow`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaLimit {
    pub resource: String,
    /// The limit in force here (a dynamic limit evaluated for the row's host).
    pub limit: String,
    /// What running jobs use of it (`None` for a fixed, non-consumable value such as
    /// `arch=lx-amd64`, printed `arch=lx-amd64`).
    pub used: Option<String>,
}

/// What `qmod` does to queue instances (besides `-d`/`-e`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum QueueChange {
    ClearError,
    Suspend,
    Unsuspend,
}

/// What `qconf -?attr` does to an attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AttrOp {
    /// `-aattr`: add an element to a list (or a `[host=value]` override).
    Add,
    /// `-mattr`: change a value, a `name=value` element or an override.
    Modify,
    /// `-dattr`: remove an element, a `name=value` element or an override.
    Delete,
    /// `-rattr`: replace the whole value.
    Replace,
}

/// The kinds of configuration object `qconf` edits as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ObjectKind {
    /// The complex (`-sc`, `-mc`, `-Mc`): one list.
    Complex,
    /// Exec hosts and the global host (`-se`, `-me`, `-Me`).
    ExecHost,
    /// The scheduler configuration (`-ssconf`, `-msconf`, `-Msconf`).
    SchedConf,
    /// Cluster queues (`-sq`, `-aq`, `-Aq`, `-mq`, `-Mq`, `-dq`).
    Queue,
    /// Parallel environments (`-sp`, `-spl`, `-ap`, `-Ap`, `-mp`, `-Mp`, `-dp`).
    Pe,
    /// Projects (`-sprj`, `-sprjl`, `-aprj`, `-Aprj`, `-mprj`, `-Mprj`, `-dprj`).
    Project,
    /// Resource quota sets (`-srqs`, `-srqsl`, `-arqs`, `-Arqs`, `-mrqs`, `-Mrqs`, `-drqs`).
    Rqs,
    /// Administrative hosts (`-sh`, `-ah`, `-dh`): the hosts manager commands may come from.
    AdminHost,
    /// Checkpointing environments (`-sckpt`, `-sckptl`, `-ackpt`, `-Ackpt`, `-mckpt`,
    /// `-Mckpt`, `-dckpt`).
    Ckpt,
    /// The tree of hierarchical group quotas (`-sgq`, `-mgq`, `-Mgq`, `-dgq`): one
    /// object, replaced whole.
    GroupTree,
    /// User objects (`-suser`, `-suserl`, `-auser`, `-Auser`, `-muser`, `-Muser`,
    /// `-duser`).
    User,
    /// The share tree (`-sstree`, `-astree`, `-Astree`, `-mstree`, `-Mstree`,
    /// `-dstree`): one object, replaced whole.
    ShareTree,
}

/// The master's answer to a [`ToMaster`] request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FromMaster {
    Hosts(HostReport),
    Names(Vec<String>),
    QueuesSelected(QueuesSelected),
    ExecHost(ExecHost),
    Config(Config),
    Complexes(Vec<ComplexAttr>),
    Queue(ClusterQueue),
    HostGroup(HostGroup),
    /// A change was made; these lines say what (SGE's `user@host added ...`).
    Done {
        messages: Vec<String>,
    },
    /// Nothing was changed, for this reason.
    Refused(Refusal),
    /// `qsub`: the job's id (and task range for an array).
    Submitted {
        job_id: JobId,
        name: String,
        array: Option<TaskRange>,
        /// `-w w`: what the verification found (`warning: no suitable queues`).
        warnings: Vec<String>,
    },
    Jobs(Vec<JobView>),
    /// `-sync y`: how the job ended (the worst task of an array).
    JobEnded {
        job_id: JobId,
        exit_status: i32,
        signal: Option<i32>,
        failed: u32,
    },
    Accounting(Vec<AccountingRecord>),
    JobDetails(Vec<JobDetail>),
    /// `qsub -w v`: the verdict.
    Verified {
        message: String,
    },
    UserSets(Vec<UserSet>),
    /// An object as `qconf` prints it.
    Text(String),
    /// `qquota`: rows in rule set order, then rule order, then consumer.
    Quotas(Vec<QuotaRow>),
    /// `qstat -j` without a job: (reason as SGE words it, the jobs it holds back).
    SchedulingSummary(Vec<(String, Vec<JobId>)>),
    /// A request naming several items (`qdel`): what became of each, in order.
    Items(Vec<ItemResult>),
    /// `qsub -now y`: the job has started.
    JobStarted {
        job_id: JobId,
    },
    /// `qrstat`: the advance reservations, by id.
    Ars(Vec<AdvanceReservation>),
    /// `qquota -g`: the root, then every group in name order.
    Groups(Vec<GroupRow>),
    /// `qstat`'s default listing, line by line (see [`ToMaster::ShowJobLines`]).
    JobLines(Vec<JobLine>),
    /// `qstat -pri/-urg/-ext`: a row per running task and per job with pending tasks.
    Priorities(Vec<PriorityRow>),
    /// `sge_share_mon`: the share tree's nodes, root first (none: no tree).
    ShareTreeNodes {
        now: i64,
        nodes: Vec<ShareTreeNode>,
    },
    /// `qstat -g t`: see [`TaskLines`].
    TaskLines(Vec<TaskLines>),
    /// The session of an interactive job's task is joined: [`SessionFrame`]s follow.
    Attached {
        job_id: JobId,
        task_id: TaskId,
        host: String,
    },
    /// What the door decided for [`ToMaster::Attach`], for the master's own shell only
    /// (never sent to a client): the task to join, where it runs, and the key its
    /// start order carried.
    SessionGranted {
        job_id: JobId,
        task_id: TaskId,
        /// A task started by `qrsh -inherit`: its number in the job.
        pe_task: Option<u32>,
        host: String,
        key: Vec<u8>,
    },
    /// See [`ToMaster::WhatIf`].
    WhatIf(WhatIf),
    /// See [`ToMaster::WhatIfQuota`].
    QuotaWhatIf(QuotaWhatIf),
}

/// Why a request was refused. The kind decides the exit status (one table, in the
/// client); the message is what the user reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub kind: RefusalKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RefusalKind {
    /// The caller lacks the privilege (`denied: ... must be manager`).
    Denied,
    /// The named object does not exist.
    NotFound,
    /// The object already exists.
    AlreadyExists,
    /// The input is malformed or violates a rule.
    Invalid,
    /// The master could not do it (disk, internal error).
    Internal,
    /// A cluster-wide limit is reached (`max_advance_reservations`: SGE exits 25).
    LimitReached,
    /// Only an operator (or a manager) may (`must be operator to set operator hold`:
    /// SGE's qhold and qrls exit 10).
    OperatorRequired,
    /// Only the job's owner (or an operator or manager) may (`must be at least owner of
    /// job`: SGE's qhold and qrls exit 18).
    OwnerRequired,
}

/// A request relayed by an execd on behalf of a local caller it vouches for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Relayed {
    pub caller: Caller,
    pub request: ToMaster,
}

/// Messages an execd sends to the master.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FromExecd {
    /// On a connection without a client certificate: join the cell with a token, asking
    /// for a certificate for this public key (raw ECDSA P-256 point).
    Join {
        token: String,
        hostname: String,
        public_key: Vec<u8>,
    },
    /// On an authenticated connection: the execd's first message after [`Hello`].
    Register { hostname: String },
    /// The host's current load values, in report order.
    LoadReport { values: Vec<LoadValue> },
    /// A task's supervisor is running it.
    JobStarted { job_id: JobId, task_id: TaskId },
    /// A task ended; the execd keeps the report on disk until the master acknowledges it.
    JobFinished(JobReport),
    /// The tasks this execd's supervisors are running now (sent after registering):
    /// jobs' own tasks, and tasks started in running jobs by `qrsh -inherit` (by
    /// number).
    RunningJobs {
        tasks: Vec<(JobId, TaskId)>,
        pe_tasks: Vec<(JobId, TaskId, u32)>,
    },
    /// What the running tasks have used so far (sent with each load report).
    TaskUsage { tasks: Vec<TaskUsage> },
}

/// Messages the master sends to an execd.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ToExecd {
    /// The answer to a successful [`FromExecd::Join`]: the host's certificate and the CA.
    Joined {
        hostname: String,
        host_cert_pem: String,
        ca_cert_pem: String,
    },
    /// The answer to [`FromExecd::Register`], and sent again whenever the settings change.
    Settings {
        load_report_time_secs: u64,
    },
    /// The master will not talk to this execd, for this reason (logged by the execd).
    Refused {
        reason: String,
    },
    StartJob(Box<JobStart>),
    /// Kill a task's whole process group.
    KillJob {
        job_id: JobId,
        task_id: TaskId,
    },
    /// `qconf -ke[j]`: shut down; with `kill_jobs`, end every job first (a
    /// checkpointing job whose `when` has s migrates), and report them.
    Shutdown {
        kill_jobs: bool,
    },
    /// The master has recorded this report durably; the execd may forget it.
    ReportAck {
        job_id: JobId,
        task_id: TaskId,
        pe_task: Option<u32>,
    },
    /// End the tasks `qrsh -inherit` started in this job on this host (the job has
    /// ended, or is deleted).
    KillPeTasks {
        job_id: JobId,
        task_id: TaskId,
    },
    /// Send a signal to a task's process group (SIGSTOP/SIGCONT for qmod -sj/-usj).
    SignalJob {
        job_id: JobId,
        task_id: TaskId,
        signal: i32,
    },
    /// `qmod -r`: kill the task and report it ended for rescheduling (failure 25).
    RescheduleJob {
        job_id: JobId,
        task_id: TaskId,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    #[error("malformed message: {0}")]
    Codec(#[from] postcard::Error),
    #[error("frame of {0} bytes exceeds the limit of {1} bytes")]
    FrameTooLarge(usize, usize),
    #[error("not a Gantry peer (bad magic {0:02x?})")]
    BadMagic([u8; 4]),
}

/// Encode a message with postcard.
/// Encode a message after the bytes `out` holds already (a frame's room for its length).
pub fn encode_after<T: Serialize>(msg: &T, out: Vec<u8>) -> Result<Vec<u8>, ProtoError> {
    Ok(postcard::to_extend(msg, out)?)
}

pub fn encode<T: Serialize>(msg: &T) -> Result<Vec<u8>, ProtoError> {
    Ok(postcard::to_stdvec(msg)?)
}

/// The bytes a listing answer (`FromMaster::Jobs` or `FromMaster::JobLines`) starts
/// with: its variant's tag (the empty list's encoding without its length).
fn listing_tag(empty: &FromMaster) -> Result<Vec<u8>, ProtoError> {
    let mut tag = encode(empty)?;
    tag.pop();
    Ok(tag)
}

/// Decode an answer that may be the listing `empty` is the empty one of: its items,
/// each decoded by `take` when it is taken and borrowed from `bytes` (`Ok(Ok(items))`),
/// or any other answer whole (`Ok(Err(answer))`).
fn decode_listing<'a, T>(
    bytes: &'a [u8],
    empty: &FromMaster,
    take: Take<'a, T>,
) -> Result<Result<Listing<'a, T>, FromMaster>, ProtoError> {
    Ok(match bytes.strip_prefix(listing_tag(empty)?.as_slice()) {
        Some(items) => {
            let (left, rest) = postcard::take_from_bytes::<usize>(items)?;
            Ok(Listing { left, rest, take })
        }
        None => Err(decode(bytes)?),
    })
}

/// Decode an answer that may be [`FromMaster::Jobs`]: a listing's rows, each decoded
/// when it is taken and borrowed from `bytes` (`Ok(Ok(rows))`), or any other answer
/// whole (`Ok(Err(answer))`).
pub fn decode_jobs_answer(bytes: &[u8]) -> Result<Result<JobRows<'_>, FromMaster>, ProtoError> {
    decode_listing(bytes, &FromMaster::Jobs(Vec::new()), JobViewRef::take_from)
}

/// The same for [`FromMaster::JobLines`].
pub fn decode_job_lines_answer(
    bytes: &[u8],
) -> Result<Result<JobLines<'_>, FromMaster>, ProtoError> {
    decode_listing(
        bytes,
        &FromMaster::JobLines(Vec::new()),
        JobLineRef::take_from,
    )
}

/// Where the lines of a [`FromMaster::JobLines`] answer start, for a reader that takes
/// them a piece at a time: how many lines, and the offset of the first in `start` (the
/// answer's first bytes); `None` for any other answer.
pub fn job_lines_start(start: &[u8]) -> Result<Option<(usize, usize)>, ProtoError> {
    let tag = listing_tag(&FromMaster::JobLines(Vec::new()))?;
    Ok(match start.strip_prefix(tag.as_slice()) {
        Some(lines) => {
            let (count, first) = postcard::take_from_bytes::<usize>(lines)?;
            Some((count, start.len() - first.len()))
        }
        None => None,
    })
}

type Take<'a, T> = fn(&'a [u8]) -> Result<(T, &'a [u8]), postcard::Error>;

/// The items of a listing, decoded one at a time (see [`decode_jobs_answer`]): a
/// command can write each as it comes, with no list of them all in between.
#[derive(Clone)]
pub struct Listing<'a, T> {
    left: usize,
    rest: &'a [u8],
    take: Take<'a, T>,
}

/// A listing's rows.
pub type JobRows<'a> = Listing<'a, JobViewRef<'a>>;

/// A listing's job lines.
pub type JobLines<'a> = Listing<'a, JobLineRef<'a>>;

impl<T> std::fmt::Debug for Listing<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listing")
            .field("left", &self.left)
            .field("bytes", &self.rest.len())
            .finish()
    }
}

impl<'a, T> Iterator for Listing<'a, T> {
    type Item = Result<T, ProtoError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        match (self.take)(self.rest) {
            Ok((item, rest)) => {
                self.left -= 1;
                self.rest = rest;
                Some(Ok(item))
            }
            Err(e) => {
                self.left = 0;
                Some(Err(e.into()))
            }
        }
    }
}

/// Append the encoding of one row of a [`FromMaster::Jobs`] listing to `rows`.
pub fn encode_job_row(row: &JobRow<'_>, rows: Vec<u8>) -> Result<Vec<u8>, ProtoError> {
    Ok(postcard::to_extend(row, rows)?)
}

/// Append the encoding of one line of a [`FromMaster::JobLines`] listing to `lines`.
pub fn encode_job_line(line: &JobLineOut<'_>, lines: Vec<u8>) -> Result<Vec<u8>, ProtoError> {
    Ok(postcard::to_extend(line, lines)?)
}

/// The encoding of the listing `empty` is the empty one of, whose `count` items are
/// `items`, encoded one after another.
fn encode_listing(empty: &FromMaster, count: usize, items: &[u8]) -> Result<Vec<u8>, ProtoError> {
    // The variant's tag, then the list's length.
    let mut out = postcard::to_extend(&count, listing_tag(empty)?)?;
    out.reserve_exact(items.len());
    out.extend_from_slice(items);
    Ok(out)
}

/// The encoding of [`FromMaster::Jobs`] whose `count` rows are `rows`, encoded one
/// after another with [`encode_job_row`]: the same bytes as the message with the rows
/// made first.
pub fn encode_jobs_answer(count: usize, rows: &[u8]) -> Result<Vec<u8>, ProtoError> {
    encode_listing(&FromMaster::Jobs(Vec::new()), count, rows)
}

/// The same for [`FromMaster::JobLines`] and [`encode_job_line`].
pub fn encode_job_lines_answer(count: usize, lines: &[u8]) -> Result<Vec<u8>, ProtoError> {
    encode_listing(&FromMaster::JobLines(Vec::new()), count, lines)
}

/// Decode a postcard message.
pub fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, ProtoError> {
    Ok(postcard::from_bytes(bytes)?)
}

/// Decode and check a [`Hello`].
pub fn decode_hello(bytes: &[u8]) -> Result<Hello, ProtoError> {
    let hello: Hello = decode(bytes)?;
    if hello.magic != HELLO_MAGIC {
        return Err(ProtoError::BadMagic(hello.magic));
    }
    Ok(hello)
}

#[cfg(test)]
mod tests;
