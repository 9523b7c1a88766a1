//! A job that leaves its process group, written as the attack: its first process joins
//! another process group of its session (`setpgid(0, the shepherd's)`) and its child
//! makes a session of its own. Every signal Gantry sends the job must still reach both:
//! its `h_rt`, a suspension (`qmod -sj`: the output stops growing), `qdel` and `qdel -f`.
//! Run on both kinds of host: an execd started on the host, which has a writable cgroup
//! v2 hierarchy here (each task gets a control group), and one started with
//! `ip netns exec`, which remounts `/sys` and finds none (the shepherd's process tree
//! is all it has). Needs root (test users, network namespaces); CI runs as root.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gantry_tests::{ensure_user, need_root, wait_until, Cluster, Netns};

/// The escaper, run with `-S /usr/bin/perl`: it forks a child that makes a session of
/// its own, moves itself into its parent's (the shepherd's) process group, and both
/// print a line every 0.1 s.
/// It names itself `MARKER` (its command line), which the test looks for.
const ESCAPER: &str = r#"use POSIX ();
$0 = "MARKER";
$| = 1;
my $child = fork();
die "fork: $!" unless defined $child;
if ($child == 0) {
    POSIX::setsid() or die "setsid: $!";
    while (1) { print "child\n"; select(undef, undef, undef, 0.1); }
}
my $old = getpgrp(0);
setpgrp(0, getpgrp(getppid())) or die "setpgrp: $!";
print "escaped from $old to ", getpgrp(0), "\n";
while (1) { print "tick\n"; select(undef, undef, undef, 0.1); }
"#;

/// The pids and states of the live processes whose command line is `marker`.
fn processes_running(marker: &str) -> Vec<(String, char)> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.parse::<u32>().is_err() {
            continue;
        }
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).trim_end_matches('\0') != marker {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let Some(state) = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next())
            .and_then(|s| s.chars().next())
        else {
            continue;
        };
        if state != 'Z' {
            found.push((name, state));
        }
    }
    found
}

fn lines(file: &Path) -> usize {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .count()
}

fn qacct_field(acct: &str, field: &str) -> String {
    acct.lines()
        .find(|l| l.split_whitespace().next() == Some(field))
        .map(|l| l[field.len()..].trim().to_string())
        .unwrap_or_default()
}

/// One escaper job: its script and output file, in the owner's home.
struct Escaper {
    id: String,
    marker: String,
    script: PathBuf,
    out: PathBuf,
}

impl Escaper {
    fn submit(c: &Cluster, home: &str, label: &str, extra: &[&str]) -> Escaper {
        let tag = format!("{label}-{}-{}", std::process::id(), c.port);
        let script = PathBuf::from(format!("{home}/escaper-{tag}.pl"));
        let out = PathBuf::from(format!("{home}/escaper-{tag}.out"));
        let marker = format!("gantry-escaper-{tag}");
        std::fs::write(&script, ESCAPER.replace("MARKER", &marker)).unwrap();
        let _ = std::fs::remove_file(&out);
        let mut args = vec![
            "-S",
            "/usr/bin/perl",
            "-wd",
            home,
            "-j",
            "y",
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        args.push(script.to_str().unwrap());
        let id = c.submit("gtuser1", &args);
        assert!(id.parse::<u64>().is_ok(), "qsub: {id}");
        let e = Escaper {
            id,
            marker,
            script,
            out,
        };
        wait_until(
            &format!("job {} to leave its process group", e.id),
            Duration::from_secs(30),
            || {
                let text = std::fs::read_to_string(&e.out).unwrap_or_default();
                text.contains("escaped from") && text.contains("child")
            },
        );
        let text = std::fs::read_to_string(&e.out).unwrap();
        let escaped = text.lines().find(|l| l.starts_with("escaped")).unwrap();
        let f: Vec<&str> = escaped.split_whitespace().collect();
        assert_ne!(f[2], f[4], "the job did not leave its group: {escaped}");
        assert_eq!(processes_running(&e.marker).len(), 2, "{text}");
        e
    }

    fn wait_gone(&self, c: &Cluster, what: &str) {
        wait_until(
            &format!("every process of job {} to end ({what})", self.id),
            Duration::from_secs(30),
            || processes_running(&self.marker).is_empty(),
        );
        wait_until(
            &format!("job {} to be accounted", self.id),
            Duration::from_secs(30),
            || c.client("qacct", &["-j", &self.id]).code == 0,
        );
    }
}

impl Drop for Escaper {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.script);
        let _ = std::fs::remove_file(&self.out);
    }
}

/// The four attacks on a running cluster whose execd `node1` runs the jobs.
fn escapers_are_caught(c: &Cluster, home: &str) {
    assert_eq!(c.qconf(&["-mattr", "queue", "slots", "4", "all.q"]).code, 0);
    // Killed at its h_rt, and accounted as SGE accounts it.
    let started = Instant::now();
    let h_rt = Escaper::submit(c, home, "hrt", &["-l", "h_rt=0:0:4"]);
    h_rt.wait_gone(c, "h_rt");
    assert!(started.elapsed() >= Duration::from_secs(4));
    let acct = c.client("qacct", &["-j", &h_rt.id]).stdout;
    assert!(qacct_field(&acct, "failed").starts_with("37"), "{acct}");

    // Suspended: every process stops and the output stops growing; resumed, it grows.
    let suspended = Escaper::submit(c, home, "sj", &[]);
    let out = c.as_user("gtuser1", "qmod", &["-sj", &suspended.id]);
    assert_eq!(out.code, 0, "{out:?}");
    wait_until(
        "every process of the suspended job to stop",
        Duration::from_secs(10),
        || {
            let p = processes_running(&suspended.marker);
            p.len() == 2 && p.iter().all(|(_, s)| *s == 'T')
        },
    );
    let frozen_at = lines(&suspended.out);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        lines(&suspended.out),
        frozen_at,
        "the suspended job went on writing"
    );
    assert_eq!(
        c.as_user("gtuser1", "qmod", &["-usj", &suspended.id]).code,
        0
    );
    wait_until(
        "the resumed job to write again",
        Duration::from_secs(10),
        || lines(&suspended.out) > frozen_at + 10,
    );
    // Deleted: nothing of it is left.
    assert_eq!(c.as_user("gtuser1", "qdel", &[&suspended.id]).code, 0);
    suspended.wait_gone(c, "qdel");

    // Deleted by force: its slot is freed at once, and its processes go with it.
    let forced = Escaper::submit(c, home, "force", &[]);
    let out = c.as_user("gtuser1", "qdel", &["-f", &forced.id]);
    assert_eq!(out.code, 0, "{out:?}");
    forced.wait_gone(c, "qdel -f");
    let acct = c.client("qacct", &["-j", &forced.id]).stdout;
    assert!(acct.contains("exit_status  137"), "{acct}");
}

fn execd_log(c: &Cluster) -> String {
    std::fs::read_to_string(c.dir.path().join("execd-node1.log")).unwrap_or_default()
}

#[test]
fn a_job_leaving_its_process_group_is_caught_on_a_host_with_a_control_group() {
    if !need_root("a_job_leaving_its_process_group_is_caught_on_a_host_with_a_control_group") {
        return;
    }
    let (_, home) = ensure_user("gtuser1");
    let c = Cluster::one_host();
    let log = execd_log(&c);
    if !log.contains("each job task gets a control group") {
        // Still the attack, on the process tree alone: say loudly which path ran.
        eprintln!(
            "NOTE: this host has no writable cgroup v2 hierarchy: the control-group path \
             was NOT tested here, only the process tree ({log})"
        );
    }
    escapers_are_caught(&c, &home);
}

#[test]
fn a_job_leaving_its_process_group_is_caught_on_a_host_without_a_control_group() {
    if !need_root("a_job_leaving_its_process_group_is_caught_on_a_host_without_a_control_group") {
        return;
    }
    let (_, home) = ensure_user("gtuser1");
    let net = Netns::create(2);
    let mut c = Cluster::init(&[]);
    c.master_netns = Some(net.names[0].clone());
    c.start_master();
    c.fast_reports("0:0:5");
    let token = c.token();
    c.start_execd("node1", &net.addrs[0], Some(&token), Some(&net.names[1]));
    c.wait_host_reporting("node1");
    let log = execd_log(&c);
    assert!(
        log.contains("no writable cgroup v2 hierarchy"),
        "the execd in a network namespace found a control group: {log}"
    );
    escapers_are_caught(&c, &home);
}
