//! Tasks `qrsh -inherit` starts in a running parallel job (SGE's "pe tasks", tight
//! integration): which host a request names, whether that host has a slot of the job
//! left for one, what the task is started with, and how it is accounted when it ends.
//!
//! A job's tasks are one spool object ([`PeTasks`]): started here, kept until each has
//! reported its end (after the job itself has ended, if it outlived it), so that a
//! master restart neither forgets a task holding a slot nor loses its record.

use std::collections::BTreeMap;

use gantry_proto::{
    Caller, FromMaster, JobId, JobReport, JobScript, JobStart, PeTaskRequest, Refusal, RefusalKind,
    TaskId, ToExecd,
};

use crate::core::decision::{Decision, Effect};
use crate::core::state::{ClusterState, Object, Op};
use gantry_common::job::TaskState;
pub use gantry_common::pe_tasks::{pe_tasks_key, PeTask, PeTasks, Used};

/// `qstat -g t`'s lines of `users`' running tasks (see [`gantry_proto::TaskLines`]).
pub fn task_lines(state: &ClusterState, users: &[String]) -> Vec<gantry_proto::TaskLines> {
    let mut out = Vec::new();
    for job in state.input.jobs.values() {
        if !crate::core::jobs::listing::wanted(users, &job.owner.user) {
            continue;
        }
        for (task, t) in job.tasks.placed() {
            let (TaskState::Running { grants, pe, .. } | TaskState::Deleting { grants, pe, .. }) =
                t
            else {
                continue;
            };
            let first_task = pe
                .as_ref()
                .and_then(|p| state.input.pes.get(p))
                .is_none_or(|p| p.job_is_first_task);
            let mut lines = Vec::new();
            for (i, g) in grants.iter().enumerate() {
                let queue = format!("{}@{}", g.queue, g.host);
                let mut slaves = g.slots;
                if i == 0 {
                    lines.push((queue.clone(), true));
                    slaves = slaves.saturating_sub(u32::from(first_task));
                }
                lines.extend((0..slaves).map(|_| (queue.clone(), false)));
            }
            out.push(gantry_proto::TaskLines {
                job_id: job.id,
                tasks: if job.is_array() {
                    task.to_string()
                } else {
                    String::new()
                },
                lines,
                usage: state.live.task_usage.get(&(job.id, task)).cloned(),
            });
        }
    }
    out
}

/// A host name cut at its first dot, as Open MPI passes the hosts of `PE_HOSTFILE`.
fn short_name(host: &str) -> &str {
    host.split('.').next().unwrap_or(host)
}

/// Which of the cluster's execution hosts a `qrsh -inherit` names: its own name, its
/// short name, or the caller's own host (`localhost`, a loopback address). None: no
/// host of the cell.
pub fn resolve_host<'a>(
    named: &str,
    caller_host: &'a str,
    hosts: impl Iterator<Item = &'a String> + Clone,
) -> Option<&'a str> {
    let named = named.trim_end_matches('.');
    let loopback = named.eq_ignore_ascii_case("localhost")
        || named
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if loopback {
        return Some(caller_host);
    }
    if let Some(h) = hosts.clone().find(|h| h.eq_ignore_ascii_case(named)) {
        return Some(h.as_str());
    }
    let short = short_name(named);
    let mut matching = hosts.filter(|h| short_name(h).eq_ignore_ascii_case(short));
    match (matching.next(), matching.next()) {
        (Some(h), None) => Some(h.as_str()),
        _ => None,
    }
}

/// How many tasks a host takes at once: the job's slots there, less the one the job
/// script holds on the master host when the PE's `job_is_first_task` is TRUE (SGE's
/// execd: with FALSE the master queue takes one task more than it has slots of the
/// job's besides the script, that is `slots` tasks).
pub fn task_limit(slots_here: u32, master_host: bool, job_is_first_task: bool) -> u32 {
    if master_host && job_is_first_task {
        slots_here.saturating_sub(1)
    } else {
        slots_here
    }
}

/// Variables a task never takes from the caller: those that change how programs are
/// loaded (SGE drops them; `LD_LIBRARY_PATH` and its kind unless a site allows them,
/// which Gantry does not).
const FILTERED: [&str; 4] = [
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "DYLD_LIBRARY_PATH",
];

/// `error: executing task of job N failed: ...`: what `qrsh -inherit` prints.
fn task_failed(job_id: JobId, why: &str) -> Decision {
    Decision::refused(Refusal {
        kind: RefusalKind::Denied,
        message: format!("error: executing task of job {job_id} failed: {why}"),
    })
}

/// `qrsh -inherit host command` from `caller`: the task started on the host the job
/// has a free slot of on it, its session to be joined; else SGE's refusal.
pub fn decide_inherit(
    state: &ClusterState,
    connected: &dyn Fn(&str) -> bool,
    now: i64,
    caller: &Caller,
    request: PeTaskRequest,
) -> Decision {
    let job_id = request.job_id;
    let Some(host) = resolve_host(
        &request.host,
        &caller.host,
        state.input.exechosts.keys().filter(|h| *h != "global"),
    ) else {
        return task_failed(
            job_id,
            &format!(
                "failed sending task to execd@{}: can't resolve host name",
                request.host
            ),
        );
    };
    let host = host.to_string();
    // What SGE's execd answers for every reason it does not take a task; the master's
    // log says which.
    let refused = |why: &str| {
        tracing::info!(job = %job_id, host = %host, user = %caller.user, "task not accepted: {why}");
        task_failed(
            job_id,
            &format!(
                "execution daemon on host \"{}\" didn't accept task",
                request.host
            ),
        )
    };
    let Some(job) = state.input.jobs.get(&job_id) else {
        return refused("that job is not here");
    };
    // A job that is not an array has one task, whatever SGE_TASK_ID said.
    let task_id = if job.is_array() {
        request.task_id
    } else {
        job.tasks.placed().next().map_or(TaskId(1), |(t, _)| t)
    };
    let Some(TaskState::Running {
        host: master_host,
        grants,
        pe: Some(pe_name),
        ..
    }) = job.tasks.get(task_id)
    else {
        return refused("the job has no running parallel task");
    };
    if job.owner.user != caller.user {
        return refused("the caller is not the job's owner");
    }
    let Some(pe) = state.input.pes.get(pe_name) else {
        return refused("the job's parallel environment is gone");
    };
    if !pe.control_slaves {
        return refused("this job is not suited for starting tasks (control_slaves FALSE)");
    }
    let slots_here: u32 = grants
        .iter()
        .filter(|g| g.host == host)
        .map(|g| g.slots)
        .sum();
    if slots_here == 0 {
        return refused("the job has no slots on this host");
    }
    if !connected(&host) {
        return refused("the host's execd is not connected");
    }
    let existing = state.pe_tasks.get(&(job_id, task_id));
    // A task that has sent its exit status holds its slot no longer.
    let on_host = existing.map_or(0, |p| {
        p.running
            .iter()
            .filter(|(n, t)| {
                t.host == host && !state.live.pe_exiting.contains(&(job_id, task_id, **n))
            })
            .count()
    });
    let limit = task_limit(slots_here, *master_host == host, pe.job_is_first_task);
    if on_host as u32 >= limit {
        return refused("no free queue for the job on this host");
    }
    let queue = grants
        .iter()
        .find(|g| g.host == host)
        .map(|g| g.queue.clone())
        .unwrap_or_default();
    let Some(mut start) = state.job_start(&gantry_sched::Dispatch {
        job_id,
        task_id,
        queue: queue.clone(),
        host: host.clone(),
        grants: grants.clone(),
        pe: Some(pe_name.clone()),
    }) else {
        return refused("the job is gone");
    };
    let mut tasks = match existing {
        // Tasks of an earlier run of the job's task (run again) may still be ending.
        Some(p) => PeTasks {
            ended: false,
            ..p.clone()
        },
        None => {
            let blank = JobReport::empty(job_id, task_id, &host, now);
            let Some(record) = state.accounting_record(&blank) else {
                return refused("the job is gone");
            };
            PeTasks {
                job_id,
                task_id,
                next: 1,
                running: BTreeMap::new(),
                record,
                summary: pe.accounting_summary,
                summed: Used::default(),
                held: None,
                ended: false,
            }
        }
    };
    let number = tasks.next;
    tasks.next += 1;
    tasks.running.insert(
        number,
        PeTask {
            host: host.clone(),
            queue,
            start_time: now,
        },
    );
    as_task(&mut start, number, request);
    start.session_key = Some(state.pe_session_key(job_id, task_id, number));
    let key = start.session_key.clone().unwrap_or_default();
    Decision {
        ops: vec![Op::Put(Object::PeTasks(Box::new(tasks)))],
        effects: vec![Effect::Send {
            host: host.clone(),
            order: ToExecd::StartJob(Box::new(start)),
        }],
        reply: FromMaster::SessionGranted {
            job_id,
            task_id,
            pe_task: Some(number),
            host,
            key,
        },
    }
}

/// The job's start order made the task's: its command run as a qrsh command is (by the
/// owner's shell unless `-noshell`), the caller's variables over the job's, its output
/// carried by the session, and SGE's name for a task (`petask`).
fn as_task(start: &mut JobStart, number: u32, request: PeTaskRequest) {
    let spec = &mut start.spec;
    let PeTaskRequest {
        command,
        env,
        cwd,
        noshell,
        pty,
        ..
    } = request;
    if cwd.is_some() {
        spec.cwd = cwd;
    }
    let mut words = command.into_iter();
    spec.script = JobScript::Interactive {
        kind: gantry_proto::InteractiveKind::Qrsh,
        command: Some(words.next().unwrap_or_default()),
    };
    spec.args = words.collect();
    // The owner's own shell runs it (`shell -c "words"`), as SGE's qrsh_starter.
    spec.shell = None;
    spec.binary_shell = !noshell;
    spec.pty = pty;
    spec.name = "petask".to_string();
    for (name, value) in env {
        if FILTERED.contains(&name.as_str()) {
            continue;
        }
        spec.env.retain(|(k, _)| *k != name);
        spec.env.push((name, value));
    }
    spec.stdout_path = Some("/dev/null".to_string());
    spec.stderr_path = Some("/dev/null".to_string());
    spec.stdin_path = None;
    spec.merge_output = false;
    spec.mail_options = String::new();
    spec.notify = false;
    // The job holds the cores it was bound to; its tasks run in them.
    spec.binding = None;
    spec.ckpt = None;
    start.checkpoint = None;
    start.pe_task = Some(number);
}

/// The writes that keep the job's tasks as they are now: the object, or once the job
/// and its last task have ended its removal (and the job's record if it was held for
/// them).
pub fn settled(tasks: PeTasks) -> Vec<Op> {
    if !(tasks.ended && tasks.running.is_empty()) {
        return vec![Op::Put(Object::PeTasks(Box::new(tasks)))];
    }
    let mut ops = Vec::new();
    if let Some(held) = &tasks.held {
        ops.push(Op::Account(Box::new(tasks.summary_record(held))));
    }
    ops.push(Op::Delete(pe_tasks_key(tasks.job_id, tasks.task_id)));
    ops
}

#[cfg(test)]
mod tests;
