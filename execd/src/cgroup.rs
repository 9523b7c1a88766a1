//! One control group (cgroup v2) per job task, where the host has a cgroup v2 hierarchy
//! the execd may write to.
//!
//! The group is used for what a process group cannot do: it holds every process the job
//! starts, whatever sessions or process groups they make, so that the task can be killed
//! whole (`cgroup.kill`), its end known for certain (`cgroup.events`: `populated 0`), and
//! its CPU time read even for processes nobody waited for (`cpu.stat`). No controller is
//! enabled, so the execd needs no delegation of resources, only a directory it may create
//! groups in: `gantry` under the execd's own group (with systemd, `Delegate=yes` in the
//! unit gives it that).

pub mod controllers;

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// The directory task groups are created in, if this host has a writable cgroup v2
/// hierarchy: `<mount><own group>/gantry`.
pub fn parent() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let dir = parent_from(&mountinfo, &own)?.join("gantry");
    match std::fs::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    dir.join("cgroup.procs").exists().then_some(dir)
}

/// Where this process's cgroup v2 group is mounted, from `/proc/self/mountinfo` and
/// `/proc/self/cgroup`.
fn parent_from(mountinfo: &str, own: &str) -> Option<PathBuf> {
    let group = own.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
    mountinfo.lines().find_map(|line| {
        // id parent major:minor root mount-point options [optional...] - fstype source ...
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let mut fields = left.split_whitespace();
        let root = fields.nth(3)?;
        let mount = fields.next()?;
        // The part of our group below the mount's root (a container may see a subtree).
        let below = if root == "/" {
            group
        } else {
            group.strip_prefix(root)?
        };
        let mut path = PathBuf::from(mount);
        for part in below.split('/').filter(|p| !p.is_empty()) {
            if part == ".." || part == "." {
                return None;
            }
            path.push(part);
        }
        Some(path)
    })
}

/// A task's group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskGroup {
    pub path: PathBuf,
}

/// CPU time used by every process that ever ran in a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuUsage {
    pub user_us: u64,
    pub system_us: u64,
}

impl TaskGroup {
    /// Create the group `name` in `parent` (`name.1`, ... if taken by another execd).
    pub fn create(parent: &Path, name: &str) -> io::Result<TaskGroup> {
        for i in 0..32 {
            let path = match i {
                0 => parent.join(name),
                i => parent.join(format!("{name}.{i}")),
            };
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(TaskGroup { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other(format!(
            "every name for {name} in {} is taken",
            parent.display()
        )))
    }

    /// `cgroup.procs`, opened for writing: writing `0` to it moves the writer in. Open
    /// before forking the job, written by the child before it executes the job.
    pub fn procs_for_joining(&self) -> io::Result<std::fs::File> {
        std::fs::OpenOptions::new()
            .write(true)
            .open(self.path.join("cgroup.procs"))
    }

    /// The processes in the group now.
    pub fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.path.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// Does any process remain? A group that cannot be read any more holds none.
    pub fn populated(&self) -> bool {
        match std::fs::read_to_string(self.path.join("cgroup.events")) {
            Ok(events) => events
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["populated", "1"]),
            Err(_) => !self.pids().is_empty(),
        }
    }

    /// Kill every process in the group (`cgroup.kill`, or each one where the kernel has
    /// no `cgroup.kill`).
    pub fn kill_all(&self) {
        let killed = std::fs::OpenOptions::new()
            .write(true)
            .open(self.path.join("cgroup.kill"))
            .and_then(|mut f| f.write_all(b"1"));
        if killed.is_err() {
            for pid in self.pids() {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
    }

    /// Stop or continue every process in the group (`cgroup.freeze`).
    pub fn freeze(&self, frozen: bool) -> io::Result<()> {
        std::fs::write(
            self.path.join("cgroup.freeze"),
            if frozen { "1" } else { "0" },
        )
    }

    /// Has a freeze taken effect on every process of the group (`frozen 1` in
    /// `cgroup.events`)?
    pub fn frozen(&self) -> bool {
        std::fs::read_to_string(self.path.join("cgroup.events")).is_ok_and(|events| {
            events
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["frozen", "1"])
        })
    }

    pub fn cpu_usage(&self) -> Option<CpuUsage> {
        let stat = std::fs::read_to_string(self.path.join("cpu.stat")).ok()?;
        let get = |key: &str| {
            stat.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == key).then(|| v.trim().parse::<u64>().ok()).flatten()
            })
        };
        Some(CpuUsage {
            user_us: get("user_usec")?,
            system_us: get("system_usec")?,
        })
    }

    /// Remove the (empty) group.
    pub fn remove(&self) -> io::Result<()> {
        match std::fs::remove_dir(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_the_own_group_under_the_cgroup2_mount() {
        let hybrid =
            "30 25 0:27 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu\n\
                      41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        let unified =
            "35 24 0:30 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";
        let container = "35 24 0:30 /machine.slice/c1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let table: &[(&str, &str, Option<&str>)] = &[
            (
                hybrid,
                "4:memory:/x\n0::/\n",
                Some("/sys/fs/cgroup/unified"),
            ),
            (
                unified,
                "0::/system.slice/gantry-execd.service\n",
                Some("/sys/fs/cgroup/system.slice/gantry-execd.service"),
            ),
            (
                container,
                "0::/machine.slice/c1/init.scope\n",
                Some("/sys/fs/cgroup/init.scope"),
            ),
            // cgroup v1 only: no group of ours.
            (
                "30 25 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n",
                "1:cpu:/\n",
                None,
            ),
            (unified, "1:cpu:/\n", None),
            (unified, "0::/../escape\n", None),
        ];
        for (mountinfo, own, want) in table {
            assert_eq!(
                parent_from(mountinfo, own),
                want.map(PathBuf::from),
                "{mountinfo} {own}"
            );
        }
    }
}
