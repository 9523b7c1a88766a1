//! The Gantry execution daemon: joins the cell, reports the host's load values, and
//! relays local client commands to the master.

pub mod binding;
pub mod cgroup;
pub mod checkpoint;
pub mod identity;
pub mod interactive;
pub mod jobs;
pub mod mail;
pub mod private_fs;
pub mod processes;
pub mod relay;
pub mod sensor;
pub mod session;
pub mod sge_root;
pub mod shepherd;
pub mod simulate;
pub mod spawn;
pub mod usage;
