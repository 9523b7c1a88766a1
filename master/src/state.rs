//! The cluster's state and every change to it, as pure functions.
//!
//! A request is decided against the current state and yields a [`Change`]: the objects
//! to write or delete and the lines to tell the user. The Cluster actor persists the
//! change in the spool and only then applies it with [`ClusterState::apply`], the same
//! function that rebuilds the state from the spool at start. A refused request yields no
//! change at all, so nothing is ever half-applied.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use gantry_common::{complex, config, exechost, load, queue};
use gantry_proto::{
    Caller, ClusterQueue, ComplexAttr, Config, ExecHost, FromMaster, HostGroup, HostReport,
    HostView, LoadValue, QueueInstanceView, Refusal, RefusalKind, ToMaster,
};
use serde::{Deserialize, Serialize};

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
    /// A host certificate the master issued: its SHA-256 (hex) and the host.
    HostCert {
        fingerprint: String,
        hostname: String,
    },
    Job(crate::jobs::Job),
    /// Disabled queue instances (`qmod -d`): (queue, host).
    DisabledQueues(Vec<(String, String)>),
    UserSet(gantry_proto::UserSet),
    Pe(gantry_common::pe::Pe),
    Project(gantry_common::project::Project),
    /// Queue instances in error state (`E`): (queue, host).
    ErrorQueues(Vec<(String, String)>),
    /// Suspended queue instances (`qmod -s`, state `s`): (queue, host).
    SuspendedQueues(Vec<(String, String)>),
    /// Tasks stopped by their queue's `suspend_thresholds`: (job, task).
    ThresholdSuspended(Vec<(u64, u32)>),
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
    NextJobId(u64),
}

/// The spool key of a job.
pub fn job_key(id: u64) -> String {
    format!("job/{id:020}")
}

/// The spool key of a task removed with `qdel -f` that waits for its host's report.
pub fn forced_key(job: u64, task: u32) -> String {
    format!("forced/{job:020}.{task}")
}

/// The job a spool key names, if it names one.
pub fn job_of_key(key: &str) -> Option<u64> {
    key.strip_prefix("job/")?.parse().ok()
}

/// What a granted request changes, and what the user is told.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Change {
    pub ops: Vec<Op>,
    pub messages: Vec<String>,
}

pub use crate::sched::{HostRuntime, JobTable, RuntimeTable};

#[derive(Debug, Clone, Default)]
pub struct ClusterState {
    pub global: Option<Config>,
    pub complexes: Arc<Vec<ComplexAttr>>,
    pub exechosts: Arc<BTreeMap<String, ExecHost>>,
    pub hostgroups: Arc<BTreeMap<String, HostGroup>>,
    pub queues: Arc<BTreeMap<String, ClusterQueue>>,
    pub managers: Vec<String>,
    /// The administrative hosts; a cell created before they existed has none spooled,
    /// and then the master's own host is the one.
    pub admin_hosts: Option<Vec<String>>,
    /// The master's host name (from `master.conf`).
    pub master_host: String,
    /// Tasks removed with `qdel -f` whose host has not reported their end yet: their
    /// accounting records but for the report, by (job, task).
    pub forced_away: BTreeMap<(u64, u32), gantry_proto::AccountingRecord>,
    /// Certificate fingerprint (hex) -> host.
    pub host_certs: HashMap<String, String>,
    pub runtime: Arc<RuntimeTable>,
    pub jobs: Arc<JobTable>,
    pub next_job_id: u64,
    /// Disabled queue instances (`qmod -d`): (queue, host).
    pub disabled: Arc<HashSet<(String, String)>>,
    pub usersets: Arc<BTreeMap<String, gantry_proto::UserSet>>,
    /// The global host (`qconf -se global`): cluster-wide `complex_values`.
    pub global_host: Arc<Option<ExecHost>>,
    /// The scheduler configuration (`qconf -ssconf`).
    pub sched: Arc<Option<Config>>,
    /// Parallel environments (`qconf -sp`).
    pub pes: Arc<BTreeMap<String, gantry_common::pe::Pe>>,
    /// Projects (`qconf -sprj`).
    pub projects: BTreeMap<String, gantry_common::project::Project>,
    /// Queue instances in error state (`E`).
    pub errored: Arc<HashSet<(String, String)>>,
    /// Suspended queue instances (`s`).
    pub suspended_queues: Arc<HashSet<(String, String)>>,
    /// Tasks stopped by their queue's `suspend_thresholds` (shown `S`).
    pub threshold_suspended: Arc<BTreeSet<(u64, u32)>>,
    /// Resource quota sets by name, with their place in SGE's order.
    pub quota_sets: BTreeMap<String, (u64, gantry_common::rqs::QuotaSet)>,
    /// The sets compiled, and what running jobs use under them (derived; kept as tasks
    /// start and end, rebuilt when the configuration it depends on changes).
    pub quota_book: Arc<crate::quota::QuotaBook>,
    /// Counts the changes to anything a cycle reads but the jobs and the hosts' reports
    /// (configuration, queue instance states): a cycle's decisions made before such a
    /// change are not committed.
    pub config_generation: u64,
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
            Op::Put(Object::Job(_) | Object::ForcedAway(_) | Object::HostCert { .. }) => false,
            Op::Account(_) | Op::NextJobId(_) => false,
            Op::Delete(key) => !["job/", "forced/", "hostcert/"]
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
                        self.sched = Arc::new(Some(c));
                    }
                }
                Object::Complexes(list) => self.complexes = Arc::new(list),
                Object::ExecHost(h) if h.hostname == "global" => {
                    self.global_host = Arc::new(Some(h))
                }
                Object::ExecHost(h) => {
                    Arc::make_mut(&mut self.exechosts).insert(h.hostname.clone(), h);
                }
                Object::HostGroup(g) => {
                    Arc::make_mut(&mut self.hostgroups).insert(g.name.clone(), g);
                }
                Object::Queue(q) => {
                    Arc::make_mut(&mut self.queues).insert(q.name.clone(), q);
                }
                Object::Managers(m) => self.managers = m,
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
                    if let Some(old) = Arc::make_mut(&mut self.jobs).remove(&j.id) {
                        self.count_quota_usage(&old, -1.0);
                    }
                    self.count_quota_usage(&j, 1.0);
                    Arc::make_mut(&mut self.jobs).insert(j.id, Arc::new(j));
                }
                Object::DisabledQueues(list) => {
                    self.disabled = Arc::new(list.into_iter().collect())
                }
                Object::UserSet(u) => {
                    Arc::make_mut(&mut self.usersets).insert(u.name.clone(), u);
                }
                Object::Pe(p) => {
                    Arc::make_mut(&mut self.pes).insert(p.name.clone(), p);
                }
                Object::Project(p) => {
                    self.projects.insert(p.name.clone(), p);
                }
                Object::ErrorQueues(list) => self.errored = Arc::new(list.into_iter().collect()),
                Object::SuspendedQueues(list) => {
                    self.suspended_queues = Arc::new(list.into_iter().collect())
                }
                Object::ThresholdSuspended(list) => {
                    self.threshold_suspended = Arc::new(list.into_iter().collect())
                }
                Object::QuotaSet { seq, set } => {
                    self.quota_sets.insert(set.name.clone(), (seq, set));
                }
            },
            Op::Account(_) => {}
            Op::NextJobId(n) => self.next_job_id = *n,
            Op::Delete(key) => {
                if let Some(name) = key.strip_prefix("exechost/") {
                    Arc::make_mut(&mut self.exechosts).remove(name);
                } else if let Some(name) = key.strip_prefix("hostgroup/") {
                    Arc::make_mut(&mut self.hostgroups).remove(name);
                } else if let Some(name) = key.strip_prefix("queue/") {
                    Arc::make_mut(&mut self.queues).remove(name);
                } else if let Some(name) = key.strip_prefix("rqs/") {
                    self.quota_sets.remove(name);
                } else if let Some(name) = key.strip_prefix("project/") {
                    self.projects.remove(name);
                } else if let Some(name) = key.strip_prefix("pe/") {
                    Arc::make_mut(&mut self.pes).remove(name);
                } else if let Some(name) = key.strip_prefix("userset/") {
                    Arc::make_mut(&mut self.usersets).remove(name);
                } else if let Some(task) = key.strip_prefix("forced/") {
                    if let Some((job, task)) = task.split_once('.') {
                        if let (Ok(job), Ok(task)) = (job.parse(), task.parse()) {
                            self.forced_away.remove(&(job, task));
                        }
                    }
                } else if let Some(fp) = key.strip_prefix("hostcert/") {
                    self.host_certs.remove(fp);
                } else if let Some(id) = key.strip_prefix("job/") {
                    if let Ok(id) = id.parse::<u64>() {
                        if let Some(old) = Arc::make_mut(&mut self.jobs).remove(&id) {
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

    /// The refusal for a caller without rights over another user's job (`qdel`, `qmod`,
    /// `qalter`): an ordinary user gets `ordinary` (SGE's words for the action), a manager
    /// calling from a host that is not an administrative host is told that instead.
    pub fn others_job_refusal(&self, caller: &Caller, ordinary: String) -> String {
        if self.is_manager(&caller.user) && !self.is_admin_host(&caller.host) {
            no_admin_host(&caller.host)
        } else {
            ordinary
        }
    }

    /// May an execd that presented a valid join token join under `hostname`? Decided
    /// before a certificate is issued. A name that holds a certificate is taken: a
    /// second join would take over the host's identity and lock the real host out. The
    /// master's own name is an administrative host from `init`, so it may only be
    /// claimed from the master's own machine (`from_masters_machine`: the join came from
    /// one of the master's addresses); else any holder of the token could join under it
    /// and manage the cluster from its own host.
    pub fn join_check(&self, hostname: &str, from_masters_machine: bool) -> Result<(), String> {
        if self.host_certs.values().any(|h| h == hostname) {
            return Err(format!(
                "host \"{hostname}\" already joined; delete it with qconf -de first"
            ));
        }
        if hostname == self.master_host && !from_masters_machine {
            return Err(format!(
                "host \"{hostname}\" is the master's host; an execd joins under that name only on the master's machine"
            ));
        }
        Ok(())
    }

    /// Is the host's execd heard from recently enough (within `max_unheard`)?
    pub fn is_reachable(&self, host: &str, now: crate::sched::Time) -> bool {
        self.view().is_reachable(host, now)
    }

    /// The host groups (with nesting resolved) a host belongs to.
    pub fn groups_of(&self, host: &str) -> Vec<&str> {
        gantry_sched::view::groups_of(&self.hostgroups, host)
    }

    /// The hosts in a group, nested groups expanded (cycles and depth bounded).
    pub fn resolve_group(&self, name: &str, depth: usize) -> Vec<String> {
        gantry_sched::view::resolve_group(&self.hostgroups, name, depth)
    }

    /// A host as `qhost` shows it; `used_slots` is [`ClusterState::used_slots`], counted
    /// once for all hosts of a report.
    pub(crate) fn host_view(
        &self,
        name: &str,
        now: crate::sched::Time,
        used_slots: &HashMap<(String, String), u32>,
    ) -> HostView {
        let reachable = self.is_reachable(name, now);
        let mut load_values = self
            .runtime
            .get(name)
            .map(|r| r.load_values.clone())
            .unwrap_or_default();
        if !reachable {
            load_values.retain(|l| load::STATIC_VALUES.contains(&l.name.as_str()));
        }
        let groups = self.groups_of(name);
        let queues = self
            .queues
            .values()
            .filter(|q| self.queue_hosts_of(q).iter().any(|h| h == name))
            .map(|q| {
                let total = q
                    .attr("slots")
                    .map(|a| queue::value_on_host(a, name, &groups))
                    .and_then(|v| v.parse::<u32>().ok())
                    .unwrap_or(0);
                let qtype = q.attr("qtype").map_or("", |a| a.default.as_str());
                let pe_list = q.attr("pe_list").map_or("NONE", |a| a.default.as_str());
                let used = used_slots
                    .get(&(q.name.clone(), name.to_string()))
                    .copied()
                    .unwrap_or(0);
                QueueInstanceView {
                    queue: q.name.clone(),
                    qtype: qtype_letters(qtype, pe_list),
                    reserved: 0,
                    used,
                    total,
                    states: {
                        let mut st = String::new();
                        if reachable && self.load_alarm(q, name).is_some() {
                            st.push('a');
                        }
                        let key = (q.name.clone(), name.to_string());
                        if self.disabled.contains(&key) {
                            st.push('d');
                        }
                        if reachable && self.suspend_alarm(q, name).is_some() {
                            st.push('A');
                        }
                        if self.suspended_queues.contains(&key) {
                            st.push('s');
                        }
                        if !reachable {
                            st.push('u');
                        }
                        if self.errored.contains(&key) {
                            st.push('E');
                        }
                        st
                    },
                    resources: Vec::new(),
                }
            })
            .collect();
        HostView {
            name: name.to_string(),
            reachable,
            load_values,
            complex_values: self
                .exechosts
                .get(name)
                .map(|h| h.complex_values.clone())
                .unwrap_or_default(),
            queues,
        }
    }

    /// Answer a read-only request, or decide a change. `now` is the master's clock in
    /// seconds.
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

    pub fn handle(
        &self,
        caller: &Caller,
        req: &ToMaster,
        now: crate::sched::Time,
    ) -> Result<Reply, Refusal> {
        let who = format!("{}@{}", caller.user, caller.host);
        let manager_only = || self.manager_check(caller);
        match req {
            ToMaster::ShowObject { .. }
            | ToMaster::ShowObjectList { .. }
            | ToMaster::AddObject { .. }
            | ToMaster::ModifyObject { .. }
            | ToMaster::DeleteObjects { .. }
            | ToMaster::EditAttribute { .. }
            | ToMaster::ModifyAttribute { .. }
            | ToMaster::ReplaceObjects { .. } => self.handle_object(&who, manager_only(), req),
            ToMaster::HostInfo => {
                let used = self.used_slots();
                let mut hosts: Vec<HostView> = self
                    .exechosts
                    .keys()
                    .map(|h| self.host_view(h, now, &used))
                    .collect();
                // What each queue instance offers (`qstat -F`), from the scheduler's view.
                let all: std::collections::HashSet<String> =
                    self.exechosts.keys().cloned().collect();
                let snap = self.snapshot(&all, now);
                let mut offered = snap.resources();
                for h in &mut hosts {
                    for q in &mut h.queues {
                        q.resources = offered
                            .remove(&(q.queue.clone(), h.name.clone()))
                            .unwrap_or_default();
                    }
                }
                Ok(Reply::Answer(FromMaster::Hosts(HostReport {
                    hosts,
                    complexes: (*self.complexes).clone(),
                })))
            }
            ToMaster::ShowExecHostList => Ok(Reply::Answer(FromMaster::Names(
                self.exechosts.keys().cloned().collect(),
            ))),
            ToMaster::ShowExecHost { host } if host == "global" => {
                Ok(Reply::Answer(FromMaster::ExecHost(self.global_exechost())))
            }
            ToMaster::ShowExecHost { host } => {
                let Some(h) = self.exechosts.get(host) else {
                    return Err(refuse(
                        RefusalKind::NotFound,
                        format!("\"{host}\" is not an execution host"),
                    ));
                };
                let mut h = h.clone();
                let view = self.host_view(host, now, &self.used_slots());
                h.processors = load::get(&view.load_values, "num_proc")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                h.load_values = view.load_values;
                Ok(Reply::Answer(FromMaster::ExecHost(h)))
            }
            ToMaster::AddExecHost { text } => {
                manager_only()?;
                let host = exechost::parse_exechost(text)
                    .map_err(|e| refuse(RefusalKind::Invalid, e.to_string()))?;
                if self.exechosts.contains_key(&host.hostname) {
                    return Err(refuse(
                        RefusalKind::AlreadyExists,
                        format!("exechost \"{}\" already exists", host.hostname),
                    ));
                }
                exechost::check_exechost(&host, &self.complexes)
                    .map_err(|e| refuse(RefusalKind::Invalid, e))?;
                let name = host.hostname.clone();
                Ok(Reply::Change(Change {
                    ops: vec![Op::Put(Object::ExecHost(host))],
                    messages: vec![format!("{who} added \"{name}\" to exechost list")],
                }))
            }
            ToMaster::DeleteExecHosts { hosts } => {
                manager_only()?;
                let mut change = Change::default();
                // Check every host before changing any: all or nothing.
                for host in hosts {
                    if !self.exechosts.contains_key(host) {
                        return Err(refuse(
                            RefusalKind::NotFound,
                            format!("denied: \"{host}\" is not an execution host"),
                        ));
                    }
                    let busy = self.jobs.values().find(|j| {
                        j.tasks.placed_states().any(|t| match t {
                            crate::jobs::TaskState::Running { grants, .. }
                            | crate::jobs::TaskState::Deleting { grants, .. } => {
                                grants.iter().any(|g| g.host == *host)
                            }
                            _ => false,
                        })
                    });
                    if let Some(j) = busy {
                        return Err(refuse(
                            RefusalKind::Denied,
                            format!(
                                "denied: host \"{host}\" has running jobs (job {} and maybe more)",
                                j.id
                            ),
                        ));
                    }
                }
                let mut groups: BTreeMap<String, HostGroup> = BTreeMap::new();
                for host in hosts {
                    change.ops.push(Op::Delete(format!("exechost/{host}")));
                    for (fp, h) in &self.host_certs {
                        if h == host {
                            change.ops.push(Op::Delete(format!("hostcert/{fp}")));
                        }
                    }
                    for g in self.hostgroups.values() {
                        if g.hostlist.iter().any(|m| m == host) {
                            let entry = groups.entry(g.name.clone()).or_insert_with(|| g.clone());
                            entry.hostlist.retain(|m| m != host);
                        }
                    }
                    for q in self.queues.values() {
                        if let Some(slots) = q.attr("slots") {
                            if slots.overrides.iter().any(|(h, _)| h == host) {
                                let mut q = q.clone();
                                if let Some(s) = q.attr_mut("slots") {
                                    s.overrides.retain(|(h, _)| h != host);
                                }
                                change.ops.push(Op::Put(Object::Queue(q)));
                            }
                        }
                    }
                    change
                        .messages
                        .push(format!("{who} removed \"{host}\" from exechost list"));
                }
                for g in groups.into_values() {
                    change.ops.push(Op::Put(Object::HostGroup(g)));
                }
                Ok(Reply::Change(change))
            }
            ToMaster::ShowConfig { name } => {
                if name != "global" {
                    return Err(refuse(
                        RefusalKind::NotFound,
                        format!("configuration {name} not defined"),
                    ));
                }
                Ok(Reply::Answer(FromMaster::Config(
                    self.global().into_owned(),
                )))
            }
            ToMaster::ModifyConfig { name, text } => {
                manager_only()?;
                if name != "global" {
                    return Err(refuse(
                        RefusalKind::NotFound,
                        format!("configuration {name} not defined (only \"global\" exists)"),
                    ));
                }
                let conf = config::parse_config(name, text)
                    .map_err(|e| refuse(RefusalKind::Invalid, e.to_string()))?;
                Ok(Reply::Change(Change {
                    ops: vec![Op::Put(Object::Config(conf))],
                    messages: vec![format!("{who} modified \"{name}\" in configuration list")],
                }))
            }
            ToMaster::ShowManagers => Ok(Reply::Answer(FromMaster::Names(self.managers.clone()))),
            ToMaster::AddManagers { users } => {
                manager_only()?;
                let mut managers = self.managers.clone();
                let mut messages = Vec::new();
                for u in users {
                    if !valid_user_name(u) {
                        return Err(refuse(
                            RefusalKind::Invalid,
                            format!("invalid user name \"{u}\""),
                        ));
                    }
                    if managers.contains(u) {
                        return Err(refuse(
                            RefusalKind::AlreadyExists,
                            format!("manager \"{u}\" already exists"),
                        ));
                    }
                    managers.push(u.clone());
                    messages.push(format!("{who} added \"{u}\" to manager list"));
                }
                Ok(Reply::Change(Change {
                    ops: vec![Op::Put(Object::Managers(managers))],
                    messages,
                }))
            }
            ToMaster::DeleteManagers { users } => {
                manager_only()?;
                let mut managers = self.managers.clone();
                let mut messages = Vec::new();
                for u in users {
                    if u == "root" {
                        return Err(refuse(
                            RefusalKind::Denied,
                            "denied: \"root\" cannot be removed from the manager list",
                        ));
                    }
                    if !managers.contains(u) {
                        return Err(refuse(
                            RefusalKind::NotFound,
                            format!("denied: manager \"{u}\" does not exist"),
                        ));
                    }
                    managers.retain(|m| m != u);
                    messages.push(format!("{who} removed \"{u}\" from manager list"));
                }
                Ok(Reply::Change(Change {
                    ops: vec![Op::Put(Object::Managers(managers))],
                    messages,
                }))
            }
            ToMaster::ShowComplexes => Ok(Reply::Answer(FromMaster::Complexes(
                (*self.complexes).clone(),
            ))),
            ToMaster::ShowQueueList => Ok(Reply::Answer(FromMaster::Names(
                self.queues.keys().cloned().collect(),
            ))),
            ToMaster::ShowQueue { name } => self
                .queues
                .get(name)
                .map(|q| Reply::Answer(FromMaster::Queue(q.clone())))
                .ok_or_else(|| {
                    refuse(
                        RefusalKind::NotFound,
                        format!("No cluster queue or queue instance matches the phrase \"{name}\""),
                    )
                }),
            ToMaster::ShowHostGroupList => Ok(Reply::Answer(FromMaster::Names(
                self.hostgroups.keys().cloned().collect(),
            ))),
            ToMaster::AddHostGroup { text } | ToMaster::ModifyHostGroup { text } => {
                manager_only()?;
                let adding = matches!(req, ToMaster::AddHostGroup { .. });
                let g = gantry_common::hostgroup::parse_hostgroup(text)
                    .map_err(|e| refuse(RefusalKind::Invalid, e.to_string()))?;
                let exists = self.hostgroups.contains_key(&g.name);
                if adding && exists {
                    return Err(refuse(
                        RefusalKind::AlreadyExists,
                        format!("host group \"{}\" already exists", g.name),
                    ));
                }
                if !adding && !exists {
                    return Err(refuse(
                        RefusalKind::NotFound,
                        format!("denied: host group \"{}\" does not exist", g.name),
                    ));
                }
                self.check_hostgroup(&g)?;
                let verb = if adding { "added" } else { "modified" };
                let prep = if adding { "to" } else { "in" };
                let name = g.name.clone();
                Ok(Reply::Change(Change {
                    ops: vec![Op::Put(Object::HostGroup(g))],
                    messages: vec![format!("{who} {verb} \"{name}\" {prep} host group list")],
                }))
            }
            ToMaster::DeleteHostGroup { name } => {
                manager_only()?;
                if !self.hostgroups.contains_key(name) {
                    return Err(refuse(
                        RefusalKind::NotFound,
                        format!("denied: host group \"{name}\" does not exist"),
                    ));
                }
                if let Some(g) = self
                    .hostgroups
                    .values()
                    .find(|g| g.hostlist.iter().any(|m| m == name))
                {
                    return Err(refuse(
                        RefusalKind::Invalid,
                        format!("denied: host group \"{name}\" is still referenced in host group \"{}\"", g.name),
                    ));
                }
                for q in self.queues.values() {
                    let in_hostlist = q.attr("hostlist").is_some_and(|a| {
                        gantry_common::conf::split_list(&a.default)
                            .iter()
                            .any(|h| h == name)
                    });
                    let in_overrides = q
                        .attrs
                        .iter()
                        .any(|(_, a)| a.overrides.iter().any(|(h, _)| h == name));
                    if in_hostlist || in_overrides {
                        return Err(refuse(
                            RefusalKind::Invalid,
                            format!("denied: host group \"{name}\" is still referenced in cluster queue \"{}\"", q.name),
                        ));
                    }
                }
                Ok(Reply::Change(Change {
                    ops: vec![Op::Delete(format!("hostgroup/{name}"))],
                    messages: vec![format!("{who} removed \"{name}\" from host group list")],
                }))
            }
            ToMaster::ShowUserSetList => Ok(Reply::Answer(FromMaster::Names(
                self.usersets.keys().cloned().collect(),
            ))),
            ToMaster::ShowUserSets { names } => {
                let mut out = Vec::new();
                for n in names {
                    match self.usersets.get(n) {
                        Some(u) => out.push(u.clone()),
                        None => {
                            return Err(refuse(
                                RefusalKind::NotFound,
                                format!("access list \"{n}\" does not exist"),
                            ))
                        }
                    }
                }
                Ok(Reply::Answer(FromMaster::UserSets(out)))
            }
            ToMaster::AddUsersToSets { users, sets } => {
                manager_only()?;
                let mut change = Change::default();
                for set in sets {
                    let mut u = self
                        .usersets
                        .get(set)
                        .cloned()
                        .unwrap_or_else(|| gantry_common::userset::new_userset(set, "ACL"));
                    for user in users {
                        if !valid_user_name(user.trim_start_matches('@')) {
                            return Err(refuse(
                                RefusalKind::Invalid,
                                format!("invalid user name \"{user}\""),
                            ));
                        }
                        if u.entries.contains(user) {
                            return Err(refuse(
                                RefusalKind::AlreadyExists,
                                format!("\"{user}\" is already in access list \"{set}\""),
                            ));
                        }
                        u.entries.push(user.clone());
                        change
                            .messages
                            .push(format!("added \"{user}\" to access list \"{set}\""));
                    }
                    change.ops.push(Op::Put(Object::UserSet(u)));
                }
                Ok(Reply::Change(change))
            }
            ToMaster::DeleteUsersFromSets { users, sets } => {
                manager_only()?;
                let mut change = Change::default();
                for set in sets {
                    let Some(u) = self.usersets.get(set) else {
                        return Err(refuse(
                            RefusalKind::NotFound,
                            format!("access list \"{set}\" does not exist"),
                        ));
                    };
                    let mut u = u.clone();
                    for user in users {
                        if !u.entries.contains(user) {
                            return Err(refuse(
                                RefusalKind::NotFound,
                                format!("user \"{user}\" is not in access list \"{set}\""),
                            ));
                        }
                        u.entries.retain(|e| e != user);
                        change.messages.push(format!(
                            "deleted user \"{user}\" from access list \"{set}\""
                        ));
                    }
                    change.ops.push(Op::Put(Object::UserSet(u)));
                }
                Ok(Reply::Change(change))
            }
            ToMaster::DeleteUserSets { names } => {
                manager_only()?;
                let mut change = Change::default();
                for n in names {
                    if !self.usersets.contains_key(n) {
                        return Err(refuse(
                            RefusalKind::NotFound,
                            format!("access list \"{n}\" does not exist"),
                        ));
                    }
                    if matches!(
                        n.as_str(),
                        "arusers" | "deadlineusers" | "defaultdepartment"
                    ) {
                        return Err(refuse(
                            RefusalKind::Denied,
                            format!("denied: userset \"{n}\" is built in and cannot be deleted"),
                        ));
                    }
                    let referenced_by_queue = self.queues.values().find(|q| {
                        ["user_lists", "xuser_lists"].iter().any(|k| {
                            q.attr(k).is_some_and(|a| {
                                std::iter::once(&a.default)
                                    .chain(a.overrides.iter().map(|(_, v)| v))
                                    .any(|v| {
                                        gantry_common::conf::split_list(v).iter().any(|x| x == n)
                                    })
                            })
                        })
                    });
                    if let Some(q) = referenced_by_queue {
                        return Err(refuse(
                            RefusalKind::Invalid,
                            format!("denied: userset \"{n}\" is still referenced in cluster queue \"{}\"", q.name),
                        ));
                    }
                    if let Some(h) = self
                        .exechosts
                        .values()
                        .find(|h| h.user_lists.contains(n) || h.xuser_lists.contains(n))
                    {
                        return Err(refuse(
                            RefusalKind::Invalid,
                            format!(
                                "denied: userset \"{n}\" is still referenced in exec host \"{}\"",
                                h.hostname
                            ),
                        ));
                    }
                    let by_pe = self
                        .pes
                        .values()
                        .find(|p| p.user_lists.contains(n) || p.xuser_lists.contains(n))
                        .map(|p| format!("parallel environment \"{}\"", p.name));
                    let by_project = self
                        .projects
                        .values()
                        .find(|p| p.acl.contains(n) || p.xacl.contains(n))
                        .map(|p| format!("project \"{}\"", p.name));
                    if let Some(place) = by_pe.or(by_project) {
                        return Err(refuse(
                            RefusalKind::Invalid,
                            format!("denied: userset \"{n}\" is still referenced in {place}"),
                        ));
                    }
                    change.ops.push(Op::Delete(format!("userset/{n}")));
                    change
                        .messages
                        .push(format!("{who} removed \"{n}\" from userset list"));
                }
                Ok(Reply::Change(change))
            }
            ToMaster::AddUserSet { text } | ToMaster::ModifyUserSet { text } => {
                manager_only()?;
                let adding = matches!(req, ToMaster::AddUserSet { .. });
                let u = gantry_common::userset::parse_userset(text)
                    .map_err(|e| refuse(RefusalKind::Invalid, e.to_string()))?;
                let exists = self.usersets.contains_key(&u.name);
                if adding && exists {
                    return Err(refuse(
                        RefusalKind::AlreadyExists,
                        format!("userset \"{}\" already exists", u.name),
                    ));
                }
                if !adding && !exists {
                    return Err(refuse(
                        RefusalKind::NotFound,
                        format!("access list \"{}\" does not exist", u.name),
                    ));
                }
                let name = u.name.clone();
                let (verb, prep) = if adding {
                    ("added", "to")
                } else {
                    ("modified", "in")
                };
                Ok(Reply::Change(Change {
                    ops: vec![Op::Put(Object::UserSet(u))],
                    messages: vec![format!("{who} {verb} \"{name}\" {prep} userset list")],
                }))
            }
            ToMaster::SetQueueState { targets, disable } => {
                manager_only()?;
                let mut disabled = (*self.disabled).clone();
                let mut messages = Vec::new();
                for key in self.queue_instances_named(targets)? {
                    messages.push(format!(
                        "{who} changed state of \"{}@{}\" ({})",
                        key.0,
                        key.1,
                        if *disable { "disabled" } else { "enabled" }
                    ));
                    if *disable {
                        disabled.insert(key);
                    } else {
                        disabled.remove(&key);
                    }
                }
                let mut list: Vec<(String, String)> = disabled.into_iter().collect();
                list.sort();
                Ok(Reply::Change(Change {
                    ops: vec![Op::Put(Object::DisabledQueues(list))],
                    messages,
                }))
            }
            ToMaster::ChangeQueueInstances {
                targets,
                change: gantry_proto::QueueChange::ClearError,
            } => {
                manager_only()?;
                let mut errored = (*self.errored).clone();
                let mut messages = Vec::new();
                for key in self.queue_instances_named(targets)? {
                    messages.push(format!(
                        "{who} changed state of \"{}@{}\" (no error)",
                        key.0, key.1
                    ));
                    errored.remove(&key);
                }
                let mut list: Vec<(String, String)> = errored.into_iter().collect();
                list.sort();
                Ok(Reply::Change(Change {
                    ops: vec![Op::Put(Object::ErrorQueues(list))],
                    messages,
                }))
            }
            ToMaster::Submit { .. }
            | ToMaster::AlterJobs { .. }
            | ToMaster::JobDetails { .. }
            | ToMaster::ClearJobErrors { .. }
            | ToMaster::ShowFinishedJobs { .. }
            | ToMaster::SuspendJobs { .. }
            | ToMaster::ChangeQueueInstances { .. }
            | ToMaster::ShowJobs { .. }
            | ToMaster::DeleteJobs { .. }
            | ToMaster::WaitJob { .. }
            | ToMaster::ShowQuotas(_)
            | ToMaster::SchedulingSummary
            | ToMaster::Accounting { .. } => Err(refuse(
                RefusalKind::Internal,
                "error: job requests are handled by the cluster",
            )),
            ToMaster::ShowHostGroup { name } => self
                .hostgroups
                .get(name)
                .map(|g| Reply::Answer(FromMaster::HostGroup(g.clone())))
                .ok_or_else(|| {
                    refuse(
                        RefusalKind::NotFound,
                        format!("Host group \"{name}\" does not exist"),
                    )
                }),
        }
    }

    /// A host group's members must be valid host names or existing groups, and groups
    /// must not contain themselves, directly or through others.
    /// The queue instances a `qmod` list names (`queue`, `queue@host`, `@host`, with
    /// wildcards); an entry naming none is refused.
    pub fn queue_instances_named(
        &self,
        targets: &[String],
    ) -> Result<Vec<(String, String)>, Refusal> {
        let mut out = Vec::new();
        for target in targets {
            let (qpat, hpat) = match target.split_once('@') {
                Some((q, h)) => (if q.is_empty() { "*" } else { q }, h),
                None => (target.as_str(), "*"),
            };
            let before = out.len();
            for q in self.queues.values() {
                if !crate::jobs::wildcard(qpat, &q.name) {
                    continue;
                }
                for host in self.queue_hosts_of(q) {
                    if crate::jobs::wildcard(hpat, &host) {
                        out.push((q.name.clone(), host));
                    }
                }
            }
            if out.len() == before {
                return Err(refuse(
                    RefusalKind::NotFound,
                    format!("invalid queue \"{target}\""),
                ));
            }
        }
        Ok(out)
    }

    pub(crate) fn check_hostgroup(&self, g: &HostGroup) -> Result<(), Refusal> {
        for m in &g.hostlist {
            if let Some(sub) = m.strip_prefix('@') {
                if !self.hostgroups.contains_key(m) || sub.is_empty() {
                    return Err(refuse(
                        RefusalKind::Invalid,
                        format!("denied: host group \"{m}\" does not exist"),
                    ));
                }
            } else if !exechost::valid_hostname(m) {
                return Err(refuse(
                    RefusalKind::Invalid,
                    format!("invalid host name \"{m}\""),
                ));
            }
        }
        // Cycle check: walk the groups this one contains, with it as changed.
        let mut stack: Vec<&str> = g
            .hostlist
            .iter()
            .filter(|m| m.starts_with('@'))
            .map(String::as_str)
            .collect();
        let mut seen = std::collections::HashSet::new();
        while let Some(name) = stack.pop() {
            if name == g.name {
                return Err(refuse(
                    RefusalKind::Invalid,
                    format!("denied: host group \"{}\" would contain itself", g.name),
                ));
            }
            if !seen.insert(name) {
                continue;
            }
            if let Some(sub) = self.hostgroups.get(name) {
                stack.extend(
                    sub.hostlist
                        .iter()
                        .filter(|m| m.starts_with('@'))
                        .map(String::as_str),
                );
            }
        }
        Ok(())
    }

    /// An execd joined with a valid token: register its certificate, and make it an exec
    /// host in `@allhosts` if it is not one yet (what SGE's execd installation does).
    pub fn join(&self, hostname: &str, fingerprint: &str) -> Change {
        let mut ops = Vec::new();
        for (fp, h) in &self.host_certs {
            if h == hostname {
                ops.push(Op::Delete(format!("hostcert/{fp}")));
            }
        }
        ops.push(Op::Put(Object::HostCert {
            fingerprint: fingerprint.to_string(),
            hostname: hostname.to_string(),
        }));
        let mut messages = Vec::new();
        if !self.exechosts.contains_key(hostname) {
            ops.push(Op::Put(Object::ExecHost(ExecHost::new(hostname))));
            messages.push(format!("added \"{hostname}\" to exechost list"));
        }
        if let Some(g) = self.hostgroups.get("@allhosts") {
            if !g.hostlist.iter().any(|h| h == hostname) {
                let mut g = g.clone();
                g.hostlist.push(hostname.to_string());
                ops.push(Op::Put(Object::HostGroup(g)));
            }
        }
        Change { ops, messages }
    }

    /// The first load report of a host tells its `num_proc`: give the host its slots in
    /// `all.q` (`slots 1,[host=num_proc]`) as SGE's installation does, unless the
    /// administrator already set a value for it.
    /// A load report from a host: its values as the scheduler will read them, and when
    /// it was heard (it is reachable again if it was not).
    pub fn record_load(&mut self, host: &str, values: Vec<LoadValue>, now: crate::sched::Time) {
        Arc::make_mut(&mut self.runtime).insert(
            host.to_string(),
            Arc::new(HostRuntime {
                load_values: values,
                last_heard: Some(now),
            }),
        );
    }

    pub fn slots_for_new_host(&self, hostname: &str, values: &[LoadValue]) -> Option<Change> {
        let q = self.queues.get("all.q")?;
        let slots = q.attr("slots")?;
        // Every report of a host after its first ends here, before the host list is
        // resolved.
        if slots.overrides.iter().any(|(h, _)| h == hostname) {
            return None;
        }
        let num_proc = load::get(values, "num_proc")?.parse::<u32>().ok()?;
        if !self.queue_hosts_of(q).iter().any(|h| h == hostname) {
            return None;
        }
        let mut q = q.clone();
        q.attr_mut("slots")?
            .overrides
            .push((hostname.to_string(), num_proc.to_string()));
        Some(Change {
            ops: vec![Op::Put(Object::Queue(q))],
            messages: vec![],
        })
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
mod tests {
    use super::*;

    fn fresh() -> ClusterState {
        let mut s = ClusterState {
            master_host: "head".into(),
            ..ClusterState::default()
        };
        for o in initial_objects(&["root".into(), "admin".into()]) {
            s.apply(&Op::Put(o));
        }
        s
    }

    #[test]
    fn manager_commands_come_only_from_administrative_hosts() {
        let mut s = fresh();
        let on = |host: &str| Caller {
            user: "root".into(),
            uid: 0,
            gid: 0,
            host: host.into(),
        };
        let add_manager = ToMaster::AddManagers {
            users: vec!["user9".into()],
        };
        let err = s
            .handle(&on("node1"), &add_manager, crate::sched::Time::from_secs(0))
            .unwrap_err();
        assert_eq!(
            (err.kind, err.message.as_str()),
            (
                RefusalKind::Denied,
                "denied: host \"node1\" is no admin host"
            )
        );
        assert!(!s.acts_as_manager(&on("node1")));
        // Reading stays open to every host.
        assert!(s
            .handle(
                &on("node1"),
                &ToMaster::ShowManagers,
                crate::sched::Time::from_secs(0)
            )
            .is_ok());
        // Only the master's host at first; a manager there adds node1.
        let list = |s: &ClusterState| match s
            .handle(
                &on("node1"),
                &ToMaster::ShowObjectList {
                    kind: gantry_proto::ObjectKind::AdminHost,
                },
                crate::sched::Time::from_secs(0),
            )
            .unwrap()
        {
            Reply::Answer(FromMaster::Names(n)) => n,
            other => panic!("{other:?}"),
        };
        assert_eq!(list(&s), vec!["head".to_string()]);
        let add = |h: &str| ToMaster::AddObject {
            kind: gantry_proto::ObjectKind::AdminHost,
            text: h.into(),
        };
        assert!(s
            .handle(
                &on("node1"),
                &add("node1"),
                crate::sched::Time::from_secs(0)
            )
            .is_err());
        assert_eq!(
            run(&mut s, &on("head"), add("node1")),
            vec!["node1 added to administrative host list"]
        );
        assert_eq!(list(&s), vec!["head".to_string(), "node1".to_string()]);
        assert_eq!(
            s.handle(&on("head"), &add("node1"), crate::sched::Time::from_secs(0))
                .unwrap_err()
                .message,
            "adminhost \"node1\" already exists"
        );
        assert!(s.acts_as_manager(&on("node1")));
        assert_eq!(
            run(&mut s, &on("node1"), add_manager),
            vec!["root@node1 added \"user9\" to manager list"]
        );
        let del = |h: &str| ToMaster::DeleteObjects {
            kind: gantry_proto::ObjectKind::AdminHost,
            names: vec![h.into()],
        };
        assert_eq!(
            s.handle(&on("head"), &del("head"), crate::sched::Time::from_secs(0))
                .unwrap_err()
                .message,
            "denied: can't delete master host \"head\" from admin host list"
        );
        assert_eq!(
            s.handle(&on("head"), &del("node7"), crate::sched::Time::from_secs(0))
                .unwrap_err()
                .message,
            "denied: administrative host \"node7\" does not exist"
        );
        assert_eq!(
            run(&mut s, &on("head"), del("node1")),
            vec!["root@head removed \"node1\" from administrative host list"]
        );
        assert!(!s.is_admin_host("node1"));
        let err = |s: &ClusterState, req: &ToMaster| {
            s.handle(&on("head"), req, crate::sched::Time::from_secs(0))
                .unwrap_err()
        };
        assert_eq!(err(&s, &add(" , ")).message, "no host given");
        assert_eq!(
            err(
                &s,
                &ToMaster::DeleteObjects {
                    kind: gantry_proto::ObjectKind::AdminHost,
                    names: vec![],
                }
            )
            .message,
            "no host given"
        );
        // A list is added whole or not at all.
        assert_eq!(
            err(&s, &add("node2,head,node3")).message,
            "adminhost \"head\" already exists"
        );
        assert_eq!(list(&s), vec!["head".to_string()]);
        assert_eq!(
            run(&mut s, &on("head"), add("node3 alpha")),
            vec![
                "node3 added to administrative host list",
                "alpha added to administrative host list"
            ]
        );
        // -sh lists them sorted by name, as SGE does.
        assert_eq!(list(&s), vec!["alpha", "head", "node3"]);
    }

    /// Who gets which refusal for a manager command, and for another user's job: the
    /// user is checked before the host, as SGE's master does.
    #[test]
    fn refusals_name_the_user_before_the_host() {
        let s = fresh();
        let caller = |user: &str, host: &str| Caller {
            user: user.into(),
            uid: 1000,
            gid: 1000,
            host: host.into(),
        };
        let no_rights = || "no privileges".to_string();
        // (user, host, manager_check, others_job_refusal)
        let table = [
            ("admin", "head", None, "no privileges"),
            (
                "admin",
                "node1",
                Some("denied: host \"node1\" is no admin host"),
                "denied: host \"node1\" is no admin host",
            ),
            (
                "user1",
                "head",
                Some("denied: \"user1\" must be manager for this operation"),
                "no privileges",
            ),
            (
                "user1",
                "node1",
                Some("denied: \"user1\" must be manager for this operation"),
                "no privileges",
            ),
        ];
        for (user, host, check, others) in table {
            let c = caller(user, host);
            assert_eq!(
                s.manager_check(&c).err().map(|r| r.message),
                check.map(str::to_string),
                "{user}@{host}"
            );
            assert_eq!(
                s.others_job_refusal(&c, no_rights()),
                others,
                "{user}@{host}"
            );
        }
    }

    #[test]
    fn a_join_may_not_take_a_joined_name_nor_the_masters_from_elsewhere() {
        let mut s = fresh();
        let joined = s.join("node1", "aa");
        commit(&mut s, Ok(Reply::Change(joined)));
        // (name, from the master's machine, refusal)
        let table = [
            ("node2", false, None),
            ("node1", false, Some("host \"node1\" already joined; delete it with qconf -de first")),
            ("node1", true, Some("host \"node1\" already joined; delete it with qconf -de first")),
            ("head", false, Some("host \"head\" is the master's host; an execd joins under that name only on the master's machine")),
            ("head", true, None),
        ];
        for (name, local, refusal) in table {
            assert_eq!(
                s.join_check(name, local).err().as_deref(),
                refusal,
                "{name} local={local}"
            );
        }
        // Once deleted (its certificate revoked) the name may join again.
        run(
            &mut s,
            &caller("root"),
            ToMaster::DeleteExecHosts {
                hosts: vec!["node1".into()],
            },
        );
        assert_eq!(s.join_check("node1", false), Ok(()));
    }

    fn caller(user: &str) -> Caller {
        Caller {
            user: user.into(),
            uid: 1000,
            gid: 1000,
            host: "head".into(),
        }
    }

    fn run(s: &mut ClusterState, c: &Caller, req: ToMaster) -> Vec<String> {
        let r = s.handle(c, &req, crate::sched::Time::from_secs(0));
        commit(s, r)
    }

    fn commit(s: &mut ClusterState, r: Result<Reply, Refusal>) -> Vec<String> {
        match r.unwrap() {
            Reply::Change(c) => {
                for op in &c.ops {
                    s.apply(op);
                }
                c.messages
            }
            Reply::Answer(a) => panic!("expected a change, got {a:?}"),
        }
    }

    #[test]
    fn non_manager_is_denied_every_change() {
        let s = fresh();
        let u = caller("user1");
        for req in [
            ToMaster::AddExecHost {
                text: "hostname n1\n".into(),
            },
            ToMaster::DeleteExecHosts {
                hosts: vec!["n1".into()],
            },
            ToMaster::ModifyConfig {
                name: "global".into(),
                text: "min_uid 0\n".into(),
            },
            ToMaster::AddManagers {
                users: vec!["user1".into()],
            },
            ToMaster::DeleteManagers {
                users: vec!["admin".into()],
            },
        ] {
            let err = s
                .handle(&u, &req, crate::sched::Time::from_secs(0))
                .unwrap_err();
            assert_eq!(err.kind, RefusalKind::Denied);
            assert_eq!(
                err.message,
                "denied: \"user1\" must be manager for this operation"
            );
        }
    }

    #[test]
    fn exec_host_lifecycle() {
        let mut s = fresh();
        let a = caller("admin");
        let msgs = run(
            &mut s,
            &a,
            ToMaster::AddExecHost {
                text: "hostname n1\n".into(),
            },
        );
        assert_eq!(msgs, vec!["admin@head added \"n1\" to exechost list"]);
        let err = s
            .handle(
                &a,
                &ToMaster::AddExecHost {
                    text: "hostname n1\n".into(),
                },
                crate::sched::Time::from_secs(0),
            )
            .unwrap_err();
        assert_eq!(err.message, "exechost \"n1\" already exists");
        let err = s
            .handle(
                &a,
                &ToMaster::DeleteExecHosts {
                    hosts: vec!["n1".into(), "nope".into()],
                },
                crate::sched::Time::from_secs(0),
            )
            .unwrap_err();
        assert_eq!(err.message, "denied: \"nope\" is not an execution host");
        assert!(
            s.exechosts.contains_key("n1"),
            "a refused delete changes nothing"
        );
        let msgs = run(
            &mut s,
            &a,
            ToMaster::DeleteExecHosts {
                hosts: vec!["n1".into()],
            },
        );
        assert_eq!(msgs, vec!["admin@head removed \"n1\" from exechost list"]);
        assert!(s.exechosts.is_empty());
    }

    #[test]
    fn join_adds_host_to_allhosts_and_first_report_sets_slots() {
        let mut s = fresh();
        for op in s.join("n1", "aa").ops {
            s.apply(&op);
        }
        assert_eq!(s.host_certs.get("aa").map(String::as_str), Some("n1"));
        assert_eq!(s.hostgroups["@allhosts"].hostlist, vec!["n1"]);
        let values = vec![LoadValue {
            name: "num_proc".into(),
            value: "4".into(),
        }];
        for op in s.slots_for_new_host("n1", &values).unwrap().ops {
            s.apply(&op);
        }
        assert_eq!(
            queue::print_attr(s.queues["all.q"].attr("slots").unwrap()),
            "1,[n1=4]"
        );
        assert!(
            s.slots_for_new_host("n1", &values).is_none(),
            "set once only"
        );
        // A rejoin replaces the old certificate.
        for op in s.join("n1", "bb").ops {
            s.apply(&op);
        }
        assert!(!s.host_certs.contains_key("aa"));
        assert_eq!(s.hostgroups["@allhosts"].hostlist, vec!["n1"]);
        // Deleting the host removes it everywhere it was put by joining.
        let a = caller("admin");
        run(
            &mut s,
            &a,
            ToMaster::DeleteExecHosts {
                hosts: vec!["n1".into()],
            },
        );
        assert!(s.host_certs.is_empty());
        assert!(s.hostgroups["@allhosts"].hostlist.is_empty());
        assert_eq!(
            queue::print_attr(s.queues["all.q"].attr("slots").unwrap()),
            "1"
        );
    }

    #[test]
    fn reachability_follows_max_unheard() {
        let mut s = fresh();
        for op in s.join("n1", "aa").ops {
            s.apply(&op);
        }
        let at = |secs: i64| crate::sched::Time::from_secs(secs);
        assert!(!s.is_reachable("n1", at(0)), "never heard");
        s.record_load("n1", vec![], at(100));
        assert!(s.is_reachable("n1", at(100 + 300)));
        assert!(!s.is_reachable("n1", at(100 + 301)));
    }

    #[test]
    fn managers() {
        let mut s = fresh();
        let a = caller("admin");
        let msgs = run(
            &mut s,
            &a,
            ToMaster::AddManagers {
                users: vec!["bob".into()],
            },
        );
        assert_eq!(msgs, vec!["admin@head added \"bob\" to manager list"]);
        assert_eq!(
            s.handle(
                &a,
                &ToMaster::AddManagers {
                    users: vec!["bob".into()]
                },
                crate::sched::Time::from_secs(0)
            )
            .unwrap_err()
            .message,
            "manager \"bob\" already exists"
        );
        assert_eq!(
            s.handle(
                &a,
                &ToMaster::DeleteManagers {
                    users: vec!["zed".into()]
                },
                crate::sched::Time::from_secs(0)
            )
            .unwrap_err()
            .message,
            "denied: manager \"zed\" does not exist"
        );
        assert_eq!(
            s.handle(
                &a,
                &ToMaster::DeleteManagers {
                    users: vec!["root".into()]
                },
                crate::sched::Time::from_secs(0)
            )
            .unwrap_err()
            .kind,
            RefusalKind::Denied
        );
        run(
            &mut s,
            &a,
            ToMaster::DeleteManagers {
                users: vec!["bob".into()],
            },
        );
        assert_eq!(s.managers, vec!["root", "admin"]);
    }

    #[test]
    fn bad_config_changes_nothing() {
        let s = fresh();
        let a = caller("admin");
        let err = s
            .handle(
                &a,
                &ToMaster::ModifyConfig {
                    name: "global".into(),
                    text: "load_report_time soon\n".into(),
                },
                crate::sched::Time::from_secs(0),
            )
            .unwrap_err();
        assert_eq!(err.kind, RefusalKind::Invalid);
        assert_eq!(s.load_report_time(), 40);
    }

    #[test]
    fn qtype_letters_as_sge() {
        assert_eq!(qtype_letters("BATCH INTERACTIVE", "make smp mpi"), "BIP");
        assert_eq!(qtype_letters("BATCH", "NONE"), "B");
    }
}
