//! Jobs as pure logic: validation at submission, the first scheduler (priority then
//! submission order, slots per queue instance, holds, dependencies, start times, array
//! tasks one by one), deletion and the views `qstat` shows.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use gantry_common::{complex, queue, value};
use gantry_proto::{
    AccountingRecord, Caller, JobOwner, JobReport, JobRow, JobScript, JobSpec, JobStart, JobState,
    JobView, QueueAt, Refusal, RefusalKind, RowTasks, ValueType,
};

use crate::state::{refuse, ClusterState};

pub use gantry_common::job::{task_ranges, wildcard, Job, TaskState};

/// The owner's primary group by name: the first of the groups looked up at submission
/// (`UnixGroups::of`), so that a task report costs no name-service call.
pub fn group_name(job: &Job) -> String {
    match job.owner.groups.first() {
        Some(g) => g.clone(),
        None => nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(job.owner.gid))
            .ok()
            .flatten()
            .map_or_else(|| job.owner.gid.to_string(), |g| g.name),
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

/// Check resource requests against the complex; names become the attributes' full names,
/// and a request repeated, under any of its names (`-l mf=4G -l mem_free=2G`), is one:
/// the last.
pub fn check_resources(
    state: &ClusterState,
    list: &mut Vec<(String, String)>,
) -> Result<(), Refusal> {
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
        // A request on a string type is an expression (`lx*&!lx-arm*`): refused here
        // when malformed, as SGE does, rather than matching nothing forever.
        if matches!(
            attr.value_type,
            ValueType::String | ValueType::Cstring | ValueType::Restring | ValueType::Host
        ) {
            if let Err(e) = gantry_common::strexpr::check(v) {
                return Err(refuse(RefusalKind::Invalid, e.to_string()));
            }
        }
        // A host named outright must be one of the cell's, as SGE resolves it at
        // submission (`-l h=nosuchhost` would otherwise wait forever).
        if attr.value_type == ValueType::Host
            && !v.contains(['*', '?', '[', ']', '|', '!', '&', '(', ')'])
            && !state.knows_host(v)
        {
            return Err(refuse(
                RefusalKind::Invalid,
                format!("can't resolve hostname \"{v}\""),
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
    // As SGE: slots come from a parallel environment, never from -l; a later request
    // of an attribute replaces every earlier one.
    if list.iter().any(|(name, _)| name == "slots") {
        return Err(refuse(
            RefusalKind::Invalid,
            "\"job\" denied: use parallel environments instead of requesting slots explicitly"
                .to_string(),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    let mut last: Vec<(String, String)> = list
        .drain(..)
        .rev()
        .filter(|(name, _)| seen.insert(name.clone()))
        .collect();
    last.reverse();
    *list = last;
    Ok(())
}

/// Check that every requested queue exists.
pub fn check_queues(state: &ClusterState, queues: &[String]) -> Result<(), Refusal> {
    // Every reference must name at least one queue instance (a cluster queue on one of
    // its hosts); each one that names none is named, as SGE names them, one per line.
    let unknown: Vec<String> = queues
        .iter()
        .filter(|q| !names_a_queue_instance(state, q))
        .map(|q| format!("Job was rejected because job requests unknown queue \"{q}\""))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(refuse(RefusalKind::Invalid, unknown.join("\n")))
    }
}

/// Does `cqueue[@host|@@hostgroup]` (wildcards allowed) name a queue instance?
fn names_a_queue_instance(state: &ClusterState, reference: &str) -> bool {
    let (cq, host) = match reference.split_once('@') {
        Some((cq, host)) => (cq, Some(host)),
        None => (reference, None),
    };
    let cq = if cq.is_empty() { "*" } else { cq };
    state
        .queues
        .iter()
        .filter(|(name, _)| wildcard(cq, name))
        .any(|(_, q)| {
            let hosts = state.queue_hosts_of(q);
            match host {
                None => !hosts.is_empty(),
                Some(group) if group.starts_with('@') => {
                    let members = gantry_sched::view::resolve_group(&state.hostgroups, group, 0);
                    hosts.iter().any(|h| members.contains(h))
                }
                Some(pattern) => hosts
                    .iter()
                    .any(|h| wildcard(&pattern.to_ascii_lowercase(), &h.to_ascii_lowercase())),
            }
        })
}

/// `-hold_jid_ad`: only for an array job, and every array job it names must have the
/// same range of tasks, as SGE requires.
pub fn check_array_dependencies(
    state: &ClusterState,
    spec: &JobSpec,
    id: u64,
) -> Result<(), Refusal> {
    if spec.hold_jids_ad.is_empty() {
        return Ok(());
    }
    let Some(range) = spec.array else {
        return Err(refuse(
            RefusalKind::Invalid,
            "Can only specify \"-hold_jid_ad\" option with an array job (using \"-t\" option)"
                .to_string(),
        ));
    };
    let single = gantry_proto::TaskRange {
        first: 1,
        last: 1,
        step: 1,
    };
    for p in gantry_sched::view::array_predecessors(&state.jobs, &spec.hold_jids_ad, id) {
        if p.spec.array.unwrap_or(single) != range {
            return Err(refuse(
                RefusalKind::Invalid,
                "This array job must have the same range of sub-tasks as the dependent array job specified with -hold_jid_ad"
                    .to_string(),
            ));
        }
    }
    Ok(())
}

/// The largest job script the master takes when `qmaster_params` does not say
/// (`MAX_SCRIPT_SIZE=4M`): 10 MiB.
pub const DEFAULT_MAX_SCRIPT_SIZE: u64 = 10 << 20;

/// `MAX_SCRIPT_SIZE` from `qmaster_params` (`KEY=VALUE` items separated by commas or
/// blanks, as SGE writes them), else the default.
pub fn max_script_size(qmaster_params: &str) -> u64 {
    qmaster_params
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter_map(|item| item.split_once('='))
        .find(|(k, _)| k.eq_ignore_ascii_case("MAX_SCRIPT_SIZE"))
        .and_then(|(_, v)| value::parse_memory(v).ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map_or(DEFAULT_MAX_SCRIPT_SIZE, |v| v as u64)
}

/// Refuse a job script longer than `MAX_SCRIPT_SIZE` allows.
pub fn check_script_size(state: &ClusterState, len: usize) -> Result<(), Refusal> {
    let max = max_script_size(state.global().get("qmaster_params").unwrap_or("none"));
    if len as u64 > max {
        return Err(refuse(
            RefusalKind::Denied,
            format!(
                "job rejected: the job script has {len} bytes, more than the {max} bytes MAX_SCRIPT_SIZE in qmaster_params allows"
            ),
        ));
    }
    Ok(())
}

/// Check a submission; the job to queue.
/// `groups` are the caller's Unix groups (for `@group` entries of access lists).
/// The checks a job's specification gets whether it is submitted or altered (`qalter`):
/// its names, mail and context, dependencies, resource requests (completed as the
/// catalog says), queues, checkpointing, project and parallel environment. The
/// specification as it is kept.
pub fn check_spec(
    state: &ClusterState,
    caller: &Caller,
    groups: &[String],
    spec: &JobSpec,
    id: u64,
) -> Result<JobSpec, Refusal> {
    // Names end up in other users' terminals (`qstat`) and in the accounting file's
    // lines (`qacct`): SGE's rules, and no control character at all.
    gantry_common::names::verify_job_name(&spec.name)
        .map_err(|e| refuse(RefusalKind::Invalid, e))?;
    if !spec.account.is_empty() {
        gantry_common::names::verify_name(&spec.account, gantry_common::names::NameKind::Job)
            .map_err(|e| refuse(RefusalKind::Invalid, e))?;
    }
    gantry_common::mail::check(&spec.mail_options, &spec.mail_list)
        .map_err(|e| refuse(RefusalKind::Invalid, e))?;
    gantry_common::context::check(&spec.context).map_err(|e| refuse(RefusalKind::Invalid, e))?;
    check_array_dependencies(state, spec, id)?;
    let mut spec = spec.clone();
    for list in [&mut spec.hard_resources, &mut spec.soft_resources] {
        check_resources(state, list)?;
    }
    check_queues(state, &spec.queues)?;
    check_queues(state, &spec.soft_queues)?;
    if !spec.masterq.is_empty() && spec.pe.is_none() {
        return Err(refuse(
            RefusalKind::Invalid,
            "job rejected: specification of master queue is not allowed for non-parallel jobs"
                .to_string(),
        ));
    }
    check_queues(state, &spec.masterq)?;
    // Checkpointing: the environment must exist; `-c` needs one and may not be `n`.
    if let Some(name) = &spec.ckpt {
        if !state.ckpts.contains_key(name) {
            return Err(refuse(
                RefusalKind::Invalid,
                format!("job rejected: the requested checkpointing environment \"{name}\" does not exist"),
            ));
        }
    }
    match (&spec.ckpt, spec.ckpt_when.as_deref()) {
        (_, Some("n")) => {
            return Err(refuse(
                RefusalKind::Invalid,
                "job rejected: checkpointing with \"-c n\" requested".to_string(),
            ))
        }
        (None, Some(_)) => {
            return Err(refuse(
                RefusalKind::Invalid,
                "job rejected: checkpointing without checkpointing environment requested"
                    .to_string(),
            ))
        }
        _ => {}
    }
    if let Some(p) = &spec.project {
        let Some(project) = state.projects.get(p) else {
            return Err(refuse(
                RefusalKind::Invalid,
                format!("job rejected: the requested project \"{p}\" does not exist"),
            ));
        };
        let member = |sets: &[String]| {
            sets.iter().any(|s| {
                state.usersets.get(s).is_some_and(|u| {
                    gantry_common::userset::entries_contain(&u.entries, &caller.user, groups)
                })
            })
        };
        if (!project.acl.is_empty() && !member(&project.acl)) || member(&project.xacl) {
            return Err(refuse(
                RefusalKind::Denied,
                format!(
                    "job rejected: user \"{}\" has no access to project \"{p}\"",
                    caller.user
                ),
            ));
        }
    }
    // Hierarchical group quotas: the group the account names, and each of its
    // ancestors, may restrict who submits to it.
    if let Some(g) = gantry_common::groups::group_of(&state.group_tree, &spec.account) {
        let member = |sets: &[String]| {
            sets.iter().any(|s| {
                state.usersets.get(s).is_some_and(|u| {
                    gantry_common::userset::entries_contain(&u.entries, &caller.user, groups)
                })
            })
        };
        if !gantry_common::groups::access_lists(&state.group_tree, &g.name)
            .into_iter()
            .all(member)
        {
            return Err(refuse(
                RefusalKind::Denied,
                format!(
                    "job rejected: user \"{}\" has no access to group \"{}\"",
                    caller.user, g.name
                ),
            ));
        }
    }
    if let Some((pe, range)) = &spec.pe {
        if !state.pes.keys().any(|name| wildcard(pe, name)) {
            return Err(refuse(
                RefusalKind::Invalid,
                format!("job rejected: the requested parallel environment \"{pe}\" does not exist"),
            ));
        }
        if gantry_common::pe::parse_slot_range(range).is_none() {
            return Err(refuse(
                RefusalKind::Invalid,
                format!("job rejected: invalid slot range \"{range}\" for parallel environment \"{pe}\""),
            ));
        }
    }
    Ok(spec)
}

pub fn validate_submission(
    state: &ClusterState,
    caller: &Caller,
    groups: &[String],
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
    // `-dl`: only deadline users may say when their job must reach top priority.
    if spec.deadline.is_some()
        && !state.usersets.get("deadlineusers").is_some_and(|u| {
            gantry_common::userset::entries_contain(&u.entries, &caller.user, groups)
        })
    {
        return Err(refuse(
            RefusalKind::Denied,
            format!(
                "job rejected: the user \"{}\" is no deadline initiation user",
                caller.user
            ),
        ));
    }
    if let JobScript::Script { contents, .. } = &spec.script {
        check_script_size(state, contents.len())?;
    }
    let spec = check_spec(state, caller, groups, spec, id)?;
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
    let tasks = match spec.array {
        Some(r) => {
            if r.first == 0 || r.last < r.first || r.step == 0 {
                return Err(refuse(RefusalKind::Invalid, "invalid task range"));
            }
            gantry_common::tasks::Tasks::array(r.first, r.last, r.step)
        }
        None => gantry_common::tasks::Tasks::single(),
    };
    let job = Job {
        id,
        owner: JobOwner {
            user: caller.user.clone(),
            uid: caller.uid,
            gid: caller.gid,
            groups: groups.to_vec(),
        },
        spec,
        submit_time: now,
        tasks,
        suspended: Default::default(),
        restarted: Default::default(),
        ckpt_arena: Default::default(),
    };
    state.check_ar_job(&job, now)?;
    Ok(job)
}

impl ClusterState {
    /// Slots in use per `queue@host`.
    pub(crate) fn used_slots(&self) -> HashMap<(String, String), u32> {
        let mut used = HashMap::new();
        for job in self.jobs.values() {
            for (_, t) in job.tasks.placed() {
                if let TaskState::Running { grants, .. } | TaskState::Deleting { grants, .. } = t {
                    for g in grants {
                        *used.entry((g.queue.clone(), g.host.clone())).or_insert(0) += g.slots;
                    }
                }
            }
        }
        used
    }

    /// May a task of this job in this queue instance run again after its host failed
    /// under it? A checkpointing job may; else `qsub -r y|n`, else the queue's `rerun`
    /// on that host.
    pub fn rerunnable(&self, job: &Job, queue: &str, host: &str) -> bool {
        // A checkpointing job always runs again (SGE's job_exit: "rerun specified or
        // ckpt job").
        if job.spec.ckpt.is_some() {
            return true;
        }
        if let Some(r) = job.spec.restart {
            return r;
        }
        let groups = self.groups_of(host);
        self.queues
            .get(queue)
            .and_then(|q| q.attr("rerun"))
            .is_some_and(|a| queue::value_on_host(a, host, &groups).eq_ignore_ascii_case("TRUE"))
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

    pub fn job_start(&self, d: &crate::sched::Dispatch) -> Option<JobStart> {
        let job = self.jobs.get(&d.job_id)?;
        let mut queue_settings = self.queue_settings(&d.queue, &d.host);
        // The execd sends the job's mail through the cluster's mailer.
        if !job.spec.mail_options.is_empty() && !job.spec.mail_options.contains('n') {
            if let Some(mailer) = self.global().get("mailer") {
                queue_settings.push(("mailer".to_string(), mailer.to_string()));
            }
        }
        let checkpoint = job
            .spec
            .ckpt
            .as_ref()
            .and_then(|n| self.ckpts.get(n))
            .map(|c| self.checkpointing(job, c, &d.queue, &d.host));
        Some(JobStart {
            job_id: job.id,
            task_id: d.task_id,
            spec: job.spec.clone(),
            owner: job.owner.clone(),
            queue: format!("{}@{}", d.queue, d.host),
            host: d.host.clone(),
            slots: d.grants.iter().map(|g| g.slots).sum::<u32>().max(1),
            submit_time: job.submit_time,
            queue_settings,
            pe: d.pe.clone(),
            granted: d.grants.clone(),
            restarted: if job.ckpt_arena.contains(&d.task_id) {
                2
            } else {
                u32::from(job.restarted.contains_key(&d.task_id))
            },
            checkpoint,
        })
    }

    /// How a checkpointing job runs in a queue instance: its environment, when it is
    /// checkpointed, and (`when` m) how often: the larger of the queue's
    /// `min_cpu_interval` and the job's `-c` interval, as SGE's execd takes it.
    fn checkpointing(
        &self,
        job: &Job,
        c: &gantry_common::ckpt::Ckpt,
        queue: &str,
        host: &str,
    ) -> gantry_proto::Checkpointing {
        use gantry_common::ckpt;
        let selector = job.spec.ckpt_when.as_deref();
        let when = ckpt::effective_when(c, selector);
        let interval_secs = if when.contains('m') {
            let groups = self.groups_of(host);
            let queue_interval = self
                .queues
                .get(queue)
                .and_then(|q| q.attr("min_cpu_interval"))
                .and_then(|a| {
                    gantry_common::value::parse_time(queue::value_on_host(a, host, &groups)).ok()
                })
                .filter(|t| t.is_finite() && *t > 0.0)
                .map_or(0, |t| t.ceil() as u64);
            queue_interval.max(ckpt::job_interval(selector).unwrap_or(0))
        } else {
            0
        };
        gantry_proto::Checkpointing {
            env: c.clone(),
            when,
            interval_secs,
        }
    }

    /// The accounting record of a finished task.
    pub fn accounting_record(&self, report: &JobReport) -> Option<AccountingRecord> {
        let job = self.jobs.get(&report.job_id)?;
        let group = group_name(job);
        Some(AccountingRecord {
            job_id: job.id,
            task_id: job.is_array().then_some(report.task_id),
            job_name: job.spec.name.clone(),
            owner: job.owner.user.clone(),
            group,
            account: job.spec.account.clone(),
            project: job.spec.project.clone(),
            priority: job.spec.priority,
            slots: job.task_slots(report.task_id),
            submit_time: job.submit_time,
            attempt: job.restarted.get(&report.task_id).copied().unwrap_or(0),
            ar: job.spec.ar.map(|id| {
                let submitted = self.ars.get(&id).map_or(0, |a| a.submission_time);
                (id, submitted)
            }),
            report: report.clone(),
        })
    }

    /// `qstat`'s rows: running tasks one by one, pending tasks of a job together.
    pub fn job_views(&self, users: &[String], started: &HashSet<(u64, u32)>) -> Vec<JobView> {
        self.jobs_image().views(users, started)
    }

    /// What `qstat`'s rows are made of, to make them on another thread.
    pub fn jobs_image(&self) -> JobsImage {
        JobsImage {
            jobs: self.jobs.clone(),
            suspended_queues: self.suspended_queues.clone(),
            threshold_suspended: self.threshold_suspended.clone(),
        }
    }
}

/// The parts of the state `qstat`'s rows are made of: shared with the state (each an
/// `Arc` the state changes copy-on-write), so taking one costs three reference counts
/// and the rows can be made off the actor's thread.
#[derive(Debug, Clone)]
pub struct JobsImage {
    jobs: Arc<gantry_sched::view::JobTable>,
    suspended_queues: Arc<HashSet<(String, String)>>,
    threshold_suspended: Arc<std::collections::BTreeSet<(u64, u32)>>,
}

/// Does a listing of `users` (all: empty, or `*`) show the jobs of `owner`?
fn wanted(users: &[String], owner: &str) -> bool {
    users.is_empty() || users.iter().any(|u| u == "*" || u == owner)
}

/// The encoded rows of the jobs whose rows depend on nothing but the job (nothing of it
/// placed, no `-hold_jid`), kept from one `qstat` listing to the next, so that a listing
/// encodes again only the jobs that changed since. A job is told unchanged by its `Arc`:
/// the cache holds a `Weak` of the one it encoded, so no other job can take its address
/// and no one can change it in place (`Arc::make_mut` moves a value that has `Weak`s).
#[derive(Debug, Default)]
pub struct ListingCache {
    /// In job id order (the job table's).
    entries: Vec<CachedJob>,
    /// The owners' names, indexed by [`CachedJob::owner`].
    owners: Vec<String>,
    /// Every entry's rows, one after another.
    rows: Vec<u8>,
}

#[derive(Debug)]
struct CachedJob {
    id: u64,
    job: std::sync::Weak<Job>,
    owner: u32,
    /// How many rows, in `rows[start..end]`.
    count: usize,
    start: usize,
    end: usize,
}

impl ListingCache {
    /// Keep an entry of the last cache, with its rows.
    fn keep(&mut self, e: &CachedJob, rows: &[u8]) {
        let start = self.rows.len();
        self.rows.extend_from_slice(rows);
        self.entries.push(CachedJob {
            id: e.id,
            job: e.job.clone(),
            owner: e.owner,
            count: e.count,
            start,
            end: self.rows.len(),
        });
    }
}

impl JobsImage {
    /// Is a job id or name still in the system (for `-hold_jid`)?
    fn predecessor_active(&self, reference: &str) -> bool {
        gantry_sched::view::predecessor_active(&self.jobs, reference)
    }

    /// The rows of `users`' jobs (all: empty, or `*`); `started`: the tasks whose execd
    /// reported them started.
    pub fn views(&self, users: &[String], started: &HashSet<(u64, u32)>) -> Vec<JobView> {
        let mut running = Vec::new();
        let mut pending = Vec::new();
        self.rows(users, started, |row| match row.queue {
            Some(_) => running.push(row.to_view()),
            None => pending.push(row.to_view()),
        });
        running.extend(pending);
        running
    }

    /// The encoding of [`gantry_proto::FromMaster::Jobs`] with the rows
    /// [`JobsImage::views`] makes, encoded from the job table as they are made (no row
    /// is copied out of it first).
    pub fn encoded_views(
        &self,
        users: &[String],
        started: &HashSet<(u64, u32)>,
    ) -> Result<Vec<u8>, gantry_proto::ProtoError> {
        Ok(self.encoded_views_with(users, started, None)?.0)
    }

    /// The same, with the rows of every job that has not changed since `cache` was made
    /// taken from it; and the cache for the next listing.
    pub fn encoded_views_with(
        &self,
        users: &[String],
        started: &HashSet<(u64, u32)>,
        cache: Option<&ListingCache>,
    ) -> Result<(Vec<u8>, ListingCache), gantry_proto::ProtoError> {
        let empty = ListingCache::default();
        let cache = cache.unwrap_or(&empty);
        let mut next = ListingCache {
            entries: Vec::with_capacity(cache.entries.len()),
            owners: cache.owners.clone(),
            rows: Vec::with_capacity(cache.rows.len()),
        };
        let mut owner_ids: HashMap<String, u32> = (0..)
            .zip(&next.owners)
            .map(|(n, o)| (o.clone(), n))
            .collect();
        let owner_wanted: Vec<bool> = cache.owners.iter().map(|o| wanted(users, o)).collect();
        let (mut running, mut pending) = (Vec::new(), Vec::new());
        let mut count = 0;
        let mut failed = None;
        let mut encode = |row: &JobRow<'_>, into: &mut Vec<u8>| match gantry_proto::encode_job_row(
            row,
            std::mem::take(into),
        ) {
            Ok(rows) => *into = rows,
            Err(e) => failed = Some(e),
        };
        let mut old = cache.entries.iter().peekable();
        for (&id, job) in self.jobs.iter() {
            while old.next_if(|e| e.id < id).is_some() {}
            let same = old
                .next_if(|e| e.id == id)
                .filter(|e| e.job.as_ptr() == Arc::as_ptr(job));
            if let Some(e) = same {
                let rows = &cache.rows[e.start..e.end];
                if owner_wanted[e.owner as usize] {
                    pending.extend_from_slice(rows);
                    count += e.count;
                }
                next.keep(e, rows);
                continue;
            }
            let wanted = wanted(users, &job.owner.user);
            // A job's rows depend on nothing but the job when nothing of it is placed
            // (running tasks' states come from elsewhere) and it waits for no other job.
            if job.tasks.placed().next().is_some() || !job.spec.hold_jids.is_empty() {
                if wanted {
                    self.job_rows(job, started, &mut |row| {
                        let into = match row.queue {
                            Some(_) => &mut running,
                            None => &mut pending,
                        };
                        encode(&row, into);
                        count += 1;
                    });
                }
                continue;
            }
            let start = next.rows.len();
            let mut rows = 0;
            self.job_rows(job, started, &mut |row| {
                encode(&row, &mut next.rows);
                rows += 1;
            });
            if wanted {
                pending.extend_from_slice(&next.rows[start..]);
                count += rows;
            }
            let owner = match owner_ids.get(&job.owner.user) {
                Some(&n) => n,
                None => {
                    let n = next.owners.len() as u32;
                    next.owners.push(job.owner.user.clone());
                    owner_ids.insert(job.owner.user.clone(), n);
                    n
                }
            };
            next.entries.push(CachedJob {
                id,
                job: Arc::downgrade(job),
                owner,
                count: rows,
                start,
                end: next.rows.len(),
            });
        }
        if let Some(e) = failed {
            return Err(e);
        }
        running.extend_from_slice(&pending);
        Ok((gantry_proto::encode_jobs_answer(count, &running)?, next))
    }

    /// Each row of `users`' jobs, as [`JobsImage::views`] lists them (running tasks one
    /// by one, pending tasks of a job together), borrowed from the job table.
    fn rows(
        &self,
        users: &[String],
        started: &HashSet<(u64, u32)>,
        mut emit: impl FnMut(JobRow<'_>),
    ) {
        for job in self.jobs.values() {
            if wanted(users, &job.owner.user) {
                self.job_rows(job, started, &mut emit);
            }
        }
    }

    /// One job's rows.
    fn job_rows<'j>(
        &self,
        job: &'j Job,
        started: &HashSet<(u64, u32)>,
        emit: &mut impl FnMut(JobRow<'j>),
    ) {
        {
            let base = |state: JobState, tasks: RowTasks| JobRow {
                job_id: job.id,
                name: &job.spec.name,
                owner: &job.owner.user,
                priority: job.spec.priority,
                state,
                submit_time: job.submit_time,
                start_time: None,
                queue: None,
                slots: 1,
                tasks,
                hard_resources: &job.spec.hard_resources,
                hold_jids: &job.spec.hold_jids,
                is_array: job.is_array(),
                restarted: false,
            };
            let ranges = |tasks: &[u32]| match job.is_array() {
                true => RowTasks::Ranges(task_ranges(tasks, job.spec.array.map_or(1, |r| r.step))),
                false => RowTasks::None,
            };
            let mut failed: Vec<u32> = Vec::new();
            for (task, t) in job.tasks.placed() {
                match t {
                    TaskState::Pending => {}
                    TaskState::Error { .. } => failed.push(task),
                    TaskState::Running {
                        host,
                        queue,
                        start_time,
                        grants,
                        ..
                    }
                    | TaskState::Deleting {
                        host,
                        queue,
                        start_time,
                        grants,
                        ..
                    } => {
                        let state = match t {
                            TaskState::Deleting { .. } => JobState::Deleting,
                            _ if job.suspended.contains(&task) => JobState::Suspended,
                            _ if (!self.suspended_queues.is_empty()
                                && self
                                    .suspended_queues
                                    .contains(&(queue.clone(), host.clone())))
                                || self.threshold_suspended.contains(&(job.id, task)) =>
                            {
                                JobState::QueueSuspended
                            }
                            _ if started.contains(&(job.id, task)) => JobState::Running,
                            _ => JobState::Transferring,
                        };
                        let mut row = base(
                            state,
                            if job.is_array() {
                                RowTasks::One(task)
                            } else {
                                RowTasks::None
                            },
                        );
                        row.start_time = Some(*start_time);
                        row.restarted = job.restarted.contains_key(&task);
                        row.queue = Some(QueueAt { queue, host });
                        row.slots = grants.iter().map(|g| g.slots).sum::<u32>().max(1);
                        emit(row);
                    }
                }
            }
            if job.tasks.has_pending() {
                let held = job.spec.hold
                    || job
                        .spec
                        .hold_jids
                        .iter()
                        .any(|r| self.predecessor_active(r));
                // Tasks waiting to run again are a row of their own (`Rq`), as SGE
                // groups tasks by state.
                let pending_tasks = job.tasks.pending();
                let again: Vec<u32> = job
                    .restarted
                    .keys()
                    .copied()
                    .filter(|t| pending_tasks.contains(*t))
                    .collect();
                let mut fresh = None;
                if !again.is_empty() {
                    let mut rest = pending_tasks.clone();
                    for t in &again {
                        rest.remove(*t);
                    }
                    fresh = Some(rest);
                }
                let fresh = fresh.as_ref().unwrap_or(pending_tasks);
                if !fresh.is_empty() {
                    let tasks = if job.is_array() {
                        RowTasks::Ranges(fresh.ranges_text())
                    } else {
                        RowTasks::None
                    };
                    emit(base(JobState::Pending { held }, tasks));
                }
                if !again.is_empty() {
                    let mut row = base(JobState::Pending { held }, ranges(&again));
                    row.restarted = true;
                    emit(row);
                }
            }
            if !failed.is_empty() {
                emit(base(JobState::Error, ranges(&failed)));
            }
        }
    }
}
/// A finished job as `qstat -s z` shows it.
pub fn zombie_view(job: &Job, end_time: i64) -> JobView {
    JobView {
        job_id: job.id,
        name: job.spec.name.clone(),
        owner: job.owner.user.clone(),
        priority: job.spec.priority,
        state: JobState::Zombie,
        submit_time: job.submit_time,
        start_time: Some(end_time),
        queue: None,
        slots: 1,
        tasks: String::new(),
        hard_resources: job.spec.hard_resources.clone(),
        hold_jids: job.spec.hold_jids.clone(),
        is_array: job.is_array(),
        restarted: false,
    }
}

/// Resolve `qdel` arguments to the tasks they name: `id`, `id.task`, `id.first-last`.
/// The jobs a list of job ids and names (wildcards allowed) names, each once, in the
/// list's order (`qstat -j 12,myjob*`).
pub fn jobs_named(jobs: &gantry_sched::view::JobTable, refs: &[String]) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for r in refs {
        match parse_job_ref(r) {
            Some((id, _)) => {
                if jobs.contains_key(&id) && seen.insert(id) {
                    out.push(id);
                }
            }
            None => {
                for j in jobs.values() {
                    if gantry_common::job::wildcard(r, &j.spec.name) && seen.insert(j.id) {
                        out.push(j.id);
                    }
                }
            }
        }
    }
    out
}

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
        gantry_sched::view::queue_hosts_of(&self.hostgroups, q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `qstat`'s listing encoded from the job table is the listing of its rows encoded
    /// whole: running, transferring, suspended and deleting tasks, pending, held,
    /// restarted and failed ones of arrays, plain jobs, and only the users asked for.
    #[test]
    fn the_encoded_listing_is_the_listing_of_its_rows() {
        use crate::synthetic::{job, running_on, submit};
        let mut s = crate::synthetic::cluster(&[]);
        let mut plain = job(1, "alice", &[("h_rt", "60")], &[]);
        plain.tasks.insert(1, running_on("all.q", "node1"));
        submit(&mut s, plain);
        let mut array = job(2, "bob", &[], &[]);
        array.spec.array = Some(gantry_proto::TaskRange {
            first: 1,
            last: 9,
            step: 2,
        });
        array.tasks = gantry_common::tasks::Tasks::array(1, 9, 2);
        array.tasks.insert(1, running_on("all.q", "node1"));
        array.tasks.insert(3, running_on("all.q", "node2"));
        array
            .tasks
            .insert(5, TaskState::Error { reason: "x".into() });
        array.restarted.insert(7, 1);
        array.suspended.insert(3);
        submit(&mut s, array);
        let mut held = job(3, "alice", &[], &[]);
        held.spec.hold = true;
        held.spec.hold_jids = vec!["2".into()];
        submit(&mut s, held);
        let image = s.jobs_image();
        let started: HashSet<(u64, u32)> = [(2, 1)].into_iter().collect();
        for users in [vec![], vec!["alice".to_string()], vec!["*".to_string()]] {
            let views = image.views(&users, &started);
            assert!(!views.is_empty());
            assert_eq!(
                image.encoded_views(&users, &started).unwrap(),
                gantry_proto::encode(&gantry_proto::FromMaster::Jobs(views)).unwrap(),
                "{users:?}"
            );
        }
        let all = image.views(&[], &started);
        let states: Vec<(u64, &str, &str)> = all
            .iter()
            .map(|v| (v.job_id, v.state_letters(), v.tasks.as_str()))
            .collect();
        assert_eq!(
            states,
            [
                (1, "t", ""),
                (2, "r", "1"),
                (2, "s", "3"),
                (2, "qw", "9"),
                (2, "Rq", "7"),
                (2, "Eqw", "5"),
                (3, "hqw", ""),
            ]
        );
    }

    /// A listing that takes the unchanged jobs' rows from the last one's is the listing
    /// made afresh, whatever changed in between: a job changed, removed, added, started,
    /// held, waiting for another; and whoever lists (the cache keeps every owner's).
    #[test]
    fn a_listing_from_the_last_ones_rows_is_the_listing_made_afresh() {
        use crate::synthetic::{job, running_on, submit};
        let mut s = crate::synthetic::cluster(&[]);
        for id in 1..=40 {
            submit(
                &mut s,
                job(id, ["alice", "bob", "carol"][id as usize % 3], &[], &[]),
            );
        }
        let started = HashSet::new();
        let everyone: Vec<String> = Vec::new();
        let (_, mut cache) = s
            .jobs_image()
            .encoded_views_with(&everyone, &started, None)
            .unwrap();
        type Change = Box<dyn Fn(&mut ClusterState)>;
        let changes: Vec<Change> = vec![
            Box::new(|_| {}),
            Box::new(|s| {
                let mut j = Job::clone(&s.jobs[&5]);
                j.spec.name = "renamed".into();
                submit(s, j);
            }),
            Box::new(|s| {
                crate::state::ClusterState::apply(
                    s,
                    &crate::state::Op::Delete(crate::state::job_key(7)),
                );
            }),
            Box::new(|s| submit(s, job(41, "dave", &[], &[]))),
            Box::new(|s| {
                let mut j = Job::clone(&s.jobs[&9]);
                j.tasks.insert(1, running_on("all.q", "node1"));
                submit(s, j);
            }),
            Box::new(|s| {
                let mut j = Job::clone(&s.jobs[&10]);
                j.spec.hold = true;
                submit(s, j);
            }),
            Box::new(|s| {
                let mut j = Job::clone(&s.jobs[&11]);
                j.spec.hold_jids = vec!["12".into()];
                submit(s, j);
            }),
            Box::new(|s| {
                crate::state::ClusterState::apply(
                    s,
                    &crate::state::Op::Delete(crate::state::job_key(12)),
                );
            }),
        ];
        for (n, change) in changes.iter().enumerate() {
            change(&mut s);
            let image = s.jobs_image();
            for users in [vec![], vec!["alice".to_string()], vec!["dave".to_string()]] {
                let afresh = image.encoded_views(&users, &started).unwrap();
                let (cached, _) = image
                    .encoded_views_with(&users, &started, Some(&cache))
                    .unwrap();
                assert_eq!(cached, afresh, "change {n}, {users:?}");
            }
            cache = image
                .encoded_views_with(&everyone, &started, Some(&cache))
                .unwrap()
                .1;
        }
    }

    #[test]
    fn the_script_size_limit_comes_from_qmaster_params() {
        let table = [
            ("none", DEFAULT_MAX_SCRIPT_SIZE),
            ("MAX_SCRIPT_SIZE=4M", 4 << 20),
            ("MONITOR_TIME=0:0:10,max_script_size=1K", 1024),
            ("MONITOR_TIME=0:0:10 MAX_SCRIPT_SIZE=100", 100),
            ("MAX_SCRIPT_SIZE=lots", DEFAULT_MAX_SCRIPT_SIZE),
        ];
        for (params, want) in table {
            assert_eq!(max_script_size(params), want, "{params}");
        }
    }

    #[test]
    fn requests_are_checked_named_in_full_and_merged() {
        let s = crate::synthetic::cluster(&[]);
        let pairs = |l: &[(&str, &str)]| -> Vec<(String, String)> {
            l.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        type Requests<'a> = &'a [(&'a str, &'a str)];
        let table: &[(Requests, Result<Requests, &str>)] = &[
            (
                &[("mf", "4G"), ("h_rt", "1:0:0"), ("mem_free", "2G")],
                Ok(&[("h_rt", "3600"), ("mem_free", "2G")]),
            ),
            (
                &[("a", "lx*"), ("mf", "1G"), ("arch", "sol*"), ("a", "x*")],
                Ok(&[("mem_free", "1G"), ("arch", "x*")]),
            ),
            (
                &[("s", "4")],
                Err("\"job\" denied: use parallel environments instead of requesting slots explicitly"),
            ),
            (&[("a", "lx*"), ("arch", "sol*")], Ok(&[("arch", "sol*")])),
            (
                &[("arch", "lx*|")],
                Err("Parse error on position 4 of the expression \"lx*|\"."),
            ),
            (&[("nosuch", "1")], Err("unknown resource \"nosuch\"")),
            (
                &[("h_rt", "soon")],
                Err("attribute \"h_rt\" is not a time value"),
            ),
        ];
        for (given, want) in table {
            let mut list = pairs(given);
            let got = check_resources(&s, &mut list)
                .map(|_| list)
                .map_err(|r| r.message);
            assert_eq!(got, want.map(pairs).map_err(str::to_string), "{given:?}");
        }
    }

    #[test]
    fn array_dependencies_need_arrays_of_the_same_range() {
        let mut s = crate::synthetic::cluster(&[]);
        let caller = Caller {
            user: "u1".into(),
            uid: 5000,
            gid: 5000,
            host: "head".into(),
        };
        let range = |last| gantry_proto::TaskRange {
            first: 1,
            last,
            step: 1,
        };
        let mut pred = crate::synthetic::job(1, "u1", &[], &[]);
        pred.spec.name = "pre".into();
        pred.spec.array = Some(range(4));
        crate::synthetic::submit(&mut s, pred);
        let try_with = |array: Option<u32>, refs: &[&str]| {
            let mut j = crate::synthetic::job(2, "u1", &[], &[]);
            j.spec.array = array.map(range);
            j.spec.hold_jids_ad = refs.iter().map(|r| r.to_string()).collect();
            validate_submission(&s, &caller, &[], &j.spec, 2, 0)
                .map(|_| ())
                .map_err(|r| r.message)
        };
        let not_array =
            "Can only specify \"-hold_jid_ad\" option with an array job (using \"-t\" option)";
        let other_range = "This array job must have the same range of sub-tasks as the dependent array job specified with -hold_jid_ad";
        assert_eq!(try_with(None, &["1"]), Err(not_array.into()));
        assert_eq!(try_with(Some(3), &["pre"]), Err(other_range.into()));
        assert_eq!(try_with(Some(4), &["1"]), Ok(()));
        assert_eq!(try_with(Some(3), &["nosuchjob"]), Ok(()));
        assert_eq!(try_with(None, &[]), Ok(()));
    }

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
    fn projects_and_pes_are_checked_at_submission() {
        let mut s = crate::synthetic::cluster(&[]);
        let caller = Caller {
            user: "u1".into(),
            uid: 5000,
            gid: 5000,
            host: "head".into(),
        };
        let mut chem = gantry_common::project::Project::new("chem");
        chem.acl = vec!["arusers".into()];
        s.apply(&crate::state::Op::Put(crate::state::Object::Project(chem)));
        let submit = |s: &ClusterState, project: Option<&str>, pe: Option<(&str, &str)>| {
            let mut j = crate::synthetic::job(1, "u1", &[], &[]);
            j.spec.project = project.map(str::to_string);
            j.spec.pe = pe.map(|(a, b)| (a.to_string(), b.to_string()));
            validate_submission(s, &caller, &[], &j.spec, 1, 0)
                .map(|_| ())
                .map_err(|r| r.message)
        };
        assert_eq!(
            submit(&s, Some("bio"), None),
            Err("job rejected: the requested project \"bio\" does not exist".into())
        );
        assert_eq!(
            submit(&s, Some("chem"), None),
            Err("job rejected: user \"u1\" has no access to project \"chem\"".into())
        );
        if let Some(u) = std::sync::Arc::make_mut(&mut s.usersets).get_mut("arusers") {
            u.entries.push("u1".into());
        }
        assert_eq!(submit(&s, Some("chem"), None), Ok(()));
        assert_eq!(submit(&s, None, Some(("mp*", "2-4"))), Ok(()));
        assert_eq!(
            submit(&s, None, Some(("nosuch", "2"))),
            Err(
                "job rejected: the requested parallel environment \"nosuch\" does not exist".into()
            )
        );
        assert_eq!(
            submit(&s, None, Some(("mpi", "4-2"))),
            Err("job rejected: invalid slot range \"4-2\" for parallel environment \"mpi\"".into())
        );
    }

    #[test]
    fn wildcards() {
        assert!(wildcard("all.q", "all.q"));
        assert!(wildcard("*.q", "all.q"));
        assert!(wildcard("a?l.q", "all.q"));
        assert!(!wildcard("b*", "all.q"));
    }
}
