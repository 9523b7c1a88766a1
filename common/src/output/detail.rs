//! `qstat -j -json` and `GET /api/v1/jobs/{id}`: everything `qstat -j` shows of a job.

use gantry_proto::{JobDetail, JobId, JobScript, PriorityRow};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::Request;

/// `qstat -j -json`: the details of every job named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobDetailList {
    pub jobs: Vec<JobDetailEntry>,
}

/// A parallel environment request: `-pe name range`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PeRequest {
    pub name: String,
    /// The slot range as given (`2-4`).
    pub range: String,
}

/// An array job's task range: `-t first-last:step`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskRangeEntry {
    pub first: u32,
    pub last: u32,
    pub step: u32,
}

/// One row's priority parts (`qstat -pri`, `-urg`, `-ext`): the pending tasks' row
/// (`task` null) or a running task's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PriorityParts {
    pub task: Option<u32>,
    pub prio: f64,
    pub npprior: f64,
    pub ppri: i32,
    pub nurg: f64,
    pub urg: f64,
    pub rrcontr: f64,
    pub wtcontr: f64,
    pub dlcontr: f64,
    pub ntckts: f64,
    pub tckts: f64,
    pub otckt: f64,
    pub ftckt: f64,
    pub stckt: f64,
    pub share: f64,
    pub project: Option<String>,
    pub department: Option<String>,
}

impl PriorityParts {
    pub fn of(p: &PriorityRow) -> PriorityParts {
        PriorityParts {
            task: p.task.map(|t| t.get()),
            prio: p.prio,
            npprior: p.npprior,
            ppri: p.ppri,
            nurg: p.nurg,
            urg: p.urg,
            rrcontr: p.rrcontr,
            wtcontr: p.wtcontr,
            dlcontr: p.dlcontr,
            ntckts: p.ntckts,
            tckts: p.otckt + p.ftckt + p.stckt,
            otckt: p.otckt,
            ftckt: p.ftckt,
            stckt: p.stckt,
            share: p.share,
            project: p.project.clone(),
            department: p.department.clone(),
        }
    }
}

/// A job's priority: each of its rows, and where its pending tasks stand among every
/// pending job (1: served first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobPriority {
    pub pending_rank: Option<usize>,
    pub pending_jobs: usize,
    pub rows: Vec<PriorityParts>,
}

impl JobPriority {
    /// Job `job`'s rows of `prios` (every user's, to rank it among the others).
    pub fn of(job: JobId, prios: &[PriorityRow]) -> JobPriority {
        let mut pending: Vec<&PriorityRow> = prios.iter().filter(|p| p.task.is_none()).collect();
        pending.sort_by(|a, b| b.prio.total_cmp(&a.prio).then(a.job_id.cmp(&b.job_id)));
        JobPriority {
            pending_rank: pending.iter().position(|p| p.job_id == job).map(|i| i + 1),
            pending_jobs: pending.len(),
            rows: prios
                .iter()
                .filter(|p| p.job_id == job)
                .map(PriorityParts::of)
                .collect(),
        }
    }
}

/// A running task and what it used so far (null: not measured yet).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunningTaskEntry {
    pub task: u32,
    pub host: String,
    /// CPU seconds.
    pub cpu: Option<f64>,
    /// GB seconds.
    pub mem: Option<f64>,
    /// GB read and written.
    pub io: Option<f64>,
    /// Bytes.
    pub vmem: Option<f64>,
    pub maxvmem: Option<f64>,
    pub binding: Option<String>,
}

/// A task in error state and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskError {
    pub task: u32,
    pub reason: String,
}

/// One job as `qstat -j` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobDetailEntry {
    pub job_number: u64,
    pub job_name: String,
    pub owner: String,
    pub uid: u32,
    pub group: String,
    pub gid: u32,
    /// Seconds since the epoch.
    pub submission_time: i64,
    pub account: String,
    pub project: Option<String>,
    pub cwd: Option<String>,
    pub script_file: String,
    /// `script`, `binary` or `interactive`.
    pub job_type: String,
    pub job_args: Vec<String>,
    pub stdout_path: Option<String>,
    pub stderr_path: Option<String>,
    pub stdin_path: Option<String>,
    pub merge: bool,
    pub shell: Option<String>,
    pub hard_resources: Vec<Request>,
    pub soft_resources: Vec<Request>,
    pub hard_queues: Vec<String>,
    pub soft_queues: Vec<String>,
    pub parallel_environment: Option<PeRequest>,
    pub array: Option<TaskRangeEntry>,
    pub max_running_tasks: Option<u32>,
    /// The POSIX priority (`-p`).
    pub posix_priority: i32,
    pub hold: bool,
    pub hold_jids: Vec<String>,
    pub hold_jids_ad: Vec<String>,
    pub start_after: Option<i64>,
    pub deadline: Option<i64>,
    pub job_share: u32,
    pub advance_reservation: Option<u64>,
    pub mail_options: String,
    pub mail_list: Vec<String>,
    pub notify: bool,
    pub restart: Option<bool>,
    pub reserve: bool,
    pub immediate: bool,
    pub binding: Option<String>,
    pub context: Vec<Request>,
    pub env: Vec<Request>,
    /// Why its pending tasks do not run (SGE's "scheduling info").
    pub scheduling_info: Vec<String>,
    pub priority: JobPriority,
    pub running_tasks: Vec<RunningTaskEntry>,
    pub errors: Vec<TaskError>,
}

fn requests(list: &[(String, String)]) -> Vec<Request> {
    list.iter()
        .map(|(k, v)| Request {
            name: k.clone(),
            value: v.clone(),
        })
        .collect()
}

impl JobDetailEntry {
    /// Job `d` with its rows of `prios` (every user's, to rank it).
    pub fn of(d: &JobDetail, prios: &[PriorityRow]) -> JobDetailEntry {
        let spec = &d.spec;
        let job_type = match &spec.script {
            JobScript::Script { .. } => "script",
            JobScript::Binary { .. } => "binary",
            JobScript::Interactive { .. } => "interactive",
        };
        JobDetailEntry {
            job_number: d.job_id.get(),
            job_name: spec.name.clone(),
            owner: d.owner.user.clone(),
            uid: d.owner.uid,
            group: d.group.clone(),
            gid: d.owner.gid,
            submission_time: d.submit_time,
            account: spec.account.clone(),
            project: spec.project.clone(),
            cwd: spec.cwd.clone(),
            script_file: spec.script.script_file().to_string(),
            job_type: job_type.to_string(),
            job_args: spec.args.clone(),
            stdout_path: spec.stdout_path.clone(),
            stderr_path: spec.stderr_path.clone(),
            stdin_path: spec.stdin_path.clone(),
            merge: spec.merge_output,
            shell: spec.shell.clone(),
            hard_resources: requests(&spec.hard_resources),
            soft_resources: requests(&spec.soft_resources),
            hard_queues: spec.queues.clone(),
            soft_queues: spec.soft_queues.clone(),
            parallel_environment: spec.pe.as_ref().map(|(name, range)| PeRequest {
                name: name.clone(),
                range: range.clone(),
            }),
            array: spec.array.map(|r| TaskRangeEntry {
                first: r.first,
                last: r.last,
                step: r.step,
            }),
            max_running_tasks: spec.max_running_tasks,
            posix_priority: spec.priority,
            hold: spec.held(),
            hold_jids: spec.hold_jids.clone(),
            hold_jids_ad: spec.hold_jids_ad.clone(),
            start_after: spec.start_after,
            deadline: spec.deadline,
            job_share: spec.job_share,
            advance_reservation: spec.ar.map(|a| a.get()),
            mail_options: spec.mail_options.clone(),
            mail_list: crate::mail::recipients(&spec.mail_list, &d.owner.user, &spec.submit_host),
            notify: spec.notify,
            restart: spec.restart,
            reserve: spec.reserve,
            immediate: spec.immediate,
            binding: spec.binding.clone(),
            context: requests(&spec.context),
            env: requests(&spec.env),
            scheduling_info: d.reasons.clone(),
            priority: JobPriority::of(d.job_id, prios),
            running_tasks: d
                .running
                .iter()
                .map(|t| RunningTaskEntry {
                    task: t.task_id.get(),
                    host: t.host.clone(),
                    cpu: t.usage.as_ref().map(|u| u.cpu),
                    mem: t.usage.as_ref().map(|u| u.mem),
                    io: t.usage.as_ref().map(|u| u.io),
                    vmem: t.usage.as_ref().and_then(|u| u.vmem),
                    maxvmem: t.usage.as_ref().and_then(|u| u.maxvmem),
                    binding: t.usage.as_ref().and_then(|u| u.binding.clone()),
                })
                .collect(),
            errors: d
                .errors
                .iter()
                .map(|(task, reason)| TaskError {
                    task: task.get(),
                    reason: reason.clone(),
                })
                .collect(),
        }
    }
}
