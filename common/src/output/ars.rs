//! `qrstat -json` and `GET /api/v1/ars`: advance reservations.

use gantry_proto::AdvanceReservation;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::detail::PeRequest;
use super::Request;

/// `qrstat -json`: the reservations selected, and the ids `-ar` named that do not
/// exist.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ArList {
    pub advance_reservations: Vec<ArEntry>,
    pub unknown: Vec<String>,
}

/// Slots a reservation holds in a queue instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GrantedSlots {
    /// `queue@host`
    pub queue_instance: String,
    pub slots: u32,
}

/// One advance reservation as `qrstat -ar` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ArEntry {
    pub id: u64,
    pub name: Option<String>,
    pub owner: String,
    pub group: String,
    pub account: String,
    /// The state's letter (`w`, `r`, `d`, `E`, ...).
    pub state: String,
    /// Seconds since the epoch.
    pub start_time: i64,
    pub end_time: i64,
    /// Seconds.
    pub duration: i64,
    pub submission_time: i64,
    pub resources: Vec<Request>,
    pub granted_slots: Vec<GrantedSlots>,
    /// `-pe name range`: the range asked for.
    pub parallel_environment: Option<PeRequest>,
    pub granted_pe_slots: Option<u32>,
    /// The users who may use it (`-u`), empty: its owner.
    pub acl: Vec<String>,
    pub hard_error: bool,
    pub errors: Vec<String>,
}

impl ArEntry {
    pub fn of(ar: &AdvanceReservation) -> ArEntry {
        ArEntry {
            id: ar.id.get(),
            name: ar.spec.name.clone(),
            owner: ar.owner.clone(),
            group: ar.group.clone(),
            account: ar.spec.account.clone(),
            state: ar.state.letter().to_string(),
            start_time: ar.start,
            end_time: ar.end,
            duration: ar.duration(),
            submission_time: ar.submission_time,
            resources: ar
                .spec
                .resources
                .iter()
                .map(|(k, v)| Request {
                    name: k.clone(),
                    value: v.clone(),
                })
                .collect(),
            granted_slots: ar
                .granted
                .iter()
                .map(|g| GrantedSlots {
                    queue_instance: format!("{}@{}", g.queue, g.host),
                    slots: g.slots,
                })
                .collect(),
            parallel_environment: ar.spec.pe.as_ref().map(|(name, range)| PeRequest {
                name: name.clone(),
                range: range.clone(),
            }),
            granted_pe_slots: ar.granted_pe.as_ref().map(|(_, n)| *n),
            acl: ar.spec.users.clone(),
            hard_error: ar.spec.hard_error,
            errors: ar.errors.clone(),
        }
    }
}
