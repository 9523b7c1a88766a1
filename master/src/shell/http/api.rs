//! The REST API (`/api/v1/`) and `/metrics`: each handler turns its request into the
//! `ToMaster` request the matching `q*` command sends, asks the Cluster actor through
//! the one door ([`crate::shell::cluster::call`]) as the caller, and answers with the
//! same typed documents the commands print with `-json` ([`gantry_common::output`]).
//! The OpenAPI document is generated from these handlers (utoipa) and committed as
//! `docs/api/openapi.json`; a test keeps the two equal.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{FromRequest, Path, Query, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use gantry_common::output::{
    ArEntry, ArList, GroupList, HostList, JobEntry, JobList, QuotaRuleList,
};
use gantry_proto::{Caller, FromMaster, JobChanges, RefusalKind, ToMaster};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{HttpDoor, Peer, PeerOf};

mod whatif;
use crate::shell::cluster::{observe::ReadGauges, Answer};

/// The largest request body: what one request to the master may carry.
pub const MAX_BODY: usize = gantry_proto::frame::MAX_FRAME;

/// Why a request was refused: `{"error": "..."}`, with the status saying what kind.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    pub error: String,
}

#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(ErrorBody {
                error: self.message.trim_end().to_string(),
            }),
        )
            .into_response()
    }
}

/// A JSON body, refused with a JSON error saying what is wrong with it.
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(Body(v)),
            Err(rejection) => Err(ApiError::new(rejection.status(), rejection.body_text())),
        }
    }
}

/// The caller, or why the connection has none that may do this.
fn caller(peer: &PeerOf) -> Result<Caller, ApiError> {
    match peer {
        Ok(Peer::User(c)) => Ok(c.clone()),
        Ok(Peer::Anonymous { .. }) => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "a client certificate is required (gantry-master user-cert USER)",
        )),
        Err(why) => Err(ApiError::new(StatusCode::FORBIDDEN, why.0.clone())),
    }
}

/// The status of a refusal: by its kind, but a refusal of several items (`qdel`'s,
/// kind NotFound when nothing was done) that says the caller may not is forbidden.
fn refusal_status(r: &gantry_proto::Refusal) -> StatusCode {
    if r.message
        .contains("you do not have the necessary privileges")
    {
        StatusCode::FORBIDDEN
    } else {
        status_of(r.kind)
    }
}

fn status_of(kind: RefusalKind) -> StatusCode {
    match kind {
        RefusalKind::Denied | RefusalKind::OperatorRequired | RefusalKind::OwnerRequired => {
            StatusCode::FORBIDDEN
        }
        RefusalKind::NotFound => StatusCode::NOT_FOUND,
        RefusalKind::AlreadyExists => StatusCode::CONFLICT,
        RefusalKind::Invalid => StatusCode::BAD_REQUEST,
        RefusalKind::LimitReached => StatusCode::TOO_MANY_REQUESTS,
        RefusalKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// Ask the master as `caller`, through the door every `q*` command uses.
async fn ask(door: &HttpDoor, caller: Caller, request: ToMaster) -> Result<FromMaster, ApiError> {
    let started = Instant::now();
    let answer = crate::shell::cluster::call(&door.cluster, caller, request).await;
    door.metrics
        .request("http", started.elapsed().as_secs_f64());
    let answer = match answer {
        Answer::Message(m) => *m,
        Answer::Encoded(bytes) => {
            // A listing: decoded whole here (see `list_jobs` for its rows).
            return gantry_proto::decode::<FromMaster>(&bytes)
                .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()));
        }
        Answer::Sent => {
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the answer went elsewhere",
            ))
        }
    };
    match answer {
        // Counted among the refusals by the Cluster actor, which decided it.
        FromMaster::Refused(r) => Err(ApiError::new(refusal_status(&r), r.message)),
        other => Ok(other),
    }
}

fn unexpected(answer: &FromMaster) -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("unexpected answer from the master: {answer:?}"),
    )
}

/// What a change did, line by line (as the `q*` command prints it).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Messages {
    pub messages: Vec<String>,
}

/// A change's answer: every line, refused (4xx) if the master refused any item.
fn messages(answer: FromMaster) -> Result<Json<Messages>, ApiError> {
    match answer {
        FromMaster::Done { messages } => Ok(Json(Messages { messages })),
        FromMaster::Items(items) => {
            if let Some(refused) = items.iter().find(|i| i.refused) {
                let status = if refused.message.contains("does not exist") {
                    StatusCode::NOT_FOUND
                } else {
                    StatusCode::FORBIDDEN
                };
                let all: Vec<String> = items.into_iter().map(|i| i.message).collect();
                return Err(ApiError::new(status, all.join("\n")));
            }
            Ok(Json(Messages {
                messages: items.into_iter().map(|i| i.message).collect(),
            }))
        }
        other => Err(unexpected(&other)),
    }
}

/// A job's (or reservation's) number in a path: digits only (no name, no `..`).
fn job_number(text: &str) -> Result<String, ApiError> {
    if !text.is_empty() && text.len() <= 20 && text.bytes().all(|b| b.is_ascii_digit()) {
        Ok(text.to_string())
    } else {
        Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("\"{text}\" is no job number"),
        ))
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct JobsQuery {
    /// Only these users' jobs (comma-separated; `*` for every user, the default).
    pub user: Option<String>,
}

/// The jobs, as `qstat -u USER -json` lists them.
#[utoipa::path(get, path = "/api/v1/jobs", params(JobsQuery),
    responses((status = 200, body = JobList), (status = 401, body = ErrorBody)))]
async fn list_jobs(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
    query: Result<Query<JobsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<JobList>, ApiError> {
    let caller = caller(&peer)?;
    let Query(query) = query.map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.body_text()))?;
    let users: Vec<String> = query
        .user
        .unwrap_or_else(|| "*".to_string())
        .split(',')
        .filter(|u| !u.is_empty())
        .map(str::to_string)
        .collect();
    Ok(Json(JobList {
        jobs: job_entries(&door, caller, users).await?,
        queues: None,
    }))
}

/// The jobs of `users` as `qstat` lists them, each row decoded from the listing the
/// master encodes for the `q*` commands.
async fn job_entries(
    door: &HttpDoor,
    caller: Caller,
    users: Vec<String>,
) -> Result<Vec<JobEntry>, ApiError> {
    let started = Instant::now();
    let answer =
        crate::shell::cluster::call(&door.cluster, caller, ToMaster::ShowJobs { users }).await;
    door.metrics
        .request("http", started.elapsed().as_secs_f64());
    let bytes = match answer {
        Answer::Encoded(bytes) => bytes,
        Answer::Message(m) => match *m {
            FromMaster::Refused(r) => return Err(ApiError::new(refusal_status(&r), r.message)),
            FromMaster::Jobs(jobs) => gantry_proto::encode(&FromMaster::Jobs(jobs))
                .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?,
            other => return Err(unexpected(&other)),
        },
        Answer::Sent => return Err(unexpected(&FromMaster::Jobs(Vec::new()))),
    };
    let internal = |e: gantry_proto::ProtoError| {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
    };
    match gantry_proto::decode_jobs_answer(&bytes).map_err(internal)? {
        Ok(rows) => {
            let mut jobs = Vec::new();
            for row in rows {
                jobs.push(JobEntry::of(&row.map_err(internal)?));
            }
            Ok(jobs)
        }
        Err(FromMaster::Refused(r)) => Err(ApiError::new(refusal_status(&r), r.message)),
        Err(other) => Err(unexpected(&other)),
    }
}

/// A job as `qstat -j` shows it: its text, and the fields it is made of.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobShown {
    /// `qstat -j`'s text.
    pub text: String,
    /// The same as fields (`qstat -j -json`'s entry).
    pub detail: gantry_common::output::JobDetailEntry,
}

/// One job, as `qstat -j ID` shows it.
#[utoipa::path(get, path = "/api/v1/jobs/{id}", params(("id" = String, Path, description = "job number")),
    responses((status = 200, body = JobShown), (status = 404, body = ErrorBody)))]
async fn show_job(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
    Path(id): Path<String>,
) -> Result<Json<JobShown>, ApiError> {
    let caller = caller(&peer)?;
    let id = job_number(&id)?;
    match ask(
        &door,
        caller,
        ToMaster::JobDetails {
            ids: vec![id.clone()],
        },
    )
    .await?
    {
        FromMaster::JobDetails(details) if !details.is_empty() => Ok(Json(JobShown {
            text: gantry_client::qstat::render_job_details(&details),
            detail: gantry_common::output::JobDetailEntry::of(&details[0], &[]),
        })),
        FromMaster::JobDetails(_) => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("Following jobs do not exist: \n{id}"),
        )),
        other => Err(unexpected(&other)),
    }
}

/// A submission: qsub's options and the script.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitRequest {
    /// qsub's options as words (`["-N", "hello", "-l", "h_rt=60"]`); for a binary job
    /// (`-b y`) the command and its arguments after them. `-w v` or `-w p` verify the
    /// job without submitting it (what-if).
    #[serde(default)]
    pub args: Vec<String>,
    /// The job script (its `#$` lines are read as qsub reads them).
    pub script: Option<String>,
}

/// A submitted job (201), or a verification's verdict (200, `-w v`/`-w p`).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Submitted {
    pub job_id: Option<u64>,
    pub name: Option<String>,
    /// What qsub prints: `Your job 7 ("hello") has been submitted`, or the verdict.
    pub message: String,
    pub warnings: Vec<String>,
}

/// The job a submission describes, read by qsub's own parser as `caller` submitted it.
fn spec_of(
    caller: &Caller,
    request: &SubmitRequest,
) -> Result<(gantry_proto::JobSpec, gantry_proto::Verify), ApiError> {
    let home = nix::unistd::User::from_name(&caller.user)
        .ok()
        .flatten()
        .map(|u| u.dir.to_string_lossy().into_owned())
        .unwrap_or_else(|| "/".to_string());
    let origin = gantry_client::qsub::Origin {
        home,
        logname: caller.user.clone(),
        host: caller.host.clone(),
    };
    gantry_client::qsub::remote_spec(
        &request.args,
        request.script.as_deref().map(str::as_bytes),
        &origin,
    )
    .map_err(|out| {
        let text = if out.stderr.is_empty() {
            out.stdout
        } else {
            out.stderr
        };
        ApiError::new(StatusCode::BAD_REQUEST, text)
    })
}

/// What a job names and the cluster lacks (a resource, a queue) is a fault of the
/// request, not a missing resource of the API.
fn request_fault(mut e: ApiError) -> ApiError {
    if e.status == StatusCode::NOT_FOUND {
        e.status = StatusCode::BAD_REQUEST;
    }
    e
}

/// Submit a job as qsub does (the same checks and messages).
#[utoipa::path(post, path = "/api/v1/jobs", request_body = SubmitRequest,
    responses((status = 201, body = Submitted), (status = 200, body = Submitted),
        (status = 400, body = ErrorBody), (status = 413, body = ErrorBody)))]
async fn submit_job(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
    Body(request): Body<SubmitRequest>,
) -> Result<(StatusCode, Json<Submitted>), ApiError> {
    let caller = caller(&peer)?;
    let (spec, verify) = spec_of(&caller, &request)?;
    let request = ToMaster::Submit {
        spec: Box::new(spec),
        verify,
    };
    let answer = ask(&door, caller, request).await.map_err(request_fault)?;
    match answer {
        FromMaster::Submitted {
            job_id,
            name,
            array,
            warnings,
        } => {
            let message = match array {
                None => format!("Your job {job_id} (\"{name}\") has been submitted"),
                Some(r) => format!(
                    "Your job-array {job_id}.{}-{}:{} (\"{name}\") has been submitted",
                    r.first, r.last, r.step
                ),
            };
            Ok((
                StatusCode::CREATED,
                Json(Submitted {
                    job_id: Some(job_id.get()),
                    name: Some(name),
                    message,
                    warnings,
                }),
            ))
        }
        FromMaster::Verified { message } => Ok((
            StatusCode::OK,
            Json(Submitted {
                job_id: None,
                name: None,
                message,
                warnings: Vec::new(),
            }),
        )),
        other => Err(unexpected(&other)),
    }
}

/// Delete a job as `qdel ID` does.
#[utoipa::path(delete, path = "/api/v1/jobs/{id}", params(("id" = String, Path, description = "job number")),
    responses((status = 200, body = Messages), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn delete_job(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
    Path(id): Path<String>,
) -> Result<Json<Messages>, ApiError> {
    let caller = caller(&peer)?;
    let id = job_number(&id)?;
    let request = ToMaster::DeleteJobs {
        ids: vec![id],
        users: Vec::new(),
        force: false,
    };
    messages(ask(&door, caller, request).await?)
}

async fn change_hold(
    door: &HttpDoor,
    peer: &PeerOf,
    id: &str,
    hold: bool,
) -> Result<Json<Messages>, ApiError> {
    let caller = caller(peer)?;
    let id = job_number(id)?;
    let request = ToMaster::AlterJobs {
        ids: vec![id],
        changes: Box::new(JobChanges {
            hold: Some(hold),
            ..JobChanges::default()
        }),
    };
    messages(ask(door, caller, request).await?)
}

/// Put a user hold on a job as `qhold ID` does.
#[utoipa::path(post, path = "/api/v1/jobs/{id}/hold", params(("id" = String, Path, description = "job number")),
    responses((status = 200, body = Messages), (status = 403, body = ErrorBody)))]
async fn hold_job(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
    Path(id): Path<String>,
) -> Result<Json<Messages>, ApiError> {
    change_hold(&door, &peer, &id, true).await
}

/// Release a job's user hold as `qrls ID` does.
#[utoipa::path(post, path = "/api/v1/jobs/{id}/release", params(("id" = String, Path, description = "job number")),
    responses((status = 200, body = Messages), (status = 403, body = ErrorBody)))]
async fn release_job(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
    Path(id): Path<String>,
) -> Result<Json<Messages>, ApiError> {
    change_hold(&door, &peer, &id, false).await
}

/// The execution hosts with their load values, resources and queue instances, as
/// `qhost -F -q -json` shows them.
#[utoipa::path(get, path = "/api/v1/hosts",
    responses((status = 200, body = HostList), (status = 401, body = ErrorBody)))]
async fn list_hosts(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
) -> Result<Json<HostList>, ApiError> {
    let caller = caller(&peer)?;
    match ask(&door, caller, ToMaster::HostInfo).await? {
        FromMaster::Hosts(report) => {
            let view = gantry_client::qhost::View {
                full: true,
                attrs: None,
                hosts: None,
                queues: true,
                requests: Vec::new(),
                topology: true,
            };
            Ok(Json(gantry_client::qhost::host_list(
                &report,
                &view,
                |_| None,
            )))
        }
        other => Err(unexpected(&other)),
    }
}

/// The queue instances as `qstat -f -json` lists them.
#[utoipa::path(get, path = "/api/v1/queues",
    responses((status = 200, body = JobList), (status = 401, body = ErrorBody)))]
async fn list_queues(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
) -> Result<Json<JobList>, ApiError> {
    let caller = caller(&peer)?;
    let jobs = job_entries(&door, caller.clone(), vec!["*".to_string()]).await?;
    match ask(&door, caller, ToMaster::HostInfo).await? {
        FromMaster::Hosts(report) => Ok(Json(JobList {
            queues: Some(gantry_common::output::queue_instances(&report, &jobs, None)),
            jobs,
        })),
        other => Err(unexpected(&other)),
    }
}

/// The quota rules with what the running jobs use, every consumer's (`qquota -u '*'`).
#[utoipa::path(get, path = "/api/v1/quotas",
    responses((status = 200, body = QuotaRuleList), (status = 401, body = ErrorBody)))]
async fn list_quotas(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
) -> Result<Json<QuotaRuleList>, ApiError> {
    let caller = caller(&peer)?;
    let query = gantry_proto::QuotaQuery {
        users: vec!["*".to_string()],
        ..Default::default()
    };
    match ask(&door, caller, ToMaster::ShowQuotas(query)).await? {
        FromMaster::Quotas(rows) => Ok(Json(QuotaRuleList::of(&rows))),
        other => Err(unexpected(&other)),
    }
}

/// The group quota tree with each group's allocation (`qquota -g`).
#[utoipa::path(get, path = "/api/v1/groups",
    responses((status = 200, body = GroupList), (status = 401, body = ErrorBody)))]
async fn list_groups(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
) -> Result<Json<GroupList>, ApiError> {
    let caller = caller(&peer)?;
    match ask(&door, caller, ToMaster::ShowGroups).await? {
        FromMaster::Groups(rows) => Ok(Json(GroupList::of(&rows))),
        other => Err(unexpected(&other)),
    }
}

/// Every advance reservation (`qrstat -u '*'`).
#[utoipa::path(get, path = "/api/v1/ars",
    responses((status = 200, body = ArList), (status = 401, body = ErrorBody)))]
async fn list_ars(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
) -> Result<Json<ArList>, ApiError> {
    let caller = caller(&peer)?;
    let request = ToMaster::ShowArs {
        users: vec!["*".to_string()],
        ids: Vec::new(),
    };
    match ask(&door, caller, request).await? {
        FromMaster::Ars(ars) => Ok(Json(ArList {
            advance_reservations: ars.iter().map(ArEntry::of).collect(),
            unknown: Vec::new(),
        })),
        other => Err(unexpected(&other)),
    }
}

/// An advance reservation's request: qrsub's options as words.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ArRequest {
    /// `["-d", "1:0:0", "-pe", "smp", "2"]`
    pub args: Vec<String>,
}

/// Ask for an advance reservation as qrsub does (its checks and messages).
#[utoipa::path(post, path = "/api/v1/ars", request_body = ArRequest,
    responses((status = 201, body = Messages), (status = 400, body = ErrorBody)))]
async fn submit_ar(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
    Body(request): Body<ArRequest>,
) -> Result<(StatusCode, Json<Messages>), ApiError> {
    let caller = caller(&peer)?;
    let spec = gantry_client::qrsub::remote_spec(&request.args)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.text))?;
    let answer = ask(
        &door,
        caller,
        ToMaster::SubmitAr {
            spec: Box::new(spec),
        },
    )
    .await
    .map_err(request_fault)?;
    messages(answer).map(|m| (StatusCode::CREATED, m))
}

/// Delete an advance reservation as `qrdel ID` does.
#[utoipa::path(delete, path = "/api/v1/ars/{id}", params(("id" = String, Path, description = "advance reservation number")),
    responses((status = 200, body = Messages), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn delete_ar(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
    Path(id): Path<String>,
) -> Result<Json<Messages>, ApiError> {
    let caller = caller(&peer)?;
    let id = job_number(&id)?;
    messages(
        ask(
            &door,
            caller,
            ToMaster::DeleteArs {
                ids: vec![id],
                force: false,
            },
        )
        .await?,
    )
}

/// The metrics, in Prometheus' text format.
#[utoipa::path(get, path = "/metrics",
    responses((status = 200, body = String, content_type = "application/openmetrics-text"),
        (status = 401, body = ErrorBody)))]
async fn metrics(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
) -> Result<Response, ApiError> {
    match &peer {
        Ok(Peer::User(_)) | Ok(Peer::Anonymous { allowed: true }) => {}
        _ => {
            caller(&peer)?;
        }
    }
    let gauges = door
        .cluster
        .send(ReadGauges)
        .await
        .map_err(|e| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    let text = door.metrics.encode(&gauges);
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response())
}

/// Who reads the status page: the caller, or (where the administrator opened it) an
/// anonymous reader, who asks the master as `nobody`.
fn page_reader(door: &HttpDoor, peer: &PeerOf) -> Result<Caller, ApiError> {
    match peer {
        Ok(Peer::Anonymous { allowed: true }) => Ok(Caller {
            user: "nobody".to_string(),
            uid: 65534,
            gid: 65534,
            host: door.host.clone(),
        }),
        _ => caller(peer),
    }
}

fn html(text: String) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], text).into_response()
}

/// A page's refusal: the status the API would give, the message as a page.
fn page_or_error(page: Result<Response, ApiError>) -> Response {
    page.unwrap_or_else(|e| {
        (
            e.status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            super::page::error(&e.message),
        )
            .into_response()
    })
}

/// The status page.
async fn status_page(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
    filter: Result<Query<super::page::JobFilter>, axum::extract::rejection::QueryRejection>,
) -> Response {
    page_or_error(status_page_of(&door, &peer, filter).await)
}

async fn status_page_of(
    door: &HttpDoor,
    peer: &PeerOf,
    filter: Result<Query<super::page::JobFilter>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let reader = page_reader(door, peer)?;
    let Query(filter) =
        filter.map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.body_text()))?;
    let everyone = vec!["*".to_string()];
    let parts = super::page::Parts {
        hosts: ask(door, reader.clone(), ToMaster::HostInfo).await?,
        jobs: job_entries(door, reader.clone(), everyone.clone()).await?,
        quotas: ask(
            door,
            reader.clone(),
            ToMaster::ShowQuotas(gantry_proto::QuotaQuery {
                users: everyone.clone(),
                ..Default::default()
            }),
        )
        .await?,
        groups: ask(door, reader.clone(), ToMaster::ShowGroups).await?,
        ars: ask(
            door,
            reader,
            ToMaster::ShowArs {
                users: everyone,
                ids: Vec::new(),
            },
        )
        .await?,
        now: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
    };
    Ok(html(super::page::status(&parts, &filter)))
}

/// One job's page: its `qstat -j`, scheduling reasons included.
async fn job_page(
    State(door): State<Arc<HttpDoor>>,
    Extension(peer): Extension<PeerOf>,
    Path(id): Path<String>,
) -> Response {
    page_or_error(job_page_of(&door, &peer, &id).await)
}

async fn job_page_of(door: &HttpDoor, peer: &PeerOf, id: &str) -> Result<Response, ApiError> {
    let reader = page_reader(door, peer)?;
    let id = job_number(id)?;
    let text = match ask(
        door,
        reader,
        ToMaster::JobDetails {
            ids: vec![id.clone()],
        },
    )
    .await?
    {
        FromMaster::JobDetails(details) if !details.is_empty() => {
            gantry_client::qstat::render_job_details(&details)
        }
        FromMaster::JobDetails(_) => {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!("Following jobs do not exist: \n{id}"),
            ))
        }
        other => return Err(unexpected(&other)),
    };
    let body = format!("<pre id=\"qstat-j\">{}</pre>\n", super::page::esc(&text));
    Ok(html(super::page::frame(&format!("Job {id}"), &body)))
}

#[derive(OpenApi)]
#[openapi(info(
    title = "Gantry",
    description = "The Gantry master's HTTP API: jobs, hosts and metrics. A caller is \
        the user its client certificate (gantry-master user-cert) names, or on the \
        master's host the peer of the cell's http.sock."
))]
struct ApiDoc;

fn parts(door: Option<Arc<HttpDoor>>) -> (axum::Router<Arc<HttpDoor>>, utoipa::openapi::OpenApi) {
    let _ = door;
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(list_jobs, submit_job))
        .routes(routes!(show_job, delete_job))
        .routes(routes!(hold_job))
        .routes(routes!(release_job))
        .routes(routes!(whatif::what_if_job))
        .routes(routes!(whatif::what_if_quota))
        .routes(routes!(list_hosts))
        .routes(routes!(list_queues))
        .routes(routes!(list_quotas))
        .routes(routes!(list_groups))
        .routes(routes!(list_ars, submit_ar))
        .routes(routes!(delete_ar))
        .routes(routes!(metrics))
        .split_for_parts()
}

/// The OpenAPI document the handlers make.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let mut doc = parts(None).1;
    doc.info.version = env!("CARGO_PKG_VERSION").to_string();
    doc
}

/// Every route, with the OpenAPI document at `/api/v1/openapi.json`.
pub fn router(door: Arc<HttpDoor>) -> axum::Router {
    let (router, _) = parts(None);
    let doc = openapi();
    router
        .route("/", axum::routing::get(status_page))
        .route("/jobs/{id}", axum::routing::get(job_page))
        .route(
            "/api/v1/openapi.json",
            axum::routing::get(move || {
                let doc = doc.clone();
                async move { Json(doc) }
            }),
        )
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "no such resource") })
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .with_state(door)
}

#[cfg(test)]
mod tests {
    /// The committed document is what the handlers generate (regenerate it with
    /// `GANTRY_WRITE_OPENAPI=1 cargo test -p gantry-master openapi`).
    #[test]
    fn the_committed_openapi_document_is_the_generated_one() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/api/openapi.json");
        let generated = super::openapi().to_pretty_json().unwrap() + "\n";
        if std::env::var_os("GANTRY_WRITE_OPENAPI").is_some() {
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "docs/api/openapi.json is not what the code generates: run \
             GANTRY_WRITE_OPENAPI=1 cargo test -p gantry-master openapi"
        );
    }
}
