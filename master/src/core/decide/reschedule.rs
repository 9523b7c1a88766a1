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

/// Is `name` switched on in `qmaster_params` (`NAME`, `NAME=1`, `NAME=true`)?
fn qmaster_param_on(params: &str, name: &str) -> bool {
    params
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter_map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, "true"));
            k.eq_ignore_ascii_case(name).then_some(v)
        })
        .any(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

impl ClusterState {
    /// `reschedule_unknown` of `host` (its local configuration's, else the global
    /// one's): how long after it became unknown (no load report for `max_unheard`) its
    /// jobs are rescheduled (0: never).
    pub fn reschedule_unknown(&self, host: &str) -> u64 {
        self.host_setting(host, "reschedule_unknown")
            .and_then(|v| gantry_common::value::parse_time(&v).ok())
            .map_or(0, |s| s.max(0.0) as u64)
    }

    /// The tasks running on `host`, unheard since `last_heard` for `reschedule_unknown`
    /// past `max_unheard` (`now` is at or after that), ended as its execd would have
    /// reported them, so that they are accounted and requeued as any other: a rerunnable
    /// task (`-r y`, `rerun TRUE`, a checkpointing job) ends for rescheduling (SGE's
    /// failure 25) and waits to run elsewhere; with `ENABLE_RESCHEDULE_KILL` in
    /// `qmaster_params` any other ends killed; without it the others stay as they are,
    /// as SGE leaves them. A parallel job is rescheduled only from its master task's
    /// host; an interactive job never (SGE's rules).
    pub fn unknown_host_reports(
        &self,
        host: &str,
        now: i64,
    ) -> Vec<(String, gantry_proto::JobReport)> {
        let kill = self
            .global()
            .get("qmaster_params")
            .is_some_and(|p| qmaster_param_on(p, "ENABLE_RESCHEDULE_KILL"));
        let after = gantry_common::value::format_time_hms(self.reschedule_unknown(host) as f64);
        let mut reports = Vec::new();
        for job in self.input.jobs.values() {
            for (task, t) in job.tasks.placed() {
                let TaskState::Running {
                    host: h,
                    queue,
                    start_time,
                    ..
                } = t
                else {
                    continue;
                };
                if h != host {
                    continue;
                }
                let interactive =
                    matches!(job.spec.script, gantry_proto::JobScript::Interactive { .. });
                let rerun = !interactive && self.rerunnable(job, queue, host);
                let (failed, failure) = match (rerun, kill) {
                    (true, _) => (
                        gantry_proto::ShepherdFailure::Reschedule.code(),
                        format!(
                            "rescheduled: host {host} unknown for reschedule_unknown ({after}) past max_unheard"
                        ),
                    ),
                    (false, true) => (
                        0,
                        format!(
                            "killed: host {host} unknown for reschedule_unknown ({after}) past max_unheard (ENABLE_RESCHEDULE_KILL)"
                        ),
                    ),
                    (false, false) => continue,
                };
                const SIGKILL: i32 = 9;
                reports.push((
                    host.to_string(),
                    gantry_proto::JobReport {
                        job_id: job.id,
                        task_id: task,
                        host: host.to_string(),
                        queue: format!("{queue}@{host}"),
                        exit_status: 128 + SIGKILL,
                        signal: Some(SIGKILL),
                        failed,
                        failure,
                        start_time: *start_time,
                        end_time: now,
                        utime_us: 0,
                        stime_us: 0,
                        maxrss_kb: 0,
                        accounted: Default::default(),
                        checkpointed: false,
                        pe_task: None,
                    },
                ));
            }
        }
        reports
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn qmaster_params_switches() {
        for (params, on) in [
            ("none", false),
            ("ENABLE_RESCHEDULE_KILL", true),
            ("ENABLE_RESCHEDULE_KILL=1", true),
            ("MAX_REQUESTS_PER_USER=5,ENABLE_RESCHEDULE_KILL=true", true),
            ("ENABLE_RESCHEDULE_KILL=0", false),
            ("enable_reschedule_kill=TRUE", true),
        ] {
            assert_eq!(
                super::qmaster_param_on(params, "ENABLE_RESCHEDULE_KILL"),
                on,
                "{params}"
            );
        }
    }
}
