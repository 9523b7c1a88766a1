//! The spool never rolls back silently: each test damages the files of a real cell the
//! way a crash, a failing disk or an administrator might, then starts the master again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::Duration;

use gantry_tests::{bin, run_to_exit, wait_until, Cluster, Daemon};
use nix::sys::signal::Signal;

/// A cell whose journal holds a configuration change and three held jobs (ids 1, 2, 3),
/// left by a master killed with SIGKILL.
fn crashed_cell() -> Cluster {
    let mut c = Cluster::init(&[]);
    c.start_master();
    let global = c.dir.path().join("global");
    std::fs::write(&global, "min_uid 0\nmin_gid 0\n").unwrap();
    assert_eq!(c.qconf(&["-Mconf", global.to_str().unwrap()]).code, 0);
    for want in 1..=3 {
        let out = c.client(
            "qsub",
            &[
                "-h",
                "-terse",
                "-N",
                &format!("job{want}"),
                "-b",
                "y",
                "true",
            ],
        );
        assert_eq!(out.stdout.trim(), want.to_string(), "{out:?}");
    }
    c.stop_master(Signal::SIGKILL);
    c
}

fn journal(c: &Cluster) -> std::path::PathBuf {
    c.home().join("spool.journal")
}

/// Where each record of the journal starts (after its 32-byte header).
fn record_offsets(bytes: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 32;
    while at + 16 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        if len == 0 {
            break;
        }
        out.push(at);
        at += 16 + len;
    }
    out
}

/// Run `gantry-master run` expecting it to refuse to start: its exit status and stderr.
fn refused_start(c: &Cluster) -> (i32, String) {
    let mut cmd = Command::new(bin("gantry-master"));
    cmd.args(["run", "--home"]).arg(c.home());
    run_to_exit(cmd, Duration::from_secs(20))
}

/// Start the master with `--recover-spool`.
fn start_recovering(c: &mut Cluster) {
    let mut cmd = Command::new(bin("gantry-master"));
    cmd.args(["run", "--recover-spool", "--home"]).arg(c.home());
    let log = c.dir.path().join("master.log");
    c.master = Some(Daemon::spawn("gantry-master", cmd, log));
    wait_until("the master to answer", Duration::from_secs(20), || {
        c.qconf(&["-sm"]).code == 0
    });
}

fn job_names(c: &Cluster) -> Vec<String> {
    c.client("qstat", &["-u", "*"])
        .stdout
        .lines()
        .skip(2)
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect()
}

fn next_id(c: &Cluster) -> u64 {
    let out = c.client("qsub", &["-h", "-terse", "-b", "y", "true"]);
    out.stdout
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{out:?}"))
}

#[test]
fn a_changed_byte_in_the_middle_of_the_journal_stops_the_master() {
    let mut c = crashed_cell();
    let path = journal(&c);
    let mut bytes = std::fs::read(&path).unwrap();
    let records = record_offsets(&bytes);
    assert_eq!(records.len(), 4, "the configuration change and three jobs");
    // Inside job 2's record.
    let damaged_at = records[2];
    bytes[damaged_at + 40] ^= 0x20;
    std::fs::write(&path, &bytes).unwrap();
    let (code, stderr) = refused_start(&c);
    assert_ne!(code, 0);
    assert!(
        stderr.contains(&format!(
            "spool journal {} is damaged at offset {damaged_at}: changes 3 to 3 cannot be read, and 1 later changes follow them",
            path.display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("--recover-spool"), "{stderr}");
    // Refusing changed nothing.
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    start_recovering(&mut c);
    assert!(c
        .master_log()
        .contains("recovering: dropped change 3: unreadable"));
    let log = c.master_log();
    let applied = log
        .lines()
        .find(|l| l.contains("recovering: applying change 4 after the damage:"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(applied.contains("job 3 (\"job3\" of root)"), "{applied}");
    assert_eq!(job_names(&c), ["job1", "job3"]);
    // Job 2's id is not handed out again (nor any other one used before).
    assert!(next_id(&c) > 3);
}

#[test]
fn a_missing_or_empty_journal_after_a_crash_stops_the_master() {
    for damage in ["missing", "empty"] {
        let mut c = crashed_cell();
        let path = journal(&c);
        if damage == "missing" {
            std::fs::remove_file(&path).unwrap();
        } else {
            std::fs::write(&path, b"").unwrap();
        }
        let (code, stderr) = refused_start(&c);
        assert_ne!(code, 0, "{damage}");
        assert!(
            stderr.contains(&format!(
                "spool journal {} is {damage}, after a master that did not shut down cleanly: the changes acknowledged since the database's last checkpoint (change 0) would be lost",
                path.display()
            )),
            "{damage}: {stderr}"
        );
        start_recovering(&mut c);
        assert!(c.master_log().contains("going on without them"), "{damage}");
        assert!(job_names(&c).is_empty(), "{damage}");
        // The configuration change was lost with the journal too: make it again.
        let global = c.dir.path().join("global");
        assert_eq!(c.qconf(&["-Mconf", global.to_str().unwrap()]).code, 0);
        // The three lost submissions' ids are never handed out again.
        assert!(next_id(&c) > 3, "{damage}");
    }
}

#[test]
fn the_journal_of_another_cell_stops_the_master() {
    let c = crashed_cell();
    let other = crashed_cell();
    std::fs::copy(journal(&other), journal(&c)).unwrap();
    let (code, stderr) = refused_start(&c);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("is the journal of another spool"),
        "{stderr}"
    );
}

#[test]
fn a_torn_last_record_is_dropped_with_a_warning_and_its_id_not_reused() {
    let mut c = crashed_cell();
    let path = journal(&c);
    let mut bytes = std::fs::read(&path).unwrap();
    let records = record_offsets(&bytes);
    // The last record (job 3) reached the disk only in part.
    let last = records[3];
    let len = u32::from_le_bytes(bytes[last..last + 4].try_into().unwrap()) as usize;
    for b in &mut bytes[last + 16 + len / 2..last + 16 + len] {
        *b = 0;
    }
    std::fs::write(&path, &bytes).unwrap();
    c.start_master();
    assert!(
        c.master_log()
            .contains("ends with a change a crash cut short (never acknowledged), dropped"),
        "{}",
        c.master_log()
    );
    assert_eq!(job_names(&c), ["job1", "job2"]);
    assert!(next_id(&c) > 3);
}

#[test]
fn after_a_clean_shutdown_a_lost_journal_loses_nothing() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    let out = c.qconf(&["-am", "keeper"]);
    assert_eq!(out.code, 0, "{out:?}");
    // SIGTERM: a clean shutdown (stop_master waits for the process to exit).
    c.stop_master(Signal::SIGTERM);
    std::fs::remove_file(journal(&c)).unwrap();
    c.start_master();
    assert!(c.qconf(&["-sm"]).stdout.contains("keeper"));
}

/// A file system mounted for one test, unmounted (lazily) when dropped.
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Fill the file system holding `dir` with one file until no byte more fits.
fn fill(dir: &std::path::Path) -> std::path::PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let chunk = vec![0u8; 64 * 1024];
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(nix::libc::ENOSPC) => break,
            Err(e) => panic!("filling {}: {e}", path.display()),
        }
    }
    // What did not fit a whole chunk, a byte at a time.
    while f.write(&[0u8]).is_ok_and(|n| n == 1) {}
    path
}

/// The spool's file system fills up (any user can fill it with scripts): a job whose
/// script does not fit is refused and leaves no partial file; checkpoints fail while it
/// is full (the journal keeps every change) and work again once space returns, without
/// a restart (issue 34: they stayed broken until one, "Previous I/O error occurred").
#[test]
fn a_full_spool_disk_refuses_cleanly_and_recovers_without_a_restart() {
    if !gantry_tests::need_root("a_full_spool_disk_refuses_cleanly_and_recovers_without_a_restart")
    {
        return;
    }
    let mut c = Cluster::init(&[]);
    // The cell moved onto a small file system of its own.
    let home = c.home();
    let orig = c.dir.path().join("cell.orig");
    std::fs::rename(&home, &orig).unwrap();
    std::fs::create_dir(&home).unwrap();
    let status = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=32m,mode=0755", "tmpfs"])
        .arg(&home)
        .status()
        .unwrap();
    assert!(status.success(), "mount tmpfs");
    let _mounted = Mounted(home.clone());
    let status = Command::new("cp")
        .arg("-a")
        .arg(orig.join("."))
        .arg(&home)
        .status()
        .unwrap();
    assert!(status.success(), "cp -a");
    c.start_master();
    let pid = c.master.as_ref().unwrap().pid();
    // Root submits here (a cell refuses uids below 1000 by default).
    let conf = c.dir.path().join("global");
    std::fs::write(&conf, "min_uid 0\nmin_gid 0\n").unwrap();
    assert_eq!(c.qconf(&["-Mconf", conf.to_str().unwrap()]).code, 0);
    let scripts = home.join("job_scripts");
    let filler = fill(&home);

    // A script that does not fit: refused, nothing left of it, nothing queued.
    let script = c.dir.path().join("big.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\n#{}\ntrue\n", "x".repeat(256 * 1024)),
    )
    .unwrap();
    let out = c.client("qsub", &["-h", script.to_str().unwrap()]);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("could not spool the job script")
            && out.stderr.contains("No space left on device"),
        "{out:?}"
    );
    assert_eq!(std::fs::read_dir(&scripts).unwrap().count(), 0);
    assert_eq!(c.client("qstat", &["-u", "*"]).stdout, "");

    // Jobs without a script still fit the journal's preallocated room; enough of them
    // make a checkpoint due, which cannot be written.
    let value = "v".repeat(100 * 1024);
    let mut ids = Vec::new();
    for _ in 0..48 {
        let out = c.client(
            "qsub",
            &[
                "-terse",
                "-h",
                "-v",
                &format!("BIG={value}"),
                "-b",
                "y",
                "true",
            ],
        );
        assert_eq!(out.code, 0, "{out:?}");
        ids.push(out.stdout.trim().to_string());
    }
    wait_until("a checkpoint to fail", Duration::from_secs(30), || {
        c.master_log().contains("spool checkpoint failed")
    });

    // Space returns: the next checkpoint works, in the same master.
    std::fs::remove_file(&filler).unwrap();
    wait_until(
        "a checkpoint to succeed again",
        Duration::from_secs(30),
        || c.master_log().contains("spool checkpoint succeeded again"),
    );
    assert_eq!(c.master.as_ref().unwrap().pid(), pid);
    let out = c.client("qsub", &["-terse", "-h", script.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{out:?}");
    let with_script = out.stdout.trim().to_string();
    let listed = c.client("qstat", &["-u", "*"]).stdout;
    for id in &ids {
        assert!(
            listed
                .lines()
                .any(|l| l.split_whitespace().next() == Some(id)),
            "job {id} lost: {listed}"
        );
    }
    // No user fills the spool with scripts: a bound on what one user's scripts hold
    // (one of 256 KiB is held now; a second fits 600K, a third does not).
    std::fs::write(
        &conf,
        "min_uid 0\nmin_gid 0\nqmaster_params MAX_USER_SCRIPTS_SIZE=600K\n",
    )
    .unwrap();
    assert_eq!(c.qconf(&["-Mconf", conf.to_str().unwrap()]).code, 0);
    let out = c.client("qsub", &["-terse", "-h", script.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{out:?}");
    let out = c.client("qsub", &["-terse", "-h", script.to_str().unwrap()]);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains("job rejected: your jobs' scripts hold 524")
            && out
                .stderr
                .contains("MAX_USER_SCRIPTS_SIZE in qmaster_params allows a user"),
        "{out:?}"
    );
    let listed = c.client("qstat", &["-u", "*"]).stdout;
    // And everything is there after a restart too (the bound counted again from the
    // files: still refused).
    c.stop_master(Signal::SIGTERM);
    c.start_master();
    assert_eq!(c.client("qstat", &["-u", "*"]).stdout, listed);
    let out = c.client("qsub", &["-terse", "-h", script.to_str().unwrap()]);
    assert_ne!(out.code, 0, "{out:?}");
    // Deleting one gives its bytes back.
    assert_eq!(c.client("qdel", &[&with_script]).code, 0);
    let out = c.client("qsub", &["-terse", "-h", script.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{out:?}");
    c.stop_master(Signal::SIGTERM);
}
