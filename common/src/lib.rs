//! Gantry's domain, pure and synchronous where it can be: complex values and their
//! types, the object file formats `qconf` shows and reads, the cell's layout and join
//! tokens, load value formatting, and the TLS/QUIC helpers both daemons share.

pub mod cell;
pub mod complex;
pub mod conf;
pub mod config;
pub mod exechost;
pub mod hostgroup;
pub mod load;
pub mod names;
pub mod pe;
pub mod project;
pub mod queue;
pub mod recent;
pub mod rqs;
pub mod schedconf;
pub mod tls;
pub mod transport;
pub mod userset;
pub mod value;
