//! The dispatch cycle and its explanations, over a [`ClusterView`].
//!
//! Jobs with the same requests form a category: their static match (everything but
//! consumables) is computed once per cycle, and a category nothing can run any more is
//! skipped for the rest of the cycle.

use std::collections::{HashMap, HashSet};

use gantry_common::formula::Formula;
use gantry_common::job::{Job, TaskState};
use gantry_common::value::{self, Value};
use gantry_common::{conf, queue, schedconf};
use gantry_proto::Grant;

use crate::calendar::Calendar;
use crate::groups::DispatchPass;
use crate::matching::*;
use crate::model::*;
use crate::order::{JobOrder, PriorityThenSubmission};
use crate::place::{category_key, grants_total, Category, CategoryKey};
use crate::time::{Span, Time};
use crate::view::ClusterView;

pub use crate::judge::ThresholdActions;

/// Why no queue instance could ever run a job (`qsub -w e|v`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CannotRun {
    /// Its requests do not resolve against the complex.
    Demand(DemandError),
    /// Every queue instance turns it away, each for the reason given (in SGE's words,
    /// one per instance).
    Nowhere(Vec<String>),
}

impl CannotRun {
    /// The reasons, one line each.
    pub fn reasons(&self) -> Vec<String> {
        match self {
            CannotRun::Demand(e) => vec![e.to_string()],
            CannotRun::Nowhere(reasons) => reasons.clone(),
        }
    }
}

/// What the master notes between cycles, for [`ClusterView::cycle_due`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Trigger {
    /// The cluster state changed: a submission, a task's end, a deletion, a
    /// configuration change, an execd connecting or leaving.
    pub state_changed: bool,
    /// A load report arrived, or a host's reachability changed.
    pub loads_changed: bool,
    /// When the last cycle ran (none yet: one is due as soon as work is pending).
    pub last_cycle: Option<Time>,
}

impl Trigger {
    /// A cycle ran at `now`: nothing has changed since.
    pub fn ran(now: Time) -> Trigger {
        Trigger {
            last_cycle: Some(now),
            ..Trigger::default()
        }
    }
}

/// What one cycle decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decisions {
    /// The tasks to start, in the order they were placed.
    pub dispatches: Vec<Dispatch>,
    /// How many quota usage counters the cycle used: the caller keeps it for the next
    /// cycle's first allocation ([`crate::quota::QuotaBook::note_cycle_counters`]).
    pub quota_counters: usize,
    /// `-now y` jobs this cycle saw and could not start whole (held, waiting, or no room
    /// for every pending task): they are not to wait, so the caller removes them.
    pub immediate_unplaced: Vec<u64>,
    /// The reservations the cycle made (`-R y` jobs that could not start), in the order
    /// made.
    pub reservations: Vec<crate::backfill::Reservation>,
    /// With group quotas, the allocation the cycle placed under.
    pub groups: Option<crate::groups::Allocation>,
    /// A quiet cycle: nothing changed that could decide anything, and it decided
    /// nothing without passing over the pending jobs (see [`crate::settled`]).
    pub quiet: bool,
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
    /// `schedule_interval`: load values alone start a cycle at most this often.
    pub interval: Span,
    /// `max_reservation`: at most so many `-R y` jobs get a reservation per cycle.
    pub max_reservation: u32,
    /// `default_duration`: the run time taken for a job without `h_rt` (None:
    /// `INFINITY`, it holds what it takes from its start on).
    pub default_duration: Option<Span>,
    /// `DURATION_OFFSET` in `params`: a job in an advance reservation starts only when
    /// its run time and this end before the reservation does.
    pub duration_offset: Span,
    /// `group_quota_rounds`: with group quotas, at most so many passes share out what
    /// groups could not use (HTCondor's `GROUP_QUOTA_MAX_ALLOCATION_ROUNDS`).
    pub group_quota_rounds: u32,
    /// `group_sort`: groups are served in ascending order of it (root last).
    pub group_sort: Formula,
    /// `group_slot_weight`: what a job's slots weigh in group quotas.
    pub group_slot_weight: Formula,
}

impl Default for SchedConf {
    fn default() -> Self {
        SchedConf {
            sort: SortMethod::Load,
            load_formula: vec![(1.0, "np_load_avg".into())],
            load_adjustments: vec![("np_load_avg".into(), "0.50".into())],
            decay_secs: 450.0,
            interval: Span::from_secs(1),
            max_reservation: 0,
            default_duration: None,
            duration_offset: Span::from_secs(gantry_common::ar::DEFAULT_DURATION_OFFSET),
            group_quota_rounds: 3,
            group_sort: Formula::Apply(
                '/',
                Box::new(Formula::Name("usage".into())),
                Box::new(Formula::Name("quota".into())),
            ),
            group_slot_weight: Formula::Name("slots".into()),
        }
    }
}

pub(crate) fn list_value(
    a: Option<&gantry_proto::QueueAttr>,
    host: &str,
    groups: &[&str],
) -> Vec<String> {
    a.map(|a| conf::split_list(queue::value_on_host(a, host, groups)))
        .unwrap_or_default()
        .into_iter()
        .filter(|s| !s.eq_ignore_ascii_case("NONE"))
        .collect()
}

/// The queue attributes that are complex attributes of the queue layer.
pub(crate) const QUEUE_VALUES: &[&str] = &[
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
pub(crate) fn instance_values(
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
        interactive: on_host("qtype").is_none_or(|t| {
            t.split_whitespace()
                .any(|w| w.eq_ignore_ascii_case("INTERACTIVE"))
        }),
        user_lists: list_value(q.attr("user_lists"), host, groups),
        xuser_lists: list_value(q.attr("xuser_lists"), host, groups),
        projects: list_value(q.attr("projects"), host, groups),
        xprojects: list_value(q.attr("xprojects"), host, groups),
        pe_list: list_value(q.attr("pe_list"), host, groups),
        ckpt_list: list_value(q.attr("ckpt_list"), host, groups),
        thresholds: pairs("load_thresholds"),
        suspend_thresholds: pairs("suspend_thresholds"),
        unusable: None,
    };
    let thresholds = inst.thresholds.clone();
    (inst, thresholds)
}

impl<'a> ClusterView<'a> {
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
        if let Some(t) = conf
            .get("schedule_interval")
            .and_then(|t| value::parse_time(t).ok())
        {
            c.interval = Span::from_millis((t * 1000.0).round() as i64);
        }
        if let Some(n) = conf
            .get("max_reservation")
            .and_then(|v| v.parse::<u32>().ok())
        {
            c.max_reservation = n;
        }
        if let Some(n) = conf
            .get("group_quota_rounds")
            .and_then(|v| v.parse::<u32>().ok())
        {
            c.group_quota_rounds = n;
        }
        let formula = |key: &str, known: fn(&str) -> bool| {
            conf.get(key).and_then(|f| Formula::parse(f, known).ok())
        };
        if let Some(f) = formula("group_sort", schedconf::is_group_sort_name) {
            c.group_sort = f;
        }
        if let Some(f) = formula("group_slot_weight", |_| true) {
            c.group_slot_weight = f;
        }
        c.default_duration = conf
            .get("default_duration")
            .filter(|v| !v.eq_ignore_ascii_case("INFINITY"))
            .and_then(|v| value::parse_time(v).ok())
            .filter(|t| t.is_finite() && *t > 0.0)
            .map(|t| Span::from_millis((t * 1000.0).round() as i64));
        if let Some(p) = conf.get("params") {
            c.duration_offset = Span::from_secs(gantry_common::ar::duration_offset(p));
        }
        c
    }

    /// Is a cycle due at `now`? Only with pending work, and only when something a cycle
    /// reads has changed since the last one: the cluster state (at once), the load
    /// values or the hosts' reachability (at most once per `schedule_interval`), or time
    /// itself (a job's start time has come; a recent start's load adjustment decays).
    pub fn cycle_due(&self, trigger: &Trigger, now: Time) -> bool {
        let pending = || self.jobs.values().any(|j| j.tasks.has_pending());
        let Some(last) = trigger.last_cycle else {
            return pending();
        };
        if trigger.state_changed {
            return pending();
        }
        let conf = self.sched_conf();
        if now.since(last) < conf.interval {
            return false;
        }
        let (last_s, now_s) = (last.secs(), now.secs());
        let start_time_came = self.jobs.values().any(|j| {
            j.tasks.has_pending() && j.spec.start_after.is_some_and(|t| t > last_s && t <= now_s)
        });
        let decaying = !conf.load_adjustments.is_empty()
            && conf.decay_secs > 0.0
            && self.jobs.values().any(|j| {
                j.tasks.placed_states().any(|t| {
                    matches!(t, TaskState::Running { start_time, .. }
                        if ((now_s - start_time) as f64) < conf.decay_secs + 1.0)
                })
            });
        (trigger.loads_changed || start_time_came || decaying) && pending()
    }

    /// Build the snapshot a cycle works on at `now`: every layer's values, and what the
    /// running jobs hold of every consumable; the load values as reported.
    pub fn snapshot(&self, connected: &HashSet<String>, now: Time) -> Snapshot {
        self.snapshot_at(connected, now, false)
    }

    /// The snapshot, with (`adjusted`) the load of jobs started less than
    /// `load_adjustment_decay_time` before `now` added to their hosts' load values, as
    /// the scheduler sees them.
    pub fn snapshot_at(&self, connected: &HashSet<String>, now: Time, adjusted: bool) -> Snapshot {
        let mut snap = self.snapshot_base();
        self.finish_snapshot(&mut snap, connected, now, adjusted);
        snap
    }

    /// `job_load_adjustments` against the complex: (load value, amount per job slot,
    /// the amount as written).
    fn load_adjustments(&self, catalog: &Catalog) -> Vec<(usize, f64, String)> {
        self.sched_conf()
            .load_adjustments
            .iter()
            .filter_map(|(name, amount)| {
                let id = catalog.id(name)?;
                Some((id, value::parse_double(amount).ok()?, amount.clone()))
            })
            .collect()
    }

    /// The part of a snapshot that only the configuration and the hosts' load reports
    /// change: the catalog, every layer's configured and reported values, the queue
    /// instances' own values. Nothing is booked and no queue instance judged yet (see
    /// [`ClusterView::finish_snapshot`]).
    pub(crate) fn snapshot_base(&self) -> Snapshot {
        let catalog = Catalog::new(self.complexes);
        let adjustments = self.load_adjustments(&catalog);
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
        let memberships = crate::view::memberships(self.hostgroups);
        let mut hosts = Vec::new();
        let mut host_index = HashMap::new();
        for (name, h) in self.exechosts {
            let values = self.host_values(&catalog, &adjustments, name);
            host_index.insert(name.clone(), hosts.len());
            hosts.push(Host {
                name: name.clone(),
                layer: values.layer,
                groups: memberships.get(name).cloned().unwrap_or_default(),
                user_lists: h.user_lists.clone(),
                xuser_lists: h.xuser_lists.clone(),
                projects: h.projects.clone(),
                xprojects: h.xprojects.clone(),
                load: 0.0,
                nproc: values.nproc,
                weight: 0.0,
                reported: values.reported,
                instances: Vec::new(),
            });
        }
        let mut instances = Vec::new();
        for q in self.queues.values() {
            // Most hosts take a queue's default values: those are parsed once.
            let mut defaults: Option<Instance> = None;
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
                let mut inst = if overridden {
                    instance_values(&catalog, q, &hname, &groups).0
                } else {
                    defaults
                        .get_or_insert_with(|| instance_values(&catalog, q, "", &[]).0)
                        .clone()
                };
                inst.host = hi;
                hosts[hi].instances.push(instances.len());
                instances.push(inst);
            }
        }
        let usersets = self
            .usersets
            .values()
            .map(|u| (u.name.clone(), u.entries.clone()))
            .collect();
        Snapshot {
            catalog,
            global,
            hosts,
            instances,
            usersets,
            order: Vec::new(),
            pes: self.pes.clone(),
            pe_used: HashMap::new(),
            pe_holds: Vec::new(),
            pe_ahead: Default::default(),
            group_order: None,
            group_allocation: None,
            adjustments,
            now: Time::from_secs(0),
            calendar: Calendar::new(),
            gates: Default::default(),
            instance_index: InstanceIndex::default(),
            default_duration: None,
            reservations: Vec::new(),
            running_demands: Default::default(),
            settled: None,
            quota_places: None,
        }
        .indexed()
    }

    /// What a host's configuration and its last load report give its layer, before
    /// any adjustment for recent starts.
    pub(crate) fn host_values(
        &self,
        catalog: &Catalog,
        adjustments: &[(usize, f64, String)],
        name: &str,
    ) -> HostValues {
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
        if let Some(id) = catalog.id("hostname") {
            layer.set_fixed(id, Value::Text(name.to_string()));
        }
        for (k, v) in self
            .exechosts
            .get(name)
            .map_or(&[][..], |h| h.complex_values.as_slice())
        {
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
        let reported = adjustments
            .iter()
            .filter_map(
                |(id, _, _)| match layer.get(*id).and_then(|o| o.load.as_ref()) {
                    Some(Value::Num(v)) => Some((*id, *v)),
                    _ => None,
                },
            )
            .collect();
        HostValues {
            layer,
            nproc,
            reported,
        }
    }

    /// Make a snapshot's base ready for a cycle at `now`: forget what an earlier cycle
    /// booked on it, add the load of recent starts to the hosts' values (`adjusted`),
    /// judge every queue instance (disabled, unreachable, over a threshold), order the
    /// candidates, and book what the running tasks hold. Whatever a cycle changes in a
    /// snapshot is set afresh here, so a snapshot kept from the last cycle comes out as
    /// a fresh one would.
    pub(crate) fn finish_snapshot(
        &self,
        snap: &mut Snapshot,
        connected: &HashSet<String>,
        now: Time,
        adjusted: bool,
    ) {
        snap.unbook_everything();
        snap.pe_used.clear();
        snap.pe_holds.clear();
        snap.pe_ahead.clear();
        self.judge_instances(snap, connected, now, adjusted, None);
        self.book_running(snap, now, |job| !self.in_holding_reservation(job));
        snap.book_reservations(self.ars.values());
        self.open_gates(snap);
    }

    /// The admit stage's gates for a cycle on `snap`, booked with what runs: the quota
    /// sets, and with group quotas the groups' allocation and the order they are
    /// served in.
    pub(crate) fn open_gates(&self, snap: &mut Snapshot) {
        // The quota counters already hold what the running jobs use.
        let mut quota = self.quota_book.cycle();
        if let Some(q) = &mut quota {
            q.keep_places(snap.quota_places.take());
        }
        snap.gates.get_mut().quota = quota;
        snap.group_order = None;
        snap.group_allocation = None;
        snap.gates.get_mut().groups = None;
        if let Some((allocation, gate, order)) = self.group_quotas(snap) {
            snap.gates.get_mut().groups = Some(gate);
            snap.group_order = Some(order);
            snap.group_allocation = Some(allocation);
        }
    }

    /// One scheduling cycle: pending tasks by priority, then submission order, each to
    /// the first candidate queue instance of its category that has what it asks for.
    pub fn schedule(&self, now: Time, connected: &HashSet<String>) -> Decisions {
        let mut snap = self.snapshot_at(connected, now, true);
        self.decide_on(&mut snap, now)
    }

    /// The cycle's decisions on a finished snapshot (see
    /// [`ClusterView::finish_snapshot`]).
    pub(crate) fn decide_on(&self, snap: &mut Snapshot, now: Time) -> Decisions {
        let adjusted: Vec<usize> = snap.adjustments.iter().map(|(a, ..)| *a).collect();
        if let Some(q) = snap.gates.get_mut().quota.as_mut() {
            // What earlier questions on these gates (a quiet cycle's samples) worked
            // out per category does not hold for this cycle's categories.
            q.forget_categories();
            // A cycle that places jobs from now only, each taking what it counts from
            // its host's configured capacity, needs no gate for the quota counters that
            // capacity bounds. Not so when it may reserve (a reservation counts whenever
            // it begins), when a dynamic limit reads a value the cycle's own starts
            // move (the load adjustments), or when a job asks for a negative amount
            // (which gives a host more than its capacity).
            let max_reservation = self.sched_conf().max_reservation;
            let unbounded = q.quotas.dynamic_limits_read(&adjusted)
                || self.jobs.values().any(|j| {
                    (max_reservation > 0 && j.spec.reserve && j.tasks.has_pending())
                        || j.spec
                            .hard_resources
                            .iter()
                            .any(|(_, v)| v.trim_start().starts_with('-'))
                });
            if !unbounded {
                q.bound_by_capacity();
            }
        }
        let dispatches = self.dispatch(snap, now);
        let quota_counters = snap.close_gates();
        // Immediate jobs are placed whole or not at all: one without a dispatch did not
        // start, whatever held it back.
        let started: HashSet<u64> = dispatches.iter().map(|d| d.job_id).collect();
        let mut immediate_unplaced: Vec<u64> = self
            .jobs
            .values()
            .filter(|j| j.spec.immediate && j.tasks.has_pending() && !started.contains(&j.id))
            .map(|j| j.id)
            .collect();
        immediate_unplaced.sort_unstable();
        Decisions {
            dispatches,
            quota_counters,
            immediate_unplaced,
            reservations: std::mem::take(&mut snap.reservations),
            groups: snap.group_allocation.take(),
            quiet: false,
        }
    }

    /// The dispatch part of a cycle, on a prepared snapshot, in SGE's default order, or
    /// with group quotas in their rounds (see [`ClusterView::dispatch_groups`]).
    pub fn dispatch(&self, snap: &mut Snapshot, at: Time) -> Vec<Dispatch> {
        match snap.group_order.take() {
            Some(order) => {
                let out = self.dispatch_groups(snap, at, &order);
                snap.group_order = Some(order);
                out
            }
            None => self.dispatch_in(snap, at, &PriorityThenSubmission),
        }
    }

    /// The dispatch part of a cycle in one pass over every eligible pending job.
    pub fn dispatch_in(
        &self,
        snap: &mut Snapshot,
        at: Time,
        order: &dyn JobOrder,
    ) -> Vec<Dispatch> {
        let mut pass: DispatchPass<'_> = DispatchPass::new(self.sched_conf().max_reservation);
        let mut out = Vec::new();
        self.dispatch_pass(snap, at, order, &mut pass, &mut out);
        if let Some(settled) = snap.settled.as_mut() {
            let adjustments = &snap.adjustments;
            let settles =
                |c: &Category| c.exhausted() && crate::settled::settles(&c.demand, adjustments);
            let whole = pass
                .categories
                .values()
                .all(|c| c.as_ref().is_some_and(settles))
                && pass
                    .ordered
                    .iter()
                    .flatten()
                    .all(|j| j.spec.ar.is_none() && !j.spec.reserve);
            settled.note(
                pass.categories
                    .values()
                    .flatten()
                    .filter(|c| settles(c))
                    .map(|c| c.job),
                whole,
            );
        }
        out
    }

    /// One pass of the dispatch part of a cycle, its stages in turn: *order* the
    /// eligible pending jobs (those `pass` takes); per job, its category's candidates;
    /// per task, *place* it (the layers and the *admit* stage's gates decide where) and
    /// *book* what it takes. What it places is added to `out` and noted in `pass`,
    /// which keeps the jobs in order and their categories for the next pass.
    pub(crate) fn dispatch_pass(
        &self,
        snap: &mut Snapshot,
        at: Time,
        order: &dyn JobOrder,
        pass: &mut DispatchPass<'a>,
        out: &mut Vec<Dispatch>,
    ) {
        let max_aj_instances = self.max_aj_instances;
        // Per advance reservation with jobs to place: its own snapshot and categories.
        let mut reservations: HashMap<u64, Option<crate::ar::ReservationCycle>> = HashMap::new();
        let jobs = match pass.ordered.take() {
            Some(jobs) => jobs,
            None => {
                pass.job_groups.clear();
                self.pending_in_order(at, order)
            }
        };
        // The key of the job before when its category had no room left: jobs alike one
        // after another (a bulk submission) need no lookup to find that again (a job
        // asking for a reservation still gets one).
        let mut exhausted_before: Option<CategoryKey<'a>> = None;
        for (i, &job) in jobs.iter().enumerate() {
            if !pass.takes(i, job) {
                continue;
            }
            if let Some(id) = job.spec.ar {
                let entry = reservations
                    .entry(id)
                    .or_insert_with(|| self.reservation_cycle(snap, id, at));
                if let Some(rc) = entry.as_mut() {
                    self.place_in_reservation(rc, job, at, max_aj_instances, out);
                }
                continue;
            }
            let key = category_key(job);
            if !job.spec.reserve && exhausted_before == Some(key) {
                continue;
            }
            exhausted_before = None;
            let next_category = pass.categories.len() + 1;
            let entry = pass
                .categories
                .entry(key)
                .or_insert_with(|| snap.category_in_cycle(job, next_category));
            let Some(cat) = entry.as_mut() else {
                continue; // requests the complex no longer has
            };
            // A reservation is made on every candidate, not only where room may have
            // come since the last cycle.
            if cat.restricted && job.spec.reserve && pass.reservations_left > 0 {
                if let Some(whole) = snap.category(job, cat.demand.category) {
                    *cat = whole;
                }
            }
            let before = out.len();
            let earlier = pass.placed.get(&job.id).copied().unwrap_or(0);
            let placed_before = earlier > 0;
            self.place_job(snap, cat, job, earlier, max_aj_instances, out);
            let placed_none = out.len() == before;
            // `-R y`: a job none of whose tasks started gets the earliest time its next
            // task fits, booked, so that the jobs after it only backfill around it.
            if job.spec.reserve
                && placed_none
                && !placed_before
                && pass.reservations_left > 0
                && pass.reserved.insert(job.id)
            {
                if let Some(task) = job.tasks.pending().iter().next() {
                    if let Some(r) = snap.reserve_job(cat, job, task) {
                        snap.reservations.push(r);
                        pass.reservations_left -= 1;
                    }
                }
            }
            if cat.exhausted() {
                exhausted_before = Some(key);
            }
        }
        pass.ordered = Some(jobs);
    }

    /// Place what a cycle can of one job with its category.
    fn place_job(
        &self,
        snap: &mut Snapshot,
        cat: &mut Category,
        job: &Job,
        earlier: usize,
        max_aj_instances: Option<u32>,
        out: &mut Vec<Dispatch>,
    ) {
        if cat.exhausted() {
            return;
        }
        // `-now y`: every pending task starts in this cycle or none does. One task is
        // placed or not, with nothing to take back.
        if !job.spec.immediate || job.tasks.pending().len() == 1 {
            self.place_tasks(snap, cat, job, earlier, max_aj_instances, out);
            return;
        }
        // Several are placed on a copy, kept only when all of them found room.
        let mut trial = snap.clone();
        let mut trial_cat = cat.clone();
        let mut placed = Vec::new();
        self.place_tasks(
            &mut trial,
            &mut trial_cat,
            job,
            earlier,
            max_aj_instances,
            &mut placed,
        );
        if placed.len() as u64 == job.tasks.pending().len() {
            *snap = trial;
            *cat = trial_cat;
            out.extend(placed);
        }
    }

    /// Place a job's pending tasks (but the first `earlier` ready ones, which earlier
    /// passes of the cycle placed),
    /// lowest first, as far as its category has room in this cycle; each placement is
    /// booked on the snapshot and added to `out`.
    pub(crate) fn place_tasks(
        &self,
        snap: &mut Snapshot,
        cat: &mut Category,
        job: &Job,
        earlier: usize,
        max_aj_instances: Option<u32>,
        out: &mut Vec<Dispatch>,
    ) {
        // Lowest task first; the ids are produced as they are taken, so a cycle costs
        // what it dispatches, not the size of the array. `running` counts the tasks
        // that hold slots, those dispatched in this cycle included.
        let already = (job.tasks.holding_slots() + earlier) as u32;
        // `-hold_jid_ad`: task N waits while task N of a predecessor is in the system.
        let predecessors = self.array_predecessors(job);
        let ready = job
            .tasks
            .pending()
            .iter()
            .filter(|t| !crate::view::waits_for_array_task(&predecessors, *t))
            .skip(earlier);
        for (running, task_id) in (already..).zip(ready) {
            if job.spec.max_running_tasks.is_some_and(|tc| running >= tc)
                || (job.is_array() && max_aj_instances.is_some_and(|m| running >= m))
            {
                break;
            }
            let Some(placed) = snap.place_task(cat) else {
                break; // nothing left for this category in this cycle
            };
            snap.book(&cat.demand, &placed);
            let grants = snap.grants_named(&placed.grants);
            out.push(Dispatch {
                job_id: job.id,
                task_id,
                queue: grants[0].queue.clone(),
                host: grants[0].host.clone(),
                grants,
                pe: placed.pe,
            });
        }
    }

    /// Could any queue instance ever run this job (its requests against the instances'
    /// configured and last reported values, with nothing running)? The slots it would
    /// get.
    pub fn could_ever_run(&self, job: &Job) -> Result<u32, CannotRun> {
        let all: HashSet<String> = self.exechosts.keys().cloned().collect();
        // Every host counts, however long ago it reported.
        let mut snap = self.snapshot(&all, Time::MAX);
        for i in &mut snap.instances {
            i.unusable = None;
        }
        // Nothing running: every consumable at its full capacity.
        for layer in std::iter::once(&mut snap.global)
            .chain(snap.hosts.iter_mut().map(|h| &mut h.layer))
            .chain(snap.instances.iter_mut().map(|i| &mut i.layer))
        {
            layer.unbook_all();
        }
        snap.calendar = Calendar::new();
        for gate in snap.gates.get_mut().each_mut() {
            gate.forget_bookings();
        }
        let d = demand(&snap.catalog, job).map_err(CannotRun::Demand)?;
        let mut reasons = Vec::new();
        for &inst in &snap.order {
            match snap.matches(&d, inst, Pass::All(d.slots)) {
                Ok(()) => {
                    // The slots it would get there (a parallel job: as many as its range
                    // and the empty cluster allow), as SGE's `-w v` says them.
                    let placed = snap
                        .category(job, 1)
                        .and_then(|mut cat| snap.place_task(&mut cat));
                    return Ok(
                        placed.map_or(d.slots, |p| p.grants.iter().map(|&(_, slots)| slots).sum())
                    );
                }
                Err(m) => {
                    let i = &snap.instances[inst];
                    reasons.push(m.message(&i.queue, &snap.hosts[i.host].name));
                }
            }
        }
        Err(CannotRun::Nowhere(reasons))
    }

    /// `qsub -w p`: could the job start now, on what the cluster has free (its running
    /// jobs, its load, the quota sets as they stand)? The slots it would get.
    pub fn could_run_now(
        &self,
        job: &Job,
        connected: &HashSet<String>,
        at: Time,
    ) -> Result<u32, CannotRun> {
        let mut snap = self.snapshot_at(connected, at, true);
        let placed = snap
            .category(job, 1)
            .and_then(|mut cat| snap.place_task(&mut cat));
        match placed {
            Some(p) => Ok(p.grants.iter().map(|&(_, slots)| slots).sum()),
            None => Err(CannotRun::Nowhere(self.explain(job, connected, at))),
        }
    }

    /// `qstat -j` without a job: the pending jobs (not held, not waiting) that some
    /// queue instance would take but for a resource quota rule, and that no instance
    /// takes now.
    pub fn quota_blocked_jobs(&self, connected: &HashSet<String>, at: Time) -> Vec<u64> {
        let snap = self.snapshot_at(connected, at, true);
        if snap.gates.borrow().quota.is_none() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for job in self.jobs.values() {
            if !job.tasks.has_pending() || !self.eligible(job, at) {
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
    pub fn explain(&self, job: &Job, connected: &HashSet<String>, at: Time) -> Vec<String> {
        let now = at.secs();
        let mut reasons = Vec::new();
        if !job.tasks.has_pending() {
            return reasons;
        }
        // SGE's reasons for a job its scheduler does not look at (sge_job_schedd.c):
        // SCHEDD_INFO_JOBHOLD_ (msg_schedd.h 47074), _EXECTIME_ (47072), _JOBDEPEND_
        // (47076, for -hold_jid and -hold_jid_ad alike).
        if job.spec.hold {
            reasons.push("Job is in hold state".to_string());
        }
        if job.spec.start_after.is_some_and(|t| t > now) {
            reasons.push("execution time not reached".to_string());
        }
        let predecessors = self.array_predecessors(job);
        let waits_for_jobs = job
            .spec
            .hold_jids
            .iter()
            .any(|r| self.predecessor_active(r));
        let waits_for_tasks = !predecessors.is_empty()
            && job
                .tasks
                .pending()
                .iter()
                .all(|t| crate::view::waits_for_array_task(&predecessors, t));
        if waits_for_jobs || waits_for_tasks {
            reasons.push("job dropped because of job dependencies".to_string());
        }
        let mut snap = self.snapshot_at(connected, at, true);
        if let Some(id) = job.spec.ar {
            // A reservation's job waits for its window and runs only inside it.
            let Some(ar) = self.ars.get(&id) else {
                reasons.push(format!(
                    "the advance reservation {id} is no longer available"
                ));
                return reasons;
            };
            if at < Time::from_secs(ar.start) {
                reasons.push("execution time not reached".to_string());
                return reasons;
            }
            if !crate::ar::takes_jobs(ar, at) {
                reasons.push(format!(
                    "the advance reservation {id} takes no jobs in state {}",
                    crate::ar::clock_letter(ar, at)
                ));
                return reasons;
            }
            let rt = demand(&snap.catalog, job).ok().and_then(|d| d.run_time);
            if rt.is_some_and(|r| {
                at + r + self.sched_conf().duration_offset > Time::from_secs(ar.end)
            }) {
                reasons.push(format!(
                    "the job duration exceeds the end time of the advance reservation id {id}"
                ));
                return reasons;
            }
            let mut view = snap.reservation_view(ar);
            self.book_running(&mut view, at, |j| j.spec.ar == Some(id));
            snap = view;
        }
        let d = match demand(&snap.catalog, job) {
            Ok(d) => d,
            Err(e) => {
                reasons.push(e.to_string());
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
                    if matches!(m, Misfit::Quota(_) | Misfit::GroupAtAllocation { .. }) {
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
            let candidates = trial.static_candidates(&d, None);
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
