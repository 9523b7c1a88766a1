//! `qdel`: delete jobs.

use gantry_proto::ToMaster;

use crate::opts::{opt, Arity, OptSpec};
use crate::Output;

const QDEL_SPECS: &[OptSpec] = &[
    opt("-help", Arity::None),
    opt("-u", Arity::One),
    opt("-f", Arity::None),
];

pub fn qdel_usage() -> String {
    format!(
        "Gantry {}\nusage: qdel [options] job_task_list\n   [-f]                                     force action\n   [-help]                                  print this help\n   [-u user_list]                           delete all jobs of users specified in list\n\njob_task_list            job_tasks[,job_tasks,...]\njob_tasks                job_id['.'task_id_range]\n",
        env!("CARGO_PKG_VERSION")
    )
}

pub fn qdel(args: &[String]) -> Output {
    let p = match crate::parse_args(args, QDEL_SPECS, true, qdel_usage) {
        Ok(p) => p,
        Err(out) => return out,
    };
    let ids = p.operand_list();
    let users: Vec<String> = p
        .arg("-u")
        .map(|u| u.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    if ids.is_empty() && users.is_empty() {
        return Output::usage_error("error: no job id given", &qdel_usage());
    }
    let req = ToMaster::DeleteJobs {
        ids,
        users,
        force: p.has("-f"),
    };
    // qdel reports refusals on stdout, as SGE does.
    crate::answer_on_stdout(&req)
}
