//! What the master counts for `/metrics` (Prometheus' text format, encoded by
//! `prometheus-client`): counters and histograms the Cluster actor and the client doors
//! add to as things happen (atomics: observing them changes no cluster state), and
//! gauges read from a snapshot of the state when scraped ([`Gauges`]).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    pub state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DoorLabel {
    /// `socket` (the `q*` commands), `http`.
    pub door: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    /// The request's kind (`Submit`, `ShowJobs`, `ModifyObject`, ...).
    pub kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GroupLabel {
    pub group: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RuleLabels {
    /// `rule set/rule` (the rule's name, or its number in the set).
    pub rule: String,
    /// The consumer the rule counts for (`user=alice,host=node1`), or `other` for
    /// the consumers beyond the top [`TOP_CONSUMERS`].
    pub consumer: String,
    pub resource: String,
}

/// Consumers shown per quota rule and resource; the rest are summed as `other`.
pub const TOP_CONSUMERS: usize = 10;

/// The counters and histograms, and the gauges' families, registered once.
pub struct Metrics {
    registry: Registry,
    pub tasks_dispatched: Counter,
    pub tasks_finished: Family<StateLabel, Counter>,
    pub cycle_seconds: Histogram,
    pub client_requests: Family<DoorLabel, Counter>,
    pub client_request_seconds: Family<DoorLabel, Histogram>,
    pub refusals: Family<ReasonLabel, Counter>,
    pub requests_decided: Family<KindLabel, Counter>,
    pub request_decision_seconds: Family<KindLabel, Histogram>,
    pub spool_commit_seconds: Histogram,
    pub spool_checkpoint_seconds: Histogram,
    /// How late an execd's load report came: the time since its previous one beyond
    /// the load report interval.
    pub execd_report_lag_seconds: Histogram,
    cycle_jobs_considered: Gauge,
    cycle_categories: Gauge,
    jobs: Family<StateLabel, Gauge>,
    tasks: Family<StateLabel, Gauge>,
    hosts: Family<StateLabel, Gauge>,
    ars: Family<StateLabel, Gauge>,
    quota_usage: Family<RuleLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    quota_limit: Family<RuleLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    group_allocation: Family<GroupLabel, Gauge<f64, std::sync::atomic::AtomicU64>>,
    group_running: Family<GroupLabel, Gauge<f64, std::sync::atomic::AtomicU64>>,
}

fn seconds_histogram() -> Histogram {
    // 10 µs to about 40 s.
    Histogram::new(exponential_buckets(0.000_01, 4.0, 12))
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("gantry");
        let m = Metrics {
            tasks_dispatched: Counter::default(),
            tasks_finished: Family::default(),
            cycle_seconds: seconds_histogram(),
            client_requests: Family::default(),
            client_request_seconds: Family::new_with_constructor(seconds_histogram),
            refusals: Family::default(),
            requests_decided: Family::default(),
            request_decision_seconds: Family::new_with_constructor(seconds_histogram),
            spool_commit_seconds: seconds_histogram(),
            spool_checkpoint_seconds: seconds_histogram(),
            execd_report_lag_seconds: seconds_histogram(),
            cycle_jobs_considered: Gauge::default(),
            cycle_categories: Gauge::default(),
            jobs: Family::default(),
            tasks: Family::default(),
            hosts: Family::default(),
            ars: Family::default(),
            quota_usage: Family::default(),
            quota_limit: Family::default(),
            group_allocation: Family::default(),
            group_running: Family::default(),
            registry: Registry::default(),
        };
        registry.register(
            "tasks_dispatched",
            "Tasks the scheduler dispatched to an execd",
            m.tasks_dispatched.clone(),
        );
        registry.register(
            "tasks_finished",
            "Tasks whose execd reported their end, by outcome (done, failed)",
            m.tasks_finished.clone(),
        );
        registry.register_with_unit(
            "cycle_duration",
            "How long a scheduling cycle took",
            Unit::Seconds,
            m.cycle_seconds.clone(),
        );
        registry.register(
            "client_requests",
            "Requests from clients, by the door they came through",
            m.client_requests.clone(),
        );
        registry.register_with_unit(
            "client_request_duration",
            "How long the master took to answer a client's request",
            Unit::Seconds,
            m.client_request_seconds.clone(),
        );
        registry.register(
            "refusals",
            "Requests the master refused, by reason",
            m.refusals.clone(),
        );
        registry.register_with_unit(
            "spool_commit_duration",
            "How long a commit to the spool took",
            Unit::Seconds,
            m.spool_commit_seconds.clone(),
        );
        registry.register(
            "requests_decided",
            "Client requests the master decided (every door), by kind",
            m.requests_decided.clone(),
        );
        registry.register_with_unit(
            "request_decision_duration",
            "How long the master took to decide and carry out a client's request, by kind",
            Unit::Seconds,
            m.request_decision_seconds.clone(),
        );
        registry.register_with_unit(
            "spool_checkpoint_duration",
            "How long moving the journaled changes into the spool's database took",
            Unit::Seconds,
            m.spool_checkpoint_seconds.clone(),
        );
        registry.register_with_unit(
            "execd_report_lag",
            "How much later than its load report interval an execd's report came",
            Unit::Seconds,
            m.execd_report_lag_seconds.clone(),
        );
        registry.register(
            "cycle_jobs_considered",
            "The jobs with pending tasks the last scheduling cycle considered",
            m.cycle_jobs_considered.clone(),
        );
        registry.register(
            "cycle_categories",
            "The categories (jobs asking for the same) of the last scheduling cycle",
            m.cycle_categories.clone(),
        );
        registry.register("jobs", "Jobs by state", m.jobs.clone());
        registry.register("tasks", "Job tasks by state", m.tasks.clone());
        registry.register("hosts", "Execution hosts by state", m.hosts.clone());
        registry.register(
            "advance_reservations",
            "Advance reservations by state",
            m.ars.clone(),
        );
        registry.register(
            "quota_usage",
            "What a resource quota rule counts as used, per consumer",
            m.quota_usage.clone(),
        );
        registry.register(
            "quota_limit",
            "A resource quota rule's limit, per consumer",
            m.quota_limit.clone(),
        );
        registry.register(
            "group_allocation_slots",
            "A group's allocation in the group quota tree's last cycle",
            m.group_allocation.clone(),
        );
        registry.register(
            "group_running_slots",
            "The slots a group's running jobs hold",
            m.group_running.clone(),
        );
        Metrics { registry, ..m }
    }

    /// Count a client's request through `door`, answered in `seconds`.
    pub fn request(&self, door: &str, seconds: f64) {
        let label = DoorLabel {
            door: door.to_string(),
        };
        self.client_requests.get_or_create(&label).inc();
        self.client_request_seconds
            .get_or_create(&label)
            .observe(seconds);
    }

    /// A request of `kind` decided in `seconds`, with its answer (a refusal counts by
    /// its kind).
    pub fn decided(&self, kind: &str, seconds: f64, answer: &gantry_proto::FromMaster) {
        let label = KindLabel {
            kind: kind.to_string(),
        };
        self.requests_decided.get_or_create(&label).inc();
        self.request_decision_seconds
            .get_or_create(&label)
            .observe(seconds);
        if let gantry_proto::FromMaster::Refused(r) = answer {
            self.refusals
                .get_or_create(&ReasonLabel {
                    reason: format!("{:?}", r.kind).to_lowercase(),
                })
                .inc();
        }
    }

    /// A scheduling cycle considered `jobs` jobs in `categories` categories.
    pub fn cycle_considered(&self, jobs: usize, categories: usize) {
        self.cycle_jobs_considered
            .set(i64::try_from(jobs).unwrap_or(i64::MAX));
        self.cycle_categories
            .set(i64::try_from(categories).unwrap_or(i64::MAX));
    }

    /// The text exposition of everything, the gauges set from `gauges` first.
    pub fn encode(&self, gauges: &Gauges) -> String {
        fn set<L: Clone + std::hash::Hash + Eq + EncodeLabelSet + std::fmt::Debug>(
            family: &Family<L, Gauge>,
            values: &[(L, i64)],
        ) {
            family.clear();
            for (l, v) in values {
                family.get_or_create(l).set(*v);
            }
        }
        fn set_f<L: Clone + std::hash::Hash + Eq + EncodeLabelSet + std::fmt::Debug>(
            family: &Family<L, Gauge<f64, std::sync::atomic::AtomicU64>>,
            values: &[(L, f64)],
        ) {
            family.clear();
            for (l, v) in values {
                family.get_or_create(l).set(*v);
            }
        }
        let states = |v: &[(String, i64)]| -> Vec<(StateLabel, i64)> {
            v.iter()
                .map(|(s, n)| (StateLabel { state: s.clone() }, *n))
                .collect()
        };
        set(&self.jobs, &states(&gauges.jobs));
        set(&self.tasks, &states(&gauges.tasks));
        set(&self.hosts, &states(&gauges.hosts));
        set(&self.ars, &states(&gauges.ars));
        set_f(&self.quota_usage, &gauges.quota_usage);
        set_f(&self.quota_limit, &gauges.quota_limit);
        let groups = |v: &[(String, f64)]| -> Vec<(GroupLabel, f64)> {
            v.iter()
                .map(|(g, n)| (GroupLabel { group: g.clone() }, *n))
                .collect()
        };
        set_f(&self.group_allocation, &groups(&gauges.group_allocation));
        set_f(&self.group_running, &groups(&gauges.group_running));
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// What the state holds when scraped.
#[derive(Debug, Clone, Default)]
pub struct Gauges {
    pub jobs: Vec<(String, i64)>,
    pub tasks: Vec<(String, i64)>,
    pub hosts: Vec<(String, i64)>,
    pub ars: Vec<(String, i64)>,
    pub quota_usage: Vec<(RuleLabels, f64)>,
    pub quota_limit: Vec<(RuleLabels, f64)>,
    /// Per group (the label is the group's name).
    pub group_allocation: Vec<(String, f64)>,
    pub group_running: Vec<(String, f64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every metric the Grafana dashboard in `deploy/` asks for is one the master
    /// exposes (by its family's name: `_total`, `_bucket`, `_sum` and `_count` are the
    /// samples' suffixes).
    #[test]
    fn the_dashboard_asks_only_for_metrics_the_master_exposes() {
        // One sample in every family (an empty family is not written).
        let m = Metrics::new();
        let label = StateLabel {
            state: "done".into(),
        };
        m.tasks_finished.get_or_create(&label).inc();
        m.request("http", 0.001);
        m.refusals
            .get_or_create(&ReasonLabel {
                reason: "denied".into(),
            })
            .inc();
        m.decided(
            "Submit",
            0.001,
            &gantry_proto::FromMaster::Refused(gantry_proto::Refusal {
                kind: gantry_proto::RefusalKind::Denied,
                message: String::new(),
            }),
        );
        let one = vec![("x".to_string(), 1)];
        let rule = RuleLabels {
            rule: "r/1".into(),
            consumer: "user=u".into(),
            resource: "slots".into(),
        };
        let text = m.encode(&Gauges {
            jobs: one.clone(),
            tasks: one.clone(),
            hosts: one.clone(),
            ars: one,
            quota_usage: vec![(rule.clone(), 1.0)],
            quota_limit: vec![(rule, 2.0)],
            group_allocation: vec![("g".into(), 1.0)],
            group_running: vec![("g".into(), 1.0)],
        });
        let families: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        let dashboard = include_str!("../../../deploy/grafana-dashboard.json");
        let doc: serde_json::Value = serde_json::from_str(dashboard).unwrap();
        let mut asked = 0;
        for panel in doc["panels"].as_array().unwrap() {
            for target in panel["targets"].as_array().unwrap() {
                let expr = target["expr"].as_str().unwrap();
                for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                    if !word.starts_with("gantry_") {
                        continue;
                    }
                    asked += 1;
                    let family = ["_total", "_bucket", "_sum", "_count"]
                        .iter()
                        .find_map(|s| word.strip_suffix(s))
                        .unwrap_or(word);
                    assert!(
                        families.contains(&family),
                        "the dashboard asks for {word}, which /metrics does not have: {families:?}"
                    );
                }
            }
        }
        assert!(asked >= 10, "{asked}");
    }
}
