//! A batch job's pseudo terminal (`qsub -pty y`): the job's controlling terminal, what
//! the job writes to it copied into its standard output file.

use std::fs::File;
use std::io::Write;
use std::time::Duration;

use nix::unistd::{Gid, Uid};

/// A job's pseudo terminal (`-pty y`) before the job starts: the shepherd keeps the
/// master side, the job gets the slave (owned by the job's owner, as `login` hands a
/// terminal over).
pub(super) struct Terminal {
    master: File,
    pub(super) slave: File,
    out: File,
}

/// The terminal of a running job: a thread copies what the job writes to it into the
/// job's standard output file.
pub(super) struct RelayedTerminal {
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    finished: std::sync::mpsc::Receiver<()>,
}

impl Terminal {
    pub(super) fn open(uid: u32, gid: u32, out: File) -> std::io::Result<Terminal> {
        let pty = nix::pty::openpty(None, None)?;
        // Neither side is the job's to inherit: it gets the slave as its controlling
        // terminal only.
        for fd in [&pty.master, &pty.slave] {
            nix::fcntl::fcntl(
                fd,
                nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
            )?;
        }
        let slave = File::from(pty.slave);
        nix::unistd::fchown(
            std::os::fd::AsFd::as_fd(&slave),
            Some(Uid::from_raw(uid)),
            Some(Gid::from_raw(gid)),
        )?;
        nix::sys::stat::fchmod(
            std::os::fd::AsFd::as_fd(&slave),
            nix::sys::stat::Mode::from_bits_truncate(0o620),
        )?;
        Ok(Terminal {
            master: File::from(pty.master),
            slave,
            out,
        })
    }

    /// Close the shepherd's copy of the slave and start copying. While no process has
    /// the terminal open the master reads EIO; the job may open `/dev/tty` again later,
    /// so the copy goes on until the job has ended.
    pub(super) fn relay(self) -> RelayedTerminal {
        use std::io::Read;
        let Terminal {
            mut master,
            slave,
            mut out,
        } = self;
        drop(slave);
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (tx, finished) = std::sync::mpsc::channel();
        let ended = std::sync::Arc::clone(&done);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match master.read(&mut buf) {
                    Ok(n) if n > 0 => {
                        let _ = out.write_all(&buf[..n]);
                    }
                    _ if ended.load(std::sync::atomic::Ordering::SeqCst) => break,
                    _ => std::thread::sleep(Duration::from_millis(50)),
                }
            }
            let _ = tx.send(());
        });
        RelayedTerminal { done, finished }
    }
}

impl RelayedTerminal {
    /// The job has ended (and everything it left): copy what is still buffered, then
    /// stop, waiting a second at most.
    pub(super) fn finish(self) {
        self.done.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = self.finished.recv_timeout(Duration::from_secs(1));
    }
}
