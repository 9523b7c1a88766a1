//! Gantry's domain, pure and synchronous: complex values and their types, the object
//! file formats `qconf` shows and reads, the resource quota set language, load value
//! formatting, and where a client finds its cell. No network, no async runtime: the
//! daemons' TLS, QUIC framing, keys and tokens are `gantry-net`'s.

pub mod ar;
pub mod binding;
pub mod cell;
pub mod ckpt;
pub mod complex;
pub mod conf;
pub mod config;
pub mod context;
pub mod dates;
pub mod exechost;
pub mod formula;
pub mod groups;
pub mod hostgroup;
pub mod job;
pub mod joblines;
pub mod jsv;
pub mod load;
pub mod mail;
pub mod names;
pub mod os_error;
pub mod output;
pub mod path_list;
pub mod pe;
pub mod pe_tasks;
pub mod procedure;
pub mod project;
pub mod queue;
pub mod recent;
pub mod rqs;
pub mod schedconf;
pub mod session;
pub mod sharetree;
pub mod signal;
pub mod strexpr;
pub mod tasks;
pub mod usage;
pub mod user;
pub mod userset;
pub mod value;
