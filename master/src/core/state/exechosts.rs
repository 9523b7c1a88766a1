//! Exec hosts: `qhost`, `qconf -se/-ae/-de`.

use super::*;

impl ClusterState {
    /// `qhost`: every exec host with its load values and queue instances, and what each instance offers (`qstat -F`).
    pub(crate) fn host_info(&self, now: gantry_sched::Time) -> Result<Reply, Refusal> {
        let counts = self.slot_counts(now);
        let mut hosts: Vec<HostView> = self
            .input
            .exechosts
            .keys()
            .map(|h| self.host_view(h, now, &counts))
            .collect();
        // What each queue instance offers (`qstat -F`), from the scheduler's view.
        let all: std::collections::HashSet<String> = self.input.exechosts.keys().cloned().collect();
        let snap = self.snapshot(&all, now);
        let mut offered = snap.resources();
        for h in &mut hosts {
            for q in &mut h.queues {
                q.resources = offered
                    .remove(&(q.queue.clone(), h.name.clone()))
                    .unwrap_or_default();
                q.reasons = self.state_reasons(q, &h.name);
            }
        }
        Ok(Reply::Answer(FromMaster::Hosts(HostReport {
            hosts,
            complexes: (*self.input.complexes).clone(),
        })))
    }

    /// Why a queue instance is in its states, as `qstat -explain` says it: each load
    /// or suspend threshold its host's values stand beyond (`alarm hl:np_load_avg=
    /// 0.417724 load-threshold=0.01`, the value as `qstat -F` shows it), and what set
    /// it in error state.
    fn state_reasons(&self, view: &QueueInstanceView, host: &str) -> Vec<(char, String)> {
        let mut out = Vec::new();
        if let Some(q) = self.input.queues.get(&view.queue) {
            for (letter, key, word) in [
                ('a', "load_thresholds", "load"),
                ('A', "suspend_thresholds", "suspend"),
            ] {
                if !view.states.contains(letter) {
                    continue;
                }
                for (name, value, limit) in self.threshold_alarms(q, host, key) {
                    let shown = view
                        .resources
                        .iter()
                        .find(|(k, _)| k.split_once(':').is_some_and(|(_, n)| n == name))
                        .map_or_else(|| format!("hl:{name}={value}"), |(k, v)| format!("{k}={v}"));
                    out.push((letter, format!("alarm {shown} {word}-threshold={limit}")));
                }
            }
        }
        if let Some(why) = self
            .queue_errors
            .get(&(view.queue.clone(), host.to_string()))
        {
            out.push(('E', why.clone()));
        }
        out
    }

    /// `qconf -se host`: the host with its reported load values.
    pub(crate) fn show_exec_host(
        &self,
        host: &str,
        now: gantry_sched::Time,
    ) -> Result<Reply, Refusal> {
        let Some(h) = self.input.exechosts.get(host) else {
            return Err(refuse(
                RefusalKind::NotFound,
                format!("\"{host}\" is not an execution host"),
            ));
        };
        let mut h = h.clone();
        let view = self.host_view(host, now, &self.slot_counts(now));
        h.processors = load::get(&view.load_values, "num_proc")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        h.load_values = view.load_values;
        Ok(Reply::Answer(FromMaster::ExecHost(h)))
    }

    /// `qconf -ae/-Ae`.
    pub(crate) fn add_exec_host(&self, caller: &Caller, text: &str) -> Result<Reply, Refusal> {
        let who = format!("{}@{}", caller.user, caller.host);
        self.manager_check(caller)?;
        let host = exechost::parse_exechost(text)
            .map_err(|e| refuse(RefusalKind::Invalid, e.to_string()))?;
        if self.input.exechosts.contains_key(&host.hostname) {
            return Err(refuse(
                RefusalKind::AlreadyExists,
                format!("exechost \"{}\" already exists", host.hostname),
            ));
        }
        exechost::check_exechost(&host, &self.input.complexes)
            .map_err(|e| refuse(RefusalKind::Invalid, e))?;
        let name = host.hostname.clone();
        Ok(Reply::Change(Change {
            ops: vec![Op::Put(Object::ExecHost(host))],
            messages: vec![format!("{who} added \"{name}\" to exechost list")],
        }))
    }

    /// `qconf -de`: every host checked before any is removed (all or nothing).
    pub(crate) fn delete_exec_hosts(
        &self,
        caller: &Caller,
        hosts: &[String],
    ) -> Result<Reply, Refusal> {
        let who = format!("{}@{}", caller.user, caller.host);
        self.manager_check(caller)?;
        let mut change = Change::default();
        // Check every host before changing any: all or nothing.
        for host in hosts {
            if !self.input.exechosts.contains_key(host) {
                return Err(refuse(
                    RefusalKind::NotFound,
                    format!("denied: \"{host}\" is not an execution host"),
                ));
            }
            let busy = self.input.jobs.values().find(|j| {
                j.tasks.placed_states().any(|t| match t {
                    gantry_common::job::TaskState::Running { grants, .. }
                    | gantry_common::job::TaskState::Deleting { grants, .. } => {
                        grants.iter().any(|g| g.host == *host)
                    }
                    _ => false,
                })
            });
            if let Some(j) = busy {
                return Err(refuse(
                    RefusalKind::Denied,
                    format!(
                        "denied: host \"{host}\" has running jobs (job {} and maybe more)",
                        j.id
                    ),
                ));
            }
        }
        let mut groups: BTreeMap<String, HostGroup> = BTreeMap::new();
        for host in hosts {
            change.ops.push(Op::Delete(format!("exechost/{host}")));
            if self.new_hosts.contains(host.as_str()) {
                change.ops.push(Op::Delete(format!("newhost/{host}")));
            }
            for (fp, h) in &self.host_certs {
                if h == host {
                    change.ops.push(Op::Delete(format!("hostcert/{fp}")));
                }
            }
            for g in self.input.hostgroups.values() {
                if g.hostlist.iter().any(|m| m == host) {
                    let entry = groups.entry(g.name.clone()).or_insert_with(|| g.clone());
                    entry.hostlist.retain(|m| m != host);
                }
            }
            for q in self.input.queues.values() {
                if let Some(slots) = q.attr("slots") {
                    if slots.overrides.iter().any(|(h, _)| h == host) {
                        let mut q = q.clone();
                        if let Some(s) = q.attr_mut("slots") {
                            s.overrides.retain(|(h, _)| h != host);
                        }
                        change.ops.push(Op::Put(Object::Queue(q)));
                    }
                }
            }
            change
                .messages
                .push(format!("{who} removed \"{host}\" from execution host list"));
        }
        for g in groups.into_values() {
            change.ops.push(Op::Put(Object::HostGroup(g)));
        }
        Ok(Reply::Change(change))
    }
    /// A host as `qhost` shows it; `counts` is [`ClusterState::slot_counts`], counted
    /// once for all hosts of a report.
    pub(crate) fn host_view(
        &self,
        name: &str,
        now: gantry_sched::Time,
        counts: &crate::core::state::SlotCounts,
    ) -> HostView {
        let reachable = self.is_reachable(name, now);
        let mut load_values = self
            .input
            .runtime
            .get(name)
            .map(|r| r.load_values.clone())
            .unwrap_or_default();
        if !reachable {
            load_values.retain(|l| load::STATIC_VALUES.contains(&l.name.as_str()));
        }
        let groups = self.groups_of(name);
        let queues = self
            .input
            .queues
            .values()
            .filter(|q| self.queue_hosts_of(q).iter().any(|h| h == name))
            .map(|q| {
                let total = q
                    .attr("slots")
                    .map(|a| queue::value_on_host(a, name, &groups))
                    .and_then(|v| v.parse::<u32>().ok())
                    .unwrap_or(0);
                let qtype = q.attr("qtype").map_or("", |a| a.default.as_str());
                let pe_list = q.attr("pe_list").map_or("NONE", |a| a.default.as_str());
                let used = counts
                    .used
                    .get(&(q.name.clone(), name.to_string()))
                    .copied()
                    .unwrap_or(0);
                let (reserved, reserved_all) = counts
                    .reserved
                    .get(&(q.name.clone(), name.to_string()))
                    .copied()
                    .unwrap_or((0, 0));
                QueueInstanceView {
                    queue: q.name.clone(),
                    qtype: qtype_letters(qtype, pe_list),
                    reserved,
                    reserved_all,
                    used,
                    total,
                    states: {
                        let mut st = String::new();
                        if reachable && self.load_alarm(q, name).is_some() {
                            st.push('a');
                        }
                        let key = (q.name.clone(), name.to_string());
                        if self.input.disabled.contains(&key) {
                            st.push('d');
                        }
                        if reachable && self.suspend_alarm(q, name).is_some() {
                            st.push('A');
                        }
                        if self.input.suspended_queues.contains(&key) {
                            st.push('s');
                        }
                        if !reachable {
                            st.push('u');
                        }
                        if self.input.errored.contains(&key) {
                            st.push('E');
                        }
                        st
                    },
                    resources: Vec::new(),
                    reasons: Vec::new(),
                }
            })
            .collect();
        HostView {
            name: name.to_string(),
            reachable,
            load_values,
            complex_values: self
                .input
                .exechosts
                .get(name)
                .map(|h| h.complex_values.clone())
                .unwrap_or_default(),
            queues,
        }
    }
    /// May an execd that presented a valid join token join under `hostname`? Decided
    /// before a certificate is issued. A name that holds a certificate is taken: a
    /// second join would take over the host's identity and lock the real host out. The
    /// master's own name is an administrative host from `init`, so it may only be
    /// claimed from the master's own machine (`from_masters_machine`: the join came from
    /// one of the master's addresses); else any holder of the token could join under it
    /// and manage the cluster from its own host.
    pub fn join_check(
        &self,
        hostname: &str,
        from_masters_machine: bool,
    ) -> Result<(), JoinRefused> {
        if self.host_certs.values().any(|h| h == hostname) {
            return Err(JoinRefused::AlreadyJoined(hostname.to_string()));
        }
        if hostname == self.master_host && !from_masters_machine {
            return Err(JoinRefused::MastersName(hostname.to_string()));
        }
        Ok(())
    }
    /// An execd joined with a valid token: register its certificate, and make it an exec
    /// host in `@allhosts` if it is not one yet (what SGE's execd installation does).
    pub fn join(&self, hostname: &str, fingerprint: &str) -> Change {
        let mut ops = Vec::new();
        for (fp, h) in &self.host_certs {
            if h == hostname {
                ops.push(Op::Delete(format!("hostcert/{fp}")));
            }
        }
        ops.push(Op::Put(Object::HostCert {
            fingerprint: fingerprint.to_string(),
            hostname: hostname.to_string(),
        }));
        let mut messages = Vec::new();
        if !self.input.exechosts.contains_key(hostname) {
            ops.push(Op::Put(Object::ExecHost(ExecHost::new(hostname))));
            // Its first load report gives it its slots in all.q.
            ops.push(Op::Put(Object::NewHost(hostname.to_string())));
            messages.push(format!("added \"{hostname}\" to exechost list"));
        }
        if let Some(g) = self.input.hostgroups.get("@allhosts") {
            if !g.hostlist.iter().any(|h| h == hostname) {
                let mut g = g.clone();
                g.hostlist.push(hostname.to_string());
                ops.push(Op::Put(Object::HostGroup(g)));
            }
        }
        Change { ops, messages }
    }
    /// The first load report of a host tells its `num_proc`: give the host its slots in
    /// `all.q` (`slots 1,[host=num_proc]`) as SGE's installation does, unless the
    /// administrator already set a value for it.
    /// A load report from a host: its values as the scheduler will read them, and when
    /// it was heard (it is reachable again if it was not).
    pub fn record_load(&mut self, host: &str, values: Vec<LoadValue>, now: gantry_sched::Time) {
        Arc::make_mut(&mut self.input.runtime).insert(
            host.to_string(),
            Arc::new(HostRuntime {
                load_values: values,
                last_heard: Some(now),
            }),
        );
    }
    pub fn slots_for_new_host(&self, hostname: &str, values: &[LoadValue]) -> Option<Change> {
        // Only a host that joined and has not reported yet: what the administrator set
        // for it since (`qconf -rattr queue slots 4 all.q`) is never undone.
        if !self.new_hosts.contains(hostname) {
            return None;
        }
        let num_proc = load::get(values, "num_proc")?.parse::<u32>().ok()?;
        let mut ops = vec![Op::Delete(format!("newhost/{hostname}"))];
        if let Some(q) = self.input.queues.get("all.q") {
            let set_already = q
                .attr("slots")
                .is_some_and(|s| s.overrides.iter().any(|(h, _)| h == hostname));
            if !set_already && self.queue_hosts_of(q).iter().any(|h| h == hostname) {
                let mut q = q.clone();
                if let Some(slots) = q.attr_mut("slots") {
                    slots
                        .overrides
                        .push((hostname.to_string(), num_proc.to_string()));
                    ops.push(Op::Put(Object::Queue(q)));
                }
            }
        }
        Some(Change {
            ops,
            messages: vec![],
        })
    }
}

/// Why an execd may not join under a name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JoinRefused {
    #[error("host \"{0}\" already joined; delete it with qconf -de first")]
    AlreadyJoined(String),
    #[error("host \"{0}\" is the master's host; an execd joins under that name only on the master's machine")]
    MastersName(String),
}
