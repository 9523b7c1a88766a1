//! Running the cluster's `mailer` as SGE's daemons do: `mailer -s SUBJECT RECIPIENT`, the
//! message on its standard input, for at most a minute, as the user the mail is about
//! (never as root), so that nothing a job's or reservation's name or addresses say runs
//! with a daemon's rights. The execd mails about jobs, the master about advance
//! reservations.

use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::io::AsyncWriteExt;

/// How long a mailer may take.
pub const MAILER_TIME: Duration = Duration::from_secs(60);

/// Who the mailer runs as.
#[derive(Debug, Clone)]
pub struct MailUser {
    pub uid: u32,
    pub gid: u32,
    pub name: String,
    pub home: String,
}

/// The mailer's command for one recipient: as `user` (the standard library drops root's
/// supplementary groups with it), in a process group of its own, with a small
/// environment.
pub fn command(mailer: &str, to: &str, subject: &str, user: &MailUser) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(mailer);
    c.arg0("mail")
        .args(["-s", subject, to])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", &user.home)
        .env("USER", &user.name)
        .env("LOGNAME", &user.name)
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    if nix::unistd::geteuid().as_raw() != user.uid {
        c.uid(user.uid).gid(user.gid);
    }
    c
}

/// Run a mailer with the message on its input, for at most [`MAILER_TIME`].
pub async fn run(command: &mut tokio::process::Command, body: &[u8]) -> std::io::Result<()> {
    let mut child = command.spawn()?;
    if let Some(mut input) = child.stdin.take() {
        // A mailer that does not read its input is told so by a broken pipe.
        let _ = input.write_all(body).await;
    }
    match tokio::time::timeout(MAILER_TIME, child.wait()).await {
        Ok(status) => {
            let status = status?;
            if status.success() {
                Ok(())
            } else {
                Err(std::io::Error::other(format!("ended with {status}")))
            }
        }
        Err(_) => {
            if let Some(pid) = child.id() {
                let _ = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
            }
            let _ = child.wait().await;
            Err(std::io::Error::other("mailer had timeout - killing"))
        }
    }
}
