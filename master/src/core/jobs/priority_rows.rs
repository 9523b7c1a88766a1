//! `qstat -pri/-urg/-ext` and `sge_share_mon`: the parts of each job's priority as the
//! scheduler's last run worked them out, and the share tree with its usage now.

use gantry_proto::{PriorityRow, ShareTreeNode, TaskId};

use super::TaskState;
use crate::core::state::ClusterState;
use gantry_sched::priority::Tickets;
use gantry_sched::time::Time;

impl ClusterState {
    /// A row per running task and per job with pending tasks of `users`' jobs (all:
    /// empty or `*`), in job id order; zeros where the last run did not consider a job
    /// (held, waiting, or no run yet), as SGE shows them.
    pub fn priority_rows(&self, users: &[String]) -> Vec<PriorityRow> {
        let view = self.view();
        let prios = self.live.priorities.as_deref();
        let mut out = Vec::new();
        let mut departments: std::collections::HashMap<&str, Option<String>> =
            std::collections::HashMap::new();
        for job in self.input.jobs.values() {
            if !(users.is_empty() || users.iter().any(|u| u == "*" || *u == job.owner.user)) {
                continue;
            }
            let p = prios.and_then(|p| p.jobs.get(&job.id));
            let department = departments
                .entry(&job.owner.user)
                .or_insert_with(|| {
                    view.department_of(&job.owner.user, &job.owner.groups)
                        .map(str::to_string)
                })
                .clone();
            let row = |task: Option<TaskId>, t: Option<Tickets>| {
                let t = t.unwrap_or_default();
                let u = p.map(|p| p.urgency).unwrap_or_default();
                PriorityRow {
                    job_id: job.id,
                    task,
                    prio: t.prio,
                    nurg: u.nurg,
                    npprior: p.map_or(0.0, |p| p.npprior),
                    ntckts: t.ntckts,
                    urg: u.urg,
                    rrcontr: u.rrcontr,
                    wtcontr: u.wtcontr,
                    dlcontr: u.dlcontr,
                    ppri: job.spec.priority,
                    ovrts: self.input.job_otickets.get(&job.id).copied().unwrap_or(0),
                    otckt: t.otckt,
                    ftckt: t.ftckt,
                    stckt: t.stckt,
                    share: t.share,
                    project: job.spec.project.clone(),
                    department: department.clone(),
                    deadline: job.spec.deadline,
                    usage: task.and_then(|t| {
                        self.live
                            .task_usage
                            .get(&(job.id, t))
                            .map(|u| (u.cpu, u.mem, u.io))
                    }),
                }
            };
            for (task, state) in job.tasks.placed() {
                if matches!(
                    state,
                    TaskState::Running { .. } | TaskState::Deleting { .. }
                ) {
                    out.push(row(Some(task), p.and_then(|p| p.task(task))));
                }
            }
            if job.tasks.has_pending() {
                out.push(row(None, p.and_then(|p| p.pending)));
            }
        }
        out
    }

    /// The share tree's nodes as `sge_share_mon` shows them at `now` (Unix seconds).
    pub fn share_tree_rows(&self, now: i64) -> Vec<ShareTreeNode> {
        self.view().share_tree_nodes(Time::from_secs(now))
    }
}
