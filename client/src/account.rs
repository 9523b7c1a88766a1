//! The invoking user's login name and home directory, as SGE's commands take them: from
//! the environment (`LOGNAME`/`USER`, `HOME`), else from the local password file.
//!
//! Never through the name service switch (NSS): the job commands are linked statically
//! (`deploy/build.sh`; start-up is most of a `qsub`'s cost), and glibc cannot load NSS
//! modules (systemd, sss, ldap) into a static executable. The caller's identity is the
//! kernel's in any case (`SO_PEERCRED`, taken by the daemon); these values only locate
//! the defaults files and fill `SGE_O_HOME`/`SGE_O_LOGNAME`. A user known only to a
//! directory service always has them in the environment of a login session.

use std::path::PathBuf;

/// The user's login name: `LOGNAME`, else `USER`, else the password file's entry.
pub fn login_name() -> Option<String> {
    env(&["LOGNAME", "USER"]).or_else(|| own_entry().map(|e| e.0))
}

/// The user's home directory: `HOME`, else the password file's entry.
pub fn home_dir() -> Option<PathBuf> {
    env(&["HOME"])
        .or_else(|| own_entry().map(|e| e.1))
        .map(PathBuf::from)
}

fn env(keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
}

fn own_entry() -> Option<(String, String)> {
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd_entry(&text, real_id("Uid:")?)
}

/// This process's real user (`Uid:`) or group (`Gid:`) id, as the kernel reports it in
/// `/proc/self/status`.
fn real_id(field: &str) -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|ids| ids.split_whitespace().next())
        .and_then(|id| id.parse().ok())
}

/// Who runs this command, as a job's owner (`qsub -verify` shows it): the kernel's ids,
/// the login name, the primary group's name from the local group file (its number when
/// it has no entry there).
pub fn identity() -> (gantry_proto::JobOwner, String) {
    let uid = real_id("Uid:").unwrap_or(u32::MAX);
    let gid = real_id("Gid:").unwrap_or(u32::MAX);
    let group = std::fs::read_to_string("/etc/group")
        .ok()
        .and_then(|text| group_name(&text, gid))
        .unwrap_or_else(|| gid.to_string());
    let owner = gantry_proto::JobOwner {
        user: login_name().unwrap_or_else(|| uid.to_string()),
        uid,
        gid,
        groups: vec![group.clone()],
    };
    (owner, group)
}

/// The name of group `gid` in a group file's text.
pub fn group_name(text: &str, gid: u32) -> Option<String> {
    text.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        match fields.as_slice() {
            [name, _, id, _] if id.parse::<u32>().ok() == Some(gid) => Some(name.to_string()),
            _ => None,
        }
    })
}

/// The login name and home directory of `uid` in a password file's text.
pub fn passwd_entry(text: &str, uid: u32) -> Option<(String, String)> {
    text.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        match fields.as_slice() {
            [name, _, id, _, _, home, _shell] if id.parse::<u32>().ok() == Some(uid) => {
                Some((name.to_string(), home.to_string()))
            }
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_found_by_uid() {
        let text = "root:x:0:0:root:/root:/bin/bash\n\
                    # a comment\n\
                    broken line\n\
                    alice:x:1001:1001:Alice,,,:/home/alice:/bin/sh\n\
                    nologin:x:1002:1002::/nonexistent\n";
        let entry = |uid| passwd_entry(text, uid);
        assert_eq!(entry(0), Some(("root".into(), "/root".into())));
        assert_eq!(entry(1001), Some(("alice".into(), "/home/alice".into())));
        assert_eq!(entry(1002), None, "too few fields");
        assert_eq!(entry(4242), None);
    }

    #[test]
    fn groups_are_found_by_gid() {
        let text = "root:x:0:\nstaff:x:50:alice,bob\nbroken\n";
        assert_eq!(group_name(text, 50), Some("staff".into()));
        assert_eq!(group_name(text, 0), Some("root".into()));
        assert_eq!(group_name(text, 7), None);
    }
}
