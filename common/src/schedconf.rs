//! The scheduler configuration (`qconf -ssconf`, `-msconf`, `-Msconf`): SGE's attributes
//! with the defaults a fresh cell has, validated by kind, printed as SGE prints them.

use crate::conf::{parse_entries, split_pairs, FileError};
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

fn check(kind: Kind, key: &str, value: &str) -> Result<(), String> {
    let ok = match kind {
        Kind::Text => true,
        Kind::Time => parse_time(value).is_ok(),
        Kind::Uint => value.parse::<u64>().is_ok(),
        Kind::Double => parse_double(value).is_ok(),
        Kind::Bool => crate::value::parse_bool(value).is_ok(),
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
        Ok(())
    } else {
        Err(format!(
            "value \"{value}\" for attribute \"{key}\" of the scheduler configuration is invalid"
        ))
    }
}

/// Read a scheduler configuration as `-Msconf` and `-msconf` take it: every attribute
/// validated, unknown ones refused, missing ones at their default; all or nothing.
pub fn parse_schedconf(text: &str) -> Result<Config, FileError> {
    let entries = parse_entries(text)?;
    for e in &entries {
        let Some((_, _, kind)) = ATTRIBUTES.iter().find(|(k, _, _)| *k == e.key) else {
            return Err(FileError::at(
                e.line,
                format!("unknown attribute \"{}\" in scheduler configuration", e.key),
            ));
        };
        check(*kind, &e.key, &e.value).map_err(|r| FileError::at(e.line, r))?;
    }
    Ok(Config {
        name: "sched".to_string(),
        entries: ATTRIBUTES
            .iter()
            .map(|(k, default, _)| {
                let v = entries
                    .iter()
                    .find(|e| e.key == *k)
                    .map_or(*default, |e| e.value.as_str());
                (k.to_string(), v.to_string())
            })
            .collect(),
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

    #[test]
    fn bad_values_are_refused_with_their_line() {
        let cases = [
            ("queue_sort_method random\n", "line 1: value \"random\" for attribute \"queue_sort_method\" of the scheduler configuration is invalid"),
            ("algorithm default\nload_formula np_load_avg+\n", "line 2: value \"np_load_avg+\" for attribute \"load_formula\" of the scheduler configuration is invalid"),
            ("job_load_adjustments np_load_avg\n", "line 1: value \"np_load_avg\" for attribute \"job_load_adjustments\" of the scheduler configuration is invalid"),
            ("schedule_interval soon\n", "line 1: value \"soon\" for attribute \"schedule_interval\" of the scheduler configuration is invalid"),
            ("nosuch 1\n", "line 1: unknown attribute \"nosuch\" in scheduler configuration"),
            ("group_sort usage/quotas\n", "line 1: value \"usage/quotas\" for attribute \"group_sort\" of the scheduler configuration is invalid"),
            ("group_slot_weight slots*\n", "line 1: value \"slots*\" for attribute \"group_slot_weight\" of the scheduler configuration is invalid"),
            ("group_quota_rounds -1\n", "line 1: value \"-1\" for attribute \"group_quota_rounds\" of the scheduler configuration is invalid"),
        ];
        for (text, want) in cases {
            assert_eq!(parse_schedconf(text).unwrap_err().to_string(), want);
        }
        let c = parse_schedconf("queue_sort_method seqno\n").unwrap();
        assert_eq!(c.get("queue_sort_method"), Some("seqno"));
        assert_eq!(c.get("load_formula"), Some("np_load_avg"));
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
