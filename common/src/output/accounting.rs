//! `qacct -json`: accounting records (`-j`) or the usage summary.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::Request;

/// `qacct -json`: with `-j` the records, else the summary rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Accounting {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<Vec<AccountingEntry>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Vec<UsageRow>>,
}

/// One accounting record as `qacct -j` shows it; times in seconds since the epoch
/// (null: the task never started), durations in seconds, memory in bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AccountingEntry {
    pub qname: String,
    pub hostname: String,
    pub group: String,
    pub owner: String,
    pub project: Option<String>,
    pub department: String,
    pub jobname: String,
    pub jobnumber: u64,
    pub taskid: Option<u32>,
    pub account: String,
    pub priority: i32,
    pub qsub_time: i64,
    pub start_time: Option<i64>,
    pub end_time: Option<i64>,
    pub granted_pe: Option<String>,
    pub slots: u32,
    /// SGE's failure code (0: none) and its words.
    pub failed: u32,
    pub failed_description: String,
    pub exit_status: i32,
    pub ru_wallclock: i64,
    pub ru_utime: f64,
    pub ru_stime: f64,
    /// Kilobytes, as getrusage gives them.
    pub ru_maxrss: u64,
    pub ru_minflt: u64,
    pub ru_majflt: u64,
    pub ru_nswap: u64,
    pub ru_inblock: u64,
    pub ru_oublock: u64,
    pub ru_msgsnd: u64,
    pub ru_msgrcv: u64,
    pub ru_nsignals: u64,
    pub ru_nvcsw: u64,
    pub ru_nivcsw: u64,
    pub cpu: f64,
    /// Byte seconds.
    pub mem: u64,
    pub io: u64,
    pub iow: f64,
    pub maxvmem: u64,
    pub arid: Option<u64>,
    pub ar_sub_time: Option<i64>,
    pub category: Option<String>,
}

/// A summary row: the values of the columns asked for (`-o`, `-q`, ...; none for
/// `Total System Usage`) and what the records of the row used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageRow {
    /// Column title (`OWNER`) to the row's value.
    pub columns: Vec<Request>,
    pub wallclock: i64,
    pub utime: f64,
    pub stime: f64,
    pub cpu: f64,
    /// GB seconds.
    pub memory: f64,
    /// GB.
    pub io: f64,
    pub iow: f64,
}
