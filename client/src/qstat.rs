//! `qstat`: the jobs and the queue instances, as SGE prints them.

use std::collections::HashMap;

use gantry_proto::{FromMaster, JobState, JobViewRef, ToMaster};

use crate::dates::local_time;
use crate::opts::{opt, Arity, OptSpec};
use crate::Output;

mod detail;
mod forms;
mod lines;
mod priority;
mod select;
mod summary;

pub(crate) use forms::QSTAT_XMLNS;
pub use forms::{render_qstat_json, render_qstat_xml};
use lines::*;
pub(crate) use lines::{host_job_lines, host_jobs};

/// `qstat`'s default user list: the caller's own jobs. `$user` stands for the current
/// user, as in SGE's `qstat -u`; the daemon substitutes the name the kernel gives it.
fn caller_name() -> String {
    "$user".to_string()
}

const QSTAT_SPECS: &[OptSpec] = &[
    opt("-help", Arity::None),
    opt("-u", Arity::One),
    opt("-s", Arity::One),
    opt("-json", Arity::None),
    opt("-xml", Arity::None),
    opt("-f", Arity::None),
    opt("-r", Arity::None),
    opt("-j", Arity::Optional),
    opt("-F", Arity::Optional),
    opt("-pri", Arity::None),
    opt("-urg", Arity::None),
    opt("-ext", Arity::None),
    opt("-g", Arity::One),
    opt("-q", Arity::One),
    opt("-qs", Arity::One),
    opt("-U", Arity::One),
    opt("-pe", Arity::One),
    opt("-l", Arity::One),
    opt("-ne", Arity::None),
    opt("-ncb", Arity::None),
    opt("-explain", Arity::One),
    opt("-t", Arity::None),
];

/// SGE 8.1.9's text, with Gantry's `-json`.
pub fn qstat_usage() -> String {
    format!(
        "Gantry {}\nusage: qstat [options]\n        [-ext]                            view additional attributes\n        [-explain a|c|A|E]                show reason for queue c(onfiguration ambiguous), a(larm), suspend A(larm), E(rror) state\n        [-f]                              full output\n        [-F [resource_attributes]]        full output and show (selected) resources of queue(s)\n        [-g c]                            display cluster queue summary\n        [-g d]                            display all job-array tasks (do not group)\n        [-g t]                            display all parallel job tasks (do not group)\n        [-help]                           print this help\n        [-j [job_identifier_list]]        show scheduler job information\n        [-json]                           display the information in JSON format\n        [-l resource_list]                request the given resources\n        [-ne]                             hide empty queues\n        [-ncb]                            suppress additional binding specific parameters\n        [-pe pe_list]                     select only queues with one of these parallel environments\n        [-q wc_queue_list]                print information on given queue\n        [-qs {{a|c|d|o|s|u|A|C|D|E|S}}]     selects queues which are in the given state(s)\n        [-r]                              show requested resources of job(s)\n        [-s {{p|r|s|z|hu|ho|hs|hd|hj|ha|h|a}}] show pending, running, suspended, zombie jobs,\n                                          jobs with a user/operator/system/array-dependency hold, \n                                          jobs with a start time in future or any combination only.\n                                          h is an abbreviation for huhohshdhjha\n                                          a is an abbreviation for prsh\n        [-t]                              show task information (implicitly -g t)\n        [-u user_list]                    view jobs of this user list\n        [-U user_list]                    select only queues where these users have access\n        [-urg]                            display job urgency information\n        [-pri]                            display job priority information\n        [-xml]                            display the information in XML format\n\npe_list                  pe[,pe,...]\njob_identifier_list      [job_id|job_name|pattern]{{, [job_id|job_name|pattern]}}\nresource_list            resource[=value][,resource[=value],...]\nuser_list                user|*|@group[,user|*|@group],...]\nresource_attributes      resource,resource,...\nwc_cqueue                wildcard expression matching a cluster queue\nwc_host                  wildcard expression matching a host\nwc_hostgroup             wildcard expression matching a hostgroup\nwc_qinstance             wc_cqueue@wc_host\nwc_qdomain               wc_cqueue@wc_hostgroup\nwc_queue_list            wc_cqueue|wc_qdomain|wc_qinstance\nwc_queue_list            wc_queue[,wc_queue,...]\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// The `-r` lines under a job.
fn resource_lines(j: &JobViewRef) -> String {
    let mut s = format!("       Full jobname:     {}\n", j.name);
    if let Some(q) = &j.queue {
        s.push_str(&format!("       Master Queue:     {q}\n"));
    }
    s.push_str("       Hard Resources:   ");
    for (i, (k, v)) in j.hard_resources.iter().enumerate() {
        if i > 0 {
            s.push_str("                         ");
        }
        s.push_str(&format!("{k}={v} (0.000000)\n"));
    }
    if j.hard_resources.is_empty() {
        s.push('\n');
    }
    s.push_str("       Soft Resources:   \n");
    if !j.hold_jids.is_empty() {
        s.push_str(&format!(
            "       Predecessor Jobs (request): {}\n",
            j.hold_jids.join(", ")
        ));
    }
    s.push_str("       Binding:          NONE\n");
    s
}

pub fn render_qstat(jobs: &[JobViewRef]) -> String {
    let mut out = Vec::new();
    let rows = jobs.iter().map(|j| Ok(j.clone()));
    if write_qstat(rows, |_| true, &mut out).is_err() {
        return String::new();
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Default output with `-r`.
pub fn render_qstat_r(jobs: &[JobViewRef]) -> String {
    if jobs.is_empty() {
        return String::new();
    }
    let mut out = header();
    let mut rows = Rows::default();
    for j in jobs {
        rows.push(&mut out, j, true);
        out.push_str(&resource_lines(j));
    }
    out
}

const PENDING_BANNER: &str = "\n############################################################################\n - PENDING JOBS - PENDING JOBS - PENDING JOBS - PENDING JOBS - PENDING JOBS\n############################################################################\n";

/// The banner before `qstat -f`'s pending jobs: 110 hashes longer with `-ext`.
fn pending_banner(extended: bool) -> String {
    if !extended {
        return PENDING_BANNER.to_string();
    }
    PENDING_BANNER.replace(&"#".repeat(76), &"#".repeat(76 + 110))
}

/// `qstat -f`: every queue instance with its running jobs, then the pending jobs.
/// `offered`: `qstat -F`'s selection of what queue instances offer (all when the list
/// is empty), or `None` without `-F`. `priorities`: the job lines of `-pri`, `-urg`
/// or `-ext` (`-ext` widens the separators as SGE's does), or `None` for the plain ones.
pub fn render_qstat_f(
    hosts: &gantry_proto::HostReport,
    jobs: &[JobViewRef],
    resources: bool,
    offered: Option<&[String]>,
    priorities: Option<&priority::Lines<'_>>,
) -> String {
    let extended = priorities.is_some_and(|p| p.extended());
    let zone = crate::dates::local_zone();
    let mut out = String::new();
    let mut instances: Vec<(
        String,
        &gantry_proto::QueueInstanceView,
        &gantry_proto::HostView,
    )> = hosts
        .hosts
        .iter()
        .flat_map(|h| {
            h.queues
                .iter()
                .map(move |q| (format!("{}@{}", q.queue, h.name), q, h))
        })
        .collect();
    instances.sort_by(|a, b| a.0.cmp(&b.0));
    // No header over no instance (a queue selection that left none), as SGE's.
    if !instances.is_empty() {
        out.push_str(
            "queuename                      qtype resv/used/tot. load_avg arch          states\n",
        );
    }
    // The running jobs by queue instance, in their order: looked up per instance, not
    // searched for among every job.
    let mut running: HashMap<&str, Vec<&JobViewRef>> = HashMap::new();
    for j in jobs {
        if let Some(q) = j.queue {
            running.entry(q).or_default().push(j);
        }
    }
    let mut rows = Rows::default();
    let mut push_row = |out: &mut String, j: &JobViewRef| match priorities {
        Some(lines) => lines.push(out, &zone, j, false),
        None => rows.push(out, j, false),
    };
    for (name, q, h) in instances {
        out.push_str(&"-".repeat(if extended { 81 + 108 } else { 81 }));
        out.push('\n');
        let load = gantry_common::load::get(&h.load_values, "load_avg")
            .and_then(|v| v.parse::<f64>().ok())
            .map_or_else(|| "-NA-".to_string(), |l| format!("{l:.2}"));
        let arch = gantry_common::load::get(&h.load_values, "arch").unwrap_or("-NA-");
        out.push_str(&format!(
            "{:<30} {:<5} {:<14} {:<8} {:<13} {}\n",
            name,
            q.qtype,
            format!("{}/{}/{}", q.reserved, q.used, q.total),
            load,
            arch,
            q.states
        ));
        // `-explain`: why the instance is in the states asked about.
        for (_, reason) in &q.reasons {
            out.push_str(&format!("\t{reason}\n"));
        }
        if let Some(selection) = offered {
            for (key, value) in &q.resources {
                let name = key.split_once(':').map_or(key.as_str(), |(_, n)| n);
                let wanted = selection.is_empty()
                    || selection.iter().any(|s| {
                        s == name
                            || gantry_common::complex::find(&hosts.complexes, s)
                                .is_some_and(|c| c.name == name)
                    });
                if wanted {
                    out.push_str(&format!("\t{key}={value}\n"));
                }
            }
        }
        for j in running.get(name.as_str()).into_iter().flatten() {
            push_row(&mut out, j);
            if resources {
                out.push_str(&resource_lines(j));
            }
        }
    }
    let pending: Vec<&JobViewRef> = jobs.iter().filter(|j| j.queue.is_none()).collect();
    if !pending.is_empty() {
        out.push_str(&pending_banner(extended));
        for j in pending {
            push_row(&mut out, j);
            if resources {
                out.push_str(&resource_lines(j));
            }
        }
    }
    out
}

/// `qstat -j`: the details of one job.
pub fn render_job_details(details: &[gantry_proto::JobDetail]) -> String {
    render_job_details_as(details, true)
}

/// [`render_job_details`], with the binding lines or without (`-ncb`).
fn render_job_details_as(details: &[gantry_proto::JobDetail], binding: bool) -> String {
    let mut out = String::new();
    for d in details {
        render_job(&mut out, d, false, binding);
    }
    out
}

/// `qsub -verify`: the job as parsed, as SGE's qsub prints it (no number yet, no
/// submission time, `verify: -verify`).
pub fn render_unsubmitted_job(spec: &gantry_proto::JobSpec) -> String {
    let (owner, group) = crate::account::identity();
    let detail = gantry_proto::JobDetail {
        job_id: gantry_proto::JobId(0),
        spec: spec.clone(),
        owner,
        group,
        submit_time: 0,
        reasons: Vec::new(),
        errors: Vec::new(),
        running: Vec::new(),
        checkpoint_attr: None,
        override_tickets: 0,
        version: 0,
        predecessors: Vec::new(),
        successors: Vec::new(),
        nurg: 0.0,
    };
    let mut out = String::new();
    render_job(&mut out, &detail, true, true);
    out
}

/// A value as one line of `qstat -j`: a newline or another control character a user
/// put in a `-v` value, a job argument or a context variable is shown escaped (`\n`,
/// `\x1b`), so that no value can print a line of its own (`owner: root`). SGE 8.1.9
/// prints them raw.
fn one_line(value: &str) -> std::borrow::Cow<'_, str> {
    let breaks = |c: char| c.is_control() && c != '\t';
    if !value.chars().any(breaks) {
        return std::borrow::Cow::Borrowed(value);
    }
    let mut out = String::with_capacity(value.len() + 8);
    for c in value.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if breaks(c) => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

fn render_job(out: &mut String, d: &gantry_proto::JobDetail, unsubmitted: bool, binding: bool) {
    {
        let spec = &d.spec;
        let env = |k: &str| {
            spec.env
                .iter()
                .find(|(ek, _)| ek == k)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let login_session = matches!(
            spec.script,
            gantry_proto::JobScript::Interactive { command: None, .. }
        );
        let mut rows: Vec<(String, String)> = Vec::new();
        let mut row = |k: &str, v: String| rows.push((k.to_string(), v));
        if unsubmitted {
            row("job_number", "unassigned".to_string());
        } else {
            row("job_number", d.job_id.to_string());
            // A login session (qlogin, qrsh without a command) has nothing to execute.
            if !login_session {
                row("exec_file", format!("job_scripts/{}", d.job_id));
            }
            row(
                "submission_time",
                local_time(d.submit_time, "%a %b %e %H:%M:%S %Y"),
            );
        }
        if let Some(deadline) = spec.deadline {
            row("deadline", local_time(deadline, "%a %b %e %H:%M:%S %Y"));
        }
        row("owner", d.owner.user.clone());
        row("uid", d.owner.uid.to_string());
        row("group", d.group.clone());
        row("gid", d.owner.gid.to_string());
        row("sge_o_home", env("SGE_O_HOME"));
        row("sge_o_log_name", env("SGE_O_LOGNAME"));
        row("sge_o_path", env("SGE_O_PATH"));
        row("sge_o_shell", env("SGE_O_SHELL"));
        row("sge_o_workdir", env("SGE_O_WORKDIR"));
        row("sge_o_host", env("SGE_O_HOST"));
        // After the submission environment, as SGE's show_job prints it.
        if let Some(t) = spec.start_after {
            row("execution_time", local_time(t, "%a %b %e %H:%M:%S %Y"));
        }
        row("account", spec.account.clone());
        if let Some(c) = &spec.ckpt {
            row("checkpoint_object", c.clone());
        }
        // The letters the master says (the environment's `when` without `-c`, as SGE
        // stores it at submission), else the job's own.
        let attr = d.checkpoint_attr.clone().or_else(|| {
            spec.ckpt_when
                .clone()
                .filter(|w| gantry_common::ckpt::valid_when(w))
        });
        if let Some(a) = attr {
            row("checkpoint_attr", gantry_common::ckpt::shown_attr(&a));
        }
        if let Some(secs) = gantry_common::ckpt::job_interval(spec.ckpt_when.as_deref()) {
            // SGE's show_job.c: the interval in seconds.
            row("checkpoint_interval", format!("{secs} seconds"));
        }
        if let Some(cwd) = &spec.cwd {
            row("cwd", cwd.clone());
        }
        if let Some(prefix) = &spec.directive_prefix {
            row("directive_prefix", prefix.clone());
        }
        let pairs = |l: &[(String, String)]| {
            l.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        // Output paths as SGE lists them: exec host, file host, path.
        let path_list = gantry_common::path_list::display;
        if let Some(e) = &spec.stderr_path {
            row("stderr_path_list", path_list(e));
        }
        if spec.reserve {
            row("reserve", "y".to_string());
        }
        if spec.merge_output {
            row("merge", "y".to_string());
        }
        if !spec.hard_resources.is_empty() {
            row("hard resource_list", pairs(&spec.hard_resources));
        }
        if !spec.soft_resources.is_empty() {
            row("soft resource_list", pairs(&spec.soft_resources));
        }
        // `-m n` is no mail option SGE lists.
        if !spec.mail_options.is_empty() && spec.mail_options != "n" {
            row("mail_options", spec.mail_options.clone());
        }
        // An address without a host is SGE's `user@NONE` there (mail still goes to it).
        row(
            "mail_list",
            gantry_common::mail::recipients(&spec.mail_list, &d.owner.user, &spec.submit_host)
                .iter()
                .map(|a| {
                    if a.contains('@') {
                        a.clone()
                    } else {
                        format!("{a}@NONE")
                    }
                })
                .collect::<Vec<_>>()
                .join(","),
        );
        row(
            "notify",
            if spec.notify { "TRUE" } else { "FALSE" }.to_string(),
        );
        row("job_name", spec.name.clone());
        if let Some(o) = &spec.stdout_path {
            row("stdout_path_list", path_list(o));
        }
        if let Some(i) = &spec.stdin_path {
            row("stdin_path_list", path_list(i));
        }
        // No `hold_list`: SGE 8.1.9 prints it from a job field that holds no longer
        // set (a hold is its tasks' state), so never for `-h` or `qhold`.
        if spec.priority != 0 {
            row("priority", spec.priority.to_string());
        }
        row("jobshare", spec.job_share.to_string());
        if !spec.queues.is_empty() {
            row("hard_queue_list", spec.queues.join(","));
        }
        if !spec.soft_queues.is_empty() {
            row("soft_queue_list", spec.soft_queues.join(","));
        }
        if let Some(r) = spec.restart {
            row("restart", if r { "y" } else { "n" }.to_string());
        }
        if let Some(shell) = &spec.shell {
            row(
                "shell_list",
                gantry_common::path_list::display_shells(shell),
            );
        }
        if unsubmitted {
            row("verify", "-verify".to_string());
        }
        let user_env: Vec<(String, String)> = spec
            .env
            .iter()
            .filter(|(k, _)| !k.starts_with("SGE_O_"))
            .cloned()
            .collect();
        if !user_env.is_empty() {
            // A variable `-v` named without a value and unset: SGE lists it as NONE.
            let shown: Vec<(String, String)> = user_env
                .into_iter()
                .map(|(k, v)| {
                    if v.is_empty() {
                        (k, "NONE".into())
                    } else {
                        (k, v)
                    }
                })
                .collect();
            row("env_list", pairs(&shown));
        }
        if !spec.args.is_empty() {
            row("job_args", spec.args.join(","));
        }
        if !spec.masterq.is_empty() {
            row("master hard queue_list", spec.masterq.join(","));
        }
        if !login_session {
            row("script_file", spec.script.script_file().to_string());
        }
        // SGE prints this one with two blanks after the colon, not aligned.
        let pe_line = spec.pe.as_ref().map(|(name, range)| {
            format!(
                "parallel environment:  {name} range: {}\n",
                gantry_common::pe::sge_slot_range(range)
            )
        });
        if !spec.hold_jids.is_empty() {
            row("jid_predecessor_list (req)", spec.hold_jids.join(","));
        }
        if !d.predecessors.is_empty() {
            let ids: Vec<String> = d.predecessors.iter().map(|j| j.to_string()).collect();
            row("jid_predecessor_list", ids.join(","));
        }
        if !d.successors.is_empty() {
            let ids: Vec<String> = d.successors.iter().map(|j| j.to_string()).collect();
            row("jid_successor_list", ids.join(","));
        }
        if !spec.hold_jids_ad.is_empty() {
            row("ja_ad_predecessor_list (req)", spec.hold_jids_ad.join(","));
        }
        if spec.verify.sge_number() > 0 {
            row(
                "verify_suitable_queues",
                spec.verify.sge_number().to_string(),
            );
        }
        if d.override_tickets > 0 {
            row("oticket", d.override_tickets.to_string());
        }
        if let Some(p) = &spec.project {
            row("project", p.clone());
        }
        if let Some(ar) = spec.ar {
            row("ar_id", ar.to_string());
        }
        if let Some(r) = spec.array {
            row(
                "job-array tasks",
                format!("{}-{}:{}", r.first, r.last, r.step),
            );
        }
        if !spec.context.is_empty() {
            row("context", pairs(&spec.context));
        }
        if d.version > 0 {
            row("version", d.version.to_string());
        }
        if binding {
            row(
                "binding",
                spec.binding.clone().unwrap_or_else(|| "NONE".to_string()),
            );
        }
        // SGE's words for the job's type bits: a qrsh command is a binary job, and
        // qrsh and qlogin start theirs now (`-now y`).
        let job_type = match (&spec.script, spec.immediate) {
            (gantry_proto::JobScript::Binary { .. }, _) => Some("binary"),
            (
                gantry_proto::JobScript::Interactive {
                    command: Some(_), ..
                },
                true,
            ) => Some("binary,immediate"),
            (
                gantry_proto::JobScript::Interactive {
                    command: Some(_), ..
                },
                false,
            ) => Some("binary"),
            (gantry_proto::JobScript::Interactive { command: None, .. }, true) => Some("immediate"),
            // A script job has no type bit: SGE prints NONE.
            _ => Some("NONE"),
        };
        if let Some(t) = job_type {
            row("job_type", t.to_string());
        }
        let pe_after = rows
            .iter()
            .position(|(k, _)| k == "script_file")
            .map_or(rows.len(), |n| n + 1);
        for (n, (k, v)) in rows.iter().enumerate() {
            if n == pe_after {
                out.push_str(pe_line.as_deref().unwrap_or(""));
            }
            // Keys too long for the column get two blanks, as SGE prints them;
            // `jid_predecessor_list (req):`, one short of it, gets one
            // (tests/sge/recorded/31_qsub_hold_dependency.txt).
            let key = format!("{k}:");
            let v = one_line(v);
            if key.len() >= 28 {
                out.push_str(&format!("{key}  {v}\n"));
            } else {
                out.push_str(&format!("{key:<28}{v}\n"));
            }
        }
        if pe_after == rows.len() {
            out.push_str(pe_line.as_deref().unwrap_or(""));
        }
        // Per running task, as SGE prints them: what it used so far, then its cores.
        let task_key = |name: &str, n: usize, task: gantry_proto::TaskId| {
            let name = if n == 0 { name } else { "" };
            format!("{name:<10}{task:>5}:")
        };
        for (n, t) in d.running.iter().enumerate() {
            out.push_str(&format!(
                "{:<28}{}\n",
                task_key("usage", n, t.task_id),
                usage_text(t.usage.as_ref())
            ));
        }
        for (n, t) in d.running.iter().enumerate().filter(|_| binding) {
            let cores = t
                .usage
                .as_ref()
                .and_then(|u| u.binding.as_ref())
                .map_or_else(|| "NONE".to_string(), |b| format!("{}={b}", t.host));
            out.push_str(&format!(
                "{:<28}{cores}\n",
                task_key("binding", n, t.task_id)
            ));
        }
        // SGE's: the task in ten columns, then the shepherd's reason as it stated it.
        for (task, reason) in &d.errors {
            out.push_str(&format!("error reason {task:>10}:      {reason}\n"));
        }
        for (i, reason) in d.reasons.iter().enumerate() {
            let key = if i == 0 { "scheduling info:" } else { "" };
            out.push_str(&format!("{key:<28}{reason}\n"));
        }
    }
}

/// SGE's usage line of a running task: `cpu=00:01:05, mem=0.12345 GB s, io=0.00012 GB,
/// vmem=19.641M, maxvmem=20.000M` (`N/A` for what was not measured).
fn usage_text(u: Option<&gantry_proto::TaskUsage>) -> String {
    let memory =
        |v: Option<f64>| v.map_or_else(|| "N/A".to_string(), gantry_common::value::format_memory_3);
    let (cpu, mem, io, vmem, maxvmem) = u.map_or((0.0, 0.0, 0.0, None, None), |u| {
        (u.cpu, u.mem, u.io, u.vmem, u.maxvmem)
    });
    format!(
        "cpu={}, mem={mem:.5} GB s, io={io:.5} GB, vmem={}, maxvmem={}",
        gantry_common::value::format_time_hms(cpu),
        memory(vmem),
        memory(maxvmem)
    )
}

/// `qstat -j` without a job: each reason, then the jobs it holds back, each after a tab,
/// separated by commas; a blank line between reasons. A reason without jobs is printed
/// alone.
pub fn render_scheduling_summary(summary: &[(String, Vec<gantry_proto::JobId>)]) -> String {
    summary
        .iter()
        .map(|(reason, jobs)| {
            let mut s = format!("{reason}\n");
            if !jobs.is_empty() {
                let ids: Vec<String> = jobs.iter().map(|j| format!("\t{j}")).collect();
                s.push_str(&ids.join(","));
                s.push('\n');
            }
            s
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn qstat(args: &[String]) -> Output {
    let p = match crate::parse_args_as(
        args,
        QSTAT_SPECS,
        false,
        qstat_usage,
        crate::UnknownOption::UsageThen(""),
    ) {
        Ok(p) => p,
        Err(out) => return out,
    };
    let users: Vec<String> = match p.arg("-u") {
        Some(u) => u.split(',').map(str::to_string).collect(),
        None => vec![caller_name()],
    };
    if p.has("-j") && p.arg("-j").is_none() {
        return match crate::ask(&ToMaster::SchedulingSummary) {
            Ok(FromMaster::SchedulingSummary(s)) => Output::ok(render_scheduling_summary(&s)),
            Ok(other) => crate::unexpected(&other),
            Err(out) => out,
        };
    }
    if let Some(ids) = p.arg("-j") {
        let ids: Vec<String> = ids
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        return match crate::ask(&ToMaster::JobDetails { ids }) {
            Ok(FromMaster::JobDetails(d)) if p.has("-xml") => Output::ok(detail::render_xml(&d)),
            Ok(FromMaster::JobDetails(d)) if p.has("-json") => {
                match crate::ask(&ToMaster::ShowPriorities {
                    users: vec!["*".into()],
                }) {
                    Ok(FromMaster::Priorities(prios)) => {
                        Output::ok(detail::render_json(&d, &prios))
                    }
                    Ok(other) => crate::unexpected(&other),
                    Err(out) => out,
                }
            }
            Ok(FromMaster::JobDetails(d)) => {
                let mut out = String::new();
                for one in &d {
                    out.push_str(
                        "==============================================================\n",
                    );
                    out.push_str(&render_job_details_as(
                        std::slice::from_ref(one),
                        !p.has("-ncb"),
                    ));
                }
                Output::ok(out)
            }
            Ok(other) => crate::unexpected(&other),
            Err(out) => out,
        };
    }
    if let Some(letters) = p.arg("-explain") {
        if let Some(bad) = letters.chars().find(|c| !"aAcE".contains(*c)) {
            let text = format!("unknown queue state: {bad} found in string: {letters}");
            return Output::fail(format!("error: {text}\n{text}"), 1);
        }
    }
    let states = match p.arg("-s").map(select::StateFilter::parse) {
        None => select::StateFilter::default(),
        Some(Some(f)) => f,
        Some(None) => {
            return Output::fail(
                format!("{}ERROR! wrong argument to -s option", qstat_usage()),
                crate::exit::FAILURE,
            )
        }
    };
    let shown = |state: JobState| states.shows(state);
    // `-q`, `-qs`, `-U`, `-pe`, `-l`: the master selects the queue instances (and,
    // but for `-qs`, the pending jobs that could run in them), as SGE's qstat does.
    let selecting = ["-q", "-qs", "-U", "-pe", "-l"].iter().any(|o| p.has(o));
    let pending_filtered = ["-q", "-U", "-pe", "-l"].iter().any(|o| p.has(o));
    let selection = match selecting {
        false => None,
        true => match crate::qselect::ask_selection(&p, pending_filtered) {
            Ok(s) if s.emptied_by.as_deref() == Some("-q") => {
                return Output::fail(
                    "error: no queues remaining after -q queue selection".to_string(),
                    crate::exit::FAILURE,
                )
            }
            Ok(s) => Some(select::Selection::new(s, pending_filtered)),
            Err(out) => return out,
        },
    };
    let columns = priority::Columns {
        pri: p.has("-pri"),
        urg: p.has("-urg"),
        ext: p.has("-ext"),
    };
    let plain_form = [
        "-f", "-F", "-xml", "-json", "-r", "-pri", "-urg", "-ext", "-explain",
    ]
    .iter()
    .all(|o| !p.has(o));
    let (grouped, each_task) = match p.arg("-g") {
        None => (false, false),
        Some("t") if plain_form => (true, false),
        Some("d") if plain_form => (false, true),
        // The document has a row per running task and per pending range already.
        Some("t" | "d") if p.has("-json") => (false, false),
        Some("c") if ["-f", "-F", "-r", "-pri", "-urg", "-ext"]
            .iter()
            .all(|o| !p.has(o)) =>
        {
            let form = match (p.has("-xml"), p.has("-json")) {
                (true, _) => summary::Form::Xml,
                (false, true) => summary::Form::Json,
                (false, false) => summary::Form::Text,
            };
            return cluster_queue_summary(selection.as_ref(), form);
        }
        Some(other) => {
            return Output::fail(
                format!("Unsupported: \"qstat -g {other}\" with these options is not supported by Gantry yet (qstat -g c, -g d and -g t are)"),
                crate::exit::ENOIMP,
            )
        }
    };
    let listing_only = [
        "-json", "-xml", "-f", "-F", "-r", "-pri", "-urg", "-ext", "-g", "-explain", "-t",
    ]
    .iter()
    .all(|o| !p.has(o));
    let zombies = states.zombies();
    if listing_only && !zombies && selection.is_none() {
        // The default listing's lines as the master writes them (only the time
        // column is written here), written out as they come.
        let (len, answer) = match crate::ask_reader(&ToMaster::ShowJobLines { users }) {
            Ok(answer) => answer,
            Err(out) => return out,
        };
        let mut stdout = std::io::stdout().lock();
        let mut writer = LineWriter::new(&mut stdout);
        let read = read_job_lines(answer, len, |line| {
            if shown(line.state) {
                writer.line(line);
            }
        });
        writer.finish();
        return read.map_or_else(|out| out, |()| Output::ok(String::new()));
    }
    // The rows are decoded in place, borrowed from the answers' bytes.
    let listed = match crate::ask_jobs(&ToMaster::ShowJobs {
        users: users.clone(),
    }) {
        Ok(bytes) => bytes,
        Err(out) => return out,
    };
    let rows = match crate::jobs_in(&listed) {
        Ok(rows) => rows,
        Err(out) => return out,
    };
    let finished = match zombies {
        true => match crate::ask_jobs(&ToMaster::ShowFinishedJobs {
            users: users.clone(),
        }) {
            Ok(bytes) => bytes,
            Err(out) => return out,
        },
        false => Vec::new(),
    };
    let finished = match finished.is_empty() {
        true => None,
        false => match crate::jobs_in(&finished) {
            Ok(z) => Some(z),
            Err(out) => return out,
        },
    };
    let rows = rows.chain(finished.into_iter().flatten());
    let shown = |j: &JobViewRef| shown(j.state) && selection.as_ref().is_none_or(|s| s.shows(j));
    // SGE's qstat says this (on stderr, after the listing, exit 0) when -U or -pe left
    // no queue instance.
    let closing = selection
        .as_ref()
        .and_then(|s| s.closing.clone())
        .unwrap_or_default();
    let listing = |stdout: String| Output {
        stdout,
        stderr: closing.clone(),
        code: 0,
    };
    if listing_only {
        // Written as the rows are decoded: no list of tens of thousands of rows, nor
        // their lines all at once, in between.
        let mut stdout = std::io::stdout().lock();
        return match write_qstat(rows, shown, &mut stdout) {
            Ok(()) => listing(String::new()),
            Err(e) => crate::undecodable(e),
        };
    }
    let mut jobs = Vec::new();
    for row in rows {
        match row {
            Ok(j) if shown(&j) => jobs.push(j),
            Ok(_) => {}
            Err(e) => return crate::undecodable(e),
        }
    }
    // With -json, -t lists the rows as the document has them: a row per running task.
    if (grouped || p.has("-t")) && !p.has("-json") {
        return match crate::ask(&ToMaster::ShowTaskLines { users }) {
            Ok(FromMaster::TaskLines(t)) if p.has("-t") => {
                Output::ok(lines::render_qstat_t(&jobs, &t))
            }
            Ok(FromMaster::TaskLines(t)) => Output::ok(lines::render_qstat_gt(&jobs, &t)),
            Ok(other) => crate::unexpected(&other),
            Err(out) => out,
        };
    }
    if each_task {
        // `-g d`: a pending array job's tasks one per line.
        let ids: Vec<Vec<String>> = jobs
            .iter()
            .map(|j| match j.is_array && j.state.is_pending() {
                true => each_task_id(j.tasks),
                false => Vec::new(),
            })
            .collect();
        let mut rows = Vec::with_capacity(jobs.len());
        for (j, ids) in jobs.iter().zip(&ids) {
            if ids.is_empty() {
                rows.push(j.clone());
            }
            for t in ids {
                let mut row = j.clone();
                row.tasks = t;
                rows.push(row);
            }
        }
        return Output::ok(render_qstat(&rows));
    }
    let prios = match columns.any() && !p.has("-xml") {
        true => match crate::ask(&ToMaster::ShowPriorities {
            users: users.clone(),
        }) {
            Ok(FromMaster::Priorities(rows)) => rows,
            Ok(other) => return crate::unexpected(&other),
            Err(out) => return out,
        },
        false => Vec::new(),
    };
    if columns.any() && !p.has("-json") && !p.has("-xml") && !p.has("-f") && !p.has("-F") {
        return Output::ok(priority::render(columns, &jobs, &prios));
    }

    let offered: Option<Vec<String>> = p.options.iter().find(|o| o.name == "-F").map(|o| {
        o.arg
            .as_deref()
            .map(|a| {
                a.split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    });
    // `-explain a|A|c|E` lists the queue instances (as -f does) with why each is in
    // the states asked about.
    let explain = p.arg("-explain").unwrap_or("");
    let hosts = if p.has("-f") || offered.is_some() || p.has("-explain") {
        match crate::ask(&ToMaster::HostInfo) {
            Ok(FromMaster::Hosts(mut h)) => {
                for q in h.hosts.iter_mut().flat_map(|h| h.queues.iter_mut()) {
                    q.reasons.retain(|(letter, _)| explain.contains(*letter));
                }
                // Only the instances selected; with `-ne`, only those with a slot in use
                // (SGE's test, whoever's jobs they are).
                let hide_empty = p.has("-ne");
                for host in &mut h.hosts {
                    let name = host.name.clone();
                    host.queues.retain(|q| {
                        let instance = format!("{}@{name}", q.queue);
                        selection.as_ref().is_none_or(|s| s.has_instance(&instance))
                            && (!hide_empty || q.used > 0)
                    });
                }
                Some(h)
            }
            Ok(other) => return crate::unexpected(&other),
            Err(out) => return out,
        }
    } else {
        None
    };
    if p.has("-json") {
        let prios = columns.any().then_some(prios.as_slice());
        return Output::ok(render_qstat_json(
            hosts.as_ref(),
            &jobs,
            offered.as_deref(),
            prios,
        ));
    }
    if p.has("-xml") {
        return Output::ok(render_qstat_xml(hosts.as_ref(), &jobs));
    }
    let listed = match (&hosts, p.has("-r")) {
        (Some(h), r) => {
            let lines = columns.any().then(|| priority::Lines::new(columns, &prios));
            render_qstat_f(h, &jobs, r, offered.as_deref(), lines.as_ref())
        }
        (None, true) => render_qstat_r(&jobs),
        (None, false) => render_qstat(&jobs),
    };
    listing(listed)
}

/// The task ids of a `qstat` row's task list (`1-5:2,8`).
fn each_task_id(tasks: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for part in tasks.split(',').filter(|p| !p.is_empty()) {
        let (range, step) = part.split_once(':').unwrap_or((part, "1"));
        let (first, last) = range.split_once('-').unwrap_or((range, range));
        match (
            first.parse::<u32>(),
            last.parse::<u32>(),
            step.parse::<usize>(),
        ) {
            (Ok(a), Ok(b), Ok(s)) if s > 0 && a <= b => {
                ids.extend((a..=b).step_by(s).map(|t| t.to_string()));
            }
            _ => ids.push(part.to_string()),
        }
    }
    ids
}

/// `qstat -g c [-q queues] [-xml|-json]`.
fn cluster_queue_summary(selection: Option<&select::Selection>, form: summary::Form) -> Output {
    match crate::ask(&ToMaster::HostInfo) {
        Ok(FromMaster::Hosts(h)) => {
            let s = summary::summarise(&h, selection.map(|s| s.instances()));
            Output::ok(match form {
                summary::Form::Xml => summary::render_xml(&s),
                summary::Form::Json => summary::render_json(&s),
                summary::Form::Text => summary::render(&s),
            })
        }
        Ok(other) => crate::unexpected(&other),
        Err(out) => out,
    }
}

#[cfg(test)]
mod tests;
