//! One cycle: the quota sets as a gate of the admit stage, with what the cycle has
//! worked out already (plans per category, gates per queue instance, denials).

use std::collections::HashMap;
use std::sync::Arc;

use crate::admit::Gate as AdmitGate;
use crate::model::{Demand, Misfit, Part, Snapshot};

use super::*;

/// What a quota plan depends on: owner, groups, project, PE, part, and the requests of
/// resources some rule limits.
pub(crate) type PlanKey = (
    String,
    Vec<String>,
    Option<String>,
    Option<String>,
    Part,
    Vec<(usize, String)>,
);

/// The resource quota sets during one cycle: what running jobs and the jobs placed so
/// far use, and each category's gates per queue instance (they depend only on the
/// category and the instance, so they are worked out once).
#[derive(Debug, Clone)]
pub struct QuotaCycle {
    pub quotas: Arc<Quotas>,
    pub usage: Usage,
    /// (category, part) -> the id and plan of what its jobs meet in every set.
    pub(crate) plans: SmallMap<(usize, Part), (u32, Arc<Plan>)>,
    /// The distinct plans of the cycle, by id.
    pub(crate) distinct: Vec<Arc<Plan>>,
    /// What a plan depends on -> its id.
    pub(crate) keys: HashMap<PlanKey, u32>,
    /// Reused while gates are worked out.
    pub(crate) scratch: Vec<RuleCheck>,
    /// (plan, part, instance) -> the gates there.
    pub(crate) gates: SmallMap<(u32, Part, u32), Arc<[RuleCheck]>>,
    /// ((plan, part, instance), slots) -> the gate that denied such a placement there.
    pub(crate) denied: SmallMap<((u32, Part, u32), u32), RuleCheck>,
    /// Per distinct (queues, hosts) filters of the rules, per instance: 0 not known
    /// yet, 1 they take the instance, 2 they do not.
    pub(crate) takes: Vec<Vec<u8>>,
}

impl QuotaCycle {
    pub fn new(quotas: Arc<Quotas>, usage: Usage) -> QuotaCycle {
        QuotaCycle {
            takes: vec![Vec::new(); quotas.place_count()],
            quotas,
            usage,
            plans: Default::default(),
            distinct: Vec::new(),
            keys: HashMap::new(),
            gates: Default::default(),
            denied: Default::default(),
            scratch: Vec::new(),
        }
    }
}

/// A demand's quota plan and its id among the distinct plans of the cycle: once
/// per category (and part); a parallel job's, for the PE being tried, anew (no id).
fn plan_of(snap: &Snapshot, q: &mut QuotaCycle, d: &Demand) -> (Option<u32>, Arc<Plan>) {
    let cacheable = d.category != 0 && d.granted_pe.is_none();
    if let Some((id, p)) = q.plans.get(&(d.category, d.part)).filter(|_| cacheable) {
        return (Some(*id), p.clone());
    }
    let pe = d
        .granted_pe
        .as_deref()
        .or(d.pe.as_ref().map(|p| p.pattern.as_str()));
    let quotas = q.quotas.clone();
    let build = |q: &mut QuotaCycle| {
        let consumer = Consumer::of(d, pe);
        Arc::new(quotas.plan(&snap.catalog, d, &consumer, &mut q.usage, true))
    };
    if !cacheable {
        return (None, build(q));
    }
    // Categories that differ in nothing the quotas look at (owner, project, PE and
    // the requests of limited resources) share a plan, and what is known about
    // where it is denied.
    let key: PlanKey = (
        d.user.clone(),
        d.groups.clone(),
        d.project.clone(),
        pe.map(str::to_string),
        d.part,
        d.hard
            .iter()
            .filter(|r| quotas.is_limited(r.attr))
            .map(|r| (r.attr, r.text.clone()))
            .collect(),
    );
    let id = match q.keys.get(&key) {
        Some(&id) => id,
        None => {
            let plan = build(q);
            q.distinct.push(plan);
            let id = (q.distinct.len() - 1) as u32;
            q.keys.insert(key, id);
            id
        }
    };
    let plan = q.distinct[id as usize].clone();
    q.plans.insert((d.category, d.part), (id, plan.clone()));
    (Some(id), plan)
}

/// The quota gates a demand meets on an instance: in every set of its plan the
/// effective rule there, and its counters (once per distinct plan and instance).
/// With `check` (slots, master queue) the walk stops at the first gate that does
/// not let such a placement by, which is remembered for the rest of the cycle: what
/// is used only grows (until a placement is given back).
fn checks_on(
    snap: &Snapshot,
    q: &mut QuotaCycle,
    d: &Demand,
    inst: usize,
    check: Option<(u32, bool)>,
) -> Result<Arc<[RuleCheck]>, RuleCheck> {
    let (id, plan) = plan_of(snap, q, d);
    let memo = id.map(|id| (id, d.part, inst as u32));
    if let Some(m) = memo {
        if let Some(g) = q.gates.get(&m) {
            return Ok(g.clone());
        }
        if let Some(g) = check.and_then(|c| q.denied.get(&(m, c.0)).copied()) {
            return Err(g);
        }
    }
    let quotas = q.quotas.clone();
    let i = &snap.instances[inst];
    let host = &snap.hosts[i.host];
    let place = Place {
        queue: &i.queue,
        host: &host.name,
        host_groups: &host.groups,
    };
    let mut ids: Option<[u32; 2]> = None;
    // A scratch buffer: a walk that ends in a denial allocates nothing.
    let mut gates = std::mem::take(&mut q.scratch);
    gates.clear();
    for sp in &plan.sets {
        // Whether a rule's queues and hosts filters take an instance is the same
        // for every job, and for every rule with the same filters: worked out once
        // per cycle and distinct filters. The effective rule is the first of the
        // plan's candidates that takes it.
        let takes_place = |q: &mut QuotaCycle, set: u32, rule: u32| -> bool {
            let id = quotas.place_id(set, rule);
            let table = &mut q.takes[id as usize];
            if table.is_empty() {
                table.resize(snap.instances.len(), 0);
            }
            if table[inst] == 0 {
                table[inst] = if quotas.place_filter_takes(id, &place) {
                    1
                } else {
                    2
                };
            }
            table[inst] == 1
        };
        let mut chosen = None;
        for (k, rp) in sp.rules.iter().enumerate() {
            if rp.anywhere || takes_place(q, sp.set, rp.rule) {
                chosen = Some((k, rp));
                break;
            }
        }
        let Some((k, rp)) = chosen else {
            continue;
        };
        let everywhere = k == 0 && rp.anywhere;
        let start = gates.len();
        match &rp.fixed {
            Some(fixed) => gates.extend(fixed.iter().map(|g| g.everywhere(everywhere))),
            None => {
                let place_ids = *ids.get_or_insert_with(|| {
                    [q.usage.name_id(&i.queue), q.usage.name_id(&host.name)]
                });
                quotas.rule_gates(
                    sp.set,
                    rp,
                    place_ids,
                    everywhere,
                    &mut q.usage,
                    &|attr| snap.host_number(i.host, attr),
                    &mut gates,
                );
            }
        }
        if let Some((n, master)) = check {
            if let Some(&g) = gates[start..]
                .iter()
                .find(|g| !g.allows(&q.usage, n, master))
            {
                if let Some(m) = memo {
                    q.denied.insert((m, n), g);
                }
                q.scratch = gates;
                return Err(g);
            }
        }
    }
    let found: Arc<[RuleCheck]> = Arc::from(gates.as_slice());
    q.scratch = gates;
    let gates = found;
    if let Some(m) = memo {
        q.gates.insert(m, gates.clone());
    }
    Ok(gates)
}

/// How many slots a placement of a demand's part counts, and whether on the job's
/// master queue.
fn amounts(d: &Demand, slots: u32) -> (u32, bool) {
    match d.part {
        Part::Whole => (slots, true),
        Part::PerSlot => (slots, false),
        Part::PerJob => (0, true),
    }
}

/// The resource quota sets are the admit stage's first gate. A job exempt from quotas
/// (one in an advance reservation) passes it and is not counted: the gate reads that
/// from the demand.
impl AdmitGate for QuotaCycle {
    fn name(&self) -> &'static str {
        "resource quota sets"
    }

    fn admit(
        &mut self,
        snap: &Snapshot,
        d: &Demand,
        inst: usize,
        slots: u32,
        detail: bool,
    ) -> Result<(), Misfit> {
        if d.quota_exempt {
            return Ok(());
        }
        let (n, master) = amounts(d, slots);
        let check = match checks_on(snap, self, d, inst, Some((n, master))) {
            Ok(checks) => match checks.iter().find(|c| !c.allows(&self.usage, n, master)) {
                Some(&c) => c,
                None => return Ok(()),
            },
            Err(c) => c,
        };
        Err(if detail {
            Misfit::Quota(self.quotas.denial(&check, &self.usage))
        } else if check.is_everywhere() {
            Misfit::QuotaEverywhere
        } else {
            Misfit::Unexplained
        })
    }

    fn known_refused(&self, d: &Demand, inst: usize, slots: u32) -> Option<Misfit> {
        if d.quota_exempt || d.category == 0 || d.granted_pe.is_some() {
            return None;
        }
        let (id, _) = self.plans.get(&(d.category, d.part))?;
        let (n, _) = amounts(d, slots);
        self.denied
            .contains_key(&((*id, d.part, inst as u32), n))
            .then_some(Misfit::Unexplained)
    }

    fn book(&mut self, snap: &Snapshot, d: &Demand, grants: &[(usize, u32)], sign: f64) {
        if d.quota_exempt {
            return;
        }
        if sign < 0.0 {
            self.denied.clear();
        }
        for &(inst, slots) in grants {
            let (n, master) = amounts(d, slots);
            if let Ok(checks) = checks_on(snap, self, d, inst, None) {
                Quotas::debit(&checks, &mut self.usage, n, master, sign);
            }
        }
    }

    fn forget_bookings(&mut self) {
        self.usage = Usage::default();
        self.denied.clear();
    }

    fn clone_box(&self) -> Box<dyn AdmitGate> {
        Box::new(self.clone())
    }
}
