//! Client requests: the router that sends each kind where it is decided, `qsub -sync
//! y`'s wait, and the large complex edit read off the actor's thread.

use std::collections::HashSet;

use actix::prelude::*;
use gantry_proto::{Caller, FromMaster, Refusal, RefusalKind, ToMaster};
use tracing::{error, info, warn};

use crate::jobs::{JobsImage, ListingAnswer, ListingForm, TaskState};

use super::*;

/// `qstat -u`'s user list with `$user`, SGE's placeholder for the current user, replaced
/// by the caller's name.
fn users_with_caller(users: &[String], caller: &str) -> Vec<String> {
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
        if let Some(refused) = self.over_rate(&msg.caller) {
            return MessageResult(refused);
        }
        MessageResult(self.route(&msg.caller, msg.request))
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
        Some(FromMaster::Refused(crate::state::refuse(
            gantry_proto::RefusalKind::Denied,
            format!(
                "denied: user \"{}\" sent more than {limit} requests in one second (MAX_REQUESTS_PER_USER in qmaster_params): try again later",
                caller.user
            ),
        )))
    }

    /// The router: every kind of request, and where it is answered. The job requests
    /// are answered here (they read the execds' sessions, the spool's accounting or the
    /// finished jobs, or send to execds); the configuration, hosts and queue instances
    /// are decided by the pure functions of [`crate::state`] and committed by
    /// [`Cluster::decided`]. The match names every kind: a new one does not compile
    /// until it has a place.
    fn route(&mut self, caller: &Caller, request: ToMaster) -> FromMaster {
        match request {
            // A submission is taken by value: its script (megabytes, maybe) is moved to
            // the spool, never copied.
            ToMaster::Submit { spec, verify } => {
                let reply = self.submit(caller, *spec, verify);
                self.state_changed();
                reply
            }
            ToMaster::ShowJobs { users } => {
                let users = users_with_caller(&users, &caller.user);
                FromMaster::Jobs(self.state.job_views(&users, &self.started))
            }
            ToMaster::ShowJobLines { users } => {
                let users = users_with_caller(&users, &caller.user);
                FromMaster::JobLines(self.state.jobs_image().lines(&users, &self.started))
            }
            ToMaster::JobDetails { ids } => {
                let connected: HashSet<String> = self.dispatchable();
                let wanted = crate::jobs::jobs_named(&self.state.jobs, &ids);
                // As SGE: the jobs found are shown; only when none is, the list is an
                // error.
                if wanted.is_empty() {
                    return FromMaster::Refused(Refusal {
                        kind: RefusalKind::NotFound,
                        message: format!("Following jobs do not exist: \n{}", ids.join(", ")),
                    });
                }
                let mut details = Vec::new();
                for id in &wanted {
                    let Some(job) = self.state.jobs.get(id) else {
                        continue;
                    };
                    let group = crate::jobs::group_name(job);
                    let checkpoint_attr = job
                        .spec
                        .ckpt
                        .as_ref()
                        .and_then(|n| self.state.ckpts.get(n))
                        .map(|c| {
                            gantry_common::ckpt::effective_when(c, job.spec.ckpt_when.as_deref())
                        });
                    details.push(gantry_proto::JobDetail {
                        checkpoint_attr,
                        job_id: job.id,
                        spec: job.spec.clone(),
                        owner: job.owner.clone(),
                        group,
                        submit_time: job.submit_time,
                        reasons: {
                            let mut reasons = self.state.explain(job, &connected, self.now());
                            if let Some(r) = self.reservations.get(&job.id) {
                                reasons.push(crate::cluster::reservation_line(r));
                            }
                            reasons
                        },
                        errors: job
                            .tasks
                            .placed()
                            .filter_map(|(t, s)| match s {
                                TaskState::Error { reason } => Some((t, reason.clone())),
                                _ => None,
                            })
                            .collect(),
                        running: job
                            .tasks
                            .placed()
                            .filter_map(|(t, s)| match s {
                                TaskState::Running { host, .. } => {
                                    Some(gantry_proto::RunningTask {
                                        task_id: t,
                                        host: host.clone(),
                                        usage: self.task_usage.get(&(job.id, t)).cloned(),
                                    })
                                }
                                _ => None,
                            })
                            .collect(),
                    });
                }
                FromMaster::JobDetails(details)
            }
            ToMaster::ShowQuotas(query) => {
                let rows = self
                    .state
                    .quota_rows(&query, &caller.user, &|user| self.unix_groups.of_name(user));
                FromMaster::Quotas(rows)
            }
            ToMaster::ShowGroups => FromMaster::Groups(match &self.group_allocation {
                // The last cycle's, while the tree is the one it allocated.
                Some((tree, allocation)) if Arc::ptr_eq(tree, &self.state.group_tree) => {
                    self.state.group_rows_of(allocation.clone())
                }
                _ => self.state.group_rows(),
            }),
            ToMaster::SchedulingSummary => {
                let connected: HashSet<String> = self.dispatchable();
                let blocked = self.state.quota_blocked_jobs(&connected, self.now());
                let summary = if blocked.is_empty() {
                    Vec::new()
                } else {
                    vec![(
                        "Jobs dropped because of exceeding limit in rule".to_string(),
                        blocked,
                    )]
                };
                FromMaster::SchedulingSummary(summary)
            }
            ToMaster::ShowFinishedJobs { users } => {
                let users = users_with_caller(&users, &caller.user);
                let views = self
                    .finished
                    .iter()
                    .filter(|v| users.is_empty() || users.iter().any(|u| u == "*" || u == &v.owner))
                    .cloned()
                    .collect();
                FromMaster::Jobs(views)
            }
            ToMaster::SuspendJobs { ids, suspend } => {
                let d = self.state.decide_suspend_jobs(caller, &ids, suspend);
                self.carry_out(d)
            }
            ToMaster::ChangeQueueInstances { targets, change }
                if change != gantry_proto::QueueChange::ClearError =>
            {
                let suspend = change == gantry_proto::QueueChange::Suspend;
                let d = self.state.decide_suspend_queues(caller, &targets, suspend);
                self.carry_out(d)
            }
            ToMaster::ClearJobErrors { ids } => {
                let d = self.state.decide_clear_job_errors(caller, &ids);
                self.carry_out(d)
            }
            ToMaster::AlterJobs { ids, changes } => {
                let groups = self.unix_groups.of(&caller.user, caller.gid);
                let connected = self.dispatchable();
                let now = self.now();
                let d = self
                    .state
                    .decide_alter_jobs(caller, &groups, &ids, &changes, &connected, now);
                self.carry_out(d)
            }
            ToMaster::SubmitAr { spec } => {
                let groups = self.unix_groups.of(&caller.user, caller.gid);
                let connected = self.dispatchable();
                let now = self.now();
                let d = self.state.decide_submit_ar(
                    caller,
                    &groups,
                    &spec,
                    &connected,
                    now,
                    &mut self.ar_snapshot,
                );
                self.carry_out(d)
            }
            ToMaster::ShowArs { users, ids } => {
                let users = users_with_caller(&users, &caller.user);
                FromMaster::Ars(self.state.ar_list(&caller.user, &users, &ids, self.now()))
            }
            ToMaster::DeleteArs { ids, force } => {
                let d = self.state.decide_delete_ars(caller, &ids, force);
                self.carry_out(d)
            }
            ToMaster::DeleteJobs { ids, users, force } => {
                let d = self.state.decide_delete_jobs(caller, &ids, &users, force);
                self.carry_out(d)
            }
            ToMaster::Accounting { job } => {
                let keep = |r: &gantry_proto::AccountingRecord| match &job {
                    None => true,
                    Some(j) => match j.parse::<u64>() {
                        Ok(id) => r.job_id == id,
                        Err(_) => &r.job_name == j,
                    },
                };
                match self.store.accounting(keep) {
                    Ok(records) => FromMaster::Accounting(records),
                    Err(e) => FromMaster::Refused(Refusal {
                        kind: RefusalKind::Internal,
                        message: format!("error: reading the accounting: {e}"),
                    }),
                }
            }
            ToMaster::KillExecds { hosts, kill_jobs } => {
                self.kill_execds(caller, &hosts, kill_jobs)
            }
            ToMaster::KillMaster => {
                if !self.state.acts_as_manager(caller) {
                    return FromMaster::Refused(Refusal {
                        kind: RefusalKind::Denied,
                        message: "shutdown requires manager privileges".into(),
                    });
                }
                info!(user = %caller.user, host = %caller.host, "qconf -km: shutting down");
                // The master's own shutdown (as on SIGTERM), once this answer is out.
                actix::spawn(async {
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                    let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGTERM);
                });
                FromMaster::Done {
                    messages: vec![format!("{}@{} kills qmaster", caller.user, caller.host)],
                }
            }
            // `call` waits for the job's end before a wait reaches the actor.
            ToMaster::WaitJob { .. } | ToMaster::WaitStart { .. } => FromMaster::Refused(Refusal {
                kind: RefusalKind::Internal,
                message: "error: a wait for a job reached the master without its caller".into(),
            }),
            request @ (ToMaster::HostInfo
            | ToMaster::ShowExecHostList
            | ToMaster::ShowExecHost { .. }
            | ToMaster::AddExecHost { .. }
            | ToMaster::DeleteExecHosts { .. }
            | ToMaster::ShowConfig { .. }
            | ToMaster::ModifyConfig { .. }
            | ToMaster::ShowManagers
            | ToMaster::AddManagers { .. }
            | ToMaster::DeleteManagers { .. }
            | ToMaster::ShowComplexes
            | ToMaster::ShowQueueList
            | ToMaster::ShowQueue { .. }
            | ToMaster::ShowHostGroupList
            | ToMaster::ShowHostGroup { .. }
            | ToMaster::SetQueueState { .. }
            | ToMaster::ModifyAttribute { .. }
            | ToMaster::AddHostGroup { .. }
            | ToMaster::ModifyHostGroup { .. }
            | ToMaster::DeleteHostGroup { .. }
            | ToMaster::ShowUserSetList
            | ToMaster::ShowUserSets { .. }
            | ToMaster::AddUsersToSets { .. }
            | ToMaster::DeleteUsersFromSets { .. }
            | ToMaster::DeleteUserSets { .. }
            | ToMaster::AddUserSet { .. }
            | ToMaster::ModifyUserSet { .. }
            | ToMaster::ShowObject { .. }
            | ToMaster::ShowObjectList { .. }
            | ToMaster::AddObject { .. }
            | ToMaster::ModifyObject { .. }
            | ToMaster::DeleteObjects { .. }
            | ToMaster::EditAttribute { .. }
            | ToMaster::ChangeQueueInstances { .. }
            | ToMaster::ReplaceObjects { .. }) => {
                let now = self.now();
                let decided = self.state.handle(caller, &request, now);
                self.decided(caller, decided)
            }
        }
    }
}

impl Cluster {
    /// Answer a decided request: commit a change (and log what it did), or pass on an
    /// answer or a refusal.
    fn decided(&mut self, caller: &Caller, decided: Result<Reply, Refusal>) -> FromMaster {
        match decided {
            Ok(Reply::Answer(a)) => a,
            Ok(Reply::Change(change)) => match self.commit(&change.ops) {
                Ok(()) => {
                    self.state_changed();
                    // A list of 200,000 attributes changes 200,000 things: the log
                    // names the first few and counts the rest.
                    const LOGGED: usize = 10;
                    let mut logged =
                        change.messages[..change.messages.len().min(LOGGED)].join("; ");
                    if change.messages.len() > LOGGED {
                        logged.push_str(&format!(
                            "; and {} more changes",
                            change.messages.len() - LOGGED
                        ));
                    }
                    info!(user = %caller.user, host = %caller.host, "{logged}");
                    FromMaster::Done {
                        messages: change.messages,
                    }
                }
                Err(r) => FromMaster::Refused(r),
            },
            Err(r) => FromMaster::Refused(r),
        }
    }
}

/// `qsub -sync y`: answer now if the job has ended, else when it does.
#[derive(Message)]
#[rtype(result = "()")]
pub struct WaitJob {
    pub job_id: u64,
    pub reply: tokio::sync::oneshot::Sender<FromMaster>,
}

impl Handler<WaitJob> for Cluster {
    type Result = ();

    fn handle(&mut self, msg: WaitJob, _: &mut Self::Context) {
        if self.state.jobs.contains_key(&msg.job_id) {
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
    pub job_id: u64,
    pub reply: tokio::sync::oneshot::Sender<FromMaster>,
}

impl Handler<WaitStart> for Cluster {
    type Result = ();

    fn handle(&mut self, msg: WaitStart, _: &mut Self::Context) {
        let answer = match self.state.jobs.get(&msg.job_id) {
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
#[rtype(result = "Result<(u64, JobsImage, HashSet<(u64, u32)>), FromMaster>")]
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
            self.state.jobs_image(),
            self.started.clone(),
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
    let users = users_with_caller(&users, &caller.user);
    let asked = std::time::Instant::now();
    let (seq, image, started) = match cluster.send(JobsForViews { caller }).await.ok()? {
        Ok(parts) => parts,
        Err(refused) => return Some(Answer::Message(Box::new(refused))),
    };
    let (deliver, answer) = match write {
        Some(write) => (write, None),
        None => {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let deliver: ListingWriter = Box::new(move |made: Result<&ListingAnswer, String>| {
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
        Err(message) => Answer::Message(Box::new(FromMaster::Refused(Refusal {
            kind: RefusalKind::Internal,
            message,
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
    let checked = tokio::task::spawn_blocking(move || {
        let list = gantry_common::complex::parse_complexes(&text).map_err(|e| e.to_string())?;
        gantry_common::complex::check_complexes(&list, &current)?;
        let messages = crate::admin::complex_changes(&who, &current, &list);
        let catalog = crate::sched::Catalog::new(&list);
        Ok::<_, String>(ReplaceComplexes {
            caller,
            list,
            messages,
            catalog,
            checked_against: current,
        })
    })
    .await
    .ok()?;
    match checked {
        Ok(prepared) => cluster.send(prepared).await.ok(),
        Err(message) => Some(FromMaster::Refused(crate::state::refuse(
            RefusalKind::Invalid,
            message,
        ))),
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
        Ok((*self.state.complexes).clone())
    }
}

/// A complex list read and checked (against `checked_against`) off this thread.
#[derive(Message)]
#[rtype(result = "FromMaster")]
struct ReplaceComplexes {
    caller: Caller,
    list: Vec<gantry_proto::ComplexAttr>,
    /// What replacing `checked_against` with `list` does.
    messages: Vec<String>,
    /// The catalog of `list`, for the quota book's rebuild.
    catalog: crate::sched::Catalog,
    checked_against: Vec<gantry_proto::ComplexAttr>,
}

impl Handler<ReplaceComplexes> for Cluster {
    type Result = MessageResult<ReplaceComplexes>;

    fn handle(&mut self, msg: ReplaceComplexes, _: &mut Self::Context) -> Self::Result {
        let ReplaceComplexes {
            caller,
            list,
            messages,
            catalog,
            checked_against,
        } = msg;
        let decided = self.state.manager_check(&caller).and_then(|()| {
            if *self.state.complexes == checked_against {
                self.state.prepare_catalog(catalog);
                self.state.replace_complexes_saying(list, messages)
            } else {
                // Someone changed the complex in the meantime: check against it here.
                gantry_common::complex::check_complexes(&list, &self.state.complexes)
                    .map_err(|m| crate::state::refuse(RefusalKind::Invalid, m))?;
                let who = format!("{}@{}", caller.user, caller.host);
                self.state.replace_complexes(&who, list)
            }
        });
        MessageResult(self.decided(&caller, decided))
    }
}

impl Cluster {
    /// `qconf -ke[j] host_list|all`: tell the execds to shut down (with `-kej` after
    /// ending their jobs), in SGE's words for each host (sge_host_qmaster.c).
    fn kill_execds(&mut self, caller: &Caller, hosts: &[String], kill_jobs: bool) -> FromMaster {
        use gantry_proto::{ItemResult, ToExecd};
        if !self.state.acts_as_manager(caller) {
            return FromMaster::Refused(Refusal {
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
            self.state
                .exechosts
                .keys()
                .map(|h| (h.clone(), false))
                .collect()
        } else {
            hosts.iter().map(|h| (h.clone(), true)).collect()
        };
        let mut items = Vec::new();
        for (named, forced) in targets {
            let Some(host) = self
                .state
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
            match self.sessions.get_mut(&host) {
                Some(s) if s.to_execd.send(ToExecd::Shutdown { kill_jobs }).is_ok() => {
                    s.stopping = true;
                    info!(host = %host, user = %caller.user, "sent {action} notification");
                    items.push(ItemResult {
                        message: format!("sent {action} notification to  execd host {host}"),
                        refused: false,
                    });
                }
                _ if !forced => items.push(ItemResult {
                    message: format!("no execd known on host {host}"),
                    refused: true,
                }),
                _ => items.push(ItemResult {
                    message: format!(
                        "failed sending {action} notification to unknown execd host {host}"
                    ),
                    refused: true,
                }),
            }
        }
        if items.is_empty() {
            items.push(ItemResult {
                message: "there are no execution hosts to kill".into(),
                refused: false,
            });
        }
        FromMaster::Items(items)
    }
}
