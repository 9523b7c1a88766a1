//! The limits a job runs under: its hard requests of `h_rt`, `s_rt`, `h_vmem`, `h_cpu`
//! and the rest, each bounded by its queue's limit, and the resource limits
//! (`setrlimit`) its processes inherit.

use gantry_common::value::{parse_memory, parse_time};
use gantry_proto::JobStart;

use super::setting;

/// A job's hard request for `key`, else the queue's limit.
pub(super) fn limit(start: &JobStart, key: &str, parse: fn(&str) -> Option<f64>) -> Option<f64> {
    let job = start
        .spec
        .hard_resources
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| parse(v));
    let queue = setting(start, key).and_then(parse);
    match (job, queue) {
        (Some(j), Some(q)) => Some(j.min(q)),
        (a, b) => a.or(b),
    }
    .filter(|v| v.is_finite())
}

pub(super) fn time_of(s: &str) -> Option<f64> {
    parse_time(s).ok()
}

pub(super) fn mem_of(s: &str) -> Option<f64> {
    parse_memory(s).ok()
}

/// The resource limits the job inherits: `(resource, soft, hard)`.
pub(super) fn limits(start: &JobStart) -> Vec<(nix::libc::c_int, u64, u64)> {
    let mut out = Vec::new();
    let h_vmem = limit(start, "h_vmem", mem_of).map(|v| v as u64);
    match (limit(start, "s_vmem", mem_of).map(|v| v as u64), h_vmem) {
        (Some(s), h) => out.push((
            nix::libc::RLIMIT_AS as nix::libc::c_int,
            s,
            h.unwrap_or(u64::MAX),
        )),
        (None, Some(h)) => out.push((nix::libc::RLIMIT_AS as nix::libc::c_int, h, h)),
        (None, None) => {}
    }
    let h_cpu = limit(start, "h_cpu", time_of).map(|v| v as u64);
    match (limit(start, "s_cpu", time_of).map(|v| v as u64), h_cpu) {
        (Some(s), h) => out.push((
            nix::libc::RLIMIT_CPU as nix::libc::c_int,
            s,
            h.unwrap_or(u64::MAX),
        )),
        (None, Some(h)) => out.push((nix::libc::RLIMIT_CPU as nix::libc::c_int, h, h)),
        (None, None) => {}
    }
    out
}

/// The task's groups in the cgroup v1 controllers (`h_vmem` times its slots here as
/// its memory limit, a pid limit and CPU weight by its slots), joined by the shepherd
/// so that the job inherits them. A host whose controllers refuse the groups runs the
/// task without them (noted); a memory limit that cannot be set fails the task.
pub(super) fn join_controllers(
    parents: &[(String, std::path::PathBuf)],
    name: &str,
    start: &JobStart,
    notes: &mut super::TaskNotes,
) -> Result<Option<crate::cgroup::controllers::ControllerGroups>, super::Failure> {
    use crate::cgroup::controllers::{ControllerGroups, TaskLimits};
    let slots: u32 = start
        .granted
        .iter()
        .filter(|g| g.host == start.host)
        .map(|g| g.slots)
        .sum();
    let h_vmem = limit(start, "h_vmem", mem_of).map(|v| v as u64);
    let limits = TaskLimits::of(slots, h_vmem);
    let groups = match ControllerGroups::create(parents, name, &limits) {
        Ok(g) => g,
        Err(e) if h_vmem.is_some() => {
            return Err(super::fail(
                gantry_proto::ShepherdFailure::BeforeJob,
                format!(
                    "cannot set the task's memory limit: {}",
                    gantry_common::os_error::strerror(&e)
                ),
            ))
        }
        Err(e) => {
            notes.add(
                "note",
                format!(
                    "no controller groups for the task: {}",
                    gantry_common::os_error::strerror(&e)
                ),
            );
            return Ok(None);
        }
    };
    if let Err(e) = groups.join_self() {
        groups.remove();
        return Err(super::fail(
            gantry_proto::ShepherdFailure::BeforeJob,
            format!(
                "cannot join the task's controller groups: {}",
                gantry_common::os_error::strerror(&e)
            ),
        ));
    }
    notes.add(
        "limits",
        format!(
            "memory={} pids={} cpu.shares={}",
            limits
                .memory_bytes
                .map_or("unlimited".to_string(), |m| m.to_string()),
            limits.pids,
            limits.cpu_shares
        ),
    );
    Ok((!groups.is_empty()).then_some(groups))
}

/// What the controllers measured goes into the task's record: its peak memory (as its
/// `maxrss` where larger than what `getrusage` saw), and a process the OOM killer
/// ended at the memory limit (SGE's failure 37, the limit it reached).
pub(super) fn account_controllers(
    groups: &crate::cgroup::controllers::ControllerGroups,
    start: &JobStart,
    report: &mut gantry_proto::JobReport,
) {
    if let Some(peak) = groups.memory_peak() {
        report.maxrss_kb = report.maxrss_kb.max(peak / 1024);
    }
    let killed = groups.oom_kills();
    if killed > 0 && report.failed == 0 {
        let h_vmem = start
            .spec
            .hard_resources
            .iter()
            .find(|(k, _)| k == "h_vmem")
            .map_or_else(
                || "its queue's h_vmem".to_string(),
                |(_, v)| format!("h_vmem={v}"),
            );
        report.failed = gantry_proto::ShepherdFailure::EnforcedLimit.code();
        report.failure = format!(
            "the kernel's OOM killer ended {killed} process{} of the job at its memory limit ({h_vmem} per slot)",
            if killed == 1 { "" } else { "es" }
        );
    }
}
