//! End-to-end tests of the foundation on this host: real gantry-master and gantry-execd
//! processes, real QUIC with mutual TLS, the real client commands.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use gantry_tests::{is_root, skip_loudly, wait_until, Cluster};
use nix::sys::signal::Signal;

const LOCAL: &str = "127.0.0.1";

fn real_num_proc() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn one_host_cluster_reports_real_load_values() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    let token = c.token();
    c.start_execd("node1", LOCAL, Some(&token), None);
    c.wait_host_reporting("node1");

    let line = c.qhost_line("node1").unwrap();
    let f: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(f[1], gantry_common::load::sge_arch());
    let ncpu: usize = f[2].parse().unwrap();
    assert!(
        ncpu >= real_num_proc(),
        "NCPU {ncpu} vs {}",
        real_num_proc()
    );
    assert!(
        f[7].ends_with('G') || f[7].ends_with('M'),
        "MEMTOT {}",
        f[7]
    );

    // The global line and header as SGE prints them.
    let out = c.qhost(&[]);
    assert!(out.stdout.starts_with("HOSTNAME                ARCH         NCPU NSOC NCOR NTHR  LOAD  MEMTOT  MEMUSE  SWAPTO  SWAPUS\n"));
    assert!(out.stdout.contains("\nglobal                  -               -    -    -    -     -       -       -       -       -\n"));

    // Joining made it an exec host in @allhosts with all.q slots = num_proc.
    assert_eq!(c.qconf(&["-sel"]).stdout, "node1\n");
    assert_eq!(
        c.qconf(&["-shgrp", "@allhosts"]).stdout,
        "group_name @allhosts\nhostlist node1\n"
    );
    let q = c.qconf(&["-sq", "all.q"]).stdout;
    assert!(
        q.contains(&format!("slots                 1,[node1={ncpu}]\n")),
        "{q}"
    );
    let hq = c.qhost(&["-q"]).stdout;
    assert!(
        hq.contains(&format!("   all.q                BIP   0/0/{ncpu}")),
        "{hq}"
    );

    // qhost -F with the real memory value, -h and -xml.
    let full = c.qhost(&["-F", "mem_total,num_proc"]).stdout;
    assert!(
        full.contains("    Host Resource(s):      hl:num_proc="),
        "{full}"
    );
    assert!(full.contains("   hl:mem_total="), "{full}");
    // A name that resolves but is no exec host: the header and the global line; one
    // that does not resolve: SGE's usage and error.
    assert_eq!(c.qhost(&["-h", "localhost"]).stdout.lines().count(), 3);
    let bad = c.qhost(&["-h", "nosuch.invalid"]);
    assert_eq!(bad.code, 1, "{bad:?}");
    assert!(
        bad.stderr
            .ends_with("\nerror: can't resolve hostname \"nosuch.invalid\"\n"),
        "{bad:?}"
    );
    let xml = c.qhost(&["-xml"]).stdout;
    assert!(xml.starts_with("<?xml version='1.0'?>\n<qhost "), "{xml}");
    assert!(xml.contains(" <host name='node1'>"), "{xml}");

    // qconf -se shows the reported load values and processors.
    let se = c.qconf(&["-se", "node1"]).stdout;
    assert!(se.starts_with("hostname              node1\n"), "{se}");
    assert!(se.contains("load_values           load_avg="), "{se}");
    assert!(
        se.contains(&format!("processors            {ncpu}\n")),
        "{se}"
    );
    let missing = c.qconf(&["-se", "no-such-host.invalid"]);
    assert_eq!(missing.code, 1);
    assert_eq!(
        missing.stderr,
        "can't resolve hostname \"no-such-host.invalid\"\n"
    );

    // The execd's own socket relays client requests to the master.
    let relayed = c.client_at(&c.execd_home("node1"), "qconf", &["-sel"], None);
    assert_eq!(relayed.stdout, "node1\n", "{relayed:?}");
    // Root on a compute host is not a cluster manager: its host is no admin host.
    let am = c.client_at(&c.execd_home("node1"), "qconf", &["-am", "relayuser"], None);
    assert_eq!(
        (am.code, am.stderr.as_str()),
        (1, "denied: host \"node1\" is no admin host\n"),
        "{am:?}"
    );
    assert!(!c.qconf(&["-sm"]).stdout.contains("relayuser"));
}

/// A job listing relayed by an execd (the master's answer passing through it) is the
/// one the master's own socket gives, for the default form and another.
#[test]
fn a_job_listing_relayed_by_an_execd_is_the_masters() {
    if !gantry_tests::need_root("a_job_listing_relayed_by_an_execd_is_the_masters") {
        return;
    }
    gantry_tests::ensure_user("gtuser1");
    let c = Cluster::one_host();
    for name in ["relayed", "another"] {
        c.submit("gtuser1", &["-h", "-b", "y", "-N", name, "/bin/true"]);
    }
    for args in [&[][..], &["-r"][..]] {
        let direct = c.as_user("gtuser1", "qstat", args);
        assert!(direct.stdout.contains(" relayed "), "{direct:?}");
        assert!(direct.stdout.contains(" hqw "), "{direct:?}");
        let relayed = c.client_at(&c.execd_home("node1"), "qstat", args, Some("gtuser1"));
        assert_eq!(
            (relayed.code, relayed.stdout),
            (0, direct.stdout),
            "{args:?}"
        );
    }
}

#[test]
fn default_configuration_matches_a_fresh_sge_install() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    let sc = c.qconf(&["-sc"]);
    assert_eq!(
        sc.stdout,
        include_str!("../../common/tests/fixtures/qconf-sc.txt")
    );
    let conf = c.qconf(&["-sconf"]);
    assert_eq!(
        conf.stdout,
        // SGE's, but for the spool directory and Gantry's own attributes after SGE's
        // (docs/admin/http.md; tests/sge/differences.txt).
        include_str!("../../common/tests/fixtures/qconf-sconf.txt")
            .replace("/var/spool/gridengine/execd", "/var/spool/gantry/execd")
            .replace(
                "max_advance_reservations     50\n",
                "max_advance_reservations     50\nhttp_listen                  none\nhttp_anonymous               false\n",
            )
    );
    assert_eq!(c.qconf(&["-sql"]).stdout, "all.q\n");
    let sm = c.qconf(&["-sm"]).stdout;
    assert!(sm.starts_with("root\n"), "{sm}");
    let sel = c.qconf(&["-sel"]);
    assert_eq!(
        (sel.code, sel.stderr.as_str()),
        (1, "no execution host defined\n")
    );
    let help = c.qconf(&["-help"]);
    assert_eq!(help.code, 0);
    assert!(help.stdout.contains("usage: qconf [options]"));
    assert!(c
        .qhost(&["-help"])
        .stdout
        .contains("usage: qhost [options]"));
    let bad = c.qconf(&["-sfoo"]);
    assert_eq!(bad.code, 1);
    assert_eq!(
        bad.stderr, "error: invalid option argument \"-sfoo\"\nUsage: qconf -help\n",
        "{bad:?}"
    );
    let missing = c.qconf(&["-se"]);
    assert_eq!(missing.code, 1);
    assert!(missing
        .stderr
        .starts_with("error: no option argument provided to \"-se\"\n"));
}

#[test]
fn second_init_refuses_and_changes_nothing() {
    let c = Cluster::init(&[]);
    let before = std::fs::read(c.home().join("join-token")).unwrap();
    let ca_before = std::fs::read(c.home().join("ca.pem")).unwrap();
    let out = c.master_cmd(&["init", "--hostname", "head"], &[]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("a cell already exists here"), "{out:?}");
    assert_eq!(std::fs::read(c.home().join("join-token")).unwrap(), before);
    assert_eq!(std::fs::read(c.home().join("ca.pem")).unwrap(), ca_before);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(c.home().join("join-token"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn bad_wrong_ca_and_expired_tokens_are_refused() {
    let mut c = Cluster::init(&["--token-ttl", "3s"]);
    c.start_master();
    let token = c.token();

    // A wrong secret: the master refuses with a reason; nothing changes.
    let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
    parts[3] = "0".repeat(32);
    let bad = parts.join(".");
    let i = c.start_execd("badtoken", LOCAL, Some(&bad), None);
    let status = c.execds[i]
        .wait_exit(Duration::from_secs(20))
        .expect("execd exits");
    assert!(!status.success());
    assert!(
        c.execds[i]
            .log_text()
            .contains("join refused: the join token is not valid"),
        "{}",
        c.execds[i].log_text()
    );
    wait_until(
        "the master to log the refusal",
        Duration::from_secs(10),
        || c.master_log().contains("the join token is not valid"),
    );

    // Another cell's CA fingerprint: the execd refuses to trust this master.
    let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
    parts[1] = "ab".repeat(32);
    let i = c.start_execd("wrongca", LOCAL, Some(&parts.join(".")), None);
    let status = c.execds[i]
        .wait_exit(Duration::from_secs(20))
        .expect("execd exits");
    assert!(!status.success());
    assert!(
        c.execds[i]
            .log_text()
            .contains("does not match the fingerprint in the join token"),
        "{}",
        c.execds[i].log_text()
    );

    // The same token once expired.
    wait_until("the token to expire", Duration::from_secs(10), || {
        gantry_net::cell::JoinToken::parse(&token)
            .unwrap()
            .expires_at
            < gantry_net::cell::unix_now()
    });
    let i = c.start_execd("late", LOCAL, Some(&token), None);
    let status = c.execds[i]
        .wait_exit(Duration::from_secs(20))
        .expect("execd exits");
    assert!(!status.success());
    assert!(
        c.execds[i]
            .log_text()
            .contains("the join token has expired"),
        "{}",
        c.execds[i].log_text()
    );

    // None of them became a host.
    let sel = c.qconf(&["-sel"]);
    assert_eq!(sel.stderr, "no execution host defined\n");

    // A rotated token works again.
    let out = c.master_cmd(&["token", "--ttl", "1h"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    c.start_execd("fresh", LOCAL, Some(&c.token()), None);
    c.wait_host_reporting("fresh");
}

#[test]
fn foreign_certificate_and_garbage_are_refused() {
    let mut a = Cluster::init(&[]);
    a.start_master();
    let mut b = Cluster::init(&[]);
    b.start_master();
    // Join node1 to cell B, then point its home at cell A: A does not know B's CA.
    b.start_execd("node1", LOCAL, Some(&b.token()), None);
    b.wait_host_reporting("node1");
    b.execds[0].stop(Signal::SIGTERM);
    let foreign_home = b.execd_home("node1");
    let target = a.execd_home("node1");
    std::fs::create_dir_all(&target).unwrap();
    // The execd trusts A's CA, but presents a certificate B issued.
    for f in ["host.pem", "host.key", "host.conf"] {
        std::fs::copy(foreign_home.join(f), target.join(f)).unwrap();
    }
    std::fs::copy(a.home().join("ca.pem"), target.join("ca.pem")).unwrap();
    a.start_execd("node1", LOCAL, None, None);
    wait_until(
        "the execd to report the refused handshake",
        Duration::from_secs(20),
        || a.execds[0].log_text().contains("connection to the master"),
    );
    wait_until(
        "the master to log the refused certificate",
        Duration::from_secs(20),
        || a.master_log().contains("refused"),
    );
    assert_eq!(a.qconf(&["-sel"]).stderr, "no execution host defined\n");

    // Garbage datagrams on the master's port change nothing and do not stop it.
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for i in 0..200u32 {
        let junk: Vec<u8> = (0..(i % 1200 + 1)).map(|j| (j * 31 + i) as u8).collect();
        sock.send_to(&junk, a.master_addr(LOCAL)).unwrap();
    }
    assert_eq!(a.qconf(&["-sel"]).stderr, "no execution host defined\n");
    assert!(a.master.as_mut().unwrap().running());
}

#[test]
fn deleted_host_is_disconnected_and_its_certificate_refused() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    c.start_execd("node1", LOCAL, Some(&c.token()), None);
    c.wait_host_reporting("node1");
    let out = c.qconf(&["-de", "node1"]);
    assert_eq!(
        out.stderr, "root@head removed \"node1\" from execution host list\n",
        "{out:?}"
    );
    wait_until("the execd to be refused", Duration::from_secs(20), || {
        c.execds[0].log_text().contains("unknown host certificate")
    });
    assert_eq!(c.qconf(&["-sel"]).stderr, "no execution host defined\n");
    assert_eq!(
        c.qconf(&["-shgrp", "@allhosts"]).stdout,
        "group_name @allhosts\nhostlist NONE\n"
    );
    let again = c.qconf(&["-de", "node1"]);
    assert_eq!(
        (again.code, again.stderr.as_str()),
        (1, "denied: \"node1\" is not an execution host\n")
    );
}

#[test]
fn exec_hosts_added_by_name_and_file() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    let out = c.qconf(&["-ae", "node7"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (0, "root@head added \"node7\" to exechost list\n")
    );
    let dup = c.qconf(&["-ae", "node7"]);
    assert_eq!(
        (dup.code, dup.stderr.as_str()),
        (1, "exechost \"node7\" already exists\n")
    );
    let file = c.dir.path().join("node8");
    std::fs::write(&file, "hostname node8\ncomplex_values slots=4,h_vmem=8G\n").unwrap();
    let out = c.qconf(&["-Ae", file.to_str().unwrap()]);
    assert_eq!(
        out.stderr, "root@head added \"node8\" to exechost list\n",
        "{out:?}"
    );
    assert!(c
        .qconf(&["-se", "node8"])
        .stdout
        .contains("complex_values        slots=4,h_vmem=8G\n"));
    std::fs::write(&file, "hostname node9\ncomplex_values gpu=2\n").unwrap();
    let bad = c.qconf(&["-Ae", file.to_str().unwrap()]);
    assert_eq!(bad.code, 1);
    assert_eq!(
        bad.stderr,
        "denied: attribute \"gpu\" is not a complex attribute\n"
    );
    assert_eq!(c.qconf(&["-sel"]).stdout, "node7\nnode8\n");
    // -ae without a name uses the editor, as SGE does.
    let out = std::process::Command::new(gantry_tests::bin("qconf"))
        .arg("-ae")
        .env("GANTRY_HOME", c.home())
        .env("EDITOR", "sed -i s/template/node10/")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "root@head added \"node10\" to exechost list\n"
    );
    let out = c.qconf(&["-de", "node7,node10"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(c.qconf(&["-sel"]).stdout, "node8\n");
}

#[test]
fn configuration_changes_are_validated_and_survive_a_restart() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    let before = c.qconf(&["-sconf"]).stdout;
    let file = c.dir.path().join("global");
    std::fs::write(&file, "load_report_time soon\n").unwrap();
    let bad = c.qconf(&["-Mconf", file.to_str().unwrap()]);
    assert_eq!(bad.code, 1);
    assert_eq!(
        bad.stderr,
        "line 1: value \"soon\" for attribute \"load_report_time\" is invalid: expected a time of at least one second (h:m:s or seconds)\n"
    );
    assert_eq!(
        c.qconf(&["-sconf"]).stdout,
        before,
        "a refused file changes nothing"
    );
    // A careless administrator's files (issue 34): an empty one, as SGE 8.1.9 refuses
    // it (recorded from it, byte for byte), and values SGE takes that would break the
    // cluster; each refused whole, nothing changed.
    let path = file.to_str().unwrap();
    std::fs::write(&file, "").unwrap();
    let bad = c.qconf(&["-Mconf", path]);
    assert_eq!(bad.code, 1, "{bad:?}");
    assert_eq!(
        bad.stderr,
        format!(
            "error: error reading file: \"{path}\"\nerror reading configuration from file {path}\n"
        )
    );
    for (text, why) in [
        ("# nothing but a comment\n\n", "error: error reading file: "),
        (
            "administrator_mail root\0evil\n",
            "line 1: the line holds a control character (U+0000)",
        ),
        (
            "min_uid 4294967296\n",
            "expected an id from 0 to 4294967295",
        ),
        ("max_unheard 0\n", "expected a time of at least one second"),
        (
            "load_report_time 00:00:00\n",
            "expected a time of at least one second",
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        let bad = c.qconf(&["-Mconf", path]);
        assert_eq!(bad.code, 1, "{text:?}: {bad:?}");
        assert!(bad.stderr.contains(why), "{text:?}: {bad:?}");
        assert_eq!(
            c.qconf(&["-sconf"]).stdout,
            before,
            "{text:?} changed the configuration"
        );
    }
    // Every other object file the same: an empty one is refused with SGE's words.
    let queues = c.qconf(&["-sql"]).stdout;
    std::fs::write(&file, "").unwrap();
    for (option, then) in [
        ("-Aq", ""),
        ("-Mq", ""),
        ("-Ae", "invalid format\n"),
        ("-Ap", "error reading in file\n"),
        ("-Au", "error reading in file\n"),
        ("-Msconf", "error reading in file\n"),
        ("-Ahgrp", ""),
        ("-Arqs", ""),
        ("-Mrqs", ""),
    ] {
        let bad = c.qconf(&[option, path]);
        assert_eq!(bad.code, 1, "{option}: {bad:?}");
        assert_eq!(
            bad.stderr,
            format!("error: error reading file: \"{path}\"\n{then}"),
            "{option}"
        );
    }
    let bad = c.qconf(&["-Mc", path]);
    assert_eq!(
        (bad.code, bad.stderr.as_str()),
        (
            1,
            format!("Complex attribute file \"{path}\" is not correct\n").as_str()
        )
    );
    assert_eq!(c.qconf(&["-sql"]).stdout, queues);
    std::fs::write(&file, "load_report_time 0:0:1\nmax_unheard 0:0:4\n").unwrap();
    let good = c.qconf(&["-Mconf", file.to_str().unwrap()]);
    assert_eq!(
        (good.code, good.stderr.as_str()),
        (0, "root@head modified \"global\" in configuration list\n")
    );
    let am = c.qconf(&["-am", "alice"]);
    assert_eq!(am.stderr, "root@head added \"alice\" to manager list\n");
    c.qconf(&["-ae", "node5"]);

    c.stop_master(Signal::SIGTERM);
    c.start_master();
    let conf = c.qconf(&["-sconf"]).stdout;
    assert!(
        conf.contains("load_report_time             0:0:1\n"),
        "{conf}"
    );
    assert!(
        conf.contains("max_unheard                  0:0:4\n"),
        "{conf}"
    );
    assert!(c.qconf(&["-sm"]).stdout.contains("alice\n"));
    assert_eq!(c.qconf(&["-sel"]).stdout, "node5\n");

    // -mconf through the editor.
    let out = std::process::Command::new(gantry_tests::bin("qconf"))
        .arg("-mconf")
        .env("GANTRY_HOME", c.home())
        .env("EDITOR", "sed -i s/^min_uid.*/min_uid\\ 500/")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "root@head modified \"global\" in configuration list\n"
    );
    assert!(c
        .qconf(&["-sconf"])
        .stdout
        .contains("min_uid                      500\n"));
}

#[test]
fn silent_execd_becomes_unreachable_and_returns() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    c.start_execd("node1", LOCAL, Some(&c.token()), None);
    c.wait_host_reporting("node1");
    assert!(c.execds[0].log_text().contains("reporting load every 40 s"));
    // A configuration change reaches the connected execd at once.
    c.fast_reports("0:0:3");
    wait_until(
        "the execd to pick up load_report_time",
        Duration::from_secs(10),
        || {
            c.execds[0]
                .log_text()
                .contains("load_report_time is now 1 s")
        },
    );
    c.execds[0].stop(Signal::SIGKILL);
    wait_until("node1 to be unreachable", Duration::from_secs(20), || {
        c.qhost(&["-q"]).stdout.contains("0/0/")
            && c.qhost(&["-q"])
                .stdout
                .lines()
                .any(|l| l.starts_with("   all.q") && l.ends_with('u'))
    });
    let line = c.qhost_line("node1").unwrap();
    let f: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(f[6], "-", "LOAD of an unreachable host: {line}");
    assert_ne!(f[2], "-", "NCPU is static and stays: {line}");
    wait_until(
        "the master to log node1 as unreachable",
        Duration::from_secs(10),
        || c.master_log().contains("execd unreachable"),
    );
    // Restarted without a token: it reuses its certificate.
    c.start_execd("node1", LOCAL, None, None);
    wait_until("node1 to be back", Duration::from_secs(20), || {
        c.qhost(&["-q"])
            .stdout
            .lines()
            .any(|l| l.starts_with("   all.q") && !l.ends_with('u'))
    });
    c.wait_host_reporting("node1");
}

#[test]
fn execd_reconnects_after_a_master_restart() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    c.fast_reports("0:0:5");
    c.start_execd("node1", LOCAL, Some(&c.token()), None);
    c.wait_host_reporting("node1");
    c.stop_master(Signal::SIGKILL);
    c.start_master();
    c.wait_host_reporting("node1");
    assert!(c.execds[0].log_text().contains("connection to the master"));
}

#[test]
fn non_manager_is_denied_and_nothing_changes() {
    if !is_root() {
        skip_loudly(
            "non_manager_is_denied_and_nothing_changes",
            "needs root to run a command as user nobody",
        );
        return;
    }
    let mut c = Cluster::init(&[]);
    c.start_master();
    let home = c.home();
    let out = c.client_at(&home, "qconf", &["-ae", "node3"], Some("nobody"));
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        "denied: \"nobody\" must be manager for this operation\n"
    );
    let out = c.client_at(&home, "qconf", &["-am", "nobody"], Some("nobody"));
    assert_eq!(
        out.stderr,
        "denied: \"nobody\" must be manager for this operation\n"
    );
    let file = c.dir.path().join("global");
    std::fs::write(&file, "min_uid 0\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = c.client_at(
        &home,
        "qconf",
        &["-Mconf", file.to_str().unwrap()],
        Some("nobody"),
    );
    assert_eq!(
        out.stderr,
        "denied: \"nobody\" must be manager for this operation\n"
    );
    // Reading is allowed.
    let sm = c.client_at(&home, "qconf", &["-sm"], Some("nobody"));
    assert_eq!(sm.code, 0);
    assert!(!sm.stdout.contains("nobody"));
    assert_eq!(c.qconf(&["-sel"]).stderr, "no execution host defined\n");
    assert!(c
        .qconf(&["-sconf"])
        .stdout
        .contains("min_uid                      1000\n"));
}

#[test]
fn queue_attributes_modified_with_mattr() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    let out = c.qconf(&["-mattr", "queue", "slots", "[vm=8]", "all.q"]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "root@head modified \"all.q\" in cluster queue list\n")
    );
    let q = c.qconf(&["-sq", "all.q"]).stdout;
    assert!(q.contains("slots                 1,[vm=8]\n"), "{q}");
    c.qconf(&["-mattr", "queue", "slots", "[vm=4]", "all.q"]);
    c.qconf(&["-mattr", "queue", "h_rt", "1:0:0", "all.q"]);
    let q = c.qconf(&["-sq", "all.q"]).stdout;
    assert!(q.contains("slots                 1,[vm=4]\n"), "{q}");
    assert!(q.contains("h_rt                  1:0:0\n"), "{q}");
    let bad = c.qconf(&["-mattr", "queue", "slots", "many", "all.q"]);
    assert_eq!(
        (bad.code, bad.stderr.as_str()),
        (1, "error parsing unsigned long value from string \"many\"\nError during parsing of attribute value \"many\"\n")
    );
    let bad = c.qconf(&["-mattr", "queue", "colour", "blue", "all.q"]);
    assert_eq!(bad.code, 1);
    let bad = c.qconf(&["-mattr", "queue", "slots", "2", "nosuch.q"]);
    assert_eq!(
        (bad.code, bad.stderr.as_str()),
        (1, "denied: cluster queue \"nosuch.q\" does not exist\n")
    );
    assert_eq!(
        c.qconf(&["-sq", "all.q"]).stdout,
        q,
        "refused changes change nothing"
    );
}

#[test]
fn host_groups_added_modified_resolved_and_deleted() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    let file = c.dir.path().join("hg");
    std::fs::write(&file, "group_name @small\nhostlist n1 n2\n").unwrap();
    // Hosts must be the cell's (SGE: must resolve): refused whole, nothing added.
    let out = c.qconf(&["-Ahgrp", file.to_str().unwrap()]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "unable to resolve host \"n1\"\n")
    );
    assert_eq!(c.qconf(&["-shgrpl"]).stdout, "@allhosts\n");
    for h in ["n1", "n2", "n3", "n4"] {
        assert_eq!(c.qconf(&["-ae", h]).code, 0, "qconf -ae {h}");
    }
    let out = c.qconf(&["-Ahgrp", file.to_str().unwrap()]);
    assert_eq!(
        out.stderr, "root@head added \"@small\" to host group list\n",
        "{out:?}"
    );
    let dup = c.qconf(&["-Ahgrp", file.to_str().unwrap()]);
    assert_eq!(
        (dup.code, dup.stderr.as_str()),
        (1, "host group \"@small\" already exists\n")
    );
    std::fs::write(&file, "group_name @big\nhostlist @small n3\n").unwrap();
    assert_eq!(c.qconf(&["-Ahgrp", file.to_str().unwrap()]).code, 0);
    assert_eq!(c.qconf(&["-shgrp_resolved", "@big"]).stdout, "n1 n2 n3\n");
    // A cycle and an unknown member are refused and change nothing.
    std::fs::write(&file, "group_name @small\nhostlist n1 @big\n").unwrap();
    let cyc = c.qconf(&["-Mhgrp", file.to_str().unwrap()]);
    assert_eq!(
        (cyc.code, cyc.stderr.as_str()),
        (1, "denied: host group \"@small\" would contain itself\n")
    );
    std::fs::write(&file, "group_name @small\nhostlist @nosuch\n").unwrap();
    let unknown = c.qconf(&["-Mhgrp", file.to_str().unwrap()]);
    assert_eq!(
        unknown.stderr,
        "denied: host group \"@nosuch\" does not exist\n"
    );
    assert_eq!(
        c.qconf(&["-shgrp", "@small"]).stdout,
        "group_name @small\nhostlist n1 n2\n"
    );
    // -Mhgrp naming a host the cell does not know changes nothing (the real hosts stay).
    std::fs::write(&file, "group_name @small\nhostlist n1 nosuchhost\n").unwrap();
    let unknown = c.qconf(&["-Mhgrp", file.to_str().unwrap()]);
    assert_eq!(
        (unknown.code, unknown.stderr.as_str()),
        (1, "unable to resolve host \"nosuchhost\"\n")
    );
    assert_eq!(
        c.qconf(&["-shgrp", "@small"]).stdout,
        "group_name @small\nhostlist n1 n2\n"
    );
    // -mhgrp through the editor.
    let out = std::process::Command::new(gantry_tests::bin("qconf"))
        .args(["-mhgrp", "@small"])
        .env("GANTRY_HOME", c.home())
        .env("EDITOR", "sed -i s/n2/n4/")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "root@head modified \"@small\" in host group list\n"
    );
    assert_eq!(c.qconf(&["-shgrp_resolved", "@big"]).stdout, "n1 n4 n3\n");
    // A referenced group cannot be deleted; an unreferenced one can.
    let del = c.qconf(&["-dhgrp", "@small"]);
    assert_eq!(
        (del.code, del.stderr.as_str()),
        (
            1,
            "denied: host group \"@small\" is still referenced in host group \"@big\"\n"
        )
    );
    let del = c.qconf(&["-dhgrp", "@allhosts"]);
    assert_eq!(
        del.stderr,
        "denied: host group \"@allhosts\" is still referenced in cluster queue \"all.q\"\n"
    );
    assert_eq!(
        c.qconf(&["-dhgrp", "@big"]).stderr,
        "root@head removed \"@big\" from host group entry list\n"
    );
    assert_eq!(c.qconf(&["-shgrpl"]).stdout, "@allhosts\n@small\n");
    // Survives a restart.
    c.stop_master(Signal::SIGTERM);
    c.start_master();
    assert_eq!(
        c.qconf(&["-shgrp", "@small"]).stdout,
        "group_name @small\nhostlist n1 n4\n"
    );
}

#[test]
fn usersets_as_sge_manages_them() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    assert_eq!(
        c.qconf(&["-sul"]).stdout,
        "arusers\ndeadlineusers\ndefaultdepartment\n"
    );
    let out = c.qconf(&["-au", "user1,user2", "arusers"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, "added \"user1\" to access list \"arusers\"\nadded \"user2\" to access list \"arusers\"\n"));
    assert_eq!(
        c.qconf(&["-su", "arusers"]).stdout,
        "name    arusers\ntype    ACL\nfshare  0\noticket 0\nentries user1,user2\n"
    );
    let out = c.qconf(&["-du", "user2", "arusers"]);
    assert_eq!(
        out.stderr,
        "deleted user \"user2\" from access list \"arusers\"\n"
    );
    let out = c.qconf(&["-du", "user9", "arusers"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "user \"user9\" is not in access list \"arusers\"\n")
    );
    // -au creates a new access list; -dul deletes it; built-ins stay.
    assert_eq!(c.qconf(&["-au", "user3", "testusers"]).code, 0);
    assert_eq!(
        c.qconf(&["-su", "testusers"]).stdout.lines().last(),
        Some("entries user3")
    );
    let out = c.qconf(&["-dul", "testusers"]);
    assert_eq!(
        out.stderr,
        "root@head removed \"testusers\" from userset list\n"
    );
    assert_eq!(c.qconf(&["-dul", "arusers"]).code, 1);
    let file = c.dir.path().join("us");
    std::fs::write(
        &file,
        "name staff\ntype ACL DEPT\nfshare 0\noticket 0\nentries alice,@wheel\n",
    )
    .unwrap();
    assert_eq!(
        c.qconf(&["-Au", file.to_str().unwrap()]).stderr,
        "root@head added \"staff\" to userset list\n"
    );
    std::fs::write(&file, "name staff\ntype NOPE\n").unwrap();
    let bad = c.qconf(&["-Mu", file.to_str().unwrap()]);
    assert_eq!(
        (bad.code, bad.stderr.as_str()),
        (1, "line 2: invalid userset type \"NOPE\" (ACL, DEPT)\n")
    );
    c.stop_master(Signal::SIGTERM);
    c.start_master();
    assert_eq!(
        c.qconf(&["-su", "staff"]).stdout.lines().nth(1),
        Some("type    ACL DEPT")
    );
    assert_eq!(
        c.qconf(&["-su", "arusers"]).stdout.lines().last(),
        Some("entries user1")
    );
}

/// The spool holds every job's environment: the master's user's alone (issue 34). And
/// an argument that is not UTF-8 is refused by any command, never a panic.
#[test]
fn the_spool_is_private_and_non_utf8_arguments_are_refused() {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let mut c = Cluster::init(&[]);
    c.start_master();
    let private = |c: &Cluster, when: &str| {
        for file in ["spool.redb", "spool.journal"] {
            let mode = std::fs::metadata(c.home().join(file))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{file} {when}: {mode:o}");
        }
    };
    private(&c, "at start");
    // Made readable by all (as an earlier version left them): private again at start.
    for file in ["spool.redb", "spool.journal"] {
        std::fs::set_permissions(c.home().join(file), std::fs::Permissions::from_mode(0o644))
            .unwrap();
    }
    c.stop_master(nix::sys::signal::Signal::SIGTERM);
    c.start_master();
    private(&c, "after a restart");
    let out = std::process::Command::new(gantry_tests::bin("qsub"))
        .arg("-N")
        .arg(std::ffi::OsStr::from_bytes(b"job\xff"))
        .args(["-b", "y", "true"])
        .env("GANTRY_HOME", c.home())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "error: argument 2 is not valid UTF-8: job\u{FFFD}\n"
    );
    assert_eq!(c.client("qstat", &["-u", "*"]).stdout, "");
}
