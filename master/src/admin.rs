//! Configuration objects `qconf` edits as text: the complex (`-sc -mc -Mc`), exec hosts
//! and the global host (`-se -me -Me`), the scheduler configuration (`-ssconf -msconf
//! -Msconf`) and cluster queues (`-sq -sql -aq -Aq -mq -Mq -dq`). Every file is parsed
//! and checked whole against the rest of the configuration before anything changes.

use gantry_common::{complex, exechost, pe, project, queue, schedconf};
use gantry_proto::{AttrOp, ExecHost, FromMaster, ObjectKind, Refusal, RefusalKind, ToMaster};

use crate::jobs::TaskState;

mod rqs;
use crate::state::{refuse, Change, ClusterState, Object, Op, Reply};

fn invalid(message: impl Into<String>) -> Refusal {
    refuse(RefusalKind::Invalid, message)
}

fn change(op: Op, message: String) -> Reply {
    Reply::Change(Change {
        ops: vec![op],
        messages: vec![message],
    })
}

/// What replacing the complex `old` with `new` does, in SGE's words: attributes added,
/// modified and removed (linear in the lists' lengths).
pub(crate) fn complex_changes(
    who: &str,
    old: &[gantry_proto::ComplexAttr],
    new: &[gantry_proto::ComplexAttr],
) -> Vec<String> {
    let mut messages = Vec::new();
    let before = complex::by_name(old);
    let after = complex::by_name(new);
    for c in new {
        match before.get(c.name.as_str()) {
            None => messages.push(format!("{who} added \"{}\" to complex entry list", c.name)),
            Some(o) if *o != c => messages.push(format!(
                "{who} modified \"{}\" in complex entry list",
                c.name
            )),
            Some(_) => {}
        }
    }
    for o in old {
        if !after.contains_key(o.name.as_str()) {
            messages.push(format!(
                "{who} removed \"{}\" from complex entry list",
                o.name
            ));
        }
    }
    if messages.is_empty() {
        messages.push("complex entry list has not changed".to_string());
    }
    messages
}

impl ClusterState {
    /// The global host: cluster-wide `complex_values`.
    pub fn global_exechost(&self) -> ExecHost {
        (*self.global_host)
            .clone()
            .unwrap_or_else(|| ExecHost::new("global"))
    }

    /// Answer or decide a request on a text-edited object. `who` is `user@host`;
    /// `manager` says whether the caller may change things.
    pub(crate) fn handle_object(
        &self,
        who: &str,
        manager: Result<(), Refusal>,
        req: &ToMaster,
    ) -> Result<Reply, Refusal> {
        match req {
            ToMaster::ReplaceObjects {
                kind: ObjectKind::Rqs,
                text,
            } => {
                manager?;
                self.replace_quota_sets(who, text)
            }
            ToMaster::ReplaceObjects { kind, .. } => {
                Err(invalid(format!("cannot replace all {kind:?} objects")))
            }
            ToMaster::ShowObject { kind, name } => self.show_object(*kind, name),
            ToMaster::ShowObjectList { kind } => Ok(Reply::Answer(FromMaster::Names(match kind {
                ObjectKind::Queue => self.queues.keys().cloned().collect(),
                ObjectKind::ExecHost => self.exechosts.keys().cloned().collect(),
                ObjectKind::AdminHost => {
                    // Sorted by name, as SGE's qconf -sh lists them.
                    let mut hosts = self.admin_hosts();
                    hosts.sort();
                    hosts
                }
                ObjectKind::Pe => self.pes.keys().cloned().collect(),
                ObjectKind::Project => self.projects.keys().cloned().collect(),
                ObjectKind::Rqs => self.quota_sets.keys().cloned().collect(),
                _ => {
                    return Err(invalid(format!("{kind:?} objects have no list")));
                }
            }))),
            ToMaster::AddObject { kind, text } => {
                manager?;
                self.add_object(who, *kind, text)
            }
            ToMaster::ModifyObject { kind, text } => {
                manager?;
                self.modify_object(who, *kind, text)
            }
            ToMaster::DeleteObjects { kind, names } => {
                manager?;
                self.delete_objects(who, *kind, names)
            }
            ToMaster::EditAttribute {
                op,
                object,
                attr,
                value,
                targets,
            } => {
                manager?;
                if object == "resource_quota" {
                    self.edit_quota_attribute(who, *op, attr, value, targets)
                } else {
                    self.edit_attribute(who, *op, object, attr, value, targets)
                }
            }
            ToMaster::ModifyAttribute {
                object,
                attr,
                value,
                targets,
            } => {
                manager?;
                self.edit_attribute(who, AttrOp::Modify, object, attr, value, targets)
            }
            _ => Err(invalid("not an object request")),
        }
    }

    fn show_object(&self, kind: ObjectKind, name: &str) -> Result<Reply, Refusal> {
        let text = match kind {
            ObjectKind::Rqs => return self.show_quota_sets(name),
            ObjectKind::Complex => complex::print_complexes(&self.complexes),
            ObjectKind::SchedConf => schedconf::print_schedconf(
                (*self.sched)
                    .as_ref()
                    .unwrap_or(&schedconf::default_schedconf()),
            ),
            ObjectKind::Queue => {
                if name.is_empty() || name == "template" {
                    queue::print_queue(&queue::new_queue("template", "NONE"))
                } else {
                    let q = self.queues.get(name).ok_or_else(|| {
                        refuse(
                            RefusalKind::NotFound,
                            format!("cluster queue \"{name}\" does not exist"),
                        )
                    })?;
                    queue::print_queue(q)
                }
            }
            ObjectKind::Pe if name.is_empty() || name == "template" => {
                pe::print_pe(&pe::Pe::new("template"))
            }
            ObjectKind::Pe => pe::print_pe(self.pes.get(name).ok_or_else(|| {
                refuse(
                    RefusalKind::NotFound,
                    format!("parallel environment \"{name}\" does not exist"),
                )
            })?),
            ObjectKind::Project if name.is_empty() || name == "template" => {
                project::print_project(&project::Project::new("template"))
            }
            ObjectKind::Project => {
                project::print_project(self.projects.get(name).ok_or_else(|| {
                    refuse(
                        RefusalKind::NotFound,
                        format!("project \"{name}\" does not exist"),
                    )
                })?)
            }
            ObjectKind::ExecHost if name == "global" => {
                exechost::print_exechost(&self.global_exechost())
            }
            _ => return Err(invalid(format!("cannot show {kind:?} \"{name}\""))),
        };
        Ok(Reply::Answer(FromMaster::Text(text)))
    }

    fn add_object(&self, who: &str, kind: ObjectKind, text: &str) -> Result<Reply, Refusal> {
        match kind {
            ObjectKind::Rqs => self.add_quota_sets(who, text),
            ObjectKind::AdminHost => {
                let mut hosts = self.admin_hosts();
                let mut messages = Vec::new();
                let given: Vec<&str> = text
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|h| !h.is_empty())
                    .collect();
                if given.is_empty() {
                    return Err(invalid("no host given"));
                }
                for host in given {
                    if !gantry_common::exechost::valid_hostname(host) {
                        return Err(invalid(format!(
                            "can't resolve hostname \"{}\"",
                            gantry_common::names::quoted(host)
                        )));
                    }
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
            ObjectKind::Project => {
                let p = project::parse_project(text).map_err(|e| invalid(e.to_string()))?;
                if self.projects.contains_key(&p.name) {
                    return Err(refuse(
                        RefusalKind::AlreadyExists,
                        format!("project \"{}\" already exists", p.name),
                    ));
                }
                self.check_sets(&p.acl, "acl", &format!("project \"{}\"", p.name))?;
                self.check_sets(&p.xacl, "xacl", &format!("project \"{}\"", p.name))?;
                let name = p.name.clone();
                Ok(change(
                    Op::Put(Object::Project(p)),
                    format!("{who} added \"{name}\" to project list"),
                ))
            }
            ObjectKind::Pe => {
                let p = pe::parse_pe(text).map_err(|e| invalid(e.to_string()))?;
                if self.pes.contains_key(&p.name) {
                    return Err(refuse(
                        RefusalKind::AlreadyExists,
                        format!("parallel environment \"{}\" already exists", p.name),
                    ));
                }
                self.check_pe_refs(&p)?;
                let name = p.name.clone();
                Ok(change(
                    Op::Put(Object::Pe(p)),
                    format!("{who} added \"{name}\" to parallel environment list"),
                ))
            }
            ObjectKind::Queue => {
                let q = queue::parse_queue(text).map_err(|e| invalid(e.to_string()))?;
                if self.queues.contains_key(&q.name) {
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
            _ => Err(invalid(format!("cannot add {kind:?} objects"))),
        }
    }

    /// Replace the complex with `list`, already read and checked against the complex
    /// specification's restrictions (`check_complexes`): refused if it removes or
    /// retypes an attribute still in use.
    pub(crate) fn replace_complexes(
        &self,
        who: &str,
        list: Vec<gantry_proto::ComplexAttr>,
    ) -> Result<Reply, Refusal> {
        let messages = complex_changes(who, &self.complexes, &list);
        self.replace_complexes_saying(list, messages)
    }

    /// [`Self::replace_complexes`] with its messages worked out already.
    pub(crate) fn replace_complexes_saying(
        &self,
        list: Vec<gantry_proto::ComplexAttr>,
        messages: Vec<String>,
    ) -> Result<Reply, Refusal> {
        self.check_complex_refs(&list)?;
        Ok(Reply::Change(Change {
            ops: vec![Op::Put(Object::Complexes(list))],
            messages,
        }))
    }

    fn modify_object(&self, who: &str, kind: ObjectKind, text: &str) -> Result<Reply, Refusal> {
        match kind {
            ObjectKind::Rqs => self.modify_quota_sets(who, text),
            ObjectKind::Project => {
                let p = project::parse_project(text).map_err(|e| invalid(e.to_string()))?;
                if !self.projects.contains_key(&p.name) {
                    return Err(refuse(
                        RefusalKind::NotFound,
                        format!("project \"{}\" does not exist", p.name),
                    ));
                }
                self.check_sets(&p.acl, "acl", &format!("project \"{}\"", p.name))?;
                self.check_sets(&p.xacl, "xacl", &format!("project \"{}\"", p.name))?;
                let name = p.name.clone();
                Ok(change(
                    Op::Put(Object::Project(p)),
                    format!("{who} modified \"{name}\" in project list"),
                ))
            }
            ObjectKind::Pe => {
                let p = pe::parse_pe(text).map_err(|e| invalid(e.to_string()))?;
                if !self.pes.contains_key(&p.name) {
                    return Err(refuse(
                        RefusalKind::NotFound,
                        format!("parallel environment \"{}\" does not exist", p.name),
                    ));
                }
                self.check_pe_refs(&p)?;
                let name = p.name.clone();
                Ok(change(
                    Op::Put(Object::Pe(p)),
                    format!("{who} modified \"{name}\" in parallel environment list"),
                ))
            }
            ObjectKind::Complex => {
                let list = complex::parse_complexes(text).map_err(|e| invalid(e.to_string()))?;
                complex::check_complexes(&list, &self.complexes).map_err(invalid)?;
                self.replace_complexes(who, list)
            }
            ObjectKind::SchedConf => {
                let conf = schedconf::parse_schedconf(text).map_err(|e| invalid(e.to_string()))?;
                Ok(change(
                    Op::Put(Object::Config(conf)),
                    format!("{who} modified scheduler configuration"),
                ))
            }
            ObjectKind::ExecHost => {
                // The global host's name is reserved for it: read it in a host's place.
                let is_global = text.lines().any(|l| {
                    let mut w = l.split_whitespace();
                    w.next() == Some("hostname") && w.next() == Some("global")
                });
                let parsed = if is_global {
                    let replaced: String = text
                        .lines()
                        .map(|l| {
                            if l.split_whitespace().next() == Some("hostname") {
                                "hostname global.invalid\n".to_string()
                            } else {
                                format!("{l}\n")
                            }
                        })
                        .collect();
                    exechost::parse_exechost(&replaced).map(|mut h| {
                        h.hostname = "global".into();
                        h
                    })
                } else {
                    exechost::parse_exechost(text)
                }
                .map_err(|e| invalid(e.to_string()))?;
                if !is_global && !self.exechosts.contains_key(&parsed.hostname) {
                    return Err(refuse(
                        RefusalKind::NotFound,
                        format!("\"{}\" is not an execution host", parsed.hostname),
                    ));
                }
                exechost::check_exechost(&parsed, &self.complexes).map_err(invalid)?;
                let owner = format!("exec host \"{}\"", parsed.hostname);
                self.check_sets(&parsed.user_lists, "user_lists", &owner)?;
                self.check_sets(&parsed.xuser_lists, "xuser_lists", &owner)?;
                self.check_projects(&parsed.projects, "projects", &owner)?;
                self.check_projects(&parsed.xprojects, "xprojects", &owner)?;
                let mut host = parsed;
                // What the execd reports is not the administrator's to edit.
                if let Some(old) = self.exechosts.get(&host.hostname) {
                    host.load_values = old.load_values.clone();
                    host.processors = old.processors;
                } else {
                    host.load_values = Vec::new();
                    host.processors = 0;
                }
                let name = host.hostname.clone();
                Ok(change(
                    Op::Put(Object::ExecHost(host)),
                    format!("{who} modified \"{name}\" in exechost list"),
                ))
            }
            ObjectKind::Queue => {
                let q = queue::parse_queue(text).map_err(|e| invalid(e.to_string()))?;
                if !self.queues.contains_key(&q.name) {
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
            ObjectKind::AdminHost => Err(invalid(
                "administrative hosts are added and deleted, not modified",
            )),
        }
    }

    fn delete_objects(
        &self,
        who: &str,
        kind: ObjectKind,
        names: &[String],
    ) -> Result<Reply, Refusal> {
        match kind {
            ObjectKind::Rqs => self.delete_quota_sets(who, names),
            ObjectKind::AdminHost => {
                if names.is_empty() {
                    return Err(invalid("no host given"));
                }
                let mut hosts = self.admin_hosts();
                let mut messages = Vec::new();
                for host in names {
                    if *host == self.master_host {
                        return Err(refuse(
                            RefusalKind::Denied,
                            format!(
                                "denied: can't delete master host \"{host}\" from admin host list"
                            ),
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
            ObjectKind::Project => {
                let mut c = Change::default();
                for name in names {
                    if !self.projects.contains_key(name) {
                        return Err(refuse(
                            RefusalKind::NotFound,
                            format!("project \"{name}\" does not exist"),
                        ));
                    }
                    if let Some(place) = self.project_user(name) {
                        return Err(refuse(
                            RefusalKind::Denied,
                            format!("denied: project \"{name}\" is still referenced in {place}"),
                        ));
                    }
                    c.ops.push(Op::Delete(format!("project/{name}")));
                    c.messages
                        .push(format!("{who} removed \"{name}\" from project list"));
                }
                Ok(Reply::Change(c))
            }
            ObjectKind::Pe => {
                let mut c = Change::default();
                for name in names {
                    if !self.pes.contains_key(name) {
                        return Err(refuse(
                            RefusalKind::NotFound,
                            format!("parallel environment \"{name}\" does not exist"),
                        ));
                    }
                    if let Some(q) = self.queues.values().find(|q| {
                        q.attr("pe_list").is_some_and(|a| {
                            std::iter::once(&a.default)
                                .chain(a.overrides.iter().map(|(_, v)| v))
                                .any(|v| gantry_common::conf::split_list(v).contains(name))
                        })
                    }) {
                        return Err(refuse(
                            RefusalKind::Denied,
                            format!(
                                "denied: parallel environment \"{name}\" is still referenced in cluster queue \"{}\"",
                                q.name
                            ),
                        ));
                    }
                    if let Some(j) = self.jobs.values().find(|j| {
                        j.spec
                            .pe
                            .as_ref()
                            .is_some_and(|(p, _)| crate::jobs::wildcard(p, name))
                    }) {
                        return Err(refuse(
                            RefusalKind::Denied,
                            format!(
                                "denied: parallel environment \"{name}\" is still requested by job {}",
                                j.id
                            ),
                        ));
                    }
                    c.ops.push(Op::Delete(format!("pe/{name}")));
                    c.messages.push(format!(
                        "{who} removed \"{name}\" from parallel environment list"
                    ));
                }
                Ok(Reply::Change(c))
            }
            ObjectKind::Queue => {
                let mut c = Change::default();
                for name in names {
                    if !self.queues.contains_key(name) {
                        return Err(refuse(
                            RefusalKind::NotFound,
                            format!("cluster queue \"{name}\" does not exist"),
                        ));
                    }
                    let busy = self.jobs.values().any(|j| {
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
            _ => Err(invalid(format!("cannot delete {kind:?} objects"))),
        }
    }

    /// `qconf -aattr/-mattr/-dattr/-rattr`: change one attribute of several objects,
    /// all or nothing. Each object is printed, the attribute edited as text and the
    /// object read and checked again, exactly as a `-M` file would be.
    fn edit_attribute(
        &self,
        who: &str,
        op: AttrOp,
        object: &str,
        attr: &str,
        value: &str,
        targets: &[String],
    ) -> Result<Reply, Refusal> {
        let (kind, what) = match object {
            "queue" => (Some(ObjectKind::Queue), "cluster queue"),
            "exechost" => (Some(ObjectKind::ExecHost), "exec host"),
            "pe" => (Some(ObjectKind::Pe), "parallel environment"),
            "project" => (Some(ObjectKind::Project), "project"),
            "hostgroup" => (None, "host group"),
            _ => {
                return Err(invalid(format!(
                    "error: unknown object type \"{object}\" (queue, exechost, hostgroup, pe or project)"
                )))
            }
        };
        if targets.is_empty() {
            return Err(invalid("error: no object to change given"));
        }
        let mut all = Change::default();
        for target in targets {
            let text = match kind {
                Some(ObjectKind::Queue) => self.queues.get(target).map(queue::print_queue),
                Some(ObjectKind::Pe) => self.pes.get(target).map(pe::print_pe),
                Some(ObjectKind::Project) => self.projects.get(target).map(project::print_project),
                Some(_) if target == "global" => {
                    Some(exechost::print_exechost(&self.global_exechost()))
                }
                Some(_) => self.exechosts.get(target).map(exechost::print_exechost),
                None => self
                    .hostgroups
                    .get(target)
                    .map(gantry_common::hostgroup::print_hostgroup),
            }
            .ok_or_else(|| {
                refuse(
                    RefusalKind::NotFound,
                    format!("denied: {what} \"{target}\" does not exist"),
                )
            })?;
            let mut entries =
                gantry_common::conf::parse_entries(&text).map_err(|e| invalid(e.to_string()))?;
            let Some(entry) = entries.iter_mut().find(|e| e.key == attr) else {
                return Err(invalid(format!(
                    "error: \"{attr}\" is not an attribute of a {what}"
                )));
            };
            if matches!(
                attr,
                "qname" | "hostname" | "pe_name" | "group_name" | "name"
            ) {
                return Err(invalid(format!(
                    "error: the name of a {what} cannot be changed"
                )));
            }
            let described = format!("\"{attr}\" of {what} \"{target}\"");
            entry.value = edit_value(op, &entry.value, value, kind == Some(ObjectKind::Queue))
                .map_err(|e| invalid(format!("{e} in {described}")))?;
            let edited: String = entries
                .iter()
                .map(|e| format!("{} {}\n", e.key, e.value))
                .collect();
            let reply = match kind {
                Some(k) => self.modify_object(who, k, &edited)?,
                None => {
                    let g = gantry_common::hostgroup::parse_hostgroup(&edited)
                        .map_err(|e| invalid(e.to_string()))?;
                    self.check_hostgroup(&g)?;
                    change(
                        Op::Put(Object::HostGroup(g)),
                        format!("{who} modified \"{target}\" in host group list"),
                    )
                }
            };
            if let Reply::Change(c) = reply {
                all.ops.extend(c.ops);
                all.messages.extend(c.messages);
            }
        }
        Ok(Reply::Change(all))
    }

    /// Usersets named in an attribute must exist.
    fn check_sets(&self, sets: &[String], key: &str, owner: &str) -> Result<(), Refusal> {
        match sets.iter().find(|s| !self.usersets.contains_key(*s)) {
            Some(set) => Err(invalid(format!(
                "userset \"{set}\" in {key} of {owner} does not exist"
            ))),
            None => Ok(()),
        }
    }

    /// Projects named in an attribute must exist.
    fn check_projects(&self, projects: &[String], key: &str, owner: &str) -> Result<(), Refusal> {
        match projects.iter().find(|p| !self.projects.contains_key(*p)) {
            Some(p) => Err(invalid(format!(
                "project \"{p}\" in {key} of {owner} does not exist"
            ))),
            None => Ok(()),
        }
    }

    /// Where a project is still used: a queue's or host's (x)projects, or a job.
    fn project_user(&self, name: &str) -> Option<String> {
        for q in self.queues.values() {
            for key in ["projects", "xprojects"] {
                if let Some(a) = q.attr(key) {
                    let used = std::iter::once(&a.default)
                        .chain(a.overrides.iter().map(|(_, v)| v))
                        .any(|v| gantry_common::conf::split_list(v).iter().any(|p| p == name));
                    if used {
                        return Some(format!("{key} of cluster queue \"{}\"", q.name));
                    }
                }
            }
        }
        for h in self.exechosts.values().chain(self.global_host.as_ref()) {
            if h.projects.iter().chain(&h.xprojects).any(|p| p == name) {
                return Some(format!("exec host \"{}\"", h.hostname));
            }
        }
        self.jobs
            .values()
            .find(|j| j.spec.project.as_deref() == Some(name))
            .map(|j| format!("job {}", j.id))
    }

    /// The usersets a PE names must exist.
    fn check_pe_refs(&self, p: &pe::Pe) -> Result<(), Refusal> {
        for (key, sets) in [
            ("user_lists", &p.user_lists),
            ("xuser_lists", &p.xuser_lists),
        ] {
            for set in sets {
                if !self.usersets.contains_key(set) {
                    return Err(invalid(format!(
                        "userset \"{set}\" in {key} of parallel environment \"{}\" does not exist",
                        p.name
                    )));
                }
            }
        }
        Ok(())
    }

    /// A queue's values against the complex, and the host groups, usersets it names.
    fn check_queue_refs(&self, q: &gantry_proto::ClusterQueue) -> Result<(), Refusal> {
        queue::check_queue(q, &self.complexes).map_err(invalid)?;
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
            if member.starts_with('@') && !self.hostgroups.contains_key(&member) {
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
            if !self.pes.contains_key(&p) {
                return Err(invalid(format!(
                    "parallel environment \"{p}\" in pe_list of cluster queue \"{}\" does not exist",
                    q.name
                )));
            }
        }
        for key in ["user_lists", "xuser_lists"] {
            for set in list(key) {
                if !self.usersets.contains_key(&set) {
                    return Err(invalid(format!(
                        "userset \"{set}\" in {key} of cluster queue \"{}\" does not exist",
                        q.name
                    )));
                }
            }
        }
        for (key, a) in &q.attrs {
            for (target, _) in &a.overrides {
                if target.starts_with('@') && !self.hostgroups.contains_key(target) {
                    return Err(invalid(format!(
                        "host group \"{target}\" in an override of {key} in cluster queue \"{}\" does not exist",
                        q.name
                    )));
                }
            }
        }
        Ok(())
    }

    /// An attribute still used somewhere cannot leave the complex, nor change its type
    /// under the values that use it.
    fn check_complex_refs(&self, list: &[gantry_proto::ComplexAttr]) -> Result<(), Refusal> {
        let hosts = self
            .exechosts
            .values()
            .chain(self.global_host.as_ref())
            .map(|h| (format!("exec host \"{}\"", h.hostname), &h.complex_values));
        let mut uses: Vec<(String, String, String)> = Vec::new();
        for (owner, values) in hosts {
            for (k, v) in values {
                uses.push((k.clone(), v.clone(), format!("complex_values of {owner}")));
            }
        }
        for q in self.queues.values() {
            for key in ["complex_values", "load_thresholds", "suspend_thresholds"] {
                if let Some(a) = q.attr(key) {
                    for v in std::iter::once(&a.default).chain(a.overrides.iter().map(|(_, v)| v)) {
                        for (k, val) in
                            gantry_common::conf::split_pairs(v, 0, key).unwrap_or_default()
                        {
                            uses.push((k, val, format!("{key} of cluster queue \"{}\"", q.name)));
                        }
                    }
                }
            }
        }
        for j in self.jobs.values() {
            for (k, v) in j.spec.hard_resources.iter().chain(&j.spec.soft_resources) {
                uses.push((k.clone(), v.clone(), format!("job {}", j.id)));
            }
        }
        for (_, set) in self.quota_sets.values() {
            let place = format!("resource quota set \"{}\"", set.name);
            for l in set.rules.iter().flat_map(|r| &r.limits) {
                if !l.is_dynamic() {
                    uses.push((l.resource.clone(), l.value.clone(), place.clone()));
                    continue;
                }
                // A dynamic limit: the limited attribute and those its formula reads
                // (a number stands for their values).
                uses.push((l.resource.clone(), "0".into(), place.clone()));
                for (_, c) in gantry_common::rqs::parse_dynamic(&l.value).unwrap_or_default() {
                    if let Some(c) = c {
                        uses.push((c, "0".into(), place.clone()));
                    }
                }
            }
        }
        let new = complex::by_name(list);
        let shortcuts: std::collections::HashMap<&str, &gantry_proto::ComplexAttr> = self
            .complexes
            .iter()
            .map(|c| (c.shortcut.as_str(), c))
            .collect();
        let old = complex::by_name(&self.complexes);
        for (name, value, place) in uses {
            let Some(old) = old
                .get(name.as_str())
                .or_else(|| shortcuts.get(name.as_str()))
            else {
                continue;
            };
            match new.get(old.name.as_str()) {
                None => {
                    return Err(refuse(
                        RefusalKind::Denied,
                        format!("denied: attribute \"{}\" is still referenced in {place}", old.name),
                    ))
                }
                Some(new) if gantry_common::value::parse_value(new.value_type, &value).is_err() => {
                    return Err(invalid(format!(
                        "the value \"{value}\" of attribute \"{}\" in {place} is not a valid {} value",
                        new.name,
                        gantry_common::value::type_name(new.value_type)
                    )))
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

/// Apply a `qconf -?attr` operation to an attribute's text. Lists (`a b`, `a,b`), lists of
/// `name=value` and, for queues, `[host=value]` overrides are understood.
fn edit_value(op: AttrOp, current: &str, given: &str, overridable: bool) -> Result<String, String> {
    use gantry_common::conf::split_list;
    if op == AttrOp::Replace {
        return Ok(given.to_string());
    }
    let given = given.trim();
    // An override: `[host=value]`.
    if overridable && given.starts_with('[') {
        let mut a = queue::parse_attr(current)?;
        let body = given.trim_start_matches('[').trim_end_matches(']');
        let (host, v) = match body.split_once('=') {
            Some((h, v)) => (h.trim().to_string(), Some(v.trim().to_string())),
            None => (body.trim().to_string(), None),
        };
        let pos = a.overrides.iter().position(|(h, _)| *h == host);
        match (op, pos, v) {
            (AttrOp::Add, Some(_), _) => return Err(format!("\"{host}\" already has a value")),
            (AttrOp::Add | AttrOp::Modify, None, Some(v)) => a.overrides.push((host, v)),
            (AttrOp::Modify, Some(i), Some(v)) => a.overrides[i].1 = v,
            (AttrOp::Delete, Some(i), _) => {
                a.overrides.remove(i);
            }
            (AttrOp::Delete, None, _) => return Err(format!("\"{host}\" has no value of its own")),
            _ => return Err(format!("\"{given}\" is not of the form [host=value]")),
        }
        return Ok(queue::print_attr(&a));
    }
    // A queue's default stays in front of its overrides.
    let (default, overrides) = match current.find(",[") {
        Some(i) if overridable => (&current[..i], &current[i..]),
        _ => (current, ""),
    };
    // A plain value (`-mattr queue slots 4`, `... suspend_thresholds NONE`) replaces the
    // attribute's (default) value.
    if op == AttrOp::Modify && !given.contains('=') {
        return Ok(format!("{given}{overrides}"));
    }
    let mut items: Vec<String> = split_list(default)
        .into_iter()
        .filter(|v| !v.eq_ignore_ascii_case("NONE"))
        .collect();
    let pairs = !items.is_empty() && items.iter().all(|i| i.contains('='));
    let key = |item: &str| item.split('=').next().unwrap_or(item).to_string();
    for g in split_list(given) {
        let pos = items.iter().position(|i| {
            if pairs || g.contains('=') {
                key(i) == key(&g)
            } else {
                *i == g
            }
        });
        match (op, pos) {
            (AttrOp::Add, Some(_)) => {
                return Err(format!("\"{}\" is already in the list", key(&g)))
            }
            (AttrOp::Add, None) => items.push(g.clone()),
            (AttrOp::Modify, Some(i)) if g.contains('=') => items[i] = g.clone(),
            (AttrOp::Modify, None) if g.contains('=') => items.push(g.clone()),
            (AttrOp::Modify, _) => {
                // A plain value: the attribute's (default) value itself.
                return Ok(format!("{given}{overrides}"));
            }
            (AttrOp::Delete, Some(i)) => {
                items.remove(i);
            }
            (AttrOp::Delete, None) => return Err(format!("\"{}\" is not in the list", key(&g))),
            (AttrOp::Replace, _) => {}
        }
    }
    let sep = if items.iter().any(|i| i.contains('=')) {
        ","
    } else {
        " "
    };
    let text = if items.is_empty() {
        "NONE".to_string()
    } else {
        items.join(sep)
    };
    Ok(format!("{text}{overrides}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_edits() {
        use AttrOp::*;
        /// (operation, current value, given value, queue attribute, result)
        type Case<'a> = (AttrOp, &'a str, &'a str, bool, Result<&'a str, &'a str>);
        let cases: &[Case] = &[
            (Add, "NONE", "node1", false, Ok("node1")),
            (Add, "node1", "node2", false, Ok("node1 node2")),
            (
                Add,
                "node1 node2",
                "node2",
                false,
                Err("\"node2\" is already in the list"),
            ),
            (Delete, "node1 node2", "node1", false, Ok("node2")),
            (Delete, "node2", "node2", false, Ok("NONE")),
            (
                Delete,
                "node2",
                "node9",
                false,
                Err("\"node9\" is not in the list"),
            ),
            (Add, "gpu=2", "lic=4", false, Ok("gpu=2,lic=4")),
            (Modify, "gpu=2,lic=4", "gpu=8", false, Ok("gpu=8,lic=4")),
            (Modify, "NONE", "gpu=8", false, Ok("gpu=8")),
            (Delete, "gpu=2,lic=4", "gpu", false, Ok("lic=4")),
            (Delete, "gpu=2,lic=4", "lic=4", false, Ok("gpu=2")),
            (Replace, "gpu=2,lic=4", "NONE", false, Ok("NONE")),
            (Modify, "1,[n1=4]", "2", true, Ok("2,[n1=4]")),
            (Add, "1,[n1=4]", "[n2=8]", true, Ok("1,[n1=4],[n2=8]")),
            (
                Add,
                "1,[n1=4]",
                "[n1=8]",
                true,
                Err("\"n1\" already has a value"),
            ),
            (Modify, "1,[n1=4]", "[n1=8]", true, Ok("1,[n1=8]")),
            (Delete, "1,[n1=4],[n2=8]", "[n1]", true, Ok("1,[n2=8]")),
            (
                Delete,
                "1",
                "[n1]",
                true,
                Err("\"n1\" has no value of its own"),
            ),
            (
                Add,
                "make smp,[n1=mpi]",
                "rr",
                true,
                Ok("make smp rr,[n1=mpi]"),
            ),
            (
                Modify,
                "np_load_avg=1.75",
                "np_load_avg=3",
                true,
                Ok("np_load_avg=3"),
            ),
        ];
        for (op, current, given, q, want) in cases {
            assert_eq!(
                edit_value(*op, current, given, *q),
                want.map(str::to_string).map_err(str::to_string),
                "{op:?} {current} {given}"
            );
        }
    }
}
