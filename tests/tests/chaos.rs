//! The chaos suite: a burst of submissions while the master and the execds are killed
//! with SIGKILL and started again at random moments, and the shepherds of running jobs
//! killed too. Afterwards a ledger of every acknowledged submission is checked against
//! what ran and what was accounted: every acknowledged job is there, ran at most once
//! (once, unless its shepherd was killed under it), and is accounted exactly once; and
//! the cluster recovers by itself (every job ends, every host reports again).
//!
//! Every other seed runs the daemons on hosts of their own (network namespaces) and cuts
//! the execds' links too. (Delays and losses with `tc netem` are not among the events:
//! the kernels this runs on, CI's among them, have no netem scheduler.)
//!
//! Each run prints its seed; `GANTRY_CHAOS_SEED=N` replays one (`GANTRY_CHAOS_NETNS=1`:
//! in namespaces),
//! `GANTRY_CHAOS_SEEDS=K` runs K seeds in a row (CI: 2, one of them in namespaces).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use gantry_tests::{wait_until, Cluster, Netns};
use nix::sys::signal::Signal;

/// A small seeded generator (xorshift64*): the same seed, the same run of events.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Debug, Default)]
struct Ledger {
    /// Job ids qsub acknowledged.
    acknowledged: BTreeSet<u64>,
    /// Submissions whose answer was lost (the master died under them): each may or may
    /// not have been taken.
    unanswered: usize,
    /// How many times each job's shepherd was killed: each such run is accounted as
    /// interrupted, and may run again.
    shepherd_killed: BTreeMap<u64, usize>,
    events: Vec<String>,
}

const HOSTS: [&str; 2] = ["node1", "node2"];

/// Where the cluster runs: on loopback, or each daemon on a host of its own (network
/// namespaces: the master in the first, the execds in the next two), whose links the
/// chaos cuts too.
struct Place {
    net: Option<Netns>,
}

impl Place {
    /// The address execds dial, and the namespace of host `i` (0, 1: the execds).
    fn master_ip(&self) -> String {
        self.net
            .as_ref()
            .map_or("127.0.0.1".to_string(), |n| n.addrs[0].clone())
    }

    fn execd_ns(&self, i: usize) -> Option<String> {
        self.net.as_ref().map(|n| n.names[i + 1].clone())
    }
}

fn start_cluster(dir_marks: &std::path::Path, place: &Place) -> Cluster {
    let mut c = Cluster::init(&[]);
    c.master_netns = place.net.as_ref().map(|n| n.names[0].clone());
    c.start_master();
    c.fast_reports("0:0:20");
    let global = c.dir.path().join("global");
    // One file: -Mconf replaces the whole configuration.
    std::fs::write(
        &global,
        "load_report_time 0:0:1\nmax_unheard 0:0:30\nmin_uid 0\nmin_gid 0\n",
    )
    .unwrap();
    assert_eq!(c.qconf(&["-Mconf", global.to_str().unwrap()]).code, 0);
    let token = c.token();
    for (i, h) in HOSTS.iter().enumerate() {
        c.start_execd(
            h,
            &place.master_ip(),
            Some(&token),
            place.execd_ns(i).as_deref(),
        );
    }
    for h in HOSTS {
        c.wait_host_reporting(h);
    }
    std::fs::create_dir_all(dir_marks).unwrap();
    c
}

/// Which execd of `c.execds` is `host`'s (the last started).
fn execd_index(c: &Cluster, host: &str) -> Option<usize> {
    c.execds
        .iter()
        .rposition(|d| d.name == format!("gantry-execd {host}"))
}

/// The shepherds of this cluster's jobs (their task directory, `.../jobs/JOB.TASK`, is
/// in its own), with their job.
fn shepherd_pids(c: &Cluster) -> Vec<(i32, u64)> {
    let out = std::process::Command::new("pgrep")
        .args(["-x", "gantry-shepherd"])
        .output()
        .unwrap();
    let ours = c.dir.path().to_string_lossy().into_owned();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse::<i32>().ok())
        .filter_map(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).into_owned();
            if !cmdline.contains(&ours) {
                return None;
            }
            let dir = cmdline.split('\0').rfind(|a| !a.is_empty())?;
            let task = dir.rsplit('/').next()?;
            Some((pid, task.split('.').next()?.parse().ok()?))
        })
        .collect()
}

fn submit(c: &Cluster, marks: &std::path::Path, ledger: &mut Ledger, rng: &mut Rng) {
    // Each run of a job leaves a mark: how many times it started.
    let out = c.submit_marked(marks, &format!("0.{}", 1 + rng.below(9)));
    match (out.code, out.stdout.trim().parse::<u64>()) {
        (0, Ok(id)) => {
            ledger.acknowledged.insert(id);
        }
        // Refused before it was sent (no master to connect to): not taken.
        _ if out.stderr.contains("cannot reach Gantry") => {}
        _ => ledger.unanswered += 1,
    }
}

fn chaos(seed: u64, place: &Place) {
    let (at, env) = match place.net.is_some() {
        true => (" in network namespaces", " GANTRY_CHAOS_NETNS=1"),
        false => ("", ""),
    };
    eprintln!("chaos seed {seed}{at} (replay: GANTRY_CHAOS_SEED={seed}{env})");
    let mut rng = Rng(seed.max(1));
    let marks_dir = tempfile::tempdir().unwrap();
    let marks = marks_dir.path().join("marks");
    let mut c = start_cluster(&marks, place);
    let mut ledger = Ledger::default();
    let token = c.token();
    let end = Instant::now() + Duration::from_secs(25);
    while Instant::now() < end {
        match rng.below(20) {
            // Mostly submissions, a few at a time.
            0..=13 => {
                for _ in 0..1 + rng.below(4) {
                    submit(&c, &marks, &mut ledger, &mut rng);
                }
            }
            // The master killed, back at once or after a while.
            14 | 15 => {
                ledger.events.push("kill -9 master".into());
                c.stop_master(Signal::SIGKILL);
                std::thread::sleep(Duration::from_millis(rng.below(1500)));
                c.start_master();
            }
            // An execd killed (its jobs go on), back after a while.
            16 => {
                let n = rng.below(2) as usize;
                let host = HOSTS[n];
                if let Some(i) = execd_index(&c, host) {
                    ledger.events.push(format!("kill -9 execd {host}"));
                    let mut d = c.execds.remove(i);
                    d.stop(Signal::SIGKILL);
                    d.print_log_on_panic = false;
                    std::thread::sleep(Duration::from_millis(rng.below(3000)));
                    let ns = place.execd_ns(n);
                    c.start_execd(host, &place.master_ip(), Some(&token), ns.as_deref());
                }
            }
            // An execd's host cut off the network for a while (in namespaces; on
            // loopback, its execd killed instead).
            17 => {
                let n = rng.below(2) as usize;
                match &place.net {
                    Some(net) => {
                        let ms = 500 + rng.below(4000);
                        ledger
                            .events
                            .push(format!("link of {} cut for {ms} ms", HOSTS[n]));
                        net.set_link(n + 1, false);
                        std::thread::sleep(Duration::from_millis(ms));
                        net.set_link(n + 1, true);
                    }
                    None => {
                        if let Some(i) = execd_index(&c, HOSTS[n]) {
                            ledger.events.push(format!("kill -9 execd {}", HOSTS[n]));
                            let mut d = c.execds.remove(i);
                            d.stop(Signal::SIGKILL);
                            d.print_log_on_panic = false;
                            c.start_execd(HOSTS[n], "127.0.0.1", Some(&token), None);
                        }
                    }
                }
            }
            // A shepherd killed under its job.
            18 => {
                let pids = shepherd_pids(&c);
                if !pids.is_empty() {
                    let (pid, job) = pids[rng.below(pids.len() as u64) as usize];
                    ledger
                        .events
                        .push(format!("kill -9 shepherd {pid} (job {job})"));
                    let _ =
                        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
                    *ledger.shepherd_killed.entry(job).or_default() += 1;
                }
            }
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    }
    eprintln!(
        "seed {seed}: {} jobs acknowledged, {} unanswered, events: {}",
        ledger.acknowledged.len(),
        ledger.unanswered,
        ledger.events.join(", ")
    );
    // The cluster recovers by itself: every host reports, every job ends.
    for h in HOSTS {
        c.wait_host_reporting(h);
    }
    wait_until(
        &format!("seed {seed}: every job to end"),
        Duration::from_secs(180),
        || {
            let out = c.client("qstat", &["-u", "*"]);
            out.code == 0 && out.stdout.trim().is_empty()
        },
    );
    // What ran and what was accounted: every acknowledged job once, and accounted once;
    // a job whose shepherd was killed has one more record (the interrupted run) and
    // maybe one more run for each kill.
    let mut runs: BTreeMap<u64, usize> = BTreeMap::new();
    for entry in std::fs::read_dir(&marks).unwrap() {
        let entry = entry.unwrap();
        let id: u64 = entry.file_name().to_str().unwrap().parse().unwrap();
        let n = std::fs::read_to_string(entry.path())
            .unwrap()
            .lines()
            .count();
        runs.insert(id, n);
    }
    let acct = c.client("qacct", &["-j"]);
    assert_eq!(acct.code, 0, "seed {seed}: {acct:?}");
    let mut records: BTreeMap<u64, usize> = BTreeMap::new();
    for line in acct.stdout.lines() {
        if let Some(id) = line.strip_prefix("jobnumber") {
            *records.entry(id.trim().parse().unwrap()).or_default() += 1;
        }
    }
    for id in &ledger.acknowledged {
        let accounted = records.get(id).copied().unwrap_or(0);
        let ran = runs.get(id).copied().unwrap_or(0);
        let kills = ledger.shepherd_killed.get(id).copied().unwrap_or(0);
        let fine = match kills {
            0 => accounted == 1 && ran == 1,
            k => (1..=k + 1).contains(&accounted) && ran <= k + 1,
        };
        if !fine {
            let mut lines = Vec::new();
            for log in ["master.log", "execd-node1.log", "execd-node2.log"] {
                let text = std::fs::read_to_string(c.dir.path().join(log)).unwrap_or_default();
                lines.extend(
                    text.lines()
                        .filter(|l| l.contains(&format!("job={id}")))
                        .map(|l| format!("{log}: {l}")),
                );
            }
            panic!(
                "seed {seed}: job {id} accounted {accounted} times, ran {ran} times, its shepherd killed {kills} times:\n{}\n{}",
                c.client("qacct", &["-j", &id.to_string()]).stdout,
                lines.join("\n")
            );
        }
    }
    let strangers: Vec<&u64> = records
        .keys()
        .filter(|id| !ledger.acknowledged.contains(id))
        .collect();
    assert!(
        strangers.len() <= ledger.unanswered,
        "seed {seed}: accounted jobs nobody was told of: {strangers:?} ({} unanswered)",
        ledger.unanswered
    );
}

#[test]
fn acknowledged_jobs_survive_killed_daemons_and_are_accounted_once() {
    if !gantry_tests::need_root("chaos") {
        return;
    }
    let replay_in_netns = std::env::var("GANTRY_CHAOS_NETNS").is_ok_and(|v| v == "1");
    let seeds: Vec<u64> = match std::env::var("GANTRY_CHAOS_SEED") {
        Ok(s) => vec![s.parse().expect("GANTRY_CHAOS_SEED is a number")],
        Err(_) => {
            let count: u64 = std::env::var("GANTRY_CHAOS_SEEDS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(2);
            let base = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64;
            (0..count).map(|i| base.wrapping_add(i * 7919)).collect()
        }
    };
    for (i, seed) in seeds.into_iter().enumerate() {
        // Every other seed with its daemons on hosts of their own, their links cut too.
        let in_netns = match std::env::var("GANTRY_CHAOS_SEED") {
            Ok(_) => replay_in_netns,
            Err(_) => i % 2 == 1,
        };
        let place = Place {
            net: in_netns.then(|| Netns::create(3)),
        };
        chaos(seed, &place);
    }
}
