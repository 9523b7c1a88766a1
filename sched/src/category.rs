//! A job's category as Grid Engine writes it into the accounting record (`qacct`'s
//! `category` line): the requests that decide where the job may run, in SGE's order:
//! `-U` (the access lists of the owner that queues, hosts or parallel environments
//! name), `-u` (when a quota rule singles the owner out), `-q`, `-masterq`, `-l`,
//! `-soft -l`, `-pe`, `-ckpt`, `-I y`, `-P` (when queues, hosts or parallel environments
//! name the project) and `-ar`.

use gantry_common::job::Job;
use gantry_common::rqs::{Filter, QuotaSet};
use gantry_common::userset::entries_contain;

use crate::view::ClusterView;

/// The category of `job` in the configuration `view` and the resource quota sets
/// `quota_sets` hold; empty for a job without any request that counts.
pub fn accounting_category(view: &ClusterView, quota_sets: &[&QuotaSet], job: &Job) -> String {
    let spec = &job.spec;
    let mut parts: Vec<String> = Vec::new();
    let lists = access_lists_of_owner(view, job);
    if !lists.is_empty() {
        parts.push(format!("-U {}", lists.join(",")));
    }
    if user_singled_out_by_quota(view, quota_sets, job) {
        parts.push(format!("-u {}", job.owner.user));
    }
    if !spec.queues.is_empty() {
        parts.push(format!("-q {}", spec.queues.join(",")));
    }
    if !spec.masterq.is_empty() {
        parts.push(format!("-masterq {}", spec.masterq.join(",")));
    }
    if let Some(l) = resource_list(&spec.hard_resources) {
        parts.push(format!("-l {l}"));
    }
    if let Some(l) = resource_list(&spec.soft_resources) {
        parts.push(format!("-soft -l {l}"));
    }
    if let Some((name, range)) = &spec.pe {
        parts.push(format!(
            "-pe {name} {}",
            gantry_common::pe::sge_slot_range(range)
        ));
    }
    if let Some(c) = &spec.ckpt {
        parts.push(format!("-ckpt {c}"));
    }
    if spec.immediate {
        parts.push("-I y".to_string());
    }
    if let Some(p) = spec
        .project
        .as_deref()
        .filter(|p| project_named_by_configuration(view, p))
    {
        parts.push(format!("-P {p}"));
    }
    if let Some(ar) = spec.ar {
        parts.push(format!("-ar {ar}"));
    }
    parts.join(" ")
}

/// `name=value,...` sorted by name, a name given twice once with its last value.
fn resource_list(resources: &[(String, String)]) -> Option<String> {
    let mut by_name: std::collections::BTreeMap<&str, &str> = Default::default();
    for (n, v) in resources {
        by_name.insert(n, v);
    }
    (!by_name.is_empty()).then(|| {
        by_name
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    })
}

/// The access lists the owner (or one of the owner's groups) is in that some queue,
/// exec host or parallel environment names in `user_lists` or `xuser_lists`: only
/// those tell jobs apart.
fn access_lists_of_owner(view: &ClusterView, job: &Job) -> Vec<String> {
    view.usersets
        .values()
        .filter(|u| entries_contain(&u.entries, &job.owner.user, &job.owner.groups))
        .filter(|u| access_list_named(view, &u.name))
        .map(|u| u.name.clone())
        .collect()
}

fn access_list_named(view: &ClusterView, name: &str) -> bool {
    let keys = ["user_lists", "xuser_lists"];
    view.queues.values().any(|q| {
        keys.iter()
            .any(|k| gantry_common::queue::list_names(q, k, name))
    }) || view
        .exechosts
        .values()
        .chain(view.global_host.as_ref())
        .any(|h| h.user_lists.iter().chain(&h.xuser_lists).any(|l| l == name))
        || view
            .pes
            .values()
            .any(|p| p.user_lists.iter().chain(&p.xuser_lists).any(|l| l == name))
}

fn project_named_by_configuration(view: &ClusterView, project: &str) -> bool {
    let keys = ["projects", "xprojects"];
    view.queues.values().any(|q| {
        keys.iter()
            .any(|k| gantry_common::queue::list_names(q, k, project))
    }) || view
        .exechosts
        .values()
        .chain(view.global_host.as_ref())
        .any(|h| h.projects.iter().chain(&h.xprojects).any(|p| p == project))
}

/// Does a quota rule limit this owner apart from everyone: a `users` filter that
/// expands (`{...}`) or names someone rather than `*`, and takes the owner?
fn user_singled_out_by_quota(view: &ClusterView, quota_sets: &[&QuotaSet], job: &Job) -> bool {
    quota_sets.iter().any(|set| {
        set.rules.iter().any(|r| {
            r.users
                .as_ref()
                .is_some_and(|f| (f.expand || !is_everyone(f)) && takes_owner(view, f, job))
        })
    })
}

fn is_everyone(f: &Filter) -> bool {
    f.items.iter().all(|i| !i.negated && i.name == "*")
}

fn takes_owner(view: &ClusterView, f: &Filter, job: &Job) -> bool {
    let item = |name: &str| match name.strip_prefix('@') {
        Some(acl) => view
            .usersets
            .get(acl)
            .is_some_and(|u| entries_contain(&u.entries, &job.owner.user, &job.owner.groups)),
        None => gantry_common::job::wildcard(name, &job.owner.user),
    };
    if f.items.iter().any(|i| i.negated && item(&i.name)) {
        return false;
    }
    let mut positives = f.items.iter().filter(|i| !i.negated).peekable();
    positives.peek().is_none() || positives.any(|i| item(&i.name))
}

#[cfg(test)]
mod tests;
