//! Matching a demand against the snapshot: a job's requests are matched layer by layer,
//! global -> host -> queue, and the first layer that does not satisfy a request decides;
//! then the allocation of slots, parallel environments included, and the debits of what
//! is placed.

use std::collections::HashMap;

use gantry_common::job::wildcard;
use gantry_common::value::{self, Value};
use gantry_proto::Consumable;

use crate::decisions::{Misfit, ProjectMisfit};
use crate::gate::Gates;
use crate::model::*;
use crate::time::Time;

/// Which checks a match makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Everything that does not change while a cycle dispatches jobs.
    Static,
    /// Consumables only, for this many slots on the instance.
    Consumables(u32),
    /// Both (for `qstat -j` and `-w e`).
    All(u32),
}

impl Snapshot {
    /// The most of an offer booked over `[now, until)` (None: from now on; `until` at
    /// or before now: at this instant).
    pub fn used(&self, o: &Offer, until: Option<Time>) -> f64 {
        o.resource.map_or(0.0, |r| {
            self.calendar.peak_over(r, self.now, until).unwrap_or(0.0)
        })
    }

    /// The layers of a queue instance, in matching order.
    pub(crate) fn layers(&self, inst: usize) -> [(Level, &Layer); 3] {
        let i = &self.instances[inst];
        [
            (Level::Global, &self.global),
            (Level::Host, &self.hosts[i.host].layer),
            (Level::Queue, &i.layer),
        ]
    }

    /// A number a dynamic quota limit uses on an instance's host: the host's value
    /// (reported or configured), else the global host's.
    pub(crate) fn host_number(&self, host: usize, attr: usize) -> Option<f64> {
        let a = &self.catalog.attrs[attr];
        [&self.hosts[host].layer, &self.global]
            .into_iter()
            .find_map(
                |layer| match layer.get(attr).and_then(|o| effective(a, o)) {
                    Some((Value::Num(n), _)) => Some(*n),
                    _ => None,
                },
            )
    }

    /// Is the job's owner in one of these usersets (by name or by Unix group)?
    pub(crate) fn in_userset(&self, d: &Demand, lists: &[String]) -> bool {
        lists.iter().any(|l| {
            self.usersets.get(l).is_some_and(|entries| {
                gantry_common::userset::entries_contain(entries, &d.user, &d.groups)
            })
        })
    }

    /// Does one request hold on one layer? `None` if the layer does not define it.
    pub(crate) fn holds_on(
        &self,
        layer: &Layer,
        r: &Request,
        slots: u32,
        check: Check,
        until: Option<Time>,
    ) -> Option<bool> {
        let a = &self.catalog.attrs[r.attr];
        let o = layer.get(r.attr)?;
        let consumable = a.consumable != Consumable::No;
        let wanted = match check {
            Check::Static => !consumable,
            Check::Consumables(_) => consumable,
            Check::All(_) => true,
        };
        if !wanted {
            return Some(true);
        }
        if consumable {
            let Value::Num(amount) = r.value else {
                return Some(true);
            };
            let need = match a.consumable {
                // Per job: once, on the job's master queue (the only one checked).
                Consumable::Job => amount,
                // EXCL: once per host, however many slots.
                _ if a.relop == gantry_proto::Relop::Excl => amount,
                _ => amount * slots as f64,
            };
            let (left, _) = available(o, self.used(o, until))?;
            return Some(need <= left + 1e-9);
        }
        let (offered, _) = effective(a, o)?;
        Some(value::satisfies(a.value_type, a.relop, offered, &r.value))
    }

    /// The reason a request does not hold on a layer, as SGE words it.
    pub(crate) fn request_misfit(
        &self,
        level: Level,
        layer: &Layer,
        r: &Request,
        until: Option<Time>,
        requests: &str,
    ) -> Misfit {
        let a = &self.catalog.attrs[r.attr];
        if a.relop == gantry_proto::Relop::Excl && a.consumable != Consumable::No {
            return Misfit::ExclusiveInUse {
                level,
                name: a.name.clone(),
                requested: requests.to_string(),
            };
        }
        // A queue's own value that could never hold the request: SGE's cluster queue
        // check says so, without a value.
        if level == Level::Queue {
            if let Some(o) = layer.get(r.attr) {
                let never = if a.consumable != Consumable::No {
                    match (available(o, 0.0), &r.value) {
                        (Some((capacity, _)), Value::Num(amount)) => *amount > capacity + 1e-9,
                        _ => false,
                    }
                } else {
                    effective(a, o)
                        .is_some_and(|(v, _)| !value::satisfies(a.value_type, a.relop, v, &r.value))
                };
                // An instance's host name is its own, not the cluster queue's.
                if never && a.name != "slots" && a.name != "hostname" {
                    return Misfit::ClusterQueue {
                        requested: requests.to_string(),
                    };
                }
            }
        }
        let shown = layer.get(r.attr).and_then(|o| {
            if a.consumable != Consumable::No {
                // What is left of a consumable: SGE prints an INT one as a double too
                // (`hc:lic=1.000000`).
                available(o, self.used(o, until)).map(|(left, source)| {
                    let ty = match a.value_type {
                        gantry_proto::ValueType::Int => gantry_proto::ValueType::Double,
                        ty => ty,
                    };
                    (display(ty, &Value::Num(left.max(0.0))), source)
                })
            } else {
                effective(a, o).map(|(v, source)| (display(a.value_type, v), source))
            }
        });
        let (value, source) = shown.unwrap_or_default();
        Misfit::Request {
            level,
            name: a.name.clone(),
            requested: requests.to_string(),
            offered: format!("{}{source}:{}={value}", level.letter(), a.name),
            for_default: r.implicit && a.name != "slots",
        }
    }

    /// Match a job against a queue instance: layer by layer, global -> host -> queue,
    /// stopping at the first layer that does not satisfy a request.
    pub fn matches(
        &self,
        gates: &mut Gates,
        d: &Demand,
        inst: usize,
        check: Check,
    ) -> Result<(), Misfit> {
        self.check(gates, d, inst, check, true)
    }

    /// [`Self::matches`] without building the reason (the scheduling cycle's path).
    pub fn fits(&self, gates: &mut Gates, d: &Demand, inst: usize, check: Check) -> bool {
        self.check(gates, d, inst, check, false).is_ok()
    }

    pub fn check(
        &self,
        gates: &mut Gates,
        d: &Demand,
        inst: usize,
        check: Check,
        detail: bool,
    ) -> Result<(), Misfit> {
        self.check_from(gates, d, inst, check, detail, Level::Global)
    }

    /// [`Self::check`] from a layer on: the layers above `from` (and the host's access
    /// lists, with `from` at the queue) are known to be satisfied.
    pub(crate) fn check_from(
        &self,
        gates: &mut Gates,
        d: &Demand,
        inst: usize,
        check: Check,
        detail: bool,
        from: Level,
    ) -> Result<(), Misfit> {
        let i = &self.instances[inst];
        let host = &self.hosts[i.host];
        let host_checked = from == Level::Queue;
        if let (Check::Consumables(_), Some(u)) = (check, &i.unusable) {
            // Overloaded by the jobs placed earlier in this cycle.
            return Err(Misfit::Unusable(u.clone()));
        }
        if matches!(check, Check::Static | Check::All(_)) {
            if !d.queues.is_empty()
                && !d.queues.iter().any(|q| self.wants(q, inst))
                && !d.masterq.iter().any(|q| self.wants(q, inst))
            {
                return Err(Misfit::NotInQueueList);
            }
            if let Some(u) = &i.unusable {
                return Err(Misfit::Unusable(u.clone()));
            }
            match d.queue_kind {
                QueueKind::Batch if !i.batch => return Err(Misfit::NotBatch),
                QueueKind::Interactive if !i.interactive => return Err(Misfit::NotInteractive),
                QueueKind::Either if !i.batch && !i.interactive => return Err(Misfit::NotBatch),
                _ => {}
            }
            if let Some(per) = &d.pe {
                if !i
                    .pe_list
                    .iter()
                    .any(|p| wildcard(&per.pattern, p) && self.pes.contains_key(p))
                {
                    return Err(if detail {
                        Misfit::NoPe(per.pattern.clone())
                    } else {
                        Misfit::Unexplained
                    });
                }
            }
            if let Some(c) = &d.ckpt {
                if !i.ckpt_list.contains(c) {
                    return Err(if detail {
                        Misfit::NoCkpt(c.clone())
                    } else {
                        Misfit::Unexplained
                    });
                }
            }
            for (n, (allow, deny)) in [
                (&host.user_lists, &host.xuser_lists),
                (&i.user_lists, &i.xuser_lists),
            ]
            .into_iter()
            .enumerate()
            {
                if n == 0 && host_checked {
                    continue;
                }
                if (!allow.is_empty() && !self.in_userset(d, allow)) || self.in_userset(d, deny) {
                    return Err(if detail {
                        Misfit::NoAccess(if n == 0 { Level::Host } else { Level::Queue })
                    } else {
                        Misfit::Unexplained
                    });
                }
            }
            for (n, (allow, deny)) in [
                (&host.projects, &host.xprojects),
                (&i.projects, &i.xprojects),
            ]
            .into_iter()
            .enumerate()
            {
                if n == 0 && host_checked {
                    continue;
                }
                let level = if n == 0 { Level::Host } else { Level::Queue };
                let why = match &d.project {
                    Some(p) if deny.contains(p) => ProjectMisfit::Excluded(p.clone()),
                    Some(p) if !allow.is_empty() && !allow.contains(p) => {
                        ProjectMisfit::NotListed(p.clone())
                    }
                    None if !allow.is_empty() => ProjectMisfit::NoProject,
                    _ => continue,
                };
                return Err(Misfit::Project { level, why });
            }
        }
        let slots = match check {
            Check::Consumables(n) | Check::All(n) => n,
            Check::Static => d.slots,
        };
        // Resource quotas come before the global, host and queue layers; a denial
        // stops there (the reason qstat -j gives). The cycle only needs to know whether
        // all hold, and checks the cheap layers first.
        if matches!(check, Check::All(_)) {
            gates.admit(self, d, inst, slots, detail)?;
        }
        if matches!(check, Check::Consumables(_)) {
            // A category like this one was already turned away here this cycle.
            if let Some(m) = gates.known_refused(d, inst, slots) {
                return Err(m);
            }
        }
        let layers = self.layers(inst);
        // A task placed now holds what it takes until its run time is over.
        let until = d.until(self.now);
        for (level, layer) in layers {
            if (level == Level::Global && from != Level::Global)
                || (level == Level::Host && host_checked)
            {
                continue;
            }
            for r in &d.hard {
                if self.holds_on(layer, r, slots, check, until) == Some(false) {
                    return Err(if detail {
                        self.request_misfit(level, layer, r, until, &d.request_list(&self.catalog))
                    } else {
                        Misfit::Unexplained
                    });
                }
            }
        }
        if matches!(check, Check::Consumables(_)) {
            gates.admit(self, d, inst, slots, detail)?;
        }
        if matches!(check, Check::Static | Check::All(_)) {
            // A request no layer defines cannot be satisfied.
            for r in d.hard.iter().filter(|r| !r.implicit) {
                if !layers.iter().any(|(_, l)| l.get(r.attr).is_some()) {
                    if !detail {
                        return Err(Misfit::Unexplained);
                    }
                    return Err(Misfit::UnknownResource {
                        name: self.catalog.attrs[r.attr].name.clone(),
                        requested: d.request_list(&self.catalog),
                    });
                }
            }
            // A FORCED attribute an instance offers takes only jobs that ask for it.
            for &attr in &self.catalog.forced {
                let offered = layers
                    .iter()
                    .find(|(_, l)| l.get(attr).is_some_and(|o| o.fixed.is_some()));
                if let Some((level, _)) = offered {
                    if !d.hard.iter().any(|r| r.attr == attr && !r.implicit) {
                        return Err(Misfit::Forced {
                            level: *level,
                            name: self.catalog.attrs[attr].name.clone(),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// Would the queue instance, with nothing running in it, satisfy every one of
    /// `requests` (`qstat -l`, `qselect -l`, and whether a pending job could run in the
    /// instances they select, as SGE's qstat asks its scheduler code with the queue
    /// "empty")? Some layer must define each request and every layer that does must
    /// satisfy it, a consumable with its whole capacity.
    pub fn offers_when_empty(&self, requests: &[Request], inst: usize) -> bool {
        let layers = self.layers(inst);
        requests.iter().all(|r| {
            let a = &self.catalog.attrs[r.attr];
            let mut defined = false;
            for (_, layer) in &layers {
                let Some(o) = layer.get(r.attr) else {
                    continue;
                };
                defined = true;
                let holds = match (a.consumable != Consumable::No, &r.value) {
                    (true, Value::Num(amount)) => {
                        available(o, 0.0).is_none_or(|(capacity, _)| *amount <= capacity + 1e-9)
                    }
                    (true, _) => true,
                    (false, wanted) => effective(a, o)
                        .is_some_and(|(v, _)| value::satisfies(a.value_type, a.relop, v, wanted)),
                };
                if !holds {
                    return false;
                }
            }
            defined
        })
    }

    /// What every queue instance offers, as `qstat -F` prints it, by (queue, host):
    /// global values, the host's load values (in report order) and its own values, then
    /// the queue's in SGE's order. Consumables show what is left (`qc:slots=2`).
    pub fn resources(&self) -> HashMap<(String, String), Vec<(String, String)>> {
        const QUEUE_ORDER: &[&str] = &[
            "qname",
            "hostname",
            "slots",
            "tmpdir",
            "seq_no",
            "rerun",
            "calendar",
            "s_rt",
            "h_rt",
            "s_cpu",
            "h_cpu",
            "s_fsize",
            "h_fsize",
            "s_data",
            "h_data",
            "s_stack",
            "h_stack",
            "s_core",
            "h_core",
            "s_rss",
            "h_rss",
            "s_vmem",
            "h_vmem",
            "min_cpu_interval",
        ];
        let shown = |level: Level, attr: usize, o: &Offer| -> Option<(String, String)> {
            let a = &self.catalog.attrs[attr];
            let (v, source) = if a.consumable != Consumable::No && o.fixed.is_some() {
                // What is free at this instant.
                available(o, self.used(o, Some(self.now)))
                    .map(|(left, src)| (Value::Num(left.max(0.0)), src))?
            } else {
                effective(a, o).map(|(v, src)| (v.clone(), src))?
            };
            Some((
                format!("{}{source}:{}", level.letter(), a.name),
                display(a.value_type, &v),
            ))
        };
        let global: Vec<(String, String)> = self
            .global
            .iter()
            .filter_map(|(attr, o)| shown(Level::Global, *attr, o))
            .collect();
        let mut out = HashMap::new();
        for i in &self.instances {
            let host = &self.hosts[i.host];
            let mut list = global.clone();
            // Load values first, in the order the execd reported them, then the host's
            // own values.
            let (loads, own): (Vec<_>, Vec<_>) =
                host.layer.iter().partition(|(_, o)| o.load.is_some());
            for (attr, o) in loads.into_iter().chain(own) {
                list.extend(shown(Level::Host, *attr, o));
            }
            for key in QUEUE_ORDER {
                if let Some(id) = self.catalog.id(key) {
                    if let Some(o) = i.layer.get(id) {
                        list.extend(shown(Level::Queue, id, o));
                    }
                }
            }
            for (attr, o) in i.layer.iter() {
                if !QUEUE_ORDER.contains(&self.catalog.attrs[*attr].name.as_str()) {
                    list.extend(shown(Level::Queue, *attr, o));
                }
            }
            out.insert((i.queue.clone(), host.name.clone()), list);
        }
        out
    }

    /// Does a `-q` entry (`queue`, `queue@host`, `queue@@hostgroup`, wildcards) name
    /// this instance?
    pub(crate) fn wants(&self, pattern: &str, inst: usize) -> bool {
        let i = &self.instances[inst];
        let host = &self.hosts[i.host];
        let groups: Vec<&str> = host.groups.iter().map(String::as_str).collect();
        gantry_common::job::queue_reference_matches(pattern, &i.queue, &host.name, &groups)
    }
}

/// Is this misfit "no slot left in the queue instance"?
pub(crate) fn slots_exhausted(snap: &Snapshot, m: &Misfit) -> bool {
    let _ = snap;
    matches!(m, Misfit::Request { level: Level::Queue, name, .. } if name == "slots")
}

/// Add the load of recently started jobs to a host's adjusted load values: `amount *
/// weight`, divided by the host's processors for the `np_*` values.
pub(crate) fn adjust(
    catalog: &Catalog,
    adjustments: &[(usize, f64, String)],
    layer: &mut Layer,
    reported: &[(usize, f64)],
    weight: f64,
    nproc: f64,
) {
    for (id, amount, _) in adjustments {
        let Some((_, base)) = reported.iter().find(|(r, _)| r == id) else {
            continue;
        };
        let per_proc = if catalog.attrs[*id].name.starts_with("np_") {
            nproc
        } else {
            1.0
        };
        layer.set_load(*id, Value::Num(base + amount * weight / per_proc));
    }
}

/// The thresholds the host's values stand beyond, in the order configured: each as the
/// attribute, its current value and the limit as configured.
fn beyond_thresholds<'h, 't>(
    catalog: &Catalog,
    host: &'h Host,
    thresholds: &'t [(String, String)],
) -> Vec<(usize, &'h Value, &'t str)> {
    let mut out = Vec::new();
    for (name, limit) in thresholds {
        let Some(id) = catalog.id(name) else {
            continue;
        };
        let a = &catalog.attrs[id];
        let (Some(limit_v), Some(o)) = (catalog.parse(id, limit), host.layer.get(id)) else {
            continue;
        };
        let Some((current, _)) = effective(a, o) else {
            continue;
        };
        // Alarm when the value stands in the attribute's relation to the threshold
        // (np_load_avg >= 1.75, mem_free <= 1G).
        if value::satisfies(a.value_type, a.relop, &limit_v, current) {
            out.push((id, current, limit.as_str()));
        }
    }
    out
}

/// Every threshold the host's values stand beyond: (attribute, its value as `qstat -F`
/// shows a load value, the threshold as configured).
pub(crate) fn alarms(
    catalog: &Catalog,
    host: &Host,
    thresholds: &[(String, String)],
) -> Vec<(String, String, String)> {
    beyond_thresholds(catalog, host, thresholds)
        .into_iter()
        .map(|(id, current, limit)| {
            let a = &catalog.attrs[id];
            (
                a.name.clone(),
                display(a.value_type, current),
                limit.to_string(),
            )
        })
        .collect()
}

/// Is a host over one of a queue's `load_thresholds` (`np_load_avg=1.75,mem_free=1G`)?
/// The message says which, as SGE prints it: `np_load_avg=1.888018 (= 0.155518 + 0.50
/// * 6.930000 with nproc=2) >= 1.75`.
pub(crate) fn overload_message(
    catalog: &Catalog,
    host: &Host,
    adjustments: &[(usize, f64, String)],
    thresholds: &[(String, String)],
) -> Option<String> {
    let (id, current, limit) = beyond_thresholds(catalog, host, thresholds)
        .into_iter()
        .next()?;
    let a = &catalog.attrs[id];
    let adjusted = adjustments.iter().find(|(aid, _, _)| *aid == id);
    let base = host.reported.iter().find(|(r, _)| *r == id);
    let how = match (adjusted, base) {
        (Some((_, _, amount)), Some((_, base))) if host.weight > 0.0 => {
            let nproc = if a.name.starts_with("np_") {
                format!(" with nproc={}", host.nproc)
            } else {
                String::new()
            };
            format!(
                "(= {} + {amount} * {}{nproc})",
                value::format_f6(*base),
                value::format_f6(host.weight)
            )
        }
        _ => "(no load adjustment)".to_string(),
    };
    Some(format!(
        "{}={} {how} {} {}",
        a.name,
        display(a.value_type, current),
        value::relop_str(a.relop),
        limit
    ))
}
