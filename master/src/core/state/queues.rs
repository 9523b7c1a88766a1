//! Queue instance states: `qmod -d/-e/-c`.

use super::*;

impl ClusterState {
    /// `qmod -d/-e`.
    pub(crate) fn set_queue_state(
        &self,
        caller: &Caller,
        targets: &[String],
        disable: &bool,
        force: bool,
    ) -> Result<Reply, Refusal> {
        let who = format!("{}@{}", caller.user, caller.host);
        if !self.is_manager(&caller.user) && !self.operators.contains(&caller.user) {
            // SGE's words, one line per queue instance the user named.
            let instances = self.queue_instances_named(targets)?;
            let lines: Vec<String> = instances
                .iter()
                .map(|(q, h)| {
                    format!(
                        "{} - you have no permission to modify queue \"{q}@{h}\"",
                        caller.user
                    )
                })
                .collect();
            return Err(refuse(RefusalKind::Denied, lines.join("\n")));
        }
        // A manager or operator on a host that is no administrative host (Gantry's rule).
        self.operator_check(caller)?;
        let mut disabled = (*self.input.disabled).clone();
        let mut messages = Vec::new();
        for key in self.queue_instances_named(targets)? {
            let state = if *disable { "disabled" } else { "enabled" };
            let (q, h) = (key.0.clone(), key.1.clone());
            let changed = if *disable {
                disabled.insert(key)
            } else {
                disabled.remove(&key)
            };
            messages.push(if force {
                format!("{who} forced state change of \"{q}@{h}\" ({state})")
            } else if changed {
                format!("{who} changed state of \"{q}@{h}\" ({state})")
            } else {
                // SGE's words for a queue instance already so.
                format!("Queue instance \"{q}@{h}\" is already in the specified state: {state}")
            });
        }
        let mut list: Vec<(String, String)> = disabled.into_iter().collect();
        list.sort();
        Ok(Reply::Change(Change {
            ops: vec![Op::Put(Object::DisabledQueues(list))],
            messages,
        }))
    }

    /// `qmod -c`: queue instances out of error state.
    pub(crate) fn clear_queue_errors(
        &self,
        caller: &Caller,
        targets: &[String],
        force: bool,
    ) -> Result<Reply, Refusal> {
        let who = format!("{}@{}", caller.user, caller.host);
        self.manager_check(caller)?;
        let changed = if force {
            "forced state change"
        } else {
            "changed state"
        };
        let mut errored = self.queue_errors.clone();
        let mut messages = Vec::new();
        for key in self.queue_instances_named(targets)? {
            messages.push(format!(
                "{who} {changed} of \"{}@{}\" (no error)",
                key.0, key.1
            ));
            errored.remove(&key);
        }
        Ok(Reply::Change(Change {
            ops: vec![Op::Put(Object::ErrorQueues(QueueInError::list(errored)))],
            messages,
        }))
    }
    /// A host group's members must be valid host names or existing groups, and groups
    /// must not contain themselves, directly or through others.
    /// The queue instances a `qmod` list names (`queue`, `queue@host`, `@host`, with
    /// wildcards); an entry naming none is refused.
    pub fn queue_instances_named(
        &self,
        targets: &[String],
    ) -> Result<Vec<(String, String)>, Refusal> {
        let mut out = Vec::new();
        for target in targets {
            let (qpat, hpat) = match target.split_once('@') {
                Some((q, h)) => (if q.is_empty() { "*" } else { q }, h),
                None => (target.as_str(), "*"),
            };
            let before = out.len();
            for q in self.input.queues.values() {
                if !gantry_common::job::wildcard(qpat, &q.name) {
                    continue;
                }
                for host in self.queue_hosts_of(q) {
                    if gantry_common::job::wildcard(hpat, &host) {
                        out.push((q.name.clone(), host));
                    }
                }
            }
            if out.len() == before {
                return Err(refuse(
                    RefusalKind::NotFound,
                    format!("invalid queue \"{target}\""),
                ));
            }
        }
        Ok(out)
    }
}
