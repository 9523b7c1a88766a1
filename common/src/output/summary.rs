//! `qstat -g c -json`: the cluster queue summary.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `qstat -g c -json`: a line per cluster queue, by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterQueueSummary {
    pub cluster_queues: Vec<ClusterQueueLine>,
}

/// One cluster queue, its slots counted as SGE's XML counts them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterQueueLine {
    pub name: String,
    /// The mean normalised load of its hosts (null: none reports one).
    pub load: Option<f64>,
    pub used: u32,
    pub resv: u32,
    pub available: u32,
    pub total: u32,
    /// Slots of instances in `aoACDS` states.
    pub temp_disabled: u32,
    /// Slots of instances in `cdsuE` states.
    pub manual_intervention: u32,
}
