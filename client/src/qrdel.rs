//! `qrdel`: delete advance reservations (ids or names), and the jobs bound to them.

use gantry_proto::{FromMaster, ToMaster};

use crate::opts::{opt, Arity, OptSpec};
use crate::{exit, Output};

const SPECS: &[OptSpec] = &[
    opt("-help", Arity::None),
    opt("-f", Arity::None),
    opt("-u", Arity::One),
];

/// SGE's usage but for `-he`, which its qrdel lists and qrdel(1) does not have.
pub fn usage() -> String {
    format!(
        "Gantry {}\nusage: qrdel [options]\n   [-f]                                     force action\n   [-help]                                  print this help\n   [-u user_list]                           all advance reservations of users specified in list\n\nuser_list               user[,user,...]\n",
        env!("CARGO_PKG_VERSION")
    )
}

pub fn qrdel(args: &[String]) -> Output {
    let p = match crate::parse_args_as(
        args,
        SPECS,
        true,
        usage,
        crate::UnknownOption::UsageThen("error: "),
    ) {
        Ok(p) => p,
        Err(out) => return out,
    };
    let mut ids = p.operand_list();
    // -u: every reservation of these users.
    if let Some(users) = p.arg("-u") {
        let users = crate::qselect::list(Some(users));
        let ars = match crate::ask(&ToMaster::ShowArs {
            users: users.clone(),
            ids: Vec::new(),
        }) {
            Ok(FromMaster::Ars(list)) => list,
            Ok(other) => return crate::unexpected(&other),
            Err(out) => return out,
        };
        if ars.is_empty() && ids.is_empty() {
            return Output {
                stdout: format!(
                    "There is no advance_reservation registered for the following users: {}\n",
                    users.join(",")
                ),
                stderr: String::new(),
                code: exit::FAILURE,
            };
        }
        ids.extend(ars.iter().map(|a| a.id.to_string()));
    }
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
