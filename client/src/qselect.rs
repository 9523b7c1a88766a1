//! `qselect`: the queue instances that match, one per line, for scripts such as
//! `qmod -d $(qselect -q all.q -l arch=lx-amd64)`.
//!
//! The master selects them as SGE's qselect does (see
//! [`gantry_proto::QueueSelection`]): of a cluster queue `-q` names (wildcards as SGE's,
//! `queue`, `queue@host`, `queue@@hostgroup`), in one of `-qs`'s states, letting every
//! user `-U` names in, listing one of `-pe`'s parallel environments, and offering every
//! `-l` request when empty (a consumable by its capacity, not what is left of it now).

use gantry_proto::{FromMaster, QueueSelection, QueuesSelected, ToMaster};

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
    let selected = match ask_selection(&p, false) {
        Ok(s) => s,
        Err(out) => return out,
    };
    match selected.emptied_by.as_deref() {
        // SGE's qselect says so when -U or -pe left no instance at all.
        Some(option @ ("-U" | "-pe")) => Output::fail(
            format!("error: no queues remaining after {option} queue selection"),
            exit::FAILURE,
        ),
        // Nothing selected: SGE's qselect exits 1, saying nothing.
        _ if selected.instances.is_empty() => Output {
            stdout: String::new(),
            stderr: String::new(),
            code: exit::FAILURE,
        },
        _ => Output::ok(
            selected
                .instances
                .iter()
                .map(|i| format!("{i}\n"))
                .collect(),
        ),
    }
}

/// The master's answer to the queue selection options of a command line (`-q`, `-qs`,
/// `-U`, `-pe`, `-l`: qselect's and qstat's); with `fitting_jobs`, the pending jobs a
/// selected instance could run too.
pub(crate) fn ask_selection(
    p: &crate::opts::Parsed,
    fitting_jobs: bool,
) -> Result<QueuesSelected, Output> {
    let selection = QueueSelection {
        queues: list(p.arg("-q")),
        states: p.arg("-qs").map(str::to_string),
        users: list(p.arg("-U")),
        pes: list(p.arg("-pe")),
        resources: requests(p.arg("-l")),
        fitting_jobs,
    };
    match crate::ask(&ToMaster::SelectQueues(selection))? {
        FromMaster::QueuesSelected(s) => Ok(s),
        other => Err(crate::unexpected(&other)),
    }
}
