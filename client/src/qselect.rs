//! `qselect`: the queue instances that match, one per line, for scripts such as
//! `qmod -d $(qselect -q all.q -l arch=lx-amd64)`.
//!
//! An instance matches when it is of a cluster queue `-q` names (wildcards as SGE's,
//! `queue` or `queue@host`), offers every `-l` request (as `qstat -F` lists what it
//! offers, each compared by its complex's type and relational operator), is in one of
//! `-qs`'s states, lists one of `-pe`'s parallel environments, and (`-U`) lets every
//! one of the users named run jobs.

use gantry_common::complex;
use gantry_common::job::{queue_reference_matches, wildcard};
use gantry_common::value::{parse_value, satisfies};
use gantry_proto::{ClusterQueue, FromMaster, HostReport, QueueInstanceView, ToMaster};

use crate::opts::{opt, Arity, OptSpec};
use crate::{exit, Output};

const SPECS: &[OptSpec] = &[
    opt("-help", Arity::None),
    opt("-l", Arity::One),
    opt("-pe", Arity::One),
    opt("-q", Arity::One),
    opt("-qs", Arity::One),
    opt("-U", Arity::One),
];

/// SGE 8.1.9's text, the definitions of qstat's it shares included.
pub fn usage() -> String {
    format!(
        "Gantry {}\nusage: qselect [options]\n        [-help]                           print this help\n        [-l resource_list]                request the given resources\n        [-pe pe_list]                     select only queues with one of these parallel environments\n        [-q wc_queue_list]                print information on given queue\n        [-qs {{a|c|d|o|s|u|A|C|D|E|S}}]     selects queues which are in the given state(s)\n        [-U user_list]                    select only queues where these users have access\n\npe_list                  pe[,pe,...]\njob_identifier_list      [job_id|job_name|pattern]{{, [job_id|job_name|pattern]}}\nresource_list            resource[=value][,resource[=value],...]\nuser_list                user|*|@group[,user|*|@group],...]\nresource_attributes      resource,resource,...\nwc_cqueue                wildcard expression matching a cluster queue\nwc_host                  wildcard expression matching a host\nwc_hostgroup             wildcard expression matching a hostgroup\nwc_qinstance             wc_cqueue@wc_host\nwc_qdomain               wc_cqueue@wc_hostgroup\nwc_queue_list            wc_cqueue|wc_qdomain|wc_qinstance\nwc_queue_list            wc_queue[,wc_queue,...]\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// What the command line asks for.
#[derive(Debug, Default)]
struct Filter {
    queues: Vec<String>,
    resources: Vec<(String, Option<String>)>,
    pes: Vec<String>,
    states: Option<String>,
    /// `-U`: the instances every one of these users may use (the master says which).
    admitting: Option<std::collections::HashSet<String>>,
}

/// An option's comma-separated list (`-q a.q,b.q`), empty items left out; none
/// without the option.
pub(crate) fn list(arg: Option<&str>) -> Vec<String> {
    arg.map(|a| {
        a.split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    })
    .unwrap_or_default()
}

/// `-l`'s requests (qselect's and qhost's): `name=value`, or a name alone (it must be
/// there).
pub(crate) fn requests(arg: Option<&str>) -> Vec<(String, Option<String>)> {
    list(arg)
        .into_iter()
        .map(|r| match r.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (r, None),
        })
        .collect()
}

pub fn run(args: &[String]) -> Output {
    let p = match crate::parse_args_as(
        args,
        SPECS,
        false,
        usage,
        crate::UnknownOption::UsageThen(""),
    ) {
        Ok(p) => p,
        Err(out) => return out,
    };
    let admitting = match p.arg("-U") {
        None => None,
        Some(users) => match crate::ask(&ToMaster::InstancesAdmitting {
            users: list(Some(users)),
        }) {
            // SGE's qselect says so when no instance at all lets them in.
            Ok(FromMaster::Names(n)) if n.is_empty() => {
                return Output::fail(
                    "error: no queues remaining after -U queue selection".to_string(),
                    exit::FAILURE,
                )
            }
            Ok(FromMaster::Names(n)) => Some(n.into_iter().collect()),
            Ok(other) => return crate::unexpected(&other),
            Err(out) => return out,
        },
    };
    let filter = Filter {
        queues: list(p.arg("-q")),
        resources: requests(p.arg("-l")),
        pes: list(p.arg("-pe")),
        states: p.arg("-qs").map(str::to_string),
        admitting,
    };
    let report = match crate::ask(&ToMaster::HostInfo) {
        Ok(FromMaster::Hosts(r)) => r,
        Ok(other) => return crate::unexpected(&other),
        Err(out) => return out,
    };
    for (name, _) in &filter.resources {
        if complex::find(&report.complexes, name).is_none() {
            return Output::fail(format!("unknown resource \"{name}\""), exit::FAILURE);
        }
    }
    // The cluster queues' configurations, for their pe_list.
    let mut queues: Vec<ClusterQueue> = Vec::new();
    if !filter.pes.is_empty() {
        let mut names: Vec<&str> = report
            .hosts
            .iter()
            .flat_map(|h| h.queues.iter().map(|q| q.queue.as_str()))
            .collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            match crate::ask(&ToMaster::ShowQueue {
                name: name.to_string(),
            }) {
                Ok(FromMaster::Queue(q)) => queues.push(q),
                Ok(other) => return crate::unexpected(&other),
                Err(out) => return out,
            }
        }
    }
    // Nothing selected: SGE's qselect exits 1, saying nothing.
    let found = select(&report, &queues, &filter);
    if found.is_empty() {
        return Output {
            stdout: String::new(),
            stderr: String::new(),
            code: exit::FAILURE,
        };
    }
    Output::ok(found.join(""))
}

/// The matching instances, `queue@host\n` each, sorted as SGE lists them.
fn select(report: &HostReport, queues: &[ClusterQueue], filter: &Filter) -> Vec<String> {
    let mut out = Vec::new();
    for h in &report.hosts {
        for q in &h.queues {
            let instance = format!("{}@{}", q.queue, h.name);
            let named = filter.queues.is_empty()
                || filter
                    .queues
                    .iter()
                    .any(|pattern| queue_reference_matches(pattern, &q.queue, &h.name, &[]));
            let in_state = filter
                .states
                .as_ref()
                .is_none_or(|s| s.chars().any(|c| q.states.contains(c)));
            let offers = filter
                .resources
                .iter()
                .all(|(name, value)| offers(report, q, name, value.as_deref()));
            let has_pe = filter.pes.is_empty()
                || queues.iter().find(|c| c.name == q.queue).is_some_and(|c| {
                    c.attr("pe_list").is_some_and(|a| {
                        let on_host = gantry_common::queue::value_on_host(a, &h.name, &[]);
                        gantry_common::conf::split_list(on_host)
                            .iter()
                            .any(|pe| filter.pes.iter().any(|want| wildcard(want, pe)))
                    })
                });
            let admitted = filter
                .admitting
                .as_ref()
                .is_none_or(|set| set.contains(&instance));
            if named && in_state && offers && has_pe && admitted {
                out.push(format!("{instance}\n"));
            }
        }
    }
    out.sort();
    out
}

/// Does the instance offer `name` (`=value`): the value `qstat -F` shows for it,
/// compared as the complex's type and operator compare a request.
fn offers(report: &HostReport, q: &QueueInstanceView, name: &str, value: Option<&str>) -> bool {
    let Some(attr) = complex::find(&report.complexes, name) else {
        return false;
    };
    let Some((_, offered)) = q
        .resources
        .iter()
        .find(|(k, _)| k.split_once(':').map_or(k.as_str(), |(_, n)| n) == attr.name)
    else {
        return false;
    };
    let Some(value) = value else {
        return true;
    };
    match (
        parse_value(attr.value_type, offered),
        parse_value(attr.value_type, value),
    ) {
        (Ok(o), Ok(r)) => satisfies(attr.value_type, attr.relop, &o, &r),
        _ => false,
    }
}
