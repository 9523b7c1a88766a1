//! The Gantry master: the cell's configuration and state, owned by one Cluster actor,
//! persisted in an embedded store, served to execds over QUIC and to clients over a
//! Unix socket.

pub mod admin;
pub mod ars;
pub mod cell;
pub mod client_endpoint;
pub mod cluster;
pub mod cycle_thread;
pub mod decide;
pub mod execd_endpoint;
pub mod jobs;
mod journal;
mod names;
pub mod quota;
pub mod sched;
pub mod scripts;
pub mod state;
pub mod store;
pub mod synthetic;
pub use gantry_common::tasks;
