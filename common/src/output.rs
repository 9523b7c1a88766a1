//! The documents the query commands print with `-json` and the master's HTTP API
//! answers with: one typed struct per document, serialised by serde, its JSON Schema
//! generated from the struct (utoipa's `ToSchema`), so that a command's output and
//! the API's answer are the same document.

use gantry_proto::rows::JobViewRef;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

mod accounting;
mod ars;
mod config;
mod detail;
mod hosts;
mod quotas;
mod summary;

pub use accounting::{Accounting, AccountingEntry, UsageRow};
pub use ars::{ArEntry, ArList, GrantedSlots};
pub use config::{config_shown, is_show_option, ComplexEntry, ConfigObject, ConfigShown};
pub use detail::{
    JobDetailEntry, JobDetailList, JobPriority, PeRequest, PriorityParts, RunningTaskEntry,
    TaskError, TaskRangeEntry,
};
pub use hosts::{HostEntry, HostJob, HostList, HostQueue, HostResource};
pub use quotas::{
    filter_names, GroupEntry, GroupList, QuotaLimitEntry, QuotaRuleEntry, QuotaRuleList,
};
pub use summary::{ClusterQueueLine, ClusterQueueSummary};

/// A resource request: `-l name=value`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Request {
    pub name: String,
    pub value: String,
}

/// One job (or one of its task ranges) as `qstat` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobEntry {
    pub job_id: u64,
    pub name: String,
    pub owner: String,
    /// The POSIX priority (`-p`).
    pub priority: i32,
    /// The state letters qstat prints (`qw`, `r`, `hqw`, `Eqw`, ...).
    pub state: String,
    /// Seconds since the epoch.
    pub submit_time: i64,
    pub start_time: Option<i64>,
    /// The queue instance a running task is in (`all.q@node1`).
    pub queue: Option<String>,
    pub slots: u32,
    /// The array tasks of the row (`1-10:1`), empty for a job that is no array.
    pub tasks: String,
    pub hard_resources: Vec<Request>,
    /// Under `-pri`, `-urg` or `-ext`: the row's priority parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_parts: Option<PriorityParts>,
}

impl JobEntry {
    pub fn of(j: &JobViewRef<'_>) -> JobEntry {
        JobEntry {
            job_id: j.job_id.get(),
            name: j.name.to_string(),
            owner: j.owner.to_string(),
            priority: j.priority,
            state: j.state_letters().to_string(),
            submit_time: j.submit_time,
            start_time: j.start_time,
            queue: j.queue.map(str::to_string),
            slots: j.slots,
            tasks: j.tasks.to_string(),
            hard_resources: j
                .hard_resources
                .iter()
                .map(|(k, v)| Request {
                    name: k.to_string(),
                    value: v.to_string(),
                })
                .collect(),
            priority_parts: None,
        }
    }
}

/// What a queue instance offers (`qstat -F`) or why it is in a state (`-explain`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StateMessage {
    /// The state's letter (`a`, `E`, ...).
    pub state: String,
    pub message: String,
}

/// A queue instance as `qstat -f` lists it, counted as SGE's XML counts it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QueueInstanceEntry {
    /// `queue@host`
    pub name: String,
    /// `BIP`, `B`, ...
    pub qtype: String,
    pub slots_used: u32,
    pub slots_resv: u32,
    pub slots_total: u32,
    pub load_avg: Option<f64>,
    pub arch: Option<String>,
    /// The state letters (`d`, `au`, ...), empty when none.
    pub state: String,
    /// The jobs with a task in the instance.
    pub jobs: Vec<u64>,
    /// Under `qstat -F`: what it offers, `hl:mem_free` style names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<Request>>,
    /// Under `-explain`: why it is in its states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<StateMessage>>,
}

/// `qstat -json` and `GET /api/v1/jobs`: the jobs, and with `qstat -f` the queue
/// instances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobList {
    pub jobs: Vec<JobEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queues: Option<Vec<QueueInstanceEntry>>,
}

/// The queue instances of `report` as `qstat -f -json` lists them, in name order, each
/// with the `jobs` that have a task in it; with `offered` (`-F`, empty for every one)
/// what it offers.
pub fn queue_instances(
    report: &gantry_proto::HostReport,
    jobs: &[JobEntry],
    offered: Option<&[String]>,
) -> Vec<QueueInstanceEntry> {
    let mut queues = Vec::new();
    for h in &report.hosts {
        for q in &h.queues {
            let name = format!("{}@{}", q.queue, h.name);
            let resources = offered.map(|selection| {
                q.resources
                    .iter()
                    .filter(|(key, _)| {
                        let n = key.split_once(':').map_or(key.as_str(), |(_, n)| n);
                        selection.is_empty() || selection.iter().any(|s| s == n)
                    })
                    .map(|(k, v)| Request {
                        name: k.clone(),
                        value: v.clone(),
                    })
                    .collect()
            });
            let messages = (!q.reasons.is_empty()).then(|| {
                q.reasons
                    .iter()
                    .map(|(letter, why)| StateMessage {
                        state: letter.to_string(),
                        message: why.clone(),
                    })
                    .collect()
            });
            queues.push(QueueInstanceEntry {
                jobs: jobs
                    .iter()
                    .filter(|j| j.queue.as_deref() == Some(name.as_str()))
                    .map(|j| j.job_id)
                    .collect(),
                name,
                qtype: q.qtype.clone(),
                slots_used: q.used,
                slots_resv: q.reserved,
                slots_total: q.total,
                load_avg: crate::load::get(&h.load_values, "load_avg")
                    .and_then(|v| v.parse::<f64>().ok()),
                arch: crate::load::get(&h.load_values, "arch").map(str::to_string),
                state: q.states.clone(),
                resources,
                messages,
            });
        }
    }
    queues.sort_by(|a, b| a.name.cmp(&b.name));
    queues
}

/// A standalone JSON Schema (draft 2020-12) of document `T`, generated from its
/// struct: the schemas it refers to go under `$defs`, named `title` (the command
/// whose `-json` prints it).
pub fn json_schema<T: ToSchema>(title: &str) -> serde_json::Value {
    let mut parts = Vec::new();
    T::schemas(&mut parts);
    let mut defs = serde_json::Map::new();
    for (name, schema) in parts {
        defs.insert(name, serde_json::to_value(schema).unwrap_or_default());
    }
    let mut root = serde_json::to_value(T::schema()).unwrap_or_default();
    if let serde_json::Value::Object(map) = &mut root {
        map.insert(
            "$schema".into(),
            "https://json-schema.org/draft/2020-12/schema".into(),
        );
        map.insert("title".into(), title.into());
        map.insert("$defs".into(), serde_json::Value::Object(defs));
    }
    refs_to_defs(&mut root);
    root
}

/// utoipa names a referred schema `#/components/schemas/X` (OpenAPI's place); in a
/// standalone schema it is `#/$defs/X`.
fn refs_to_defs(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, x) in map.iter_mut() {
                if k == "$ref" {
                    if let Some(name) = x
                        .as_str()
                        .and_then(|r| r.strip_prefix("#/components/schemas/"))
                    {
                        *x = format!("#/$defs/{name}").into();
                    }
                } else {
                    refs_to_defs(x);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(refs_to_defs),
        _ => {}
    }
}

/// Every document's schema, by the file it is committed as under `docs/schemas/`.
pub fn schemas() -> Vec<(&'static str, serde_json::Value)> {
    vec![
        ("qstat.json", json_schema::<JobList>("qstat -json")),
        (
            "qstat-j.json",
            json_schema::<JobDetailList>("qstat -j -json"),
        ),
        (
            "qstat-g-c.json",
            json_schema::<ClusterQueueSummary>("qstat -g c -json"),
        ),
        ("qhost.json", json_schema::<HostList>("qhost -json")),
        ("qquota.json", json_schema::<QuotaRuleList>("qquota -json")),
        ("qquota-g.json", json_schema::<GroupList>("qquota -g -json")),
        ("qrstat.json", json_schema::<ArList>("qrstat -json")),
        ("qacct.json", json_schema::<Accounting>("qacct -json")),
        ("qconf.json", json_schema::<ConfigShown>("qconf -s* -json")),
    ]
}

#[cfg(test)]
mod tests {
    /// The committed schemas are what the structs generate (regenerate them with
    /// `GANTRY_WRITE_SCHEMAS=1 cargo test -p gantry-common schemas`).
    #[test]
    fn the_committed_schemas_are_the_generated_ones() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/schemas");
        for (file, schema) in super::schemas() {
            let generated = serde_json::to_string_pretty(&schema).unwrap() + "\n";
            let path = dir.join(file);
            if std::env::var_os("GANTRY_WRITE_SCHEMAS").is_some() {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &generated).unwrap();
            }
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                committed == generated,
                "docs/schemas/{file} is not what the code generates: run \
                 GANTRY_WRITE_SCHEMAS=1 cargo test -p gantry-common schemas"
            );
        }
    }
}
