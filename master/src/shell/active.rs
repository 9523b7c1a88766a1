//! Which master is the cell's active one, for a standby master on a second host that
//! shares the cell directory (as SGE's `sge_shadowd` shares the qmaster's spool): the
//! spool database's own lock is the leader lock (the kernel, or the shared file system's
//! lock manager, releases it when its holder dies), and `master.active` names the holder,
//! so that a standby waits for the right one and a master that another took over from
//! stops at once (fencing).

use std::path::{Path, PathBuf};
use std::time::Duration;

use gantry_net::cell::MasterPaths;

use crate::spool::store::{Store, StoreError};

/// How often a standby tries the spool's lock, and the active master reads its claim.
const POLL: Duration = Duration::from_millis(250);

#[derive(Debug, thiserror::Error)]
pub enum ActiveError {
    #[error("another master is active on this cell ({0}): stop it, or start this one with --standby to take over when it dies")]
    Taken(String),
    #[error("{}: {source}", path.display())]
    Spool { path: PathBuf, source: StoreError },
    #[error("{}: {source}", path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn active_path(paths: &MasterPaths) -> PathBuf {
    paths.home.join("master.active")
}

/// Who holds the cell, as `master.active` says: `host=... pid=... since=... token=...`,
/// with `state=stopped` once it was shut down on purpose.
fn holder(paths: &MasterPaths) -> String {
    std::fs::read_to_string(active_path(paths))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Open the cell's spool as its active master. A spool another master holds is refused,
/// or with `standby`, waited for: the standby takes over when the holder dies, not when
/// it was shut down on purpose (an upgrade, maintenance: it waits for a master to be
/// started again and to die).
pub fn open_spool(paths: &MasterPaths, recover: bool, standby: bool) -> Result<Store, ActiveError> {
    let spool = paths.spool();
    let mut said = String::new();
    loop {
        let who = holder(paths);
        if standby && who.contains("state=stopped") {
            if said != who {
                tracing::info!(
                    "standby: the cell's master was shut down on purpose ({who}); waiting for one to be started (a standby takes over only from a master that died)"
                );
                said = who;
            }
            std::thread::sleep(POLL);
            continue;
        }
        match Store::open(&spool, recover) {
            Err(StoreError::Database(redb::DatabaseError::DatabaseAlreadyOpen)) => {
                if !standby {
                    return Err(ActiveError::Taken(who));
                }
                if said != who {
                    tracing::info!(
                        "standby: the master {who} is active on this cell; taking over when it dies"
                    );
                    said = who;
                }
                std::thread::sleep(POLL);
            }
            Err(source) => {
                return Err(ActiveError::Spool {
                    path: spool,
                    source,
                })
            }
            Ok(store) => {
                if standby {
                    tracing::warn!("standby: taking over the cell from {who}");
                }
                return Ok(store);
            }
        }
    }
}

/// This master's claim on the cell, written once it holds the spool.
pub struct Claim {
    path: PathBuf,
    line: String,
}

/// Write this master's claim (`master.active`) and watch it: should it ever name
/// another master (one that took the cell over because this one's lock was lost, as a
/// shared file system's lease can be), this master stops at once, writing nothing more.
pub fn claim(paths: &MasterPaths) -> Result<Claim, ActiveError> {
    let path = active_path(paths);
    let host = nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let token: u64 = rand::random();
    let line = format!(
        "host={host} pid={} since={since} token={token:016x}",
        std::process::id()
    );
    gantry_net::cell::write_file_atomic(&path, format!("{line}\n").as_bytes(), 0o644).map_err(
        |source| ActiveError::File {
            path: path.clone(),
            source,
        },
    )?;
    let watched = path.clone();
    let ours = format!("token={token:016x}");
    std::thread::Builder::new()
        .name("fence".into())
        .spawn(move || fence(&watched, &ours))
        .map_err(|source| ActiveError::File {
            path: path.clone(),
            source,
        })?;
    Ok(Claim { path, line })
}

fn fence(path: &Path, ours: &str) {
    loop {
        std::thread::sleep(POLL);
        let now = std::fs::read_to_string(path).unwrap_or_default();
        if !now.contains(ours) {
            tracing::error!(
                "another master took over this cell ({}): stopping at once, writing nothing more",
                now.trim()
            );
            // Not a shutdown: nothing of this master's may reach the spool any more.
            std::process::exit(3);
        }
    }
}

impl Claim {
    /// This master was shut down on purpose: a standby does not take over.
    pub fn stopped(&self) {
        let _ = gantry_net::cell::write_file_atomic(
            &self.path,
            format!("{} state=stopped\n", self.line).as_bytes(),
            0o644,
        );
    }
}
