//! The API's what-ifs: of a job that does not exist yet, and of quota sets not in
//! force yet. Nothing is submitted or changed.

use std::sync::Arc;

use axum::extract::State;
use axum::{Extension, Json};
use gantry_proto::{FromMaster, ToMaster};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{
    ask, caller, request_fault, spec_of, unexpected, ApiError, Body, ErrorBody, SubmitRequest,
};
use crate::shell::http::{HttpDoor, PeerOf};

/// A queue instance a job would start in.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Grant {
    pub queue: String,
    pub host: String,
    pub slots: u32,
}

/// Would a job start now, where, and if not, why.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WhatIfAnswer {
    /// `would start on node1 (all.q@node1, 1 slot)`, or `would not start now`, or
    /// `could never run`.
    pub message: String,
    pub would_start: bool,
    /// Where, the master queue first (empty when it would not start).
    pub starts_on: Vec<Grant>,
    /// Why it would not start now: every queue instance's reason, every quota rule or
    /// resource that stops it, as `qstat -j` would say for it.
    pub not_now: Vec<String>,
    /// Whether some queue instance could run it once what runs has ended (`-w v`).
    pub could_ever_run: bool,
    /// Why none ever could.
    pub never: Vec<String>,
}

/// What-if: would this job (qsub's options and script, as for a submission) start now,
/// where, and if not, why. Nothing is submitted.
#[utoipa::path(post, path = "/api/v1/whatif/job", request_body = SubmitRequest,
    responses((status = 200, body = WhatIfAnswer), (status = 400, body = ErrorBody)))]
pub(super) async fn what_if_job(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
    Body(request): Body<SubmitRequest>,
) -> Result<Json<WhatIfAnswer>, ApiError> {
    let caller = caller(&peer)?;
    let (spec, _) = spec_of(&caller, &request)?;
    let answer = ask(
        &door,
        caller,
        ToMaster::WhatIf {
            spec: Box::new(spec),
        },
    )
    .await
    .map_err(request_fault)?;
    let FromMaster::WhatIf(w) = answer else {
        return Err(unexpected(&answer));
    };
    let starts_on: Vec<Grant> = w
        .starts_on
        .into_iter()
        .map(|(queue, host, slots)| Grant { queue, host, slots })
        .collect();
    let message = match starts_on.first() {
        Some(first) => {
            let slots: u32 = starts_on.iter().map(|g| g.slots).sum();
            let instances: Vec<String> = starts_on
                .iter()
                .map(|g| format!("{}@{}", g.queue, g.host))
                .collect();
            format!(
                "would start on {} ({}, {slots} slot{})",
                first.host,
                instances.join(","),
                if slots == 1 { "" } else { "s" }
            )
        }
        None if w.could_ever_run => "would not start now".to_string(),
        None => "could never run".to_string(),
    };
    Ok(Json(WhatIfAnswer {
        message,
        would_start: !starts_on.is_empty(),
        starts_on,
        not_now: w.not_now,
        could_ever_run: w.could_ever_run,
        never: w.never,
    }))
}

/// Quota sets to try: `qconf -Arqs` text.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuotaTrial {
    /// One or more sets, `{ name ... limit ... }`, as `qconf -Arqs` reads them: each
    /// replaces the set of its name, or is added.
    pub rqs: String,
}

/// A running job past a limit of the sets tried.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct OverLimit {
    pub job_id: u64,
    /// `exceeds limit "user1/////" in rule "max_u_slots/1"`
    pub limits: Vec<String>,
}

/// A pending task a cycle would start.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WouldStart {
    pub job_id: u64,
    pub task_id: u32,
    /// Its master queue instance (`all.q@node1`).
    pub queue_instance: String,
}

/// What the cluster would do under the sets tried, on what runs and waits now.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct QuotaWhatIfAnswer {
    /// The sets tried that replace one of the same name.
    pub replaced: Vec<String>,
    /// The sets tried that are new.
    pub added: Vec<String>,
    /// The running jobs past one of their limits (nothing is taken from them: they go
    /// on, and what they hold counts against the rule).
    pub over: Vec<OverLimit>,
    /// The pending tasks a cycle would start now under the sets tried.
    pub would_start: Vec<WouldStart>,
    /// What it would start under the sets in force, to compare.
    pub would_start_today: Vec<WouldStart>,
}

fn starts(list: Vec<(gantry_proto::JobId, gantry_proto::TaskId, String)>) -> Vec<WouldStart> {
    list.into_iter()
        .map(|(job, task, queue_instance)| WouldStart {
            job_id: job.get(),
            task_id: task.get(),
            queue_instance,
        })
        .collect()
}

/// What-if of quota sets: checked as `qconf -Arqs` checks them, then counted against
/// what runs and scheduled against what waits, on a copy of the cluster's state.
#[utoipa::path(post, path = "/api/v1/whatif/quota", request_body = QuotaTrial,
    responses((status = 200, body = QuotaWhatIfAnswer), (status = 400, body = ErrorBody)))]
pub(super) async fn what_if_quota(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
    Body(trial): Body<QuotaTrial>,
) -> Result<Json<QuotaWhatIfAnswer>, ApiError> {
    let caller = caller(&peer)?;
    let answer = ask(&door, caller, ToMaster::WhatIfQuota { rqs: trial.rqs })
        .await
        .map_err(request_fault)?;
    let FromMaster::QuotaWhatIf(w) = answer else {
        return Err(unexpected(&answer));
    };
    Ok(Json(QuotaWhatIfAnswer {
        replaced: w.replaced,
        added: w.added,
        over: w
            .over
            .into_iter()
            .map(|(job, limits)| OverLimit {
                job_id: job.get(),
                limits,
            })
            .collect(),
        would_start: starts(w.would_start),
        would_start_today: starts(w.would_start_today),
    }))
}
