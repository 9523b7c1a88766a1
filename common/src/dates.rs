//! Grid Engine's date_time format, `[[CC]YY]MMDDhhmm[.SS]`, in local time (`qsub -a`,
//! `qacct -b/-e`, `qrsub -a/-e`).

/// A Unix time in the local time zone, in a `strftime` format (the number itself if
/// it is no time).
pub fn local_time(ts: i64, fmt: &str) -> String {
    time_in(&jiff::tz::TimeZone::system(), ts, fmt)
}

/// The same in `zone`.
pub fn time_in(zone: &jiff::tz::TimeZone, ts: i64, fmt: &str) -> String {
    jiff::Timestamp::from_second(ts)
        .map(|t| t.to_zoned(zone.clone()).strftime(fmt).to_string())
        .unwrap_or_else(|_| ts.to_string())
}

/// The local time zone as a command that writes many times takes it once: `TZ`'s when
/// it is set, else `/etc/localtime`'s rules read as they are. (jiff's own lookup of
/// the system's zone also walks the zoneinfo directory to learn the zone's name, which
/// no time column shows: a tenth of a long `qstat`'s time.)
pub fn local_zone() -> jiff::tz::TimeZone {
    if std::env::var_os("TZ").is_none() {
        let read = std::fs::read("/etc/localtime").ok();
        if let Some(zone) = read.and_then(|rules| jiff::tz::TimeZone::tzif("Local", &rules).ok()) {
            return zone;
        }
    }
    jiff::tz::TimeZone::system()
}

/// Parse a date_time; missing century/year means the current one.
pub fn parse_date_time(text: &str, now: jiff::Zoned) -> Option<i64> {
    let (main, secs) = match text.split_once('.') {
        Some((m, s)) if s.len() == 2 => (m, s.parse::<i8>().ok()?),
        Some(_) => return None,
        None => (text, 0),
    };
    if !main.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let num = |s: &str| s.parse::<i32>().ok();
    let (year, rest) = match main.len() {
        8 => (now.year() as i32, main),
        10 => (
            (now.year() as i32 / 100) * 100 + num(&main[..2])?,
            &main[2..],
        ),
        12 => (num(&main[..4])?, &main[4..]),
        _ => return None,
    };
    let month = num(&rest[0..2])? as i8;
    let day = num(&rest[2..4])? as i8;
    let hour = num(&rest[4..6])? as i8;
    let minute = num(&rest[6..8])? as i8;
    let dt = jiff::civil::DateTime::new(year as i16, month, day, hour, minute, secs, 0).ok()?;
    let zoned = dt.to_zoned(now.time_zone().clone()).ok()?;
    Some(zoned.timestamp().as_second())
}

/// Why a `[[CC]YY]MMDDhhmm[.SS]` time of the right form is no time: SGE's words
/// (`Invalid month specification.`), which its qsub prints before refusing the option.
pub fn date_time_fault(text: &str) -> Option<&'static str> {
    let (main, secs) = match text.split_once('.') {
        Some((m, s)) if s.len() == 2 => (m, s.parse::<u32>().ok()?),
        Some(_) => return None,
        None => (text, 0),
    };
    if !main.chars().all(|c| c.is_ascii_digit()) || ![8, 10, 12].contains(&main.len()) {
        return None;
    }
    let rest = &main[main.len() - 8..];
    let field = |at: usize| rest[at..at + 2].parse::<u32>().ok();
    let (month, day, hour, minute) = (field(0)?, field(2)?, field(4)?, field(6)?);
    if !(1..=12).contains(&month) {
        Some("Invalid month specification.")
    } else if !(1..=31).contains(&day) {
        Some("Invalid day specification.")
    } else if hour > 23 {
        Some("Invalid hour specification.")
    } else if minute > 59 {
        Some("Invalid minute specification.")
    } else if secs > 59 {
        Some("Invalid seconds specification.")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The zone a command takes once writes the times jiff's own lookup of the local
    /// zone writes, across years and seasons.
    #[test]
    fn the_local_zone_read_once_is_the_systems() {
        let zone = local_zone();
        for ts in (0..40).map(|n| 1_600_000_000 + n * 7_777_777) {
            assert_eq!(
                time_in(&zone, ts, "%m/%d/%Y %H:%M:%S %z"),
                local_time(ts, "%m/%d/%Y %H:%M:%S %z")
            );
        }
    }

    #[test]
    fn faults_are_named_as_sge_names_them() {
        let table = [
            ("2099133112", Some("Invalid month specification.")),
            ("203001011200.61", Some("Invalid seconds specification.")),
            ("12321200", Some("Invalid day specification.")),
            ("12012500", Some("Invalid hour specification.")),
            ("12012360", Some("Invalid minute specification.")),
            ("203001011200", None),
            ("tomorrow", None),
        ];
        for (text, want) in table {
            assert_eq!(date_time_fault(text), want, "{text}");
        }
    }

    #[test]
    fn date_times() {
        let now = jiff::Timestamp::from_second(1_795_000_000)
            .unwrap()
            .to_zoned(jiff::tz::TimeZone::UTC);
        let at = |s: &str| parse_date_time(s, now.clone());
        let full = at("202611221530.45").unwrap();
        assert_eq!(
            jiff::Timestamp::from_second(full).unwrap().to_string(),
            "2026-11-22T15:30:45Z"
        );
        assert_eq!(at("2611221530.45"), Some(full));
        assert_eq!(at("11221530.45"), Some(full));
        assert_eq!(at("11221530"), Some(full - 45));
        for bad in [
            "",
            "1122153",
            "11221530.4",
            "13221530",
            "1122x530",
            "202602301200",
        ] {
            assert_eq!(at(bad), None, "{bad}");
        }
    }
}
