//! One cycle: the quota sets as a gate of the admit stage, with what the cycle has
//! worked out already (plans per category, what depends on the queue instance, denials).

use std::collections::HashMap;
use std::sync::Arc;

use crate::decisions::Misfit;
use crate::gate::Gate as AdmitGate;
use crate::model::{Demand, Part, Snapshot};

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

/// A placement as the cycle remembers it: (plan, part, instance) and slots.
type Placement = ((u32, Part, u32), u32);

/// A rule of a set and the members of its expanded filters a consumer is counted under.
type RuleMembers = (u32, u32, [u32; 3]);

/// What a consumer asks of a rule's limits, as [`RulePlan::asks`].
type Asks = Vec<(usize, Ask)>;

/// The resource quota sets during one cycle: what running jobs and the jobs placed so
/// far use, each category's plan, and what depends only on the queue instance (which
/// rules take it, the counters of rules expanded over queues or hosts), worked out once.
#[derive(Debug, Clone)]
pub struct QuotaCycle {
    pub quotas: Arc<Quotas>,
    pub usage: Usage,
    /// By `category * 3 + part`: the id of the plan of what its jobs meet in every set.
    pub(crate) plans: Vec<Option<u32>>,
    /// The distinct plans of the cycle, by id.
    pub(crate) distinct: Vec<Arc<Laid>>,
    /// What a plan depends on -> its id.
    pub(crate) keys: HashMap<PlanKey, u32>,
    /// ((plan, part, instance), slots) -> the gate that denied such a placement there.
    pub(crate) denied: SmallMap<Placement, RuleCheck>,
    /// What depends on the queue instance.
    pub(crate) at: AtPlaces,
    /// The last placement admitted ((plan, part, instance), slots, master queue) and
    /// what it would add to which counters: booking it (as a rule, the next thing the
    /// cycle does) needs no second walk.
    last: Option<(Placement, bool)>,
    last_counters: Vec<(usize, f64)>,
    /// The ways of the cycle's plans through the sets, by class of instance.
    routes: Routes,
}

/// By (plan, class of instance): a plan's way through the sets on the instances of the
/// class, worked out once and walked by every check there. Per set, the candidate
/// whose rule decides there (its index in the plan's candidates, and whether it
/// decides everywhere), left out when it has no gates anywhere (a family's gates,
/// which depend on the host, are looked up as the route is walked).
#[derive(Debug, Clone, Default)]
struct Routes {
    by: HashMap<(u32, u32), (u32, u32), foldhash::fast::RandomState>,
    steps: Vec<(u32, bool)>,
}

/// What a cycle works out about the queue instances it looks at: apart from the plans
/// and the counters, so that a walk can read a plan while it learns places.
#[derive(Debug, Clone, Default)]
pub(crate) struct AtPlaces {
    /// Which rules take each queue instance (kept from the last cycle on a kept
    /// snapshot under the same sets: see [`QuotaCycle::keep_places`]).
    pub(crate) places: Places,
    /// Per instance: the ids of its queue and host names in this cycle's counters
    /// (`[0, 0]`: not looked up yet; names count from 1).
    ids: Vec<[u32; 2]>,
    /// The gates of the rules that depend on the place.
    pub(crate) families: Families,
    /// The cycle places jobs from now only (it makes no reservation for later): a
    /// counter per host that the host's capacity keeps under its limit gets no gate
    /// (see [`Quotas::rule_gates`]). Off for the questions of `qstat -j` and the like,
    /// whose reasons name a quota rule before a full host.
    capacity_bounds: bool,
    /// Over every host, for the families' bounds.
    extremes: HostExtremes,
}

/// Per attribute, over every host of the snapshot (worked out the first time a cycle
/// asks, which holds for the cycle: a cycle whose starts move host values, through
/// load adjustments a dynamic limit reads, has no capacity bounds): the most any
/// host's capacity holds (None: a host has none), and the least and the most of the
/// hosts' values (one not reported counting as [`MISSING_VALUE`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct HostExtremes {
    capacity: HashMap<usize, Option<f64>>,
    values: HashMap<usize, (f64, f64)>,
}

impl HostExtremes {
    fn capacity(&mut self, snap: &Snapshot, attr: usize) -> Option<f64> {
        *self.capacity.entry(attr).or_insert_with(|| {
            (0..snap.hosts.len())
                .map(|h| capacity_on_host(snap, h, attr))
                .try_fold(0.0_f64, |most, c| c.map(|c| most.max(c)))
        })
    }

    fn values(&mut self, snap: &Snapshot, attr: usize) -> (f64, f64) {
        *self.values.entry(attr).or_insert_with(|| {
            (0..snap.hosts.len())
                .map(|h| snap.host_number(h, attr).unwrap_or(MISSING_VALUE))
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                    (lo.min(v), hi.max(v))
                })
        })
    }

    /// The least a limit is on any host (None: not a number).
    fn least_limit(&mut self, snap: &Snapshot, l: &RuleLimit) -> Option<f64> {
        match &l.value {
            LimitValue::Fixed(Value::Num(v)) => Some(*v),
            LimitValue::Fixed(_) => None,
            LimitValue::Dynamic(terms) => Some(
                terms
                    .iter()
                    .map(|&(w, attr)| match attr {
                        None => w,
                        Some(a) => {
                            let (lo, hi) = self.values(snap, a);
                            w * if w >= 0.0 { lo } else { hi }
                        }
                    })
                    .sum(),
            ),
        }
    }
}

/// Can a family's counters (a rule with a counter per host) reach a limit in a cycle
/// that places jobs from now only? Not when on every host what its counter uses
/// already plus all the host can hold stays within the least the limit is anywhere.
fn never_full(
    quotas: &Quotas,
    snap: &Snapshot,
    set: u32,
    rp: &RulePlan,
    usage: &Usage,
    extremes: &mut HostExtremes,
) -> bool {
    let rule = &quotas.sets[set as usize].rules[rp.rule as usize];
    let expanded = |f: &Option<gantry_common::rqs::Filter>| f.as_ref().is_some_and(|f| f.expand);
    if !expanded(&rule.hosts) || expanded(&rule.queues) {
        return false;
    }
    let limits = quotas.limits(set, rp.rule);
    rp.asks.iter().all(|(attr, ask)| {
        let Some(l) = limits.iter().find(|l| l.attr == *attr) else {
            return true; // no gate for it
        };
        if !matches!(ask, Ask::Need(_)) {
            return false;
        }
        let (Some(most), Some(least)) = (
            extremes.capacity(snap, *attr),
            extremes.least_limit(snap, l),
        ) else {
            return false;
        };
        let rest = UsageKey {
            set,
            rule: rp.rule,
            members: [rp.members[0], rp.members[1], rp.members[2], 0, 0],
            attr: l.attr as u32,
        };
        usage.most_on_any_host(&rest) + most <= least
    })
}

/// What the sets make of each queue instance, whatever the consumer: worked out the
/// first time a cycle looks at the instance. It depends only on the sets and on the
/// instances' queue, host and host groups, so a snapshot kept between cycles keeps it
/// (see [`crate::model::Snapshot::quota_places`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Places {
    /// Per instance: worked out yet?
    known: Vec<bool>,
    /// Per instance and distinct (queues, hosts) filters of the rules
    /// (`inst * filters + filter`): do they take the instance?
    takes: Vec<bool>,
    /// Per instance and set (`inst * sets + set`): the rules of the set (of at most
    /// [`MASK_RULES`]) whose queues and hosts filters take the instance, as bits.
    masks: Vec<u64>,
    /// Per host and distinct hosts filter (`host * filters + filter`): 0 not known
    /// yet, 1 the filter takes the host, 2 it does not.
    hosts: Vec<u8>,
    /// By a host's groups: the answers (as in `hosts`) of the hosts filters that name
    /// host groups only, the same for every host in those groups.
    by_groups: HashMap<Vec<String>, Vec<u8>, foldhash::fast::RandomState>,
    /// Per instance: its class, the instances whose `takes` are the same (the rules
    /// take them alike, so a plan goes the same way through the sets on all of them).
    class: Vec<u32>,
    classes: HashMap<Vec<bool>, u32, foldhash::fast::RandomState>,
}

impl Places {
    fn learn(&mut self, snap: &Snapshot, quotas: &Quotas, inst: usize) {
        let (filters, sets) = (quotas.place_count(), quotas.sets.len());
        if self.known.is_empty() {
            let n = snap.instances.len();
            self.known = vec![false; n];
            self.takes = vec![false; n * filters];
            self.masks = vec![0; n * sets];
            self.hosts = vec![0; snap.hosts.len() * quotas.hosts_filter_count()];
            self.class = vec![0; n];
        }
        let i = &snap.instances[inst];
        let host = &snap.hosts[i.host];
        let place = Place {
            queue: &i.queue,
            host: &host.name,
            host_groups: &host.groups,
        };
        let takes = &mut self.takes[inst * filters..(inst + 1) * filters];
        let per_host = quotas.hosts_filter_count();
        let hosts = &mut self.hosts[i.host * per_host..(i.host + 1) * per_host];
        let answer = |hf: usize| match quotas.hosts_filter_takes(hf as u32, &place) {
            true => 1,
            false => 2,
        };
        if !self.by_groups.contains_key(&host.groups) {
            let row = (0..per_host)
                .map(|hf| match quotas.hosts_filter_by_groups(hf as u32) {
                    true => answer(hf),
                    false => 0,
                })
                .collect();
            self.by_groups.insert(host.groups.clone(), row);
        }
        if let Some(row) = self.by_groups.get(&host.groups) {
            for (h, &known) in hosts.iter_mut().zip(row) {
                if *h == 0 {
                    *h = known;
                }
            }
        }
        for (id, t) in takes.iter_mut().enumerate() {
            let hf = quotas.place_hosts(id as u32) as usize;
            if hosts[hf] == 0 {
                hosts[hf] = answer(hf);
            }
            *t = hosts[hf] == 1 && quotas.queues_filter_takes(id as u32, &place);
        }
        quotas.place_masks(takes, &mut self.masks[inst * sets..(inst + 1) * sets]);
        let next = self.classes.len() as u32;
        self.class[inst] = match self.classes.get(&*takes) {
            Some(&class) => class,
            None => {
                self.classes.insert(takes.to_vec(), next);
                next
            }
        };
        self.known[inst] = true;
    }
}

/// The gates of a rule that depends on the place (an expanded queues or hosts filter,
/// a dynamic limit) are kept per *family*, the rule with the members and the asks of a
/// consumer (plans that differ in nothing else share it), and per instance: worked out
/// once per cycle, then read by every plan of the family.
#[derive(Debug, Clone, Default)]
pub(crate) struct Families {
    /// (set, rule, expanded members) -> the asks of each family there and its id.
    index: HashMap<RuleMembers, Vec<(Asks, u32)>>,
    /// By family: its set, the rule plan its gates are built from, and whether they
    /// depend on the queue (an expanded queues filter) or only on the host.
    rules: Vec<(u32, RulePlan, bool)>,
    /// By family and ask: the row of its counters by host (see [`Quotas::rule_gates`]).
    rows: Vec<Vec<u32>>,
    /// By family: no host's capacity lets its counters reach their limits in this
    /// cycle (see [`AtPlaces::capacity_bounds`]), so it has no gates anywhere.
    never_full: Vec<bool>,
    /// Per host, by family: where the family's gates on the host are in `arena` (start
    /// `u32::MAX`: not known yet); per instance for the families that depend on the
    /// queue. Laid out by place, not by family: a check reads the gates of every family
    /// of its plan on one place, next to one another rather than one cache line each.
    by_host: Vec<Vec<(u32, u32)>>,
    by_instance: Vec<Vec<(u32, u32)>>,
    arena: Vec<RuleCheck>,
}

impl Families {
    /// The family of a rule plan that depends on the place. With `bounds` (the cycle
    /// places jobs from now only), whether it can ever be full is worked out with it.
    fn id(
        &mut self,
        quotas: &Quotas,
        snap: &Snapshot,
        set: u32,
        rp: &RulePlan,
        bounds: Option<(&Usage, &mut HostExtremes)>,
    ) -> u32 {
        let same = self.index.entry((set, rp.rule, rp.members)).or_default();
        if let Some((_, id)) = same.iter().find(|(asks, _)| *asks == rp.asks) {
            return *id;
        }
        let id = self.rules.len() as u32;
        same.push((rp.asks.clone(), id));
        let rule = &quotas.sets[set as usize].rules[rp.rule as usize];
        let by_instance = rule.queues.as_ref().is_some_and(|f| f.expand);
        self.rules.push((set, rp.clone(), by_instance));
        self.rows.push(vec![u32::MAX; rp.asks.len()]);
        self.never_full.push(
            bounds.is_some_and(|(usage, extremes)| {
                never_full(quotas, snap, set, rp, usage, extremes)
            }),
        );
        if self.by_host.is_empty() {
            self.by_host = vec![Vec::new(); snap.hosts.len()];
            self.by_instance = vec![Vec::new(); snap.instances.len()];
        }
        id
    }

    /// Where a family's gates on an instance (on its host) are kept in `arena`, if
    /// known; `by_instance`: the family depends on the queue.
    fn gates_at(
        &self,
        family: usize,
        by_instance: bool,
        inst: usize,
        host: usize,
    ) -> Option<(u32, u32)> {
        let row = match by_instance {
            true => self.by_instance.get(inst)?,
            false => self.by_host.get(host)?,
        };
        row.get(family)
            .copied()
            .filter(|(start, _)| *start != u32::MAX)
    }

    /// Keep where a family's gates on an instance are in `arena`.
    fn keep_gates_at(&mut self, snap: &Snapshot, family: usize, inst: usize, at: (u32, u32)) {
        let row = match self.rules[family].2 {
            true => self.by_instance.get_mut(inst),
            false => self.by_host.get_mut(snap.instances[inst].host),
        };
        if let Some(row) = row {
            if row.len() <= family {
                row.resize(self.rules.len().max(family + 1), (u32::MAX, 0));
            }
            row[family] = at;
        }
    }
}

impl QuotaCycle {
    /// Take the places `kept` knows (from the last cycle on the same snapshot) if they
    /// were worked out under the same sets.
    pub(crate) fn keep_places(&mut self, kept: Option<(Arc<Quotas>, Places)>) {
        if let Some((quotas, places)) = kept {
            if Arc::ptr_eq(&quotas, &self.quotas) {
                self.at.places = places;
            }
        }
    }

    /// The cycle places jobs from now only: see [`AtPlaces::capacity_bounds`].
    pub fn bound_by_capacity(&mut self) {
        self.at.capacity_bounds = true;
    }

    /// Forget which plan each category has (the plans themselves stay): categories
    /// are numbered afresh by each pass that asks.
    pub fn forget_categories(&mut self) {
        self.plans.clear();
    }

    /// Room for this many gates of rules that depend on the place.
    pub fn reserve_gates(&mut self, gates: usize) {
        self.at.families.arena.reserve(gates);
    }

    pub fn new(quotas: Arc<Quotas>, usage: Usage) -> QuotaCycle {
        QuotaCycle {
            at: AtPlaces::default(),
            routes: Routes::default(),
            last: None,
            last_counters: Vec::new(),
            quotas,
            usage,
            plans: Vec::new(),
            distinct: Vec::new(),
            keys: HashMap::new(),
            denied: Default::default(),
        }
    }
}

/// A plan laid out for the cycle's walk, each kind of thing in one piece of memory in
/// the order the walk reads it: the sets, their candidate rules, and the gates of
/// those that do not depend on the place.
#[derive(Debug, Default)]
pub(crate) struct Laid {
    steps: Vec<Step>,
    candidates: Vec<Candidate>,
    gates: Vec<RuleCheck>,
    /// Of a step with its rules as bits, by rule from `Step::offsets`: the rule's
    /// position among the step's candidates (read in place of counting bits).
    offsets: Vec<u8>,
}

/// A set of a plan.
#[derive(Debug, Clone, Copy)]
struct Step {
    set: u32,
    /// The candidates' rule numbers as bits (bit r: rule r) when the set has at most
    /// [`MASK_RULES`] rules; 0 when it has more.
    rules: u64,
    /// Its candidates: `candidates[first..first + count]`.
    first: u32,
    count: u32,
    /// Where its rules' positions among its candidates start in `Laid::offsets`.
    offsets: u32,
}

/// A rule of a set that takes the plan's consumer.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    rule: u32,
    /// No queues or hosts filter.
    anywhere: bool,
    /// Its family's gates depend on the queue, not only on the host.
    by_instance: bool,
    /// Its gates: `gates[start..start + len]` when they do not depend on the place
    /// (none for a family that can never be full), else those of `family` there.
    fixed: bool,
    start: u32,
    len: u32,
    family: u32,
}

impl Laid {
    fn out(
        plan: &Plan,
        quotas: &Quotas,
        snap: &Snapshot,
        families: &mut Families,
        mut bounds: Option<(&Usage, &mut HostExtremes)>,
    ) -> Laid {
        let mut laid = Laid::default();
        for sp in &plan.sets {
            let masked = quotas.sets[sp.set as usize].rules.len() <= MASK_RULES;
            let offsets = laid.offsets.len();
            if masked {
                let highest = sp.rules.iter().map(|rp| rp.rule as usize).max();
                laid.offsets
                    .resize(offsets + highest.map_or(0, |r| r + 1), 0);
                for (k, rp) in sp.rules.iter().enumerate() {
                    laid.offsets[offsets + rp.rule as usize] = k as u8;
                }
            }
            laid.steps.push(Step {
                set: sp.set,
                rules: match masked {
                    true => sp.rules.iter().fold(0, |m, rp| m | 1u64 << rp.rule),
                    false => 0,
                },
                first: laid.candidates.len() as u32,
                count: sp.rules.len() as u32,
                offsets: offsets as u32,
            });
            for rp in &sp.rules {
                let start = laid.gates.len() as u32;
                let family = match &rp.fixed {
                    Some(fixed) => {
                        laid.gates.extend_from_slice(fixed);
                        None
                    }
                    None => {
                        let bounds = bounds.as_mut().map(|(u, e)| (*u, &mut **e));
                        let id = families.id(quotas, snap, sp.set, rp, bounds);
                        // A family never full takes its place in the set, with no gates.
                        (!families.never_full[id as usize]).then_some(id)
                    }
                };
                laid.candidates.push(Candidate {
                    rule: rp.rule,
                    anywhere: rp.anywhere,
                    by_instance: family.is_some_and(|f| families.rules[f as usize].2),
                    fixed: family.is_none(),
                    start,
                    len: laid.gates.len() as u32 - start,
                    family: family.unwrap_or(0),
                });
            }
        }
        laid
    }
}

/// A demand's quota plan: one of the distinct plans of the cycle (worked out once per
/// category and part), or for a parallel job, for the PE being tried, one made anew.
enum PlanOf {
    Known(u32),
    Anew(Laid),
}

impl PlanOf {
    fn id(&self) -> Option<u32> {
        match self {
            PlanOf::Known(id) => Some(*id),
            PlanOf::Anew(_) => None,
        }
    }

    fn laid<'a>(&'a self, distinct: &'a [Arc<Laid>]) -> &'a Laid {
        match self {
            PlanOf::Known(id) => &distinct[*id as usize],
            PlanOf::Anew(laid) => laid,
        }
    }
}

fn plan_of(snap: &Snapshot, q: &mut QuotaCycle, d: &Demand) -> PlanOf {
    let cacheable = d.category != 0 && d.granted_pe.is_none();
    if let Some(&id) = q.plan_known(d).filter(|_| cacheable) {
        return PlanOf::Known(id);
    }
    let pe = d
        .granted_pe
        .as_deref()
        .or(d.pe.as_ref().map(|p| p.pattern.as_str()));
    let QuotaCycle {
        quotas, usage, at, ..
    } = q;
    let mut build = || {
        let consumer = Consumer::of(d, pe);
        let plan = quotas.plan(&snap.catalog, d, &consumer, usage, true);
        let bounds = at.capacity_bounds.then_some((&*usage, &mut at.extremes));
        Laid::out(&plan, quotas, snap, &mut at.families, bounds)
    };
    if !cacheable {
        return PlanOf::Anew(build());
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
            let plan = build();
            q.distinct.push(Arc::new(plan));
            let id = (q.distinct.len() - 1) as u32;
            q.keys.insert(key, id);
            id
        }
    };
    let at = plan_slot(d);
    if q.plans.len() <= at {
        q.plans.resize(at + 1, None);
    }
    q.plans[at] = Some(id);
    PlanOf::Known(id)
}

/// The gates of a family on an instance, as a range of its arena: worked out the
/// first time any plan of the family asks.
fn family_gates(
    snap: &Snapshot,
    quotas: &Quotas,
    at: &mut AtPlaces,
    usage: &mut Usage,
    family: usize,
    inst: usize,
) -> (u32, u32) {
    let host = snap.instances[inst].host;
    let Families {
        rules, arena, rows, ..
    } = &mut at.families;
    let start = arena.len();
    let (set, rp, _) = &rules[family];
    if at.ids.is_empty() {
        at.ids = vec![[0, 0]; snap.instances.len()];
    }
    if at.ids[inst] == [0, 0] {
        let i = &snap.instances[inst];
        at.ids[inst] = [
            usage.name_id(&i.queue),
            usage.name_id(&snap.hosts[i.host].name),
        ];
    }
    let growth = |attr| capacity_on_host(snap, host, attr);
    quotas.rule_gates(
        *set,
        rp,
        at.ids[inst],
        false,
        usage,
        &|attr| snap.host_number(host, attr),
        PerHost {
            rows: rows.get_mut(family).map(Vec::as_mut_slice),
            growth: at
                .capacity_bounds
                .then_some(&growth as &dyn Fn(usize) -> Option<f64>),
        },
        arena,
    );
    let range = (start as u32, (arena.len() - start) as u32);
    at.families.keep_gates_at(snap, family, inst, range);
    range
}

/// The most of a consumable (or `slots`) the jobs on a host can hold at once, as its
/// layers configure it: the host's own capacity, or the sum of its queue instances'
/// when every one of them has one (the less of the two when both do). None when
/// nothing on the host bounds it (a capacity only global, a value only reported) or
/// when it is not counted by amount (EXCL).
fn capacity_on_host(snap: &Snapshot, host: usize, attr: usize) -> Option<f64> {
    let a = snap.catalog.attrs.get(attr)?;
    if a.consumable == Consumable::No || a.relop == gantry_proto::Relop::Excl {
        return None;
    }
    let configured = |layer: &crate::model::Layer| match layer.get(attr)?.fixed {
        Some(Value::Num(c)) => Some(c),
        _ => None,
    };
    let h = &snap.hosts[host];
    let on_host = configured(&h.layer);
    let instances: Option<f64> = h
        .instances
        .iter()
        .map(|&i| configured(&snap.instances[i].layer))
        .sum();
    match (on_host, instances) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Every gate a demand (its plan) meets on an instance, in the order of its sets, until
/// `visit` says no: in every set the effective rule there (the first of the plan's
/// candidates that takes the instance) and that rule's gates (its counters, less
/// those its host's capacity keeps under their limits). Returns the gate
/// `visit` said no to. With `routes` and the plan's id, the way through the sets is
/// read from (or kept in) the routes of the instance's class.
#[allow(clippy::too_many_arguments)]
fn walk(
    snap: &Snapshot,
    quotas: &Quotas,
    at: &mut AtPlaces,
    usage: &mut Usage,
    plan: &Laid,
    routes: Option<(&mut Routes, u32)>,
    inst: usize,
    mut visit: impl FnMut(&mut Usage, &RuleCheck) -> bool,
) -> Option<RuleCheck> {
    if !at.places.known.get(inst).copied().unwrap_or(false) {
        at.places.learn(snap, quotas, inst);
    }
    let host = snap.instances[inst].host;
    let mut meet = |at: &mut AtPlaces, usage: &mut Usage, k: usize, everywhere: bool| {
        let c = plan.candidates[k];
        let gates = if c.fixed {
            &plan.gates[c.start as usize..(c.start + c.len) as usize]
        } else {
            let family = c.family as usize;
            let (start, len) = match at.families.gates_at(family, c.by_instance, inst, host) {
                Some(known) => known,
                None => family_gates(snap, quotas, at, usage, family, inst),
            };
            &at.families.arena[start as usize..(start + len) as usize]
        };
        gates
            .iter()
            .find(|g| !visit(usage, g))
            .map(|g| g.everywhere(everywhere))
    };
    let Some((routes, id)) = routes else {
        for step in &plan.steps {
            if let Some((first, k)) = chosen(quotas, &at.places, plan, step, inst) {
                let everywhere = first && plan.candidates[k].anywhere;
                if let Some(g) = meet(at, usage, k, everywhere) {
                    return Some(g);
                }
            }
        }
        return None;
    };
    let class = at.places.class[inst];
    let (start, len) = match routes.by.get(&(id, class)) {
        Some(&known) => known,
        None => {
            let start = routes.steps.len() as u32;
            for step in &plan.steps {
                if let Some((first, k)) = chosen(quotas, &at.places, plan, step, inst) {
                    let c = plan.candidates[k];
                    if !c.fixed || c.len > 0 {
                        routes.steps.push((k as u32, first && c.anywhere));
                    }
                }
            }
            let route = (start, routes.steps.len() as u32 - start);
            routes.by.insert((id, class), route);
            route
        }
    };
    for &(k, everywhere) in &routes.steps[start as usize..(start + len) as usize] {
        if let Some(g) = meet(at, usage, k as usize, everywhere) {
            return Some(g);
        }
    }
    None
}

/// The candidate of a plan's set whose rule decides on an instance (the first whose
/// queues and hosts filters take it), and whether it is the set's first candidate.
fn chosen(
    quotas: &Quotas,
    places: &Places,
    plan: &Laid,
    step: &Step,
    inst: usize,
) -> Option<(bool, usize)> {
    let first = step.first as usize;
    if step.rules != 0 {
        let taken = places.masks[inst * quotas.sets.len() + step.set as usize] & step.rules;
        return (taken != 0).then(|| {
            let k = plan.offsets[step.offsets as usize + taken.trailing_zeros() as usize];
            (k == 0, first + k as usize)
        });
    }
    let filters = quotas.place_count();
    let takes = &places.takes[inst * filters..(inst + 1) * filters];
    plan.candidates[first..first + step.count as usize]
        .iter()
        .position(|c| c.anywhere || takes[quotas.place_id(step.set, c.rule) as usize])
        .map(|k| (k == 0, first + k))
}

/// Where a demand's category and part keep their plan in [`QuotaCycle::plans`].
fn plan_slot(d: &Demand) -> usize {
    d.category * 3 + d.part as usize
}

impl QuotaCycle {
    /// The id of the plan of a demand's category and part, once worked out.
    fn plan_known(&self, d: &Demand) -> Option<&u32> {
        self.plans.get(plan_slot(d))?.as_ref()
    }

    /// The gate that denies a placement of `n` slots on an instance, if one does; a
    /// placement let by is remembered with the counters it would add to.
    fn check(
        &mut self,
        snap: &Snapshot,
        plan: &PlanOf,
        memo: Option<Placement>,
        inst: usize,
        n: u32,
        master: bool,
    ) -> Option<RuleCheck> {
        let mut counters = std::mem::take(&mut self.last_counters);
        counters.clear();
        let QuotaCycle {
            quotas,
            usage,
            at,
            distinct,
            routes,
            ..
        } = self;
        let denied = walk(
            snap,
            quotas,
            at,
            usage,
            plan.laid(distinct),
            plan.id().map(|id| (routes, id)),
            inst,
            |u, g| match g {
                RuleCheck::Counter {
                    slot, need, limit, ..
                } => {
                    let amount = need.amount(n, master);
                    counters.push((*slot, amount));
                    u.at(*slot) + amount <= limit + 1e-9
                }
                RuleCheck::Never { .. } => false,
            },
        );
        self.last = memo.filter(|_| denied.is_none()).map(|m| (m, master));
        self.last_counters = counters;
        denied
    }
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
        let plan = plan_of(snap, self, d);
        // What is used only grows (until a placement is given back): a gate that
        // denied a placement of so many slots there denies it for the rest of the cycle.
        let memo = plan.id().map(|id| ((id, d.part, inst as u32), n));
        let check = match memo.and_then(|m| self.denied.get(&m).copied()) {
            Some(g) => g,
            None => match self.check(snap, &plan, memo, inst, n, master) {
                None => return Ok(()),
                Some(g) => {
                    if let Some(m) = memo {
                        self.denied.insert(m, g);
                    }
                    g
                }
            },
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
        if self.denied.is_empty() || d.quota_exempt || d.category == 0 || d.granted_pe.is_some() {
            return None;
        }
        let &id = self.plan_known(d)?;
        let (n, _) = amounts(d, slots);
        self.denied
            .contains_key(&((id, d.part, inst as u32), n))
            .then_some(Misfit::Unexplained)
    }

    fn book(&mut self, snap: &Snapshot, d: &Demand, grants: &[(usize, u32)], sign: f64) {
        if d.quota_exempt {
            return;
        }
        if sign < 0.0 {
            self.denied.clear();
        }
        let plan = plan_of(snap, self, d);
        let QuotaCycle {
            quotas,
            usage,
            at,
            distinct,
            last,
            last_counters,
            routes,
            ..
        } = self;
        for &(inst, slots) in grants {
            let (n, master) = amounts(d, slots);
            let admitted = plan.id().map(|id| (((id, d.part, inst as u32), n), master));
            if sign > 0.0 && admitted.is_some() && admitted == *last {
                for &(slot, amount) in last_counters.iter() {
                    usage.add(slot, amount);
                }
                continue;
            }
            let routes = plan.id().map(|id| (&mut *routes, id));
            walk(
                snap,
                quotas,
                at,
                usage,
                plan.laid(distinct),
                routes,
                inst,
                |u, g| {
                    g.debit(u, n, master, sign);
                    true
                },
            );
        }
    }

    fn forget_bookings(&mut self) {
        self.usage.zero_all();
        self.denied.clear();
    }

    fn clone_box(&self) -> Box<dyn AdmitGate> {
        Box::new(self.clone())
    }
}
