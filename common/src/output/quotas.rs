//! `qquota -json`, `qquota -g -json` and `GET /api/v1/quotas`, `/groups`: the resource
//! quota rules in use and the group quota tree.

use std::collections::BTreeMap;

use gantry_proto::{GroupRow, QuotaRow};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `qquota -json`: one entry per rule and consumer, in the master's order (empty when
/// nothing is in use).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuotaRuleList {
    pub quota_rules: Vec<QuotaRuleEntry>,
}

/// A rule for one consumer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuotaRuleEntry {
    /// `set/name` or `set/N`.
    pub rule: String,
    /// Filter type (`users`, `projects`, `pes`, `queues`, `hosts`) to the names in it,
    /// in order; excluded names (`!user3`) under the type prefixed with `x` (`xusers`),
    /// as in SGE's XML schema. Types without names are absent.
    pub filters: BTreeMap<String, Vec<String>>,
    pub limits: Vec<QuotaLimitEntry>,
}

/// A limit of a rule and what of it is used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuotaLimitEntry {
    pub resource: String,
    pub limit: String,
    /// Null for a fixed, non-consumable limit such as `arch=lx-amd64`.
    pub used: Option<String>,
}

/// The names of a filter value as the master gives it (`a,b`, `!c`), each with whether
/// it is excluded.
pub fn filter_names(value: &str) -> impl Iterator<Item = (bool, &str)> {
    value
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| match n.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, n),
        })
}

impl QuotaRuleList {
    pub fn of(rows: &[QuotaRow]) -> QuotaRuleList {
        QuotaRuleList {
            quota_rules: rows.iter().map(QuotaRuleEntry::of).collect(),
        }
    }
}

impl QuotaRuleEntry {
    pub fn of(row: &QuotaRow) -> QuotaRuleEntry {
        let mut filters: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (kind, value) in &row.filters {
            for (excluded, name) in filter_names(value) {
                let key = match excluded {
                    true => format!("x{kind}"),
                    false => kind.clone(),
                };
                filters.entry(key).or_default().push(name.to_string());
            }
        }
        QuotaRuleEntry {
            rule: row.rule.clone(),
            filters,
            limits: row
                .limits
                .iter()
                .map(|l| QuotaLimitEntry {
                    resource: l.resource.clone(),
                    limit: l.limit.clone(),
                    used: l.used.clone(),
                })
                .collect(),
        }
    }
}

/// `qquota -g -json`: the group quota tree, a group per entry in the tree's order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupList {
    pub groups: Vec<GroupEntry>,
}

/// A group of the tree and its allocation, in weighted slots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupEntry {
    /// Its path in the tree (`/physics/theory`).
    pub name: String,
    /// As configured (`40`, or a fraction of the parent's `0.5`); null: none.
    pub configured_quota: Option<String>,
    pub accept_surplus: bool,
    pub autoregroup: bool,
    pub effective_quota: f64,
    pub subtree_quota: f64,
    pub surplus: f64,
    pub demand: f64,
    pub running: f64,
    pub allocation: f64,
}

impl GroupList {
    pub fn of(rows: &[GroupRow]) -> GroupList {
        GroupList {
            groups: rows
                .iter()
                .map(|g| GroupEntry {
                    name: g.name.clone(),
                    configured_quota: g.configured.map(crate::groups::quota_str),
                    accept_surplus: g.accept_surplus,
                    autoregroup: g.autoregroup,
                    effective_quota: g.quota,
                    subtree_quota: g.subtree_quota,
                    surplus: g.surplus,
                    demand: g.demand,
                    running: g.running,
                    allocation: g.allocation,
                })
                .collect(),
        }
    }
}
