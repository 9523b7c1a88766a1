//! `qrsub`: ask for an advance reservation. The master grants it at once or refuses it;
//! like SGE's qrsub, its answer goes to standard output either way.

use gantry_proto::{ArSpec, ToMaster};

use crate::opts::{opt, Arity, OptSpec};
use crate::optvalues::{self, OptionError};
use crate::{exit, Output};

const SPECS: &[OptSpec] = &[
    opt("-help", Arity::None),
    opt("-a", Arity::One),
    opt("-e", Arity::One),
    opt("-d", Arity::One),
    opt("-A", Arity::One),
    opt("-N", Arity::One),
    opt("-l", Arity::One),
    opt("-q", Arity::One),
    opt("-masterq", Arity::One),
    opt("-pe", Arity::Two),
    opt("-ckpt", Arity::One),
    opt("-u", Arity::One),
    opt("-w", Arity::One),
    opt("-now", Arity::One),
    opt("-m", Arity::One),
    opt("-M", Arity::One),
    opt("-he", Arity::One),
];

/// qrsub(1)'s options in SGE's layout and words, but for those SGE 8.1.9's own usage
/// has wrong: it lists qconf's `-astnode` and `-dul` and qrstat's `-explain`, leaves out
/// `-ckpt`, `-he` and `-w`, and says `-N` names a job and `-q` prints queues.
pub fn usage() -> String {
    let lines: &[(&str, &str)] = &[
        ("[-a date_time]", "request a start time"),
        ("[-A account_string]", "account string in accounting record"),
        (
            "[-ckpt ckpt-name]",
            "reserve in queues with this checkpointing environment",
        ),
        ("[-d time]", "duration of time window"),
        ("[-e date_time]", "request an end time"),
        ("[-he y[es]|n[o]]", "hard error handling"),
        ("[-help]", "print this help"),
        ("[-l resource_list]", "request the given resources"),
        ("[-M mail_list]", "notify these e-mail addresses"),
        ("[-m mail_options]", "define mail notification events"),
        ("[-masterq wc_queue_list]", "bind master task to queue(s)"),
        ("[-N name]", "specify advance reservation name"),
        ("[-now y[es]|n[o]]", "consider only interactive queues"),
        (
            "[-pe wc_pe_name slot_range]",
            "request slot range for parallel jobs",
        ),
        ("[-q wc_queue_list]", "reserve in queue(s)"),
        ("[-u user_list]", "specify a list of users"),
        ("[-w e|v]", "error or just verify the reservation"),
    ];
    let mut out = format!(
        "Gantry {}\nusage: qrsub [options]\n",
        env!("CARGO_PKG_VERSION")
    );
    for (option, what) in lines {
        out.push_str(&format!("   {option:<40} {what}\n"));
    }
    out.push_str(concat!(
        "\naccount_string          account_name\n",
        "date_time               [[CC]YY]MMDDhhmm[.SS]\n",
        "mail_address            username[@host]\n",
        "mail_list               mail_address[,mail_address,...]\n",
        "mail_options            `e' `b' `a' `n' (end, begin, error, no)\n",
        "resource_list           resource[=value][,resource[=value],...]\n",
        "slot_range              [n[-m]|[-]m] - n,m > 0\n",
        "user_list               user[,user,...]\n",
        "wc_cqueue               wildcard expression matching a cluster queue\n",
        "wc_host                 wildcard expression matching a host\n",
        "wc_hostgroup            wildcard expression matching a hostgroup\n",
        "wc_qinstance            wc_cqueue@wc_host\n",
        "wc_qdomain              wc_cqueue@wc_hostgroup\n",
        "wc_queue                wc_cqueue|wc_qdomain|wc_qinstance\n",
        "wc_queue_list           wc_queue[,wc_queue,...]\n",
        "time                    hours:minutes:seconds | seconds\n",
    ));
    out
}

/// A usage error as SGE's qrsub prints it: the usage, then the error.
fn usage_then(message: &str, code: u8) -> Output {
    Output {
        stdout: String::new(),
        stderr: format!("{}{message}\n", usage()),
        code,
    }
}

/// `-d`: `hours:minutes:seconds` or seconds.
fn duration(arg: &str) -> Result<i64, OptionError> {
    gantry_common::value::parse_time(arg)
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| s as i64)
        .ok_or_else(|| {
            OptionError::syntax(format!(
                "qrsub: Wrong time format \"{arg}\" specified to -d option"
            ))
        })
}

/// Read the options into a request.
fn request(p: &crate::opts::Parsed) -> Result<ArSpec, OptionError> {
    let mut spec = ArSpec {
        account: "sge".to_string(),
        submit_host: gantry_common::cell::local_hostname(),
        ..ArSpec::default()
    };
    for given in &p.options {
        let arg = given.arg.clone().unwrap_or_default();
        match given.name {
            "-a" => spec.start = Some(crate::qsub::date_time(&arg, "-a")?),
            "-e" => spec.end = Some(crate::qsub::date_time(&arg, "-e")?),
            "-d" => spec.duration = Some(duration(&arg)?),
            "-A" => spec.account = arg,
            "-N" => spec.name = Some(arg),
            "-l" => spec.resources.extend(optvalues::resource_list(&arg)?),
            "-q" => spec.queues.extend(optvalues::queue_list("-q", &arg)?),
            "-masterq" => spec
                .masterq
                .extend(optvalues::queue_list("-masterq", &arg)?),
            "-pe" => {
                let (name, range) = arg.split_once(' ').unwrap_or((arg.as_str(), "1"));
                spec.pe = Some((name.to_string(), range.to_string()));
            }
            "-ckpt" => spec.ckpt = Some(arg),
            "-u" => spec
                .users
                .extend(arg.split(',').filter(|u| !u.is_empty()).map(str::to_string)),
            "-w" => {
                spec.verify = match arg.as_str() {
                    "e" => false,
                    "v" => true,
                    _ => {
                        return Err(OptionError::syntax(format!(
                            "invalid option argument \"-w {arg}\""
                        )))
                    }
                }
            }
            "-now" => spec.interactive = optvalues::yes_no("-now", &arg)?,
            "-he" => spec.hard_error = optvalues::yes_no("-he", &arg)?,
            "-m" => spec.mail_options = optvalues::mail_options(&arg)?,
            "-M" => spec.mail_list = optvalues::mail_list(&arg)?,
            _ => {}
        }
    }
    Ok(spec)
}

/// An advance reservation asked for through the HTTP API: qrsub's options, read and
/// checked as qrsub reads them; the same messages when they are wrong.
pub fn remote_spec(args: &[String]) -> Result<ArSpec, OptionError> {
    if args.is_empty() {
        return Err(OptionError::semantic("ERROR! no option argument"));
    }
    let p = crate::opts::parse(args, SPECS, false).map_err(|e| match e {
        crate::opts::OptError::Unknown(word) => {
            OptionError::semantic(format!("qrsub: invalid option argument \"{word}\""))
        }
        e => OptionError::from(e),
    })?;
    if p.has("-help") {
        return Err(OptionError::semantic(
            "qrsub: option \"-help\" is not available through the HTTP API",
        ));
    }
    request(&p)
}

pub fn qrsub(args: &[String]) -> Output {
    if args.is_empty() {
        return usage_then("ERROR! no option argument", exit::FAILURE);
    }
    let p = match crate::opts::parse(args, SPECS, false) {
        Ok(p) => p,
        // SGE's qrsub says an unknown option in one line.
        Err(crate::opts::OptError::Unknown(word)) => {
            return Output::fail(
                format!("qrsub: invalid option argument \"{word}\""),
                exit::FAILURE,
            )
        }
        Err(e) => {
            let e = OptionError::from(e);
            return usage_then(&e.text, exit::FAILURE);
        }
    };
    if p.has("-help") {
        return Output::ok(usage());
    }
    let spec = match request(&p) {
        Ok(s) => s,
        Err(e) => return Output::fail(e.text, exit::FAILURE),
    };
    let req = ToMaster::SubmitAr {
        spec: Box::new(spec),
    };
    // SGE's qrsub prints the master's answer on standard output, refusals included.
    crate::answer_on_stdout(&req)
}
