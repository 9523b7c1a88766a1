//! Gantry's scheduler, without I/O: its input is plain data the master keeps (a
//! [`ClusterView`]) and one typed time value, its output the decisions of a cycle. It
//! depends on the protocol's types and the pure domain crate only (no async runtime, no
//! network, no storage), which `.ci/run` checks.
//!
//! - [`model`]: the resource model of one cycle (layers, offers, demands, the snapshot);
//! - [`matching`]: a demand against the snapshot, layer by layer;
//! - [`quota`]: the resource quota sets (rule matching, the usage book, the cycle cache);
//! - the cycle's stages: `judge` (each queue instance usable or why not, and the
//!   candidates' order), [`order`] (which job next), [`admit`] (gates such as the
//!   quota sets), [`place`] (where its tasks go), [`book`] (what a placement takes);
//! - [`cycle`]: the dispatch cycle over the stages, its explanations and the threshold
//!   actions;
//! - [`kept`]: the snapshot kept between cycles, brought up to date per host report,
//!   and between reservation grants with what runs kept booked (`ledger`);
//! - [`calendar`]: capacities booked over time; [`time`]: the scheduler's clock.

pub mod admit;
pub mod ar;
pub mod backfill;
pub mod book;
pub mod calendar;
pub mod cycle;
pub mod groups;
mod judge;
pub mod kept;
mod ledger;
pub mod matching;
pub mod model;
pub mod order;
pub mod place;
pub mod quota;
mod settled;
pub mod synthetic;
pub mod time;
pub mod view;

pub use calendar::{BookingId, Calendar, CalendarError, ResourceId};
pub use cycle::{CannotRun, Decisions, Dispatch, SchedConf, ThresholdActions, Trigger};
pub use kept::{KeptCounters, KeptSnapshot};
pub use ledger::LedgerCounters;
pub use model::*;
pub use settled::Unsettled;
pub use time::{Span, Time};
pub use view::{ClusterView, HostRuntime};

#[cfg(test)]
mod tests;
