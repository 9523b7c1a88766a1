//! `qselect` and `qstat`'s queue selection, asked of the master.

use serde::{Deserialize, Serialize};

use crate::JobId;

/// The queue instances `qselect` and `qstat` select, as SGE's commands select them, in
/// its order: the instances `-q` names (all without it), in one of `-qs`'s states, that
/// let every one of `-U`'s users (or `@group`s) in, list one of `-pe`'s parallel
/// environments, and would satisfy every `-l` request were they empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueSelection {
    pub queues: Vec<String>,
    pub states: Option<String>,
    pub users: Vec<String>,
    pub pes: Vec<String>,
    /// `name=value`, or a name alone.
    pub resources: Vec<(String, Option<String>)>,
    /// Which pending jobs could run in a selected instance (`qstat` lists only those).
    pub fitting_jobs: bool,
}

/// What [`QueueSelection`] selected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueuesSelected {
    /// `queue@host`, sorted.
    pub instances: Vec<String>,
    /// The option (`-q`, `-U`, `-pe`) after which no instance remained, for SGE's
    /// `no queues remaining after -U queue selection`.
    pub emptied_by: Option<String>,
    /// The pending jobs whose hard requests a selected instance would satisfy.
    pub fitting_jobs: Vec<JobId>,
}

/// What `qmod -r*` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RescheduleTargets {
    /// `-rj`: jobs only.
    Jobs,
    /// `-rq`: queue instances only.
    Queues,
    /// `-r`: either, each word by its form.
    Either,
}
