//! The HTTP API's what-if of a job that does not exist yet.

use serde::{Deserialize, Serialize};

/// Would a job start now, where, and if not, why (each queue instance's reason in
/// SGE's words, as `qsub -w p` and `qstat -j` give them); and could it ever (`-w v`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WhatIf {
    /// The queue instances it would start in now, as (queue, host, slots), the master
    /// queue first; empty if it would not start now.
    pub starts_on: Vec<(String, String, u32)>,
    /// Why it would not start now.
    pub not_now: Vec<String>,
    /// Whether some queue instance could run it once what runs has ended (`-w v`).
    pub could_ever_run: bool,
    /// Why no queue instance ever could.
    pub never: Vec<String>,
}

/// What the cluster would do under other quota sets, on what runs and waits now.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct QuotaWhatIf {
    /// The sets of the text that replace one of the same name, and those added.
    pub replaced: Vec<String>,
    pub added: Vec<String>,
    /// Running jobs past a limit of the sets, each with the limits (`exceeds limit
    /// "user1/////" in rule "max_u_slots/1"`).
    pub over: Vec<(crate::JobId, Vec<String>)>,
    /// The pending tasks a cycle would start under the sets now: (job, task, queue
    /// instance), in the order placed.
    pub would_start: Vec<(crate::JobId, crate::TaskId, String)>,
    /// The same under the sets in force, to compare.
    pub would_start_today: Vec<(crate::JobId, crate::TaskId, String)>,
}
