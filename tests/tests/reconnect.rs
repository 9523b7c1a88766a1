//! A master restart as the execds and clients see it: how soon the execds are back,
//! `qsub -sync y` waiting on across it, and jobs deleted by force while their host was
//! away.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use gantry_tests::{wait_until, Cluster};
use nix::sys::signal::Signal;

/// The `qhost` line of node1 has live load values.
fn reporting(c: &Cluster) -> bool {
    c.qhost_line("node1")
        .is_some_and(|l| l.split_whitespace().nth(6).is_some_and(|load| load != "-"))
}

#[test]
fn execds_are_back_within_three_seconds_of_a_master_restart() {
    // SGE's default load_report_time (40 s): the execd must not wait for its next report.
    let mut c = Cluster::init(&[]);
    c.start_master();
    c.start_execd("node1", "127.0.0.1", Some(&c.token()), None);
    c.wait_host_reporting("node1");
    for round in 0..2 {
        c.stop_master(Signal::SIGKILL);
        c.start_master();
        let answering = Instant::now();
        wait_until(
            "node1 to report to the restarted master",
            Duration::from_secs(30),
            || reporting(&c),
        );
        let took = answering.elapsed();
        eprintln!("round {round}: node1 back {took:?} after the master answered");
        assert!(
            took < Duration::from_secs(3),
            "node1 came back {took:?} after the master restarted"
        );
    }
}

#[test]
fn qsub_sync_waits_on_across_a_master_restart() {
    let mut c = Cluster::one_host();
    // Jobs of the user running the test (root in CI).
    let global = c.dir.path().join("global");
    std::fs::write(&global, "min_uid 0\nmin_gid 0\n").unwrap();
    assert_eq!(c.qconf(&["-Mconf", global.to_str().unwrap()]).code, 0);
    let qsub = std::process::Command::new(gantry_tests::bin("qsub"))
        .args([
            "-sync", "y", "-wd", "/tmp", "-N", "syncer", "-b", "y", "sleep", "4",
        ])
        .env("GANTRY_HOME", c.home())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the job to run", Duration::from_secs(20), || {
        c.client("qstat", &["-u", "*"]).stdout.contains(" r ")
    });
    c.stop_master(Signal::SIGKILL);
    c.start_master();
    let out = qsub.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout} {stderr}");
    assert_eq!(
        stdout,
        "Your job 1 (\"syncer\") has been submitted\nJob 1 exited with exit code 0.\n"
    );
    assert!(
        stderr.contains("lost the connection to the master while waiting for job 1; waiting for it to come back"),
        "{stderr}"
    );
}
