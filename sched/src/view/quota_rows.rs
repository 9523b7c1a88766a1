//! What the cluster tells the quota sets: dynamic limits' host numbers, and
//! `qquota`'s rows.

use gantry_common::value::Value;
use gantry_proto::{Consumable, QuotaLimit, QuotaQuery, QuotaRow};

use gantry_common::job::wildcard;

use super::ClusterView;
use crate::model::Catalog;

use crate::quota::*;

impl<'a> ClusterView<'a> {
    /// A number a dynamic limit uses on a host: its reported load value, else its
    /// `complex_values`, else the global host's.
    pub fn host_number(&self, catalog: &Catalog, host: &str, attr: usize) -> Option<f64> {
        let a = &catalog.attrs[attr];
        let num = |text: &str| match catalog.parse(attr, text) {
            Some(Value::Num(n)) => Some(n),
            _ => None,
        };
        let reported = self
            .runtime
            .get(host)
            .and_then(|r| r.load_values.iter().find(|l| l.name == a.name))
            .and_then(|l| num(&l.value));
        let configured = |h: Option<&gantry_proto::ExecHost>| {
            h.and_then(|h| {
                h.complex_values
                    .iter()
                    .find(|(k, _)| catalog.id(k) == Some(attr))
                    .and_then(|(_, v)| num(v))
            })
        };
        reported
            .or_else(|| configured(self.exechosts.get(host)))
            .or_else(|| configured(self.global_host.as_ref()))
    }

    /// `qquota`: every enabled rule with usage, for the consumers the query names
    /// (`groups_of` gives a user's Unix groups, for `@group` userset entries).
    pub fn quota_rows(
        &self,
        query: &QuotaQuery,
        caller: &str,
        groups_of: &dyn Fn(&str) -> Vec<String>,
    ) -> Vec<QuotaRow> {
        let book = &self.quota_book;
        let Some(catalog) = &book.catalog else {
            return Vec::new();
        };
        let quotas = &book.quotas;
        // (set, rule, consumer text, members), in set, rule and consumer order.
        let mut consumers: Vec<(u32, u32, String, [u32; 5])> = book
            .usage
            .nonzero()
            .filter(|(k, _)| quotas.sets[k.set as usize].enabled)
            .map(|(k, _)| (k.set, k.rule, book.usage.consumer_text(k), k.members))
            .collect();
        consumers.sort();
        consumers.dedup();
        let users: Vec<String> = if query.users.is_empty() {
            vec![caller.to_string()]
        } else {
            query.users.clone()
        };
        let all_users = users.iter().any(|u| u == "*");
        let user_groups: Vec<(String, Vec<String>)> = users
            .iter()
            .filter(|u| *u != "*")
            .map(|u| (u.clone(), groups_of(u)))
            .collect();
        let wanted_attr = |attr: usize| {
            query.resources.is_empty()
                || query.resources.iter().any(|r| catalog.id(r) == Some(attr))
        };
        let mut rows = Vec::new();
        for (set, rule, key, ids) in consumers {
            let r = &quotas.sets[set as usize].rules[rule as usize];
            let members: Vec<&str> = key.split('/').collect();
            let member = |n: usize| members.get(n).copied().unwrap_or("");
            let fs = filters(r);
            // Does filter `n` take one of these names (all when none are given)?
            let takes = |n: usize, names: &[String]| {
                names.is_empty()
                    || names.iter().any(|name| match fs[n] {
                        None => true,
                        Some(f) if f.expand => wildcard(name, member(n)),
                        Some(f) => {
                            let groups = book.memberships.get(name.as_str());
                            quotas.filter_takes_name(n, f, name, groups.map_or(&[][..], |g| g))
                        }
                    })
            };
            let user_ok = all_users
                || user_groups.iter().any(|(u, g)| match fs[0] {
                    None => true,
                    Some(f) if f.expand => member(0) == u,
                    Some(f) => quotas.filter_takes(
                        0,
                        f,
                        &Consumer {
                            user: u,
                            groups: g,
                            project: None,
                            pe: None,
                        },
                        &Place {
                            queue: "",
                            host: "",
                            host_groups: &[],
                        },
                    ),
                });
            let host_ok = takes(4, &query.hosts);
            let queue_ok = takes(3, &query.queues);
            let project_ok = takes(1, &query.projects);
            let pe_ok = takes(2, &query.pes);
            if !(user_ok && host_ok && queue_ok && project_ok && pe_ok) {
                continue;
            }
            let limits: Vec<QuotaLimit> = quotas
                .limits(set, rule)
                .iter()
                .filter(|l| wanted_attr(l.attr))
                .map(|l| {
                    let a = &catalog.attrs[l.attr];
                    let limit = match &l.value {
                        LimitValue::Fixed(_) => l.text.clone(),
                        LimitValue::Dynamic(_) => {
                            match Quotas::limit_on_host(l, &|attr| {
                                self.host_number(catalog, member(4), attr)
                            }) {
                                Value::Num(n) => Quotas::show(catalog, l.attr, n),
                                Value::Text(t) => t,
                            }
                        }
                    };
                    let counted = a.name == "slots" || a.consumable != Consumable::No;
                    QuotaLimit {
                        resource: a.name.clone(),
                        limit,
                        used: counted.then(|| {
                            let used = book.usage.get(&UsageKey {
                                set,
                                rule,
                                members: ids,
                                attr: l.attr as u32,
                            });
                            Quotas::show(catalog, l.attr, used)
                        }),
                    }
                })
                .collect();
            if limits.is_empty() {
                continue;
            }
            let names = ["users", "projects", "pes", "queues", "hosts"];
            let filters = fs
                .iter()
                .enumerate()
                .filter_map(|(n, f)| {
                    let f = (*f)?;
                    let shown = if f.expand {
                        member(n).to_string()
                    } else {
                        f.items
                            .iter()
                            .map(|i| format!("{}{}", if i.negated { "!" } else { "" }, i.name))
                            .collect::<Vec<_>>()
                            .join(",")
                    };
                    Some((names[n].to_string(), shown))
                })
                .collect();
            rows.push(QuotaRow {
                rule: quotas.rule_name(set, rule),
                filters,
                limits,
            });
        }
        rows
    }
}
