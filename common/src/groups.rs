//! The tree of groups of hierarchical group quotas, as `qconf -sgq` prints it and
//! `-Mgq` reads it: a header comment and one line per group, `name quota
//! accept_surplus autoregroup user_lists`, the way `qconf -sc` writes the complex.
//! `user_lists` (optional, `NONE` by default) names the access lists whose members may
//! submit to the group and its subtree.
//!
//! A group is named by its path from the implicit root `<none>` (`physics.hep` is the
//! child `hep` of `physics`), and every group on a path must be declared. A quota with a
//! decimal point is a proportion of the parent's quota, at most 1 (`0.7`); an integer
//! is a static quota in weighted slots (`20`). The static quotas of a static group's
//! children may not exceed its own, and the proportions of a group's children sum to at
//! most 1. A file breaking any rule is refused whole, with the line and the reason.

use std::collections::BTreeMap;

use gantry_proto::{GroupEntry, GroupQuota};

use crate::conf::FileError;

/// The implicit root of the tree: jobs naming no declared group run in it.
pub const ROOT: &str = "<none>";

const HEADER: &str = "#name                          quota      accept_surplus autoregroup user_lists\n#------------------------------------------------------------------------------\n";
const FOOTER: &str = "# >#< starts a comment but comments are not saved across edits --------\n";

/// A quota as written: an integer for a static one, a decimal point for a proportion.
pub fn quota_str(q: GroupQuota) -> String {
    match q {
        GroupQuota::Static(n) => n.to_string(),
        GroupQuota::Proportional(p) => {
            let text = format!("{p}");
            if text.contains('.') {
                text
            } else {
                format!("{text}.0")
            }
        }
    }
}

fn bool_str(b: bool) -> &'static str {
    if b {
        "TRUE"
    } else {
        "FALSE"
    }
}

/// The tree as `qconf -sgq` prints it.
pub fn print_groups(list: &[GroupEntry]) -> String {
    let mut out = String::from(HEADER);
    for g in list {
        let lists = if g.user_lists.is_empty() {
            "NONE".to_string()
        } else {
            g.user_lists.join(",")
        };
        out.push_str(&format!(
            "{:<30} {:<10} {:<14} {:<11} {lists}\n",
            g.name,
            quota_str(g.quota),
            bool_str(g.accept_surplus),
            bool_str(g.autoregroup)
        ));
    }
    out.push_str(FOOTER);
    out
}

fn parse_quota(text: &str) -> Result<GroupQuota, String> {
    if text.contains('.') {
        match text.parse::<f64>() {
            Ok(p) if (0.0..=1.0).contains(&p) => Ok(GroupQuota::Proportional(p)),
            Ok(_) => Err(format!(
                "quota \"{text}\": a proportion of the parent's quota (with a decimal point) is at most 1"
            )),
            Err(_) => Err(format!("invalid quota \"{text}\"")),
        }
    } else {
        text.parse::<u64>()
            .map(GroupQuota::Static)
            .map_err(|_| format!("invalid quota \"{text}\""))
    }
}

fn parse_bool(field: &str, text: &str) -> Result<bool, String> {
    match text.to_ascii_uppercase().as_str() {
        "TRUE" => Ok(true),
        "FALSE" => Ok(false),
        _ => Err(format!("invalid {field} \"{text}\" (TRUE or FALSE)")),
    }
}

/// Is a group path well formed: dot-separated names of letters, digits, `_` and `-`?
fn valid_path(name: &str) -> bool {
    name.split('.').all(|part| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    })
}

/// The parent of a group path (`ROOT` for a top-level group).
pub fn parent(name: &str) -> &str {
    name.rsplit_once('.').map_or(ROOT, |(p, _)| p)
}

/// Read a tree in `qconf -sgq` format and check every rule; the groups come out in name
/// order (each parent before its children), whatever order they were written in.
pub fn parse_groups(text: &str) -> Result<Vec<GroupEntry>, FileError> {
    let mut groups: BTreeMap<String, (usize, GroupEntry)> = BTreeMap::new();
    for row in crate::conf::table_rows_between(text, 4, 5) {
        let (line, f) = row?;
        if f[0] == ROOT {
            return Err(FileError::at(
                line,
                format!("the root group {ROOT} is implicit and takes no quota"),
            ));
        }
        if !valid_path(f[0]) {
            return Err(FileError::at(
                line,
                format!("invalid group name \"{}\"", f[0]),
            ));
        }
        let quota = parse_quota(f[1]).map_err(|e| FileError::at(line, e))?;
        let accept_surplus =
            parse_bool("accept_surplus", f[2]).map_err(|e| FileError::at(line, e))?;
        let autoregroup = parse_bool("autoregroup", f[3]).map_err(|e| FileError::at(line, e))?;
        let user_lists = match f.get(4) {
            None => Vec::new(),
            Some(l) if l.eq_ignore_ascii_case("NONE") => Vec::new(),
            Some(l) => {
                let lists: Vec<String> = l.split(',').map(str::to_string).collect();
                if lists.iter().any(|n| n.is_empty()) {
                    return Err(FileError::at(line, format!("invalid user_lists \"{l}\"")));
                }
                lists
            }
        };
        let entry = GroupEntry {
            name: f[0].to_string(),
            quota,
            accept_surplus,
            autoregroup,
            user_lists,
        };
        if groups.insert(f[0].to_string(), (line, entry)).is_some() {
            return Err(FileError::at(
                line,
                format!("group \"{}\" defined twice", f[0]),
            ));
        }
    }
    // Every parent declared; per parent, its children's static quotas and proportions.
    let mut children: BTreeMap<&str, Vec<(usize, &GroupEntry)>> = BTreeMap::new();
    for (line, g) in groups.values() {
        let p = parent(&g.name);
        if p != ROOT && !groups.contains_key(p) {
            return Err(FileError::at(
                *line,
                format!("group \"{}\": its parent \"{p}\" is not declared", g.name),
            ));
        }
        children.entry(p).or_default().push((*line, g));
    }
    for (p, kids) in &children {
        // In the order written, so that the line named is the one that went over.
        let mut kids = kids.clone();
        kids.sort_by_key(|(line, _)| *line);
        let own = groups.get(*p).map(|(_, g)| g.quota);
        let mut statics = 0u64;
        let mut proportions = 0.0f64;
        for (line, g) in kids {
            match g.quota {
                GroupQuota::Static(n) => {
                    statics = statics.saturating_add(n);
                    if let Some(GroupQuota::Static(limit)) = own {
                        if statics > limit {
                            return Err(FileError::at(
                                line,
                                format!(
                                    "the static quotas of the children of \"{p}\" ({statics}) exceed its own ({limit})"
                                ),
                            ));
                        }
                    }
                }
                GroupQuota::Proportional(x) => {
                    proportions += x;
                    if proportions > 1.0 + 1e-9 {
                        return Err(FileError::at(
                            line,
                            format!(
                                "the proportional quotas of the children of \"{p}\" sum to {}, more than 1",
                                (proportions * 1e6).round() / 1e6
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(groups.into_values().map(|(_, g)| g).collect())
}

/// The declared group a job's account string names: `physics.hep`, or in HTCondor's
/// `group.path.user` form the longest declared prefix; None (the root) when it names
/// no declared group.
pub fn group_of<'a>(list: &'a [GroupEntry], account: &str) -> Option<&'a GroupEntry> {
    let name = declared_group(account, |n| list.iter().any(|g| g.name == n))?;
    list.iter().find(|g| g.name == name)
}

/// The path of the declared group (`is_declared` says which are) an account string
/// names: itself, else its longest declared prefix; None (the root) when none is.
pub fn declared_group(account: &str, is_declared: impl Fn(&str) -> bool) -> Option<&str> {
    let mut name = account;
    loop {
        if is_declared(name) {
            return Some(name);
        }
        name = name.rsplit_once('.')?.0;
    }
}

/// The access lists a submitter to `group` must be on: the group's own and every
/// ancestor's, each non-empty one a condition of its own (none: everybody may).
pub fn access_lists<'a>(list: &'a [GroupEntry], group: &str) -> Vec<&'a [String]> {
    let mut out = Vec::new();
    let mut name = group;
    while name != ROOT {
        if let Some(g) = list.iter().find(|g| g.name == name) {
            if !g.user_lists.is_empty() {
                out.push(g.user_lists.as_slice());
            }
        }
        name = parent(name);
    }
    out
}

#[cfg(test)]
mod tests;
