//! A task's limits in the cgroup v1 controllers (this machine, as RHEL 8 and many HPC
//! sites, mounts `memory`, `pids` and `cpu` beside a unified hierarchy that has none):
//! `h_vmem` times the slots as the memory limit, which holds for the job's processes
//! together where the per-process `setrlimit` cannot; a job past it is ended by the
//! kernel and accounted with SGE's failure 37 and its peak memory.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use gantry_tests::{ensure_user, need_root, skip_loudly, wait_until, Cluster};

/// Three processes of 100 MiB each, each under an `h_vmem` of 160M, together past it.
const HOG: &str = r#"import os, time
for _ in range(3):
    if os.fork() == 0:
        b = bytearray(100 * 2**20)
        for i in range(0, len(b), 4096):
            b[i] = 1
        time.sleep(20)
        os._exit(0)
for _ in range(3):
    os.wait()
"#;

fn qacct_line(c: &Cluster, id: &str, key: &str) -> String {
    c.client("qacct", &["-j", id])
        .stdout
        .lines()
        .find(|l| l.starts_with(key))
        .map(|l| l[13..].trim().to_string())
        .unwrap_or_default()
}

#[test]
fn a_job_past_its_memory_limit_is_ended_by_the_kernel_and_accounted() {
    if !need_root("a_job_past_its_memory_limit_is_ended_by_the_kernel_and_accounted") {
        return;
    }
    if !std::path::Path::new("/sys/fs/cgroup/memory/cgroup.procs").exists() {
        skip_loudly(
            "a_job_past_its_memory_limit_is_ended_by_the_kernel_and_accounted",
            "no cgroup v1 memory controller mounted at /sys/fs/cgroup/memory",
        );
        return;
    }
    let (_, home) = ensure_user("gtuser1");
    let c = Cluster::one_host();
    c.wait_host_reporting("node1");
    let log = c.execds[0].log_text();
    assert!(
        log.contains("job tasks are limited in the cgroup v1 controllers memory"),
        "{log}"
    );
    let script = format!("{home}/hog-{}.py", std::process::id());
    std::fs::write(&script, HOG).unwrap();
    let hog_out = format!("{home}/hog-{}.out", std::process::id());
    let _ = std::fs::remove_file(&hog_out);
    let hog = c.submit(
        "gtuser1",
        &[
            "-l",
            "h_vmem=160M",
            "-o",
            &hog_out,
            "-j",
            "y",
            "-b",
            "y",
            "python3",
            &script,
        ],
    );
    // Within its limit: a job of one such process runs to its end, its peak counted.
    let fits = c.submit(
        "gtuser1",
        &[
            "-l",
            "h_vmem=160M",
            "-o",
            "/dev/null",
            "-j",
            "y",
            "-b",
            "y",
            "python3",
            "-c",
            "b = bytearray(50 * 2**20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\n",
        ],
    );
    for id in [&hog, &fits] {
        wait_until("the job to be accounted", Duration::from_secs(60), || {
            c.client("qacct", &["-j", id]).code == 0
        });
    }
    let said = std::fs::read_to_string(&hog_out).unwrap_or_default();
    assert_eq!(
        qacct_line(&c, &hog, "failed "),
        "37  : qmaster enforced h_rt, h_cpu, or h_vmem limit",
        "the job said: {said}\n{}\n{}",
        c.client("qacct", &["-j", &hog]).stdout,
        c.execds[0].log_text()
    );
    assert_eq!(qacct_line(&c, &fits, "failed "), "0");
    // The peak: at most the limit for the first, 50 MiB and more for the second.
    // qacct prints getrusage's kilobytes scaled as if they were bytes (SGE's way):
    // `160.000KB` is 160 × 1024 KB.
    let kb = |v: &str| -> f64 {
        let (n, unit) = v.split_at(v.len() - 2);
        let n: f64 = n.parse().unwrap_or_else(|_| panic!("{v}"));
        match unit {
            "KB" => n * 1024.0,
            "MB" => n * 1024.0 * 1024.0,
            "GB" => n * 1024.0 * 1024.0 * 1024.0,
            _ => panic!("{v}"),
        }
    };
    let hog_rss = kb(&qacct_line(&c, &hog, "ru_maxrss"));
    let fits_rss = kb(&qacct_line(&c, &fits, "ru_maxrss"));
    assert!(
        hog_rss <= 161.0 * 1024.0 && hog_rss > 100.0 * 1024.0,
        "{hog_rss} KB"
    );
    assert!(fits_rss >= 50.0 * 1024.0, "{fits_rss} KB");
    let _ = std::fs::remove_file(&script);
    let _ = std::fs::remove_file(&hog_out);
}
