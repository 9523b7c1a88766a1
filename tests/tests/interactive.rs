//! Interactive jobs end to end: `qrsh` running a command on the cluster with its
//! standard streams carried both ways and its exit status returned, refused as SGE
//! refuses it when nothing is free, accounted like any job.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::process::CommandExt;
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
            "$JOB_SCRIPT",
            "$ENVIRONMENT",
        ],
        "",
    );
    assert_eq!(out.code, 0, "{out:?}");
    let host = std::process::Command::new("hostname").output().unwrap();
    let host = String::from_utf8_lossy(&host.stdout).trim().to_string();
    assert_eq!(
        out.stdout,
        format!("{host}\ngtuser1\nhostname; QRSH BATCH\n"),
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
    // -noshell: the command itself, its arguments as given (no shell to split or
    // expand them); a shell's built-in is then no command at all.
    let out = qrsh(&c, "gtuser1", &["-noshell", "echo", "$HOME", "a  b"], "");
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "$HOME a  b\n"),
        "{out:?}"
    );
    let out = qrsh(&c, "gtuser1", &["-noshell", "exit 3"], "");
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.starts_with("error: can't start \"exit 3\": "),
        "{out:?}"
    );
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

/// A terminal driven as a person drives one: a tmux session of its own, keys sent,
/// the screen read.
struct Tmux {
    name: String,
}

impl Tmux {
    /// `command` in a detached 100x30 window without a status line.
    fn start(name: &str, command: &str) -> Tmux {
        let _ = std::process::Command::new("tmux")
            .args(["kill-session", "-t", name])
            .output();
        let out = std::process::Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-s",
                name,
                "-x",
                "100",
                "-y",
                "30",
                command,
            ])
            .output()
            .expect("tmux");
        assert!(out.status.success(), "tmux: {out:?}");
        let t = Tmux { name: name.into() };
        t.tmux(&["set-option", "-t", name, "status", "off"]);
        t
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("tmux")
            .args(args)
            .output()
            .expect("tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.name];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", &self.name])
    }

    fn wait_for(&self, what: &str, seen: impl Fn(&str) -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if seen(&screen) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The command (run as `sh -c 'COMMAND; echo exited-$?'`) has ended: its exit status
    /// as the shell around it printed it.
    fn wait_exit(&self, what: &str) -> i32 {
        let status = |screen: &str| {
            screen
                .lines()
                .find_map(|l| l.trim().strip_prefix("exited-"))
                .and_then(|s| s.parse::<i32>().ok())
        };
        self.wait_for(&format!("{what} to end"), |s| status(s).is_some());
        status(&self.screen()).unwrap_or(-1)
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-session", "-t", &self.name]);
    }
}

/// `qrsh` without a command at a terminal: a login shell on the node in a pseudo
/// terminal; the window's size and its changes reach it, Ctrl-C ends a remote `sleep`
/// and not the session, `exit` ends it with the shell's status; qlogin the same, and
/// both accounted under SGE's names.
#[test]
fn qrsh_and_qlogin_give_a_terminal_driven_as_a_person_would() {
    if !need_root("qrsh_and_qlogin_give_a_terminal_driven_as_a_person_would") {
        return;
    }
    if std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_err()
    {
        panic!("tmux is needed for this test (.ci/run installs it)");
    }
    ensure_user("gtuser1");
    let c = Cluster::one_host();
    // The shell around it says how the command ended, and stays.
    let command = |program: &str| {
        format!(
            "sh -c 'runuser -u gtuser1 -- env GANTRY_HOME={} {} -pty y; echo exited-$?; sleep 600'",
            c.home().display(),
            gantry_tests::bin(program).display()
        )
    };
    let t = Tmux::start(
        &format!("gantry-qrsh-{}", std::process::id()),
        &command("qrsh"),
    );
    let prompt = |s: &str| s.lines().any(|l| l.trim_end().ends_with('$'));
    t.wait_for("the remote shell's prompt", prompt);
    // A login's environment, as SGE gives a session: no job variables, the terminal's
    // type.
    t.keys(&["echo on-$JOB_NAME-$(id -un)-$TERM.", "Enter"]);
    t.wait_for("the command's output", |s| {
        s.lines().any(|l| {
            l.strip_prefix("on--gtuser1-")
                .is_some_and(|term| term.len() > 1 && term.ends_with('.'))
        })
    });
    t.keys(&["stty size", "Enter"]);
    t.wait_for("the window's size", |s| {
        s.lines().any(|l| l.trim() == "30 100")
    });
    t.tmux(&["resize-window", "-t", &t.name, "-x", "120", "-y", "40"]);
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["stty size", "Enter"]);
    t.wait_for("the new size", |s| s.lines().any(|l| l.trim() == "40 120"));
    // Ctrl-C reaches the remote foreground job as it would locally.
    t.keys(&["sleep 100; echo sleep-ended-$?", "Enter"]);
    std::thread::sleep(Duration::from_millis(500));
    t.keys(&["C-c"]);
    t.wait_for("the prompt after Ctrl-C", |s| {
        s.lines()
            .skip_while(|l| !l.contains("^C"))
            .skip(1)
            .any(|l| l.trim() == "$")
    });
    t.keys(&["echo still-here", "Enter"]);
    t.wait_for("the shell after Ctrl-C", |s| {
        s.lines().any(|l| l.trim() == "still-here")
    });
    assert!(!t.screen().contains("sleep-ended-0"), "{}", t.screen());
    t.keys(&["exit 3", "Enter"]);
    let status = t.wait_exit("qrsh");
    assert_eq!(status, 3, "{}", t.screen());
    drop(t);
    // qlogin: the same login session, with SGE's words while it is set up.
    let t = Tmux::start(
        &format!("gantry-qlogin-{}", std::process::id()),
        &command("qlogin"),
    );
    t.wait_for("qlogin's shell", |s| {
        s.contains("Your interactive job")
            && s.contains("has been successfully scheduled.")
            && prompt(s)
    });
    t.keys(&["exit", "Enter"]);
    assert_eq!(t.wait_exit("qlogin"), 0, "{}", t.screen());

    drop(t);
    wait_until(
        "both sessions to be accounted",
        Duration::from_secs(30),
        || {
            c.client("qacct", &["-j", "QRLOGIN"]).code == 0
                && c.client("qacct", &["-j", "QLOGIN"]).code == 0
        },
    );
}

/// The refusals SGE 8.1.9's qrsh gave for the same command lines
/// (`tests/fixtures/sge/interactive/0[12]_*.txt`), word for word, stream for stream,
/// exit status for exit status: options it cannot read, requests for what does not
/// exist, and what can never run now (quiet, and with `-verbose`).
#[test]
fn qrsh_refuses_what_sge_refuses_in_its_words() {
    if !need_root("qrsh_refuses_what_sge_refuses_in_its_words") {
        return;
    }
    use gantry_tests::transcript::{step, steps};
    let recorded: Vec<_> = [
        include_str!("../fixtures/sge/interactive/01_qrsh_basic.txt"),
        include_str!("../fixtures/sge/interactive/02_qrsh_refused.txt"),
    ]
    .iter()
    .flat_map(|t| steps(t))
    .collect();
    ensure_user("gtuser1");
    let c = Cluster::one_host();
    for (command, args) in [
        (
            "qrsh -now maybe hostname",
            &["-now", "maybe", "hostname"][..],
        ),
        (
            "qrsh -nosuchoption hostname",
            &["-nosuchoption", "hostname"],
        ),
        ("qrsh -l nosuch=1 hostname", &["-l", "nosuch=1", "hostname"]),
        (
            "qrsh -now n -l nosuch=1 hostname",
            &["-now", "n", "-l", "nosuch=1", "hostname"],
        ),
        ("qrsh -q nosuch.q hostname", &["-q", "nosuch.q", "hostname"]),
        (
            "qrsh -pe nosuchpe 2 hostname",
            &["-pe", "nosuchpe", "2", "hostname"],
        ),
        (
            "qrsh -l arch=nosucharch hostname",
            &["-l", "arch=nosucharch", "hostname"],
        ),
    ] {
        let want = step(&recorded, command);
        let got = qrsh(&c, "gtuser1", args, "");
        assert_eq!(
            (got.stdout.as_str(), got.stderr.as_str(), got.code),
            (want.stdout.as_str(), want.stderr.as_str(), want.exit),
            "{command}"
        );
    }
    // -verbose: the submission on standard output (the job id is this cell's), the
    // wait and its end on standard error.
    let want = step(&recorded, "qrsh -now n -verbose hostname");
    let got = qrsh(&c, "gtuser1", &["-now", "n", "-verbose", "hostname"], "");
    let job = got
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("Your job "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{got:?}"))
        .to_string();
    assert_eq!(got.code, 0, "{got:?}");
    let host = std::process::Command::new("hostname").output().unwrap();
    let host = String::from_utf8_lossy(&host.stdout).trim().to_string();
    assert_eq!(
        got.stdout,
        want.stdout
            .replace("vm\n", &format!("{host}\n"))
            .replace("153", &job),
        "{got:?}"
    );
    assert_eq!(
        got.stderr,
        want.stderr
            .replace("153", &job)
            .replace("host vm ", "host node1 "),
        "{got:?}"
    );
}

/// From a compute host: `qrsh` talks to its own execd (the relay), which carries the
/// session over its connection to the master, which carries it over the other execd's
/// to the task; three hosts in network namespaces, no port opened on either execd.
#[test]
fn qrsh_from_a_compute_host_reaches_a_task_on_another() {
    if !need_root("qrsh_from_a_compute_host_reaches_a_task_on_another") {
        return;
    }
    ensure_user("gtuser1");
    let net = gantry_tests::Netns::create(3);
    let c = Cluster::in_namespaces(&net, "0:0:3");
    let mut child = std::process::Command::new("runuser")
        .args(["-u", "gtuser1", "--"])
        .arg(gantry_tests::bin("qrsh"))
        .args(["-q", "all.q@node2", "echo", "on", "$HOSTNAME;", "wc", "-c"])
        .env("GANTRY_HOME", c.execd_home("node1"))
        .current_dir("/tmp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&vec![b'x'; 300_000]).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status.code()
        ),
        ("on node2\n300000\n".to_string(), String::new(), Some(0))
    );
}

/// A running qrsh's job as `qstat -j` shows it, in the lines SGE 8.1.9 shows for one
/// (`tests/fixtures/sge/interactive/03_qrsh_running_qstat.txt`, job 158 `qrsh -N
/// sleeper sleep 30`): its name, output paths, script file and type.
#[test]
fn a_running_qrsh_shows_in_qstat_as_sge_shows_it() {
    if !need_root("a_running_qrsh_shows_in_qstat_as_sge_shows_it") {
        return;
    }
    ensure_user("gtuser1");
    let c = Cluster::one_host();
    let mut child = std::process::Command::new("runuser")
        .args(["-u", "gtuser1", "--"])
        .arg(gantry_tests::bin("qrsh"))
        .args(["-N", "sleeper", "sleep", "300"])
        .env("GANTRY_HOME", c.home())
        .current_dir("/tmp")
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the qrsh job to run", Duration::from_secs(30), || {
        c.client("qstat", &["-u", "*", "-s", "r"])
            .stdout
            .contains(" sleeper ")
    });
    let recorded = String::from_utf8_lossy(include_bytes!(
        "../fixtures/sge/interactive/03_qrsh_running_qstat.txt"
    ))
    .into_owned();
    let sge: Vec<&str> = recorded
        .lines()
        .skip_while(|l| *l != "=== [root] $ qstat -j 158")
        .take_while(|l| !l.starts_with("--- stderr"))
        .collect();
    let detail = c.client("qstat", &["-j", "1"]);
    assert_eq!(detail.code, 0, "{detail:?}");
    for key in [
        "job_name:",
        "stdout_path_list:",
        "stderr_path_list:",
        "script_file:",
        "job_type:",
    ] {
        let ours = detail.stdout.lines().find(|l| l.starts_with(key));
        let theirs = sge.iter().copied().find(|l| l.starts_with(key));
        assert_eq!(ours, theirs, "{key} {detail:?}");
    }
    // qrsh killed: its session is lost, and the job (sleeping for 300 s) is hung up
    // on, ends and is accounted.
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = child.wait();
    wait_until(
        "the job to end with its session",
        Duration::from_secs(30),
        || c.client("qacct", &["-j", "sleeper"]).code == 0,
    );
    assert_eq!(c.client("qstat", &["-u", "*"]).stdout, "");
}

/// The commands a job runs reach the cluster through their host's execd, as SGE's find
/// theirs through SGE_ROOT and SGE_CELL: a job asks `qstat -j` about itself.
#[test]
fn a_job_talks_to_the_cluster_through_its_execd() {
    if !need_root("a_job_talks_to_the_cluster_through_its_execd") {
        return;
    }
    ensure_user("gtuser1");
    let c = Cluster::one_host();
    let out_file = format!("/tmp/gantry-inside-{}", std::process::id());
    let _ = std::fs::remove_file(&out_file);
    let script = format!(
        "{} -j $JOB_ID > {out_file}.part 2>&1; echo \"home=$GANTRY_HOME\" >> {out_file}.part; mv {out_file}.part {out_file}",
        gantry_tests::bin("qstat").display()
    );
    let id = c.submit(
        "gtuser1",
        &["-b", "y", "-o", "/dev/null", "-j", "y", "sh", "-c", &script],
    );
    wait_until("the job's qstat", Duration::from_secs(30), || {
        std::path::Path::new(&out_file).exists()
    });
    let text = std::fs::read_to_string(&out_file).unwrap();
    let _ = std::fs::remove_file(&out_file);
    assert!(
        text.contains(&format!("job_number:                 {id}\n")),
        "{text}"
    );
    assert!(
        text.contains(&format!("home={}\n", c.execd_home("node1").display())),
        "{text}"
    );
}

/// A directory under /tmp the test users can read and write, removed when dropped.
struct SharedDir(std::path::PathBuf);

impl SharedDir {
    fn new(name: &str) -> SharedDir {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::path::PathBuf::from(format!("/tmp/gantry-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
        SharedDir(dir)
    }

    fn file(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }

    fn write(&self, name: &str, text: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let path = self.file(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }
}

impl Drop for SharedDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A PE with `control_slaves TRUE` (and `job_is_first_task`, `accounting_summary` as
/// given) offered by all.q.
fn add_pe(c: &Cluster, dir: &SharedDir, name: &str, first_task: bool, summary: bool) {
    let word = |b: bool| if b { "TRUE" } else { "FALSE" };
    let pe = gantry_tests::pe_file(
        name,
        &[
            ("slots", "8"),
            ("allocation_rule", "$round_robin"),
            ("control_slaves", "TRUE"),
            ("job_is_first_task", word(first_task)),
            ("accounting_summary", word(summary)),
        ],
    );
    let out = c.qconf(&["-Ap", &dir.write(&format!("{name}.pe"), &pe)]);
    assert_eq!(out.code, 0, "{out:?}");
    let out = c.qconf(&["-aattr", "queue", "pe_list", name, "all.q"]);
    assert_eq!(out.code, 0, "{out:?}");
}

/// SGE's job script of `tests/fixtures/sge/interactive/05_qrsh_inherit.txt`
/// (`inputs/inherit_job.sh`), as Gantry runs it: `qrsh -inherit` found where Grid
/// Engine's would be (`$SGE_ROOT/bin/$ARC`), its tasks on the job's own host.
const INHERIT_JOB: &str = r#"#!/bin/sh
PATH=$SGE_ROOT/bin/$ARC:$PATH
H=$HOSTNAME
echo "== qrsh -inherit $H hostname"; qrsh -inherit $H hostname; echo rc=$?
echo "== qrsh -inherit $H env"
qrsh -inherit $H 'env | sort | grep -E "^(JOB_ID|JOB_NAME|PE|NSLOTS|JOB_SCRIPT|REQUEST|ENVIRONMENT)="'; echo rc=$?
echo "== qrsh -inherit $H 'exit 4'"; qrsh -inherit $H 'exit 4'; echo rc=$?
echo "== qrsh -inherit $H 'echo to-stderr >&2'"; qrsh -inherit $H 'echo to-stderr >&2'; echo rc=$?
echo "== echo piped | qrsh -inherit $H cat"; echo piped | qrsh -inherit $H cat; echo rc=$?
echo "== three background tasks"
for i in 1 2 3; do ( qrsh -inherit $H "sleep 4; echo task$i done" > $OUT.task$i 2>&1; echo "task$i rc=$?" >> $OUT.task$i ) & sleep 1; done
wait
cat $OUT.task1 $OUT.task2 $OUT.task3
echo "== qrsh -inherit nosuchhost hostname"; qrsh -inherit nosuchhost hostname; echo rc=$?
echo "== qrsh -inherit localhost hostname"; qrsh -inherit localhost hostname; echo rc=$?
echo "== qrsh -inherit (no host)"; qrsh -inherit; echo rc=$?
echo "== qrsh -inherit $H (no command)"; qrsh -inherit $H </dev/null; echo rc=$?
echo "== qrsh -inherit -cwd $H pwd"; cd /tmp; qrsh -inherit -cwd $H pwd; echo rc=$?
echo "== end of job script"
"#;

/// `qrsh -inherit` inside a parallel job, as SGE 8.1.9 runs the same script
/// (`05_qrsh_inherit.txt`, jobs 167, 169, 171): tasks on the job's host with their
/// streams and exit statuses, as many at once as the host has slots for the job (less
/// the job script's with `job_is_first_task TRUE`), SGE's refusals word for word,
/// each task accounted; with `control_slaves FALSE` every task refused.
#[test]
fn qrsh_inherit_starts_tasks_of_a_parallel_job_as_sge_does() {
    if !need_root("qrsh_inherit_starts_tasks_of_a_parallel_job_as_sge_does") {
        return;
    }
    ensure_user("gtuser1");
    let c = Cluster::one_host();
    let dir = SharedDir::new("inherit");
    add_pe(&c, &dir, "ctrl", false, false);
    add_pe(&c, &dir, "ctrlfirst", true, false);
    let out = c.qconf(&["-mattr", "queue", "slots", "2", "all.q"]);
    assert_eq!(out.code, 0, "{out:?}");
    let script = dir.write("inherit_job.sh", INHERIT_JOB);
    let run = |pe: &str, tag: &str| -> (String, String, String) {
        let o = dir.file(&format!("{tag}.o"));
        let e = dir.file(&format!("{tag}.e"));
        let out = format!("OUT={}", dir.file(tag));
        let id = c.submit(
            "gtuser1",
            &[
                "-pe", pe, "2", "-N", pe, "-v", &out, "-o", &o, "-e", &e, &script,
            ],
        );
        wait_until(
            &format!("job {id} ({pe}) to be accounted"),
            Duration::from_secs(90),
            || {
                c.client("qstat", &["-u", "*"]).stdout.is_empty()
                    && c.client("qacct", &["-j", &id]).code == 0
            },
        );
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        (id, read(&o), read(&e))
    };
    let host = std::process::Command::new("hostname").output().unwrap();
    let host = String::from_utf8_lossy(&host.stdout).trim().to_string();

    // job_is_first_task FALSE: two tasks at once on the job's two slots.
    let (id, stdout, stderr) = run("ctrl", "ctrl");
    let want = format!(
        "== qrsh -inherit node1 hostname\n{host}\nrc=0\n\
         == qrsh -inherit node1 env\nENVIRONMENT=BATCH\nJOB_ID={id}\nJOB_NAME=petask\nJOB_SCRIPT=QRSH\nNSLOTS=2\nPE=ctrl\nREQUEST=petask\nrc=0\n\
         == qrsh -inherit node1 'exit 4'\nrc=4\n\
         == qrsh -inherit node1 'echo to-stderr >&2'\nrc=0\n\
         == echo piped | qrsh -inherit node1 cat\npiped\nrc=0\n\
         == three background tasks\n\
         task1 done\ntask1 rc=0\ntask2 done\ntask2 rc=0\n\
         error: executing task of job {id} failed: execution daemon on host \"node1\" didn't accept task\ntask3 rc=1\n\
         == qrsh -inherit nosuchhost hostname\nrc=1\n\
         == qrsh -inherit localhost hostname\n{host}\nrc=0\n\
         == qrsh -inherit (no host)\nrc=1\n\
         == qrsh -inherit node1 (no command)\nrc=1\n\
         == qrsh -inherit -cwd node1 pwd\n/tmp\nrc=0\n\
         == end of job script\n"
    );
    assert_eq!(stdout, want, "stderr: {stderr}");
    assert_eq!(
        stderr,
        format!(
            "to-stderr\n\
             error: executing task of job {id} failed: failed sending task to execd@nosuchhost: can't resolve host name\n\
             error: usage with \"-inherit\" option: \"qrsh -inherit ... <host> <command> [args]\"\n\
             error: usage with \"-inherit\" option: \"qrsh -inherit ... <host> <command> [args]\"\n"
        )
    );
    // Accounted per task as SGE accounts them: the job's record and one per task that
    // ran (hostname, env, exit 4, stderr, cat, two background, localhost, pwd).
    let acct = c.client("qacct", &["-j", &id]);
    let statuses: Vec<&str> = acct
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("exit_status"))
        .map(str::trim)
        .collect();
    assert_eq!(statuses.len(), 1 + 9, "{acct:?}");
    assert_eq!(
        statuses.iter().filter(|s| **s == "4").count(),
        1,
        "{acct:?}"
    );
    assert!(
        acct.stdout
            .lines()
            .filter(|l| l.starts_with("jobname"))
            .all(|l| l.trim_end().ends_with(" ctrl")),
        "{acct:?}"
    );

    // job_is_first_task TRUE: the job script holds one of the two slots.
    let (id, stdout, _) = run("ctrlfirst", "first");
    assert!(
        stdout.contains(&format!(
            "task1 done\ntask1 rc=0\n\
             error: executing task of job {id} failed: execution daemon on host \"node1\" didn't accept task\ntask2 rc=1\n\
             error: executing task of job {id} failed: execution daemon on host \"node1\" didn't accept task\ntask3 rc=1\n"
        )),
        "{stdout}"
    );

    // Outside any job: SGE's words, nothing started.
    let outside = c.as_user("gtuser1", "qrsh", &["-inherit", "node1", "hostname"]);
    assert_eq!(
        (outside.code, outside.stdout.as_str(), outside.stderr.as_str()),
        (
            1,
            "",
            "error: \"qrsh\" called with option \"-inherit\", but \"JOB_ID\" not set in environment\n"
        ),
        "{outside:?}"
    );
    // qsh (X11) is not provided, and says so.
    let qsh = c.as_user("gtuser1", "qsh", &[]);
    assert_eq!(qsh.code, 5, "{qsh:?}");
    assert!(qsh.stderr.starts_with("Unsupported: qsh "), "{qsh:?}");

    // control_slaves FALSE: no task at all.
    let out = c.qconf(&["-mattr", "pe", "control_slaves", "FALSE", "ctrl"]);
    assert_eq!(out.code, 0, "{out:?}");
    let (id, stdout, _) = run("ctrl", "noctrl");
    assert!(
        stdout.starts_with(
            "== qrsh -inherit node1 hostname\nrc=1\n== qrsh -inherit node1 env\nrc=1\n"
        ),
        "{stdout}"
    );
    let acct = c.client("qacct", &["-j", &id]);
    assert_eq!(
        acct.stdout.matches("exit_status").count(),
        1,
        "only the job's record: {acct:?}"
    );
}

/// Processes running this program, anywhere on the machine (every test host shares
/// the machine's process table: the namespaces are the network's and the host name's).
fn processes_running(program: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<i32>().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let first = cmdline.split(|b| *b == 0).next()?;
            (first == program.as_bytes()).then_some(pid)
        })
        .collect()
}

/// A real client of `qrsh -inherit`: Open MPI's `mpirun` in a Gantry PE job across two
/// hosts (network namespaces, each with its own host name) finds its hosts through
/// `PE_HOSTFILE`, `JOB_ID`, `SGE_ROOT` and `ARC` (its `gridengine` component, not
/// patched) and starts its daemon on the other host with `qrsh -inherit`; every rank
/// says where it runs; the daemon is accounted as a task; `qdel` of a job whose ranks
/// hang kills them on both hosts.
#[test]
fn open_mpi_runs_across_two_hosts_through_qrsh_inherit() {
    if !need_root("open_mpi_runs_across_two_hosts_through_qrsh_inherit") {
        return;
    }
    for tool in ["mpicc", "mpirun"] {
        let found = std::process::Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap();
        assert!(
            found.status.success(),
            "{tool} is not installed: .ci/run installs Debian's openmpi-bin and libopenmpi-dev"
        );
    }
    ensure_user("gtuser1");
    let dir = SharedDir::new("mpi");
    let program = dir.file("ranks");
    let built = std::process::Command::new("mpicc")
        .arg("-o")
        .arg(&program)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/mpi/ranks.c"))
        .output()
        .unwrap();
    assert!(built.status.success(), "mpicc: {built:?}");
    let net = gantry_tests::Netns::create(3);
    let c = Cluster::on_hosts(&net, "0:0:3");
    add_pe(&c, &dir, "ompi", false, false);
    let out = c.qconf(&["-mattr", "queue", "slots", "2", "all.q"]);
    assert_eq!(out.code, 0, "{out:?}");
    let script = dir.write(
        "mpi_job.sh",
        &format!(
            "#!/bin/sh\n\
             PATH=$SGE_ROOT/bin/$ARC:$PATH\n\
             echo \"master on $(hostname)\"\n\
             mpirun --bind-to none -np 4 {program} \"$@\"\n\
             echo mpirun rc=$?\n"
        ),
    );
    let run = |tag: &str, args: &[&str]| -> (String, String) {
        let o = dir.file(&format!("{tag}.o"));
        let mut qsub = vec![
            "-pe",
            "ompi",
            "4",
            "-N",
            tag,
            "-j",
            "y",
            "-o",
            &o,
            "-masterq",
            "all.q@node1",
            &script,
        ];
        qsub.extend_from_slice(args);
        (c.submit("gtuser1", &qsub), o)
    };
    let accounted = |id: &str| {
        wait_until(
            &format!("job {id} to be accounted"),
            Duration::from_secs(120),
            || {
                c.client("qstat", &["-u", "*"]).stdout.is_empty()
                    && c.client("qacct", &["-j", id]).code == 0
            },
        )
    };

    let (id, o) = run("ranks", &[]);
    accounted(&id);
    let out = std::fs::read_to_string(&o).unwrap_or_default();
    let mut ranks: Vec<String> = out
        .lines()
        .filter(|l| l.starts_with("rank "))
        .map(|l| l.split(" pid=").next().unwrap_or(l).to_string())
        .collect();
    ranks.sort();
    assert_eq!(
        ranks,
        [
            "rank 0 of 4 on node1 HOSTNAME=node1",
            "rank 1 of 4 on node1 HOSTNAME=node1",
            "rank 2 of 4 on node2 HOSTNAME=node2",
            "rank 3 of 4 on node2 HOSTNAME=node2",
        ],
        "{out}"
    );
    assert!(out.starts_with("master on node1\n"), "{out}");
    assert!(out.ends_with("mpirun rc=0\n"), "{out}");
    // The job's record and its task's: Open MPI's daemon on node2.
    let acct = c.client("qacct", &["-j", &id]);
    let hosts: Vec<&str> = acct
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("hostname"))
        .map(str::trim)
        .collect();
    assert_eq!(hosts, ["node1", "node2"], "{acct:?}");

    // A job on node1 alone: node2 is not its host, and takes no task of it.
    let lone = dir.write(
        "lone.sh",
        "#!/bin/sh\nPATH=$SGE_ROOT/bin/$ARC:$PATH\nqrsh -inherit node2 hostname; echo rc=$?\nqrsh -inherit node1 echo here; echo rc=$?\n",
    );
    let o = dir.file("lone.o");
    let id = c.submit(
        "gtuser1",
        &[
            "-pe", "ompi", "2", "-l", "h=node1", "-j", "y", "-o", &o, &lone,
        ],
    );
    accounted(&id);
    assert_eq!(
        std::fs::read_to_string(&o).unwrap_or_default(),
        format!("error: executing task of job {id} failed: execution daemon on host \"node2\" didn't accept task\nrc=1\nhere\nrc=0\n")
    );

    // Ranks that hang: qdel ends the job, its daemon on node2 and every rank.
    let (id, o) = run("hang", &["hang"]);
    wait_until("four ranks to start", Duration::from_secs(90), || {
        std::fs::read_to_string(&o)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("rank "))
            .count()
            == 4
    });
    assert_eq!(processes_running(&program).len(), 4);
    // qstat -g t: the job's master line and a slave line per slot on either host.
    let grouped = c.client("qstat", &["-g", "t", "-u", "*"]);
    let queues: Vec<(String, String)> = grouped
        .stdout
        .lines()
        .skip(2)
        .map(|l| {
            let tail = &l[66..];
            let mut f = tail.split_whitespace();
            (
                f.next().unwrap_or("").to_string(),
                f.next().unwrap_or("").to_string(),
            )
        })
        .collect();
    let pair = |q: &str, r: &str| (q.to_string(), r.to_string());
    assert_eq!(
        queues,
        [
            pair("all.q@node1", "MASTER"),
            pair("all.q@node1", "SLAVE"),
            pair("all.q@node1", "SLAVE"),
            pair("all.q@node2", "SLAVE"),
            pair("all.q@node2", "SLAVE"),
        ],
        "{grouped:?}"
    );
    let del = c.as_user("gtuser1", "qdel", &[&id]);
    assert_eq!(del.code, 0, "{del:?}");
    accounted(&id);
    wait_until(
        "no rank left on either host",
        Duration::from_secs(30),
        || processes_running(&program).is_empty(),
    );
    let acct = c.client("qacct", &["-j", &id]);
    assert_eq!(
        acct.stdout.matches("hostname     node2").count(),
        1,
        "the daemon on node2 accounted: {acct:?}"
    );
}
