//! Configuration objects `qconf` edits as text: the complex (`-sc -mc -Mc`), exec hosts
//! and the global host (`-se -me -Me`), the scheduler configuration (`-ssconf -msconf
//! -Msconf`) and cluster queues (`-sq -sql -aq -Aq -mq -Mq -dq`). Every file is parsed
//! and checked whole against the rest of the configuration before anything changes.

use gantry_common::{complex, exechost, pe, project, queue, schedconf};
use gantry_proto::{AttrOp, ExecHost, FromMaster, ObjectKind, Refusal, RefusalKind};

use crate::core::jobs::TaskState;

mod adminhosts;
mod ckpts;
mod complex_list;
pub use complex_list::{prepare_complexes, PreparedComplexes};
mod exechosts;
mod group_tree;
mod pes;
mod projects;
mod queues;
pub(crate) mod rqs;
mod sched_conf;
mod share_tree;
mod users;
use crate::core::state::{refuse, Change, ClusterState, Object, Op, Reply};

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
        // SGE's qconf's words (the qmaster is not asked).
        messages.push("Complex attribute configuration has not been changed".to_string());
    }
    messages
}

impl ClusterState {
    /// The global host: cluster-wide `complex_values`.
    pub fn global_exechost(&self) -> ExecHost {
        (*self.input.global_host)
            .clone()
            .unwrap_or_else(|| ExecHost::new("global"))
    }

    /// `qconf -Mrqs` with a whole list: the only kind replaced all at once.
    pub(crate) fn replace_objects(
        &self,
        who: &str,
        kind: ObjectKind,
        text: &str,
    ) -> Result<Reply, Refusal> {
        match kind {
            ObjectKind::Rqs => self.replace_quota_sets(who, text),
            _ => Err(invalid(format!("cannot replace all {kind:?} objects"))),
        }
    }

    /// `qconf -sq`, `-sel`, `-sh`, `-spl`, ...: the names of every object of a kind.
    pub(crate) fn show_object_list(&self, kind: ObjectKind) -> Result<Reply, Refusal> {
        Ok(Reply::Answer(FromMaster::Names(match kind {
            ObjectKind::Queue => self.input.queues.keys().cloned().collect(),
            ObjectKind::ExecHost => self.input.exechosts.keys().cloned().collect(),
            ObjectKind::AdminHost => {
                // Sorted by name, as SGE's qconf -sh lists them.
                let mut hosts = self.admin_hosts();
                hosts.sort();
                hosts
            }
            ObjectKind::Pe => self.input.pes.keys().cloned().collect(),
            ObjectKind::Ckpt => self.ckpts.keys().cloned().collect(),
            ObjectKind::Project => self.input.projects.keys().cloned().collect(),
            ObjectKind::Rqs => self.quota_sets.keys().cloned().collect(),
            ObjectKind::User => self.user_names(),
            _ => return Err(invalid(format!("{kind:?} objects have no list"))),
        })))
    }

    /// `qconf -aattr/-mattr/-dattr/-rattr` on any object: quota sets edit their rules,
    /// the others their attribute.
    pub(crate) fn edit_object_attribute(
        &self,
        who: &str,
        op: AttrOp,
        object: &str,
        attr: &str,
        value: &str,
        targets: &[String],
    ) -> Result<Reply, Refusal> {
        if object == "resource_quota" {
            self.edit_quota_attribute(who, op, attr, value, targets)
        } else {
            self.edit_attribute(who, op, object, attr, value, targets)
        }
    }

    pub(crate) fn show_object(&self, kind: ObjectKind, name: &str) -> Result<Reply, Refusal> {
        let text = match kind {
            ObjectKind::Rqs => return self.show_quota_sets(name),
            ObjectKind::Complex => complex::print_complexes(&self.input.complexes),
            ObjectKind::GroupTree => self.show_group_tree(),
            ObjectKind::User => self.show_user(name)?,
            ObjectKind::ShareTree => self.show_share_tree(name)?,
            ObjectKind::SchedConf => schedconf::print_schedconf(
                (*self.input.sched)
                    .as_ref()
                    .unwrap_or(&schedconf::default_schedconf()),
            ),
            ObjectKind::Queue => {
                if name.is_empty() || name == "template" {
                    queue::print_queue(&queue::new_queue("template", "NONE"))
                } else {
                    let q = self.input.queues.get(name).ok_or_else(|| {
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
            // SGE's words for an object `qconf -s*` does not find.
            ObjectKind::Pe => pe::print_pe(self.input.pes.get(name).ok_or_else(|| {
                refuse(
                    RefusalKind::NotFound,
                    format!("{name} is not a parallel environment"),
                )
            })?),
            ObjectKind::Ckpt if name.is_empty() || name == "template" => {
                gantry_common::ckpt::print_ckpt(&gantry_common::ckpt::Ckpt::new("template"))
            }
            ObjectKind::Ckpt => {
                gantry_common::ckpt::print_ckpt(self.ckpts.get(name).ok_or_else(|| {
                    refuse(
                        RefusalKind::NotFound,
                        format!("{name} is not a checkpointing interface definition"),
                    )
                })?)
            }
            ObjectKind::Project if name.is_empty() || name == "template" => {
                project::print_project(&project::Project::new("template"))
            }
            ObjectKind::Project => {
                project::print_project(self.input.projects.get(name).ok_or_else(|| {
                    refuse(
                        RefusalKind::NotFound,
                        format!("{name} is not known as a project"),
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

    pub(crate) fn add_object(
        &self,
        who: &str,
        kind: ObjectKind,
        text: &str,
    ) -> Result<Reply, Refusal> {
        match kind {
            ObjectKind::Rqs => self.add_quota_sets(who, text),
            ObjectKind::AdminHost => self.add_admin_hosts(text),
            ObjectKind::Project => self.add_project(who, text),
            ObjectKind::Pe => self.add_pe(who, text),
            ObjectKind::Ckpt => self.add_ckpt(who, text),
            ObjectKind::Queue => self.add_queue(who, text),
            ObjectKind::User => self.add_user(who, text),
            ObjectKind::ShareTree => self.replace_share_tree(text),
            _ => Err(invalid(format!("cannot add {kind:?} objects"))),
        }
    }

    pub(crate) fn modify_object(
        &self,
        who: &str,
        kind: ObjectKind,
        text: &str,
    ) -> Result<Reply, Refusal> {
        match kind {
            ObjectKind::Rqs => self.modify_quota_sets(who, text),
            ObjectKind::Project => self.modify_project(who, text),
            ObjectKind::Pe => self.modify_pe(who, text),
            ObjectKind::Ckpt => self.modify_ckpt(who, text),
            ObjectKind::Complex => self.modify_complex(who, text),
            ObjectKind::GroupTree => self.modify_group_tree(who, text),
            ObjectKind::SchedConf => self.modify_schedconf(who, text),
            ObjectKind::ExecHost => self.modify_exec_host(who, text),
            ObjectKind::Queue => self.modify_queue(who, text),
            ObjectKind::User => self.modify_user(who, text),
            ObjectKind::ShareTree => self.replace_share_tree(text),
            ObjectKind::AdminHost => Err(invalid(
                "administrative hosts are added and deleted, not modified",
            )),
        }
    }

    pub(crate) fn delete_objects(
        &self,
        who: &str,
        kind: ObjectKind,
        names: &[String],
    ) -> Result<Reply, Refusal> {
        match kind {
            ObjectKind::Rqs => self.delete_quota_sets(who, names),
            ObjectKind::AdminHost => self.delete_admin_hosts(who, names),
            ObjectKind::Project => self.delete_projects(who, names),
            ObjectKind::Pe => self.delete_pes(who, names),
            ObjectKind::Ckpt => self.delete_ckpts(who, names),
            ObjectKind::Queue => self.delete_queues(who, names),
            ObjectKind::GroupTree => self.delete_group_tree(who),
            ObjectKind::User => self.delete_users(who, names),
            ObjectKind::ShareTree => self.delete_share_tree(who),
            _ => Err(invalid(format!("cannot delete {kind:?} objects"))),
        }
    }

    /// `qconf -aattr/-mattr/-dattr/-rattr`: change one attribute of several objects,
    /// all or nothing. Each object is printed, the attribute edited as text and the
    /// object read and checked again, exactly as a `-M` file would be.
    pub(crate) fn edit_attribute(
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
        // What SGE's qconf finds before it asks the qmaster (it parses the attribute
        // as a file of the object type): an unknown attribute, a value its parser
        // does not take, NONE for a list with -mattr.
        let bad_attribute = || {
            invalid(format!(
                "The attribute name (\"{attr}\") and/or value (\"{value}\") is invalid"
            ))
        };
        if kind == Some(ObjectKind::Queue) {
            if queue::new_queue("all.q", "NONE").attr(attr).is_none() {
                return Err(bad_attribute());
            }
            if let Some(lines) = queue::sge_value_error(attr, value) {
                return Err(invalid(lines.join("\n")));
            }
            if op == AttrOp::Modify
                && value.trim().eq_ignore_ascii_case("NONE")
                && queue::LIST_ATTRIBUTES.contains(&attr)
            {
                return Err(invalid(
                    "\"NONE\" is not a valid list attribute value for -mattr.  Try using -rattr instead.",
                ));
            }
        }
        if targets.is_empty() {
            return Err(invalid("error: no object to change given"));
        }
        let mut all = Change::default();
        for target in targets {
            // A queue instance (`all.q@vm`, `all.q@@group`): the host's override of the
            // cluster queue's attribute, as SGE edits it.
            let (target, instance_host) = match (kind, target.split_once('@')) {
                (Some(ObjectKind::Queue), Some((q, h))) if !q.is_empty() && !h.is_empty() => {
                    let h = if h.starts_with('@') {
                        h.to_string()
                    } else {
                        gantry_common::exechost::canonical_hostname(h)
                    };
                    (q.to_string(), Some(h))
                }
                _ => (target.clone(), None),
            };
            let target = &target;
            let text = match kind {
                Some(ObjectKind::Queue) => self.input.queues.get(target).map(queue::print_queue),
                Some(ObjectKind::Pe) => self.input.pes.get(target).map(pe::print_pe),
                Some(ObjectKind::Project) => {
                    self.input.projects.get(target).map(project::print_project)
                }
                Some(_) if target == "global" => {
                    Some(exechost::print_exechost(&self.global_exechost()))
                }
                Some(_) => self
                    .input
                    .exechosts
                    .get(target)
                    .map(exechost::print_exechost),
                None => self
                    .input
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
                return Err(bad_attribute());
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
            // SGE's qconf says so when `-mattr` adds `name=value` to a list that is NONE.
            let mut not_there: Vec<String> = Vec::new();
            // Attributes whose NONE is a value of their own, not an empty list.
            const SCALARS: [&str; 10] = [
                "prolog",
                "epilog",
                "starter_method",
                "suspend_method",
                "resume_method",
                "terminate_method",
                "calendar",
                "start_proc_args",
                "stop_proc_args",
                "qsort_args",
            ];
            let empty_list_note = (op == AttrOp::Modify
                && !SCALARS.contains(&attr)
                && entry.value.eq_ignore_ascii_case("NONE"))
            .then(|| {
                // SGE names a queue by its name here, every other object by its type.
                let owner = if kind == Some(ObjectKind::Queue) {
                    target.as_str()
                } else {
                    object
                };
                format!("\"{attr}\" of \"{owner}\" is empty - Adding new element(s).")
            });
            entry.value = match &instance_host {
                Some(host) => {
                    let mut a = queue::parse_attr(&entry.value)
                        .map_err(|e| invalid(format!("{e} in {described}")))?;
                    let current = queue::value_on_host(&a, host, &[]).to_string();
                    let edited = edit_value(op, &current, value, false)
                        .map_err(|e| invalid(format!("{e} in {described}")))?;
                    match a.overrides.iter_mut().find(|(h, _)| h == host) {
                        Some(o) => o.1 = edited,
                        None => a.overrides.push((host.clone(), edited)),
                    }
                    queue::print_attr(&a)
                }
                None if op == AttrOp::Delete && !value.trim_start().starts_with('[') => {
                    // SGE deletes what is in the list and says which are not, and
                    // still modifies the object.
                    let default = match entry.value.find(",[") {
                        Some(i) if kind == Some(ObjectKind::Queue) => &entry.value[..i],
                        _ => entry.value.as_str(),
                    };
                    let present = gantry_common::conf::split_list(default);
                    let name_of = |item: &str| item.split('=').next().unwrap_or(item).to_string();
                    let (there, missing): (Vec<String>, Vec<String>) =
                        gantry_common::conf::split_list(value)
                            .into_iter()
                            .partition(|g| {
                                present.iter().any(|p| *p == *g || name_of(p) == name_of(g))
                            });
                    for m in missing {
                        not_there.push(format!(
                            "\"{}\" does not exist in \"{attr}\" of \"{target}\"",
                            name_of(&m)
                        ));
                    }
                    if there.is_empty() {
                        entry.value.clone()
                    } else {
                        edit_value(
                            op,
                            &entry.value,
                            &there.join(","),
                            kind == Some(ObjectKind::Queue),
                        )
                        .map_err(|e| invalid(format!("{e} in {described}")))?
                    }
                }
                None => edit_value(op, &entry.value, value, kind == Some(ObjectKind::Queue))
                    .map_err(|e| invalid(format!("{e} in {described}")))?,
            };
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
                all.messages.extend(empty_list_note);
                all.messages.extend(not_there);
                all.messages.extend(c.messages);
            }
        }
        Ok(Reply::Change(all))
    }

    /// Usersets named in an attribute must exist.
    fn check_sets(&self, sets: &[String], key: &str, owner: &str) -> Result<(), Refusal> {
        match sets.iter().find(|s| !self.input.usersets.contains_key(*s)) {
            Some(set) => Err(invalid(format!(
                "userset \"{set}\" in {key} of {owner} does not exist"
            ))),
            None => Ok(()),
        }
    }

    /// Projects named in an attribute must exist.
    fn check_projects(&self, projects: &[String], key: &str, owner: &str) -> Result<(), Refusal> {
        match projects
            .iter()
            .find(|p| !self.input.projects.contains_key(*p))
        {
            Some(p) => Err(invalid(format!(
                "project \"{p}\" in {key} of {owner} does not exist"
            ))),
            None => Ok(()),
        }
    }
}

/// Why a `qconf -?attr` operation does not apply to an attribute's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum EditRefused {
    #[error("\"{0}\" already has a value")]
    HasAValue(String),
    #[error("\"{0}\" has no value of its own")]
    NoValueOfItsOwn(String),
    #[error("\"{0}\" is not of the form [host=value]")]
    NotAnOverride(String),
    #[error("\"{0}\" is already in the list")]
    InTheList(String),
    #[error("\"{0}\" is not in the list")]
    NotInTheList(String),
    /// The attribute's value as it stands does not read (`queue::parse_attr`'s words).
    #[error("{0}")]
    Attribute(String),
}

/// Apply a `qconf -?attr` operation to an attribute's text. Lists (`a b`, `a,b`), lists of
/// `name=value` and, for queues, `[host=value]` overrides are understood.
fn edit_value(
    op: AttrOp,
    current: &str,
    given: &str,
    overridable: bool,
) -> Result<String, EditRefused> {
    use gantry_common::conf::split_list;
    if op == AttrOp::Replace {
        return Ok(given.to_string());
    }
    let given = given.trim();
    // An override: `[host=value]`.
    if overridable && given.starts_with('[') {
        let mut a = queue::parse_attr(current).map_err(EditRefused::Attribute)?;
        let body = given.trim_start_matches('[').trim_end_matches(']');
        let (host, v) = match body.split_once('=') {
            Some((h, v)) => (h.trim().to_string(), Some(v.trim().to_string())),
            None => (body.trim().to_string(), None),
        };
        let pos = a.overrides.iter().position(|(h, _)| *h == host);
        match (op, pos, v) {
            (AttrOp::Add, Some(_), _) => return Err(EditRefused::HasAValue(host)),
            (AttrOp::Add | AttrOp::Modify, None, Some(v)) => a.overrides.push((host, v)),
            (AttrOp::Modify, Some(i), Some(v)) => a.overrides[i].1 = v,
            (AttrOp::Delete, Some(i), _) => {
                a.overrides.remove(i);
            }
            (AttrOp::Delete, None, _) => return Err(EditRefused::NoValueOfItsOwn(host)),
            _ => return Err(EditRefused::NotAnOverride(given.to_string())),
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
            (AttrOp::Add, Some(_)) => return Err(EditRefused::InTheList(key(&g))),
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
            (AttrOp::Delete, None) => return Err(EditRefused::NotInTheList(key(&g))),
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
                edit_value(*op, current, given, *q).map_err(|e| e.to_string()),
                want.map(str::to_string).map_err(str::to_string),
                "{op:?} {current} {given}"
            );
        }
    }
}
