//! Core binding on this host (`qsub -binding`): its processor topology as Linux reports
//! it, limited to the processors this execd may use, and the cores its running tasks
//! hold. The choice itself is `gantry_common::binding`'s.

use std::collections::{BTreeMap, BTreeSet};

use gantry_common::binding::{BindingType, Topology};

/// What a task was given: how to apply it and which cores and processors.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TaskBinding {
    /// How it is applied.
    pub kind: BindingType,
    /// (socket, core), as `qstat -j` and the `pe_hostfile` show them.
    pub cores: Vec<(u32, u32)>,
    /// The processors (CPU ids) of those cores.
    pub cpus: Vec<u32>,
}

impl TaskBinding {
    /// `0,0:0,1`, SGE's way of listing the cores.
    pub fn cores_text(&self) -> String {
        let list: Vec<String> = self.cores.iter().map(|(s, c)| format!("{s},{c}")).collect();
        list.join(":")
    }
}

/// The processors this process may run on (its affinity mask).
fn allowed() -> Option<BTreeSet<u32>> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok()?;
    Some(
        (0..nix::sched::CpuSet::count())
            .filter(|&i| set.is_set(i).unwrap_or(false))
            .filter_map(|i| u32::try_from(i).ok())
            .collect(),
    )
}

fn read_number(path: &std::path::Path) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// This host's sockets, cores and their processors from `/sys/devices/system/cpu`,
/// sockets and cores numbered in the order of their ids, only processors this execd
/// may use (a cpuset or `taskset` around it confines its jobs too).
pub fn host_topology() -> Topology {
    let allowed = allowed();
    // package id -> core id -> processors
    let mut layout: BTreeMap<i64, BTreeMap<i64, Vec<u32>>> = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/sys/devices/system/cpu") else {
        return Topology::default();
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(id) = name
            .to_str()
            .and_then(|n| n.strip_prefix("cpu"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if allowed.as_ref().is_some_and(|a| !a.contains(&id)) {
            continue;
        }
        let topo = e.path().join("topology");
        let package = read_number(&topo.join("physical_package_id")).unwrap_or(0);
        let core = read_number(&topo.join("core_id")).unwrap_or(i64::from(id));
        layout
            .entry(package)
            .or_default()
            .entry(core)
            .or_default()
            .push(id);
    }
    Topology {
        sockets: layout
            .into_values()
            .map(|cores| {
                cores
                    .into_values()
                    .map(|mut cpus| {
                        cpus.sort_unstable();
                        cpus
                    })
                    .collect()
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_hosts_topology_has_every_usable_processor_once() {
        let t = host_topology();
        let mut cpus: Vec<u32> = t.sockets.iter().flatten().flatten().copied().collect();
        let n = cpus.len();
        cpus.dedup();
        assert_eq!(cpus.len(), n, "no processor twice");
        let usable = allowed().map_or(0, |a| a.len());
        assert_eq!(n, usable, "{t:?}");
        assert!(!t.cores().is_empty());
    }
}
