//! A job as the master keeps it and the scheduler reads it: its specification, its
//! owner, and where each of its unfinished tasks is in its life.

use gantry_proto::{JobId, JobOwner, JobSpec, TaskId};
use serde::{Deserialize, Serialize};

pub use crate::tasks::TaskState;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    pub id: JobId,
    pub spec: JobSpec,
    pub owner: JobOwner,
    pub submit_time: i64,
    /// Tasks not yet finished (a plain job has task 1).
    pub tasks: crate::tasks::Tasks,
    /// Running tasks suspended with `qmod -sj` (state `s`).
    pub suspended: std::collections::BTreeSet<TaskId>,
    /// Tasks that run again after their host failed under them or they migrated
    /// (`RESTARTED=1`, state `R`), with how many runs of each were interrupted (each
    /// has an accounting record of its own).
    pub restarted: std::collections::BTreeMap<TaskId, u32>,
    /// Of those, the tasks that restart from a checkpoint in the arena (`RESTARTED=2`).
    pub ckpt_arena: std::collections::BTreeSet<TaskId>,
    /// Tasks waiting to run again after their start failed on a host (a prolog that
    /// failed, the queue instance set in error): the shepherd's reason, which `qstat
    /// -j` shows as SGE's `error reason` until the task runs again.
    pub failed_starts: std::collections::BTreeMap<TaskId, String>,
    /// How many accepted `qalter`/`qhold`/`qrls` requests changed the job (SGE's job
    /// version, which `qstat -j` shows once it is not 0).
    pub version: u32,
}

impl Job {
    /// Jobs in an advance reservation are neither limited nor counted by resource
    /// quota sets (`sge_resource_quota(5)`).
    pub fn quota_exempt(&self) -> bool {
        self.spec.ar.is_some()
    }

    pub fn is_array(&self) -> bool {
        self.spec.array.is_some()
    }

    /// The slots a running task holds (1 for a task without a parallel environment).
    pub fn task_slots(&self, task: TaskId) -> u32 {
        match self.tasks.get(task) {
            Some(TaskState::Running { grants, .. } | TaskState::Deleting { grants, .. }) => {
                grants.iter().map(|g| g.slots).sum::<u32>().max(1)
            }
            _ => self.requested_slots(),
        }
    }

    /// The smallest slot count the job asks for (`-pe name 4-8`: 4).
    pub fn requested_slots(&self) -> u32 {
        self.spec
            .pe
            .as_ref()
            .and_then(|(_, r)| crate::pe::parse_slot_range(r))
            .map_or(1, |(lo, _)| lo)
    }
}

/// Does a queue reference (`all.q`, `all.q@node1`, `*@node?`, `all.q@@group`, `@node1`)
/// name the queue instance `queue@host`, whose host is in `host_groups`?
pub fn queue_reference_matches(
    pattern: &str,
    queue: &str,
    host: &str,
    host_groups: &[&str],
) -> bool {
    match pattern.split_once('@') {
        None => wildcard(pattern, queue),
        Some((cq, h)) => {
            let cq = if cq.is_empty() { "*" } else { cq };
            wildcard(cq, queue)
                && if h.starts_with('@') {
                    host_groups.iter().any(|g| wildcard(h, g))
                } else {
                    wildcard(h, host)
                }
        }
    }
}

/// Grid Engine's simple wildcards in queue names (`*`, `?`).
pub fn wildcard(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    // The wildcards are ASCII: a byte scan finds them (the quota sets' host filters
    // compare every host group name with this, once per host).
    if !pattern.bytes().any(|b| b == b'*' || b == b'?') {
        return pattern == name;
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// `1-3:1,5-9:2`-style ranges of task ids.
pub fn task_ranges(ids: &[TaskId], step: u32) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let start = ids[i].get();
        let mut end = start;
        while i + 1 < ids.len() && ids[i + 1].get() == end + step {
            end = ids[i + 1].get();
            i += 1;
        }
        parts.push(crate::tasks::run_text(start, end, step));
        i += 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::queue_reference_matches;

    #[test]
    fn queue_references_name_instances_as_sge_reads_them() {
        let table = [
            ("all.q", "all.q", "n1", true),
            ("all.q", "big.q", "n1", false),
            ("all.q@n1", "all.q", "n1", true),
            ("all.q@n2", "all.q", "n1", false),
            ("*@n?", "big.q", "n1", true),
            ("@n1", "big.q", "n1", true),
            ("all.q@@gpus", "all.q", "n1", true),
            ("all.q@@cpus", "all.q", "n1", false),
        ];
        for (pattern, queue, host, want) in table {
            assert_eq!(
                queue_reference_matches(pattern, queue, host, &["@gpus"]),
                want,
                "{pattern} {queue}@{host}"
            );
        }
    }
}
