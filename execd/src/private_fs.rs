//! Directories the execd and the shepherd work in as root, in places where users can write
//! too (a queue's `tmpdir`, `/tmp` by default).
//!
//! Nothing here follows a path a user could have planted: a directory is opened once,
//! without following a symbolic link (`O_DIRECTORY | O_NOFOLLOW`), its owner and mode are
//! checked on the open descriptor, and everything done inside it (creating, handing over,
//! removing) goes through that descriptor (`mkdirat`, `openat`, `fchown`, `unlinkat`),
//! never through the path again. Names are created exclusively, so an entry that exists
//! already is never taken over: it is a reason to pick another name.
//!
//! The layout under a queue's `tmpdir`: one directory per execd, `gantry.<host>`, owned by
//! the execd's user (root) with mode 0711, and inside it each task's TMPDIR,
//! `<job>.<task>.<queue>` (SGE's name), created by root and then handed to the job's owner
//! with mode 0700. Users cannot create, rename or remove entries in the per-execd
//! directory, so only its own name can have been planted, and then another one is taken.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{openat, OFlag, AT_FDCWD};
use nix::sys::stat::{fchmod, mkdirat, Mode};
use nix::unistd::{fchown, Gid, Uid, UnlinkatFlags};

/// How many names are tried before giving up (a planted name, or a leftover).
const ATTEMPTS: u32 = 32;

/// How deep a removal descends holding a descriptor per level; what lies deeper is
/// moved up to the top of the tree being removed and removed from there, so that a tree
/// of any depth goes without the execd running out of descriptors or stack.
const MAX_DEPTH: usize = 64;

/// A directory held open. Operations inside it are relative to the descriptor.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

fn cstring(name: &str) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a name"))
}

/// Only a plain last component: no `/`, not `.` or `..`, not empty.
fn check_name(name: &str) -> io::Result<CString> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a plain file name: {name:?}"),
        ));
    }
    cstring(name)
}

const DIR_FLAGS: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

impl Dir {
    /// Open a directory an administrator named (a queue's `tmpdir`, the execd's home):
    /// links in its path are followed, as the administrator wrote it.
    pub fn open_trusted(path: &Path) -> io::Result<Dir> {
        let fd = openat(
            AT_FDCWD,
            path,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// Open `path` without following a link in its last component.
    pub fn open_no_follow(path: &Path) -> io::Result<Dir> {
        let fd = openat(AT_FDCWD, path, DIR_FLAGS, Mode::empty())?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Owned by this process's effective user and writable by nobody else: nobody but
    /// us can add, rename or remove its entries.
    pub fn is_private(&self) -> io::Result<bool> {
        let meta = File::from(self.fd.try_clone()?).metadata()?;
        Ok(meta.is_dir()
            && meta.uid() == nix::unistd::geteuid().as_raw()
            && meta.mode() & 0o022 == 0)
    }

    /// The entry `name`, a directory, opened without following a link.
    pub fn open_dir(&self, name: &str) -> io::Result<Dir> {
        let c = check_name(name)?;
        let fd = openat(self.fd.as_fd(), c.as_c_str(), DIR_FLAGS, Mode::empty())?;
        Ok(Dir {
            fd,
            path: self.path.join(name),
        })
    }

    /// Create the directory `name` (it must not exist) and open it.
    pub fn create_dir(&self, name: &str, mode: u32) -> io::Result<Dir> {
        let c = check_name(name)?;
        mkdirat(
            self.fd.as_fd(),
            c.as_c_str(),
            Mode::from_bits_truncate(mode),
        )?;
        let dir = self.open_dir(name)?;
        // The umask may have taken bits away; the mode is what we say.
        fchmod(dir.fd.as_fd(), Mode::from_bits_truncate(mode))?;
        Ok(dir)
    }

    /// Create the file `name` (it must not exist, a link is not followed), for writing.
    pub fn create_file(&self, name: &str, mode: u32) -> io::Result<File> {
        let c = check_name(name)?;
        let fd = openat(
            self.fd.as_fd(),
            c.as_c_str(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(mode),
        )?;
        let file = File::from(fd);
        fchmod(file.as_fd(), Mode::from_bits_truncate(mode))?;
        Ok(file)
    }

    /// Give the directory itself to a user.
    pub fn hand_over(&self, uid: u32, gid: u32, mode: u32) -> io::Result<()> {
        fchown(
            self.fd.as_fd(),
            Some(Uid::from_raw(uid)),
            Some(Gid::from_raw(gid)),
        )?;
        fchmod(self.fd.as_fd(), Mode::from_bits_truncate(mode))?;
        Ok(())
    }

    /// Remove the entry `name` and, if it is a directory, everything in it, however
    /// deep, without following a link anywhere. A missing entry is not an error.
    pub fn remove_tree(&self, name: &str) -> io::Result<()> {
        let c = check_name(name)?;
        match nix::unistd::unlinkat(self.fd.as_fd(), c.as_c_str(), UnlinkatFlags::NoRemoveDir) {
            Ok(()) => return Ok(()),
            Err(Errno::ENOENT) => return Ok(()),
            // Linux answers EISDIR for a directory (POSIX allows EPERM).
            Err(Errno::EISDIR | Errno::EPERM) => {}
            Err(e) => return Err(e.into()),
        }
        let top = openat(self.fd.as_fd(), c.as_c_str(), DIR_FLAGS, Mode::empty())?;
        // Each pass empties the tree down to MAX_DEPTH and moves what lies deeper to
        // the top; a pass that moved nothing left the tree empty.
        let mut moved = 0u64;
        loop {
            let before = moved;
            empty_dir(&top, &top, 1, &mut moved)?;
            if moved == before {
                break;
            }
        }
        nix::unistd::unlinkat(self.fd.as_fd(), c.as_c_str(), UnlinkatFlags::RemoveDir)?;
        Ok(())
    }
}

/// Remove everything in `dir` (at `depth` below `top`); a directory deeper than
/// [`MAX_DEPTH`] is moved to `top` under a new name instead (counted in `moved`), for a
/// later pass. The first error is returned once everything else was tried.
fn empty_dir(dir: &OwnedFd, top: &OwnedFd, depth: usize, moved: &mut u64) -> io::Result<()> {
    let mut names: Vec<CString> = Vec::new();
    let mut listing = nix::dir::Dir::from_fd(dir.try_clone()?)?;
    for entry in listing.iter() {
        let entry = entry?;
        let n = entry.file_name();
        if n != c"." && n != c".." {
            names.push(n.to_owned());
        }
    }
    drop(listing);
    let mut first_error = None;
    for n in &names {
        if let Err(e) = remove_entry(dir, n, top, depth, moved) {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

fn remove_entry(
    dir: &OwnedFd,
    name: &CStr,
    top: &OwnedFd,
    depth: usize,
    moved: &mut u64,
) -> io::Result<()> {
    match nix::unistd::unlinkat(dir.as_fd(), name, UnlinkatFlags::NoRemoveDir) {
        Ok(()) => return Ok(()),
        Err(Errno::EISDIR | Errno::EPERM) => {}
        Err(e) => return Err(e.into()),
    }
    if depth >= MAX_DEPTH {
        // Up to the top, under a name nothing there has.
        loop {
            let to = CString::new(format!(".gantry-deeper.{moved}")).map_err(io::Error::other)?;
            *moved += 1;
            match nix::fcntl::renameat2(
                dir.as_fd(),
                name,
                top.as_fd(),
                to.as_c_str(),
                nix::fcntl::RenameFlags::RENAME_NOREPLACE,
            ) {
                Ok(()) => return Ok(()),
                Err(Errno::EEXIST) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
    let sub = openat(dir.as_fd(), name, DIR_FLAGS, Mode::empty())?;
    empty_dir(&sub, top, depth + 1, moved)?;
    drop(sub);
    nix::unistd::unlinkat(dir.as_fd(), name, UnlinkatFlags::RemoveDir)?;
    Ok(())
}

/// The per-execd directory under a queue's `tmpdir`: `gantry.<host>`, created with mode
/// 0711 if it is missing. If that name is taken by something else (a file, a link, a
/// directory of another user or writable by others), `gantry.<host>.1`, `.2`, ... are
/// tried; `planted` learns each name passed over.
pub fn tmpdir_base(parent: &Path, host: &str, mut planted: impl FnMut(&Path)) -> io::Result<Dir> {
    let parent = Dir::open_trusted(parent)?;
    for i in 0..ATTEMPTS {
        let name = match i {
            0 => format!("gantry.{host}"),
            i => format!("gantry.{host}.{i}"),
        };
        match parent.create_dir(&name, 0o711) {
            Ok(dir) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        match parent.open_dir(&name) {
            Ok(dir) if dir.is_private()? => return Ok(dir),
            _ => planted(&parent.path.join(&name)),
        }
    }
    Err(io::Error::other(format!(
        "every name for the execd's directory in {} is taken",
        parent.path.display()
    )))
}

/// Create a task's TMPDIR `name` in `base` (or `name.1`, `name.2`, ... if taken), let
/// `fill` write into it while root still owns it, then hand it to the job's owner with
/// mode 0700.
pub fn create_task_tmpdir(
    base: &Dir,
    name: &str,
    uid: u32,
    gid: u32,
    fill: impl FnOnce(&Dir) -> io::Result<()>,
) -> io::Result<Dir> {
    let mut chosen = None;
    for i in 0..ATTEMPTS {
        let candidate = match i {
            0 => name.to_string(),
            i => format!("{name}.{i}"),
        };
        match base.create_dir(&candidate, 0o700) {
            Ok(dir) => {
                chosen = Some(dir);
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    let dir = chosen.ok_or_else(|| {
        io::Error::other(format!(
            "every name for {name} in {} is taken",
            base.path.display()
        ))
    })?;
    let filled = fill(&dir).and_then(|()| dir.hand_over(uid, gid, 0o700));
    if let Err(e) = filled {
        let leaf = dir.path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let _ = base.remove_tree(leaf);
        return Err(e);
    }
    Ok(dir)
}

/// Remove a task's TMPDIR given by its full path: its parent must be a per-execd
/// directory this process owns (so that no user can have swapped it), and the TMPDIR is
/// removed through the parent's descriptor without following links.
pub fn remove_task_tmpdir(path: &Path) -> io::Result<()> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
    else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a TMPDIR: {}", path.display()),
        ));
    };
    let base = match Dir::open_no_follow(parent) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !base.is_private()? {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not the execd's own directory: not removing {name}",
                parent.display()
            ),
        ));
    }
    base.remove_tree(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
    }

    #[test]
    fn a_planted_base_name_is_passed_over_and_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        std::fs::create_dir(&target).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
        symlink(&target, tmp.path().join("gantry.n1")).unwrap();
        std::fs::write(tmp.path().join("gantry.n1.1"), "planted").unwrap();
        let mut passed = Vec::new();
        let base = tmpdir_base(tmp.path(), "n1", |p| passed.push(p.to_path_buf())).unwrap();
        assert_eq!(base.path(), tmp.path().join("gantry.n1.2"));
        assert_eq!(
            passed,
            vec![tmp.path().join("gantry.n1"), tmp.path().join("gantry.n1.1")]
        );
        assert_eq!(mode(base.path()), 0o711);
        assert_eq!(mode(&target), 0o755, "the link's target is untouched");
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("gantry.n1.1")).unwrap(),
            "planted"
        );
        // The next call finds the same directory again.
        let again = tmpdir_base(tmp.path(), "n1", |_| {}).unwrap();
        assert_eq!(again.path(), base.path());
    }

    #[test]
    fn a_base_writable_by_others_is_not_trusted() {
        let tmp = tempfile::tempdir().unwrap();
        let open = tmp.path().join("gantry.n1");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let base = tmpdir_base(tmp.path(), "n1", |_| {}).unwrap();
        assert_eq!(base.path(), tmp.path().join("gantry.n1.1"));
    }

    #[test]
    fn task_tmpdirs_are_created_exclusively_filled_and_removed_without_following_links() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmpdir_base(tmp.path(), "n1", |_| {}).unwrap();
        let me = (
            nix::unistd::geteuid().as_raw(),
            nix::unistd::getegid().as_raw(),
        );
        let first = create_task_tmpdir(&base, "7.1.all.q", me.0, me.1, |d| {
            use std::io::Write;
            d.create_file("pe_hostfile", 0o644)?
                .write_all(b"n1 1 all.q@n1 UNDEFINED\n")
        })
        .unwrap();
        assert_eq!(first.path(), base.path().join("7.1.all.q"));
        assert_eq!(mode(first.path()), 0o700);
        // A second task with the same name (another cell's execd on this host) gets
        // another one.
        let second = create_task_tmpdir(&base, "7.1.all.q", me.0, me.1, |_| Ok(())).unwrap();
        assert_eq!(second.path(), base.path().join("7.1.all.q.1"));
        // What the job leaves: files, directories, a link out of the TMPDIR.
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), "keep").unwrap();
        std::fs::create_dir_all(first.path().join("a/b/c")).unwrap();
        std::fs::write(first.path().join("a/b/c/f"), "x").unwrap();
        symlink(&outside, first.path().join("a/link")).unwrap();
        remove_task_tmpdir(first.path()).unwrap();
        assert!(!first.path().exists());
        assert_eq!(
            std::fs::read_to_string(outside.join("keep")).unwrap(),
            "keep"
        );
        // Removing again, or something already gone, is fine.
        remove_task_tmpdir(first.path()).unwrap();
        // A tree far deeper than a removal descends at once (a job's attempt to leave
        // its TMPDIR behind), with a file at every level and a name at the top that
        // the removal would use for what it moves up: all of it goes.
        let deep = create_task_tmpdir(&base, "9.1.all.q", me.0, me.1, |_| Ok(())).unwrap();
        std::fs::create_dir(deep.path().join(".gantry-deeper.0")).unwrap();
        let mut level = Dir::open_trusted(deep.path()).unwrap();
        for _ in 0..(5 * MAX_DEPTH + 3) {
            use std::io::Write;
            level
                .create_file("f", 0o644)
                .unwrap()
                .write_all(b"x")
                .unwrap();
            level = level.create_dir("d", 0o755).unwrap();
        }
        drop(level);
        remove_task_tmpdir(deep.path()).unwrap();
        assert!(!deep.path().exists());
        // A fill that fails leaves nothing behind.
        let err = create_task_tmpdir(&base, "8.1.all.q", me.0, me.1, |_| {
            Err(io::Error::other("no"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "no");
        assert!(!base.path().join("8.1.all.q").exists());
    }

    #[test]
    fn a_tmpdir_whose_parent_is_not_ours_is_not_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::fs::create_dir(open.join("1.1.all.q")).unwrap();
        let err = remove_task_tmpdir(&open.join("1.1.all.q")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        assert!(open.join("1.1.all.q").exists());
        // Nor through a link.
        let link = tmp.path().join("link");
        symlink(&open, &link).unwrap();
        assert!(remove_task_tmpdir(&link.join("1.1.all.q")).is_err());
        assert!(open.join("1.1.all.q").exists());
    }

    #[test]
    fn names_must_be_plain() {
        let tmp = tempfile::tempdir().unwrap();
        let d = Dir::open_trusted(tmp.path()).unwrap();
        for bad in ["", ".", "..", "a/b", "../x"] {
            assert!(d.create_dir(bad, 0o700).is_err(), "{bad:?}");
            assert!(d.remove_tree(bad).is_err(), "{bad:?}");
        }
    }
}
