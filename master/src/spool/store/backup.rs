//! A backup of the cell: one file holding the spool as of one moment (the database's
//! snapshot with the journal's changes beyond it applied), the job scripts and the
//! cell's own files (certificates, keys, token, settings), written while the master
//! runs; and the restore of such a file into a cell whose master is stopped.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use redb::{
    Builder, Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition,
};

use super::{
    journal_path, meta_u64, write_ops, Store, StoreError, ACCOUNTING, META, OBJECTS, SCHEMA_VERSION,
};

/// The cell's files in a backup, by their path in the cell (`ca.key`,
/// `job_scripts/12`).
const FILES: TableDefinition<&str, &[u8]> = TableDefinition::new("backup_files");

/// The cell's own files a backup keeps beside the spool: those at its top, and every
/// file in these directories.
const CELL_FILES: &[&str] = &[
    "master.conf",
    "ca.pem",
    "ca.key",
    "master.pem",
    "master.key",
    "join-token",
    "user-certs",
];
const CELL_DIRS: &[&str] = &["job_scripts"];

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{}: {source}", path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{} is not a backup of a Gantry cell: {why}", path.display())]
    NotABackup { path: PathBuf, why: String },
    #[error("the master is running on {}: stop it before restoring (qconf -km)", home.display())]
    MasterRunning { home: PathBuf },
}

fn file_error(path: &Path) -> impl FnOnce(std::io::Error) -> BackupError + '_ {
    move |source| BackupError::File {
        path: path.to_path_buf(),
        source,
    }
}

impl From<redb::DatabaseError> for BackupError {
    fn from(e: redb::DatabaseError) -> Self {
        BackupError::Store(e.into())
    }
}
impl From<redb::TransactionError> for BackupError {
    fn from(e: redb::TransactionError) -> Self {
        BackupError::Store(e.into())
    }
}
impl From<redb::TableError> for BackupError {
    fn from(e: redb::TableError) -> Self {
        BackupError::Store(e.into())
    }
}
impl From<redb::StorageError> for BackupError {
    fn from(e: redb::StorageError) -> Self {
        BackupError::Store(e.into())
    }
}
impl From<redb::CommitError> for BackupError {
    fn from(e: redb::CommitError) -> Self {
        BackupError::Store(e.into())
    }
}

/// What a backup holds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Contents {
    pub schema: u32,
    pub objects: usize,
    pub accounting: usize,
    pub files: usize,
}

impl std::fmt::Display for Contents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} objects, {} accounting records, {} files of the cell (spool schema {})",
            self.objects, self.accounting, self.files, self.schema
        )
    }
}

/// The cell's files under `home` a backup keeps: (path in the cell, contents).
pub fn cell_files(home: &Path) -> Result<Vec<(String, Vec<u8>)>, BackupError> {
    let mut out = Vec::new();
    for name in CELL_FILES {
        let path = home.join(name);
        match std::fs::read(&path) {
            Ok(bytes) => out.push((name.to_string(), bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(file_error(&path)(e)),
        }
    }
    for dir in CELL_DIRS {
        let path = home.join(dir);
        let entries = match std::fs::read_dir(&path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(file_error(&path)(e)),
        };
        for entry in entries {
            let entry = entry.map_err(file_error(&path))?;
            if !entry.file_type().map_err(file_error(&path))?.is_file() {
                continue;
            }
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            // A script half written by a commit under way is not the job's yet.
            if name.ends_with(".tmp") {
                continue;
            }
            let bytes = std::fs::read(entry.path()).map_err(file_error(&entry.path()))?;
            out.push((format!("{dir}/{name}"), bytes));
        }
    }
    Ok(out)
}

impl Store {
    /// Write a backup to `to` (a new file, readable by its owner only): the spool as of
    /// now, and `files` of the cell. The database is read in one snapshot, and the
    /// changes the journal holds beyond it are applied to the copy, as a checkpoint
    /// would: the backup is the state the master acknowledged last.
    pub fn backup(&self, to: &Path, files: &[(String, Vec<u8>)]) -> Result<Contents, BackupError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(to)
            .map_err(file_error(to))?;
        let result = self.write_backup(file, files);
        if result.is_err() {
            let _ = std::fs::remove_file(to);
        }
        result
    }

    fn write_backup(
        &self,
        file: std::fs::File,
        files: &[(String, Vec<u8>)],
    ) -> Result<Contents, BackupError> {
        let out = Builder::new().create_with_backend(redb::backends::FileBackend::new(file)?)?;
        let snapshot = self.db()?.begin_read()?;
        let txn = out.begin_write()?;
        let mut contents = Contents {
            schema: SCHEMA_VERSION,
            files: files.len(),
            ..Contents::default()
        };
        {
            let mut objects = txn.open_table(OBJECTS)?;
            for item in snapshot.open_table(OBJECTS)?.iter()? {
                let (k, v) = item?;
                objects.insert(k.value(), v.value())?;
            }
            let mut accounting = txn.open_table(ACCOUNTING)?;
            for item in snapshot.open_table(ACCOUNTING)?.iter()? {
                let (k, v) = item?;
                accounting.insert(k.value(), v.value())?;
            }
            let mut meta = txn.open_table(META)?;
            for item in snapshot.open_table(META)?.iter()? {
                let (k, v) = item?;
                meta.insert(k.value(), v.value())?;
            }
        }
        // The changes beyond the snapshot (a batch a checkpoint under way may have
        // written already is written again: each change sets a key to a value).
        let mut last_seq = meta_u64(&snapshot, "journal_seq")?.unwrap_or(0);
        for batch in self.batches() {
            write_ops(&txn, &batch.ops()?)?;
            if let Some((seq, _)) = batch.records.last() {
                last_seq = last_seq.max(*seq);
            }
        }
        {
            let mut meta = txn.open_table(META)?;
            meta.insert("journal_seq", last_seq.to_be_bytes().as_slice())?;
            // A restored spool has no journal: nothing is missing from it.
            meta.insert("clean", [1u8].as_slice())?;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            meta.insert("backup_time", now.to_be_bytes().as_slice())?;
            let mut table = txn.open_table(FILES)?;
            for (name, bytes) in files {
                table.insert(name.as_str(), bytes.as_slice())?;
            }
            contents.objects = txn.open_table(OBJECTS)?.len()? as usize;
            contents.accounting = txn.open_table(ACCOUNTING)?.len()? as usize;
        }
        txn.commit()?;
        Ok(contents)
    }
}

/// What a backup file holds, read without changing it.
pub fn examine(path: &Path) -> Result<Contents, BackupError> {
    let not = |why: String| BackupError::NotABackup {
        path: path.to_path_buf(),
        why,
    };
    let db = Database::open(path).map_err(|e| not(e.to_string()))?;
    let txn = db.begin_read()?;
    let files = txn
        .open_table(FILES)
        .map_err(|_| not("it holds no files of a cell".into()))?;
    let meta = txn.open_table(META)?;
    let schema = meta
        .get("schema")?
        .and_then(|v| <[u8; 4]>::try_from(v.value()).ok())
        .map(u32::from_be_bytes)
        .ok_or_else(|| not("it names no spool schema".into()))?;
    Ok(Contents {
        schema,
        objects: txn.open_table(OBJECTS)?.len()? as usize,
        accounting: txn.open_table(ACCOUNTING)?.len()? as usize,
        files: files.len()? as usize,
    })
}

/// Restore the backup `from` into the cell `home` (which may be empty: a new master
/// host). The spool, its journal and the job scripts there are replaced; the spool as
/// it was is kept as `spool.redb.before-restore` (with its journal); the cell's other
/// files are written where missing and kept where present (a cell's keys stay its
/// own). Job ids go on above any the replaced spool handed out. The master must not
/// run; it opens the restored spool as one shut down cleanly (and upgrades it if an
/// earlier release wrote it).
pub fn restore(home: &Path, from: &Path) -> Result<(Contents, Vec<String>), BackupError> {
    let contents = examine(from)?;
    if contents.schema > SCHEMA_VERSION {
        return Err(StoreError::Newer {
            found: contents.schema,
        }
        .into());
    }
    std::fs::create_dir_all(home).map_err(file_error(home))?;
    let spool = home.join("spool.redb");
    // The replaced spool's next job id, if it can be read (it cannot while a master
    // holds it: then nothing is changed).
    let next_job_id = match spool.exists().then(|| Database::open(&spool)) {
        None => None,
        Some(Ok(db)) => meta_u64(&db.begin_read()?, "next_job_id")?,
        Some(Err(redb::DatabaseError::DatabaseAlreadyOpen)) => {
            return Err(BackupError::MasterRunning {
                home: home.to_path_buf(),
            })
        }
        Some(Err(e)) => {
            tracing::warn!("the spool being replaced cannot be read ({e}): restoring over it");
            None
        }
    };
    // Everything is made beside the cell's files first, then moved into place.
    let new = home.join("spool.redb.restoring");
    let new_scripts = home.join("job_scripts.restoring");
    for stale in [&new, &new_scripts] {
        let _ = std::fs::remove_file(stale);
        let _ = std::fs::remove_dir_all(stale);
    }
    std::fs::copy(from, &new).map_err(file_error(&new))?;
    std::fs::create_dir_all(&new_scripts).map_err(file_error(&new_scripts))?;
    let mut cell_files = Vec::new();
    {
        let db = Database::open(&new)?;
        let txn = db.begin_write()?;
        let files: Vec<(String, Vec<u8>)> = txn
            .open_table(FILES)?
            .iter()?
            .map(|e| e.map(|(k, v)| (k.value().to_string(), v.value().to_vec())))
            .collect::<Result<_, _>>()?;
        for (name, bytes) in files {
            match name.strip_prefix("job_scripts/") {
                Some(job) => write_private(&new_scripts.join(job), &bytes)?,
                None => cell_files.push((name, bytes)),
            }
        }
        txn.delete_table(FILES)?;
        {
            let mut meta = txn.open_table(META)?;
            let restored = meta
                .get("next_job_id")?
                .and_then(|v| <[u8; 8]>::try_from(v.value()).ok())
                .map_or(1, u64::from_be_bytes);
            if let Some(n) = next_job_id.filter(|n| *n > restored) {
                meta.insert("next_job_id", n.to_be_bytes().as_slice())?;
            }
            meta.remove("backup_time")?;
        }
        txn.commit()?;
    }
    // The cell's own files where it has none; the spool, its journal and the scripts
    // as they were kept aside; the restored ones in their place.
    let mut kept = Vec::new();
    for (name, bytes) in cell_files {
        let path = home.join(&name);
        if path.exists() {
            kept.push(name);
            continue;
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(file_error(dir))?;
        }
        write_private(&path, &bytes)?;
    }
    let scripts = home.join("job_scripts");
    for (now, aside) in [
        (spool.clone(), "spool.redb.before-restore"),
        (journal_path(&spool), "spool.journal.before-restore"),
        (scripts.clone(), "job_scripts.before-restore"),
    ] {
        let aside = home.join(aside);
        let _ = std::fs::remove_dir_all(&aside);
        if now.exists() {
            std::fs::rename(&now, &aside).map_err(file_error(&aside))?;
        }
    }
    std::fs::rename(&new_scripts, &scripts).map_err(file_error(&scripts))?;
    std::fs::rename(&new, &spool).map_err(file_error(&spool))?;
    Ok((contents, kept))
}

/// Write a file readable by its owner only.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), BackupError> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(file_error(path))?;
    f.write_all(bytes).map_err(file_error(path))?;
    f.sync_all().map_err(file_error(path))
}
