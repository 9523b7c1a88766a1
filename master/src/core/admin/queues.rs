//! Cluster queues: `qconf -aq/-mq/-dq`.

use super::*;

impl ClusterState {
    /// `qconf -aq/-Aq`.
    pub(super) fn add_queue(&self, who: &str, text: &str) -> Result<Reply, Refusal> {
        let q = queue::parse_queue(text).map_err(|e| invalid(e.to_string()))?;
        if self.input.queues.contains_key(&q.name) {
            return Err(refuse(
                RefusalKind::AlreadyExists,
                format!("cluster queue \"{}\" already exists", q.name),
            ));
        }
        self.check_queue_refs(&q)?;
        let name = q.name.clone();
        Ok(change(
            Op::Put(Object::Queue(q)),
            format!("{who} added \"{name}\" to cluster queue list"),
        ))
    }

    /// `qconf -mq/-Mq`.
    pub(super) fn modify_queue(&self, who: &str, text: &str) -> Result<Reply, Refusal> {
        let q = queue::parse_queue(text).map_err(|e| invalid(e.to_string()))?;
        if !self.input.queues.contains_key(&q.name) {
            return Err(refuse(
                RefusalKind::NotFound,
                format!("cluster queue \"{}\" does not exist", q.name),
            ));
        }
        self.check_queue_refs(&q)?;
        let name = q.name.clone();
        Ok(change(
            Op::Put(Object::Queue(q)),
            format!("{who} modified \"{name}\" in cluster queue list"),
        ))
    }

    /// `qconf -dq`: refused while jobs run in the queue.
    pub(super) fn delete_queues(&self, who: &str, names: &[String]) -> Result<Reply, Refusal> {
        let mut c = Change::default();
        for name in names {
            if !self.input.queues.contains_key(name) {
                return Err(refuse(
                    RefusalKind::NotFound,
                    format!("cluster queue \"{name}\" does not exist"),
                ));
            }
            let busy = self.input.jobs.values().any(|j| {
                j.tasks.placed_states().any(|t| {
                    matches!(t, TaskState::Running { queue, .. } | TaskState::Deleting { queue, .. } if queue == name)
                })
            });
            if busy {
                return Err(refuse(
                    RefusalKind::Denied,
                    format!("denied: cluster queue \"{name}\" has running jobs"),
                ));
            }
            c.ops.push(Op::Delete(format!("queue/{name}")));
            c.messages
                .push(format!("{who} removed \"{name}\" from cluster queue list"));
        }
        Ok(Reply::Change(c))
    }

    /// A queue's values against the complex, and the host groups, usersets it names.
    fn check_queue_refs(&self, q: &gantry_proto::ClusterQueue) -> Result<(), Refusal> {
        queue::check_queue(q, &self.input.complexes).map_err(invalid)?;
        let list = |key: &str| -> Vec<String> {
            q.attr(key)
                .map(|a| {
                    std::iter::once(a.default.as_str())
                        .chain(a.overrides.iter().map(|(_, v)| v.as_str()))
                        .flat_map(gantry_common::conf::split_list)
                        .filter(|v| !v.eq_ignore_ascii_case("NONE"))
                        .collect()
                })
                .unwrap_or_default()
        };
        for member in list("hostlist") {
            if member.starts_with('@') && !self.input.hostgroups.contains_key(&member) {
                return Err(invalid(format!(
                    "host group \"{member}\" in hostlist of cluster queue \"{}\" does not exist",
                    q.name
                )));
            }
        }
        for key in ["projects", "xprojects"] {
            self.check_projects(&list(key), key, &format!("cluster queue \"{}\"", q.name))?;
        }
        for p in list("pe_list") {
            if !self.input.pes.contains_key(&p) {
                // SGE's qmaster's words, for every way a queue is changed.
                return Err(invalid(format!(
                    "Parallel environment \"{p}\" does not exist"
                )));
            }
        }
        for c in list("ckpt_list") {
            if !self.ckpts.contains_key(&c) {
                return Err(invalid(format!(
                    "Ckpt \"{c}\" in ckpt_list of cluster queue \"{}\" does not exist",
                    q.name
                )));
            }
        }
        for key in ["user_lists", "xuser_lists"] {
            for set in list(key) {
                if !self.input.usersets.contains_key(&set) {
                    return Err(invalid(format!(
                        "userset \"{set}\" in {key} of cluster queue \"{}\" does not exist",
                        q.name
                    )));
                }
            }
        }
        for (key, a) in &q.attrs {
            for (target, _) in &a.overrides {
                if target.starts_with('@') && !self.input.hostgroups.contains_key(target) {
                    return Err(invalid(format!(
                        "host group \"{target}\" in an override of {key} in cluster queue \"{}\" does not exist",
                        q.name
                    )));
                }
            }
        }
        Ok(())
    }
}
