//! Interactive jobs end to end: `qrsh` running a command on the cluster with its
//! standard streams carried both ways and its exit status returned, refused as SGE
//! refuses it when nothing is free, accounted like any job.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use gantry_tests::{ensure_user, need_root, wait_until, Cluster};

/// `qrsh` as a user, its standard input given.
fn qrsh(c: &Cluster, user: &str, args: &[&str], input: &str) -> gantry_tests::Out {
    c.as_user_with_stdin(user, "qrsh", args, input)
}

#[test]
fn qrsh_runs_a_command_with_its_streams_and_exit_status() {
    if !need_root("qrsh_runs_a_command_with_its_streams_and_exit_status") {
        return;
    }
    ensure_user("gtuser1");
    let c = Cluster::one_host();
    // The command runs on the host the scheduler chose, as the user, in a shell.
    let out = qrsh(
        &c,
        "gtuser1",
        &[
            "hostname;",
            "id",
            "-un;",
            "echo",
            "$JOB_NAME",
            "$ENVIRONMENT",
        ],
        "",
    );
    assert_eq!(out.code, 0, "{out:?}");
    let host = std::process::Command::new("hostname").output().unwrap();
    let host = String::from_utf8_lossy(&host.stdout).trim().to_string();
    assert_eq!(
        out.stdout,
        format!("{host}\ngtuser1\nhostname; INTERACTIVE\n"),
        "{out:?}"
    );
    // Standard input reaches it, standard output and error come back apart.
    let out = qrsh(
        &c,
        "gtuser1",
        &["cat;", "echo", "oops", ">&2"],
        "line one\nline two\n",
    );
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, "line one\nline two\n", "oops\n"),
        "{out:?}"
    );
    // The remote command's exit status is qrsh's.
    let out = qrsh(&c, "gtuser1", &["false"], "");
    assert_eq!(out.code, 1, "{out:?}");
    let out = qrsh(&c, "gtuser1", &["exit", "7"], "");
    assert_eq!(out.code, 7, "{out:?}");
    // Accounted like any job.
    wait_until(
        "the qrsh jobs to be accounted",
        Duration::from_secs(30),
        || {
            c.client("qacct", &["-o", "gtuser1"]).stdout.contains("\n")
                && c.client("qstat", &["-u", "*"]).stdout.is_empty()
        },
    );
    let acct = c.client("qacct", &["-j", "false"]);
    assert_eq!(acct.code, 0, "{acct:?}");
    let field = |name: &str| {
        acct.stdout
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    assert_eq!(field("exit_status "), Some("1".into()), "{acct:?}");
    assert_eq!(field("owner "), Some("gtuser1".into()), "{acct:?}");
    assert_eq!(field("hostname "), Some("node1".into()), "{acct:?}");
}

#[test]
fn qrsh_on_a_full_cluster_is_refused_as_sge_refuses_it() {
    if !need_root("qrsh_on_a_full_cluster_is_refused_as_sge_refuses_it") {
        return;
    }
    ensure_user("gtuser1");
    let c = Cluster::one_host();
    assert_eq!(c.qconf(&["-rattr", "queue", "slots", "1", "all.q"]).code, 0);
    let busy = c.submit("gtuser1", &["-b", "y", "sleep", "60"]);
    wait_until("the queue to be full", Duration::from_secs(30), || {
        c.client("qstat", &["-u", "*", "-s", "r"])
            .stdout
            .contains(" r ")
    });
    let out = qrsh(&c, "gtuser1", &["hostname"], "");
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (
            1,
            "",
            "Your \"qrsh\" request could not be scheduled, try again later.\n"
        ),
        "{out:?}"
    );
    // Nothing is left of it.
    assert_eq!(c.client("qstat", &["-u", "*", "-s", "p"]).stdout, "");
    assert_eq!(c.client("qdel", &[&busy]).code, 0);
}
