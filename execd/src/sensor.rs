//! The load sensor: samples the host with sysinfo and turns the sample into SGE's load
//! values (the formatting is pure, in `gantry_common::load`).

use gantry_common::load::{load_values, sge_arch, topology, HostSample};
use gantry_proto::LoadValue;
use sysinfo::{CpuRefreshKind, System};

pub struct Sensor {
    sys: System,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot read the host's values: {0}")]
pub struct SensorError(String);

/// How many processors the calling process's CPU affinity allows.
fn allowed_cpus() -> Option<u32> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok()?;
    let n = (0..nix::sched::CpuSet::count())
        .filter(|&i| set.is_set(i).unwrap_or(false))
        .count();
    u32::try_from(n).ok().filter(|&n| n > 0)
}

impl Sensor {
    pub fn new() -> Result<Sensor, SensorError> {
        let mut sys = System::new().map_err(|e| SensorError(e.to_string()))?;
        sys.refresh_cpu_list(CpuRefreshKind::nothing().with_usage());
        sys.refresh_cpu_usage();
        Ok(Sensor { sys })
    }

    /// Take a sample now. CPU usage is measured since the previous sample.
    pub fn sample(&mut self) -> HostSample {
        self.sys.refresh_memory();
        self.sys.refresh_cpu_usage();
        let threads = u32::try_from(self.sys.cpus().len())
            .unwrap_or(u32::MAX)
            .max(1);
        // The processors this execd (and so its jobs) may run on: fewer than the host
        // has when a cpuset or `taskset` confines it, as `nproc` counts them.
        let usable = allowed_cpus().map_or(threads, |n| n.min(threads));
        let cores = System::physical_core_count()
            .ok()
            .and_then(|c| u32::try_from(c).ok())
            .filter(|&c| c > 0)
            .unwrap_or(threads);
        let sockets = count_sockets().unwrap_or(1);
        let load = System::load_average().ok();
        HostSample {
            arch: sge_arch(),
            num_proc: usable,
            sockets,
            cores,
            threads,
            topology: topology(sockets, cores, threads),
            load_1: load.as_ref().map_or(0.0, |l| l.one),
            load_5: load.as_ref().map_or(0.0, |l| l.five),
            load_15: load.as_ref().map_or(0.0, |l| l.fifteen),
            mem_total: self.sys.total_memory() as f64,
            mem_free: self.sys.available_memory() as f64,
            swap_total: self.sys.total_swap() as f64,
            swap_free: self.sys.free_swap() as f64,
            cpu: f64::from(self.sys.global_cpu_usage()),
        }
    }

    pub fn load_values(&mut self) -> Vec<LoadValue> {
        load_values(&self.sample())
    }
}

/// The number of distinct physical packages (sockets) Linux reports.
fn count_sockets() -> Option<u32> {
    let mut ids = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir("/sys/devices/system/cpu").ok()?.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !name.starts_with("cpu")
            || !name[3..].chars().all(|c| c.is_ascii_digit())
            || name.len() == 3
        {
            continue;
        }
        if let Ok(id) = std::fs::read_to_string(entry.path().join("topology/physical_package_id")) {
            ids.insert(id.trim().to_string());
        }
    }
    u32::try_from(ids.len()).ok().filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_the_real_host() {
        let mut s = Sensor::new().unwrap();
        let sample = s.sample();
        assert!(sample.num_proc >= 1);
        assert!(sample.mem_total > 0.0);
        assert!(sample.mem_free <= sample.mem_total);
        let values = s.load_values();
        assert_eq!(values.len(), 25);
        assert_eq!(values[5].name, "num_proc");
        let n: u32 = values[5].value.parse().unwrap();
        assert_eq!(
            n as usize,
            std::thread::available_parallelism()
                .map_or(n as usize, |p| p.get())
                .max(n as usize)
        );
    }
}
