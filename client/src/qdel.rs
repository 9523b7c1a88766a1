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
        "Gantry {}\nusage: qdel [options] job_task_list\n   [-f]                                     force action\n   [-help]                                  print this help\n   [-u user_list]                           delete all jobs of users specified in list\n   job_task_list                            delete all jobs given in list\n\njob_task_list           job_tasks[,job_tasks,...]\njob_tasks               [job_id['.'task_id_range]|job_name|pattern][' -t 'task_id_range]\ntask_id_range           task_id['-'task_id[':'step]]\nuser_list               user[,user,...]\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// `JOB -t RANGE` is `JOB.RANGE` (SGE's `job_tasks`).
fn join_task_ranges(args: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(args.len());
    let mut i = 0;
    while i < args.len() {
        // The word before is a job, not an option nor the argument of `-u`.
        let follows_a_job = out.last().is_some_and(|prev| !prev.starts_with('-'))
            && !(i >= 2 && args[i - 2] == "-u");
        if args[i] == "-t" && follows_a_job && i + 1 < args.len() {
            if let Some(prev) = out.last_mut() {
                *prev = format!("{prev}.{}", args[i + 1]);
            }
            i += 2;
            continue;
        }
        out.push(args[i].clone());
        i += 1;
    }
    out
}

pub fn qdel(args: &[String]) -> Output {
    let mut args = join_task_ranges(args);
    // SGE's qdel takes a word it has no option for as a job name (`-nosuch`: `The job
    // -nosuch of user(s) user1 does not exist`); such words come first.
    let mut named: Vec<String> = Vec::new();
    let p = loop {
        match crate::opts::parse(&args, QDEL_SPECS, true) {
            Ok(p) => break p,
            Err(crate::opts::OptError::Unknown(word)) => {
                match args.iter().position(|a| *a == word) {
                    Some(at) => named.push(args.remove(at)),
                    None => {
                        return Output::usage_error(
                            &format!("error: invalid option argument \"{word}\""),
                            &qdel_usage(),
                        )
                    }
                }
            }
            Err(e) => return Output::usage_error(&e.to_string(), &qdel_usage()),
        }
    };
    if p.has("-help") {
        return Output::ok(qdel_usage());
    }
    let mut ids = named;
    ids.extend(p.operand_list());
    let users: Vec<String> = p
        .arg("-u")
        .map(|u| u.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    // SGE's qdel says it on stdout, its usage on stderr.
    if ids.is_empty() && users.is_empty() {
        return Output {
            stdout: "ERROR! no option argument\n".to_string(),
            stderr: qdel_usage(),
            code: crate::exit::FAILURE,
        };
    }
    let req = ToMaster::DeleteJobs {
        ids,
        users,
        force: p.has("-f"),
    };
    // qdel reports refusals on stdout, as SGE does.
    crate::answer_on_stdout(&req)
}

#[cfg(test)]
mod tests {
    use super::join_task_ranges;

    #[test]
    fn a_task_range_after_a_job_becomes_its_tasks() {
        let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        let table = [
            ("1 -t 3", "1.3"),
            ("1 -t 2-4:2 7", "1.2-4:2 7"),
            ("-f 5 -t 1", "-f 5.1"),
            ("-u -t", "-u -t"),
            ("-t 3", "-t 3"),
            ("myjob -t 1-2", "myjob.1-2"),
            ("-u user1 -t 3", "-u user1 -t 3"),
        ];
        for (given, want) in table {
            assert_eq!(join_task_ranges(&words(given)), words(want), "{given}");
        }
    }
}
