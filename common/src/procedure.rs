//! The procedures a job's shepherd runs around the job: the `prolog` and `epilog` of
//! its queue (or of the cluster configuration), and the `start_proc_args` and
//! `stop_proc_args` of its parallel environment. Each is `[user@]/path [arguments]`
//! with SGE's `$variables` (`queue_conf(5)`, `sge_pe(5)`), and its exit status says
//! what happens next: 0 the job goes on, 99 it is rescheduled, 100 it is set in error
//! state, anything else puts its queue instance in error state.

use std::fmt;

/// Which of the four a procedure is: how SGE names it in an error reason
/// (`exit_status of prolog = 1`) and which variables its command line may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcedureKind {
    Prolog,
    PeStart,
    PeStop,
    Epilog,
}

/// The variables every procedure's command line may use.
const JOB_VARIABLES: &[&str] = &[
    "host",
    "job_owner",
    "job_id",
    "job_name",
    "processors",
    "queue",
];

/// And those of a parallel environment's procedures.
const PE_VARIABLES: &[&str] = &[
    "host",
    "job_owner",
    "job_id",
    "job_name",
    "processors",
    "queue",
    "pe_hostfile",
    "pe",
    "pe_slots",
];

impl ProcedureKind {
    /// SGE's word for it in an error reason.
    pub fn name(self) -> &'static str {
        match self {
            ProcedureKind::Prolog => "prolog",
            ProcedureKind::PeStart => "pe_start",
            ProcedureKind::PeStop => "pe_stop",
            ProcedureKind::Epilog => "epilog",
        }
    }

    pub fn variables(self) -> &'static [&'static str] {
        match self {
            ProcedureKind::Prolog | ProcedureKind::Epilog => JOB_VARIABLES,
            ProcedureKind::PeStart | ProcedureKind::PeStop => PE_VARIABLES,
        }
    }
}

/// A procedure's command line, its variables replaced: who runs it (the job's owner
/// unless a `user@` prefix names another) and its `argv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Procedure {
    pub user: Option<String>,
    pub argv: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcedureError {
    /// SGE's words.
    #[error("unknown variable \"{0}\"")]
    UnknownVariable(String),
    #[error("variables need at least one character")]
    EmptyVariable,
    #[error("no user name before the \"@\" of {0}")]
    NoUser(String),
}

/// Whether a configured value names no procedure (`NONE`, SGE's default, or nothing).
pub fn is_none(text: &str) -> bool {
    let t = text.trim();
    t.is_empty() || t.eq_ignore_ascii_case("none")
}

/// The procedure `text` configures, its `$variables` given by `value` (a variable the
/// kind does not know is refused, as SGE refuses it: the procedure does not run).
/// `Ok(None)` when it configures none.
pub fn command_line(
    kind: ProcedureKind,
    text: &str,
    value: impl Fn(&str) -> String,
) -> Result<Option<Procedure>, ProcedureError> {
    if is_none(text) {
        return Ok(None);
    }
    let mut bad = None;
    let expanded = crate::ckpt::expand_command(text.trim(), |name| {
        if bad.is_none() {
            if name.is_empty() {
                bad = Some(ProcedureError::EmptyVariable);
            } else if !kind.variables().contains(&name) {
                bad = Some(ProcedureError::UnknownVariable(name.to_string()));
            }
        }
        value(name)
    });
    if let Some(e) = bad {
        return Err(e);
    }
    let mut argv: Vec<String> = expanded.split_whitespace().map(str::to_string).collect();
    let mut user = None;
    if let Some(first) = argv.first_mut() {
        // `user@/path`: the `@` before the path's first `/`.
        let slash = first.find('/').unwrap_or(first.len());
        if let Some(at) = first[..slash].find('@') {
            if at == 0 {
                return Err(ProcedureError::NoUser(first.clone()));
            }
            user = Some(first[..at].to_string());
            *first = first[at + 1..].to_string();
        }
    }
    Ok(Some(Procedure { user, argv }))
}

/// What a procedure's exit status means for its job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// 0: the job goes on.
    Success,
    /// 99: the job is rescheduled.
    Reschedule,
    /// 100: the job is set in error state.
    JobError,
    /// Anything else (a signal too): the queue instance is set in error state.
    QueueError,
}

pub fn verdict(exit_status: i32) -> Verdict {
    match exit_status {
        0 => Verdict::Success,
        99 => Verdict::Reschedule,
        100 => Verdict::JobError,
        _ => Verdict::QueueError,
    }
}

/// SGE's error reason for a procedure that did not end with 0.
pub struct ExitReason {
    pub kind: ProcedureKind,
    pub exit_status: i32,
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "exit_status of {} = {}",
            self.kind.name(),
            self.exit_status
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(name: &str) -> String {
        match name {
            "host" => "node1".into(),
            "job_owner" => "user1".into(),
            "job_id" => "12".into(),
            "job_name" => "pj".into(),
            "processors" => "UNDEFINED".into(),
            "queue" => "all.q".into(),
            "pe_hostfile" => "/tmp/12.1.all.q/pe_hostfile".into(),
            "pe" => "mpi".into(),
            "pe_slots" => "4".into(),
            other => format!("<{other}>"),
        }
    }

    /// What a command line should expand to: `None` for no procedure, else
    /// the `user@` prefix and the argument vector.
    type Expected<'a> = Result<Option<(Option<&'a str>, &'a [&'a str])>, ProcedureError>;

    #[test]
    fn command_lines_as_sge_expands_them() {
        use ProcedureKind::*;
        let cases: &[(ProcedureKind, &str, Expected)] = &[
            (Prolog, "NONE", Ok(None)),
            (Prolog, "none", Ok(None)),
            (Epilog, "  ", Ok(None)),
            (
                Prolog,
                "/opt/p.sh $host $job_owner $job_id $job_name $processors $queue",
                Ok(Some((
                    None,
                    &[
                        "/opt/p.sh",
                        "node1",
                        "user1",
                        "12",
                        "pj",
                        "UNDEFINED",
                        "all.q",
                    ],
                ))),
            ),
            (
                Epilog,
                "root@/opt/e.sh epi $job_id",
                Ok(Some((Some("root"), &["/opt/e.sh", "epi", "12"]))),
            ),
            (
                PeStart,
                "/opt/start.sh -f=$pe_hostfile $pe $pe_slots",
                Ok(Some((
                    None,
                    &[
                        "/opt/start.sh",
                        "-f=/tmp/12.1.all.q/pe_hostfile",
                        "mpi",
                        "4",
                    ],
                ))),
            ),
            (
                Prolog,
                "/opt/p.sh $HOME",
                Err(ProcedureError::UnknownVariable("HOME".into())),
            ),
            (
                Prolog,
                "/opt/p.sh $pe",
                Err(ProcedureError::UnknownVariable("pe".into())),
            ),
            (PeStop, "/opt/p.sh $", Err(ProcedureError::EmptyVariable)),
            (
                Prolog,
                "@/opt/p.sh",
                Err(ProcedureError::NoUser("@/opt/p.sh".into())),
            ),
            // An `@` after the first `/` is part of the path.
            (Prolog, "/opt/a@b.sh", Ok(Some((None, &["/opt/a@b.sh"])))),
        ];
        for (kind, text, want) in cases {
            let got = command_line(*kind, text, values);
            let want = want.clone().map(|o| {
                o.map(|(user, argv)| Procedure {
                    user: user.map(str::to_string),
                    argv: argv.iter().map(|s| s.to_string()).collect(),
                })
            });
            assert_eq!(got, want, "{kind:?} {text:?}");
        }
    }

    #[test]
    fn exit_statuses_mean_what_queue_conf_says() {
        assert_eq!(verdict(0), Verdict::Success);
        assert_eq!(verdict(99), Verdict::Reschedule);
        assert_eq!(verdict(100), Verdict::JobError);
        for s in [1, 2, 98, 101, 127, 137, 255] {
            assert_eq!(verdict(s), Verdict::QueueError, "{s}");
        }
        let r = ExitReason {
            kind: ProcedureKind::PeStop,
            exit_status: 100,
        };
        assert_eq!(r.to_string(), "exit_status of pe_stop = 100");
    }
}
