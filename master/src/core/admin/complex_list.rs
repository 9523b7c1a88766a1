//! The complex: `qconf -mc/-Mc`.

use super::*;

impl ClusterState {
    /// `qconf -mc/-Mc`: the whole list, checked against the complex specification and against what uses it.
    pub(super) fn modify_complex(&self, who: &str, text: &str) -> Result<Reply, Refusal> {
        let list = complex::read_complexes(text).map_err(|e| invalid(e.to_string()))?;
        complex::check_complexes(&list, &self.input.complexes).map_err(invalid)?;
        self.replace_complexes(who, list)
    }

    /// An attribute still used somewhere cannot leave the complex, nor change its type
    /// under the values that use it.
    fn check_complex_refs(&self, list: &[gantry_proto::ComplexAttr]) -> Result<(), Refusal> {
        let hosts = self
            .input
            .exechosts
            .values()
            .chain(self.input.global_host.as_ref())
            .map(|h| (format!("exec host \"{}\"", h.hostname), &h.complex_values));
        let mut uses: Vec<(String, String, String)> = Vec::new();
        for (owner, values) in hosts {
            for (k, v) in values {
                uses.push((k.clone(), v.clone(), format!("complex_values of {owner}")));
            }
        }
        for q in self.input.queues.values() {
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
        for j in self.input.jobs.values() {
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
            .input
            .complexes
            .iter()
            .map(|c| (c.shortcut.as_str(), c))
            .collect();
        let old = complex::by_name(&self.input.complexes);
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

    /// Replace the complex with `list`, already read and checked against the complex
    /// specification's restrictions (`check_complexes`): refused if it removes or
    /// retypes an attribute still in use.
    pub(crate) fn replace_complexes(
        &self,
        who: &str,
        list: Vec<gantry_proto::ComplexAttr>,
    ) -> Result<Reply, Refusal> {
        let messages = complex_changes(who, &self.input.complexes, &list);
        self.check_complex_refs(&list)?;
        Ok(Reply::Change(Change {
            ops: vec![Op::Put(Object::Complexes(list))],
            messages,
        }))
    }

    /// `qconf -Mc` with a list read, checked and indexed off the actor's thread
    /// ([`prepare_complexes`]): the work done there is used while the complex is still
    /// the one it was checked against; otherwise the list is checked again here.
    pub(crate) fn replace_prepared_complexes(
        &self,
        who: &str,
        prepared: PreparedComplexes,
    ) -> Result<Reply, Refusal> {
        if *self.input.complexes != prepared.checked_against {
            // Someone changed the complex in the meantime.
            complex::check_complexes(&prepared.list, &self.input.complexes).map_err(invalid)?;
            return self.replace_complexes(who, prepared.list);
        }
        self.check_complex_refs(&prepared.list)?;
        Ok(Reply::Change(Change {
            ops: vec![
                // The quota book's next rebuild takes this index instead of making it.
                Op::Catalog(std::sync::Arc::new(prepared.catalog)),
                Op::Put(Object::Complexes(prepared.list)),
            ],
            messages: prepared.messages,
        }))
    }
}

/// A complex list read, checked and indexed away from the state, for
/// [`ClusterState::replace_prepared_complexes`].
#[derive(Debug)]
pub struct PreparedComplexes {
    list: Vec<gantry_proto::ComplexAttr>,
    /// What replacing `checked_against` with `list` does.
    messages: Vec<String>,
    /// The catalog of `list`, for the quota book's rebuild.
    catalog: crate::core::sched::Catalog,
    checked_against: Vec<gantry_proto::ComplexAttr>,
}

/// Read a `qconf -Mc` file and check it against `current` (the complex when it was
/// asked for): the part of the change that needs no state, made where it does not hold
/// up the master (a list of 200,000 attributes takes a while).
pub fn prepare_complexes(
    who: &str,
    text: &str,
    current: Vec<gantry_proto::ComplexAttr>,
) -> Result<PreparedComplexes, Refusal> {
    let list = complex::read_complexes(text).map_err(|e| invalid(e.to_string()))?;
    complex::check_complexes(&list, &current).map_err(invalid)?;
    let messages = complex_changes(who, &current, &list);
    let catalog = crate::core::sched::Catalog::new(&list);
    Ok(PreparedComplexes {
        list,
        messages,
        catalog,
        checked_against: current,
    })
}
