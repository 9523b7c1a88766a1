//! Checkpointing environments (`qconf -sckpt`, `-ackpt`, `-mckpt`, ...): the object and
//! its file format. A job asks for one with `qsub -ckpt name` and then runs only in
//! queues whose `ckpt_list` names it.

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

pub use gantry_proto::Ckpt;

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
        ("when", &canonical_when(&c.when)),
    ];
    rows.iter().map(|(k, v)| format!("{k:<19}{v}\n")).collect()
}

/// `when` as SGE prints it from its bitmask: `x`, `s`, `m`, `r` in that order (`sx` is
/// `xs`); `n` and anything else as given.
pub fn canonical_when(when: &str) -> String {
    if !valid_when(when) || when == "n" {
        return when.to_string();
    }
    "xsmr".chars().filter(|c| when.contains(*c)).collect()
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

/// `qstat -j`'s `checkpoint_attr` of `when` letters, as SGE 8.1.9 shows it: the letters
/// in its order `m s x n` (`r`, restart on an automatic reschedule, is not shown), then
/// four spaces.
pub fn shown_attr(when: &str) -> String {
    let mut out: String = "msxn".chars().filter(|c| when.contains(*c)).collect();
    out.push_str("    ");
    out
}

/// A job's `-c` argument: `when` letters (`smxr`, `n`) or a positive interval.
pub fn valid_selector(text: &str) -> bool {
    valid_when(text) || crate::value::parse_time(text).is_ok_and(|t| t > 0.0)
}

/// The variables a checkpointing command may use (`checkpoint(5)`): `$job_id` and the
/// others are replaced when the shepherd runs the command.
pub const VARIABLES: &[&str] = &[
    "host",
    "job_owner",
    "job_id",
    "job_name",
    "queue",
    "job_pid",
    "ckpt_dir",
    "ckpt_signal",
];

/// How an interface is carried out on a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `application-level`, `hibernator`, `cpr`, `cray-ckpt`: the environment's commands
    /// take checkpoints and migrate the job. `restart` says whether a job restarting from
    /// a checkpoint runs the `restart_command` in its place (not for application-level:
    /// the job restarts itself, told by `RESTARTED`).
    Commands { restart: bool },
    /// `transparent`, `userdefined`: the job checkpoints itself when it gets the
    /// environment's `signal`; a migration kills it.
    Signal,
}

impl Method {
    pub fn of(interface: &str) -> Method {
        let i = interface.to_ascii_lowercase();
        match i.as_str() {
            "application-level" => Method::Commands { restart: false },
            "hibernator" | "cpr" | "cray-ckpt" => Method::Commands { restart: true },
            _ => Method::Signal,
        }
    }
}

/// The first `$variable` of a command that is not one of [`VARIABLES`], in SGE's words.
pub fn check_command(cmd: &str) -> Result<(), String> {
    let mut bad = None;
    expand_command(cmd, |name| {
        if bad.is_none() {
            if name.is_empty() {
                bad = Some("variables need at least one character".to_string());
            } else if !VARIABLES.contains(&name) {
                bad = Some(format!("unknown variable \"{name}\""));
            }
        }
        String::new()
    });
    bad.map_or(Ok(()), Err)
}

/// A command with each `$name` (letters, digits, `_`) replaced by `value(name)`.
pub fn expand_command(cmd: &str, mut value: impl FnMut(&str) -> String) -> String {
    let mut out = String::with_capacity(cmd.len());
    let mut rest = cmd;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        out.push_str(&value(&after[..len]));
        rest = &after[len..];
    }
    out.push_str(rest);
    out
}

/// When a job is checkpointed: its `-c` letters, else its environment's `when`.
pub fn effective_when(ckpt: &Ckpt, job_selector: Option<&str>) -> String {
    match job_selector {
        Some(s) if valid_when(s) => s.to_string(),
        _ => ckpt.when.clone(),
    }
}

/// The interval of a job's `-c interval` (seconds), if it gave one.
pub fn job_interval(job_selector: Option<&str>) -> Option<u64> {
    let s = job_selector?;
    if valid_when(s) {
        return None;
    }
    crate::value::parse_time(s)
        .ok()
        .filter(|t| t.is_finite() && *t > 0.0)
        .map(|t| t.ceil() as u64)
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
            "ckpt_command" | "migr_command" | "restart_command" | "clean_command" => {
                check_command(&value).map_err(|why| {
                    FileError::at(
                        e.line,
                        format!(
                            "parameter {} of ckpt environment \"{}\": {why}",
                            e.key, c.name
                        ),
                    )
                })?;
                match e.key.as_str() {
                    "ckpt_command" => c.ckpt_command = value,
                    "migr_command" => c.migr_command = value,
                    "restart_command" => c.restart_command = value,
                    _ => c.clean_command = value,
                }
            }
            "ckpt_dir" => c.ckpt_dir = value,
            "signal" => {
                if !value.eq_ignore_ascii_case("none") && crate::signal::number(&value).is_none() {
                    return Err(FileError::at(
                        e.line,
                        format!("\"{value}\" is not a signal string (like HUP, INT, WINCH, ..)"),
                    ));
                }
                c.signal = value;
            }
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

    #[test]
    fn checkpoint_attr_shows_as_sge_prints_it() {
        // (-c letters, qstat -j's checkpoint_attr), from SGE 8.1.9 on this machine.
        for (when, shown) in [
            ("s", "s    "),
            ("x", "x    "),
            ("sx", "sx    "),
            ("xs", "sx    "),
            ("m", "m    "),
            ("smx", "msx    "),
            ("sr", "s    "),
        ] {
            assert_eq!(shown_attr(when), shown, "{when}");
        }
    }
    use super::*;

    #[test]
    fn prints_and_parses_as_sge() {
        let c = Ckpt::new("check");
        let text = print_ckpt(&c);
        assert_eq!(
            text,
            "ckpt_name          check\ninterface          userdefined\nckpt_command       none\nmigr_command       none\nrestart_command    none\nclean_command      none\nckpt_dir           /tmp\nsignal             none\nwhen               xs\n"
        );
        // SGE prints `when` from its bitmask: x, s, m, r in that order.
        assert_eq!(
            parse_ckpt(&text),
            Ok(Ckpt {
                when: "xs".into(),
                ..c
            })
        );
        assert_eq!(canonical_when("rmsx"), "xsmr");
        assert_eq!(canonical_when("n"), "n");
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
            // SGE's msg_sgeobjlib.h 64176 and 64175 with msg_daemons_common.h 27062.
            (
                "ckpt_name x\nsignal FOO\n",
                "line 2: \"FOO\" is not a signal string (like HUP, INT, WINCH, ..)",
            ),
            (
                "ckpt_name x\nckpt_command /bin/ck $job_id $nosuch\n",
                "line 2: parameter ckpt_command of ckpt environment \"x\": unknown variable \"nosuch\"",
            ),
            (
                "ckpt_name x\nclean_command rm $ \n",
                "line 2: parameter clean_command of ckpt environment \"x\": variables need at least one character",
            ),
        ];
        for (text, want) in bad {
            assert_eq!(parse_ckpt(text).unwrap_err().to_string(), want, "{text}");
        }
        assert!(valid_when("n") && valid_when("smxr") && !valid_when("") && !valid_when("nx"));
    }

    #[test]
    fn commands_expand_sges_variables() {
        let values = |n: &str| match n {
            "job_id" => "7".to_string(),
            "ckpt_dir" => "/ck".to_string(),
            other => format!("<{other}>"),
        };
        let table = [
            ("none", "none"),
            ("/bin/ck $job_id $ckpt_dir/x", "/bin/ck 7 /ck/x"),
            ("a$job_id.b", "a7.b"),
            ("$job_owner@$host", "<job_owner>@<host>"),
            ("cost $", "cost <>"),
        ];
        for (cmd, want) in table {
            assert_eq!(expand_command(cmd, values), want, "{cmd}");
        }
        assert_eq!(check_command("/bin/ck $job_pid $ckpt_signal"), Ok(()));
    }

    #[test]
    fn when_and_interval_of_a_job() {
        let mut c = Ckpt::new("c");
        c.when = "xs".into();
        let table = [
            (None, "xs", None),
            (Some("m"), "m", None),
            (Some("0:0:30"), "xs", Some(30)),
            (Some("90"), "xs", Some(90)),
        ];
        for (sel, when, interval) in table {
            assert_eq!(effective_when(&c, sel), when, "{sel:?}");
            assert_eq!(job_interval(sel), interval, "{sel:?}");
        }
        assert_eq!(
            Method::of("Application-Level"),
            Method::Commands { restart: false }
        );
        assert_eq!(Method::of("cpr"), Method::Commands { restart: true });
        assert_eq!(Method::of("userdefined"), Method::Signal);
        assert_eq!(Method::of("transparent"), Method::Signal);
    }
}
