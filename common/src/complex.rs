//! The complex: attribute definitions (`qconf -sc`), the built-in list a fresh cell has,
//! and the file format `qconf -sc` prints and `-Mc` reads.

use std::collections::HashMap;

use crate::value::{parse_relop, parse_type, parse_value, relop_str, type_name, Value};
use gantry_proto::{ComplexAttr, Consumable, Requestable};

mod read;
pub use read::{read_complexes, ComplexFileError};

/// The built-in complex attributes of a fresh cell, exactly as SGE 8.1.9 ships them:
/// (name, shortcut, type, relop, requestable, consumable, default, urgency).
type Row = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    i64,
);

const BUILTIN: &[Row] = &[
    ("arch", "a", "STRING", "==", "YES", "NO", "NONE", 0),
    ("calendar", "c", "STRING", "==", "YES", "NO", "NONE", 0),
    ("cpu", "cpu", "DOUBLE", ">=", "YES", "NO", "0", 0),
    ("display_win_gui", "dwg", "BOOL", "==", "YES", "NO", "0", 0),
    ("h_core", "h_core", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("h_cpu", "h_cpu", "TIME", "<=", "YES", "NO", "0:0:0", 0),
    ("h_data", "h_data", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("h_fsize", "h_fsize", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("h_rss", "h_rss", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("h_rt", "h_rt", "TIME", "<=", "YES", "NO", "0:0:0", 0),
    ("h_stack", "h_stack", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("h_vmem", "h_vmem", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("hostname", "h", "HOST", "==", "YES", "NO", "NONE", 0),
    ("load_avg", "la", "DOUBLE", ">=", "NO", "NO", "0", 0),
    ("load_long", "ll", "DOUBLE", ">=", "NO", "NO", "0", 0),
    ("load_medium", "lm", "DOUBLE", ">=", "NO", "NO", "0", 0),
    ("load_short", "ls", "DOUBLE", ">=", "NO", "NO", "0", 0),
    ("m_core", "core", "INT", "<=", "YES", "NO", "0", 0),
    ("m_socket", "socket", "INT", "<=", "YES", "NO", "0", 0),
    ("m_thread", "thread", "INT", "<=", "YES", "NO", "0", 0),
    ("m_topology", "topo", "STRING", "==", "YES", "NO", "NONE", 0),
    (
        "m_topology_inuse",
        "utopo",
        "STRING",
        "==",
        "YES",
        "NO",
        "NONE",
        0,
    ),
    ("mem_free", "mf", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("mem_total", "mt", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("mem_used", "mu", "MEMORY", ">=", "YES", "NO", "0", 0),
    (
        "min_cpu_interval",
        "mci",
        "TIME",
        "<=",
        "NO",
        "NO",
        "0:0:0",
        0,
    ),
    ("np_load_avg", "nla", "DOUBLE", ">=", "NO", "NO", "0", 0),
    ("np_load_long", "nll", "DOUBLE", ">=", "NO", "NO", "0", 0),
    ("np_load_medium", "nlm", "DOUBLE", ">=", "NO", "NO", "0", 0),
    ("np_load_short", "nls", "DOUBLE", ">=", "NO", "NO", "0", 0),
    ("num_proc", "p", "INT", "==", "YES", "NO", "0", 0),
    ("qname", "q", "STRING", "==", "YES", "NO", "NONE", 0),
    ("rerun", "re", "BOOL", "==", "NO", "NO", "0", 0),
    ("s_core", "s_core", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("s_cpu", "s_cpu", "TIME", "<=", "YES", "NO", "0:0:0", 0),
    ("s_data", "s_data", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("s_fsize", "s_fsize", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("s_rss", "s_rss", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("s_rt", "s_rt", "TIME", "<=", "YES", "NO", "0:0:0", 0),
    ("s_stack", "s_stack", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("s_vmem", "s_vmem", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("seq_no", "seq", "INT", "==", "NO", "NO", "0", 0),
    ("slots", "s", "INT", "<=", "YES", "YES", "1", 1000),
    ("swap_free", "sf", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("swap_rate", "sr", "MEMORY", ">=", "YES", "NO", "0", 0),
    ("swap_rsvd", "srsv", "MEMORY", ">=", "YES", "NO", "0", 0),
    ("swap_total", "st", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("swap_used", "su", "MEMORY", ">=", "YES", "NO", "0", 0),
    ("tmpdir", "tmp", "STRING", "==", "NO", "NO", "NONE", 0),
    ("virtual_free", "vf", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("virtual_total", "vt", "MEMORY", "<=", "YES", "NO", "0", 0),
    ("virtual_used", "vu", "MEMORY", ">=", "YES", "NO", "0", 0),
];

/// Is this one of the built-in attributes (which cannot be deleted or retyped)?
pub fn is_builtin(name: &str) -> bool {
    BUILTIN.iter().any(|row| row.0 == name)
}

/// The default complex list of a fresh cell.
pub fn default_complexes() -> Vec<ComplexAttr> {
    BUILTIN
        .iter()
        .map(
            |&(name, sc, ty, relop, req, cons, default, urgency)| ComplexAttr {
                name: name.to_string(),
                shortcut: sc.to_string(),
                value_type: parse_type(ty).unwrap_or(gantry_proto::ValueType::String),
                relop: parse_relop(relop).unwrap_or(gantry_proto::Relop::Eq),
                requestable: parse_requestable(req).unwrap_or(Requestable::No),
                consumable: parse_consumable(cons).unwrap_or(Consumable::No),
                default: default.to_string(),
                urgency,
            },
        )
        .collect()
}

pub fn requestable_str(r: Requestable) -> &'static str {
    match r {
        Requestable::Yes => "YES",
        Requestable::No => "NO",
        Requestable::Forced => "FORCED",
    }
}

pub fn parse_requestable(s: &str) -> Option<Requestable> {
    match s.to_ascii_uppercase().as_str() {
        "YES" | "Y" => Some(Requestable::Yes),
        "NO" | "N" => Some(Requestable::No),
        "FORCED" | "F" => Some(Requestable::Forced),
        _ => None,
    }
}

pub fn consumable_str(c: Consumable) -> &'static str {
    match c {
        Consumable::No => "NO",
        Consumable::Yes => "YES",
        Consumable::Job => "JOB",
    }
}

pub fn parse_consumable(s: &str) -> Option<Consumable> {
    match s.to_ascii_uppercase().as_str() {
        "YES" | "Y" => Some(Consumable::Yes),
        "NO" | "N" => Some(Consumable::No),
        "JOB" | "J" => Some(Consumable::Job),
        _ => None,
    }
}

const HEADER: &str = "#name               shortcut   type      relop requestable consumable default  urgency \n#--------------------------------------------------------------------------------------\n";
const FOOTER: &str = "# >#< starts a comment but comments are not saved across edits --------\n";

/// The complex list as `qconf -sc` prints it.
pub fn print_complexes(list: &[ComplexAttr]) -> String {
    let mut out = String::from(HEADER);
    for c in list {
        out.push_str(&format!(
            "{:<19} {:<10} {:<9} {:<5} {:<11} {:<10} {:<8} {}\n",
            c.name,
            c.shortcut,
            type_name(c.value_type),
            relop_str(c.relop),
            requestable_str(c.requestable),
            consumable_str(c.consumable),
            c.default,
            c.urgency
        ));
    }
    out.push_str(FOOTER);
    out
}

/// Check a complex list, read and checked by [`read_complexes`], against the list it
/// replaces: a built-in attribute cannot be deleted (SGE's qmaster's words).
pub fn check_complexes(list: &[ComplexAttr], old: &[ComplexAttr]) -> Result<(), String> {
    let by_name = by_name(list);
    match old
        .iter()
        .find(|c| is_builtin(&c.name) && !by_name.contains_key(c.name.as_str()))
    {
        Some(b) => Err(format!(
            "The built-in complex \"{}\" cannot be deleted",
            b.name
        )),
        None => Ok(()),
    }
}

fn valid_attr_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-')
        && !name.starts_with(|c: char| c.is_ascii_digit() || c == '-')
}

/// The attributes of a list by name, for lookups in long lists.
pub fn by_name(list: &[ComplexAttr]) -> HashMap<&str, &ComplexAttr> {
    list.iter().map(|c| (c.name.as_str(), c)).collect()
}

/// A value an administrator configures for an attribute (a host's or queue's
/// `complex_values`, a quota limit), checked as SGE checks it (`centry_fill_and_check`):
/// it must read as the attribute's type, and a consumable's may not be negative, with
/// SGE's message for the latter. The caller words the former in its own context.
pub fn check_configured_value(attr: &ComplexAttr, value: &str) -> Result<(), ConfiguredValueError> {
    match parse_value(attr.value_type, value) {
        Err(_) => Err(ConfiguredValueError::NotOfType),
        Ok(Value::Num(n)) if n < 0.0 && attr.consumable != Consumable::No => {
            Err(ConfiguredValueError::Negative(format!(
                "attribute \"{}\" is consumable but has a negative value",
                attr.name
            )))
        }
        Ok(_) => Ok(()),
    }
}

/// Why [`check_configured_value`] refused a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfiguredValueError {
    /// It does not read as the attribute's type.
    NotOfType,
    /// A consumable's value below zero (SGE's message).
    Negative(String),
}

/// Find an attribute by name or shortcut.
pub fn find<'a>(list: &'a [ComplexAttr], name: &str) -> Option<&'a ComplexAttr> {
    list.iter()
        .find(|c| c.name == name)
        .or_else(|| list.iter().find(|c| c.shortcut == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_values_are_of_their_type_and_consumables_never_negative() {
        let list = default_complexes();
        let attr = |n: &str| find(&list, n).unwrap();
        let table = [
            ("slots", "4", Ok(())),
            ("slots", "0", Ok(())),
            (
                "slots",
                "-1",
                Err(ConfiguredValueError::Negative(
                    "attribute \"slots\" is consumable but has a negative value".into(),
                )),
            ),
            ("slots", "many", Err(ConfiguredValueError::NotOfType)),
            // Not consumable: a negative value is a value.
            ("load_avg", "-1", Ok(())),
            ("arch", "lx-amd64", Ok(())),
        ];
        for (name, value, want) in table {
            assert_eq!(
                check_configured_value(attr(name), value),
                want,
                "{name}={value}"
            );
        }
    }

    #[test]
    fn default_list_prints_as_sge_does() {
        let want = include_str!("../tests/fixtures/qconf-sc.txt");
        assert_eq!(print_complexes(&default_complexes()), want);
    }

    #[test]
    fn printed_list_parses_back() {
        let list = default_complexes();
        assert_eq!(read_complexes(&print_complexes(&list)).unwrap(), list);
    }

    /// SGE 8.1.9's words for each problem, as tests/sge/recorded/91_complex_errors.txt
    /// has them: the syntax first (line numbers as SGE counts them), then every
    /// definition's problems.
    #[test]
    fn problems_in_sges_words() {
        let base = print_complexes(&default_complexes());
        let base_lines = base.lines().count();
        let read = |extra: &str| read_complexes(&format!("{base}{extra}\n")).map(|_| ());
        let syntax = |m: String| Err(ComplexFileError::Syntax(m));
        let invalid = |m: &[&str]| {
            Err(ComplexFileError::Invalid(
                m.iter().map(|l| l.to_string()).collect(),
            ))
        };
        let end_of_line = |n: usize| {
            format!("error: each value in the attribute value list in line {n} should end with \"<NEWLINE>\"")
        };
        let ok = [
            "gpu gpu INT <= YES YES 0 0",
            "lic lic INT <= YES JOB 0 0",
            "mem_req mr MEMORY <= NO YES 1G 0",
            "bigmem bm BOOL == YES NO 0 0",
            "os os RESTRING == YES NO NONE 0",
            "site site CSTRING != FORCED NO NONE 0",
            "tmp_gb tg DOUBLE >= YES NO 0 0",
            // SGE 8.1.9's exclusive host access.
            "exclusive excl BOOL EXCL YES YES 0 1000",
        ];
        for line in ok {
            assert_eq!(read(line), Ok(()), "{line}");
        }
        let n = base_lines + 1;
        assert_eq!(
            read("b1 b1 NOTATYPE <= YES NO 0 0"),
            syntax("error: unknown complex attribute type \"NOTATYPE\"".into())
        );
        assert_eq!(read("b2 b2 INT => YES NO 0 0"), syntax(end_of_line(n)));
        assert_eq!(read("b3 b3 INT <= MAYBE NO 0 0"), syntax(end_of_line(n)));
        assert_eq!(read("b4 b4 INT <= YES MAYBE 0 0"), syntax(end_of_line(n)));
        assert_eq!(
            read("b5 b5 INT <= YES NO 0 0 extra"),
            syntax(end_of_line(n))
        );
        assert_eq!(
            read("b18 b18 INT <= YES YES 0 0\nb19 b19 INT => YES NO 0 0"),
            syntax(end_of_line(n + 1))
        );
        let table: &[(&str, &[&str])] = &[
            ("b5 b5 INT <= YES NO 0 high", &["The following error occurred for complex \"b5\", while parsing the urgency value: \"double value\""]),
            ("b6 b6 INT <= YES", &["Complex urgency definition is missing"]),
            ("b7 b7 STRING == YES YES 0 0", &["Complex \"b7\" of type \"STRING\" cannot be a consumable", "Consumable \"b7\" can have only <= as an relational operator"]),
            ("b8 b8 INT >= YES YES 0 0", &["Consumable \"b8\" can have only <= as an relational operator"]),
            ("b9 b9 INT <= YES NO 5 0", &["Complex \"b9\" cannot have a (non-zero) default value"]),
            ("b10 b10 BOOL <= YES NO 0 0", &["Complex \"b10\" has an invalid relational operator"]),
            ("b12 b12 INT <= NO YES 0 0", &["Consumable \"b12\" needs a default value because it is not requestable."]),
            ("b13 b13 INT <= FORCED YES 5 0", &["Consumable \"b13\" cannot have a (non-zero) default value because it is forced."]),
            ("b14 b14 INT <= YES YES abc 0", &["Complex \"b14\"'s default value should be of type \"integer value\""]),
            ("b15 h INT <= YES NO 0 0", &["complex with name b15 or shortcut h already exists"]),
            ("b16 b16 INT EXCL YES YES 0 0", &["Complex \"b16\" must be BOOL to use EXCL as relational operator"]),
            ("b21 b21 INT <= NO YES abc 0", &["Complex \"b21\"'s default value should be of type \"integer value\"", "Consumable \"b21\" needs a default value because it is not requestable."]),
            ("b22 b22 BOOL == YES YES 0 0", &["Exclusive complex \"b22\" must have EXCL as relational operator", "Consumable \"b22\" can have only <= as an relational operator"]),
            ("b23 b23 BOOL EXCL YES NO 0 0", &["Exclusive complex \"b23\" must be a consumable"]),
            ("b26 b26 MEMORY <= NO YES 0 0\nb27 b27 STRING <= YES NO 0 0", &["Consumable \"b26\" needs a default value because it is not requestable.", "Complex \"b27\" has an invalid relational operator", "Complex \"b27\" cannot have a (non-zero) default value"]),
            ("b28 b28 INT <= YES NO 0 0\nb28 b29 INT <= YES NO 0 0\nb30 b28 INT <= YES NO 0 0", &["complex with name b28 or shortcut b29 already exists", "complex with name b30 or shortcut b28 already exists", "complex with name b30 or shortcut b28 already exists"]),
        ];
        for (line, want) in table {
            assert_eq!(read(line), invalid(want), "{line}");
        }
        // Built-ins keep their type; the string types may change into each other.
        let retyped = base.replace(
            "num_proc            p          INT ",
            "num_proc            p          DOUBLE ",
        );
        assert_ne!(retyped, base);
        assert_eq!(
            read_complexes(&retyped).map(|_| ()),
            invalid(&[
                "The type of the complex \"num_proc\" cannot be changed due to its built in status"
            ])
        );
        let restring = base.replace(
            "arch                a          STRING ",
            "arch                a          RESTRING ",
        );
        assert_ne!(restring, base);
        assert_eq!(read_complexes(&restring).map(|_| ()), Ok(()));
        // Deleting one is the master's to refuse, against the list it replaces.
        let old = default_complexes();
        let mut l = old.clone();
        l.retain(|c| c.name != "mem_free");
        assert_eq!(
            check_complexes(&l, &old),
            Err("The built-in complex \"mem_free\" cannot be deleted".into())
        );
        assert_eq!(check_complexes(&old, &old), Ok(()));
    }

    #[test]
    fn lookup_by_name_or_shortcut() {
        let list = default_complexes();
        assert_eq!(find(&list, "mf").map(|c| c.name.as_str()), Some("mem_free"));
        assert_eq!(
            find(&list, "num_proc").map(|c| c.shortcut.as_str()),
            Some("p")
        );
        assert!(find(&list, "nope").is_none());
        assert!(is_builtin("slots"));
        assert!(!is_builtin("gpu"));
    }
}
