//! `qrsh` and `qlogin`: the options, read as SGE's qrsh reads them (qsub's, with
//! `-now y` by default, plus `-pty`, `-nostdin`, `-noshell`, `-verbose`), made into the
//! interactive job to submit. The session itself (the terminal, the frames) is the
//! `qrsh` program's (`interactive/`): this crate does no terminal I/O.

use gantry_proto::{InteractiveKind, JobScript, JobSpec};

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
            format!("Unsupported: \"{me} -inherit\" is not supported by Gantry yet"),
            exit::ENOIMP,
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
    // The terminal type goes with the job, as SGE's qrsh sends it.
    if let Ok(term) = std::env::var("TERM") {
        spec.env.retain(|(k, _)| k != "TERM");
        spec.env.push(("TERM".to_string(), term));
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
