//! The spool: the redb database behind a checksummed journal, and the job scripts beside
//! them.

pub(crate) mod journal;
pub mod scripts;
pub mod store;
