//! `qstat`: the jobs and the queue instances, as SGE prints them.

use std::collections::HashMap;

use gantry_proto::{FromMaster, JobState, JobViewRef, ToMaster};

use crate::dates::local_time;
use crate::opts::{opt, Arity, OptSpec};
use crate::Output;

mod detail;
mod lines;

use lines::*;

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
];

pub fn qstat_usage() -> String {
    format!(
        "Gantry {}\nusage: qstat [options]\n   [-f]                                     full output (every queue instance)\n   [-F [resource_attributes]]               full output and show (selected) resources of queue(s)\n   [-help]                                  print this help\n   [-j [job_identifier_list]]               show detailed information on pending/running job\n   [-json]                                  print the jobs as one JSON document\n   [-r]                                     show requested resources of job(s)\n   [-s {{p|r|h|z}}]                           show pending, running, held, finished jobs\n   [-u user_list]                           view only jobs of this user ('*' for all)\n   [-xml]                                   display the information in XML-Format\n",
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

/// `qstat -f`: every queue instance with its running jobs, then the pending jobs.
/// `offered`: `qstat -F`'s selection of what queue instances offer (all when the list
/// is empty), or `None` without `-F`.
pub fn render_qstat_f(
    hosts: &gantry_proto::HostReport,
    jobs: &[JobViewRef],
    resources: bool,
    offered: Option<&[String]>,
) -> String {
    let mut out = String::from(
        "queuename                      qtype resv/used/tot. load_avg arch          states\n",
    );
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
    // The running jobs by queue instance, in their order: looked up per instance, not
    // searched for among every job.
    let mut running: HashMap<&str, Vec<&JobViewRef>> = HashMap::new();
    for j in jobs {
        if let Some(q) = j.queue {
            running.entry(q).or_default().push(j);
        }
    }
    let mut rows = Rows::default();
    for (name, q, h) in instances {
        out.push_str(&"-".repeat(81));
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
            rows.push(&mut out, j, false);
            if resources {
                out.push_str(&resource_lines(j));
            }
        }
    }
    let pending: Vec<&JobViewRef> = jobs.iter().filter(|j| j.queue.is_none()).collect();
    if !pending.is_empty() {
        out.push_str(PENDING_BANNER);
        for j in pending {
            rows.push(&mut out, j, false);
            if resources {
                out.push_str(&resource_lines(j));
            }
        }
    }
    out
}

const QSTAT_XMLNS: &str = "xmlns:xsd=\"http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qstat/qstat.xsd\"";

fn xml_job(x: &mut crate::xml::Xml, indent: usize, j: &JobViewRef, with_queue: bool) {
    let running = j.queue.is_some();
    x.open(
        indent,
        "job_list",
        &[("state", if running { "running" } else { "pending" })],
    );
    let i = indent + 2;
    x.element(i, "JB_job_number", &[], &j.job_id.to_string());
    x.element(i, "JAT_prio", &[], &prior(j.priority));
    x.element(i, "JB_name", &[], j.name);
    x.element(i, "JB_owner", &[], j.owner);
    x.element(i, "state", &[], j.state_letters());
    let iso = |t: i64| local_time(t, "%Y-%m-%dT%H:%M:%S");
    match j.start_time {
        Some(t) => x.element(i, "JAT_start_time", &[], &iso(t)),
        None => x.element(i, "JB_submission_time", &[], &iso(j.submit_time)),
    }
    if with_queue {
        x.element(i, "queue_name", &[], j.queue.unwrap_or(""));
    }
    x.element(i, "slots", &[], &j.slots.to_string());
    if !j.tasks.is_empty() {
        x.element(i, "tasks", &[], j.tasks);
    }
    x.close(indent, "job_list");
}

/// `qstat -xml` (and with `-f`, the queue instances).
pub fn render_qstat_xml(hosts: Option<&gantry_proto::HostReport>, jobs: &[JobViewRef]) -> String {
    let mut x = crate::xml::Xml::new();
    x.open_raw(0, "job_info ", QSTAT_XMLNS);
    x.open(2, "queue_info", &[]);
    match hosts {
        None => {
            for j in jobs.iter().filter(|j| j.queue.is_some()) {
                xml_job(&mut x, 4, j, true);
            }
        }
        Some(report) => {
            for h in &report.hosts {
                for q in &h.queues {
                    let name = format!("{}@{}", q.queue, h.name);
                    x.open(4, "Queue-List", &[]);
                    x.element(6, "name", &[], &name);
                    x.element(6, "qtype", &[], &q.qtype);
                    x.element(6, "slots_used", &[], &q.used.to_string());
                    x.element(6, "slots_resv", &[], &q.reserved.to_string());
                    x.element(6, "slots_total", &[], &q.total.to_string());
                    if let Some(l) = gantry_common::load::get(&h.load_values, "load_avg")
                        .and_then(|v| v.parse::<f64>().ok())
                    {
                        x.element(6, "load_avg", &[], &format!("{l:.5}"));
                    }
                    if let Some(a) = gantry_common::load::get(&h.load_values, "arch") {
                        x.element(6, "arch", &[], a);
                    }
                    if !q.states.is_empty() {
                        x.element(6, "state", &[], &q.states);
                    }
                    for j in jobs.iter().filter(|j| j.queue == Some(name.as_str())) {
                        xml_job(&mut x, 6, j, false);
                    }
                    x.close(4, "Queue-List");
                }
            }
        }
    }
    x.close(2, "queue_info");
    x.open(2, "job_info", &[]);
    for j in jobs.iter().filter(|j| j.queue.is_none()) {
        xml_job(&mut x, 4, j, true);
    }
    x.close(2, "job_info");
    x.close(0, "job_info");
    x.finish()
}

/// `qstat -j`: the details of one job.
pub fn render_job_details(details: &[gantry_proto::JobDetail]) -> String {
    let mut out = String::new();
    for d in details {
        render_job(&mut out, d, false);
    }
    out
}

/// `qsub -verify`: the job as parsed, as SGE's qsub prints it (no number yet, no
/// submission time, `verify: -verify`).
pub fn render_unsubmitted_job(spec: &gantry_proto::JobSpec) -> String {
    let (owner, group) = crate::account::identity();
    let detail = gantry_proto::JobDetail {
        job_id: 0,
        spec: spec.clone(),
        owner,
        group,
        submit_time: 0,
        reasons: Vec::new(),
        errors: Vec::new(),
        running: Vec::new(),
        checkpoint_attr: None,
    };
    let mut out = String::new();
    render_job(&mut out, &detail, true);
    out
}

fn render_job(out: &mut String, d: &gantry_proto::JobDetail, unsubmitted: bool) {
    {
        let spec = &d.spec;
        let env = |k: &str| {
            spec.env
                .iter()
                .find(|(ek, _)| ek == k)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let mut rows: Vec<(String, String)> = Vec::new();
        let mut row = |k: &str, v: String| rows.push((k.to_string(), v));
        if unsubmitted {
            row("job_number", "unassigned".to_string());
        } else {
            row("job_number", d.job_id.to_string());
            row("exec_file", format!("job_scripts/{}", d.job_id));
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
        if let Some(t) = spec.start_after {
            row("execution_time", local_time(t, "%a %b %e %H:%M:%S %Y"));
        }
        row("sge_o_home", env("SGE_O_HOME"));
        row("sge_o_log_name", env("SGE_O_LOGNAME"));
        row("sge_o_path", env("SGE_O_PATH"));
        row("sge_o_shell", env("SGE_O_SHELL"));
        row("sge_o_workdir", env("SGE_O_WORKDIR"));
        row("sge_o_host", env("SGE_O_HOST"));
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
            row("checkpoint_attr", a);
        }
        if let Some(secs) = gantry_common::ckpt::job_interval(spec.ckpt_when.as_deref()) {
            // SGE's show_job.c: the interval in seconds.
            row("checkpoint_interval", format!("{secs} seconds"));
        }
        if let Some(cwd) = &spec.cwd {
            row("cwd", cwd.clone());
        }
        let pairs = |l: &[(String, String)]| {
            l.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        // Output paths as SGE lists them: exec host, file host, path.
        let path_list = |p: &str| format!("NONE:NONE:{p}");
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
        if !spec.mail_options.is_empty() {
            row("mail_options", spec.mail_options.clone());
        }
        row(
            "mail_list",
            gantry_common::mail::recipients(&spec.mail_list, &d.owner.user, &spec.submit_host)
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
        if spec.hold {
            row("hold_list", "u".to_string());
        }
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
            row("shell_list", format!("NONE:{shell}"));
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
            row("env_list", pairs(&user_env));
        }
        if !spec.args.is_empty() {
            row("job_args", spec.args.join(","));
        }
        if !spec.masterq.is_empty() {
            row("master hard queue_list", spec.masterq.join(","));
        }
        match &spec.script {
            gantry_proto::JobScript::Script { path, .. } => row("script_file", path.clone()),
            gantry_proto::JobScript::Binary { command } => row("script_file", command.clone()),
        }
        // SGE prints this one with two blanks after the colon, not aligned.
        let pe_line = spec
            .pe
            .as_ref()
            .map(|(name, range)| format!("parallel environment:  {name} range: {range}\n"));
        if !spec.hold_jids.is_empty() {
            row("jid_predecessor_list (req)", spec.hold_jids.join(","));
        }
        if !spec.hold_jids_ad.is_empty() {
            row("ja_ad_predecessor_list (req)", spec.hold_jids_ad.join(","));
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
        row(
            "binding",
            spec.binding.clone().unwrap_or_else(|| "NONE".to_string()),
        );
        if matches!(spec.script, gantry_proto::JobScript::Binary { .. }) {
            row("job_type", "binary".to_string());
        }
        let pe_after = rows
            .iter()
            .position(|(k, _)| k == "script_file")
            .map_or(rows.len(), |n| n + 1);
        for (n, (k, v)) in rows.iter().enumerate() {
            if n == pe_after {
                out.push_str(pe_line.as_deref().unwrap_or(""));
            }
            // Keys too long for the column get two blanks, as SGE prints them (and so
            // does `jid_predecessor_list (req):`, one short of it, in show_job.c).
            let key = format!("{k}:");
            if key.len() >= 27 {
                out.push_str(&format!("{key}  {v}\n"));
            } else {
                out.push_str(&format!("{key:<28}{v}\n"));
            }
        }
        if pe_after == rows.len() {
            out.push_str(pe_line.as_deref().unwrap_or(""));
        }
        // Per running task, as SGE prints them: what it used so far, then its cores.
        let task_key = |name: &str, n: usize, task: u32| {
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
        for (n, t) in d.running.iter().enumerate() {
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
        for (task, reason) in &d.errors {
            out.push_str(&format!(
                "{:<28}{reason}\n",
                format!("error reason {task:>4}:")
            ));
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
pub fn render_scheduling_summary(summary: &[(String, Vec<u64>)]) -> String {
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
    let p = match crate::parse_args(args, QSTAT_SPECS, false, qstat_usage) {
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
            Ok(FromMaster::JobDetails(d)) if p.has("-json") => Output::ok(detail::render_json(&d)),
            Ok(FromMaster::JobDetails(d)) => {
                let mut out = String::new();
                for one in &d {
                    out.push_str(
                        "==============================================================\n",
                    );
                    out.push_str(&render_job_details(std::slice::from_ref(one)));
                }
                Output::ok(out)
            }
            Ok(other) => crate::unexpected(&other),
            Err(out) => out,
        };
    }
    let states = p.arg("-s");
    let shown = |state: JobState| {
        states.is_none_or(|s| {
            s.chars().any(|c| match c {
                'p' => state.is_pending(),
                'r' => state.is_running(),
                'h' => state.is_held(),
                'z' => state == JobState::Zombie,
                _ => false,
            })
        })
    };
    let listing_only = ["-json", "-xml", "-f", "-F", "-r"]
        .iter()
        .all(|o| !p.has(o));
    if listing_only && !states.is_some_and(|s| s.contains('z')) {
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
    let listed = match crate::ask_jobs(&ToMaster::ShowJobs { users }) {
        Ok(bytes) => bytes,
        Err(out) => return out,
    };
    let rows = match crate::jobs_in(&listed) {
        Ok(rows) => rows,
        Err(out) => return out,
    };
    let finished = match p.arg("-s").is_some_and(|s| s.contains('z')) {
        true => {
            let users: Vec<String> = match p.arg("-u") {
                Some(u) => u.split(',').map(str::to_string).collect(),
                None => vec![caller_name()],
            };
            match crate::ask_jobs(&ToMaster::ShowFinishedJobs { users }) {
                Ok(bytes) => bytes,
                Err(out) => return out,
            }
        }
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
    let shown = |j: &JobViewRef| shown(j.state);
    if listing_only {
        // Written as the rows are decoded: no list of tens of thousands of rows, nor
        // their lines all at once, in between.
        let mut stdout = std::io::stdout().lock();
        return match write_qstat(rows, shown, &mut stdout) {
            Ok(()) => Output::ok(String::new()),
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
    if p.has("-json") {
        let doc = serde_json::json!({ "jobs": jobs.iter().map(|j| serde_json::json!({
            "job_id": j.job_id,
            "name": j.name,
            "owner": j.owner,
            "priority": j.priority,
            "state": j.state_letters(),
            "submit_time": j.submit_time,
            "start_time": j.start_time,
            "queue": j.queue,
            "slots": j.slots,
            "tasks": j.tasks,
            "hard_resources": j.hard_resources.iter().map(|(k, v)| serde_json::json!({"name": k, "value": v})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>() });
        return Output::ok(format!("{doc}\n"));
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
    let hosts = if p.has("-f") || offered.is_some() {
        match crate::ask(&ToMaster::HostInfo) {
            Ok(FromMaster::Hosts(h)) => Some(h),
            Ok(other) => return crate::unexpected(&other),
            Err(out) => return out,
        }
    } else {
        None
    };
    if p.has("-xml") {
        return Output::ok(render_qstat_xml(hosts.as_ref(), &jobs));
    }
    match (&hosts, p.has("-r")) {
        (Some(h), r) => Output::ok(render_qstat_f(h, &jobs, r, offered.as_deref())),
        (None, true) => Output::ok(render_qstat_r(&jobs)),
        (None, false) => Output::ok(render_qstat(&jobs)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_proto::{HostReport, HostView, LoadValue, QueueInstanceView};

    fn fixture(name: &str) -> String {
        let all = include_str!("../tests/fixtures/qstat.txt");
        let start = all.find(&format!("=== {name}\n")).unwrap() + name.len() + 5;
        let end = all[start..]
            .find("\n=== ")
            .map_or(all.len(), |e| start + e + 1);
        all[start..end].to_string()
    }

    fn idle_host() -> HostReport {
        HostReport {
            hosts: vec![HostView {
                name: "vm".into(),
                reachable: true,
                load_values: vec![
                    LoadValue {
                        name: "load_avg".into(),
                        value: "0.326172".into(),
                    },
                    LoadValue {
                        name: "arch".into(),
                        value: "lx-amd64".into(),
                    },
                ],
                complex_values: vec![],
                queues: vec![QueueInstanceView {
                    queue: "all.q".into(),
                    qtype: "BIP".into(),
                    reserved: 0,
                    reserved_all: 0,
                    used: 0,
                    total: 2,
                    states: String::new(),
                    resources: vec![],
                }],
            }],
            complexes: vec![],
        }
    }

    /// A line written field by field is the line `format!` pads and cuts: long, short
    /// and non-ASCII names and owners, job ids wider than their column, long queue
    /// names, task ranges.
    #[test]
    fn job_lines_pad_and_cut_as_the_format_does() {
        let names = [
            "",
            "sleep",
            "exactly10c",
            "a_much_longer_job_name",
            "héllo wörld ñame",
        ];
        let owners = ["u", "twelve_chars", "thirteen_char", "ünïcödé_owner_name"];
        let queues = [
            None,
            Some("all.q@node0001"),
            Some("a.very.long.queue.name@a.host.with.a.long.name"),
        ];
        let mut n = 0u64;
        for name in names {
            for owner in owners {
                for queue in queues {
                    n += 1;
                    let j = JobViewRef {
                        job_id: [1, 1234567, 12345678, u64::MAX][n as usize % 4],
                        name,
                        owner,
                        priority: (n as i32 * 97) % 2048 - 1023,
                        state: JobState::Pending {
                            held: n.is_multiple_of(2),
                        },
                        submit_time: 1_700_000_000 + n as i64,
                        start_time: None,
                        queue,
                        slots: [1, 99999, 123456][n as usize % 3],
                        tasks: ["", "7", "1-10000:1"][n as usize % 3],
                        hard_resources: vec![],
                        hold_jids: vec![],
                        is_array: !n.is_multiple_of(3),
                        restarted: n.is_multiple_of(5),
                    };
                    let tasks = if j.tasks.is_empty() {
                        "       "
                    } else {
                        j.tasks
                    };
                    let line = format!(
                        "{:>7} {} {:<10.10} {:<12.12} {:<5} {}",
                        j.job_id,
                        prior(j.priority),
                        j.name,
                        j.owner,
                        j.state_letters(),
                        local_time(j.submit_time, "%m/%d/%Y %H:%M:%S")
                    );
                    for with_queue in [false, true] {
                        let mut want = line.clone();
                        if with_queue {
                            want.push_str(&format!(" {:<30}", j.queue.unwrap_or("")));
                        }
                        want.push_str(&format!(" {:>5} {}\n", j.slots, tasks));
                        assert_eq!(job_line(&j, with_queue), want, "{j:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn idle_cluster_matches_sge() {
        assert_eq!(
            render_qstat_f(&idle_host(), &[], false, None),
            fixture("qstat -f")
        );
        // -F: every resource the instance offers, as the master lists them.
        let mut host = idle_host();
        let reference = include_str!("../../master/tests/fixtures/qstat-f-F.txt");
        host.hosts[0].queues[0].resources = reference
            .lines()
            .filter_map(|l| l.strip_prefix('\t'))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(render_qstat_f(&host, &[], false, Some(&[])), reference);
        let some = render_qstat_f(
            &host,
            &[],
            false,
            Some(&["np_load_avg".into(), "slots".into()]),
        );
        assert!(
            some.ends_with("\thl:np_load_avg=0.163086\n\tqc:slots=2\n"),
            "{some}"
        );
        assert_eq!(
            render_qstat_xml(Some(&idle_host()), &[]),
            fixture("qstat -f -xml")
        );
        assert_eq!(render_qstat_xml(None, &[]), fixture("qstat -xml"));
        assert_eq!(render_qstat(&[]), "");
    }

    fn job<'a>(id: u64, state: JobState, queue: Option<&'a str>, tasks: &'a str) -> JobViewRef<'a> {
        JobViewRef {
            job_id: id,
            name: "sleep",
            owner: "user1",
            priority: 0,
            state,
            submit_time: 0,
            start_time: queue.map(|_| 0),
            queue,
            slots: 1,
            tasks,
            hard_resources: vec![],
            hold_jids: vec![],
            is_array: !tasks.is_empty(),
            restarted: false,
        }
    }

    #[test]
    fn scheduling_summary_matches_sge() {
        let fixture = crate::qquota::tests::fixture;
        let rule = "Jobs dropped because of exceeding limit in rule".to_string();
        assert_eq!(
            render_scheduling_summary(&[(rule.clone(), vec![3, 4, 5, 6, 7])]),
            "Jobs dropped because of exceeding limit in rule\n\t3,\t4,\t5,\t6,\t7\n"
        );
        assert_eq!(
            render_scheduling_summary(&[(rule, vec![3, 4, 5, 7])]),
            fixture("qstat -j")
        );
        assert_eq!(
            render_scheduling_summary(&[
                (
                    "Jobs can not run because execution time not reached".into(),
                    vec![8]
                ),
                (
                    "Jobs can not run because the resource requirements can not be satisfied"
                        .into(),
                    vec![10]
                ),
            ]),
            fixture("qstat -j (two reasons)")
        );
        assert_eq!(render_scheduling_summary(&[]), "");
    }

    #[test]
    fn job_details_list_what_sge_lists_in_its_order() {
        let spec = gantry_proto::JobSpec {
            script: gantry_proto::JobScript::Script {
                path: "sim.sh".into(),
                contents: Vec::new(),
            },
            shell: Some("/bin/bash".into()),
            cwd: Some("/work".into()),
            stdout_path: Some("/work/out".into()),
            stderr_path: Some("/work/err".into()),
            merge_output: true,
            env: vec![("SGE_O_HOST".into(), "head".into())],
            hard_resources: vec![("h_rt".into(), "60".into())],
            queues: vec!["all.q".into()],
            project: Some("chem".into()),
            pe: Some(("smp".into(), "8".into())),
            ar: Some(3),
            mail_options: "be".into(),
            reserve: true,
            ..gantry_proto::JobSpec::binary("sim", "", "head")
        };
        let d = gantry_proto::JobDetail {
            job_id: 5,
            spec,
            owner: gantry_proto::JobOwner {
                user: "alice".into(),
                uid: 1001,
                gid: 1001,
                groups: vec![],
            },
            group: "alice".into(),
            submit_time: 0,
            reasons: vec![],
            errors: vec![],
            checkpoint_attr: None,
            running: vec![gantry_proto::RunningTask {
                task_id: 1,
                host: "n1".into(),
                usage: Some(gantry_proto::TaskUsage {
                    job_id: 5,
                    task_id: 1,
                    cpu: 65.0,
                    mem: 0.12345,
                    io: 0.00012,
                    vmem: Some(19.641 * 1024.0 * 1024.0),
                    maxvmem: Some(20.0 * 1024.0 * 1024.0),
                    binding: Some("0,0:0,1".into()),
                }),
            }],
        };
        let text = render_job_details(&[d]);
        let keys: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split(':').next())
            .skip_while(|k| *k != "account")
            .collect();
        assert_eq!(
            keys,
            [
                "account",
                "cwd",
                "stderr_path_list",
                "reserve",
                "merge",
                "hard resource_list",
                "mail_options",
                "mail_list",
                "notify",
                "job_name",
                "stdout_path_list",
                "jobshare",
                "hard_queue_list",
                "shell_list",
                "script_file",
                "parallel environment",
                "project",
                "ar_id",
                "binding",
                "usage         1",
                "binding       1",
            ],
            "{text}"
        );
        for line in [
            "stderr_path_list:           NONE:NONE:/work/err\n",
            "reserve:                    y\n",
            "merge:                      y\n",
            "mail_options:               be\n",
            "mail_list:                  alice@head\n",
            "stdout_path_list:           NONE:NONE:/work/out\n",
            "shell_list:                 NONE:/bin/bash\n",
            "script_file:                sim.sh\nparallel environment:  smp range: 8\nproject:",
            "ar_id:                      3\n",
            // SGE's per-task lines (06_qsub_qdel_qacct.txt, qstat -j 28).
            "usage         1:            cpu=00:01:05, mem=0.12345 GB s, io=0.00012 GB, vmem=19.641M, maxvmem=20.000M\n",
            "binding       1:            n1=0,0:0,1\n",
        ] {
            assert!(text.contains(line), "{line}\n{text}");
        }
    }

    #[test]
    fn j_takes_an_optional_job_list() {
        let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        let p = crate::opts::parse(&words("-j 5"), QSTAT_SPECS, false).unwrap();
        assert_eq!(p.arg("-j"), Some("5"));
        let p = crate::opts::parse(&words("-j 5,6 -u *"), QSTAT_SPECS, false).unwrap();
        assert_eq!(p.arg("-j"), Some("5,6"));
        assert_eq!(p.arg("-u"), Some("*"));
        let p = crate::opts::parse(&words("-j"), QSTAT_SPECS, false).unwrap();
        assert!(p.has("-j") && p.arg("-j").is_none());
        let p = crate::opts::parse(&words("-j -u *"), QSTAT_SPECS, false).unwrap();
        assert!(p.has("-j") && p.arg("-j").is_none());
        assert_eq!(p.arg("-u"), Some("*"));
    }

    #[test]
    fn a_listing_writes_each_line_as_alone() {
        // Priorities and times repeated and changing, row after row.
        let mut jobs = Vec::new();
        for (n, (priority, submitted)) in [(0, 0), (0, 0), (-5, 0), (-5, 60), (0, 60), (0, 3_600)]
            .into_iter()
            .enumerate()
        {
            let mut j = job(n as u64 + 1, JobState::Pending { held: false }, None, "");
            j.priority = priority;
            j.submit_time = submitted;
            jobs.push(j);
        }
        jobs[1].queue = Some("all.q@vm");
        jobs[1].start_time = Some(30);
        // Then rows alike but for one column after the name each.
        let like = |n: u64| {
            let mut j = job(n, JobState::Pending { held: false }, None, "");
            j.submit_time = 3_600;
            j
        };
        let mut next = 7;
        for vary in 0..7 {
            jobs.push(like(next));
            let mut j = like(next + 1);
            match vary {
                0 => j.owner = "user2",
                1 => j.state = JobState::Pending { held: true },
                2 => j.submit_time = 3_601,
                3 => {
                    j.queue = Some("all.q@vm");
                    j.start_time = Some(3_600);
                }
                4 => j.slots = 2,
                5 => j.tasks = "1-3:1",
                _ => j.name = "other",
            }
            jobs.push(j);
            next += 2;
        }
        let listed = render_qstat(&jobs);
        let alone: String = jobs.iter().map(|j| job_line(j, true)).collect();
        assert!(listed.ends_with(&alone), "{listed}");
        assert_eq!(listed.lines().count(), jobs.len() + 2);
    }

    #[test]
    fn a_long_listing_is_written_in_pieces_as_its_rows_are_decoded() {
        use gantry_proto::{encode, FromMaster, JobView};
        let view = |n: u64| JobView {
            job_id: n,
            name: format!("job{n}"),
            owner: "user1".into(),
            priority: 0,
            state: match n % 3 {
                0 => JobState::Running,
                _ => JobState::Pending { held: n % 3 == 2 },
            },
            submit_time: n as i64,
            start_time: n.is_multiple_of(3).then_some(n as i64),
            queue: n.is_multiple_of(3).then(|| "all.q@vm".to_string()),
            slots: 1,
            tasks: String::new(),
            hard_resources: vec![],
            hold_jids: vec![],
            is_array: false,
            restarted: false,
        };
        // Over 64 KiB of lines: several pieces.
        let bytes = encode(&FromMaster::Jobs((1..=2_000).map(view).collect())).unwrap();
        let rows = || crate::jobs_in(&bytes).unwrap();
        let whole = render_qstat(&rows().collect::<Result<Vec<_>, _>>().unwrap());
        assert!(whole.len() > 3 * 64 * 1024);
        let mut written = Vec::new();
        write_qstat(rows(), |_| true, &mut written).unwrap();
        assert_eq!(String::from_utf8(written).unwrap(), whole);
        // Only the rows shown; the header only when one is.
        let mut held = Vec::new();
        write_qstat(rows(), |j| j.state.is_held(), &mut held).unwrap();
        let held = String::from_utf8(held).unwrap();
        assert_eq!(
            held.lines().count(),
            2 + (1..=2_000).filter(|n| n % 3 == 2).count()
        );
        assert!(held.lines().skip(2).all(|l| l.contains(" hqw ")), "{held}");
        let mut none = Vec::new();
        write_qstat(rows(), |_| false, &mut none).unwrap();
        assert!(none.is_empty());
        // Cut short: the whole rows before are written, then the error.
        let cut = &bytes[..bytes.len() - 5];
        let mut partial = Vec::new();
        assert!(write_qstat(crate::jobs_in(cut).unwrap(), |_| true, &mut partial).is_err());
        let partial = String::from_utf8(partial).unwrap();
        assert_eq!(partial.lines().count(), 2 + 1_999);
        assert!(whole.starts_with(&partial));
    }

    /// The default listing's lines as the master writes them (head and tail, the time
    /// written here) are the lines the client writes of the same rows: whole, chosen
    /// by state, none, or cut short.
    #[test]
    fn job_lines_from_the_master_are_written_as_rows_are() {
        use gantry_common::joblines::{push_head, push_tail};
        use gantry_proto::{encode, FromMaster, JobLine, JobView};
        let view = |n: u64| JobView {
            job_id: n * 997,
            name: format!("a-rather-long-name{n}"),
            owner: "user1".into(),
            priority: (n % 5) as i32 * 100 - 200,
            state: match n % 4 {
                0 => JobState::Running,
                1 => JobState::Suspended,
                _ => JobState::Pending { held: n % 4 == 2 },
            },
            submit_time: 1_700_000_000 + (n / 7) as i64,
            start_time: (n % 4 < 2).then_some(1_700_000_100),
            queue: (n % 4 < 2).then(|| format!("all.q@node{n}")),
            slots: 1 + (n % 3) as u32,
            tasks: if n.is_multiple_of(2) {
                String::new()
            } else {
                n.to_string()
            },
            hard_resources: vec![],
            hold_jids: vec![],
            is_array: n % 2 == 1,
            restarted: false,
        };
        // Over 256 KiB of lines: read in several pieces.
        let views: Vec<JobView> = (1..=6_000).map(view).collect();
        let line = |v: &JobView| {
            let mut head = String::new();
            push_head(
                &mut head,
                v.job_id,
                &prior(v.priority),
                &v.name,
                &v.owner,
                v.state_letters(),
            );
            let mut tail = String::new();
            push_tail(
                &mut tail,
                Some(&[v.queue.as_deref().unwrap_or("")]),
                v.slots,
                &v.tasks,
            );
            JobLine {
                state: v.state,
                head,
                when: v.start_time.unwrap_or(v.submit_time),
                tail,
            }
        };
        let rows = encode(&FromMaster::Jobs(views.clone())).unwrap();
        let lines = encode(&FromMaster::JobLines(views.iter().map(line).collect())).unwrap();
        assert!(lines.len() > 2 * lines::READ);
        let read = |answer: &[u8], piece: usize, shown: &dyn Fn(JobState) -> bool| {
            // Read as it is taken, and on a thread of its own: alike.
            let direct = read_apart(answer, piece, shown, false);
            let apart = read_apart(answer, piece, shown, true);
            assert_eq!(direct, apart, "piece {piece}");
            direct
        };
        fn read_apart(
            answer: &[u8],
            piece: usize,
            shown: &dyn Fn(JobState) -> bool,
            apart: bool,
        ) -> (Result<(), u8>, String) {
            let mut got = Vec::new();
            let mut writer = LineWriter::new(&mut got);
            let read = lines::read_in_pieces(answer, answer.len(), piece, apart, |l| {
                if shown(l.state) {
                    writer.line(l)
                }
            });
            writer.finish();
            (
                read.map_err(|out| out.code),
                String::from_utf8(got).unwrap(),
            )
        }
        for shown in [
            &(|_: JobState| true) as &dyn Fn(JobState) -> bool,
            &|s: JobState| s.is_held(),
            &|s: JobState| s.is_running(),
            &|_: JobState| false,
        ] {
            let mut want = Vec::new();
            write_qstat(
                crate::jobs_in(&rows).unwrap(),
                |j| shown(j.state),
                &mut want,
            )
            .unwrap();
            let want = String::from_utf8(want).unwrap();
            // In pieces of any size: lines cut at a piece's end, a piece shorter than a line.
            // A piece of 1 or 2 bytes holds less than the answer's tag and count.
            for piece in [lines::READ, 4_096, 97, 7, 2, 1] {
                assert_eq!(
                    read(&lines, piece, shown),
                    (Ok(()), want.clone()),
                    "piece {piece}"
                );
            }
        }
        // Cut short: the whole lines before, then the error.
        let cut = &lines[..lines.len() - 3];
        let (ended, partial) = read(cut, lines::READ, &|_| true);
        assert_eq!(ended, Err(crate::exit::FAILURE));
        assert_eq!(partial.lines().count(), 2 + 5_999);
        // Another answer is no listing: its refusal is what the command reports.
        let refused = encode(&FromMaster::Refused(gantry_proto::Refusal {
            kind: gantry_proto::RefusalKind::Denied,
            message: "denied".into(),
        }))
        .unwrap();
        assert!(crate::job_lines_in(&refused).is_err());
        let (ended, written) = read(&refused, lines::READ, &|_| true);
        assert_eq!(
            (ended, written.as_str()),
            (
                Err(crate::exit::for_refusal(gantry_proto::RefusalKind::Denied)),
                ""
            )
        );
    }

    /// Lines as a job listing's answer: `count` of them, each with a tail of `width`
    /// bytes.
    fn long_lines(count: u64, width: usize) -> Vec<u8> {
        use gantry_proto::{encode, FromMaster, JobLine};
        let lines = (0..count)
            .map(|n| JobLine {
                state: JobState::Pending { held: false },
                head: format!("{n:>7} 0.50000 sleep      user1        qw    "),
                when: 1_700_000_000,
                tail: format!(" {:width$}\n", n),
            })
            .collect();
        encode(&FromMaster::JobLines(lines)).unwrap()
    }

    /// The answer is read off the socket as fast as it comes, whatever standard output
    /// does (a pager that waits): the last byte is read before the first line is taken.
    #[test]
    fn a_listing_is_read_whole_while_its_first_line_waits() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        struct Counted<'a>(&'a [u8], &'a AtomicUsize);
        impl std::io::Read for Counted<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.read(buf)?;
                self.1.fetch_add(n, Ordering::SeqCst);
                Ok(n)
            }
        }
        let answer = long_lines(20_000, 40);
        let got = AtomicUsize::new(0);
        let mut first = true;
        let mut taken = 0;
        let read = lines::read_in_pieces(Counted(&answer, &got), answer.len(), 4_096, true, |_| {
            if first {
                first = false;
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
                while got.load(Ordering::SeqCst) < answer.len() {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "the reader waited for the lines"
                    );
                    std::thread::yield_now();
                }
            }
            taken += 1;
        });
        assert!(read.is_ok());
        assert_eq!(taken, 20_000);
    }

    /// A listing of lines longer than any other answer may be (16 MiB) is read (it is
    /// never held whole); another answer that long is refused before it is read.
    #[test]
    fn a_listing_of_lines_may_be_longer_than_a_frame() {
        let answer = long_lines(17_000, 1_000);
        assert!(answer.len() > gantry_proto::frame::MAX_FRAME);
        for apart in [false, true] {
            let mut taken = 0;
            let read = lines::read_in_pieces(&answer[..], answer.len(), lines::READ, apart, |_| {
                taken += 1
            });
            assert!(read.is_ok());
            assert_eq!(taken, 17_000);
            let len = gantry_proto::frame::MAX_FRAME + 1;
            let other = std::io::Read::take(std::io::repeat(0), len as u64);
            let refused =
                lines::read_in_pieces(other, len, lines::READ, apart, |_| panic!("no line"));
            let out = refused.unwrap_err();
            assert_eq!(out.code, crate::exit::FAILURE);
            assert!(out.stderr.contains("16777216"), "{}", out.stderr);
        }
    }

    /// A socket that closes before the whole answer came: the lines before, then the
    /// error.
    #[test]
    fn a_listing_cut_off_by_the_socket_ends_with_an_error() {
        let answer = long_lines(3_000, 10);
        let half = &answer[..answer.len() / 2];
        for apart in [false, true] {
            let mut taken = 0;
            let read = lines::read_in_pieces(half, answer.len(), 4_096, apart, |_| taken += 1);
            let out = read.unwrap_err();
            assert_eq!(out.code, crate::exit::FAILURE);
            assert!(
                out.stderr.contains("talking to the daemon"),
                "{}",
                out.stderr
            );
            assert!(taken > 1_000 && taken < 1_500, "{taken}");
        }
    }

    #[test]
    fn job_lines_have_sges_columns() {
        let out = render_qstat(&[
            job(28, JobState::Running, Some("all.q@vm"), ""),
            job(36, JobState::Pending { held: false }, None, "2-5:1"),
        ]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0].len(), 114);
        assert_eq!(lines[1].len(), 113);
        assert!(
            lines[2].starts_with("     28 0.50000 sleep      user1        r     "),
            "{}",
            lines[2]
        );
        assert!(
            lines[2].ends_with(" all.q@vm                           1        "),
            "{}",
            lines[2]
        );
        assert!(
            lines[3].ends_with("                                    1 2-5:1"),
            "{}",
            lines[3]
        );
        let f = render_qstat_f(
            &idle_host(),
            &[job(36, JobState::Pending { held: false }, None, "")],
            false,
            None,
        );
        assert!(f.contains(PENDING_BANNER), "{f}");
    }
}
