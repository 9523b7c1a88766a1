//! What the stages decide and why: the contract between the scheduler's stages and
//! its callers. A cycle's [`Decisions`] (the tasks to start, the reservations made);
//! why a job cannot run in a queue instance ([`Misfit`], in SGE's words) or anywhere
//! ([`CannotRun`]). Plain data over the model; no stage is named here.

use gantry_proto::{Grant, JobId, TaskId};

use crate::model::{DemandError, Level, Unusable};
use crate::time::Time;

/// Why no queue instance could ever run a job (`qsub -w e|v`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CannotRun {
    /// Its requests do not resolve against the complex.
    Demand(DemandError),
    /// Every queue instance turns it away, each for the reason given (in SGE's words,
    /// one per instance).
    Nowhere(Vec<String>),
}

impl CannotRun {
    /// The reasons, one line each.
    pub fn reasons(&self) -> Vec<String> {
        match self {
            CannotRun::Demand(e) => vec![e.to_string()],
            CannotRun::Nowhere(reasons) => reasons.clone(),
        }
    }
}

/// What one cycle decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decisions {
    /// The tasks to start, in the order they were placed.
    pub dispatches: Vec<Dispatch>,
    /// How many quota usage counters the cycle used: the caller keeps it for the next
    /// cycle's first allocation ([`crate::quota::QuotaBook::note_cycle_counters`]).
    pub quota_counters: usize,
    /// `-now y` jobs this cycle saw and could not start whole (held, waiting, or no room
    /// for every pending task): they are not to wait, so the caller removes them.
    pub immediate_unplaced: Vec<JobId>,
    /// The reservations the cycle made (`-R y` jobs that could not start), in the order
    /// made.
    pub reservations: Vec<Reservation>,
    /// With group quotas, the allocation the cycle placed under.
    pub groups: Option<crate::groups::Allocation>,
    /// A quiet cycle: nothing changed that could decide anything, and it decided
    /// nothing without passing over the pending jobs (see [`crate::settled`]).
    pub quiet: bool,
    /// The pending jobs the cycle looked at, and the categories they fell into (0 for
    /// a quiet cycle).
    pub considered: usize,
    pub categories: usize,
    /// Every job's priority as the cycle worked it out (what `qstat` shows until the
    /// next).
    pub priorities: Option<std::sync::Arc<crate::priority::Priorities>>,
}

/// A decision of the scheduler: start this task in this queue instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatch {
    pub job_id: JobId,
    pub task_id: TaskId,
    /// The master queue instance.
    pub queue: String,
    pub host: String,
    /// Every queue instance granted, the master queue first.
    pub grants: Vec<Grant>,
    /// The parallel environment chosen for a `-pe` request.
    pub pe: Option<String>,
}

/// A reservation a cycle made: the job's next task is to start at `start` on `grants`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    pub job_id: JobId,
    pub task_id: TaskId,
    pub start: Time,
    pub grants: Vec<Grant>,
    pub pe: Option<String>,
}

/// How a job's project does not fit a project list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectMisfit {
    /// The list names projects and the job has none.
    NoProject,
    /// The job's project is not in the list.
    NotListed(String),
    /// The job's project is in the excluded list.
    Excluded(String),
}

/// Why a job cannot run in a queue instance. The messages are SGE 8.1.9's scheduler
/// messages (`source/libs/sched/msg_schedd.h`), filled as its `sge_select_queue.c` does.
#[derive(Debug, Clone, PartialEq)]
pub enum Misfit {
    NotInQueueList,
    NotBatch,
    /// An interactive job started now (`qrsh`, `qlogin`) in a queue without
    /// `INTERACTIVE` in its `qtype`.
    NotInteractive,
    Unusable(Unusable),
    /// The owner is not allowed by the host's (`Level::Host`) or the queue's access
    /// lists.
    NoAccess(Level),
    /// The job's project does not fit the host's or the queue's project lists.
    Project {
        level: Level,
        why: ProjectMisfit,
    },
    /// An EXCL attribute a job cannot have here (SGE's `exclusive resource (x) is
    /// already in use`); `requested` is the job's hard request list as SGE prints it.
    ExclusiveInUse {
        level: Level,
        name: String,
        requested: String,
    },
    /// A request the first failing layer does not satisfy: (level, the failing
    /// attribute, the job's hard request list as SGE prints it, what the layer offers as
    /// SGE prints it).
    Request {
        level: Level,
        name: String,
        requested: String,
        offered: String,
        /// The request is the attribute's default, which the job did not ask for.
        for_default: bool,
    },
    UnknownResource {
        name: String,
        requested: String,
    },
    /// A request the queue's own configured value could never satisfy, however little
    /// of it were in use (SGE decides it for the cluster queue, before its instances).
    ClusterQueue {
        requested: String,
    },
    /// A FORCED attribute offered on this layer that the job does not request.
    Forced {
        level: Level,
        name: String,
    },
    /// Not worked out (the scheduling cycle only needs to know that it does not fit).
    Unexplained,
    /// The instance offers no parallel environment the job asks for.
    NoPe(String),
    /// The instance's `ckpt_list` does not name the job's checkpointing environment.
    NoCkpt(String),
    /// A resource quota rule is full for the job here.
    Quota(Denial),
    /// A resource quota rule that decides for the job on every queue instance is full
    /// (the cycle's path: the job's category can run nowhere else either).
    QuotaEverywhere,
    /// The job's group (hierarchical group quotas) is at its allocation this cycle.
    GroupAtAllocation {
        group: String,
        allocation: f64,
    },
}

impl Misfit {
    /// The reason as `qstat -j` shows it in "scheduling info".
    pub fn message(&self, queue: &str, host: &str) -> String {
        let qi = format!("{queue}@{host}");
        match self {
            // SCHEDD_INFO_NOTINHARDQUEUELST_S (47048)
            Misfit::NotInQueueList => format!(
                "cannot run in queue \"{qi}\" because it is not contained in its hard queue list (-q)"
            ),
            // SCHEDD_INFO_QUEUENOTINTERACTIVE_S (47053)
            Misfit::NotInteractive => format!(
                "cannot run in queue instance \"{qi}\" because it is not of type interactive"
            ),
            // SCHEDD_INFO_NOTASERIALQUEUE_S (47054)
            Misfit::NotBatch => {
                format!("cannot run in queue instance \"{qi}\" because it is not of type batch")
            }
            // SCHEDD_INFO_QUEUEDISABLED_ (47080)
            Misfit::Unusable(Unusable::Disabled) => {
                format!("queue instance \"{qi}\" dropped because it is disabled")
            }
            // SCHEDD_INFO_QUEUENOTAVAIL_ (47081): SGE 8.1.9 says it of a queue instance
            // in error state too.
            Misfit::Unusable(Unusable::Unreachable | Unusable::Error) => {
                format!("queue instance \"{qi}\" dropped because it is temporarily not available")
            }
            // SCHEDD_INFO_QUEUESUSP_ (47079)
            Misfit::Unusable(Unusable::Suspended) => {
                format!("queue instance \"{qi}\" dropped because it is suspended")
            }
            // SCHEDD_INFO_QUEUEINALARM_SS (47067)
            Misfit::Unusable(Unusable::SuspendAlarm(why)) => {
                format!("queue instance \"{qi}\" is in suspend alarm: {why}")
            }
            // SCHEDD_INFO_QUEUEOVERLOADED_SS (47068)
            Misfit::Unusable(Unusable::Overloaded(why)) => {
                format!("queue instance \"{qi}\" dropped because it is overloaded: {why}")
            }
            // SCHEDD_INFO_HASNOPERMISSION_SS (47043)
            Misfit::NoAccess(Level::Host) => format!("has no permission for host \"{host}\""),
            Misfit::NoAccess(_) => format!("has no permission for queue \"{qi}\""),
            Misfit::Project { level, why } => {
                let (kind, name) = match level {
                    Level::Host => ("host", host),
                    _ => ("queue", qi.as_str()),
                };
                match why {
                    // SCHEDD_INFO_HASNOPRJ_S (47045)
                    ProjectMisfit::NoProject => format!(
                        "(no project) does not have the correct project to run in {kind} \"{name}\""
                    ),
                    // SCHEDD_INFO_HASINCORRECTPRJ_SSS (47044)
                    ProjectMisfit::NotListed(p) => format!(
                        "(project {p}) does not have the correct project to run in {kind} \"{name}\""
                    ),
                    // SCHEDD_INFO_EXCLPRJ_SSS (47046)
                    ProjectMisfit::Excluded(p) => format!(
                        "(project {p}) is not allowed to run in {kind} \"{name}\" based on the excluded project list"
                    ),
                }
            }
            Misfit::Request {
                level,
                name,
                requested,
                offered,
                for_default,
            } => {
                // SCHEDD_INFO_CANNOTRUNGLOBALLY_SS (47061), _CANNOTRUNATHOST_SSS (47042),
                // _CANNOTRUNINQUEUE_SSS (47059); "it offers only" is
                // MSG_SCHEDD_ITOFFERSONLY.
                let _ = name;
                let place = match level {
                    Level::Global => "globally".to_string(),
                    Level::Host => format!("at host \"{host}\""),
                    Level::Queue => format!("in queue \"{qi}\""),
                };
                // MSG_SCHEDD_FORDEFAULT: SGE says when a default decided it.
                let default = if *for_default { "for default request " } else { "" };
                format!(
                    "(-l {requested}) cannot run {place} because {default}it offers only {offered}"
                )
            }
            Misfit::ExclusiveInUse {
                level,
                name,
                requested,
            } => {
                // MSG_SCHEDD_EXCLUSIVE_IN_USE_S (47217) as the reason.
                let place = match level {
                    Level::Global => "globally".to_string(),
                    Level::Host => format!("at host \"{host}\""),
                    Level::Queue => format!("in queue \"{qi}\""),
                };
                format!(
                    "(-l {requested}) cannot run {place} because exclusive resource ({name}) is already in use"
                )
            }
            // SCHEDD_INFO_CANNOTRUNINQUEUE_SSS (47059) with
            // MSG_SCHEDD_JOBREQUESTSUNKOWNRESOURCE_S (47211) as the reason
            Misfit::UnknownResource { name, requested } => format!(
                "(-l {requested}) cannot run in queue \"{qi}\" because job requests unknown resource ({name})"
            ),
            // The cluster queue's static check (sge_select_queue.c's cqueue match).
            Misfit::ClusterQueue { requested } => format!(
                "(-l {requested}) cannot run in queue \"{queue}\" because of cluster queue"
            ),
            Misfit::Unexplained => format!("queue instance \"{qi}\" dropped"),
            // SCHEDD_INFO_NOTINQUEUELSTOFCKPT_SS (47052)
            Misfit::NoCkpt(ckpt) => format!(
                "cannot run in queue instance \"{qi}\" because ckpt object \"{ckpt}\" is not in ckpt list of queue"
            ),
            // SCHEDD_INFO_NOTINQUEUELSTOFPE_SS (47050)
            Misfit::NoPe(pe) => {
                format!("cannot run in queue \"{qi}\" because PE \"{pe}\" is not in pe list")
            }
            Misfit::Quota(denial) => denial.message(),
            Misfit::QuotaEverywhere => format!("queue instance \"{qi}\" dropped"),
            Misfit::GroupAtAllocation { group, allocation } => format!(
                "cannot run because group \"{group}\" is at its allocation of {allocation} slots"
            ),
            // SCHEDD_INFO_NOGLOBFORCEDRES_SS (47063), _NOFORCEDRES_SS (47062),
            // _NOTREQFORCEDRES_SS (47056)
            Misfit::Forced { level, name } => match level {
                Level::Global => format!("does not request globally 'forced' resource \"{name}\""),
                Level::Host => format!("does not request 'forced' resource \"{name}\" of host {host}"),
                Level::Queue => format!(
                    "does not request 'forced' resource \"{name}\" of queue instance {qi}"
                ),
            },
        }
    }
}

/// Why a quota keeps a job out, as SGE's scheduler says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// `max_u_slots/1`, `per_group/testers`
    pub rule: String,
    /// `user1/////`
    pub key: String,
}

impl Denial {
    pub fn message(&self) -> String {
        format!(
            "cannot run because it exceeds limit \"{}\" in rule \"{}\"",
            self.key, self.rule
        )
    }
}
