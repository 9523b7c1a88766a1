//! The scheduler configuration (`qconf -ssconf`, `-msconf`, `-Msconf`): SGE's attributes
//! with the defaults a fresh cell has, validated by kind, printed as SGE prints them.

use crate::conf::{parse_entries, split_pairs, SgeFileError};
use crate::value::{parse_double, parse_time};
use gantry_proto::Config;

#[derive(Debug, Clone, Copy)]
enum Kind {
    Text,
    Time,
    Uint,
    Double,
    Bool,
    OneOf(&'static [&'static str]),
    /// `name=value,...` or `none`
    Pairs,
    Formula,
    /// An arithmetic formula over the names a group quota setting offers.
    GroupFormula(fn(&str) -> bool),
}

/// Every attribute in SGE's order, with the default of a fresh cell.
const ATTRIBUTES: &[(&str, &str, Kind)] = &[
    ("algorithm", "default", Kind::OneOf(&["default"])),
    ("schedule_interval", "0:0:1", Kind::Time),
    ("maxujobs", "0", Kind::Uint),
    ("queue_sort_method", "load", Kind::OneOf(&["load", "seqno"])),
    ("job_load_adjustments", "np_load_avg=0.50", Kind::Pairs),
    ("load_adjustment_decay_time", "0:7:30", Kind::Time),
    ("load_formula", "np_load_avg", Kind::Formula),
    ("schedd_job_info", "true", Kind::Text),
    ("flush_submit_sec", "0", Kind::Uint),
    ("flush_finish_sec", "0", Kind::Uint),
    ("params", "none", Kind::Text),
    ("reprioritize_interval", "0:0:0", Kind::Time),
    ("halftime", "168", Kind::Uint),
    (
        "usage_weight_list",
        "cpu=1.000000,mem=0.000000,io=0.000000",
        Kind::Pairs,
    ),
    ("compensation_factor", "5.000000", Kind::Double),
    ("weight_user", "0.250000", Kind::Double),
    ("weight_project", "0.250000", Kind::Double),
    ("weight_department", "0.250000", Kind::Double),
    ("weight_job", "0.250000", Kind::Double),
    ("weight_tickets_functional", "0", Kind::Uint),
    ("weight_tickets_share", "0", Kind::Uint),
    ("share_override_tickets", "TRUE", Kind::Bool),
    ("share_functional_shares", "TRUE", Kind::Bool),
    ("max_functional_jobs_to_schedule", "200", Kind::Uint),
    ("report_pjob_tickets", "TRUE", Kind::Bool),
    ("max_pending_tasks_per_job", "50", Kind::Uint),
    ("halflife_decay_list", "none", Kind::Text),
    ("policy_hierarchy", "OFS", Kind::Text),
    ("weight_ticket", "0.500000", Kind::Double),
    ("weight_waiting_time", "0.278000", Kind::Double),
    ("weight_deadline", "3600000.000000", Kind::Double),
    ("weight_urgency", "0.500000", Kind::Double),
    ("weight_priority", "0.000000", Kind::Double),
    ("max_reservation", "0", Kind::Uint),
    ("default_duration", "INFINITY", Kind::Time),
    // Gantry's own, after SGE's: hierarchical group quotas (`qconf -sgq`).
    ("group_quota_rounds", "3", Kind::Uint),
    (
        "group_sort",
        "usage/quota",
        Kind::GroupFormula(is_group_sort_name),
    ),
    ("group_slot_weight", "slots", Kind::GroupFormula(|_| true)),
];

/// The names `group_sort` may use, per group: the weighted slots its jobs hold
/// (`usage`), its quota this cycle, what its jobs ask for, its allocation this cycle and
/// the surplus it got.
pub const GROUP_SORT_NAMES: &[&str] = &["usage", "quota", "demand", "allocation", "surplus"];

pub fn is_group_sort_name(name: &str) -> bool {
    GROUP_SORT_NAMES.contains(&name)
}

/// The scheduler configuration of a fresh cell.
pub fn default_schedconf() -> Config {
    Config {
        name: "sched".to_string(),
        entries: ATTRIBUTES
            .iter()
            .map(|(k, v, _)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

/// Parse a load formula (`np_load_avg`, `load_avg*2-mem_free*0.5+3`): terms `name`,
/// `w*name`, `name*w` or a number, joined by `+` and `-`; (weight, load value) pairs,
/// an empty name for a constant.
pub fn parse_load_formula(text: &str) -> Result<Vec<(f64, String)>, String> {
    let invalid = || format!("invalid load formula \"{text}\"");
    if text.trim().is_empty() {
        return Err(invalid());
    }
    let mut terms = Vec::new();
    for (sign, term) in crate::conf::signed_terms(text) {
        let (weight, name) = match term.split_once('*') {
            Some((a, b)) => match (a.trim().parse::<f64>(), b.trim().parse::<f64>()) {
                (Ok(w), Err(_)) => (w, b.trim().to_string()),
                (Err(_), Ok(w)) => (w, a.trim().to_string()),
                _ => return Err(invalid()),
            },
            None => match term.parse::<f64>() {
                Ok(w) => (w, String::new()),
                Err(_) => (1.0, term.to_string()),
            },
        };
        if term.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            return Err(invalid());
        }
        terms.push((sign * weight, name));
    }
    Ok(terms)
}

/// Why a scheduler configuration is refused (see [`SgeFileError`]).
pub type SchedConfError = SgeFileError;

fn read_uint(key: &str, value: &str) -> Result<String, SchedConfError> {
    crate::conf::read_u_long32(key, value).map(|n| n.to_string())
}

/// A double, printed as SGE prints it (`%f`).
fn read_double(value: &str) -> Result<f64, SchedConfError> {
    let v = value.trim();
    v.parse::<f64>()
        .ok()
        .filter(|d| d.is_finite())
        .ok_or_else(|| {
            SchedConfError::Reading(format!("error parsing double value from string \"{v}\""))
        })
}

/// `name=double,...` (or `none`, printed `NONE`), each weight printed as `%f`.
fn read_weights(value: &str) -> Result<String, SchedConfError> {
    if value.trim().eq_ignore_ascii_case("none") {
        return Ok("NONE".to_string());
    }
    let mut out = Vec::new();
    for pair in value.split(',') {
        let (name, weight) = pair.split_once('=').unwrap_or((pair, ""));
        out.push(format!("{}={:.6}", name.trim(), read_double(weight)?));
    }
    Ok(out.join(","))
}

/// `policy_hierarchy`: `NONE` (any case), or the policies O (override), F (functional)
/// and S (share tree), each at most once, in the order they are applied.
fn valid_policy_hierarchy(value: &str) -> bool {
    if value.eq_ignore_ascii_case("none") {
        return true;
    }
    let mut seen = String::new();
    value.chars().all(|c| {
        let fresh = matches!(c, 'O' | 'F' | 'S') && !seen.contains(c);
        seen.push(c);
        fresh
    })
}

/// `halflife_decay_list`: `none` or `name=time:...` (SGE's words, its typo included).
fn valid_halflife_decay_list(value: &str) -> bool {
    value.eq_ignore_ascii_case("none")
        || value.split(':').all(|item| {
            item.split_once('=')
                .is_some_and(|(n, t)| !n.trim().is_empty() && t.trim().parse::<f64>().is_ok())
        })
}

/// Check one attribute's value; what is kept (SGE's printed form for numbers and
/// booleans, the value as written otherwise).
fn check(kind: Kind, key: &str, value: &str, line: usize) -> Result<String, SchedConfError> {
    let refused = |m: String| Err(SchedConfError::Refused(m));
    match (key, kind) {
        ("algorithm", _) if value != "default" => {
            return refused(format!(
                "attribute \"{value}\" is not a valid algorithm name."
            ));
        }
        ("policy_hierarchy", _) if !valid_policy_hierarchy(value) => {
            return refused("Invalid policy hierarchy string. Disabling policy hierarchy.".into());
        }
        ("halflife_decay_list", _) if !valid_halflife_decay_list(value) => {
            return refused("Invalid halflife_day_list. Ignoring the setting.".into());
        }
        ("usage_weight_list", _) => return read_weights(value),
        ("schedd_job_info", _) => {
            let v = value.trim();
            let known = v.eq_ignore_ascii_case("true")
                || v.eq_ignore_ascii_case("false")
                || v.strip_prefix("job_list")
                    .is_some_and(|l| l.starts_with(char::is_whitespace) && !l.trim().is_empty());
            if !known {
                // SGE's words, the space after the name its own.
                return refused("attribute \"schedd_job_info \" is not a valid parameter".into());
            }
        }
        ("max_pending_tasks_per_job", _) => {
            let n = read_uint(key, value)?;
            if n == "0" {
                return refused(format!(
                    "invalid setting for param: \"{key}\"(should be \">0\")"
                ));
            }
            return Ok(n);
        }
        _ => {}
    }
    let ok = match kind {
        Kind::Uint => return read_uint(key, value),
        Kind::Double => return read_double(value).map(|d| format!("{d:.6}")),
        Kind::Bool => {
            return match value.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" | "1" => Ok("TRUE".into()),
                "false" | "no" | "0" => Ok("FALSE".into()),
                _ => Err(SchedConfError::Reading(format!(
                    "error parsing value \"{}\"",
                    value.trim()
                ))),
            };
        }
        Kind::Time if parse_time(value).is_err() => {
            return refused(format!("attribute \"{key}\" is not a time value"));
        }
        Kind::Text | Kind::Time => true,
        Kind::OneOf(words) => words.iter().any(|w| w.eq_ignore_ascii_case(value)),
        Kind::Pairs => {
            value.eq_ignore_ascii_case("none")
                || split_pairs(value, 0, key)
                    .is_ok_and(|p| p.iter().all(|(_, v)| parse_double(v).is_ok()))
        }
        Kind::Formula => parse_load_formula(value).is_ok(),
        Kind::GroupFormula(known) => crate::formula::Formula::parse(value, known).is_ok(),
    };
    if ok {
        Ok(value.to_string())
    } else {
        // Values SGE would take (and ignore, or misread): refused, in Gantry's words.
        refused(format!(
            "line {line}: value \"{value}\" for attribute \"{key}\" of the scheduler configuration is invalid"
        ))
    }
}

/// Gantry's own attributes, after SGE's: a file of SGE's attributes alone (one carried
/// over from an SGE cell) leaves them at their defaults.
const OWN_ATTRIBUTES: &[&str] = &["group_quota_rounds", "group_sort", "group_slot_weight"];

/// Read a scheduler configuration as `-Msconf` and `-msconf` take it, as SGE 8.1.9
/// reads it: every value checked (in file order) and kept in SGE's printed form, an
/// unknown attribute refused, each of SGE's attributes required (Gantry's own at their
/// defaults when absent); all or nothing.
pub fn parse_schedconf(text: &str) -> Result<Config, SchedConfError> {
    let entries = parse_entries(text)?;
    let mut values: Vec<(&str, String)> = Vec::new();
    for e in &entries {
        let Some((key, _, kind)) = ATTRIBUTES.iter().find(|(k, _, _)| *k == e.key) else {
            return Err(SchedConfError::Reading(format!(
                "unknown attribute name \"{}\"",
                crate::names::bounded_message(&e.key)
            )));
        };
        values.push((key, check(*kind, &e.key, &e.value, e.line)?));
    }
    let mut out = Vec::with_capacity(ATTRIBUTES.len());
    for (key, default, _) in ATTRIBUTES {
        let value = match values.iter().rev().find(|(k, _)| k == key) {
            Some((_, v)) => v.clone(),
            None if OWN_ATTRIBUTES.contains(key) => default.to_string(),
            None => {
                return Err(SchedConfError::Refused(format!(
                    "required attribute \"{key}\" is missing"
                )))
            }
        };
        out.push((key.to_string(), value));
    }
    Ok(Config {
        name: "sched".to_string(),
        entries: out,
    })
}

/// The scheduler configuration as `qconf -ssconf` prints it.
pub fn print_schedconf(conf: &Config) -> String {
    conf.entries
        .iter()
        .map(|(k, v)| format!("{k:<34}{v}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn defaults_print_as_sge_does() {
        // SGE's attributes as SGE prints them, then Gantry's own.
        let printed = print_schedconf(&default_schedconf());
        let sge = include_str!("../tests/fixtures/qconf-ssconf.txt");
        assert_eq!(&printed[..sge.len()], sge);
        assert_eq!(
            &printed[sge.len()..],
            "group_quota_rounds                3\n\
             group_sort                        usage/quota\n\
             group_slot_weight                 slots\n"
        );
        assert_eq!(
            parse_schedconf(&print_schedconf(&default_schedconf())).unwrap(),
            default_schedconf()
        );
    }

    /// The default configuration with one attribute's line changed.
    fn with(key: &str, value: &str) -> String {
        print_schedconf(&default_schedconf())
            .lines()
            .map(|l| match l.split_whitespace().next() {
                Some(k) if k == key => format!("{key:<34}{value}\n"),
                _ => format!("{l}\n"),
            })
            .collect()
    }

    #[test]
    fn values_are_checked_and_refused_in_sge_words() {
        use crate::conf::SgeFileError::{Reading, Refused};
        // Each line as SGE 8.1.9's `qconf -Msconf` says it (recorded from it); the values
        // Gantry refuses where SGE takes and ignores them in Gantry's own words.
        let cases: &[(&str, &str, SchedConfError)] = &[
            ("policy_hierarchy", "XYZ", Refused("Invalid policy hierarchy string. Disabling policy hierarchy.".into())),
            ("policy_hierarchy", "OFSD", Refused("Invalid policy hierarchy string. Disabling policy hierarchy.".into())),
            ("policy_hierarchy", "OO", Refused("Invalid policy hierarchy string. Disabling policy hierarchy.".into())),
            ("policy_hierarchy", "ofs", Refused("Invalid policy hierarchy string. Disabling policy hierarchy.".into())),
            ("halftime", "-1", Reading("parameter \"halftime\" must be a positive number".into())),
            ("halftime", "abc", Reading("error parsing unsigned long value from string \"abc\"".into())),
            ("halftime", "1.5", Reading("\"1.5\" is not an u_long32 value".into())),
            ("weight_tickets_share", "-1", Reading("parameter \"weight_tickets_share\" must be a positive number".into())),
            ("maxujobs", "foo", Reading("error parsing unsigned long value from string \"foo\"".into())),
            ("max_reservation", "-1", Reading("parameter \"max_reservation\" must be a positive number".into())),
            ("max_pending_tasks_per_job", "0", Refused("invalid setting for param: \"max_pending_tasks_per_job\"(should be \">0\")".into())),
            ("compensation_factor", "abc", Reading("error parsing double value from string \"abc\"".into())),
            ("weight_user", "abc", Reading("error parsing double value from string \"abc\"".into())),
            ("usage_weight_list", "cpu=abc", Reading("error parsing double value from string \"abc\"".into())),
            ("share_override_tickets", "foo", Reading("error parsing value \"foo\"".into())),
            ("report_pjob_tickets", "foo", Reading("error parsing value \"foo\"".into())),
            ("schedule_interval", "soon", Refused("attribute \"schedule_interval\" is not a time value".into())),
            ("default_duration", "soon", Refused("attribute \"default_duration\" is not a time value".into())),
            ("halflife_decay_list", "foo", Refused("Invalid halflife_day_list. Ignoring the setting.".into())),
            ("schedd_job_info", "foo", Refused("attribute \"schedd_job_info \" is not a valid parameter".into())),
            ("algorithm", "foo", Refused("attribute \"foo\" is not a valid algorithm name.".into())),
            ("queue_sort_method", "random", Refused("line 4: value \"random\" for attribute \"queue_sort_method\" of the scheduler configuration is invalid".into())),
            ("load_formula", "np_load_avg+", Refused("line 7: value \"np_load_avg+\" for attribute \"load_formula\" of the scheduler configuration is invalid".into())),
            ("job_load_adjustments", "np_load_avg", Refused("line 5: value \"np_load_avg\" for attribute \"job_load_adjustments\" of the scheduler configuration is invalid".into())),
            ("group_sort", "usage/quotas", Refused("line 37: value \"usage/quotas\" for attribute \"group_sort\" of the scheduler configuration is invalid".into())),
            ("group_slot_weight", "slots*", Refused("line 38: value \"slots*\" for attribute \"group_slot_weight\" of the scheduler configuration is invalid".into())),
            ("group_quota_rounds", "-1", Reading("parameter \"group_quota_rounds\" must be a positive number".into())),
        ];
        for (key, value, want) in cases {
            assert_eq!(
                &parse_schedconf(&with(key, value)).unwrap_err(),
                want,
                "{key} {value}"
            );
        }
        assert_eq!(
            parse_schedconf(&format!("{}nosuch 1\n", with("halftime", "168"))).unwrap_err(),
            Reading("unknown attribute name \"nosuch\"".into())
        );
        let without: String = with("halftime", "168")
            .lines()
            .filter(|l| !l.starts_with("halftime"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            parse_schedconf(&without).unwrap_err(),
            Refused("required attribute \"halftime\" is missing".into())
        );
    }

    #[test]
    fn values_are_kept_as_sge_prints_them() {
        // What SGE 8.1.9's `qconf -ssconf` shows after `-Msconf` with these (recorded).
        let cases = [
            ("policy_hierarchy", "NONE", "NONE"),
            ("policy_hierarchy", "none", "none"),
            ("policy_hierarchy", "FSO", "FSO"),
            ("policy_hierarchy", "S", "S"),
            ("usage_weight_list", "cpu=2", "cpu=2.000000"),
            (
                "usage_weight_list",
                "cpu=0.5,mem=0.5,io=0",
                "cpu=0.500000,mem=0.500000,io=0.000000",
            ),
            ("usage_weight_list", "none", "NONE"),
            ("compensation_factor", "-1", "-1.000000"),
            ("weight_user", "1.5", "1.500000"),
            ("weight_waiting_time", "1", "1.000000"),
            ("share_override_tickets", "yes", "TRUE"),
            ("share_override_tickets", "1", "TRUE"),
            ("share_functional_shares", "0", "FALSE"),
            ("halftime", "0", "0"),
            ("max_pending_tasks_per_job", "10", "10"),
            ("halflife_decay_list", "cpu=1:mem=2", "cpu=1:mem=2"),
            ("default_duration", "1:0:0", "1:0:0"),
            ("queue_sort_method", "seqno", "seqno"),
        ];
        for (key, value, kept) in cases {
            let c = parse_schedconf(&with(key, value)).unwrap();
            assert_eq!(c.get(key), Some(kept), "{key} {value}");
        }
        // A file of SGE's attributes alone leaves Gantry's own at their defaults.
        let sge_only: String = with("halftime", "168")
            .lines()
            .filter(|l| !l.starts_with("group_"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(parse_schedconf(&sge_only).unwrap(), default_schedconf());
    }

    proptest::proptest! {
        /// Every hierarchy SGE takes is read; nothing else is.
        #[test]
        fn a_policy_hierarchy_is_each_of_o_f_s_at_most_once(text in "[OFSDofs]{1,4}") {
            let mut letters: Vec<char> = text.chars().collect();
            let valid = letters.iter().all(|c| "OFS".contains(*c)) && {
                letters.sort_unstable();
                letters.windows(2).all(|w| w[0] != w[1])
            };
            let read = parse_schedconf(&with("policy_hierarchy", &text));
            proptest::prop_assert_eq!(read.is_ok(), valid, "{}", text);
        }
    }

    #[test]
    fn load_formulas() {
        assert_eq!(
            parse_load_formula("np_load_avg").unwrap(),
            vec![(1.0, "np_load_avg".to_string())]
        );
        assert_eq!(
            parse_load_formula("load_avg*2-mem_free*0.5+3").unwrap(),
            vec![
                (2.0, "load_avg".to_string()),
                (-0.5, "mem_free".to_string()),
                (3.0, String::new())
            ]
        );
        for bad in ["", "a+", "a*b", "+a", "a b"] {
            assert!(parse_load_formula(bad).is_err(), "{bad}");
        }
    }
}
