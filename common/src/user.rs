//! User objects (`qconf -suser`, `-auser`, `-muser`, `-duser`, `-suserl`): a user's
//! override tickets, functional shares, default project and when an object made for it
//! automatically goes, as `sge_user(5)` describes them, read and printed as SGE 8.1.9
//! does.

use serde::{Deserialize, Serialize};

use crate::conf::{parse_entries, read_u_long32, SgeFileError};

/// A user object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub name: String,
    /// Override tickets.
    pub oticket: u32,
    /// Functional shares.
    pub fshare: u32,
    /// When an object made automatically (`enforce_user auto`) is deleted, in seconds
    /// since the epoch; 0: never.
    pub delete_time: u32,
    /// The project of the user's jobs that name none (`None`: `NONE`).
    pub default_project: Option<String>,
}

impl User {
    /// `qconf -auser`'s template, and a new user's object.
    pub fn new(name: &str) -> User {
        User {
            name: name.to_string(),
            oticket: 0,
            fshare: 0,
            delete_time: 0,
            default_project: None,
        }
    }
}

/// The attributes in SGE's order; every one is required in a file.
const ATTRIBUTES: &[&str] = &[
    "name",
    "oticket",
    "fshare",
    "delete_time",
    "default_project",
];

/// The user object as `qconf -suser` prints it.
pub fn print_user(u: &User) -> String {
    format!(
        "name {}\noticket {}\nfshare {}\ndelete_time {}\ndefault_project {}\n",
        u.name,
        u.oticket,
        u.fshare,
        u.delete_time,
        u.default_project.as_deref().unwrap_or("NONE")
    )
}

/// Read a user object file (`-Auser`, `-Muser`, the editor's of `-auser`, `-muser`) as
/// SGE 8.1.9 reads it: an unknown attribute or a number that is not one refused while
/// reading, a missing attribute or a name with a slash refused after.
pub fn parse_user(text: &str) -> Result<User, SgeFileError> {
    let entries = parse_entries(text)?;
    let mut u = User::new("");
    for e in &entries {
        match e.key.as_str() {
            "name" => u.name = e.value.trim().to_string(),
            "oticket" => u.oticket = read_u_long32(&e.key, &e.value)?,
            "fshare" => u.fshare = read_u_long32(&e.key, &e.value)?,
            "delete_time" => u.delete_time = read_u_long32(&e.key, &e.value)?,
            "default_project" => {
                let p = e.value.trim();
                u.default_project = (!p.eq_ignore_ascii_case("NONE")).then(|| p.to_string());
            }
            other => {
                return Err(SgeFileError::Reading(format!(
                    "unknown attribute name \"{}\"",
                    crate::names::bounded_message(other)
                )))
            }
        }
    }
    if let Some(missing) = ATTRIBUTES
        .iter()
        .find(|a| !entries.iter().any(|e| e.key == **a))
    {
        return Err(SgeFileError::Refused(format!(
            "required attribute \"{missing}\" is missing"
        )));
    }
    if u.name.is_empty() {
        return Err(SgeFileError::Alone("invalid user name \"\"".into()));
    }
    crate::names::verify_name(&u.name, crate::names::NameKind::Object)
        .map_err(SgeFileError::Alone)?;
    Ok(u)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use SgeFileError::{Alone, Reading, Refused};

    #[test]
    fn a_user_prints_and_reads_as_sge_does() {
        let text = "name alice\noticket 10\nfshare 20\ndelete_time 0\ndefault_project NONE\n";
        let u = parse_user(text).unwrap();
        assert_eq!(
            u,
            User {
                oticket: 10,
                fshare: 20,
                ..User::new("alice")
            }
        );
        assert_eq!(print_user(&u), text);
        assert_eq!(
            print_user(&User::new("template")),
            "name template\noticket 0\nfshare 0\ndelete_time 0\ndefault_project NONE\n"
        );
        let with_project = "name bob\noticket 0\nfshare 0\ndelete_time 0\ndefault_project chem\n";
        assert_eq!(
            parse_user(with_project).unwrap().default_project.as_deref(),
            Some("chem")
        );
    }

    #[test]
    fn bad_files_are_refused_in_sge_words() {
        // Recorded from SGE 8.1.9's `qconf -Auser`.
        let full = |line: &str| {
            format!("name dave\noticket 0\nfshare 0\ndelete_time 0\ndefault_project NONE\n{line}")
        };
        let cases = [
            (
                "name dave\noticket abc\nfshare 0\ndelete_time 0\ndefault_project NONE\n"
                    .to_string(),
                Reading("error parsing unsigned long value from string \"abc\"".into()),
            ),
            (
                "name bob\noticket -1\nfshare 0\ndelete_time 0\ndefault_project NONE\n".to_string(),
                Reading("parameter \"oticket\" must be a positive number".into()),
            ),
            (
                "name dave\nfshare 0\n".to_string(),
                Refused("required attribute \"oticket\" is missing".into()),
            ),
            (
                full("foo 1\n"),
                Reading("unknown attribute name \"foo\"".into()),
            ),
            (
                "name bad/name\noticket 0\nfshare 0\ndelete_time 0\ndefault_project NONE\n"
                    .to_string(),
                Alone("Slash ('/') not allowed in objectname".into()),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse_user(&text).unwrap_err(), want, "{text}");
        }
    }
}
