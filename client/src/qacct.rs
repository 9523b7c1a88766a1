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
    // A task that never started has neither time: `-/-`, as SGE's.
    let ts = |t: i64| match t {
        0 => "-/-".to_string(),
        t => local_time(t, "%a %b %e %H:%M:%S %Y"),
    };
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
    row(
        &mut s,
        "granted_pe",
        r.granted_pe.as_deref().unwrap_or("NONE"),
    );
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
    if rep.exit_status >= 128 {
        s.push_str(&format!(
            "{:<13}{:<20} ({})\n",
            "exit_status",
            rep.exit_status,
            gantry_proto::signal_description(rep.exit_status - 128)
        ));
    } else {
        row(&mut s, "exit_status", &rep.exit_status.to_string());
    }
    let bytes = |v: f64, unit: &str| format!("{}B{unit}", format_memory_3(v));
    let a = &rep.accounted;
    raw(
        &mut s,
        "ru_wallclock",
        &format!("{}s", (rep.end_time - rep.start_time).max(0)),
    );
    raw(&mut s, "ru_utime", &format!("{:.3}s", secs(rep.utime_us)));
    raw(&mut s, "ru_stime", &format!("{:.3}s", secs(rep.stime_us)));
    // SGE prints getrusage's kilobytes as if they were bytes, scaled (`4.469KB` for
    // 4576 KB): so does Gantry, for scripts that read it.
    raw(&mut s, "ru_maxrss", &bytes(rep.maxrss_kb as f64, ""));
    // Linux keeps no shared and unshared memory sizes.
    for key in ["ru_ixrss", "ru_ismrss", "ru_idrss", "ru_isrss"] {
        raw(&mut s, key, &bytes(0.0, ""));
    }
    for (key, v) in [
        ("ru_minflt", a.minflt),
        ("ru_majflt", a.majflt),
        ("ru_nswap", a.nswap),
        ("ru_inblock", a.inblock),
        ("ru_oublock", a.oublock),
        ("ru_msgsnd", a.msgsnd),
        ("ru_msgrcv", a.msgrcv),
        ("ru_nsignals", a.nsignals),
        ("ru_nvcsw", a.nvcsw),
        ("ru_nivcsw", a.nivcsw),
    ] {
        row(&mut s, key, &v.to_string());
    }
    raw(
        &mut s,
        "cpu",
        &format!("{:.3}s", secs(rep.utime_us + rep.stime_us)),
    );
    raw(&mut s, "mem", &bytes(a.mem_byte_s as f64, "s"));
    raw(&mut s, "io", &bytes(a.io_bytes as f64, ""));
    raw(&mut s, "iow", &format!("{:.3}s", secs(a.iow_us)));
    raw(&mut s, "maxvmem", &bytes(a.maxvmem_bytes as f64, ""));
    match r.ar {
        Some((id, submitted)) => {
            row(&mut s, "arid", &id.to_string());
            raw(&mut s, "ar_sub_time", &ts(submitted));
        }
        None => {
            raw(&mut s, "arid", "undefined");
            raw(&mut s, "ar_sub_time", "undefined");
        }
    }
    raw(
        &mut s,
        "category",
        if r.category.is_empty() {
            "NONE"
        } else {
            &r.category
        },
    );
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
    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
    let sum = |f: fn(&gantry_proto::AccountedUsage) -> u64| -> f64 {
        records.iter().map(|r| f(&r.report.accounted) as f64).sum()
    };
    format!(
        "{wall:>13}{ut:>14.3}{st:>14.3}{:>14.3}{:>19.3}{:>19.3}{:>19.3}",
        ut + st,
        sum(|a| a.mem_byte_s) / GIB,
        sum(|a| a.io_bytes) / GIB,
        sum(|a| a.iow_us) / 1e6
    )
}

const USAGE_HEADER: &str = "    WALLCLOCK         UTIME         STIME           CPU             MEMORY                 IO                IOW";

pub fn qacct(args: &[String]) -> Output {
    let p = match crate::parse_args_as(
        args,
        QACCT_SPECS,
        false,
        qacct_usage,
        crate::UnknownOption::UsageOnly,
    ) {
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

#[cfg(test)]
mod tests {
    use super::render_record;
    use gantry_proto::{AccountedUsage, AccountingRecord, JobId, JobReport, TaskId};

    fn record() -> AccountingRecord {
        let mut report = JobReport::empty(JobId(7), TaskId(1), "node1", 100);
        report.queue = "all.q@node1".into();
        report.exit_status = 137;
        report.signal = Some(9);
        report.failed = 100;
        report.maxrss_kb = 4576;
        report.accounted = AccountedUsage {
            minflt: 908,
            majflt: 5,
            oublock: 32,
            mem_byte_s: 57_981,
            io_bytes: 150_048_000,
            maxvmem_bytes: 3_236_000,
            ..AccountedUsage::default()
        };
        AccountingRecord {
            job_id: JobId(7),
            task_id: None,
            job_name: "sleep".into(),
            owner: "user1".into(),
            group: "user1".into(),
            account: "sge".into(),
            project: None,
            priority: 0,
            slots: 2,
            submit_time: 90,
            attempt: 0,
            ar: None,
            granted_pe: Some("smp".into()),
            category: "-pe smp 2".into(),
            report,
        }
    }

    #[test]
    fn a_record_shows_every_line_sge_shows() {
        let text = render_record(&record());
        for line in [
            "granted_pe   smp                 \n",
            "slots        2                   \n",
            "failed       100 : assumedly after job\n",
            "exit_status  137                  (Killed)\n",
            "ru_maxrss    4.469KB\n",
            "ru_ixrss     0.000B\n",
            "ru_isrss     0.000B\n",
            "ru_minflt    908                 \n",
            "ru_majflt    5                   \n",
            "ru_oublock   32                  \n",
            "ru_nivcsw    0                   \n",
            "mem          56.622KBs\n",
            "io           143.097MB\n",
            "iow          0.000s\n",
            "maxvmem      3.086MB\n",
            "arid         undefined\nar_sub_time  undefined\ncategory     -pe smp 2\n",
        ] {
            assert!(text.contains(line), "{line:?} not in\n{text}");
        }
        let mut plain = record();
        plain.category.clear();
        plain.granted_pe = None;
        plain.report.exit_status = 3;
        let text = render_record(&plain);
        assert!(
            text.contains("granted_pe   NONE                \n"),
            "{text}"
        );
        assert!(
            text.contains("exit_status  3                   \n"),
            "{text}"
        );
        assert!(text.ends_with("category     NONE\n"), "{text}");
    }
}
