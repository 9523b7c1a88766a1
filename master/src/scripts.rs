//! Job scripts in the spool, one file per job (`<cell>/job_scripts/<id>`, as SGE's
//! classic spooling keeps them), not in the master's memory or its journal.
//!
//! A job script can be megabytes; the job's record holds none of it. The script is
//! written and synced before the job's record is committed, read when a task is sent to
//! an execd, and removed once the job has left the master. Removing a file gives its
//! space back at once.

use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

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

    fn path(&self, job: u64) -> PathBuf {
        self.dir.join(job.to_string())
    }

    /// Store a job's script durably (written to a temporary name, synced, renamed).
    pub fn put(&self, job: u64, contents: &[u8]) -> io::Result<()> {
        let tmp = self.dir.join(format!(".{job}.new"));
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
    }

    pub fn get(&self, job: u64) -> io::Result<Vec<u8>> {
        std::fs::read(self.path(job))
    }

    /// Forget a job's script (a missing one is no error).
    pub fn remove(&self, job: u64) -> io::Result<()> {
        match std::fs::remove_file(self.path(job)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// The jobs with a script here (leftovers of an interrupted write excluded).
    pub fn jobs(&self) -> Vec<u64> {
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
    fn scripts_are_stored_read_and_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let s = JobScripts::open(&tmp.path().join("job_scripts")).unwrap();
        s.put(7, b"#!/bin/sh\necho hi\n").unwrap();
        s.put(8, b"").unwrap();
        assert_eq!(s.get(7).unwrap(), b"#!/bin/sh\necho hi\n");
        assert_eq!(s.get(8).unwrap(), b"");
        std::fs::write(tmp.path().join("job_scripts/.9.new"), "partial").unwrap();
        let mut jobs = s.jobs();
        jobs.sort_unstable();
        assert_eq!(jobs, vec![7, 8]);
        s.remove_partial_writes();
        assert!(!tmp.path().join("job_scripts/.9.new").exists());
        s.remove(7).unwrap();
        s.remove(7).unwrap();
        assert!(s.get(7).is_err());
        // Opening again keeps what is there.
        let again = JobScripts::open(&tmp.path().join("job_scripts")).unwrap();
        assert_eq!(again.jobs(), vec![8]);
    }
}
