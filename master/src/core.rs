//! The master's core, pure: the cluster's state and every decision on it. A request is
//! decided against the state into spool writes, effects and a reply; nothing here
//! writes a file, opens a socket or reads a clock.

pub mod admin;
pub mod ars;
pub mod decide;
pub mod decision;
pub mod door;
pub mod jobs;
pub mod pe_tasks;
pub mod quota;
pub mod sched;
pub mod state;
pub mod whatif;
