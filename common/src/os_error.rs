//! An operating system error in the C library's words (`strerror`), as SGE prints it:
//! `No such file or directory`, without the `(os error 2)` Rust's display adds.

/// `e` as `strerror` says it; an error that carries no errno keeps its own words.
pub fn strerror(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => {
            let text = std::io::Error::from_raw_os_error(n).to_string();
            match text.rfind(" (os error ") {
                Some(i) => text[..i].to_string(),
                None => text,
            }
        }
        None => e.to_string(),
    }
}

/// Why `program` could not be executed, as SGE's shepherd says it.
pub fn exec_failed(program: &str, e: &std::io::Error) -> String {
    format!("execvlp({program}, \"{program}\") failed: {}", strerror(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_as_the_c_library_says_them() {
        let cases = [
            (
                std::io::Error::from_raw_os_error(2),
                "No such file or directory",
            ),
            (std::io::Error::from_raw_os_error(13), "Permission denied"),
            (std::io::Error::from_raw_os_error(20), "Not a directory"),
            (
                std::io::Error::other("the session failed"),
                "the session failed",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(strerror(&e), want);
        }
        assert_eq!(
            exec_failed("/no/prolog", &std::io::Error::from_raw_os_error(2)),
            "execvlp(/no/prolog, \"/no/prolog\") failed: No such file or directory"
        );
    }
}
