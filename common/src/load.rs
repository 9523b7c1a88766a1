//! Load values: how an execd turns what it measured into the values SGE reports, and
//! how they are printed by `qhost`.

use crate::value::{format_f6, format_memory_report};
use gantry_proto::LoadValue;

/// What an execd measured on its host; pure numbers, no formatting.
#[derive(Debug, Clone, PartialEq)]
pub struct HostSample {
    /// SGE architecture string (`lx-amd64`).
    pub arch: String,
    pub num_proc: u32,
    pub sockets: u32,
    pub cores: u32,
    pub threads: u32,
    /// SGE's topology string: `S` per socket, `C` per core, `T` per hardware thread when
    /// cores run more than one (`SCC`, `SCTTCTT`).
    pub topology: String,
    pub load_1: f64,
    pub load_5: f64,
    pub load_15: f64,
    /// Bytes.
    pub mem_total: f64,
    pub mem_free: f64,
    pub swap_total: f64,
    pub swap_free: f64,
    /// Percent of CPU time not idle since the previous sample.
    pub cpu: f64,
}

/// Values that describe the hardware and stay meaningful while a host is unreachable.
pub const STATIC_VALUES: &[&str] = &[
    "arch",
    "num_proc",
    "mem_total",
    "swap_total",
    "virtual_total",
    "m_topology",
    "m_socket",
    "m_core",
    "m_thread",
];

/// Every value an execd reports, in report order.
pub const REPORTED: &[&str] = &[
    "load_avg",
    "load_short",
    "load_medium",
    "load_long",
    "arch",
    "num_proc",
    "mem_free",
    "swap_free",
    "virtual_free",
    "mem_total",
    "swap_total",
    "virtual_total",
    "mem_used",
    "swap_used",
    "virtual_used",
    "cpu",
    "m_topology",
    "m_topology_inuse",
    "m_socket",
    "m_core",
    "m_thread",
    "np_load_avg",
    "np_load_short",
    "np_load_medium",
    "np_load_long",
];

/// Is this a value the execd measures anew at every report (`load_avg`, `mem_free`),
/// as opposed to one that describes the hardware (`num_proc`, `arch`)?
pub fn is_changing_load_value(name: &str) -> bool {
    REPORTED.contains(&name) && !STATIC_VALUES.contains(&name)
}

/// SGE's architecture string for this build's target.
pub fn sge_arch() -> String {
    let os = match std::env::consts::OS {
        "linux" => "lx",
        "macos" => "darwin",
        "freebsd" => "fbsd",
        other => other,
    };
    let cpu = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "x86",
        other => other,
    };
    format!("{os}-{cpu}")
}

/// The topology string for a host.
pub fn topology(sockets: u32, cores: u32, threads: u32) -> String {
    let sockets = sockets.max(1);
    let cores_per_socket = (cores / sockets).max(1);
    let threads_per_core = (threads / cores.max(1)).max(1);
    let mut s = String::new();
    for _ in 0..sockets {
        s.push('S');
        for _ in 0..cores_per_socket {
            s.push('C');
            if threads_per_core > 1 {
                for _ in 0..threads_per_core {
                    s.push('T');
                }
            }
        }
    }
    s
}

/// The load report for a sample, in SGE's order and textual form.
pub fn load_values(s: &HostSample) -> Vec<LoadValue> {
    let n = f64::from(s.num_proc.max(1));
    let mem_used = (s.mem_total - s.mem_free).max(0.0);
    let swap_used = (s.swap_total - s.swap_free).max(0.0);
    let v = |name: &str, value: String| LoadValue {
        name: name.to_string(),
        value,
    };
    vec![
        v("load_avg", format_f6(s.load_5)),
        v("load_short", format_f6(s.load_1)),
        v("load_medium", format_f6(s.load_5)),
        v("load_long", format_f6(s.load_15)),
        v("arch", s.arch.clone()),
        v("num_proc", s.num_proc.to_string()),
        v("mem_free", format_memory_report(s.mem_free)),
        v("swap_free", format_memory_report(s.swap_free)),
        v(
            "virtual_free",
            format_memory_report(s.mem_free + s.swap_free),
        ),
        v("mem_total", format_memory_report(s.mem_total)),
        v("swap_total", format_memory_report(s.swap_total)),
        v(
            "virtual_total",
            format_memory_report(s.mem_total + s.swap_total),
        ),
        v("mem_used", format_memory_report(mem_used)),
        v("swap_used", format_memory_report(swap_used)),
        v("virtual_used", format_memory_report(mem_used + swap_used)),
        v("cpu", format_f6(s.cpu)),
        v("m_topology", s.topology.clone()),
        v("m_topology_inuse", s.topology.clone()),
        v("m_socket", s.sockets.to_string()),
        v("m_core", s.cores.to_string()),
        v("m_thread", s.threads.to_string()),
        v("np_load_avg", format_f6(s.load_5 / n)),
        v("np_load_short", format_f6(s.load_1 / n)),
        v("np_load_medium", format_f6(s.load_5 / n)),
        v("np_load_long", format_f6(s.load_15 / n)),
    ]
}

/// Look a value up by name.
pub fn get<'a>(values: &'a [LoadValue], name: &str) -> Option<&'a str> {
    values
        .iter()
        .find(|l| l.name == name)
        .map(|l| l.value.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference_sample() -> HostSample {
        let mib = 1024.0 * 1024.0;
        HostSample {
            arch: "lx-amd64".into(),
            num_proc: 2,
            sockets: 1,
            cores: 2,
            threads: 2,
            topology: topology(1, 2, 2),
            load_1: 0.498535,
            load_5: 0.326172,
            load_15: 0.144531,
            mem_total: 24105.550781 * mib,
            mem_free: 23917.718750 * mib,
            swap_total: 0.0,
            swap_free: 0.0,
            cpu: 0.0,
        }
    }

    #[test]
    fn report_matches_sge_names_order_and_format() {
        let text: Vec<String> = load_values(&reference_sample())
            .iter()
            .map(|l| format!("{}={}", l.name, l.value))
            .collect();
        let want = "load_avg=0.326172,load_short=0.498535,load_medium=0.326172,load_long=0.144531,arch=lx-amd64,num_proc=2,mem_free=23917.718750M,swap_free=0.000000M,virtual_free=23917.718750M,mem_total=24105.550781M,swap_total=0.000000M,virtual_total=24105.550781M,mem_used=187.832031M,swap_used=0.000000M,virtual_used=187.832031M,cpu=0.000000,m_topology=SCC,m_topology_inuse=SCC,m_socket=1,m_core=2,m_thread=2,np_load_avg=0.163086,np_load_short=0.249268,np_load_medium=0.163086,np_load_long=0.072265";
        assert_eq!(text.join(","), want);
    }

    #[test]
    fn reported_names_are_the_reports_names() {
        let names: Vec<String> = load_values(&reference_sample())
            .into_iter()
            .map(|l| l.name)
            .collect();
        assert_eq!(names, REPORTED);
        assert!(is_changing_load_value("load_avg") && is_changing_load_value("mem_free"));
        assert!(!is_changing_load_value("num_proc") && !is_changing_load_value("slots"));
    }

    #[test]
    fn topology_strings() {
        assert_eq!(topology(1, 2, 2), "SCC");
        assert_eq!(topology(1, 2, 4), "SCTTCTT");
        assert_eq!(topology(2, 4, 4), "SCCSCC");
        assert_eq!(topology(0, 0, 0), "SC");
    }

    #[test]
    fn arch_is_sge_style() {
        let a = sge_arch();
        assert!(a.contains('-'), "{a}");
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        assert_eq!(a, "lx-amd64");
    }
}
