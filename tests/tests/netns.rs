//! The master and two execds on three hosts: separate network namespaces joined by a
//! bridge, each with its own address. Needs root (CI runs as root).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use gantry_tests::{is_root, skip_loudly, wait_until, Cluster, Netns};
use nix::sys::signal::Signal;

#[test]
fn master_and_two_execds_in_network_namespaces() {
    if !is_root() {
        skip_loudly(
            "master_and_two_execds_in_network_namespaces",
            "network namespaces need root",
        );
        return;
    }
    let net = Netns::create(3);
    let mut c = Cluster::in_namespaces(&net, "0:0:3");
    let master_ip = net.addrs[0].clone();

    // Both hosts, with the real hardware's num_proc and mem_total.
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    for host in ["node1", "node2"] {
        let line = c.qhost_line(host).unwrap();
        let f: Vec<&str> = line.split_whitespace().collect();
        assert!(f[2].parse::<usize>().unwrap() >= ncpu, "{line}");
        assert!(f[7].ends_with('G') || f[7].ends_with('M'), "{line}");
    }
    // The master saw them join from their own addresses.
    let log = c.master_log();
    assert!(log.contains(&format!("peer={}:", net.addrs[1])), "{log}");
    assert!(log.contains(&format!("peer={}:", net.addrs[2])), "{log}");
    assert_eq!(c.qconf(&["-sel"]).stdout, "node1\nnode2\n");

    // Kill node1's execd: it becomes unreachable, node2 does not.
    c.execds[0].stop(Signal::SIGKILL);
    let state = |c: &Cluster, host: &str| -> Option<String> {
        let out = c.qhost(&["-q", "-h", host]).stdout;
        out.lines()
            .find(|l| l.starts_with("   all.q"))
            .map(|l| l[44..].to_string())
    };
    wait_until(
        "node1 to become unreachable",
        Duration::from_secs(20),
        || state(&c, "node1").as_deref() == Some("u"),
    );
    assert_eq!(state(&c, "node2").as_deref(), Some(""));
    assert_eq!(
        c.qhost_line("node1").unwrap().split_whitespace().nth(6),
        Some("-")
    );

    // Restart it (no token: it keeps its certificate): it returns.
    c.start_execd("node1", &master_ip, None, Some(&net.names[1]));
    wait_until("node1 to return", Duration::from_secs(20), || {
        state(&c, "node1").as_deref() == Some("")
    });

    // Restart the master: configuration and hosts are intact, both execds reconnect.
    let conf_before = c.qconf(&["-sconf"]).stdout;
    let queue_before = c.qconf(&["-sq", "all.q"]).stdout;
    c.stop_master(Signal::SIGKILL);
    c.start_master();
    assert_eq!(c.qconf(&["-sconf"]).stdout, conf_before);
    assert_eq!(c.qconf(&["-sq", "all.q"]).stdout, queue_before);
    assert_eq!(c.qconf(&["-sel"]).stdout, "node1\nnode2\n");
    c.wait_host_reporting("node1");
    c.wait_host_reporting("node2");
}

#[test]
fn completion_during_a_network_cut_arrives_exactly_once() {
    if !is_root() {
        skip_loudly(
            "completion_during_a_network_cut_arrives_exactly_once",
            "network namespaces need root",
        );
        return;
    }
    gantry_tests::ensure_user("gtuser1");
    let net = Netns::create(2);
    let mut c = Cluster::init(&[]);
    c.master_netns = Some(net.names[0].clone());
    c.start_master();
    c.fast_reports("0:0:3");
    let token = c.token();
    c.start_execd("node1", &net.addrs[0], Some(&token), Some(&net.names[1]));
    c.wait_host_reporting("node1");
    let out = c.as_user(
        "gtuser1",
        "qsub",
        &["-terse", "-wd", "/tmp", "-b", "y", "sleep", "2"],
    );
    let id = out.stdout.trim().to_string();
    wait_until("the job to run", Duration::from_secs(10), || {
        c.client("qstat", &["-u", "*"]).stdout.contains(" r ")
    });
    net.set_link(1, false);
    // The job ends during the cut; the master gives the host up as unreachable.
    wait_until(
        "node1 to become unreachable",
        Duration::from_secs(20),
        || c.master_log().contains("execd unreachable"),
    );
    assert_ne!(
        c.client("qacct", &["-j", &id]).code,
        0,
        "no completion can arrive during the cut"
    );
    std::thread::sleep(Duration::from_secs(2));
    net.set_link(1, true);
    wait_until("the completion to arrive", Duration::from_secs(60), || {
        c.client("qacct", &["-j", &id]).code == 0
    });
    c.wait_host_reporting("node1");
    let acct = c.client("qacct", &["-j", &id]).stdout;
    assert_eq!(acct.matches("jobnumber").count(), 1, "{acct}");
    assert!(acct.contains("exit_status  0 "), "{acct}");
}
