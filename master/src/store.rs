//! The master's spool: an embedded transactional store (redb). Every change is one
//! write transaction, committed (fsync) before the master acknowledges it.

use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use crate::state::{Object, Op};

const OBJECTS: TableDefinition<&str, &[u8]> = TableDefinition::new("objects");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
const ACCOUNTING: TableDefinition<(u64, u32), &[u8]> = TableDefinition::new("accounting");

/// The spool's schema version; a spool written by a different version is refused.
pub const SCHEMA_VERSION: u32 = 2;

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
}

pub struct Store {
    db: Database,
}

impl Store {
    /// Create a new spool holding `objects`.
    pub fn create(path: &Path, objects: &[Object]) -> Result<Store, StoreError> {
        let db = Database::create(path)?;
        let store = Store { db };
        let txn = store.db.begin_write()?;
        {
            let mut meta = txn.open_table(META)?;
            meta.insert("schema", SCHEMA_VERSION.to_be_bytes().as_slice())?;
            meta.insert("next_job_id", 1u64.to_be_bytes().as_slice())?;
            txn.open_table(ACCOUNTING)?;
            let mut t = txn.open_table(OBJECTS)?;
            for o in objects {
                let bytes = gantry_proto::encode(o)?;
                t.insert(o.key().as_str(), bytes.as_slice())?;
            }
        }
        txn.commit()?;
        Ok(store)
    }

    /// Open an existing spool.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let db = Database::open(path)?;
        let store = Store { db };
        let txn = store.db.begin_read()?;
        let meta = txn.open_table(META)?;
        let found = meta
            .get("schema")?
            .and_then(|v| <[u8; 4]>::try_from(v.value()).ok())
            .map_or(0, u32::from_be_bytes);
        if found != SCHEMA_VERSION {
            return Err(StoreError::Schema { found });
        }
        Ok(store)
    }

    /// Every object in the spool.
    pub fn load(&self) -> Result<Vec<Object>, StoreError> {
        let txn = self.db.begin_read()?;
        let t = txn.open_table(OBJECTS)?;
        let mut out = Vec::new();
        for item in t.iter()? {
            let (k, v) = item?;
            let obj: Object =
                gantry_proto::decode(v.value()).map_err(|source| StoreError::Corrupt {
                    key: k.value().to_string(),
                    source,
                })?;
            out.push(obj);
        }
        Ok(out)
    }

    /// The next job id recorded in the spool.
    pub fn next_job_id(&self) -> Result<u64, StoreError> {
        let txn = self.db.begin_read()?;
        let meta = txn.open_table(META)?;
        Ok(meta
            .get("next_job_id")?
            .and_then(|v| <[u8; 8]>::try_from(v.value()).ok())
            .map_or(1, u64::from_be_bytes))
    }

    /// Is there an accounting record for this task?
    pub fn has_accounting(&self, job_id: u64, task_id: u32) -> Result<bool, StoreError> {
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
        let mut out = Vec::new();
        for item in t.iter()? {
            let (k, v) = item?;
            let r: gantry_proto::AccountingRecord =
                gantry_proto::decode(v.value()).map_err(|source| StoreError::Corrupt {
                    key: format!("accounting/{:?}", k.value()),
                    source,
                })?;
            if keep(&r) {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// Write a change in one transaction, durably.
    pub fn commit(&self, ops: &[Op]) -> Result<(), StoreError> {
        if ops.is_empty() {
            return Ok(());
        }
        let txn = self.db.begin_write()?;
        {
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
                        acct.insert((r.job_id, r.task_id.unwrap_or(0)), bytes.as_slice())?;
                    }
                    Op::NextJobId(n) => {
                        meta.insert("next_job_id", n.to_be_bytes().as_slice())?;
                    }
                }
            }
        }
        txn.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::initial_objects;

    #[test]
    fn objects_survive_reopening_and_deletes_stick() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spool.redb");
        let objects = initial_objects(&["root".into()]);
        {
            let store = Store::create(&path, &objects).unwrap();
            store
                .commit(&[
                    Op::Put(Object::ExecHost(gantry_proto::ExecHost::new("n1"))),
                    Op::Delete("managers".into()),
                ])
                .unwrap();
        }
        let store = Store::open(&path).unwrap();
        let loaded = store.load().unwrap();
        assert!(loaded.iter().any(|o| o.key() == "exechost/n1"));
        assert!(!loaded.iter().any(|o| o.key() == "managers"));
        assert_eq!(loaded.len(), objects.len());
    }
}
