//! The one table of exit statuses the commands use, as scripts written for Grid Engine
//! expect them.

use gantry_proto::RefusalKind;

pub const SUCCESS: u8 = 0;
/// Any refused or failed request, a usage error, an unreachable daemon: SGE exits 1.
pub const FAILURE: u8 = 1;
/// A submit option with a missing or meaningless argument (SGE's `STATUS_ESEMANTIC`).
pub const ESEMANTIC: u8 = 2;
/// An option the command does not take (SGE's `STATUS_ENOIMP`).
pub const ENOIMP: u8 = 5;
/// A malformed option argument (SGE's `STATUS_ESYNTAX`).
pub const ESYNTAX: u8 = 7;
/// `qsub`'s script cannot be read (SGE's).
pub const NO_SCRIPT: u8 = 14;
/// A cluster-wide limit refused the request (`qrsub` beyond `max_advance_reservations`).
pub const LIMIT_REACHED: u8 = 25;

/// The exit status for a refusal.
pub fn for_refusal(kind: RefusalKind) -> u8 {
    match kind {
        RefusalKind::Denied
        | RefusalKind::NotFound
        | RefusalKind::AlreadyExists
        | RefusalKind::Invalid
        | RefusalKind::Internal => FAILURE,
        RefusalKind::LimitReached => LIMIT_REACHED,
    }
}
