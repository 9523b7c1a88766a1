//! The differential replay: every scenario of `tests/sge/scenarios/` played against a
//! fresh Gantry cluster (one execd on this machine, named as the machine, two
//! processors, as SGE's reference cell) and compared, step by step, with what SGE 8.1.9
//! printed for it (`tests/sge/recorded/`, written by `src/bin/sge-record.rs`).
//!
//! A step that differs must be listed in `tests/sge/differences.txt` with its reason; a
//! listed step that agrees again must leave the list. Either way the test fails, so the
//! list says exactly where Gantry and SGE part.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use gantry_tests::differential::{self, base_env, run_as, Backend, Outcome, Scenario, BASE};
use gantry_tests::transcript::steps;
use gantry_tests::{bin_dir, ensure_user, is_root, skip_loudly, Cluster};

/// The machine's short host name. SGE's reference host is `vm`: Gantry's master and
/// execd are named `vm` whatever the machine is called (so that padded columns stay
/// as wide), and the machine's own name, where a client reports it, becomes `vm`.
fn machine_host() -> String {
    let h = nix::unistd::gethostname().unwrap();
    let h = h.to_string_lossy();
    h.split('.').next().unwrap().to_string()
}

struct Gantry {
    cluster: Cluster,
    work: PathBuf,
    host: String,
}

impl Gantry {
    fn start() -> Gantry {
        let host = machine_host();
        let mut cluster = Cluster::init_on("vm", &[]);
        cluster.start_master();
        let token = cluster.token();
        cluster.start_execd_on_cpus("vm", "127.0.0.1", Some(&token), None, Some("0,1"));
        cluster.wait_host_reporting("vm");
        let work = cluster.dir.path().join("work");
        differential::make_work_dir(&work);
        let mut g = Gantry {
            cluster,
            work,
            host,
        };
        // What SGE's reference cell has besides its defaults (setup.sh): the test users
        // in arusers and testusers. Then the harness's base configuration.
        let prelude = [
            "qconf -au user1,user2,user3 arusers",
            "qconf -au user1,user2,user3 testusers",
        ];
        for c in prelude.iter().chain(BASE) {
            let o = g.run("root", c);
            assert_eq!(o.exit, 0, "{c}: {o:?}");
        }
        g
    }
}

impl Backend for Gantry {
    fn run(&mut self, user: &str, command: &str) -> Outcome {
        let mut env = base_env(user);
        env.push((
            "PATH".into(),
            format!("{}:/usr/local/bin:/usr/bin:/bin", bin_dir().display()),
        ));
        env.push((
            "GANTRY_HOME".into(),
            self.cluster.home().display().to_string(),
        ));
        run_as(user, &self.work, &env, command)
    }

    fn replacements(&self) -> Vec<(String, String)> {
        let mut r = vec![
            (self.work.display().to_string(), "<work>".to_string()),
            (self.cluster.home().display().to_string(), "<cell>".into()),
            (format!("{}:", bin_dir().display()), String::new()),
        ];
        if self.host != "vm" {
            r.push((self.host.clone(), "vm".into()));
        }
        r
    }

    fn interval(&self) -> Duration {
        Duration::from_millis(1500)
    }

    fn settle_timeout(&self) -> Duration {
        Duration::from_secs(20)
    }

    fn strict(&self) -> bool {
        false
    }
}

/// Replay the scenarios whose position modulo `shards` is `shard`, and check their
/// differences against the list.
fn replay_shard(shard: usize, shards: usize) {
    if !is_root() {
        skip_loudly(
            "differential replay against SGE's transcripts",
            "needs root to run the scenarios as user1, user2, user3",
        );
        return;
    }
    for u in ["user1", "user2", "user3"] {
        ensure_user(u);
    }
    let listed = differential::listed_differences(
        &std::fs::read_to_string(differential::sge_dir().join("differences.txt")).unwrap(),
    )
    .unwrap();
    let mut all = differential::scenarios();
    assert!(all.len() >= 60, "only {} scenarios", all.len());
    for (name, step, _) in &listed {
        assert!(
            all.iter().any(|s| s.name == *name),
            "differences.txt lists {name} {step}, but there is no scenario {name}"
        );
    }
    // While working on some: GANTRY_DIFF=01_qconf_show_queue,20_qsub_held_binary.
    if let Ok(only) = std::env::var("GANTRY_DIFF") {
        eprintln!("*** GANTRY_DIFF={only}: replaying only these scenarios ***");
        let only: Vec<&str> = only.split(',').collect();
        all.retain(|s| only.contains(&s.name.as_str()));
    }
    let mine: Vec<&Scenario> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| i % shards == shard)
        .map(|(_, s)| s)
        .collect();
    let mut unlisted = Vec::new();
    let mut suggested = Vec::new();
    let mut agreeing = Vec::new();
    let mut compared = 0;
    for scenario in mine {
        let recorded_path = differential::sge_dir()
            .join("recorded")
            .join(format!("{}.txt", scenario.name));
        let recorded = std::fs::read_to_string(&recorded_path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (record it: cargo run -p gantry-tests --bin sge-record {})",
                recorded_path.display(),
                scenario.name
            )
        });
        let mut gantry = Gantry::start();
        let got = differential::play(scenario, &mut gantry);
        drop(gantry);
        let want = steps(&recorded);
        let got = steps(&got);
        assert_eq!(
            want.iter().map(|s| &s.command).collect::<Vec<_>>(),
            got.iter().map(|s| &s.command).collect::<Vec<_>>(),
            "{}: the recording is not of this scenario: record it again",
            scenario.name
        );
        compared += want.len();
        let differing: BTreeMap<usize, differential::Difference> =
            differential::differing_steps(&want, &got)
                .into_iter()
                .map(|d| (d.step, d))
                .collect();
        for (n, d) in &differing {
            if !listed.iter().any(|(s, m, _)| *s == scenario.name && m == n) {
                unlisted.push(format!("{} {}", scenario.name, d.text));
                suggested.push(format!("{} {n}: open: {}", scenario.name, d.summary));
            }
        }
        for (s, n, reason) in &listed {
            if *s == scenario.name && !differing.contains_key(n) {
                agreeing.push(format!("{s} {n}: {reason}"));
            }
        }
    }
    assert!(
        unlisted.is_empty() && agreeing.is_empty(),
        "{} step(s) differ from SGE 8.1.9 and are not in tests/sge/differences.txt:\n\n{}\n\
         {} listed difference(s) agree now (remove them from the list):\n{}\n\n\
         Lines for tests/sge/differences.txt (each needs its reason):\n{}\n",
        unlisted.len(),
        unlisted.join("\n"),
        agreeing.len(),
        agreeing.join("\n"),
        suggested.join("\n")
    );
    eprintln!("differential shard {shard}/{shards}: {compared} steps compared");
}

#[test]
fn scenarios_agree_with_sge_shard_0() {
    replay_shard(0, 3);
}

#[test]
fn scenarios_agree_with_sge_shard_1() {
    replay_shard(1, 3);
}

#[test]
fn scenarios_agree_with_sge_shard_2() {
    replay_shard(2, 3);
}
