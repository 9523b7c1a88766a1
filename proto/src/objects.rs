//! Configuration objects and reports as plain data. Parsing, printing and validation live
//! in `gantry-common`.

use serde::{Deserialize, Serialize};

use crate::ids::{ArId, JobId, TaskId};

mod failure;
mod job;
pub use failure::*;
pub use job::*;

/// One load value as an execd reports it (`name=value`, value in SGE's textual form).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadValue {
    pub name: String,
    pub value: String,
}

/// What `qhost` shows: every exec host with its state and values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostReport {
    pub hosts: Vec<HostView>,
    /// The complex list, so the client can format each value by its type.
    pub complexes: Vec<ComplexAttr>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostView {
    pub name: String,
    /// False once no load report arrived for `max_unheard` (or none ever did).
    pub reachable: bool,
    /// The last reported load values, in report order. For an unreachable host only the
    /// static ones (arch, num_proc, topology, totals) are kept.
    pub load_values: Vec<LoadValue>,
    /// The administrator's `complex_values` of the host.
    pub complex_values: Vec<(String, String)>,
    /// The queue instances on this host.
    pub queues: Vec<QueueInstanceView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueInstanceView {
    pub queue: String,
    /// `BIP`-style letters.
    pub qtype: String,
    /// Slots held by advance reservations whose window is open (`qstat -f`).
    pub reserved: u32,
    /// Slots held by every granted advance reservation, open or to come (`qhost -q`).
    pub reserved_all: u32,
    pub used: u32,
    pub total: u32,
    /// State letters (`u`, `d`, `a`, ...), empty when fine.
    pub states: String,
    /// What the instance offers, as `qstat -F` prints it: (`hl:mem_free`, `23.357G`),
    /// global values first, then the host's, then the queue's.
    pub resources: Vec<(String, String)>,
    /// Why the instance is in a state, by state letter, as `qstat -explain` prints it:
    /// `a` and `A` each threshold its load stands beyond, `E` what set the error.
    pub reasons: Vec<(char, String)>,
}

/// An execution host (`qconf -se`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecHost {
    pub hostname: String,
    pub load_scaling: Vec<(String, String)>,
    pub complex_values: Vec<(String, String)>,
    /// Reported by the execd; not part of what an administrator edits.
    pub load_values: Vec<LoadValue>,
    /// Reported by the execd (`num_proc`), 0 until the first report.
    pub processors: u32,
    pub user_lists: Vec<String>,
    pub xuser_lists: Vec<String>,
    pub projects: Vec<String>,
    pub xprojects: Vec<String>,
    pub usage_scaling: Vec<(String, String)>,
    pub report_variables: Vec<String>,
}

impl ExecHost {
    /// A host with every attribute at its default (`qconf -ae name`).
    pub fn new(hostname: &str) -> Self {
        ExecHost {
            hostname: hostname.to_string(),
            load_scaling: Vec::new(),
            complex_values: Vec::new(),
            load_values: Vec::new(),
            processors: 0,
            user_lists: Vec::new(),
            xuser_lists: Vec::new(),
            projects: Vec::new(),
            xprojects: Vec::new(),
            usage_scaling: Vec::new(),
            report_variables: Vec::new(),
        }
    }
}

/// A configuration (`qconf -sconf`): attribute/value pairs in their canonical order,
/// values as the administrator wrote them (SGE prints them back verbatim).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    pub name: String,
    pub entries: Vec<(String, String)>,
}

impl Config {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ValueType {
    Int,
    Double,
    Memory,
    Time,
    Bool,
    String,
    Cstring,
    Restring,
    Host,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Relop {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Excl,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Requestable {
    Yes,
    No,
    Forced,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Consumable {
    No,
    /// Debited per slot.
    Yes,
    /// Debited once per job.
    Job,
}

/// A group's configured quota in the tree of hierarchical group quotas.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum GroupQuota {
    /// Weighted slots (written as an integer).
    Static(u64),
    /// A fraction of the parent's quota, at most 1 (written with a decimal point).
    Proportional(f64),
}

/// One group of the tree of hierarchical group quotas (a line of `qconf -sgq`): its
/// path (`physics.hep`), quota, whether it takes others' surplus, and whether its jobs
/// over its quota compete again in `<none>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupEntry {
    pub name: String,
    pub quota: GroupQuota,
    pub accept_surplus: bool,
    pub autoregroup: bool,
    /// The access lists (usersets) whose members may submit to the group (and its
    /// subtree); empty: everybody.
    pub user_lists: Vec<String>,
}

/// One group as a cycle allocates (`qquota -g`): in weighted slots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupRow {
    /// Its path, or `<none>` for the root.
    pub name: String,
    /// As configured (None: the root).
    pub configured: Option<GroupQuota>,
    pub accept_surplus: bool,
    pub autoregroup: bool,
    /// Its quota this cycle (an interior group's: what its children left it) and its
    /// subtree's.
    pub quota: f64,
    pub subtree_quota: f64,
    /// What its jobs ask for (running and pending) and hold now.
    pub demand: f64,
    pub running: f64,
    /// What it got beyond its quota from others' surplus, and what it may have.
    pub surplus: f64,
    pub allocation: f64,
}

/// One complex attribute definition (a line of `qconf -sc`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComplexAttr {
    pub name: String,
    pub shortcut: String,
    pub value_type: ValueType,
    pub relop: Relop,
    pub requestable: Requestable,
    pub consumable: Consumable,
    pub default: String,
    pub urgency: i64,
}

/// A queue attribute value with per-host and per-hostgroup overrides
/// (`1,[node1=4],[@big=16]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueAttr {
    pub default: String,
    pub overrides: Vec<(String, String)>,
}

/// A cluster queue (`qconf -sq`): attributes in SGE's canonical order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterQueue {
    pub name: String,
    pub attrs: Vec<(String, QueueAttr)>,
}

impl ClusterQueue {
    pub fn attr(&self, key: &str) -> Option<&QueueAttr> {
        self.attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn attr_mut(&mut self, key: &str) -> Option<&mut QueueAttr> {
        self.attrs
            .iter_mut()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }
}

/// A host group (`qconf -shgrp`): hosts and nested `@groups`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostGroup {
    pub name: String,
    pub hostlist: Vec<String>,
}

/// A userset (`qconf -su`): an access list (ACL) and/or department (DEPT) of users and
/// `@unixgroups`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserSet {
    pub name: String,
    pub types: Vec<String>,
    pub fshare: u32,
    pub oticket: u32,
    pub entries: Vec<String>,
}

/// `qrsub`: an advance reservation as asked for. Times are Unix seconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ArSpec {
    /// `-N`
    pub name: Option<String>,
    /// `-A` (SGE's default `sge`).
    pub account: String,
    /// `-a`; None: now.
    pub start: Option<i64>,
    /// `-e`
    pub end: Option<i64>,
    /// `-d`, in seconds.
    pub duration: Option<i64>,
    /// `-l`
    pub resources: Vec<(String, String)>,
    /// `-q`
    pub queues: Vec<String>,
    /// `-masterq`
    pub masterq: Vec<String>,
    /// `-pe name slot_range`
    pub pe: Option<(String, String)>,
    /// `-ckpt`
    pub ckpt: Option<String>,
    /// `-u`: who may submit jobs into it (users, `@group`s); empty: the owner only.
    pub users: Vec<String>,
    /// `-now y`: only interactive queue instances.
    pub interactive: bool,
    /// `-m`: SGE's letters (`a` `b` `e` `n`), empty when not given.
    pub mail_options: String,
    /// `-M`
    pub mail_list: Vec<String>,
    /// `-he y`: while in error, no job of it is started.
    pub hard_error: bool,
    /// `-w v`: only say whether it could be granted.
    pub verify: bool,
    pub submit_host: String,
}

/// The state of an advance reservation (`qrstat`'s letter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArState {
    /// Granted, its start not reached: `w`.
    Waiting,
    /// Its window is open: `r`.
    Running,
    /// Its end reached, its jobs being removed: `x`.
    Exited,
    /// Deleted (`qrdel`), its jobs being removed: `d`.
    Deleted,
    /// A host it holds is unreachable or a queue instance in error: `e`.
    Error,
}

impl ArState {
    pub fn letter(self) -> char {
        match self {
            ArState::Waiting => 'w',
            ArState::Running => 'r',
            ArState::Exited => 'x',
            ArState::Deleted => 'd',
            ArState::Error => 'e',
        }
    }
}

/// A granted advance reservation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdvanceReservation {
    pub id: ArId,
    pub spec: ArSpec,
    pub owner: String,
    /// The owner's primary group.
    pub group: String,
    pub submission_time: i64,
    pub start: i64,
    pub end: i64,
    /// The queue instances and slots it holds, the master queue first.
    pub granted: Vec<Grant>,
    /// The parallel environment and slots granted for a `-pe` request.
    pub granted_pe: Option<(String, u32)>,
    pub state: ArState,
    /// Why it is in error (`qrstat -explain`), one line per reason.
    pub errors: Vec<String>,
}

impl AdvanceReservation {
    pub fn duration(&self) -> i64 {
        self.end - self.start
    }

    /// May this user submit jobs into it (the owner, or its `-u` list)? Groups are the
    /// user's Unix groups, for `@group` entries.
    pub fn admits(&self, user: &str, groups: &[String]) -> bool {
        if self.spec.users.is_empty() {
            return user == self.owner;
        }
        self.spec.users.iter().any(|u| match u.strip_prefix('@') {
            Some(g) => groups.iter().any(|x| x == g),
            None => u == user || u == "*",
        })
    }
}

#[cfg(test)]
mod tests;

/// One frame of an interactive session (`qrsh`, `qlogin`), between the command and the
/// shepherd of the job's task; the master and the execd between them carry the frames
/// without reading them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SessionFrame {
    /// Bytes for the task's standard input, or its terminal.
    Stdin(#[serde(with = "crate::bytes")] Vec<u8>),
    /// The user's standard input has ended.
    StdinClosed,
    /// What the task wrote to its standard output (or its terminal).
    Stdout(#[serde(with = "crate::bytes")] Vec<u8>),
    /// What the task wrote to its standard error.
    Stderr(#[serde(with = "crate::bytes")] Vec<u8>),
    /// The user's terminal has this size now.
    WindowSize { rows: u16, cols: u16 },
    /// A signal for the task's processes (qrsh without a terminal passes on what it
    /// gets).
    Signal(i32),
    /// The task has ended: its exit status (128 + the signal that ended it).
    Exit { status: i32 },
    /// The task could not be started, or the session failed: why.
    Failed(String),
}

/// The first frame on a stream the master opens to an execd: join the session of this
/// interactive task, with the key its start order carried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskAttach {
    pub job_id: JobId,
    pub task_id: TaskId,
    /// A task `qrsh -inherit` started: its number in the job.
    pub pe_task: Option<u32>,
    pub key: Vec<u8>,
}
