//! The resource model of one cycle.
//!
//! A [`Snapshot`] holds the three layers of the complex specification: the global host,
//! every exec host (its `complex_values` and the load values its execd reported) and every
//! queue instance (the queue's limits, `slots`, `complex_values` and names), each with what
//! running jobs consume of every consumable. A job's requests resolve against the
//! complex into a [`Demand`].

use gantry_proto::{ComplexAttr, Consumable, JobId, Relop, Requestable, ValueType};
use std::collections::{BTreeMap, HashMap};

use crate::calendar::{BookingId, Calendar, ResourceId};
use crate::time::{Span, Time};
use gantry_common::job::Job;
use gantry_common::value::{self, Value};

/// The layer a value is on, as SGE prints it (`g`, `h`, `q` in `hl:mem_free=...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Global,
    Host,
    Queue,
}

impl Level {
    pub(crate) fn letter(self) -> char {
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
    /// Where what jobs consume of it is booked (consumables only; none until the
    /// first booking).
    pub resource: Option<ResourceId>,
}

/// The attributes one layer defines, with a direct index by attribute.
#[derive(Debug, Clone, Default)]
pub struct Layer {
    pub(crate) entries: Vec<(usize, Offer)>,
    /// Attribute -> position in `entries` + 1 (0: not defined here).
    pub(crate) index: Vec<u32>,
}

impl Layer {
    pub fn get(&self, attr: usize) -> Option<&Offer> {
        match self.index.get(attr) {
            Some(&n) if n > 0 => Some(&self.entries[n as usize - 1].1),
            _ => None,
        }
    }

    pub(crate) fn entry(&mut self, attr: usize) -> &mut Offer {
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

    /// Book `amount` of an attribute this layer defines over `[from, until)` (nothing
    /// where it does not define it): added to the latest booking of the same interval,
    /// or with `ids`, a booking of its own whose id goes there (to release it alone).
    pub(crate) fn book(
        &mut self,
        calendar: &mut Calendar,
        attr: usize,
        amount: f64,
        from: Time,
        until: Option<Time>,
        ids: Option<&mut Vec<BookingId>>,
    ) {
        let Some(&n) = self.index.get(attr) else {
            return;
        };
        if n == 0 {
            return;
        }
        let offer = &mut self.entries[n as usize - 1].1;
        let capacity = match &offer.fixed {
            Some(Value::Num(c)) => *c,
            _ => f64::INFINITY,
        };
        let resource = *offer
            .resource
            .get_or_insert_with(|| calendar.add_resource(capacity));
        // The resource was made by this calendar: booking on it cannot fail.
        match ids {
            Some(ids) => ids.extend(calendar.book(resource, amount, from, until)),
            None => {
                let _ = calendar.add(resource, amount, from, until);
            }
        }
    }

    /// Take over the calendar resources of `old`, the same layer before its values
    /// changed, with the bookings on them (each resource's capacity set to this layer's
    /// value). False, and nothing taken, when the two define different attributes:
    /// what is booked must then be booked again.
    pub(crate) fn take_resources(&mut self, old: &Layer, calendar: &mut Calendar) -> bool {
        if old.entries.len() != self.entries.len()
            || old
                .entries
                .iter()
                .any(|(attr, _)| self.get(*attr).is_none())
        {
            return false;
        }
        for (attr, offer) in &old.entries {
            if let Some(r) = offer.resource {
                let here = self.entry(*attr);
                here.resource = Some(r);
                let capacity = match &here.fixed {
                    Some(Value::Num(c)) => *c,
                    _ => f64::INFINITY,
                };
                // The resource is on this calendar: setting its capacity cannot fail.
                let _ = calendar.set_capacity(r, capacity);
            }
        }
        true
    }

    /// Forget every booking (the calendar they were on is gone).
    pub(crate) fn unbook_all(&mut self) {
        for (_, o) in &mut self.entries {
            o.resource = None;
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &(usize, Offer)> {
        self.entries.iter()
    }
}

/// The complex, indexed by name and shortcut.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    pub attrs: Vec<ComplexAttr>,
    pub(crate) by_name: HashMap<String, usize>,
    /// Consumables with a default other than zero: (attribute, amount).
    pub(crate) defaults: Vec<(usize, f64)>,
    /// FORCED attributes.
    pub(crate) forced: Vec<usize>,
    /// EXCL attributes (exclusive host access): every job books one, a whole one when
    /// it asks for exclusive use, [`EXCL_SHARED`] otherwise.
    pub(crate) exclusive: Vec<usize>,
}

/// What a job that does not ask for exclusive use books of an EXCL attribute (whose
/// capacity is 1): 2^-20, a power of two, so that bookings added and taken away again
/// leave exactly 1, large against the matching's rounding tolerance (1e-9). An exclusive
/// job (booking 1) fits only where nothing is booked; the others (up to 2^20 on one
/// host) only where no exclusive job is.
pub const EXCL_SHARED: f64 = 1.0 / 1_048_576.0;

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
        let exclusive = list
            .iter()
            .enumerate()
            .filter(|(_, a)| a.relop == gantry_proto::Relop::Excl && a.consumable != Consumable::No)
            .map(|(i, _)| i)
            .collect();
        Catalog {
            attrs: list.to_vec(),
            by_name,
            defaults,
            forced,
            exclusive,
        }
    }

    pub fn id(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    pub fn parse(&self, attr: usize, text: &str) -> Option<Value> {
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
    /// `-soft -q`: preferred queues.
    pub soft_queues: Vec<String>,
    /// `-masterq`: where a parallel job's master task may go (those queue instances
    /// may take it even outside its `-q` list, as its master only).
    pub masterq: Vec<String>,
    /// `-ckpt`: only instances whose `ckpt_list` names it take the job.
    pub ckpt: Option<String>,
    pub user: String,
    /// The owner's Unix groups, for `@group` userset entries.
    pub groups: Vec<String>,
    pub project: Option<String>,
    /// The account string (`-A`): the group of hierarchical group quotas it names.
    pub account: String,
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
    /// Which queue types may take it (`qtype`).
    pub queue_kind: QueueKind,
    /// How long a task runs at most: its `h_rt` request, else its `s_rt`; None: not
    /// known (it holds what it takes from its start on).
    pub run_time: Option<Span>,
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
    /// The demand with `default` as its run time if it has none (`default_duration`).
    pub fn with_default_run_time(mut self, default: Option<Span>) -> Demand {
        if self.run_time.is_none() {
            self.run_time = default;
        }
        self
    }

    /// When a task placed at `from` ends at the latest (None: not known).
    pub fn until(&self, from: Time) -> Option<Time> {
        self.run_time.map(|r| from + r)
    }

    /// The job's hard requests as SGE's scheduler messages list them (`-l` part):
    /// `name=value,...` as asked (defaults and implicit requests left out), `NONE`
    /// without any.
    pub fn request_list(&self, catalog: &Catalog) -> String {
        let list: Vec<String> = self
            .hard
            .iter()
            .filter(|r| !r.implicit)
            .map(|r| format!("{}={}", catalog.attrs[r.attr].name, r.text))
            .collect();
        if list.is_empty() {
            "NONE".to_string()
        } else {
            list.join(",")
        }
    }

    /// The same demand with only its per-slot part (`JOB` consumables left out), or only
    /// its per-job part.
    pub(crate) fn split(&self, catalog: &Catalog) -> (Demand, Demand) {
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
    pub(crate) fn consumables<'a>(
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

/// Why a job's requests do not resolve against the complex: the job's error, as
/// `qstat -j` words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DemandError {
    /// An attribute the complex no longer has.
    #[error("job requests unknown resource \"{0}\"")]
    UnknownResource(String),
    /// A value the attribute's type does not take.
    #[error("job requests an invalid value \"{name}={value}\"")]
    InvalidValue { name: String, value: String },
    /// A `-pe` slot range that is no range.
    #[error("job requests an invalid slot range \"{0}\"")]
    InvalidSlotRange(String),
}

/// Resolve a job's requests. An attribute the complex no longer has is the job's error.
/// The queue types a job may run in, as SGE's scheduler decides it: a batch job in
/// `BATCH` queues, an interactive one started now (`qrsh`, `qlogin`, `-now y`) in
/// `INTERACTIVE` ones, one that may wait (`-now n`) in either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueKind {
    Batch,
    Interactive,
    Either,
}

impl QueueKind {
    pub fn of(spec: &gantry_proto::JobSpec) -> QueueKind {
        match (&spec.script, spec.immediate) {
            (gantry_proto::JobScript::Interactive { .. }, true) => QueueKind::Interactive,
            (gantry_proto::JobScript::Interactive { .. }, false) => QueueKind::Either,
            _ => QueueKind::Batch,
        }
    }
}

pub fn demand(catalog: &Catalog, job: &Job) -> Result<Demand, DemandError> {
    let resolve = |list: &[(String, String)]| -> Result<Vec<Request>, DemandError> {
        list.iter()
            .map(|(name, text)| {
                let attr = catalog
                    .id(name)
                    .ok_or_else(|| DemandError::UnknownResource(name.clone()))?;
                let value = catalog
                    .parse(attr, text)
                    .ok_or_else(|| DemandError::InvalidValue {
                        name: name.clone(),
                        value: text.clone(),
                    })?;
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
    // EXCL: a job asking for exclusive use books all of it; every other job a sliver,
    // so that it stays off a host an exclusive job holds.
    for &i in &catalog.exclusive {
        match hard.iter_mut().find(|r| r.attr == i) {
            Some(r) if r.value == Value::Num(1.0) => {}
            Some(r) => r.value = Value::Num(EXCL_SHARED),
            None => hard.push(Request {
                attr: i,
                value: Value::Num(EXCL_SHARED),
                text: "false".to_string(),
                implicit: true,
            }),
        }
    }
    let run_time = run_time(catalog, &hard);
    Ok(Demand {
        hard,
        soft,
        queues: job.spec.queues.clone(),
        masterq: job.spec.masterq.clone(),
        ckpt: job.spec.ckpt.clone(),
        soft_queues: job.spec.soft_queues.clone(),
        user: job.owner.user.clone(),
        groups: job.owner.groups.clone(),
        project: job.spec.project.clone(),
        account: job.spec.account.clone(),
        slots: 1,
        pe: match &job.spec.pe {
            None => None,
            Some((pattern, range)) => {
                let (min, max) = gantry_common::pe::parse_slot_range(range)
                    .ok_or_else(|| DemandError::InvalidSlotRange(range.clone()))?;
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
        queue_kind: QueueKind::of(&job.spec),
        run_time,
    })
}

/// A demand's run time: its `h_rt` request, else its `s_rt` (both TIME values, in
/// seconds).
fn run_time(catalog: &Catalog, hard: &[Request]) -> Option<Span> {
    ["h_rt", "s_rt"].iter().find_map(|name| {
        let attr = catalog.id(name)?;
        hard.iter()
            .find(|r| r.attr == attr && !r.implicit)
            .and_then(|r| match r.value {
                Value::Num(secs) if secs.is_finite() && secs >= 0.0 => {
                    Some(Span::from_millis((secs * 1000.0).round() as i64))
                }
                _ => None,
            })
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

/// What a host's configuration and last load report give its part of a snapshot.
#[derive(Debug, Clone)]
pub struct HostValues {
    /// Its layer, before any adjustment for recent starts.
    pub layer: Layer,
    /// Its `num_proc`.
    pub nproc: f64,
    /// The reported values of the adjusted load values (attribute, value).
    pub reported: Vec<(usize, f64)>,
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
    /// `qtype` has `INTERACTIVE` (advance reservations with `-now y` go only there).
    pub interactive: bool,
    pub user_lists: Vec<String>,
    pub xuser_lists: Vec<String>,
    pub projects: Vec<String>,
    pub xprojects: Vec<String>,
    /// Parallel environments the instance offers (`pe_list`).
    pub pe_list: Vec<String>,
    /// Checkpointing environments the instance offers (`ckpt_list`).
    pub ckpt_list: Vec<String>,
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

/// The jobs the master keeps, by id: a persistent map, so that a copy for the
/// scheduler's thread costs nothing.
pub type JobTable = imbl::OrdMap<JobId, std::sync::Arc<Job>>;

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
    /// The parallel environment slots running tasks and reservations hold, each over
    /// its interval: what a reservation's window is checked against.
    pub(crate) pe_holds: Vec<PeHold>,
    /// The parallel environments some hold takes slots of only from a time to come (a
    /// reservation's window): placing in them counts the slots over the run time.
    pub(crate) pe_ahead: std::collections::HashSet<String>,
    /// `job_load_adjustments`: (load value, amount per job slot, the amount as written).
    pub adjustments: Vec<(usize, f64, String)>,
    /// The time the snapshot is taken at: "now" for every question it answers.
    pub now: Time,
    /// What running tasks, and the tasks this cycle places, hold of every consumable
    /// on every layer, over time.
    pub calendar: Calendar,
    /// Queue instance by (queue, host), for what names instances (running tasks'
    /// grants, reservations).
    pub(crate) instance_index: InstanceIndex,
    /// `default_duration`: the run time of a job without `h_rt` (None: unknown).
    pub default_duration: Option<Span>,
    /// The demands of the running jobs, by job, with the job they were resolved from:
    /// a snapshot kept from one cycle to the next resolves only the jobs that changed
    /// (the catalog they were resolved against is the base's, rebuilt with it).
    pub(crate) running_demands:
        HashMap<JobId, (std::sync::Arc<Job>, Demand), foldhash::fast::RandomState>,
}

/// Slots of a parallel environment held over `[from, until)` (None: from then on).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PeHold {
    pub pe: String,
    pub slots: u32,
    pub from: Time,
    pub until: Option<Time>,
}

impl Snapshot {
    /// The slots of every queue instance that can take jobs (its configured `slots`).
    pub fn slot_capacity(&self) -> f64 {
        let Some(slots) = self.catalog.id("slots") else {
            return 0.0;
        };
        self.instances
            .iter()
            .filter(|i| i.unusable.is_none())
            .filter_map(|i| match i.layer.get(slots)?.fixed.as_ref()? {
                gantry_common::value::Value::Num(n) => Some(*n),
                _ => None,
            })
            .sum()
    }

    /// Slots of a parallel environment held over an interval: counted as used now
    /// when it has begun, kept for questions about times to come.
    pub(crate) fn hold_pe(&mut self, h: PeHold) {
        if h.from <= self.now {
            *self.pe_used.entry(h.pe.clone()).or_insert(0) += h.slots;
        } else {
            self.pe_ahead.insert(h.pe.clone());
        }
        self.pe_holds.push(h);
    }

    /// The slots of parallel environment `pe` in use for a task placed now until
    /// `until` (None: from now on).
    pub(crate) fn pe_in_use(&self, pe: &str, until: Option<Time>) -> u32 {
        if self.pe_ahead.contains(pe) {
            pe_peak(&self.pe_holds, pe, self.now, until.unwrap_or(Time::MAX))
        } else {
            self.pe_used.get(pe).copied().unwrap_or(0)
        }
    }
}

/// The most slots of parallel environment `pe` the holds take at any instant of
/// `[from, until)`.
pub(crate) fn pe_peak(holds: &[PeHold], pe: &str, from: Time, until: Time) -> u32 {
    let mut level: i64 = 0;
    // (time, change): ends before starts at the same instant (half-open).
    let mut events: Vec<(Time, i64)> = Vec::new();
    for h in holds.iter().filter(|h| h.pe == pe) {
        if h.from >= until || h.until.is_some_and(|u| u <= from) {
            continue;
        }
        if h.from <= from {
            level += h.slots as i64;
        } else {
            events.push((h.from, h.slots as i64));
        }
        if let Some(u) = h.until.filter(|u| *u < until) {
            events.push((u, -(h.slots as i64)));
        }
    }
    events.sort_unstable();
    let mut peak = level;
    for (_, change) in events {
        level += change;
        peak = peak.max(level);
    }
    peak.max(0) as u32
}

/// Queue instances by queue and host name: per host, its instances (a handful).
#[derive(Debug, Clone, Default)]
pub struct InstanceIndex {
    by_host: HashMap<String, Vec<(String, usize)>, foldhash::fast::RandomState>,
    /// Per queue instance, its place by host name, then queue name: the candidate
    /// order's last tie-break, without comparing names in every cycle.
    pub(crate) rank: Vec<u32>,
}

impl InstanceIndex {
    pub fn get(&self, queue: &str, host: &str) -> Option<usize> {
        self.by_host
            .get(host)?
            .iter()
            .find(|(q, _)| q == queue)
            .map(|&(_, i)| i)
    }
}

impl Snapshot {
    /// Granted instances and slots by their queue and host names.
    pub fn grants_named(&self, grants: &[(usize, u32)]) -> Vec<gantry_proto::Grant> {
        grants
            .iter()
            .map(|&(inst, slots)| gantry_proto::Grant {
                queue: self.instances[inst].queue.clone(),
                host: self.hosts[self.instances[inst].host].name.clone(),
                slots,
            })
            .collect()
    }

    /// The snapshot with its instance index built.
    pub(crate) fn indexed(mut self) -> Snapshot {
        let mut index = InstanceIndex::default();
        for (n, i) in self.instances.iter().enumerate() {
            index
                .by_host
                .entry(self.hosts[i.host].name.clone())
                .or_default()
                .push((i.queue.clone(), n));
        }
        let mut by_name: Vec<usize> = (0..self.instances.len()).collect();
        by_name.sort_by(|&a, &b| {
            let (ia, ib) = (&self.instances[a], &self.instances[b]);
            self.hosts[ia.host]
                .name
                .cmp(&self.hosts[ib.host].name)
                .then(ia.queue.cmp(&ib.queue))
        });
        index.rank = vec![0; self.instances.len()];
        for (rank, inst) in by_name.into_iter().enumerate() {
            index.rank[inst] = rank as u32;
        }
        self.instance_index = index;
        self
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
pub(crate) fn effective<'a>(attr: &ComplexAttr, o: &'a Offer) -> Option<(&'a Value, char)> {
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
/// What is left of an offer with `used` of it booked: the capacity less what is used,
/// or the reported load value where that is less (and the source, `c` or `l`).
pub fn available(o: &Offer, used: f64) -> Option<(f64, char)> {
    let capacity = match &o.fixed {
        Some(Value::Num(c)) => Some((c - used, 'c')),
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
