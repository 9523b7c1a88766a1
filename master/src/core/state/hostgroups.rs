//! Host groups: `qconf -ahgrp/-mhgrp/-dhgrp`.

use super::*;

impl ClusterState {
    /// `qconf -ahgrp/-Ahgrp` (`adding`) or `-mhgrp/-Mhgrp`.
    pub(crate) fn put_hostgroup(
        &self,
        caller: &Caller,
        text: &str,
        adding: bool,
    ) -> Result<Reply, Refusal> {
        let who = format!("{}@{}", caller.user, caller.host);
        self.manager_check(caller)?;
        let g = gantry_common::hostgroup::parse_hostgroup(text)
            .map_err(|e| refuse(RefusalKind::Invalid, e.to_string()))?;
        let exists = self.input.hostgroups.contains_key(&g.name);
        if adding && exists {
            return Err(refuse(
                RefusalKind::AlreadyExists,
                format!("host group \"{}\" already exists", g.name),
            ));
        }
        if !adding && !exists {
            return Err(refuse(
                RefusalKind::NotFound,
                format!("denied: host group \"{}\" does not exist", g.name),
            ));
        }
        self.check_hostgroup(&g)?;
        let verb = if adding { "added" } else { "modified" };
        let prep = if adding { "to" } else { "in" };
        let name = g.name.clone();
        Ok(Reply::Change(Change {
            ops: vec![Op::Put(Object::HostGroup(g))],
            messages: vec![format!("{who} {verb} \"{name}\" {prep} host group list")],
        }))
    }

    /// `qconf -dhgrp`: refused while a host group or a queue names it.
    pub(crate) fn delete_hostgroup(&self, caller: &Caller, name: &str) -> Result<Reply, Refusal> {
        let who = format!("{}@{}", caller.user, caller.host);
        self.manager_check(caller)?;
        if !self.input.hostgroups.contains_key(name) {
            return Err(refuse(
                RefusalKind::NotFound,
                format!("denied: host group \"{name}\" does not exist"),
            ));
        }
        if let Some(g) = self
            .input
            .hostgroups
            .values()
            .find(|g| g.hostlist.iter().any(|m| m == name))
        {
            return Err(refuse(
                RefusalKind::Invalid,
                format!(
                    "denied: host group \"{name}\" is still referenced in host group \"{}\"",
                    g.name
                ),
            ));
        }
        for q in self.input.queues.values() {
            let in_hostlist = q.attr("hostlist").is_some_and(|a| {
                gantry_common::conf::split_list(&a.default)
                    .iter()
                    .any(|h| h == name)
            });
            let in_overrides = q
                .attrs
                .iter()
                .any(|(_, a)| a.overrides.iter().any(|(h, _)| h == name));
            if in_hostlist || in_overrides {
                return Err(refuse(
                    RefusalKind::Invalid,
                    format!(
                        "denied: host group \"{name}\" is still referenced in cluster queue \"{}\"",
                        q.name
                    ),
                ));
            }
        }
        Ok(Reply::Change(Change {
            ops: vec![Op::Delete(format!("hostgroup/{name}"))],
            messages: vec![format!(
                "{who} removed \"{name}\" from host group entry list"
            )],
        }))
    }

    /// Is `host` one of the cell's hosts: an exec host (joined, or added with
    /// `qconf -ae`) or an administrative host?
    pub(crate) fn knows_host(&self, host: &str) -> bool {
        self.input.exechosts.contains_key(host)
            || self
                .input
                .exechosts
                .keys()
                .any(|h| h.eq_ignore_ascii_case(host))
            || self
                .admin_hosts()
                .iter()
                .any(|h| h.eq_ignore_ascii_case(host))
    }

    pub(crate) fn check_hostgroup(&self, g: &HostGroup) -> Result<(), Refusal> {
        for m in &g.hostlist {
            if let Some(sub) = m.strip_prefix('@') {
                if !self.input.hostgroups.contains_key(m) || sub.is_empty() {
                    return Err(refuse(
                        RefusalKind::Invalid,
                        format!("denied: host group \"{m}\" does not exist"),
                    ));
                }
            } else if !exechost::valid_hostname(m) {
                return Err(refuse(
                    RefusalKind::Invalid,
                    format!("invalid host name \"{m}\""),
                ));
            } else if !self.knows_host(m) {
                // SGE resolves every host of a group and refuses the file when one does
                // not resolve; a cell's hosts are its own names (exec hosts, joined or
                // added with `qconf -ae`, and administrative hosts).
                return Err(refuse(
                    RefusalKind::Invalid,
                    format!("unable to resolve host \"{m}\""),
                ));
            }
        }
        // Cycle check: walk the groups this one contains, with it as changed.
        let mut stack: Vec<&str> = g
            .hostlist
            .iter()
            .filter(|m| m.starts_with('@'))
            .map(String::as_str)
            .collect();
        let mut seen = std::collections::HashSet::new();
        while let Some(name) = stack.pop() {
            if name == g.name {
                return Err(refuse(
                    RefusalKind::Invalid,
                    format!("denied: host group \"{}\" would contain itself", g.name),
                ));
            }
            if !seen.insert(name) {
                continue;
            }
            if let Some(sub) = self.input.hostgroups.get(name) {
                stack.extend(
                    sub.hostlist
                        .iter()
                        .filter(|m| m.starts_with('@'))
                        .map(String::as_str),
                );
            }
        }
        Ok(())
    }
}
