//! `qacct -f FILE`: an accounting file as SGE 8.1.9 writes it (accounting(5)), so that
//! a site's SGE history reads with Gantry's qacct: one record per line, 45 fields
//! separated by colons, `#` lines comments.

use gantry_proto::{AccountedUsage, AccountingRecord, ArId, JobId, JobReport, TaskId};

/// A record read from the file, with the department SGE wrote into it (Gantry's own
/// records have none of their own: `defaultdepartment`).
pub struct FileRecord {
    pub record: AccountingRecord,
    pub department: String,
}

/// Why a line is not a record.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("{0} fields, not 45")]
    Fields(usize),
    #[error("field {field} ({name}) is not a number: \"{text}\"")]
    Number {
        field: usize,
        name: &'static str,
        text: String,
    },
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// One line of the file (no newline).
pub fn parse_line(line: &str) -> Result<FileRecord, LineError> {
    let mut f: Vec<&str> = line.split(':').collect();
    if f.len() < 45 {
        return Err(LineError::Fields(f.len()));
    }
    // A category with colons in it (`-l h_rt=1:00:00`): the fields after it count from
    // the line's end.
    let category;
    if f.len() > 45 {
        let extra = f.len() - 45;
        category = f[39..=39 + extra].join(":");
        f.splice(39..=39 + extra, [category.as_str()]);
    }
    let num = |field: usize, name: &'static str| -> Result<f64, LineError> {
        f[field]
            .trim()
            .parse::<f64>()
            .map_err(|_| LineError::Number {
                field: field + 1,
                name,
                text: f[field].to_string(),
            })
    };
    let whole = |field, name| num(field, name).map(|v| v.max(0.0) as u64);
    let secs = |field, name| num(field, name).map(|v| v as i64);
    let micros = |field, name| num(field, name).map(|v| (v.max(0.0) * 1e6).round() as u64);
    let job_id = JobId(whole(5, "job_number")?);
    let task = whole(35, "task_number")? as u32;
    let host = f[1].to_string();
    let mut report = JobReport::empty(job_id, TaskId(task.max(1)), &host, secs(10, "end_time")?);
    report.queue = format!("{}@{host}", f[0]);
    report.start_time = secs(9, "start_time")?;
    report.end_time = secs(10, "end_time")?;
    report.failed = whole(11, "failed")? as u32;
    report.exit_status = num(12, "exit_status")? as i32;
    report.utime_us = micros(14, "ru_utime")?;
    report.stime_us = micros(15, "ru_stime")?;
    // SGE writes getrusage's kilobytes.
    report.maxrss_kb = whole(16, "ru_maxrss")?;
    report.pe_task = match f[41] {
        "NONE" | "" => None,
        _ => Some(0),
    };
    report.accounted = AccountedUsage {
        minflt: whole(21, "ru_minflt")?,
        majflt: whole(22, "ru_majflt")?,
        nswap: whole(23, "ru_nswap")?,
        inblock: whole(24, "ru_inblock")?,
        oublock: whole(25, "ru_oublock")?,
        msgsnd: whole(26, "ru_msgsnd")?,
        msgrcv: whole(27, "ru_msgrcv")?,
        nsignals: whole(28, "ru_nsignals")?,
        nvcsw: whole(29, "ru_nvcsw")?,
        nivcsw: whole(30, "ru_nivcsw")?,
        mem_byte_s: (num(37, "mem")?.max(0.0) * GIB) as u64,
        io_bytes: (num(38, "io")?.max(0.0) * GIB) as u64,
        iow_us: micros(40, "iow")?,
        maxvmem_bytes: whole(42, "maxvmem")?,
    };
    let none = |s: &str| (s != "NONE" && !s.is_empty()).then(|| s.to_string());
    let arid = whole(43, "arid")?;
    let record = AccountingRecord {
        job_id,
        task_id: (task > 0).then_some(TaskId(task)),
        job_name: f[4].to_string(),
        owner: f[3].to_string(),
        group: f[2].to_string(),
        account: f[6].to_string(),
        project: none(f[31]),
        priority: num(7, "priority")? as i32,
        slots: whole(34, "slots")? as u32,
        submit_time: secs(8, "submission_time")?,
        attempt: 0,
        ar: (arid > 0).then(|| (ArId(arid), secs(44, "ar_submission_time").unwrap_or(0))),
        granted_pe: none(f[33]),
        category: match f[39] {
            "NONE" => String::new(),
            c => c.to_string(),
        },
        report,
    };
    Ok(FileRecord {
        record,
        department: f[32].to_string(),
    })
}

/// Every record of a file's text, or the first line that is none.
pub fn parse(text: &str) -> Result<Vec<FileRecord>, (usize, LineError)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty())
        .map(|(n, l)| parse_line(l).map_err(|e| (n + 1, e)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two lines SGE 8.1.9 wrote on this machine (a serial job, a PE job).
    const SGE: &str = "# Version: 8.1.9\n\
all.q:vm:user1:user1:sleep:1:sge:0:1796312811:1796312812:1796312826:100:137:14:0.001282:0.009638:4864.000000:0:0:0:0:439:0:0:0.000000:8:0:0:0:11:7:NONE:defaultdepartment:NONE:1:0:0.011355:0.000000:0.000030:-l h_rt=1000:0.000000:NONE:3162112.000000:0:0\n\
all.q:vm:user1:user1:sleep:2:sge:0:1796312811:1796312812:1796312826:100:137:14:0.001282:0.009638:4864.000000:0:0:0:0:440:0:0:0.000000:8:0:0:0:9:5:chem:physics:smp:2:3:0.010920:1.5:0.000030:-pe smp 1:0.000000:NONE:3104768.000000:7:1796312800\n";

    #[test]
    fn sges_lines_read_as_records() {
        let records = parse(SGE).expect("records");
        assert_eq!(records.len(), 2);
        let a = &records[0].record;
        assert_eq!(
            (
                a.job_id,
                a.task_id,
                a.owner.as_str(),
                a.report.queue.as_str()
            ),
            (JobId(1), None, "user1", "all.q@vm")
        );
        assert_eq!((a.report.failed, a.report.exit_status), (100, 137));
        assert_eq!(
            (a.report.start_time, a.report.end_time),
            (1796312812, 1796312826)
        );
        assert_eq!((a.report.utime_us, a.report.maxrss_kb), (1282, 4864));
        assert_eq!(a.category, "-l h_rt=1000");
        assert_eq!(
            (a.project.as_deref(), a.granted_pe.as_deref()),
            (None, None)
        );
        assert_eq!(records[0].department, "defaultdepartment");
        let b = &records[1];
        assert_eq!(b.record.project.as_deref(), Some("chem"));
        assert_eq!(b.department, "physics");
        assert_eq!(b.record.granted_pe.as_deref(), Some("smp"));
        assert_eq!((b.record.slots, b.record.task_id), (2, Some(TaskId(3))));
        assert_eq!(b.record.report.accounted.mem_byte_s, (1.5 * GIB) as u64);
        assert_eq!(b.record.ar, Some((ArId(7), 1796312800)));
    }

    #[test]
    fn a_category_with_colons_keeps_the_fields_after_it() {
        let line = SGE
            .lines()
            .nth(1)
            .unwrap_or_default()
            .replace(":-l h_rt=1000:", ":-l h_rt=1:00:00:");
        let r = parse_line(&line).expect("a record");
        assert_eq!(r.record.category, "-l h_rt=1:00:00");
        assert_eq!(r.record.report.accounted.maxvmem_bytes, 3162112);
    }

    #[test]
    fn a_bad_line_is_named() {
        assert_eq!(parse("a:b:c\n").err(), Some((1, LineError::Fields(3))));
        let bad = SGE
            .lines()
            .nth(1)
            .unwrap_or_default()
            .replacen(":1:sge:", ":x:sge:", 1);
        match parse(&format!("# c\n{bad}\n")) {
            Err((2, LineError::Number { field: 6, name, .. })) => assert_eq!(name, "job_number"),
            other => panic!("{:?}", other.err()),
        }
    }
}
