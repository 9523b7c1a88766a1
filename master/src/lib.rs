//! The Gantry master: the cell's configuration and state, owned by one Cluster actor,
//! persisted in an embedded store, served to execds over QUIC and to clients over a
//! Unix socket.

pub mod cell;
pub mod core;
pub mod shell;
pub mod spool;
pub mod synthetic;

// Where callers outside the crate (its tests, benchmarks and the daemon's main) name
// them.
pub use self::core::{admin, ars, decide, jobs, quota, sched, state};
pub use gantry_common::tasks;
pub use shell::{client_endpoint, cluster, cycle_thread, execd_endpoint};
pub use spool::{scripts, store};
