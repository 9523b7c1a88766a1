//! Synthetic clusters for the scheduler's tests and benchmarks: a fresh cell's objects
//! plus hosts with given complex and load values and jobs with given requests, built
//! without any network or spool.

use gantry_proto::{ComplexAttr, JobId, TaskId};
use std::collections::HashSet;

use gantry_common::exechost;

use crate::core::jobs::Job;
use crate::core::state::{initial_objects, ClusterState, HostRuntime, Object, Op};

/// A fresh cell's state with extra complex attributes (`name type relop requestable
/// consumable default`, as `qconf -sc` lines without shortcut and urgency).
pub fn cluster(extra: &[&str]) -> ClusterState {
    let mut s = ClusterState {
        master_host: "head".into(),
        ..ClusterState::default()
    };
    for o in initial_objects(&["root".into()]) {
        s.apply(&Op::Put(o));
    }
    let mut complexes = (*s.input.complexes).clone();
    for line in extra {
        let f: Vec<&str> = line.split_whitespace().collect();
        let text = format!(
            "{} {} {} {} {} {} {} 0\n",
            f[0], f[0], f[1], f[2], f[3], f[4], f[5]
        );
        let parsed: Vec<ComplexAttr> = gantry_common::complex::read_complexes(&text)
            .unwrap_or_else(|e| panic!("bad synthetic complex \"{line}\": {e}"));
        complexes.extend(parsed);
    }
    complexes.sort_by(|a, b| a.name.cmp(&b.name));
    s.apply(&Op::Put(Object::Complexes(complexes)));
    s
}

/// Add an exec host to `@allhosts` with `complex_values` and reported load values
/// (`num_proc`, `np_load_avg`, ... as the execd reports them), heard from at time 0.
pub fn add_host(s: &mut ClusterState, name: &str, complex_values: &str, load: &[(&str, &str)]) {
    let mut text = format!("hostname {name}\n");
    if !complex_values.is_empty() {
        text.push_str(&format!("complex_values {complex_values}\n"));
    }
    let host = exechost::parse_exechost(&text)
        .unwrap_or_else(|e| panic!("bad synthetic host \"{name}\": {e}"));
    s.apply(&Op::Put(Object::ExecHost(host)));
    if let Some(mut g) = s.input.hostgroups.get("@allhosts").cloned() {
        g.hostlist.push(name.to_string());
        s.apply(&Op::Put(Object::HostGroup(g)));
    }
    std::sync::Arc::make_mut(&mut s.input.runtime).insert(
        name.to_string(),
        std::sync::Arc::new(HostRuntime {
            load_values: load
                .iter()
                .map(|(k, v)| gantry_proto::LoadValue {
                    name: k.to_string(),
                    value: v.to_string(),
                })
                .collect(),
            last_heard: Some(crate::core::sched::Time::from_secs(0)),
        }),
    );
}

/// Every exec host, as the set of hosts with a connected execd.
pub fn connected(s: &ClusterState) -> HashSet<String> {
    s.input.exechosts.keys().cloned().collect()
}

pub use gantry_sched::synthetic::{job, running, running_on};

/// Queue a job.
pub fn submit(s: &mut ClusterState, job: Job) {
    s.apply(&Op::Put(Object::Job(job)));
}

/// Mark a task running in `queue@host` (as a dispatch would).
pub fn start(s: &mut ClusterState, job_id: u64, task: u32, queue: &str, host: &str) {
    if let Some(mut j) = s.input.jobs.get(&JobId(job_id)).map(|j| Job::clone(j)) {
        j.tasks.insert(TaskId(task), running_on(queue, host));
        s.apply(&Op::Put(Object::Job(j)));
    }
}

/// Set a queue attribute (`slots`, `complex_values`, `load_thresholds`, ... with
/// `[host=value]` overrides).
pub fn set_queue(s: &mut ClusterState, queue: &str, attr: &str, value: &str) {
    let Some(mut q) = s.input.queues.get(queue).cloned() else {
        panic!("no queue {queue}");
    };
    let parsed = gantry_common::queue::parse_attr(value)
        .unwrap_or_else(|e| panic!("bad value for {attr}: {e}"));
    match q.attr_mut(attr) {
        Some(a) => *a = parsed,
        None => panic!("no attribute {attr}"),
    }
    s.apply(&Op::Put(Object::Queue(q)));
}
