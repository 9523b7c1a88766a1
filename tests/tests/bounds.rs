//! What one user can make the master hold, and what reaches other users: names with
//! control characters or SGE's forbidden characters, oversized job scripts, oversized
//! values in configuration files. Each written as the attack. Needs root (test users).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use gantry_tests::{ensure_user, need_root, Cluster};

#[test]
fn forged_names_are_refused_with_sges_messages() {
    if !need_root("forged_names_are_refused_with_sges_messages") {
        return;
    }
    let (_, home) = ensure_user("gtuser1");
    let c = Cluster::one_host();
    let cases: &[(&[&str], &str)] = &[
        // A newline would forge a line of qacct's output for another job.
        (
            &["-h", "-N", "x\nowner        root", "-b", "y", "true"],
            "Unable to run job: Return not allowed in objectname\nExiting.\n",
        ),
        // An escape sequence would reach other users' terminals through qstat.
        (
            &["-h", "-N", "x\u{1b}]0;pwned\u{7}", "-b", "y", "true"],
            "Unable to run job: Control character (0x1b) not allowed in objectname\nExiting.\n",
        ),
        (
            &["-h", "-N", "a/b", "-b", "y", "true"],
            // Refused by qsub itself, as SGE's qsub refuses it (exit status 2).
            "qsub: argument to -N option must not contain / \n",
        ),
        (
            &["-h", "-N", "1st", "-b", "y", "true"],
            "Unable to run job: denied: \"1st\" is not a valid object name (cannot start with a digit)\nExiting.\n",
        ),
        (
            &["-h", "-N", "a:b", "-b", "y", "true"],
            "Unable to run job: Colon (':') not allowed in objectname\nExiting.\n",
        ),
        (
            &["-h", "-A", "acc\nount", "-b", "y", "true"],
            "Unable to run job: Return not allowed in objectname\nExiting.\n",
        ),
        // The default name is the script's: SGE refuses one starting with a digit too.
        (
            &["-h", "-b", "y", "/bin/true"],
            "",
        ),
    ];
    for (args, stderr) in cases {
        let out = c.as_user("gtuser1", "qsub", args);
        if stderr.is_empty() {
            assert_eq!(out.code, 0, "{args:?}: {out:?}");
        } else {
            let code = if stderr.starts_with("qsub: ") { 2 } else { 1 };
            assert_eq!((out.code, out.stderr.as_str()), (code, *stderr), "{args:?}");
        }
    }
    let script = format!("{home}/1job.sh");
    std::fs::write(&script, "#!/bin/sh\ntrue\n").unwrap();
    let out = c.as_user("gtuser1", "qsub", &["-h", &script]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "Unable to run job: denied: \"1job.sh\" is not a valid object name (cannot start with a digit)\nExiting.\n"
        )
    );
    // Only the one good job was queued, and qalter cannot rename it to a forged name.
    let qstat = c.client("qstat", &["-u", "*"]).stdout;
    assert_eq!(qstat.lines().count(), 3, "{qstat}");
    let id = qstat
        .lines()
        .nth(2)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let out = c.as_user("gtuser1", "qalter", &["-N", "x\ny", &id]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout.contains("Return not allowed in objectname"),
        "{out:?}"
    );
    assert!(c
        .client("qstat", &["-j", &id])
        .stdout
        .contains("job_name:                   true\n"));
}

#[test]
fn oversized_scripts_are_refused_with_their_size() {
    if !need_root("oversized_scripts_are_refused_with_their_size") {
        return;
    }
    let (_, home) = ensure_user("gtuser1");
    let c = Cluster::one_host();
    let write_script = |name: &str, bytes: usize| {
        let path = format!("{home}/{name}");
        let mut text = b"#!/bin/sh\ntrue\n".to_vec();
        text.resize(bytes, b'#');
        std::fs::write(&path, text).unwrap();
        path
    };
    // Over the master's default limit (10 MiB): refused by the master, with the size.
    let big = write_script("big.sh", 11 << 20);
    let out = c.as_user("gtuser1", "qsub", &["-h", &big]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "Unable to run job: job rejected: the job script has 11534336 bytes, more than the 10485760 bytes MAX_SCRIPT_SIZE in qmaster_params allows\nExiting.\n"
        )
    );
    // The limit is configurable.
    let conf = c.dir.path().join("global");
    std::fs::write(&conf, "qmaster_params MAX_SCRIPT_SIZE=1K\n").unwrap();
    assert_eq!(c.qconf(&["-Mconf", conf.to_str().unwrap()]).code, 0);
    let small = write_script("small.sh", 2048);
    let out = c.as_user("gtuser1", "qsub", &["-h", &small]);
    assert!(
        out.stderr
            .contains("the job script has 2048 bytes, more than the 1024 bytes"),
        "{out:?}"
    );
    // Beyond what one request can carry: refused by qsub itself, not a broken pipe.
    std::fs::write(&conf, "qmaster_params MAX_SCRIPT_SIZE=64M\n").unwrap();
    assert_eq!(c.qconf(&["-Mconf", conf.to_str().unwrap()]).code, 0);
    let huge = write_script("huge.sh", 17 << 20);
    let out = c.as_user("gtuser1", "qsub", &["-h", &huge]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "Unable to run job: the job script has 17825792 bytes, more than the 15728640 bytes a request can carry\nExiting.\n"
        )
    );
    assert_eq!(
        c.client("qstat", &["-u", "*"]).stdout,
        "",
        "nothing was queued"
    );
}

#[test]
fn errors_quote_a_line_not_a_whole_value() {
    let c = Cluster::one_host();
    // A 200 KB value in a configuration file: the refusal quotes a short line of it.
    let conf = c.dir.path().join("global");
    std::fs::write(&conf, format!("max_u_jobs {}\n", "9x".repeat(100_000))).unwrap();
    let out = c.qconf(&["-Mconf", conf.to_str().unwrap()]);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.len() < 400,
        "{} bytes: {}",
        out.stderr.len(),
        &out.stderr[..400.min(out.stderr.len())]
    );
    assert!(out.stderr.contains("..."), "{}", out.stderr);
    // A resource quota set's name has SGE's length limit.
    let rqs = c.dir.path().join("long.rqs");
    std::fs::write(
        &rqs,
        format!(
            "{{\n   name         {}\n   enabled      TRUE\n   limit        to slots=1\n}}\n",
            "q".repeat(513)
        ),
    )
    .unwrap();
    let out = c.qconf(&["-Arqs", rqs.to_str().unwrap()]);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains("string is longer than 512, this is not allowed for objectnames"),
        "{out:?}"
    );
    assert!(!c.qconf(&["-srqsl"]).stdout.contains("qqqq"));
}

#[test]
fn a_long_complex_list_is_read_off_the_clients_thread_and_checked_whole() {
    if !need_root("a_long_complex_list_is_read_off_the_clients_thread_and_checked_whole") {
        return;
    }
    ensure_user("gtuser1");
    let c = Cluster::one_host();
    let sc = c.qconf(&["-sc"]).stdout;
    let footer = sc.lines().last().unwrap().to_string();
    let body: String = sc
        .lines()
        .filter(|l| *l != footer)
        .map(|l| format!("{l}\n"))
        .collect();
    // 20,000 more attributes: well over the size read on a blocking thread.
    let extra: String = (0..20_000)
        .map(|i| format!("attr{i} at{i} INT <= YES NO 0 0\n"))
        .collect();
    let write = |name: &str, text: &str| {
        let p = c.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        p.to_str().unwrap().to_string()
    };
    // A bad line deep inside: refused whole with its line, nothing changes.
    let bad = write(
        "bad.sc",
        &format!("{body}{extra}gpu gpu BOOL <= YES YES 0 0\n{footer}\n"),
    );
    let out = c.qconf(&["-Mc", &bad]);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains("Exclusive complex \"gpu\" must have EXCL as relational operator"),
        "{out:?}"
    );
    assert_eq!(c.qconf(&["-sc"]).stdout, sc);
    // A non-manager is denied before anything is read.
    let good = write("good.sc", &format!("{body}{extra}{footer}\n"));
    let out = c.as_user("gtuser1", "qconf", &["-Mc", &good]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "denied: \"gtuser1\" must be manager for this operation\n"
        )
    );
    // The manager's list is taken, with SGE's message per attribute.
    let out = c.qconf(&["-Mc", &good]);
    assert_eq!(out.code, 0, "{out:?}");
    // On stderr, as SGE's qconf -Mc says them.
    assert_eq!(out.stderr.lines().count(), 20_000);
    assert!(out
        .stderr
        .ends_with("root@head added \"attr19999\" to complex entry list\n"));
    assert_eq!(
        c.qconf(&["-sc"]).stdout.lines().count(),
        sc.lines().count() + 20_000
    );
    // qconf -sc still answers a job's request against the new list.
    let out = c.as_user(
        "gtuser1",
        "qsub",
        &["-h", "-l", "attr123=5", "-b", "y", "true"],
    );
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn job_scripts_live_in_the_spool_not_in_the_masters_memory() {
    if !need_root("job_scripts_live_in_the_spool_not_in_the_masters_memory") {
        return;
    }
    let (_, home) = ensure_user("gtuser1");
    let mut c = Cluster::one_host();
    // A 3 MB script that says who it is at its end.
    let mut text = b"#!/bin/sh\necho \"script ran as job $JOB_ID\"\nexit 0\n".to_vec();
    text.resize(3 << 20, b'#');
    // Named per test run: the user's home is shared with any other run on the machine.
    let name = format!("large-{}.sh", std::process::id());
    let script = format!("{home}/{name}");
    std::fs::write(&script, &text).unwrap();
    let id = c.submit("gtuser1", &["-h", "-wd", &home, "-j", "y", &script]);
    // Output is appended: start from none (the user's home outlives the test).
    let _ = std::fs::remove_file(format!("{home}/{name}.o{id}"));
    let spooled = c.home().join(format!("job_scripts/{id}"));
    assert_eq!(std::fs::read(&spooled).unwrap(), text);
    // The journal holds the job's record, not its script.
    let journal = std::fs::read(c.home().join("spool.journal")).unwrap();
    assert!(
        !journal.windows(20).any(|w| w == b"script ran as job $J"),
        "the script is in the journal"
    );
    // A restarted master finds it there and the job runs it.
    c.stop_master(nix::sys::signal::Signal::SIGKILL);
    c.start_master();
    let out = c.as_user("gtuser1", "qrls", &[&id]);
    assert_eq!(out.code, 0, "{out:?}");
    gantry_tests::wait_until(
        "the job to be accounted",
        std::time::Duration::from_secs(30),
        || c.client("qacct", &["-j", &id]).code == 0,
    );
    let output = std::fs::read_to_string(format!("{home}/{name}.o{id}")).unwrap();
    let _ = std::fs::remove_file(format!("{home}/{name}.o{id}"));
    let _ = std::fs::remove_file(&script);
    assert_eq!(output, format!("script ran as job {id}\n"));
    // Gone from the spool with the job.
    assert!(!spooled.exists());
}

#[test]
fn a_user_over_the_request_rate_limit_is_told_to_try_again_later() {
    if !need_root("a_user_over_the_request_rate_limit_is_told_to_try_again_later") {
        return;
    }
    ensure_user("gtuser1");
    let mut c = Cluster::init(&[]);
    c.start_master();
    // Off by default: a burst of requests is answered whole.
    let burst = |c: &Cluster, user: &str| -> Vec<gantry_tests::Out> {
        (0..15).map(|_| c.as_user(user, "qstat", &[])).collect()
    };
    assert!(burst(&c, "gtuser1").iter().all(|o| o.code == 0));
    let conf = c.dir.path().join("global");
    std::fs::write(&conf, "qmaster_params MAX_REQUESTS_PER_USER=3\n").unwrap();
    assert_eq!(c.qconf(&["-Mconf", conf.to_str().unwrap()]).code, 0);
    // Fifteen requests take well under five seconds: some go over three a second.
    let started = std::time::Instant::now();
    let outs = burst(&c, "gtuser1");
    let took = started.elapsed();
    let refused: Vec<&gantry_tests::Out> = outs.iter().filter(|o| o.code != 0).collect();
    assert!(
        !refused.is_empty() || took.as_secs_f64() > 5.0,
        "none refused in {took:?}"
    );
    for o in &refused {
        assert_eq!(
            o.stderr,
            "denied: user \"gtuser1\" sent more than 3 requests in one second (MAX_REQUESTS_PER_USER in qmaster_params): try again later\n",
            "{o:?}"
        );
    }
    // Managers are never limited.
    assert!(burst(&c, "root").iter().all(|o| o.code == 0));
}
