//! Every process of a job task, whatever process group or session it makes: what each
//! signal Gantry sends a job reaches (run-time limits, suspension, `-notify` warnings,
//! deletion, checkpoint signals, migration).
//!
//! A process group is not enough: any process may leave it (`setpgid`, `setsid`), and a
//! job that does so would run on past its `h_rt`, keep running while suspended and
//! survive `qdel`. Two trackings cannot be left without privileges:
//! - **The task's control group** (cgroup v2, where the execd has a writable hierarchy):
//!   the kernel puts every process the job starts in it, and moving a process out needs
//!   write access to a `cgroup.procs` above it, which is root's. Killing is `cgroup.kill`,
//!   atomic: a process forking at that moment cannot slip through; suspension freezes the
//!   group (`cgroup.freeze`) while each of its processes is sent `SIGSTOP`.
//! - **The shepherd's process tree**, on every host: the shepherd is a child subreaper, so
//!   a job process whose parent ends is re-parented to the shepherd, never to init, and
//!   every process the job starts stays below it whatever `setsid` or `setpgid` it calls
//!   (its own processes too: a subreaper further down is still below the shepherd). The
//!   tree is read from `/proc`; a process may fork while it is read, so killing and
//!   stopping repeat until a reading finds nothing left to do. This is what a host without
//!   cgroup v2 has (Grid Engine's additional group id, `ENABLE_ADDGRP_KILL`, is tracked the
//!   same way, by reading `/proc`, and needs root; the tree needs nothing). Leaving it
//!   takes another daemon's help (cron, `at`, ssh to the same host), as it does in SGE.
//!
//! The job's first process group is killed and stopped as well, as before, which costs
//! nothing.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

use crate::cgroup::TaskGroup;

/// The processes of one task.
#[derive(Debug, Clone, Default)]
pub struct TaskProcesses {
    /// The task's control group, where the host has one.
    group: Option<TaskGroup>,
    /// The task's shepherd: every process below it is the task's (it is not).
    shepherd: Option<Pid>,
    /// The job's first process (the leader of the job's first process group).
    job: Option<Pid>,
}

/// One process as `/proc/<pid>/stat` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Proc {
    pid: i32,
    parent: i32,
    state: char,
}

fn read_stat(pid: i32) -> Option<Proc> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &text)
}

/// `pid (comm) state ppid ...`: the name may hold spaces and parentheses.
fn parse_stat(pid: i32, text: &str) -> Option<Proc> {
    let rest = text.get(text.rfind(')')? + 1..)?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some(Proc { pid, parent, state })
}

/// Every process on the host now.
fn all_processes() -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
        .collect()
}

/// The processes below `root` in `all` (not `root` itself), parents before children.
fn below(root: i32, all: &[Proc]) -> Vec<Proc> {
    let mut children: HashMap<i32, Vec<Proc>> = HashMap::new();
    for p in all {
        children.entry(p.parent).or_default().push(*p);
    }
    let mut out = Vec::new();
    let mut next = vec![root];
    while let Some(parent) = next.pop() {
        for child in children.remove(&parent).unwrap_or_default() {
            next.push(child.pid);
            out.push(child);
        }
    }
    out
}

/// The processes below `root` now (the shepherd's children and everything they
/// started), zombies not yet waited for included.
pub fn descendants(root: u32) -> Vec<i32> {
    below(root as i32, &all_processes())
        .into_iter()
        .map(|p| p.pid)
        .collect()
}

/// Is `pid` the shepherd of the task in `dir` (started as `... shepherd DIR`)? A pid in
/// a task's `pids` file may have been reused once its shepherd ended: its tree is then
/// someone else's.
pub fn is_shepherd_of(pid: i32, dir: &Path) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    cmdline
        .split(|b| *b == 0)
        .rfind(|a| !a.is_empty())
        .is_some_and(|last| last == dir.as_os_str().as_encoded_bytes())
}

/// The live shepherd of the task in `dir`, found among every process: for a task whose
/// shepherd had not written its pid yet when the execd went away.
pub fn find_shepherd_of(dir: &Path) -> Option<i32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .find(|pid| is_shepherd_of(*pid, dir))
}

/// How long killing or stopping a task goes on reading its tree before it gives up (a
/// process stuck in the kernel, a fork bomb outrunning it).
const SWEEP_DEADLINE: Duration = Duration::from_secs(2);

impl TaskProcesses {
    pub fn new(group: Option<TaskGroup>, shepherd: Option<Pid>, job: Option<Pid>) -> Self {
        TaskProcesses {
            group,
            shepherd,
            job,
        }
    }

    /// The task's processes now: its control group's, which holds every process the
    /// job starts (none can move itself out: that needs write access to a group
    /// above), else its tree's. Reading the tree reads every process of the host.
    pub fn pids(&self) -> Vec<i32> {
        if let Some(g) = &self.group {
            return g.pids();
        }
        let mut pids = Vec::new();
        if let Some(root) = self.shepherd {
            for p in descendants(root.as_raw() as u32) {
                if !pids.contains(&p) {
                    pids.push(p);
                }
            }
        }
        pids
    }

    /// Does any process of the task remain?
    pub fn any_left(&self) -> bool {
        match &self.group {
            Some(g) => g.populated(),
            None => self.job.is_some_and(|j| killpg(j, None).is_ok()) || !self.pids().is_empty(),
        }
    }

    /// Send `sig` to every process of the task, once each (a shell running a trap for
    /// it would run it twice for two); false when it has none. Only where neither the
    /// control group nor the tree is known is the job's process group signalled.
    pub fn signal(&self, sig: Signal) -> bool {
        let pids = self.pids();
        if pids.is_empty() {
            return self.job.is_some_and(|j| killpg(j, sig).is_ok());
        }
        let mut sent = false;
        for pid in pids {
            sent |= kill(Pid::from_raw(pid), sig).is_ok();
        }
        sent
    }

    /// Kill every process of the task: its control group at once (the group holds them
    /// all), else its tree until a reading finds none left (or [`SWEEP_DEADLINE`]
    /// passed). Zombies that the shepherd has not waited for yet are left to it.
    pub fn kill(&self) {
        if let Some(j) = self.job {
            let _ = killpg(j, Signal::SIGKILL);
        }
        if let Some(g) = &self.group {
            // The group holds them all: killed at once, no tree to read.
            g.kill_all();
            return;
        }
        let Some(root) = self.shepherd else {
            return;
        };
        let deadline = Instant::now() + SWEEP_DEADLINE;
        loop {
            let live: Vec<Proc> = below(root.as_raw(), &all_processes())
                .into_iter()
                .filter(|p| p.state != 'Z' && p.state != 'X')
                .collect();
            if live.is_empty() || Instant::now() > deadline {
                return;
            }
            for p in live {
                let _ = kill(Pid::from_raw(p.pid), Signal::SIGKILL);
            }
            std::thread::yield_now();
        }
    }

    /// Stop every process of the task with `SIGSTOP`, as Grid Engine suspends a job (its
    /// processes show as stopped, their parents are told). Where the task has a control
    /// group it is frozen first, so that no process can fork while the signals go out,
    /// and thawed once each has one pending; elsewhere the tree is read and signalled
    /// until a reading finds every process stopped. False when the task has no process
    /// to stop.
    pub fn suspend(&self) -> bool {
        let mut sent = self.job.is_some_and(|j| killpg(j, Signal::SIGSTOP).is_ok());
        if let Some(g) = &self.group {
            if g.freeze(true).is_ok() {
                let deadline = Instant::now() + SWEEP_DEADLINE;
                while !g.frozen() && g.populated() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                }
                for pid in g.pids() {
                    sent |= kill(Pid::from_raw(pid), Signal::SIGSTOP).is_ok();
                }
                let _ = g.freeze(false);
            }
        }
        let Some(root) = self.shepherd else {
            return sent;
        };
        let deadline = Instant::now() + SWEEP_DEADLINE;
        loop {
            let running: Vec<Proc> = below(root.as_raw(), &all_processes())
                .into_iter()
                .filter(|p| !matches!(p.state, 'T' | 't' | 'Z' | 'X'))
                .collect();
            if running.is_empty() || Instant::now() > deadline {
                return sent;
            }
            for p in running {
                sent |= kill(Pid::from_raw(p.pid), Signal::SIGSTOP).is_ok();
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Let the task run again: every process is sent `SIGCONT` (a stopped process forks
    /// nothing, so one reading finds them all), its control group thawed in case a
    /// suspension was cut short.
    pub fn resume(&self) -> bool {
        let thawed = self.group.as_ref().is_some_and(|g| g.freeze(false).is_ok());
        self.signal(Signal::SIGCONT) || thawed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32, parent: i32, state: char) -> Proc {
        Proc { pid, parent, state }
    }

    #[test]
    fn stat_lines_with_odd_names() {
        let cases = [
            ("12 (sh) S 7 12 12 0", Some(p(12, 7, 'S'))),
            ("13 (a (b) c) R 12 13 12 0", Some(p(13, 12, 'R'))),
            ("14 (x) ) T 1 9 9", Some(p(14, 1, 'T'))),
            ("15 (x", None),
            ("16 (x) Z", None),
        ];
        for (line, want) in cases {
            let pid: i32 = line.split(' ').next().unwrap().parse().unwrap();
            assert_eq!(parse_stat(pid, line), want, "{line}");
        }
    }

    #[test]
    fn below_takes_the_whole_subtree_and_nothing_else() {
        // 1 -> 100 (shepherd) -> 200 -> 300 -> 400; 100 -> 201 (re-parented orphan);
        // 1 -> 500 -> 600 (another tree).
        let all = [
            p(1, 0, 'S'),
            p(100, 1, 'S'),
            p(200, 100, 'S'),
            p(300, 200, 'T'),
            p(400, 300, 'R'),
            p(201, 100, 'Z'),
            p(500, 1, 'S'),
            p(600, 500, 'S'),
        ];
        let mut got: Vec<i32> = below(100, &all).iter().map(|p| p.pid).collect();
        got.sort_unstable();
        assert_eq!(got, vec![200, 201, 300, 400]);
        assert!(below(400, &all).is_empty());
        assert!(below(999, &all).is_empty());
    }

    #[test]
    fn a_process_that_leaves_its_group_and_session_is_still_found_and_killed() {
        // A real tree: a shell (the shepherd's place) whose child makes a session of
        // its own, as a job escaping its process group does, and starts a grandchild
        // there.
        let me = std::process::id();
        let inner = format!("sleep 3390.{me} & exec sleep 3391.{me}");
        let root = std::process::Command::new("sh")
            .args(["-c", &format!("setsid sh -c '{inner}' & wait")])
            .spawn();
        let mut root = root.expect("sh");
        let pid = root.id();
        let deadline = Instant::now() + Duration::from_secs(10);
        while descendants(pid).len() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let found = descendants(pid);
        assert_eq!(found.len(), 2, "{found:?}");
        for p in &found {
            let session = nix::unistd::getsid(Some(Pid::from_raw(*p))).unwrap();
            assert_ne!(session, nix::unistd::getsid(None).unwrap());
        }
        let task = TaskProcesses::new(None, Some(Pid::from_raw(pid as i32)), None);
        assert!(task.any_left());
        assert!(task.suspend());
        for p in &found {
            assert_eq!(read_stat(*p).map(|s| s.state), Some('T'), "{p}");
        }
        assert!(task.resume());
        task.kill();
        // The shell's wait ends once both are gone.
        let status = root.wait().expect("wait");
        assert!(status.success(), "{status:?}");
        assert!(descendants(pid).is_empty());
    }
}
