//! `qacct`: the accounting records of finished jobs.

use gantry_common::value::format_memory_3;
use gantry_proto::{AccountingRecord, FromMaster, ToMaster};

use crate::dates::local_time;
use crate::opts::{opt, Arity, OptSpec};
use crate::{exit, Output};

mod file;

const QACCT_SPECS: &[OptSpec] = &[
    opt("-help", Arity::None),
    opt("-ar", Arity::Optional),
    opt("-A", Arity::Optional),
    opt("-b", Arity::One),
    opt("-d", Arity::One),
    opt("-D", Arity::Optional),
    opt("-e", Arity::One),
    opt("-E", Arity::None),
    opt("-f", Arity::One),
    opt("-g", Arity::Optional),
    opt("-h", Arity::Optional),
    opt("-j", Arity::Optional),
    opt("-l", Arity::One),
    opt("-m", Arity::None),
    opt("-o", Arity::Optional),
    opt("-u", Arity::Optional),
    opt("-pe", Arity::Optional),
    opt("-P", Arity::Optional),
    opt("-q", Arity::Optional),
    opt("-slots", Arity::Optional),
    opt("-t", Arity::One),
    opt("-json", Arity::None),
];

/// SGE 8.1.9's text, with Gantry's `-json`.
pub fn qacct_usage() -> String {
    format!(
        "Gantry {}\nusage: qacct [options]\n [-ar [ar_id]]                     list [matching] advance reservations\n [-A [account_string]]             list [matching] account\n [-b begin_time]                   jobs started after\n [-d days]                         jobs started during the last d days\n [-D [department]]                 list [matching] department\n [-e end_time]                     jobs started before\n [-E]                              select job end time, not start\n [[-f] acctfile]                   use alternate accounting file\n [-g [groupid|groupname]]          list [matching] group\n [-h [host]]                       list [matching] host\n [-help]                           display this message\n [-j [job_id|job_name|pattern]]    list all [matching] jobs\n [-json]                           print the records or the summary as JSON\n [-l attr=val,...]                 request given complex attributes\n [-m]                              list only master tasks\n [-o [owner]]                      list [matching] owner\n [-u [owner]]                      list [matching] owner\n [-pe [pe_name]]                   list [matching] parallel environment\n [-P [project]]                    list [matching] project\n [-q [queue]]                      list [matching] queue\n [-slots [slots]]                  list [matching] job slots\n [-t taskid[-taskid[:step]]]       list all [matching] tasks (requires -j option)\n\n begin_time, end_time              [[CC]YYMMDDhhmm[.SS]\n queue                             [cluster_queue|queue_instance|queue_domain|pattern]\n",
        env!("CARGO_PKG_VERSION")
    )
}

fn secs(us: u64) -> f64 {
    us as f64 / 1e6
}

/// A record as `qacct -j` shows it; `department` is the one it was accounted under.
pub fn render_record(r: &AccountingRecord, department: &str) -> String {
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
    row(&mut s, "department", department);
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

/// What a set of records used, as a summary row without columns.
fn usage_row(records: &[&AccountingRecord]) -> gantry_common::output::UsageRow {
    let (wallclock, utime, stime) = usage_of(records);
    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
    let sum = |f: fn(&gantry_proto::AccountedUsage) -> u64| -> f64 {
        records.iter().map(|r| f(&r.report.accounted) as f64).sum()
    };
    gantry_common::output::UsageRow {
        columns: Vec::new(),
        wallclock,
        utime,
        stime,
        cpu: utime + stime,
        memory: sum(|a| a.mem_byte_s) / GIB,
        io: sum(|a| a.io_bytes) / GIB,
        iow: sum(|a| a.iow_us) / 1e6,
    }
}

fn usage_columns(records: &[&AccountingRecord]) -> String {
    let u = usage_row(records);
    format!(
        "{:>13}{:>14.3}{:>14.3}{:>14.3}{:>19.3}{:>19.3}{:>19.3}",
        u.wallclock, u.utime, u.stime, u.cpu, u.memory, u.io, u.iow
    )
}

const USAGE_HEADER: &str = "    WALLCLOCK         UTIME         STIME           CPU             MEMORY                 IO                IOW";

pub fn qacct(args: &[String]) -> Output {
    let p = match crate::parse_args_as(
        args,
        QACCT_SPECS,
        true,
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
    let tasks = match p.arg("-t") {
        None => None,
        Some(_) if job.is_none() => {
            return Output::usage_error(
                "error: -t option requires -j option with an argument",
                &qacct_usage(),
            )
        }
        Some(t) => match crate::optvalues::task_range(t) {
            Ok(r) => Some((r.first, r.last, r.step)),
            Err(_) => {
                return Output::usage_error(
                    "ERROR! -t option must have a list of task id ranges",
                    &qacct_usage(),
                )
            }
        },
    };
    // The records: the master's, or an SGE accounting file's (`-f`).
    // `[[-f] acctfile]`: the file may stand alone.
    let acctfile = match (p.arg("-f"), p.operands.as_slice()) {
        (Some(f), []) => Some(f),
        (None, [f]) => Some(f.as_str()),
        (None, []) => None,
        _ => return Output::usage_error("error: more than one accounting file", &qacct_usage()),
    };
    let (records, departments): (Vec<AccountingRecord>, Vec<String>) = match acctfile {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => match file::parse(&text) {
                Ok(rs) => rs.into_iter().map(|f| (f.record, f.department)).unzip(),
                Err((line, e)) => {
                    return Output::fail(format!("error: {path}, line {line}: {e}"), exit::FAILURE)
                }
            },
            // SGE's words: the file's error on stderr, then that it found nothing.
            Err(e) => {
                return Output {
                    stdout: "no jobs running since startup\n".to_string(),
                    stderr: format!("{path}: {}\n", gantry_common::os_error::strerror(&e)),
                    code: exit::FAILURE,
                }
            }
        },
        None => match crate::ask(&ToMaster::Accounting { job: job.clone() }) {
            Ok(FromMaster::Accounting(r)) => {
                let d = departments_of(&r);
                (r, d)
            }
            Ok(other) => return crate::unexpected(&other),
            Err(out) => return out,
        },
    };
    // `-ar N`, `-slots N`: a number, or the usage with SGE's words.
    let number = |option: &str, what: &str| match p.arg(option).map(str::parse::<u64>) {
        None => Ok(None),
        Some(Ok(n)) => Ok(Some(n)),
        Some(Err(_)) => Err(Output::usage_error(
            &format!("ERROR! invalid {what}, must be an unsigned integer"),
            &qacct_usage(),
        )),
    };
    let ar_filter = match number("-ar", "advance reservation id") {
        Ok(n) => n,
        Err(out) => return out,
    };
    let slots_filter = match number("-slots", "slot count") {
        Ok(n) => n,
        Err(out) => return out,
    };
    // `-l`: the jobs that ran in a queue instance offering these resources.
    let offering: Option<std::collections::HashSet<String>> = match p.arg("-l") {
        None => None,
        Some(l) => match crate::ask(&ToMaster::SelectQueues(gantry_proto::QueueSelection {
            resources: crate::qselect::requests(Some(l)),
            ..Default::default()
        })) {
            Ok(FromMaster::QueuesSelected(s)) => Some(s.instances.into_iter().collect()),
            Ok(other) => return crate::unexpected(&other),
            Err(out) => return out,
        },
    };
    let columns = columns(&p);
    // -b, -e and -d by start time, or with -E by end time.
    let when = |r: &AccountingRecord| match p.has("-E") {
        true => r.report.end_time,
        false => r.report.start_time,
    };
    let selected: Vec<Entry> = records
        .iter()
        .zip(&departments)
        .map(|(r, d)| Entry {
            r,
            department: d.as_str(),
        })
        .filter(|e| since.is_none_or(|t| when(e.r) >= t))
        .filter(|e| until.is_none_or(|t| when(e.r) <= t))
        .filter(|e| columns.iter().all(|c| c.admits(e)))
        .filter(|e| ar_filter.is_none_or(|a| e.r.ar.map_or(0, |(id, _)| id.get()) == a))
        .filter(|e| slots_filter.is_none_or(|n| u64::from(e.r.slots) == n))
        .filter(|e| {
            offering
                .as_ref()
                .is_none_or(|o| o.contains(&e.r.report.queue))
        })
        .filter(|e| !p.has("-m") || e.r.report.pe_task.is_none())
        // The master filters its records by -j; a file's are filtered here.
        .filter(|e| {
            acctfile.is_none()
                || job.as_deref().is_none_or(|j| match j.parse::<u64>() {
                    Ok(id) => e.r.job_id.get() == id,
                    Err(_) => gantry_common::job::wildcard(j, &e.r.job_name),
                })
        })
        .filter(|e| {
            tasks.is_none_or(|(a, b, step)| {
                // A job that is no array has no task number (SGE's 0): no -t names it.
                e.r.task_id.is_some_and(|t| {
                    let t = t.get();
                    t >= a && t <= b && (t - a) % step.max(1) == 0
                })
            })
        })
        .collect();
    if p.has("-j") {
        if selected.is_empty() {
            return Output::fail(
                match (&job, tasks) {
                    (Some(j), Some((a, b, step))) => {
                        format!("error: Job-array tasks {j}.{a}-{b}:{step} not found")
                    }
                    (Some(j), None) if j.parse::<u64>().is_ok() => {
                        format!("error: job id {j} not found")
                    }
                    (Some(j), None) => format!("error: job name {j} not found"),
                    (None, _) => "error: no jobs found".to_string(),
                },
                exit::FAILURE,
            );
        }
        if p.has("-json") {
            return Output::ok(crate::json_line(&gantry_common::output::Accounting {
                records: Some(
                    selected
                        .iter()
                        .map(|e| record_entry(e.r, e.department))
                        .collect(),
                ),
                summary: None,
            }));
        }
        return Output::ok(
            selected
                .iter()
                .map(|e| render_record(e.r, e.department))
                .collect(),
        );
    }
    if p.has("-json") {
        return Output::ok(crate::json_line(&gantry_common::output::Accounting {
            records: None,
            summary: Some(summary_rows(&columns, &selected)),
        }));
    }
    Output::ok(summary(&columns, &selected))
}

/// A record as `qacct -j -json` shows it.
fn record_entry(r: &AccountingRecord, department: &str) -> gantry_common::output::AccountingEntry {
    let rep = &r.report;
    let a = &rep.accounted;
    let started = |t: i64| (t != 0).then_some(t);
    gantry_common::output::AccountingEntry {
        qname: rep.queue.split('@').next().unwrap_or("").to_string(),
        hostname: rep.host.clone(),
        group: r.group.clone(),
        owner: r.owner.clone(),
        project: r.project.clone(),
        department: department.to_string(),
        jobname: r.job_name.clone(),
        jobnumber: r.job_id.get(),
        taskid: r.task_id.map(|t| t.get()),
        account: r.account.clone(),
        priority: r.priority,
        qsub_time: r.submit_time,
        start_time: started(rep.start_time),
        end_time: started(rep.end_time),
        granted_pe: r.granted_pe.clone(),
        slots: r.slots,
        failed: rep.failed,
        failed_description: gantry_proto::failure_description(rep.failed).to_string(),
        exit_status: rep.exit_status,
        ru_wallclock: (rep.end_time - rep.start_time).max(0),
        ru_utime: secs(rep.utime_us),
        ru_stime: secs(rep.stime_us),
        ru_maxrss: rep.maxrss_kb,
        ru_minflt: a.minflt,
        ru_majflt: a.majflt,
        ru_nswap: a.nswap,
        ru_inblock: a.inblock,
        ru_oublock: a.oublock,
        ru_msgsnd: a.msgsnd,
        ru_msgrcv: a.msgrcv,
        ru_nsignals: a.nsignals,
        ru_nvcsw: a.nvcsw,
        ru_nivcsw: a.nivcsw,
        cpu: secs(rep.utime_us + rep.stime_us),
        mem: a.mem_byte_s,
        io: a.io_bytes,
        iow: secs(a.iow_us),
        maxvmem: a.maxvmem_bytes,
        arid: r.ar.map(|(id, _)| id.get()),
        ar_sub_time: r.ar.map(|(_, t)| t),
        category: (!r.category.is_empty()).then(|| r.category.clone()),
    }
}

/// The department each record's owner is in (a `DEPT` access list naming the owner or
/// the owner's group, as SGE's), else `defaultdepartment`: the master's records name
/// none of their own, so a record reads as if accounted now.
fn departments_of(records: &[AccountingRecord]) -> Vec<String> {
    let default = || vec!["defaultdepartment".to_string(); records.len()];
    if records.is_empty() {
        return Vec::new();
    }
    let names = match crate::ask(&ToMaster::ShowUserSetList) {
        Ok(FromMaster::Names(n)) => n,
        _ => return default(),
    };
    let sets = match crate::ask(&ToMaster::ShowUserSets { names }) {
        Ok(FromMaster::UserSets(s)) => s,
        _ => return default(),
    };
    let departments: Vec<&gantry_proto::UserSet> = sets
        .iter()
        .filter(|s| s.types.iter().any(|t| t.eq_ignore_ascii_case("DEPT")))
        .collect();
    records
        .iter()
        .map(|r| {
            departments
                .iter()
                .find(|d| {
                    d.entries
                        .iter()
                        .any(|e| *e == r.owner || e.strip_prefix('@').is_some_and(|g| g == r.group))
                })
                .map_or_else(|| "defaultdepartment".to_string(), |d| d.name.clone())
        })
        .collect()
}

/// A record with the department it was accounted under.
struct Entry<'a> {
    r: &'a AccountingRecord,
    department: &'a str,
}

/// A column of qacct's grouped summary: SGE's title, the option that asks for it, and
/// what it shows of a record.
struct Column<'a> {
    title: &'static str,
    /// The value the option named (only records with it count, and it is shown).
    only: Option<&'a str>,
    /// A number, printed in five columns as SGE's (`    1`).
    numeric: bool,
    value: fn(&Entry) -> String,
}

impl Column<'_> {
    fn admits(&self, e: &Entry) -> bool {
        match (self.only, self.title) {
            (None, _) | (_, "SLOTS" | "AR") => true,
            (Some(q), "CLUSTER QUEUE") => {
                let (cq, host) =
                    e.r.report
                        .queue
                        .split_once('@')
                        .unwrap_or((&e.r.report.queue, ""));
                gantry_common::job::queue_reference_matches(q, cq, host, &[])
            }
            (Some(v), _) => (self.value)(e) == v,
        }
    }

    fn shown(&self, e: &Entry) -> String {
        let v = match self.only {
            Some(v) if self.title != "CLUSTER QUEUE" => v.to_string(),
            _ => (self.value)(e),
        };
        match self.numeric {
            true => format!("{v:>5}"),
            false => v,
        }
    }
}

/// The columns the command line asks for, in SGE's order.
fn columns<'a>(p: &'a crate::opts::Parsed) -> Vec<Column<'a>> {
    type Value = fn(&Entry) -> String;
    let table: [(&str, &[&str], bool, Value); 10] = [
        ("HOST", &["-h"], false, |e| e.r.report.host.clone()),
        ("CLUSTER QUEUE", &["-q"], false, |e| {
            e.r.report.queue.split('@').next().unwrap_or("").to_string()
        }),
        ("GROUP", &["-g"], false, |e| e.r.group.clone()),
        ("OWNER", &["-o", "-u"], false, |e| e.r.owner.clone()),
        ("PROJECT", &["-P"], false, |e| {
            e.r.project.clone().unwrap_or_else(|| "NONE".to_string())
        }),
        ("DEPARTMENT", &["-D"], false, |e| e.department.to_string()),
        ("PE", &["-pe"], false, |e| {
            e.r.granted_pe.clone().unwrap_or_else(|| "NONE".to_string())
        }),
        ("SLOTS", &["-slots"], true, |e| e.r.slots.to_string()),
        ("AR", &["-ar"], true, |e| {
            e.r.ar.map_or(0, |(id, _)| id.get()).to_string()
        }),
        ("ACCOUNT", &["-A"], false, |e| e.r.account.clone()),
    ];
    table
        .into_iter()
        .filter_map(|(title, options, numeric, value)| {
            let option = options.iter().find(|o| p.has(o))?;
            Some(Column {
                title,
                only: p.arg(option),
                numeric,
                value,
            })
        })
        .collect()
}

/// The records grouped by what the columns show of them.
type Groups<'a> = std::collections::BTreeMap<Vec<String>, Vec<&'a AccountingRecord>>;

fn grouped<'a>(columns: &[Column], selected: &[Entry<'a>]) -> Groups<'a> {
    let mut groups: Groups<'a> = Default::default();
    for e in selected {
        let key = columns.iter().map(|c| c.shown(e)).collect();
        groups.entry(key).or_default().push(e.r);
    }
    groups
}

/// `qacct -json`'s summary: the rows `summary` prints (none while the records'
/// wallclock adds up to nothing, as SGE's).
fn summary_rows(columns: &[Column], selected: &[Entry]) -> Vec<gantry_common::output::UsageRow> {
    let all: Vec<&AccountingRecord> = selected.iter().map(|e| e.r).collect();
    if usage_of(&all).0 == 0 {
        return Vec::new();
    }
    let row = |key: &[String], rs: &[&AccountingRecord]| gantry_common::output::UsageRow {
        columns: columns
            .iter()
            .zip(key)
            .map(|(c, v)| gantry_common::output::Request {
                name: c.title.to_string(),
                value: v.trim().to_string(),
            })
            .collect(),
        ..usage_row(rs)
    };
    if columns.is_empty() {
        return vec![row(&[], &all)];
    }
    grouped(columns, selected)
        .iter()
        .map(|(key, rs)| row(key, rs))
        .collect()
}

/// The summary: `Total System Usage` or a row per group of the columns asked for, and
/// no row while the records' wallclock adds up to nothing, as SGE's.
fn summary(columns: &[Column], selected: &[Entry]) -> String {
    let groups = grouped(columns, selected);
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(n, c)| match (c.numeric, c.only) {
            // SGE's: a number asked for fills its five columns, unpadded.
            (true, Some(_)) => 5,
            _ => groups
                .keys()
                .map(|k| k[n].len() + 1)
                .chain([c.title.len() + 1, c.only.map_or(0, |v| v.len() + 1)])
                .max()
                .unwrap_or(0),
        })
        .collect();
    let mut out = String::new();
    if columns.is_empty() {
        out.push_str("Total System Usage\n");
    }
    for (c, w) in columns.iter().zip(&widths) {
        out.push_str(&format!("{:<w$}", c.title));
    }
    out.push_str(USAGE_HEADER);
    out.push('\n');
    out.push_str(&"=".repeat(widths.iter().sum::<usize>() + USAGE_HEADER.len()));
    out.push('\n');
    let all: Vec<&AccountingRecord> = selected.iter().map(|e| e.r).collect();
    if usage_of(&all).0 == 0 {
        return out;
    }
    if columns.is_empty() {
        out.push_str(&usage_columns(&all));
        out.push('\n');
        return out;
    }
    for (key, rs) in &groups {
        for (v, w) in key.iter().zip(&widths) {
            out.push_str(&format!("{v:<w$}"));
        }
        out.push_str(&usage_columns(rs));
        out.push('\n');
    }
    out
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
        let text = render_record(&record(), "defaultdepartment");
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
        let text = render_record(&plain, "defaultdepartment");
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
