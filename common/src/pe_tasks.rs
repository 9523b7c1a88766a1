//! The tasks `qrsh -inherit` started in a running job's task (SGE's "pe tasks"), as the
//! master keeps them: which run where, the next number, and what their job's
//! accounting needs once they end (see `master/src/core/pe_tasks.rs`).

use std::collections::BTreeMap;

use gantry_proto::{AccountingRecord, JobId, JobReport, TaskId};
use serde::{Deserialize, Serialize};

/// The tasks started in one running task of a job (a job that is not an array: task 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeTasks {
    pub job_id: JobId,
    pub task_id: TaskId,
    /// The number the next task gets (1 first, as SGE numbers them).
    pub next: u32,
    /// The tasks that run, by number.
    pub running: BTreeMap<u32, PeTask>,
    /// The job's accounting record but for the report, as it was when the first task
    /// started: a task that ends after its job is accounted from it.
    pub record: AccountingRecord,
    /// `accounting_summary TRUE`: one record for the whole job, the tasks' usage added
    /// to the job's own.
    pub summary: bool,
    /// With `summary`: what the tasks that ended used (CPU microseconds, largest
    /// resident size).
    pub summed: Used,
    /// With `summary`: the job's own report, held until its last task has ended.
    pub held: Option<JobReport>,
    /// The job's own task has ended: the object goes with its last task.
    pub ended: bool,
}

/// One task `qrsh -inherit` started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeTask {
    pub host: String,
    /// The queue (cluster queue name) of the job's grant it holds a slot of.
    pub queue: String,
    pub start_time: i64,
}

/// Usage summed over the tasks of a job (`accounting_summary TRUE`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Used {
    pub utime_us: u64,
    pub stime_us: u64,
    pub maxrss_kb: u64,
    pub accounted: gantry_proto::AccountedUsage,
}

impl Used {
    fn add(&mut self, r: &JobReport) {
        self.utime_us += r.utime_us;
        self.stime_us += r.stime_us;
        self.maxrss_kb = self.maxrss_kb.max(r.maxrss_kb);
        self.accounted.add(&r.accounted);
    }
}

/// The spool key of a job's tasks.
pub fn pe_tasks_key(job: JobId, task: TaskId) -> String {
    format!("petasks/{job:020}.{task}")
}

impl PeTasks {
    /// A task's report: the task no longer runs. Its record to write: its own, or
    /// with `summary` none (its usage is added to the job's). None: the task is not
    /// running (its report came again).
    pub fn end_task(&mut self, report: &JobReport) -> Option<Option<AccountingRecord>> {
        let task = self.running.remove(&report.pe_task?)?;
        if self.summary {
            self.summed.add(report);
            return Some(None);
        }
        let mut record = self.record.clone();
        // SGE's record of a task: submitted and started when it was.
        record.submit_time = task.start_time;
        record.report = report.clone();
        Some(Some(record))
    }

    /// The job's own task has ended (its tasks still running are killed now); with its
    /// report when it is accounted (not run again). True: the job's record is held
    /// here (`summary`), to be written with the last task's, what they used added.
    pub fn end_job(&mut self, report: Option<&JobReport>) -> bool {
        self.ended = true;
        match report {
            Some(r) if self.summary => {
                self.held = Some(r.clone());
                true
            }
            _ => false,
        }
    }

    /// The job's one record (`accounting_summary TRUE`): its own report with what its
    /// tasks used added.
    pub fn summary_record(&self, job_report: &JobReport) -> AccountingRecord {
        let mut record = self.record.clone();
        let mut report = job_report.clone();
        report.utime_us += self.summed.utime_us;
        report.stime_us += self.summed.stime_us;
        report.maxrss_kb = report.maxrss_kb.max(self.summed.maxrss_kb);
        report.accounted.add(&self.summed.accounted);
        record.report = report;
        record
    }

    /// The hosts tasks of the job run on, each once.
    pub fn hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = self.running.values().map(|t| t.host.clone()).collect();
        hosts.sort();
        hosts.dedup();
        hosts
    }
}
