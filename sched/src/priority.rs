//! The priority of every job, as SGE 8.1.9 computes it (`sge_priority(5)`): tickets
//! from the override, functional and share-tree policies in the `policy_hierarchy`
//! order, urgency from resource requests, waiting time and deadline, and the POSIX
//! priority, each normalised and weighted into `prio`, by which the order stage serves
//! pending jobs. `docs/dev/sge-priority-notes.md` says step by step what SGE does and
//! where its manual says otherwise; this module follows those notes.
//!
//! Plain data in, numbers out: [`PolicyJob`]s (what the policies read of each job) and
//! [`PolicyObjects`] (users, projects, departments, the share tree and usage) give
//! [`Priorities`]. [`ClusterView::priorities`] builds the input from the cluster.

use std::collections::{BTreeMap, HashMap};

use gantry_common::sharetree::ShareNode;
use gantry_common::usage::{Amounts, UsageBook};
use gantry_proto::{Config, JobId, TaskId};

mod conf;
mod functional;
mod input;
mod override_tickets;
mod share;
#[cfg(test)]
mod tests;

pub use conf::{Policy, PolicyConf};
pub use share::share_tree_nodes;

/// What the ticket policies and urgency read of one job.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyJob<'a> {
    pub id: JobId,
    pub submit_time: i64,
    /// `-p`, -1023..1024.
    pub posix_priority: i32,
    /// `-dl`, seconds since the epoch.
    pub deadline: Option<i64>,
    /// `-js`.
    pub job_share: u32,
    /// `qalter -ot`.
    pub override_tickets: u32,
    pub user: &'a str,
    pub project: Option<&'a str>,
    /// The department (a `DEPT` userset) the owner belongs to, if any.
    pub department: Option<&'a str>,
    /// The lowest slot count of the job's parallel environment range (1 without one):
    /// what a job dilutes its node's share tree tickets by.
    pub min_slots: u32,
    /// The resource request contribution to urgency (`rrcontr`), worked out from the
    /// job's hard requests and the complex (see [`input`]).
    pub rrcontr: f64,
    /// Running tasks (not suspended).
    pub running: Vec<TaskId>,
    /// Pending tasks the policies consider (eligible: not held, not waiting).
    pub pending: Vec<TaskId>,
}

/// The objects whose shares and tickets the policies divide, and the usage the share
/// tree compensates.
#[derive(Debug, Clone, Copy)]
pub struct PolicyObjects<'a> {
    pub users: &'a BTreeMap<String, gantry_common::user::User>,
    pub projects: &'a BTreeMap<String, gantry_common::project::Project>,
    /// Departments (`DEPT` usersets): (fshare, oticket) by name.
    pub departments: &'a BTreeMap<String, (u32, u32)>,
    pub share_tree: Option<&'a ShareNode>,
    pub usage: &'a UsageBook,
}

/// The tickets of one task and what they add up to.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tickets {
    /// Override tickets.
    pub otckt: f64,
    /// Functional tickets.
    pub ftckt: f64,
    /// Share-tree tickets.
    pub stckt: f64,
    /// Their share of all the tickets of the pending (or running) tasks.
    pub share: f64,
    /// Tickets normalised (`ntckts`).
    pub ntckts: f64,
    /// The priority SGE orders by (`prior`).
    pub prio: f64,
}

impl Tickets {
    /// `tckts`.
    pub fn total(&self) -> f64 {
        self.otckt + self.ftckt + self.stckt
    }
}

/// Urgency and its parts, of a job.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Urgency {
    pub urg: f64,
    pub rrcontr: f64,
    pub wtcontr: f64,
    pub dlcontr: f64,
    /// Urgency normalised (`nurg`).
    pub nurg: f64,
}

/// Every part of one job's priority.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobPriority {
    pub urgency: Urgency,
    /// The POSIX priority normalised (`npprior`).
    pub npprior: f64,
    /// Its running tasks' tickets, in task order.
    pub running: Vec<(TaskId, Tickets)>,
    /// What the job's pending tasks show (SGE's template): the first pending task's.
    pub pending: Option<Tickets>,
}

impl JobPriority {
    /// A running task's tickets.
    pub fn task(&self, t: TaskId) -> Option<Tickets> {
        self.running.iter().find(|(u, _)| *u == t).map(|(_, x)| *x)
    }

    /// The first running task's tickets, else the pending tasks'.
    pub fn first(&self) -> Option<Tickets> {
        self.running.first().map(|(_, t)| *t).or(self.pending)
    }

    /// The priority the order stage serves the job's pending tasks by.
    pub fn pending_prio(&self) -> Option<f64> {
        self.pending.map(|t| t.prio)
    }
}

/// The priorities of one scheduling run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Priorities {
    pub jobs: HashMap<JobId, JobPriority, foldhash::fast::RandomState>,
    /// The largest ticket amount any task got (what `ntckts` divides by).
    pub max_tickets: f64,
}

/// SGE's normalisation: where `v` lies between `lo` and `hi`, 0.5 when they (nearly)
/// meet; not clamped.
pub fn normalize(v: f64, lo: f64, hi: f64) -> f64 {
    if hi - lo < 1e-5 {
        0.5
    } else {
        (v - lo) / (hi - lo)
    }
}

/// One schedulable unit: a running task or a pending task of a job.
#[derive(Debug, Clone)]
pub(crate) struct Ref {
    pub(crate) job: usize,
    pub(crate) task: TaskId,
    pub(crate) running: bool,
    pub(crate) user: Option<usize>,
    pub(crate) project: Option<usize>,
    pub(crate) department: Option<usize>,
    /// The share tree node (in [`share::Tree`]) the ref is charged to.
    pub(crate) node: Option<usize>,
    /// What the dependent policies so far gave it (orders the next).
    pub(crate) acc: f64,
    pub(crate) ot: f64,
    pub(crate) ft: f64,
    pub(crate) st: f64,
}

/// A user, project or department as the policies count it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Holder {
    pub(crate) fshare: f64,
    pub(crate) oticket: f64,
    /// Running refs (raised for the pending refs chosen as the policies go).
    pub(crate) job_cnt: u32,
}

/// The objects of one calculation, by index.
#[derive(Debug, Clone, Default)]
pub(crate) struct Holders {
    pub(crate) users: Vec<Holder>,
    pub(crate) projects: Vec<Holder>,
    pub(crate) departments: Vec<Holder>,
}

impl Holders {
    /// The three holders of a ref (user, project, department), each if present.
    pub(crate) fn of(&self, r: &Ref) -> [Option<&Holder>; 3] {
        [
            r.user.map(|i| &self.users[i]),
            r.project.map(|i| &self.projects[i]),
            r.department.map(|i| &self.departments[i]),
        ]
    }

    pub(crate) fn raise(&mut self, r: &Ref, by: i64) {
        let bump = |h: &mut Holder| h.job_cnt = (i64::from(h.job_cnt) + by).max(0) as u32;
        if let Some(i) = r.user {
            bump(&mut self.users[i]);
        }
        if let Some(i) = r.project {
            bump(&mut self.projects[i]);
        }
        if let Some(i) = r.department {
            bump(&mut self.departments[i]);
        }
    }
}

/// Compute every job's priority at `now` (Unix seconds), with `free_slots` free slots
/// in the cluster (a job's pending tasks beyond `free_slots + 1` get no tickets of
/// their own, as in SGE).
pub fn priorities(
    conf: &PolicyConf,
    jobs: &[PolicyJob<'_>],
    objects: &PolicyObjects<'_>,
    now: i64,
    free_slots: u32,
) -> Priorities {
    let mut out = Priorities::default();
    out.jobs.reserve(jobs.len());
    // Urgency, normalised over every job with a running or a considered pending task.
    let mut urgencies: Vec<Urgency> = jobs.iter().map(|j| urgency(conf, j, now)).collect();
    let (mut lo, mut hi) = (f64::MAX, f64::MIN_POSITIVE);
    for (j, u) in jobs.iter().zip(&urgencies) {
        if !j.running.is_empty() || !j.pending.is_empty() {
            lo = lo.min(u.urg);
            hi = hi.max(u.urg);
        }
    }
    let urgency_on = conf.weight_urgency != 0.0 || conf.report_pjob_tickets;
    for u in &mut urgencies {
        u.nurg = if urgency_on {
            normalize(u.urg, lo, hi)
        } else {
            0.5
        };
    }
    // The refs: running tasks first, then pending ones (at most `per_job` of a job).
    let per_job = conf
        .max_pending_tasks_per_job
        .min(free_slots.saturating_add(1))
        .max(1) as usize;
    let mut index = input::Index::new(objects);
    let mut refs: Vec<Ref> = Vec::new();
    for (ji, j) in jobs.iter().enumerate() {
        for &t in &j.running {
            refs.push(index.make_ref(ji, j, t, true));
        }
    }
    let running_count = refs.len();
    for (ji, j) in jobs.iter().enumerate() {
        for &t in j.pending.iter().take(per_job) {
            refs.push(index.make_ref(ji, j, t, false));
        }
    }
    let mut holders = index.holders;
    for r in &refs[..running_count] {
        holders.raise(r, 1);
    }
    // Without share-tree tickets the tree gives nothing: not built.
    let mut tree = objects
        .share_tree
        .filter(|_| conf.tickets_share > 0.0)
        .map(share::Tree::new);
    if let Some(tree) = tree.as_mut() {
        // Looked up once per user and project.
        let mut nodes: HashMap<(&str, Option<&str>), Option<usize>, foldhash::fast::RandomState> =
            HashMap::default();
        for r in refs.iter_mut() {
            let j = &jobs[r.job];
            r.node = *nodes
                .entry((j.user, j.project))
                .or_insert_with(|| tree.node_of(j, objects));
        }
    }

    // First calculation: running and pending refs.
    let mut max_tix: f64 = 0.0;
    override_tickets::running(conf, jobs, &holders, &mut refs[..running_count]);
    functional::running(conf, jobs, &holders, &mut refs[..running_count]);
    if let Some(tree) = tree.as_mut() {
        tree.targets_at(&refs, conf, objects, now);
        tree.running_tickets(conf, jobs, &mut refs[..running_count]);
    }
    for r in &refs[..running_count] {
        max_tix = max_tix.max(r.st + r.ft + r.ot);
    }
    let (running_refs, pending_refs) = refs.split_at_mut(running_count);
    for &(policy, dependent) in &conf.hierarchy {
        match policy {
            Policy::Override => {
                override_tickets::pending(conf, jobs, &mut holders, pending_refs, dependent)
            }
            Policy::Functional => functional::pending(
                conf,
                jobs,
                &mut holders,
                running_refs,
                pending_refs,
                dependent,
            ),
            Policy::Share => {
                if let Some(tree) = tree.as_mut() {
                    tree.pending_tickets(conf, jobs, running_refs, pending_refs, dependent);
                }
            }
        }
    }
    let pending_sum: f64 = pending_refs.iter().map(|r| r.st + r.ft + r.ot).sum();
    for r in pending_refs.iter() {
        max_tix = max_tix.max(r.st + r.ft + r.ot);
    }
    // Second calculation: the running refs alone give their final tickets.
    if let Some(tree) = tree.as_mut() {
        tree.targets_at(running_refs, conf, objects, now);
        tree.running_tickets(conf, jobs, running_refs);
    }
    let running_sum: f64 = running_refs.iter().map(|r| r.st + r.ft + r.ot).sum();
    for r in running_refs.iter() {
        max_tix = max_tix.max(r.st + r.ft + r.ot);
    }
    out.max_tickets = max_tix;

    for (ji, j) in jobs.iter().enumerate() {
        if j.running.is_empty() && j.pending.is_empty() {
            continue;
        }
        out.jobs.insert(
            j.id,
            JobPriority {
                urgency: urgencies[ji],
                npprior: normalize(f64::from(j.posix_priority) + 1024.0, 0.0, 2048.0),
                running: Vec::new(),
                pending: None,
            },
        );
    }
    for (i, r) in refs.iter().enumerate() {
        let j = &jobs[r.job];
        let Some(p) = out.jobs.get_mut(&j.id) else {
            continue;
        };
        let total = r.st + r.ft + r.ot;
        let sum = if i < running_count {
            running_sum
        } else {
            pending_sum
        };
        let ntckts = normalize(total, 0.0, max_tix);
        let t = Tickets {
            otckt: r.ot,
            ftckt: r.ft,
            stckt: r.st,
            share: if total > 0.0 && sum > 0.0 {
                total / sum
            } else {
                0.0
            },
            ntckts,
            prio: conf.weight_urgency * p.urgency.nurg
                + conf.weight_ticket * ntckts
                + conf.weight_priority * p.npprior,
        };
        if r.running {
            p.running.push((r.task, t));
        } else if p.pending.is_none() {
            p.pending = Some(t);
        }
    }
    // A job whose pending tasks were not considered (none enrolled) shows zeros.
    for (ji, j) in jobs.iter().enumerate() {
        if j.pending.is_empty() {
            continue;
        }
        if let Some(p) = out.jobs.get_mut(&j.id) {
            if p.pending.is_none() {
                let ntckts = normalize(0.0, 0.0, max_tix);
                p.pending = Some(Tickets {
                    ntckts,
                    prio: conf.weight_urgency * urgencies[ji].nurg
                        + conf.weight_ticket * ntckts
                        + conf.weight_priority * p.npprior,
                    ..Tickets::default()
                });
            }
        }
    }
    out
}

/// A job's urgency at `now`, before normalisation.
pub fn urgency(conf: &PolicyConf, job: &PolicyJob<'_>, now: i64) -> Urgency {
    let wtcontr = conf.weight_waiting_time * (now - job.submit_time).max(0) as f64;
    let dlcontr = job
        .deadline
        .map_or(0.0, |d| conf.weight_deadline / (d - now).max(1) as f64);
    Urgency {
        urg: job.rrcontr + wtcontr + dlcontr,
        rrcontr: job.rrcontr,
        wtcontr,
        dlcontr,
        nurg: 0.0,
    }
}

/// The usage weights of `usage_weight_list` collapsed into one value per node, as SGE's
/// share tree reads usage.
pub(crate) fn combined_usage(usage: &Amounts, weights: &Amounts) -> f64 {
    let sum = weights.cpu + weights.mem + weights.io;
    if sum <= 0.0 {
        0.0
    } else {
        usage.weighted(weights) / sum
    }
}

/// The scheduler configuration's policy attributes, read from the configuration.
pub fn policy_conf(sched: Option<&Config>) -> PolicyConf {
    PolicyConf::from_config(sched)
}
