//! Administrative hosts: `qconf -ah/-dh`.

use super::*;

impl ClusterState {
    /// `qconf -ah`: SGE prints `host added to administrative host list`.
    pub(super) fn add_admin_hosts(&self, text: &str) -> Result<Reply, Refusal> {
        let mut hosts = self.admin_hosts();
        let mut messages = Vec::new();
        let given: Vec<&str> = text
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|h| !h.is_empty())
            .collect();
        if given.is_empty() {
            return Err(invalid("no host given"));
        }
        for given in given {
            if !gantry_common::exechost::valid_hostname(given) {
                return Err(invalid(format!(
                    "can't resolve hostname \"{}\"",
                    gantry_common::names::quoted(given)
                )));
            }
            // As DNS compares names: `HEAD` and `head.` are `head`.
            let host = &gantry_common::exechost::canonical_hostname(given);
            if hosts.iter().any(|h| h == host) {
                return Err(refuse(
                    RefusalKind::AlreadyExists,
                    format!("adminhost \"{host}\" already exists"),
                ));
            }
            hosts.push(host.to_string());
            // What SGE's qconf prints (not the master's `user@host added ...`).
            messages.push(format!("{host} added to administrative host list"));
        }
        Ok(Reply::Change(Change {
            ops: vec![Op::Put(Object::AdminHosts(hosts))],
            messages,
        }))
    }

    /// `qconf -dh`: never the master's own host.
    pub(super) fn delete_admin_hosts(&self, who: &str, names: &[String]) -> Result<Reply, Refusal> {
        if names.is_empty() {
            return Err(invalid("no host given"));
        }
        let mut hosts = self.admin_hosts();
        let mut messages = Vec::new();
        for host in names {
            let host = &gantry_common::exechost::canonical_hostname(host);
            if *host == self.master_host {
                return Err(refuse(
                    RefusalKind::Denied,
                    format!("denied: can't delete master host \"{host}\" from admin host list"),
                ));
            }
            let Some(at) = hosts.iter().position(|h| h == host) else {
                return Err(refuse(
                    RefusalKind::NotFound,
                    format!(
                        "denied: administrative host \"{}\" does not exist",
                        gantry_common::names::quoted(host)
                    ),
                ));
            };
            hosts.remove(at);
            messages.push(format!(
                "{who} removed \"{host}\" from administrative host list"
            ));
        }
        Ok(Reply::Change(Change {
            ops: vec![Op::Put(Object::AdminHosts(hosts))],
            messages,
        }))
    }
}
