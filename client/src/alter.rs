//! `qalter`, `qhold`, `qrls` (change pending jobs) and `qmod` (disable and enable queue
//! instances).

use gantry_proto::{FromMaster, JobChanges, QueueChange, ToMaster};

use crate::opts::{opt, Arity, OptSpec, Parsed};
use crate::{exit, Output};

fn job_list(p: &Parsed) -> Vec<String> {
    p.operands
        .iter()
        .flat_map(|o| o.split(','))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn send(req: ToMaster) -> Output {
    match crate::ask(&req) {
        Ok(FromMaster::Done { messages }) => {
            Output::ok(messages.iter().map(|m| format!("{m}\n")).collect())
        }
        Ok(other) => crate::unexpected(&other),
        Err(out) => out,
    }
}

const QALTER_SPECS: &[OptSpec] = &[
    opt("-help", Arity::None),
    opt("-l", Arity::One),
    opt("-q", Arity::One),
    opt("-h", Arity::Optional),
    opt("-N", Arity::One),
    opt("-p", Arity::One),
    opt("-hold_jid", Arity::One),
    opt("-a", Arity::One),
    opt("-m", Arity::One),
    opt("-M", Arity::One),
    opt("-R", Arity::One),
    opt("-ac", Arity::One),
    opt("-dc", Arity::One),
    opt("-sc", Arity::One),
    opt("-r", Arity::One),
    opt("-notify", Arity::None),
    opt("-hold_jid_ad", Arity::One),
    opt("-dl", Arity::One),
    opt("-js", Arity::One),
    opt("-binding", Arity::Binding),
    opt("-masterq", Arity::One),
    opt("-ckpt", Arity::One),
    opt("-c", Arity::One),
];

pub fn qalter_usage() -> String {
    let lines = [
        ("[-a date_time]", "request a start time"),
        ("[-ac context_list]", "add context variable(s)"),
        ("[-dc simple_context_list]", "delete context variable(s)"),
        ("[-dl date_time]", "request a deadline initiation time"),
        ("[-binding [env|pe|set] strategy]", "bind the job to cores"),
        ("[-c ckpt_selector]", "define type of checkpointing for job"),
        ("[-ckpt ckpt-name]", "request checkpoint method"),
        ("[-masterq wc_queue_list]", "bind master task to queue(s)"),
        ("[-h {u|n}]", "place (u) or remove (n) the user hold"),
        ("[-help]", "print this help"),
        (
            "[-hold_jid job_identifier_list]",
            "define jobnet interdependencies",
        ),
        (
            "[-hold_jid_ad job_identifier_list]",
            "define jobnet array interdependencies",
        ),
        ("[-js job_share]", "share tree or functional job share"),
        ("[-l resource_list]", "request the given resources"),
        ("[-m mail_options]", "define mail notification events"),
        ("[-M mail_list]", "notify these e-mail addresses"),
        ("[-N name]", "specify job name"),
        ("[-notify]", "notify job before killing/suspending it"),
        ("[-p priority]", "define job's relative priority"),
        ("[-q wc_queue_list]", "bind job to queue(s)"),
        ("[-R y[es]|n[o]]", "reservation desired"),
        (
            "[-sc context_list]",
            "set job context (replaces old context)",
        ),
    ];
    let mut s = format!(
        "Gantry {}\nusage: qalter [options] job_task_list\n",
        env!("CARGO_PKG_VERSION")
    );
    for (o, d) in lines {
        s.push_str(&format!("   {o:<40} {d}\n"));
    }
    s
}

/// `-ac`, `-dc` or `-sc` with its list, as a change; SGE's message for a bad list.
pub fn context_change(option: &str, arg: &str) -> Result<gantry_proto::ContextChange, String> {
    use gantry_common::context::{parse_names, parse_pairs};
    use gantry_proto::ContextChange;
    let change = match option {
        "-dc" => parse_names(arg).map(ContextChange::Delete),
        "-sc" => parse_pairs(arg).map(ContextChange::Set),
        _ => parse_pairs(arg).map(ContextChange::Add),
    };
    change.ok_or_else(|| format!("ERROR! Wrong context list format {option} \"{arg}\""))
}

pub fn qalter(args: &[String]) -> Output {
    let p = match crate::parse_args(args, QALTER_SPECS, true, qalter_usage) {
        Ok(p) => p,
        Err(out) => return out,
    };
    let ids = job_list(&p);
    if ids.is_empty() {
        return Output::usage_error("error: no job id given", &qalter_usage());
    }
    let mut changes = JobChanges::default();
    for g in &p.options {
        let arg = g.arg.clone().unwrap_or_default();
        match g.name {
            "-l" => {
                let list = arg
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(|i| match i.split_once('=') {
                        Some((k, v)) => (k.to_string(), v.to_string()),
                        None => (i.to_string(), "TRUE".to_string()),
                    })
                    .collect();
                changes.hard_resources = Some(list);
            }
            "-q" => {
                changes.queues = Some(
                    arg.split(',')
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect(),
                )
            }
            "-h" => {
                changes.hold = match arg.as_str() {
                    "" | "u" => Some(true),
                    "n" | "U" => Some(false),
                    other => {
                        return Output::fail(
                            format!(
                                "error: invalid hold type \"{other}\" (only u and n are supported)"
                            ),
                            exit::FAILURE,
                        )
                    }
                }
            }
            "-N" => changes.name = Some(arg),
            "-notify" => changes.notify = Some(true),
            "-m" => match gantry_common::mail::parse_options(&arg) {
                Some(m) => changes.mail_options = Some(m),
                None => {
                    return Output::fail(
                        format!(
                        "ERROR! Wrong mail options list format \"{arg}\" specified to -m option"
                    ),
                        exit::FAILURE,
                    )
                }
            },
            "-M" => match gantry_common::mail::parse_list(&arg) {
                Some(l) => changes.mail_list = Some(l),
                None => {
                    return Output::fail(
                        format!("ERROR! Wrong mail list format \"{arg}\" specified to -M option"),
                        exit::FAILURE,
                    )
                }
            },
            "-ac" | "-dc" | "-sc" => match context_change(g.name, &arg) {
                Ok(change) => changes.context.push(change),
                Err(e) => return Output::fail(e, exit::FAILURE),
            },
            "-R" | "-r" => {
                let on = match arg.as_str() {
                    "y" | "yes" => true,
                    "n" | "no" => false,
                    _ => {
                        return Output::fail(
                            format!("error: invalid argument \"{arg}\" for {}", g.name),
                            exit::FAILURE,
                        )
                    }
                };
                if g.name == "-R" {
                    changes.reserve = Some(on);
                } else {
                    changes.restart = Some(on);
                }
            }
            "-a" => match crate::dates::parse_date_time(&arg, jiff::Zoned::now()) {
                Some(t) => changes.start_after = Some(Some(t)),
                None => {
                    return Output::fail(
                        format!(
                            "error: \"{arg}\" is not a valid date_time ([[CC]YY]MMDDhhmm[.SS])"
                        ),
                        exit::FAILURE,
                    )
                }
            },
            "-p" => match arg.parse::<i32>() {
                Ok(v) if (-1023..=1024).contains(&v) => changes.priority = Some(v),
                _ => {
                    return Output::fail(
                        format!("error: invalid priority \"{arg}\""),
                        exit::FAILURE,
                    )
                }
            },
            "-hold_jid_ad" => {
                changes.hold_jids_ad = Some(
                    arg.split(',')
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect(),
                )
            }
            "-dl" => match crate::dates::parse_date_time(&arg, jiff::Zoned::now()) {
                Some(t) => changes.deadline = Some(t),
                None => {
                    return Output::fail(
                        format!("ERROR! Wrong date/time format \"{arg}\" specified to -dl option"),
                        crate::optvalues::ESYNTAX,
                    )
                }
            },
            "-js" => match crate::optvalues::unsigned(
                &arg,
                "ERROR! invalid jobshare, must be an unsigned integer",
            ) {
                Ok(js) => changes.job_share = Some(js),
                Err(e) => return Output::fail(e.text, e.status),
            },
            "-binding" => match gantry_common::binding::parse(&arg) {
                Ok(b) => changes.binding = Some(gantry_common::binding::print(&b)),
                Err(e) => return Output::fail(e, crate::optvalues::ESEMANTIC),
            },
            "-masterq" => match crate::optvalues::queue_list(g.name, &arg) {
                Ok(l) => changes.masterq = Some(l),
                Err(e) => return Output::fail(e.text, e.status),
            },
            "-ckpt" => changes.ckpt = Some(arg),
            "-c" => {
                if !gantry_common::ckpt::valid_selector(&arg) {
                    return Output::fail(
                        "ERROR! -c argument invalid".to_string(),
                        crate::optvalues::ESEMANTIC,
                    );
                }
                changes.ckpt_when = Some(arg);
            }
            "-hold_jid" => {
                changes.hold_jids = Some(
                    arg.split(',')
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect(),
                )
            }
            _ => {}
        }
    }
    send(ToMaster::AlterJobs {
        ids,
        changes: Box::new(changes),
    })
}

const HOLD_SPECS: &[OptSpec] = &[opt("-help", Arity::None), opt("-h", Arity::One)];

fn hold_usage(cmd: &str) -> String {
    format!(
        "Gantry {}\nusage: {cmd} [options] job_task_list\n   [-h u]                                   user hold (the only kind Gantry has)\n   [-help]                                  print this help\n",
        env!("CARGO_PKG_VERSION")
    )
}

fn qhold_usage() -> String {
    hold_usage("qhold")
}

fn qrls_usage() -> String {
    hold_usage("qrls")
}

fn hold(args: &[String], on: bool) -> Output {
    let usage = if on { qhold_usage } else { qrls_usage };
    let p = match crate::parse_args(args, HOLD_SPECS, true, usage) {
        Ok(p) => p,
        Err(out) => return out,
    };
    if let Some(h) = p.arg("-h") {
        if h != "u" {
            return Output::fail(
                format!("error: hold type \"{h}\" is not supported (only u)"),
                exit::FAILURE,
            );
        }
    }
    let ids = job_list(&p);
    if ids.is_empty() {
        return Output::usage_error("error: no job id given", &usage());
    }
    send(ToMaster::AlterJobs {
        ids,
        changes: Box::new(JobChanges {
            hold: Some(on),
            ..JobChanges::default()
        }),
    })
}

pub fn qhold(args: &[String]) -> Output {
    hold(args, true)
}

pub fn qrls(args: &[String]) -> Output {
    hold(args, false)
}

const QMOD_SPECS: &[OptSpec] = &[
    opt("-help", Arity::None),
    opt("-d", Arity::None),
    opt("-e", Arity::None),
    opt("-cj", Arity::None),
    opt("-sj", Arity::None),
    opt("-usj", Arity::None),
    opt("-c", Arity::None),
    opt("-cq", Arity::None),
    opt("-s", Arity::None),
    opt("-sq", Arity::None),
    opt("-us", Arity::None),
    opt("-usq", Arity::None),
];

/// `12`, `12.3`, `12.1-4`: a job, not a queue.
pub fn is_job_ref(text: &str) -> bool {
    text.split('.')
        .next()
        .is_some_and(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_digit()))
}

pub fn qmod_usage() -> String {
    format!(
        "Gantry {}\nusage: qmod [options] wc_queue_list|job_list\n   [-c|-cq]                                 clear the error state of queue instances\n   [-cj]                                    clear the error state of jobs\n   [-d]                                     disable\n   [-s|-sq]                                 suspend queue instances (jobs, given job ids)\n   [-sj]                                    suspend jobs\n   [-us|-usq]                               unsuspend queue instances (jobs, given job ids)\n   [-usj]                                   unsuspend jobs\n   [-e]                                     enable\n   [-help]                                  print this help\n\nwc_queue_list            wc_queue[,wc_queue,...]\nwc_queue                 queue[@host] (with * and ? wildcards)\n",
        env!("CARGO_PKG_VERSION")
    )
}

pub fn qmod(args: &[String]) -> Output {
    let p = match crate::parse_args(args, QMOD_SPECS, true, qmod_usage) {
        Ok(p) => p,
        Err(out) => return out,
    };
    let queue_change = if p.has("-c") || p.has("-cq") {
        Some(QueueChange::ClearError)
    } else if p.has("-s") || p.has("-sq") {
        Some(QueueChange::Suspend)
    } else if p.has("-us") || p.has("-usq") {
        Some(QueueChange::Unsuspend)
    } else {
        None
    };
    if let Some(change) = queue_change {
        let targets = job_list(&p);
        if targets.is_empty() {
            return Output::usage_error("error: no queue given", &qmod_usage());
        }
        // `qmod -s 12` suspends a job, as SGE's qmod does for job ids.
        let jobs = !p.has("-sq")
            && !p.has("-usq")
            && !p.has("-cq")
            && !p.has("-c")
            && targets.iter().all(|t| crate::alter::is_job_ref(t));
        if jobs {
            return send(ToMaster::SuspendJobs {
                ids: targets,
                suspend: change == QueueChange::Suspend,
            });
        }
        return send(ToMaster::ChangeQueueInstances { targets, change });
    }
    if p.has("-sj") || p.has("-usj") {
        let ids = job_list(&p);
        if ids.is_empty() {
            return Output::usage_error("error: no job given", &qmod_usage());
        }
        return send(ToMaster::SuspendJobs {
            ids,
            suspend: p.has("-sj"),
        });
    }
    if p.has("-cj") {
        let ids = job_list(&p);
        if ids.is_empty() {
            return Output::usage_error("error: no job given", &qmod_usage());
        }
        return send(ToMaster::ClearJobErrors { ids });
    }
    let disable = match (p.has("-d"), p.has("-e")) {
        (true, false) => true,
        (false, true) => false,
        _ => return Output::usage_error("error: give exactly one of -d and -e", &qmod_usage()),
    };
    let targets = job_list(&p);
    if targets.is_empty() {
        return Output::usage_error("error: no queue given", &qmod_usage());
    }
    send(ToMaster::SetQueueState { targets, disable })
}
