//! Resource quota sets as the scheduler applies them (`sge_resource_quota(5)`), pure.
//!
//! Every enabled set applies to every job: inside a set the first rule whose filters
//! match the job *and* the queue instance decides (firewall style), so a set yields at
//! most one effective rule per request; across sets the most restrictive wins. A plain
//! filter list limits its members together, an expanded one (`{...}`) each member on its
//! own: the members a job is counted under form the rule's *consumer key*, written as
//! SGE writes it in its messages, `user/project/pe/queue/host/` with only the expanded
//! filters filled in (`user1/////`, `////vm/`).
//!
//! Usage is kept per (set, rule, consumer key, resource) in a [`Usage`] table that the
//! cluster state updates as tasks start and end; the scheduler copies it once per cycle
//! and debits what it places. A job exempt from quotas (one in an advance reservation)
//! is neither limited nor counted.

use std::collections::HashMap;

use gantry_common::rqs::{parse_dynamic, Filter, QuotaSet};
use gantry_common::userset::entries_contain;
use gantry_common::value::{self, Value};
use gantry_proto::{Consumable, ValueType};

use gantry_common::job::wildcard;

use crate::model::{display, Catalog, Demand};

mod book;
mod gate;
mod usage;

pub use crate::decisions::Denial;
pub use book::QuotaBook;
pub(crate) use gate::Places;
pub use gate::QuotaCycle;
pub use usage::{SmallHasher, SmallMap, Usage, UsageKey};

/// The value a dynamic limit uses for a complex its host does not report or define.
/// The man page: "a large value is used for it to suggest an overloaded condition";
/// SGE's own constant for an unknown load value is 9999.
pub const MISSING_VALUE: f64 = 9999.0;

/// Who asks, as a rule's job-side filters see it.
#[derive(Debug, Clone, Copy)]
pub struct Consumer<'a> {
    pub user: &'a str,
    /// The owner's Unix groups (`@group` entries of usersets).
    pub groups: &'a [String],
    pub project: Option<&'a str>,
    /// The parallel environment granted (or being tried).
    pub pe: Option<&'a str>,
}

impl<'a> Consumer<'a> {
    /// No one: for the place filters, which look at no consumer.
    const NONE: Consumer<'static> = Consumer {
        user: "",
        groups: &[],
        project: None,
        pe: None,
    };

    pub fn of(d: &'a Demand, pe: Option<&'a str>) -> Consumer<'a> {
        Consumer {
            user: &d.user,
            groups: &d.groups,
            project: d.project.as_deref(),
            pe,
        }
    }
}

/// Where: a queue instance.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    pub queue: &'a str,
    pub host: &'a str,
    /// The host groups the host belongs to (nested groups resolved), with their `@`.
    pub host_groups: &'a [String],
}

/// A limit's value, resolved against the complex.
#[derive(Debug, Clone)]
pub enum LimitValue {
    Fixed(Value),
    /// `{w|$complex[*w]}[{+|-}...]`: (weight, attribute or none for a constant).
    Dynamic(Vec<(f64, Option<usize>)>),
}

/// One limit of a rule: the attribute, its value, its type, and the text as written.
#[derive(Debug, Clone)]
pub struct RuleLimit {
    pub attr: usize,
    pub value: LimitValue,
    pub text: String,
}

/// The sets, compiled against the complex for one configuration.
#[derive(Debug, Clone, Default)]
pub struct Quotas {
    /// Every set, enabled or not, in SGE's order (usage is kept for all of them so that
    /// enabling a set finds it exact).
    pub sets: Vec<QuotaSet>,
    /// `[set][rule]`: the rule's limits.
    limits: Vec<Vec<Vec<RuleLimit>>>,
    /// Userset name -> entries (`@acl` in `users` filters).
    usersets: HashMap<String, Vec<String>>,
    /// Every attribute's type and relation, by attribute.
    value_types: Vec<(ValueType, gantry_proto::Relop)>,
    /// `[set][rule]`: the id of the rule's (queues, hosts) filters among the distinct
    /// ones of all sets (sets often repeat them: the same host groups and queues).
    place_ids: Vec<Vec<u32>>,
    /// The distinct (queues, hosts) filters, by id.
    places: Vec<(Option<Filter>, Option<Filter>)>,
    /// The distinct hosts filters of the rules, by id (a host's answer is the same for
    /// all its queue instances), told apart by their items only: `{@g}` takes the
    /// hosts `@g` does.
    hosts_filters: Vec<Option<Filter>>,
    /// By hosts filter: does it name host groups only (its answer is the same for
    /// hosts in the same groups)?
    by_groups: Vec<bool>,
    /// By (queues, hosts) filters id: the id of their hosts filter.
    place_hosts: Vec<u32>,
    /// By set (of at most [`MASK_RULES`] rules): its rules without a queues or hosts
    /// filter, as bits.
    anywhere: Vec<u64>,
    /// By distinct (queues, hosts) filters: the (set, rule) of the rules with them, in
    /// sets of at most [`MASK_RULES`] rules, those without either filter left out.
    filter_rules: Vec<Vec<(u32, u32)>>,
    /// By attribute: does some rule limit it?
    limited: Vec<bool>,
}

/// How much of a limited resource a job needs where it is placed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Need {
    /// `slots`: the slots placed.
    Slots,
    /// A per-slot consumable: this much per slot.
    PerSlot(f64),
    /// A per-job consumable (`JOB`): this much, on the job's master queue only.
    PerJob(f64),
}

impl Need {
    pub fn amount(self, slots: u32, master: bool) -> f64 {
        match self {
            Need::Slots => slots as f64,
            Need::PerSlot(a) => a * slots as f64,
            Need::PerJob(a) if master => a,
            Need::PerJob(_) => 0.0,
        }
    }
}

/// What a caller meeting a rule with a counter per host on many hosts gives
/// [`Quotas::rule_gates`] (nothing: every counter looked up and kept).
#[derive(Default)]
pub struct PerHost<'a> {
    /// By ask: the rows of its counters by host ([`Usage::host_row`], `u32::MAX` until
    /// looked up).
    pub rows: Option<&'a mut [u32]>,
    /// By attribute: the most the jobs placed from now on can add to a counter on the
    /// host (its capacity there).
    pub growth: Option<&'a dyn Fn(usize) -> Option<f64>>,
}

/// What one effective rule asks of a placement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RuleCheck {
    /// Usage counter `slot` plus the need must stay within `limit`.
    Counter {
        set: u32,
        rule: u32,
        slot: usize,
        need: Need,
        limit: f64,
        /// The rule decides for the consumer on every queue instance, under one
        /// counter: once it is full, the consumer can run nowhere this cycle.
        everywhere: bool,
    },
    /// A fixed, non-consumable limit the job's request does not satisfy
    /// (`arch=lx-amd64` against `-l arch=sol-sparc64`): never here.
    Never { set: u32, rule: u32, key: UsageKey },
}

/// What a consumer's request asks of one limit.
#[derive(Debug, Clone, PartialEq)]
pub enum Ask {
    /// A consumable (or `slots`) to count.
    Need(Need),
    /// A fixed attribute the job requests: the limit must satisfy the request.
    Satisfy(Value),
}

/// A rule of a set whose job-side filters take a consumer.
#[derive(Debug, Clone, PartialEq)]
pub struct RulePlan {
    pub rule: u32,
    /// The consumer's user, project and PE ids where those filters are expanded.
    pub members: [u32; 3],
    /// (attribute, what the consumer asks of the rule's limit on it)
    pub asks: Vec<(usize, Ask)>,
    /// No queues or hosts filter: the rule takes the consumer everywhere.
    pub anywhere: bool,
    /// The gates when they do not depend on the place (no expanded queues or hosts
    /// filter, no dynamic limit): worked out once.
    pub fixed: Option<Vec<RuleCheck>>,
}

/// The rules of one set that may decide for a consumer.
#[derive(Debug, Clone, PartialEq)]
pub struct SetPlan {
    pub set: u32,
    pub rules: Vec<RulePlan>,
}

/// Sets of fewer rules than this are matched against a queue instance by bit masks.
pub const MASK_RULES: usize = 63;

/// A consumer's [`Quotas::plan`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub sets: Vec<SetPlan>,
}

impl RuleCheck {
    /// The gate, saying whether its rule decides everywhere.
    pub fn everywhere(mut self, yes: bool) -> RuleCheck {
        if let RuleCheck::Counter { everywhere, .. } = &mut self {
            *everywhere = yes;
        }
        self
    }

    /// Does the gate let a placement of `slots` slots (on the master queue or not) by?
    pub fn allows(&self, usage: &Usage, slots: u32, master: bool) -> bool {
        match self {
            RuleCheck::Counter {
                slot, need, limit, ..
            } => usage.at(*slot) + need.amount(slots, master) <= limit + 1e-9,
            RuleCheck::Never { .. } => false,
        }
    }

    /// Debit (or with `sign` -1 credit) a placement on the gate's counter.
    pub fn debit(&self, usage: &mut Usage, slots: u32, master: bool, sign: f64) {
        if let RuleCheck::Counter { slot, need, .. } = self {
            usage.add(*slot, sign * need.amount(slots, master));
        }
    }

    pub fn is_everywhere(&self) -> bool {
        matches!(
            self,
            RuleCheck::Counter {
                everywhere: true,
                ..
            }
        )
    }
}

/// The filters of a rule, in key order: users, projects, pes, queues, hosts.
pub(crate) fn filters(r: &gantry_common::rqs::Rule) -> [Option<&Filter>; 5] {
    [
        r.users.as_ref(),
        r.projects.as_ref(),
        r.pes.as_ref(),
        r.queues.as_ref(),
        r.hosts.as_ref(),
    ]
}

impl Quotas {
    /// Compile the sets (in SGE's order) against the complex. A limit the complex no
    /// longer understands is left out (the complex refuses to lose an attribute a set
    /// uses, so this is only a safeguard).
    pub fn new(
        sets: Vec<QuotaSet>,
        catalog: &Catalog,
        usersets: HashMap<String, Vec<String>>,
    ) -> Quotas {
        let limits: Vec<Vec<Vec<RuleLimit>>> = sets
            .iter()
            .map(|s| {
                s.rules
                    .iter()
                    .map(|r| {
                        r.limits
                            .iter()
                            .filter_map(|l| {
                                let attr = catalog.id(&l.resource)?;
                                let value = if l.is_dynamic() {
                                    let terms = parse_dynamic(&l.value)?;
                                    LimitValue::Dynamic(
                                        terms
                                            .into_iter()
                                            .map(|(w, c)| (w, c.and_then(|c| catalog.id(&c))))
                                            .collect(),
                                    )
                                } else {
                                    LimitValue::Fixed(catalog.parse(attr, &l.value)?)
                                };
                                Some(RuleLimit {
                                    attr,
                                    value,
                                    text: l.value.clone(),
                                })
                            })
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let mut places: Vec<(Option<Filter>, Option<Filter>)> = Vec::new();
        let place_ids: Vec<Vec<u32>> = sets
            .iter()
            .map(|s| {
                s.rules
                    .iter()
                    .map(|r| {
                        let pair = (r.queues.clone(), r.hosts.clone());
                        let id = match places.iter().position(|p| *p == pair) {
                            Some(n) => n,
                            None => {
                                places.push(pair);
                                places.len() - 1
                            }
                        };
                        id as u32
                    })
                    .collect()
            })
            .collect();
        let mut limited = vec![false; catalog.attrs.len()];
        for l in limits.iter().flatten().flatten() {
            limited[l.attr] = true;
        }
        let mut anywhere = vec![0u64; sets.len()];
        let mut filter_rules = vec![Vec::new(); places.len()];
        for (set, s) in sets.iter().enumerate() {
            if s.rules.len() > MASK_RULES {
                continue;
            }
            for (rule, r) in s.rules.iter().enumerate() {
                if r.queues.is_none() && r.hosts.is_none() {
                    anywhere[set] |= 1 << rule;
                } else {
                    filter_rules[place_ids[set][rule] as usize].push((set as u32, rule as u32));
                }
            }
        }
        let mut hosts_filters: Vec<Option<Filter>> = Vec::new();
        let items = |f: &Option<Filter>| f.as_ref().map(|f| f.items.clone());
        let place_hosts = places
            .iter()
            .map(
                |(_, hosts)| match hosts_filters.iter().position(|h| items(h) == items(hosts)) {
                    Some(n) => n as u32,
                    None => {
                        hosts_filters.push(hosts.clone());
                        hosts_filters.len() as u32 - 1
                    }
                },
            )
            .collect();
        let by_groups = hosts_filters
            .iter()
            .map(|f| {
                f.as_ref()
                    .is_some_and(|f| f.items.iter().all(|i| i.name.starts_with('@')))
            })
            .collect();
        Quotas {
            by_groups,
            hosts_filters,
            place_hosts,
            anywhere,
            filter_rules,
            limited,
            place_ids,
            places,
            sets,
            limits,
            usersets,
            value_types: catalog
                .attrs
                .iter()
                .map(|a| (a.value_type, a.relop))
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// Do a rule's queues and hosts filters take this place?
    pub fn place_takes(&self, set: u32, rule: u32, p: &Place) -> bool {
        self.place_filter_takes(self.place_id(set, rule), p)
    }

    /// Does some rule limit this attribute?
    pub fn is_limited(&self, attr: usize) -> bool {
        self.limited.get(attr).copied().unwrap_or(false)
    }

    /// The id of a rule's (queues, hosts) filters among the distinct ones.
    pub fn place_id(&self, set: u32, rule: u32) -> u32 {
        self.place_ids[set as usize][rule as usize]
    }

    /// The rules of sets of at most [`MASK_RULES`] rules that take a place, as bits
    /// by set, given which distinct (queues, hosts) filters take it.
    pub fn place_masks(&self, filter_takes: &[bool], masks: &mut [u64]) {
        masks.copy_from_slice(&self.anywhere);
        for (rules, _) in self
            .filter_rules
            .iter()
            .zip(filter_takes)
            .filter(|(_, &takes)| takes)
        {
            for &(set, rule) in rules {
                masks[set as usize] |= 1 << rule;
            }
        }
    }

    /// How many distinct (queues, hosts) filters the sets have.
    pub fn place_count(&self) -> usize {
        self.places.len()
    }

    /// Do the (queues, hosts) filters with this id take this place?
    pub fn place_filter_takes(&self, id: u32, p: &Place) -> bool {
        self.queues_filter_takes(id, p) && self.hosts_filter_takes(self.place_hosts[id as usize], p)
    }

    /// Does the queues filter of the (queues, hosts) filters with this id take this
    /// place?
    pub fn queues_filter_takes(&self, id: u32, p: &Place) -> bool {
        self.places[id as usize]
            .0
            .as_ref()
            .is_none_or(|f| self.filter_takes(3, f, &Consumer::NONE, p))
    }

    /// Does the distinct hosts filter with this id take this place (its host)?
    pub fn hosts_filter_takes(&self, id: u32, p: &Place) -> bool {
        self.hosts_filters[id as usize]
            .as_ref()
            .is_none_or(|f| self.filter_takes(4, f, &Consumer::NONE, p))
    }

    /// The id of the hosts filter of the (queues, hosts) filters with this id among the
    /// distinct hosts filters.
    pub fn place_hosts(&self, id: u32) -> u32 {
        self.place_hosts[id as usize]
    }

    /// Does the distinct hosts filter with this id name host groups only?
    pub fn hosts_filter_by_groups(&self, id: u32) -> bool {
        self.by_groups[id as usize]
    }

    /// How many distinct hosts filters the sets have.
    pub fn hosts_filter_count(&self) -> usize {
        self.hosts_filters.len()
    }

    /// `set/name`, or `set/N` (from 1) for a rule without a name.
    pub fn rule_name(&self, set: u32, rule: u32) -> String {
        let s = &self.sets[set as usize];
        match &s.rules[rule as usize].name {
            Some(n) => format!("{}/{n}", s.name),
            None => format!("{}/{}", s.name, rule + 1),
        }
    }

    pub fn limits(&self, set: u32, rule: u32) -> &[RuleLimit] {
        &self.limits[set as usize][rule as usize]
    }

    fn user_item(&self, name: &str, c: &Consumer) -> bool {
        match name.strip_prefix('@') {
            Some(acl) => self
                .usersets
                .get(acl)
                .is_some_and(|e| entries_contain(e, c.user, c.groups)),
            None => wildcard(name, c.user),
        }
    }

    /// Does one filter take this job in this place? `n` is the filter's position
    /// (users, projects, pes, queues, hosts). Excluded names win; a list of exclusions
    /// alone takes everyone else.
    pub(crate) fn filter_takes(&self, n: usize, f: &Filter, c: &Consumer, p: &Place) -> bool {
        let item = |name: &str| -> bool {
            match n {
                0 => self.user_item(name, c),
                1 => c.project.is_some_and(|v| wildcard(name, v)),
                2 => c.pe.is_some_and(|v| wildcard(name, v)),
                3 => wildcard(name, p.queue),
                _ => match name.strip_prefix('@') {
                    Some(_) => p.host_groups.iter().any(|g| wildcard(name, g)),
                    None => wildcard(name, p.host),
                },
            }
        };
        if f.items.iter().any(|i| i.negated && item(&i.name)) {
            return false;
        }
        let mut positives = f.items.iter().filter(|i| !i.negated).peekable();
        positives.peek().is_none() || positives.any(|i| item(&i.name))
    }

    /// Does filter `n` take this one name (a user without groups, a project, a PE, a
    /// queue, or a host in these host groups)?
    pub(crate) fn filter_takes_name(
        &self,
        n: usize,
        f: &Filter,
        name: &str,
        host_groups: &[String],
    ) -> bool {
        let c = Consumer {
            user: name,
            groups: &[],
            project: Some(name),
            pe: Some(name),
        };
        let p = Place {
            queue: name,
            host: name,
            host_groups,
        };
        self.filter_takes(n, f, &c, &p)
    }

    /// Does some rule's dynamic limit read one of these attributes' values?
    pub fn dynamic_limits_read(&self, attrs: &[usize]) -> bool {
        self.limits
            .iter()
            .flatten()
            .flatten()
            .any(|l| match &l.value {
                LimitValue::Dynamic(terms) => terms
                    .iter()
                    .any(|(_, a)| a.is_some_and(|a| attrs.contains(&a))),
                LimitValue::Fixed(_) => false,
            })
    }

    /// What a limit allows on a host: a fixed value as it is, a dynamic one from the
    /// host's values (`host_value`), a missing value counting as [`MISSING_VALUE`].
    pub fn limit_on_host(l: &RuleLimit, host_value: &dyn Fn(usize) -> Option<f64>) -> Value {
        match &l.value {
            LimitValue::Fixed(v) => v.clone(),
            LimitValue::Dynamic(terms) => Value::Num(
                terms
                    .iter()
                    .map(|(w, attr)| match attr {
                        None => *w,
                        Some(a) => w * host_value(*a).unwrap_or(MISSING_VALUE),
                    })
                    .sum(),
            ),
        }
    }

    /// What a consumer meets in every set, whatever the place: the rules whose users,
    /// projects and PEs filters take it (in order), and what each asks of it. Worked out
    /// once per job category; [`Self::gates_at`] finishes it for a queue instance.
    pub fn plan(
        &self,
        catalog: &Catalog,
        d: &Demand,
        c: &Consumer,
        usage: &mut Usage,
        enabled_only: bool,
    ) -> Plan {
        let nowhere = Place {
            queue: "",
            host: "",
            host_groups: &[],
        };
        let mut sets = Vec::new();
        for (set, s) in self.sets.iter().enumerate() {
            if enabled_only && !s.enabled {
                continue;
            }
            let mut rules = Vec::new();
            for (r, rule) in s.rules.iter().enumerate() {
                let fs = filters(rule);
                if !fs[..3]
                    .iter()
                    .enumerate()
                    .all(|(n, f)| f.is_none_or(|f| self.filter_takes(n, f, c, &nowhere)))
                {
                    continue;
                }
                let mut members = [0u32; 3];
                for (n, member) in [Some(c.user), c.project, c.pe].into_iter().enumerate() {
                    if let (Some(m), true) = (member, fs[n].is_some_and(|f| f.expand)) {
                        members[n] = usage.name_id(m);
                    }
                }
                let mut asks = Vec::new();
                for l in self.limits(set as u32, r as u32) {
                    let a = &catalog.attrs[l.attr];
                    let request = d.hard.iter().find(|q| q.attr == l.attr);
                    let ask = if a.name == "slots" {
                        Ask::Need(Need::Slots)
                    } else {
                        match (a.consumable, request.map(|q| &q.value)) {
                            (Consumable::No, Some(requested)) => Ask::Satisfy(requested.clone()),
                            (Consumable::Yes, Some(Value::Num(n))) => Ask::Need(Need::PerSlot(*n)),
                            (Consumable::Job, Some(Value::Num(n))) => Ask::Need(Need::PerJob(*n)),
                            _ => continue,
                        }
                    };
                    asks.push((l.attr, ask));
                }
                let mut plan = RulePlan {
                    rule: r as u32,
                    members,
                    asks,
                    anywhere: rule.queues.is_none() && rule.hosts.is_none(),
                    fixed: None,
                };
                // A rule that limits nothing the consumer asks for has no gates
                // anywhere, whatever its filters.
                let placeless = plan.asks.is_empty()
                    || [&rule.queues, &rule.hosts]
                        .iter()
                        .all(|f| f.as_ref().is_none_or(|f| !f.expand))
                        && self
                            .limits(set as u32, r as u32)
                            .iter()
                            .filter(|l| plan.asks.iter().any(|(attr, _)| *attr == l.attr))
                            .all(|l| matches!(l.value, LimitValue::Fixed(_)));
                if placeless {
                    let mut gates = Vec::new();
                    self.rule_gates(
                        set as u32,
                        &plan,
                        [0, 0],
                        false,
                        usage,
                        &|_| None,
                        PerHost::default(),
                        &mut gates,
                    );
                    plan.fixed = Some(gates);
                }
                rules.push(plan);
            }
            if !rules.is_empty() {
                sets.push(SetPlan {
                    set: set as u32,
                    rules,
                });
            }
        }
        Plan { sets }
    }

    /// The gates a consumer meets in a place: for every set of its plan the effective
    /// rule there, and for every limit of that rule on a resource it uses, the counter
    /// to check (the limit evaluated for the place's host).
    pub fn gates_at(
        &self,
        plan: &Plan,
        p: &Place,
        usage: &mut Usage,
        host_value: &dyn Fn(usize) -> Option<f64>,
    ) -> Vec<RuleCheck> {
        let mut out = Vec::with_capacity(plan.sets.len());
        let mut place_ids: Option<[u32; 2]> = None;
        for sp in &plan.sets {
            let Some((first, rp)) = sp
                .rules
                .iter()
                .enumerate()
                .find(|(_, rp)| rp.anywhere || self.place_takes(sp.set, rp.rule, p))
            else {
                continue;
            };
            if let Some(fixed) = &rp.fixed {
                out.extend(
                    fixed
                        .iter()
                        .map(|g| g.everywhere(first == 0 && rp.anywhere)),
                );
                continue;
            }
            let ids =
                *place_ids.get_or_insert_with(|| [usage.name_id(p.queue), usage.name_id(p.host)]);
            self.rule_gates(
                sp.set,
                rp,
                ids,
                first == 0 && rp.anywhere,
                usage,
                host_value,
                PerHost::default(),
                &mut out,
            );
        }
        out
    }

    /// The gates of one rule for a consumer (its plan) at a place (queue and host ids).
    ///
    /// Where the rule's hosts filter is expanded and its queues filter is not (a counter
    /// per host), `per_host` may give the rows of its counters (looked up once by a
    /// caller that meets the rule on many hosts) and the most the jobs placed from now
    /// on can add to a counter on the host: a counter that cannot reach its limit that
    /// way gets no gate, since it could refuse nothing the host's own capacity lets by.
    #[allow(clippy::too_many_arguments)]
    pub fn rule_gates(
        &self,
        set: u32,
        rp: &RulePlan,
        place_ids: [u32; 2],
        everywhere: bool,
        usage: &mut Usage,
        host_value: &dyn Fn(usize) -> Option<f64>,
        PerHost { mut rows, growth }: PerHost<'_>,
        out: &mut Vec<RuleCheck>,
    ) {
        let rule = &self.sets[set as usize].rules[rp.rule as usize];
        let mut members = [rp.members[0], rp.members[1], rp.members[2], 0, 0];
        for (n, f) in [(3, &rule.queues), (4, &rule.hosts)] {
            if f.as_ref().is_some_and(|f| f.expand) {
                members[n] = place_ids[n - 3];
            }
        }
        let limits = self.limits(set, rp.rule);
        for (n, (attr, ask)) in rp.asks.iter().enumerate() {
            let Some(l) = limits.iter().find(|l| l.attr == *attr) else {
                continue;
            };
            let key = UsageKey {
                set,
                rule: rp.rule,
                members,
                attr: l.attr as u32,
            };
            match ask {
                Ask::Satisfy(requested) => {
                    let (ty, relop) = self.value_types[l.attr];
                    let allowed = Self::limit_on_host(l, host_value);
                    if !value::satisfies(ty, relop, &allowed, requested) {
                        out.push(RuleCheck::Never {
                            set,
                            rule: rp.rule,
                            key,
                        });
                    }
                }
                Ask::Need(need) => {
                    let Value::Num(limit) = Self::limit_on_host(l, host_value) else {
                        continue;
                    };
                    let per_host = key.members[4] != 0 && key.members[3] == 0;
                    let row = match rows.as_deref_mut().and_then(|r| r.get_mut(n)) {
                        Some(row) if per_host => {
                            if *row == u32::MAX {
                                let mut rest = key;
                                rest.members[4] = 0;
                                *row = usage.host_row(rest);
                            }
                            Some(*row)
                        }
                        _ => None,
                    };
                    if let Some(most) = growth.filter(|_| per_host).and_then(|g| g(l.attr)) {
                        let used = match row {
                            Some(row) => usage.get_in_row(row, &key),
                            None => usage.get(&key),
                        };
                        if used + most <= limit {
                            continue;
                        }
                    }
                    let slot = match row {
                        Some(row) => usage.slot_in_row(row, key),
                        None => usage.slot(key),
                    };
                    out.push(RuleCheck::Counter {
                        set,
                        rule: rp.rule,
                        slot,
                        need: *need,
                        limit,
                        everywhere,
                    });
                }
            }
        }
    }

    /// The reason a gate gives, as `qstat -j` prints it.
    pub fn denial(&self, gate: &RuleCheck, usage: &Usage) -> Denial {
        match gate {
            RuleCheck::Counter {
                set, rule, slot, ..
            } => Denial {
                rule: self.rule_name(*set, *rule),
                key: usage.consumer_text(usage.key(*slot)),
            },
            RuleCheck::Never { set, rule, key } => Denial {
                rule: self.rule_name(*set, *rule),
                key: usage.consumer_text(key),
            },
        }
    }

    /// Debit (or with `sign` -1 credit) a placement on every counter of its gates.
    pub fn debit(gates: &[RuleCheck], usage: &mut Usage, slots: u32, master: bool, sign: f64) {
        for g in gates {
            g.debit(usage, slots, master, sign);
        }
    }

    /// A value as `qquota` prints a limit or a usage of this attribute.
    pub fn show(catalog: &Catalog, attr: usize, v: f64) -> String {
        let ty = catalog.attrs[attr].value_type;
        match ty {
            ValueType::Int => format!("{}", v.round() as i64),
            ValueType::Double => {
                if v.fract() == 0.0 {
                    format!("{}", v as i64)
                } else {
                    value::format_f6(v)
                }
            }
            _ => display(ty, &Value::Num(v)),
        }
    }
}

#[cfg(test)]
mod tests;
