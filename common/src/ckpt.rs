//! Checkpointing environments (`qconf -sckpt`, `-ackpt`, `-mckpt`, ...): the object and
//! its file format. A job asks for one with `qsub -ckpt name` and then runs only in
//! queues whose `ckpt_list` names it.

use serde::{Deserialize, Serialize};

use crate::conf::{parse_entries, FileError};

/// The interfaces SGE knows (`checkpoint(5)`).
pub const INTERFACES: &[&str] = &[
    "userdefined",
    "hibernator",
    "cpr",
    "application-level",
    "transparent",
    "cray-ckpt",
];

/// A checkpointing environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ckpt {
    pub name: String,
    pub interface: String,
    pub ckpt_command: String,
    pub migr_command: String,
    pub restart_command: String,
    pub clean_command: String,
    pub ckpt_dir: String,
    pub signal: String,
    /// When to checkpoint: letters of `smxr`, or `n` (never).
    pub when: String,
}

impl Ckpt {
    /// A checkpointing environment with SGE's template values.
    pub fn new(name: &str) -> Ckpt {
        Ckpt {
            name: name.to_string(),
            interface: "userdefined".into(),
            ckpt_command: "none".into(),
            migr_command: "none".into(),
            restart_command: "none".into(),
            clean_command: "none".into(),
            ckpt_dir: "/tmp".into(),
            signal: "none".into(),
            when: "sx".into(),
        }
    }
}

/// The object as `qconf -sckpt` prints it.
pub fn print_ckpt(c: &Ckpt) -> String {
    let rows = [
        ("ckpt_name", &c.name),
        ("interface", &c.interface),
        ("ckpt_command", &c.ckpt_command),
        ("migr_command", &c.migr_command),
        ("restart_command", &c.restart_command),
        ("clean_command", &c.clean_command),
        ("ckpt_dir", &c.ckpt_dir),
        ("signal", &c.signal),
        ("when", &c.when),
    ];
    rows.iter().map(|(k, v)| format!("{k:<19}{v}\n")).collect()
}

/// `when` of an object or `-c` of a job: letters of `smxr` each at most once, or `n`.
pub fn valid_when(when: &str) -> bool {
    if when == "n" {
        return true;
    }
    !when.is_empty()
        && when.chars().all(|c| "smxr".contains(c))
        && when
            .chars()
            .enumerate()
            .all(|(i, c)| !when[i + 1..].contains(c))
}

/// A job's `-c` argument: `when` letters (`smxr`, `n`) or a positive interval.
pub fn valid_selector(text: &str) -> bool {
    valid_when(text) || crate::value::parse_time(text).is_ok_and(|t| t > 0.0)
}

/// Read a checkpointing environment file (`-Ackpt`, `-Mckpt`): `ckpt_name` required,
/// unknown attributes and bad values refused with their line, the others at the
/// template's value.
pub fn parse_ckpt(text: &str) -> Result<Ckpt, FileError> {
    let entries = parse_entries(text)?;
    let Some(name) = entries.iter().find(|e| e.key == "ckpt_name") else {
        return Err(FileError::Object(
            "the checkpointing environment file has no \"ckpt_name\" attribute".into(),
        ));
    };
    crate::names::verify_name(&name.value, crate::names::NameKind::Object)
        .map_err(|m| FileError::at(name.line, m))?;
    let mut c = Ckpt::new(&name.value);
    for e in &entries {
        let value = e.value.clone();
        match e.key.as_str() {
            "ckpt_name" => {}
            "interface" => {
                if !INTERFACES.iter().any(|i| i.eq_ignore_ascii_case(&value)) {
                    return Err(FileError::at(
                        e.line,
                        format!("{value} is not a checkpointing interface definition"),
                    ));
                }
                c.interface = value;
            }
            "ckpt_command" => c.ckpt_command = value,
            "migr_command" => c.migr_command = value,
            "restart_command" => c.restart_command = value,
            "clean_command" => c.clean_command = value,
            "ckpt_dir" => c.ckpt_dir = value,
            "signal" => c.signal = value,
            "when" => {
                if !valid_when(&value) {
                    return Err(FileError::at(
                        e.line,
                        format!("Invalid \"when\" attribute for ckpt \"{}\"", c.name),
                    ));
                }
                c.when = value;
            }
            other => {
                return Err(FileError::at(
                    e.line,
                    format!("unknown attribute \"{other}\" in checkpointing environment"),
                ))
            }
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_and_parses_as_sge() {
        let c = Ckpt::new("check");
        let text = print_ckpt(&c);
        assert_eq!(
            text,
            "ckpt_name          check\ninterface          userdefined\nckpt_command       none\nmigr_command       none\nrestart_command    none\nclean_command      none\nckpt_dir           /tmp\nsignal             none\nwhen               sx\n"
        );
        assert_eq!(parse_ckpt(&text), Ok(c));
        let bad = [
            (
                "ckpt_name x\ninterface magic\n",
                "line 2: magic is not a checkpointing interface definition",
            ),
            (
                "ckpt_name x\nwhen q\n",
                "line 2: Invalid \"when\" attribute for ckpt \"x\"",
            ),
            (
                "ckpt_name x\nwhen ss\n",
                "line 2: Invalid \"when\" attribute for ckpt \"x\"",
            ),
            (
                "ckpt_name x\ncolour red\n",
                "line 2: unknown attribute \"colour\" in checkpointing environment",
            ),
        ];
        for (text, want) in bad {
            assert_eq!(parse_ckpt(text).unwrap_err().to_string(), want, "{text}");
        }
        assert!(valid_when("n") && valid_when("smxr") && !valid_when("") && !valid_when("nx"));
    }
}
