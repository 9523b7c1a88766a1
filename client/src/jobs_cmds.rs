//! `qstat`, `qdel` and `qacct`: watching, deleting and accounting for jobs.

use gantry_common::value::format_memory_3;
use gantry_proto::{AccountingRecord, FromMaster, JobView, ToMaster};

use crate::opts::{opt, Arity, OptSpec};
use crate::{exit, Output};

fn local_time(ts: i64, fmt: &str) -> String {
    jiff::Timestamp::from_second(ts)
        .map(|t| {
            t.to_zoned(jiff::tz::TimeZone::system())
                .strftime(fmt)
                .to_string()
        })
        .unwrap_or_else(|_| ts.to_string())
}

fn caller_name() -> String {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map_or_else(|| nix::unistd::getuid().to_string(), |u| u.name)
}

const QSTAT_SPECS: &[OptSpec] = &[
    opt("-help", Arity::None),
    opt("-u", Arity::One),
    opt("-s", Arity::One),
    opt("-json", Arity::None),
];

pub fn qstat_usage() -> String {
    format!(
        "Gantry {}\nusage: qstat [options]\n   [-help]                                  print this help\n   [-json]                                  print the jobs as one JSON document\n   [-s {{p|r|h|z}}]                           show pending, running, held jobs\n   [-u user_list]                           view only jobs of this user ('*' for all)\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// SGE's normalized priority column for a POSIX priority in -1023..1024.
fn prior(p: i32) -> String {
    format!("{:.5}", (f64::from(p) + 1024.0) / 2048.0)
}

pub fn render_qstat(jobs: &[JobView]) -> String {
    if jobs.is_empty() {
        return String::new();
    }
    let mut out = String::from("job-ID  prior   name       user         state submit/start at     queue                          slots ja-task-ID \n");
    out.push_str(&"-".repeat(113));
    out.push('\n');
    for j in jobs {
        let when = local_time(j.start_time.unwrap_or(j.submit_time), "%m/%d/%Y %H:%M:%S");
        let tasks = if j.tasks.is_empty() {
            "       ".to_string()
        } else {
            j.tasks.clone()
        };
        out.push_str(&format!(
            "{:>7} {} {:<10.10} {:<12.12} {:<5} {} {:<30} {:>5} {}\n",
            j.job_id,
            prior(j.priority),
            j.name,
            j.owner,
            j.state,
            when,
            j.queue.as_deref().unwrap_or(""),
            j.slots,
            tasks
        ));
    }
    out
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
    let mut jobs = match crate::ask(&ToMaster::ShowJobs { users }) {
        Ok(FromMaster::Jobs(j)) => j,
        Ok(other) => return crate::unexpected(&other),
        Err(out) => return out,
    };
    if let Some(s) = p.arg("-s") {
        jobs.retain(|j| {
            s.chars().any(|c| match c {
                'p' => j.state.ends_with("qw"),
                'r' => j.state.contains('r') || j.state == "t",
                'h' => j.state.starts_with('h'),
                _ => false,
            })
        });
    }
    if p.has("-json") {
        let doc = serde_json::json!({ "jobs": jobs.iter().map(|j| serde_json::json!({
            "job_id": j.job_id,
            "name": j.name,
            "owner": j.owner,
            "priority": j.priority,
            "state": j.state,
            "submit_time": j.submit_time,
            "start_time": j.start_time,
            "queue": j.queue,
            "slots": j.slots,
            "tasks": j.tasks,
            "hard_resources": j.hard_resources.iter().map(|(k, v)| serde_json::json!({"name": k, "value": v})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>() });
        return Output::ok(format!("{doc}\n"));
    }
    Output::ok(render_qstat(&jobs))
}

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
    let ids: Vec<String> = p
        .operands
        .iter()
        .flat_map(|o| o.split(','))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
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
    match crate::conn::request(&req) {
        Ok(FromMaster::Done { messages }) => {
            let failed = messages.iter().any(|m| {
                m.starts_with("denied:") || m.contains("do not have the necessary privileges")
            });
            Output {
                stdout: messages.iter().map(|m| format!("{m}\n")).collect(),
                stderr: String::new(),
                code: if failed { exit::FAILURE } else { exit::SUCCESS },
            }
        }
        // qdel reports refusals on stdout, as SGE does.
        Ok(FromMaster::Refused(r)) => Output {
            stdout: format!("{}\n", r.message),
            stderr: String::new(),
            code: exit::for_refusal(r.kind),
        },
        Ok(other) => Output::fail(format!("error: unexpected answer {other:?}"), exit::FAILURE),
        Err(e) => Output::fail(e.to_string(), exit::FAILURE),
    }
}

const QACCT_SPECS: &[OptSpec] = &[
    opt("-help", Arity::None),
    opt("-j", Arity::Optional),
    opt("-o", Arity::Optional),
];

pub fn qacct_usage() -> String {
    format!(
        "Gantry {}\nusage: qacct [options]\n   [-help]                                  display this message\n   [-j [job_id|job_name|pattern]]           list all [matching] jobs\n   [-o [owner]]                             list [matching] owners\n",
        env!("CARGO_PKG_VERSION")
    )
}

fn secs(us: u64) -> f64 {
    us as f64 / 1e6
}

pub fn render_record(r: &AccountingRecord) -> String {
    let rep = &r.report;
    let mut s = String::from("==============================================================\n");
    let row = |s: &mut String, k: &str, v: &str| s.push_str(&format!("{k:<13}{v:<20}\n"));
    let raw = |s: &mut String, k: &str, v: &str| s.push_str(&format!("{k:<13}{v}\n"));
    let ts = |t: i64| local_time(t, "%a %b %e %H:%M:%S %Y");
    row(&mut s, "qname", rep.queue.split('@').next().unwrap_or(""));
    row(&mut s, "hostname", &rep.host);
    row(&mut s, "group", &r.group);
    row(&mut s, "owner", &r.owner);
    row(&mut s, "project", r.project.as_deref().unwrap_or("NONE"));
    row(&mut s, "department", "defaultdepartment");
    row(&mut s, "jobname", &r.job_name);
    row(&mut s, "jobnumber", &r.job_id.to_string());
    raw(
        &mut s,
        "taskid",
        &r.task_id
            .map_or_else(|| "undefined".to_string(), |t| t.to_string()),
    );
    row(&mut s, "account", &r.account);
    row(&mut s, "priority", &r.priority.to_string());
    raw(&mut s, "qsub_time", &ts(r.submit_time));
    raw(&mut s, "start_time", &ts(rep.start_time));
    raw(&mut s, "end_time", &ts(rep.end_time));
    row(&mut s, "granted_pe", "NONE");
    row(&mut s, "slots", &r.slots.to_string());
    let failed = if rep.failed == 0 {
        "0".to_string()
    } else {
        format!("{}  : {}", rep.failed, rep.failure)
    };
    s.push_str(&format!("{:<13}{:<5}\n", "failed", failed));
    row(&mut s, "exit_status", &rep.exit_status.to_string());
    raw(
        &mut s,
        "ru_wallclock",
        &format!("{}s", (rep.end_time - rep.start_time).max(0)),
    );
    raw(&mut s, "ru_utime", &format!("{:.3}s", secs(rep.utime_us)));
    raw(&mut s, "ru_stime", &format!("{:.3}s", secs(rep.stime_us)));
    raw(
        &mut s,
        "ru_maxrss",
        &format!("{}B", format_memory_3(rep.maxrss_kb as f64)),
    );
    raw(
        &mut s,
        "cpu",
        &format!("{:.3}s", secs(rep.utime_us + rep.stime_us)),
    );
    raw(&mut s, "arid", "undefined");
    s
}

pub fn qacct(args: &[String]) -> Output {
    let p = match crate::parse_args(args, QACCT_SPECS, false, qacct_usage) {
        Ok(p) => p,
        Err(out) => return out,
    };
    let job = p.arg("-j").map(str::to_string);
    let records = match crate::ask(&ToMaster::Accounting { job: job.clone() }) {
        Ok(FromMaster::Accounting(r)) => r,
        Ok(other) => return crate::unexpected(&other),
        Err(out) => return out,
    };
    if p.has("-j") {
        if records.is_empty() {
            return Output::fail(
                match job {
                    Some(j) if j.parse::<u64>().is_ok() => format!("error: job id {j} not found"),
                    Some(j) => format!("error: job name {j} not found"),
                    None => "error: no jobs found".to_string(),
                },
                exit::FAILURE,
            );
        }
        return Output::ok(records.iter().map(render_record).collect());
    }
    let wall: i64 = records
        .iter()
        .map(|r| (r.report.end_time - r.report.start_time).max(0))
        .sum();
    let ut: f64 = records.iter().map(|r| secs(r.report.utime_us)).sum();
    let st: f64 = records.iter().map(|r| secs(r.report.stime_us)).sum();
    Output::ok(format!(
        "Total System Usage\n    WALLCLOCK         UTIME         STIME           CPU             MEMORY                 IO                IOW\n{}\n{:>13} {:>13.3} {:>13.3} {:>13.3} {:>18.3} {:>18.3} {:>18.3}\n",
        "=".repeat(112),
        wall,
        ut,
        st,
        ut + st,
        0.0,
        0.0,
        0.0
    ))
}
