//! The complex: attribute definitions (`qconf -sc`), the built-in list a fresh cell has,
//! and the file format `qconf -sc` prints and `-Mc` reads.

use std::collections::HashMap;

use crate::conf::FileError;
use crate::value::{parse_relop, parse_type, parse_value, relop_str, type_name, Value};
use gantry_proto::{ComplexAttr, Consumable, Relop, Requestable, ValueType};

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

/// Read a complex list in `qconf -sc` format (the syntax only; the restrictions of the
/// complex specification are checked by the master when the list is applied).
pub fn parse_complexes(text: &str) -> Result<Vec<ComplexAttr>, FileError> {
    let mut list: Vec<ComplexAttr> = Vec::new();
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for row in crate::conf::table_rows(text, 8) {
        let (line, f) = row?;
        let value_type = parse_type(f[2]).map_err(|e| FileError::at(line, e.to_string()))?;
        let relop = parse_relop(f[3]).map_err(|e| FileError::at(line, e.to_string()))?;
        let requestable = parse_requestable(f[4])
            .ok_or_else(|| FileError::at(line, format!("invalid requestable \"{}\"", f[4])))?;
        let consumable = parse_consumable(f[5])
            .ok_or_else(|| FileError::at(line, format!("invalid consumable \"{}\"", f[5])))?;
        let urgency = f[7]
            .parse::<i64>()
            .map_err(|_| FileError::at(line, format!("invalid urgency \"{}\"", f[7])))?;
        if !seen.insert(f[0]) {
            return Err(FileError::at(
                line,
                format!("attribute \"{}\" defined twice", f[0]),
            ));
        }
        list.push(ComplexAttr {
            name: f[0].to_string(),
            shortcut: f[1].to_string(),
            value_type,
            relop,
            requestable,
            consumable,
            default: f[6].to_string(),
            urgency,
        });
    }
    Ok(list)
}

/// Is a default value "no default" for its type (`0`, `0:0:0`, `NONE`, `FALSE`)?
fn is_zero_default(ty: ValueType, text: &str) -> bool {
    match parse_value(ty, text) {
        Ok(Value::Num(n)) => n == 0.0,
        _ => text.eq_ignore_ascii_case("NONE") || text.is_empty(),
    }
}

/// Check a complex list against the restrictions of the complex specification
/// (section 2) and against the list it replaces: names and shortcuts unique; consumables
/// only of numeric types, only with `<=`, with a default when not requestable and
/// without one when forced; string types only `==`/`!=`, BOOL only `==`; defaults only
/// for consumables and of the attribute's type; built-in attributes neither deleted nor
/// retyped (STRING, CSTRING and RESTRING may change into each other).
pub fn check_complexes(list: &[ComplexAttr], old: &[ComplexAttr]) -> Result<(), String> {
    // Linear in the list's length: a manager's list of 200,000 attributes is checked
    // in well under a second.
    let mut names: HashMap<&str, ()> = HashMap::with_capacity(list.len());
    let mut shortcuts: HashMap<&str, &str> = HashMap::with_capacity(list.len());
    for c in list {
        let name = &c.name;
        if !valid_attr_name(name) {
            return Err(format!("invalid attribute name \"{name}\""));
        }
        if !valid_attr_name(&c.shortcut) {
            return Err(format!(
                "invalid shortcut \"{}\" of attribute \"{name}\"",
                c.shortcut
            ));
        }
        if names.insert(name, ()).is_some() {
            return Err(format!("attribute name \"{name}\" is not unique"));
        }
        if let Some(other) = shortcuts.insert(&c.shortcut, name) {
            return Err(format!(
                "shortcut \"{}\" of attribute \"{name}\" is already used by \"{other}\"",
                c.shortcut
            ));
        }
        let ty = c.value_type;
        let numeric = matches!(
            ty,
            ValueType::Int | ValueType::Double | ValueType::Memory | ValueType::Time
        );
        // EXCL (exclusive host access): a BOOL consumable, and the only operator a
        // BOOL consumable may have (SGE's rules and messages).
        if c.relop == Relop::Excl {
            if ty != ValueType::Bool {
                return Err(format!(
                    "Complex \"{name}\" must be BOOL to use EXCL as relational operator"
                ));
            }
            if c.consumable == Consumable::No {
                return Err(format!("Exclusive complex \"{name}\" must be a consumable"));
            }
        } else if ty == ValueType::Bool && c.consumable != Consumable::No {
            return Err(format!(
                "Exclusive complex \"{name}\" must have EXCL as relational operator"
            ));
        }
        if c.consumable != Consumable::No && c.relop == Relop::Excl {
            if parse_value(ty, &c.default).is_err() {
                return Err(format!(
                    "default value \"{}\" of attribute \"{name}\" is not a valid {} value",
                    c.default,
                    type_name(ty)
                ));
            }
        } else if c.consumable != Consumable::No {
            if !numeric {
                return Err(format!(
                    "attribute \"{name}\" of type {} cannot be a consumable (only INT, DOUBLE, MEMORY and TIME can)",
                    type_name(ty)
                ));
            }
            if c.relop != Relop::Le {
                return Err(format!(
                    "consumable attribute \"{name}\" must have the relational operator <="
                ));
            }
            if parse_value(ty, &c.default).is_err() {
                return Err(format!(
                    "default value \"{}\" of attribute \"{name}\" is not a valid {} value",
                    c.default,
                    type_name(ty)
                ));
            }
            let zero = is_zero_default(ty, &c.default);
            if c.requestable == Requestable::No && zero {
                return Err(format!(
                    "consumable attribute \"{name}\" is not requestable and must therefore have a default value"
                ));
            }
            if c.requestable == Requestable::Forced && !zero {
                return Err(format!(
                    "consumable attribute \"{name}\" is forced and must therefore not have a default value"
                ));
            }
        } else {
            let allowed: &[Relop] = match ty {
                ValueType::String | ValueType::Cstring | ValueType::Restring | ValueType::Host => {
                    &[Relop::Eq, Relop::Ne]
                }
                ValueType::Bool => &[Relop::Eq],
                _ => &[
                    Relop::Eq,
                    Relop::Ne,
                    Relop::Le,
                    Relop::Lt,
                    Relop::Ge,
                    Relop::Gt,
                ],
            };
            if !allowed.contains(&c.relop) {
                return Err(format!(
                    "relational operator {} is not allowed for attribute \"{name}\" of type {}",
                    relop_str(c.relop),
                    type_name(ty)
                ));
            }
            if !is_zero_default(ty, &c.default) {
                return Err(format!(
                    "attribute \"{name}\" is not a consumable and cannot have a default value (\"{}\")",
                    c.default
                ));
            }
        }
    }
    let strings = [ValueType::String, ValueType::Cstring, ValueType::Restring];
    let by_name = by_name(list);
    for b in old.iter().filter(|c| is_builtin(&c.name)) {
        let Some(now) = by_name.get(b.name.as_str()) else {
            return Err(format!(
                "denied: built-in attribute \"{}\" cannot be deleted",
                b.name
            ));
        };
        let both_strings = strings.contains(&b.value_type) && strings.contains(&now.value_type);
        if now.value_type != b.value_type && !both_strings {
            return Err(format!(
                "denied: the type of built-in attribute \"{}\" cannot be changed",
                b.name
            ));
        }
    }
    Ok(())
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
        assert_eq!(parse_complexes(&print_complexes(&list)).unwrap(), list);
    }

    #[test]
    fn parse_errors_name_the_line() {
        let err = parse_complexes("a a INT <= YES NO 0 0\nb b WRONG <= YES NO 0 0\n").unwrap_err();
        assert_eq!(err.to_string(), "line 2: unknown type \"WRONG\"");
        assert!(parse_complexes("a a INT <= YES NO 0\n").is_err());
        assert!(parse_complexes("a a INT <= MAYBE NO 0 0\n").is_err());
        assert!(parse_complexes("a a INT <= YES NO 0 x\n").is_err());
    }

    #[test]
    fn section_2_restrictions() {
        let base = default_complexes();
        let with = |line: &str| {
            let mut l = base.clone();
            l.extend(parse_complexes(line).unwrap());
            l
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
            assert_eq!(check_complexes(&with(line), &base), Ok(()), "{line}");
        }
        let bad = [
            ("bm bm BOOL <= YES YES 0 0", "Exclusive complex \"bm\" must have EXCL as relational operator"),
            ("x x INT EXCL YES YES 0 0", "Complex \"x\" must be BOOL to use EXCL as relational operator"),
            ("x x BOOL EXCL YES NO 0 0", "Exclusive complex \"x\" must be a consumable"),
            ("s1 s1 STRING == YES YES NONE 0", "attribute \"s1\" of type STRING cannot be a consumable (only INT, DOUBLE, MEMORY and TIME can)"),
            ("g g INT >= YES YES 0 0", "consumable attribute \"g\" must have the relational operator <="),
            ("g g INT <= NO YES 0 0", "consumable attribute \"g\" is not requestable and must therefore have a default value"),
            ("g g INT <= FORCED YES 2 0", "consumable attribute \"g\" is forced and must therefore not have a default value"),
            ("g g INT <= YES YES lots 0", "default value \"lots\" of attribute \"g\" is not a valid INT value"),
            ("s1 s1 STRING <= YES NO NONE 0", "relational operator <= is not allowed for attribute \"s1\" of type STRING"),
            ("h1 h1 HOST > YES NO NONE 0", "relational operator > is not allowed for attribute \"h1\" of type HOST"),
            ("b1 b1 BOOL != YES NO 0 0", "relational operator != is not allowed for attribute \"b1\" of type BOOL"),
            ("t1 t1 INT <= YES NO 5 0", "attribute \"t1\" is not a consumable and cannot have a default value (\"5\")"),
            ("gpu mf INT <= YES YES 0 0", "shortcut \"mf\" of attribute \"gpu\" is already used by \"mem_free\""),
            ("slots x INT <= YES YES 1 0", "attribute name \"slots\" is not unique"),
        ];
        for (line, want) in bad {
            assert_eq!(
                check_complexes(&with(line), &base),
                Err(want.to_string()),
                "{line}"
            );
        }
        // Built-ins: not deleted, not retyped; strings may change among themselves.
        let mut l = base.clone();
        l.retain(|c| c.name != "mem_free");
        assert_eq!(
            check_complexes(&l, &base),
            Err("denied: built-in attribute \"mem_free\" cannot be deleted".into())
        );
        let mut l = base.clone();
        l.iter_mut()
            .find(|c| c.name == "num_proc")
            .unwrap()
            .value_type = ValueType::Double;
        assert_eq!(
            check_complexes(&l, &base),
            Err("denied: the type of built-in attribute \"num_proc\" cannot be changed".into())
        );
        let mut l = base.clone();
        l.iter_mut().find(|c| c.name == "arch").unwrap().value_type = ValueType::Restring;
        assert_eq!(check_complexes(&l, &base), Ok(()));
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
