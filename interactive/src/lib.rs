//! `qrsh` and `qlogin`: submit an interactive job (`-now y` unless told otherwise),
//! wait for it to start, join its session through the local daemon, and carry the
//! user's terminal or standard streams to the job's host until the job ends; exit with
//! the job's status.
//!
//! The session rides the connections Gantry already has: this command to the local
//! daemon over its Unix socket (the kernel names the user), the master to the task's
//! execd over their QUIC connection with mutual TLS, the execd to the task's shepherd
//! over a socket only root reaches, which lets in only the master's key for that task
//! (`docs/dev/interactive.md`).

use std::io::{IsTerminal, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};

use gantry_client::qrsh::{interactive_job, InteractiveJob};
use gantry_common::session::{read_frame, write_frame, CHUNK, MAX_FRAME};
use gantry_proto::{FromMaster, InteractiveKind, JobScript, SessionFrame, ToMaster, Verify};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::termios;

/// What `qrsh`/`qlogin` exits with when the session could not be had (SGE's qrsh: 1).
const FAILED: i32 = 1;

fn name(kind: InteractiveKind) -> &'static str {
    match kind {
        InteractiveKind::Qrsh => "qrsh",
        InteractiveKind::Qlogin => "qlogin",
    }
}

/// `Your job N ("name") has been submitted`, when it waits for qrsh's end.
static SUBMITTED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The program: its exit status.
pub fn main(kind: InteractiveKind) -> i32 {
    let status = start(kind);
    if let Some(line) = SUBMITTED.get() {
        let mut out = std::io::stdout();
        let _ = out.write_all(line.as_bytes());
        let _ = out.flush();
    }
    status
}

fn start(kind: InteractiveKind) -> i32 {
    let args = match gantry_client::args() {
        Ok(a) => a,
        Err(out) => return i32::from(out.print()),
    };
    if kind == InteractiveKind::Qrsh && gantry_client::qrsh::is_inherit(&args) {
        return inherit(&args);
    }
    let job = match interactive_job(&args, kind) {
        Ok(j) => j,
        Err(out) => return i32::from(out.print()),
    };
    run(job, kind)
}

fn fail(message: &str) -> i32 {
    eprintln!("{message}");
    FAILED
}

fn run(mut job: InteractiveJob, kind: InteractiveKind) -> i32 {
    let login = matches!(
        job.spec.script,
        JobScript::Interactive { command: None, .. }
    );
    let at_terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    // A login session gets a terminal when the user is at one; a command does not,
    // unless `-pty y` (as SGE's qrsh decides).
    let pty = job.pty.unwrap_or(login && at_terminal);
    job.spec.pty = pty;
    let job_id = match gantry_client::conn::request(&ToMaster::Submit {
        spec: Box::new(job.spec.clone()),
        verify: Verify::None,
    }) {
        Ok(FromMaster::Submitted {
            job_id, warnings, ..
        }) => {
            for w in warnings {
                eprintln!("{w}");
            }
            job_id
        }
        Ok(FromMaster::Refused(r)) => return fail(&r.message),
        Ok(other) => return fail(&format!("error: unexpected answer {other:?}")),
        Err(e) => return fail(&e.to_string()),
    };
    // What SGE's qrsh says with -verbose, and its qlogin always: the submission on
    // standard output, the wait and its outcome on standard error.
    let verbose = job.verbose || kind == InteractiveKind::Qlogin;
    if verbose {
        // SGE's qrsh buffers its standard output: at a terminal the line comes now,
        // into a pipe or a file when qrsh exits, after the session's output.
        let line = format!(
            "Your job {job_id} (\"{}\") has been submitted\n",
            job.spec.name
        );
        if std::io::stdout().is_terminal() {
            print!("{line}");
            let _ = std::io::stdout().flush();
        } else {
            let _ = SUBMITTED.set(line);
        }
        eprint!("waiting for interactive job to be scheduled ...");
        let _ = std::io::stderr().flush();
    }
    match gantry_client::conn::request(&ToMaster::WaitStart { job_id }) {
        Ok(FromMaster::JobStarted { .. }) => {}
        // Not placed by the first cycle (-now y): SGE's words, after its "..." when
        // verbose.
        Ok(FromMaster::Refused(r)) if r.kind == gantry_proto::RefusalKind::Denied => {
            return fail(&format!(
                "Your \"{}\" request could not be scheduled, try again later.",
                name(kind)
            ))
        }
        Ok(FromMaster::Refused(r)) => return fail(&r.message),
        Ok(other) => return fail(&format!("error: unexpected answer {other:?}")),
        Err(e) => return fail(&e.to_string()),
    }
    let stream = match gantry_client::conn::request_keeping(&ToMaster::Attach { job_id }) {
        Ok((FromMaster::Attached { host, .. }, stream)) => {
            if verbose {
                eprintln!("\nYour interactive job {job_id} has been successfully scheduled.");
                eprintln!("Establishing builtin session to host {host} ...");
            }
            stream
        }
        Ok((FromMaster::Refused(r), _)) => return fail(&r.message),
        Ok((other, _)) => return fail(&format!("error: unexpected answer {other:?}")),
        Err(e) => return fail(&e.to_string()),
    };
    session(stream, pty && at_terminal, job.nostdin)
}

/// `qrsh -inherit host command`: a task of the job this runs in, started on one of the
/// job's hosts and carried as any session; its exit status is ours.
fn inherit(args: &[String]) -> i32 {
    let env: Vec<(String, String)> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let cwd = std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    let task = match gantry_client::qrsh::inherit_task(args, &env, &cwd) {
        Ok(t) => t,
        Err(out) => return i32::from(out.print()),
    };
    let job_id = task.request.job_id;
    let pty = task.request.pty;
    let stream = match gantry_client::conn::request_keeping(&ToMaster::InheritTask(Box::new(
        task.request,
    ))) {
        Ok((FromMaster::Attached { host, .. }, stream)) => {
            if task.verbose {
                eprintln!("Establishing builtin session to host {host} ...");
            }
            stream
        }
        Ok((FromMaster::Refused(r), _)) => return fail(&r.message),
        Ok((other, _)) => return fail(&format!("error: unexpected answer {other:?}")),
        Err(e) => {
            return fail(&format!(
                "error: executing task of job {job_id} failed: {e}"
            ))
        }
    };
    let at_terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    session(stream, pty && at_terminal, task.nostdin)
}

/// The user's terminal in raw mode while the session lasts (the remote terminal does
/// the line editing, and Ctrl-C and Ctrl-Z reach it as characters), given back as it
/// was when dropped.
struct RawTerminal {
    saved: termios::Termios,
}

impl RawTerminal {
    fn enter() -> Option<RawTerminal> {
        let stdin = std::io::stdin();
        let saved = termios::tcgetattr(&stdin).ok()?;
        let mut raw = saved.clone();
        termios::cfmakeraw(&mut raw);
        termios::tcsetattr(&stdin, termios::SetArg::TCSADRAIN, &raw).ok()?;
        Some(RawTerminal { saved })
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        let _ = termios::tcsetattr(std::io::stdin(), termios::SetArg::TCSADRAIN, &self.saved);
    }
}

fn window_size() -> Option<(u16, u16)> {
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize through the pointer, which outlives the
    // call.
    #[allow(unsafe_code)]
    let ok =
        unsafe { libc::ioctl(std::io::stdout().as_raw_fd(), libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_row > 0).then_some((size.ws_row, size.ws_col))
}

/// Carry the session: the user's input (unless `-nostdin`), window size changes and
/// signals to the job; its output to ours, until it sends its exit status.
fn session(stream: UnixStream, terminal: bool, nostdin: bool) -> i32 {
    // The signals are taken by one thread that waits for them (blocked everywhere
    // else, the threads below inherit the mask).
    let mut signals = SigSet::empty();
    for s in [
        Signal::SIGWINCH,
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
        Signal::SIGUSR1,
        Signal::SIGUSR2,
    ] {
        signals.add(s);
    }
    let _ = signals.thread_block();
    let writer = match stream.try_clone() {
        Ok(w) => Arc::new(Mutex::new(w)),
        Err(e) => return fail(&format!("error: the session: {e}")),
    };
    let send = {
        let writer = Arc::clone(&writer);
        move |frame: &SessionFrame| -> bool {
            writer
                .lock()
                .map(|mut w| write_frame(&mut *w, frame).is_ok())
                .unwrap_or(false)
        }
    };
    let raw = if terminal { RawTerminal::enter() } else { None };
    if terminal {
        if let Some((rows, cols)) = window_size() {
            send(&SessionFrame::WindowSize { rows, cols });
        }
    }
    {
        let send = send.clone();
        std::thread::spawn(move || {
            while let Ok(sig) = signals.wait() {
                let frame = match sig {
                    Signal::SIGWINCH => match window_size() {
                        Some((rows, cols)) => SessionFrame::WindowSize { rows, cols },
                        None => continue,
                    },
                    // The notification signals of `-notify` are not the session's.
                    Signal::SIGUSR1 | Signal::SIGUSR2 => continue,
                    other => SessionFrame::Signal(other as i32),
                };
                if !send(&frame) {
                    break;
                }
            }
        });
    }
    if nostdin {
        send(&SessionFrame::StdinClosed);
    } else {
        let send = send.clone();
        std::thread::spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buf = vec![0u8; CHUNK];
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) => {
                        send(&SessionFrame::StdinClosed);
                        break;
                    }
                    Ok(n) => {
                        if !send(&SessionFrame::Stdin(buf[..n].to_vec())) {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        send(&SessionFrame::StdinClosed);
                        break;
                    }
                }
            }
        });
    }
    let mut reader = stream;
    // The session's output is written as it comes, frame by frame: straight to the
    // descriptor, not through the standard library's line buffer (which looks for
    // every newline of it).
    let mut stdout: Box<dyn Write> = match std::io::stdout().as_fd().try_clone_to_owned() {
        Ok(fd) => Box::new(std::fs::File::from(fd)),
        Err(_) => Box::new(std::io::stdout()),
    };
    let mut stderr = std::io::stderr();
    let status = loop {
        match read_frame::<SessionFrame>(&mut reader, MAX_FRAME) {
            Ok(Some(SessionFrame::Stdout(bytes))) => {
                if stdout
                    .write_all(&bytes)
                    .and_then(|()| stdout.flush())
                    .is_err()
                {
                    break FAILED;
                }
            }
            Ok(Some(SessionFrame::Stderr(bytes))) => {
                let _ = stderr.write_all(&bytes);
            }
            Ok(Some(SessionFrame::Exit { status })) => break status,
            Ok(Some(SessionFrame::Failed(why))) => {
                drop(raw);
                return fail(&format!("error: {why}"));
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => {
                drop(raw);
                return fail("error: the connection to the interactive job was lost");
            }
        }
    };
    drop(raw);
    status
}
