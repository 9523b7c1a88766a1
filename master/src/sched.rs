//! The scheduler as pure logic: the resource model of one cycle and the dispatch cycle.
//!
//! A [`Snapshot`] holds the three layers of the complex specification: the global host,
//! every exec host (its `complex_values` and the load values its execd reported) and every
//! queue instance (the queue's limits, `slots`, `complex_values` and names), each with what
//! running jobs consume of every consumable. A job's requests are matched layer by layer,
//! global -> host -> queue, and the first layer that does not satisfy a request decides.
//! Jobs with the same requests form a category: their static match (everything but
//! consumables) is computed once per cycle, and a category nothing can run any more is
//! skipped for the rest of the cycle.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use gantry_common::value::{self, Value};
use gantry_common::{conf, queue, schedconf};
use gantry_proto::{ComplexAttr, Consumable, Grant, Relop, Requestable, ValueType};

use crate::jobs::{wildcard, Job, TaskState};
use crate::quota::Gate;

use crate::state::ClusterState;

/// The layer a value is on, as SGE prints it (`g`, `h`, `q` in `hl:mem_free=...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Global,
    Host,
    Queue,
}

impl Level {
    fn letter(self) -> char {
        match self {
            Level::Global => 'g',
            Level::Host => 'h',
            Level::Queue => 'q',
        }
    }
}

/// An attribute's value on one layer.
#[derive(Debug, Clone, Default)]
pub struct Offer {
    /// Configured: `complex_values`, or a queue's own attribute.
    pub fixed: Option<Value>,
    /// Reported by the execd.
    pub load: Option<Value>,
    /// What running jobs consume (consumables only).
    pub used: f64,
}

/// The attributes one layer defines, with a direct index by attribute.
#[derive(Debug, Clone, Default)]
pub struct Layer {
    entries: Vec<(usize, Offer)>,
    /// Attribute -> position in `entries` + 1 (0: not defined here).
    index: Vec<u32>,
}

impl Layer {
    pub fn get(&self, attr: usize) -> Option<&Offer> {
        match self.index.get(attr) {
            Some(&n) if n > 0 => Some(&self.entries[n as usize - 1].1),
            _ => None,
        }
    }

    fn entry(&mut self, attr: usize) -> &mut Offer {
        if attr >= self.index.len() {
            self.index.resize(attr + 1, 0);
        }
        if self.index[attr] == 0 {
            self.entries.push((attr, Offer::default()));
            self.index[attr] = self.entries.len() as u32;
        }
        let n = self.index[attr] as usize - 1;
        &mut self.entries[n].1
    }

    pub fn set_fixed(&mut self, attr: usize, v: Value) {
        self.entry(attr).fixed = Some(v);
    }

    pub fn set_load(&mut self, attr: usize, v: Value) {
        self.entry(attr).load = Some(v);
    }

    fn debit(&mut self, attr: usize, amount: f64) {
        if let Some(&n) = self.index.get(attr) {
            if n > 0 {
                self.entries[n as usize - 1].1.used += amount;
            }
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &(usize, Offer)> {
        self.entries.iter()
    }
}

/// The complex, indexed by name and shortcut.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub attrs: Vec<ComplexAttr>,
    by_name: HashMap<String, usize>,
    /// Consumables with a default other than zero: (attribute, amount).
    defaults: Vec<(usize, f64)>,
    /// FORCED attributes.
    forced: Vec<usize>,
}

impl Catalog {
    pub fn new(list: &[ComplexAttr]) -> Catalog {
        let mut by_name = HashMap::new();
        for (i, a) in list.iter().enumerate() {
            by_name.insert(a.shortcut.clone(), i);
        }
        // Full names win over another attribute's shortcut.
        for (i, a) in list.iter().enumerate() {
            by_name.insert(a.name.clone(), i);
        }
        let defaults = list
            .iter()
            .enumerate()
            .filter(|(_, a)| a.consumable != Consumable::No)
            .filter_map(
                |(i, a)| match value::parse_value(a.value_type, &a.default) {
                    Ok(Value::Num(n)) if n != 0.0 => Some((i, n)),
                    _ => None,
                },
            )
            .collect();
        let forced = list
            .iter()
            .enumerate()
            .filter(|(_, a)| a.requestable == Requestable::Forced)
            .map(|(i, _)| i)
            .collect();
        Catalog {
            attrs: list.to_vec(),
            by_name,
            defaults,
            forced,
        }
    }

    pub fn id(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    pub(crate) fn parse(&self, attr: usize, text: &str) -> Option<Value> {
        value::parse_value(self.attrs[attr].value_type, text).ok()
    }
}

/// One request of a job (`-l name=value`, or a consumable's default).
#[derive(Debug, Clone)]
pub struct Request {
    pub attr: usize,
    pub value: Value,
    pub text: String,
    /// A consumable's default the job did not ask for: debited where the consumable
    /// exists, never a reason not to run where it does not.
    pub implicit: bool,
}

/// What a job asks of the cluster, resolved against the complex.
#[derive(Debug, Clone)]
pub struct Demand {
    pub hard: Vec<Request>,
    pub soft: Vec<Request>,
    pub queues: Vec<String>,
    pub user: String,
    /// The owner's Unix groups, for `@group` userset entries.
    pub groups: Vec<String>,
    pub project: Option<String>,
    pub slots: u32,
    /// `-pe pattern min-max`
    pub pe: Option<PeRequest>,
    /// Which part of the job this demand is (a parallel job's slots and its per-job
    /// consumables are placed apart).
    pub part: Part,
    /// The parallel environment being tried or granted (for quota rules' `pes`).
    pub granted_pe: Option<String>,
    /// The job category within a cycle (0: none), for the quota gate cache.
    pub category: usize,
    /// Jobs in an advance reservation are neither limited nor counted by quotas.
    pub quota_exempt: bool,
}

/// A whole job, or one of the two parts a parallel job is placed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Part {
    #[default]
    Whole,
    /// Slots and per-slot consumables, instance by instance.
    PerSlot,
    /// `JOB` consumables, once on the master queue.
    PerJob,
}

/// A parallel environment request: a name (wildcards allowed) and a slot range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeRequest {
    pub pattern: String,
    pub min: u32,
    pub max: u32,
}

impl Demand {
    /// The same demand with only its per-slot part (`JOB` consumables left out), or only
    /// its per-job part.
    fn split(&self, catalog: &Catalog) -> (Demand, Demand) {
        let per_job = |r: &Request| catalog.attrs[r.attr].consumable == Consumable::Job;
        let mut slot = self.clone();
        slot.hard.retain(|r| !per_job(r));
        slot.part = Part::PerSlot;
        let mut job = self.clone();
        job.hard.retain(per_job);
        job.soft.clear();
        job.part = Part::PerJob;
        (slot, job)
    }

    /// The requests of consumables: (attribute, amount per slot or per job, kind).
    fn consumables<'a>(
        &'a self,
        catalog: &'a Catalog,
    ) -> impl Iterator<Item = (usize, f64, Consumable)> + 'a {
        self.hard.iter().filter_map(move |r| {
            let a = &catalog.attrs[r.attr];
            match (&r.value, a.consumable) {
                (_, Consumable::No) => None,
                (Value::Num(n), kind) => Some((r.attr, *n, kind)),
                _ => None,
            }
        })
    }
}

/// Resolve a job's requests. An attribute the complex no longer has is the job's error.
pub fn demand(catalog: &Catalog, job: &Job) -> Result<Demand, String> {
    let resolve = |list: &[(String, String)]| -> Result<Vec<Request>, String> {
        list.iter()
            .map(|(name, text)| {
                let attr = catalog
                    .id(name)
                    .ok_or_else(|| format!("job requests unknown resource \"{name}\""))?;
                let value = catalog
                    .parse(attr, text)
                    .ok_or_else(|| format!("job requests an invalid value \"{name}={text}\""))?;
                Ok(Request {
                    attr,
                    value,
                    text: text.clone(),
                    implicit: false,
                })
            })
            .collect()
    };
    let mut hard = resolve(&job.spec.hard_resources)?;
    let soft = resolve(&job.spec.soft_resources)?;
    // Consumables with a default are requested by every job that does not say otherwise.
    for &(i, n) in &catalog.defaults {
        if !hard.iter().any(|r| r.attr == i) {
            hard.push(Request {
                attr: i,
                value: Value::Num(n),
                text: catalog.attrs[i].default.clone(),
                implicit: true,
            });
        }
    }
    Ok(Demand {
        hard,
        soft,
        queues: job.spec.queues.clone(),
        user: job.owner.user.clone(),
        groups: job.owner.groups.clone(),
        project: job.spec.project.clone(),
        slots: 1,
        pe: match &job.spec.pe {
            None => None,
            Some((pattern, range)) => {
                let (min, max) = gantry_common::pe::parse_slot_range(range)
                    .ok_or_else(|| format!("job requests an invalid slot range \"{range}\""))?;
                Some(PeRequest {
                    pattern: pattern.clone(),
                    min,
                    max,
                })
            }
        },
        part: Part::Whole,
        granted_pe: None,
        category: 0,
        quota_exempt: job.quota_exempt(),
    })
}

/// An exec host in the snapshot.
#[derive(Debug, Clone)]
pub struct Host {
    pub name: String,
    pub layer: Layer,
    pub groups: Vec<String>,
    pub user_lists: Vec<String>,
    pub xuser_lists: Vec<String>,
    pub projects: Vec<String>,
    pub xprojects: Vec<String>,
    /// The value of the load formula, for `queue_sort_method load`.
    pub load: f64,
    /// `num_proc`, which divides the adjustment of `np_*` load values.
    pub nproc: f64,
    /// Recently started job slots, each weighted by how much of
    /// `load_adjustment_decay_time` is left (1 when just started).
    pub weight: f64,
    /// The reported values of the adjusted load values (attribute, value).
    pub reported: Vec<(usize, f64)>,
    /// The queue instances on this host.
    pub instances: Vec<usize>,
}

/// Why a queue instance takes no jobs at all this cycle.
#[derive(Debug, Clone, PartialEq)]
pub enum Unusable {
    Disabled,
    Unreachable,
    Suspended,
    /// `load_thresholds` exceeded: the message says which.
    Overloaded(String),
    /// `suspend_thresholds` exceeded (state `A`).
    SuspendAlarm(String),
    Error,
}

/// A queue instance in the snapshot.
#[derive(Debug, Clone)]
pub struct Instance {
    pub queue: String,
    pub host: usize,
    pub layer: Layer,
    pub seq_no: i64,
    pub batch: bool,
    pub user_lists: Vec<String>,
    pub xuser_lists: Vec<String>,
    pub projects: Vec<String>,
    pub xprojects: Vec<String>,
    /// Parallel environments the instance offers (`pe_list`).
    pub pe_list: Vec<String>,
    /// `load_thresholds`
    pub thresholds: Vec<(String, String)>,
    /// `suspend_thresholds`
    pub suspend_thresholds: Vec<(String, String)>,
    pub unusable: Option<Unusable>,
}

/// How candidate queue instances are ordered (`queue_sort_method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortMethod {
    #[default]
    Load,
    SeqNo,
}

/// The scheduler's view of the cluster for one cycle.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub catalog: Catalog,
    pub global: Layer,
    pub hosts: Vec<Host>,
    pub instances: Vec<Instance>,
    /// Userset name -> entries.
    pub usersets: HashMap<String, Vec<String>>,
    /// Instance indexes in the order candidates are tried.
    pub order: Vec<usize>,
    /// Parallel environments, and the slots running jobs hold in each.
    pub pes: BTreeMap<String, gantry_common::pe::Pe>,
    pub pe_used: HashMap<String, u32>,
    /// `job_load_adjustments`: (load value, amount per job slot, the amount as written).
    pub adjustments: Vec<(usize, f64, String)>,
    /// The enabled resource quota sets and their usage (none: no sets).
    pub quota: Option<std::cell::RefCell<QuotaCycle>>,
}

/// What a quota plan depends on: owner, groups, project, PE, part, and the requests of
/// resources some rule limits.
type PlanKey = (
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
    pub quotas: Arc<crate::quota::Quotas>,
    pub usage: crate::quota::Usage,
    /// (category, part) -> the id and plan of what its jobs meet in every set.
    plans: crate::quota::SmallMap<(usize, Part), (u32, Arc<crate::quota::Plan>)>,
    /// The distinct plans of the cycle, by id.
    distinct: Vec<Arc<crate::quota::Plan>>,
    /// What a plan depends on -> its id.
    keys: HashMap<PlanKey, u32>,
    /// Reused while gates are worked out.
    scratch: Vec<Gate>,
    /// Where the number of counters this cycle used is left for the next.
    counters_hint: Arc<std::sync::atomic::AtomicUsize>,
    /// (plan, part, instance) -> the gates there.
    gates: crate::quota::SmallMap<(u32, Part, u32), Arc<[Gate]>>,
    /// ((plan, part, instance), slots) -> the gate that denied such a placement there.
    denied: crate::quota::SmallMap<((u32, Part, u32), u32), Gate>,
    /// Per distinct (queues, hosts) filters of the rules, per instance: 0 not known
    /// yet, 1 they take the instance, 2 they do not.
    takes: Vec<Vec<u8>>,
}

impl QuotaCycle {
    pub fn new(
        quotas: Arc<crate::quota::Quotas>,
        usage: crate::quota::Usage,
        counters_hint: Arc<std::sync::atomic::AtomicUsize>,
    ) -> QuotaCycle {
        QuotaCycle {
            counters_hint,
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

impl Drop for QuotaCycle {
    fn drop(&mut self) {
        // The largest a cycle needed (a qstat -j or -w v snapshot needs fewer).
        self.counters_hint
            .fetch_max(self.usage.len(), std::sync::atomic::Ordering::Relaxed);
    }
}

/// Why a job cannot run in a queue instance.
#[derive(Debug, Clone, PartialEq)]
pub enum Misfit {
    NotInQueueList,
    NotBatch,
    Unusable(Unusable),
    NoAccess(String),
    Project(String),
    /// A request the first failing layer does not satisfy: (level, name, requested,
    /// what the layer offers as SGE prints it).
    Request {
        level: Level,
        name: String,
        requested: String,
        offered: String,
    },
    UnknownResource {
        name: String,
        requested: String,
    },
    Forced(String),
    /// Not worked out (the scheduling cycle only needs to know that it does not fit).
    Unexplained,
    /// The instance offers no parallel environment the job asks for.
    NoPe(String),
    /// A resource quota rule is full for the job here.
    Quota(crate::quota::Denial),
    /// A resource quota rule that decides for the job on every queue instance is full
    /// (the cycle's path: the job's category can run nowhere else either).
    QuotaEverywhere,
}

impl Misfit {
    /// The reason as `qstat -j` shows it in "scheduling info".
    pub fn message(&self, queue: &str, host: &str) -> String {
        let qi = format!("{queue}@{host}");
        match self {
            Misfit::NotInQueueList => format!(
                "queue instance \"{qi}\" dropped because it is not contained in the job's queue list"
            ),
            Misfit::NotBatch => {
                format!("queue instance \"{qi}\" dropped because it is not of type batch")
            }
            Misfit::Unusable(Unusable::Disabled) => {
                format!("queue instance \"{qi}\" dropped because it is disabled")
            }
            Misfit::Unusable(Unusable::Unreachable) => {
                format!("queue instance \"{qi}\" dropped because it is temporarily not available")
            }
            Misfit::Unusable(Unusable::Suspended) => {
                format!("queue instance \"{qi}\" dropped because it is suspended")
            }
            Misfit::Unusable(Unusable::Error) => {
                format!("queue instance \"{qi}\" dropped because it is in error state")
            }
            Misfit::Unusable(Unusable::SuspendAlarm(why)) => {
                format!("queue instance \"{qi}\" dropped because it is in suspend alarm: {why}")
            }
            Misfit::Unusable(Unusable::Overloaded(why)) => {
                format!("queue instance \"{qi}\" dropped because it is overloaded: {why}")
            }
            Misfit::NoAccess(user) => format!(
                "queue instance \"{qi}\" dropped because user \"{user}\" has no access to it"
            ),
            Misfit::Project(why) => format!("queue instance \"{qi}\" dropped because {why}"),
            Misfit::Request {
                level,
                name,
                requested,
                offered,
            } => {
                let place = match level {
                    Level::Global => "globally".to_string(),
                    Level::Host => format!("at host \"{host}\""),
                    Level::Queue => format!("in queue instance \"{qi}\""),
                };
                format!("(-l {name}={requested}) cannot run {place} because it offers only {offered}")
            }
            Misfit::UnknownResource { name, requested } => format!(
                "(-l {name}={requested}) cannot run in queue instance \"{qi}\" because job requests unknown resource ({name})"
            ),
            Misfit::Unexplained => format!("queue instance \"{qi}\" dropped"),
            Misfit::NoPe(pe) => {
                format!("cannot run in queue instance \"{qi}\" because PE \"{pe}\" is not in pe_list")
            }
            Misfit::Quota(denial) => denial.message(),
            Misfit::QuotaEverywhere => format!("queue instance \"{qi}\" dropped"),
            Misfit::Forced(name) => format!(
                "queue instance \"{qi}\" dropped because it requires the forced resource \"{name}\" to be requested"
            ),
        }
    }
}

/// A value as `qstat -F` and the scheduler's messages print it.
pub fn display(ty: ValueType, v: &Value) -> String {
    match (ty, v) {
        (ValueType::Memory | ValueType::Double, Value::Num(n)) if n.is_infinite() => {
            "infinity".into()
        }
        (ValueType::Memory, Value::Num(n)) => value::format_memory_3(*n),
        (ValueType::Time, Value::Num(n)) if n.is_infinite() => "infinity".into(),
        (ValueType::Time, Value::Num(n)) => value::format_time_hms(*n),
        (ValueType::Int, Value::Num(n)) if n.is_infinite() => "infinity".into(),
        (ValueType::Int, Value::Num(n)) => format!("{}", *n as i64),
        (_, Value::Num(n)) => value::format_f6(*n),
        (_, Value::Text(s)) => s.clone(),
    }
}

/// The value a non-consumable attribute has on a layer: a configured value overrides a
/// load value of `==`/`!=` attributes; of ordered ones the more restrictive counts
/// (section 3: `mem_free` configured 1G, reported 4G -> 1G; reported 0.9G -> 0.9G).
fn effective<'a>(attr: &ComplexAttr, o: &'a Offer) -> Option<(&'a Value, char)> {
    match (&o.fixed, &o.load) {
        (Some(f @ Value::Num(fv)), Some(l @ Value::Num(lv))) => {
            let load_wins = match attr.relop {
                Relop::Le | Relop::Lt => lv < fv,
                Relop::Ge | Relop::Gt => lv > fv,
                _ => false,
            };
            Some(if load_wins { (l, 'l') } else { (f, 'f') })
        }
        (Some(f), _) => Some((f, 'f')),
        (None, Some(l)) => Some((l, 'l')),
        (None, None) => None,
    }
}

/// What is left of a consumable on a layer: its capacity less what is used, bounded by
/// a load value reported for it.
fn available(o: &Offer) -> Option<(f64, char)> {
    let capacity = match &o.fixed {
        Some(Value::Num(c)) => Some((c - o.used, 'c')),
        _ => None,
    };
    let load = match &o.load {
        Some(Value::Num(l)) => Some((*l, 'l')),
        _ => None,
    };
    match (capacity, load) {
        (Some(c), Some(l)) => Some(if l.0 < c.0 { l } else { c }),
        (c, l) => c.or(l),
    }
}

/// Which checks a match makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Everything that does not change while a cycle dispatches jobs.
    Static,
    /// Consumables only, for this many slots on the instance.
    Consumables(u32),
    /// Both (for `qstat -j` and `-w e`).
    All(u32),
}

impl Snapshot {
    /// The layers of a queue instance, in matching order.
    fn layers(&self, inst: usize) -> [(Level, &Layer); 3] {
        let i = &self.instances[inst];
        [
            (Level::Global, &self.global),
            (Level::Host, &self.hosts[i.host].layer),
            (Level::Queue, &i.layer),
        ]
    }

    /// A number a dynamic quota limit uses on an instance's host: the host's value
    /// (reported or configured), else the global host's.
    fn host_number(&self, host: usize, attr: usize) -> Option<f64> {
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

    /// A demand's quota plan and its id among the distinct plans of the cycle: once
    /// per category (and part); a parallel job's, for the PE being tried, anew (no id).
    fn quota_plan(&self, q: &mut QuotaCycle, d: &Demand) -> (Option<u32>, Arc<crate::quota::Plan>) {
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
            let consumer = crate::quota::Consumer::of(d, pe);
            Arc::new(quotas.plan(&self.catalog, d, &consumer, &mut q.usage, true))
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
    fn quota_gates(
        &self,
        q: &mut QuotaCycle,
        d: &Demand,
        inst: usize,
        check: Option<(u32, bool)>,
    ) -> Result<Arc<[Gate]>, Gate> {
        let (id, plan) = self.quota_plan(q, d);
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
        let i = &self.instances[inst];
        let host = &self.hosts[i.host];
        let place = crate::quota::Place {
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
                    table.resize(self.instances.len(), 0);
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
                        &|attr| self.host_number(i.host, attr),
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
        let found: Arc<[Gate]> = Arc::from(gates.as_slice());
        q.scratch = gates;
        let gates = found;
        if let Some(m) = memo {
            q.gates.insert(m, gates.clone());
        }
        Ok(gates)
    }

    /// How many slots a placement of a demand's part counts, and whether on the job's
    /// master queue.
    fn quota_amounts(d: &Demand, slots: u32) -> (u32, bool) {
        match d.part {
            Part::Whole => (slots, true),
            Part::PerSlot => (slots, false),
            Part::PerJob => (0, true),
        }
    }

    /// The quota rule a placement of `slots` slots on an instance would break (in set
    /// order), if any; `detail` builds the reason.
    fn quota_check(&self, d: &Demand, inst: usize, slots: u32, detail: bool) -> Result<(), Misfit> {
        let Some(cell) = &self.quota else {
            return Ok(());
        };
        if d.quota_exempt {
            return Ok(());
        }
        let mut q = cell.borrow_mut();
        let (n, master) = Self::quota_amounts(d, slots);
        let gate = match self.quota_gates(&mut q, d, inst, Some((n, master))) {
            Ok(gates) => match gates.iter().find(|g| !g.allows(&q.usage, n, master)) {
                Some(&g) => g,
                None => return Ok(()),
            },
            Err(g) => g,
        };
        Err(if detail {
            Misfit::Quota(q.quotas.denial(&gate, &q.usage))
        } else if gate.is_everywhere() {
            Misfit::QuotaEverywhere
        } else {
            Misfit::Unexplained
        })
    }

    /// Was a demand with the same quota plan already denied here this cycle?
    fn quota_known_denied(&self, d: &Demand, inst: usize, slots: u32) -> bool {
        let Some(cell) = &self.quota else {
            return false;
        };
        if d.quota_exempt || d.category == 0 || d.granted_pe.is_some() {
            return false;
        }
        let q = cell.borrow();
        let Some((id, _)) = q.plans.get(&(d.category, d.part)) else {
            return false;
        };
        let (n, _) = Self::quota_amounts(d, slots);
        q.denied.contains_key(&((*id, d.part, inst as u32), n))
    }

    /// Debit (or credit) a placement on the quota counters.
    fn quota_debit(&self, d: &Demand, grants: &[(usize, u32)], sign: f64) {
        let Some(cell) = &self.quota else {
            return;
        };
        if d.quota_exempt {
            return;
        }
        let mut q = cell.borrow_mut();
        if sign < 0.0 {
            q.denied.clear();
        }
        for &(inst, slots) in grants {
            let (n, master) = Self::quota_amounts(d, slots);
            if let Ok(gates) = self.quota_gates(&mut q, d, inst, None) {
                crate::quota::Quotas::debit(&gates, &mut q.usage, n, master, sign);
            }
        }
    }

    /// Is the job's owner in one of these usersets (by name or by Unix group)?
    fn in_userset(&self, d: &Demand, lists: &[String]) -> bool {
        lists.iter().any(|l| {
            self.usersets.get(l).is_some_and(|entries| {
                gantry_common::userset::entries_contain(entries, &d.user, &d.groups)
            })
        })
    }

    /// Does one request hold on one layer? `None` if the layer does not define it.
    fn holds_on(&self, layer: &Layer, r: &Request, slots: u32, pass: Pass) -> Option<bool> {
        let a = &self.catalog.attrs[r.attr];
        let o = layer.get(r.attr)?;
        let consumable = a.consumable != Consumable::No;
        let wanted = match pass {
            Pass::Static => !consumable,
            Pass::Consumables(_) => consumable,
            Pass::All(_) => true,
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
                _ => amount * slots as f64,
            };
            let (left, _) = available(o)?;
            return Some(need <= left + 1e-9);
        }
        let (offered, _) = effective(a, o)?;
        Some(value::satisfies(a.value_type, a.relop, offered, &r.value))
    }

    /// The reason a request does not hold on a layer, as SGE words it.
    fn request_misfit(&self, level: Level, layer: &Layer, r: &Request) -> Misfit {
        let a = &self.catalog.attrs[r.attr];
        let shown = layer.get(r.attr).and_then(|o| {
            if a.consumable != Consumable::No {
                available(o).map(|(left, source)| {
                    (display(a.value_type, &Value::Num(left.max(0.0))), source)
                })
            } else {
                effective(a, o).map(|(v, source)| (display(a.value_type, v), source))
            }
        });
        let (value, source) = shown.unwrap_or_default();
        Misfit::Request {
            level,
            name: a.name.clone(),
            requested: r.text.clone(),
            offered: format!("{}{source}:{}={value}", level.letter(), a.name),
        }
    }

    /// Match a job against a queue instance: layer by layer, global -> host -> queue,
    /// stopping at the first layer that does not satisfy a request.
    fn matches(&self, d: &Demand, inst: usize, pass: Pass) -> Result<(), Misfit> {
        self.check(d, inst, pass, true)
    }

    /// [`Self::matches`] without building the reason (the scheduling cycle's path).
    fn fits(&self, d: &Demand, inst: usize, pass: Pass) -> bool {
        self.check(d, inst, pass, false).is_ok()
    }

    fn check(&self, d: &Demand, inst: usize, pass: Pass, detail: bool) -> Result<(), Misfit> {
        self.check_from(d, inst, pass, detail, Level::Global)
    }

    /// [`Self::check`] from a layer on: the layers above `from` (and the host's access
    /// lists, with `from` at the queue) are known to be satisfied.
    fn check_from(
        &self,
        d: &Demand,
        inst: usize,
        pass: Pass,
        detail: bool,
        from: Level,
    ) -> Result<(), Misfit> {
        let i = &self.instances[inst];
        let host = &self.hosts[i.host];
        let host_checked = from == Level::Queue;
        if let (Pass::Consumables(_), Some(u)) = (pass, &i.unusable) {
            // Overloaded by the jobs placed earlier in this cycle.
            return Err(Misfit::Unusable(u.clone()));
        }
        if matches!(pass, Pass::Static | Pass::All(_)) {
            if !d.queues.is_empty() && !d.queues.iter().any(|q| self.wants(q, inst)) {
                return Err(Misfit::NotInQueueList);
            }
            if let Some(u) = &i.unusable {
                return Err(Misfit::Unusable(u.clone()));
            }
            if !i.batch {
                return Err(Misfit::NotBatch);
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
                        Misfit::NoAccess(d.user.clone())
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
                match &d.project {
                    Some(p) if deny.contains(p) => {
                        return Err(Misfit::Project(format!(
                            "the job's project \"{p}\" is excluded"
                        )))
                    }
                    Some(p) if !allow.is_empty() && !allow.contains(p) => {
                        return Err(Misfit::Project(format!(
                            "the job's project \"{p}\" is not in its project list"
                        )))
                    }
                    None if !allow.is_empty() => {
                        return Err(Misfit::Project("the job has no project".into()))
                    }
                    _ => {}
                }
            }
        }
        let slots = match pass {
            Pass::Consumables(n) | Pass::All(n) => n,
            Pass::Static => d.slots,
        };
        // Resource quotas come before the global, host and queue layers; a denial
        // stops there (the reason qstat -j gives). The cycle only needs to know whether
        // all hold, and checks the cheap layers first.
        if matches!(pass, Pass::All(_)) {
            self.quota_check(d, inst, slots, detail)?;
        }
        if matches!(pass, Pass::Consumables(_)) && self.quota_known_denied(d, inst, slots) {
            // A category like this one was already turned away here this cycle.
            return Err(Misfit::Unexplained);
        }
        let layers = self.layers(inst);
        for (level, layer) in layers {
            if (level == Level::Global && from != Level::Global)
                || (level == Level::Host && host_checked)
            {
                continue;
            }
            for r in &d.hard {
                if self.holds_on(layer, r, slots, pass) == Some(false) {
                    return Err(if detail {
                        self.request_misfit(level, layer, r)
                    } else {
                        Misfit::Unexplained
                    });
                }
            }
        }
        if matches!(pass, Pass::Consumables(_)) {
            self.quota_check(d, inst, slots, detail)?;
        }
        if matches!(pass, Pass::Static | Pass::All(_)) {
            // A request no layer defines cannot be satisfied.
            for r in d.hard.iter().filter(|r| !r.implicit) {
                if !layers.iter().any(|(_, l)| l.get(r.attr).is_some()) {
                    if !detail {
                        return Err(Misfit::Unexplained);
                    }
                    return Err(Misfit::UnknownResource {
                        name: self.catalog.attrs[r.attr].name.clone(),
                        requested: r.text.clone(),
                    });
                }
            }
            // A FORCED attribute an instance offers takes only jobs that ask for it.
            for &attr in &self.catalog.forced {
                let offered = layers
                    .iter()
                    .any(|(_, l)| l.get(attr).is_some_and(|o| o.fixed.is_some()));
                if offered && !d.hard.iter().any(|r| r.attr == attr && !r.implicit) {
                    return Err(Misfit::Forced(self.catalog.attrs[attr].name.clone()));
                }
            }
        }
        Ok(())
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
                available(o).map(|(left, src)| (Value::Num(left.max(0.0)), src))?
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
        let hostname = self.catalog.id("hostname");
        let mut out = HashMap::new();
        for i in &self.instances {
            let host = &self.hosts[i.host];
            let mut list = global.clone();
            // Load values first, in the order the execd reported them, then the host's
            // own values.
            let (loads, own): (Vec<_>, Vec<_>) = host
                .layer
                .iter()
                .filter(|(attr, _)| Some(*attr) != hostname)
                .partition(|(_, o)| o.load.is_some());
            for (attr, o) in loads.into_iter().chain(own) {
                list.extend(shown(Level::Host, *attr, o));
            }
            for key in QUEUE_ORDER {
                if *key == "hostname" {
                    list.push(("qf:hostname".into(), host.name.clone()));
                    continue;
                }
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

    /// The instances a category's jobs could run in, ignoring consumables, in sort order:
    /// the global layer is matched once, each host once, each queue instance on top.
    fn static_candidates(&self, d: &Demand) -> Vec<usize> {
        let layer_ok = |layer: &Layer| {
            d.hard
                .iter()
                .all(|r| self.holds_on(layer, r, d.slots, Pass::Static) != Some(false))
        };
        if !layer_ok(&self.global) {
            return Vec::new();
        }
        let lists_ok = |allow: &[String], deny: &[String], projects: (&[String], &[String])| {
            (allow.is_empty() || self.in_userset(d, allow))
                && !self.in_userset(d, deny)
                && match &d.project {
                    Some(p) => {
                        !projects.1.contains(p) && (projects.0.is_empty() || projects.0.contains(p))
                    }
                    None => projects.0.is_empty(),
                }
        };
        let mut host_ok: Vec<Option<bool>> = vec![None; self.hosts.len()];
        self.order
            .iter()
            .copied()
            .filter(|&inst| {
                let h = self.instances[inst].host;
                let ok = *host_ok[h].get_or_insert_with(|| {
                    let host = &self.hosts[h];
                    lists_ok(
                        &host.user_lists,
                        &host.xuser_lists,
                        (&host.projects, &host.xprojects),
                    ) && layer_ok(&host.layer)
                });
                ok && self
                    .check_from(d, inst, Pass::Static, false, Level::Queue)
                    .is_ok()
            })
            .collect()
    }

    /// Jobs just placed raise their hosts' adjusted load at once (a full weight per
    /// slot), which may put queue instances there over their load thresholds for the
    /// rest of the cycle.
    fn started(&mut self, grants: &[(usize, u32)]) {
        if self.adjustments.is_empty() {
            return;
        }
        for &(inst, slots) in grants {
            let h = self.instances[inst].host;
            let host = &mut self.hosts[h];
            host.weight += slots as f64;
            adjust(
                &self.catalog,
                &self.adjustments,
                &mut host.layer,
                &host.reported,
                host.weight,
                host.nproc,
            );
            for i in self.hosts[h].instances.clone() {
                if self.instances[i].unusable.is_none() {
                    self.instances[i].unusable = overload_message(
                        &self.catalog,
                        &self.hosts[h],
                        &self.adjustments,
                        &self.instances[i].thresholds,
                    )
                    .map(Unusable::Overloaded);
                }
            }
        }
    }

    /// Place a parallel job: the first parallel environment matching the request (in
    /// name order) whose allocation rule can give it at least `min` slots on the
    /// candidates (as many as possible up to `max`). Consumables are debited as slots
    /// are taken; a failed attempt gives everything back.
    pub fn allocate_pe(
        &mut self,
        d: &Demand,
        per: &PeRequest,
        candidates: &[usize],
    ) -> Option<(String, Vec<(usize, u32)>)> {
        let (mut per_slot, mut per_job) = d.split(&self.catalog);
        let names: Vec<String> = self
            .pes
            .keys()
            .filter(|n| wildcard(&per.pattern, n))
            .cloned()
            .collect();
        for name in names {
            let pe = &self.pes[&name];
            if (!pe.user_lists.is_empty() && !self.in_userset(d, &pe.user_lists))
                || self.in_userset(d, &pe.xuser_lists)
            {
                continue;
            }
            let free = pe
                .slots
                .saturating_sub(self.pe_used.get(&name).copied().unwrap_or(0));
            let max = per.max.min(free);
            if max < per.min {
                continue;
            }
            let rule = pe.allocation_rule;
            per_slot.granted_pe = Some(name.clone());
            per_job.granted_pe = Some(name.clone());
            let offering: Vec<usize> = candidates
                .iter()
                .copied()
                .filter(|&i| self.instances[i].pe_list.contains(&name))
                .collect();
            let mut grants = self.allocate(&per_slot, rule, &offering, per.min, max);
            let total = grants_total(&grants);
            let master = grants.first().map(|g| g.0);
            let fits_job = master.is_some_and(|m| self.fits(&per_job, m, Pass::Consumables(total)));
            if total >= per.min && fits_job {
                if let Some(m) = master {
                    self.debit(&per_job, &[(m, total)], 1.0);
                }
                *self.pe_used.entry(name.clone()).or_insert(0) += total;
                return Some((name, grants));
            }
            self.debit(&per_slot, &grants, -1.0);
            grants.clear();
        }
        None
    }

    /// Take slots one by one by an allocation rule; the grants in the order first taken.
    fn allocate(
        &mut self,
        d: &Demand,
        rule: gantry_common::pe::AllocationRule,
        offering: &[usize],
        min: u32,
        max: u32,
    ) -> Vec<(usize, u32)> {
        use gantry_common::pe::AllocationRule;
        let mut hosts: Vec<usize> = Vec::new();
        for &i in offering {
            let h = self.instances[i].host;
            if !hosts.contains(&h) {
                hosts.push(h);
            }
        }
        let mut grants: Vec<(usize, u32)> = Vec::new();
        // Up to `want` more slots on host `h`, instance by instance.
        let take = |snap: &mut Snapshot, grants: &mut Vec<(usize, u32)>, h: usize, want: u32| {
            let mut got = 0;
            let on_host: Vec<usize> = offering
                .iter()
                .copied()
                .filter(|&i| snap.instances[i].host == h)
                .collect();
            for i in on_host {
                while got < want && snap.fits(d, i, Pass::Consumables(1)) {
                    snap.debit(d, &[(i, 1)], 1.0);
                    match grants.iter_mut().find(|g| g.0 == i) {
                        Some(g) => g.1 += 1,
                        None => grants.push((i, 1)),
                    }
                    got += 1;
                }
            }
            got
        };
        match rule {
            AllocationRule::PeSlots => {
                for &h in &hosts {
                    let mut here = Vec::new();
                    let got = take(self, &mut here, h, max);
                    if got >= min {
                        return here;
                    }
                    self.debit(d, &here, -1.0);
                }
            }
            AllocationRule::FillUp => {
                for &h in &hosts {
                    let total = grants_total(&grants);
                    if total >= max {
                        break;
                    }
                    take(self, &mut grants, h, max - total);
                }
            }
            AllocationRule::RoundRobin => loop {
                let mut progress = false;
                for &h in &hosts {
                    if grants_total(&grants) >= max {
                        break;
                    }
                    progress |= take(self, &mut grants, h, 1) == 1;
                }
                if !progress || grants_total(&grants) >= max {
                    break;
                }
            },
            AllocationRule::PerHost(n) => {
                for &h in &hosts {
                    if grants_total(&grants) + n > max {
                        break;
                    }
                    let mut here = Vec::new();
                    if take(self, &mut here, h, n) == n {
                        grants.extend(here);
                    } else {
                        self.debit(d, &here, -1.0);
                    }
                }
            }
        }
        grants
    }

    /// How many soft requests an instance violates.
    fn soft_violations(&self, d: &Demand, inst: usize) -> usize {
        let layers = self.layers(inst);
        d.soft
            .iter()
            .filter(|r| {
                let mut defined = false;
                for (_, layer) in layers {
                    match self.holds_on(layer, r, 1, Pass::All(1)) {
                        Some(false) => return true,
                        Some(true) => defined = true,
                        None => {}
                    }
                }
                !defined
            })
            .count()
    }

    /// Does a `-q` entry (`queue`, `queue@host`, `queue@@hostgroup`, wildcards) name
    /// this instance?
    fn wants(&self, pattern: &str, inst: usize) -> bool {
        let i = &self.instances[inst];
        let host = &self.hosts[i.host];
        match pattern.split_once('@') {
            None => wildcard(pattern, &i.queue),
            Some((cq, h)) => {
                let cq = if cq.is_empty() { "*" } else { cq };
                wildcard(cq, &i.queue)
                    && if h.starts_with('@') {
                        host.groups.iter().any(|g| wildcard(h, g))
                    } else {
                        wildcard(h, &host.name)
                    }
            }
        }
    }

    /// Debit (or with a negative sign, credit) a job's consumables on the layers of the
    /// queue instances it was granted.
    fn debit(&mut self, d: &Demand, grants: &[(usize, u32)], sign: f64) {
        self.quota_debit(d, grants, sign);
        let total: u32 = grants.iter().map(|(_, n)| n).sum();
        let consumables: Vec<(usize, f64, Consumable)> = d.consumables(&self.catalog).collect();
        for (attr, amount, kind) in consumables {
            let per_slot = kind != Consumable::Job;
            let global = if per_slot {
                amount * total as f64
            } else {
                amount
            };
            self.global.debit(attr, sign * global);
            for (n, (inst, slots)) in grants.iter().enumerate() {
                let here = match (per_slot, n) {
                    (true, _) => amount * *slots as f64,
                    (false, 0) => amount,
                    (false, _) => 0.0,
                };
                let host = self.instances[*inst].host;
                self.hosts[host].layer.debit(attr, sign * here);
                self.instances[*inst].layer.debit(attr, sign * here);
            }
        }
    }
}

/// What `suspend_thresholds` call for: tasks to stop and to continue (job, task, host),
/// and the queue instances acted on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThresholdActions {
    pub suspend: Vec<(u64, u32, String)>,
    pub resume: Vec<(u64, u32, String)>,
    pub acted: Vec<(String, String)>,
}

/// A decision of the scheduler: start this task in this queue instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatch {
    pub job_id: u64,
    pub task_id: u32,
    /// The master queue instance.
    pub queue: String,
    pub host: String,
    /// Every queue instance granted, the master queue first.
    pub grants: Vec<Grant>,
    /// The parallel environment chosen for a `-pe` request.
    pub pe: Option<String>,
}

/// The scheduler's own settings (`qconf -ssconf`).
#[derive(Debug, Clone, PartialEq)]
pub struct SchedConf {
    pub sort: SortMethod,
    /// `load_formula`: (weight, load value) terms, summed.
    pub load_formula: Vec<(f64, String)>,
    /// `job_load_adjustments`: (load value, amount per started job slot as written).
    pub load_adjustments: Vec<(String, String)>,
    /// `load_adjustment_decay_time` in seconds.
    pub decay_secs: f64,
}

impl Default for SchedConf {
    fn default() -> Self {
        SchedConf {
            sort: SortMethod::Load,
            load_formula: vec![(1.0, "np_load_avg".into())],
            load_adjustments: vec![("np_load_avg".into(), "0.50".into())],
            decay_secs: 450.0,
        }
    }
}

fn list_value(a: Option<&gantry_proto::QueueAttr>, host: &str, groups: &[&str]) -> Vec<String> {
    a.map(|a| conf::split_list(queue::value_on_host(a, host, groups)))
        .unwrap_or_default()
        .into_iter()
        .filter(|s| !s.eq_ignore_ascii_case("NONE"))
        .collect()
}

/// The queue attributes that are complex attributes of the queue layer.
const QUEUE_VALUES: &[&str] = &[
    "qname",
    "seq_no",
    "rerun",
    "tmpdir",
    "calendar",
    "min_cpu_interval",
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
    "slots",
];

/// A queue instance's values on a host (the queue's defaults when `host` is empty), and
/// its load thresholds; the caller fills in the host and the state.
fn instance_values(
    catalog: &Catalog,
    q: &gantry_proto::ClusterQueue,
    host: &str,
    groups: &[&str],
) -> (Instance, Vec<(String, String)>) {
    let on_host = |key: &str| q.attr(key).map(|a| queue::value_on_host(a, host, groups));
    let mut layer = Layer::default();
    for key in QUEUE_VALUES {
        let (Some(id), Some(text)) = (catalog.id(key), on_host(key)) else {
            continue;
        };
        let text = if *key == "qname" {
            q.name.as_str()
        } else {
            text
        };
        if let Some(v) = catalog.parse(id, text) {
            layer.set_fixed(id, v);
        }
    }
    let pairs = |key: &str| {
        on_host(key)
            .and_then(|v| conf::split_pairs(v, 0, key).ok())
            .unwrap_or_default()
    };
    for (k, v) in pairs("complex_values") {
        if let Some(id) = catalog.id(&k) {
            if let Some(v) = catalog.parse(id, &v) {
                layer.set_fixed(id, v);
            }
        }
    }
    let inst = Instance {
        queue: q.name.clone(),
        host: 0,
        layer,
        seq_no: on_host("seq_no").and_then(|v| v.parse().ok()).unwrap_or(0),
        batch: on_host("qtype").is_none_or(|t| {
            t.split_whitespace()
                .any(|w| w.eq_ignore_ascii_case("BATCH"))
        }),
        user_lists: list_value(q.attr("user_lists"), host, groups),
        xuser_lists: list_value(q.attr("xuser_lists"), host, groups),
        projects: list_value(q.attr("projects"), host, groups),
        xprojects: list_value(q.attr("xprojects"), host, groups),
        pe_list: list_value(q.attr("pe_list"), host, groups),
        thresholds: pairs("load_thresholds"),
        suspend_thresholds: pairs("suspend_thresholds"),
        unusable: None,
    };
    let thresholds = inst.thresholds.clone();
    (inst, thresholds)
}

impl ClusterState {
    /// Is a queue instance in load alarm (state `a`): which of its `load_thresholds` the
    /// host's reported values exceed, as the scheduler words it.
    pub fn load_alarm(&self, q: &gantry_proto::ClusterQueue, host: &str) -> Option<String> {
        self.threshold_alarm(q, host, "load_thresholds")
    }

    /// Is a queue instance in suspend alarm (state `A`): which of its
    /// `suspend_thresholds` the host's reported values exceed.
    pub fn suspend_alarm(&self, q: &gantry_proto::ClusterQueue, host: &str) -> Option<String> {
        self.threshold_alarm(q, host, "suspend_thresholds")
    }

    fn threshold_alarm(
        &self,
        q: &gantry_proto::ClusterQueue,
        host: &str,
        key: &str,
    ) -> Option<String> {
        let groups = self.groups_of(host);
        let thresholds = q
            .attr(key)
            .map(|a| queue::value_on_host(a, host, &groups))
            .filter(|v| !v.eq_ignore_ascii_case("NONE"))
            .and_then(|v| conf::split_pairs(v, 0, key).ok())
            .unwrap_or_default();
        if thresholds.is_empty() {
            return None;
        }
        let catalog = Catalog::new(&self.complexes);
        let mut layer = Layer::default();
        for lv in self.runtime.get(host).map_or(&[][..], |r| &r.load_values) {
            if let Some(id) = catalog.id(&lv.name) {
                if let Some(v) = catalog.parse(id, &lv.value) {
                    layer.set_load(id, v);
                }
            }
        }
        let h = Host {
            name: host.to_string(),
            layer,
            groups: Vec::new(),
            user_lists: Vec::new(),
            xuser_lists: Vec::new(),
            projects: Vec::new(),
            xprojects: Vec::new(),
            load: 0.0,
            nproc: 1.0,
            weight: 0.0,
            reported: Vec::new(),
            instances: Vec::new(),
        };
        overload_message(&catalog, &h, &[], &thresholds)
    }

    /// What the queues' `suspend_thresholds` call for at `now`: on an instance over its
    /// thresholds, stop `nsuspend` more of its running jobs (the latest started first)
    /// every `suspend_interval`; on one back under them, continue `nsuspend` of those it
    /// stopped per interval. `last` is when each instance was last acted on.
    pub fn threshold_actions(
        &self,
        now: i64,
        clock: f64,
        last: &HashMap<(String, String), i64>,
    ) -> ThresholdActions {
        let mut out = ThresholdActions::default();
        for q in self.queues.values() {
            for host in self.queue_hosts_of(q) {
                if !self.is_reachable(&host, clock) {
                    continue;
                }
                let groups = self.groups_of(&host);
                let on_host = |k: &str| q.attr(k).map(|a| queue::value_on_host(a, &host, &groups));
                let interval = on_host("suspend_interval")
                    .and_then(|v| value::parse_time(v).ok())
                    .unwrap_or(300.0) as i64;
                let nsuspend: usize = on_host("nsuspend")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(1);
                let key = (q.name.clone(), host.clone());
                if last.get(&key).is_some_and(|t| now - t < interval) || nsuspend == 0 {
                    continue;
                }
                let mut tasks: Vec<(i64, u64, u32)> = Vec::new();
                for job in self.jobs.values() {
                    for (task, t) in job.tasks.placed() {
                        if let TaskState::Running {
                            host: h,
                            queue,
                            start_time,
                            ..
                        } = t
                        {
                            if *h == host && *queue == q.name && !job.suspended.contains(&task) {
                                tasks.push((*start_time, job.id, task));
                            }
                        }
                    }
                }
                let stopped = |t: &(i64, u64, u32)| self.threshold_suspended.contains(&(t.1, t.2));
                if self.suspend_alarm(q, &host).is_some() {
                    tasks.sort_by(|a, b| b.cmp(a));
                    let pick: Vec<(u64, u32)> = tasks
                        .iter()
                        .filter(|t| !stopped(t))
                        .take(nsuspend)
                        .map(|t| (t.1, t.2))
                        .collect();
                    if !pick.is_empty() {
                        out.suspend
                            .extend(pick.into_iter().map(|(j, t)| (j, t, host.clone())));
                        out.acted.push(key);
                    }
                } else {
                    tasks.sort();
                    let pick: Vec<(u64, u32)> = tasks
                        .iter()
                        .filter(|t| stopped(t))
                        .take(nsuspend)
                        .map(|t| (t.1, t.2))
                        .collect();
                    if !pick.is_empty() {
                        out.resume
                            .extend(pick.into_iter().map(|(j, t)| (j, t, host.clone())));
                        out.acted.push(key);
                    }
                }
            }
        }
        out
    }

    /// The scheduler's settings from the configuration.
    pub fn sched_conf(&self) -> SchedConf {
        let mut c = SchedConf::default();
        let Some(conf) = &self.sched else {
            return c;
        };
        if conf
            .get("queue_sort_method")
            .is_some_and(|v| v.eq_ignore_ascii_case("seqno"))
        {
            c.sort = SortMethod::SeqNo;
        }
        if let Some(f) = conf
            .get("load_formula")
            .and_then(|f| schedconf::parse_load_formula(f).ok())
        {
            c.load_formula = f;
        }
        if let Some(a) = conf.get("job_load_adjustments") {
            c.load_adjustments = if a.eq_ignore_ascii_case("none") {
                Vec::new()
            } else {
                conf::split_pairs(a, 0, "job_load_adjustments").unwrap_or_default()
            };
        }
        if let Some(t) = conf.get("load_adjustment_decay_time") {
            c.decay_secs = value::parse_time(t).unwrap_or(0.0);
        }
        c
    }

    /// Build the snapshot a cycle works on: every layer's values, and what the running
    /// jobs hold of every consumable.
    pub fn snapshot(&self, connected: &HashSet<String>, clock: f64) -> Snapshot {
        self.snapshot_at(connected, clock, None)
    }

    /// The snapshot with the load of jobs started less than `load_adjustment_decay_time`
    /// before `now` (Unix seconds) added to their hosts' load values, as the scheduler
    /// sees them (`None`: the load values as reported).
    pub fn snapshot_at(
        &self,
        connected: &HashSet<String>,
        clock: f64,
        now: Option<i64>,
    ) -> Snapshot {
        let catalog = Catalog::new(&self.complexes);
        let sconf = self.sched_conf();
        let adjustments: Vec<(usize, f64, String)> = sconf
            .load_adjustments
            .iter()
            .filter_map(|(name, amount)| {
                let id = catalog.id(name)?;
                Some((id, value::parse_double(amount).ok()?, amount.clone()))
            })
            .collect();
        // Recently started job slots per host, each weighted by the decay time left.
        let mut weights: HashMap<&str, f64> = HashMap::new();
        if let Some(now) = now.filter(|_| sconf.decay_secs > 0.0 && !adjustments.is_empty()) {
            for job in self.jobs.values() {
                for t in job.tasks.placed_states() {
                    if let TaskState::Running {
                        grants, start_time, ..
                    } = t
                    {
                        let age = (now - start_time).max(0) as f64;
                        if age < sconf.decay_secs {
                            let w = 1.0 - age / sconf.decay_secs;
                            for g in grants {
                                *weights.entry(g.host.as_str()).or_insert(0.0) +=
                                    w * g.slots as f64;
                            }
                        }
                    }
                }
            }
        }
        let mut global = Layer::default();
        if let Some(g) = self.global_host.as_ref() {
            for (name, v) in &g.complex_values {
                if let Some(id) = catalog.id(name) {
                    if let Some(v) = catalog.parse(id, v) {
                        global.set_fixed(id, v);
                    }
                }
            }
        }
        let mut memberships: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for g in self.hostgroups.keys() {
            for h in self.resolve_group(g, 0) {
                memberships.entry(h).or_default().push(g.clone());
            }
        }
        let hostname = catalog.id("hostname");
        let mut hosts = Vec::new();
        let mut host_index = HashMap::new();
        for (name, h) in &self.exechosts {
            let mut layer = Layer::default();
            let loads = self
                .runtime
                .get(name)
                .map(|r| r.load_values.as_slice())
                .unwrap_or(&[]);
            for lv in loads {
                if let Some(id) = catalog.id(&lv.name) {
                    if let Some(v) = catalog.parse(id, &lv.value) {
                        layer.set_load(id, v);
                    }
                }
            }
            if let Some(id) = hostname {
                layer.set_fixed(id, Value::Text(name.clone()));
            }
            for (k, v) in &h.complex_values {
                if let Some(id) = catalog.id(k) {
                    if let Some(v) = catalog.parse(id, v) {
                        layer.set_fixed(id, v);
                    }
                }
            }
            let nproc = catalog
                .id("num_proc")
                .and_then(|id| layer.get(id))
                .and_then(|o| match &o.load {
                    Some(Value::Num(n)) if *n > 0.0 => Some(*n),
                    _ => None,
                })
                .unwrap_or(1.0);
            let reported: Vec<(usize, f64)> = adjustments
                .iter()
                .filter_map(
                    |(id, _, _)| match layer.get(*id).and_then(|o| o.load.as_ref()) {
                        Some(Value::Num(v)) => Some((*id, *v)),
                        _ => None,
                    },
                )
                .collect();
            let weight = weights.get(name.as_str()).copied().unwrap_or(0.0);
            adjust(&catalog, &adjustments, &mut layer, &reported, weight, nproc);
            let load = sconf
                .load_formula
                .iter()
                .map(|(w, n)| {
                    if n.is_empty() {
                        return *w;
                    }
                    let v = catalog
                        .id(n)
                        .and_then(|id| layer.get(id))
                        .and_then(|o| o.load.clone().or(o.fixed.clone()));
                    match v {
                        Some(Value::Num(x)) => w * x,
                        _ => 0.0,
                    }
                })
                .sum();
            host_index.insert(name.clone(), hosts.len());
            hosts.push(Host {
                name: name.clone(),
                layer,
                groups: memberships.get(name).cloned().unwrap_or_default(),
                user_lists: h.user_lists.clone(),
                xuser_lists: h.xuser_lists.clone(),
                projects: h.projects.clone(),
                xprojects: h.xprojects.clone(),
                load,
                nproc,
                weight,
                reported,
                instances: Vec::new(),
            });
        }
        let mut instances = Vec::new();
        for q in self.queues.values() {
            // Most hosts take a queue's default values: those are parsed once.
            let mut defaults: Option<(Instance, Vec<(String, String)>)> = None;
            for hname in self.queue_hosts_of(q) {
                let Some(&hi) = host_index.get(&hname) else {
                    continue;
                };
                let groups: Vec<&str> = hosts[hi].groups.iter().map(String::as_str).collect();
                let overridden = q.attrs.iter().any(|(_, a)| {
                    a.overrides
                        .iter()
                        .any(|(h, _)| *h == hname || groups.contains(&h.as_str()))
                });
                let (mut inst, thresholds) = if overridden {
                    instance_values(&catalog, q, &hname, &groups)
                } else {
                    defaults
                        .get_or_insert_with(|| instance_values(&catalog, q, "", &[]))
                        .clone()
                };
                inst.host = hi;
                let key = (q.name.clone(), hname.clone());
                inst.unusable = if self.disabled.contains(&key) {
                    Some(Unusable::Disabled)
                } else if self.errored.contains(&key) {
                    Some(Unusable::Error)
                } else if self.suspended_queues.contains(&key) {
                    Some(Unusable::Suspended)
                } else if let Some(why) = (!inst.suspend_thresholds.is_empty())
                    .then(|| self.suspend_alarm(q, &hname))
                    .flatten()
                {
                    Some(Unusable::SuspendAlarm(why))
                } else if !connected.contains(&hname) || !self.is_reachable(&hname, clock) {
                    Some(Unusable::Unreachable)
                } else {
                    overload_message(&catalog, &hosts[hi], &adjustments, &thresholds)
                        .map(Unusable::Overloaded)
                };
                hosts[hi].instances.push(instances.len());
                instances.push(inst);
            }
        }
        let mut order: Vec<usize> = (0..instances.len()).collect();
        order.sort_by(|&a, &b| {
            let (ia, ib) = (&instances[a], &instances[b]);
            let (la, lb) = (hosts[ia.host].load, hosts[ib.host].load);
            let first = match sconf.sort {
                SortMethod::SeqNo => ia.seq_no.cmp(&ib.seq_no).then(la.total_cmp(&lb)),
                SortMethod::Load => la.total_cmp(&lb).then(ia.seq_no.cmp(&ib.seq_no)),
            };
            first
                .then(hosts[ia.host].name.cmp(&hosts[ib.host].name))
                .then(ia.queue.cmp(&ib.queue))
        });
        let usersets = self
            .usersets
            .values()
            .map(|u| (u.name.clone(), u.entries.clone()))
            .collect();
        let mut snap = Snapshot {
            catalog,
            global,
            hosts,
            instances,
            usersets,
            order,
            pes: self.pes.clone(),
            pe_used: HashMap::new(),
            adjustments,
            quota: None,
        };
        // What running jobs hold.
        let index: HashMap<(&str, &str), usize> = snap
            .instances
            .iter()
            .enumerate()
            .map(|(n, i)| ((i.queue.as_str(), snap.hosts[i.host].name.as_str()), n))
            .collect();
        // (what the job asks, the instances and slots it holds, its PE)
        type Hold = (Demand, Vec<(usize, u32)>, Option<String>);
        let mut holds: Vec<Hold> = Vec::new();
        for job in self.jobs.values() {
            let mut d = None;
            for t in job.tasks.placed_states() {
                if let TaskState::Running { grants, pe, .. }
                | TaskState::Deleting { grants, pe, .. } = t
                {
                    let granted: Vec<(usize, u32)> = grants
                        .iter()
                        .filter_map(|g| {
                            index
                                .get(&(g.queue.as_str(), g.host.as_str()))
                                .map(|&i| (i, g.slots))
                        })
                        .collect();
                    let d = d.get_or_insert_with(|| {
                        demand(&snap.catalog, job).unwrap_or_else(|_| Demand {
                            hard: Vec::new(),
                            soft: Vec::new(),
                            queues: Vec::new(),
                            user: String::new(),
                            groups: Vec::new(),
                            project: None,
                            slots: 1,
                            pe: None,
                            part: Part::Whole,
                            granted_pe: None,
                            category: 0,
                            quota_exempt: true,
                        })
                    });
                    holds.push((d.clone(), granted, pe.clone()));
                }
            }
        }
        for (d, granted, pe) in holds {
            if let Some(pe) = pe {
                *snap.pe_used.entry(pe).or_insert(0) += grants_total(&granted);
            }
            snap.debit(&d, &granted, 1.0);
        }
        // The quota counters already hold what the running jobs use.
        snap.quota = self.quota_cycle();
        snap
    }

    /// One scheduling cycle: pending tasks by priority, then submission order, each to
    /// the first candidate queue instance of its category that has what it asks for.
    pub fn schedule(&self, now: i64, connected: &HashSet<String>, clock: f64) -> Vec<Dispatch> {
        let mut snap = self.snapshot_at(connected, clock, Some(now));
        self.dispatch(&mut snap, now)
    }

    /// The dispatch part of a cycle, on a prepared snapshot.
    pub fn dispatch(&self, snap: &mut Snapshot, now: i64) -> Vec<Dispatch> {
        struct Category {
            demand: Demand,
            /// Candidate instances, best first.
            candidates: Vec<usize>,
            /// Candidates before this one cannot take another job of the category.
            cursor: usize,
        }
        /// What makes jobs alike: the same requests by the same user and project (and
        /// advance reservation, which exempts from quotas).
        type Key<'j> = (
            &'j [(String, String)],
            &'j [(String, String)],
            &'j [String],
            &'j str,
            Option<&'j str>,
            Option<&'j (String, String)>,
            Option<u64>,
        );
        let max_aj_instances = self
            .global()
            .get("max_aj_instances")
            .and_then(|v| v.parse::<u32>().ok())
            .filter(|n| *n > 0);
        let mut order: Vec<&Job> = self
            .jobs
            .values()
            .filter(|j| j.tasks.has_pending())
            .collect();
        order.sort_by(|a, b| b.spec.priority.cmp(&a.spec.priority).then(a.id.cmp(&b.id)));
        let mut categories: HashMap<Key, Option<Category>> = HashMap::new();
        let mut out = Vec::new();
        for job in order {
            if job.spec.hold || job.spec.start_after.is_some_and(|t| t > now) {
                continue;
            }
            if job
                .spec
                .hold_jids
                .iter()
                .any(|r| self.predecessor_active(r))
            {
                continue;
            }
            let key: Key = (
                &job.spec.hard_resources,
                &job.spec.soft_resources,
                &job.spec.queues,
                &job.owner.user,
                job.spec.project.as_deref(),
                job.spec.pe.as_ref(),
                job.spec.ar,
            );
            let next_category = categories.len() + 1;
            let entry = categories.entry(key).or_insert_with(|| {
                let mut d = demand(&snap.catalog, job).ok()?;
                d.category = next_category;
                let mut scored: Vec<(usize, usize)> = snap
                    .static_candidates(&d)
                    .into_iter()
                    .map(|i| (snap.soft_violations(&d, i), i))
                    .collect();
                // Stable: instances with fewer soft violations first, else sort order.
                scored.sort_by_key(|(v, _)| *v);
                Some(Category {
                    demand: d,
                    candidates: scored.into_iter().map(|(_, i)| i).collect(),
                    cursor: 0,
                })
            });
            let Some(cat) = entry.as_mut() else {
                continue; // requests the complex no longer has
            };
            if cat.cursor >= cat.candidates.len() {
                continue; // nothing left for this category in this cycle
            }
            let d = &cat.demand;
            // Lowest task first; the ids are produced as they are taken, so a cycle costs
            // what it dispatches, not the size of the array. `running` counts the tasks
            // that hold slots, those dispatched in this cycle included.
            let already = job.tasks.holding_slots() as u32;
            for (running, task_id) in (already..).zip(job.tasks.pending().iter()) {
                if job.spec.max_running_tasks.is_some_and(|tc| running >= tc)
                    || (job.is_array() && max_aj_instances.is_some_and(|m| running >= m))
                {
                    break;
                }
                let (grants, pe) = if let Some(per) = &d.pe {
                    match snap.allocate_pe(d, per, &cat.candidates) {
                        Some((pe, grants)) => (grants, Some(pe)),
                        None => {
                            // Resources only shrink during a cycle: the rest of the
                            // category cannot be placed either.
                            cat.cursor = cat.candidates.len();
                            break;
                        }
                    }
                } else {
                    while cat.cursor < cat.candidates.len() {
                        match snap.check(
                            d,
                            cat.candidates[cat.cursor],
                            Pass::Consumables(d.slots),
                            false,
                        ) {
                            Ok(()) => break,
                            // Full under a rule that decides everywhere: so is every
                            // other instance.
                            Err(Misfit::QuotaEverywhere) => cat.cursor = cat.candidates.len(),
                            Err(_) => cat.cursor += 1,
                        }
                    }
                    let Some(&inst) = cat.candidates.get(cat.cursor) else {
                        break; // nothing left for this category in this cycle
                    };
                    snap.debit(d, &[(inst, d.slots)], 1.0);
                    (vec![(inst, d.slots)], None)
                };
                snap.started(&grants);
                let grants: Vec<Grant> = grants
                    .iter()
                    .map(|&(inst, slots)| Grant {
                        queue: snap.instances[inst].queue.clone(),
                        host: snap.hosts[snap.instances[inst].host].name.clone(),
                        slots,
                    })
                    .collect();
                out.push(Dispatch {
                    job_id: job.id,
                    task_id,
                    queue: grants[0].queue.clone(),
                    host: grants[0].host.clone(),
                    grants,
                    pe,
                });
            }
        }
        out
    }

    /// Could any queue instance ever run this job (its requests against the instances'
    /// configured and last reported values, with nothing running)?
    pub fn could_ever_run(&self, job: &Job) -> Result<(), Vec<String>> {
        let all: HashSet<String> = self.exechosts.keys().cloned().collect();
        let mut snap = self.snapshot(&all, f64::MAX);
        for i in &mut snap.instances {
            i.unusable = None;
        }
        // Nothing running: every consumable at its full capacity.
        for layer in std::iter::once(&mut snap.global)
            .chain(snap.hosts.iter_mut().map(|h| &mut h.layer))
            .chain(snap.instances.iter_mut().map(|i| &mut i.layer))
        {
            for (_, o) in layer.entries.iter_mut() {
                o.used = 0.0;
            }
        }
        if let Some(q) = &snap.quota {
            q.borrow_mut().usage = crate::quota::Usage::default();
        }
        let d = demand(&snap.catalog, job).map_err(|e| vec![e])?;
        let mut reasons = Vec::new();
        for &inst in &snap.order {
            match snap.matches(&d, inst, Pass::All(d.slots)) {
                Ok(()) => return Ok(()),
                Err(m) => {
                    let i = &snap.instances[inst];
                    reasons.push(m.message(&i.queue, &snap.hosts[i.host].name));
                }
            }
        }
        Err(reasons)
    }

    /// `qstat -j` without a job: the pending jobs (not held, not waiting) that some
    /// queue instance would take but for a resource quota rule, and that no instance
    /// takes now.
    pub fn quota_blocked_jobs(
        &self,
        connected: &HashSet<String>,
        clock: f64,
        now: i64,
    ) -> Vec<u64> {
        let snap = self.snapshot_at(connected, clock, Some(now));
        if snap.quota.is_none() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for job in self.jobs.values() {
            if !job.tasks.has_pending()
                || job.spec.hold
                || job.spec.start_after.is_some_and(|t| t > now)
                || job
                    .spec
                    .hold_jids
                    .iter()
                    .any(|r| self.predecessor_active(r))
            {
                continue;
            }
            let Ok(d) = demand(&snap.catalog, job) else {
                continue;
            };
            let mut denied = false;
            let mut runnable = false;
            for &inst in &snap.order {
                if !snap.fits(&d, inst, Pass::Static) {
                    continue;
                }
                match snap.check(&d, inst, Pass::Consumables(d.slots), true) {
                    Ok(()) => runnable = true,
                    Err(Misfit::Quota(_)) => denied = true,
                    Err(_) => {}
                }
            }
            if denied && !runnable {
                out.push(job.id);
            }
        }
        out
    }

    /// Why a job's pending tasks are not dispatched, in SGE's words.
    pub fn explain(
        &self,
        job: &Job,
        connected: &HashSet<String>,
        clock: f64,
        now: i64,
    ) -> Vec<String> {
        let mut reasons = Vec::new();
        if !job.tasks.has_pending() {
            return reasons;
        }
        if job.spec.hold {
            reasons.push("Job is in user hold state".to_string());
        }
        let waiting: Vec<&str> = job
            .spec
            .hold_jids
            .iter()
            .filter(|r| self.predecessor_active(r))
            .map(String::as_str)
            .collect();
        if !waiting.is_empty() {
            reasons.push(format!(
                "Job is waiting for the predecessor jobs {}",
                waiting.join(",")
            ));
        }
        if let Some(t) = job.spec.start_after.filter(|t| *t > now) {
            reasons.push(format!("Job has a start time in the future ({t})"));
        }
        let snap = self.snapshot_at(connected, clock, Some(now));
        let d = match demand(&snap.catalog, job) {
            Ok(d) => d,
            Err(e) => {
                reasons.push(e);
                return reasons;
            }
        };
        let mut dropped_for_load_or_full = 0;
        for &inst in &snap.order {
            let i = &snap.instances[inst];
            let host = &snap.hosts[i.host].name;
            match snap.matches(&d, inst, Pass::All(d.slots)) {
                Ok(()) => {}
                Err(m) => {
                    if matches!(m, Misfit::Unusable(Unusable::Overloaded(_)))
                        || slots_exhausted(&snap, &m)
                    {
                        dropped_for_load_or_full += 1;
                    }
                    if matches!(m, Misfit::Quota(_)) {
                        let text = m.message(&i.queue, host);
                        if !reasons.contains(&text) {
                            reasons.push(text);
                        }
                        continue;
                    }
                    let text = if slots_exhausted(&snap, &m) {
                        format!(
                            "queue instance \"{}@{host}\" dropped because it is full",
                            i.queue
                        )
                    } else {
                        m.message(&i.queue, host)
                    };
                    reasons.push(text);
                }
            }
        }
        if !snap.order.is_empty() && dropped_for_load_or_full == snap.order.len() {
            reasons.push("All queues dropped because of overload or full".to_string());
        }
        if let Some(per) = &d.pe {
            let mut trial = snap.clone();
            let candidates = trial.static_candidates(&d);
            if trial.allocate_pe(&d, per, &candidates).is_none() {
                let mut trial = snap.clone();
                let any = PeRequest {
                    min: 1,
                    ..per.clone()
                };
                let offered = trial
                    .allocate_pe(&d, &any, &candidates)
                    .map_or(0, |(_, g)| grants_total(&g));
                reasons.push(format!(
                    "cannot run in PE \"{}\" because it only offers {offered} slots",
                    per.pattern
                ));
            }
        }
        reasons
    }
}

fn grants_total(grants: &[(usize, u32)]) -> u32 {
    grants.iter().map(|(_, n)| n).sum()
}

/// Is this misfit "no slot left in the queue instance"?
fn slots_exhausted(snap: &Snapshot, m: &Misfit) -> bool {
    let _ = snap;
    matches!(m, Misfit::Request { level: Level::Queue, name, .. } if name == "slots")
}

/// Add the load of recently started jobs to a host's adjusted load values: `amount *
/// weight`, divided by the host's processors for the `np_*` values.
fn adjust(
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

/// Is a host over one of a queue's `load_thresholds` (`np_load_avg=1.75,mem_free=1G`)?
/// The message says which, as SGE prints it: `np_load_avg=1.888018 (= 0.155518 + 0.50
/// * 6.930000 with nproc=2) >= 1.75`.
fn overload_message(
    catalog: &Catalog,
    host: &Host,
    adjustments: &[(usize, f64, String)],
    thresholds: &[(String, String)],
) -> Option<String> {
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
            return Some(format!(
                "{}={} {how} {} {}",
                a.name,
                display(a.value_type, current),
                value::relop_str(a.relop),
                limit
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests;
