//! The master's spool: an embedded transactional store (redb) with a journal in front
//! of it. Every change is one journal record, synced before the master acknowledges it;
//! the database receives the changes in batches (a checkpoint: one durable transaction,
//! after which the journal starts over). Reads see the database and the changes not yet
//! in it; opening the spool applies what the journal holds beyond the database.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use redb::{Builder, Database, ReadableDatabase, ReadableTable, TableDefinition};

use crate::journal::{Journal, Record};
use crate::state::{Object, Op};

const OBJECTS: TableDefinition<&str, &[u8]> = TableDefinition::new("objects");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
const ACCOUNTING: TableDefinition<(u64, u32), &[u8]> = TableDefinition::new("accounting");

/// The spool's schema version; a spool written by a different version is refused.
/// 3: a job's pending tasks are kept as ranges (`tasks::Tasks`).
pub const SCHEMA_VERSION: u32 = 3;

/// A checkpoint is taken once this many changes or this many journal bytes are waiting.
const CHECKPOINT_OPS: usize = 1024;
const CHECKPOINT_BYTES: u64 = 4 << 20;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("spool database: {0}")]
    Database(#[from] redb::DatabaseError),
    #[error("spool transaction: {0}")]
    Transaction(#[from] redb::TransactionError),
    #[error("spool table: {0}")]
    Table(#[from] redb::TableError),
    #[error("spool storage: {0}")]
    Storage(#[from] redb::StorageError),
    #[error("spool commit: {0}")]
    Commit(#[from] redb::CommitError),
    #[error("spool object \"{key}\" is corrupt: {source}")]
    Corrupt {
        key: String,
        source: gantry_proto::ProtoError,
    },
    #[error("spool was written with schema {found}, this master reads schema {SCHEMA_VERSION}")]
    Schema { found: u32 },
    #[error("encoding a spool object: {0}")]
    Encode(#[from] gantry_proto::ProtoError),
    #[error("spool journal {}: {source}", path.display())]
    Journal {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("spool journal record {seq} is corrupt: {source}")]
    CorruptRecord {
        seq: u64,
        source: gantry_proto::ProtoError,
    },
}

pub struct Store {
    db: Database,
    journal: Journal,
    journal_path: PathBuf,
    /// Changes in the journal and not yet in the database.
    unapplied: Unapplied,
}

/// Changes in the journal and not yet in the database, oldest first, kept as the journal
/// holds them: encoded, a job is a fraction of its size in memory (the master holds up
/// to `CHECKPOINT_OPS` of them). The accounting records among them are kept beside them
/// too (read on every job report and by qacct); the rest is decoded when checkpointed.
#[derive(Default)]
struct Unapplied {
    /// (journal sequence number, encoded `Vec<Op>`)
    records: Vec<(u64, Vec<u8>)>,
    changes: usize,
    /// The accounting records among the changes, by task.
    accounts: BTreeMap<(u64, u32), gantry_proto::AccountingRecord>,
    /// The last `NextJobId` among the changes.
    next_job_id: Option<u64>,
}

impl Unapplied {
    fn push(&mut self, seq: u64, payload: Vec<u8>, ops: &[Op]) {
        for op in ops {
            match op {
                Op::Account(r) => {
                    self.accounts.insert(account_key(r), r.as_ref().clone());
                }
                Op::NextJobId(n) => self.next_job_id = Some(*n),
                Op::Put(_) | Op::Delete(_) => {}
            }
        }
        self.changes += ops.len();
        self.records.push((seq, payload));
    }

    /// How many changes.
    fn len(&self) -> usize {
        self.changes
    }

    fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The changes, decoded, oldest first.
    fn ops(&self) -> Result<Vec<Op>, StoreError> {
        let mut out = Vec::with_capacity(self.changes);
        for (seq, payload) in &self.records {
            let ops: Vec<Op> = gantry_proto::decode(payload)
                .map_err(|source| StoreError::CorruptRecord { seq: *seq, source })?;
            out.extend(ops);
        }
        Ok(out)
    }
}

/// The journal of the spool at `path`: beside it, `<name>.journal`.
pub fn journal_path(path: &Path) -> PathBuf {
    path.with_extension("journal")
}

fn open_journal(path: &Path, applied: u64) -> Result<(Journal, Vec<Record>), StoreError> {
    Journal::open(path, applied).map_err(|source| StoreError::Journal {
        path: path.to_path_buf(),
        source,
    })
}

/// Write `ops` into an open write transaction.
fn write_ops(txn: &redb::WriteTransaction, ops: &[Op]) -> Result<(), StoreError> {
    let mut t = txn.open_table(OBJECTS)?;
    let mut acct = txn.open_table(ACCOUNTING)?;
    let mut meta = txn.open_table(META)?;
    for op in ops {
        match op {
            Op::Put(o) => {
                let bytes = gantry_proto::encode(o)?;
                t.insert(o.key().as_str(), bytes.as_slice())?;
            }
            Op::Delete(key) => {
                t.remove(key.as_str())?;
            }
            Op::Account(r) => {
                let bytes = gantry_proto::encode(r.as_ref())?;
                acct.insert(account_key(r), bytes.as_slice())?;
            }
            Op::NextJobId(n) => {
                meta.insert("next_job_id", n.to_be_bytes().as_slice())?;
            }
        }
    }
    Ok(())
}

fn account_key(r: &gantry_proto::AccountingRecord) -> (u64, u32) {
    (r.job_id, r.task_id.unwrap_or(0))
}

fn applied_seq(txn: &redb::ReadTransaction) -> Result<u64, StoreError> {
    let meta = txn.open_table(META)?;
    Ok(meta
        .get("journal_seq")?
        .and_then(|v| <[u8; 8]>::try_from(v.value()).ok())
        .map_or(0, u64::from_be_bytes))
}

/// redb's page cache. Its default (1 GiB) is filled by every checkpoint: the master's
/// resident memory grew by some 37 KB per finished job until the cache was full. The
/// master reads the spool whole once, at start; later reads (`qacct`) are rare and the
/// kernel's page cache keeps the file anyway.
const SPOOL_CACHE_BYTES: usize = 8 << 20;

impl Store {
    /// Create a new spool holding `objects`.
    pub fn create(path: &Path, objects: &[Object]) -> Result<Store, StoreError> {
        let db = Builder::new()
            .set_cache_size(SPOOL_CACHE_BYTES)
            .create(path)?;
        let txn = db.begin_write()?;
        {
            let mut meta = txn.open_table(META)?;
            meta.insert("schema", SCHEMA_VERSION.to_be_bytes().as_slice())?;
            meta.insert("next_job_id", 1u64.to_be_bytes().as_slice())?;
            meta.insert("journal_seq", 0u64.to_be_bytes().as_slice())?;
            txn.open_table(ACCOUNTING)?;
            let mut t = txn.open_table(OBJECTS)?;
            for o in objects {
                let bytes = gantry_proto::encode(o)?;
                t.insert(o.key().as_str(), bytes.as_slice())?;
            }
        }
        txn.commit()?;
        // A journal left by an earlier spool of this name is emptied.
        let journal_path = journal_path(path);
        let _ = std::fs::remove_file(&journal_path);
        let (journal, _) = open_journal(&journal_path, 0)?;
        Ok(Store {
            db,
            journal,
            journal_path,
            unapplied: Unapplied::default(),
        })
    }

    /// Open an existing spool, applying the changes its journal holds beyond the
    /// database.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let db = Builder::new()
            .set_cache_size(SPOOL_CACHE_BYTES)
            .open(path)?;
        let applied = {
            let txn = db.begin_read()?;
            let meta = txn.open_table(META)?;
            let found = meta
                .get("schema")?
                .and_then(|v| <[u8; 4]>::try_from(v.value()).ok())
                .map_or(0, u32::from_be_bytes);
            if found != SCHEMA_VERSION {
                return Err(StoreError::Schema { found });
            }
            applied_seq(&txn)?
        };
        let journal_path = journal_path(path);
        let (journal, replay) = open_journal(&journal_path, applied)?;
        let mut unapplied = Unapplied::default();
        for (seq, payload) in &replay {
            let ops: Vec<Op> = gantry_proto::decode(payload)
                .map_err(|source| StoreError::CorruptRecord { seq: *seq, source })?;
            unapplied.push(*seq, payload.clone(), &ops);
        }
        let mut store = Store {
            db,
            journal,
            journal_path,
            unapplied,
        };
        if !replay.is_empty() {
            tracing::info!(
                records = replay.len(),
                changes = store.unapplied.len(),
                "spool: applying the journal's changes"
            );
            store.checkpoint()?;
        }
        Ok(store)
    }

    /// Move every journaled change into the database in one durable transaction; the
    /// journal then starts over.
    pub fn checkpoint(&mut self) -> Result<(), StoreError> {
        if self.unapplied.is_empty() {
            return Ok(());
        }
        let ops = self.unapplied.ops()?;
        let txn = self.db.begin_write()?;
        write_ops(&txn, &ops)?;
        {
            let mut meta = txn.open_table(META)?;
            meta.insert(
                "journal_seq",
                self.journal.last_seq().to_be_bytes().as_slice(),
            )?;
        }
        txn.commit()?;
        self.unapplied = Unapplied::default();
        self.journal.restart();
        Ok(())
    }

    /// Every object in the spool.
    pub fn load(&self) -> Result<Vec<Object>, StoreError> {
        let txn = self.db.begin_read()?;
        let t = txn.open_table(OBJECTS)?;
        let mut out = BTreeMap::new();
        for item in t.iter()? {
            let (k, v) = item?;
            let obj: Object =
                gantry_proto::decode(v.value()).map_err(|source| StoreError::Corrupt {
                    key: k.value().to_string(),
                    source,
                })?;
            out.insert(k.value().to_string(), obj);
        }
        for op in &self.unapplied.ops()? {
            match op {
                Op::Put(o) => {
                    out.insert(o.key(), o.clone());
                }
                Op::Delete(key) => {
                    out.remove(key);
                }
                Op::Account(_) | Op::NextJobId(_) => {}
            }
        }
        Ok(out.into_values().collect())
    }

    /// The next job id recorded in the spool.
    pub fn next_job_id(&self) -> Result<u64, StoreError> {
        if let Some(n) = self.unapplied.next_job_id {
            return Ok(n);
        }
        let txn = self.db.begin_read()?;
        let meta = txn.open_table(META)?;
        Ok(meta
            .get("next_job_id")?
            .and_then(|v| <[u8; 8]>::try_from(v.value()).ok())
            .map_or(1, u64::from_be_bytes))
    }

    /// Is there an accounting record for this task?
    pub fn has_accounting(&self, job_id: u64, task_id: u32) -> Result<bool, StoreError> {
        if self.unapplied.accounts.contains_key(&(job_id, task_id)) {
            return Ok(true);
        }
        let txn = self.db.begin_read()?;
        let t = txn.open_table(ACCOUNTING)?;
        Ok(t.get((job_id, task_id))?.is_some())
    }

    /// Accounting records matching `keep`, in job and task order.
    pub fn accounting(
        &self,
        keep: impl Fn(&gantry_proto::AccountingRecord) -> bool,
    ) -> Result<Vec<gantry_proto::AccountingRecord>, StoreError> {
        let txn = self.db.begin_read()?;
        let t = txn.open_table(ACCOUNTING)?;
        let mut out = BTreeMap::new();
        for item in t.iter()? {
            let (k, v) = item?;
            let r: gantry_proto::AccountingRecord =
                gantry_proto::decode(v.value()).map_err(|source| StoreError::Corrupt {
                    key: format!("accounting/{:?}", k.value()),
                    source,
                })?;
            if keep(&r) {
                out.insert(k.value(), r);
            }
        }
        for (key, r) in &self.unapplied.accounts {
            if keep(r) {
                out.insert(*key, r.clone());
            }
        }
        Ok(out.into_values().collect())
    }

    /// Write a change durably (one journal record) before it is acknowledged.
    pub fn commit(&mut self, ops: &[Op]) -> Result<(), StoreError> {
        if ops.is_empty() {
            return Ok(());
        }
        let payload = gantry_proto::encode(&ops)?;
        let seq = self
            .journal
            .append(&payload)
            .map_err(|source| StoreError::Journal {
                path: self.journal_path.clone(),
                source,
            })?;
        self.unapplied.push(seq, payload, ops);
        if self.unapplied.len() >= CHECKPOINT_OPS || self.journal.len() >= CHECKPOINT_BYTES {
            // The change is durable already; a failed checkpoint is tried again later.
            if let Err(e) = self.checkpoint() {
                tracing::warn!("spool checkpoint failed (the journal keeps the changes): {e}");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::initial_objects;

    fn record(job_id: u64, task_id: Option<u32>) -> Op {
        let report = gantry_proto::JobReport {
            job_id,
            task_id: task_id.unwrap_or(1),
            host: "n1".into(),
            queue: "all.q".into(),
            exit_status: 0,
            signal: None,
            failed: 0,
            failure: String::new(),
            start_time: 1,
            end_time: 2,
            utime_us: 0,
            stime_us: 0,
            maxrss_kb: 0,
        };
        Op::Account(Box::new(gantry_proto::AccountingRecord {
            job_id,
            task_id,
            job_name: "j".into(),
            owner: "alice".into(),
            group: "users".into(),
            account: "sge".into(),
            project: None,
            priority: 0,
            slots: 1,
            submit_time: 0,
            report,
        }))
    }

    fn host(name: &str) -> Op {
        Op::Put(Object::ExecHost(gantry_proto::ExecHost::new(name)))
    }

    fn keys(store: &Store) -> Vec<String> {
        store.load().unwrap().iter().map(Object::key).collect()
    }

    fn accounted(store: &Store) -> Vec<(u64, Option<u32>)> {
        store
            .accounting(|_| true)
            .unwrap()
            .iter()
            .map(|r| (r.job_id, r.task_id))
            .collect()
    }

    #[test]
    fn objects_survive_reopening_and_deletes_stick() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spool.redb");
        let objects = initial_objects(&["root".into()]);
        {
            let mut store = Store::create(&path, &objects).unwrap();
            store
                .commit(&[host("n1"), Op::Delete("managers".into())])
                .unwrap();
        }
        let store = Store::open(&path).unwrap();
        let loaded = store.load().unwrap();
        assert!(loaded.iter().any(|o| o.key() == "exechost/n1"));
        assert!(!loaded.iter().any(|o| o.key() == "managers"));
        assert_eq!(loaded.len(), objects.len());
    }

    #[test]
    fn changes_not_yet_checkpointed_are_read_and_survive_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spool.redb");
        {
            let mut store = Store::create(&path, &[]).unwrap();
            store.commit(&[host("n1"), Op::NextJobId(7)]).unwrap();
            store
                .commit(&[record(5, None), record(6, Some(2))])
                .unwrap();
            store
                .commit(&[host("n2"), Op::Delete("exechost/n1".into())])
                .unwrap();
            // Reads see the journaled changes before any checkpoint.
            assert_eq!(keys(&store), ["exechost/n2"]);
            assert_eq!(store.next_job_id().unwrap(), 7);
            assert!(store.has_accounting(6, 2).unwrap());
            assert!(!store.has_accounting(6, 3).unwrap());
            assert_eq!(accounted(&store), [(5, None), (6, Some(2))]);
            // Dropped without a checkpoint: a kill -9.
        }
        let mut store = Store::open(&path).unwrap();
        assert_eq!(keys(&store), ["exechost/n2"]);
        assert_eq!(store.next_job_id().unwrap(), 7);
        assert_eq!(accounted(&store), [(5, None), (6, Some(2))]);
        // Opening applied the journal: a second crash replays nothing twice.
        assert!(store.unapplied.is_empty());
        store.commit(&[record(8, None)]).unwrap();
        drop(store);
        let store = Store::open(&path).unwrap();
        assert_eq!(accounted(&store), [(5, None), (6, Some(2)), (8, None)]);
        assert_eq!(keys(&store), ["exechost/n2"]);
    }

    #[test]
    fn checkpoints_move_changes_into_the_database_and_restart_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spool.redb");
        {
            let mut store = Store::create(&path, &[]).unwrap();
            for i in 0..(CHECKPOINT_OPS as u64 + 10) {
                store.commit(&[record(i + 1, None)]).unwrap();
            }
            // One checkpoint happened at CHECKPOINT_OPS changes; ten wait in the journal.
            assert_eq!(store.unapplied.len(), 10);
            assert_eq!(store.journal.last_seq(), CHECKPOINT_OPS as u64 + 10);
        }
        let store = Store::open(&path).unwrap();
        let all = accounted(&store);
        assert_eq!(all.len(), CHECKPOINT_OPS + 10);
        assert_eq!(all.last(), Some(&(CHECKPOINT_OPS as u64 + 10, None)));
    }

    #[test]
    fn a_torn_last_record_loses_only_the_unacknowledged_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spool.redb");
        {
            let mut store = Store::create(&path, &[]).unwrap();
            store.commit(&[host("n1")]).unwrap();
            store.commit(&[host("n2")]).unwrap();
        }
        // The second record's last byte never reached the disk.
        let journal = journal_path(&path);
        let bytes = std::fs::read(&journal).unwrap();
        let first =
            crate::journal::encode_record(1, &gantry_proto::encode(&vec![host("n1")]).unwrap());
        let second =
            crate::journal::encode_record(2, &gantry_proto::encode(&vec![host("n2")]).unwrap());
        assert_eq!(
            &bytes[..first.len() + second.len()],
            [first.clone(), second.clone()].concat()
        );
        let mut torn = bytes.clone();
        torn[first.len() + second.len() - 1] ^= 0xff;
        std::fs::write(&journal, torn).unwrap();
        let store = Store::open(&path).unwrap();
        assert_eq!(keys(&store), ["exechost/n1"]);
    }

    #[test]
    fn a_journal_record_the_master_cannot_decode_stops_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spool.redb");
        drop(Store::create(&path, &[]).unwrap());
        let garbage = crate::journal::encode_record(1, &[0xff, 0xff, 0xff]);
        let journal = journal_path(&path);
        let mut bytes = std::fs::read(&journal).unwrap();
        bytes[..garbage.len()].copy_from_slice(&garbage);
        std::fs::write(&journal, bytes).unwrap();
        let err = Store::open(&path).err().expect("refused");
        assert!(
            err.to_string().contains("journal record 1 is corrupt"),
            "{err}"
        );
    }
}
