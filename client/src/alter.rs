//! `qalter`, `qhold`, `qrls` (change pending jobs) and `qmod` (disable and enable queue
//! instances).

use gantry_proto::{JobChanges, QueueChange, RescheduleTargets, ToMaster};

use crate::opts::{opt, Arity, OptSpec, Parsed};
use crate::optvalues::{self, context_change, OptionError};
use crate::{exit, Output};

mod verify;

fn job_list(p: &Parsed) -> Vec<String> {
    p.operand_list()
}

/// qalter, qhold, qrls and qmod print the master's answer on stdout, refusals included,
/// as SGE's do.
fn send(req: ToMaster) -> Output {
    crate::answer_on_stdout(&req)
}

pub fn qalter_usage() -> String {
    format!(
        "Gantry {}\nusage: qalter [options] job_task_list\n   [-a date_time]                           request a start time\n   [-ac context_list]                       add context variable(s)\n   [-ar ar_id]                              bind job to advance reservation\n   [-A account_string]                      account string in accounting record\n   [-binding [env|pe|set] exp|lin|str]      binds job to processor cores\n   [-c ckpt_selector]                       define type of checkpointing for job\n   [-ckpt ckpt-name]                        request checkpoint method\n   [-cwd]                                   use current working directory\n   [-dc simple_context_list]                delete context variable(s)\n   [-dl date_time]                          request a deadline initiation time\n   [-e path_list]                           specify standard error stream path(s)\n   [-h hold_list]                           list of hold types concerned\n   [-hard]                                  consider following requests \"hard\"\n   [-help]                                  print this help\n   [-hold_jid job_identifier_list]          define jobnet interdependencies\n   [-hold_jid_ad job_identifier_list]       define jobnet array interdependencies\n   [-i file_list]                           specify standard input stream file(s)\n   [-j y[es]|n[o]]                          merge stdout and stderr stream of job\n   [-js job_share]                          share tree or functional job share\n   [-l resource_list]                       request the given resources\n   [-M mail_list]                           notify these e-mail addresses\n   [-m mail_options]                        define mail notification events\n   [-masterq wc_queue_list]                 bind master task to queue(s)\n   [-N name]                                specify job name\n   [-notify]                                notify job before killing/suspending it\n   [-o path_list]                           specify standard output stream path(s)\n   [-ot tickets]                            set job's override tickets\n   [-P project_name]                        set job's project\n   [-p priority]                            define job's relative priority\n   [-pe wc_pe_name slot_range]              request slot range for parallel jobs\n   [-q wc_queue_list]                       bind job to queue(s)\n   [-r y[es]|n[o]]                          define job as (not) restartable\n   [-R y[es]|n[o]]                          reservation desired\n   [-sc context_list]                       set job context (replaces old context)\n   [-soft]                                  consider following requests as soft\n   [-S path_list]                           command interpreter to be used\n   [-tc max_running_tasks]                  throttle the number of concurrent tasks\n   [-u user_list]                           specify a list of users\n                                            (not allowed in combination with job_task_list)\n   [-v variable_list]                       export these environment variables\n   [-verify]                                do not submit, just verify\n   [-V]                                     export all environment variables\n   [-w e|w|n|v|p]                           verify mode (error|warning|none|just verify|poke) for jobs\n   [-wd working_directory]                  use working_directory\n   job_task_list                            jobids (and taskids) of jobs to be altered\n\naccount_string          account_name\ncomplex_list            complex[,complex,...]\ncontext_list            variable[=value][,variable[=value],...]\nckpt_selector           `n' `s' `m' `x' `r' <interval>\ndate_time               [[CC]YY]MMDDhhmm[.SS]\nhold_list               `n' `u' `s' `o' `U' `S' `O'\njob_identifier_list     {{job_id|job_name|reg_exp}}[,{{job_id|job_name|reg_exp}},...]\nmail_address            username[@host]\nmail_list               mail_address[,mail_address,...]\nmail_options            `e' `b' `a' `n' `s'\nworking_directory       path\npath_list               [host:]path[,[host:]path,...]\npriority                -1023 - 1024\nresource_list           resource[=value][,resource[=value],...]\nsimple_context_list     variable[,variable,...]\nslot_range              [n[-m]|[-]m] - n,m > 0\njob_task_list           job_tasks[,job_tasks,...]\njob_tasks               [job_id['.'task_id_range]|job_name|pattern][' -t 'task_id_range]\ntask_id_range           task_id['-'task_id[':'step]]\nuser_list               user[,user,...]\nvariable_list           variable[=value][,variable[=value],...]\nwc_cqueue               wildcard expression matching a cluster queue\nwc_host                 wildcard expression matching a host\nwc_hostgroup            wildcard expression matching a hostgroup\nwc_qinstance            wc_cqueue@wc_host\nwc_qdomain              wc_cqueue@wc_hostgroup\nwc_queue                wc_cqueue|wc_qdomain|wc_qinstance\nwc_queue_list           wc_queue[,wc_queue,...]\nexp                     explicit:<socket>,<core>[:...]\nlin                     linear[:<amount>[:<socket>,<core>]]\nstr                     striding:<amount>:<stepsize>[:<socket>,<core>]\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// A refused qalter option, as SGE's qalter prints it: `qalter: ` and the parser's
/// message, with its answer status; an option qalter does not take is found left over
/// once the job is built, and printed bare (SGE's qalter.c).
fn refused(e: OptionError) -> Output {
    let prefix = if e.status == optvalues::ENOIMP {
        ""
    } else {
        "qalter: "
    };
    Output::fail(format!("{prefix}{}", e.text), e.status)
}

pub fn qalter(args: &[String]) -> Output {
    // qsub's options, read by the same parser; qalter's -h takes a hold list.
    let specs: Vec<OptSpec> = crate::qsub::SPECS
        .iter()
        .map(|s| match s.name {
            "-h" => opt("-h", Arity::Optional),
            _ => *s,
        })
        .collect();
    let p = match crate::opts::parse(args, &specs, true) {
        Ok(p) => p,
        // SGE's qalter says an unknown option without qsub's `ERROR!`.
        Err(crate::opts::OptError::Unknown(word)) => {
            return Output::fail(
                format!("qalter: invalid option argument \"{word}\""),
                optvalues::ESEMANTIC,
            )
        }
        Err(e) => return refused(OptionError::from(e)),
    };
    if p.has("-help") {
        return Output::ok(qalter_usage());
    }
    let changes = match changes_of(&p) {
        Ok(c) => c,
        Err(e) => return refused(e),
    };
    // `-verify`: what would change, as SGE's qalter prints it, without asking the
    // master (a job that does not exist is no error then).
    let ids = job_list(&p);
    if p.has("-verify") {
        let by_name = ids.iter().find(|t| !is_job_ref(t)).map(String::as_str);
        return Output::ok(verify::render_changes(&changes, by_name));
    }
    if ids.is_empty() && changes.users.is_empty() {
        return Output::usage_error("error: no job id given", &qalter_usage());
    }
    send(ToMaster::AlterJobs {
        ids,
        changes: Box::new(changes),
    })
}

/// The changes qalter's options ask for, read as qsub reads the same options.
fn changes_of(p: &Parsed) -> Result<JobChanges, OptionError> {
    let list = |arg: &str| -> Vec<String> {
        arg.split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut changes = JobChanges::default();
    let mut soft = false;
    for g in &p.options {
        let arg = g.arg.clone().unwrap_or_default();
        match g.name {
            "-l" => {
                let items = optvalues::resource_list(&arg)?;
                if soft {
                    changes.soft_resources = Some(items);
                } else {
                    changes.hard_resources = Some(items);
                }
            }
            "-q" => {
                let queues = optvalues::queue_list(g.name, &arg)?;
                if soft {
                    changes.soft_queues = Some(queues);
                } else {
                    changes.queues = Some(queues);
                }
            }
            "-hard" => soft = false,
            "-soft" => soft = true,
            "-h" => {
                // Lower case sets a hold, upper case releases it, `n` releases all.
                let unknown = || {
                    OptionError::syntax(format!(
                        "ERROR! unknown hold list \"{arg}\" specified to -h option"
                    ))
                };
                if arg == "n" {
                    changes.hold = Some(false);
                    changes.operator_hold = Some(false);
                    changes.system_hold = Some(false);
                } else {
                    for c in if arg.is_empty() {
                        "u".chars()
                    } else {
                        arg.chars()
                    } {
                        let slot = match c.to_ascii_lowercase() {
                            'u' => &mut changes.hold,
                            'o' => &mut changes.operator_hold,
                            's' => &mut changes.system_hold,
                            _ => return Err(unknown()),
                        };
                        *slot = Some(c.is_ascii_lowercase());
                    }
                }
            }
            "-N" => {
                if arg.contains('/') {
                    return Err(OptionError::semantic(
                        "ERROR! argument to -N option must not contain / ",
                    ));
                }
                changes.name = Some(arg)
            }
            "-notify" => changes.notify = Some(true),
            "-m" => changes.mail_options = Some(optvalues::mail_options(&arg)?),
            "-M" => changes.mail_list = Some(optvalues::mail_list(&arg)?),
            "-ac" | "-dc" | "-sc" => changes
                .context
                .push(context_change(g.name, &arg).map_err(OptionError::syntax)?),
            "-R" => changes.reserve = Some(optvalues::yes_no(g.name, &arg)?),
            "-r" => changes.restart = Some(optvalues::yes_no(g.name, &arg)?),
            "-j" => changes.merge_output = Some(optvalues::yes_no(g.name, &arg)?),
            "-a" => changes.start_after = Some(Some(crate::qsub::date_time(&arg, "-a")?)),
            "-dl" => changes.deadline = Some(crate::qsub::date_time(&arg, "-dl")?),
            "-p" => changes.priority = Some(optvalues::priority(&arg)?),
            "-hold_jid" => changes.hold_jids = Some(list(&arg)),
            "-hold_jid_ad" => changes.hold_jids_ad = Some(list(&arg)),
            "-js" => {
                changes.job_share = Some(optvalues::unsigned(
                    &arg,
                    "ERROR! invalid jobshare, must be an unsigned integer",
                )?)
            }
            "-tc" => changes.max_running_tasks = Some(optvalues::task_concurrency(&arg)?),
            "-binding" => changes.binding = Some(optvalues::binding(&arg)?),
            "-masterq" => changes.masterq = Some(optvalues::queue_list(g.name, &arg)?),
            "-ckpt" => changes.ckpt = Some(arg),
            "-c" => changes.ckpt_when = Some(optvalues::ckpt_selector(&arg)?),
            "-A" => changes.account = Some(arg),
            "-P" => changes.project = Some(arg),
            "-o" => changes.stdout_path = Some(optvalues::path_list(g.name, &arg)?),
            "-e" => changes.stderr_path = Some(optvalues::path_list(g.name, &arg)?),
            "-i" => changes.stdin_path = Some(optvalues::path_list(g.name, &arg)?),
            "-S" => changes.shell = Some(optvalues::path_list(g.name, &arg)?),
            "-wd" => changes.cwd = Some(arg),
            "-cwd" => {
                let here = std::env::current_dir().map_err(|e| {
                    OptionError::semantic(format!("error: cannot get the working directory: {e}"))
                })?;
                changes.cwd = Some(here.to_string_lossy().into_owned());
            }
            "-pe" => {
                let (name, range) = arg.split_once(' ').unwrap_or((arg.as_str(), "1"));
                changes.pe = Some((name.to_string(), range.to_string()));
            }
            "-v" | "-V" => {
                let env = changes.env.get_or_insert_with(Vec::new);
                let items: Vec<(String, String)> = if g.name == "-V" {
                    std::env::vars().collect()
                } else {
                    arg.split(',')
                        .filter(|s| !s.is_empty())
                        .map(|item| match item.split_once('=') {
                            Some((k, v)) => (k.to_string(), v.to_string()),
                            None => (item.to_string(), std::env::var(item).unwrap_or_default()),
                        })
                        .collect()
                };
                for (k, v) in items {
                    env.retain(|(ek, _)| ek != &k);
                    env.push((k, v));
                }
            }
            "-u" => changes.users.extend(list(&arg)),
            "-w" => changes.verify = optvalues::verify_level(&arg)?,
            // qalter's own options Gantry has no use for yet: refused, never ignored.
            "-ar" => {
                changes.ar = Some(gantry_proto::ArId(u64::from(optvalues::unsigned(
                    &arg,
                    "ERROR! invalid advance reservation id, must be an unsigned integer",
                )?)))
            }
            "-ot" => {
                changes.override_tickets = Some(optvalues::unsigned(
                    &arg,
                    "ERROR! invalid override tickets, must be an unsigned integer",
                )?)
            }
            // Shows the changes instead of making them (see `qalter`).
            "-verify" => {}
            // qsub's options that SGE's qalter parses and then finds left over.
            _ => return Err(OptionError::not_taken(g.name, g.arg.as_deref())),
        }
    }
    Ok(changes)
}

const HOLD_SPECS: &[OptSpec] = &[
    opt("-help", Arity::None),
    opt("-h", Arity::One),
    opt("-u", Arity::One),
];

fn hold_usage(cmd: &str) -> String {
    format!(
        "Gantry {}\nusage: {cmd} [options] job_task_list\n   [-h hold_list]                           list of hold types concerned\n   [-help]                                  print this help\n   [-u user_list]                           specify a list of users\n                                            (not allowed in combination with job_task_list)\n   job_task_list                            jobids (and taskids) of jobs to be altered\n\nhold_list               `u' `s' `o'\njob_task_list           job_tasks[,job_tasks,...]\njob_tasks               [job_id['.'task_id_range]|job_name|pattern][' -t 'task_id_range]\ntask_id_range           task_id['-'task_id[':'step]]\nuser_list               user[,user,...]\n",
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
    // As SGE's qhold and qrls, which are qalter: `qalter: invalid option argument`.
    let p = match crate::parse_args_as(
        args,
        HOLD_SPECS,
        true,
        usage,
        crate::UnknownOption::Line("qalter: ", optvalues::ESEMANTIC),
    ) {
        Ok(p) => p,
        Err(out) => return out,
    };
    // `-h`: the holds set or released, `u` when not given.
    let (mut user, mut operator, mut system) = (None, None, None);
    for c in p.arg("-h").unwrap_or("u").chars() {
        match c {
            'u' => user = Some(on),
            'o' => operator = Some(on),
            's' => system = Some(on),
            _ => {
                return Output::usage_error(
                    &format!(
                        "ERROR! unknown hold list \"{}\" specified to -h option",
                        p.arg("-h").unwrap_or("")
                    ),
                    &usage(),
                )
            }
        }
    }
    let ids = job_list(&p);
    let users: Vec<String> = p
        .options
        .iter()
        .filter(|g| g.name == "-u")
        .filter_map(|g| g.arg.as_deref())
        .flat_map(|a| a.split(','))
        .filter(|u| !u.is_empty())
        .map(str::to_string)
        .collect();
    if ids.is_empty() && users.is_empty() {
        return Output::usage_error("error: no job id given", &usage());
    }
    crate::answer_on_stdout_exiting(
        &ToMaster::AlterJobs {
            ids,
            changes: Box::new(JobChanges {
                hold: user,
                operator_hold: operator,
                system_hold: system,
                users,
                ..JobChanges::default()
            }),
        },
        exit::for_hold_refusal,
    )
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
    opt("-f", Arity::None),
    opt("-r", Arity::None),
    opt("-rj", Arity::None),
    opt("-rq", Arity::None),
];

/// `12`, `12.3`, `12.1-4`: a job, not a queue.
pub fn is_job_ref(text: &str) -> bool {
    text.split('.')
        .next()
        .is_some_and(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_digit()))
}

/// SGE 8.1.9's text.
pub fn qmod_usage() -> String {
    format!(
        "Gantry {}\nusage: qmod [options]\n   [-c job_wc_queue_list]  clear error state\n   [-cj job_list]          clear job error state\n   [-cq wc_queue_list]     clear queue error state\n   [-d wc_queue_list]      disable\n   [-e wc_queue_list]      enable\n   [-f]                    force action\n   [-help]                 print this help\n   [-r job_wc_queue_list]  reschedule jobs (running in queue)\n   [-rj job_list]          reschedule jobs\n   [-rq wc_queue_list]     reschedule all jobs in a queue\n   [-s job_wc_queue_list]  suspend\n   [-sj job_list]          suspend jobs\n   [-sq wc_queue_list]     suspend queues\n   [-us job_wc_queue_list] unsuspend\n   [-usj job_list]         unsuspend jobs\n   [-usq wc_queue_list]    unsuspend queues\n\njob_wc_queue_list          {{job_tasks|wc_queue}}[{{','|' '}}{{job_tasks|wc_queue}}[{{','|' '}}...]]\njob_list                   {{job_tasks}}[{{','|' '}}job_tasks[{{','|' '}}...]]\njob_tasks                  {{{{job_id'.'task_id_range}}|job_name|pattern}}[' -t 'task_id_range]\ntask_id_range              task_id['-'task_id[':'step]]\nwc_cqueue                  wildcard expression matching a cluster queue\nwc_host                    wildcard expression matching a host\nwc_hostgroup               wildcard expression matching a hostgroup\nwc_qinstance               wc_cqueue@wc_host\nwc_qdomain                 wc_cqueue@wc_hostgroup\nwc_queue                   wc_cqueue|wc_qdomain|wc_qinstance\nwc_queue_list              wc_queue[','wc_queue[','...]]\n",
        env!("CARGO_PKG_VERSION")
    )
}

pub fn qmod(args: &[String]) -> Output {
    let p = match crate::parse_args_as(
        args,
        QMOD_SPECS,
        true,
        qmod_usage,
        crate::UnknownOption::UsageThen(""),
    ) {
        Ok(p) => p,
        Err(out) => return out,
    };
    let force = p.has("-f");
    for (option, kind) in [
        ("-rj", RescheduleTargets::Jobs),
        ("-rq", RescheduleTargets::Queues),
        ("-r", RescheduleTargets::Either),
    ] {
        if !p.has(option) {
            continue;
        }
        let targets = job_list(&p);
        if targets.is_empty() {
            return Output::fail(format!("{option} option must have argument"), exit::FAILURE);
        }
        return send(ToMaster::RescheduleJobs {
            targets,
            kind,
            force,
        });
    }
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
                force,
            });
        }
        return send(ToMaster::ChangeQueueInstances {
            targets,
            change,
            force,
        });
    }
    if p.has("-sj") || p.has("-usj") {
        let ids = job_list(&p);
        if ids.is_empty() {
            return Output::usage_error("error: no job given", &qmod_usage());
        }
        return send(ToMaster::SuspendJobs {
            ids,
            suspend: p.has("-sj"),
            force,
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
    send(ToMaster::SetQueueState {
        targets,
        disable,
        force,
    })
}
