//! A task's limits in the cgroup v1 controllers `memory`, `pids` and `cpu`, where the
//! host mounts them (hybrid hosts: v1 controllers beside a unified hierarchy that has
//! none, as RHEL 8 and many HPC sites have): a group per task under `gantry` in the
//! execd's own group of each, its limits written before the shepherd joins it, so that
//! the job inherits them at every fork. At the end the memory controller tells the
//! task's peak memory and whether the kernel's OOM killer ended one of its processes.

use std::io;
use std::path::{Path, PathBuf};

/// The v1 controllers a task's limits are set in.
pub const CONTROLLERS: [&str; 3] = ["memory", "pids", "cpu"];

/// Processes a task may have per slot (`pids.max`).
pub const PIDS_PER_SLOT: u64 = 1024;

/// CPU weight per slot (`cpu.shares`; the kernel's default for a group is 1024).
pub const SHARES_PER_SLOT: u64 = 1024;

/// Where task groups go in each v1 controller hierarchy mounted and writable here:
/// (controller, `<mount><own group>/gantry/<unit>`). `unit` is this execd's own (several
/// on one machine, as in tests or two cells, must not share task groups: a group of the
/// same name that looks left over may be another execd's, not yet joined).
pub fn parents(unit: &str) -> Vec<(String, PathBuf)> {
    let (Ok(mountinfo), Ok(own)) = (
        std::fs::read_to_string("/proc/self/mountinfo"),
        std::fs::read_to_string("/proc/self/cgroup"),
    ) else {
        return Vec::new();
    };
    parents_from(&mountinfo, &own)
        .into_iter()
        .filter_map(|(controller, dir)| {
            let mut dir = dir.join("gantry");
            for level in [None, Some(unit)] {
                if let Some(unit) = level {
                    dir = dir.join(unit);
                }
                match std::fs::create_dir(&dir) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(_) => return None,
                }
            }
            dir.join("cgroup.procs")
                .exists()
                .then_some((controller, dir))
        })
        .collect()
}

/// This execd's unit under `gantry`: from its home directory, the same at every start
/// (so that a group a killed shepherd left is its own to remove).
pub fn unit_of(home: &Path) -> String {
    // FNV-1a: stable across builds, unlike std's hasher.
    let hash = home
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    format!("execd-{hash:016x}")
}

/// The group of this process in each v1 controller of [`CONTROLLERS`] mounted, from
/// `/proc/self/mountinfo` and `/proc/self/cgroup`.
fn parents_from(mountinfo: &str, own: &str) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for controller in CONTROLLERS {
        // `4:memory:/a/b`, `3:cpu,cpuacct:/`
        let Some(group) = own.lines().find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
            names.split(',').any(|n| n == controller).then_some(path)
        }) else {
            continue;
        };
        let mount = mountinfo.lines().find_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mut r = right.split_whitespace();
            if r.next()? != "cgroup" {
                return None;
            }
            let options = r.nth(1)?;
            if !options.split(',').any(|o| o == controller) {
                return None;
            }
            let mut fields = left.split_whitespace();
            let root = fields.nth(3)?;
            let mount = fields.next()?;
            Some((root.to_string(), mount.to_string()))
        });
        let Some((root, mount)) = mount else {
            continue;
        };
        let below = if root == "/" {
            Some(group)
        } else {
            group.strip_prefix(root.as_str())
        };
        let Some(below) = below else {
            continue;
        };
        let mut path = PathBuf::from(mount);
        let mut ok = true;
        for part in below.split('/').filter(|p| !p.is_empty()) {
            ok &= part != ".." && part != ".";
            path.push(part);
        }
        if ok {
            out.push((controller.to_string(), path));
        }
    }
    out
}

/// What a task is limited to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskLimits {
    /// `memory.limit_in_bytes`: `h_vmem` times the task's slots on the host.
    pub memory_bytes: Option<u64>,
    /// `pids.max`.
    pub pids: u64,
    /// `cpu.shares`.
    pub cpu_shares: u64,
}

impl TaskLimits {
    /// The limits of a task holding `slots` slots here, with `h_vmem` per slot.
    pub fn of(slots: u32, h_vmem: Option<u64>) -> TaskLimits {
        let slots = u64::from(slots.max(1));
        TaskLimits {
            memory_bytes: h_vmem.map(|m| m.saturating_mul(slots)),
            pids: PIDS_PER_SLOT * slots,
            cpu_shares: SHARES_PER_SLOT * slots,
        }
    }

    /// The files of `controller` to write, in order.
    fn files(&self, controller: &str) -> Vec<(&'static str, u64)> {
        match controller {
            "memory" => match self.memory_bytes {
                // With swap accounting, swap counts against the limit too.
                Some(m) => vec![
                    ("memory.limit_in_bytes", m),
                    ("memory.memsw.limit_in_bytes", m),
                ],
                None => Vec::new(),
            },
            "pids" => vec![("pids.max", self.pids)],
            "cpu" => vec![("cpu.shares", self.cpu_shares)],
            _ => Vec::new(),
        }
    }
}

/// A new group `name` in `parent`: one a task that ended without removing its groups
/// left there (a killed shepherd) is removed first when empty, else the next free name
/// (`name.1`, ...) is taken; its limits must not be the old task's.
fn fresh_group(parent: &Path, name: &str) -> io::Result<PathBuf> {
    for i in 0..32 {
        let path = match i {
            0 => parent.join(name),
            i => parent.join(format!("{name}.{i}")),
        };
        match std::fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if std::fs::remove_dir(&path).is_ok() && std::fs::create_dir(&path).is_ok() {
                    return Ok(path);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "every name for {name} in {} is taken",
        parent.display()
    )))
}

/// A task's groups in the v1 controllers.
#[derive(Debug, Default)]
pub struct ControllerGroups {
    groups: Vec<(String, PathBuf)>,
}

impl ControllerGroups {
    /// The task's group `name` in every parent, its limits written (a limit a
    /// controller refuses, as `memory.memsw.*` without swap accounting, is left).
    pub fn create(
        parents: &[(String, PathBuf)],
        name: &str,
        limits: &TaskLimits,
    ) -> io::Result<ControllerGroups> {
        let mut made = ControllerGroups::default();
        for (controller, parent) in parents {
            let path = match fresh_group(parent, name) {
                Ok(p) => p,
                Err(e) => {
                    made.remove();
                    return Err(e);
                }
            };
            for (file, value) in limits.files(controller) {
                let written = std::fs::write(path.join(file), value.to_string());
                if let (Err(e), "memory.limit_in_bytes") = (written, file) {
                    made.groups.push((controller.clone(), path));
                    made.remove();
                    return Err(e);
                }
            }
            made.groups.push((controller.clone(), path));
        }
        Ok(made)
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Move this process into every group: what it starts from now on is in them.
    pub fn join_self(&self) -> io::Result<()> {
        let pid = std::process::id().to_string();
        for (_, path) in &self.groups {
            std::fs::write(path.join("cgroup.procs"), &pid)?;
        }
        Ok(())
    }

    fn memory(&self) -> Option<&Path> {
        self.groups
            .iter()
            .find(|(c, _)| c == "memory")
            .map(|(_, p)| p.as_path())
    }

    /// The most memory the task's processes held at once (bytes).
    pub fn memory_peak(&self) -> Option<u64> {
        std::fs::read_to_string(self.memory()?.join("memory.max_usage_in_bytes"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// How many of the task's processes the kernel's OOM killer ended.
    pub fn oom_kills(&self) -> u64 {
        self.memory()
            .and_then(|m| std::fs::read_to_string(m.join("memory.oom_control")).ok())
            .and_then(|text| {
                text.lines().find_map(|l| {
                    l.strip_prefix("oom_kill ")
                        .and_then(|n| n.trim().parse().ok())
                })
            })
            .unwrap_or(0)
    }

    /// Leave the groups (back to each parent `gantry` group) and remove them.
    pub fn remove(&self) {
        let pid = std::process::id().to_string();
        for (_, path) in &self.groups {
            if let Some(parent) = path.parent() {
                let _ = std::fs::write(parent.join("cgroup.procs"), &pid);
            }
            let _ = std::fs::remove_dir(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_execd_home_has_a_unit_of_its_own_the_same_at_every_start() {
        let a = unit_of(Path::new("/var/lib/gantry-execd"));
        assert_eq!(a, unit_of(Path::new("/var/lib/gantry-execd")));
        assert_ne!(a, unit_of(Path::new("/tmp/gantry-test1/execd-node1")));
        assert!(a.starts_with("execd-") && a.len() == 22, "{a}");
    }

    #[test]
    fn the_groups_are_the_own_ones_under_each_v1_mount() {
        let mountinfo = "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n\
                         35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                         36 31 0:33 /lxc/c1 /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n\
                         41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        let own = "9:pids:/lxc/c1/sub\n4:memory:/process_api/x\n3:cpu,cpuacct:/\n0::/\n";
        assert_eq!(
            parents_from(mountinfo, own),
            vec![
                (
                    "memory".to_string(),
                    PathBuf::from("/sys/fs/cgroup/memory/process_api/x")
                ),
                ("pids".to_string(), PathBuf::from("/sys/fs/cgroup/pids/sub")),
                (
                    "cpu".to_string(),
                    PathBuf::from("/sys/fs/cgroup/cpu,cpuacct")
                ),
            ]
        );
        // cgroup v2 only, or a group outside the mount's root: none.
        let unified = "35 24 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert!(parents_from(unified, "0::/x\n").is_empty());
        assert!(parents_from(mountinfo, "9:pids:/other\n").is_empty());
        assert!(parents_from(mountinfo, "4:memory:/../x\n").is_empty());
    }

    #[test]
    fn limits_scale_with_the_slots() {
        let l = TaskLimits::of(4, Some(100 << 20));
        assert_eq!(l.memory_bytes, Some(400 << 20));
        assert_eq!((l.pids, l.cpu_shares), (4096, 4096));
        assert_eq!(TaskLimits::of(0, None).memory_bytes, None);
        assert_eq!(TaskLimits::of(0, None).files("memory"), vec![]);
        assert_eq!(
            TaskLimits::of(1, None).files("pids"),
            vec![("pids.max", 1024)]
        );
    }
}
