//! `qhost -json` and `GET /api/v1/hosts`: the execution hosts as `qhost` shows them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::Request;

/// `qhost -json`: the hosts selected, in name order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HostList {
    pub hosts: Vec<HostEntry>,
}

/// One execution host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HostEntry {
    pub name: String,
    /// False while its execd is not heard from (qhost's dashes).
    pub reachable: bool,
    /// qhost's columns as SGE's XML names them (`arch_string`, `num_proc`, `m_socket`,
    /// `m_core`, `m_thread`, `load_avg`, `mem_total`, `mem_used`, `swap_total`,
    /// `swap_used`), as printed (`-` where unknown).
    pub host_values: Vec<Request>,
    /// Every load value the execd reported, unformatted.
    pub load_values: Vec<Request>,
    /// Under `-F`: what it offers, each with its dominance (`hl`, `hc`, `hf`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<HostResource>>,
    /// Under `-q`: its queue instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queues: Option<Vec<HostQueue>>,
    /// Under `-j`: the tasks running on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<Vec<HostJob>>,
}

/// A resource value of a host as `qhost -F` prints it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HostResource {
    pub name: String,
    pub dominance: String,
    pub value: String,
}

/// A queue instance on a host as `qhost -q` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HostQueue {
    /// The cluster queue.
    pub name: String,
    pub qtype: String,
    pub slots_used: u32,
    pub slots: u32,
    pub slots_resv: u32,
    /// The state letters, empty when none.
    pub state: String,
}

/// A job's task on a host as `qhost -j` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HostJob {
    pub job_id: u64,
    pub name: String,
    pub owner: String,
    pub state: String,
    /// The array tasks of the row, empty for a job that is no array.
    pub tasks: String,
    pub queue: String,
    /// The task's master queue (false: a slave of a parallel job).
    pub master: bool,
}
