//! An `SGE_ROOT` for the programs that look for Grid Engine by it: Open MPI's
//! `gridengine` support, for one, takes a job to be a Grid Engine job when `SGE_ROOT`,
//! `ARC`, `PE_HOSTFILE` and `JOB_ID` are set, and looks for `qrsh` in `PATH` and then
//! in `$SGE_ROOT/bin/$ARC`. The execd keeps such a tree in its home: `bin/ARC/` holds
//! links to the Gantry commands installed beside the execd, so that a job finds
//! Gantry's `qrsh` there as it would find SGE's.

use std::path::{Path, PathBuf};

/// The commands linked into `bin/ARC` when they are installed beside the execd.
const COMMANDS: [&str; 14] = [
    "qrsh", "qlogin", "qsub", "qstat", "qdel", "qalter", "qhost", "qconf", "qquota", "qacct",
    "qrsub", "qrstat", "qrdel", "qmod",
];

/// The tree's root in an execd's home.
pub fn root(home: &Path) -> PathBuf {
    home.join("sge-root")
}

/// Make (or bring up to date) `HOME/sge-root/bin/ARC/` with a link to each command
/// found next to `exe`; a link that points elsewhere is replaced. Returns the root.
pub fn prepare(home: &Path, exe: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let root = root(home);
    let bin = root.join("bin").join(gantry_common::load::sge_arch());
    std::fs::create_dir_all(&bin)?;
    for dir in [&root, &root.join("bin"), &bin] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    }
    let installed = exe.parent().unwrap_or(Path::new("/"));
    for name in COMMANDS {
        let target = installed.join(name);
        let link = bin.join(name);
        if !target.exists() {
            let _ = std::fs::remove_file(&link);
            continue;
        }
        if std::fs::read_link(&link).ok().as_deref() == Some(target.as_path()) {
            continue;
        }
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link)?;
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    #[test]
    fn links_the_commands_installed_beside_the_execd() {
        let dir = std::env::temp_dir().join(format!("gantry-sge-root-{}", std::process::id()));
        let installed = dir.join("bin");
        std::fs::create_dir_all(&installed).unwrap();
        std::fs::write(installed.join("qrsh"), b"").unwrap();
        std::fs::write(installed.join("gantry-execd"), b"").unwrap();
        let home = dir.join("home");
        let root = super::prepare(&home, &installed.join("gantry-execd")).unwrap();
        let arch_bin = root.join("bin").join(gantry_common::load::sge_arch());
        assert_eq!(
            std::fs::read_link(arch_bin.join("qrsh")).unwrap(),
            installed.join("qrsh")
        );
        assert!(
            !arch_bin.join("qsub").exists(),
            "qsub is not installed there"
        );
        // Again: nothing changes, nothing fails.
        super::prepare(&home, &installed.join("gantry-execd")).unwrap();
        assert_eq!(
            std::fs::read_link(arch_bin.join("qrsh")).unwrap(),
            installed.join("qrsh")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
