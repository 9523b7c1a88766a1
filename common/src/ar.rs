//! Advance reservations: their time window as `qrsub` gives it, checked as SGE checks
//! it (`sge_advance_reservation.c`), and their life on the master's clock.

use gantry_proto::{AdvanceReservation, ArState};

/// Why a requested window is refused, in SGE's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    #[error("missing value for \"end time or duration\" in advance reservation request")]
    Missing,
    #[error("difference between end and start time does not correspond to duration")]
    Dissonant,
    #[error("start time is later than end time")]
    StartAfterEnd,
    #[error("start time is in the past")]
    StartInPast,
}

/// The window `[start, end)` of `-a start -e end -d duration` at `now`: a missing start
/// is now, a missing end is start plus duration, a missing duration the difference; all
/// three given must agree.
pub fn window(
    start: Option<i64>,
    end: Option<i64>,
    duration: Option<i64>,
    now: i64,
) -> Result<(i64, i64), WindowError> {
    let start = start.unwrap_or(now);
    let (end, duration) = match (end, duration) {
        (None, None) => return Err(WindowError::Missing),
        (None, Some(d)) => (start.saturating_add(d), d),
        (Some(e), None) => (e, e - start),
        (Some(e), Some(d)) => (e, d),
    };
    if end - start != duration {
        return Err(WindowError::Dissonant);
    }
    if start > end {
        return Err(WindowError::StartAfterEnd);
    }
    if start < now {
        return Err(WindowError::StartInPast);
    }
    Ok((start, end))
}

/// The state an advance reservation is in at `now` by its window alone (deletion and
/// errors are set by the master as they happen).
pub fn clock_state(ar: &AdvanceReservation, now: i64) -> ArState {
    match ar.state {
        ArState::Deleted | ArState::Exited => ar.state,
        _ if now >= ar.end => ArState::Exited,
        ArState::Error => ArState::Error,
        _ if now >= ar.start => ArState::Running,
        _ => ArState::Waiting,
    }
}

/// A `qrstat`/`qrdel` reference: an id, or a name (wildcards allowed).
pub fn matches_reference(ar: &AdvanceReservation, reference: &str) -> bool {
    match reference.parse::<gantry_proto::ArId>() {
        Ok(id) => ar.id == id,
        Err(_) => ar
            .spec
            .name
            .as_deref()
            .is_some_and(|n| crate::job::wildcard(reference, n)),
    }
}

/// `DURATION_OFFSET` (`sched_conf(5)` `params`): what a job's run time is taken to
/// exceed its limit by (start and stop, prolog and epilog). SGE's default, 60 seconds.
pub const DEFAULT_DURATION_OFFSET: i64 = 60;

/// `DURATION_OFFSET` from the scheduler's `params` (`DURATION_OFFSET=30,PROFILE=1`), in
/// seconds; SGE's default without it.
pub fn duration_offset(params: &str) -> i64 {
    params
        .split([',', ' '])
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("DURATION_OFFSET"))
        .and_then(|(_, v)| crate::value::parse_time(v.trim()).ok())
        .filter(|t| t.is_finite() && *t >= 0.0)
        .map_or(DEFAULT_DURATION_OFFSET, |t| t as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_offset_from_params() {
        assert_eq!(duration_offset("none"), 60);
        assert_eq!(duration_offset("DURATION_OFFSET=30"), 30);
        assert_eq!(duration_offset("PROFILE=1,DURATION_OFFSET=0:2:0"), 120);
        assert_eq!(duration_offset("DURATION_OFFSET=x"), 60);
    }

    #[test]
    fn windows_as_sge_checks_them() {
        let now = 1000;
        type Case = (
            Option<i64>,
            Option<i64>,
            Option<i64>,
            Result<(i64, i64), WindowError>,
        );
        let cases: &[Case] = &[
            (None, None, Some(600), Ok((1000, 1600))),
            (Some(2000), None, Some(600), Ok((2000, 2600))),
            (Some(2000), Some(2600), None, Ok((2000, 2600))),
            (Some(2000), Some(2600), Some(600), Ok((2000, 2600))),
            (
                Some(2000),
                Some(2600),
                Some(7200),
                Err(WindowError::Dissonant),
            ),
            (Some(2000), None, None, Err(WindowError::Missing)),
            (None, None, None, Err(WindowError::Missing)),
            (
                Some(2000),
                Some(1500),
                None,
                Err(WindowError::StartAfterEnd),
            ),
            (Some(10), None, Some(600), Err(WindowError::StartInPast)),
            // -e and -d without -a: the start is now, and the three must agree.
            (None, Some(1600), Some(600), Ok((1000, 1600))),
            (None, Some(1700), Some(600), Err(WindowError::Dissonant)),
        ];
        for (start, end, duration, want) in cases {
            assert_eq!(
                window(*start, *end, *duration, now),
                *want,
                "{start:?} {end:?} {duration:?}"
            );
        }
    }
}
