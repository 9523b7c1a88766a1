//! The shepherd's side of an interactive session (`qrsh`, `qlogin`): it waits on a
//! socket in the task's directory for the execd to join the session on the master's
//! behalf with the task's key, then starts the job on pipes or a pseudo terminal and
//! carries [`SessionFrame`]s between them and the socket until the job has ended. A
//! session whose connection goes ends the job (SIGHUP, then SIGKILL), as a lost `qrsh`
//! does in SGE.
//!
//! Plain blocking I/O on threads, as the rest of the shepherd: it runs once per task.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gantry_common::session::{read_frame, write_frame, CHUNK, MAX_FRAME};
use gantry_proto::{SessionFrame, TaskAttach};
use nix::sys::signal::Signal;
use nix::unistd::{Gid, Uid};

use crate::processes::TaskProcesses;

/// The socket the execd joins an interactive task's session on, in its directory.
pub const SESSION_SOCKET: &str = "session.sock";

/// How long a started interactive task waits for its session to be joined (SGE's qrsh
/// waits as long for its shepherd to connect back).
pub const JOIN_TIMEOUT: Duration = Duration::from_secs(60);

pub fn socket_path(dir: &Path) -> PathBuf {
    dir.join(SESSION_SOCKET)
}

/// Wait for the execd to join the session with the task's key: the connection, or why
/// none came.
pub fn accept(dir: &Path, key: &[u8], timeout: Duration) -> Result<UnixStream, String> {
    let path = socket_path(dir);
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    // The execd (root, or the shepherd's own user on a personal cluster) only.
    let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    let deadline = Instant::now() + timeout;
    let me = nix::unistd::geteuid().as_raw();
    loop {
        match listener.accept() {
            Ok((mut stream, _)) => {
                let _ = stream.set_nonblocking(false);
                let peer = nix::sys::socket::getsockopt(
                    &stream,
                    nix::sys::socket::sockopt::PeerCredentials,
                )
                .map(|c| c.uid());
                if peer.is_ok_and(|uid| uid == 0 || uid == me) {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                    if let Ok(Some(TaskAttach { key: given, .. })) =
                        read_frame::<TaskAttach>(&mut stream, 4096)
                    {
                        if constant_time_eq(&given, key) {
                            let _ = stream.set_read_timeout(None);
                            let _ = std::fs::remove_file(&path);
                            return Ok(stream);
                        }
                    }
                }
                // Not the execd with the key: the next one.
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    let _ = std::fs::remove_file(&path);
                    return Err(format!(
                        "nobody joined the interactive session within {} s",
                        timeout.as_secs()
                    ));
                }
                // Until a connection comes (or the time is up), not a moment longer.
                let mut fds = [nix::poll::PollFd::new(
                    std::os::fd::AsFd::as_fd(&listener),
                    nix::poll::PollFlags::POLLIN,
                )];
                let ms = u16::try_from(left.as_millis()).unwrap_or(u16::MAX);
                let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms));
            }
            Err(e) => return Err(format!("accepting the session failed: {e}")),
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The job's side of its standard streams, and the shepherd's.
pub struct Streams {
    pub stdin: File,
    pub stdout: File,
    pub stderr: File,
    /// The pseudo terminal's slave, to become the job's controlling terminal.
    pub terminal: Option<File>,
    pub local: Local,
}

/// The shepherd's ends.
pub enum Local {
    Pipes {
        stdin: File,
        stdout: File,
        stderr: File,
    },
    Terminal {
        master: File,
    },
}

fn cloexec(fd: &impl AsFd) -> nix::Result<()> {
    nix::fcntl::fcntl(
        fd.as_fd(),
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    )
    .map(|_| ())
}

/// How much a session's pipes to and from the job hold (Linux's default most for a
/// pipe, `/proc/sys/fs/pipe-max-size`).
const SESSION_PIPE: nix::libc::c_int = 1 << 20;

/// Pipes, or with `pty` a pseudo terminal whose slave the job's owner owns (as `login`
/// hands a terminal over).
pub fn streams(pty: bool, uid: u32, gid: u32) -> std::io::Result<Streams> {
    if pty {
        let p = nix::pty::openpty(None, None)?;
        cloexec(&p.master)?;
        cloexec(&p.slave)?;
        let slave = File::from(p.slave);
        nix::unistd::fchown(
            slave.as_fd(),
            Some(Uid::from_raw(uid)),
            Some(Gid::from_raw(gid)),
        )?;
        nix::sys::stat::fchmod(
            slave.as_fd(),
            nix::sys::stat::Mode::from_bits_truncate(0o620),
        )?;
        return Ok(Streams {
            stdin: slave.try_clone()?,
            stdout: slave.try_clone()?,
            stderr: slave.try_clone()?,
            terminal: Some(slave),
            local: Local::Terminal {
                master: File::from(p.master),
            },
        });
    }
    let flags = nix::fcntl::OFlag::O_CLOEXEC;
    let (in_r, in_w) = nix::unistd::pipe2(flags)?;
    let (out_r, out_w) = nix::unistd::pipe2(flags)?;
    let (err_r, err_w) = nix::unistd::pipe2(flags)?;
    // Room for a frame's worth and more on either side of the job (a pipe holds 64 KiB
    // by default, and the relay then waits on the job for every frame): as much as the
    // system lets an unprivileged pipe have, if it lets.
    for fd in [&in_w, &out_w] {
        let _ = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETPIPE_SZ(SESSION_PIPE));
    }
    Ok(Streams {
        stdin: File::from(in_r),
        stdout: File::from(out_w),
        stderr: File::from(err_w),
        terminal: None,
        local: Local::Pipes {
            stdin: File::from(in_w),
            stdout: File::from(out_r),
            stderr: File::from(err_r),
        },
    })
}

/// A session under way: threads carrying the job's output to the connection and the
/// user's input, window size and signals to the job.
pub struct Relay {
    conn: Arc<Mutex<UnixStream>>,
    outputs: Vec<std::thread::JoinHandle<()>>,
    lost: Arc<std::sync::atomic::AtomicBool>,
}

fn set_window_size(master: &File, rows: u16, cols: u16) {
    let size = nix::libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one winsize from the pointer, which lives for the call.
    #[allow(unsafe_code)]
    unsafe {
        nix::libc::ioctl(
            std::os::fd::AsRawFd::as_raw_fd(master),
            nix::libc::TIOCSWINSZ,
            &size,
        );
    }
}

/// Copy what `from` gives into frames made by `wrap` until it ends.
fn carry_output(
    mut from: File,
    conn: Arc<Mutex<UnixStream>>,
    wrap: fn(Vec<u8>) -> SessionFrame,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; CHUNK];
        loop {
            match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let Ok(mut c) = conn.lock() else { break };
                    if write_frame(&mut *c, &wrap(buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // A terminal's master reads EIO once no process has the slave open.
                Err(_) => break,
            }
        }
    })
}

impl Relay {
    /// Start carrying: `local` is the shepherd's ends, `processes` the job's (what a
    /// signal reaches, and what ends when the connection goes).
    pub fn start(
        conn: UnixStream,
        local: Local,
        processes: TaskProcesses,
    ) -> std::io::Result<Relay> {
        let mut reader = conn.try_clone()?;
        let conn = Arc::new(Mutex::new(conn));
        let lost = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (mut input, terminal, outputs) = match local {
            Local::Pipes {
                stdin,
                stdout,
                stderr,
            } => (
                Some(stdin),
                None,
                vec![
                    carry_output(stdout, Arc::clone(&conn), SessionFrame::Stdout),
                    carry_output(stderr, Arc::clone(&conn), SessionFrame::Stderr),
                ],
            ),
            Local::Terminal { master } => {
                let output = master.try_clone()?;
                (
                    Some(master.try_clone()?),
                    Some(master),
                    vec![carry_output(
                        output,
                        Arc::clone(&conn),
                        SessionFrame::Stdout,
                    )],
                )
            }
        };
        let gone = Arc::clone(&lost);
        std::thread::spawn(move || {
            loop {
                match read_frame::<SessionFrame>(&mut reader, MAX_FRAME) {
                    Ok(Some(SessionFrame::Stdin(bytes))) => {
                        if let Some(w) = input.as_mut() {
                            if w.write_all(&bytes).is_err() {
                                input = None;
                            }
                        }
                    }
                    Ok(Some(SessionFrame::StdinClosed)) => {
                        // Pipes: the job reads the end of its input. A terminal stays
                        // (the user's end-of-file is a character on it).
                        if terminal.is_none() {
                            input = None;
                        }
                    }
                    Ok(Some(SessionFrame::WindowSize { rows, cols })) => {
                        if let Some(m) = &terminal {
                            set_window_size(m, rows, cols);
                        }
                    }
                    Ok(Some(SessionFrame::Signal(n))) => {
                        if let Ok(sig) = Signal::try_from(n) {
                            processes.signal(sig);
                        }
                    }
                    Ok(Some(_)) => {}
                    // The user's side is gone: so is the job, as when a terminal hangs
                    // up.
                    Ok(None) | Err(_) => {
                        gone.store(true, std::sync::atomic::Ordering::SeqCst);
                        processes.signal(Signal::SIGHUP);
                        processes.signal(Signal::SIGCONT);
                        std::thread::sleep(Duration::from_secs(2));
                        processes.kill();
                        break;
                    }
                }
            }
        });
        Ok(Relay {
            conn,
            outputs,
            lost,
        })
    }

    /// The job has ended with `status`: what it wrote still goes out (two seconds at
    /// most), then its status, and the session is over.
    pub fn finish(self, status: i32) {
        let deadline = Instant::now() + Duration::from_secs(2);
        for t in self.outputs {
            while !t.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        if self.lost.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        if let Ok(mut c) = self.conn.lock() {
            let _ = write_frame(&mut *c, &SessionFrame::Exit { status });
            let _ = c.flush();
            let _ = c.shutdown(std::net::Shutdown::Write);
        }
        // The other side closes once it has the status; until then (two seconds at
        // most) the socket stays open, so that what it still sends meets no closed
        // socket, which would cut the session before the status has gone through.
        let deadline = Instant::now() + Duration::from_secs(2);
        while !self.lost.load(std::sync::atomic::Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Tell a joined session why its task could not start, and wait (two seconds at most)
/// for the other side to close, as [`Relay::finish`] does.
pub fn fail(mut conn: UnixStream, why: &str) {
    let _ = write_frame(&mut conn, &SessionFrame::Failed(why.to_string()));
    let _ = conn.shutdown(std::net::Shutdown::Write);
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    let mut sink = [0u8; 4096];
    while matches!(conn.read(&mut sink), Ok(n) if n > 0) {}
}
