//! What `/metrics` reads of the state when scraped: a snapshot made by the Cluster
//! actor (the state's one owner), turned into gauges by the HTTP door.

use std::collections::BTreeMap;

use actix::prelude::*;
use gantry_common::tasks::TaskState;
use gantry_proto::{ArState, QuotaQuery};

use super::Cluster;
use crate::shell::metrics::{Gauges, RuleLabels, TOP_CONSUMERS};

/// Read the gauges' values.
#[derive(Message)]
#[rtype(result = "Gauges")]
pub struct ReadGauges;

impl Handler<ReadGauges> for Cluster {
    type Result = MessageResult<ReadGauges>;

    fn handle(&mut self, _: ReadGauges, _: &mut Self::Context) -> Self::Result {
        let started = std::time::Instant::now();
        let gauges = self.gauges();
        tracing::debug!(
            micros = started.elapsed().as_micros() as u64,
            "gauges read for /metrics"
        );
        MessageResult(gauges)
    }
}

fn counted(counts: BTreeMap<&'static str, i64>) -> Vec<(String, i64)> {
    counts
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

impl Cluster {
    fn gauges(&self) -> Gauges {
        let input = &self.state.input;
        // Every state named, so that a state nothing is in reads 0 rather than vanish.
        let mut jobs: BTreeMap<&'static str, i64> = ["pending", "held", "running", "error"]
            .map(|s| (s, 0))
            .into();
        let mut tasks: BTreeMap<&'static str, i64> =
            ["pending", "running", "deleting", "error", "other"]
                .map(|s| (s, 0))
                .into();
        for job in input.jobs.values() {
            let pending = i64::try_from(job.tasks.pending().len()).unwrap_or(i64::MAX);
            *tasks.entry("pending").or_default() += pending;
            let mut running = false;
            let mut error = false;
            for t in job.tasks.placed_states() {
                let state = match t {
                    TaskState::Running { .. } => {
                        running = true;
                        "running"
                    }
                    TaskState::Deleting { .. } => {
                        running = true;
                        "deleting"
                    }
                    TaskState::Error { .. } => {
                        error = true;
                        "error"
                    }
                    _ => "other",
                };
                *tasks.entry(state).or_default() += 1;
            }
            let state = if running {
                "running"
            } else if error {
                "error"
            } else if pending > 0 && job.spec.hold {
                "held"
            } else {
                "pending"
            };
            *jobs.entry(state).or_default() += 1;
        }
        let connected = input
            .exechosts
            .keys()
            .filter(|h| self.sessions.contains_key(*h))
            .count();
        let hosts = vec![
            ("up".to_string(), connected as i64),
            (
                "unknown".to_string(),
                (input.exechosts.len() - connected) as i64,
            ),
        ];
        let mut ars: BTreeMap<&'static str, i64> =
            ["waiting", "running", "exited", "deleted", "error"]
                .map(|s| (s, 0))
                .into();
        for ar in input.ars.values() {
            let state = match ar.state {
                ArState::Waiting => "waiting",
                ArState::Running => "running",
                ArState::Exited => "exited",
                ArState::Deleted => "deleted",
                ArState::Error => "error",
            };
            *ars.entry(state).or_default() += 1;
        }
        let (quota_usage, quota_limit) = self.quota_gauges();
        let mut gauges = Gauges {
            jobs: counted(jobs),
            tasks: counted(tasks),
            hosts,
            ars: counted(ars),
            quota_usage,
            quota_limit,
            ..Gauges::default()
        };
        if let Some((_, allocation)) = &self.state.live.group_allocation {
            for g in &allocation.groups {
                gauges.group_allocation.push((g.name.clone(), g.allocation));
                gauges.group_running.push((g.name.clone(), g.running));
            }
        }
        gauges
    }

    /// Per quota rule and resource: the [`TOP_CONSUMERS`] consumers using most, each
    /// with its limit, and the rest summed as `other` (their limits not summed: a
    /// limit is per consumer).
    #[allow(clippy::type_complexity)]
    fn quota_gauges(&self) -> (Vec<(RuleLabels, f64)>, Vec<(RuleLabels, f64)>) {
        let query = QuotaQuery {
            users: vec!["*".to_string()],
            ..QuotaQuery::default()
        };
        let rows = self
            .state
            .quota_rows(&query, "root", &|u: &str| self.unix_groups.of_name(u));
        // (rule, resource) -> [(consumer, used, limit)]
        let mut by_rule: BTreeMap<(String, String), Vec<(String, f64, f64)>> = BTreeMap::new();
        for row in rows {
            let consumer = row
                .filters
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",");
            for l in row.limits {
                let Some(used) = l.used.as_deref().and_then(|u| u.parse::<f64>().ok()) else {
                    continue;
                };
                let limit = l.limit.parse::<f64>().unwrap_or(f64::NAN);
                by_rule
                    .entry((row.rule.clone(), l.resource))
                    .or_default()
                    .push((consumer.clone(), used, limit));
            }
        }
        let (mut usage, mut limits) = (Vec::new(), Vec::new());
        for ((rule, resource), mut consumers) in by_rule {
            consumers.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let rest: f64 = consumers.iter().skip(TOP_CONSUMERS).map(|c| c.1).sum();
            let more = consumers.len() > TOP_CONSUMERS;
            for (consumer, used, limit) in consumers.into_iter().take(TOP_CONSUMERS) {
                let labels = RuleLabels {
                    rule: rule.clone(),
                    consumer,
                    resource: resource.clone(),
                };
                usage.push((labels.clone(), used));
                if limit.is_finite() {
                    limits.push((labels, limit));
                }
            }
            if more {
                usage.push((
                    RuleLabels {
                        rule: rule.clone(),
                        consumer: "other".to_string(),
                        resource: resource.clone(),
                    },
                    rest,
                ));
            }
        }
        (usage, limits)
    }
}
