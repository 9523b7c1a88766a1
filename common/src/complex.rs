//! The complex: attribute definitions (`qconf -sc`), the built-in list a fresh cell has,
//! and the file format `qconf -sc` prints and `-Mc` reads.

use crate::conf::FileError;
use crate::value::{parse_relop, parse_type, relop_str, type_name};
use gantry_proto::{ComplexAttr, Consumable, Requestable};

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
    for (idx, raw) in text.lines().enumerate() {
        let line = idx + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let f: Vec<&str> = content.split_whitespace().collect();
        if f.len() != 8 {
            return Err(FileError::at(
                line,
                format!("expected 8 fields, found {}", f.len()),
            ));
        }
        let value_type = parse_type(f[2]).map_err(|e| FileError::at(line, e.to_string()))?;
        let relop = parse_relop(f[3]).map_err(|e| FileError::at(line, e.to_string()))?;
        let requestable = parse_requestable(f[4])
            .ok_or_else(|| FileError::at(line, format!("invalid requestable \"{}\"", f[4])))?;
        let consumable = parse_consumable(f[5])
            .ok_or_else(|| FileError::at(line, format!("invalid consumable \"{}\"", f[5])))?;
        let urgency = f[7]
            .parse::<i64>()
            .map_err(|_| FileError::at(line, format!("invalid urgency \"{}\"", f[7])))?;
        if list.iter().any(|c| c.name == f[0]) {
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
