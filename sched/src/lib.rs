//! Gantry's scheduler, without I/O: its input is plain data the master keeps and one
//! typed time value, its output the decisions of a cycle. It depends on the protocol's
//! types only (no async runtime, no network, no storage), which `.ci/run` checks.

pub mod calendar;
pub mod time;

pub use calendar::{BookingId, Calendar, CalendarError, ResourceId};
pub use time::{Span, Time};
