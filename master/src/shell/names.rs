//! Users' Unix groups, as the master's name service knows them, for access lists
//! (`@group` entries) and quota rules. Answers are kept for
//! [`NAME_SERVICE_TTL`](gantry_common::recent::NAME_SERVICE_TTL): looking up a user's
//! groups walks every NSS module (`files systemd`, LDAP, ...), which would otherwise be
//! paid on every submission.

use std::cell::RefCell;

use gantry_common::recent::{Recent, NAME_SERVICE_TTL};
use nix::unistd::{Gid, Group, User};

pub struct UnixGroups {
    known: RefCell<Recent<(String, u32), Vec<String>>>,
}

impl Default for UnixGroups {
    fn default() -> Self {
        UnixGroups {
            known: RefCell::new(Recent::new(NAME_SERVICE_TTL)),
        }
    }
}

impl UnixGroups {
    /// The groups of `user` whose primary group is `gid`, by name, the primary group
    /// first (a group without a name appears as its number).
    pub fn of(&self, user: &str, gid: u32) -> Vec<String> {
        self.known
            .borrow_mut()
            .get_or_lookup((user.to_string(), gid), || Some(look_up(user, gid)))
            .unwrap_or_default()
    }

    /// The groups of a user known only by name (none for a user the name service does
    /// not know).
    pub fn of_name(&self, user: &str) -> Vec<String> {
        match User::from_name(user) {
            Ok(Some(u)) => self.of(user, u.gid.as_raw()),
            _ => Vec::new(),
        }
    }
}

fn look_up(user: &str, gid: u32) -> Vec<String> {
    let name_of = |g: Gid| {
        Group::from_gid(g)
            .ok()
            .flatten()
            .map_or_else(|| g.as_raw().to_string(), |g| g.name)
    };
    let primary = Gid::from_raw(gid);
    let mut out = vec![name_of(primary)];
    if let Ok(name) = std::ffi::CString::new(user) {
        if let Ok(all) = nix::unistd::getgrouplist(&name, primary) {
            for g in all {
                let n = name_of(g);
                if !out.contains(&n) {
                    out.push(n);
                }
            }
        }
    }
    out
}

/// Whether host names resolve, as the master's name service answers (`/etc/hosts`,
/// DNS), kept as long as groups are: a name that does not resolve can take the
/// resolver's whole timeout to say so.
pub struct HostNames {
    known: RefCell<Recent<String, bool>>,
}

impl Default for HostNames {
    fn default() -> Self {
        HostNames {
            known: RefCell::new(Recent::new(NAME_SERVICE_TTL)),
        }
    }
}

impl HostNames {
    /// Does `name` resolve to an address?
    pub fn resolves(&self, name: &str) -> bool {
        use std::net::ToSocketAddrs;
        self.known
            .borrow_mut()
            .get_or_lookup(name.to_ascii_lowercase(), || {
                Some(
                    (name, 0u16)
                        .to_socket_addrs()
                        .is_ok_and(|mut a| a.next().is_some()),
                )
            })
            .unwrap_or(false)
    }
}
