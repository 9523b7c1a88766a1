//! `qsub`: submit a job script, a script on stdin, or a binary (`-b y`), with options
//! from the defaults files (cell `sge_request`, `~/.sge_request`, `./.sge_request`), the
//! script's `#$` lines and the command line, in that order of precedence.

use std::io::Read;

use gantry_proto::{FromMaster, JobScript, JobSpec, ToMaster, Verify};

use crate::opts::{opt, parse, split_line, Arity, OptSpec, Parsed};
use crate::optvalues::{self, OptionError};
use crate::{exit, Output};

/// Every option SGE's submit parser reads (qalter's parser is the same one).
pub(crate) const SPECS: &[OptSpec] = &[
    opt("-help", Arity::None),
    opt("-N", Arity::One),
    opt("-o", Arity::One),
    opt("-e", Arity::One),
    opt("-j", Arity::One),
    opt("-cwd", Arity::None),
    opt("-wd", Arity::One),
    opt("-v", Arity::One),
    opt("-V", Arity::None),
    opt("-l", Arity::One),
    opt("-q", Arity::One),
    opt("-h", Arity::None),
    opt("-hold_jid", Arity::One),
    opt("-t", Arity::One),
    opt("-tc", Arity::One),
    opt("-terse", Arity::None),
    opt("-sync", Arity::One),
    opt("-S", Arity::One),
    opt("-b", Arity::One),
    opt("-p", Arity::One),
    opt("-A", Arity::One),
    opt("-P", Arity::One),
    opt("-hard", Arity::None),
    opt("-soft", Arity::None),
    opt("-@", Arity::One),
    opt("-now", Arity::One),
    opt("-a", Arity::One),
    opt("-ar", Arity::One),
    opt("-pe", Arity::Two),
    opt("-w", Arity::One),
    opt("-m", Arity::One),
    opt("-M", Arity::One),
    opt("-R", Arity::One),
    opt("-ac", Arity::One),
    opt("-dc", Arity::One),
    opt("-sc", Arity::One),
    opt("-i", Arity::One),
    opt("-C", Arity::One),
    opt("-clear", Arity::None),
    opt("-r", Arity::One),
    opt("-notify", Arity::None),
    opt("-hold_jid_ad", Arity::One),
    opt("-dl", Arity::One),
    opt("-js", Arity::One),
    opt("-verify", Arity::None),
    opt("-shell", Arity::One),
    opt("-pty", Arity::One),
    opt("-c", Arity::One),
    opt("-ckpt", Arity::One),
    opt("-binding", Arity::Binding),
    opt("-jsv", Arity::One),
    opt("-masterq", Arity::One),
    // Parsed as SGE's qsub parses them, then refused as options it does not take.
    opt("-u", Arity::One),
    opt("-uall", Arity::None),
    opt("-ot", Arity::One),
    opt("-nostdin", Arity::None),
    opt("-noshell", Arity::None),
];

pub fn usage() -> String {
    format!(
        "Gantry {}\nusage: qsub [options]\n   [-a date_time]                           request a start time\n   [-ac context_list]                       add context variable(s)\n   [-ar ar_id]                              bind job to advance reservation\n   [-A account_string]                      account string in accounting record\n   [-b y[es]|n[o]]                          handle command as binary\n   [-binding [env|pe|set] exp|lin|str]      binds job to processor cores\n   [-c ckpt_selector]                       define type of checkpointing for job\n   [-ckpt ckpt-name]                        request checkpoint method\n   [-clear]                                 skip previous definitions for job\n   [-cwd]                                   use current working directory\n   [-C directive_prefix]                    define command prefix for job script\n   [-dc simple_context_list]                delete context variable(s)\n   [-dl date_time]                          request a deadline initiation time\n   [-e path_list]                           specify standard error stream path(s)\n   [-h]                                     place user hold on job\n   [-hard]                                  consider following requests \"hard\"\n   [-help]                                  print this help\n   [-hold_jid job_identifier_list]          define jobnet interdependencies\n   [-hold_jid_ad job_identifier_list]       define jobnet array interdependencies\n   [-i file_list]                           specify standard input stream file(s)\n   [-j y[es]|n[o]]                          merge stdout and stderr stream of job\n   [-js job_share]                          share tree or functional job share\n   [-jsv jsv_url]                           job submission verification script to be used\n   [-l resource_list]                       request the given resources\n   [-M mail_list]                           notify these e-mail addresses\n   [-m mail_options]                        define mail notification events\n   [-masterq wc_queue_list]                 bind master task to queue(s)\n   [-N name]                                specify job name\n   [-notify]                                notify job before killing/suspending it\n   [-now y[es]|n[o]]                        start job immediately or not at all\n   [-o path_list]                           specify standard output stream path(s)\n   [-P project_name]                        set job's project\n   [-p priority]                            define job's relative priority\n   [-pe wc_pe_name slot_range]              request slot range for parallel jobs\n   [-pty y[es]|n[o]]                        start job in a pseudo terminal\n   [-q wc_queue_list]                       bind job to queue(s)\n   [-r y[es]|n[o]]                          define job as (not) restartable\n   [-R y[es]|n[o]]                          reservation desired\n   [-sc context_list]                       set job context (replaces old context)\n   [-shell y[es]|n[o]]                      start command with or without wrapping <loginshell> -c\n   [-soft]                                  consider following requests as soft\n   [-sync y[es]|n[o]]                       wait for job to end and return exit code\n   [-S path_list]                           command interpreter to be used\n   [-t task_id_range]                       create a job-array with these tasks\n   [-tc max_running_tasks]                  throttle the number of concurrent tasks\n   [-terse]                                 tersed output, print only the job-id\n   [-v variable_list]                       export these environment variables\n   [-verify]                                do not submit, just verify\n   [-V]                                     export all environment variables\n   [-w e|w|n|v|p]                           verify mode (error|warning|none|just verify|poke) for jobs\n   [-wd working_directory]                  use working_directory\n   [-@ file]                                read commandline input from file\n   [{{command|-}} [command_args]]\n\naccount_string          account_name\ncomplex_list            complex[,complex,...]\ncontext_list            variable[=value][,variable[=value],...]\nckpt_selector           `n' `s' `m' `x' `r' <interval>\ndate_time               [[CC]YY]MMDDhhmm[.SS]\njob_identifier_list     {{job_id|job_name|reg_exp}}[,{{job_id|job_name|reg_exp}},...]\njsv_url                 [script:][username@]path\nmail_address            username[@host]\nmail_list               mail_address[,mail_address,...]\nmail_options            `e' `b' `a' `n' `s'\nworking_directory       path\npath_list               [host:]path[,[host:]path,...]\npriority                -1023 - 1024\nresource_list           resource[=value][,resource[=value],...]\nsimple_context_list     variable[,variable,...]\nslot_range              [n[-m]|[-]m] - n,m > 0\ntask_id_range           task_id['-'task_id[':'step]]\nvariable_list           variable[=value][,variable[=value],...]\nwc_cqueue               wildcard expression matching a cluster queue\nwc_host                 wildcard expression matching a host\nwc_hostgroup            wildcard expression matching a hostgroup\nwc_qinstance            wc_cqueue@wc_host\nwc_qdomain              wc_cqueue@wc_hostgroup\nwc_queue                wc_cqueue|wc_qdomain|wc_qinstance\nwc_queue_list           wc_queue[,wc_queue,...]\nexp                     explicit:<socket>,<core>[:...]\nlin                     linear[:<amount>[:<socket>,<core>]]\nstr                     striding:<amount>:<stepsize>[:<socket>,<core>]\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// `-sync y`: the job's end, waiting on across restarts of the master (or of the execd
/// that relays for this host): a lost connection is made again until the job's end is
/// known, as SGE's qsub does.
fn wait_for_job(
    job_id: gantry_proto::JobId,
) -> Result<gantry_proto::FromMaster, crate::conn::ConnError> {
    use crate::conn::ConnError;
    let mut said = false;
    loop {
        match crate::conn::request(&ToMaster::WaitJob { job_id }) {
            // The master shuts down, is gone, or is not back yet.
            Ok(gantry_proto::FromMaster::Refused(r))
                if r.kind == gantry_proto::RefusalKind::Internal => {}
            Err(ConnError::Io(_) | ConnError::Connect { .. }) => {}
            other => return other,
        }
        if !said {
            eprintln!(
                "qsub: lost the connection to the master while waiting for job {job_id}; waiting for it to come back"
            );
            said = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// Room left in a request for everything but the script (options, environment).
const SPEC_HEADROOM: usize = 1 << 20;

fn unable(message: &str) -> Output {
    Output::fail(
        format!("Unable to run job: {message}\nExiting."),
        exit::FAILURE,
    )
}

/// Options from a defaults file or `-@` file.
fn options_from_file(path: &std::path::Path) -> Result<Vec<String>, OptionError> {
    let text = std::fs::read_to_string(path).map_err(|e| OptionError {
        text: format!(
            "error opening {}: {}",
            path.display(),
            gantry_common::os_error::strerror(&e)
        ),
        status: exit::NO_SCRIPT,
    })?;
    let mut words = Vec::new();
    for line in text.lines() {
        words.extend(split_line(line).map_err(OptionError::syntax)?);
    }
    Ok(words)
}

/// The directive lines of a script (`#$`, or the prefix `-C` gives; none with an empty
/// prefix), as words.
pub fn directives(script: &[u8], prefix: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    if prefix.is_empty() {
        return Ok(words);
    }
    let text = String::from_utf8_lossy(script);
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix(prefix) {
            words.extend(split_line(rest)?);
        }
    }
    Ok(words)
}

/// What the options decide beyond the job itself.
pub(crate) struct Flags {
    terse: bool,
    sync: bool,
    binary: bool,
    /// `-w`, when given.
    verify: Option<Verify>,
    /// `-verify`: print the job as parsed, submit nothing.
    just_verify: bool,
    /// `-jsv` URLs with the rank of where each was given (the command line and the
    /// script first, then `./.sge_request`, `~/.sge_request`, the cell's `sge_request`):
    /// SGE runs them in that order.
    jsv: Vec<(u8, String)>,
    /// The rank of the options being applied.
    rank: u8,
}

impl Flags {
    pub(crate) fn new() -> Flags {
        Flags {
            terse: false,
            sync: false,
            binary: false,
            verify: None,
            just_verify: false,
            jsv: Vec::new(),
            rank: 0,
        }
    }
}

/// Where options came from: SGE reports an error in each differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layer {
    Defaults,
    Script,
    CommandLine,
}

/// A refused option, printed as SGE's qsub prints it: after `qsub: ` on the command
/// line, after `Unable to read script file because of error: ` in the script's lines,
/// bare in a defaults file; an option qsub does not take is found later, once the job
/// is built, and always gets `qsub: `. The exit status is SGE's answer status.
/// SGE 8.1.9's qsub prints its parser's messages without their `ERROR! ` (the words
/// qalter prints after `qalter: `).
pub(crate) fn refused(layer: Layer, e: OptionError) -> Output {
    let prefix = match layer {
        _ if e.status == optvalues::ENOIMP => "qsub: ",
        Layer::CommandLine => "qsub: ",
        Layer::Script => "Unable to read script file because of error: ",
        Layer::Defaults => "",
    };
    let text = e.text.strip_prefix("ERROR! ").unwrap_or(&e.text);
    // What SGE's date parser says first (`with_fault`) stands before `qsub: `.
    match text.strip_prefix('\n').and_then(|t| t.rsplit_once('\n')) {
        Some((fault, last)) => {
            let last = last.strip_prefix("ERROR! ").unwrap_or(last);
            Output::fail(format!("\n{fault}\n{prefix}{last}"), e.status)
        }
        None => Output::fail(format!("{prefix}{text}"), e.status),
    }
}

/// A refused `-a`/`-dl` time with the reason SGE's parser prints before qsub's message
/// (an empty line, then `Invalid month specification.`).
fn with_fault(mut e: OptionError, arg: &str) -> OptionError {
    if let Some(fault) = gantry_common::dates::date_time_fault(arg) {
        e.text = format!("\n{fault}\n{}", e.text);
    }
    e
}

pub(crate) fn date_time(arg: &str, option: &str) -> Result<i64, OptionError> {
    crate::dates::parse_date_time(arg, jiff::Zoned::now()).ok_or_else(|| {
        OptionError::syntax(format!(
            "ERROR! Wrong date/time format \"{arg}\" specified to {option} option"
        ))
    })
}

/// Apply parsed options to a spec, in order (later ones win).
pub(crate) fn apply(
    spec: &mut JobSpec,
    initial: &JobSpec,
    p: &Parsed,
    layer: Layer,
    cwd: &str,
    flags: &mut Flags,
) -> Result<(), OptionError> {
    let mut soft = false;
    for g in &p.options {
        let arg = g.arg.clone().unwrap_or_default();
        match g.name {
            "-help" if layer != Layer::CommandLine => {
                return Err(OptionError {
                    text: "-help not allowed in this context".into(),
                    status: optvalues::ENOIMP,
                })
            }
            "-N" => {
                if arg.contains('/') {
                    return Err(OptionError::semantic(
                        "ERROR! argument to -N option must not contain / ",
                    ));
                }
                if arg.is_empty() {
                    return Err(OptionError::semantic(
                        "ERROR! empty string argument to -N option invalid",
                    ));
                }
                spec.name = arg
            }
            "-o" => spec.stdout_path = Some(optvalues::path_list(g.name, &arg)?),
            "-e" => spec.stderr_path = Some(optvalues::path_list(g.name, &arg)?),
            "-j" => spec.merge_output = optvalues::yes_no(g.name, &arg)?,
            "-cwd" => spec.cwd = Some(cwd.to_string()),
            "-wd" => spec.cwd = Some(arg),
            "-v" => {
                for item in arg.split(',').filter(|s| !s.is_empty()) {
                    let (k, v) = match item.split_once('=') {
                        Some((k, v)) => (k.to_string(), v.to_string()),
                        None => (item.to_string(), std::env::var(item).unwrap_or_default()),
                    };
                    spec.env.retain(|(ek, _)| ek != &k);
                    spec.env.push((k, v));
                }
            }
            "-V" => {
                for (k, v) in std::env::vars() {
                    spec.env.retain(|(ek, _)| ek != &k);
                    spec.env.push((k, v));
                }
            }
            "-l" => {
                let list = optvalues::resource_list(&arg)?;
                let target = if soft {
                    &mut spec.soft_resources
                } else {
                    &mut spec.hard_resources
                };
                for (k, v) in list {
                    target.retain(|(ek, _)| ek != &k);
                    target.push((k, v));
                }
            }
            "-q" => {
                let list = optvalues::queue_list(g.name, &arg)?;
                // After -soft a queue list is a preference, as -soft -l is.
                if soft {
                    spec.soft_queues = list;
                } else {
                    spec.queues = list;
                }
            }
            "-h" => spec.hold = true,
            "-hold_jid" => spec
                .hold_jids
                .extend(arg.split(',').filter(|s| !s.is_empty()).map(str::to_string)),
            "-hold_jid_ad" => spec
                .hold_jids_ad
                .extend(arg.split(',').filter(|s| !s.is_empty()).map(str::to_string)),
            "-t" => spec.array = Some(optvalues::task_range(&arg)?),
            "-tc" => spec.max_running_tasks = Some(optvalues::task_concurrency(&arg)?),
            "-terse" => flags.terse = true,
            "-sync" => flags.sync = optvalues::yes_no(g.name, &arg)?,
            "-S" => spec.shell = Some(optvalues::path_list(g.name, &arg)?),
            "-b" => flags.binary = optvalues::yes_no(g.name, &arg)?,
            "-shell" => spec.binary_shell = optvalues::yes_no(g.name, &arg)?,
            "-p" => {
                spec.priority = optvalues::priority(&arg).map_err(|e| match arg.parse::<i64>() {
                    // SGE 8.1.9's qsub words a number out of range so (qalter otherwise).
                    Ok(_) => OptionError::syntax(format!(
                        "invalid priority \"{arg}\".  Must be an integer from -1023 to 1024"
                    )),
                    Err(_) => e,
                })?
            }
            "-A" => spec.account = arg,
            "-a" => {
                spec.start_after = Some(date_time(&arg, "-a").map_err(|e| with_fault(e, &arg))?)
            }
            "-dl" => spec.deadline = Some(date_time(&arg, "-dl").map_err(|e| with_fault(e, &arg))?),
            "-js" => {
                spec.job_share = optvalues::unsigned(
                    &arg,
                    "ERROR! invalid jobshare, must be an unsigned integer",
                )?
            }
            "-ar" => {
                spec.ar = Some(gantry_proto::ArId(u64::from(optvalues::unsigned(
                    &arg,
                    "ERROR! invalid advance reservation id, must be an unsigned integer",
                )?)))
            }
            "-pe" => {
                let (name, range) = arg.split_once(' ').unwrap_or((arg.as_str(), "1"));
                spec.pe = Some((name.to_string(), range.to_string()));
            }
            "-P" => spec.project = Some(arg),
            // Everything set before (defaults files, the script's lines, earlier options)
            // is dropped; the script itself stays.
            "-clear" => {
                let script = std::mem::replace(&mut spec.script, initial.script.clone());
                let args = std::mem::take(&mut spec.args);
                *spec = initial.clone();
                spec.script = script;
                spec.args = args;
                soft = false;
            }
            "-m" => spec.mail_options = optvalues::mail_options(&arg)?,
            "-M" => spec.mail_list = optvalues::mail_list(&arg)?,
            "-ac" | "-dc" | "-sc" => {
                let change =
                    crate::optvalues::context_change(g.name, &arg).map_err(OptionError::syntax)?;
                gantry_common::context::apply(&mut spec.context, &change);
            }
            "-i" => spec.stdin_path = Some(optvalues::path_list(g.name, &arg)?),
            "-notify" => spec.notify = true,
            "-r" => spec.restart = Some(optvalues::yes_no(g.name, &arg)?),
            "-R" => spec.reserve = optvalues::yes_no(g.name, &arg)?,
            "-hard" => soft = false,
            "-soft" => soft = true,
            "-w" => flags.verify = Some(optvalues::verify_level(&arg)?),
            "-verify" => flags.just_verify = true,
            "-now" => spec.immediate = optvalues::yes_no(g.name, &arg)?,
            "-pty" => spec.pty = optvalues::yes_no(g.name, &arg)?,
            "-jsv" => flags.jsv.push((flags.rank, arg)),
            "-binding" => spec.binding = Some(optvalues::binding(&arg)?),
            "-masterq" => spec.masterq = optvalues::queue_list(g.name, &arg)?,
            "-ckpt" => spec.ckpt = Some(arg),
            "-c" => spec.ckpt_when = Some(optvalues::ckpt_selector(&arg)?),
            "-C" => spec.directive_prefix = Some(arg),
            // qalter's and qrsh's options, which SGE's qsub parses and then refuses.
            "-u" | "-ot" | "-nostdin" | "-noshell" | "-uall" => {
                return Err(OptionError::not_taken(g.name, g.arg.as_deref()))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Where a job is submitted from: the working directory, the home directory, and a
/// binary job's specification with the `SGE_O_*` variables SGE's qsub records.
pub(crate) fn submitted_from() -> (String, String, JobSpec) {
    let cwd = std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "/".to_string());
    let host = gantry_common::cell::local_hostname();
    // As SGE's qsub: SGE_O_HOME and SGE_O_LOGNAME come from the environment (the
    // identity itself is the kernel's, established by the daemon); the password file
    // only when they are unset.
    let home = crate::account::home_dir()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    let logname = crate::account::login_name().unwrap_or_default();
    // In SGE 8.1.9's order (its `qstat -j -xml` lists them so): the submitter's
    // home, login name, PATH, shell and (when set) MAIL, then TERM, the submit host
    // and the working directory; `-v`/`-V` variables come after.
    let mut env: Vec<(String, String)> = vec![
        ("SGE_O_HOME".into(), home.clone()),
        ("SGE_O_LOGNAME".into(), logname.clone()),
        (
            "SGE_O_PATH".into(),
            std::env::var("PATH").unwrap_or_default(),
        ),
        (
            "SGE_O_SHELL".into(),
            std::env::var("SHELL").unwrap_or_default(),
        ),
    ];
    if let Ok(mail) = std::env::var("MAIL") {
        env.push(("SGE_O_MAIL".into(), mail));
    }
    env.extend([
        // SGE's qsub puts TERM in every job's environment list without a value (NONE
        // in qstat -j, no VA_value in its XML, empty in the job) whatever the terminal;
        // qrsh sends the terminal's type in its place.
        ("TERM".into(), String::new()),
        ("SGE_O_HOST".into(), host.clone()),
        ("SGE_O_WORKDIR".into(), cwd.clone()),
    ]);
    let spec = JobSpec {
        env,
        ..JobSpec::binary("", "", &host)
    };
    (cwd, home, spec)
}

/// The defaults files (the cell's `sge_request`, `~/.sge_request`, `./.sge_request`)
/// and the command line's `-@` files applied to `spec`, in SGE's order.
pub(crate) fn apply_defaults(
    p: &Parsed,
    spec: &mut JobSpec,
    initial: &JobSpec,
    cwd: &str,
    home: &str,
    flags: &mut Flags,
) -> Result<(), Output> {
    // Defaults files, then -@ files, decide -b before the script is read.
    let mut layers: Vec<(Layer, u8, Vec<String>)> = Vec::new();
    let defaults = [
        (
            3,
            Some(gantry_common::cell::client_home().join("sge_request")),
        ),
        (
            2,
            (!home.is_empty()).then(|| std::path::Path::new(home).join(".sge_request")),
        ),
        (1, Some(std::path::Path::new(cwd).join(".sge_request"))),
    ];
    for (rank, path) in defaults {
        let Some(path) = path else { continue };
        if path.exists() {
            match options_from_file(&path) {
                Ok(words) => layers.push((Layer::Defaults, rank, words)),
                Err(e) => return Err(refused(Layer::Defaults, e)),
            }
        }
    }
    for g in p.options.iter().filter(|g| g.name == "-@") {
        match options_from_file(std::path::Path::new(g.arg.as_deref().unwrap_or(""))) {
            Ok(words) => layers.push((Layer::CommandLine, 0, words)),
            Err(e) => return Err(refused(Layer::CommandLine, e)),
        }
    }
    for (layer, rank, words) in &layers {
        flags.rank = *rank;
        let applied = parse(words, SPECS, false)
            .map_err(OptionError::from)
            .and_then(|lp| apply(spec, initial, &lp, *layer, cwd, flags));
        if let Err(e) = applied {
            return Err(refused(*layer, e));
        }
    }
    Ok(())
}

/// The script's own `#$` lines (`-C` names another prefix), then the command line,
/// applied to `spec`.
fn script_then_command_line(
    p: &Parsed,
    spec: &mut JobSpec,
    initial: &JobSpec,
    cwd: &str,
    flags: &mut Flags,
) -> Result<(), Output> {
    flags.rank = 0;
    if let JobScript::Script { contents, .. } = &spec.script {
        let applied = directives(contents, p.arg("-C").unwrap_or("#$"))
            .map_err(OptionError::syntax)
            .and_then(|words| parse(&words, SPECS, false).map_err(OptionError::from))
            .and_then(|dp| apply(spec, initial, &dp, Layer::Script, cwd, flags));
        if let Err(e) = applied {
            return Err(refused(Layer::Script, e));
        }
    }
    apply(spec, initial, p, Layer::CommandLine, cwd, flags)
        .map_err(|e| refused(Layer::CommandLine, e))
}

/// Where a submission that comes through the master's HTTP API was made: the
/// submitter's home (its working directory unless `-cwd`/`-wd` say otherwise), login
/// name and the host it came from.
#[derive(Debug, Clone)]
pub struct Origin {
    pub home: String,
    pub logname: String,
    pub host: String,
}

/// A job submitted through the HTTP API: qsub's options (`args`, with a binary job's
/// command and arguments after them) and the script (`script`, whose `#$` lines are
/// read as qsub reads them), checked and turned into a job as `qsub` would, with the
/// same messages. No defaults file or `-@` file is read (they are files of a client's
/// host); options that need the submitter's terminal or environment are refused.
/// Returns the job and its `-w` mode, or what `qsub` would have printed and exited with.
pub fn remote_spec(
    args: &[String],
    script: Option<&[u8]>,
    origin: &Origin,
) -> Result<(JobSpec, Verify), Output> {
    let p = parse(args, SPECS, true).map_err(|e| refused(Layer::CommandLine, e.into()))?;
    for local in [
        "-help", "-@", "-sync", "-now", "-jsv", "-V", "-verify", "-terse",
    ] {
        if p.has(local) {
            return Err(Output::fail(
                format!("qsub: option \"{local}\" is not available through the HTTP API"),
                exit::ESEMANTIC,
            ));
        }
    }
    let env = vec![
        ("SGE_O_HOME".to_string(), origin.home.clone()),
        ("SGE_O_LOGNAME".to_string(), origin.logname.clone()),
        ("SGE_O_PATH".to_string(), String::new()),
        ("SGE_O_SHELL".to_string(), String::new()),
        ("TERM".to_string(), String::new()),
        ("SGE_O_HOST".to_string(), origin.host.clone()),
        ("SGE_O_WORKDIR".to_string(), origin.home.clone()),
    ];
    let mut spec = JobSpec {
        env,
        ..JobSpec::binary("", "", &origin.host)
    };
    let initial = spec.clone();
    let mut flags = Flags::new();
    if let Some(b) = p.arg("-b") {
        flags.binary = optvalues::yes_no("-b", b).map_err(|e| refused(Layer::CommandLine, e))?;
    }
    let default_name = match (flags.binary, script, p.operands.split_first()) {
        (true, Some(_), _) => {
            return Err(Output::fail(
                "qsub: a binary job (-b y) takes no script".to_string(),
                exit::ESEMANTIC,
            ))
        }
        (true, None, None) => {
            return Err(Output::fail(
                "qsub: command required for a binary job".to_string(),
                exit::ESEMANTIC,
            ))
        }
        (true, None, Some((command, rest))) => {
            spec.args = rest.to_vec();
            spec.script = JobScript::Binary {
                command: command.clone(),
            };
            std::path::Path::new(command)
                .file_name()
                .map_or_else(|| command.clone(), |n| n.to_string_lossy().into_owned())
        }
        (false, None, _) => {
            return Err(Output::fail(
                "qsub: a job needs a script (or -b y and a command)".to_string(),
                exit::NO_SCRIPT,
            ))
        }
        (false, Some(contents), _) => {
            spec.args = p.operands.clone();
            spec.script = JobScript::Script {
                path: "STDIN".into(),
                contents: contents.to_vec(),
            };
            "STDIN".to_string()
        }
    };
    script_then_command_line(&p, &mut spec, &initial, &origin.home, &mut flags)?;
    if spec.name.is_empty() {
        spec.name = default_name;
    }
    let verify = flags.verify.unwrap_or(if spec.ar.is_some() {
        Verify::Error
    } else {
        Verify::None
    });
    Ok((spec, verify))
}

pub fn run(args: &[String]) -> Output {
    let p = match parse(args, SPECS, true) {
        Ok(p) => p,
        Err(e) => return refused(Layer::CommandLine, e.into()),
    };
    if p.has("-help") {
        return Output::ok(usage());
    }
    let (cwd, home, mut spec) = submitted_from();
    let initial = spec.clone();
    let mut flags = Flags::new();
    if let Err(out) = apply_defaults(&p, &mut spec, &initial, &cwd, &home, &mut flags) {
        return out;
    }
    // -b from the command line matters before the script is read.
    if let Some(b) = p.arg("-b") {
        match optvalues::yes_no("-b", b) {
            Ok(b) => flags.binary = b,
            Err(e) => return refused(Layer::CommandLine, e),
        }
    }
    let default_name;
    match p.operands.split_first() {
        // SGE's qsub: a binary job needs its command on the command line.
        None if flags.binary => {
            return Output::fail(
                "qsub: command required for a binary job".to_string(),
                exit::ESEMANTIC,
            );
        }
        None => {
            let mut contents = Vec::new();
            if let Err(e) = std::io::stdin().read_to_end(&mut contents) {
                return Output::fail(
                    format!("Unable to read script file because of error: {e}"),
                    exit::NO_SCRIPT,
                );
            }
            default_name = "STDIN".to_string();
            spec.script = JobScript::Script {
                path: "STDIN".into(),
                contents,
            };
        }
        Some((first, rest)) => {
            spec.args = rest.to_vec();
            default_name = std::path::Path::new(first)
                .file_name()
                .map_or_else(|| first.clone(), |n| n.to_string_lossy().into_owned());
            if flags.binary {
                spec.script = JobScript::Binary {
                    command: first.clone(),
                };
            } else {
                match std::fs::read(first) {
                    Ok(contents) => {
                        spec.script = JobScript::Script {
                            path: first.clone(),
                            contents,
                        }
                    }
                    Err(e) => {
                        return Output::fail(
                            format!(
                                "Unable to read script file because of error: error opening {first}: {}",
                                gantry_common::os_error::strerror(&e)
                            ),
                            exit::NO_SCRIPT,
                        );
                    }
                }
            }
        }
    }
    // A script that cannot travel in one request is refused here, with its size, rather
    // than by a connection the master closes (the master has its own, configurable,
    // MAX_SCRIPT_SIZE below this).
    if let JobScript::Script { contents, .. } = &spec.script {
        let room = gantry_proto::frame::MAX_FRAME - SPEC_HEADROOM;
        if contents.len() > room {
            return unable(&format!(
                "the job script has {} bytes, more than the {room} bytes a request can carry",
                contents.len()
            ));
        }
    }
    if let Err(out) = script_then_command_line(&p, &mut spec, &initial, &cwd, &mut flags) {
        return out;
    }
    if spec.name.is_empty() {
        spec.name = default_name;
    }
    if flags.just_verify {
        return Output::ok(crate::qstat::render_unsubmitted_job(&spec));
    }
    // Client JSVs, in SGE's order; each sees the job as the one before left it.
    let mut jsv_log = String::new();
    flags.jsv.sort_by_key(|(rank, _)| *rank);
    if !flags.jsv.is_empty() {
        let (owner, group) = crate::account::identity();
        use gantry_common::jsv;
        let who = jsv::Submitter {
            user: owner.user,
            group,
        };
        for (_, url) in &flags.jsv {
            let url = match jsv::parse_url(url, jsv::Context::Client) {
                Ok(u) => u,
                Err(e) => return unable(&e),
            };
            // A client JSV prints its LOG lines, whatever their level.
            match jsv::verify(&url.path, None, &mut spec, &who, jsv::Context::Client) {
                jsv::Verdict::Accepted { log } => {
                    for (_, line) in log {
                        jsv_log.push_str(&line);
                        jsv_log.push('\n');
                    }
                }
                jsv::Verdict::Rejected { message, log } => {
                    let mut out = unable(&message);
                    out.stdout = jsv_log;
                    for (_, line) in log {
                        out.stdout.push_str(&line);
                        out.stdout.push('\n');
                    }
                    return out;
                }
            }
        }
    }
    let Flags {
        terse,
        sync,
        verify,
        ..
    } = flags;
    // As SGE's qsub, a job into an advance reservation is verified as `-w e` unless
    // `-w` says otherwise; the mode is kept with the job (`verify_suitable_queues`).
    let verify = verify.unwrap_or(if spec.ar.is_some() {
        Verify::Error
    } else {
        Verify::None
    });

    // SGE's qsub warns, on stdout, of a -pe given twice on its command line.
    let warned = if p.options.iter().filter(|o| o.name == "-pe").count() > 1 {
        "qsub: warning: \"-pe\" option has already been set, overriding previous setting\n"
    } else {
        ""
    };
    let immediate =
        spec.immediate && matches!(verify, Verify::None | Verify::Error | Verify::Warning);
    let (job_id, name, array, warnings) = match crate::conn::request(&ToMaster::Submit {
        spec: Box::new(spec),
        verify,
    }) {
        Ok(FromMaster::Verified { message }) => return Output::ok(format!("{message}\n")),
        Ok(FromMaster::Submitted {
            job_id,
            name,
            array,
            warnings,
        }) => (job_id, name, array, warnings),
        Ok(FromMaster::Refused(r)) => return unable(&r.message),
        Ok(other) => {
            return Output::fail(format!("error: unexpected answer {other:?}"), exit::FAILURE)
        }
        Err(e) => return Output::fail(e.to_string(), exit::FAILURE),
    };
    let mut out = Output::ok(
        format!("{warned}{jsv_log}")
            + &match (terse, array) {
                (true, None) => format!("{job_id}\n"),
                (true, Some(r)) => format!("{job_id}.{}-{}:{}\n", r.first, r.last, r.step),
                (false, None) => format!("Your job {job_id} (\"{name}\") has been submitted\n"),
                (false, Some(r)) => format!(
                    "Your job-array {job_id}.{}-{}:{} (\"{name}\") has been submitted\n",
                    r.first, r.last, r.step
                ),
            },
    );
    for w in warnings {
        out.stderr.push_str(&format!("{w}\n"));
    }
    if immediate {
        // As SGE's qsub: the wait and its outcome on stderr.
        out.stderr
            .push_str("Waiting for immediate job to be scheduled.\n");
        out.print_so_far();
        match crate::conn::request(&ToMaster::WaitStart { job_id }) {
            Ok(FromMaster::JobStarted { .. }) => out.stderr.push_str(&format!(
                "\nYour immediate job {job_id} has been successfully scheduled.\n"
            )),
            Ok(FromMaster::Refused(r)) => {
                out.stderr.push_str(&format!("\n{}\n", r.message));
                out.code = exit::FAILURE;
                return out;
            }
            Ok(_) | Err(_) => {
                out.stderr
                    .push_str("error: lost the connection while waiting for the job to start\n");
                out.code = exit::FAILURE;
                return out;
            }
        }
    }
    if sync {
        out.print_so_far();
        match wait_for_job(job_id) {
            Ok(FromMaster::JobEnded {
                exit_status,
                signal,
                failed,
                ..
            }) => {
                if let Some(sig) = signal {
                    let name = gantry_common::signal::name(sig)
                        .map_or_else(|| sig.to_string(), str::to_string);
                    out.stderr
                        .push_str(&format!("Job {job_id} exited because of signal {name}\n"));
                    out.code = exit::FAILURE;
                } else if failed != 0 {
                    out.stderr.push_str(&format!("Job {job_id} failed.\n"));
                    out.code = exit::FAILURE;
                } else if terse {
                    out.code = exit_status.clamp(0, 255) as u8;
                } else if exit_status == 0 {
                    out.stdout
                        .push_str(&format!("Job {job_id} exited with exit code 0.\n"));
                } else {
                    out.stderr.push_str(&format!(
                        "Job {job_id} exited with exit code {exit_status}.\n"
                    ));
                    out.code = exit_status.clamp(0, 255) as u8;
                }
            }
            Ok(FromMaster::Refused(r)) => {
                return Output {
                    code: exit::FAILURE,
                    stderr: format!("{}\n", r.message),
                    ..out
                }
            }
            Ok(_) | Err(_) => {
                out.stderr
                    .push_str("error: lost the connection while waiting for the job\n");
                out.code = exit::FAILURE;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_directives() {
        let script = b"#!/bin/sh\n#$ -N hello\n#$ -j y -l h_rt=0:1:0\necho hi\n#$ -cwd\n";
        assert_eq!(
            directives(script, "#$").unwrap(),
            vec!["-N", "hello", "-j", "y", "-l", "h_rt=0:1:0", "-cwd"]
        );
        // -C: another prefix; an empty one reads no directives.
        let script = b"#$ -N dollar
#% -N percent -j y# merged
";
        assert_eq!(
            directives(script, "#%").unwrap(),
            vec!["-N", "percent", "-j", "y"]
        );
        assert!(directives(script, "").unwrap().is_empty());
    }
}
