//! `qacct`: the accounting records of finished jobs.

use gantry_common::value::format_memory_3;
use gantry_proto::{AccountingRecord, FromMaster, ToMaster};

use crate::dates::local_time;
use crate::opts::{opt, Arity, OptSpec};
use crate::{exit, Output};

const QACCT_SPECS: &[OptSpec] = &[
    opt("-help", Arity::None),
    opt("-j", Arity::Optional),
    opt("-o", Arity::Optional),
    opt("-u", Arity::One),
    opt("-q", Arity::Optional),
    opt("-h", Arity::Optional),
    opt("-d", Arity::One),
    opt("-b", Arity::One),
    opt("-e", Arity::One),
    opt("-ar", Arity::Optional),
];

pub fn qacct_usage() -> String {
    format!(
        "Gantry {}\nusage: qacct [options]\n   [-ar [ar_id]]                            list [matching] advance reservations\n   [-b begin_time]                          jobs started after\n   [-d days]                                jobs started during the last d days\n   [-e end_time]                            jobs started before\n   [-h [host]]                              list [matching] host\n   [-help]                                  display this message\n   [-j [job_id|job_name|pattern]]           list all [matching] jobs\n   [-o [owner]]                             list [matching] owners\n   [-q [queue]]                             list [matching] queues\n   [-u owner]                               only the jobs of this owner\n\nbegin_time, end_time       [[CC]YY]MMDDhhmm[.SS]\n",
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
    // SGE's code and its name for it; Gantry's own words for the failure go to the
    // execd's log, the abort mail and `qstat -j`.
    s.push_str(&format!(
        "{:<13}{:<3} {} {}\n",
        "failed",
        rep.failed,
        if rep.failed == 0 { "" } else { ":" },
        gantry_proto::failure_description(rep.failed)
    ));
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
    match r.ar {
        Some((id, submitted)) => {
            row(&mut s, "arid", &id.to_string());
            raw(&mut s, "ar_sub_time", &ts(submitted));
        }
        None => raw(&mut s, "arid", "undefined"),
    }
    s
}

/// What a grouped summary groups by.
type GroupKey = fn(&AccountingRecord) -> String;

/// The usage columns of a set of records: wallclock, utime, stime.
fn usage_of(records: &[&AccountingRecord]) -> (i64, f64, f64) {
    let wall = records
        .iter()
        .map(|r| (r.report.end_time - r.report.start_time).max(0))
        .sum();
    let ut = records.iter().map(|r| secs(r.report.utime_us)).sum();
    let st = records.iter().map(|r| secs(r.report.stime_us)).sum();
    (wall, ut, st)
}

fn usage_columns(records: &[&AccountingRecord]) -> String {
    let (wall, ut, st) = usage_of(records);
    format!(
        "{wall:>13}{ut:>14.3}{st:>14.3}{:>14.3}{:>19.3}{:>19.3}{:>19.3}",
        ut + st,
        0.0,
        0.0,
        0.0
    )
}

const USAGE_HEADER: &str = "    WALLCLOCK         UTIME         STIME           CPU             MEMORY                 IO                IOW";

pub fn qacct(args: &[String]) -> Output {
    let p = match crate::parse_args(args, QACCT_SPECS, false, qacct_usage) {
        Ok(p) => p,
        Err(out) => return out,
    };
    let now = jiff::Zoned::now();
    let mut since: Option<i64> = None;
    let mut until: Option<i64> = None;
    if let Some(d) = p.arg("-d") {
        match d.parse::<i64>() {
            Ok(days) if days >= 0 => since = Some(now.timestamp().as_second() - days * 86400),
            _ => {
                return Output::fail(
                    format!("error: invalid number of days \"{d}\""),
                    exit::FAILURE,
                )
            }
        }
    }
    for (opt, slot) in [("-b", &mut since), ("-e", &mut until)] {
        if let Some(t) = p.arg(opt) {
            match crate::dates::parse_date_time(t, now.clone()) {
                Some(v) => *slot = Some(v),
                None => {
                    return Output::fail(
                        format!("error: invalid date_time \"{t}\" ([[CC]YY]MMDDhhmm[.SS])"),
                        exit::FAILURE,
                    )
                }
            }
        }
    }
    let job = p.arg("-j").map(str::to_string);
    let records = match crate::ask(&ToMaster::Accounting { job: job.clone() }) {
        Ok(FromMaster::Accounting(r)) => r,
        Ok(other) => return crate::unexpected(&other),
        Err(out) => return out,
    };
    let owner_filter = p.arg("-u").or(p.arg("-o"));
    let queue_filter = p.arg("-q");
    let host_filter = p.arg("-h");
    let ar_filter = match p.arg("-ar").map(str::parse::<u64>) {
        None => None,
        Some(Ok(id)) => Some(id),
        Some(Err(_)) => {
            return Output::usage_error(
                "ERROR! invalid advance reservation id, must be an unsigned integer",
                &qacct_usage(),
            )
        }
    };
    let selected: Vec<&AccountingRecord> = records
        .iter()
        .filter(|r| since.is_none_or(|t| r.report.start_time >= t))
        .filter(|r| until.is_none_or(|t| r.report.start_time <= t))
        .filter(|r| owner_filter.is_none_or(|o| r.owner == o))
        .filter(|r| queue_filter.is_none_or(|q| r.report.queue.split('@').next() == Some(q)))
        .filter(|r| host_filter.is_none_or(|h| r.report.host == h))
        .filter(|r| ar_filter.is_none_or(|a| r.ar.is_some_and(|(id, _)| id.get() == a)))
        .collect();
    if p.has("-j") {
        if selected.is_empty() {
            return Output::fail(
                match job {
                    Some(j) if j.parse::<u64>().is_ok() => format!("error: job id {j} not found"),
                    Some(j) => format!("error: job name {j} not found"),
                    None => "error: no jobs found".to_string(),
                },
                exit::FAILURE,
            );
        }
        return Output::ok(selected.iter().map(|r| render_record(r)).collect());
    }
    // Grouped summaries: by owner (-o), queue (-q) or host (-h).
    let group: Option<(&str, GroupKey)> = if p.has("-o") {
        Some(("OWNER", |r| r.owner.clone()))
    } else if p.has("-q") {
        Some(("QNAME", |r| {
            r.report.queue.split('@').next().unwrap_or("").to_string()
        }))
    } else if p.has("-h") {
        Some(("HOSTNAME", |r| r.report.host.clone()))
    } else if p.has("-ar") {
        // SGE's `AR` column: the reservation's id, 0 for jobs outside any.
        Some(("AR", |r| r.ar.map_or(0, |(id, _)| id.get()).to_string()))
    } else {
        None
    };
    match group {
        None => Output::ok(format!(
            "Total System Usage\n{USAGE_HEADER}\n{}\n{}\n",
            "=".repeat(112),
            usage_columns(&selected)
        )),
        Some((title, key)) => {
            let mut groups: std::collections::BTreeMap<String, Vec<&AccountingRecord>> =
                Default::default();
            for r in &selected {
                groups.entry(key(r)).or_default().push(r);
            }
            let width = groups
                .keys()
                .map(String::len)
                .max()
                .unwrap_or(0)
                .max(title.len())
                .max(5)
                + 1;
            let width = width.max(6);
            // SGE's layout: the name column, then WALLCLOCK right-aligned in 9.
            let mut out = format!("{title:<w$}{}\n", &USAGE_HEADER[4..], w = width.max(10));
            out.push_str(&"=".repeat(width.max(10) + USAGE_HEADER.len() - 4));
            out.push('\n');
            for (name, rs) in &groups {
                out.push_str(&format!(
                    "{name:<w$}{}\n",
                    &usage_columns(rs)[4..],
                    w = width.max(10)
                ));
            }
            Output::ok(out)
        }
    }
}
