//! The procedures the shepherd runs around a job, as SGE 8.1.9's runs them (checked on
//! this machine against SGE): the queue's or the cluster's `prolog` and `epilog`, the
//! queue's `starter_method`, a parallel environment's `start_proc_args` and
//! `stop_proc_args`: as whom, with which arguments, environment and output files, and
//! what their exit statuses do (0 go on, 99 reschedule, 100 job error, else queue
//! error). Needs root (test users and root@ procedures); CI runs as root.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use gantry_tests::{ensure_user, need_root, pe_file, wait_until, Cluster};

const USER: &str = "gtuser1";

/// A fresh directory under /tmp every user may write into.
fn shared_dir(name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = PathBuf::from(format!("/tmp/gantry-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

fn script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn set_queue(c: &Cluster, attr: &str, value: &str) {
    let out = c.qconf(&["-mattr", "queue", attr, value, "all.q"]);
    assert_eq!(out.code, 0, "{out:?}");
}

fn accounted(c: &Cluster, id: &str) -> String {
    let mut text = String::new();
    wait_until(
        "the job's accounting record",
        Duration::from_secs(20),
        || {
            let out = c.client("qacct", &["-j", id]);
            text = out.stdout;
            out.code == 0
        },
    );
    text
}

/// The states column of `all.q@node1` in `qstat -f`.
fn instance_states(c: &Cluster) -> String {
    let f = c.client("qstat", &["-f"]).stdout;
    f.lines()
        .find(|l| l.starts_with("all.q@node1"))
        .map(|l| l.split_whitespace().nth(5).unwrap_or("").to_string())
        .unwrap_or_default()
}

const PROBE: &str = "#!/bin/sh\necho \"PROC $0 [$*] uid=$(id -u) cwd=$(pwd) exit=${SGE_JOBEXIT_STAT:-none} path=$PATH\"\necho \"PROC-ERR $0\" >&2\n";

#[test]
fn prolog_epilog_and_starter_run_as_sge_runs_them() {
    if !need_root("prolog_epilog_and_starter_run_as_sge_runs_them") {
        return;
    }
    let (uid, _) = ensure_user(USER);
    let c = Cluster::one_host();
    let dir = shared_dir("procs");
    let probe = dir.join("probe.sh");
    script(&probe, PROBE);
    let p = probe.display();
    // The queue's prolog as the owner, its epilog as root, with SGE's variables.
    set_queue(
        &c,
        "prolog",
        &format!("{p} pro $host $job_owner $job_id $job_name $processors $queue"),
    );
    set_queue(&c, "epilog", &format!("root@{p} epi $job_id"));
    let d = dir.display().to_string();
    let id = c.submit(
        USER,
        &[
            "-wd",
            &d,
            "-N",
            "pj",
            "-v",
            "PATH=/opt/x:/usr/bin",
            "-b",
            "y",
            "/bin/echo",
            "hello",
        ],
    );
    let acct = accounted(&c, &id);
    assert!(acct.contains("failed       0 "), "{acct}");
    let out = std::fs::read_to_string(dir.join(format!("pj.o{id}"))).unwrap();
    let tmpdir = format!("/tmp/gantry.node1/{id}.1.all.q");
    let want = format!(
        "PROC {p} [pro node1 {USER} {id} pj UNDEFINED all.q] uid={uid} cwd={d} exit=none path={tmpdir_path}:/opt/x:/usr/bin\nhello\nPROC {p} [epi {id}] uid=0 cwd={d} exit=0 path={tmpdir_path}:/opt/x:/usr/bin\n",
        tmpdir_path = tmpdir_in(&out, &tmpdir),
    );
    assert_eq!(out, want);
    let err = std::fs::read_to_string(dir.join(format!("pj.e{id}"))).unwrap();
    assert_eq!(err, format!("PROC-ERR {p}\nPROC-ERR {p}\n"));

    // NONE in the queue: the cluster's prolog runs instead; the queue's starter
    // method starts the job, given the script and its arguments and told the shell.
    set_queue(&c, "prolog", "NONE");
    set_queue(&c, "epilog", "NONE");
    let conf = c.client("qconf", &["-sconf"]).stdout;
    let conf_file = dir.join("global");
    std::fs::write(
        &conf_file,
        conf.replace(
            "prolog                       none",
            &format!("prolog                       {p} global"),
        ),
    )
    .unwrap();
    let out = c.qconf(&["-Mconf", &conf_file.display().to_string()]);
    assert_eq!(out.code, 0, "{out:?}");
    let starter = dir.join("starter.sh");
    script(
        &starter,
        "#!/bin/sh\necho \"STARTER [$*] uid=$(id -u) shell=$SGE_STARTER_SHELL_PATH mode=$SGE_STARTER_SHELL_START_MODE login=$SGE_STARTER_USE_LOGIN_SHELL\"\nexec /bin/sh \"$@\"\n",
    );
    set_queue(&c, "starter_method", &starter.display().to_string());
    let job = dir.join("job.sh");
    script(&job, "echo \"script [$*]\"\n");
    let id = c.submit(
        USER,
        &[
            "-wd",
            &d,
            "-N",
            "st",
            "-j",
            "y",
            "-S",
            "/bin/bash",
            &job.display().to_string(),
            "a",
            "b",
        ],
    );
    accounted(&c, &id);
    let out = std::fs::read_to_string(dir.join(format!("st.o{id}"))).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(
        lines[0].starts_with(&format!("PROC {p} [global] uid={uid} ")),
        "{out}"
    );
    assert_eq!(lines[1], format!("PROC-ERR {p}"));
    assert!(
        lines[2].starts_with("STARTER [")
            && lines[2].ends_with(&format!(
                " a b] uid={uid} shell=/bin/bash mode=posix_compliant login=true"
            )),
        "{out}"
    );
    assert_eq!(lines[3], "script [a b]");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The task's TMPDIR as the job saw it in `PATH` (the prefix before the first `:`),
/// checked to be the task's own.
fn tmpdir_in(out: &str, want: &str) -> String {
    let path = out
        .lines()
        .next()
        .and_then(|l| l.split(" path=").nth(1))
        .unwrap_or("");
    let first = path.split(':').next().unwrap_or("").to_string();
    // Another test's cluster may hold the name first: then it has a suffix.
    assert!(first.starts_with(want), "{first} vs {want}");
    first
}

#[test]
fn procedure_exit_statuses_reschedule_or_set_errors() {
    if !need_root("procedure_exit_statuses_reschedule_or_set_errors") {
        return;
    }
    ensure_user(USER);
    let c = Cluster::one_host();
    let dir = shared_dir("procexit");
    let d = dir.display().to_string();
    let exit = dir.join("exit.sh");
    script(&exit, "#!/bin/sh\necho \"exit.sh [$*]\"\nexit $1\n");
    let e = exit.display();
    let reason = |id: &str| {
        let j = c.client("qstat", &["-j", id]).stdout;
        j.lines()
            .find(|l| l.starts_with("error reason          1:      "))
            .map(str::to_string)
            .unwrap_or_default()
    };

    // 100: the job waits in error state; the queue instance is not at fault.
    set_queue(&c, "prolog", &format!("{e} 100"));
    let id = c.submit(USER, &["-wd", &d, "-b", "y", "/bin/true"]);
    wait_until("the job in error state", Duration::from_secs(20), || {
        c.job_state(&id) == "Eqw"
    });
    assert!(
        reason(&id).ends_with("]: exit_status of prolog = 100"),
        "{}",
        reason(&id)
    );
    assert_eq!(instance_states(&c), "");
    let acct = accounted(&c, &id);
    assert!(
        acct.contains("failed       30  : application error returned\n"),
        "{acct}"
    );
    assert!(acct.contains("start_time   -/-\n"), "{acct}");
    assert_eq!(c.client("qdel", &[&id]).code, 0);

    // Anything else: the queue instance goes into error state, the job back to
    // pending; `qmod -c` clears the queue instance and the job runs.
    set_queue(&c, "prolog", &format!("{e} 3"));
    let id = c.submit(USER, &["-wd", &d, "-b", "y", "/bin/true"]);
    wait_until(
        "the queue instance in error state",
        Duration::from_secs(20),
        || instance_states(&c) == "E",
    );
    assert_eq!(c.job_state(&id), "qw");
    let acct = accounted(&c, &id);
    assert!(acct.contains("failed       8   : in prolog\n"), "{acct}");
    set_queue(&c, "prolog", "NONE");
    assert_eq!(c.client("qmod", &["-c", "all.q"]).code, 0);
    wait_until("the job to run", Duration::from_secs(20), || {
        c.client("qacct", &["-j", &id])
            .stdout
            .contains("failed       0 ")
    });

    // 99 (once): rescheduled, accounted as such, and run again.
    let marker = dir.join("rescheduled");
    let once = dir.join("once.sh");
    script(
        &once,
        &format!(
            "#!/bin/sh\nif [ -e {m} ]; then exit 0; fi\ntouch {m}\nexit 99\n",
            m = marker.display()
        ),
    );
    set_queue(&c, "prolog", &format!("root@{}", once.display()));
    let id = c.submit(USER, &["-wd", &d, "-b", "y", "/bin/true"]);
    wait_until("the job to run again", Duration::from_secs(30), || {
        c.client("qacct", &["-j", &id])
            .stdout
            .contains("failed       0 ")
    });
    let acct = accounted(&c, &id);
    assert!(acct.contains("failed       25  : rescheduling\n"), "{acct}");
    assert_eq!(instance_states(&c), "");

    // A variable SGE does not know: the procedure does not run, the queue instance
    // goes into error state ("before prolog").
    set_queue(&c, "prolog", &format!("{e} 0 $HOME"));
    let id = c.submit(USER, &["-wd", &d, "-b", "y", "/bin/true"]);
    wait_until(
        "the queue instance in error state",
        Duration::from_secs(20),
        || instance_states(&c) == "E",
    );
    let acct = accounted(&c, &id);
    assert!(
        acct.contains("failed       7   : before prolog\n"),
        "{acct}"
    );
    assert_eq!(c.client("qdel", &[&id]).code, 0);
    set_queue(&c, "prolog", "NONE");
    assert_eq!(c.client("qmod", &["-c", "all.q"]).code, 0);

    // An epilog that fails after the job ran: the queue instance in error, the job
    // pending again (as SGE 8.1.9 does).
    set_queue(&c, "epilog", &format!("{e} 1"));
    let id = c.submit(
        USER,
        &["-wd", &d, "-N", "ep", "-b", "y", "/bin/echo", "ran"],
    );
    wait_until(
        "the queue instance in error state",
        Duration::from_secs(20),
        || instance_states(&c) == "E",
    );
    assert_eq!(c.job_state(&id), "qw");
    let acct = accounted(&c, &id);
    assert!(acct.contains("failed       15  : in epilog\n"), "{acct}");
    // Recorded as SGE records an attempt it reschedules: no slots, no start, no end.
    for line in [
        "start_time   -/-\n",
        "end_time     -/-\n",
        "slots        0 ",
    ] {
        assert!(acct.contains(line), "{line} {acct}");
    }
    let out = std::fs::read_to_string(dir.join(format!("ep.o{id}"))).unwrap();
    assert_eq!(out, "ran\nexit.sh [1]\n");
    // A prolog that cannot be started is a prolog that failed.
    set_queue(&c, "epilog", "NONE");
    set_queue(&c, "prolog", "/nonexistent/prolog");
    assert_eq!(c.client("qmod", &["-c", "all.q"]).code, 0);
    wait_until(
        "the queue instance in error state",
        Duration::from_secs(20),
        || instance_states(&c) == "E",
    );
    // The pending job says why its last start failed, as SGE's qstat -j does.
    let r = reason(&id);
    assert!(
        r.ends_with("]: execvlp(/nonexistent/prolog, \"/nonexistent/prolog\") failed: No such file or directory"),
        "{r}"
    );
    wait_until(
        "the failed start accounted",
        Duration::from_secs(20),
        || {
            c.client("qacct", &["-j", &id])
                .stdout
                .matches("failed       8   : in prolog\n")
                .count()
                == 1
        },
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn parallel_environment_start_and_stop_procedures() {
    if !need_root("parallel_environment_start_and_stop_procedures") {
        return;
    }
    let (uid, _) = ensure_user(USER);
    let c = Cluster::one_host();
    let dir = shared_dir("peprocs");
    let d = dir.display().to_string();
    let probe = dir.join("probe.sh");
    script(&probe, PROBE);
    let p = probe.display();
    let exit = dir.join("exit.sh");
    script(&exit, "#!/bin/sh\necho \"stop [$*]\"\nexit $1\n");
    let pe = dir.join("pe");
    std::fs::write(
        &pe,
        pe_file(
            "pp",
            &[
                ("slots", "4"),
                (
                    "start_proc_args",
                    &format!(
                        "{p} $pe_hostfile $host $job_owner $job_id $job_name $pe $pe_slots $queue"
                    ),
                ),
                ("stop_proc_args", &format!("root@{} 0 $pe", exit.display())),
            ],
        ),
    )
    .unwrap();
    assert_eq!(c.qconf(&["-Ap", &pe.display().to_string()]).code, 0);
    set_queue(&c, "pe_list", "pp");
    let id = c.submit(
        USER,
        &[
            "-wd",
            &d,
            "-N",
            "pp1",
            "-pe",
            "pp",
            "2",
            "-b",
            "y",
            "/bin/echo",
            "hi",
        ],
    );
    let acct = accounted(&c, &id);
    assert!(acct.contains("failed       0 "), "{acct}");
    assert_eq!(
        std::fs::read_to_string(dir.join(format!("pp1.o{id}"))).unwrap(),
        "hi\n"
    );
    let po = std::fs::read_to_string(dir.join(format!("pp1.po{id}"))).unwrap();
    let lines: Vec<&str> = po.lines().collect();
    assert_eq!(lines.len(), 2, "{po}");
    // The task's TMPDIR (another test's cluster may hold the name first: then it has
    // a suffix).
    let tmpdir = format!("/tmp/gantry.node1/{id}.1.all.q");
    let start = format!("PROC {p} [");
    assert!(lines[0].starts_with(&start), "{po}");
    let args = lines[0][start.len()..].split(']').next().unwrap();
    let args: Vec<&str> = args.split(' ').collect();
    assert!(
        args[0].starts_with(&tmpdir) && args[0].ends_with("/pe_hostfile"),
        "{po}"
    );
    assert_eq!(
        &args[1..],
        ["node1", USER, &id, "pp1", "pp", "2", "all.q"],
        "{po}"
    );
    assert!(lines[0].contains(&format!(" uid={uid} cwd={d} ")), "{po}");
    assert_eq!(lines[1], "stop [0 pp]");
    assert_eq!(
        std::fs::read_to_string(dir.join(format!("pp1.pe{id}"))).unwrap(),
        format!("PROC-ERR {p}\n")
    );

    // A stop procedure that fails: the job has run and ends; the queue instance goes
    // into error state.
    let out = c.qconf(&[
        "-mattr",
        "pe",
        "stop_proc_args",
        &format!("{} 1", exit.display()),
        "pp",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let id = c.submit(
        USER,
        &[
            "-wd",
            &d,
            "-N",
            "pp2",
            "-pe",
            "pp",
            "2",
            "-b",
            "y",
            "/bin/true",
        ],
    );
    let acct = accounted(&c, &id);
    assert!(acct.contains("failed       13  : in pestop\n"), "{acct}");
    assert_eq!(instance_states(&c), "E");
    assert_eq!(c.job_state(&id), "");
    let _ = std::fs::remove_dir_all(&dir);
}
