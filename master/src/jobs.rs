//! Jobs as pure logic: validation at submission, the first scheduler (priority then
//! submission order, slots per queue instance, holds, dependencies, start times, array
//! tasks one by one), deletion and the views `qstat` shows.

use std::collections::{BTreeMap, HashMap, HashSet};

use gantry_common::{complex, conf, load, queue, value};
use gantry_proto::{
    AccountingRecord, Caller, JobOwner, JobReport, JobSpec, JobStart, JobView, Refusal,
    RefusalKind, ValueType,
};
use serde::{Deserialize, Serialize};

use crate::state::ClusterState;

/// Where a task is in its life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskState {
    Pending,
    /// Sent to an execd (`t` until it says it started, then `r`).
    Running {
        host: String,
        queue: String,
        start_time: i64,
    },
    /// `qdel` of a running task: killed, waiting for its report (`dr`).
    Deleting {
        host: String,
        queue: String,
        start_time: i64,
    },
    /// The task could not be started (its shepherd failed before the job ran): it waits
    /// in error state (`Eqw`) until `qmod -cj` clears it or `qdel` removes it.
    Error {
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    pub id: u64,
    pub spec: JobSpec,
    pub owner: JobOwner,
    pub submit_time: i64,
    /// Tasks not yet finished (a plain job has task 1).
    pub tasks: BTreeMap<u32, TaskState>,
    /// Running tasks suspended with `qmod -sj` (state `s`).
    pub suspended: std::collections::BTreeSet<u32>,
}

impl Job {
    pub fn is_array(&self) -> bool {
        self.spec.array.is_some()
    }
}

fn refuse(kind: RefusalKind, message: impl Into<String>) -> Refusal {
    Refusal {
        kind,
        message: message.into(),
    }
}

fn not_a(ty: ValueType) -> &'static str {
    match ty {
        ValueType::Time => "a time value",
        ValueType::Memory => "a memory value",
        ValueType::Int => "an integer value",
        ValueType::Double => "a double value",
        ValueType::Bool => "a boolean value",
        _ => "a valid value",
    }
}

/// Check resource requests against the complex; names become the attributes' full names.
pub fn check_resources(state: &ClusterState, list: &mut [(String, String)]) -> Result<(), Refusal> {
    for (name, v) in list.iter_mut() {
        let Some(attr) = complex::find(&state.complexes, name) else {
            return Err(refuse(
                RefusalKind::Invalid,
                format!("unknown resource \"{name}\""),
            ));
        };
        if attr.requestable == gantry_proto::Requestable::No {
            return Err(refuse(
                RefusalKind::Invalid,
                format!("resource \"{}\" is not requestable", attr.name),
            ));
        }
        if value::parse_value(attr.value_type, v).is_err() {
            return Err(refuse(
                RefusalKind::Invalid,
                format!(
                    "attribute \"{}\" is not {}",
                    attr.name,
                    not_a(attr.value_type)
                ),
            ));
        }
        *name = attr.name.clone();
        // TIME requests are kept in seconds, as SGE shows them (h_rt=600).
        if attr.value_type == ValueType::Time {
            if let Ok(secs) = value::parse_time(v) {
                if secs.is_finite() {
                    *v = format!("{}", secs as u64);
                }
            }
        }
    }
    Ok(())
}

/// Check that every requested queue exists.
pub fn check_queues(state: &ClusterState, queues: &[String]) -> Result<(), Refusal> {
    for q in queues {
        let cq = q.split('@').next().unwrap_or(q);
        if !state.queues.keys().any(|name| wildcard(cq, name)) {
            return Err(refuse(
                RefusalKind::Invalid,
                format!("Job was rejected because job requests unknown queue \"{q}\""),
            ));
        }
    }
    Ok(())
}

/// Check a submission; the job to queue.
pub fn validate_submission(
    state: &ClusterState,
    caller: &Caller,
    spec: &JobSpec,
    id: u64,
    now: i64,
) -> Result<Job, Refusal> {
    let conf = state.global();
    let limit = |key: &str| {
        conf.get(key)
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(0)
    };
    let min_uid = limit("min_uid");
    if (caller.uid as usize) < min_uid {
        return Err(refuse(
            RefusalKind::Denied,
            format!(
                "job rejected: your user id {} is lower than minimum user id {min_uid} of cluster configuration",
                caller.uid
            ),
        ));
    }
    let min_gid = limit("min_gid");
    if (caller.gid as usize) < min_gid {
        return Err(refuse(
            RefusalKind::Denied,
            format!(
                "job rejected: your group id {} is lower than minimum group id {min_gid} of cluster configuration",
                caller.gid
            ),
        ));
    }
    let max_u_jobs = limit("max_u_jobs");
    if max_u_jobs > 0 {
        let current = state
            .jobs
            .values()
            .filter(|j| j.owner.user == caller.user)
            .count();
        if current >= max_u_jobs {
            return Err(refuse(
                RefusalKind::Denied,
                format!("job rejected: Only {max_u_jobs} jobs are allowed per user (current job count: {current})"),
            ));
        }
    }
    let max_jobs = limit("max_jobs");
    if max_jobs > 0 && state.jobs.len() >= max_jobs {
        return Err(refuse(
            RefusalKind::Denied,
            format!("job rejected: Only {max_jobs} jobs are allowed in the cluster (max_jobs)"),
        ));
    }
    if let Some(r) = spec.array {
        let tasks = r
            .last
            .saturating_sub(r.first)
            .checked_div(r.step)
            .map_or(0, |n| n as usize + 1);
        let max_tasks = limit("max_aj_tasks");
        if max_tasks > 0 && tasks > max_tasks {
            return Err(refuse(
                RefusalKind::Denied,
                format!("job rejected: the job array has {tasks} tasks, more than max_aj_tasks ({max_tasks}) allows"),
            ));
        }
    }
    let mut spec = spec.clone();
    for list in [&mut spec.hard_resources, &mut spec.soft_resources] {
        check_resources(state, list)?;
    }
    check_queues(state, &spec.queues)?;
    if let Some((pe, _)) = &spec.pe {
        // No parallel environment exists until they are configurable (qconf -ap).
        return Err(refuse(
            RefusalKind::Invalid,
            format!("job rejected: the requested parallel environment \"{pe}\" does not exist"),
        ));
    }
    if let Some(ar) = spec.ar {
        return Err(refuse(
            RefusalKind::Invalid,
            format!("the advance reservation id {ar} is invalid"),
        ));
    }
    let tasks = match spec.array {
        Some(r) => {
            if r.first == 0 || r.last < r.first || r.step == 0 {
                return Err(refuse(RefusalKind::Invalid, "invalid task range"));
            }
            (r.first..=r.last)
                .step_by(r.step as usize)
                .map(|t| (t, TaskState::Pending))
                .collect()
        }
        None => BTreeMap::from([(1, TaskState::Pending)]),
    };
    Ok(Job {
        id,
        owner: JobOwner {
            user: caller.user.clone(),
            uid: caller.uid,
            gid: caller.gid,
        },
        spec,
        submit_time: now,
        tasks,
        suspended: Default::default(),
    })
}

/// Grid Engine's simple wildcards in queue names (`*`, `?`).
pub fn wildcard(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// A decision of the scheduler: start this task in this queue instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatch {
    pub job_id: u64,
    pub task_id: u32,
    pub queue: String,
    pub host: String,
}

/// One queue instance as the scheduler sees it.
#[derive(Debug, Clone)]
struct Instance {
    queue: String,
    host: String,
    seq_no: i64,
    load: f64,
    free: u32,
}

/// The first hard request a queue instance cannot satisfy: (name, requested, offered as
/// SGE prints it, e.g. `hl:mem_free=23.356G`).
fn first_misfit(
    state: &ClusterState,
    spec: &JobSpec,
    inst: &Instance,
) -> Option<(String, String, String)> {
    let load_values = state
        .runtime
        .get(&inst.host)
        .map(|r| r.load_values.as_slice())
        .unwrap_or(&[]);
    let host_complex = state
        .exechosts
        .get(&inst.host)
        .map(|h| h.complex_values.as_slice())
        .unwrap_or(&[]);
    let queue = state.queues.get(&inst.queue);
    let groups = state.groups_of(&inst.host);
    for (name, requested) in &spec.hard_resources {
        // Requests were checked at submission; the complex may have changed since.
        let Some(attr) = complex::find(&state.complexes, name) else {
            return Some((name.clone(), requested.clone(), "no such resource".into()));
        };
        let Ok(req) = value::parse_value(attr.value_type, requested) else {
            return Some((name.clone(), requested.clone(), "no such value".into()));
        };
        let (dominance, offered) =
            if let Some((_, v)) = host_complex.iter().find(|(k, _)| k == &attr.name) {
                ("hf", v.clone())
            } else if let Some(v) = load::get(load_values, &attr.name) {
                ("hl", v.to_string())
            } else if let Some(a) = queue.and_then(|q| q.attr(&attr.name)) {
                (
                    "qf",
                    queue::value_on_host(a, &inst.host, &groups).to_string(),
                )
            } else {
                continue;
            };
        let Ok(off) = value::parse_value(attr.value_type, &offered) else {
            continue;
        };
        if !value::satisfies(attr.value_type, attr.relop, &off, &req) {
            let shown = match (attr.value_type, &off) {
                (ValueType::Memory, value::Value::Num(b)) => value::format_memory_3(*b),
                _ => offered.clone(),
            };
            return Some((
                attr.name.clone(),
                requested.clone(),
                format!("{dominance}:{}={shown}", attr.name),
            ));
        }
    }
    None
}

/// Does a host/queue offer what the job hard-requests? Requests on values the host or
/// queue does not define are not checked here (the complex issue adds full matching).
fn fits(state: &ClusterState, spec: &JobSpec, inst: &Instance) -> bool {
    first_misfit(state, spec, inst).is_none()
}

impl ClusterState {
    /// Slots in use per `queue@host`.
    pub(crate) fn used_slots(&self) -> HashMap<(String, String), u32> {
        let mut used = HashMap::new();
        for job in self.jobs.values() {
            for t in job.tasks.values() {
                if let TaskState::Running { host, queue, .. }
                | TaskState::Deleting { host, queue, .. } = t
                {
                    *used.entry((queue.clone(), host.clone())).or_insert(0) += 1;
                }
            }
        }
        used
    }

    /// Is a job id or name still in the system (for `-hold_jid`)?
    fn predecessor_active(&self, reference: &str) -> bool {
        match reference.parse::<u64>() {
            Ok(id) => self.jobs.contains_key(&id),
            Err(_) => self
                .jobs
                .values()
                .any(|j| wildcard(reference, &j.spec.name)),
        }
    }

    /// The first scheduler: pending tasks by priority, then submission order, each to
    /// the first queue instance (seq_no, then load) with a free slot that fits.
    pub fn schedule(&self, now: i64, connected: &HashSet<String>, clock: f64) -> Vec<Dispatch> {
        let used = self.used_slots();
        let mut instances: Vec<Instance> = Vec::new();
        for q in self.queues.values() {
            let seq_no = q
                .attr("seq_no")
                .and_then(|a| a.default.parse().ok())
                .unwrap_or(0);
            for host in self.queue_hosts_of(q) {
                if !connected.contains(&host) || !self.is_reachable(&host, clock) {
                    continue;
                }
                if self.disabled.contains(&(q.name.clone(), host.clone())) {
                    continue;
                }
                let groups = self.groups_of(&host);
                let total: u32 = q
                    .attr("slots")
                    .and_then(|a| queue::value_on_host(a, &host, &groups).parse().ok())
                    .unwrap_or(0);
                let in_use = used
                    .get(&(q.name.clone(), host.clone()))
                    .copied()
                    .unwrap_or(0);
                let load = self
                    .runtime
                    .get(&host)
                    .and_then(|r| load::get(&r.load_values, "np_load_avg"))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0.0);
                instances.push(Instance {
                    queue: q.name.clone(),
                    host,
                    seq_no,
                    load,
                    free: total.saturating_sub(in_use),
                });
            }
        }
        instances.sort_by(|a, b| {
            a.seq_no
                .cmp(&b.seq_no)
                .then(a.load.total_cmp(&b.load))
                .then(a.host.cmp(&b.host))
                .then(a.queue.cmp(&b.queue))
        });
        let max_aj_instances = self
            .global()
            .get("max_aj_instances")
            .and_then(|v| v.parse::<u32>().ok())
            .filter(|n| *n > 0);
        let mut order: Vec<&Job> = self.jobs.values().collect();
        order.sort_by(|a, b| b.spec.priority.cmp(&a.spec.priority).then(a.id.cmp(&b.id)));
        let mut out = Vec::new();
        for job in order {
            if instances.iter().all(|i| i.free == 0) {
                break;
            }
            if job.spec.hold || job.spec.start_after.is_some_and(|t| t > now) {
                continue;
            }
            if job
                .spec
                .hold_jids
                .iter()
                .any(|r| self.predecessor_active(r))
            {
                continue;
            }
            let mut running = job
                .tasks
                .values()
                .filter(|t| matches!(t, TaskState::Running { .. } | TaskState::Deleting { .. }))
                .count() as u32;
            for (task_id, t) in &job.tasks {
                if !matches!(t, TaskState::Pending) {
                    continue;
                }
                if job.spec.max_running_tasks.is_some_and(|tc| running >= tc)
                    || (job.is_array() && max_aj_instances.is_some_and(|m| running >= m))
                {
                    break;
                }
                let wanted = |i: &Instance| {
                    job.spec.queues.is_empty()
                        || job.spec.queues.iter().any(|q| match q.split_once('@') {
                            Some((cq, h)) => wildcard(cq, &i.queue) && wildcard(h, &i.host),
                            None => wildcard(q, &i.queue),
                        })
                };
                let Some(inst) = instances
                    .iter_mut()
                    .find(|i| i.free > 0 && wanted(i) && fits(self, &job.spec, i))
                else {
                    break; // the other tasks of this job would not fit either
                };
                inst.free -= 1;
                running += 1;
                out.push(Dispatch {
                    job_id: job.id,
                    task_id: *task_id,
                    queue: inst.queue.clone(),
                    host: inst.host.clone(),
                });
            }
        }
        out
    }

    /// Could any queue instance ever run this job (its hard requests against the
    /// instances' configured and last reported values, ignoring what is in use)?
    pub fn could_ever_run(&self, spec: &JobSpec) -> bool {
        self.queues.values().any(|q| {
            self.queue_hosts_of(q).into_iter().any(|host| {
                let wanted = spec.queues.is_empty()
                    || spec.queues.iter().any(|w| match w.split_once('@') {
                        Some((cq, h)) => wildcard(cq, &q.name) && wildcard(h, &host),
                        None => wildcard(w, &q.name),
                    });
                let inst = Instance {
                    queue: q.name.clone(),
                    host,
                    seq_no: 0,
                    load: 0.0,
                    free: 1,
                };
                wanted && fits(self, spec, &inst)
            })
        })
    }

    /// Why a job's pending tasks are not dispatched, in SGE's words.
    pub fn explain(
        &self,
        job: &Job,
        connected: &HashSet<String>,
        clock: f64,
        now: i64,
    ) -> Vec<String> {
        let mut reasons = Vec::new();
        if !job.tasks.values().any(|t| matches!(t, TaskState::Pending)) {
            return reasons;
        }
        if job.spec.hold {
            reasons.push("Job is in user hold state".to_string());
        }
        let waiting: Vec<&String> = job
            .spec
            .hold_jids
            .iter()
            .filter(|r| self.predecessor_active(r))
            .collect();
        if !waiting.is_empty() {
            let list: Vec<&str> = waiting.iter().map(|s| s.as_str()).collect();
            reasons.push(format!(
                "Job is waiting for the predecessor jobs {}",
                list.join(",")
            ));
        }
        if let Some(t) = job.spec.start_after.filter(|t| *t > now) {
            reasons.push(format!("Job has a start time in the future ({t})"));
        }
        let used = self.used_slots();
        for q in self.queues.values() {
            for host in self.queue_hosts_of(q) {
                let qi = format!("{}@{host}", q.name);
                let wanted = job.spec.queues.is_empty()
                    || job.spec.queues.iter().any(|w| match w.split_once('@') {
                        Some((cq, h)) => wildcard(cq, &q.name) && wildcard(h, &host),
                        None => wildcard(w, &q.name),
                    });
                if !wanted {
                    reasons.push(format!("queue instance \"{qi}\" dropped because it is not contained in the job's queue list"));
                    continue;
                }
                if self.disabled.contains(&(q.name.clone(), host.clone())) {
                    reasons.push(format!(
                        "queue instance \"{qi}\" dropped because it is disabled"
                    ));
                    continue;
                }
                if !connected.contains(&host) || !self.is_reachable(&host, clock) {
                    reasons.push(format!(
                        "queue instance \"{qi}\" dropped because it is temporarily not available"
                    ));
                    continue;
                }
                let groups = self.groups_of(&host);
                let total: u32 = q
                    .attr("slots")
                    .and_then(|a| queue::value_on_host(a, &host, &groups).parse().ok())
                    .unwrap_or(0);
                if used
                    .get(&(q.name.clone(), host.clone()))
                    .copied()
                    .unwrap_or(0)
                    >= total
                {
                    reasons.push(format!(
                        "queue instance \"{qi}\" dropped because it is full"
                    ));
                }
                let inst = Instance {
                    queue: q.name.clone(),
                    host: host.clone(),
                    seq_no: 0,
                    load: 0.0,
                    free: 1,
                };
                if let Some((name, requested, offered)) = first_misfit(self, &job.spec, &inst) {
                    reasons.push(format!(
                        "(-l {name}={requested}) cannot run at host \"{host}\" because it offers only {offered}"
                    ));
                }
            }
        }
        reasons
    }

    /// Queue settings a task runs under on a host (limits, shell, tmpdir, notify).
    pub fn queue_settings(&self, queue: &str, host: &str) -> Vec<(String, String)> {
        let Some(q) = self.queues.get(queue) else {
            return Vec::new();
        };
        let groups = self.groups_of(host);
        [
            "h_rt", "s_rt", "h_cpu", "s_cpu", "h_vmem", "s_vmem", "shell", "tmpdir", "notify",
        ]
        .iter()
        .filter_map(|k| {
            q.attr(k).map(|a| {
                (
                    k.to_string(),
                    queue::value_on_host(a, host, &groups).to_string(),
                )
            })
        })
        .collect()
    }

    pub fn job_start(&self, d: &Dispatch) -> Option<JobStart> {
        let job = self.jobs.get(&d.job_id)?;
        Some(JobStart {
            job_id: job.id,
            task_id: d.task_id,
            spec: job.spec.clone(),
            owner: job.owner.clone(),
            queue: format!("{}@{}", d.queue, d.host),
            host: d.host.clone(),
            slots: 1,
            submit_time: job.submit_time,
            queue_settings: self.queue_settings(&d.queue, &d.host),
        })
    }

    /// The accounting record of a finished task.
    pub fn accounting_record(&self, report: &JobReport) -> Option<AccountingRecord> {
        let job = self.jobs.get(&report.job_id)?;
        let group = nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(job.owner.gid))
            .ok()
            .flatten()
            .map_or_else(|| job.owner.gid.to_string(), |g| g.name);
        Some(AccountingRecord {
            job_id: job.id,
            task_id: job.is_array().then_some(report.task_id),
            job_name: job.spec.name.clone(),
            owner: job.owner.user.clone(),
            group,
            account: job.spec.account.clone(),
            project: job.spec.project.clone(),
            priority: job.spec.priority,
            slots: 1,
            submit_time: job.submit_time,
            report: report.clone(),
        })
    }

    /// `qstat`'s rows: running tasks one by one, pending tasks of a job together.
    pub fn job_views(&self, users: &[String], started: &HashSet<(u64, u32)>) -> Vec<JobView> {
        let mut running = Vec::new();
        let mut pending = Vec::new();
        for job in self.jobs.values() {
            if !users.is_empty() && !users.iter().any(|u| u == "*" || u == &job.owner.user) {
                continue;
            }
            let base = |state: String, tasks: String| JobView {
                job_id: job.id,
                name: job.spec.name.clone(),
                owner: job.owner.user.clone(),
                priority: job.spec.priority,
                state,
                submit_time: job.submit_time,
                start_time: None,
                queue: None,
                slots: 1,
                tasks,
                hard_resources: job.spec.hard_resources.clone(),
                hold_jids: job.spec.hold_jids.clone(),
                is_array: job.is_array(),
            };
            let mut waiting: Vec<u32> = Vec::new();
            let mut failed: Vec<u32> = Vec::new();
            for (task, t) in &job.tasks {
                match t {
                    TaskState::Pending => waiting.push(*task),
                    TaskState::Error { .. } => failed.push(*task),
                    TaskState::Running {
                        host,
                        queue,
                        start_time,
                    }
                    | TaskState::Deleting {
                        host,
                        queue,
                        start_time,
                    } => {
                        let letters = match t {
                            TaskState::Deleting { .. } => "dr",
                            _ if job.suspended.contains(task) => "s",
                            _ if started.contains(&(job.id, *task)) => "r",
                            _ => "t",
                        };
                        let mut v = base(
                            letters.to_string(),
                            if job.is_array() {
                                task.to_string()
                            } else {
                                String::new()
                            },
                        );
                        v.start_time = Some(*start_time);
                        v.queue = Some(format!("{queue}@{host}"));
                        running.push(v);
                    }
                }
            }
            if !waiting.is_empty() {
                let held = job.spec.hold
                    || job
                        .spec
                        .hold_jids
                        .iter()
                        .any(|r| self.predecessor_active(r));
                let tasks = if job.is_array() {
                    task_ranges(&waiting, job.spec.array.map_or(1, |r| r.step))
                } else {
                    String::new()
                };
                pending.push(base(if held { "hqw".into() } else { "qw".into() }, tasks));
            }
            if !failed.is_empty() {
                let tasks = if job.is_array() {
                    task_ranges(&failed, job.spec.array.map_or(1, |r| r.step))
                } else {
                    String::new()
                };
                pending.push(base("Eqw".into(), tasks));
            }
        }
        running.extend(pending);
        running
    }
}

/// A finished job as `qstat -s z` shows it.
pub fn zombie_view(job: &Job, end_time: i64) -> JobView {
    JobView {
        job_id: job.id,
        name: job.spec.name.clone(),
        owner: job.owner.user.clone(),
        priority: job.spec.priority,
        state: "z".into(),
        submit_time: job.submit_time,
        start_time: Some(end_time),
        queue: None,
        slots: 1,
        tasks: String::new(),
        hard_resources: job.spec.hard_resources.clone(),
        hold_jids: job.spec.hold_jids.clone(),
        is_array: job.is_array(),
    }
}

/// `1-3:1,5-9:2`-style ranges of task ids.
pub fn task_ranges(ids: &[u32], step: u32) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let start = ids[i];
        let mut end = start;
        while i + 1 < ids.len() && ids[i + 1] == end + step {
            end = ids[i + 1];
            i += 1;
        }
        if start == end {
            parts.push(format!("{start}"));
        } else {
            parts.push(format!("{start}-{end}:{step}"));
        }
        i += 1;
    }
    parts.join(",")
}

/// Resolve `qdel` arguments to the tasks they name: `id`, `id.task`, `id.first-last`.
pub fn parse_job_ref(text: &str) -> Option<(u64, Option<(u32, u32)>)> {
    match text.split_once('.') {
        None => Some((text.parse().ok()?, None)),
        Some((id, tasks)) => {
            let id = id.parse().ok()?;
            let (a, b) = match tasks.split_once('-') {
                Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
                None => {
                    let t = tasks.parse().ok()?;
                    (t, t)
                }
            };
            Some((id, Some((a, b))))
        }
    }
}

impl ClusterState {
    /// The hosts a queue's host list names, host groups resolved.
    pub fn queue_hosts_of(&self, q: &gantry_proto::ClusterQueue) -> Vec<String> {
        let Some(list) = q.attr("hostlist") else {
            return Vec::new();
        };
        let mut hosts = Vec::new();
        for item in conf::split_list(&list.default) {
            if item.starts_with('@') {
                hosts.extend(self.resolve_group(&item, 0));
            } else {
                hosts.push(item);
            }
        }
        hosts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_refs() {
        assert_eq!(task_ranges(&[2, 3, 4, 5], 1), "2-5:1");
        assert_eq!(task_ranges(&[1, 3, 5, 9], 2), "1-5:2,9");
        assert_eq!(task_ranges(&[7], 1), "7");
        assert_eq!(parse_job_ref("12"), Some((12, None)));
        assert_eq!(parse_job_ref("12.3"), Some((12, Some((3, 3)))));
        assert_eq!(parse_job_ref("12.3-5"), Some((12, Some((3, 5)))));
        assert_eq!(parse_job_ref("x"), None);
    }

    #[test]
    fn wildcards() {
        assert!(wildcard("all.q", "all.q"));
        assert!(wildcard("*.q", "all.q"));
        assert!(wildcard("a?l.q", "all.q"));
        assert!(!wildcard("b*", "all.q"));
    }
}
