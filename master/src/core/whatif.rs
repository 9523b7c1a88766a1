//! The HTTP API's what-ifs. Of a job: checked as a submission is (the same refusals in
//! the same words), then placed on what the cluster has free now, and verified against
//! the empty cluster (`-w v`), without a job number being used or anything changed. Of
//! quota sets: applied to a copy of the state (copy-on-write: what they do not touch
//! is shared), which is counted and scheduled as the real one would be.

use gantry_proto::{Caller, JobId, JobSpec, QuotaWhatIf, Refusal, WhatIf};

use super::decision::Context;
use super::state::ClusterState;

/// Would `spec`, submitted by `caller`, start now, where, and if not, why.
pub fn what_if(
    state: &ClusterState,
    ctx: &Context<'_>,
    caller: &Caller,
    spec: &JobSpec,
) -> Result<WhatIf, Refusal> {
    crate::core::jobs::check_submitter(state, caller)?;
    let groups = (ctx.caller_groups)();
    // The number the job would get: it is not taken.
    let id = state.next_job_id.max(JobId(1));
    let job =
        crate::core::jobs::validate_submission(state, caller, &groups, spec, id, ctx.now.secs())?;
    let requests = [&job.spec.hard_resources[..], &job.spec.soft_resources[..]];
    crate::core::jobs::check_hosts_resolve(state, &requests, ctx.resolves)?;
    let mut answer = WhatIf::default();
    match state
        .view()
        .placement_now(&job, &(ctx.dispatchable)(), ctx.now)
    {
        Ok(grants) => answer.starts_on = grants,
        Err(e) => answer.not_now = e.reasons(),
    }
    match state.could_ever_run(&job) {
        Ok(_) => answer.could_ever_run = true,
        Err(e) => answer.never = e.reasons(),
    }
    Ok(answer)
}

/// What the quota sets of `text` (`qconf -Arqs` form) would do: the running jobs past
/// one of their limits, and the pending tasks a cycle would start now, beside what it
/// would start under the sets in force.
pub fn what_if_quota(
    state: &ClusterState,
    ctx: &Context<'_>,
    text: &str,
) -> Result<QuotaWhatIf, Refusal> {
    let crate::core::admin::rqs::TrialSets {
        ops,
        replaced,
        added,
    } = state.trial_quota_sets(text)?;
    let mut trial = state.clone();
    trial.apply_all(&ops);
    trial.settle_quotas();
    let mut book = (*trial.input.quota_book).clone();
    let mut over = Vec::new();
    for job in trial.input.jobs.values() {
        let limits = book.over_limits(job);
        if !limits.is_empty() {
            over.push((job.id, limits));
        }
    }
    let connected = (ctx.dispatchable)();
    let starts = |s: &ClusterState| {
        s.schedule(ctx.now, &connected)
            .dispatches
            .into_iter()
            .map(|d| (d.job_id, d.task_id, format!("{}@{}", d.queue, d.host)))
            .collect()
    };
    // Under the sets in force: the state itself, copied only if its book waits to be
    // rebuilt (a configuration change not settled yet).
    let would_start_today = match state.input.quota_book.is_stale() {
        false => starts(state),
        true => {
            let mut today = state.clone();
            today.settle_quotas();
            starts(&today)
        }
    };
    Ok(QuotaWhatIf {
        replaced,
        added,
        over,
        would_start: starts(&trial),
        would_start_today,
    })
}
