//! `qrdel`: delete advance reservations (ids or names), and the jobs bound to them.

use gantry_proto::ToMaster;

use crate::opts::{opt, Arity, OptSpec};
use crate::Output;

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
    let ids = p.operand_list();
    if ids.is_empty() {
        return Output::usage_error("error: no advance reservation given", &usage());
    }
    let req = ToMaster::DeleteArs {
        ids,
        force: p.has("-f"),
    };
    // As SGE's qrdel: every answer on standard output.
    crate::answer_on_stdout(&req)
}
