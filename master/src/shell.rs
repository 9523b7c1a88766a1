//! The master's shell: the Cluster actor (the single writer: it commits decisions,
//! carries out their effects and replies), the client and execd endpoints, the
//! scheduler's thread, and the operating system's user and group names.

pub mod active;
pub mod client_endpoint;
pub mod cluster;
pub mod cycle_thread;
pub mod execd_endpoint;
pub mod http;
pub mod metrics;
pub(crate) mod names;
