//! The dispatch cycle and its explanations, over a [`ClusterView`].
//!
//! Jobs with the same requests form a category: their static match (everything but
//! consumables) is computed once per cycle, and a category nothing can run any more is
//! skipped for the rest of the cycle.

use gantry_proto::JobId;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use gantry_common::formula::Formula;
use gantry_common::job::TaskState;
use gantry_common::value::{self, Value};
use gantry_common::{conf, queue, schedconf};

use crate::calendar::Calendar;
use crate::model::*;
use crate::pass::Pass;
use crate::quota::QuotaCycle;
use crate::time::{Span, Time};
use crate::view::ClusterView;

mod dispatch;
mod explain;

pub use crate::decisions::{CannotRun, Decisions, Dispatch};
pub use crate::judge::ThresholdActions;

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
            return pending() || self.running_tickets_shown();
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

    /// Do running jobs hold tickets a change can move (a ticket policy is on, or a job,
    /// user, project or department has override tickets)? Then a change is worked out
    /// by a cycle even with nothing pending, as every run of SGE's scheduler works out
    /// the tickets of running jobs (`qstat -ext` shows them).
    fn running_tickets_shown(&self) -> bool {
        let policies = crate::priority::PolicyConf::from_config(self.sched.as_ref());
        let overrides = !self.job_otickets.is_empty()
            || self.users.values().any(|u| u.oticket > 0)
            || self.projects.values().any(|p| p.oticket > 0)
            || self.usersets.values().any(|u| u.oticket > 0);
        (policies.tickets_on() || overrides)
            && self.jobs.values().any(|j| j.tasks.holding_slots() > 0)
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
                // A queue instance's host name is one of its values, as in SGE
                // (`qf:hostname`): `-l h=NAME` turns away queue instances.
                if let Some(id) = catalog.id("hostname") {
                    inst.layer.set_fixed(id, Value::Text(hname.clone()));
                }
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
            adjustments,
            now: Time::from_secs(0),
            calendar: Calendar::new(),
            instance_index: InstanceIndex::default(),
            default_duration: None,
            running_demands: Default::default(),
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
    }

    /// A cycle's state on a finished snapshot, its gates open (see
    /// [`ClusterView::open_gates`]).
    pub fn open_pass(&self, snap: &Snapshot) -> Pass {
        let mut state = Pass::default();
        self.open_gates(snap, &mut state);
        state
    }

    /// The admit stage's gates for a cycle on `snap`, booked with what runs, registered
    /// in the order they are asked: the quota sets, then with group quotas the groups'
    /// allocation (with the order they are served in). What an earlier cycle booked
    /// under `state`'s gates, and the reservations it made, are forgotten.
    pub(crate) fn open_gates(&self, snap: &Snapshot, state: &mut Pass) {
        state.reset();
        // The quota counters already hold what the running jobs use.
        if let Some(mut quota) = self.quota_book.cycle() {
            quota.keep_places(state.quota_places.take());
            state.gates.register(Box::new(quota));
        }
        let priorities = Arc::new(self.priorities(snap.now, self.free_slots(snap.slot_capacity())));
        state.priorities = Some(priorities.clone());
        state.group_order = None;
        state.group_allocation = None;
        if let Some((allocation, gate, order)) = self.group_quotas(snap) {
            state.gates.register(Box::new(gate));
            state.group_order = Some(order.with_priorities(priorities));
            state.group_allocation = Some(allocation);
        }
    }

    /// One scheduling cycle: pending tasks by priority, then submission order, each to
    /// the first candidate queue instance of its category that has what it asks for.
    pub fn schedule(&self, now: Time, connected: &HashSet<String>) -> Decisions {
        let mut snap = self.snapshot_at(connected, now, true);
        let mut state = self.open_pass(&snap);
        self.decide_on(&mut snap, &mut state, now)
    }

    /// The cycle's decisions on a finished snapshot (see
    /// [`ClusterView::finish_snapshot`]).
    pub(crate) fn decide_on(&self, snap: &mut Snapshot, state: &mut Pass, now: Time) -> Decisions {
        state.considered = 0;
        state.categories = 0;
        let adjusted: Vec<usize> = snap.adjustments.iter().map(|(a, ..)| *a).collect();
        if let Some(q) = state.gates.get_mut::<QuotaCycle>() {
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
        let dispatches = self.dispatch(snap, state, now);
        let quota_counters = state.close_gates();
        // Immediate jobs are placed whole or not at all: one without a dispatch did not
        // start, whatever held it back.
        let started: HashSet<JobId> = dispatches.iter().map(|d| d.job_id).collect();
        let mut immediate_unplaced: Vec<JobId> = self
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
            reservations: std::mem::take(&mut state.reservations),
            groups: state.group_allocation.take(),
            considered: state.considered,
            categories: state.categories,
            quiet: false,
            priorities: state.priorities.clone(),
        }
    }
}
