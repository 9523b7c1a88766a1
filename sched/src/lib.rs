//! Gantry's scheduler, without I/O: its input is plain data the master keeps (a
//! [`ClusterView`]) and one typed time value, its output the decisions of a cycle. It
//! depends on the protocol's types and the pure domain crate only (no async runtime, no
//! network, no storage), which `.ci/run` checks.
//!
//! Its modules stand in layers; a module imports only those below it (`.ci/run` fails
//! on an import loop):
//!
//! 1. the floor: [`time`] (the scheduler's clock), [`calendar`] (capacities booked
//!    over time), [`groups`] (the group tree's allocation, pure arithmetic),
//!    [`priority`] (SGE's priority of every job: tickets, urgency, `prio`);
//! 2. [`model`]: the resource model of one cycle (catalog, layers, offers, demands, the
//!    [`Snapshot`]), plain data with no per-cycle cache;
//! 3. the stage contracts: [`decisions`] (what a cycle decides, and why a job cannot
//!    run: [`Misfit`], [`CannotRun`]) and [`gate`] (the admit stage's [`Gate`] and the
//!    registered [`Gates`]);
//! 4. [`matching`] (a demand against the snapshot, layer by layer, then the gates) and
//!    [`quota`] (the resource quota sets: rules, the usage book, their gate);
//! 5. [`place`] (where a task goes) and [`view`] (the master's state as the input, and
//!    the priority's input read from it), [`category`] (a job's category as its
//!    accounting record names it);
//! 6. the stages: `judge` (each queue instance usable or why not, and the candidates'
//!    order), [`order`] (which job next), [`book`] (what a placement takes),
//!    [`backfill`] (`-R y` reservations), [`ar`] (advance reservations), `settled`
//!    (what the last cycle left without room), [`group_rounds`] (the group quotas' gate
//!    and their order), `ledger` (what runs, kept booked);
//! 7. [`pass`]: one cycle's own state (the gates it opened, the caches it keeps);
//! 8. [`cycle`] (the dispatch cycle over the stages, its explanations) and [`kept`]
//!    (the snapshot kept between cycles, brought up to date per host report).

pub mod ar;
pub mod backfill;
pub mod book;
pub mod calendar;
pub mod category;
pub mod cycle;
pub mod decisions;
pub mod gate;
pub mod group_rounds;
pub mod groups;
mod judge;
pub mod kept;
mod ledger;
pub mod matching;
pub mod model;
pub mod order;
pub mod pass;
pub mod place;
pub mod priority;
pub mod quota;
mod settled;
pub mod synthetic;
pub mod time;
pub mod view;

pub use calendar::{BookingId, Calendar, CalendarError, ResourceId};
pub use cycle::{SchedConf, ThresholdActions, Trigger};
pub use decisions::{CannotRun, Decisions, Dispatch, Misfit, ProjectMisfit};
pub use gate::{Gate, Gates};
pub use kept::{KeptCounters, KeptSnapshot};
pub use ledger::LedgerCounters;
pub use model::*;
pub use pass::Pass;
pub use settled::Unsettled;
pub use time::{Span, Time};
pub use view::{ClusterView, HostRuntime};

#[cfg(test)]
mod tests;
