//! A host that never comes back: `reschedule_unknown` as SGE has it. Its rerunnable
//! jobs are accounted once and run elsewhere, the others stay until
//! `ENABLE_RESCHEDULE_KILL` ends them; the host, back after all, is told to kill what it
//! still ran, and its late reports count nothing twice.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use gantry_tests::{ensure_user, need_root, wait_until, Cluster};
use nix::sys::signal::Signal;

const LOCAL: &str = "127.0.0.1";

/// The queue instance a job's first `qstat` row names, with its state.
fn row(c: &Cluster, id: &str) -> (String, String) {
    let out = c.client("qstat", &["-u", "*"]).stdout;
    out.lines()
        .find(|l| l.split_whitespace().next() == Some(id))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[4].to_string(),
                f.get(7).copied().unwrap_or("").to_string(),
            )
        })
        .unwrap_or_default()
}

/// The accounting records of a job: (failed line, hostname) each.
fn records(c: &Cluster, id: &str) -> Vec<(String, String)> {
    let text = c.client("qacct", &["-j", id]).stdout;
    text.split("==============================================================\n")
        .filter(|r| !r.trim().is_empty())
        .map(|r| {
            let line = |key: &str| {
                r.lines()
                    .find(|l| l.starts_with(key))
                    .map(|l| l[13..].trim().to_string())
                    .unwrap_or_default()
            };
            (line("failed "), line("hostname "))
        })
        .collect()
}

/// Is there an entry named `name` under `dir`, at most `depth` levels down?
fn has_entry(dir: &std::path::Path, name: &str, depth: u32) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        e.file_name().to_string_lossy() == name
            || (depth > 0
                && e.file_type().is_ok_and(|t| t.is_dir())
                && has_entry(&e.path(), name, depth - 1))
    })
}

#[test]
fn jobs_of_a_host_gone_for_good_are_rescheduled_after_reschedule_unknown() {
    if !need_root("jobs_of_a_host_gone_for_good_are_rescheduled_after_reschedule_unknown") {
        return;
    }
    ensure_user("gtuser1");
    let mut c = Cluster::init(&[]);
    c.start_master();
    let token = c.token();
    c.start_execd("node1", LOCAL, Some(&token), None);
    c.start_execd("node2", LOCAL, Some(&token), None);
    c.wait_host_reporting("node1");
    c.wait_host_reporting("node2");
    let conf = c.dir.path().join("global");
    std::fs::write(
        &conf,
        "load_report_time 0:0:1\nmax_unheard 0:0:3\nreschedule_unknown 0:0:30\n",
    )
    .unwrap();
    assert_eq!(c.qconf(&["-Mconf", conf.to_str().unwrap()]).code, 0);
    for args in [
        &["-rattr", "queue", "load_thresholds", "NONE", "all.q"][..],
        &["-rattr", "queue", "slots", "2", "all.q"],
    ] {
        assert_eq!(c.qconf(args).code, 0, "{args:?}");
    }
    // Both jobs on node1: node2's instance disabled until they run.
    assert_eq!(c.client("qmod", &["-d", "all.q@node2"]).code, 0);
    let again = c.submit("gtuser1", &["-r", "y", "-b", "y", "sleep", "300"]);
    let stays = c.submit("gtuser1", &["-r", "n", "-b", "y", "sleep", "300"]);
    wait_until("both jobs to run on node1", Duration::from_secs(30), || {
        row(&c, &again) == ("r".into(), "all.q@node1".into())
            && row(&c, &stays) == ("r".into(), "all.q@node1".into())
    });
    assert_eq!(c.client("qmod", &["-e", "all.q@node2"]).code, 0);

    // node1 goes for good (its jobs' processes go on, unheard of).
    c.execds[0].stop(Signal::SIGKILL);
    let killed = Instant::now();
    wait_until(
        "the rerunnable job to run on node2",
        Duration::from_secs(60),
        || row(&c, &again) == ("Rr".into(), "all.q@node2".into()),
    );
    let took = killed.elapsed();
    assert!(took < Duration::from_secs(40), "rescheduled after {took:?}");
    assert!(
        took > Duration::from_secs(30),
        "rescheduled after only {took:?}"
    );
    // Its run on node1 is accounted once, as ended for rescheduling.
    assert_eq!(
        records(&c, &again),
        [("25  : rescheduling".to_string(), "node1".to_string())]
    );
    let log = c.master_log();
    assert!(
        log.contains("host unknown for reschedule_unknown past max_unheard"),
        "{log}"
    );
    // The job that may not run again stays as SGE leaves it, on the unknown host.
    assert_eq!(row(&c, &stays), ("r".into(), "all.q@node1".into()));
    assert!(records(&c, &stays).is_empty());

    // ENABLE_RESCHEDULE_KILL: it is ended and accounted, once.
    std::fs::write(
        &conf,
        "load_report_time 0:0:1\nmax_unheard 0:0:3\nreschedule_unknown 0:0:30\nqmaster_params ENABLE_RESCHEDULE_KILL=1\n",
    )
    .unwrap();
    assert_eq!(c.qconf(&["-Mconf", conf.to_str().unwrap()]).code, 0);
    wait_until("the other job to end", Duration::from_secs(20), || {
        row(&c, &stays).0.is_empty()
    });
    let ended = records(&c, &stays);
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert_eq!(ended[0].1, "node1");

    // node1 comes back: it is told to kill what it still runs of both, and what it
    // reports of them is not accounted again.
    c.start_execd("node1", LOCAL, None, None);
    c.wait_host_reporting("node1");
    wait_until(
        "node1 to kill both old runs",
        Duration::from_secs(30),
        || {
            let log = c.master_log();
            log.matches("killing a task rescheduled while its execd was away")
                .count()
                + log
                    .matches("killing a task the master no longer has")
                    .count()
                >= 2
        },
    );
    // Its reports of them acknowledged: the execd forgets their directories.
    let home = c.execd_home("node1");
    wait_until(
        "node1's reports of the old runs acknowledged",
        Duration::from_secs(30),
        || {
            !has_entry(&home, &format!("{again}.1"), 3)
                && !has_entry(&home, &format!("{stays}.1"), 3)
        },
    );
    assert_eq!(records(&c, &again).len(), 1);
    assert_eq!(records(&c, &stays).len(), 1);
    assert_eq!(row(&c, &again), ("Rr".into(), "all.q@node2".into()));
    assert_eq!(c.client("qdel", &[&again]).code, 0);
}

/// A host's own configuration (`qconf -Aconf HOST`) sets its `reschedule_unknown`: here
/// the global one never reschedules, node1's does after 10 s.
#[test]
fn a_hosts_own_reschedule_unknown_overrides_the_global_one() {
    if !need_root("a_hosts_own_reschedule_unknown_overrides_the_global_one") {
        return;
    }
    ensure_user("gtuser1");
    let mut c = Cluster::init(&[]);
    c.start_master();
    let token = c.token();
    c.start_execd("node1", LOCAL, Some(&token), None);
    c.start_execd("node2", LOCAL, Some(&token), None);
    c.wait_host_reporting("node1");
    c.wait_host_reporting("node2");
    let conf = c.dir.path().join("global");
    std::fs::write(
        &conf,
        "load_report_time 0:0:1\nmax_unheard 0:0:3\nreschedule_unknown 0:0:0\n",
    )
    .unwrap();
    assert_eq!(c.qconf(&["-Mconf", conf.to_str().unwrap()]).code, 0);
    let local = c.dir.path().join("node1");
    std::fs::write(&local, "reschedule_unknown 0:0:10\n").unwrap();
    let out = c.qconf(&["-Aconf", local.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stderr,
        "root@head added \"node1\" to configuration list\n"
    );
    let shown = c.qconf(&["-sconf", "node1"]);
    assert_eq!(
        shown.stdout, "#node1:\nreschedule_unknown           0:0:10\n\n",
        "{shown:?}"
    );
    assert_eq!(c.qconf(&["-sconfl"]).stdout, "node1\n");
    for args in [
        &["-rattr", "queue", "load_thresholds", "NONE", "all.q"][..],
        &["-rattr", "queue", "slots", "2", "all.q"],
    ] {
        assert_eq!(c.qconf(args).code, 0, "{args:?}");
    }
    assert_eq!(c.client("qmod", &["-d", "all.q@node2"]).code, 0);
    let again = c.submit("gtuser1", &["-r", "y", "-b", "y", "sleep", "300"]);
    wait_until("the job to run on node1", Duration::from_secs(30), || {
        row(&c, &again) == ("r".into(), "all.q@node1".into())
    });
    assert_eq!(c.client("qmod", &["-e", "all.q@node2"]).code, 0);
    c.execds[0].stop(Signal::SIGKILL);
    let killed = Instant::now();
    wait_until(
        "the rerunnable job to run on node2",
        Duration::from_secs(60),
        || row(&c, &again) == ("Rr".into(), "all.q@node2".into()),
    );
    let took = killed.elapsed();
    assert!(
        took > Duration::from_secs(10) && took < Duration::from_secs(25),
        "rescheduled after {took:?}"
    );
    assert_eq!(
        records(&c, &again),
        [("25  : rescheduling".to_string(), "node1".to_string())]
    );
    // Without its own configuration, the host goes by the global one again.
    assert_eq!(c.qconf(&["-dconf", "node1"]).code, 0);
    assert_ne!(c.qconf(&["-sconf", "node1"]).code, 0);
    assert_eq!(c.client("qdel", &[&again]).code, 0);
}
