//! Starting a job's process: created directly inside its task's control group
//! (`clone3` with `CLONE_INTO_CGROUP`), with every privilege dropped before it executes
//! the job.
//!
//! Why not `std::process::Command`: moving a process into a control group after it
//! exists (writing to `cgroup.procs`) takes the kernel's cgroup write lock, whose first
//! taker after a quiet moment waits for an RCU grace period: 6-9 ms here, on every job
//! start of an idle host. A process created inside the group takes no such lock. Kernels
//! without `clone3` or `CLONE_INTO_CGROUP` (before 5.7) get a plain `fork`, and the child
//! moves itself into the group before it executes the job.
//!
//! Between fork and exec the child makes only system calls on data prepared before the
//! fork (no allocation, no lock), as a child of a multi-threaded process must.
//!
//! Only for the shepherd, which is single-threaded: a raw `clone3` bypasses the C
//! library's fork handling, so in a child of a multi-threaded process the library's
//! `setgroups`/`setresuid` (which wait for every thread of the parent to change its
//! credentials too) would wait forever. The execd starts its helpers (the mailer) with
//! the standard library's `Command`.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::libc;

/// `CLONE_INTO_CGROUP` (Linux 5.7), not in every libc crate version.
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// The kernel's `struct clone_args` (version 2: with `cgroup`).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// Who the job runs as.
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
    /// False when the shepherd runs as the owner already (a personal cluster).
    pub drop_privileges: bool,
}

/// Everything the job's process needs, prepared before the fork.
pub struct JobProcess {
    /// The program, found on the job's `PATH` if it has no `/`.
    pub program: CString,
    /// `argv`, the program's name first.
    pub args: Vec<CString>,
    /// `NAME=value` entries.
    pub env: Vec<CString>,
    pub cwd: CString,
    /// Standard input (`qsub -i`): `/dev/null` when none.
    pub stdin: Option<File>,
    pub stdout: File,
    pub stderr: File,
    pub who: Identity,
    /// `(resource, soft, hard)`.
    pub rlimits: Vec<(libc::c_int, u64, u64)>,
    /// The task's control group, a directory opened (`O_DIRECTORY`) for `clone3`.
    pub group: Option<File>,
    /// The group's `cgroup.procs`, open for writing: the fallback when `clone3` cannot
    /// place the child, and the way in when `group` is not given (the child joins the
    /// group before it executes).
    pub group_procs: Option<File>,
    /// `-pty y`: a pseudo terminal's slave, which becomes the controlling terminal of a
    /// session the child leads (instead of a process group of its own).
    pub terminal: Option<File>,
}

/// Find `program` as `execvp` would on `path` (the job's `PATH`).
pub fn resolve(program: &str, path: &str) -> io::Result<CString> {
    let found = if program.contains('/') {
        Some(program.to_string())
    } else {
        path.split(':')
            .map(|dir| {
                if dir.is_empty() {
                    program.to_string()
                } else {
                    format!("{dir}/{program}")
                }
            })
            .find(|candidate| {
                use std::os::unix::fs::PermissionsExt;
                std::fs::metadata(candidate)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    };
    let found = found.ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))?;
    CString::new(found).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

pub fn cstring(s: impl AsRef<std::ffi::OsStr>) -> io::Result<CString> {
    CString::new(s.as_ref().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// An argument vector as `execve` takes it.
pub fn cstrings<S: AsRef<std::ffi::OsStr>>(items: &[S]) -> io::Result<Vec<CString>> {
    items.iter().map(cstring).collect()
}

/// An environment (`NAME`, value) as `execve` takes it: `NAME=value`.
pub fn environment(env: &[(String, String)]) -> io::Result<Vec<CString>> {
    env.iter()
        .map(|(k, v)| cstring(format!("{k}={v}")))
        .collect()
}

pub fn cpath(p: &Path) -> io::Result<CString> {
    cstring(p.as_os_str())
}

/// Start the job; returns its process id (the leader of its own process group). An
/// error is the reason the child could not execute the job (it has exited then).
#[allow(unsafe_code)] // fork and exec by hand: see the module's documentation.
pub fn spawn(job: &JobProcess) -> io::Result<i32> {
    let argv: Vec<*const libc::c_char> = job
        .args
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let envp: Vec<*const libc::c_char> = job
        .env
        .iter()
        .map(|e| e.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let groups: Vec<libc::gid_t> = job.who.groups.clone();
    let devnull = c"/dev/null";
    // The child reports why it could not execute the job through this pipe; a
    // successful exec closes it (close-on-exec) and the parent reads nothing.
    let (report_read, report_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let child = Child {
        program: job.program.as_c_str(),
        argv: &argv,
        envp: &envp,
        cwd: job.cwd.as_c_str(),
        devnull,
        stdin: job.stdin.as_ref().map(|f| f.as_raw_fd()),
        stdout: job.stdout.as_raw_fd(),
        stderr: job.stderr.as_raw_fd(),
        groups: &groups,
        who: &job.who,
        rlimits: &job.rlimits,
        report: report_write.as_raw_fd(),
        terminal: job.terminal.as_ref().map(|f| f.as_raw_fd()),
    };
    let mut args = CloneArgs {
        exit_signal: libc::SIGCHLD as u64,
        ..CloneArgs::default()
    };
    if let Some(g) = &job.group {
        args.flags |= CLONE_INTO_CGROUP;
        args.cgroup = g.as_raw_fd() as u64;
    }
    let mut join_after_fork = match job.group {
        Some(_) => None,
        None => job.group_procs.as_ref().map(|f| f.as_raw_fd()),
    };
    // SAFETY: clone3 without CLONE_VM and without a stack is fork: the child gets a copy
    // of this process and continues here with its own copy of the stack; it only runs
    // `Child::exec`, which makes plain system calls and never returns.
    let mut pid = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    if pid < 0 {
        // No clone3, or no CLONE_INTO_CGROUP: fork, and the child joins the group.
        // SAFETY: as above; the child only runs `Child::exec`.
        pid = unsafe { libc::fork() } as libc::c_long;
        join_after_fork = job.group_procs.as_ref().map(|f| f.as_raw_fd());
    }
    if pid == 0 {
        child.exec(join_after_fork);
    }
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    drop(report_write);
    let pid = pid as i32;
    let mut errno = [0u8; 4];
    let read = read_full(&report_read, &mut errno);
    if read == 4 {
        // The child failed before exec and exits: reap it.
        let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
        return Err(io::Error::from_raw_os_error(i32::from_ne_bytes(errno)));
    }
    Ok(pid)
}

fn read_full(fd: &OwnedFd, buf: &mut [u8]) -> usize {
    let mut got = 0;
    while got < buf.len() {
        match nix::unistd::read(fd, &mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break,
        }
    }
    got
}

/// What the child needs, as borrowed raw data.
struct Child<'a> {
    program: &'a CStr,
    argv: &'a [*const libc::c_char],
    envp: &'a [*const libc::c_char],
    cwd: &'a CStr,
    devnull: &'a CStr,
    stdin: Option<RawFd>,
    stdout: RawFd,
    stderr: RawFd,
    groups: &'a [libc::gid_t],
    who: &'a Identity,
    rlimits: &'a [(libc::c_int, u64, u64)],
    report: RawFd,
    terminal: Option<RawFd>,
}

impl Child<'_> {
    /// In the child: become the job, or report why not and exit.
    #[allow(unsafe_code)]
    fn exec(&self, join_group: Option<RawFd>) -> ! {
        // SAFETY: plain system calls on data that lives in this (copied) address space;
        // nothing allocates, locks or unwinds.
        unsafe {
            let errno = self.prepare(join_group);
            let e = errno.to_ne_bytes();
            libc::write(self.report, e.as_ptr().cast(), e.len());
            libc::_exit(127);
        }
    }

    /// Every step up to exec; returns the errno of the step that failed.
    #[allow(unsafe_code)]
    unsafe fn prepare(&self, join_group: Option<RawFd>) -> i32 {
        let fail = || *libc::__errno_location();
        if let Some(fd) = join_group {
            if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                return fail();
            }
        }
        // A process group of its own (the shepherd signals the job through it); with a
        // terminal, a session of its own (its leader leads a process group as well),
        // whose controlling terminal the terminal becomes.
        match self.terminal {
            None => {
                if libc::setpgid(0, 0) != 0 {
                    return fail();
                }
            }
            Some(fd) => {
                if libc::setsid() < 0 || libc::ioctl(fd, libc::TIOCSCTTY, 0) != 0 {
                    return fail();
                }
                libc::close(fd);
            }
        }
        let input = match self.stdin {
            Some(fd) => fd,
            None => libc::open(self.devnull.as_ptr(), libc::O_RDONLY),
        };
        if input < 0 || libc::dup2(input, 0) < 0 {
            return fail();
        }
        if libc::dup2(self.stdout, 1) < 0 || libc::dup2(self.stderr, 2) < 0 {
            return fail();
        }
        // The shepherd (a Rust program) ignores SIGPIPE; an ignored signal stays
        // ignored across exec, and a job must see it as usual.
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        for (resource, soft, hard) in self.rlimits {
            let limit = libc::rlimit {
                rlim_cur: *soft,
                rlim_max: *hard,
            };
            if libc::setrlimit(*resource as _, &limit) != 0 {
                return fail();
            }
        }
        if self.who.drop_privileges
            && (libc::setgroups(self.groups.len(), self.groups.as_ptr()) != 0
                || libc::setresgid(self.who.gid, self.who.gid, self.who.gid) != 0
                || libc::setresuid(self.who.uid, self.who.uid, self.who.uid) != 0)
        {
            return fail();
        }
        // Entered with the owner's rights only.
        if libc::chdir(self.cwd.as_ptr()) != 0 {
            return fail();
        }
        libc::execve(
            self.program.as_ptr(),
            self.argv.as_ptr(),
            self.envp.as_ptr(),
        );
        fail()
    }
}

/// A directory opened to name a control group to `clone3`.
pub fn open_group_dir(path: &Path) -> io::Result<File> {
    let fd = nix::fcntl::open(
        path,
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )?;
    Ok(File::from(fd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_as_execvp_finds_them() {
        assert_eq!(resolve("/bin/sh", "").unwrap().to_str().unwrap(), "/bin/sh");
        assert_eq!(
            resolve("sh", "/nonexistent:/bin:/usr/bin")
                .unwrap()
                .to_str()
                .unwrap(),
            "/bin/sh"
        );
        assert_eq!(
            resolve("no-such-program-here", "/bin:/usr/bin")
                .unwrap_err()
                .raw_os_error(),
            Some(libc::ENOENT)
        );
    }
}
