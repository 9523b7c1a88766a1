//! The scheduler's input: the cluster as the master keeps it, borrowed as plain data.

use gantry_proto::{
    AdvanceReservation, ArId, ClusterQueue, ComplexAttr, Config, ExecHost, GroupEntry, HostGroup,
    JobId, LoadValue, TaskId, UserSet,
};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use gantry_common::conf;
use gantry_common::job::{wildcard, Job};
use gantry_common::pe::Pe;
use gantry_common::project::Project;
use gantry_common::sharetree::ShareNode;
use gantry_common::usage::UsageBook;
use gantry_common::user::User;

use crate::quota::QuotaBook;
use crate::time::{Span, Time};

pub mod priorities;
mod quota_rows;

/// What the master knows of a host from its reports.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostRuntime {
    pub load_values: Vec<LoadValue>,
    /// When the last load report arrived.
    pub last_heard: Option<Time>,
}

/// The jobs by id, in id order. A persistent map: a copy of the table (for a cycle on
/// another thread, a client's answer) costs nothing, and a change to one of the copies
/// copies only the path to the job it changes, not the table (with 20,000 jobs and a
/// cycle holding a copy, each `qsub` had copied the whole table). Each job is shared.
pub use crate::model::JobTable;

/// The hosts' reports by host, each shared like the jobs.
pub type RuntimeTable = HashMap<String, Arc<HostRuntime>>;

/// Everything a cycle, an explanation or a threshold check reads, borrowed from the
/// master's state for the length of one call.
#[derive(Debug, Clone, Copy)]
pub struct ClusterView<'a> {
    pub complexes: &'a [ComplexAttr],
    pub exechosts: &'a BTreeMap<String, ExecHost>,
    /// The global host: cluster-wide `complex_values`.
    pub global_host: &'a Option<ExecHost>,
    pub hostgroups: &'a BTreeMap<String, HostGroup>,
    pub queues: &'a BTreeMap<String, ClusterQueue>,
    pub usersets: &'a BTreeMap<String, UserSet>,
    pub pes: &'a BTreeMap<String, Pe>,
    /// The scheduler configuration (`qconf -ssconf`).
    pub sched: &'a Option<Config>,
    pub jobs: &'a JobTable,
    pub runtime: &'a RuntimeTable,
    /// Disabled queue instances (`qmod -d`): (queue, host).
    pub disabled: &'a HashSet<(String, String)>,
    /// Queue instances in error state (`E`).
    pub errored: &'a HashSet<(String, String)>,
    /// Suspended queue instances (`s`).
    pub suspended_queues: &'a HashSet<(String, String)>,
    /// Tasks stopped by their queue's `suspend_thresholds`.
    pub threshold_suspended: &'a BTreeSet<(JobId, TaskId)>,
    /// The compiled resource quota sets and what running jobs use under them.
    pub quota_book: &'a QuotaBook,
    /// `max_unheard` in seconds: a host not heard from for longer is unreachable.
    pub max_unheard: u64,
    /// `max_aj_instances`: at most so many tasks of one array job run at once.
    pub max_aj_instances: Option<u32>,
    /// The advance reservations, by id.
    pub ars: &'a BTreeMap<ArId, AdvanceReservation>,
    /// The tree of hierarchical group quotas (empty: none).
    pub group_tree: &'a [GroupEntry],
    /// User objects (`qconf -suser`), by name.
    pub users: &'a BTreeMap<String, User>,
    /// Projects (`qconf -sprj`), by name.
    pub projects: &'a BTreeMap<String, Project>,
    /// The share tree (`qconf -sstree`), if there is one.
    pub share_tree: &'a Option<ShareNode>,
    /// Every user's and project's usage (the share-tree policy's).
    pub usage: &'a UsageBook,
    /// Jobs' own override tickets (`qalter -ot`).
    pub job_otickets: &'a BTreeMap<JobId, u32>,
}

/// The same input owned: every part the master keeps behind an `Arc` and changes
/// copy-on-write, so that taking an image costs a reference count per part and a cycle
/// can run on it on a thread of its own while the master goes on changing its state.
/// A part the master changed since shows as a different `Arc`.
#[derive(Debug, Clone, Default)]
pub struct ClusterImage {
    pub complexes: Arc<Vec<ComplexAttr>>,
    pub exechosts: Arc<BTreeMap<String, ExecHost>>,
    pub global_host: Arc<Option<ExecHost>>,
    pub hostgroups: Arc<BTreeMap<String, HostGroup>>,
    pub queues: Arc<BTreeMap<String, ClusterQueue>>,
    pub usersets: Arc<BTreeMap<String, UserSet>>,
    pub pes: Arc<BTreeMap<String, Pe>>,
    pub sched: Arc<Option<Config>>,
    pub jobs: Arc<JobTable>,
    pub runtime: Arc<RuntimeTable>,
    pub disabled: Arc<HashSet<(String, String)>>,
    pub errored: Arc<HashSet<(String, String)>>,
    pub suspended_queues: Arc<HashSet<(String, String)>>,
    pub threshold_suspended: Arc<BTreeSet<(JobId, TaskId)>>,
    pub quota_book: Arc<QuotaBook>,
    pub max_unheard: u64,
    pub max_aj_instances: Option<u32>,
    pub ars: Arc<BTreeMap<ArId, AdvanceReservation>>,
    pub group_tree: Arc<Vec<GroupEntry>>,
    pub users: Arc<BTreeMap<String, User>>,
    pub projects: Arc<BTreeMap<String, Project>>,
    pub share_tree: Arc<Option<ShareNode>>,
    pub usage: Arc<UsageBook>,
    pub job_otickets: Arc<BTreeMap<JobId, u32>>,
}

impl ClusterImage {
    /// The image read as a view.
    pub fn view(&self) -> ClusterView<'_> {
        ClusterView {
            complexes: &self.complexes,
            exechosts: &self.exechosts,
            global_host: &self.global_host,
            hostgroups: &self.hostgroups,
            queues: &self.queues,
            usersets: &self.usersets,
            pes: &self.pes,
            sched: &self.sched,
            jobs: &self.jobs,
            runtime: &self.runtime,
            disabled: &self.disabled,
            errored: &self.errored,
            suspended_queues: &self.suspended_queues,
            threshold_suspended: &self.threshold_suspended,
            quota_book: &self.quota_book,
            max_unheard: self.max_unheard,
            max_aj_instances: self.max_aj_instances,
            ars: &self.ars,
            group_tree: &self.group_tree,
            users: &self.users,
            projects: &self.projects,
            share_tree: &self.share_tree,
            usage: &self.usage,
            job_otickets: &self.job_otickets,
        }
    }
}

impl<'a> ClusterView<'a> {
    /// Has the host reported within `max_unheard` of `now`?
    pub fn is_reachable(&self, host: &str, now: Time) -> bool {
        let limit = Span::from_secs(self.max_unheard.min(i64::MAX as u64) as i64);
        self.runtime
            .get(host)
            .and_then(|r| r.last_heard)
            .is_some_and(|t| now.since(t) <= limit)
    }

    /// The host groups (with nesting resolved) a host belongs to.
    pub fn groups_of(&self, host: &str) -> Vec<&'a str> {
        groups_of(self.hostgroups, host)
    }

    /// The hosts in a group, nested groups expanded (cycles and depth bounded).
    pub fn resolve_group(&self, name: &str, depth: usize) -> Vec<String> {
        resolve_group(self.hostgroups, name, depth)
    }

    /// The hosts a queue's host list names, host groups resolved.
    pub fn queue_hosts_of(&self, q: &ClusterQueue) -> Vec<String> {
        queue_hosts_of(self.hostgroups, q)
    }

    /// Is a job id or name still in the system (for `-hold_jid`)?
    pub fn predecessor_active(&self, reference: &str) -> bool {
        predecessor_active(self.jobs, reference)
    }

    /// `-hold_jid_ad`: the jobs a job's array dependencies name (ids, or names with
    /// wildcards), the job itself never.
    pub fn array_predecessors(&self, job: &Job) -> Vec<&'a Job> {
        array_predecessors(self.jobs, &job.spec.hold_jids_ad, job.id)
    }
}

/// The jobs `-hold_jid_ad` references (`refs`: ids, or names with wildcards) name,
/// job `own` never.
pub fn array_predecessors<'j>(jobs: &'j JobTable, refs: &[String], own: JobId) -> Vec<&'j Job> {
    if refs.is_empty() {
        return Vec::new();
    }
    jobs.values()
        .map(|j| &**j)
        .filter(|p| {
            p.id != own
                && refs.iter().any(|r| match r.parse::<JobId>() {
                    Ok(id) => p.id == id,
                    Err(_) => wildcard(r, &p.spec.name),
                })
        })
        .collect()
}

/// Does task `task` wait for the same task of one of its array predecessors?
pub fn waits_for_array_task(predecessors: &[&Job], task: TaskId) -> bool {
    predecessors.iter().any(|p| p.tasks.contains(task))
}

// What the view's questions need of the state, for a caller that has the maps and no
// view (building one reads the configuration).

/// The host groups (with nesting resolved) a host belongs to.
pub fn groups_of<'g>(hostgroups: &'g BTreeMap<String, HostGroup>, host: &str) -> Vec<&'g str> {
    hostgroups
        .keys()
        .filter(|g| group_contains(hostgroups, g, host, 0))
        .map(String::as_str)
        .collect()
}

/// Does a group (nested groups expanded, cycles and depth bounded) hold the host? Asked
/// without listing the group's hosts.
fn group_contains(
    hostgroups: &BTreeMap<String, HostGroup>,
    name: &str,
    host: &str,
    depth: usize,
) -> bool {
    let Some(g) = hostgroups.get(name) else {
        return false;
    };
    depth <= 16
        && g.hostlist.iter().any(|m| {
            if m.starts_with('@') {
                group_contains(hostgroups, m, host, depth + 1)
            } else {
                m == host
            }
        })
}

/// Every host's host groups (nesting resolved), each once and in name order: what
/// [`groups_of`] answers for one host, for all of them at the cost of resolving each
/// group once.
pub fn memberships(hostgroups: &BTreeMap<String, HostGroup>) -> HashMap<String, Vec<String>> {
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    for g in hostgroups.keys() {
        for h in resolve_group(hostgroups, g, 0) {
            let list = out.entry(h).or_default();
            if list.last() != Some(g) {
                list.push(g.clone());
            }
        }
    }
    out
}

/// The hosts in a group, nested groups expanded (cycles and depth bounded).
pub fn resolve_group(
    hostgroups: &BTreeMap<String, HostGroup>,
    name: &str,
    depth: usize,
) -> Vec<String> {
    let Some(g) = hostgroups.get(name) else {
        return Vec::new();
    };
    if depth > 16 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for m in &g.hostlist {
        if m.starts_with('@') {
            out.extend(resolve_group(hostgroups, m, depth + 1));
        } else {
            out.push(m.clone());
        }
    }
    out
}

/// The hosts a queue's host list names, host groups resolved.
pub fn queue_hosts_of(hostgroups: &BTreeMap<String, HostGroup>, q: &ClusterQueue) -> Vec<String> {
    let Some(list) = q.attr("hostlist") else {
        return Vec::new();
    };
    let mut hosts = Vec::new();
    for item in conf::split_list(&list.default) {
        if item.starts_with('@') {
            hosts.extend(resolve_group(hostgroups, &item, 0));
        } else {
            hosts.push(item);
        }
    }
    hosts
}

/// The jobs in the system that `references` (`-hold_jid` ids and names) name, by id,
/// `me` left out: SGE's `jid_predecessor_list`.
pub fn predecessors(jobs: &JobTable, references: &[String], me: JobId) -> Vec<JobId> {
    let mut ids: Vec<JobId> = Vec::new();
    for r in references {
        match r.parse::<JobId>() {
            Ok(id) if jobs.contains_key(&id) => ids.push(id),
            Ok(_) => {}
            Err(_) => ids.extend(
                jobs.values()
                    .filter(|j| wildcard(r, &j.spec.name))
                    .map(|j| j.id),
            ),
        }
    }
    ids.sort();
    ids.dedup();
    ids.retain(|id| *id != me);
    ids
}

/// What a job's pending tasks wait for at `now` (seconds), as `qstat -s hu|ho|hs|hj|hd|
/// ha` selects it: its holds, predecessors still in the system (`-hold_jid`), a pending
/// task waiting for its array predecessors' (`-hold_jid_ad`), a start time to come.
pub fn pending_holds(jobs: &JobTable, job: &Job, now: i64) -> gantry_proto::Holds {
    use gantry_proto::Holds;
    let spec = &job.spec;
    let waits_for_tasks = !spec.hold_jids_ad.is_empty() && {
        let predecessors = array_predecessors(jobs, &spec.hold_jids_ad, job.id);
        job.tasks
            .pending()
            .iter()
            .any(|t| waits_for_array_task(&predecessors, t))
    };
    Holds::NONE
        .with(Holds::USER, spec.hold)
        .with(Holds::OPERATOR, spec.operator_hold)
        .with(Holds::SYSTEM, spec.system_hold)
        .with(
            Holds::JOB_DEPENDENCY,
            spec.hold_jids.iter().any(|r| predecessor_active(jobs, r)),
        )
        .with(Holds::ARRAY_DEPENDENCY, waits_for_tasks)
        .with(Holds::START_TIME, spec.start_after.is_some_and(|t| t > now))
}

/// The jobs in the system whose `-hold_jid` names job `me` (by id, or by a name
/// pattern its name matches): SGE's `jid_successor_list`.
pub fn successors(jobs: &JobTable, me: &Job) -> Vec<JobId> {
    jobs.values()
        .filter(|j| {
            j.id != me.id
                && j.spec.hold_jids.iter().any(|r| match r.parse::<JobId>() {
                    Ok(id) => id == me.id,
                    Err(_) => wildcard(r, &me.spec.name),
                })
        })
        .map(|j| j.id)
        .collect()
}

/// Is a job id or name still in the system (for `-hold_jid`)?
pub fn predecessor_active(jobs: &JobTable, reference: &str) -> bool {
    match reference.parse::<JobId>() {
        Ok(id) => jobs.contains_key(&id),
        Err(_) => jobs.values().any(|j| wildcard(reference, &j.spec.name)),
    }
}
