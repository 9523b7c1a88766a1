//! `qrdel`: delete advance reservations (ids or names), and the jobs bound to them.

use gantry_proto::{FromMaster, ToMaster};

use crate::opts::{opt, Arity, OptSpec};
use crate::{exit, Output};

const SPECS: &[OptSpec] = &[opt("-help", Arity::None), opt("-f", Arity::None)];

pub fn usage() -> String {
    format!(
        "Gantry {}\nusage: qrdel [options] ar_list\n   [-f]                                     force action\n   [-help]                                  print this help\n\nar_list                  ar_id|ar_name[,ar_id|ar_name,...]\n",
        env!("CARGO_PKG_VERSION")
    )
}

pub fn qrdel(args: &[String]) -> Output {
    let p = match crate::parse_args(args, SPECS, true, usage) {
        Ok(p) => p,
        Err(out) => return out,
    };
    let ids: Vec<String> = p
        .operands
        .iter()
        .flat_map(|o| o.split(','))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if ids.is_empty() {
        return Output::usage_error("error: no advance reservation given", &usage());
    }
    let req = ToMaster::DeleteArs {
        ids,
        force: p.has("-f"),
    };
    // As SGE's qrdel: every answer on standard output.
    match crate::conn::request(&req) {
        Ok(FromMaster::Items(items)) => Output {
            stdout: items.iter().map(|i| format!("{}\n", i.message)).collect(),
            stderr: String::new(),
            code: if items.iter().any(|i| i.refused) {
                exit::FAILURE
            } else {
                exit::SUCCESS
            },
        },
        Ok(FromMaster::Refused(r)) => Output {
            stdout: format!("{}\n", r.message),
            stderr: String::new(),
            code: exit::for_refusal(r.kind),
        },
        Ok(other) => crate::unexpected(&other),
        Err(e) => Output::fail(e.to_string(), exit::FAILURE),
    }
}
