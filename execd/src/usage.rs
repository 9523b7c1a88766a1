//! What a running task uses, measured from its processes (`qstat -j`'s `usage` line):
//! CPU time, virtual memory now and at most, memory over time (GB seconds) and I/O.
//! The processes are those of its control group when it has one, else those of its
//! process group.

use std::path::Path;
use std::time::Instant;

/// One measurement of a task's processes.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Sample {
    /// CPU seconds, user and system (with the children the processes waited for).
    pub cpu: f64,
    /// Virtual memory of the processes now, bytes.
    pub vmem: f64,
    /// Bytes read and written by the processes.
    pub io: f64,
}

/// What a task used up to its last measurement.
#[derive(Debug, Clone, Copy)]
pub struct Accumulated {
    pub last: Sample,
    pub at: Instant,
    /// GB seconds of virtual memory.
    pub mem: f64,
    pub maxvmem: f64,
}

impl Accumulated {
    pub fn first(sample: Sample, at: Instant) -> Accumulated {
        Accumulated {
            last: sample,
            at,
            mem: 0.0,
            maxvmem: sample.vmem,
        }
    }

    /// Add a later measurement: memory over time grows by the mean virtual memory of
    /// the interval.
    pub fn add(&mut self, sample: Sample, at: Instant) {
        let dt = at.saturating_duration_since(self.at).as_secs_f64();
        let gb = (self.last.vmem + sample.vmem) / 2.0 / 1e9;
        self.mem += gb * dt;
        self.maxvmem = self.maxvmem.max(sample.vmem);
        // CPU time and I/O of processes that ended may be gone from a later sample:
        // what was measured once stays counted.
        self.last = Sample {
            cpu: sample.cpu.max(self.last.cpu),
            io: sample.io.max(self.last.io),
            vmem: sample.vmem,
        };
        self.at = at;
    }
}

/// What the processes this process waited for used, as `getrusage` counts it, into a
/// task's report: CPU times, the largest resident set and the other counts `qacct`
/// prints.
pub fn account_children(report: &mut gantry_proto::JobReport) {
    use nix::sys::resource::{getrusage, UsageWho};
    let Ok(usage) = getrusage(UsageWho::RUSAGE_CHILDREN) else {
        return;
    };
    let us = |t: nix::sys::time::TimeVal| (t.tv_sec() as u64) * 1_000_000 + t.tv_usec() as u64;
    report.utime_us = us(usage.user_time());
    report.stime_us = us(usage.system_time());
    report.maxrss_kb = usage.max_rss() as u64;
    let n = |v: std::ffi::c_long| v.max(0) as u64;
    let a = &mut report.accounted;
    a.minflt = n(usage.minor_page_faults());
    a.majflt = n(usage.major_page_faults());
    a.nswap = n(usage.full_swaps());
    a.inblock = n(usage.block_reads());
    a.oublock = n(usage.block_writes());
    a.msgsnd = n(usage.ipc_sends());
    a.msgrcv = n(usage.ipc_receives());
    a.nsignals = n(usage.signals());
    a.nvcsw = n(usage.voluntary_context_switches());
    a.nivcsw = n(usage.involuntary_context_switches());
}

fn clock_ticks() -> f64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|t| *t > 0)
        .unwrap_or(100) as f64
}

/// (process group, CPU seconds, virtual memory bytes) of a process, from
/// `/proc/<pid>/stat`.
fn stat(pid: i32) -> Option<(i32, f64, f64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let close = text.rfind(')')?;
    // After "pid (comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt
    // cmajflt utime stime cutime cstime priority nice num_threads itrealvalue starttime
    // vsize ...
    let f: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    let pgrp = f.get(2)?.parse().ok()?;
    let cpu = (num(11) + num(12) + num(13) + num(14)) / clock_ticks();
    Some((pgrp, cpu, num(20)))
}

/// Bytes a process read and wrote (`rchar` + `wchar` of `/proc/<pid>/io`).
fn io(pid: i32) -> f64 {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/io")) else {
        return 0.0;
    };
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            matches!(k, "rchar" | "wchar")
                .then(|| v.trim().parse::<f64>().ok())
                .flatten()
        })
        .sum()
}

/// Measure a task: the processes of `cgroup` (its CPU time from the group's own count,
/// which keeps that of processes gone), else those of process group `pgid` and `tree`
/// (the processes below its shepherd, which left the group or not).
pub fn sample(pgid: Option<i32>, cgroup: Option<&Path>, tree: &[i32]) -> Option<Sample> {
    let pids: Vec<i32> = match cgroup {
        Some(dir) => std::fs::read_to_string(dir.join("cgroup.procs"))
            .ok()?
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect(),
        None => {
            let pgid = pgid?;
            let mut pids: Vec<i32> = std::fs::read_dir("/proc")
                .ok()?
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                .filter(|&pid| stat(pid).is_some_and(|(g, _, _)| g == pgid))
                .collect();
            for pid in tree {
                if !pids.contains(pid) {
                    pids.push(*pid);
                }
            }
            pids
        }
    };
    let mut s = Sample::default();
    for pid in pids {
        if let Some((_, cpu, vmem)) = stat(pid) {
            s.cpu += cpu;
            s.vmem += vmem;
            s.io += io(pid);
        }
    }
    if let Some(dir) = cgroup {
        let usec = std::fs::read_to_string(dir.join("cpu.stat"))
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("usage_usec "))
                    .and_then(|v| v.trim().parse::<f64>().ok())
            });
        if let Some(usec) = usec {
            s.cpu = usec / 1e6;
        }
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_over_time_is_the_integral_of_vmem() {
        let t0 = Instant::now();
        let gb = 1e9;
        let mut a = Accumulated::first(
            Sample {
                cpu: 1.0,
                vmem: 2.0 * gb,
                io: 10.0,
            },
            t0,
        );
        a.add(
            Sample {
                cpu: 3.0,
                vmem: 4.0 * gb,
                io: 5.0,
            },
            t0 + std::time::Duration::from_secs(10),
        );
        assert!((a.mem - 30.0).abs() < 1e-9, "mean 3 GB for 10 s: {}", a.mem);
        assert_eq!(a.maxvmem, 4.0 * gb);
        assert_eq!(a.last.cpu, 3.0);
        assert_eq!(a.last.io, 10.0, "what was counted stays counted");
    }

    #[test]
    fn this_process_group_is_measured() {
        let pgid = nix::unistd::getpgrp().as_raw();
        let s = sample(Some(pgid), None, &[]).expect("a sample");
        assert!(s.vmem > 0.0, "{s:?}");
    }
}
