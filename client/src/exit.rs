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
/// `qhold`/`qrls` of a job that does not exist (SGE's `STATUS_EEXIST`).
pub const EEXIST: u8 = 3;
/// `qhold`/`qrls` of an operator or system hold by a user without the right (SGE's).
pub const ENOOPR: u8 = 10;
/// `qhold`/`qrls` of another user's job (SGE's).
pub const ENOTOWNER: u8 = 18;
/// A cluster-wide limit refused the request (`qrsub` beyond `max_advance_reservations`).
pub const LIMIT_REACHED: u8 = 25;

/// The exit status for a refusal.
pub fn for_refusal(kind: RefusalKind) -> u8 {
    match kind {
        RefusalKind::Denied
        | RefusalKind::NotFound
        | RefusalKind::AlreadyExists
        | RefusalKind::Invalid
        | RefusalKind::Internal
        | RefusalKind::OperatorRequired
        | RefusalKind::OwnerRequired => FAILURE,
        RefusalKind::LimitReached => LIMIT_REACHED,
    }
}

/// The exit status of `qhold` and `qrls` for a refusal: SGE's answer status.
pub fn for_hold_refusal(kind: RefusalKind) -> u8 {
    match kind {
        RefusalKind::NotFound => EEXIST,
        RefusalKind::OperatorRequired => ENOOPR,
        RefusalKind::OwnerRequired => ENOTOWNER,
        other => for_refusal(other),
    }
}
