//! Host groups (`qconf -shgrp`): `group_name @name` and a `hostlist` of hosts and groups.

use crate::conf::{parse_entries, split_list, FileError};
use gantry_proto::HostGroup;

pub fn print_hostgroup(g: &HostGroup) -> String {
    let list = if g.hostlist.is_empty() {
        "NONE".to_string()
    } else {
        g.hostlist.join(" ")
    };
    format!("group_name {}\nhostlist {}\n", g.name, list)
}

pub fn parse_hostgroup(text: &str) -> Result<HostGroup, FileError> {
    let entries = parse_entries(text)?;
    let mut name = None;
    let mut hostlist = Vec::new();
    for e in &entries {
        match e.key.as_str() {
            "group_name" => {
                if !e.value.starts_with('@') || e.value.len() < 2 {
                    return Err(FileError::at(
                        e.line,
                        format!("host group name \"{}\" must start with @", e.value),
                    ));
                }
                crate::names::verify_name(&e.value[1..], crate::names::NameKind::Object)
                    .map_err(|m| FileError::at(e.line, m))?;
                name = Some(e.value.clone());
            }
            "hostlist" => {
                hostlist = split_list(&e.value)
                    .into_iter()
                    .map(|h| match h.starts_with('@') {
                        true => h,
                        false => crate::exechost::canonical_hostname(&h),
                    })
                    .collect()
            }
            other => {
                return Err(FileError::at(
                    e.line,
                    format!("unknown attribute \"{other}\" in host group"),
                ))
            }
        }
    }
    let name = name.ok_or_else(|| FileError::Object("the host group has no group_name".into()))?;
    Ok(HostGroup { name, hostlist })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_and_parses_as_sge() {
        let g = HostGroup {
            name: "@allhosts".into(),
            hostlist: vec!["vm".into()],
        };
        assert_eq!(print_hostgroup(&g), "group_name @allhosts\nhostlist vm\n");
        assert_eq!(parse_hostgroup(&print_hostgroup(&g)).unwrap(), g);
        let empty = HostGroup {
            name: "@empty".into(),
            hostlist: vec![],
        };
        assert_eq!(
            print_hostgroup(&empty),
            "group_name @empty\nhostlist NONE\n"
        );
        assert_eq!(parse_hostgroup(&print_hostgroup(&empty)).unwrap(), empty);
        assert!(parse_hostgroup("group_name nogroup\nhostlist a\n").is_err());
        assert!(parse_hostgroup("hostlist a\n").is_err());
        // The part after the @ is an object name, as SGE checks it.
        assert_eq!(
            parse_hostgroup("group_name @none\nhostlist a\n")
                .unwrap_err()
                .to_string(),
            "line 1: Keyword (\"NONE\") not allowed as objectname"
        );
        assert!(parse_hostgroup("group_name @a\u{1b}b\nhostlist a\n").is_err());
    }
}
