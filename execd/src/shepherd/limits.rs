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
