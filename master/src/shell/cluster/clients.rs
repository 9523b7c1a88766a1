//! Client requests: the router that sends each kind where it is decided, `qsub -sync
//! y`'s wait, and the large complex edit read off the actor's thread.

use gantry_proto::{Caller, FromMaster, JobId, Refusal, RefusalKind, TaskId, ToMaster};
use std::collections::HashSet;

use actix::prelude::*;
use tracing::{error, info, warn};

use crate::core::jobs::{JobsImage, ListingAnswer, ListingForm};

use super::*;

/// A client request with the caller established by the endpoint.
#[derive(Message)]
#[rtype(result = "FromMaster")]
pub struct ClientCall {
    pub caller: Caller,
    pub request: ToMaster,
}

impl Handler<ClientCall> for Cluster {
    type Result = MessageResult<ClientCall>;

    fn handle(&mut self, msg: ClientCall, _: &mut Self::Context) -> Self::Result {
        let started = std::time::Instant::now();
        let kind: &'static str = (&msg.request).into();
        let answer = match self.over_rate(&msg.caller) {
            Some(refused) => refused,
            None => self.route(&msg.caller, msg.request),
        };
        self.metrics
            .decided(kind, started.elapsed().as_secs_f64(), &answer);
        MessageResult(answer)
    }
}

impl Cluster {
    /// `MAX_REQUESTS_PER_USER` in `qmaster_params`: the refusal of a request over the
    /// caller's limit in this second (managers are never limited).
    fn over_rate(&mut self, caller: &Caller) -> Option<FromMaster> {
        let global = self.state.global();
        let limit =
            super::rate::max_requests_per_user(global.get("qmaster_params").unwrap_or("none"))?;
        if self.state.is_manager(&caller.user) {
            return None;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if self.request_rate.admit(&caller.user, now, limit) {
            return None;
        }
        Some(FromMaster::Refused(crate::core::state::refuse(
            gantry_proto::RefusalKind::Denied,
            format!(
                "denied: user \"{}\" sent more than {limit} requests in one second (MAX_REQUESTS_PER_USER in qmaster_params): try again later",
                caller.user
            ),
        )))
    }

    /// Every request through the one door ([`crate::core::door::decide`]): decided
    /// against the state with what the shell knows besides, then carried out (its writes
    /// committed, its effects done) and answered.
    fn route(&mut self, caller: &Caller, request: ToMaster) -> FromMaster {
        let now = self.now();
        let sessions = &self.sessions;
        let dispatchable = || dispatchable_of(sessions);
        let connected = |host: &str| sessions.contains_key(host);
        let unix_groups = &self.unix_groups;
        let caller_groups = || unix_groups.of(&caller.user, caller.gid);
        let groups_of_name = |user: &str| unix_groups.of_name(user);
        let host_names = &self.host_names;
        let resolves = |host: &str| host_names.resolves(host);
        let mut ctx = crate::core::door::Context {
            now,
            dispatchable: &dispatchable,
            connected: &connected,
            caller_groups: &caller_groups,
            groups_of_name: &groups_of_name,
            resolves: &resolves,
            caller_script_bytes: self.script_bytes.of_user(caller.uid),
            ar_snapshot: &mut self.ar_snapshot,
        };
        let decision = crate::core::door::decide(&self.state, &mut ctx, caller, request);
        self.carry_out(decision)
    }
}

/// `qsub -sync y`: answer now if the job has ended, else when it does.
#[derive(Message)]
#[rtype(result = "()")]
pub struct WaitJob {
    pub job_id: JobId,
    pub reply: tokio::sync::oneshot::Sender<FromMaster>,
}

impl Handler<WaitJob> for Cluster {
    type Result = ();

    fn handle(&mut self, msg: WaitJob, _: &mut Self::Context) {
        if self.state.input.jobs.contains_key(&msg.job_id) {
            self.waiters.entry(msg.job_id).or_default().push(msg.reply);
            return;
        }
        let answer = self.job_outcome(msg.job_id).unwrap_or_else(|| {
            FromMaster::Refused(Refusal {
                kind: RefusalKind::NotFound,
                message: format!("denied: job \"{}\" does not exist", msg.job_id),
            })
        });
        let _ = msg.reply.send(answer);
    }
}

/// The QUIC connection of a host's execd, to open a stream on (an interactive
/// session).
#[derive(Message)]
#[rtype(result = "Option<quinn::Connection>")]
pub struct ExecdConnection {
    pub host: String,
}

impl Handler<ExecdConnection> for Cluster {
    type Result = Option<quinn::Connection>;

    fn handle(&mut self, msg: ExecdConnection, _: &mut Self::Context) -> Self::Result {
        self.sessions.get(&msg.host).and_then(|s| s.conn.clone())
    }
}

/// A joined interactive session: the stream to the task's execd (its shepherd at the
/// other end), and the answer for the command.
pub struct JoinedSession {
    pub send: quinn::SendStream,
    pub recv: quinn::RecvStream,
    pub answer: FromMaster,
    /// A task `qrsh -inherit` started: (job, task, number).
    pub pe_task: Option<(JobId, TaskId, u32)>,
}

/// A task `qrsh -inherit` started has sent its exit status: its slot is free for the
/// job's next task now (SGE reuses the slot of a task whose shepherd is exiting), not
/// only once its report is in, so that the caller's next `qrsh -inherit` finds it.
#[derive(Message)]
#[rtype(result = "()")]
pub struct PeTaskExiting(pub (JobId, TaskId, u32));

impl Handler<PeTaskExiting> for Cluster {
    type Result = ();

    fn handle(&mut self, msg: PeTaskExiting, _: &mut Self::Context) {
        let (job, task, n) = msg.0;
        let running = self
            .state
            .pe_tasks
            .get(&(job, task))
            .is_some_and(|p| p.running.contains_key(&n));
        if running {
            self.state.live.pe_exiting.insert(msg.0);
        }
    }
}

/// Carry a joined session between the command's side (`local`) and the task's until
/// both ends have closed. A task `qrsh -inherit` started is read frame by frame on its
/// way out: its exit status is passed on once the master has freed its slot.
pub async fn carry_session<L>(cluster: &Addr<Cluster>, joined: JoinedSession, local: &mut L)
where
    L: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::AsyncWriteExt;
    let JoinedSession {
        mut send,
        mut recv,
        pe_task,
        ..
    } = joined;
    let Some(key) = pe_task else {
        let mut remote = tokio::io::join(recv, send);
        let _ = gantry_net::transport::splice(local, &mut remote).await;
        let (_, mut send) = remote.into_inner();
        let _ = send.finish();
        return;
    };
    let (mut from_command, mut to_command) = tokio::io::split(local);
    let up = async {
        let _ = tokio::io::copy(&mut from_command, &mut send).await;
        let _ = send.finish();
    };
    let down = async {
        while let Ok(Some(bytes)) = gantry_net::transport::read_frame_bytes(&mut recv).await {
            let ending = matches!(
                gantry_proto::decode::<gantry_proto::SessionFrame>(&bytes),
                Ok(gantry_proto::SessionFrame::Exit { .. } | gantry_proto::SessionFrame::Failed(_))
            );
            if ending {
                let _ = cluster.send(PeTaskExiting(key)).await;
            }
            if gantry_net::transport::write_encoded_frame(&mut to_command, &bytes)
                .await
                .is_err()
            {
                break;
            }
        }
        let _ = to_command.shutdown().await;
    };
    tokio::join!(up, down);
}

/// `qrsh`/`qlogin` joining its job's session, or `qrsh -inherit` starting a task in
/// its job: decided by the door (the owner, an interactive job that runs; a parallel
/// job with a slot free on the host), then a stream opened on the task's execd's
/// connection with the task's key. Else the refusal to answer.
pub async fn join_session(
    cluster: &Addr<Cluster>,
    caller: Caller,
    request: ToMaster,
) -> Result<JoinedSession, FromMaster> {
    let granted = call_message(cluster, caller, request).await;
    let FromMaster::SessionGranted {
        job_id,
        task_id,
        pe_task,
        host,
        key,
    } = granted
    else {
        return Err(granted);
    };
    let lost = |why: String| {
        FromMaster::Refused(Refusal {
            kind: RefusalKind::Internal,
            message: format!(
                "error: cannot reach the session of job {job_id} on \"{host}\": {why}"
            ),
        })
    };
    let conn = cluster
        .send(ExecdConnection { host: host.clone() })
        .await
        .ok()
        .flatten()
        .ok_or_else(|| lost("its execd is not connected".into()))?;
    let (mut send, recv) = conn.open_bi().await.map_err(|e| lost(e.to_string()))?;
    gantry_net::transport::write_frame(
        &mut send,
        &gantry_proto::TaskAttach {
            job_id,
            task_id,
            pe_task,
            key,
        },
    )
    .await
    .map_err(|e| lost(e.to_string()))?;
    Ok(JoinedSession {
        send,
        recv,
        answer: FromMaster::Attached {
            job_id,
            task_id,
            host,
        },
        pe_task: pe_task.map(|n| (job_id, task_id, n)),
    })
}

/// The server JSV's settings (`jsv_url`, `jsv_allowed_mod`), when one is configured.
#[derive(Message)]
#[rtype(result = "Option<(String, String)>")]
pub struct JsvSettings;

impl Handler<JsvSettings> for Cluster {
    type Result = Option<(String, String)>;

    fn handle(&mut self, _: JsvSettings, _: &mut Self::Context) -> Self::Result {
        let global = self.state.global();
        let url = global.get("jsv_url")?.trim().to_string();
        if url.is_empty() || url.eq_ignore_ascii_case("none") {
            return None;
        }
        let allowed = global.get("jsv_allowed_mod").unwrap_or("").to_string();
        Some((url, allowed))
    }
}

/// The server JSV (`jsv_url`), run on a submission before the master takes it, off the
/// actor's thread: the job as it accepted or corrected it, or the refusal. A correction
/// may change only what `jsv_allowed_mod` lists; its `LOG` lines go to the master's log.
async fn server_jsv(
    cluster: &Addr<Cluster>,
    caller: &Caller,
    spec: gantry_proto::JobSpec,
) -> Result<gantry_proto::JobSpec, Refusal> {
    use gantry_common::jsv;
    let Ok(Some((url, allowed))) = cluster.send(JsvSettings).await else {
        return Ok(spec);
    };
    let rejected = |message: String| Refusal {
        kind: RefusalKind::Denied,
        message,
    };
    let user = caller.user.clone();
    let caller = caller.clone();
    let verdict = tokio::task::spawn_blocking(move || {
        let url = jsv::parse_url(&url, jsv::Context::Master)?;
        let run_as = match &url.user {
            Some(name) => match nix::unistd::User::from_name(name) {
                Ok(Some(u)) => Some((u.uid.as_raw(), u.gid.as_raw())),
                _ => {
                    return Err(format!(
                        "user \"{name}\" specified in JSV URL does not exist"
                    ))
                }
            },
            None => None,
        };
        let group = nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(caller.gid))
            .ok()
            .flatten()
            .map_or_else(|| caller.gid.to_string(), |g| g.name);
        let who = jsv::Submitter {
            user: caller.user.clone(),
            group,
        };
        let mut corrected = spec.clone();
        let verdict = jsv::verify(
            &url.path,
            run_as,
            &mut corrected,
            &who,
            jsv::Context::Master,
        );
        let changed = jsv::changed_parameters(&spec, &corrected, &who, jsv::Context::Master);
        Ok((verdict, corrected, changed))
    })
    .await
    .map_err(|e| rejected(format!("the server JSV could not be run: {e}")))?
    .map_err(|e| {
        error!("server JSV: {e}");
        rejected(e)
    })?;
    let (verdict, corrected, changed) = verdict;
    let log = match &verdict {
        jsv::Verdict::Accepted { log } | jsv::Verdict::Rejected { log, .. } => log,
    };
    for (level, text) in log {
        match level.as_str() {
            "ERROR" => error!(user = %user, "JSV: {text}"),
            "WARNING" => warn!(user = %user, "JSV: {text}"),
            _ => info!(user = %user, "JSV: {text}"),
        }
    }
    match verdict {
        jsv::Verdict::Rejected { message, .. } => {
            info!(user = %user, "server JSV rejected a job: {message}");
            Err(rejected(message))
        }
        jsv::Verdict::Accepted { .. } => {
            let allowed: Vec<&str> = allowed
                .split(',')
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .collect();
            let refused: Vec<&str> = changed
                .iter()
                .map(String::as_str)
                .filter(|c| !allowed.contains(c))
                .collect();
            if !refused.is_empty() {
                return Err(rejected(format!(
                    "rejected due to jsv_allowed_mod configuration which does not allow: {}",
                    refused.join(",")
                )));
            }
            Ok(corrected)
        }
    }
}

/// `qsub -now y`: answer now if the job has started (or ended), else when it starts or
/// is removed.
#[derive(Message)]
#[rtype(result = "()")]
pub struct WaitStart {
    pub job_id: JobId,
    pub reply: tokio::sync::oneshot::Sender<FromMaster>,
}

impl Handler<WaitStart> for Cluster {
    type Result = ();

    fn handle(&mut self, msg: WaitStart, _: &mut Self::Context) {
        let answer = match self.state.input.jobs.get(&msg.job_id) {
            Some(job) if job.tasks.holding_slots() == 0 && job.tasks.has_pending() => {
                self.start_waiters
                    .entry(msg.job_id)
                    .or_default()
                    .push(msg.reply);
                return;
            }
            Some(_) => FromMaster::JobStarted { job_id: msg.job_id },
            // Gone: it ran if it left an accounting record, else it never started.
            None => match self.job_outcome(msg.job_id) {
                Some(_) => FromMaster::JobStarted { job_id: msg.job_id },
                None => not_scheduled(),
            },
        };
        let _ = msg.reply.send(answer);
    }
}

/// What `qsub -now y` is told when its job did not start at once (SGE's words).
pub fn not_scheduled() -> FromMaster {
    FromMaster::Refused(Refusal {
        kind: RefusalKind::Denied,
        message: "Your qsub request could not be scheduled, try again later.".into(),
    })
}

/// The answer to a client's request: a message, or a message encoded already (a
/// `qstat` listing, encoded on the thread that made it rather than the one writing it).
#[derive(Debug)]
pub enum Answer {
    Message(Box<FromMaster>),
    Encoded(Vec<u8>),
    /// Written to the client already (see [`list_jobs_writing`]).
    Sent,
}

/// Writes a listing's encoded answer (or why it could not be made) to its client, on
/// the blocking thread that made it.
pub type ListingWriter = super::listings::Deliver;

/// A client request, whatever its kind: waits are answered when the job ends.
pub async fn call(cluster: &Addr<Cluster>, caller: Caller, request: ToMaster) -> Answer {
    if let Some((users, form)) = ListingForm::asked(&request) {
        return list_jobs(cluster, caller, users, form, None).await;
    }
    Answer::Message(Box::new(call_message(cluster, caller, request).await))
}

/// `qstat` for a client on the master's host: its listing is written by the blocking
/// thread that made it (`write`), not handed back to the thread that runs the actor,
/// which then neither wakes for it nor feeds an answer of a megabyte to the socket piece
/// by piece between other clients' requests. [`Answer::Sent`] when it was written;
/// else the answer to send (a refusal).
pub async fn list_jobs_writing(
    cluster: &Addr<Cluster>,
    caller: Caller,
    users: Vec<String>,
    form: ListingForm,
    write: ListingWriter,
) -> Answer {
    list_jobs(cluster, caller, users, form, Some(write)).await
}

async fn list_jobs(
    cluster: &Addr<Cluster>,
    caller: Caller,
    users: Vec<String>,
    form: ListingForm,
    write: Option<ListingWriter>,
) -> Answer {
    match show_jobs_off_thread(cluster, caller, users, form, write).await {
        Some(answer) => answer,
        None => Answer::Message(Box::new(shutting_down())),
    }
}

fn shutting_down() -> FromMaster {
    FromMaster::Refused(Refusal {
        kind: RefusalKind::Internal,
        message: "error: the master is shutting down".into(),
    })
}

/// Any request but `qstat`'s.
async fn call_message(cluster: &Addr<Cluster>, caller: Caller, request: ToMaster) -> FromMaster {
    let gone = shutting_down;
    if let ToMaster::WaitJob { job_id } = request {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if cluster.send(WaitJob { job_id, reply: tx }).await.is_err() {
            return gone();
        }
        return rx.await.unwrap_or_else(|_| gone());
    }
    if let ToMaster::WaitStart { job_id } = request {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if cluster.send(WaitStart { job_id, reply: tx }).await.is_err() {
            return gone();
        }
        return rx.await.unwrap_or_else(|_| gone());
    }
    let request = match request {
        ToMaster::Submit { spec, verify } => match server_jsv(cluster, &caller, *spec).await {
            Ok(spec) => ToMaster::Submit {
                spec: Box::new(spec),
                verify,
            },
            Err(refusal) => return FromMaster::Refused(refusal),
        },
        ToMaster::ModifyObject {
            kind: gantry_proto::ObjectKind::Complex,
            text,
        } if text.len() > LARGE_EDIT => {
            return replace_complexes_off_thread(cluster, caller, text)
                .await
                .unwrap_or_else(gone)
        }
        other => other,
    };
    cluster
        .send(ClientCall { caller, request })
        .await
        .unwrap_or_else(|_| gone())
}

/// `qstat`'s jobs, wanted off the actor's thread.
#[derive(Message)]
#[rtype(result = "Result<(u64, JobsImage, HashSet<(JobId, TaskId)>), FromMaster>")]
struct JobsForViews {
    caller: Caller,
}

impl Handler<JobsForViews> for Cluster {
    type Result = MessageResult<JobsForViews>;

    fn handle(&mut self, msg: JobsForViews, _: &mut Self::Context) -> Self::Result {
        if let Some(refused) = self.over_rate(&msg.caller) {
            return MessageResult(Err(refused));
        }
        MessageResult(Ok((
            super::listings::next_image(),
            self.state.jobs_image(self.now().secs()),
            self.state.live.started.clone(),
        )))
    }
}

/// `qstat`: the actor hands out what the rows are made of (the job table is shared, not
/// copied) and they are made and encoded on a blocking thread, so that polling clients
/// listing tens of thousands of jobs hold neither the actor (nor the thread that runs
/// it and writes the answers) nor one another; requests waiting at once share a listing
/// (see [`super::listings`]). `write`: the listing is written where it is made (else it
/// comes back as [`Answer::Encoded`]).
async fn show_jobs_off_thread(
    cluster: &Addr<Cluster>,
    caller: Caller,
    users: Vec<String>,
    form: ListingForm,
    write: Option<ListingWriter>,
) -> Option<Answer> {
    let users = crate::core::door::users_with_caller(&users, &caller.user);
    let asked = std::time::Instant::now();
    let (seq, image, started) = match cluster.send(JobsForViews { caller }).await.ok()? {
        Ok(parts) => parts,
        Err(refused) => return Some(Answer::Message(Box::new(refused))),
    };
    let (deliver, answer) = match write {
        Some(write) => (write, None),
        None => {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let deliver: ListingWriter = Box::new(move |made: Result<&ListingAnswer, _>| {
                let _ = tx.send(made.map(ListingAnswer::to_vec));
            });
            (deliver, Some(rx))
        }
    };
    super::listings::enqueue(super::listings::Waiting {
        seq,
        image,
        started,
        users,
        form,
        asked,
        actor: asked.elapsed(),
        deliver,
    });
    // As many listings made at once as there are cores; a turn makes those of every
    // request waiting then, this one's too unless an earlier turn took it.
    let turn = views_turns().acquire().await.ok()?;
    tokio::task::spawn_blocking(super::listings::serve_waiting)
        .await
        .ok()?;
    drop(turn);
    let Some(answer) = answer else {
        return Some(Answer::Sent);
    };
    Some(match answer.await.ok()? {
        Ok(bytes) => Answer::Encoded(bytes),
        Err(error) => Answer::Message(Box::new(FromMaster::Refused(Refusal {
            kind: RefusalKind::Internal,
            message: error.to_string(),
        }))),
    })
}

/// The turns at making `qstat`'s rows: one per core.
fn views_turns() -> &'static tokio::sync::Semaphore {
    static TURNS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    TURNS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        tokio::sync::Semaphore::new(cores)
    })
}

/// A complex file larger than this is read and checked on a blocking thread, so that
/// the thread answering clients (and the Cluster actor) is not held by it.
const LARGE_EDIT: usize = 256 << 10;

/// `qconf -Mc` with a large file: read and check the list off the actor's thread, then
/// let the actor check what depends on its state (attributes in use) and commit.
async fn replace_complexes_off_thread(
    cluster: &Addr<Cluster>,
    caller: Caller,
    text: String,
) -> Option<FromMaster> {
    let current = match cluster
        .send(ComplexForEdit {
            caller: caller.clone(),
        })
        .await
        .ok()?
    {
        Ok(c) => c,
        Err(r) => return Some(FromMaster::Refused(r)),
    };
    let who = format!("{}@{}", caller.user, caller.host);
    let prepared = tokio::task::spawn_blocking(move || {
        crate::core::admin::prepare_complexes(&who, &text, current)
    })
    .await
    .ok()?;
    match prepared {
        Ok(prepared) => cluster
            .send(ReplaceComplexes { caller, prepared })
            .await
            .ok(),
        Err(refusal) => Some(FromMaster::Refused(refusal)),
    }
}

/// The complex as it is, for a manager who replaces it.
#[derive(Message)]
#[rtype(result = "Result<Vec<gantry_proto::ComplexAttr>, Refusal>")]
struct ComplexForEdit {
    caller: Caller,
}

impl Handler<ComplexForEdit> for Cluster {
    type Result = Result<Vec<gantry_proto::ComplexAttr>, Refusal>;

    fn handle(&mut self, msg: ComplexForEdit, _: &mut Self::Context) -> Self::Result {
        self.state.manager_check(&msg.caller)?;
        Ok((*self.state.input.complexes).clone())
    }
}

/// A complex list read and checked off this thread, for the door to decide.
#[derive(Message)]
#[rtype(result = "FromMaster")]
struct ReplaceComplexes {
    caller: Caller,
    prepared: crate::core::admin::PreparedComplexes,
}

impl Handler<ReplaceComplexes> for Cluster {
    type Result = MessageResult<ReplaceComplexes>;

    fn handle(&mut self, msg: ReplaceComplexes, _: &mut Self::Context) -> Self::Result {
        let decision =
            crate::core::door::decide_prepared_complexes(&self.state, &msg.caller, msg.prepared);
        MessageResult(self.carry_out(decision))
    }
}
