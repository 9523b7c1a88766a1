//! The master's spool: an embedded transactional store (redb) with a journal in front
//! of it. Every change is one journal record, synced before the master acknowledges it;
//! the database receives the changes in batches (a checkpoint: one durable transaction,
//! after which the journal starts over). Reads see the database and the changes not yet
//! in it; opening the spool applies what the journal holds beyond the database.

use gantry_proto::{JobId, TaskId};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::{Builder, Database, ReadableDatabase, ReadableTable, TableDefinition};

use crate::core::state::{Object, Op};
use crate::spool::journal::{self, HeaderRead, Journal};

const OBJECTS: TableDefinition<&str, &[u8]> = TableDefinition::new("objects");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// Accounting records by job, task, attempt (runs of the task interrupted before) and
/// the number of a task `qrsh -inherit` started (0: the job's own task).
const ACCOUNTING: TableDefinition<(u64, u32, u32, u32), &[u8]> = TableDefinition::new("accounting");

/// The spool's schema version. A spool of an earlier one (from `migrate::OLDEST`) is
/// upgraded when the master opens it (`migrate.rs`: add each layout change there, and a
/// fixture made by `tests/fixtures/spools/make.sh`); one of a later schema is refused.
/// 3: a job's pending tasks are kept as ranges (`tasks::Tasks`).
/// 4: the journal names its spool and checkpoint (generation) in a header.
/// 5: a job keeps its mail options, mail list and reservation request (`-m -M -R`).
/// 6: a job keeps its context and standard input file (`-ac -sc -i`).
/// 7: a job keeps whether it may run again (`-r`).
/// 8: a job keeps whether it is warned before a suspension or kill (`-notify`).
/// 9: a job keeps its array dependencies (`-hold_jid_ad`).
/// 10: a job keeps its soft queue list (`-soft -q`).
/// 11: a job keeps its deadline (`-dl`), job share (`-js`), `-shell n` and `-now y`.
/// 12: a job keeps its core binding request (`-binding`).
/// 13: a job keeps its master queue list (`-masterq`).
/// 14: checkpointing environments; a job keeps `-ckpt` and `-c`.
/// 15: a job keeps which tasks run again after a host failure (`RESTARTED`).
/// 16: a job keeps which tasks restart from a checkpoint; a report says whether the task
///     left one.
/// 17: a job keeps whether it runs with a pseudo terminal (`-pty y`).
/// 18: advance reservations and their id counter; accounting records name their
///     reservation.
/// 19: the tree of hierarchical group quotas (`qconf -sgq`).
/// 20: its groups' access lists (`user_lists`).
/// 21: the tasks `qrsh -inherit` starts in running jobs; accounting records are kept
///     per such task too (keyed by its number), a report names its task.
/// 22: accounting records keep the granted parallel environment, the job's category and
///     the rest of SGE's usage lines (`ru_*`, `mem`, `io`, `iow`, `maxvmem`).
/// 23: a job keeps its operator and system holds.
/// 24: a job keeps why its tasks' last start failed while they wait to run again.
/// 25: a queue instance in error state keeps why (`qstat -explain E`).
/// 26: a job keeps its `-C` directive prefix.
/// 27: a job keeps its verification mode (`-w n|w|e`).
pub const SCHEMA_VERSION: u32 = 27;

/// A checkpoint is taken once this many changes or this many journal bytes are waiting.
/// The owner starts it in a turn of its own ([`Store::checkpoint_due`],
/// [`Store::start_checkpoint`]) and the database's transaction runs on a thread of its
/// own, so that neither a large change nor the checkpoint after it holds up the owner's
/// next request; past four times as much, [`Store::commit`] takes it itself.
const CHECKPOINT_OPS: usize = 1024;
const CHECKPOINT_BYTES: u64 = 4 << 20;
const FORCED_CHECKPOINT: usize = 4;

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
    #[error("spool was written with schema {found}, this master reads schema {SCHEMA_VERSION} and upgrades schemas {} and later: upgrade with an earlier release first", migrate::OLDEST)]
    Schema { found: u32 },
    #[error("spool was written with schema {found} by a newer master; this master reads schema {SCHEMA_VERSION}: run the newer release, or restore the copy the upgrade kept (spool.redb.schema-{SCHEMA_VERSION})")]
    Newer { found: u32 },
    #[error("upgrading the spool from schema {found}: {what} cannot be read: {source}")]
    Migrate {
        found: u32,
        what: String,
        source: migrate::ReadError,
    },
    #[error("cannot keep a copy of the spool as {} before upgrading it: {source}", path.display())]
    Copy {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    UpgradeRefused(String),
    #[error("encoding a spool object: {0}")]
    Encode(#[from] gantry_proto::ProtoError),
    #[error("the spool database is closed after a failed checkpoint and cannot be opened yet")]
    Closed,
    #[error("cannot make the spool {} readable by its owner only: {source}", path.display())]
    Permissions {
        path: PathBuf,
        source: std::io::Error,
    },
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
    /// The journal is damaged or missing and changes would be lost: the master does
    /// not start unless told to recover.
    #[error("{0}; start the master with --recover-spool to go on without them (each dropped change is logged)")]
    Damaged(String),
}

pub struct Store {
    /// The database; None for a while after a failed transaction, until it could be
    /// opened again ([`Store::reopen`]).
    db: Option<Arc<Database>>,
    /// Where the database is, to open it again.
    path: PathBuf,
    /// Checkpoints that failed since the last that did not.
    failed_checkpoints: u32,
    journal: Journal,
    journal_path: PathBuf,
    /// Changes in the journal, not yet in the database and not in a checkpoint.
    unapplied: Unapplied,
    /// The checkpoint under way on a thread of its own, if one is.
    in_flight: Option<InFlight>,
}

/// A checkpoint running on its own thread: the changes it moves into the database stay
/// readable here until it is finished ([`Store::finish_checkpoint`]).
struct InFlight {
    batch: Arc<Unapplied>,
    generation: u64,
    thread: std::thread::JoinHandle<Result<(), StoreError>>,
}

/// Changes in the journal and not yet in the database, oldest first, kept as the journal
/// holds them: encoded, a job is a fraction of its size in memory (the master holds up
/// to `CHECKPOINT_OPS` of them). The accounting records among them are kept beside them
/// too (read on every job report and by qacct); the rest is decoded when checkpointed.
#[derive(Default, Clone)]
struct Unapplied {
    /// (journal sequence number, encoded `Vec<Op>`)
    records: Vec<(u64, Vec<u8>)>,
    changes: usize,
    /// The journal bytes of the records.
    bytes: u64,
    /// The accounting records among the changes, by task.
    accounts: BTreeMap<(u64, u32, u32, u32), gantry_proto::AccountingRecord>,
    /// The last `NextJobId` among the changes.
    next_job_id: Option<JobId>,
}

impl Unapplied {
    fn push(&mut self, seq: u64, payload: Vec<u8>, ops: &[&Op]) {
        for op in ops.iter().copied() {
            match op {
                Op::Account(r) => {
                    self.accounts.insert(account_key(r), r.as_ref().clone());
                }
                Op::NextJobId(n) => self.next_job_id = Some(*n),
                Op::Put(_) | Op::Delete(_) | Op::Script { .. } | Op::Catalog(_) => {}
            }
        }
        self.changes += ops.len();
        self.bytes += payload.len() as u64;
        self.records.push((seq, payload));
    }

    /// `self` followed by `later`.
    fn then(mut self, later: Unapplied) -> Unapplied {
        self.records.extend(later.records);
        self.changes += later.changes;
        self.bytes += later.bytes;
        self.accounts.extend(later.accounts);
        self.next_job_id = later.next_job_id.or(self.next_job_id);
        self
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
                meta.insert("next_job_id", n.get().to_be_bytes().as_slice())?;
            }
            // Written beside the database by the commit that carried it.
            Op::Script { .. } => {}
            // State only.
            Op::Catalog(_) => {}
        }
    }
    Ok(())
}

/// One checkpoint's transaction: `batch` into the database, which then holds the journal
/// up to `last_seq`, as checkpoint `generation`.
fn write_checkpoint(
    db: &Database,
    batch: &Unapplied,
    last_seq: u64,
    generation: u64,
) -> Result<(), StoreError> {
    let ops = batch.ops()?;
    let txn = db.begin_write()?;
    write_ops(&txn, &ops)?;
    {
        let mut meta = txn.open_table(META)?;
        meta.insert("journal_seq", last_seq.to_be_bytes().as_slice())?;
        meta.insert("generation", generation.to_be_bytes().as_slice())?;
    }
    txn.commit()?;
    Ok(())
}

/// An accounting record's key in the spool's table: (job, task (0: none), attempt, the
/// number of a `qrsh -inherit` task (0: the job's own)) as numbers, the order `qacct`
/// lists them in.
fn account_key(r: &gantry_proto::AccountingRecord) -> (u64, u32, u32, u32) {
    (
        r.job_id.get(),
        r.task_id.map_or(0, TaskId::get),
        r.attempt,
        r.report.pe_task.unwrap_or(0),
    )
}

/// What the database says of its journal: the change it holds up to, the spool's id,
/// its checkpoint (generation), and whether its master shut down cleanly.
fn spool_state(db: &Database) -> Result<(u64, u64, u64, bool), StoreError> {
    let txn = db.begin_read()?;
    let meta = txn.open_table(META)?;
    let clean = meta
        .get("clean")?
        .is_some_and(|v| v.value().first() == Some(&1));
    Ok((
        meta_u64(&txn, "journal_seq")?.unwrap_or(0),
        meta_u64(&txn, "spool_id")?.unwrap_or(0),
        meta_u64(&txn, "generation")?.unwrap_or(1),
        clean,
    ))
}

fn meta_u64(txn: &redb::ReadTransaction, key: &str) -> Result<Option<u64>, StoreError> {
    let meta = txn.open_table(META)?;
    Ok(meta
        .get(key)?
        .and_then(|v| <[u8; 8]>::try_from(v.value()).ok())
        .map(u64::from_be_bytes))
}

/// What a journal record held, for the log: the jobs and records it changed.
pub fn describe_change(payload: &[u8]) -> String {
    match gantry_proto::decode::<Vec<Op>>(payload) {
        Ok(ops) => ops
            .iter()
            .map(|op| match op {
                Op::Put(Object::Job(j)) => {
                    format!("job {} (\"{}\" of {})", j.id, j.spec.name, j.owner.user)
                }
                Op::Put(o) => o.key(),
                Op::Delete(key) => format!("removal of {key}"),
                Op::Account(r) => match r.task_id {
                    Some(t) => format!("accounting record of job {}.{t}", r.job_id),
                    None => format!("accounting record of job {}", r.job_id),
                },
                Op::NextJobId(n) => format!("next job id {n}"),
                Op::Script { job, .. } => format!("the script of job {job}"),
                Op::Catalog(_) => "the index of the complex".to_string(),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Err(_) => format!("an unreadable change of {} bytes", payload.len()),
    }
}

/// The spool holds every job's environment and script path: readable by the master's
/// user alone (mode 0600), also when an earlier version created it readable by all.
fn owner_only(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|source| {
        StoreError::Permissions {
            path: path.to_path_buf(),
            source,
        }
    })
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
        owner_only(path)?;
        let spool_id: u64 = rand::random();
        let txn = db.begin_write()?;
        {
            let mut meta = txn.open_table(META)?;
            meta.insert("schema", SCHEMA_VERSION.to_be_bytes().as_slice())?;
            meta.insert("next_job_id", 1u64.to_be_bytes().as_slice())?;
            meta.insert("journal_seq", 0u64.to_be_bytes().as_slice())?;
            meta.insert("spool_id", spool_id.to_be_bytes().as_slice())?;
            meta.insert("generation", 1u64.to_be_bytes().as_slice())?;
            // Not clean until closed: its journal is the only copy of what comes next.
            meta.insert("clean", [0u8].as_slice())?;
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
        let header = journal::Header {
            spool_id,
            generation: 1,
        };
        let journal =
            Journal::open(&journal_path, header, 0, 1).map_err(|source| StoreError::Journal {
                path: journal_path.clone(),
                source,
            })?;
        Ok(Store {
            db: Some(Arc::new(db)),
            path: path.to_path_buf(),
            failed_checkpoints: 0,
            journal,
            journal_path,
            unapplied: Unapplied::default(),
            in_flight: None,
        })
    }

    /// Open an existing spool, applying the changes its journal holds beyond the
    /// database. A journal that is damaged before its end, missing, empty, or of
    /// another spool or checkpoint after a crash would lose acknowledged changes: that
    /// is refused ([`StoreError::Damaged`]) unless `recover`, which drops what cannot be
    /// read and logs every dropped change. A torn last record (a write a crash cut
    /// short, never acknowledged) is dropped with a warning. Job ids are never handed
    /// out again: the next one is above every id the spool holds or may have held.
    pub fn open(path: &Path, recover: bool) -> Result<Store, StoreError> {
        let db = Builder::new()
            .set_cache_size(SPOOL_CACHE_BYTES)
            .open(path)?;
        owner_only(path)?;
        let found = {
            let txn = db.begin_read()?;
            let meta = txn.open_table(META)?;
            meta.get("schema")?
                .and_then(|v| <[u8; 4]>::try_from(v.value()).ok())
                .map_or(0, u32::from_be_bytes)
        };
        if found != SCHEMA_VERSION {
            migrate::upgrade(&db, path, found)?;
        }
        let (applied, spool_id, generation, clean) = spool_state(&db)?;
        let journal_path = journal_path(path);
        let io = |source| StoreError::Journal {
            path: journal_path.clone(),
            source,
        };
        let bytes = journal::read(&journal_path).map_err(io)?;
        let here = journal_path.display().to_string();
        // Records the database does not hold yet, and how many changes are gone.
        let mut records: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut end = 0;
        let mut lost_changes: u64 = 0;
        let header = bytes.as_deref().map(journal::decode_header);
        let trouble = match header {
            None => Some("missing".to_string()),
            Some(HeaderRead::Empty) => Some("empty".to_string()),
            Some(HeaderRead::Unreadable) => Some("not a journal this master can read".to_string()),
            Some(HeaderRead::Found(h)) if h.spool_id != spool_id => {
                Some("the journal of another spool".to_string())
            }
            Some(HeaderRead::Found(h))
                if h.generation != generation && h.generation + 1 != generation =>
            {
                Some(format!(
                    "from another checkpoint (generation {}, the database is at {generation})",
                    h.generation
                ))
            }
            Some(HeaderRead::Found(_)) => None,
        };
        match trouble {
            Some(what) if clean => {
                tracing::info!(
                    "spool journal {here} is {what}; the master shut down cleanly, so it held nothing the database lacks: starting a new one"
                );
            }
            Some(what) => {
                let message = format!(
                    "spool journal {here} is {what}, after a master that did not shut down cleanly: the changes acknowledged since the database's last checkpoint (change {applied}) would be lost"
                );
                if !recover {
                    return Err(StoreError::Damaged(message));
                }
                tracing::warn!("recovering: {message}; going on without them");
                // How many changes it held is unknown, but never more than a checkpoint
                // lets wait: job ids skip that many (each might have been a submission).
                lost_changes = (CHECKPOINT_OPS * FORCED_CHECKPOINT) as u64;
                // What can still be read of it is logged as dropped.
                if let Some(b) = &bytes {
                    for (seq, payload) in journal::scan(b, applied).records {
                        tracing::warn!(
                            "recovering: dropped change {seq}: {}",
                            describe_change(&payload)
                        );
                    }
                }
            }
            None => {
                let b = bytes.as_deref().unwrap_or_default();
                let scan = journal::scan(b, applied);
                for offset in &scan.skipped {
                    tracing::warn!(
                        "spool journal {here}: unreadable bytes at offset {offset}, where only changes the database holds were: nothing lost"
                    );
                }
                if let Some(torn) = &scan.torn {
                    tracing::warn!(
                        "spool journal {here} ends with a change a crash cut short (never acknowledged), dropped: {} at offset {}{}",
                        describe_change(&torn.payload),
                        torn.offset,
                        torn.claimed_seq
                            .map(|s| format!(", sequence {s}"))
                            .unwrap_or_default()
                    );
                    lost_changes += 1;
                }
                end = scan.end;
                records = scan.records;
                if let Some((from, to, at)) = scan.lost {
                    let message = format!(
                        "spool journal {here} is damaged at offset {}: changes {from} to {to} cannot be read, and {} later changes follow them",
                        at.offset,
                        scan.after_loss.len()
                    );
                    if !recover {
                        return Err(StoreError::Damaged(message));
                    }
                    tracing::warn!("recovering: {message}");
                    for seq in from..=to {
                        tracing::warn!("recovering: dropped change {seq}: unreadable");
                    }
                    lost_changes += to - from + 1;
                    for (seq, payload) in &scan.after_loss {
                        tracing::warn!(
                            "recovering: applying change {seq} after the damage: {}",
                            describe_change(payload)
                        );
                    }
                    records.extend(scan.after_loss);
                    end = 0; // the journal starts over after the checkpoint below
                }
            }
        }
        let mut unapplied = Unapplied::default();
        for (seq, payload) in &records {
            let ops: Vec<Op> = gantry_proto::decode(payload)
                .map_err(|source| StoreError::CorruptRecord { seq: *seq, source })?;
            unapplied.push(*seq, payload.clone(), &ops.iter().collect::<Vec<_>>());
        }
        let next_seq = records.last().map_or(applied, |(s, _)| *s).max(applied) + 1;
        let journal = Journal::open(
            &journal_path,
            journal::Header {
                spool_id,
                generation,
            },
            end,
            next_seq,
        )
        .map_err(io)?;
        let mut store = Store {
            db: Some(Arc::new(db)),
            path: path.to_path_buf(),
            failed_checkpoints: 0,
            journal,
            journal_path,
            unapplied,
            in_flight: None,
        };
        if !records.is_empty() {
            tracing::info!(
                records = records.len(),
                changes = store.unapplied.len(),
                "spool: applying the journal's changes"
            );
            store.checkpoint()?;
        }
        store.mark_running(lost_changes)?;
        Ok(store)
    }

    /// The master runs on this spool: it is not clean until [`Store::close`]. The next
    /// job id is raised above every id the spool holds, and by `lost_changes` more (each
    /// lost change may have been a submission).
    fn mark_running(&mut self, lost_changes: u64) -> Result<(), StoreError> {
        let floor = self.highest_job_id()?.map_or(1, |id| id.get() + 1) + lost_changes;
        let recorded = self.next_job_id()?.get();
        let txn = self.db()?.begin_write()?;
        {
            let mut meta = txn.open_table(META)?;
            meta.insert("clean", [0u8].as_slice())?;
            if floor > recorded || lost_changes > 0 {
                let next = floor.max(recorded + lost_changes);
                tracing::info!(next, "spool: job ids continue above every id seen");
                meta.insert("next_job_id", next.to_be_bytes().as_slice())?;
            }
        }
        txn.commit()?;
        Ok(())
    }

    /// The highest job id the spool holds (jobs and accounting records).
    fn highest_job_id(&self) -> Result<Option<JobId>, StoreError> {
        let txn = self.db()?.begin_read()?;
        let objects = txn.open_table(OBJECTS)?;
        let job = objects
            .range("job/".."job0")?
            .next_back()
            .transpose()?
            .and_then(|(k, _)| crate::core::state::job_of_key(k.value()));
        let acct = txn.open_table(ACCOUNTING)?;
        let accounted = acct.last()?.map(|(k, _)| JobId(k.value().0));
        Ok(job.max(accounted))
    }

    /// Checkpoint and record a clean shutdown: the journal then holds nothing the
    /// database lacks, whatever becomes of it.
    pub fn close(&mut self) -> Result<(), StoreError> {
        self.checkpoint()?;
        let txn = self.db()?.begin_write()?;
        txn.open_table(META)?.insert("clean", [1u8].as_slice())?;
        txn.commit()?;
        Ok(())
    }

    /// Move every journaled change into the database in one durable transaction, as the
    /// next generation, here and now (after the checkpoint under way, if one is); the
    /// journal then starts over under that generation.
    pub fn checkpoint(&mut self) -> Result<(), StoreError> {
        self.finish_checkpoint()?;
        if self.unapplied.is_empty() {
            return Ok(());
        }
        let generation = self.journal.header().generation + 1;
        self.reopen_if_closed()?;
        let written = write_checkpoint(
            self.db()?,
            &self.unapplied,
            self.journal.last_seq(),
            generation,
        );
        if let Err(e) = written {
            self.failed(&e);
            return Err(e);
        }
        self.succeeded();
        self.unapplied = Unapplied::default();
        self.journal
            .restart(generation)
            .map_err(|source| self.journal_error(source))
    }

    /// The database, unless it is closed after a failure.
    fn db(&self) -> Result<&Arc<Database>, StoreError> {
        self.db.as_ref().ok_or(StoreError::Closed)
    }

    /// A checkpoint failed (a full disk, an I/O error): redb then refuses every later
    /// transaction ("Previous I/O error occurred. Please close and re-open the
    /// database."), so the database is closed, to be opened again before the next
    /// checkpoint. Nothing is lost: the journal holds every change since the last
    /// checkpoint that did not fail.
    fn failed(&mut self, e: &StoreError) {
        self.failed_checkpoints += 1;
        if self.failed_checkpoints == 1 {
            tracing::warn!("spool checkpoint failed: {e}; the journal keeps the changes, and the database is opened again for the next one");
        }
        if self
            .db
            .as_ref()
            .is_some_and(|db| Arc::strong_count(db) == 1)
        {
            self.db = None;
        }
    }

    fn succeeded(&mut self) {
        if self.failed_checkpoints > 0 {
            tracing::info!(
                failed = self.failed_checkpoints,
                "spool checkpoint succeeded again"
            );
            self.failed_checkpoints = 0;
        }
    }

    /// Open the database again if a failure closed it.
    fn reopen_if_closed(&mut self) -> Result<(), StoreError> {
        if self.db.is_some() {
            return Ok(());
        }
        let db = Builder::new()
            .set_cache_size(SPOOL_CACHE_BYTES)
            .open(&self.path)?;
        self.db = Some(Arc::new(db));
        Ok(())
    }

    fn journal_error(&self, source: std::io::Error) -> StoreError {
        StoreError::Journal {
            path: self.journal_path.clone(),
            source,
        }
    }

    /// Start a checkpoint of the changes waiting, on a thread of its own, unless one is
    /// under way or nothing waits; `done` is called on that thread when its transaction
    /// has ended, and the owner then calls [`Store::finish_checkpoint`]. Meanwhile
    /// changes are committed and read as before. Returns whether one was started.
    pub fn start_checkpoint(&mut self, done: impl FnOnce() + Send + 'static) -> bool {
        if self.in_flight.is_some() || self.unapplied.is_empty() {
            return false;
        }
        let batch = Arc::new(std::mem::take(&mut self.unapplied));
        let last_seq = self.journal.last_seq();
        let generation = self.journal.header().generation + 1;
        let Ok(db) = self.reopen_if_closed().and_then(|()| self.db().cloned()) else {
            // Closed since a failure and not to be opened yet: the journal keeps the
            // changes, and the next checkpoint tries again.
            self.unapplied = Arc::unwrap_or_clone(batch);
            return false;
        };
        let theirs = Arc::clone(&batch);
        let spawned = std::thread::Builder::new()
            .name("spool-checkpoint".into())
            .spawn(move || {
                let result = write_checkpoint(&db, &theirs, last_seq, generation);
                drop((db, theirs));
                done();
                result
            });
        match spawned {
            Ok(thread) => {
                self.in_flight = Some(InFlight {
                    batch,
                    generation,
                    thread,
                });
                true
            }
            Err(e) => {
                tracing::warn!("spool checkpoint not started (the journal keeps the changes): {e}");
                self.unapplied = Arc::unwrap_or_clone(batch);
                false
            }
        }
    }

    /// End the checkpoint under way (waiting for its thread if it has not ended): the
    /// journal's header names the new generation, and the journal starts over if no
    /// change came meanwhile (else its records stay where they are, those the database
    /// holds now skipped when read, until a checkpoint finds it empty or it grows past
    /// [`FORCED_CHECKPOINT`] checkpoints' bytes). A failed checkpoint's changes wait for
    /// the next one. Nothing happens if no checkpoint is under way.
    pub fn finish_checkpoint(&mut self) -> Result<(), StoreError> {
        let Some(flight) = self.in_flight.take() else {
            return Ok(());
        };
        let result = flight.thread.join().unwrap_or_else(|_| {
            Err(StoreError::Journal {
                path: self.journal_path.clone(),
                source: std::io::Error::other("the checkpoint's thread panicked"),
            })
        });
        if let Err(e) = result {
            let batch = Arc::unwrap_or_clone(flight.batch);
            self.unapplied = batch.then(std::mem::take(&mut self.unapplied));
            self.failed(&e);
            return Err(e);
        }
        self.succeeded();
        if self.unapplied.is_empty() {
            self.journal.restart(flight.generation)
        } else {
            self.journal.set_generation(flight.generation)
        }
        .map_err(|source| self.journal_error(source))?;
        if self.journal.len() >= CHECKPOINT_BYTES * FORCED_CHECKPOINT as u64 {
            // Changes kept coming during every checkpoint: these few go now, and the
            // journal starts over.
            self.checkpoint()?;
        }
        Ok(())
    }

    /// Every object in the spool.
    pub fn load(&self) -> Result<Vec<Object>, StoreError> {
        let txn = self.db()?.begin_read()?;
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
        let mut waiting = Vec::new();
        for batch in self.batches() {
            waiting.extend(batch.ops()?);
        }
        for op in &waiting {
            match op {
                Op::Put(o) => {
                    out.insert(o.key(), o.clone());
                }
                Op::Delete(key) => {
                    out.remove(key);
                }
                Op::Account(_) | Op::NextJobId(_) | Op::Script { .. } | Op::Catalog(_) => {}
            }
        }
        Ok(out.into_values().collect())
    }

    /// The next job id recorded in the spool.
    pub fn next_job_id(&self) -> Result<JobId, StoreError> {
        if let Some(n) = self.batches().filter_map(|b| b.next_job_id).last() {
            return Ok(n);
        }
        let txn = self.db()?.begin_read()?;
        let meta = txn.open_table(META)?;
        Ok(meta
            .get("next_job_id")?
            .and_then(|v| <[u8; 8]>::try_from(v.value()).ok())
            .map_or(JobId(1), |b| JobId(u64::from_be_bytes(b))))
    }

    /// Is there an accounting record for this task?
    pub fn has_accounting(&self, job_id: JobId, task_id: TaskId) -> Result<bool, StoreError> {
        let (job, task) = (job_id.get(), task_id.get());
        let task = (job, task, 0, 0)..=(job, task, u32::MAX, u32::MAX);
        if self
            .batches()
            .any(|b| b.accounts.range(task.clone()).next().is_some())
        {
            return Ok(true);
        }
        let txn = self.db()?.begin_read()?;
        let t = txn.open_table(ACCOUNTING)?;
        Ok(t.range(task)?.next().is_some())
    }

    /// Accounting records matching `keep`, in job and task order.
    pub fn accounting(
        &self,
        keep: impl Fn(&gantry_proto::AccountingRecord) -> bool,
    ) -> Result<Vec<gantry_proto::AccountingRecord>, StoreError> {
        let txn = self.db()?.begin_read()?;
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
        for (key, r) in self.batches().flat_map(|b| &b.accounts) {
            if keep(r) {
                out.insert(*key, r.clone());
            }
        }
        Ok(out.into_values().collect())
    }

    /// Write a change durably (one journal record) before it is acknowledged.
    pub fn commit(&mut self, ops: &[Op]) -> Result<(), StoreError> {
        // A job script is written beside the journal (by the commit that carries it),
        // not into it; a prepared catalog is the state's alone.
        let ops: Vec<&Op> = ops
            .iter()
            .filter(|op| !matches!(op, Op::Script { .. } | Op::Catalog(_)))
            .collect();
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
        self.unapplied.push(seq, payload, &ops);
        if self.unapplied.len() >= CHECKPOINT_OPS * FORCED_CHECKPOINT
            || self.unapplied.bytes >= CHECKPOINT_BYTES * FORCED_CHECKPOINT as u64
        {
            self.checkpoint_now();
        }
        Ok(())
    }

    /// The changes not yet in the database, oldest first: the checkpoint's under way,
    /// then those waiting.
    fn batches(&self) -> impl Iterator<Item = &Unapplied> {
        self.in_flight
            .iter()
            .map(|f| f.batch.as_ref())
            .chain(std::iter::once(&self.unapplied))
    }

    /// Enough changes wait in the journal for a checkpoint.
    pub fn checkpoint_due(&self) -> bool {
        self.unapplied.len() >= CHECKPOINT_OPS || self.unapplied.bytes >= CHECKPOINT_BYTES
    }

    /// Is a checkpoint under way on its thread?
    pub fn checkpoint_running(&self) -> bool {
        self.in_flight.is_some()
    }

    /// Checkpoint; the changes are durable already, so a failure only means the
    /// checkpoint is tried again later.
    pub fn checkpoint_now(&mut self) {
        if let Err(e) = self.checkpoint() {
            tracing::warn!("spool checkpoint failed (the journal keeps the changes): {e}");
        }
    }
}

pub mod backup;
mod migrate;

#[cfg(test)]
mod tests;
