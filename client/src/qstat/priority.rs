//! `qstat -pri`, `-urg` and `-ext`: the listing with the parts of each job's priority,
//! column for column as SGE 8.1.9 prints them (`tests/fixtures/sge/fairshare/`).

use std::collections::HashMap;

use gantry_proto::{JobId, JobViewRef, PriorityRow, TaskId};

use crate::dates::{local_zone, time_in};

/// Which of the three extensions a listing has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Columns {
    pub pri: bool,
    pub urg: bool,
    pub ext: bool,
}

impl Columns {
    pub fn any(&self) -> bool {
        self.pri || self.urg || self.ext
    }

    /// The submission (or start) time column: every form but `-ext` alone has it.
    fn has_time(&self) -> bool {
        !self.ext || self.pri || self.urg
    }

    /// The two header lines.
    pub fn header(&self) -> String {
        let mut h = String::from("job-ID  prior   ");
        if self.pri || self.urg {
            h.push_str("nurg    ");
        }
        if self.pri {
            h.push_str("npprior ");
        }
        if self.pri || self.ext {
            h.push_str("ntckts  ");
        }
        if self.urg {
            h.push_str("urg      rrcontr  wtcontr  dlcontr  ");
        }
        if self.pri {
            h.push_str(" ppri ");
        }
        h.push_str("name       user         ");
        if self.ext {
            h.push_str("project          department ");
        }
        h.push_str("state ");
        if self.has_time() {
            h.push_str(if self.urg {
                "submit/start at      "
            } else {
                "submit/start at     "
            });
        }
        if self.urg {
            h.push_str("deadline           ");
        }
        if self.ext {
            h.push_str("cpu        mem     io      tckts ovrts otckt ftckt stckt share ");
        }
        h.push_str("queue                          slots ja-task-ID \n");
        let dashes = 113
            + if self.ext { 79 } else { 0 }
            + if self.urg { 64 } else { 0 }
            + if self.pri { 35 } else { 0 };
        h.push_str(&"-".repeat(dashes));
        h.push('\n');
        h
    }
}

/// `%8.0f`, or `%8.3g` past eight digits.
fn wide(v: f64) -> String {
    if v.abs() > 99_999_999.0 {
        let exp = v.abs().log10().floor() as i32;
        let mantissa = v / 10f64.powi(exp);
        format!("{:>8}", format!("{mantissa:.2}e+{exp:02}"))
    } else {
        format!("{v:8.0}")
    }
}

/// CPU seconds as SGE's `d:hh:mm:ss`.
fn cpu_time(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    format!(
        "{}:{:02}:{:02}:{:02}",
        s / 86_400,
        s / 3600 % 24,
        s / 60 % 60,
        s % 60
    )
}

/// The listing: running rows as listed, then pending ones by priority (higher first),
/// then submission, then job id, as SGE orders them.
pub fn render(columns: Columns, rows: &[JobViewRef<'_>], prios: &[PriorityRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut order: Vec<&JobViewRef<'_>> = rows.iter().collect();
    order.sort_by(|a, b| {
        let running = |j: &JobViewRef<'_>| j.queue.is_none();
        running(a).cmp(&running(b)).then_with(|| {
            if a.queue.is_some() {
                std::cmp::Ordering::Equal
            } else {
                b.prio
                    .cmp(&a.prio)
                    .then(a.submit_time.cmp(&b.submit_time))
                    .then(a.job_id.cmp(&b.job_id))
            }
        })
    });
    let zone = local_zone();
    let mut out = columns.header();
    let lines = Lines::new(columns, prios);
    for j in order {
        lines.push(&mut out, &zone, j, true);
    }
    out
}

/// The job lines of a listing with the priority columns: each job's row found among
/// the priorities of the last scheduling run.
pub struct Lines<'a> {
    columns: Columns,
    by_row: HashMap<(JobId, Option<TaskId>), &'a PriorityRow>,
}

impl<'a> Lines<'a> {
    pub fn new(columns: Columns, prios: &'a [PriorityRow]) -> Lines<'a> {
        Lines {
            columns,
            by_row: prios.iter().map(|p| ((p.job_id, p.task), p)).collect(),
        }
    }

    /// Is it `-ext`'s listing (whose `qstat -f` separators are wider)?
    pub fn extended(&self) -> bool {
        self.columns.ext
    }

    /// `j`'s line; without the queue column in `qstat -f`, whose queue instances head
    /// their running jobs.
    pub fn push(
        &self,
        out: &mut String,
        zone: &jiff::tz::TimeZone,
        j: &JobViewRef<'_>,
        with_queue: bool,
    ) {
        let columns = self.columns;
        let task = j
            .queue
            .map(|_| j.tasks.parse::<u32>().map_or(TaskId(1), TaskId));
        let p = self.by_row.get(&(j.job_id, task)).copied();
        let get = |f: fn(&PriorityRow) -> f64| p.map_or(0.0, f);
        out.push_str(&format!(
            "{:>7} {:7.5} ",
            j.job_id,
            j.prio as f64 / 100_000.0
        ));
        if columns.pri || columns.urg {
            out.push_str(&format!("{:7.5} ", get(|p| p.nurg)));
        }
        if columns.pri {
            out.push_str(&format!("{:7.5} ", get(|p| p.npprior)));
        }
        if columns.pri || columns.ext {
            out.push_str(&format!("{:7.5} ", get(|p| p.ntckts)));
        }
        if columns.urg {
            for v in [
                get(|p| p.urg),
                get(|p| p.rrcontr),
                get(|p| p.wtcontr),
                get(|p| p.dlcontr),
            ] {
                out.push_str(&wide(v));
                out.push(' ');
            }
        }
        if columns.pri {
            out.push_str(&format!("{:>5} ", j.priority));
        }
        out.push_str(&format!("{:<10.10} {:<12.12} ", j.name, j.owner));
        if columns.ext {
            let project = p.and_then(|p| p.project.as_deref()).unwrap_or("NA");
            let department = p.and_then(|p| p.department.as_deref()).unwrap_or("NA");
            out.push_str(&format!("{project:<16.16} {department:<10.10} "));
        }
        out.push_str(&format!("{:<5.5} ", j.state_letters()));
        if columns.has_time() {
            out.push_str(&time_in(
                zone,
                j.start_time.unwrap_or(j.submit_time),
                "%m/%d/%Y %H:%M:%S",
            ));
            out.push(' ');
        }
        if columns.urg {
            match p.and_then(|p| p.deadline) {
                Some(d) => {
                    out.push_str(&time_in(zone, d, "%m/%d/%Y %H:%M:%S"));
                    out.push(' ');
                }
                None => out.push_str(&" ".repeat(20)),
            }
        }
        if columns.ext {
            match (j.queue.is_some(), p.and_then(|p| p.usage)) {
                (false, _) => out.push_str(&" ".repeat(27)),
                (true, None) => out.push_str("NA         NA      NA      "),
                (true, Some((cpu, mem, io))) => {
                    out.push_str(&format!("{:<10.10} {mem:<7.5} {io:<7.5} ", cpu_time(cpu)))
                }
            }
            for v in [
                get(|p| p.otckt + p.ftckt + p.stckt),
                p.map_or(0.0, |p| f64::from(p.ovrts)),
                get(|p| p.otckt),
                get(|p| p.ftckt),
                get(|p| p.stckt),
            ] {
                out.push_str(&format!("{:>5} ", v.trunc() as i64));
            }
            out.push_str(&format!("{:<5.2} ", get(|p| p.share)));
        }
        if with_queue {
            out.push_str(&format!("{:<30} ", j.queue.unwrap_or("")));
        }
        out.push_str(&format!("{:>5} ", j.slots));
        out.push_str(if j.tasks.is_empty() {
            "       "
        } else {
            j.tasks
        });
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header lines SGE 8.1.9 printed for each form
    /// (`tests/fixtures/sge/fairshare/02_functional_priority.txt`).
    #[test]
    fn headers_are_sges() {
        let fixture =
            include_str!("../../../tests/fixtures/sge/fairshare/02_functional_priority.txt");
        let lines: Vec<&str> = fixture.lines().collect();
        let header_after = |command: &str| {
            let at = lines
                .iter()
                .position(|l| *l == format!("=== [root] $ {command}"))
                .unwrap_or_else(|| panic!("no {command}"));
            format!("{}\n{}\n", lines[at + 2], lines[at + 3])
        };
        for (command, columns) in [
            (
                "qstat -u \"*\" -pri",
                Columns {
                    pri: true,
                    ..Columns::default()
                },
            ),
            (
                "qstat -u \"*\" -urg",
                Columns {
                    urg: true,
                    ..Columns::default()
                },
            ),
            (
                "qstat -u \"*\" -ext",
                Columns {
                    ext: true,
                    ..Columns::default()
                },
            ),
            (
                "qstat -u \"*\" -ext -urg -pri",
                Columns {
                    pri: true,
                    urg: true,
                    ext: true,
                },
            ),
            (
                "qstat -u \"*\" -pri -ext",
                Columns {
                    pri: true,
                    ext: true,
                    ..Columns::default()
                },
            ),
            (
                "qstat -u \"*\" -urg -ext",
                Columns {
                    urg: true,
                    ext: true,
                    ..Columns::default()
                },
            ),
            (
                "qstat -u \"*\" -pri -urg",
                Columns {
                    pri: true,
                    urg: true,
                    ..Columns::default()
                },
            ),
        ] {
            assert_eq!(columns.header(), header_after(command), "{command}");
        }
    }

    #[test]
    fn cpu_time_is_days_hours_minutes_seconds() {
        assert_eq!(cpu_time(63.4), "0:00:01:03");
        assert_eq!(cpu_time(90_061.0), "1:01:01:01");
        assert_eq!(wide(1505.4), "    1505");
    }
}
