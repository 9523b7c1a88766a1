//! Ordinary users against the daemons' doors, written as the attacks: thousands of idle
//! connections to the master's and an execd's client socket, frames announced large
//! and sent slowly or not at all, and QUIC peers with no certificate opening streams.
//! See `gantry_net::door` for what the doors let in.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use gantry_proto::frame::length_prefix;
use gantry_proto::{encode, Hello, PeerRole};
use gantry_tests::{ensure_user, need_root, wait_until, Cluster};

/// The resident memory of a process, bytes.
fn rss(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb * 1024
}

const MB: u64 = 1_000_000;

/// `user` opening up to `count` connections to `socket` (with as many descriptors as
/// it may have) and holding them: the process, once it has said how many it opened.
/// The checks that need the attacker's connections held run within the daemon's
/// request deadline of its first ones.
fn hold_connections(user: &str, socket: &Path, count: usize) -> (Child, usize) {
    let script = r#"use IO::Socket::UNIX;
my ($path, $count) = @ARGV;
my @held;
for (1 .. $count) {
    my $s = IO::Socket::UNIX->new(Peer => $path, Type => SOCK_STREAM) or last;
    push @held, $s;
}
$| = 1;
print "opened ", scalar(@held), "\n";
sleep 600;
"#;
    let mut child = Command::new("runuser")
        // As many descriptors as the user may have (its hard limit).
        .args([
            "-u",
            user,
            "--",
            "sh",
            "-c",
            r#"ulimit -n "$(ulimit -Hn)"; exec perl -e "$1" "$2" "$3""#,
            "sh",
            script,
        ])
        .arg(socket)
        .arg(count.to_string())
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let opened: usize = line
        .trim()
        .strip_prefix("opened ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the attacker said {line:?}"));
    (child, opened)
}

/// End an attacker: its whole process group (runuser, the shell, perl).
fn stop(attacker: &mut Child) {
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(attacker.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = attacker.wait();
}

fn timed(
    c: &Cluster,
    home: &Path,
    user: Option<&str>,
    program: &str,
    args: &[&str],
) -> (gantry_tests::Out, Duration) {
    let t = Instant::now();
    let out = c.client_at(home, program, args, user);
    (out, t.elapsed())
}

#[test]
fn one_user_holding_thousands_of_connections_locks_out_nobody() {
    if !need_root("one_user_holding_thousands_of_connections_locks_out_nobody") {
        return;
    }
    ensure_user("gtuser1");
    ensure_user("gtuser2");
    let c = Cluster::one_host();
    let master = c.master.as_ref().unwrap().pid();
    let execd_home = c.execd_home("node1");

    // The master's socket: the attacker gets its share, no more.
    let (mut attacker, opened) = hold_connections("gtuser2", &c.home().join("gantry.sock"), 20_000);
    assert!(opened >= 1000, "the attacker opened only {opened}");
    eprintln!("the attacker opened {opened} connections");
    let (out, took) = timed(&c, &c.home(), Some("gtuser1"), "qstat", &["-u", "*"]);
    assert_eq!(out.code, 0, "{out:?}");
    eprintln!("another user's qstat during the attack: {took:?}");
    let (out, took) = timed(&c, &c.home(), None, "qconf", &["-sm"]);
    assert_eq!(out.code, 0, "{out:?}");
    eprintln!("root's qconf -sm during the attack: {took:?}");
    // The attacker is told why.
    let out = c.as_user("gtuser2", "qstat", &[]);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("error: user \"gtuser2\" has ")
            && out
                .stderr
                .contains(" connections open to the master (at most "),
        "{out:?}"
    );
    assert!(
        c.master_log()
            .contains("client connections refused at the door"),
        "{}",
        c.master_log()
    );
    stop(&mut attacker);

    // The execd's relay socket: another user's job on that host is unharmed, and the
    // relay still serves other users.
    let (mut attacker, opened) =
        hold_connections("gtuser2", &execd_home.join("gantry.sock"), 20_000);
    assert!(opened >= 1000, "the attacker opened only {opened}");
    eprintln!("the attacker opened {opened} connections");
    let out = c.client_at(
        &execd_home,
        "qsub",
        &[
            "-terse",
            "-wd",
            "/tmp",
            "-o",
            "/dev/null",
            "-j",
            "y",
            "-b",
            "y",
            "true",
        ],
        Some("gtuser1"),
    );
    assert_eq!(out.code, 0, "{out:?}");
    let id = out.stdout.trim().to_string();
    wait_until("the job to be accounted", Duration::from_secs(30), || {
        c.client("qacct", &["-j", &id]).code == 0
    });
    let acct = c.client("qacct", &["-j", &id]).stdout;
    assert!(acct.contains("failed       0"), "{acct}");
    assert!(acct.contains("exit_status  0"), "{acct}");
    let out = c.client_at(&execd_home, "qstat", &[], Some("gtuser2"));
    assert!(
        out.stderr
            .contains(" connections open to the execd (at most "),
        "{out:?}"
    );
    stop(&mut attacker);
    eprintln!("master RSS after both attacks: {} MB", rss(master) / MB);

    // Large requests under way: a user's fifth 16 MiB frame at once is refused before
    // a byte of it is read.
    let script = r#"use IO::Socket::UNIX;
my ($path, $hex) = @ARGV;
my @held;
for (1 .. 5) {
    my $s = IO::Socket::UNIX->new(Peer => $path, Type => SOCK_STREAM) or die "connect: $!";
    $s->autoflush(1);
    print $s pack("H*", $hex), pack("N", 16 * 1024 * 1024), "x";
    push @held, $s;
    select(undef, undef, undef, 0.3);
}
my $last = $held[4];
local $/;
my $answer = <$last>;
print $answer;
"#;
    let hello: String = hello_frame().iter().map(|b| format!("{b:02x}")).collect();
    let out = Command::new("runuser")
        .args(["-u", "gtuser2", "--", "perl", "-e", script])
        .arg(c.home().join("gantry.sock"))
        .arg(&hello)
        .output()
        .unwrap();
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(
        answer.contains(
            "error: user \"gtuser2\" has 64 MiB of requests under way to the master (at most 64 MiB at once)"
        ),
        "{out:?}"
    );
}

/// A client's hello, framed.
fn hello_frame() -> Vec<u8> {
    let hello = encode(&Hello::new(PeerRole::Client, "attack")).unwrap();
    let mut out = length_prefix(hello.len()).to_vec();
    out.extend_from_slice(&hello);
    out
}

/// Connections that said hello and announced a 16 MiB request, having sent `sent`
/// bytes of it.
fn stalled(socket: &Path, count: usize, sent: usize) -> Vec<UnixStream> {
    (0..count)
        .map(|_| {
            let mut s = UnixStream::connect(socket).unwrap();
            s.write_all(&hello_frame()).unwrap();
            s.write_all(&length_prefix(gantry_proto::frame::MAX_FRAME))
                .unwrap();
            let chunk = vec![7u8; 1 << 20];
            let mut left = sent;
            while left > 0 {
                let n = left.min(chunk.len());
                s.write_all(&chunk[..n]).unwrap();
                left -= n;
            }
            s
        })
        .collect()
}

/// Has the daemon closed this connection (read gives end of file or an error)?
fn closed_by_daemon(s: &mut UnixStream) -> bool {
    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let mut b = [0u8; 64];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return false,
            Err(_) => return true,
        }
    }
}

#[test]
fn stalled_frames_hold_no_memory_and_time_out() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    let master = c.master.as_ref().unwrap().pid();
    let socket = c.home().join("gantry.sock");
    let start = rss(master);
    // Announced 16 MiB, one byte sent: nothing like 16 MiB is held for any of them.
    let mut barely = stalled(&socket, 20, 1);
    // A request answered meanwhile, so the master has read what they sent.
    assert_eq!(c.qconf(&["-sm"]).code, 0);
    std::thread::sleep(Duration::from_millis(300));
    let during = rss(master);
    eprintln!(
        "master RSS {} MB at start, {} MB with 20 stalled 16 MiB frames",
        start / MB,
        during / MB
    );
    assert!(during < start + 20 * MB, "{start} -> {during}");
    // Sent all but one byte: held while it comes, and closed at the deadline.
    let mut nearly = stalled(&socket, 20, gantry_proto::frame::MAX_FRAME - 1);
    let stalled_at = Instant::now();
    wait_until(
        "the master to close every stalled connection",
        Duration::from_secs(30),
        || barely.iter_mut().all(closed_by_daemon) && nearly.iter_mut().all(closed_by_daemon),
    );
    let waited = stalled_at.elapsed();
    assert!(waited < Duration::from_secs(15), "{waited:?}");
    assert_eq!(c.qconf(&["-sm"]).code, 0);
    let after = rss(master);
    eprintln!(
        "master RSS {} MB once the stalled connections were closed ({waited:?} after)",
        after / MB
    );
    assert!(after < start + 20 * MB, "{start} -> {after}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quic_peers_without_a_certificate_hold_no_memory() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    let master = c.master.as_ref().unwrap().pid();
    let token = gantry_net::cell::JoinToken::parse(&c.token()).unwrap();
    let config =
        gantry_net::tls::join_client_config(token.ca_fingerprint, gantry_proto::PROTOCOL_VERSION)
            .unwrap();
    let addr: std::net::SocketAddr = c.master_addr("127.0.0.1").parse().unwrap();
    let start = rss(master);
    let mut held = Vec::new();
    let mut conns = Vec::new();
    for _ in 0..10 {
        let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        let conn = endpoint
            .connect_with(config.clone(), addr, gantry_net::tls::MASTER_SERVER_NAME)
            .unwrap()
            .await
            .unwrap();
        // As many streams as the master lets it open, each sent a hello that announces
        // 16 MiB and as much of it as flow control lets through.
        for _ in 0..10 {
            let Ok(Ok((mut send, recv))) =
                tokio::time::timeout(Duration::from_millis(300), conn.open_bi()).await
            else {
                break;
            };
            let mut junk = length_prefix(gantry_proto::frame::MAX_FRAME).to_vec();
            junk.extend(std::iter::repeat_n(1u8, 4 << 20));
            let _ = tokio::time::timeout(Duration::from_millis(500), send.write_all(&junk)).await;
            held.push((send, recv));
        }
        conns.push((endpoint, conn));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let during = rss(master);
    eprintln!(
        "master RSS {} MB at start, {} MB with 10 unauthenticated QUIC connections",
        start / MB,
        during / MB
    );
    assert!(during < start + 20 * MB, "{start} -> {during}");
    drop(held);
    drop(conns);
    // The master still serves.
    assert_eq!(c.qconf(&["-sm"]).code, 0);
    c.stop_master(nix::sys::signal::Signal::SIGTERM);
}
