//! The HTTP API's what-if of a job: checked as a submission is (the same refusals in
//! the same words), then placed on what the cluster has free now, and verified against
//! the empty cluster (`-w v`), without a job number being used or anything changed.

use gantry_proto::{Caller, JobId, JobSpec, Refusal, WhatIf};

use super::door::Context;
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
