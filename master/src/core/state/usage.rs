//! Usage for the share-tree policy: what running and finished tasks measured, charged
//! to their owners and projects once (see [`gantry_common::usage`]).

use super::*;
use gantry_common::usage::{Amounts, Charge, UsageOf};
use gantry_proto::{Refusal, RefusalKind};

impl ClusterState {
    /// How usage decays (the scheduler configuration's `halftime` and
    /// `halflife_decay_list`).
    pub fn usage_decay(&self) -> gantry_common::usage::Decay {
        gantry_sched::priority::PolicyConf::from_config((*self.input.sched).as_ref()).decay
    }

    /// The writes that charge tasks' cumulative measurements (job, task, measured,
    /// finished) to their owners' and projects' usage at `now`: the usage records
    /// changed and what each task now counts (forgotten for a finished task). A task
    /// of a job no longer known is left out.
    pub fn charge_usage(&self, measured: &[(JobId, TaskId, Amounts, bool)], now: i64) -> Vec<Op> {
        let charges: Vec<Charge<'_>> = measured
            .iter()
            .filter_map(|(job, task, m, finished)| {
                let j = self.input.jobs.get(job)?;
                Some(Charge {
                    job: *job,
                    task: *task,
                    user: &j.owner.user,
                    project: j.spec.project.as_deref(),
                    measured: *m,
                    finished: *finished,
                })
            })
            .collect();
        // A finished task's count goes, its job known or not (one removed with
        // `qdel -f` while its host was away is not).
        let gone: Vec<(JobId, TaskId)> = measured
            .iter()
            .filter(|(job, task, _, finished)| {
                *finished && self.input.usage.counted.contains_key(&(*job, *task))
            })
            .map(|(job, task, ..)| (*job, *task))
            .collect();
        let charged = self.input.usage.charge(&charges, now, &self.usage_decay());
        let mut ops: Vec<Op> = charged
            .records
            .into_iter()
            .map(|(of, usage)| Op::Put(Object::Usage { of, usage }))
            .collect();
        ops.extend(charged.counted.into_iter().map(|((job, task), measured)| {
            Op::Put(Object::Counted {
                job,
                task,
                measured,
            })
        }));
        ops.extend(
            gone.into_iter()
                .map(|(job, task)| Op::Delete(counted_key(job, task))),
        );
        ops
    }

    /// What a finished task measured in all: its CPU from its final report, memory and
    /// I/O from its execd's last measurement (the final report has none).
    pub fn final_measurement(&self, report: &gantry_proto::JobReport) -> Amounts {
        let last = self.live.task_usage.get(&(report.job_id, report.task_id));
        Amounts {
            cpu: (report.utime_us + report.stime_us) as f64 / 1e6,
            mem: last.map_or(0.0, |u| u.mem),
            io: last.map_or(0.0, |u| u.io),
        }
    }
}

impl ClusterState {
    /// `qconf -clearusage [users]`: the decayed usage of the users named (each must
    /// have a user object; nothing is cleared otherwise), or of every user and project,
    /// back to nothing as of `now`; the long-term usage stays, as in SGE. SGE's words: a
    /// line per user object (then project) whose usage it cleared.
    pub fn clear_usage(
        &self,
        who: &str,
        users: &[String],
        now: i64,
    ) -> Result<super::Reply, Refusal> {
        if let Some(missing) = users.iter().find(|u| !self.input.users.contains_key(*u)) {
            return Err(Refusal {
                kind: RefusalKind::NotFound,
                message: format!("denied: user \"{missing}\" does not exist"),
            });
        }
        let cleared = |of: &UsageOf| match of {
            _ if users.is_empty() => true,
            UsageOf::User(u) | UsageOf::UserInProject { user: u, .. } => users.contains(u),
            UsageOf::Project(_) => false,
        };
        let ops = self
            .input
            .usage
            .records
            .iter()
            .filter(|(of, _)| cleared(of))
            .map(|(of, u)| {
                Op::Put(Object::Usage {
                    of: of.clone(),
                    usage: gantry_common::usage::Usage {
                        decayed: Amounts::default(),
                        at: now,
                        long_term: u.long_term,
                    },
                })
            })
            .collect();
        let mut messages: Vec<String> = if users.is_empty() {
            self.input.users.keys().cloned().collect()
        } else {
            users.to_vec()
        }
        .iter()
        .map(|u| format!("{who} modified \"{u}\" in user list"))
        .collect();
        if users.is_empty() {
            messages.extend(
                self.input
                    .projects
                    .keys()
                    .map(|p| format!("{who} modified \"{p}\" in project list")),
            );
        }
        Ok(super::Reply::Change(super::Change { ops, messages }))
    }
}
