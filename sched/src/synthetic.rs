//! Synthetic clusters as plain data, for the scheduler's tests and benchmarks: a fresh
//! cell's objects (SGE's default complex, `all.q` on `@allhosts`, the default parallel
//! environments and usersets) plus hosts with given complex and load values and jobs
//! with given requests. No master, no spool: the same data the master lends as a
//! [`ClusterView`], owned here and changed by the helpers below, which keep the quota
//! book up to date as the master's state does.

use gantry_proto::{
    ArId, ClusterQueue, ComplexAttr, Config, ExecHost, HostGroup, JobId, JobOwner, JobSpec,
    LoadValue, TaskId, UserSet,
};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use gantry_common::job::{Job, TaskState};
use gantry_common::pe::Pe;
use gantry_common::rqs::QuotaSet;

use crate::cycle::Dispatch;
use crate::quota::QuotaBook;
use crate::time::Time;
use crate::view::{ClusterImage, ClusterView, HostRuntime, JobTable, RuntimeTable};

/// A cluster's scheduling data, owned.
#[derive(Debug, Clone)]
pub struct Cluster {
    pub complexes: Vec<ComplexAttr>,
    pub exechosts: BTreeMap<String, ExecHost>,
    pub global_host: Option<ExecHost>,
    pub hostgroups: BTreeMap<String, HostGroup>,
    pub queues: BTreeMap<String, ClusterQueue>,
    pub usersets: BTreeMap<String, UserSet>,
    pub pes: BTreeMap<String, Pe>,
    pub sched: Option<Config>,
    pub jobs: JobTable,
    pub runtime: RuntimeTable,
    pub disabled: HashSet<(String, String)>,
    pub errored: HashSet<(String, String)>,
    pub suspended_queues: HashSet<(String, String)>,
    pub threshold_suspended: BTreeSet<(JobId, TaskId)>,
    /// The resource quota sets with their place in SGE's order.
    pub quota_sets: BTreeMap<String, (u64, QuotaSet)>,
    pub quota_book: QuotaBook,
    pub max_unheard: u64,
    pub max_aj_instances: Option<u32>,
    /// The advance reservations, by id.
    pub ars: BTreeMap<ArId, gantry_proto::AdvanceReservation>,
    /// The tree of hierarchical group quotas.
    pub group_tree: Vec<gantry_proto::GroupEntry>,
    pub users: BTreeMap<String, gantry_common::user::User>,
    pub projects: BTreeMap<String, gantry_common::project::Project>,
    pub share_tree: Option<gantry_common::sharetree::ShareNode>,
    pub usage: gantry_common::usage::UsageBook,
    pub job_otickets: BTreeMap<JobId, u32>,
}

impl Cluster {
    /// A fresh cell with extra complex attributes (`name type relop requestable
    /// consumable default`, as `qconf -sc` lines without shortcut and urgency).
    pub fn new(extra: &[&str]) -> Cluster {
        let mut complexes = gantry_common::complex::default_complexes();
        for line in extra {
            let f: Vec<&str> = line.split_whitespace().collect();
            let text = format!(
                "{} {} {} {} {} {} {} 0\n",
                f[0], f[0], f[1], f[2], f[3], f[4], f[5]
            );
            let parsed = gantry_common::complex::read_complexes(&text)
                .unwrap_or_else(|e| panic!("bad synthetic complex \"{line}\": {e}"));
            complexes.extend(parsed);
        }
        complexes.sort_by(|a, b| a.name.cmp(&b.name));
        let usersets = [
            gantry_common::userset::new_userset("arusers", "ACL"),
            gantry_common::userset::new_userset("deadlineusers", "ACL"),
            gantry_common::userset::new_userset("defaultdepartment", "DEPT"),
        ];
        // SGE's global configuration, as a fresh cell has it.
        let global = gantry_common::config::default_global();
        let mut c = Cluster {
            complexes,
            exechosts: BTreeMap::new(),
            global_host: None,
            hostgroups: BTreeMap::from([(
                "@allhosts".to_string(),
                HostGroup {
                    name: "@allhosts".into(),
                    hostlist: Vec::new(),
                },
            )]),
            queues: BTreeMap::from([(
                "all.q".to_string(),
                gantry_common::queue::new_queue("all.q", "@allhosts"),
            )]),
            usersets: usersets.into_iter().map(|u| (u.name.clone(), u)).collect(),
            pes: gantry_common::pe::default_pes()
                .into_iter()
                .map(|p| (p.name.clone(), p))
                .collect(),
            sched: Some(gantry_common::schedconf::default_schedconf()),
            jobs: JobTable::new(),
            runtime: RuntimeTable::new(),
            disabled: HashSet::new(),
            errored: HashSet::new(),
            suspended_queues: HashSet::new(),
            threshold_suspended: BTreeSet::new(),
            quota_sets: BTreeMap::new(),
            quota_book: QuotaBook::default(),
            max_unheard: gantry_common::config::time_seconds(&global, "max_unheard").max(1),
            max_aj_instances: global
                .get("max_aj_instances")
                .and_then(|v| v.parse::<u32>().ok())
                .filter(|n| *n > 0),
            ars: BTreeMap::new(),
            group_tree: Vec::new(),
            users: BTreeMap::new(),
            projects: BTreeMap::new(),
            share_tree: None,
            usage: Default::default(),
            job_otickets: BTreeMap::new(),
        };
        c.settle_quotas();
        c
    }

    /// The cluster as the scheduler reads it.
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

    /// The cluster as an image for a cycle on another thread. Each configuration part
    /// that equals `before`'s is `before`'s own `Arc`, as the master's copy-on-write
    /// keeps an unchanged part; a changed one is a new `Arc`. The hosts' reports are
    /// shared with the cluster (changed through [`Cluster::host_runtime`], a shared one
    /// becomes a new `Arc`).
    pub fn image_after(&self, before: Option<&ClusterImage>) -> ClusterImage {
        fn keep<T: Clone + PartialEq>(now: &T, before: Option<&Arc<T>>) -> Arc<T> {
            match before {
                Some(b) if **b == *now => b.clone(),
                _ => Arc::new(now.clone()),
            }
        }
        ClusterImage {
            complexes: keep(&self.complexes, before.map(|b| &b.complexes)),
            exechosts: keep(&self.exechosts, before.map(|b| &b.exechosts)),
            global_host: keep(&self.global_host, before.map(|b| &b.global_host)),
            hostgroups: keep(&self.hostgroups, before.map(|b| &b.hostgroups)),
            queues: keep(&self.queues, before.map(|b| &b.queues)),
            usersets: keep(&self.usersets, before.map(|b| &b.usersets)),
            pes: keep(&self.pes, before.map(|b| &b.pes)),
            sched: keep(&self.sched, before.map(|b| &b.sched)),
            // The same table when no job is another `Arc`, as the master's is.
            jobs: match before {
                Some(b)
                    if b.jobs.len() == self.jobs.len()
                        && b.jobs
                            .iter()
                            .zip(&self.jobs)
                            .all(|((i, a), (j, b))| i == j && Arc::ptr_eq(a, b)) =>
                {
                    b.jobs.clone()
                }
                _ => Arc::new(self.jobs.clone()),
            },
            runtime: Arc::new(self.runtime.clone()),
            disabled: Arc::new(self.disabled.clone()),
            errored: Arc::new(self.errored.clone()),
            suspended_queues: Arc::new(self.suspended_queues.clone()),
            threshold_suspended: Arc::new(self.threshold_suspended.clone()),
            quota_book: Arc::new(self.quota_book.clone()),
            max_unheard: self.max_unheard,
            max_aj_instances: self.max_aj_instances,
            ars: keep(&self.ars, before.map(|b| &b.ars)),
            group_tree: keep(&self.group_tree, before.map(|b| &b.group_tree)),
            users: keep(&self.users, before.map(|b| &b.users)),
            projects: keep(&self.projects, before.map(|b| &b.projects)),
            share_tree: keep(&self.share_tree, before.map(|b| &b.share_tree)),
            usage: keep(&self.usage, before.map(|b| &b.usage)),
            job_otickets: keep(&self.job_otickets, before.map(|b| &b.job_otickets)),
        }
    }

    /// Rebuild the quota book after a change it depends on (sets, usersets, host
    /// groups, complex), as the master does.
    pub fn settle_quotas(&mut self) {
        self.quota_book.mark_stale();
        let mut sets: Vec<&(u64, QuotaSet)> = self.quota_sets.values().collect();
        sets.sort_by_key(|(seq, _)| *seq);
        let sets = sets.into_iter().map(|(_, s)| s.clone()).collect();
        let usersets = self
            .usersets
            .values()
            .map(|u| (u.name.clone(), u.entries.clone()))
            .collect();
        let memberships = crate::view::memberships(&self.hostgroups);
        self.quota_book
            .settle(&self.complexes, sets, usersets, memberships, &self.jobs);
    }

    /// Replace the complex (sorted by name).
    pub fn put_complexes(&mut self, list: Vec<ComplexAttr>) {
        self.complexes = list;
        self.settle_quotas();
    }

    pub fn put_queue(&mut self, q: ClusterQueue) {
        self.queues.insert(q.name.clone(), q);
    }

    pub fn put_pe(&mut self, p: Pe) {
        self.pes.insert(p.name.clone(), p);
    }

    pub fn put_userset(&mut self, u: UserSet) {
        self.usersets.insert(u.name.clone(), u);
        self.settle_quotas();
    }

    pub fn put_hostgroup(&mut self, g: HostGroup) {
        self.hostgroups.insert(g.name.clone(), g);
        self.settle_quotas();
    }

    /// Add or replace a quota set at place `seq` in SGE's order.
    pub fn put_quota_set(&mut self, seq: u64, set: QuotaSet) {
        self.quota_sets.insert(set.name.clone(), (seq, set));
        self.settle_quotas();
    }

    /// Add or replace a job; the quota book counts what its running tasks use.
    pub fn put_job(&mut self, job: Job) {
        if let Some(old) = self.jobs.remove(&job.id) {
            self.quota_book.count(&old, -1.0);
        }
        self.quota_book.count(&job, 1.0);
        self.jobs.insert(job.id, Arc::new(job));
    }

    pub fn remove_job(&mut self, id: u64) {
        if let Some(old) = self.jobs.remove(&JobId(id)) {
            self.quota_book.count(&old, -1.0);
        }
    }

    /// A host's load values changed (the book's dynamic limits read them at a cycle).
    pub fn host_runtime(&mut self, host: &str) -> &mut HostRuntime {
        Arc::make_mut(self.runtime.entry(host.to_string()).or_default())
    }

    /// Every exec host, as the set of hosts with a connected execd.
    pub fn connected(&self) -> HashSet<String> {
        self.exechosts.keys().cloned().collect()
    }

    /// Add an exec host to `@allhosts` with `complex_values` and reported load values
    /// (`num_proc`, `np_load_avg`, ... as the execd reports them), heard from at time 0.
    pub fn add_host(&mut self, name: &str, complex_values: &str, load: &[(&str, &str)]) {
        let mut text = format!("hostname {name}\n");
        if !complex_values.is_empty() {
            text.push_str(&format!("complex_values {complex_values}\n"));
        }
        let host = gantry_common::exechost::parse_exechost(&text)
            .unwrap_or_else(|e| panic!("bad synthetic host \"{name}\": {e}"));
        self.exechosts.insert(name.to_string(), host);
        if let Some(g) = self.hostgroups.get_mut("@allhosts") {
            g.hostlist.push(name.to_string());
        }
        self.settle_quotas();
        self.runtime.insert(
            name.to_string(),
            Arc::new(HostRuntime {
                load_values: load
                    .iter()
                    .map(|(k, v)| LoadValue {
                        name: k.to_string(),
                        value: v.to_string(),
                    })
                    .collect(),
                last_heard: Some(Time::from_secs(0)),
            }),
        );
    }

    /// Set a queue attribute (`slots`, `complex_values`, `load_thresholds`, ... with
    /// `[host=value]` overrides).
    pub fn set_queue(&mut self, queue: &str, attr: &str, value: &str) {
        let Some(q) = self.queues.get_mut(queue) else {
            panic!("no queue {queue}");
        };
        let parsed = gantry_common::queue::parse_attr(value)
            .unwrap_or_else(|e| panic!("bad value for {attr}: {e}"));
        match q.attr_mut(attr) {
            Some(a) => *a = parsed,
            None => panic!("no attribute {attr}"),
        }
    }

    /// Mark a task running with one slot in `queue@host` (as a dispatch would).
    pub fn start(&mut self, job_id: u64, task: u32, queue: &str, host: &str) {
        if let Some(mut j) = self.jobs.get(&JobId(job_id)).map(|j| Job::clone(j)) {
            j.tasks.insert(TaskId(task), running_on(queue, host));
            self.put_job(j);
        }
    }

    /// Commit what a cycle decided, as the master does (start time 0).
    pub fn commit(&mut self, dispatches: &[Dispatch]) {
        for d in dispatches {
            if let Some(mut j) = self.jobs.get(&d.job_id).map(|j| Job::clone(j)) {
                j.tasks.insert(d.task_id, running(d));
                self.put_job(j);
            }
        }
    }
}

/// A pending `qsub -b y /bin/true` job of `user` with hard and soft requests.
pub fn job(id: u64, user: &str, hard: &[(&str, &str)], soft: &[(&str, &str)]) -> Job {
    let pairs = |l: &[(&str, &str)]| {
        l.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    Job {
        id: JobId(id),
        spec: JobSpec {
            hard_resources: pairs(hard),
            soft_resources: pairs(soft),
            ..JobSpec::binary("true", "/bin/true", "head")
        },
        owner: JobOwner {
            user: user.into(),
            uid: 1000,
            gid: 1000,
            groups: vec![user.to_string()],
        },
        submit_time: 0,
        tasks: gantry_common::tasks::Tasks::single(),
        suspended: Default::default(),
        restarted: Default::default(),
        ckpt_arena: Default::default(),
        failed_starts: Default::default(),
        version: 0,
    }
}

/// The state a dispatched task is in once the dispatch is committed (start time 0).
pub fn running(d: &Dispatch) -> TaskState {
    TaskState::Running {
        host: d.host.clone(),
        queue: d.queue.clone(),
        start_time: 0,
        grants: d.grants.clone(),
        pe: d.pe.clone(),
    }
}

/// A task running with one slot in `queue@host` since time 0.
pub fn running_on(queue: &str, host: &str) -> TaskState {
    TaskState::Running {
        host: host.into(),
        queue: queue.into(),
        start_time: 0,
        grants: vec![gantry_proto::Grant {
            queue: queue.into(),
            host: host.into(),
            slots: 1,
        }],
        pe: None,
    }
}

/// A share tree for benchmarks: `users` users (`user0`...) as leaves four levels down
/// (Root, 5 divisions, 5 departments each, 5 groups each, the users spread over the
/// 125 groups), shares varying by node.
pub fn share_tree_of(users: u64) -> gantry_common::sharetree::ShareNode {
    use gantry_common::sharetree::{NodeType, ShareNode};
    let node = |name: String, shares: u32, children: Vec<ShareNode>| ShareNode {
        name,
        node_type: NodeType::User,
        shares,
        children,
    };
    let groups: Vec<Vec<ShareNode>> = (0..125)
        .map(|g| {
            (0..users)
                .filter(|u| u % 125 == g)
                .map(|u| node(format!("user{u}"), 1 + (u % 7) as u32 * 10, Vec::new()))
                .collect()
        })
        .collect();
    let mut groups = groups.into_iter();
    let divisions = (0..5)
        .map(|d| {
            let departments = (0..5)
                .map(|e| {
                    let gs = (0..5)
                        .map(|g| {
                            node(
                                format!("g{d}{e}{g}"),
                                10 + g * 5,
                                groups.next().unwrap_or_default(),
                            )
                        })
                        .collect();
                    node(format!("e{d}{e}"), 20 + e * 3, gs)
                })
                .collect();
            node(format!("d{d}"), 100 - d * 10, departments)
        })
        .collect();
    node("Root".into(), 1, divisions)
}
