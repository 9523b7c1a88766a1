//! A job's owner against the execd, written as the attacks: paths planted where the
//! execd works as root, and a job that kills its shepherd or whose shepherd is killed.
//! Needs root (test users, jobs run as them); CI runs as root.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use gantry_tests::{ensure_user, need_root, wait_until, Cluster};

/// Run a shell command as `user` (to plant things as an attacker would).
fn as_user_sh(user: &str, script: &str) {
    let out = Command::new("runuser")
        .args(["-u", user, "--", "sh", "-c", script])
        .output()
        .unwrap();
    assert!(out.status.success(), "{script}: {out:?}");
}

/// The processes whose command line starts with `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if e.file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
            .is_none()
        {
            continue;
        }
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.starts_with(marker) {
            found.push(format!("{}: {cmdline}", e.file_name().to_string_lossy()));
        }
    }
    found
}

/// The state column of all.q@node1 in `qhost -q` ("" when it has none).
fn instance_state(c: &Cluster) -> String {
    c.qhost(&["-q", "-h", "node1"])
        .stdout
        .lines()
        .find(|l| l.starts_with("   all.q"))
        .map(|l| l.get(44..).unwrap_or("").trim().to_string())
        .unwrap_or_default()
}

/// A job's state in `qstat -u '*'` ("" once it has left).
fn job_state(c: &Cluster, id: &str) -> String {
    c.client("qstat", &["-u", "*"])
        .stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(id))
        .map(|l| l.split_whitespace().nth(4).unwrap_or("").to_string())
        .unwrap_or_default()
}

/// `key=value` from a task's `pids` file in the execd's job directory.
fn task_note(c: &Cluster, id: &str, key: &str) -> Option<String> {
    let text =
        std::fs::read_to_string(c.execd_home("node1").join(format!("jobs/{id}.1/pids"))).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .map(str::to_string)
}

fn qacct_field(acct: &str, field: &str) -> String {
    acct.lines()
        .find(|l| l.split_whitespace().next() == Some(field))
        .map(|l| l[field.len()..].trim().to_string())
        .unwrap_or_default()
}

fn owner_and_mode(p: &Path) -> (u32, u32) {
    let m = std::fs::symlink_metadata(p).unwrap();
    (m.uid(), m.mode() & 0o7777)
}

#[test]
fn planted_paths_never_lead_to_a_chown_or_an_error_state() {
    if !need_root("planted_paths_never_lead_to_a_chown_or_an_error_state") {
        return;
    }
    let (uid, home) = ensure_user("gtuser1");
    let c = Cluster::one_host();
    // A scratch directory every user may write to (as /tmp), the queue's tmpdir, and a
    // directory of root's that the attacker wants to own.
    let scratch = c.dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    std::fs::set_permissions(&scratch, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = c.dir.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(victim.join("secret"), "root's").unwrap();
    let out = c.qconf(&[
        "-mattr",
        "queue",
        "tmpdir",
        scratch.to_str().unwrap(),
        "all.q",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    // The attacker plants links to the victim under every name the execd might use:
    // the per-execd directory, and SGE's TMPDIR names of the next jobs; and a plain
    // file under the per-execd directory's second name.
    let s = scratch.display();
    let v = victim.display();
    as_user_sh(
        "gtuser1",
        &format!(
            "ln -s {v} {s}/gantry.node1 && echo planted > {s}/gantry.node1.1 && \
             for id in 1 2 3 4 5; do ln -s {v} {s}/$id.1.all.q; done"
        ),
    );
    // Unique to this run: another checkout's tests may use the same user at once.
    let iso_out = format!("{home}/iso-{}.out", std::process::id());
    let out = c.as_user(
        "gtuser1",
        "qsub",
        &[
            "-sync",
            "y",
            "-wd",
            &home,
            "-o",
            &iso_out,
            "-j",
            "y",
            "-b",
            "y",
            "sh",
            "-c",
            "echo tmpdir=$TMPDIR; touch $TMPDIR/x && echo writable; stat -c owner=%u:%a $TMPDIR",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let id = out.stdout.split_whitespace().nth(2).unwrap().to_string();
    let text = std::fs::read_to_string(&iso_out).unwrap();
    let tmpdir = scratch.join(format!("gantry.node1.2/{id}.1.all.q"));
    assert!(
        text.contains(&format!("tmpdir={}\n", tmpdir.display())),
        "{text}"
    );
    assert!(text.contains("writable\n"), "{text}");
    assert!(text.contains(&format!("owner={uid}:700\n")), "{text}");
    // Nothing the attacker planted was followed, changed or removed.
    assert_eq!(owner_and_mode(&victim), (0, 0o755));
    assert_eq!(owner_and_mode(&victim.join("secret")).0, 0);
    assert_eq!(
        std::fs::read_link(scratch.join("gantry.node1")).unwrap(),
        victim
    );
    assert_eq!(
        std::fs::read_to_string(scratch.join("gantry.node1.1")).unwrap(),
        "planted\n"
    );
    for n in 1..=5 {
        assert_eq!(
            std::fs::read_link(scratch.join(format!("{n}.1.all.q"))).unwrap(),
            victim
        );
    }
    // The execd's own directory is root's and private; the TMPDIR is gone.
    assert_eq!(owner_and_mode(&scratch.join("gantry.node1.2")), (0, 0o711));
    assert!(!tmpdir.exists());
    // No queue instance went into error state, and the execd said what it passed over.
    assert_eq!(instance_state(&c), "");
    assert!(!c.master_log().contains("error state"));
    let execd_log = std::fs::read_to_string(&c.execds[0].log).unwrap();
    assert!(
        execd_log.contains(&format!(
            "{}/gantry.node1 is not the execd's own directory",
            scratch.display()
        )),
        "{execd_log}"
    );

    // Output files are opened with the owner's rights: not in a directory only root
    // may write to (the task waits in error state; no file appears).
    let rootonly = c.dir.path().join("rootonly");
    std::fs::create_dir(&rootonly).unwrap();
    std::fs::set_permissions(&rootonly, std::fs::Permissions::from_mode(0o755)).unwrap();
    let id = c.submit(
        "gtuser1",
        &[
            "-wd",
            &home,
            "-o",
            &format!("{}/out", rootonly.display()),
            "-b",
            "y",
            "true",
        ],
    );
    wait_until(
        "the job to wait in error state",
        Duration::from_secs(20),
        || job_state(&c, &id) == "Eqw",
    );
    assert!(!rootonly.join("out").exists());
    let why = c.client("qstat", &["-j", &id]).stdout;
    assert!(why.contains("can't open output file"), "{why}");
    assert_eq!(instance_state(&c), "");
}

#[test]
fn a_job_cannot_kill_its_shepherd() {
    if !need_root("a_job_cannot_kill_its_shepherd") {
        return;
    }
    let (_, home) = ensure_user("gtuser1");
    let c = Cluster::one_host();
    let out_file = PathBuf::from(format!("{home}/killer-{}.out", std::process::id()));
    // Unique to this run, so that nothing else on the machine matches.
    let sleep = format!("sleep 3017.{}", std::process::id());
    let _ = std::fs::remove_file(&out_file);
    let id = c.submit(
        "gtuser1",
        &[
            "-wd",
            &home,
            "-o",
            out_file.to_str().unwrap(),
            "-j",
            "y",
            "-b",
            "y",
            "sh",
            "-c",
            &format!("kill -9 $PPID; echo kill=$?; exec {sleep}"),
        ],
    );
    wait_until(
        "the job to try to kill its shepherd",
        Duration::from_secs(20),
        || std::fs::read_to_string(&out_file).is_ok_and(|t| t.contains("kill=")),
    );
    let text = std::fs::read_to_string(&out_file).unwrap();
    assert!(text.contains("kill=1"), "the kill must fail: {text}");
    // The job runs on under its shepherd, in the scheduler's sight.
    let shepherd: i32 = task_note(&c, &id, "shepherd").unwrap().parse().unwrap();
    assert!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(shepherd), None).is_ok());
    assert_eq!(job_state(&c, &id), "r");
    assert_eq!(processes_with(&sleep).len(), 1);
    // And qdel ends it.
    let out = c.client("qdel", &[&id]);
    assert_eq!(out.code, 0, "{out:?}");
    wait_until("the job to be accounted", Duration::from_secs(20), || {
        c.client("qacct", &["-j", &id]).code == 0
    });
    assert!(processes_with(&sleep).is_empty());
}

#[test]
fn a_killed_shepherd_leaves_no_process_and_is_accounted() {
    if !need_root("a_killed_shepherd_leaves_no_process_and_is_accounted") {
        return;
    }
    let (_, home) = ensure_user("gtuser1");
    let c = Cluster::one_host();
    let out_file = PathBuf::from(format!("{home}/orphan-{}.out", std::process::id()));
    let (in_group, escaped) = (
        format!("sleep 3029.{}", std::process::id()),
        format!("sleep 3023.{}", std::process::id()),
    );
    let _ = std::fs::remove_file(&out_file);
    // The job burns CPU, then leaves a process in its process group and one that
    // escapes it into a session of its own, and waits.
    let id = c.submit(
        "gtuser1",
        &[
            "-wd",
            &home,
            "-o",
            out_file.to_str().unwrap(),
            "-j",
            "y",
            "-b",
            "y",
            "sh",
            "-c",
            &format!(
                "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; \
                 {in_group} & setsid {escaped} & echo tmpdir=$TMPDIR; echo ready; wait"
            ),
        ],
    );
    wait_until("the job to be ready", Duration::from_secs(60), || {
        std::fs::read_to_string(&out_file).is_ok_and(|t| t.contains("ready"))
    });
    let text = std::fs::read_to_string(&out_file).unwrap();
    let tmpdir = text
        .lines()
        .find_map(|l| l.strip_prefix("tmpdir="))
        .unwrap()
        .to_string();
    assert!(Path::new(&tmpdir).is_dir());
    wait_until("both sleeps to run", Duration::from_secs(10), || {
        processes_with(&in_group).len() == 1 && processes_with(&escaped).len() == 1
    });
    // Let the task run at least two seconds, then root kills the shepherd from outside.
    let started: u64 = task_note(&c, &id, "start").unwrap().parse().unwrap();
    wait_until("two seconds of run time", Duration::from_secs(10), || {
        gantry_net::cell::unix_now() >= started + 2
    });
    let shepherd: i32 = task_note(&c, &id, "shepherd").unwrap().parse().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(shepherd),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_until("the task to be accounted", Duration::from_secs(30), || {
        c.client("qacct", &["-j", &id]).code == 0
    });
    // Nothing of the task is left once its slot is free, and its TMPDIR is gone.
    assert!(
        processes_with(&in_group).is_empty(),
        "{:?}",
        processes_with(&in_group)
    );
    assert!(
        processes_with(&escaped).is_empty(),
        "{:?}",
        processes_with(&escaped)
    );
    assert!(!Path::new(&tmpdir).exists());
    assert_eq!(job_state(&c, &id), "");
    let acct = c.client("qacct", &["-j", &id]).stdout;
    assert!(
        qacct_field(&acct, "failed") == "100 : assumedly after job",
        "{acct}"
    );
    // What it used, really: the wall clock from its start, and the CPU it burnt.
    let wallclock: i64 = qacct_field(&acct, "ru_wallclock")
        .trim_end_matches('s')
        .parse()
        .unwrap();
    let cpu: f64 = qacct_field(&acct, "cpu")
        .trim_end_matches('s')
        .parse()
        .unwrap();
    assert!(cpu > 0.05, "cpu {cpu}: {acct}");
    assert!(wallclock >= 2, "wallclock {wallclock}: {acct}");
    assert!(instance_state(&c).is_empty());
}
