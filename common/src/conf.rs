//! SGE's object file format: one `attribute value` pair per line, `#` comments, a
//! backslash at the end of a line continues the value on the next line. Used by
//! `qconf -sconf/-Mconf`, `-se/-Ae`, `-sq`, `-shgrp` and friends.

/// One parsed line: attribute, value (continuations joined), and the line it started on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub line: usize,
    pub key: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error("line {line}: {reason}")]
    Line { line: usize, reason: String },
    #[error("{0}")]
    Object(String),
}

/// Why an object file is refused, in SGE 8.1.9's words where SGE has them, by where
/// SGE finds the fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SgeFileError {
    /// What SGE's `qconf` finds while it reads the file (a value not of its attribute's
    /// type, an unknown attribute): it adds `error: error reading file: "FILE"`.
    #[error("{0}")]
    Reading(String),
    /// A value of the right type that is refused, or an attribute missing.
    #[error("{0}")]
    Refused(String),
    /// What SGE's `qconf` reports in its words alone: the object's name
    /// (`verify_str_key`'s, see [`crate::names::verify_name`]), a share tree's form
    /// (a child node without a node, a name twice under one node).
    #[error("{0}")]
    Alone(String),
    /// The file's form (a control character, a continuation at its end).
    #[error(transparent)]
    File(#[from] FileError),
}

/// SGE's `u_long32`: digits only, with SGE's words for each other thing (`parameter
/// "X" must be a positive number`, `"1.5" is not an u_long32 value`, `error parsing
/// unsigned long value from string "abc"`).
pub fn read_u_long32(key: &str, value: &str) -> Result<u32, SgeFileError> {
    let v = value.trim();
    if let Ok(n) = v.parse::<u32>() {
        return Ok(n);
    }
    let reading = SgeFileError::Reading;
    if v.starts_with('-') && v[1..].parse::<f64>().is_ok() {
        return Err(reading(format!(
            "parameter \"{key}\" must be a positive number"
        )));
    }
    if v.parse::<f64>().is_ok() {
        return Err(reading(format!("\"{v}\" is not an u_long32 value")));
    }
    Err(reading(format!(
        "error parsing unsigned long value from string \"{v}\""
    )))
}

impl FileError {
    pub fn at(line: usize, reason: impl Into<String>) -> Self {
        FileError::Line {
            line,
            reason: crate::names::bounded_message(&reason.into()),
        }
    }
}

/// The rows of a table file (`qconf -sc`, `qconf -sgq`): per line that is not blank
/// or a comment (`#` starts one anywhere), its number and its whitespace-separated
/// fields, which must be `fields` many.
pub fn table_rows(
    text: &str,
    fields: usize,
) -> impl Iterator<Item = Result<(usize, Vec<&str>), FileError>> {
    table_rows_between(text, fields, fields)
}

/// [`table_rows`] whose rows have from `min` to `max` fields (the last ones optional).
pub fn table_rows_between(
    text: &str,
    min: usize,
    max: usize,
) -> impl Iterator<Item = Result<(usize, Vec<&str>), FileError>> {
    text.lines().enumerate().filter_map(move |(idx, raw)| {
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            return None;
        }
        let f: Vec<&str> = content.split_whitespace().collect();
        Some(if (min..=max).contains(&f.len()) {
            Ok((idx + 1, f))
        } else {
            let expected = if min == max {
                min.to_string()
            } else {
                format!("{min} to {max}")
            };
            Err(FileError::at(
                idx + 1,
                format!("expected {expected} fields, found {}", f.len()),
            ))
        })
    })
}

/// Split a file into entries. Blank lines and comments are skipped; a line without a
/// value is an error (SGE requires every attribute to have one, `NONE` if empty).
pub fn parse_entries(text: &str) -> Result<Vec<Entry>, FileError> {
    let mut entries = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((idx, raw)) = lines.next() {
        let line_no = idx + 1;
        let mut logical = raw.to_string();
        // A backslash at the end continues the line, blanks after it or not: a value
        // never ends in one (it would print as a continuation and read back otherwise).
        while logical.trim_end().ends_with('\\') {
            let end = logical.trim_end().len() - 1;
            logical.truncate(end);
            match lines.next() {
                Some((_, next)) => logical.push_str(next.trim_start()),
                None => return Err(FileError::at(line_no, "continuation at end of file")),
            }
        }
        let trimmed = logical.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let (key, value) = match trimmed.split_once(char::is_whitespace) {
            Some((k, v)) => (k, v.trim()),
            None => (trimmed, ""),
        };
        if value.is_empty() {
            return Err(FileError::at(
                line_no,
                format!("attribute \"{key}\" has no value"),
            ));
        }
        // A NUL or another control character would be stored and printed back as it
        // is (SGE cuts the value at a NUL): no object holds one.
        if let Some(c) = logical.chars().find(|c| c.is_control() && *c != '\t') {
            return Err(FileError::at(
                line_no,
                format!("the line holds a control character (U+{:04X})", c as u32),
            ));
        }
        if entries.iter().any(|e: &Entry| e.key == key) {
            return Err(FileError::at(
                line_no,
                format!("attribute \"{key}\" appears twice"),
            ));
        }
        entries.push(Entry {
            line: line_no,
            key: key.to_string(),
            value: value.to_string(),
        });
    }
    Ok(entries)
}

/// Print `key value` with the key padded to `width`, wrapping long values the way SGE
/// does: the value is cut into `tokens` (already carrying their own separators, e.g.
/// `"a=1,"`), joined with `joiner`, and a line that would pass 80 columns (counting the
/// trailing ` \`) continues on the next, indented to `width`.
pub fn write_wrapped(out: &mut String, key: &str, width: usize, tokens: &[String], joiner: &str) {
    let mut line = format!("{key:<width$}");
    let mut first = true;
    for tok in tokens {
        let add = if first {
            tok.len()
        } else {
            joiner.len() + tok.len()
        };
        if !first && line.len() + add + 2 > 80 {
            line.push_str(" \\");
            out.push_str(&line);
            out.push('\n');
            line = format!("{:width$}{tok}", "");
        } else {
            if !first {
                line.push_str(joiner);
            }
            line.push_str(tok);
        }
        first = false;
    }
    out.push_str(&line);
    out.push('\n');
}

/// Tokens of a comma-separated list for [`write_wrapped`]: every element but the last
/// keeps its comma.
pub fn comma_tokens<S: AsRef<str>>(items: &[S]) -> Vec<String> {
    let n = items.len();
    items
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if i + 1 < n {
                format!("{},", s.as_ref())
            } else {
                s.as_ref().to_string()
            }
        })
        .collect()
}

/// Split a list value (`a,b c`, `NONE`) into its elements.
pub fn split_list(value: &str) -> Vec<String> {
    if value.eq_ignore_ascii_case("none") {
        return Vec::new();
    }
    value
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Split `name=value,name=value` (or `NONE`) into pairs.
pub fn split_pairs(
    value: &str,
    line: usize,
    what: &str,
) -> Result<Vec<(String, String)>, FileError> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for item in split_list(value) {
        let Some((k, v)) = item.split_once('=') else {
            return Err(FileError::at(
                line,
                format!("\"{item}\" in {what} is not of the form name=value"),
            ));
        };
        if k.is_empty() || v.is_empty() {
            return Err(FileError::at(
                line,
                format!("\"{item}\" in {what} is not of the form name=value"),
            ));
        }
        if pairs.iter().any(|(pk, _)| pk == k) {
            return Err(FileError::at(
                line,
                format!("\"{k}\" appears twice in {what}"),
            ));
        }
        pairs.push((k.to_string(), v.to_string()));
    }
    Ok(pairs)
}

/// A list printed SGE's way: elements joined by commas, or `NONE`.
pub fn list_or_none<S: AsRef<str>>(items: &[S]) -> String {
    if items.is_empty() {
        "NONE".to_string()
    } else {
        items
            .iter()
            .map(|s| s.as_ref())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Pairs printed SGE's way: `a=1,b=2`, or `NONE`.
pub fn pairs_or_none(pairs: &[(String, String)]) -> String {
    if pairs.is_empty() {
        "NONE".to_string()
    } else {
        pairs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The terms of a sum such as a load formula or a dynamic quota limit (`a*2-b+3`):
/// each with its sign (1 or -1) and its text, trimmed.
pub fn signed_terms(text: &str) -> Vec<(f64, &str)> {
    let mut out = Vec::new();
    let mut sign = 1.0;
    let mut rest = text.trim();
    loop {
        let end = rest.find(['+', '-']).unwrap_or(rest.len());
        out.push((sign, rest[..end].trim()));
        if end == rest.len() {
            return out;
        }
        sign = if rest.as_bytes()[end] == b'-' {
            -1.0
        } else {
            1.0
        };
        rest = &rest[end + 1..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_with_comments_and_continuations() {
        let text = "# a comment\nname   value\n\nlist   a=1, \\\n       b=2\nlast x y\n";
        let e = parse_entries(text).unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!(
            (e[0].key.as_str(), e[0].value.as_str(), e[0].line),
            ("name", "value", 2)
        );
        assert_eq!(e[1].value, "a=1, b=2");
        assert_eq!(e[1].line, 4);
        assert_eq!(e[2].value, "x y");
        // Blanks after the backslash: still a continuation, so no value ends in one
        // (found by fuzz/fuzz_targets/object_files.rs: `hostlist a,\ ` printed as a
        // line that read back joined to the next).
        let e = parse_entries("hostlist a,\\  \n   b\nseq_no 0\n").unwrap();
        assert_eq!((e[0].value.as_str(), e.len()), ("a,b", 2));
        assert!(parse_entries("hostlist a,\\ \n").is_err());
    }

    #[test]
    fn entry_errors_name_the_line() {
        assert_eq!(
            parse_entries("a 1\nb\n").unwrap_err().to_string(),
            "line 2: attribute \"b\" has no value"
        );
        assert_eq!(
            parse_entries("a 1\na 2\n").unwrap_err().to_string(),
            "line 2: attribute \"a\" appears twice"
        );
        assert!(parse_entries("a 1 \\").is_err());
    }

    #[test]
    fn pairs_and_lists() {
        assert_eq!(split_list("NONE"), Vec::<String>::new());
        assert_eq!(split_list("a,b c"), vec!["a", "b", "c"]);
        assert_eq!(
            split_pairs("a=1,b=2", 1, "x").unwrap(),
            vec![("a".into(), "1".into()), ("b".into(), "2".into())]
        );
        assert!(split_pairs("a", 1, "x").is_err());
        assert!(split_pairs("a=1,a=2", 1, "x").is_err());
        assert_eq!(pairs_or_none(&[]), "NONE");
        assert_eq!(list_or_none(&["a", "b"]), "a,b");
    }

    #[test]
    fn wrapping_matches_sge() {
        let mut out = String::new();
        let toks: Vec<String> = "accounting=true reporting=false flush_time=00:00:15 joblog=false sharelog=00:00:00 accounting_flush_time=00:00:00"
            .split(' ')
            .map(str::to_string)
            .collect();
        write_wrapped(&mut out, "reporting_params", 29, &toks, " ");
        assert_eq!(
            out,
            "reporting_params             accounting=true reporting=false \\\n                             flush_time=00:00:15 joblog=false \\\n                             sharelog=00:00:00 accounting_flush_time=00:00:00\n"
        );
    }
}
