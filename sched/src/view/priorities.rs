//! The priority calculation's input read from the cluster.

use std::collections::BTreeMap;

use gantry_common::job::{wildcard, Job, TaskState};
use gantry_common::value::{is_numeric, parse_value, Value};
use gantry_proto::ComplexAttr;

use crate::priority::{priorities, PolicyConf, PolicyJob, PolicyObjects, Priorities};
use crate::time::Time;
use crate::view::ClusterView;

/// The slots SGE assumes a job gets for its urgency (`urgency_slots` of its parallel
/// environment for a real range), and the lowest it asks for.
pub fn assumed_slots(view: &ClusterView<'_>, job: &Job) -> (f64, u32) {
    let Some((pattern, range)) = &job.spec.pe else {
        return (1.0, 1);
    };
    let Some((lo, hi)) = gantry_common::pe::parse_slot_range(range) else {
        return (1.0, 1);
    };
    if lo == hi {
        return (f64::from(lo), lo);
    }
    let Some(pe) = view.pes.values().find(|p| wildcard(pattern, &p.name)) else {
        return (1.0, lo);
    };
    let capped = hi.min(pe.slots.max(lo));
    let slots = match pe.urgency_slots.trim().to_ascii_lowercase().as_str() {
        "min" => f64::from(lo),
        "max" => f64::from(capped),
        // The mean of the ids in the range, truncated.
        "avg" => ((f64::from(lo) + f64::from(capped)) / 2.0).trunc(),
        n => n.parse::<u32>().map_or(1.0, f64::from),
    };
    (slots, lo)
}

/// The resource request contribution to a job's urgency: each hard request's amount
/// times its complex's `urgency` times the slots (a string request its urgency once),
/// the implicit request of one `slots` per slot included.
pub fn resource_contribution(complexes: &[ComplexAttr], job: &Job, slots: f64) -> f64 {
    let find = |name: &str| {
        complexes
            .iter()
            .find(|c| c.name == name)
            .or_else(|| complexes.iter().find(|c| c.shortcut == name))
    };
    let Some(slots_attr) = find("slots") else {
        return 0.0;
    };
    let mut rr = slots_attr.urgency as f64 * slots;
    for (name, value) in &job.spec.hard_resources {
        let Some(c) = find(name) else { continue };
        let u = c.urgency as f64;
        if is_numeric(c.value_type) {
            if let Ok(Value::Num(v)) = parse_value(c.value_type, value) {
                rr += v * u * slots;
            }
        } else {
            rr += u;
        }
    }
    rr
}

impl<'a> ClusterView<'a> {
    /// The department of a user: the first `DEPT` userset naming it (or one of its
    /// groups), else `defaultdepartment`.
    pub fn department_of(&self, user: &str, groups: &[String]) -> Option<&'a str> {
        let usersets: &'a BTreeMap<String, gantry_proto::UserSet> = self.usersets;
        usersets
            .values()
            .find(|u| {
                u.types.iter().any(|t| t == "DEPT")
                    && gantry_common::userset::entries_contain(&u.entries, user, groups)
            })
            .map(|u| u.name.as_str())
            .or_else(|| {
                usersets
                    .get_key_value("defaultdepartment")
                    .map(|(k, _)| k.as_str())
            })
    }

    /// What the policies read of every job at `now`: its running tasks (not
    /// suspended) and its pending ones if a cycle considers it.
    pub fn policy_jobs(&self, now: Time, conf: &PolicyConf) -> Vec<PolicyJob<'a>> {
        let per_job = conf.max_pending_tasks_per_job.max(1) as usize;
        // Worked out once per user, and once per kind of request.
        type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
        let mut departments: FastMap<&str, Option<&'a str>> = FastMap::default();
        type Asked<'j> = (&'j [(String, String)], Option<&'j (String, String)>);
        let mut contributions: FastMap<Asked<'_>, (u32, f64)> = FastMap::default();
        self.jobs
            .values()
            .map(|j| &**j)
            .filter_map(|j| {
                let running: Vec<_> = j
                    .tasks
                    .placed()
                    .filter(|(t, s)| {
                        let on = match s {
                            TaskState::Running { queue, host, .. }
                            | TaskState::Deleting { queue, host, .. } => !self
                                .suspended_queues
                                .contains(&(queue.clone(), host.clone())),
                            _ => false,
                        };
                        on && !j.suspended.contains(t)
                            && !self.threshold_suspended.contains(&(j.id, *t))
                    })
                    .map(|(t, _)| t)
                    .collect();
                let pending: Vec<_> = if j.tasks.has_pending() && self.eligible(j, now) {
                    j.tasks.pending().iter().take(per_job).collect()
                } else {
                    Vec::new()
                };
                if running.is_empty() && pending.is_empty() {
                    return None;
                }
                let (min_slots, rrcontr) = *contributions
                    .entry((&j.spec.hard_resources, j.spec.pe.as_ref()))
                    .or_insert_with(|| {
                        let (slots, min_slots) = assumed_slots(self, j);
                        (min_slots, resource_contribution(self.complexes, j, slots))
                    });
                let department = *departments
                    .entry(&j.owner.user)
                    .or_insert_with(|| self.department_of(&j.owner.user, &j.owner.groups));
                Some(PolicyJob {
                    id: j.id,
                    submit_time: j.submit_time,
                    posix_priority: j.spec.priority,
                    deadline: j.spec.deadline,
                    job_share: j.spec.job_share,
                    override_tickets: self.job_otickets.get(&j.id).copied().unwrap_or(0),
                    user: &j.owner.user,
                    project: j.spec.project.as_deref(),
                    department,
                    min_slots,
                    rrcontr,
                    running,
                    pending,
                })
            })
            .collect()
    }

    /// Departments (`DEPT` usersets): (fshare, oticket) by name.
    pub fn departments(&self) -> BTreeMap<String, (u32, u32)> {
        self.usersets
            .values()
            .filter(|u| u.types.iter().any(|t| t == "DEPT"))
            .map(|u| (u.name.clone(), (u.fshare, u.oticket)))
            .collect()
    }

    /// The slots no running task holds, over every queue instance `usable` says can
    /// take jobs (`slots` of each less what runs there).
    pub fn free_slots(&self, capacity: f64) -> u32 {
        let used: u32 = self
            .jobs
            .values()
            .map(|j| {
                j.tasks
                    .placed_states()
                    .map(|s| match s {
                        TaskState::Running { grants, .. } | TaskState::Deleting { grants, .. } => {
                            grants.iter().map(|g| g.slots).sum::<u32>()
                        }
                        _ => 0,
                    })
                    .sum::<u32>()
            })
            .sum();
        (capacity - f64::from(used)).max(0.0) as u32
    }

    /// The objects the policies divide among the jobs (`departments` from
    /// [`ClusterView::departments`]).
    fn policy_objects<'d>(&self, departments: &'d BTreeMap<String, (u32, u32)>) -> PolicyObjects<'d>
    where
        'a: 'd,
    {
        PolicyObjects {
            users: self.users,
            projects: self.projects,
            departments,
            share_tree: self.share_tree.as_ref(),
            usage: self.usage,
        }
    }

    /// Every job's priority at `now` with `free_slots` free (see [`priorities`]).
    pub fn priorities(&self, now: Time, free_slots: u32) -> Priorities {
        let conf = PolicyConf::from_config((*self.sched).as_ref());
        let jobs = self.policy_jobs(now, &conf);
        let departments = self.departments();
        priorities(
            &conf,
            &jobs,
            &self.policy_objects(&departments),
            now.secs(),
            free_slots,
        )
    }

    /// The share tree as `sge_share_mon` shows it at `now` (see
    /// [`crate::priority::share_tree_nodes`]).
    pub fn share_tree_nodes(&self, now: Time) -> Vec<gantry_proto::ShareTreeNode> {
        let conf = PolicyConf::from_config((*self.sched).as_ref());
        let jobs = self.policy_jobs(now, &conf);
        let departments = self.departments();
        crate::priority::share_tree_nodes(
            &conf,
            &jobs,
            &self.policy_objects(&departments),
            now.secs(),
        )
    }
}
