//! The end-to-end test harness: real `gantry-master` and `gantry-execd` processes, each
//! cluster in its own temporary cell directory on free ports, optionally with hosts in
//! their own network namespaces. Every daemon's log is kept and printed when a test
//! fails; every process is killed when its owner is dropped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub mod differential;
pub mod transcript;

/// The directory holding the workspace's binaries (next to the test executable).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target directory");
    for name in [
        "gantry-master",
        "gantry-execd",
        "gantry-shepherd",
        "qhost",
        "qconf",
    ] {
        assert!(
            dir.join(name).exists(),
            "{} is missing: build the workspace first (cargo build --workspace --bins)",
            dir.join(name).display()
        );
    }
    dir.to_path_buf()
}

pub fn bin(name: &str) -> PathBuf {
    bin_dir().join(name)
}

/// Is this process root (needed for network namespaces and other users)?
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Say loudly that a test did not run, so nobody mistakes a skip for a pass.
pub fn skip_loudly(test: &str, why: &str) {
    eprintln!("\n*** SKIPPED {test}: {why} ***\n*** this test did NOT run; run the suite as root (CI does) ***\n");
}

/// Tests that run jobs as test users need root: say loudly when one cannot run.
pub fn need_root(test: &str) -> bool {
    if !is_root() {
        skip_loudly(test, "needs root to create test users and run jobs as them");
        return false;
    }
    true
}

/// A parallel environment file with every attribute SGE's `qconf -Ap` requires, at
/// SGE's template values but for `set`.
pub fn pe_file(name: &str, set: &[(&str, &str)]) -> String {
    let defaults = [
        ("slots", "0"),
        ("user_lists", "NONE"),
        ("xuser_lists", "NONE"),
        ("start_proc_args", "NONE"),
        ("stop_proc_args", "NONE"),
        ("allocation_rule", "$pe_slots"),
        ("control_slaves", "FALSE"),
        ("job_is_first_task", "TRUE"),
        ("urgency_slots", "min"),
        ("accounting_summary", "FALSE"),
        ("qsort_args", "NONE"),
    ];
    let mut text = format!("pe_name {name}\n");
    for (key, value) in defaults {
        let value = set
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(value, |(_, v)| *v);
        text.push_str(&format!("{key} {value}\n"));
    }
    text
}

/// Run a command to its end, which must come within `timeout` (a daemon expected to
/// refuse to start, say): its exit status and everything it printed (stderr first).
pub fn run_to_exit(mut cmd: Command, timeout: Duration) -> (i32, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let out = child.wait_with_output().expect("output");
            let text = String::from_utf8_lossy(&out.stderr).into_owned()
                + &String::from_utf8_lossy(&out.stdout);
            return (status.code().unwrap_or(-1), text);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{cmd:?} did not exit within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Poll `cond` until it is true or `timeout` passes; panics with `what` on timeout.
pub fn wait_until(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out after {timeout:?} waiting for: {what}");
}

/// A free UDP port on all interfaces.
pub fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .expect("a free UDP port")
}

/// What a command printed and how it exited.
#[derive(Debug, Clone)]
pub struct Out {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl Out {
    /// What a finished command printed and its exit status.
    pub fn from_output(o: std::process::Output) -> Out {
        Out::from(o)
    }

    fn from(o: std::process::Output) -> Out {
        Out {
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            code: o.status.code().unwrap_or(-1),
        }
    }
}

/// A daemon process with its log file.
pub struct Daemon {
    pub name: String,
    pub child: Option<Child>,
    pub log: PathBuf,
    /// Print the log if the test fails (off once its owner keeps the log elsewhere).
    pub print_log_on_panic: bool,
}

impl Daemon {
    pub fn spawn(name: &str, cmd: Command, log: PathBuf) -> Daemon {
        Self::spawn_logging(name, cmd, log, Some("info"))
    }

    /// [`Daemon::spawn`] with `GANTRY_LOG` set to `filter`, or unset (None: the
    /// daemon logs as its configuration says).
    pub fn spawn_logging(
        name: &str,
        mut cmd: Command,
        log: PathBuf,
        filter: Option<&str>,
    ) -> Daemon {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .expect("log file");
        cmd.stdout(Stdio::from(file.try_clone().expect("log file")))
            .stderr(Stdio::from(file));
        match filter {
            Some(f) => cmd.env("GANTRY_LOG", f),
            None => cmd.env_remove("GANTRY_LOG"),
        };
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Daemon {
            name: name.to_string(),
            child: Some(child),
            log,
            print_log_on_panic: true,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Send a signal and wait (bounded) for the process to exit; the exit status.
    pub fn stop(&mut self, signal: nix::sys::signal::Signal) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                return child.wait().ok();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Is the process still running?
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Wait (bounded) for the process to exit on its own.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(s)) = c.try_wait() {
                    self.child = None;
                    return Some(s);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop(nix::sys::signal::Signal::SIGKILL);
        if std::thread::panicking() && self.print_log_on_panic {
            eprintln!("----- log of {} -----\n{}", self.name, self.log_text());
        }
    }
}

/// A test cluster: a cell directory with a master and any number of execds.
pub struct Cluster {
    pub port: u16,
    pub master_host: String,
    pub master: Option<Daemon>,
    pub execds: Vec<Daemon>,
    /// Run the master inside this network namespace (`ip netns exec NS`).
    pub master_netns: Option<String>,
    /// Each execd started in a network namespace gets a UTS namespace of its own too,
    /// its kernel host name its host's name (as separate machines have).
    pub own_host_names: bool,
    /// Last, so that it is removed after the daemons are stopped and their logs printed.
    pub dir: tempfile::TempDir,
}

impl Cluster {
    /// A fresh cell (not started).
    pub fn init(extra: &[&str]) -> Cluster {
        Self::init_on("head", extra)
    }

    /// A fresh cell (not started) whose master host is `master_host`.
    pub fn init_on(master_host: &str, extra: &[&str]) -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix("gantry-test")
            .tempdir()
            .expect("tempdir");
        // Other users (test users) must reach the sockets inside.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let port = free_udp_port();
        let cluster = Cluster {
            dir,
            port,
            master_host: master_host.to_string(),
            master: None,
            execds: Vec::new(),
            master_netns: None,
            own_host_names: false,
        };
        let out = cluster.master_cmd(
            &[
                "init",
                "--hostname",
                master_host,
                "--port",
                &port.to_string(),
            ],
            extra,
        );
        assert_eq!(out.code, 0, "init failed: {out:?}");
        cluster
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("cell")
    }

    /// `qsub` a rerunnable job that sleeps `sleep` seconds and first appends a line to
    /// `marks/JOB_ID` (the chaos and standby ledgers: how many times each job ran).
    pub fn submit_marked(&self, marks: &Path, sleep: &str) -> Out {
        let script = format!("echo run >> {}/$JOB_ID; sleep {sleep}", marks.display());
        self.client(
            "qsub",
            &[
                "-terse",
                "-r",
                "y",
                "-o",
                "/dev/null",
                "-j",
                "y",
                "-b",
                "y",
                "sh",
                "-c",
                &script,
            ],
        )
    }

    /// Point the cell's settings at this cluster's own port: a cell unpacked or
    /// restored from another names that one's.
    pub fn use_own_port(&self) {
        let conf = self.home().join("master.conf");
        let text: String = std::fs::read_to_string(&conf)
            .expect("master.conf")
            .lines()
            .map(|l| match l.starts_with("port ") {
                true => format!("port {}\n", self.port),
                false => format!("{l}\n"),
            })
            .collect();
        std::fs::write(&conf, text).expect("master.conf");
    }

    pub fn token(&self) -> String {
        std::fs::read_to_string(self.home().join("join-token"))
            .expect("join token")
            .trim()
            .to_string()
    }

    /// Run `gantry-master` with a subcommand to completion.
    pub fn master_cmd(&self, args: &[&str], extra: &[&str]) -> Out {
        let home = self.home();
        let mut cmd = Command::new(bin("gantry-master"));
        cmd.arg(args[0])
            .arg("--home")
            .arg(&home)
            .args(&args[1..])
            .args(extra);
        Out::from(cmd.output().expect("gantry-master"))
    }

    fn netns_command(ns: Option<&str>, program: PathBuf) -> Command {
        match ns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(program);
                c
            }
            None => Command::new(program),
        }
    }

    /// Start the master and wait until its client socket answers.
    pub fn start_master(&mut self) {
        self.start_master_with(&[], Some("info"));
    }

    /// [`Cluster::start_master`] with more arguments to `run`, and `GANTRY_LOG` set to
    /// `filter` or unset.
    pub fn start_master_with(&mut self, args: &[&str], filter: Option<&str>) {
        let mut cmd = Self::netns_command(self.master_netns.as_deref(), bin("gantry-master"));
        cmd.arg("run").arg("--home").arg(self.home()).args(args);
        let log = self.dir.path().join("master.log");
        self.master = Some(Daemon::spawn_logging("gantry-master", cmd, log, filter));
        wait_until(
            "the master to answer qconf -sm",
            Duration::from_secs(20),
            || self.qconf(&["-sm"]).code == 0,
        );
    }

    pub fn stop_master(&mut self, signal: nix::sys::signal::Signal) {
        if let Some(mut m) = self.master.take() {
            m.stop(signal);
            // The log stays: a restarted master appends to it, and the cluster prints
            // it if the test fails.
            m.print_log_on_panic = false;
        }
    }

    pub fn master_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("master.log")).unwrap_or_default()
    }

    /// The address execds dial.
    pub fn master_addr(&self, ip: &str) -> String {
        format!("{ip}:{}", self.port)
    }

    /// Start an execd for `host` with its own home; `token` on first start.
    pub fn start_execd(
        &mut self,
        host: &str,
        master_ip: &str,
        token: Option<&str>,
        netns: Option<&str>,
    ) -> usize {
        self.start_execd_on_cpus(host, master_ip, token, netns, None)
    }

    /// [`Self::start_execd`], confined to some processors (`taskset -c LIST`), as a
    /// cpuset would confine it: it reports that many as `num_proc`.
    pub fn start_execd_on_cpus(
        &mut self,
        host: &str,
        master_ip: &str,
        token: Option<&str>,
        netns: Option<&str>,
        cpus: Option<&str>,
    ) -> usize {
        let masters = self.master_addr(master_ip);
        self.spawn_execd(host, &masters, token, netns, cpus)
    }

    /// [`Self::start_execd`] for a cell with a standby master: `masters` is the
    /// execd's `--master` list (`a:port,b:port`).
    pub fn start_execd_with_masters(
        &mut self,
        host: &str,
        masters: &str,
        token: Option<&str>,
        netns: Option<&str>,
    ) -> usize {
        self.spawn_execd(host, masters, token, netns, None)
    }

    fn spawn_execd(
        &mut self,
        host: &str,
        masters: &str,
        token: Option<&str>,
        netns: Option<&str>,
        cpus: Option<&str>,
    ) -> usize {
        let home = self.execd_home(host);
        let mut cmd = match (netns, cpus) {
            (Some(ns), None) if self.own_host_names => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, "unshare", "--uts", "--", "sh", "-c"])
                    .arg("hostname \"$0\" && exec \"$@\"")
                    .arg(host)
                    .arg(bin("gantry-execd"));
                c
            }
            (_, None) => Self::netns_command(netns, bin("gantry-execd")),
            (None, Some(list)) => {
                let mut c = Command::new("taskset");
                c.args(["-c", list]).arg(bin("gantry-execd"));
                c
            }
            (Some(ns), Some(list)) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, "taskset", "-c", list])
                    .arg(bin("gantry-execd"));
                c
            }
        };
        cmd.arg("run")
            .arg("--home")
            .arg(&home)
            .arg("--master")
            .arg(masters)
            .arg("--hostname")
            .arg(host);
        if let Some(t) = token {
            // From the environment, never the command line (every user reads that).
            cmd.env("GANTRY_JOIN_TOKEN", t);
        }
        let log = self.dir.path().join(format!("execd-{host}.log"));
        self.execds
            .push(Daemon::spawn(&format!("gantry-execd {host}"), cmd, log));
        self.execds.len() - 1
    }

    pub fn execd_home(&self, host: &str) -> PathBuf {
        self.dir.path().join(format!("execd-{host}"))
    }

    /// Run a client command against the master's socket.
    pub fn client(&self, program: &str, args: &[&str]) -> Out {
        self.client_at(&self.home(), program, args, None)
    }

    /// Run a client command against the socket in `home`, optionally as another user.
    pub fn client_at(&self, home: &Path, program: &str, args: &[&str], user: Option<&str>) -> Out {
        let mut cmd = match user {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--"]).arg(bin(program));
                c
            }
            None => Command::new(bin(program)),
        };
        cmd.args(args).env("GANTRY_HOME", home).env_remove("EDITOR");
        Out::from(cmd.output().expect("client command"))
    }

    pub fn qconf(&self, args: &[&str]) -> Out {
        self.client("qconf", args)
    }

    pub fn qhost(&self, args: &[&str]) -> Out {
        self.client("qhost", args)
    }

    /// The `qhost` line of a host, if listed.
    pub fn qhost_line(&self, host: &str) -> Option<String> {
        self.qhost(&[])
            .stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(host))
            .map(str::to_string)
    }

    /// Wait until `host` is listed by `qhost` with live load values.
    pub fn wait_host_reporting(&self, host: &str) {
        wait_until(
            &format!("{host} to report load values"),
            Duration::from_secs(30),
            || {
                self.qhost_line(host)
                    .is_some_and(|l| l.split_whitespace().nth(6).is_some_and(|load| load != "-"))
            },
        );
    }

    /// Make execds report every second, give up on silent ones after `unheard`, and
    /// switch off all.q's load thresholds.
    pub fn fast_reports(&self, unheard: &str) {
        let file = self.dir.path().join("global");
        std::fs::write(
            &file,
            format!("load_report_time 0:0:1\nmax_unheard {unheard}\n"),
        )
        .unwrap();
        let out = self.qconf(&["-Mconf", file.to_str().unwrap()]);
        assert_eq!(out.code, 0, "{out:?}");
        // The tests share two cores with the build: a load alarm (all.q's default
        // np_load_avg=1.75) must not decide whether their jobs start.
        let out = self.qconf(&["-rattr", "queue", "load_thresholds", "NONE", "all.q"]);
        assert_eq!(out.code, 0, "{out:?}");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if std::thread::panicking() && self.master.is_none() {
            eprintln!("----- log of gantry-master -----\n{}", self.master_log());
        }
        // The daemons first: a master and execds still running could start a job after
        // the jobs are looked for below.
        drop(self.master.take());
        self.execds.clear();
        // Shepherds outlive their execd by design: end the jobs this test left running.
        let Ok(entries) = std::fs::read_dir(self.dir.path()) else {
            return;
        };
        for execd in entries.flatten() {
            let Ok(jobs) = std::fs::read_dir(execd.path().join("jobs")) else {
                continue;
            };
            for job in jobs.flatten() {
                // A task with its report has ended: its shepherd removed its control
                // group, whose name (and its processes' ids) another test's task may
                // hold now.
                if job.path().join("report").exists() {
                    continue;
                }
                let pids = std::fs::read_to_string(job.path().join("pids")).unwrap_or_default();
                for line in pids.lines() {
                    let Some(pid) = line
                        .split('=')
                        .nth(1)
                        .and_then(|p| p.trim().parse::<i32>().ok())
                    else {
                        continue;
                    };
                    // A job may have left its process group: everything below its
                    // shepherd goes first, while the shepherd still holds it.
                    if line.starts_with("shepherd=") {
                        kill_tree_below(pid);
                    }
                    let pid = nix::unistd::Pid::from_raw(pid);
                    if line.starts_with("job=") {
                        let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
                    } else {
                        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
                    }
                }
                // What the killed shepherd would have removed: the task's control group
                // (once its processes are gone) and its TMPDIR (in a directory the
                // tests of other clusters share).
                for line in pids.lines() {
                    if let Some(group) = line.strip_prefix("cgroup=") {
                        let group = Path::new(group);
                        let _ = std::fs::write(group.join("cgroup.kill"), "1");
                        let deadline = Instant::now() + Duration::from_secs(2);
                        while std::fs::remove_dir(group).is_err()
                            && group.exists()
                            && Instant::now() < deadline
                        {
                            std::thread::sleep(Duration::from_millis(10));
                        }
                    }
                    if let Some(tmpdir) = line.strip_prefix("tmpdir=") {
                        let _ = std::fs::remove_dir_all(tmpdir);
                    }
                }
            }
        }
    }
}

/// Kill every process below `root` in the process tree (repeatedly, until none is left
/// or a second has passed: a process may fork while the tree is read).
fn kill_tree_below(root: i32) {
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline {
        let mut parents: Vec<(i32, i32)> = Vec::new();
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let parent = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().nth(1))
                .and_then(|p| p.parse::<i32>().ok());
            if let Some(parent) = parent {
                parents.push((pid, parent));
            }
        }
        let mut below = vec![root];
        let mut i = 0;
        while i < below.len() {
            let p = below[i];
            below.extend(parents.iter().filter(|(_, q)| *q == p).map(|(c, _)| *c));
            i += 1;
        }
        if below.len() == 1 {
            return;
        }
        for pid in &below[1..] {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A small network of namespaces joined by a bridge: `hosts[i]` has address
/// `10.<a>.<b>.(i+1)`. Everything is removed on drop.
pub struct Netns {
    pub names: Vec<String>,
    pub addrs: Vec<String>,
    bridge: String,
    /// Distinguishes the networks of tests running at the same time.
    tag: String,
}

static NETWORKS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Netns {
    pub fn create(count: usize) -> Netns {
        let pid = std::process::id();
        let k = NETWORKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tag = format!("{}{k}", pid % 1_000_000);
        let bridge = format!("gtb{tag}");
        let (a, b) = (200 + (pid % 50), (pid / 50 * 8 + k) % 250);
        ip(&["link", "add", &bridge, "type", "bridge"]);
        let mut net = Netns {
            names: Vec::new(),
            addrs: Vec::new(),
            bridge: bridge.clone(),
            tag: tag.clone(),
        };
        ip(&["addr", "add", &format!("10.{a}.{b}.254/24"), "dev", &bridge]);
        ip(&["link", "set", &bridge, "up"]);
        for i in 0..count {
            let ns = format!("gt{tag}n{i}");
            let host_end = format!("gv{tag}x{i}");
            let ns_end = format!("gp{tag}x{i}");
            ip(&["netns", "add", &ns]);
            net.names.push(ns.clone());
            ip(&[
                "link", "add", &host_end, "type", "veth", "peer", "name", &ns_end,
            ]);
            ip(&["link", "set", &ns_end, "netns", &ns]);
            ip(&["link", "set", &host_end, "master", &bridge]);
            ip(&["link", "set", &host_end, "up"]);
            let addr = format!("10.{a}.{b}.{}", i + 1);
            ip(&[
                "netns",
                "exec",
                &ns,
                "ip",
                "addr",
                "add",
                &format!("{addr}/24"),
                "dev",
                &ns_end,
            ]);
            ip(&["netns", "exec", &ns, "ip", "link", "set", &ns_end, "up"]);
            ip(&["netns", "exec", &ns, "ip", "link", "set", "lo", "up"]);
            net.addrs.push(addr);
        }
        net
    }
}

impl Netns {
    /// Take host `i`'s link down or up (its end on the bridge), to cut it off the network.
    pub fn set_link(&self, i: usize, up: bool) {
        ip(&[
            "link",
            "set",
            &format!("gv{}x{i}", self.tag),
            if up { "up" } else { "down" },
        ]);
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for ns in &self.names {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = Command::new("ip")
            .args(["link", "del", &self.bridge])
            .status();
    }
}

static USERS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Make sure a local test user exists (with a home directory); root only.
pub fn ensure_user(name: &str) -> (u32, String) {
    let _guard = USERS.lock().unwrap_or_else(|e| e.into_inner());
    if nix::unistd::User::from_name(name).ok().flatten().is_none() {
        let out = Command::new("useradd")
            .args(["-m", "-s", "/bin/sh", name])
            .output()
            .expect("useradd");
        assert!(
            out.status.success() || nix::unistd::User::from_name(name).ok().flatten().is_some(),
            "useradd {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let u = nix::unistd::User::from_name(name).unwrap().unwrap();
    std::fs::create_dir_all(&u.dir).unwrap();
    let _ = nix::unistd::chown(&u.dir, Some(u.uid), Some(u.gid));
    (u.uid.as_raw(), u.dir.to_string_lossy().into_owned())
}

impl Cluster {
    /// A running one-host cluster (master + execd `node1` on loopback) reporting every
    /// second.
    pub fn one_host() -> Cluster {
        let mut c = Cluster::init(&[]);
        c.start_master();
        c.fast_reports("0:0:5");
        let token = c.token();
        c.start_execd("node1", "127.0.0.1", Some(&token), None);
        c.wait_host_reporting("node1");
        c
    }

    /// A master in `net`'s first namespace and execds `node1` and `node2` in its second
    /// and third, reporting every `load_report_time`, both reporting.
    pub fn in_namespaces(net: &Netns, load_report_time: &str) -> Cluster {
        Self::namespaced(net, load_report_time, false)
    }

    /// [`Cluster::in_namespaces`], each execd's host with its own kernel host name
    /// (`hostname` says `node1`, `node2`), as on separate machines.
    pub fn on_hosts(net: &Netns, load_report_time: &str) -> Cluster {
        Self::namespaced(net, load_report_time, true)
    }

    fn namespaced(net: &Netns, load_report_time: &str, own_host_names: bool) -> Cluster {
        let mut c = Cluster::init(&[]);
        c.own_host_names = own_host_names;
        c.master_netns = Some(net.names[0].clone());
        c.start_master();
        c.fast_reports(load_report_time);
        let token = c.token();
        c.start_execd("node1", &net.addrs[0], Some(&token), Some(&net.names[1]));
        c.start_execd("node2", &net.addrs[0], Some(&token), Some(&net.names[2]));
        c.wait_host_reporting("node1");
        c.wait_host_reporting("node2");
        c
    }

    /// Run a client command as `user` with `input` on its standard input.
    pub fn as_user_with_stdin(&self, user: &str, program: &str, args: &[&str], input: &str) -> Out {
        use std::io::Write;
        let mut child = Command::new("runuser")
            .args(["-u", user, "--"])
            .arg(bin(program))
            .args(args)
            .env("GANTRY_HOME", self.home())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("client command");
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(input.as_bytes()).expect("stdin");
        }
        Out::from(child.wait_with_output().expect("client command"))
    }

    /// Run a client command as `user` against the master.
    pub fn as_user(&self, user: &str, program: &str, args: &[&str]) -> Out {
        self.client_at(&self.home(), program, args, Some(user))
    }

    /// `qsub -terse ARGS` as `user`: the job id (for an array, the part before its
    /// task range).
    /// A job's state letters in `qstat -u '*'` (its first row), empty when not listed.
    pub fn job_state(&self, id: &str) -> String {
        self.client("qstat", &["-u", "*"])
            .stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(id))
            .and_then(|l| l.split_whitespace().nth(4).map(str::to_string))
            .unwrap_or_default()
    }

    pub fn submit(&self, user: &str, args: &[&str]) -> String {
        let args: Vec<&str> = std::iter::once("-terse")
            .chain(args.iter().copied())
            .collect();
        let out = self.as_user(user, "qsub", &args);
        let terse = out.stdout.trim();
        terse.split('.').next().unwrap_or(terse).to_string()
    }
}

/// The mails a recording mailer wrote into `dir` (`mail.<pid>` files, each written whole
/// under a `.tmp` name first), sorted.
pub fn recorded_mails(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.starts_with("mail.") && !n.ends_with(".tmp")
                })
                .filter_map(|e| std::fs::read_to_string(e.path()).ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Assert that `doc` is valid under the committed schema `docs/schemas/{schema}`, as
/// the JSON Schema validator of Debian's python3-jsonschema (draft 2020-12) judges.
pub fn assert_valid_json(schema: &str, doc: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .join("docs/schemas")
        .join(schema);
    let check = "import json, sys\n\
from jsonschema import Draft202012Validator\n\
schema = json.load(open(sys.argv[1]))\n\
Draft202012Validator.check_schema(schema)\n\
errors = [e.message for e in Draft202012Validator(schema).iter_errors(json.loads(sys.stdin.read()))]\n\
print('\\n'.join(errors))\n\
sys.exit(1 if errors else 0)\n";
    let mut child = Command::new("/usr/bin/python3")
        .args(["-c", check])
        .arg(&path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("/usr/bin/python3 with Debian's python3-jsonschema");
    use std::io::Write as _;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(doc.as_bytes())
        .expect("the document to the validator");
    let out = child.wait_with_output().expect("the validator");
    assert!(
        out.status.success(),
        "not valid under docs/schemas/{schema}: {}{}\n{doc}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
