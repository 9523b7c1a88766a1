//! A standby master (docs/admin/standby.md): two masters on two hosts (network
//! namespaces) share the cell directory; the execds know both (`--master a,b`). Killed
//! during a burst of submissions, the active master's standby serves within 15 s, every
//! acknowledged job is there and runs once; a master started beside an active one
//! changes nothing, and one whose claim another took stops at once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use gantry_tests::{bin, need_root, run_to_exit, wait_until, Cluster, Daemon, Netns};
use nix::sys::signal::Signal;

/// A master on `c`'s cell in namespace `ns`, logging to `log`.
fn master_in(c: &Cluster, ns: Option<&str>, log: &str, standby: bool) -> Daemon {
    let mut cmd = match ns {
        Some(ns) => {
            let mut cmd = Command::new("ip");
            cmd.args(["netns", "exec", ns]).arg(bin("gantry-master"));
            cmd
        }
        None => Command::new(bin("gantry-master")),
    };
    cmd.arg("run").arg("--home").arg(c.home());
    if standby {
        cmd.arg("--standby");
    }
    Daemon::spawn("gantry-master", cmd, c.dir.path().join(log))
}

fn answers(c: &Cluster) -> bool {
    c.qconf(&["-sm"]).code == 0
}

fn submit(c: &Cluster, marks: &Path) -> Option<u64> {
    let out = c.submit_marked(marks, "1");
    (out.code == 0)
        .then(|| out.stdout.trim().parse().ok())
        .flatten()
}

#[test]
fn the_standby_takes_over_from_a_killed_master_three_times_with_nothing_lost() {
    if !need_root("standby") {
        return;
    }
    let net = Netns::create(4);
    let mut c = Cluster::init(&[]);
    c.master_netns = Some(net.names[0].clone());
    c.start_master();
    c.fast_reports("0:0:30");
    let global = c.dir.path().join("global");
    // One file: -Mconf replaces the whole configuration.
    std::fs::write(
        &global,
        "load_report_time 0:0:1\nmax_unheard 0:0:30\nmin_uid 0\nmin_gid 0\n",
    )
    .unwrap();
    assert_eq!(c.qconf(&["-Mconf", global.to_str().unwrap()]).code, 0);
    let masters = format!(
        "{}:{port},{}:{port}",
        net.addrs[0],
        net.addrs[3],
        port = c.port
    );
    let token = c.token();
    c.start_execd_with_masters("node1", &masters, Some(&token), Some(&net.names[1]));
    c.start_execd_with_masters("node2", &masters, Some(&token), Some(&net.names[2]));
    c.wait_host_reporting("node1");
    c.wait_host_reporting("node2");
    // The masters' namespaces: [active, standby].
    let mut spaces = [net.names[0].clone(), net.names[3].clone()];
    let mut active = c.master.take().unwrap();
    let mut standby = master_in(&c, Some(&spaces[1]), "master-1.log", true);
    let marks_dir = tempfile::tempdir().unwrap();
    let marks = marks_dir.path().to_path_buf();
    let mut ledger = BTreeSet::new();
    for round in 0..3 {
        let log = standby.log.clone();
        wait_until(
            "the standby to wait for the active master",
            Duration::from_secs(20),
            || {
                std::fs::read_to_string(&log)
                    .unwrap_or_default()
                    .contains("taking over when it dies")
            },
        );
        // A burst, the active master killed in the middle of it.
        for _ in 0..15 {
            ledger.extend(submit(&c, &marks));
        }
        active.stop(Signal::SIGKILL);
        active.print_log_on_panic = false;
        let killed = Instant::now();
        let mut served = None;
        while killed.elapsed() < Duration::from_secs(30) {
            if let Some(id) = submit(&c, &marks) {
                ledger.insert(id);
                served.get_or_insert(killed.elapsed());
                if ledger.len() % 15 == 0 {
                    break;
                }
            } else {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let served = served.expect("the standby never served");
        eprintln!(
            "round {round}: the standby served {:.1} s after the kill",
            served.as_secs_f64()
        );
        assert!(
            served < Duration::from_secs(15),
            "round {round}: {served:?}"
        );
        // The one killed comes back as the standby.
        spaces.swap(0, 1);
        active = standby;
        standby = master_in(
            &c,
            Some(&spaces[1]),
            &format!("master-{}.log", round + 2),
            true,
        );
    }
    // Every acknowledged job runs once, on execds that followed the masters, and is
    // accounted once.
    c.master = Some(active);
    c.wait_host_reporting("node1");
    c.wait_host_reporting("node2");
    wait_until("every job to end", Duration::from_secs(240), || {
        let out = c.client("qstat", &["-u", "*"]);
        out.code == 0 && out.stdout.trim().is_empty()
    });
    let mut accounted: BTreeMap<u64, usize> = BTreeMap::new();
    for line in c.client("qacct", &["-j"]).stdout.lines() {
        if let Some(id) = line.strip_prefix("jobnumber") {
            *accounted.entry(id.trim().parse().unwrap()).or_default() += 1;
        }
    }
    for id in &ledger {
        let runs = std::fs::read_to_string(marks.join(id.to_string()))
            .map(|s| s.lines().count())
            .unwrap_or(0);
        assert_eq!(runs, 1, "job {id} ran {runs} times");
        assert_eq!(accounted.get(id), Some(&1), "job {id}'s records");
    }
    assert!(ledger.len() >= 45, "{} jobs acknowledged", ledger.len());
    drop(standby);
}

#[test]
fn a_second_master_changes_nothing_and_one_whose_claim_was_taken_stops() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    let global = c.dir.path().join("global");
    std::fs::write(&global, "min_uid 0\nmin_gid 0\n").unwrap();
    assert_eq!(c.qconf(&["-Mconf", global.to_str().unwrap()]).code, 0);
    let out = c.client("qsub", &["-h", "-terse", "-b", "y", "true"]);
    assert_eq!(out.code, 0, "{out:?}");
    let before = c.client("qstat", &["-u", "*"]).stdout;
    // Started beside the active one: refused, naming it.
    let mut cmd = Command::new(bin("gantry-master"));
    cmd.args(["run", "--home"]).arg(c.home());
    let (code, text) = run_to_exit(cmd, Duration::from_secs(20));
    assert_ne!(code, 0, "{text}");
    assert!(
        text.contains("another master is active on this cell (host=")
            && text.contains("start this one with --standby"),
        "{text}"
    );
    assert!(answers(&c));
    assert_eq!(c.client("qstat", &["-u", "*"]).stdout, before);
    // A standby beside a master shut down on purpose does not take over.
    let mut standby = master_in(&c, None, "standby.log", true);
    let log = standby.log.clone();
    wait_until("the standby to wait", Duration::from_secs(20), || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("taking over when it dies")
    });
    c.stop_master(Signal::SIGTERM);
    wait_until(
        "the standby to see the shutdown",
        Duration::from_secs(20),
        || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains("shut down on purpose")
        },
    );
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        !answers(&c),
        "the standby took over from a master shut down on purpose"
    );
    // A master started again serves; the standby waits for it again.
    c.start_master();
    assert_eq!(c.client("qstat", &["-u", "*"]).stdout, before);
    // Fencing: a master whose claim names another (as after a lost lease) stops at once.
    std::fs::write(
        c.home().join("master.active"),
        "host=elsewhere pid=1 since=0 token=0000000000000000\n",
    )
    .unwrap();
    let mut master = c.master.take().unwrap();
    let status = master.wait_exit(Duration::from_secs(5));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(3),
        "{}",
        master.log_text()
    );
    assert!(master
        .log_text()
        .contains("another master took over this cell"));
    master.print_log_on_panic = false;
    standby.stop(Signal::SIGKILL);
}
