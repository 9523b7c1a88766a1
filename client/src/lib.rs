//! Gantry's Grid Engine-compatible commands. Each command is a function from its
//! arguments to an [`Output`]; the binaries in `src/bin` only print it and exit.

pub mod conn;
pub mod exit;
pub mod opts;
pub mod qconf;
pub mod qhost;
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
        let _ = std::io::stdout().write_all(self.stdout.as_bytes());
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().write_all(self.stderr.as_bytes());
        ExitCode::from(self.code)
    }
}

/// The arguments after the program name.
pub fn args() -> Vec<String> {
    std::env::args().skip(1).collect()
}
