//! The cluster's state and every change to it, as pure functions.
//!
//! A request is decided against the current state and yields a [`Change`]: the objects
//! to write or delete and the lines to tell the user. The Cluster actor persists the
//! change in the spool and only then applies it with [`ClusterState::apply`], the same
//! function that rebuilds the state from the spool at start. A refused request yields no
//! change at all, so nothing is ever half-applied.

use gantry_proto::{
    ArId, Caller, ClusterQueue, ComplexAttr, Config, ExecHost, FromMaster, HostGroup, HostReport,
    HostView, JobId, LoadValue, QueueInstanceView, Refusal, RefusalKind, TaskId,
};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use gantry_common::{complex, config, exechost, load, queue};
use serde::{Deserialize, Serialize};

mod exechosts;
mod global_config;
mod hostgroups;
mod managers;
mod queues;
mod selection;
mod usage;
mod usersets;

pub use exechosts::JoinRefused;

/// One durable object of the cell, as stored in the spool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)] // decoded once per object; boxing buys nothing
pub enum Object {
    Config(Config),
    Complexes(Vec<ComplexAttr>),
    ExecHost(ExecHost),
    HostGroup(HostGroup),
    Queue(ClusterQueue),
    Managers(Vec<String>),
    Operators(Vec<String>),
    /// A host certificate the master issued: its SHA-256 (hex) and the host.
    HostCert {
        fingerprint: String,
        hostname: String,
    },
    Job(gantry_common::job::Job),
    /// Disabled queue instances (`qmod -d`): (queue, host).
    DisabledQueues(Vec<(String, String)>),
    UserSet(gantry_proto::UserSet),
    Pe(gantry_common::pe::Pe),
    Project(gantry_common::project::Project),
    /// Queue instances in error state (`E`), each with why.
    ErrorQueues(Vec<QueueInError>),
    /// Suspended queue instances (`qmod -s`, state `s`): (queue, host).
    SuspendedQueues(Vec<(String, String)>),
    /// Tasks stopped by their queue's `suspend_thresholds`: (job, task).
    ThresholdSuspended(Vec<(JobId, TaskId)>),
    /// A resource quota set and its place in SGE's order (the order of last change).
    QuotaSet {
        seq: u64,
        set: gantry_common::rqs::QuotaSet,
    },
    /// The administrative hosts (`qconf -ah`): manager commands come only from these.
    AdminHosts(Vec<String>),
    /// A running task removed with `qdel -f` while its host was away: its accounting
    /// record but for the report, written when the host reports the task's end.
    ForcedAway(Box<gantry_proto::AccountingRecord>),
    /// A checkpointing environment (`qconf -sckpt`).
    Ckpt(gantry_common::ckpt::Ckpt),
    /// An advance reservation (`qrsub`).
    Ar(gantry_proto::AdvanceReservation),
    /// The next advance reservation id to hand out (ids are never used twice).
    NextArId(ArId),
    /// A host that joined and has not reported yet: its first load report gives it its
    /// slots in `all.q`.
    NewHost(String),
    /// The tree of hierarchical group quotas (`qconf -sgq`), whole.
    GroupTree(Vec<gantry_proto::GroupEntry>),
    /// A user object (`qconf -suser`).
    User(gantry_common::user::User),
    /// The share tree (`qconf -sstree`), whole; None: there is none.
    ShareTree(Option<gantry_common::sharetree::ShareNode>),
    /// A user's or a project's usage (the share-tree policy's).
    Usage {
        of: gantry_common::usage::UsageOf,
        usage: gantry_common::usage::Usage,
    },
    /// A job's own override tickets (`qalter -ot`), beside the job (whose record they
    /// would change the form of).
    JobOverride {
        job: JobId,
        tickets: u32,
    },
    /// The tasks `qrsh -inherit` started in a running job's task.
    PeTasks(Box<gantry_common::pe_tasks::PeTasks>),
    /// What of a running task's measurements its owner's usage counts.
    Counted {
        job: JobId,
        task: TaskId,
        measured: gantry_common::usage::Amounts,
    },
}

/// A queue instance in error state (`E`) and why, in SGE's words: `queue all.q marked
/// QERROR as result of job 5's failure at host vm`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueInError {
    pub queue: String,
    pub host: String,
    pub why: String,
}

impl QueueInError {
    /// The spooled list of a map of (queue, host) -> why.
    pub fn list(errors: BTreeMap<(String, String), String>) -> Vec<QueueInError> {
        errors
            .into_iter()
            .map(|((queue, host), why)| QueueInError { queue, host, why })
            .collect()
    }
}

impl Object {
    /// The spool key of the object.
    pub fn key(&self) -> String {
        match self {
            Object::Config(c) => format!("config/{}", c.name),
            Object::Complexes(_) => "complexes".to_string(),
            Object::ExecHost(h) => format!("exechost/{}", h.hostname),
            Object::HostGroup(g) => format!("hostgroup/{}", g.name),
            Object::Queue(q) => format!("queue/{}", q.name),
            Object::Managers(_) => "managers".to_string(),
            Object::Operators(_) => "operators".to_string(),
            Object::HostCert { fingerprint, .. } => format!("hostcert/{fingerprint}"),
            Object::Job(j) => job_key(j.id),
            Object::DisabledQueues(_) => "disabled-queues".to_string(),
            Object::UserSet(u) => format!("userset/{}", u.name),
            Object::Pe(p) => format!("pe/{}", p.name),
            Object::Project(p) => format!("project/{}", p.name),
            Object::ErrorQueues(_) => "error-queues".to_string(),
            Object::SuspendedQueues(_) => "suspended-queues".to_string(),
            Object::ThresholdSuspended(_) => "threshold-suspended".to_string(),
            Object::QuotaSet { set, .. } => format!("rqs/{}", set.name),
            Object::AdminHosts(_) => "adminhosts".to_string(),
            Object::ForcedAway(r) => forced_key(r.job_id, r.report.task_id),
            Object::Ckpt(c) => format!("ckpt/{}", c.name),
            Object::User(u) => format!("user/{}", u.name),
            Object::Ar(a) => ar_key(a.id),
            Object::NextArId(_) => "next-ar-id".to_string(),
            Object::NewHost(h) => format!("newhost/{h}"),
            Object::GroupTree(_) => "group-tree".to_string(),
            Object::ShareTree(_) => "share-tree".to_string(),
            Object::Usage { of, .. } => of.key(),
            Object::Counted { job, task, .. } => counted_key(*job, *task),
            Object::JobOverride { job, .. } => override_key(*job),
            Object::PeTasks(p) => gantry_common::pe_tasks::pe_tasks_key(p.job_id, p.task_id),
        }
    }
}

/// A write to the spool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)] // short-lived; boxing would only add allocations
pub enum Op {
    Put(Object),
    Delete(String),
    /// A finished task's accounting record (its own table, never deleted).
    Account(Box<gantry_proto::AccountingRecord>),
    /// The next job id to hand out.
    NextJobId(JobId),
    /// A submitted job's script, written to the spool's `job_scripts` directory before
    /// the other writes of its commit (and removed again if they fail). Never journaled:
    /// the job's record holds none of it.
    Script {
        job: JobId,
        contents: Vec<u8>,
    },
    /// The index of a complex written by the same commit, made ahead off the actor's
    /// thread (a large `qconf -Mc`): the quota book's rebuild takes it. State only, never
    /// journaled or spooled.
    #[serde(skip)]
    Catalog(Arc<gantry_sched::Catalog>),
}

/// The spool key of an advance reservation.
pub fn ar_key(id: ArId) -> String {
    format!("ar/{id:020}")
}

/// The spool key of a job.
pub fn job_key(id: JobId) -> String {
    format!("job/{id:020}")
}

/// The spool key of a task removed with `qdel -f` that waits for its host's report.
pub fn forced_key(job: JobId, task: TaskId) -> String {
    format!("forced/{job:020}.{task}")
}

impl ClusterState {
    /// The writes that remove a job: its record, and its own override tickets.
    pub fn removal_ops(&self, id: JobId) -> Vec<Op> {
        let mut ops = vec![Op::Delete(job_key(id))];
        if self.input.job_otickets.contains_key(&id) {
            ops.push(Op::Delete(override_key(id)));
        }
        ops
    }
}

/// The spool key of a job's own override tickets.
pub fn override_key(job: JobId) -> String {
    format!("oticket/{job:020}")
}

/// The spool key of what a running task's usage counts.
pub fn counted_key(job: JobId, task: TaskId) -> String {
    format!("counted/{job:020}.{task}")
}

/// The job a spool key names, if it names one.
pub fn job_of_key(key: &str) -> Option<JobId> {
    key.strip_prefix("job/")?.parse().ok()
}

/// Slots per queue instance (queue, host): used by running tasks; reserved by the
/// reservations whose window is open (`qstat -f`'s `resv`) and by all granted ones
/// (`qhost -q`'s).
#[derive(Debug, Clone, Default)]
pub struct SlotCounts {
    pub used: HashMap<(String, String), u32>,
    pub reserved: HashMap<(String, String), (u32, u32)>,
}

/// What a granted request changes, and what the user is told.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Change {
    pub ops: Vec<Op>,
    pub messages: Vec<String>,
}

pub use gantry_sched::view::{ClusterImage, HostRuntime, JobTable, RuntimeTable};

#[derive(Debug, Clone, Default)]
pub struct ClusterState {
    /// Host-local configurations (`qconf -sconf HOST`), by host.
    pub host_configs: BTreeMap<String, Config>,
    /// What a scheduling cycle reads, as one value: the configuration it schedules by
    /// (complex, hosts, host groups, queues, access lists, parallel environments, the
    /// scheduler configuration, quota sets compiled, advance reservations, the group
    /// tree), the jobs, the hosts' reports and the queue instances' states. Every part
    /// is behind an `Arc` changed copy-on-write: an image for the cycle's thread
    /// ([`ClusterState::image`]) costs a reference count per part. Its `max_unheard`
    /// and `max_aj_instances` are the global configuration's, filled in when a view or
    /// an image is taken.
    pub input: ClusterImage,
    pub global: Option<Config>,
    pub managers: Vec<String>,
    /// `qconf -so`: users with an operator's rights over every job and queue (managers
    /// have them too).
    pub operators: Vec<String>,
    /// The administrative hosts; a cell created before they existed has none spooled,
    /// and then the master's own host is the one.
    pub admin_hosts: Option<Vec<String>>,
    /// The master's host name (from `master.conf`).
    pub master_host: String,
    /// Tasks removed with `qdel -f` whose host has not reported their end yet: their
    /// accounting records but for the report, by (job, task).
    pub forced_away: BTreeMap<(JobId, TaskId), gantry_proto::AccountingRecord>,
    /// The tasks `qrsh -inherit` started in running jobs, by (job, task).
    pub pe_tasks: BTreeMap<(JobId, TaskId), gantry_common::pe_tasks::PeTasks>,
    /// Certificate fingerprint (hex) -> host.
    pub host_certs: HashMap<String, String>,
    pub next_job_id: JobId,
    /// Checkpointing environments (`qconf -sckpt`).
    pub ckpts: BTreeMap<String, gantry_common::ckpt::Ckpt>,
    /// Resource quota sets by name, with their place in SGE's order (compiled into
    /// `input.quota_book`, with what running jobs use under them: kept as tasks start
    /// and end, rebuilt when the configuration it depends on changes).
    pub quota_sets: BTreeMap<String, (u64, gantry_common::rqs::QuotaSet)>,
    /// The next advance reservation id (0 until the first is granted: then 1).
    pub next_ar_id: ArId,
    /// Hosts that joined and have not reported yet (their slots in `all.q` come with
    /// their first report).
    pub new_hosts: BTreeSet<String>,
    /// Why each queue instance in error state (`E`, in `input.errored`) is in it, as
    /// `qstat -explain E` shows it: (queue, host) -> the message.
    pub queue_errors: BTreeMap<(String, String), String>,
    /// Counts the changes to anything a cycle reads but the jobs and the hosts' reports
    /// (configuration, queue instance states): a cycle's decisions made before such a
    /// change are not committed.
    pub config_generation: u64,
    /// What the master knows of the running cluster beside the spool.
    pub live: Live,
}

/// What the master knows of the running cluster and does not spool: what the execds
/// and the last cycle said. A restarted master learns it again (the execds report what
/// runs, the next cycle reserves again).
#[derive(Debug, Clone, Default)]
pub struct Live {
    /// Tasks whose execd confirmed the start (`r` rather than `t`).
    pub started: HashSet<(JobId, TaskId)>,
    /// What running tasks used, as their execds last said (`qstat -j`).
    pub task_usage: HashMap<(JobId, TaskId), gantry_proto::TaskUsage>,
    /// The last `finished_jobs` jobs that ended, for `qstat -s z` (in memory, as SGE).
    pub finished: std::collections::VecDeque<gantry_proto::JobView>,
    /// When `suspend_thresholds` last stopped or continued a job in a queue instance.
    pub threshold_acted: HashMap<(String, String), i64>,
    /// The last cycle's resource reservations (`-R y`), by job.
    pub reservations: HashMap<JobId, gantry_sched::backfill::Reservation>,
    /// The last cycle's group allocation and the tree it allocated (`qquota -g`).
    pub group_allocation: Option<(
        Arc<Vec<gantry_proto::GroupEntry>>,
        gantry_sched::groups::Allocation,
    )>,
    /// The last cycle's priority of every job (`qstat -pri/-urg/-ext`, the `prior`
    /// column), as SGE shows the scheduler's last run.
    pub priorities: Option<Arc<gantry_sched::priority::Priorities>>,
    /// The secret interactive tasks' session keys are made from (see
    /// [`ClusterState::session_key`]): the shell draws it at random when the master
    /// starts. A session does not outlive the master that joined it.
    pub session_secret: [u8; 32],
    /// Tasks `qrsh -inherit` started that have sent their exit status and not yet
    /// their report: their slots are free for the job's next tasks.
    pub pe_exiting: HashSet<(JobId, TaskId, u32)>,
}

impl ClusterState {
    /// The key an interactive task's session is joined with: the task's start order
    /// carries it to its shepherd, and the master presents it when it joins the session
    /// for the job's owner. A hash of the master's secret and the task, so that no key
    /// needs keeping.
    pub fn session_key(&self, job: JobId, task: TaskId) -> Vec<u8> {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        h.update(b"gantry session key\0");
        h.update(self.live.session_secret);
        h.update(job.0.to_be_bytes());
        h.update(task.0.to_be_bytes());
        h.finalize().to_vec()
    }

    /// The key of the session of a task `qrsh -inherit` started (number `n` of the
    /// job's task): made as [`ClusterState::session_key`], apart from every job's.
    pub fn pe_session_key(&self, job: JobId, task: TaskId, n: u32) -> Vec<u8> {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        h.update(b"gantry pe task session key\0");
        h.update(self.live.session_secret);
        h.update(job.0.to_be_bytes());
        h.update(task.0.to_be_bytes());
        h.update(n.to_be_bytes());
        h.finalize().to_vec()
    }
}

/// A refusal, its message bounded (a value quoted in it is cut to a short line).
pub(crate) fn refuse(kind: RefusalKind, message: impl Into<String>) -> Refusal {
    Refusal {
        kind,
        message: gantry_common::names::bounded_message(&message.into()),
    }
}

/// SGE's refusal of a manager command from a host that is not an administrative host.
pub(crate) fn no_admin_host(host: &str) -> String {
    format!("denied: host \"{host}\" is no admin host")
}

/// The objects of a fresh cell: the global configuration, the default complexes, the
/// host group `@allhosts`, the queue `all.q` and the managers.
pub fn initial_objects(managers: &[String]) -> Vec<Object> {
    vec![
        Object::Config(config::default_global()),
        Object::Config(gantry_common::schedconf::default_schedconf()),
        Object::Complexes(complex::default_complexes()),
        Object::HostGroup(HostGroup {
            name: "@allhosts".to_string(),
            hostlist: Vec::new(),
        }),
        Object::Queue(queue::new_queue("all.q", "@allhosts")),
        Object::UserSet(gantry_common::userset::new_userset("arusers", "ACL")),
        Object::UserSet(gantry_common::userset::new_userset("deadlineusers", "ACL")),
        Object::UserSet(gantry_common::userset::new_userset(
            "defaultdepartment",
            "DEPT",
        )),
        Object::Managers(managers.to_vec()),
    ]
    .into_iter()
    .chain(gantry_common::pe::default_pes().into_iter().map(Object::Pe))
    .collect()
}

impl ClusterState {
    /// Apply one spool write to the in-memory state.
    pub fn apply(&mut self, op: &Op) {
        self.apply_one(op);
        self.settle_quotas();
    }

    /// Apply spool writes (a commit, or the whole spool at start), then bring what is
    /// derived from them up to date once.
    pub fn apply_all<'a>(&mut self, ops: impl IntoIterator<Item = &'a Op>) {
        for op in ops {
            self.apply_one(op);
        }
        self.settle_quotas();
    }

    fn apply_one(&mut self, op: &Op) {
        if matches!(
            op,
            Op::Put(
                Object::QuotaSet { .. }
                    | Object::UserSet(_)
                    | Object::HostGroup(_)
                    | Object::Complexes(_)
            )
        ) || matches!(op, Op::Delete(k) if ["rqs/", "userset/", "hostgroup/"].iter().any(|p| k.starts_with(p)))
        {
            self.quotas_changed();
        }
        let touches_config = match op {
            Op::Put(
                Object::Job(_)
                | Object::ForcedAway(_)
                | Object::HostCert { .. }
                | Object::Usage { .. }
                | Object::Counted { .. }
                | Object::PeTasks(_)
                | Object::JobOverride { .. },
            ) => false,
            Op::Account(_) | Op::NextJobId(_) | Op::Script { .. } | Op::Catalog(_) => false,
            Op::Delete(key) => ![
                "job/",
                "forced/",
                "hostcert/",
                "usage/",
                "counted/",
                "oticket/",
                "petasks/",
            ]
            .iter()
            .any(|p| key.starts_with(p)),
            Op::Put(_) => true,
        };
        if touches_config {
            self.config_generation += 1;
        }
        match op {
            Op::Put(obj) => match obj.clone() {
                Object::Config(c) => {
                    if c.name == "global" {
                        self.global = Some(c);
                    } else if c.name == "sched" {
                        self.input.sched = Arc::new(Some(c));
                    } else {
                        self.host_configs.insert(c.name.clone(), c);
                    }
                }
                Object::Complexes(list) => self.input.complexes = Arc::new(list),
                Object::ExecHost(h) if h.hostname == "global" => {
                    self.input.global_host = Arc::new(Some(h))
                }
                Object::ExecHost(h) => {
                    Arc::make_mut(&mut self.input.exechosts).insert(h.hostname.clone(), h);
                }
                Object::HostGroup(g) => {
                    Arc::make_mut(&mut self.input.hostgroups).insert(g.name.clone(), g);
                }
                Object::Queue(q) => {
                    Arc::make_mut(&mut self.input.queues).insert(q.name.clone(), q);
                }
                Object::Managers(m) => self.managers = m,
                Object::Operators(o) => self.operators = o,
                Object::AdminHosts(h) => self.admin_hosts = Some(h),
                Object::ForcedAway(r) => {
                    self.forced_away.insert((r.job_id, r.report.task_id), *r);
                }
                Object::HostCert {
                    fingerprint,
                    hostname,
                } => {
                    self.host_certs.insert(fingerprint, hostname);
                }
                Object::Job(j) => {
                    if let Some(old) = Arc::make_mut(&mut self.input.jobs).remove(&j.id) {
                        self.count_quota_usage(&old, -1.0);
                    }
                    self.count_quota_usage(&j, 1.0);
                    Arc::make_mut(&mut self.input.jobs).insert(j.id, Arc::new(j));
                }
                Object::DisabledQueues(list) => {
                    self.input.disabled = Arc::new(list.into_iter().collect())
                }
                Object::UserSet(u) => {
                    Arc::make_mut(&mut self.input.usersets).insert(u.name.clone(), u);
                }
                Object::Pe(p) => {
                    Arc::make_mut(&mut self.input.pes).insert(p.name.clone(), p);
                }
                Object::Project(p) => {
                    Arc::make_mut(&mut self.input.projects).insert(p.name.clone(), p);
                }
                Object::Ckpt(c) => {
                    self.ckpts.insert(c.name.clone(), c);
                }
                Object::User(u) => {
                    Arc::make_mut(&mut self.input.users).insert(u.name.clone(), u);
                }
                Object::Ar(a) => {
                    Arc::make_mut(&mut self.input.ars).insert(a.id, a);
                }
                Object::NextArId(n) => self.next_ar_id = n,
                Object::GroupTree(list) => self.input.group_tree = Arc::new(list),
                Object::ShareTree(tree) => self.input.share_tree = Arc::new(tree),
                Object::Usage { of, usage } => {
                    Arc::make_mut(&mut self.input.usage)
                        .records
                        .insert(of, usage);
                }
                Object::JobOverride { job, tickets } => {
                    Arc::make_mut(&mut self.input.job_otickets).insert(job, tickets);
                }
                Object::Counted {
                    job,
                    task,
                    measured,
                } => {
                    Arc::make_mut(&mut self.input.usage)
                        .counted
                        .insert((job, task), measured);
                }
                Object::NewHost(h) => {
                    self.new_hosts.insert(h);
                }
                Object::PeTasks(p) => {
                    self.live.pe_exiting.retain(|&(j, t, n)| {
                        (j, t) != (p.job_id, p.task_id) || p.running.contains_key(&n)
                    });
                    self.pe_tasks.insert((p.job_id, p.task_id), *p);
                }
                Object::ErrorQueues(list) => {
                    self.queue_errors = list
                        .into_iter()
                        .map(|e| ((e.queue, e.host), e.why))
                        .collect();
                    self.input.errored = Arc::new(self.queue_errors.keys().cloned().collect())
                }
                Object::SuspendedQueues(list) => {
                    self.input.suspended_queues = Arc::new(list.into_iter().collect())
                }
                Object::ThresholdSuspended(list) => {
                    self.input.threshold_suspended = Arc::new(list.into_iter().collect())
                }
                Object::QuotaSet { seq, set } => {
                    self.quota_sets.insert(set.name.clone(), (seq, set));
                }
            },
            Op::Account(_) | Op::Script { .. } => {}
            Op::Catalog(catalog) => self.prepare_catalog(Arc::clone(catalog)),
            Op::NextJobId(n) => self.next_job_id = *n,
            Op::Delete(key) => {
                if let Some(name) = key.strip_prefix("config/") {
                    self.host_configs.remove(name);
                } else if let Some(name) = key.strip_prefix("exechost/") {
                    Arc::make_mut(&mut self.input.exechosts).remove(name);
                } else if let Some(name) = key.strip_prefix("hostgroup/") {
                    Arc::make_mut(&mut self.input.hostgroups).remove(name);
                } else if let Some(name) = key.strip_prefix("queue/") {
                    Arc::make_mut(&mut self.input.queues).remove(name);
                } else if let Some(name) = key.strip_prefix("rqs/") {
                    self.quota_sets.remove(name);
                } else if let Some(name) = key.strip_prefix("project/") {
                    Arc::make_mut(&mut self.input.projects).remove(name);
                } else if let Some(name) = key.strip_prefix("ckpt/") {
                    self.ckpts.remove(name);
                } else if let Some(name) = key.strip_prefix("user/") {
                    Arc::make_mut(&mut self.input.users).remove(name);
                } else if let Some(h) = key.strip_prefix("newhost/") {
                    self.new_hosts.remove(h);
                } else if let Some(id) = key.strip_prefix("ar/") {
                    if let Ok(id) = id.parse::<ArId>() {
                        Arc::make_mut(&mut self.input.ars).remove(&id);
                    }
                } else if let Some(name) = key.strip_prefix("pe/") {
                    Arc::make_mut(&mut self.input.pes).remove(name);
                } else if let Some(name) = key.strip_prefix("userset/") {
                    Arc::make_mut(&mut self.input.usersets).remove(name);
                } else if let Some(task) = key.strip_prefix("forced/") {
                    if let Some((job, task)) = task.split_once('.') {
                        if let (Ok(job), Ok(task)) = (job.parse(), task.parse()) {
                            self.forced_away.remove(&(job, task));
                        }
                    }
                } else if let Some(task) = key.strip_prefix("counted/") {
                    if let Some((job, task)) = task.split_once('.') {
                        if let (Ok(job), Ok(task)) = (job.parse(), task.parse()) {
                            Arc::make_mut(&mut self.input.usage)
                                .counted
                                .remove(&(job, task));
                        }
                    }
                } else if let Some(task) = key.strip_prefix("petasks/") {
                    if let Some((job, task)) = task.split_once('.') {
                        if let (Ok(job), Ok(task)) = (job.parse(), task.parse()) {
                            self.pe_tasks.remove(&(job, task));
                            self.live
                                .pe_exiting
                                .retain(|&(j, t, _)| (j, t) != (job, task));
                        }
                    }
                } else if let Some(id) = key.strip_prefix("oticket/") {
                    if let Ok(id) = id.parse::<JobId>() {
                        Arc::make_mut(&mut self.input.job_otickets).remove(&id);
                    }
                } else if key.starts_with("usage/") {
                    Arc::make_mut(&mut self.input.usage)
                        .records
                        .retain(|of, _| of.key() != *key);
                } else if let Some(fp) = key.strip_prefix("hostcert/") {
                    self.host_certs.remove(fp);
                } else if let Some(id) = key.strip_prefix("job/") {
                    if let Ok(id) = id.parse::<JobId>() {
                        if let Some(old) = Arc::make_mut(&mut self.input.jobs).remove(&id) {
                            self.count_quota_usage(&old, -1.0);
                        }
                    }
                }
            }
        }
    }

    /// The global configuration (SGE's defaults until one is stored). Borrowed: the
    /// scheduler asks for it per queue instance.
    pub fn global(&self) -> Cow<'_, Config> {
        match &self.global {
            Some(c) => Cow::Borrowed(c),
            None => Cow::Owned(config::default_global()),
        }
    }

    pub fn load_report_time(&self) -> u64 {
        config::time_seconds(&self.global(), "load_report_time").max(1)
    }

    pub fn max_unheard(&self) -> u64 {
        config::time_seconds(&self.global(), "max_unheard").max(1)
    }

    pub fn is_manager(&self, user: &str) -> bool {
        self.managers.iter().any(|m| m == user)
    }

    /// The administrative hosts.
    pub fn admin_hosts(&self) -> Vec<String> {
        self.admin_hosts
            .clone()
            .unwrap_or_else(|| vec![self.master_host.clone()])
    }

    pub fn is_admin_host(&self, host: &str) -> bool {
        match &self.admin_hosts {
            Some(list) => list.iter().any(|h| h == host),
            None => host == self.master_host,
        }
    }

    /// Does the caller have a manager's rights here: a manager, on an administrative
    /// host? (Root on a compute host is an ordinary user to the cluster.)
    pub fn acts_as_manager(&self, caller: &Caller) -> bool {
        self.is_manager(&caller.user) && self.is_admin_host(&caller.host)
    }

    /// Does the caller have an operator's rights here: a manager or an operator, on an
    /// administrative host? Operators act on every user's jobs, queue instances and
    /// advance reservations, and change no configuration.
    pub fn acts_as_operator(&self, caller: &Caller) -> bool {
        (self.is_manager(&caller.user) || self.operators.iter().any(|o| o == &caller.user))
            && self.is_admin_host(&caller.host)
    }

    /// The refusal for a caller without rights over another user's job (`qdel`, `qmod`,
    /// `qalter`): an ordinary user gets `ordinary` (SGE's words for the action), a manager
    /// calling from a host that is not an administrative host is told that instead.
    pub fn others_job_refusal(&self, caller: &Caller, ordinary: String) -> String {
        let operator = self.is_manager(&caller.user) || self.operators.contains(&caller.user);
        if operator && !self.is_admin_host(&caller.host) {
            no_admin_host(&caller.host)
        } else {
            ordinary
        }
    }

    /// Is the host's execd heard from recently enough (within `max_unheard`)?
    pub fn is_reachable(&self, host: &str, now: gantry_sched::Time) -> bool {
        self.view().is_reachable(host, now)
    }

    /// The host groups (with nesting resolved) a host belongs to.
    pub fn groups_of(&self, host: &str) -> Vec<&str> {
        gantry_sched::view::groups_of(&self.input.hostgroups, host)
    }

    /// The hosts in a group, nested groups expanded (cycles and depth bounded).
    pub fn resolve_group(&self, name: &str, depth: usize) -> Vec<String> {
        gantry_sched::view::resolve_group(&self.input.hostgroups, name, depth)
    }

    /// May `caller` change the cluster's configuration?
    /// The user is checked first, then the host, in the order SGE's master checks them.
    pub fn manager_check(&self, caller: &Caller) -> Result<(), Refusal> {
        if !self.is_manager(&caller.user) {
            Err(refuse(
                RefusalKind::Denied,
                format!(
                    "denied: \"{}\" must be manager for this operation",
                    caller.user
                ),
            ))
        } else if !self.is_admin_host(&caller.host) {
            Err(refuse(RefusalKind::Denied, no_admin_host(&caller.host)))
        } else {
            Ok(())
        }
    }

    /// May `caller` change the state of queue instances (`qmod -s/-us/-d/-e`): a
    /// manager or operator, on an administrative host?
    pub fn operator_check(&self, caller: &Caller) -> Result<(), Refusal> {
        if self.operators.contains(&caller.user) && !self.is_manager(&caller.user) {
            return match self.is_admin_host(&caller.host) {
                true => Ok(()),
                false => Err(refuse(RefusalKind::Denied, no_admin_host(&caller.host))),
            };
        }
        self.manager_check(caller)
    }
}

/// What a request comes to: an answer (nothing changes) or a change to persist.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Answer(FromMaster),
    Change(Change),
}

fn valid_user_name(u: &str) -> bool {
    !u.is_empty()
        && u.len() <= 64
        && u.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '$'))
}

/// `BATCH INTERACTIVE` -> `BI`, plus `P` when the queue has parallel environments, as
/// `qstat -f` and `qhost -q` show the queue type.
pub fn qtype_letters(qtype: &str, pe_list: &str) -> String {
    let mut s = String::new();
    let words: Vec<String> = qtype
        .split_whitespace()
        .map(|w| w.to_ascii_uppercase())
        .collect();
    if words.iter().any(|w| w == "BATCH") {
        s.push('B');
    }
    if words.iter().any(|w| w == "INTERACTIVE") {
        s.push('I');
    }
    if s.is_empty() {
        s.push('N');
    }
    if !gantry_common::conf::split_list(pe_list).is_empty() {
        s.push('P');
    }
    s
}

#[cfg(test)]
mod tests;
