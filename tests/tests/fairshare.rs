//! The ticket policies end to end: which user's job starts first on one slot under the
//! functional policy and under a share tree with usage, usage kept across a master
//! restart, `qstat -ext/-pri/-urg` and `sge_share_mon` as a user sees them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use gantry_tests::{ensure_user, need_root, wait_until, Cluster};

/// The scheduler configuration with these attributes changed (`qconf -Msconf`).
fn set_sched(c: &Cluster, changes: &[(&str, &str)]) {
    let current = c.qconf(&["-ssconf"]).stdout;
    let changed: String = current
        .lines()
        .map(|l| {
            let key = l.split_whitespace().next().unwrap_or("");
            match changes.iter().find(|(k, _)| *k == key) {
                Some((k, v)) => format!("{k:<33} {v}\n"),
                None => format!("{l}\n"),
            }
        })
        .collect();
    let file = c.home().join("sched_conf");
    std::fs::write(&file, changed).unwrap();
    let out = c.qconf(&["-Msconf", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{out:?}");
}

fn add_user(c: &Cluster, name: &str, fshare: u32) {
    let file = c.home().join(format!("user-{name}"));
    std::fs::write(
        &file,
        format!("name {name}\noticket 0\nfshare {fshare}\ndelete_time 0\ndefault_project NONE\n"),
    )
    .unwrap();
    let out = c.qconf(&["-Auser", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{out:?}");
}

/// Users gtuser1 and gtuser2 under a share tree giving them 75 and 25 shares.
fn share_tree_75_25(c: &Cluster) {
    add_user(c, "gtuser1", 0);
    add_user(c, "gtuser2", 0);
    let tree = c.home().join("tree");
    std::fs::write(
        &tree,
        "id=0\nname=Root\ntype=0\nshares=1\nchildnodes=1,2\n\
id=1\nname=gtuser1\ntype=0\nshares=75\nchildnodes=NONE\n\
id=2\nname=gtuser2\ntype=0\nshares=25\nchildnodes=NONE\n",
    )
    .unwrap();
    assert_eq!(c.qconf(&["-Astree", tree.to_str().unwrap()]).code, 0);
}

/// gtuser1's decayed and long-term CPU usage (cpu, ltcpu) as `sge_share_mon` shows them.
fn gtuser1_usage(c: &Cluster) -> (f64, f64) {
    let out = c.client(
        "sge_share_mon",
        &["-c", "1", "-n", "-x", "-f", "user_name,cpu,ltcpu"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("user_name=gtuser1\t"))
        .unwrap_or_else(|| panic!("no usage of gtuser1: {out:?}"))
        .to_string();
    let field = |name: &str| -> f64 {
        line.split('\t')
            .find_map(|f| f.strip_prefix(name))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {line}"))
    };
    (field("cpu="), field("ltcpu="))
}

/// A job of `user` that keeps a CPU busy for `secs` seconds, waited for to its
/// accounting record.
fn burn_cpu(c: &Cluster, user: &str, secs: u32) {
    let busy = format!("end=$(($(date +%s)+{secs})); while [ $(date +%s) -lt $end ]; do :; done");
    let burn = c.submit(user, &["-b", "y", "sh", "-c", &busy]);
    wait_until("the burner to end", Duration::from_secs(60), || {
        c.client("qacct", &["-j", &burn]).code == 0
    });
}

/// `qstat -u '*' -ext`'s job lines: (job id, tckts, ftckt, stckt, share), in the order
/// listed.
fn ext_rows(c: &Cluster) -> Vec<(String, i64, i64, i64, String)> {
    let out = c.client("qstat", &["-u", "*", "-ext"]);
    assert_eq!(out.code, 0, "{out:?}");
    out.stdout
        .lines()
        .skip(2)
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // id prior ntckts name user project department state tckts ovrts otckt
            // ftckt stckt share (pending rows have no cpu/mem/io).
            let n = |i: usize| f[i].parse::<i64>().unwrap();
            (f[0].to_string(), n(8), n(11), n(12), f[13].to_string())
        })
        .collect()
}

fn job_ids_started_in_order(c: &Cluster, jobs: &[&str]) -> Vec<String> {
    let mut started: Vec<(String, String)> = jobs
        .iter()
        .map(|j| {
            let out = c.client("qacct", &["-j", j]);
            let start = out
                .stdout
                .lines()
                .find(|l| l.starts_with("start_time"))
                .unwrap_or_else(|| panic!("no start_time for {j}: {out:?}"))
                .to_string();
            (start, j.to_string())
        })
        .collect();
    started.sort();
    started.into_iter().map(|(_, j)| j).collect()
}

/// On one slot, one pending job each of three users with functional shares 10/30/60:
/// SGE's tickets (2500, 833, 250 of 10000: a pending job's share of the user weight),
/// and they start in that order whatever order they were submitted in.
#[test]
fn functional_shares_decide_whose_job_starts_first() {
    if !need_root("functional_shares_decide_whose_job_starts_first") {
        return;
    }
    for u in ["gtuser1", "gtuser2", "gtuser3"] {
        ensure_user(u);
    }
    let c = Cluster::one_host();
    assert_eq!(c.qconf(&["-rattr", "queue", "slots", "1", "all.q"]).code, 0);
    // Without waiting time in the urgency: three submissions that straddle a second
    // would otherwise differ in normalised urgency by all of its range (0.278 a second,
    // SGE's default weight), and the earlier jobs would come first.
    set_sched(
        &c,
        &[
            ("weight_tickets_functional", "10000"),
            ("weight_waiting_time", "0.000000"),
        ],
    );
    for (u, share) in [("gtuser1", 10), ("gtuser2", 30), ("gtuser3", 60)] {
        add_user(&c, u, share);
    }
    assert_eq!(c.client("qmod", &["-d", "all.q"]).code, 0);
    let j1 = c.submit("gtuser1", &["-b", "y", "sleep", "2"]);
    let j2 = c.submit("gtuser2", &["-b", "y", "sleep", "2"]);
    let j3 = c.submit("gtuser3", &["-b", "y", "sleep", "2"]);
    // The tickets show as soon as a cycle has given them; the rows come in the order
    // of the cycle's priorities, which a loaded machine may show one cycle later.
    let want = vec![
        (j3.clone(), 2500, 2500, 0, "0.70".to_string()),
        (j2.clone(), 833, 833, 0, "0.23".to_string()),
        (j1.clone(), 250, 250, 0, "0.07".to_string()),
    ];
    let mut seen = Vec::new();
    let settled = (0..400).any(|_| {
        seen = ext_rows(&c);
        seen == want || {
            std::thread::sleep(Duration::from_millis(50));
            false
        }
    });
    assert!(
        settled,
        "the pending jobs' tickets and order: {seen:?}\n{}",
        c.client("qstat", &["-u", "*", "-ext"]).stdout
    );
    // -pri: the priority is the tickets' part alone here (one slot each, no waiting
    // time: their urgency is the same).
    let pri = c.client("qstat", &["-u", "*", "-pri"]);
    assert!(
        pri.stdout.starts_with("job-ID  prior   nurg    npprior ntckts   ppri name       user         state submit/start at     queue                          slots ja-task-ID \n"),
        "{pri:?}"
    );
    assert!(
        pri.stdout
            .lines()
            .nth(2)
            .unwrap()
            .contains(" 1.00000     0 sleep      gtuser3 "),
        "{pri:?}"
    );
    assert_eq!(c.client("qmod", &["-e", "all.q"]).code, 0);
    wait_until("every job to end", Duration::from_secs(60), || {
        c.client("qstat", &["-u", "*"]).stdout.is_empty()
    });
    assert_eq!(job_ids_started_in_order(&c, &[&j1, &j2, &j3]), [j3, j2, j1]);
}

/// A share tree 75/25: the user who used the cluster waits behind the other, the
/// usage survives a master restart, `qconf -clearusage` forgets it; `sge_share_mon`
/// shows it.
#[test]
fn share_tree_usage_shifts_the_order_and_survives_a_restart() {
    if !need_root("share_tree_usage_shifts_the_order_and_survives_a_restart") {
        return;
    }
    for u in ["gtuser1", "gtuser2"] {
        ensure_user(u);
    }
    let mut c = Cluster::one_host();
    assert_eq!(c.qconf(&["-rattr", "queue", "slots", "1", "all.q"]).code, 0);
    set_sched(
        &c,
        &[
            ("weight_tickets_share", "10000"),
            ("halftime", "168"),
            // The tickets alone order the two jobs (see the functional test).
            ("weight_waiting_time", "0.000000"),
        ],
    );
    share_tree_75_25(&c);
    // gtuser1 burns CPU until its usage puts gtuser2 first: SGE's share-tree formula
    // weighs shares^2 / max(usage, share), so 75^2 / usage must fall below 25^2 / 0.25,
    // usage above 2.25. A loaded machine gives a 3 s burner less than that: it burns
    // again until its usage is past 3.
    let mut used = 0.0;
    for _ in 0..6 {
        burn_cpu(&c, "gtuser1", 3);
        used = gtuser1_usage(&c).0;
        if used > 3.0 {
            break;
        }
    }
    assert!(used > 3.0, "gtuser1 used {used} CPU seconds");
    // Both users wait on the one slot: gtuser2 first, for gtuser1's usage.
    assert_eq!(c.client("qmod", &["-d", "all.q"]).code, 0);
    let a = c.submit("gtuser1", &["-b", "y", "sleep", "1"]);
    let b = c.submit("gtuser2", &["-b", "y", "sleep", "1"]);
    let first = |c: &Cluster| {
        wait_until("a cycle to rank the jobs", Duration::from_secs(20), || {
            ext_rows(c).iter().all(|r| r.3 > 0)
        });
        ext_rows(c)[0].0.clone()
    };
    assert_eq!(first(&c), b);
    // Kept across a restart, decayed by the seconds it was down at most.
    c.stop_master(nix::sys::signal::Signal::SIGTERM);
    c.start_master();
    let kept = gtuser1_usage(&c).0;
    assert!(
        (kept - used).abs() < 0.01 * used,
        "usage {used} before the restart, {kept} after"
    );
    assert_eq!(first(&c), b);
    // Forgotten: the shares alone decide.
    let clear = c.qconf(&["-clearusage"]);
    assert_eq!(clear.code, 0, "{clear:?}");
    assert!(
        clear.stderr.contains("modified \"gtuser1\" in user list"),
        "{clear:?}"
    );
    assert_eq!(gtuser1_usage(&c).0, 0.0);
    wait_until(
        "a cycle after the usage was cleared",
        Duration::from_secs(20),
        || ext_rows(&c).first().is_some_and(|r| r.0 == a),
    );
    assert_eq!(c.client("qdel", &["-u", "*", "*"]).code, 0);
}

/// `halflife_decay_list cpu=1`: CPU usage decays with a one-minute half-life (the
/// rest by `halftime`), as SGE 8.1.9's code decays it
/// (`tests/fixtures/sge/fairshare/06_halflife_decay_list.txt`). Under a share tree
/// 75/25, gtuser1's burned CPU puts gtuser2's job first; once gtuser1's usage has
/// decayed below 2.25 (where 75^2 / usage passes gtuser2's 25^2 / 0.25) gtuser1's job
/// is first again, with nothing cleared, and the long-term usage stays.
#[test]
fn usage_decays_by_halflife_decay_list_and_gives_the_order_back() {
    if !need_root("usage_decays_by_halflife_decay_list_and_gives_the_order_back") {
        return;
    }
    for u in ["gtuser1", "gtuser2"] {
        ensure_user(u);
    }
    let c = Cluster::one_host();
    assert_eq!(c.qconf(&["-rattr", "queue", "slots", "1", "all.q"]).code, 0);
    set_sched(
        &c,
        &[
            ("weight_tickets_share", "10000"),
            ("halftime", "168"),
            ("halflife_decay_list", "cpu=1"),
            ("weight_waiting_time", "0.000000"),
        ],
    );
    assert!(c
        .qconf(&["-ssconf"])
        .stdout
        .contains("\nhalflife_decay_list               cpu=1\n"));
    share_tree_75_25(&c);
    // gtuser1 burns several CPU seconds.
    burn_cpu(&c, "gtuser1", 10);
    let (used, long_term) = gtuser1_usage(&c);
    assert!(used > 3.0, "gtuser1 used {used} CPU seconds");
    assert!(long_term >= used, "{long_term} long-term, {used} decayed");
    assert_eq!(c.client("qmod", &["-d", "all.q"]).code, 0);
    let a = c.submit("gtuser1", &["-b", "y", "sleep", "1"]);
    let b = c.submit("gtuser2", &["-b", "y", "sleep", "1"]);
    let first = |c: &Cluster| {
        wait_until("a cycle to rank the jobs", Duration::from_secs(20), || {
            ext_rows(c).iter().all(|r| r.3 > 0)
        });
        ext_rows(c)[0].0.clone()
    };
    // Still above 2.25 when the jobs were ranked (read after: it only falls).
    let ranked_first = first(&c);
    let (now, _) = gtuser1_usage(&c);
    assert!(
        now > 2.3,
        "gtuser1's usage decayed to {now} before the jobs were ranked"
    );
    assert_eq!(ranked_first, b, "gtuser1 has {now} CPU seconds");
    // A minute's half-life: below 2.25 within about a minute of the burner's end.
    wait_until(
        "gtuser1's usage to decay and its job to go first",
        Duration::from_secs(180),
        || first(&c) == a,
    );
    let (decayed, kept) = gtuser1_usage(&c);
    assert!(
        decayed < 2.25,
        "gtuser1's job first with {decayed} CPU seconds"
    );
    assert!(decayed < used / 1.3, "{used} decayed only to {decayed}");
    assert!(
        (kept - long_term).abs() < 1e-6,
        "long-term {long_term} became {kept}"
    );
    assert_eq!(c.client("qdel", &["-u", "*", "*"]).code, 0);
}

/// `qalter -ot`: a manager gives a job override tickets (SGE's words, a plain owner is
/// refused), `qstat -ext` and `qstat -j` show them, and they go with the job.
#[test]
fn override_tickets_are_given_by_managers_and_shown() {
    if !need_root("override_tickets_are_given_by_managers_and_shown") {
        return;
    }
    ensure_user("gtuser1");
    let mut c = Cluster::one_host();
    assert_eq!(c.client("qmod", &["-d", "all.q"]).code, 0);
    let j = c.submit("gtuser1", &["-b", "y", "sleep", "60"]);
    let me = nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map_or_else(|| "root".to_string(), |u| u.name);
    let out = c.client("qalter", &["-ot", "100", &j]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (
            0,
            format!("{me}@head sets override tickets of job {j} to 100\n").as_str()
        ),
        "{out:?}"
    );
    let out = c.as_user("gtuser1", "qalter", &["-ot", "200", &j]);
    // SGE's qalter prints its master's refusals on standard output, as Gantry's does.
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stdout,
        "denied: \"gtuser1\" must be operator to change amount of override tickets\n"
    );
    let out = c.client("qalter", &["-ot", "-5", &j]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("invalid override tickets, must be an unsigned integer"),
        "{out:?}"
    );
    wait_until(
        "a cycle to give the tickets",
        Duration::from_secs(20),
        || ext_rows(&c).first().is_some_and(|r| r.1 == 100),
    );
    let ext = c.client("qstat", &["-u", "*", "-ext"]);
    let line = ext.stdout.lines().nth(2).unwrap().to_string();
    // tckts ovrts otckt ftckt stckt share
    assert!(
        line.contains("  100   100   100     0     0 1.00 "),
        "{line}"
    );
    // The queue listing with the same columns: -ext's separators, no queue column.
    let full = c.client("qstat", &["-u", "*", "-f", "-ext"]);
    assert_eq!(full.code, 0, "{full:?}");
    assert!(
        full.stdout.lines().any(|l| l == "-".repeat(189)),
        "{full:?}"
    );
    let row = full
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{j} ")))
        .unwrap_or_else(|| panic!("no row of {j}: {full:?}"));
    assert!(
        row.ends_with("  100   100   100     0     0 1.00      1        "),
        "{row:?}"
    );
    let detail = c.client("qstat", &["-j", &j]);
    assert!(
        detail
            .stdout
            .contains("\noticket:                    100\n"),
        "{detail:?}"
    );
    // Kept across a restart, gone with the job.
    c.stop_master(nix::sys::signal::Signal::SIGTERM);
    c.start_master();
    assert!(c
        .client("qstat", &["-j", &j])
        .stdout
        .contains("\noticket:                    100\n"));
    assert_eq!(c.client("qdel", &[&j]).code, 0);
    c.stop_master(nix::sys::signal::Signal::SIGTERM);
    c.start_master();
    assert!(c.client("qstat", &["-u", "*"]).stdout.is_empty());
    // A running job is given them too, as SGE gives them.
    assert_eq!(c.client("qmod", &["-e", "all.q"]).code, 0);
    let r = c.submit("gtuser1", &["-b", "y", "sleep", "60"]);
    wait_until("the job to run", Duration::from_secs(30), || {
        c.client("qstat", &["-u", "*", "-s", "r"])
            .stdout
            .contains(" r ")
    });
    let out = c.client("qalter", &["-ot", "50", &r]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (
            0,
            format!("{me}@head sets override tickets of job {r} to 50\n").as_str()
        ),
        "{out:?}"
    );
    let ext_of_running = |c: &Cluster| -> Option<Vec<String>> {
        let out = c.client("qstat", &["-u", "*", "-ext"]);
        out.stdout
            .lines()
            .skip(2)
            .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .find(|f| f.first() == Some(&r))
    };
    wait_until(
        "a cycle to give the running job its tickets",
        Duration::from_secs(20),
        || ext_of_running(&c).is_some_and(|f| f.get(11).map(String::as_str) == Some("50")),
    );
    // id prior ntckts name user project department state cpu mem io tckts ovrts otckt
    let f = ext_of_running(&c).unwrap();
    assert_eq!(
        (f[7].as_str(), &f[11..14]),
        ("r", &["50".to_string(), "50".into(), "50".into()][..]),
        "{f:?}"
    );
    assert_eq!(c.client("qdel", &[&r]).code, 0);
}
