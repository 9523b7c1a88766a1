//! Job scripts in the spool, one file per job (`<cell>/job_scripts/<id>`, as SGE's
//! classic spooling keeps them), not in the master's memory or its journal.
//!
//! A job script can be megabytes; the job's record holds none of it. The script is
//! written and synced before the job's record is committed, read when a task is sent to
//! an execd, and removed once the job has left the master. Removing a file gives its
//! space back at once.

use gantry_proto::JobId;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// How many bytes of job scripts each user's jobs hold in the spool, so that no user
/// fills the spool's file system for everyone (`MAX_USER_SCRIPTS_SIZE`). Kept by the
/// Cluster actor beside the scripts: counted from the files at start, then as scripts
/// come and go.
#[derive(Debug, Default)]
pub struct ScriptBytes {
    by_job: std::collections::HashMap<JobId, (u32, u64)>,
    by_user: std::collections::HashMap<u32, u64>,
}

impl ScriptBytes {
    /// Job `job` of user `uid` holds a script of `bytes`.
    pub fn add(&mut self, job: JobId, uid: u32, bytes: u64) {
        self.remove(job);
        self.by_job.insert(job, (uid, bytes));
        *self.by_user.entry(uid).or_insert(0) += bytes;
    }

    /// Job `job`'s script is gone.
    pub fn remove(&mut self, job: JobId) {
        if let Some((uid, bytes)) = self.by_job.remove(&job) {
            if let Some(total) = self.by_user.get_mut(&uid) {
                *total = total.saturating_sub(bytes);
                if *total == 0 {
                    self.by_user.remove(&uid);
                }
            }
        }
    }

    /// The bytes user `uid`'s scripts hold.
    pub fn of_user(&self, uid: u32) -> u64 {
        self.by_user.get(&uid).copied().unwrap_or(0)
    }
}

#[derive(Debug, Clone)]
pub struct JobScripts {
    dir: PathBuf,
}

impl JobScripts {
    /// The directory, created (mode 0700: scripts are their owners' business) if missing.
    pub fn open(dir: &Path) -> io::Result<JobScripts> {
        match std::fs::create_dir(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
        Ok(JobScripts {
            dir: dir.to_path_buf(),
        })
    }

    fn path(&self, job: JobId) -> PathBuf {
        self.dir.join(job.to_string())
    }

    /// Store a job's script durably (written to a temporary name, synced, renamed).
    /// A write that fails (a full disk) leaves nothing behind: the job is refused, and
    /// what was written of its script is removed at once.
    pub fn put(&self, job: JobId, contents: &[u8]) -> io::Result<()> {
        let tmp = self.dir.join(format!(".{job}.new"));
        let written = (|| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(contents)?;
            f.sync_data()?;
            std::fs::rename(&tmp, self.path(job))?;
            std::fs::File::open(&self.dir)?.sync_all()
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
            let _ = std::fs::remove_file(self.path(job));
        }
        written
    }

    /// The size of a job's stored script.
    pub fn size(&self, job: JobId) -> Option<u64> {
        std::fs::metadata(self.path(job)).ok().map(|m| m.len())
    }

    pub fn get(&self, job: JobId) -> io::Result<Vec<u8>> {
        std::fs::read(self.path(job))
    }

    /// Forget a job's script (a missing one is no error).
    pub fn remove(&self, job: JobId) -> io::Result<()> {
        match std::fs::remove_file(self.path(job)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// The jobs with a script here (leftovers of an interrupted write excluded).
    pub fn jobs(&self) -> Vec<JobId> {
        std::fs::read_dir(&self.dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Remove what an interrupted write left (`.<id>.new`).
    pub fn remove_partial_writes(&self) {
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for e in entries.flatten() {
                if e.file_name().to_str().is_some_and(|n| n.starts_with('.')) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_bytes_are_counted_per_user() {
        let mut b = ScriptBytes::default();
        b.add(JobId(1), 1000, 300);
        b.add(JobId(2), 1000, 200);
        b.add(JobId(3), 1001, 50);
        assert_eq!(
            (b.of_user(1000), b.of_user(1001), b.of_user(7)),
            (500, 50, 0)
        );
        // Counted again, not twice.
        b.add(JobId(2), 1000, 250);
        assert_eq!(b.of_user(1000), 550);
        b.remove(JobId(1));
        b.remove(JobId(1));
        b.remove(JobId(99));
        assert_eq!(b.of_user(1000), 250);
        b.remove(JobId(2));
        assert_eq!(b.of_user(1000), 0);
        assert!(!b.by_user.contains_key(&1000));
    }

    #[test]
    fn scripts_are_stored_read_and_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let s = JobScripts::open(&tmp.path().join("job_scripts")).unwrap();
        s.put(JobId(7), b"#!/bin/sh\necho hi\n").unwrap();
        s.put(JobId(8), b"").unwrap();
        assert_eq!(s.get(JobId(7)).unwrap(), b"#!/bin/sh\necho hi\n");
        assert_eq!(s.get(JobId(8)).unwrap(), b"");
        std::fs::write(tmp.path().join("job_scripts/.9.new"), "partial").unwrap();
        let mut jobs = s.jobs();
        jobs.sort_unstable();
        assert_eq!(jobs, vec![JobId(7), JobId(8)]);
        s.remove_partial_writes();
        assert!(!tmp.path().join("job_scripts/.9.new").exists());
        s.remove(JobId(7)).unwrap();
        s.remove(JobId(7)).unwrap();
        assert!(s.get(JobId(7)).is_err());
        // Opening again keeps what is there.
        let again = JobScripts::open(&tmp.path().join("job_scripts")).unwrap();
        assert_eq!(again.jobs(), vec![JobId(8)]);
    }
}
