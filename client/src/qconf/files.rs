//! Object files `qconf -A`/`-M` reads and checks itself before it asks the master, so
//! that a refusal says what SGE's qconf says, file name included.

use super::*;

/// `-Msconf`, `-Auser`, `-Muser`: the file read and checked here first, as SGE's qconf
/// reads it, so that a refusal says what SGE's says, file name included (`error: error
/// reading file: "FILE"` after a value not of its attribute's type); the master checks
/// it again.
pub(super) fn read_checked_file<T>(
    path: &str,
    check: impl Fn(&str) -> Result<T, SgeFileError>,
) -> Result<String, Output> {
    let then = "error reading in file";
    let text = open_for_reading(path, then)?;
    if holds_no_attribute(&text) {
        return Err(Output::fail(
            format!("error: error reading file: \"{path}\"\n{then}"),
            exit::FAILURE,
        ));
    }
    let message = match check(&text) {
        Ok(_) => return Ok(text),
        // A name is refused in SGE's words alone.
        Err(SgeFileError::Alone(m)) => m,
        Err(SgeFileError::Refused(m)) => format!("error: {m}\n{then}"),
        Err(e @ (SgeFileError::Reading(_) | SgeFileError::File(_))) => {
            format!("error: {e}\nerror: error reading file: \"{path}\"\n{then}")
        }
    };
    Err(Output::fail(message, exit::FAILURE))
}

/// A file's text, or SGE's words for why it cannot be opened, then `then`.
fn open_for_reading(path: &str, then: &str) -> Result<String, Output> {
    std::fs::read_to_string(path).map_err(|e| {
        let reason = match e.kind() {
            std::io::ErrorKind::NotFound => "No such file or directory".to_string(),
            std::io::ErrorKind::PermissionDenied => "Permission denied".to_string(),
            _ => e.to_string(),
        };
        Output::fail(
            format!("error: error opening file \"{path}\" for reading: {reason}\n{then}"),
            exit::FAILURE,
        )
    })
}

/// `-Mc`: the complex file read and checked here first, as SGE's qconf reads and checks
/// it before it asks the qmaster (so a user who is no manager hears of a bad file
/// first); a syntax error names the file. The master checks the list again.
pub(super) fn read_complex_file(path: &str) -> Result<String, Output> {
    let not_correct = format!("Complex attribute file \"{path}\" is not correct");
    let text = open_for_reading(path, &not_correct)?;
    // SGE refuses an empty table with the same words.
    if holds_no_attribute(&text) {
        return Err(Output::fail(not_correct, exit::FAILURE));
    }
    match gantry_common::complex::read_complexes(&text) {
        Ok(_) => Ok(text),
        Err(gantry_common::complex::ComplexFileError::Syntax(m)) => {
            Err(Output::fail(format!("{m}\n{not_correct}"), exit::FAILURE))
        }
        Err(e) => Err(Output::fail(e.to_string(), exit::FAILURE)),
    }
}
