//! Usersets (access lists): `qconf -su/-au/-du/-dul/-Au/-mu`.

use super::*;

/// A list attribute of a queue (`user_lists`, `xuser_lists`) on one host, NONE left out.
fn list_on_host(
    q: &gantry_proto::ClusterQueue,
    key: &str,
    host: &str,
    host_groups: &[&str],
) -> Vec<String> {
    q.attr(key)
        .map(|a| {
            gantry_common::conf::split_list(gantry_common::queue::value_on_host(
                a,
                host,
                host_groups,
            ))
        })
        .unwrap_or_default()
        .into_iter()
        .filter(|s| !s.eq_ignore_ascii_case("NONE"))
        .collect()
}

impl ClusterState {
    /// `qselect -U`: the queue instances (`queue@host`) that every one of `names` (a
    /// user, or `@group`) may use, by the instance's, its exec host's, the global host's
    /// and the global configuration's access lists, as SGE's qselect checks them (a
    /// user by name alone, not by the groups it is in).
    pub(crate) fn instances_admitting(&self, names: &[String]) -> Vec<String> {
        let contains = |name: &str, lists: &[String]| {
            lists.iter().any(|l| {
                self.input
                    .usersets
                    .get(l)
                    .is_some_and(|s| s.entries.iter().any(|e| e == name))
            })
        };
        let access = |name: &str, allow: &[String], deny: &[String]| {
            !contains(name, deny) && (allow.is_empty() || contains(name, allow))
        };
        let none_filtered = |v: Vec<String>| -> Vec<String> {
            v.into_iter()
                .filter(|s| !s.eq_ignore_ascii_case("NONE"))
                .collect()
        };
        let conf = self.global();
        let conf_list = |key: &str| {
            none_filtered(gantry_common::conf::split_list(
                conf.get(key).unwrap_or("NONE"),
            ))
        };
        let (conf_allow, conf_deny) = (conf_list("user_lists"), conf_list("xuser_lists"));
        let global = self.global_exechost();
        let mut out = Vec::new();
        for q in self.input.queues.values() {
            for host in self.queue_hosts_of(q) {
                let hg = self.groups_of(&host);
                let q_allow = list_on_host(q, "user_lists", &host, &hg);
                let q_deny = list_on_host(q, "xuser_lists", &host, &hg);
                let exec = self.input.exechosts.get(&host);
                let (h_allow, h_deny) = exec.map_or((&[][..], &[][..]), |h| {
                    (&h.user_lists[..], &h.xuser_lists[..])
                });
                let all = names.iter().all(|n| {
                    access(n, &q_allow, &q_deny)
                        && access(n, h_allow, h_deny)
                        && access(n, &global.user_lists, &global.xuser_lists)
                        && access(n, &conf_allow, &conf_deny)
                });
                if all {
                    out.push(format!("{}@{host}", q.name));
                }
            }
        }
        out
    }

    /// May this user run jobs in at least one queue instance (by the queue's
    /// `user_lists` and `xuser_lists` on the instance's host)? SGE's qmaster refuses
    /// the job of a user who may use none (`warning: user3's job is not allowed to run
    /// in any queue`). A cell with no queue instance yet (no exec host has joined)
    /// takes jobs, to wait for the first host (SGE refuses them too).
    pub(crate) fn user_may_use_some_queue(&self, user: &str, groups: &[String]) -> bool {
        // Every submission asks: without any access list on any queue, nobody is kept
        // out, and no host group needs resolving.
        let restricts = |q: &gantry_proto::ClusterQueue| {
            ["user_lists", "xuser_lists"].iter().any(|k| {
                q.attr(k).is_some_and(|a| {
                    !a.default.eq_ignore_ascii_case("NONE") || !a.overrides.is_empty()
                })
            })
        };
        if !self.input.queues.values().any(restricts) {
            return true;
        }
        let in_any = |lists: &[String]| {
            lists.iter().any(|l| {
                self.input.usersets.get(l).is_some_and(|s| {
                    gantry_common::userset::entries_contain(&s.entries, user, groups)
                })
            })
        };
        let mut instances = 0;
        let admitted = self.input.queues.values().any(|q| {
            self.queue_hosts_of(q).iter().any(|host| {
                instances += 1;
                let hg = self.groups_of(host);
                let allowed = list_on_host(q, "user_lists", host, &hg);
                !in_any(&list_on_host(q, "xuser_lists", host, &hg))
                    && (allowed.is_empty() || in_any(&allowed))
            })
        });
        admitted || instances == 0
    }

    /// `access_list(5)`: "each user or group may only be listed in one department".
    /// A department (a set of type `DEPT`) naming a user or group another department
    /// names is refused (SGE 8.1.9 takes it, and then charges the user's jobs to the
    /// first department in name order).
    fn check_department(&self, u: &gantry_proto::UserSet) -> Result<(), Refusal> {
        if !u.types.iter().any(|t| t == "DEPT") {
            return Ok(());
        }
        for other in self.input.usersets.values() {
            if other.name == u.name || !other.types.iter().any(|t| t == "DEPT") {
                continue;
            }
            if let Some(e) = u.entries.iter().find(|e| other.entries.contains(e)) {
                return Err(refuse(
                    RefusalKind::Invalid,
                    format!(
                        "denied: \"{e}\" is already in department \"{}\": a user or group may be in one department only",
                        other.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `qconf -su`.
    pub(crate) fn show_usersets(&self, names: &[String]) -> Result<Reply, Refusal> {
        let mut out = Vec::new();
        for n in names {
            match self.input.usersets.get(n) {
                Some(u) => out.push(u.clone()),
                None => {
                    return Err(refuse(
                        RefusalKind::NotFound,
                        format!("denied: access list \"{n}\" does not exist"),
                    ))
                }
            }
        }
        Ok(Reply::Answer(FromMaster::UserSets(out)))
    }

    /// `qconf -au`.
    pub(crate) fn add_users_to_sets(
        &self,
        caller: &Caller,
        users: &[String],
        sets: &[String],
    ) -> Result<Reply, Refusal> {
        // SGE's qconf finds a user already in the list before it asks the master, so
        // anyone is told that first.
        for set in sets {
            if let Some(user) = self
                .input
                .usersets
                .get(set)
                .and_then(|u| users.iter().find(|user| u.entries.contains(*user)))
            {
                return Err(refuse(
                    RefusalKind::AlreadyExists,
                    format!("\"{user}\" is already in access list \"{set}\""),
                ));
            }
        }
        self.manager_check(caller)?;
        let mut change = Change::default();
        for set in sets {
            let mut u = self
                .input
                .usersets
                .get(set)
                .cloned()
                .unwrap_or_else(|| gantry_common::userset::new_userset(set, "ACL"));
            for user in users {
                if !valid_user_name(user.trim_start_matches('@')) {
                    return Err(refuse(
                        RefusalKind::Invalid,
                        format!("invalid user name \"{user}\""),
                    ));
                }
                if u.entries.contains(user) {
                    return Err(refuse(
                        RefusalKind::AlreadyExists,
                        format!("\"{user}\" is already in access list \"{set}\""),
                    ));
                }
                u.entries.push(user.clone());
                change
                    .messages
                    .push(format!("added \"{user}\" to access list \"{set}\""));
            }
            self.check_department(&u)?;
            change.ops.push(Op::Put(Object::UserSet(u)));
        }
        Ok(Reply::Change(change))
    }

    /// `qconf -du`.
    pub(crate) fn delete_users_from_sets(
        &self,
        caller: &Caller,
        users: &[String],
        sets: &[String],
    ) -> Result<Reply, Refusal> {
        self.manager_check(caller)?;
        let mut change = Change::default();
        for set in sets {
            let Some(u) = self.input.usersets.get(set) else {
                return Err(refuse(
                    RefusalKind::NotFound,
                    format!("access list \"{set}\" does not exist"),
                ));
            };
            let mut u = u.clone();
            for user in users {
                if !u.entries.contains(user) {
                    return Err(refuse(
                        RefusalKind::NotFound,
                        format!("user \"{user}\" is not in access list \"{set}\""),
                    ));
                }
                u.entries.retain(|e| e != user);
                change.messages.push(format!(
                    "deleted user \"{user}\" from access list \"{set}\""
                ));
            }
            change.ops.push(Op::Put(Object::UserSet(u)));
        }
        Ok(Reply::Change(change))
    }

    /// `qconf -dul`: refused for the built-in sets and while a queue, host, PE or project names it.
    pub(crate) fn delete_usersets(
        &self,
        caller: &Caller,
        names: &[String],
    ) -> Result<Reply, Refusal> {
        let who = format!("{}@{}", caller.user, caller.host);
        self.manager_check(caller)?;
        let mut change = Change::default();
        for n in names {
            if !self.input.usersets.contains_key(n) {
                return Err(refuse(
                    RefusalKind::NotFound,
                    format!("denied: userset \"{n}\" does not exist"),
                ));
            }
            if matches!(
                n.as_str(),
                "arusers" | "deadlineusers" | "defaultdepartment"
            ) {
                return Err(refuse(
                    RefusalKind::Denied,
                    format!("denied: userset \"{n}\" is built in and cannot be deleted"),
                ));
            }
            let referenced_by_queue = self.input.queues.values().find(|q| {
                ["user_lists", "xuser_lists"]
                    .iter()
                    .any(|k| gantry_common::queue::list_names(q, k, n))
            });
            if let Some(q) = referenced_by_queue {
                return Err(refuse(
                    RefusalKind::Invalid,
                    format!(
                        "denied: userset \"{n}\" is still referenced in cluster queue \"{}\"",
                        q.name
                    ),
                ));
            }
            if let Some(h) = self
                .input
                .exechosts
                .values()
                .find(|h| h.user_lists.contains(n) || h.xuser_lists.contains(n))
            {
                return Err(refuse(
                    RefusalKind::Invalid,
                    format!(
                        "denied: userset \"{n}\" is still referenced in exec host \"{}\"",
                        h.hostname
                    ),
                ));
            }
            let by_pe = self
                .input
                .pes
                .values()
                .find(|p| p.user_lists.contains(n) || p.xuser_lists.contains(n))
                .map(|p| format!("parallel environment \"{}\"", p.name));
            let by_project = self
                .input
                .projects
                .values()
                .find(|p| p.acl.contains(n) || p.xacl.contains(n))
                .map(|p| format!("project \"{}\"", p.name));
            let by_group = self
                .input
                .group_tree
                .iter()
                .find(|g| g.user_lists.contains(n))
                .map(|g| format!("group \"{}\" of the group quota tree", g.name));
            if let Some(place) = by_pe.or(by_project).or(by_group) {
                return Err(refuse(
                    RefusalKind::Invalid,
                    format!("denied: userset \"{n}\" is still referenced in {place}"),
                ));
            }
            change.ops.push(Op::Delete(format!("userset/{n}")));
            change
                .messages
                .push(format!("{who} removed \"{n}\" from userset list"));
        }
        Ok(Reply::Change(change))
    }

    /// `qconf -Au` (`adding`) or `-mu/-Mu`.
    pub(crate) fn put_userset(
        &self,
        caller: &Caller,
        text: &str,
        adding: bool,
    ) -> Result<Reply, Refusal> {
        let who = format!("{}@{}", caller.user, caller.host);
        self.manager_check(caller)?;
        let u = gantry_common::userset::parse_userset(text)
            .map_err(|e| refuse(RefusalKind::Invalid, e.to_string()))?;
        let exists = self.input.usersets.contains_key(&u.name);
        if adding && exists {
            return Err(refuse(
                RefusalKind::AlreadyExists,
                format!("userset \"{}\" already exists", u.name),
            ));
        }
        if !adding && !exists {
            return Err(refuse(
                RefusalKind::NotFound,
                format!("access list \"{}\" does not exist", u.name),
            ));
        }
        self.check_department(&u)?;
        let name = u.name.clone();
        let (verb, prep) = if adding {
            ("added", "to")
        } else {
            ("modified", "in")
        };
        Ok(Reply::Change(Change {
            ops: vec![Op::Put(Object::UserSet(u))],
            messages: vec![format!("{who} {verb} \"{name}\" {prep} userset list")],
        }))
    }
}
