//! Configuration objects and reports as plain data. Parsing, printing and validation live
//! in `gantry-common`.

use serde::{Deserialize, Serialize};

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
    pub reserved: u32,
    pub used: u32,
    pub total: u32,
    /// State letters (`u`, `d`, `a`, ...), empty when fine.
    pub states: String,
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
