//! Usersets (`qconf -su`, `-Au`, `-Mu`): access lists and departments.

use crate::conf::{list_or_none, parse_entries, split_list, FileError};
use gantry_proto::UserSet;

pub fn print_userset(u: &UserSet) -> String {
    format!(
        "name    {}\ntype    {}\nfshare  {}\noticket {}\nentries {}\n",
        u.name,
        u.types.join(" "),
        u.fshare,
        u.oticket,
        list_or_none(&u.entries)
    )
}

/// A userset with no entries.
pub fn new_userset(name: &str, kind: &str) -> UserSet {
    UserSet {
        name: name.to_string(),
        types: vec![kind.to_string()],
        fshare: 0,
        oticket: 0,
        entries: Vec::new(),
    }
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= crate::names::MAX_NAME_LENGTH
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !n.starts_with(['-', '.'])
}

pub fn parse_userset(text: &str) -> Result<UserSet, FileError> {
    let entries = parse_entries(text)?;
    let mut u = new_userset("", "ACL");
    let mut named = false;
    for e in &entries {
        let number = |what: &str| {
            e.value
                .parse::<u32>()
                .map_err(|_| FileError::at(e.line, format!("invalid {what} \"{}\"", e.value)))
        };
        match e.key.as_str() {
            "name" => {
                if !valid_name(&e.value) {
                    return Err(FileError::at(
                        e.line,
                        format!("invalid userset name \"{}\"", e.value),
                    ));
                }
                u.name = e.value.clone();
                named = true;
            }
            "type" => {
                let types = split_list(&e.value);
                if types.is_empty() || types.iter().any(|t| t != "ACL" && t != "DEPT") {
                    return Err(FileError::at(
                        e.line,
                        format!("invalid userset type \"{}\" (ACL, DEPT)", e.value),
                    ));
                }
                u.types = types;
            }
            "fshare" => u.fshare = number("fshare")?,
            "oticket" => u.oticket = number("oticket")?,
            "entries" => u.entries = split_list(&e.value),
            other => {
                return Err(FileError::at(
                    e.line,
                    format!("unknown attribute \"{other}\" in userset"),
                ))
            }
        }
    }
    if !named {
        return Err(FileError::Object("the userset has no name".into()));
    }
    Ok(u)
}

/// Is a user in a userset's entries: by name, or by one of their Unix groups
/// (`@group` entries)?
pub fn entries_contain(entries: &[String], user: &str, groups: &[String]) -> bool {
    entries.iter().any(|e| match e.strip_prefix('@') {
        Some(g) => groups.iter().any(|ug| ug == g),
        None => e == user,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_by_name_or_group() {
        let entries = vec!["alice".to_string(), "@chem".to_string()];
        assert!(entries_contain(&entries, "alice", &[]));
        assert!(entries_contain(
            &entries,
            "bob",
            &["users".into(), "chem".into()]
        ));
        assert!(!entries_contain(&entries, "bob", &["users".into()]));
        assert!(!entries_contain(&entries, "chem", &[]));
    }

    #[test]
    fn prints_as_sge_and_parses_back() {
        let mut u = new_userset("arusers", "ACL");
        u.entries = vec!["user1".into(), "user2".into(), "user3".into()];
        let text = print_userset(&u);
        assert_eq!(
            text,
            "name    arusers\ntype    ACL\nfshare  0\noticket 0\nentries user1,user2,user3\n"
        );
        assert_eq!(parse_userset(&text).unwrap(), u);
        let empty = new_userset("deadlineusers", "ACL");
        assert_eq!(parse_userset(&print_userset(&empty)).unwrap(), empty);
        assert!(print_userset(&empty).ends_with("entries NONE\n"));
        assert!(parse_userset("type ACL\n").is_err());
        assert!(parse_userset("name x\ntype GROUP\n").is_err());
        assert!(parse_userset("name x\nfshare lots\n").is_err());
        assert!(parse_userset("name bad/name\n").is_err());
    }
}
