//! Projects (`qconf -sprj`, `-aprj`, `-mprj`, ...): the object and its file format, as
//! `project(5)` describes it.

use serde::{Deserialize, Serialize};

use crate::conf::{list_or_none, parse_entries, split_list, FileError};

/// A project: jobs name it with `qsub -P`; `acl`/`xacl` say which users may.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Project {
    pub name: String,
    pub oticket: u32,
    pub fshare: u32,
    pub acl: Vec<String>,
    pub xacl: Vec<String>,
}

impl Project {
    pub fn new(name: &str) -> Project {
        Project {
            name: name.to_string(),
            oticket: 0,
            fshare: 0,
            acl: Vec::new(),
            xacl: Vec::new(),
        }
    }
}

/// The project as `qconf -sprj` prints it.
pub fn print_project(p: &Project) -> String {
    format!(
        // SGE's qconf -sprj: one blank after each name, not a column.
        "name {}\noticket {}\nfshare {}\nacl {}\nxacl {}\n",
        p.name,
        p.oticket,
        p.fshare,
        list_or_none(&p.acl),
        list_or_none(&p.xacl)
    )
}

/// Read a project file (`-Aprj`, `-Mprj`): `name` required, the rest at their defaults
/// when left out; unknown attributes and bad numbers refused with their line.
pub fn parse_project(text: &str) -> Result<Project, FileError> {
    let entries = parse_entries(text)?;
    let Some(name) = entries.iter().find(|e| e.key == "name") else {
        return Err(FileError::Object(
            "the project file has no \"name\" attribute".into(),
        ));
    };
    if !crate::pe::valid_pe_name(&name.value) || name.value.eq_ignore_ascii_case("NONE") {
        return Err(FileError::at(
            name.line,
            format!("invalid project name \"{}\"", name.value),
        ));
    }
    let mut p = Project::new(&name.value);
    for e in &entries {
        let number = || {
            e.value.parse::<u32>().map_err(|_| {
                FileError::at(
                    e.line,
                    format!(
                        "value \"{}\" of attribute \"{}\" is not a non-negative integer",
                        e.value, e.key
                    ),
                )
            })
        };
        let list = || -> Vec<String> {
            split_list(&e.value)
                .into_iter()
                .filter(|v| !v.eq_ignore_ascii_case("NONE"))
                .collect()
        };
        match e.key.as_str() {
            "name" => {}
            "oticket" => p.oticket = number()?,
            "fshare" => p.fshare = number()?,
            "acl" => p.acl = list(),
            "xacl" => p.xacl = list(),
            other => {
                return Err(FileError::at(
                    e.line,
                    format!("unknown attribute \"{other}\" in project"),
                ))
            }
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn projects_print_and_parse() {
        let mut p = Project::new("chem");
        p.fshare = 100;
        p.acl = vec!["staff".into()];
        let text = print_project(&p);
        assert_eq!(
            text,
            "name chem\noticket 0\nfshare 100\nacl staff\nxacl NONE\n"
        );
        assert_eq!(parse_project(&text).unwrap(), p);
        let cases = [
            (
                "name p\nfshare lots\n",
                "line 2: value \"lots\" of attribute \"fshare\" is not a non-negative integer",
            ),
            (
                "name p\ncolour red\n",
                "line 2: unknown attribute \"colour\" in project",
            ),
            ("fshare 1\n", "the project file has no \"name\" attribute"),
            ("name a/b\n", "line 1: invalid project name \"a/b\""),
        ];
        for (text, want) in cases {
            assert_eq!(parse_project(text).unwrap_err().to_string(), want);
        }
    }
}
