//! Gantry's scheduler, without I/O: its input is plain data the master keeps (a
//! [`ClusterView`]) and one typed time value, its output the decisions of a cycle. It
//! depends on the protocol's types and the pure domain crate only (no async runtime, no
//! network, no storage), which `.ci/run` checks.
//!
//! - [`model`]: the resource model of one cycle (layers, offers, demands, the snapshot);
//! - [`matching`]: a demand against the snapshot, slot and PE allocation, debits;
//! - [`admit`]: the admit stage's gates;
//! - [`quota`]: the resource quota sets (rule matching, the usage book, the cycle cache);
//! - [`cycle`]: the dispatch cycle, its explanations and the threshold actions;
//! - [`calendar`]: capacities booked over time; [`time`]: the scheduler's clock.

pub mod admit;
pub mod calendar;
pub mod cycle;
pub mod matching;
pub mod model;
pub mod quota;
pub mod time;
pub mod view;

pub use calendar::{BookingId, Calendar, CalendarError, ResourceId};
pub use cycle::{Decisions, Dispatch, SchedConf, ThresholdActions};
pub use model::*;
pub use time::{Span, Time};
pub use view::{ClusterView, HostRuntime};
