//! Gantry's Grid Engine-compatible commands. Each command is a function from its
//! arguments to an [`Output`]; the binaries in `src/bin` only print it and exit.

pub mod account;
pub use gantry_common::dates;
pub mod alter;
pub mod conn;
pub mod exit;
pub mod opts;
pub mod optvalues;
pub mod qacct;
pub mod qconf;
pub mod qdel;
pub mod qhost;
pub mod qquota;
pub mod qrdel;
pub mod qrsh;
pub mod qrstat;
pub mod qrsub;
pub mod qselect;
pub mod qstat;
pub mod qsub;
pub mod share_mon;
pub mod xml;

use std::io::Write;
use std::process::ExitCode;

/// What a command prints and its exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub stdout: String,
    pub stderr: String,
    pub code: u8,
}

impl Output {
    pub fn ok(stdout: String) -> Output {
        Output {
            stdout,
            stderr: String::new(),
            code: exit::SUCCESS,
        }
    }

    /// A failure: `message` on stderr.
    pub fn fail(message: String, code: u8) -> Output {
        Output {
            stdout: String::new(),
            stderr: format!("{message}\n"),
            code,
        }
    }

    /// A usage error: the message, then the usage, on stderr.
    pub fn usage_error(message: &str, usage: &str) -> Output {
        Output {
            stdout: String::new(),
            stderr: format!("{message}\n{usage}"),
            code: exit::FAILURE,
        }
    }

    /// Print and turn into the process exit status.
    pub fn emit(self) -> ExitCode {
        ExitCode::from(self.print())
    }

    /// Print what the command has to say so far (stdout flushed), before it waits:
    /// `qsub -sync y` says which job it submitted before it waits for the job's end, as
    /// SGE's does.
    pub fn print_so_far(&mut self) {
        let _ = std::io::stdout().write_all(self.stdout.as_bytes());
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().write_all(self.stderr.as_bytes());
        self.stdout.clear();
        self.stderr.clear();
    }

    /// Print (stdout flushed) and return the exit status.
    pub fn print(self) -> u8 {
        let _ = std::io::stdout().write_all(self.stdout.as_bytes());
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().write_all(self.stderr.as_bytes());
        self.code
    }
}

/// A command's entry point: `command_main!(path::to::run)` in a binary that is
/// `#![cfg_attr(not(test), no_main)]` (its test build keeps the test harness's `main`).
///
/// The commands have a C `main` of their own: a command is one short process, and the
/// Rust runtime's start-up (reading `/proc/self/maps` for the main thread's stack guard,
/// an alternate signal stack and its handlers: 15 system calls) is a measurable part of
/// its life. `std::env::args` still works (glibc hands the arguments to initialisers);
/// SIGPIPE keeps its default action, as in C programs; output is flushed by
/// [`Output::print`].
#[macro_export]
macro_rules! command_main {
    ($command:path) => {
        #[cfg(not(test))]
        #[allow(unsafe_code)] // `no_mangle`: the C entry point of a `#![no_main]` program
        #[no_mangle]
        pub extern "C" fn main(
            _argc: std::os::raw::c_int,
            _argv: *const *const std::os::raw::c_char,
        ) -> std::os::raw::c_int {
            let output = match $crate::args() {
                Ok(args) => $command(&args),
                Err(refused) => refused,
            };
            std::os::raw::c_int::from(output.print())
        }
    };
}

/// The arguments after the program name.
/// The arguments after the program name. One that is not UTF-8 (a name, a path, a
/// value: nothing Gantry stores may hold one) is refused with its place, never a panic.
pub fn args() -> Result<Vec<String>, Output> {
    std::env::args_os()
        .skip(1)
        .enumerate()
        .map(|(i, a)| {
            a.into_string().map_err(|raw| {
                Output::fail(
                    format!(
                        "error: argument {} is not valid UTF-8: {}",
                        i + 1,
                        raw.to_string_lossy().escape_debug()
                    ),
                    exit::FAILURE,
                )
            })
        })
        .collect()
}

/// Parse a command's options. `-help` (printing `usage`) and usage errors come back as
/// the command's output.
pub fn parse_args(
    args: &[String],
    specs: &[opts::OptSpec],
    operands: bool,
    usage: fn() -> String,
) -> Result<opts::Parsed, Output> {
    parse_args_as(args, specs, operands, usage, UnknownOption::ErrorThenUsage)
}

/// How a command answers an option it does not take, as SGE 8.1.9's command does
/// (tests/sge/recorded/92_unknown_options.txt): each has its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnknownOption {
    /// `error: invalid option argument "-x"`, then the usage.
    ErrorThenUsage,
    /// The usage, then `PREFIXinvalid option argument "-x"` (qhost's prefix is
    /// `error: `, qstat's none).
    UsageThen(&'static str),
    /// The usage alone (qacct).
    UsageOnly,
    /// One line, `PREFIXinvalid option argument "-x"`, and this exit status.
    Line(&'static str, u8),
}

/// [`parse_args`] with the command's own answer to an option it does not take.
pub fn parse_args_as(
    args: &[String],
    specs: &[opts::OptSpec],
    operands: bool,
    usage: fn() -> String,
    unknown: UnknownOption,
) -> Result<opts::Parsed, Output> {
    let p = opts::parse(args, specs, operands).map_err(|e| match (&e, unknown) {
        (opts::OptError::Unknown(word), UnknownOption::UsageThen(prefix)) => Output {
            stdout: String::new(),
            stderr: format!("{}{prefix}invalid option argument \"{word}\"\n", usage()),
            code: exit::FAILURE,
        },
        (opts::OptError::Unknown(_), UnknownOption::UsageOnly) => Output {
            stdout: String::new(),
            stderr: usage(),
            code: exit::FAILURE,
        },
        (opts::OptError::Unknown(word), UnknownOption::Line(prefix, code)) => {
            Output::fail(format!("{prefix}invalid option argument \"{word}\""), code)
        }
        _ => Output::usage_error(&e.to_string(), &usage()),
    })?;
    if p.has("-help") {
        return Err(Output::ok(usage()));
    }
    Ok(p)
}

/// Send a request to the master; a refusal or an unreachable daemon comes back as the
/// command's output.
pub fn ask(req: &gantry_proto::ToMaster) -> Result<gantry_proto::FromMaster, Output> {
    match conn::request(req) {
        Ok(gantry_proto::FromMaster::Refused(r)) => {
            Err(Output::fail(r.message, exit::for_refusal(r.kind)))
        }
        Ok(answer) => Ok(answer),
        Err(e) => Err(Output::fail(e.to_string(), exit::FAILURE)),
    }
}

/// A `qstat` listing's encoded answer, asked for with `req`; its rows are decoded in
/// place with [`jobs_in`].
pub fn ask_jobs(req: &gantry_proto::ToMaster) -> Result<Vec<u8>, Output> {
    conn::request_bytes(req).map_err(|e| Output::fail(e.to_string(), exit::FAILURE))
}

/// The same, the answer left on the socket (see [`conn::request_reader`]).
pub fn ask_reader(
    req: &gantry_proto::ToMaster,
) -> Result<(usize, std::os::unix::net::UnixStream), Output> {
    conn::request_reader(req).map_err(|e| Output::fail(e.to_string(), exit::FAILURE))
}

/// The rows of a listing's answer, decoded as they are taken and borrowed from it; a
/// refusal or any other answer as [`ask`] reports it.
pub fn jobs_in(bytes: &[u8]) -> Result<gantry_proto::JobRows<'_>, Output> {
    listing_in(gantry_proto::decode_jobs_answer(bytes))
}

/// The same for the default listing's job lines.
pub fn job_lines_in(bytes: &[u8]) -> Result<gantry_proto::JobLines<'_>, Output> {
    listing_in(gantry_proto::decode_job_lines_answer(bytes))
}

fn listing_in<T>(
    decoded: Result<Result<T, gantry_proto::FromMaster>, gantry_proto::ProtoError>,
) -> Result<T, Output> {
    match decoded {
        Ok(Ok(items)) => Ok(items),
        Ok(Err(gantry_proto::FromMaster::Refused(r))) => {
            Err(Output::fail(r.message, exit::for_refusal(r.kind)))
        }
        Ok(Err(other)) => Err(unexpected(&other)),
        Err(e) => Err(undecodable(e)),
    }
}

/// An answer that could not be decoded, as the command reports it.
pub fn undecodable(e: gantry_proto::ProtoError) -> Output {
    Output::fail(conn::ConnError::from(e).to_string(), exit::FAILURE)
}

/// Send a request whose answer the command prints on standard output, refusals included,
/// as SGE's `qdel`, `qrdel` and `qrsub` do: each item of the answer on a line of its own
/// (exit status 1 if any was refused), what was done, a verification, or the refusal.
pub fn answer_on_stdout(req: &gantry_proto::ToMaster) -> Output {
    answer_on_stdout_exiting(req, exit::for_refusal)
}

/// [`answer_on_stdout`], a refusal's exit status chosen by `code`.
pub fn answer_on_stdout_exiting(
    req: &gantry_proto::ToMaster,
    code: fn(gantry_proto::RefusalKind) -> u8,
) -> Output {
    use gantry_proto::FromMaster;
    let lines = |lines: Vec<String>| lines.iter().map(|l| format!("{l}\n")).collect();
    match conn::request(req) {
        Ok(FromMaster::Items(items)) => Output {
            code: if items.iter().any(|i| i.refused) {
                exit::FAILURE
            } else {
                exit::SUCCESS
            },
            stdout: lines(items.into_iter().map(|i| i.message).collect()),
            stderr: String::new(),
        },
        Ok(FromMaster::Done { messages }) => Output::ok(lines(messages)),
        Ok(FromMaster::Verified { message }) => Output::ok(format!("{message}\n")),
        Ok(FromMaster::Refused(r)) => Output {
            stdout: format!("{}\n", r.message),
            stderr: String::new(),
            code: code(r.kind),
        },
        Ok(other) => unexpected(&other),
        Err(e) => Output::fail(e.to_string(), exit::FAILURE),
    }
}

/// An answer of the wrong kind (a bug or a version skew), as output.
/// A `-json` document as one line. The documents are strings, numbers, booleans and
/// lists of them (a number that is no finite one becomes null): serialising them
/// cannot fail.
pub fn json_line(doc: &impl serde::Serialize) -> String {
    format!("{}\n", serde_json::to_string(doc).unwrap_or_default())
}

pub fn unexpected(answer: &gantry_proto::FromMaster) -> Output {
    Output::fail(
        format!("error: unexpected answer from the master: {answer:?}"),
        exit::FAILURE,
    )
}
