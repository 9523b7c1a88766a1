//! `gantry-master backup` and `restore`: a backup taken while the master serves holds
//! every acknowledged job, accounting record, job script and the cell's own files;
//! restored into a new cell (a new master host) or over the old one, the master serves
//! them again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use gantry_tests::{bin, Cluster, Out};
use nix::sys::signal::Signal;

fn master(args: &[&str], home: &Path, file: &Path) -> Out {
    Out::from_output(
        Command::new(bin("gantry-master"))
            .args(args)
            .arg("--home")
            .arg(home)
            .arg(file)
            .output()
            .unwrap(),
    )
}

fn submit(c: &Cluster, args: &[&str]) -> String {
    let out = c.client("qsub", &[&["-terse"], args].concat());
    assert_eq!(out.code, 0, "{out:?}");
    out.stdout.trim().to_string()
}

#[test]
fn an_online_backup_restores_into_a_new_cell_and_over_the_old_one() {
    let mut c = Cluster::one_host();
    // Jobs of root (the tests' user in CI) run too.
    let global = c.dir.path().join("global");
    std::fs::write(&global, "min_uid 0\nmin_gid 0\n").unwrap();
    assert_eq!(c.qconf(&["-Mconf", global.to_str().unwrap()]).code, 0);
    let ran = submit(&c, &["-sync", "y", "-N", "ran", "-b", "y", "true"]);
    let script = c.dir.path().join("job.sh");
    std::fs::write(&script, "#!/bin/sh\n#$ -N from_script\necho backed up\n").unwrap();
    let held = submit(&c, &["-h", script.to_str().unwrap()]);
    assert_eq!(c.qconf(&["-ao", "backupop"]).code, 0);
    let file = c.dir.path().join("cell.backup");

    // Taken while the master serves (and goes on serving).
    let out = master(&["backup"], &c.home(), &file);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.starts_with(&format!(
            "backup of the cell written to {}:",
            file.display()
        )),
        "{out:?}"
    );
    assert!(out.stdout.contains(" accounting records, "), "{out:?}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the backup holds the cell's keys");
    // An existing file is never overwritten.
    let again = master(&["backup"], &c.home(), &file);
    assert_ne!(again.code, 0, "{again:?}");
    assert!(again.stderr.contains("File exists"), "{again:?}");
    let after = submit(&c, &["-h", "-N", "after", "-b", "y", "true"]);

    // Not while the master runs.
    let refused = master(&["restore"], &c.home(), &file);
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(
        refused.stderr.contains("the master is running on"),
        "{refused:?}"
    );
    assert_eq!(c.job_state(&after), "hqw", "nothing changed");

    // Into a new cell, as on a new master host.
    let mut d = Cluster::init(&[]);
    std::fs::remove_dir_all(d.home()).unwrap();
    let out = master(&["restore"], &d.home(), &file);
    assert_eq!(out.code, 0, "{out:?}");
    for f in ["ca.pem", "ca.key", "master.pem", "master.key", "join-token"] {
        assert_eq!(
            std::fs::read(d.home().join(f)).unwrap(),
            std::fs::read(c.home().join(f)).unwrap(),
            "{f}"
        );
    }
    d.use_own_port();
    d.start_master();
    let job = d.client("qstat", &["-j", &held]);
    assert_eq!(job.code, 0, "{job:?}");
    assert!(
        job.stdout
            .contains("job_name:                   from_script"),
        "{job:?}"
    );
    assert_eq!(
        std::fs::read(d.home().join("job_scripts").join(&held)).unwrap(),
        std::fs::read(&script).unwrap()
    );
    let acct = d.client("qacct", &["-j", &ran]);
    assert_eq!(acct.code, 0, "{acct:?}");
    assert!(acct.stdout.contains("jobname      ran"), "{acct:?}");
    assert!(d.qconf(&["-so"]).stdout.contains("backupop"));
    assert_ne!(
        d.client("qstat", &["-j", &after]).code,
        0,
        "after the backup"
    );
    d.stop_master(Signal::SIGTERM);

    // Over the old cell: the spool as it was is kept, and job ids go on above it.
    c.stop_master(Signal::SIGTERM);
    let out = master(&["restore"], &c.home(), &file);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("kept the cell's own"), "{out:?}");
    assert!(c.home().join("spool.redb.before-restore").exists());
    c.start_master();
    assert_eq!(
        c.job_state(&after),
        "",
        "the job submitted after the backup is gone"
    );
    assert_eq!(c.job_state(&held), "hqw");
    let next: u64 = submit(&c, &["-h", "-b", "y", "true"]).parse().unwrap();
    assert!(next > after.parse().unwrap(), "job ids are not given twice");
}

#[test]
fn a_file_that_is_no_backup_is_refused_and_changes_nothing() {
    let c = Cluster::init(&[]);
    let junk = c.dir.path().join("junk");
    std::fs::write(&junk, "not a database").unwrap();
    let spool = std::fs::read(c.home().join("spool.redb")).unwrap();
    let out = master(&["restore"], &c.home(), &junk);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("is not a backup of a Gantry cell"),
        "{out:?}"
    );
    assert_eq!(std::fs::read(c.home().join("spool.redb")).unwrap(), spool);
    let out = master(&["restore"], &c.home(), &c.dir.path().join("missing"));
    assert_ne!(out.code, 0, "{out:?}");
}
