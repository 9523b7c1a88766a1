//! The one door into the master: every request a client can make, in one `match`,
//! decided against the state into one [`Decision`] (spool writes, effects, reply).
//! Configuration requests, job requests and submissions alike; the shell only commits
//! what comes out, carries out the effects and sends the reply.
//!
//! What the decision reads besides the state (the execds connected, the caller's Unix
//! groups, the clock) comes in a [`Context`] the shell fills in; nothing here reads a
//! file, a socket or a clock.

use gantry_proto::{
    AttrOp, Caller, FromMaster, ItemResult, JobId, JobScript, JobSpec, Refusal, RefusalKind,
    ToMaster, Verify,
};
use std::sync::Arc;

use gantry_common::job::TaskState;
use gantry_sched::Time;

use crate::core::decision::{Decision, Effect};
use crate::core::state::{refuse, ClusterState, Object, Op, Reply};

pub use crate::core::decision::Context;

impl Decision {
    /// A configuration request's outcome as a decision: its change is logged as the
    /// caller's once it is durable, and the caller told what it did.
    pub fn of_reply(caller: &Caller, decided: Result<Reply, Refusal>) -> Decision {
        match decided {
            Ok(Reply::Answer(a)) => Decision::answer(a),
            Ok(Reply::Change(change)) => {
                // A list of 200,000 attributes changes 200,000 things: the log names the
                // first few and counts the rest.
                const LOGGED: usize = 10;
                let mut line = change.messages[..change.messages.len().min(LOGGED)].join("; ");
                if change.messages.len() > LOGGED {
                    line.push_str(&format!(
                        "; and {} more changes",
                        change.messages.len() - LOGGED
                    ));
                }
                Decision {
                    ops: change.ops,
                    effects: vec![Effect::Log {
                        user: caller.user.clone(),
                        host: caller.host.clone(),
                        line,
                    }],
                    reply: FromMaster::Done {
                        messages: change.messages,
                    },
                }
            }
            Err(r) => Decision::refused(r),
        }
    }
}

/// `qstat -u`'s user list with `$user`, SGE's placeholder for the current user, replaced
/// by the caller's name.
pub fn users_with_caller(users: &[String], caller: &str) -> Vec<String> {
    users
        .iter()
        .map(|u| {
            if u == "$user" {
                caller.to_string()
            } else {
                u.clone()
            }
        })
        .collect()
}

/// How `qstat -j` tells a job's resource reservation: when and where its next task is
/// to start.
pub fn reservation_line(r: &gantry_sched::backfill::Reservation) -> String {
    let grants: Vec<String> = r
        .grants
        .iter()
        .map(|g| format!("{}@{}={}", g.queue, g.host, g.slots))
        .collect();
    format!(
        "reserved: task {} to start at {} in {}",
        r.task_id,
        gantry_common::dates::local_time(r.start.secs(), "%m/%d/%Y %H:%M:%S"),
        grants.join(",")
    )
}

/// Decide a client's request: a request that changes the state asks for a cycle.
pub fn decide(
    state: &ClusterState,
    ctx: &mut Context<'_>,
    caller: &Caller,
    request: ToMaster,
) -> Decision {
    decide_request(state, ctx, caller, request).asking_for_cycle()
}

/// The one `match`: it names every kind of request, so a new one does not compile until
/// it has a place.
fn decide_request(
    state: &ClusterState,
    ctx: &mut Context<'_>,
    caller: &Caller,
    request: ToMaster,
) -> Decision {
    let now = ctx.now;
    let who = format!("{}@{}", caller.user, caller.host);
    let manager = || state.manager_check(caller);
    let configured = |decided| Decision::of_reply(caller, decided);
    match request {
        // A submission is taken by value: its script (megabytes, maybe) is moved into
        // the spool write, never copied.
        ToMaster::Submit { spec, verify } => submit(state, ctx, caller, *spec, verify),
        ToMaster::ShowJobs { users } => {
            let users = users_with_caller(&users, &caller.user);
            Decision::answer(FromMaster::Jobs(state.job_views(
                &users,
                &state.live.started,
                now.secs(),
            )))
        }
        ToMaster::WhatIf { spec } => {
            match crate::core::whatif::what_if(state, ctx, caller, &spec) {
                Ok(answer) => Decision::answer(FromMaster::WhatIf(answer)),
                Err(refusal) => Decision::refused(refusal),
            }
        }
        ToMaster::WhatIfQuota { rqs } => match crate::core::whatif::what_if_quota(state, ctx, &rqs)
        {
            Ok(answer) => Decision::answer(FromMaster::QuotaWhatIf(answer)),
            Err(refusal) => Decision::refused(refusal),
        },
        ToMaster::SelectQueues(selection) => match state.select_queues(&selection, now) {
            Ok(selected) => Decision::answer(FromMaster::QueuesSelected(selected)),
            Err(refusal) => Decision::refused(refusal),
        },
        ToMaster::UnresolvedHosts { names } => Decision::answer(FromMaster::Names(
            names
                .into_iter()
                .filter(|n| !state.knows_host(n) && !(ctx.resolves)(n))
                .collect(),
        )),
        ToMaster::ShowTaskLines { users } => {
            let users = users_with_caller(&users, &caller.user);
            Decision::answer(FromMaster::TaskLines(crate::core::pe_tasks::task_lines(
                state, &users,
            )))
        }
        ToMaster::ShowPriorities { users } => {
            let users = users_with_caller(&users, &caller.user);
            Decision::answer(FromMaster::Priorities(state.priority_rows(&users)))
        }
        ToMaster::Attach { job_id } => attach(state, ctx, caller, job_id),
        ToMaster::InheritTask(request) => crate::core::pe_tasks::decide_inherit(
            state,
            ctx.connected,
            now.secs(),
            caller,
            *request,
        ),
        ToMaster::ShowShareTree => Decision::answer(FromMaster::ShareTreeNodes {
            now: now.secs(),
            nodes: state.share_tree_rows(now.secs()),
        }),
        ToMaster::ShowJobLines { users } => {
            let users = users_with_caller(&users, &caller.user);
            Decision::answer(FromMaster::JobLines(
                state
                    .jobs_image(now.secs())
                    .lines(&users, &state.live.started),
            ))
        }
        ToMaster::JobDetails { ids } => job_details(state, ctx, &ids),
        ToMaster::ShowQuotas(query) => Decision::answer(FromMaster::Quotas(state.quota_rows(
            &query,
            &caller.user,
            ctx.groups_of_name,
        ))),
        ToMaster::ShowGroups => {
            Decision::answer(FromMaster::Groups(match &state.live.group_allocation {
                // The last cycle's, while the tree is the one it allocated.
                Some((tree, allocation)) if Arc::ptr_eq(tree, &state.input.group_tree) => {
                    state.group_rows_of(allocation.clone())
                }
                _ => state.group_rows(),
            }))
        }
        ToMaster::SchedulingSummary => {
            let blocked = state.quota_blocked_jobs(&(ctx.dispatchable)(), now);
            let summary = if blocked.is_empty() {
                Vec::new()
            } else {
                vec![(
                    "Jobs dropped because of exceeding limit in rule".to_string(),
                    blocked,
                )]
            };
            Decision::answer(FromMaster::SchedulingSummary(summary))
        }
        ToMaster::ShowFinishedJobs { users } => {
            let users = users_with_caller(&users, &caller.user);
            let views = state
                .live
                .finished
                .iter()
                .filter(|v| users.is_empty() || users.iter().any(|u| u == "*" || u == &v.owner))
                .cloned()
                .collect();
            Decision::answer(FromMaster::Jobs(views))
        }
        ToMaster::SuspendJobs {
            ids,
            suspend,
            force,
        } => state.decide_suspend_jobs(caller, &ids, suspend, force),
        ToMaster::ChangeQueueInstances {
            targets,
            change,
            force,
        } if change != gantry_proto::QueueChange::ClearError => {
            let suspend = change == gantry_proto::QueueChange::Suspend;
            state.decide_suspend_queues(caller, &targets, suspend, force)
        }
        ToMaster::RescheduleJobs {
            targets,
            kind,
            force,
        } => state.decide_reschedule(caller, &targets, kind, force),
        ToMaster::ClearJobErrors { ids } => state.decide_clear_job_errors(caller, &ids),
        ToMaster::AlterJobs { ids, changes } => {
            if let Some(list) = &changes.hard_resources {
                if let Err(r) = crate::core::jobs::check_hosts_resolve(state, &[list], ctx.resolves)
                {
                    return Decision::refused(r);
                }
            }
            let c = &changes;
            let paths =
                [&c.stdout_path, &c.stderr_path, &c.stdin_path, &c.shell].map(|p| p.as_deref());
            if let Err(r) = crate::core::jobs::check_path_lists(state, &paths, ctx.resolves) {
                return Decision::refused(r);
            }
            let groups = (ctx.caller_groups)();
            let dispatchable = (ctx.dispatchable)();
            state.decide_alter_jobs(caller, &groups, &ids, &changes, &dispatchable, now)
        }
        ToMaster::SubmitAr { spec } => {
            if let Err(r) =
                crate::core::jobs::check_hosts_resolve(state, &[&spec.resources], ctx.resolves)
            {
                return Decision::refused(r);
            }
            let groups = (ctx.caller_groups)();
            state.decide_submit_ar(
                caller,
                &groups,
                &spec,
                &(ctx.dispatchable)(),
                now,
                ctx.ar_snapshot,
            )
        }
        ToMaster::ShowArs { users, ids } => {
            let users = users_with_caller(&users, &caller.user);
            Decision::answer(FromMaster::Ars(state.ar_list(
                &caller.user,
                &users,
                &ids,
                now,
            )))
        }
        ToMaster::DeleteArs { ids, force } => state.decide_delete_ars(caller, &ids, force),
        ToMaster::DeleteJobs { ids, users, force } => {
            state.decide_delete_jobs(caller, &ids, &users, force)
        }
        ToMaster::Accounting { job } => Decision {
            ops: Vec::new(),
            effects: vec![Effect::AnswerWithAccounting { job }],
            reply: FromMaster::Accounting(Vec::new()),
        },
        ToMaster::KillExecds { hosts, kill_jobs } => {
            kill_execds(state, ctx, caller, &hosts, kill_jobs)
        }
        ToMaster::Backup { path } => {
            if let Err(refusal) = state.manager_check(caller) {
                return Decision::refused(refusal);
            }
            Decision {
                ops: Vec::new(),
                effects: vec![Effect::AnswerWithBackup { path }],
                reply: FromMaster::Done {
                    messages: Vec::new(),
                },
            }
        }
        ToMaster::KillMaster => {
            if !state.acts_as_manager(caller) {
                return Decision::refused(Refusal {
                    kind: RefusalKind::Denied,
                    message: "shutdown requires manager privileges".into(),
                });
            }
            Decision {
                ops: Vec::new(),
                effects: vec![
                    Effect::Log {
                        user: caller.user.clone(),
                        host: caller.host.clone(),
                        line: "qconf -km: shutting down".into(),
                    },
                    Effect::ShutDownMaster,
                ],
                reply: FromMaster::Done {
                    messages: vec![format!("{}@{} kills qmaster", caller.user, caller.host)],
                },
            }
        }
        // The shell waits for the job's end before a wait would reach the door.
        ToMaster::WaitJob { .. } | ToMaster::WaitStart { .. } => Decision::refused(Refusal {
            kind: RefusalKind::Internal,
            message: "error: a wait for a job reached the master without its caller".into(),
        }),
        // Configuration requests and queue instance states: one line per kind, the
        // decisions in the files of `state/` by object kind and in `admin/`.
        ToMaster::HostInfo => configured(state.host_info(now)),
        ToMaster::ShowExecHostList => Decision::answer(FromMaster::Names(
            state.input.exechosts.keys().cloned().collect(),
        )),
        ToMaster::ShowExecHost { host } if host == "global" => {
            Decision::answer(FromMaster::ExecHost(state.global_exechost()))
        }
        ToMaster::ShowExecHost { host } => configured(state.show_exec_host(&host, now)),
        ToMaster::AddExecHost { text } => configured(state.add_exec_host(caller, &text)),
        ToMaster::DeleteExecHosts { hosts } => configured(state.delete_exec_hosts(caller, &hosts)),
        ToMaster::ShowConfig { name } => configured(state.show_config(&name)),
        ToMaster::ShowConfigList => configured(state.show_config_list()),
        ToMaster::AddConfig { name, text } => {
            configured(state.add_config(caller, &name, &text, ctx.resolves))
        }
        ToMaster::DeleteConfigs { names } => {
            configured(state.delete_configs(caller, &names, ctx.resolves))
        }
        ToMaster::ModifyConfig { name, text } => {
            configured(state.modify_config(caller, &name, &text))
        }
        ToMaster::ShowManagers => Decision::answer(FromMaster::Names(state.managers.clone())),
        ToMaster::AddManagers { users } => configured(state.add_managers(caller, &users)),
        ToMaster::DeleteManagers { users } => configured(state.delete_managers(caller, &users)),
        ToMaster::ShowOperators => Decision::answer(FromMaster::Names(state.operators.clone())),
        ToMaster::AddOperators { users } => configured(state.add_operators(caller, &users)),
        ToMaster::DeleteOperators { users } => configured(state.delete_operators(caller, &users)),
        ToMaster::ShowComplexes => {
            Decision::answer(FromMaster::Complexes((*state.input.complexes).clone()))
        }
        ToMaster::ShowQueueList => Decision::answer(FromMaster::Names(
            state.input.queues.keys().cloned().collect(),
        )),
        ToMaster::ShowQueue { name } => match state.input.queues.get(&name) {
            Some(q) => Decision::answer(FromMaster::Queue(q.clone())),
            None => Decision::refused(refuse(
                RefusalKind::NotFound,
                format!("No cluster queue or queue instance matches the phrase \"{name}\""),
            )),
        },
        ToMaster::ShowHostGroupList => Decision::answer(FromMaster::Names(
            state.input.hostgroups.keys().cloned().collect(),
        )),
        ToMaster::ShowHostGroup { name } => match state.input.hostgroups.get(&name) {
            Some(g) => Decision::answer(FromMaster::HostGroup(g.clone())),
            None => Decision::refused(refuse(
                RefusalKind::NotFound,
                format!("Host group \"{name}\" does not exist"),
            )),
        },
        ToMaster::AddHostGroup { text } => configured(state.put_hostgroup(caller, &text, true)),
        ToMaster::ModifyHostGroup { text } => configured(state.put_hostgroup(caller, &text, false)),
        ToMaster::DeleteHostGroup { name } => configured(state.delete_hostgroup(caller, &name)),
        ToMaster::ShowUserSetList => Decision::answer(FromMaster::Names(
            state.input.usersets.keys().cloned().collect(),
        )),
        ToMaster::ShowUserSets { names } => configured(state.show_usersets(&names)),
        ToMaster::AddUsersToSets { users, sets } => {
            configured(state.add_users_to_sets(caller, &users, &sets))
        }
        ToMaster::DeleteUsersFromSets { users, sets } => {
            configured(state.delete_users_from_sets(caller, &users, &sets))
        }
        ToMaster::DeleteUserSets { names } => configured(state.delete_usersets(caller, &names)),
        ToMaster::AddUserSet { text } => configured(state.put_userset(caller, &text, true)),
        ToMaster::ModifyUserSet { text } => configured(state.put_userset(caller, &text, false)),
        ToMaster::SetQueueState {
            targets,
            disable,
            force,
        } => configured(state.set_queue_state(caller, &targets, &disable, force)),
        ToMaster::ChangeQueueInstances { targets, force, .. } => {
            // The only change left by the arm above: clearing error states.
            configured(state.clear_queue_errors(caller, &targets, force))
        }
        // Objects edited as text (`qconf -a*/-m*/-d*/-s*/-M*` by kind).
        ToMaster::ShowObject { kind, name } => configured(state.show_object(kind, &name)),
        ToMaster::ShowObjectList { kind } => configured(state.show_object_list(kind)),
        ToMaster::AddObject { kind, text } => {
            configured(manager().and_then(|()| state.add_object(&who, kind, &text)))
        }
        ToMaster::ModifyObject { kind, text } => {
            configured(manager().and_then(|()| state.modify_object(&who, kind, &text)))
        }
        ToMaster::ClearUsage { users } => {
            configured(manager().and_then(|()| state.clear_usage(&who, &users, ctx.now.secs())))
        }
        ToMaster::DeleteObjects { kind, names } => {
            configured(manager().and_then(|()| state.delete_objects(&who, kind, &names)))
        }
        ToMaster::ReplaceObjects { kind, text } => {
            configured(manager().and_then(|()| state.replace_objects(&who, kind, &text)))
        }
        ToMaster::EditAttribute {
            op,
            object,
            attr,
            value,
            targets,
        } => configured(manager().and_then(|()| {
            state.edit_object_attribute(&who, op, &object, &attr, &value, &targets)
        })),
        ToMaster::ModifyAttribute {
            object,
            attr,
            value,
            targets,
        } => configured(manager().and_then(|()| {
            state.edit_attribute(&who, AttrOp::Modify, &object, &attr, &value, &targets)
        })),
    }
}

/// The second half of a large `qconf -Mc` ([`ToMaster::ModifyObject`] of the complex),
/// whose list the shell read and checked off the actor's thread
/// ([`crate::core::admin::prepare_complexes`]): decided against the state as it is now.
pub fn decide_prepared_complexes(
    state: &ClusterState,
    caller: &Caller,
    prepared: crate::core::admin::PreparedComplexes,
) -> Decision {
    let who = format!("{}@{}", caller.user, caller.host);
    let decided = state
        .manager_check(caller)
        .and_then(|()| state.replace_prepared_complexes(&who, prepared));
    Decision::of_reply(caller, decided).asking_for_cycle()
}

/// The global configuration's `enforce_user` at a submission: `true` refuses a user
/// without a user object (SGE's words); `auto` makes one (the `auto_user_*` values,
/// `delete_time` that many seconds from now, 0 for never), returned to be written with
/// the job; `false` neither.
fn user_object_for(
    state: &ClusterState,
    user: &str,
    now: Time,
) -> Result<Option<gantry_common::user::User>, Refusal> {
    if state.input.users.contains_key(user) {
        return Ok(None);
    }
    let global = state.global();
    let setting = |key: &str| global.get(key).unwrap_or("").to_string();
    match setting("enforce_user").to_ascii_lowercase().as_str() {
        "true" => Err(refuse(
            RefusalKind::Denied,
            format!("job rejected: the user \"{user}\" does not exist"),
        )),
        "auto" => {
            let number = |key: &str| setting(key).parse::<u32>().unwrap_or(0);
            let lifetime = number("auto_user_delete_time");
            let project = setting("auto_user_default_project");
            Ok(Some(gantry_common::user::User {
                name: user.to_string(),
                oticket: number("auto_user_oticket"),
                fshare: number("auto_user_fshare"),
                delete_time: if lifetime == 0 {
                    0
                } else {
                    u32::try_from(now.secs().max(0))
                        .unwrap_or(u32::MAX)
                        .saturating_add(lifetime)
                },
                default_project: (!project.is_empty() && !project.eq_ignore_ascii_case("none"))
                    .then_some(project),
            }))
        }
        _ => Ok(None),
    }
}

/// `qsub`: the job checked against the state and, unless only verified, its record,
/// the next job id and its script written together.
fn submit(
    state: &ClusterState,
    ctx: &mut Context<'_>,
    caller: &Caller,
    mut spec: JobSpec,
    verify: Verify,
) -> Decision {
    let id = state.next_job_id.max(JobId(1));
    // The job keeps how it was verified (`-w n|w|e`), as SGE's does.
    spec.verify = match verify {
        Verify::Error | Verify::Warning => verify,
        _ => Verify::None,
    };
    // The script leaves the specification before anything copies it.
    let script = match &mut spec.script {
        JobScript::Script { contents, .. } => {
            if let Err(r) = crate::core::jobs::check_script_size(state, contents.len()) {
                return Decision::refused(r);
            }
            if let Err(r) = crate::core::jobs::check_user_scripts_size(
                state,
                ctx.caller_script_bytes,
                contents.len(),
            ) {
                return Decision::refused(r);
            }
            Some(std::mem::take(contents))
        }
        JobScript::Binary { .. } | JobScript::Interactive { .. } => None,
    };
    let auto_user = match user_object_for(state, &caller.user, ctx.now) {
        Ok(made) => made,
        Err(r) => return Decision::refused(r),
    };
    if let Err(r) = crate::core::jobs::check_submitter(state, caller) {
        return Decision::refused(r);
    }
    // An empty path in a path list is refused before the job has a number, as SGE's.
    for text in [
        &spec.stdout_path,
        &spec.stderr_path,
        &spec.stdin_path,
        &spec.shell,
    ]
    .into_iter()
    .flatten()
    {
        if gantry_common::path_list::parse(text)
            == Err(gantry_common::path_list::PathListError::EmptyPath)
        {
            return Decision::refused(crate::core::state::refuse(
                gantry_proto::RefusalKind::Invalid,
                "paths may not be empty strings",
            ));
        }
    }
    // Past this point the job has its number, refused or only verified (as in SGE).
    let numbered = |reply: FromMaster| Decision {
        ops: vec![Op::NextJobId(id.next())],
        effects: Vec::new(),
        reply,
    };
    let groups = (ctx.caller_groups)();
    let job = match crate::core::jobs::validate_submission(
        state,
        caller,
        &groups,
        &spec,
        id,
        ctx.now.secs(),
    ) {
        Ok(j) => j,
        Err(r) => return numbered(FromMaster::Refused(r)),
    };
    let requests = [&job.spec.hard_resources[..], &job.spec.soft_resources[..]];
    let s = &job.spec;
    let paths = [&s.stdout_path, &s.stderr_path, &s.stdin_path, &s.shell].map(|p| p.as_deref());
    if let Err(r) = crate::core::jobs::check_hosts_resolve(state, &requests, ctx.resolves)
        .and_then(|()| crate::core::jobs::check_path_lists(state, &paths, ctx.resolves))
    {
        return numbered(FromMaster::Refused(r));
    }
    // `-w p` says how many slots a parallel job would get; `-w v` only that queues
    // were found, for a parallel job too (SGE 8.1.9).
    let found = |slots: u32, pe: bool| {
        if pe && verify == Verify::Poke {
            format!("verification: found possible assignment with {slots} slots")
        } else {
            "verification: found suitable queue(s)".to_string()
        }
    };
    // A verification that finds no queue is refused, with why each instance turned the
    // job away, as SGE's qmaster answers (`Unable to run job: Job 7 (-l ...) cannot
    // run at host "vm" because ...`, then `verification: no suitable queues`).
    let not_verified = |e: gantry_sched::decisions::CannotRun| {
        let mut lines: Vec<String> = Vec::new();
        for r in e.reasons() {
            let line = format!("Job {id} {r}");
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
        lines.push("verification: no suitable queues".to_string());
        FromMaster::Refused(Refusal {
            kind: RefusalKind::Invalid,
            message: lines.join("\n"),
        })
    };
    if verify == Verify::Poke {
        let reply = match state
            .view()
            .could_run_now(&job, &(ctx.dispatchable)(), ctx.now)
        {
            Ok(slots) => FromMaster::Verified {
                message: found(slots, job.spec.pe.is_some()),
            },
            Err(e) => not_verified(e),
        };
        return numbered(reply);
    }
    let possible = if verify == Verify::None {
        Ok(0)
    } else {
        state.could_ever_run(&job)
    };
    match verify {
        Verify::Verify => {
            return numbered(match possible {
                Ok(slots) => FromMaster::Verified {
                    message: found(slots, job.spec.pe.is_some()),
                },
                Err(e) => not_verified(e),
            })
        }
        Verify::Error if possible.is_err() => {
            return numbered(FromMaster::Refused(Refusal {
                kind: RefusalKind::Invalid,
                message: "error: no suitable queues".into(),
            }))
        }
        _ => {}
    }
    let warnings = if verify == Verify::Warning && possible.is_err() {
        vec!["warning: no suitable queues".to_string()]
    } else {
        Vec::new()
    };
    let reply = FromMaster::Submitted {
        job_id: id,
        name: job.spec.name.clone(),
        array: job.spec.array,
        warnings,
    };
    // The script goes to the spool first; the job's record holds none of it.
    let mut ops = Vec::with_capacity(3);
    if let Some(contents) = script {
        ops.push(Op::Script { job: id, contents });
    }
    ops.push(Op::NextJobId(id.next()));
    if let Some(user) = auto_user {
        ops.push(Op::Put(Object::User(user)));
    }
    ops.push(Op::Put(Object::Job(job)));
    Decision {
        ops,
        effects: Vec::new(),
        reply,
    }
}

/// `qstat -j`: the jobs found, each with why its pending tasks wait.
fn job_details(state: &ClusterState, ctx: &Context<'_>, ids: &[String]) -> Decision {
    let wanted = crate::core::jobs::jobs_named(&state.input.jobs, ids);
    // As SGE: the jobs found are shown; only when none is, the list is an error.
    if wanted.is_empty() {
        return Decision::refused(Refusal {
            kind: RefusalKind::NotFound,
            message: format!("Following jobs do not exist: \n{}", ids.join(", ")),
        });
    }
    let dispatchable = (ctx.dispatchable)();
    let mut details = Vec::new();
    for id in &wanted {
        let Some(job) = state.input.jobs.get(id) else {
            continue;
        };
        let checkpoint_attr = job
            .spec
            .ckpt
            .as_ref()
            .and_then(|n| state.ckpts.get(n))
            .map(|c| gantry_common::ckpt::effective_when(c, job.spec.ckpt_when.as_deref()));
        let mut reasons = state.explain(job, &dispatchable, ctx.now);
        if let Some(r) = state.live.reservations.get(&job.id) {
            reasons.push(reservation_line(r));
        } else if reasons.is_empty()
            && job.tasks.has_pending()
            && !state.live.reservations.is_empty()
        {
            // It fits, and waits: for the slots other jobs' reservations hold.
            reasons = state.view().held_back_by_reservations(
                job,
                &dispatchable,
                ctx.now,
                state.live.reservations.values(),
            );
        }
        details.push(gantry_proto::JobDetail {
            checkpoint_attr,
            version: job.version,
            predecessors: gantry_sched::view::predecessors(
                &state.input.jobs,
                &job.spec.hold_jids,
                job.id,
            ),
            successors: gantry_sched::view::successors(&state.input.jobs, job),
            override_tickets: state.input.job_otickets.get(&job.id).copied().unwrap_or(0),
            nurg: state
                .live
                .priorities
                .as_ref()
                .and_then(|p| p.jobs.get(&job.id))
                .map_or(0.0, |p| p.urgency.nurg),
            job_id: job.id,
            spec: job.spec.clone(),
            owner: job.owner.clone(),
            group: crate::core::jobs::group_name(job),
            submit_time: job.submit_time,
            reasons,
            // Tasks in error state, and those waiting to run again after a start that
            // failed on a host (SGE lists both).
            errors: {
                let mut errors: Vec<(gantry_proto::TaskId, String)> = job
                    .tasks
                    .placed()
                    .filter_map(|(t, s)| match s {
                        TaskState::Error { reason } => Some((t, reason.clone())),
                        _ => None,
                    })
                    .chain(
                        job.failed_starts
                            .iter()
                            .filter(|(t, _)| matches!(job.tasks.get(**t), Some(TaskState::Pending)))
                            .map(|(t, r)| (*t, r.clone())),
                    )
                    .collect();
                errors.sort_by_key(|(t, _)| *t);
                errors
            },
            running: job
                .tasks
                .placed()
                .filter_map(|(t, s)| match s {
                    TaskState::Running { host, .. } => Some(gantry_proto::RunningTask {
                        task_id: t,
                        host: host.clone(),
                        usage: state.live.task_usage.get(&(job.id, t)).cloned(),
                    }),
                    _ => None,
                })
                .collect(),
        });
    }
    Decision::answer(FromMaster::JobDetails(details))
}

/// `qconf -ke`, `-kej`: the execds named (or all) told to shut down.
fn kill_execds(
    state: &ClusterState,
    ctx: &Context<'_>,
    caller: &Caller,
    hosts: &[String],
    kill_jobs: bool,
) -> Decision {
    if !state.acts_as_manager(caller) {
        return Decision::refused(Refusal {
            kind: RefusalKind::Denied,
            message: "shutting down execd requires manager privileges".into(),
        });
    }
    let action = if kill_jobs {
        "shutdown and kill"
    } else {
        "shutdown"
    };
    let all = hosts.is_empty() || hosts.iter().any(|h| h == "all");
    let targets: Vec<(String, bool)> = if all {
        state
            .input
            .exechosts
            .keys()
            .map(|h| (h.clone(), false))
            .collect()
    } else {
        hosts.iter().map(|h| (h.clone(), true)).collect()
    };
    let mut items = Vec::new();
    let mut effects = Vec::new();
    for (named, forced) in targets {
        let Some(host) = state
            .input
            .exechosts
            .keys()
            .find(|h| h.eq_ignore_ascii_case(&named))
            .cloned()
        else {
            items.push(ItemResult {
                message: format!("\"{named}\" is not an execution host"),
                refused: true,
            });
            continue;
        };
        if (ctx.connected)(&host) {
            effects.push(Effect::Log {
                user: caller.user.clone(),
                host: caller.host.clone(),
                line: format!("sent {action} notification to {host}"),
            });
            effects.push(Effect::StopExecd {
                host: host.clone(),
                kill_jobs,
            });
            items.push(ItemResult {
                message: format!("sent {action} notification to  execd host {host}"),
                refused: false,
            });
        } else if !forced {
            items.push(ItemResult {
                message: format!("no execd known on host {host}"),
                refused: true,
            });
        } else {
            items.push(ItemResult {
                message: format!(
                    "failed sending {action} notification to unknown execd host {host}"
                ),
                refused: true,
            });
        }
    }
    if items.is_empty() {
        items.push(ItemResult {
            message: "there are no execution hosts to kill".into(),
            refused: false,
        });
    }
    Decision {
        ops: Vec::new(),
        effects,
        reply: FromMaster::Items(items),
    }
}

/// The door as the tests of configuration requests ask it: a decision turned back into
/// what it answers ([`Reply::Answer`]) or changes ([`Reply::Change`]), with an empty
/// context (no execd connected, no Unix groups).
#[cfg(test)]
pub(crate) trait Door {
    fn handle(&self, caller: &Caller, request: &ToMaster, now: Time) -> Result<Reply, Refusal>;
}

#[cfg(test)]
impl Door for ClusterState {
    fn handle(&self, caller: &Caller, request: &ToMaster, now: Time) -> Result<Reply, Refusal> {
        let mut kept = gantry_sched::KeptSnapshot::default();
        let mut ctx = Context {
            now,
            dispatchable: &std::collections::HashSet::new,
            connected: &|_| false,
            caller_groups: &Vec::new,
            groups_of_name: &|_| Vec::new(),
            // Only the machine's own name resolves, as a cell's tests want it.
            resolves: &|h| h == "localhost",
            caller_script_bytes: 0,
            ar_snapshot: &mut kept,
        };
        let decision = decide_request(self, &mut ctx, caller, request.clone());
        let changed = !decision.ops.is_empty()
            || decision
                .effects
                .iter()
                .any(|e| matches!(e, Effect::Log { .. }));
        match decision.reply {
            FromMaster::Refused(r) => Err(r),
            FromMaster::Done { messages } if changed => {
                Ok(Reply::Change(crate::core::state::Change {
                    ops: decision.ops,
                    messages,
                }))
            }
            reply => Ok(Reply::Answer(reply)),
        }
    }
}

/// `qrsh`/`qlogin` joining its job's session: the job's owner only, an interactive job
/// whose task runs on a connected host. The answer is for the shell, which joins the
/// session on the task's execd ([`FromMaster::SessionGranted`]).
fn attach(state: &ClusterState, ctx: &Context<'_>, caller: &Caller, job_id: JobId) -> Decision {
    let refused = |kind, message: String| Decision::refused(Refusal { kind, message });
    let Some(job) = state.input.jobs.get(&job_id) else {
        return refused(
            RefusalKind::NotFound,
            format!("denied: job \"{job_id}\" does not exist"),
        );
    };
    if job.owner.user != caller.user {
        return refused(
            RefusalKind::Denied,
            format!(
                "denied: job \"{job_id}\" belongs to user \"{}\": only its owner joins its session",
                job.owner.user
            ),
        );
    }
    if !matches!(job.spec.script, gantry_proto::JobScript::Interactive { .. }) {
        return refused(
            RefusalKind::Invalid,
            format!("denied: job \"{job_id}\" is not an interactive job"),
        );
    }
    let running = job.tasks.placed().find_map(|(task, s)| match s {
        gantry_common::tasks::TaskState::Running { host, .. } => Some((task, host.clone())),
        _ => None,
    });
    let Some((task_id, host)) = running else {
        return refused(
            RefusalKind::Invalid,
            format!("denied: job \"{job_id}\" is not running"),
        );
    };
    if !(ctx.connected)(&host) {
        return refused(
            RefusalKind::Internal,
            format!("error: the execd on \"{host}\" is not connected to the master"),
        );
    }
    Decision::answer(FromMaster::SessionGranted {
        job_id,
        task_id,
        pe_task: None,
        key: state.session_key(job_id, task_id),
        host,
    })
}
