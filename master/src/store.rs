//! The master's spool: an embedded transactional store (redb). Every change is one
//! write transaction, committed (fsync) before the master acknowledges it.

use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use crate::state::{Object, Op};

const OBJECTS: TableDefinition<&str, &[u8]> = TableDefinition::new("objects");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

/// The spool's schema version; a spool written by a different version is refused.
pub const SCHEMA_VERSION: u32 = 1;

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

    /// Write a change in one transaction, durably.
    pub fn commit(&self, ops: &[Op]) -> Result<(), StoreError> {
        if ops.is_empty() {
            return Ok(());
        }
        let txn = self.db.begin_write()?;
        {
            let mut t = txn.open_table(OBJECTS)?;
            for op in ops {
                match op {
                    Op::Put(o) => {
                        let bytes = gantry_proto::encode(o)?;
                        t.insert(o.key().as_str(), bytes.as_slice())?;
                    }
                    Op::Delete(key) => {
                        t.remove(key.as_str())?;
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
