//! Names users and administrators give objects, checked as SGE checks them
//! (`verify_str_key`, `object_verify_name`), with SGE's messages.
//!
//! Two tables, as in SGE: object names (queues, parallel environments, projects,
//! usersets, host groups, resource quota sets) may hold none of `\n \t \r space / : ' "
//! \ [ ] { } | ( ) @ % ,` and start with neither `.` nor `#`; job names and account
//! strings may hold none of `\n \t \r / : @ \ * ?`, and a job name may not start with a
//! digit. No name may be longer than 512 characters, or be `NONE`, `ALL` or `TEMPLATE`.
//! Gantry also refuses every other control character (SGE lets an escape sequence
//! through, which then reaches other users' terminals through `qstat`).

/// SGE's `MAX_VERIFY_STRING`.
pub const MAX_NAME_LENGTH: usize = 512;

/// Which characters a name may not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// Configuration objects (SGE's `KEY_TABLE`).
    Object,
    /// Job names and account strings (SGE's `QSUB_TABLE`).
    Job,
}

fn forbidden_in(kind: NameKind) -> &'static [(char, &'static str)] {
    match kind {
        NameKind::Object => &[
            ('\n', "Return"),
            ('\t', "Tabulator"),
            ('\r', "Carriage return"),
            (' ', "Space"),
            ('/', "Slash"),
            (':', "Colon"),
            ('\'', "Quote"),
            ('"', "Double quote"),
            ('\\', "Backslash"),
            ('[', "Brackets"),
            (']', "Brackets"),
            ('{', "Braces"),
            ('}', "Braces"),
            ('|', "Pipe"),
            ('(', "Parenthesis"),
            (')', "Parenthesis"),
            ('@', "At"),
            ('%', "Percent"),
            (',', "Comma"),
        ],
        NameKind::Job => &[
            ('\n', "Return"),
            ('\t', "Tabulator"),
            ('\r', "Carriage return"),
            ('/', "Slash"),
            (':', "Colon"),
            ('@', "At"),
            ('\\', "Backslash"),
            ('*', "Asterisk"),
            ('?', "Questionmark"),
        ],
    }
}

/// SGE's `verify_str_key`: the length, the first character, the characters, keywords.
pub fn verify_name(name: &str, kind: NameKind) -> Result<(), String> {
    if name.len() > MAX_NAME_LENGTH {
        return Err(format!(
            "string is longer than {MAX_NAME_LENGTH}, this is not allowed for objectnames"
        ));
    }
    if kind == NameKind::Object {
        for (c, what) in [('.', "Dot"), ('#', "Hash")] {
            if name.starts_with(c) {
                return Err(format!(
                    "{what} ('{c}') not allowed as first character of objectname"
                ));
            }
        }
    }
    for (c, what) in forbidden_in(kind) {
        if name.contains(*c) {
            return Err(if c.is_control() {
                format!("{what} not allowed in objectname")
            } else {
                format!("{what} ('{c}') not allowed in objectname")
            });
        }
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(format!(
            "Control character (0x{:02x}) not allowed in objectname",
            u32::from(c)
        ));
    }
    for keyword in ["NONE", "ALL", "TEMPLATE"] {
        if name.eq_ignore_ascii_case(keyword) {
            return Err(format!("Keyword (\"{keyword}\") not allowed as objectname"));
        }
    }
    Ok(())
}

/// A job's name, as SGE's master checks it (`job_verify`, `object_verify_name`).
pub fn verify_job_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("job rejected cause there is no job_name in the request".to_string());
    }
    if name.len() >= MAX_NAME_LENGTH {
        return Err(format!(
            "job name too long, maximum allowed length is {MAX_NAME_LENGTH} characters"
        ));
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!(
            "denied: \"{}\" is not a valid object name (cannot start with a digit)",
            quoted(name)
        ));
    }
    verify_name(name, NameKind::Job)
}

/// How much of a user's value an error message quotes.
pub const QUOTED_LENGTH: usize = 80;

/// A value as an error message may quote it: its first line, at most
/// [`QUOTED_LENGTH`] characters, control characters escaped, and `...` when cut.
pub fn quoted(value: &str) -> String {
    let line = value.lines().next().unwrap_or("");
    let mut out = String::new();
    for (i, c) in line.chars().enumerate() {
        if i == QUOTED_LENGTH {
            out.push_str("...");
            return out;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if line.len() < value.len() {
        out.push_str("...");
    }
    out
}

/// The longest line of an error message, and the most lines it has.
const MESSAGE_LINE: usize = 240;
const MESSAGE_LINES: usize = 40;

/// An error message as it may be shown: a value quoted in it (a 200 KB attribute, a
/// forged name) is cut to one short line, control characters are escaped, and a very
/// long list of problems ends with how many more there were.
pub fn bounded_message(message: &str) -> String {
    let lines: Vec<&str> = message.lines().collect();
    let mut out = String::new();
    for (i, line) in lines.iter().take(MESSAGE_LINES).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        for (n, c) in line.chars().enumerate() {
            if n == MESSAGE_LINE {
                out.push_str("...");
                break;
            }
            if c.is_control() {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
    }
    if lines.len() > MESSAGE_LINES {
        out.push_str(&format!(
            "\n... ({} more lines)",
            lines.len() - MESSAGE_LINES
        ));
    }
    if message.ends_with('\n') {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_names_as_sge_checks_them() {
        let long = "a".repeat(512);
        let table: &[(&str, Result<(), &str>)] = &[
            ("hello", Ok(())),
            ("my job.sh", Ok(())),
            ("a#b", Ok(())),
            (
                "",
                Err("job rejected cause there is no job_name in the request"),
            ),
            (
                "1abc",
                Err("denied: \"1abc\" is not a valid object name (cannot start with a digit)"),
            ),
            ("a\nb", Err("Return not allowed in objectname")),
            ("a\tb", Err("Tabulator not allowed in objectname")),
            ("a/b", Err("Slash ('/') not allowed in objectname")),
            ("a:b", Err("Colon (':') not allowed in objectname")),
            ("a@b", Err("At ('@') not allowed in objectname")),
            ("a*", Err("Asterisk ('*') not allowed in objectname")),
            ("a?", Err("Questionmark ('?') not allowed in objectname")),
            (
                "red\u{1b}[31m",
                Err("Control character (0x1b) not allowed in objectname"),
            ),
            ("none", Err("Keyword (\"NONE\") not allowed as objectname")),
            (
                &long,
                Err("job name too long, maximum allowed length is 512 characters"),
            ),
        ];
        for (name, want) in table {
            assert_eq!(
                verify_job_name(name),
                want.map_err(str::to_string),
                "{name:?}"
            );
        }
    }

    #[test]
    fn object_names_as_sge_checks_them() {
        let table: &[(&str, Result<(), &str>)] = &[
            ("all.q", Ok(())),
            ("1q", Ok(())),
            (
                ".q",
                Err("Dot ('.') not allowed as first character of objectname"),
            ),
            (
                "#q",
                Err("Hash ('#') not allowed as first character of objectname"),
            ),
            ("a b", Err("Space (' ') not allowed in objectname")),
            ("a,b", Err("Comma (',') not allowed in objectname")),
            ("a\rb", Err("Carriage return not allowed in objectname")),
            (
                "Template",
                Err("Keyword (\"TEMPLATE\") not allowed as objectname"),
            ),
        ];
        for (name, want) in table {
            assert_eq!(
                verify_name(name, NameKind::Object),
                want.map_err(str::to_string),
                "{name:?}"
            );
        }
        assert_eq!(
            verify_name(&"q".repeat(513), NameKind::Object),
            Err("string is longer than 512, this is not allowed for objectnames".to_string())
        );
        assert_eq!(verify_name(&"q".repeat(512), NameKind::Object), Ok(()));
    }

    #[test]
    fn messages_are_bounded() {
        assert_eq!(bounded_message("line 3: bad\n"), "line 3: bad\n");
        let huge = format!("line 1: invalid value \"{}\"", "9".repeat(200_000));
        let m = bounded_message(&huge);
        assert_eq!(m.len(), 243, "{m}");
        assert!(m.ends_with("999..."));
        assert_eq!(bounded_message("a\u{1b}b"), "a\\u{1b}b");
        let many: String = (0..100).map(|i| format!("{i}\n")).collect();
        let m = bounded_message(&many);
        assert_eq!(m.lines().count(), 41);
        assert!(m.ends_with("... (60 more lines)\n"), "{m}");
    }

    #[test]
    fn quoted_values_are_one_short_printable_line() {
        assert_eq!(quoted("abc"), "abc");
        assert_eq!(quoted("abc\ndef"), "abc...");
        assert_eq!(quoted("a\u{1b}[31m"), "a\\u{1b}[31m");
        assert_eq!(quoted(&"x".repeat(200)), format!("{}...", "x".repeat(80)));
        assert_eq!(quoted(""), "");
    }
}
