//! Resource quota sets as `qconf` edits them: `-srqs -srqsl -arqs -Arqs -mrqs -Mrqs
//! -drqs` and `-aattr/-mattr/-dattr/-rattr resource_quota`, with SGE 8.1.9's messages.

use gantry_common::rqs::{self, QuotaSet};
use gantry_proto::{AttrOp, FromMaster, Refusal, RefusalKind};

use super::{invalid, refuse};
use crate::core::state::{Change, ClusterState, Object, Op, Reply};

fn missing(name: &str) -> Refusal {
    refuse(
        RefusalKind::NotFound,
        format!("denied: resource quota set \"{name}\" does not exist"),
    )
}

impl ClusterState {
    /// The sets in SGE's order (the order of their last change).
    pub fn quota_sets_in_order(&self) -> Vec<&QuotaSet> {
        let mut v: Vec<&(u64, QuotaSet)> = self.quota_sets.values().collect();
        v.sort_by_key(|(seq, _)| *seq);
        v.into_iter().map(|(_, s)| s).collect()
    }

    fn next_rqs_seq(&self) -> u64 {
        self.quota_sets
            .values()
            .map(|(seq, _)| *seq)
            .max()
            .map_or(1, |m| m + 1)
    }

    /// Parse and check a file's sets against the complex.
    fn read_quota_sets(&self, text: &str) -> Result<Vec<QuotaSet>, Refusal> {
        let sets = rqs::parse_sets(text).map_err(|e| invalid(e.0))?;
        for s in &sets {
            rqs::check_set(s, &self.input.complexes).map_err(|e| invalid(e.0))?;
        }
        Ok(sets)
    }

    /// A what-if's sets (`qconf -Arqs` text, read and checked as `-Arqs` reads it):
    /// each replaces the set of its name in its place, or is added after the others.
    pub(crate) fn trial_quota_sets(&self, text: &str) -> Result<TrialSets, Refusal> {
        let sets = self.read_quota_sets(text)?;
        let (mut ops, mut replaced, mut added) = (Vec::new(), Vec::new(), Vec::new());
        let mut next = self.next_rqs_seq();
        for s in sets {
            let seq = match self.quota_sets.get(&s.name) {
                Some((seq, _)) => {
                    replaced.push(s.name.clone());
                    *seq
                }
                None => {
                    added.push(s.name.clone());
                    next += 1;
                    next - 1
                }
            };
            ops.push(Op::Put(Object::QuotaSet { seq, set: s }));
        }
        if ops.is_empty() {
            return Err(invalid("resource quota set has no rules"));
        }
        Ok(TrialSets {
            ops,
            replaced,
            added,
        })
    }

    /// `-srqs [names]`: the sets named (all when empty), in SGE's order.
    pub(crate) fn show_quota_sets(&self, names: &str) -> Result<Reply, Refusal> {
        let wanted: Vec<&str> = names.split(',').filter(|n| !n.is_empty()).collect();
        let text: String = self
            .quota_sets_in_order()
            .into_iter()
            .filter(|s| wanted.is_empty() || wanted.contains(&s.name.as_str()))
            .map(rqs::print_set)
            .collect();
        if text.is_empty() {
            return Err(refuse(RefusalKind::NotFound, "No resource quota set found"));
        }
        Ok(Reply::Answer(FromMaster::Text(text)))
    }

    /// `-Arqs`/`-arqs`: new sets. SGE names only the first in its message.
    pub(crate) fn add_quota_sets(&self, who: &str, text: &str) -> Result<Reply, Refusal> {
        let sets = self.read_quota_sets(text)?;
        let mut change = Change::default();
        for (n, (seq, s)) in (self.next_rqs_seq()..).zip(sets).enumerate() {
            if self.quota_sets.contains_key(&s.name) {
                return Err(refuse(
                    RefusalKind::AlreadyExists,
                    format!("resource quota set \"{}\" already exists", s.name),
                ));
            }
            if n == 0 {
                change.messages.push(format!(
                    "{who} added \"{}\" to resource quota set list",
                    s.name
                ));
            }
            change.ops.push(Op::Put(Object::QuotaSet { seq, set: s }));
        }
        if change.ops.is_empty() {
            return Err(invalid("resource quota set has no rules"));
        }
        Ok(Reply::Change(change))
    }

    /// `-Mrqs file name` / `-mrqs name`: changed sets, each of which must exist.
    pub(crate) fn modify_quota_sets(&self, who: &str, text: &str) -> Result<Reply, Refusal> {
        let sets = self.read_quota_sets(text)?;
        let mut change = Change::default();
        for (seq, s) in (self.next_rqs_seq()..).zip(sets) {
            if !self.quota_sets.contains_key(&s.name) {
                return Err(missing(&s.name));
            }
            change.messages.push(format!(
                "{who} modified \"{}\" in resource quota set list",
                s.name
            ));
            change.ops.push(Op::Put(Object::QuotaSet { seq, set: s }));
        }
        Ok(Reply::Change(change))
    }

    /// `-Mrqs file` without a name: every set replaced by those in the file (SGE
    /// reports it all on stderr).
    pub(crate) fn replace_quota_sets(&self, who: &str, text: &str) -> Result<Reply, Refusal> {
        let sets = self.read_quota_sets(text)?;
        let mut change = Change::default();
        for old in self.quota_sets_in_order() {
            change.ops.push(Op::Delete(format!("rqs/{}", old.name)));
            change.messages.push(format!(
                "{who} removed \"{}\" from resource quota set list",
                old.name
            ));
        }
        for (seq, s) in (self.next_rqs_seq()..).zip(sets) {
            change.messages.push(format!(
                "{who} added \"{}\" to resource quota set list",
                s.name
            ));
            change.ops.push(Op::Put(Object::QuotaSet { seq, set: s }));
        }
        Ok(Reply::Change(change))
    }

    /// `-drqs names`: all must exist; SGE reports on stderr.
    pub(crate) fn delete_quota_sets(&self, who: &str, names: &[String]) -> Result<Reply, Refusal> {
        let mut change = Change::default();
        for name in names {
            if !self.quota_sets.contains_key(name) {
                return Err(missing(name));
            }
            change.ops.push(Op::Delete(format!("rqs/{name}")));
            change.messages.push(format!(
                "{who} removed \"{name}\" from resource quota set list"
            ));
        }
        Ok(Reply::Change(change))
    }

    /// `qconf -?attr resource_quota ATTR VALUE set[/rule]`: `enabled` and `description`
    /// of a set; `limit` of one rule, addressed by number (`max_u_slots/1`) or name
    /// (`per_group/testers`).
    pub(crate) fn edit_quota_attribute(
        &self,
        who: &str,
        op: AttrOp,
        attr: &str,
        value: &str,
        targets: &[String],
    ) -> Result<Reply, Refusal> {
        let mut change = Change::default();
        for (seq, target) in (self.next_rqs_seq()..).zip(targets) {
            let (set_name, rule_ref) = match target.split_once('/') {
                Some((s, r)) => (s, Some(r)),
                None => (target.as_str(), None),
            };
            let Some((_, set)) = self.quota_sets.get(set_name) else {
                return Err(missing(set_name));
            };
            let mut set = set.clone();
            match attr {
                "name" => return Err(invalid("qconf: cannot change name")),
                "enabled" => {
                    set.enabled = match value.to_ascii_lowercase().as_str() {
                        "true" | "1" | "yes" | "y" => true,
                        "false" | "0" | "no" | "n" => false,
                        _ => return Err(invalid(format!("error parsing value \"{value}\""))),
                    }
                }
                "description" => {
                    set.description =
                        (!value.is_empty() && value != "NONE").then(|| value.to_string())
                }
                "limit" => {
                    let index = rule_ref.and_then(|r| match r.parse::<usize>() {
                        Ok(n) => n.checked_sub(1).filter(|i| *i < set.rules.len()),
                        Err(_) => set.rules.iter().position(|x| x.name.as_deref() == Some(r)),
                    });
                    let Some(i) = index else {
                        return Err(invalid("no resource quota rule specified for modification"));
                    };
                    let given = rqs::parse_rule(&format!("to {value}"))
                        .map_err(|e| invalid(e.0))?
                        .limits;
                    let limits = &mut set.rules[i].limits;
                    for l in given {
                        let pos = limits.iter().position(|x| x.resource == l.resource);
                        match (op, pos) {
                            (AttrOp::Add, Some(_)) => change.messages.push(format!(
                                "No modification because \"{}\" already exists in \"resource_quota_rules\" of \"resource_quota\"",
                                l.resource
                            )),
                            (AttrOp::Add, None) | (AttrOp::Modify, None) => limits.push(l),
                            (AttrOp::Modify, Some(p)) => limits[p] = l,
                            (AttrOp::Delete, Some(p)) => {
                                limits.remove(p);
                            }
                            (AttrOp::Delete, None) => change.messages.push(format!(
                                "\"{}\" does not exist in \"resource_quota_rules\" of \"resource_quota\"",
                                l.resource
                            )),
                            (AttrOp::Replace, _) => {}
                        }
                    }
                    if op == AttrOp::Replace {
                        *limits = rqs::parse_rule(&format!("to {value}"))
                            .map_err(|e| invalid(e.0))?
                            .limits;
                    }
                }
                _ => {
                    return Err(invalid(format!(
                        "The attribute name (\"{attr}\") and/or value (\"{value}\") is invalid"
                    )))
                }
            }
            rqs::check_set(&set, &self.input.complexes).map_err(|e| invalid(e.0))?;
            change.messages.push(format!(
                "{who} modified \"{}\" in resource quota set list",
                set.name
            ));
            change.ops.push(Op::Put(Object::QuotaSet { seq, set }));
        }
        Ok(Reply::Change(change))
    }
}

/// Quota sets to try: the changes that put them in, and the names they replace and add.
pub(crate) struct TrialSets {
    pub ops: Vec<Op>,
    pub replaced: Vec<String>,
    pub added: Vec<String>,
}
