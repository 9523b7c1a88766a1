//! What the daemons need to talk to each other and no command does: the cell's CA,
//! certificates and join tokens, the daemons' files, mutual TLS and the QUIC framing.
//! The `q*` commands do not link this crate (checked by `.ci/run`).

pub mod cell;
pub mod door;
pub mod log;
pub mod mailer;
pub mod tls;
pub mod transport;
pub mod usercert;
