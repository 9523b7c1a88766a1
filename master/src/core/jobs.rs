//! Jobs as pure logic: validation at submission, the first scheduler (priority then
//! submission order, slots per queue instance, holds, dependencies, start times, array
//! tasks one by one), deletion and the views `qstat` shows.

use gantry_proto::{
    AccountingRecord, Caller, JobId, JobOwner, JobReport, JobScript, JobSpec, JobStart, JobView,
    Refusal, RefusalKind, ShepherdFailure, TaskId, ValueType,
};
use std::collections::{HashMap, HashSet};

use gantry_common::{complex, queue, value};

use crate::core::state::{refuse, ClusterState};

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
        let Some(attr) = complex::find(&state.input.complexes, name) else {
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
        .input
        .queues
        .iter()
        .filter(|(name, _)| wildcard(cq, name))
        .any(|(_, q)| {
            let hosts = state.queue_hosts_of(q);
            match host {
                None => !hosts.is_empty(),
                Some(group) if group.starts_with('@') => {
                    let members =
                        gantry_sched::view::resolve_group(&state.input.hostgroups, group, 0);
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
    id: JobId,
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
    for p in gantry_sched::view::array_predecessors(&state.input.jobs, &spec.hold_jids_ad, id) {
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
    param_bytes(qmaster_params, "MAX_SCRIPT_SIZE").unwrap_or(DEFAULT_MAX_SCRIPT_SIZE)
}

/// A size in `qmaster_params` (`KEY=VALUE` items separated by commas or blanks, as SGE
/// writes them; `4M` and the like), if it is there and one.
fn param_bytes(qmaster_params: &str, key: &str) -> Option<u64> {
    qmaster_params
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter_map(|item| item.split_once('='))
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .and_then(|(_, v)| value::parse_memory(v).ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| v as u64)
}

/// The bytes of job scripts one user's jobs may hold in the spool when `qmaster_params`
/// does not say (`MAX_USER_SCRIPTS_SIZE=100M`; 0 for no bound): 1 GiB.
pub const DEFAULT_MAX_USER_SCRIPTS_SIZE: u64 = 1 << 30;

/// `MAX_USER_SCRIPTS_SIZE` from `qmaster_params`, else the default; None for no bound.
pub fn max_user_scripts_size(qmaster_params: &str) -> Option<u64> {
    let max = param_bytes(qmaster_params, "MAX_USER_SCRIPTS_SIZE")
        .unwrap_or(DEFAULT_MAX_USER_SCRIPTS_SIZE);
    (max > 0).then_some(max)
}

/// Refuse a job script that would take the bytes its owner's scripts hold (`held`)
/// past `MAX_USER_SCRIPTS_SIZE`.
pub fn check_user_scripts_size(state: &ClusterState, held: u64, len: usize) -> Result<(), Refusal> {
    let Some(max) = max_user_scripts_size(state.global().get("qmaster_params").unwrap_or("none"))
    else {
        return Ok(());
    };
    if held.saturating_add(len as u64) > max {
        return Err(refuse(
            RefusalKind::Denied,
            format!(
                "job rejected: your jobs' scripts hold {held} bytes in the spool, and this one's {len} bytes would pass the {max} bytes MAX_USER_SCRIPTS_SIZE in qmaster_params allows a user"
            ),
        ));
    }
    Ok(())
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
/// A host a request names outright (`-l h=node7`, no pattern) must resolve, as SGE's
/// qmaster resolves it at submission: `-l h=nosuchhost` would otherwise wait forever,
/// while a name that resolves but is no host of the cell's is accepted and the job
/// waits (`offers only qf:hostname=vm`), as in SGE. `resolves` asks the master's name
/// service, for names the cell does not know only.
pub fn check_hosts_resolve(
    state: &ClusterState,
    lists: &[&[(String, String)]],
    resolves: &dyn Fn(&str) -> bool,
) -> Result<(), Refusal> {
    for (name, v) in lists.iter().flat_map(|l| l.iter()) {
        let is_host = complex::find(&state.input.complexes, name)
            .is_some_and(|attr| attr.value_type == ValueType::Host);
        if is_host
            && !v.contains(['*', '?', '[', ']', '|', '!', '&', '(', ')'])
            && !state.knows_host(v)
            && !resolves(v)
        {
            return Err(refuse(
                RefusalKind::Invalid,
                format!("can't resolve hostname \"{v}\""),
            ));
        }
    }
    Ok(())
}

/// `-o`, `-e`, `-i`, `-S` path lists (`[host:]path,...`): one path per host at most,
/// none empty, and every host named resolving, as SGE's qmaster checks them.
pub fn check_path_lists(
    state: &ClusterState,
    lists: &[Option<&str>],
    resolves: &dyn Fn(&str) -> bool,
) -> Result<(), Refusal> {
    for text in lists.iter().flatten() {
        gantry_common::path_list::parse(text)
            .map_err(|e| refuse(RefusalKind::Invalid, e.to_string()))?;
        for host in gantry_common::path_list::hosts(text) {
            if !state.knows_host(host) && !resolves(host) {
                return Err(refuse(
                    RefusalKind::Invalid,
                    format!("can't resolve hostname \"{host}\""),
                ));
            }
        }
    }
    Ok(())
}

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
    id: JobId,
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
    // Hosts in queue references as DNS compares names (`all.q@NODE1.` is all.q@node1).
    for list in [&mut spec.queues, &mut spec.soft_queues, &mut spec.masterq] {
        for q in list.iter_mut() {
            *q = gantry_common::exechost::canonical_queue_reference(q);
        }
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
        let Some(project) = state.input.projects.get(p) else {
            return Err(refuse(
                RefusalKind::Invalid,
                format!("job rejected: the requested project \"{p}\" does not exist"),
            ));
        };
        let member = |sets: &[String]| {
            sets.iter().any(|s| {
                state.input.usersets.get(s).is_some_and(|u| {
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
    if let Some(g) = gantry_common::groups::group_of(&state.input.group_tree, &spec.account) {
        let member = |sets: &[String]| {
            sets.iter().any(|s| {
                state.input.usersets.get(s).is_some_and(|u| {
                    gantry_common::userset::entries_contain(&u.entries, &caller.user, groups)
                })
            })
        };
        if !gantry_common::groups::access_lists(&state.input.group_tree, &g.name)
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
        if !state.input.pes.keys().any(|name| wildcard(pe, name)) {
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

/// The checks SGE's qmaster makes of a submission before it gives the job a number:
/// the submitter's user and group ids. A submission refused later has used its number
/// (SGE's job ids have gaps where submissions were refused, and Gantry's the same).
pub fn check_submitter(state: &ClusterState, caller: &Caller) -> Result<(), Refusal> {
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
    Ok(())
}

/// A submission checked against the state: the job it makes, numbered `id`.
pub fn validate_submission(
    state: &ClusterState,
    caller: &Caller,
    groups: &[String],
    spec: &JobSpec,
    id: JobId,
    now: i64,
) -> Result<Job, Refusal> {
    check_submitter(state, caller)?;
    let conf = state.global();
    let limit = |key: &str| {
        conf.get(key)
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(0)
    };
    // `-dl`: only deadline users may say when their job must reach top priority.
    if spec.deadline.is_some()
        && !state.input.usersets.get("deadlineusers").is_some_and(|u| {
            gantry_common::userset::entries_contain(&u.entries, &caller.user, groups)
        })
    {
        return Err(refuse(
            RefusalKind::Denied,
            format!(
                "job rejected: the user \"{}\" is not a deadline initiation user",
                caller.user
            ),
        ));
    }
    if let JobScript::Script { contents, .. } = &spec.script {
        check_script_size(state, contents.len())?;
    }
    // Users may lower their jobs' priority; only managers (SGE: operators) raise it.
    if spec.priority > 0 && state.manager_check(caller).is_err() {
        return Err(refuse(
            RefusalKind::Denied,
            "job rejected: positive submission priority requires operator privileges",
        ));
    }
    let spec = check_spec(state, caller, groups, spec, id)?;
    let max_u_jobs = limit("max_u_jobs");
    if max_u_jobs > 0 {
        let current = state
            .input
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
    if max_jobs > 0 && state.input.jobs.len() >= max_jobs {
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
            if r.first == 0 {
                return Err(refuse(
                    RefusalKind::Invalid,
                    "job rejected: 0 is an invalid task id",
                ));
            }
            if r.last < r.first || r.step == 0 {
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
        failed_starts: Default::default(),
        version: 0,
    };
    // As SGE's qmaster, a user no queue instance admits is told so, and the
    // reservation's verdict follows in the same answer.
    if !state.user_may_use_some_queue(&job.owner.user, &job.owner.groups) {
        let mut lines = vec![format!(
            "warning: {}'s job is not allowed to run in any queue",
            job.owner.user
        )];
        let kind = match state.check_ar_job(&job, now, job.spec.verify) {
            Err(r) if r.message != "error: no suitable queues" => {
                lines.push(r.message);
                r.kind
            }
            _ => RefusalKind::Denied,
        };
        return Err(refuse(kind, lines.join("\n")));
    }
    state.check_ar_job(&job, now, job.spec.verify)?;
    Ok(job)
}

impl ClusterState {
    /// Slots in use per `queue@host`.
    pub(crate) fn used_slots(&self) -> HashMap<(String, String), u32> {
        let mut used = HashMap::new();
        for job in self.input.jobs.values() {
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
        self.input
            .queues
            .get(queue)
            .and_then(|q| q.attr("rerun"))
            .is_some_and(|a| queue::value_on_host(a, host, &groups).eq_ignore_ascii_case("TRUE"))
    }

    /// Queue settings a task runs under on a host (limits, shell, tmpdir, notify).
    pub fn queue_settings(&self, queue: &str, host: &str) -> Vec<(String, String)> {
        let Some(q) = self.input.queues.get(queue) else {
            return Vec::new();
        };
        let groups = self.groups_of(host);
        let mut settings: Vec<(String, String)> = [
            "h_rt",
            "s_rt",
            "h_cpu",
            "s_cpu",
            "h_vmem",
            "s_vmem",
            "shell",
            "tmpdir",
            "notify",
            "starter_method",
            "shell_start_mode",
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
        .collect();
        // The queue's prolog and epilog, else the cluster's (`queue_conf(5)`: the
        // queue's overrides the global one).
        let global = self.global();
        for k in ["prolog", "epilog"] {
            let queue_value = q
                .attr(k)
                .map(|a| queue::value_on_host(a, host, &groups).to_string())
                .filter(|v| !gantry_common::procedure::is_none(v));
            if let Some(v) = queue_value.or_else(|| {
                global
                    .get(k)
                    .filter(|v| !gantry_common::procedure::is_none(v))
                    .map(str::to_string)
            }) {
                settings.push((k.to_string(), v));
            }
        }
        settings
    }

    pub fn job_start(&self, d: &gantry_sched::Dispatch) -> Option<JobStart> {
        let job = self.input.jobs.get(&d.job_id)?;
        let mut queue_settings = self.queue_settings(&d.queue, &d.host);
        // The shells a job script's shell starts as a login shell of (SGE's
        // `login_shells`: it reads the system's and the owner's profile first).
        if let Some(shells) = self.global().get("login_shells") {
            queue_settings.push(("login_shells".to_string(), shells.to_string()));
        }
        // The execd sends the job's mail through the cluster's mailer.
        if !job.spec.mail_options.is_empty() && !job.spec.mail_options.contains('n') {
            if let Some(mailer) = self.global().get("mailer") {
                queue_settings.push(("mailer".to_string(), mailer.to_string()));
            }
        }
        // The granted parallel environment's start and stop procedures.
        if let Some(pe) = d.pe.as_ref().and_then(|p| self.input.pes.get(p)) {
            for (k, v) in [
                ("pe_start_proc_args", &pe.start_proc_args),
                ("pe_stop_proc_args", &pe.stop_proc_args),
            ] {
                if !gantry_common::procedure::is_none(v) {
                    queue_settings.push((k.to_string(), v.clone()));
                }
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
            session_key: matches!(job.spec.script, gantry_proto::JobScript::Interactive { .. })
                .then(|| self.session_key(job.id, d.task_id)),
            pe_task: None,
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
                .input
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
        let job = self.input.jobs.get(&report.job_id)?;
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
                let submitted = self.input.ars.get(&id).map_or(0, |a| a.submission_time);
                (id, submitted)
            }),
            granted_pe: match job.tasks.get(report.task_id) {
                Some(TaskState::Running { pe, .. } | TaskState::Deleting { pe, .. }) => pe.clone(),
                _ => None,
            },
            report: {
                let mut r = report.clone();
                // A job ended by a signal is "assumedly after job" in SGE's record.
                if r.failed == 0 && r.signal.is_some() {
                    r.failed = ShepherdFailure::AfterJob.code();
                }
                r
            },
            category: {
                let sets: Vec<_> = self.quota_sets.values().map(|(_, s)| s).collect();
                gantry_sched::category::accounting_category(&self.input.view(), &sets, job)
            },
        })
    }

    /// `qstat`'s rows: running tasks one by one, pending tasks of a job together.
    pub fn job_views(
        &self,
        users: &[String],
        started: &HashSet<(JobId, TaskId)>,
        now: i64,
    ) -> Vec<JobView> {
        self.jobs_image(now).views(users, started)
    }

    /// What `qstat`'s rows are made of, to make them on another thread; `now` (seconds)
    /// says which start times (`-a`) are still to come.
    pub fn jobs_image(&self, now: i64) -> JobsImage {
        JobsImage {
            now,
            jobs: self.input.jobs.clone(),
            suspended_queues: self.input.suspended_queues.clone(),
            threshold_suspended: self.input.threshold_suspended.clone(),
            priorities: self.live.priorities.clone(),
        }
    }
}

pub(crate) mod listing;
mod priority_rows;
pub use listing::{zombie_view, JobsImage, ListingAnswer, ListingCache, ListingForm};

/// The jobs a list of job ids and names (wildcards allowed) names, each once, in the
/// list's order (`qstat -j 12,myjob*`).
pub fn jobs_named(jobs: &gantry_sched::view::JobTable, refs: &[String]) -> Vec<JobId> {
    let mut out: Vec<JobId> = Vec::new();
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

/// Resolve `qdel` arguments to the tasks they name: `id`, `id.task`, `id.first-last`.
pub fn parse_job_ref(text: &str) -> Option<(JobId, Option<(TaskId, TaskId)>)> {
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
        gantry_sched::view::queue_hosts_of(&self.input.hostgroups, q)
    }
}

#[cfg(test)]
mod tests;
