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
