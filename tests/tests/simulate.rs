//! Simulated execution hosts (`gantry-execd simulate`) against a real master: they join
//! with the token, report the configured values, run jobs for their first argument's
//! seconds, and each completion is accounted exactly once across a restart of the
//! simulator and of the master.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::Duration;

use gantry_tests::{bin, ensure_user, need_root, wait_until, Cluster, Daemon};

/// Start `hosts` simulated hosts of 4 processors and 8 GiB for the cluster.
fn simulator(c: &Cluster, hosts: usize, token: Option<&str>) -> Daemon {
    let mut cmd = Command::new(bin("gantry-execd"));
    cmd.arg("simulate")
        .arg("--home")
        .arg(c.dir.path().join("sim"))
        .args(["--hosts", &hosts.to_string(), "--master"])
        .arg(c.master_addr("127.0.0.1"))
        .args(["--num-proc", "4", "--mem", "8G"]);
    if let Some(t) = token {
        cmd.env("GANTRY_JOIN_TOKEN", t);
    }
    let log = c.dir.path().join("simulator.log");
    Daemon::spawn("gantry-execd simulate", cmd, log)
}

/// The accounting records of a job (`qacct -j`).
fn records(c: &Cluster, job: &str) -> usize {
    c.client("qacct", &["-j", job])
        .stdout
        .lines()
        .filter(|l| l.starts_with("jobnumber"))
        .count()
}

/// The tasks whose report waits in a simulated host's spool (`JOB.TASK`).
fn reports_waiting(c: &Cluster) -> Vec<String> {
    let mut out = Vec::new();
    for host in std::fs::read_dir(c.dir.path().join("sim"))
        .unwrap()
        .flatten()
    {
        let Ok(tasks) = std::fs::read_dir(host.path().join("jobs")) else {
            continue;
        };
        for t in tasks.flatten() {
            if t.path().join("report").exists() {
                out.push(t.file_name().to_string_lossy().into_owned());
            }
        }
    }
    out
}

/// A master reporting every 5 s at most and `hosts` simulated hosts joined and
/// reporting; the job owner `sim_u1` exists.
fn cell_with_simulated_hosts(hosts: usize) -> (Cluster, Daemon) {
    ensure_user("sim_u1");
    let mut c = Cluster::init(&[]);
    c.start_master();
    c.fast_reports("0:0:5");
    let token = c.token();
    let sim = simulator(&c, hosts, Some(&token));
    for n in 1..=hosts {
        c.wait_host_reporting(&format!("sim{n:04}"));
    }
    (c, sim)
}

fn running(c: &Cluster, job: &str) -> bool {
    c.client("qstat", &["-u", "*"])
        .stdout
        .lines()
        .any(|l| l.trim_start().starts_with(&format!("{job} ")) && l.contains(" r "))
}

#[test]
fn simulated_hosts_run_jobs_and_account_each_once_across_restarts() {
    if !need_root("simulated_hosts_run_jobs_and_account_each_once_across_restarts") {
        return;
    }
    let (mut c, mut sim) = cell_with_simulated_hosts(3);
    // They report what they were given: 4 processors, 8 GiB.
    let line = c.qhost_line("sim0002").expect("sim0002 in qhost");
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!((fields[1], fields[2]), ("lx-amd64", "4"), "{line}");
    assert!(line.contains("8.0G"), "{line}");
    assert_eq!(
        c.qconf(&["-rattr", "queue", "load_thresholds", "NONE", "all.q"])
            .code,
        0
    );

    // A job of 2 s ends after 2 s, accounted once, with its host.
    let submit = |secs: &str| {
        c.submit(
            "sim_u1",
            &["-b", "y", "-o", "/dev/null", "-j", "y", "sleep", secs],
        )
    };
    let quick = submit("2");
    wait_until("the 2 s job is accounted", Duration::from_secs(30), || {
        records(&c, &quick) == 1
    });
    let acct = c.client("qacct", &["-j", &quick]).stdout;
    assert!(acct.contains("hostname     sim000"), "{acct}");
    assert!(acct.contains("exit_status  0"), "{acct}");

    // The simulator restarts while a job runs: the job goes on (its host keeps its
    // start on disk) and is accounted once.
    let across_sim = submit("6");
    wait_until("the 6 s job runs", Duration::from_secs(20), || {
        running(&c, &across_sim)
    });
    sim.stop(nix::sys::signal::Signal::SIGTERM);
    let mut sim = simulator(&c, 3, None);
    wait_until(
        "the job is accounted after the simulator's restart",
        Duration::from_secs(40),
        || records(&c, &across_sim) == 1,
    );

    // The master restarts while a job ends: the simulated host keeps the report until
    // the new master acknowledges it.
    let across_master = submit("3");
    wait_until("the 3 s job runs", Duration::from_secs(20), || {
        running(&c, &across_master)
    });
    c.stop_master(nix::sys::signal::Signal::SIGTERM);
    // It ends while the master is away: its report waits in its host's spool.
    let job_dir = format!("{across_master}.1");
    wait_until(
        "the job ends with no master",
        Duration::from_secs(20),
        || reports_waiting(&c).contains(&job_dir),
    );
    c.start_master();
    wait_until(
        "the job is accounted after the master's restart",
        Duration::from_secs(40),
        || records(&c, &across_master) == 1,
    );
    // And stays once: acknowledged, no report is left to repeat.
    wait_until("every report acknowledged", Duration::from_secs(20), || {
        reports_waiting(&c).is_empty()
    });
    for job in [&quick, &across_sim, &across_master] {
        assert_eq!(records(&c, job), 1, "job {job}");
    }
    sim.stop(nix::sys::signal::Signal::SIGTERM);
}

#[test]
fn a_task_whose_start_and_kill_were_lost_ends_when_its_host_returns() {
    if !need_root("a_task_whose_start_and_kill_were_lost_ends_when_its_host_returns") {
        return;
    }
    let (c, mut sim) = cell_with_simulated_hosts(1);
    assert_eq!(
        c.qconf(&["-rattr", "queue", "load_thresholds", "NONE", "all.q"])
            .code,
        0
    );
    // The host hears nothing (stopped): the start order and then the kill wait unread.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(sim.pid()),
        nix::sys::signal::Signal::SIGSTOP,
    )
    .unwrap();
    let job = c.submit(
        "sim_u1",
        &["-b", "y", "-o", "/dev/null", "-j", "y", "sleep", "600"],
    );
    let state = |c: &Cluster| {
        c.client("qstat", &["-u", "*"])
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{job} ")))
            .and_then(|l| l.split_whitespace().nth(4).map(str::to_string))
    };
    wait_until("the job is sent", Duration::from_secs(20), || {
        state(&c).as_deref() == Some("t")
    });
    assert_eq!(c.as_user("sim_u1", "qdel", &[&job]).code, 0);
    wait_until("the job is being deleted", Duration::from_secs(20), || {
        state(&c).as_deref() == Some("dr")
    });
    // The orders die with the process; the host comes back without the task.
    sim.stop(nix::sys::signal::Signal::SIGKILL);
    let mut sim = simulator(&c, 1, None);
    wait_until(
        "the deleted task is ended and accounted",
        Duration::from_secs(30),
        || state(&c).is_none() && records(&c, &job) == 1,
    );
    sim.stop(nix::sys::signal::Signal::SIGTERM);
}
