//! The scheduler's one clock: a point in time and a span, both in milliseconds.
//!
//! The scheduler never reads a clock; the caller passes the time a cycle decides at.
//! Milliseconds since the Unix epoch leave room for the load adjustment's decay (which
//! works on fractions of a second) while job run times and reservation windows are
//! whole seconds.

use std::fmt;
use std::ops::{Add, Sub};

/// A point in time: milliseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(i64);

/// A length of time in milliseconds (never negative).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Span(i64);

impl Time {
    /// The earliest time there is (an open start).
    pub const MIN: Time = Time(i64::MIN);
    /// The latest time there is (an open end).
    pub const MAX: Time = Time(i64::MAX);

    pub const fn from_millis(ms: i64) -> Time {
        Time(ms)
    }

    pub const fn from_secs(s: i64) -> Time {
        Time(s.saturating_mul(1000))
    }

    /// Seconds since the epoch as a float (for values that decay continuously).
    pub fn from_secs_f64(s: f64) -> Time {
        Time((s * 1000.0).round() as i64)
    }

    pub const fn millis(self) -> i64 {
        self.0
    }

    /// Whole seconds since the epoch, rounded down.
    pub const fn secs(self) -> i64 {
        self.0.div_euclid(1000)
    }

    pub fn secs_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// The span from `earlier` to `self` (zero when `earlier` is later).
    pub fn since(self, earlier: Time) -> Span {
        Span(self.0.saturating_sub(earlier.0).max(0))
    }
}

impl Span {
    pub const ZERO: Span = Span(0);

    pub const fn from_millis(ms: i64) -> Span {
        Span(if ms < 0 { 0 } else { ms })
    }

    pub const fn from_secs(s: i64) -> Span {
        Span::from_millis(s.saturating_mul(1000))
    }

    pub const fn millis(self) -> i64 {
        self.0
    }

    pub fn secs_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }
}

impl Add<Span> for Time {
    type Output = Time;
    fn add(self, rhs: Span) -> Time {
        Time(self.0.saturating_add(rhs.0))
    }
}

impl Sub<Span> for Time {
    type Output = Time;
    fn sub(self, rhs: Span) -> Time {
        Time(self.0.saturating_sub(rhs.0))
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}", self.secs(), self.0.rem_euclid(1000))
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}s", self.0 / 1000, self.0 % 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        assert_eq!(Time::from_secs(12).millis(), 12_000);
        assert_eq!(Time::from_millis(12_999).secs(), 12);
        assert_eq!(Time::from_millis(-1).secs(), -1);
        assert_eq!(Time::from_secs_f64(1.2345).millis(), 1235);
        assert_eq!(Span::from_secs(-5), Span::ZERO);
        assert_eq!(
            Time::from_secs(10).since(Time::from_secs(4)),
            Span::from_secs(6)
        );
        assert_eq!(Time::from_secs(4).since(Time::from_secs(10)), Span::ZERO);
        assert_eq!(Time::MAX + Span::from_secs(1), Time::MAX);
        assert_eq!(
            Time::from_secs(3) + Span::from_millis(500),
            Time::from_millis(3500)
        );
        assert_eq!(Time::from_millis(3500).to_string(), "3.500");
    }
}
