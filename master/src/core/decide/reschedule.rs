//! `qmod -r`, `-rj`, `-rq`: reschedule running jobs by hand, as SGE's qmod does. A
//! rerunnable task (`-r y`, its queue's `rerun TRUE`, a checkpointing job) is killed by
//! its execd, which reports it ended for rescheduling (SGE's failure 25): the run is
//! accounted and the task waits to run again (`Rq`). Another job is left alone unless
//! `-f` forces it.

use std::collections::HashSet;

use super::*;
use crate::core::state::refuse;

pub use gantry_proto::RescheduleTargets;

impl ClusterState {
    pub fn decide_reschedule(
        &self,
        caller: &Caller,
        targets: &[String],
        kind: RescheduleTargets,
        force: bool,
    ) -> Decision {
        let operator = self.acts_as_operator(caller);
        // The running tasks named, in order, each once.
        let mut tasks: Vec<(JobId, TaskId)> = Vec::new();
        for text in targets {
            let as_job = match kind {
                RescheduleTargets::Jobs => true,
                RescheduleTargets::Queues => false,
                RescheduleTargets::Either => crate::core::jobs::parse_job_ref(text).is_some(),
            };
            if as_job {
                let job = crate::core::jobs::parse_job_ref(text)
                    .and_then(|(id, _)| self.input.jobs.get(&id));
                let Some(job) = job else {
                    return Decision::refused(refuse(
                        RefusalKind::NotFound,
                        format!("invalid queue or job \"{text}\""),
                    ));
                };
                if job.owner.user != caller.user && !operator {
                    return Decision::refused(refuse(
                        RefusalKind::Denied,
                        format!(
                            "{} - you have no permission to modify job \"{}\"",
                            caller.user, job.id
                        ),
                    ));
                }
                let range = crate::core::jobs::parse_job_ref(text).and_then(|(_, r)| r);
                for (task, t) in job.tasks.placed() {
                    let named = range.is_none_or(|(a, b)| task >= a && task <= b);
                    if named && matches!(t, TaskState::Running { .. }) {
                        tasks.push((job.id, task));
                    }
                }
                continue;
            }
            let instances = match self.queue_instances_named(std::slice::from_ref(text)) {
                Ok(i) => i,
                Err(_) => {
                    return Decision::refused(refuse(
                        RefusalKind::NotFound,
                        format!("invalid queue or job \"{text}\""),
                    ))
                }
            };
            if !operator {
                let (q, h) = &instances[0];
                return Decision::refused(refuse(
                    RefusalKind::Denied,
                    format!(
                        "{} - you have no permission to modify queue \"{q}@{h}\"",
                        caller.user
                    ),
                ));
            }
            for job in self.input.jobs.values() {
                for (task, t) in job.tasks.placed() {
                    if let TaskState::Running { queue, host, .. } = t {
                        if instances.iter().any(|(q, h)| q == queue && h == host) {
                            tasks.push((job.id, task));
                        }
                    }
                }
            }
        }
        let mut seen = HashSet::new();
        tasks.retain(|k| seen.insert(*k));
        let mut messages = Vec::new();
        let mut effects = Vec::new();
        for (id, task) in tasks {
            let Some(job) = self.input.jobs.get(&id) else {
                continue;
            };
            let Some(TaskState::Running { queue, host, .. }) = job.tasks.get(task) else {
                continue;
            };
            let named = match job.is_array() {
                true => format!("job-array task {id}.{task}"),
                false => format!("job {id}"),
            };
            let rerunnable = self.rerunnable(job, queue, host);
            if !rerunnable && !force {
                messages.push(format!("The {named} is not restartable"));
                continue;
            }
            messages.push(format!(
                "{} rescheduling of {named} on host {host}",
                if rerunnable { "Pushed" } else { "Forced" }
            ));
            effects.push(Effect::Send {
                host: host.clone(),
                order: ToExecd::RescheduleJob {
                    job_id: id,
                    task_id: task,
                },
            });
        }
        Decision {
            ops: Vec::new(),
            effects,
            reply: FromMaster::Done { messages },
        }
    }
}
