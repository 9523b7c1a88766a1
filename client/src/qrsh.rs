//! `qrsh` and `qlogin`: the options, read as SGE's qrsh reads them (qsub's, with
//! `-now y` by default, plus `-pty`, `-nostdin`, `-noshell`, `-verbose`), made into the
//! interactive job to submit. The session itself (the terminal, the frames) is the
//! `qrsh` program's (`interactive/`): this crate does no terminal I/O.

use gantry_proto::{InteractiveKind, JobId, JobScript, JobSpec, PeTaskRequest, TaskId};

use crate::opts::{parse, Parsed};
use crate::optvalues::{self, OptionError};
use crate::qsub::{apply, apply_defaults, submitted_from, Flags, Layer, SPECS};
use crate::{exit, Output};

/// A command line qrsh cannot read, as SGE's qrsh says it: `error: ` and qsub's words
/// for it (without qsub's `ERROR!`), exit status 1 (SGE's qrsh:
/// `error: invalid option argument "-now maybe"`).
fn option_refused(e: OptionError) -> Output {
    let text = e.text.trim_start_matches("qsub: ");
    let text = text.trim_start_matches("ERROR! ");
    Output::fail(format!("error: {text}"), exit::FAILURE)
}

/// An interactive job as its options make it.
#[derive(Debug, Clone, PartialEq)]
pub struct InteractiveJob {
    pub spec: JobSpec,
    /// `-pty y|n`, if given (else a terminal when the session is a login and the user
    /// is at one, as SGE decides).
    pub pty: Option<bool>,
    /// `-nostdin`: the command's standard input is not read.
    pub nostdin: bool,
    pub verbose: bool,
}

/// Options only qrsh and qlogin take, handled here rather than by qsub's.
const OWN: &[&str] = &["-pty", "-nostdin", "-noshell", "-verbose", "-inherit"];

pub fn usage(kind: InteractiveKind) -> String {
    let name = match kind {
        InteractiveKind::Qrsh => "qrsh",
        InteractiveKind::Qlogin => "qlogin",
    };
    let mut text = crate::qsub::usage().replacen("qsub", name, 1);
    text.push_str("   [-nostdin]                               do not read the standard input\n");
    text.push_str(
        "   [-noshell]                               do not start the command with a shell\n",
    );
    text.push_str(
        "   [-pty y[es]|n[o]]                        start the job in a pseudo terminal\n",
    );
    text.push_str("   [-verbose]                               say what qrsh is doing\n");
    text
}

/// The interactive job of `args` (`qrsh [options] [command [args]]`, `qlogin
/// [options]`), or what to print and exit with.
pub fn interactive_job(args: &[String], kind: InteractiveKind) -> Result<InteractiveJob, Output> {
    let me = match kind {
        InteractiveKind::Qrsh => "qrsh",
        InteractiveKind::Qlogin => "qlogin",
    };
    let p = parse(args, SPECS_QRSH, true).map_err(|e| option_refused(e.into()))?;
    if p.has("-help") {
        return Err(Output::ok(usage(kind)));
    }
    if p.has("-inherit") {
        return Err(Output::fail(
            format!("error: \"{me} -inherit\" starts a task of the job it runs in: use qrsh"),
            exit::FAILURE,
        ));
    }
    let (cwd, home, mut spec) = submitted_from();
    // SGE's qrsh and qlogin start their job now or not at all, unless told otherwise.
    spec.immediate = true;
    let initial = spec.clone();
    let mut flags = Flags::new();
    apply_defaults(&p, &mut spec, &initial, &cwd, &home, &mut flags)?;
    let mut pty = None;
    for g in p.options.iter().filter(|g| g.name == "-pty") {
        pty = Some(
            optvalues::yes_no("-pty", g.arg.as_deref().unwrap_or("")).map_err(option_refused)?,
        );
    }
    let rest = Parsed {
        options: p
            .options
            .iter()
            .filter(|g| !OWN.contains(&g.name))
            .cloned()
            .collect(),
        operands: Vec::new(),
    };
    apply(
        &mut spec,
        &initial,
        &rest,
        Layer::CommandLine,
        &cwd,
        &mut flags,
    )
    .map_err(option_refused)?;
    let command = match (kind, p.operands.split_first()) {
        (InteractiveKind::Qlogin, Some(_)) => {
            return Err(option_refused(OptionError::syntax(format!(
                "invalid option argument \"{}\"",
                p.operands.join(" ")
            ))))
        }
        (_, None) => None,
        (_, Some((first, rest))) => {
            spec.args = rest.to_vec();
            Some(first.clone())
        }
    };
    if spec.name.is_empty() {
        spec.name = match (&command, kind) {
            (Some(c), _) => std::path::Path::new(c)
                .file_name()
                .map_or_else(|| c.clone(), |n| n.to_string_lossy().into_owned()),
            (None, InteractiveKind::Qrsh) => "QRLOGIN".to_string(),
            (None, InteractiveKind::Qlogin) => "QLOGIN".to_string(),
        };
    }
    // The session is the job's output, not files: SGE's qrsh gives /dev/null.
    for path in [&mut spec.stdout_path, &mut spec.stderr_path] {
        if path.is_none() {
            *path = Some("/dev/null".to_string());
        }
    }
    // The terminal type goes with the job, first, as SGE's qrsh sends it (in the
    // place qsub's `submitted_from` gives TERM).
    if let Ok(term) = std::env::var("TERM") {
        if let Some(slot) = spec.env.iter_mut().find(|(k, _)| k == "TERM") {
            slot.1 = term;
        }
    }
    // The command line goes through the login shell, unless `-noshell`.
    spec.binary_shell = !p.has("-noshell");
    spec.script = JobScript::Interactive { kind, command };
    Ok(InteractiveJob {
        spec,
        pty,
        nostdin: p.has("-nostdin"),
        verbose: p.has("-verbose"),
    })
}

/// `qrsh -inherit [options] host command [args]`: a task of the job the caller runs in
/// (`JOB_ID`, `SGE_TASK_ID` of its environment), as the session program sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct InheritTask {
    pub request: PeTaskRequest,
    pub nostdin: bool,
    pub verbose: bool,
}

/// Is this command line a `qrsh -inherit`? (`-inherit` among the options before the
/// command.)
pub fn is_inherit(args: &[String]) -> bool {
    parse(args, SPECS_QRSH, true).is_ok_and(|p| p.has("-inherit"))
}

/// The task `qrsh -inherit` asks for, from its command line, its environment and its
/// working directory; or SGE's words for what is wrong (exit status 1). Of the other
/// options only `-V`, `-v`, `-cwd`, `-nostdin`, `-noshell`, `-pty` and `-verbose` mean
/// anything here, as in SGE's qrsh; the rest are read and ignored.
pub fn inherit_task(
    args: &[String],
    env: &[(String, String)],
    cwd: &str,
) -> Result<InheritTask, Output> {
    let fail = |message: String| Err(Output::fail(message, exit::FAILURE));
    let var = |name: &str| env.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v);
    let p = parse(args, SPECS_QRSH, true).map_err(|e| option_refused(e.into()))?;
    let Some(job) = var("JOB_ID") else {
        return fail(
            "error: \"qrsh\" called with option \"-inherit\", but \"JOB_ID\" not set in environment"
                .to_string(),
        );
    };
    let Ok(job_id) = job.trim().parse::<u64>() else {
        return fail(format!("error: invalid \"JOB_ID\" {job}"));
    };
    let Some((host, command)) = p.operands.split_first().filter(|(_, c)| !c.is_empty()) else {
        return fail(
            "error: usage with \"-inherit\" option: \"qrsh -inherit ... <host> <command> [args]\""
                .to_string(),
        );
    };
    let task_id = match var("SGE_TASK_ID").map(|t| t.trim()) {
        None => {
            return fail(format!(
            "error: executing task of job {job_id} failed: missing \"SGE_TASK_ID\" in environment"
        ))
        }
        Some("undefined") => 0,
        Some(t) => match t.parse::<u32>() {
            Ok(n) => n,
            Err(_) => {
                return fail(format!(
                    "error: executing task of job {job_id} failed: invalid \"SGE_TASK_ID\" {t}"
                ))
            }
        },
    };
    let mut sent: Vec<(String, String)> = Vec::new();
    let mut put = |k: String, v: String| {
        sent.retain(|(ek, _)| *ek != k);
        sent.push((k, v));
    };
    let mut pty = false;
    let mut task_cwd = None;
    for g in &p.options {
        let arg = g.arg.as_deref().unwrap_or("");
        match g.name {
            "-V" => {
                for (k, v) in env {
                    put(k.clone(), v.clone());
                }
            }
            "-v" => {
                for item in arg.split(',').filter(|s| !s.is_empty()) {
                    match item.split_once('=') {
                        Some((k, v)) => put(k.to_string(), v.to_string()),
                        None => put(item.to_string(), var(item).cloned().unwrap_or_default()),
                    }
                }
            }
            "-cwd" => task_cwd = Some(cwd.to_string()),
            "-pty" => pty = optvalues::yes_no("-pty", arg).map_err(option_refused)?,
            _ => {}
        }
    }
    Ok(InheritTask {
        request: PeTaskRequest {
            job_id: JobId(job_id),
            task_id: TaskId(task_id),
            host: host.clone(),
            command: command.to_vec(),
            env: sent,
            cwd: task_cwd,
            noshell: p.has("-noshell"),
            pty,
        },
        nostdin: p.has("-nostdin"),
        verbose: p.has("-verbose"),
    })
}

/// qsub's options and qrsh's own.
const SPECS_QRSH: &[crate::opts::OptSpec] = &{
    use crate::opts::{opt, Arity, OptSpec};
    const N: usize = SPECS.len();
    let mut all: [OptSpec; N + 2] = [opt("-verbose", Arity::None); N + 2];
    let mut i = 0;
    while i < N {
        all[i] = SPECS[i];
        i += 1;
    }
    all[N] = opt("-verbose", Arity::None);
    all[N + 1] = opt("-inherit", Arity::None);
    all
};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn inherit_refusals_are_sges_word_for_word() {
        let in_job = env(&[("JOB_ID", "167"), ("SGE_TASK_ID", "undefined")]);
        // (command line, environment, what qrsh prints on standard error)
        type Row = (&'static str, Vec<(String, String)>, &'static str);
        let table: Vec<Row> = vec![
            ("-inherit vm hostname", env(&[]), "error: \"qrsh\" called with option \"-inherit\", but \"JOB_ID\" not set in environment"),
            ("-inherit", env(&[]), "error: \"qrsh\" called with option \"-inherit\", but \"JOB_ID\" not set in environment"),
            ("-inherit vm hostname", env(&[("JOB_ID", "abc")]), "error: invalid \"JOB_ID\" abc"),
            ("-inherit vm hostname", env(&[("JOB_ID", "99999")]), "error: executing task of job 99999 failed: missing \"SGE_TASK_ID\" in environment"),
            ("-inherit", in_job.clone(), "error: usage with \"-inherit\" option: \"qrsh -inherit ... <host> <command> [args]\""),
            ("-inherit vm", in_job.clone(), "error: usage with \"-inherit\" option: \"qrsh -inherit ... <host> <command> [args]\""),
        ];
        for (line, env, want) in table {
            let out = inherit_task(&words(line), &env, "/tmp").unwrap_err();
            assert_eq!(out.stderr.trim_end(), want, "{line}");
            assert_eq!(out.code, exit::FAILURE, "{line}");
        }
    }

    #[test]
    fn inherit_sends_the_command_and_only_the_variables_asked_for() {
        let vars = env(&[
            ("JOB_ID", "12"),
            ("SGE_TASK_ID", "3"),
            ("MYVAR", "x"),
            ("PATH", "/bin"),
        ]);
        let t = inherit_task(
            &words("-inherit -nostdin -V n2 orted -mca ess \"env\""),
            &vars,
            "/w",
        )
        .unwrap();
        assert_eq!(t.request.job_id, JobId(12));
        assert_eq!(t.request.task_id, TaskId(3));
        assert_eq!(t.request.host, "n2");
        assert_eq!(t.request.command, words("orted -mca ess \"env\""));
        assert_eq!(t.request.env, vars);
        assert!(t.nostdin && !t.request.noshell && !t.request.pty);
        assert_eq!(t.request.cwd, None);
        let t = inherit_task(
            &words("-inherit -v MYVAR,A=b -cwd -noshell -pty y n2 pwd"),
            &vars,
            "/w",
        )
        .unwrap();
        assert_eq!(t.request.env, env(&[("MYVAR", "x"), ("A", "b")]));
        assert_eq!(t.request.cwd.as_deref(), Some("/w"));
        assert!(t.request.noshell && t.request.pty && !t.nostdin);
        // Without -V or -v nothing of the caller's environment goes.
        let t = inherit_task(&words("-inherit n2 hostname"), &vars, "/w").unwrap();
        assert!(t.request.env.is_empty());
        assert!(is_inherit(&words("-inherit n2 hostname")));
        assert!(!is_inherit(&words("hostname -inherit")));
    }
}
