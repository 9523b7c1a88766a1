//! Upgrading a spool written by an earlier schema, as databases migrate: every change of
//! the layout since is one entry of [`CHANGES`], and opening an older spool rewrites
//! each object, accounting record and journal change in today's layout in one
//! transaction, after a copy of the spool and its journal has been kept beside them.
//!
//! The journal's changes the database has not taken in are read in the old layout and
//! written into the same transaction, which then says the database holds the journal
//! to its end: the old records are never read again, and new ones follow them.

mod reader;

pub use reader::Error as ReadError;

use std::path::{Path, PathBuf};

use redb::{Database, ReadableTable};
use serde::Deserialize;

use super::{journal, write_ops, StoreError, ACCOUNTING, META, OBJECTS, SCHEMA_VERSION};
use crate::core::state::{Object, Op, QueueInError};
use reader::{encode, Change, Encoded, Kind, Reader};

/// The oldest schema this master upgrades: the first whose layout [`CHANGES`] describes
/// every change since.
pub const OLDEST: u32 = 4;

/// Every change of the spool's layout since [`OLDEST`], by the schema that made it. A
/// value given for an added field is encoded as of that schema (today's type serves
/// while it has not changed since). Found by comparing the serialized types of the
/// last commit of each schema with the next's, and checked by a fixture of each.
static CHANGES: &[Change] = &[
    Change {
        schema: 5,
        what: "a job keeps its mail options (-m)",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "mail_options",
            value: || encode(&String::new()),
        },
    },
    Change {
        schema: 5,
        what: "a job keeps its mail list (-M)",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "mail_list",
            value: || encode(&Vec::<String>::new()),
        },
    },
    Change {
        schema: 5,
        what: "a job keeps its reservation request (-R)",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "reserve",
            value: || encode(&false),
        },
    },
    Change {
        schema: 6,
        what: "a job keeps its context (-ac, -sc)",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "context",
            value: || encode(&Vec::<(String, String)>::new()),
        },
    },
    Change {
        schema: 6,
        what: "a job keeps its standard input file (-i)",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "stdin_path",
            value: || encode(&None::<String>),
        },
    },
    Change {
        schema: 7,
        what: "a job keeps whether it may run again (-r)",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "restart",
            value: || encode(&None::<bool>),
        },
    },
    Change {
        schema: 8,
        what: "a job keeps whether it is warned before a suspension or kill (-notify)",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "notify",
            value: || encode(&false),
        },
    },
    Change {
        schema: 9,
        what: "a job keeps its array dependencies (-hold_jid_ad)",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "hold_jids_ad",
            value: || encode(&Vec::<String>::new()),
        },
    },
    Change {
        schema: 10,
        what: "a job keeps its soft queue list (-soft -q)",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "soft_queues",
            value: || encode(&Vec::<String>::new()),
        },
    },
    Change {
        schema: 11,
        what: "a job keeps its deadline (-dl)",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "deadline",
            value: || encode(&None::<i64>),
        },
    },
    Change {
        schema: 11,
        what: "a job keeps its job share (-js)",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "job_share",
            value: || encode(&0u32),
        },
    },
    Change {
        schema: 11,
        what: "a job keeps -shell n",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "binary_shell",
            value: || encode(&false),
        },
    },
    Change {
        schema: 11,
        what: "a job keeps -now y",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "immediate",
            value: || encode(&false),
        },
    },
    Change {
        schema: 12,
        what: "a job keeps its core binding request (-binding)",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "binding",
            value: || encode(&None::<String>),
        },
    },
    Change {
        schema: 13,
        what: "a job keeps its master queue list (-masterq)",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "masterq",
            value: || encode(&Vec::<String>::new()),
        },
    },
    Change {
        schema: 14,
        what: "a job keeps its checkpointing environment (-ckpt)",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "ckpt",
            value: || encode(&None::<String>),
        },
    },
    Change {
        schema: 14,
        what: "a job keeps when it is checkpointed (-c)",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "ckpt_when",
            value: || encode(&None::<String>),
        },
    },
    Change {
        schema: 15,
        what: "a job keeps which tasks run again after a host failure",
        kind: Kind::FieldAdded {
            container: "Job",
            field: "restarted",
            value: || encode(&std::collections::BTreeSet::<u32>::new()),
        },
    },
    Change {
        schema: 16,
        what: "a job keeps how many runs of each restarted task were interrupted",
        kind: Kind::FieldChanged {
            container: "Job",
            field: "restarted",
            convert: restarted_with_runs,
        },
    },
    Change {
        schema: 16,
        what: "a job keeps which tasks restart from a checkpoint",
        kind: Kind::FieldAdded {
            container: "Job",
            field: "ckpt_arena",
            value: || encode(&std::collections::BTreeSet::<u32>::new()),
        },
    },
    Change {
        schema: 16,
        what: "a report says whether the task left a checkpoint",
        kind: Kind::FieldAdded {
            container: "JobReport",
            field: "checkpointed",
            value: || encode(&false),
        },
    },
    Change {
        schema: 16,
        what: "accounting records tell a task's runs apart",
        kind: Kind::FieldAdded {
            container: "AccountingRecord",
            field: "attempt",
            value: || encode(&0u32),
        },
    },
    Change {
        schema: 17,
        what: "a job keeps whether it runs with a pseudo terminal (-pty)",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "pty",
            value: || encode(&false),
        },
    },
    Change {
        schema: 18,
        what: "accounting records name their advance reservation",
        kind: Kind::FieldAdded {
            container: "AccountingRecord",
            field: "ar",
            value: || encode(&None::<(u64, i64)>),
        },
    },
    Change {
        schema: 20,
        what: "a group of the group quota tree keeps its access lists",
        kind: Kind::FieldAdded {
            container: "GroupEntry",
            field: "user_lists",
            value: || encode(&Vec::<String>::new()),
        },
    },
    Change {
        schema: 21,
        what: "a report names its qrsh -inherit task",
        kind: Kind::FieldAdded {
            container: "JobReport",
            field: "pe_task",
            value: || encode(&None::<u32>),
        },
    },
    Change {
        schema: 21,
        what: "the tasks qrsh -inherit starts in running jobs",
        kind: Kind::VariantInserted {
            container: "Object",
            index: 27,
        },
    },
    Change {
        schema: 22,
        what: "operators (qconf -ao)",
        kind: Kind::VariantInserted {
            container: "Object",
            index: 6,
        },
    },
    Change {
        schema: 22,
        what: "accounting records keep the granted parallel environment",
        kind: Kind::FieldAdded {
            container: "AccountingRecord",
            field: "granted_pe",
            value: || encode(&None::<String>),
        },
    },
    Change {
        schema: 22,
        what: "accounting records keep the job's category",
        kind: Kind::FieldAdded {
            container: "AccountingRecord",
            field: "category",
            value: || encode(&String::new()),
        },
    },
    Change {
        schema: 22,
        what: "a report keeps the rest of SGE's usage (ru_*, mem, io, iow, maxvmem)",
        kind: Kind::FieldAdded {
            container: "JobReport",
            field: "accounted",
            value: || encode(&gantry_proto::AccountedUsage::default()),
        },
    },
    Change {
        schema: 22,
        what: "a job's summed qrsh -inherit usage keeps the rest of SGE's usage",
        kind: Kind::FieldAdded {
            container: "Used",
            field: "accounted",
            value: || encode(&gantry_proto::AccountedUsage::default()),
        },
    },
    Change {
        schema: 23,
        what: "a job keeps its operator hold",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "operator_hold",
            value: || encode(&false),
        },
    },
    Change {
        schema: 23,
        what: "a job keeps its system hold",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "system_hold",
            value: || encode(&false),
        },
    },
    Change {
        schema: 23,
        what: "a job keeps its version (the changes qalter, qhold and qrls made)",
        kind: Kind::FieldAdded {
            container: "Job",
            field: "version",
            value: || encode(&0u32),
        },
    },
    Change {
        schema: 24,
        what: "a job keeps why its tasks' last start failed",
        kind: Kind::FieldAdded {
            container: "Job",
            field: "failed_starts",
            value: || encode(&std::collections::BTreeMap::<gantry_proto::TaskId, String>::new()),
        },
    },
    Change {
        schema: 25,
        what: "a queue instance in error state keeps why (qstat -explain E)",
        kind: Kind::VariantChanged {
            container: "Object",
            variant: "ErrorQueues",
            convert: error_queues_with_reasons,
        },
    },
    Change {
        schema: 26,
        what: "a job keeps its -C directive prefix",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "directive_prefix",
            value: || encode(&None::<String>),
        },
    },
    Change {
        schema: 27,
        what: "a job keeps its verification mode (-w)",
        kind: Kind::FieldAdded {
            container: "JobSpec",
            field: "verify",
            value: || encode(&gantry_proto::Verify::None),
        },
    },
];

/// 16: a restarted task was run and interrupted once at least.
fn restarted_with_runs(r: &mut Reader<'_>) -> Encoded {
    let old: std::collections::BTreeSet<u32> = Deserialize::deserialize(r)?;
    encode(
        &old.into_iter()
            .map(|task| (task, 1u32))
            .collect::<std::collections::BTreeMap<u32, u32>>(),
    )
}

/// 25: error-state queue instances were (queue, host) pairs; why is not known.
fn error_queues_with_reasons(r: &mut Reader<'_>) -> Encoded {
    let old: Vec<(String, String)> = Deserialize::deserialize(r)?;
    encode(
        &old.into_iter()
            .map(|(queue, host)| QueueInError {
                queue,
                host,
                why: String::new(),
            })
            .collect::<Vec<_>>(),
    )
}

/// The accounting table before schema 21: keyed by job, task and attempt; before 16, by
/// job and task.
const ACCOUNTING_BEFORE_21: redb::TableDefinition<(u64, u32, u32), &[u8]> =
    redb::TableDefinition::new("accounting");
const ACCOUNTING_BEFORE_16: redb::TableDefinition<(u64, u32), &[u8]> =
    redb::TableDefinition::new("accounting");

/// An accounting record's key: job, task, attempt, `qrsh -inherit` task.
type AccountKey = (u64, u32, u32, u32);

/// What an upgrade did, for the log and the tests.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Upgraded {
    pub from: u32,
    pub objects: usize,
    pub accounting: usize,
    pub journal_changes: usize,
    /// Where the copy of the spool as it was is kept.
    pub copy: PathBuf,
}

/// Where the copy of the spool at `path` is kept before it is upgraded from `schema`:
/// beside it, `spool.redb.schema-26` (its journal `spool.journal.schema-26`).
pub fn copy_path(path: &Path, schema: u32) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".schema-{schema}"));
    path.with_file_name(name)
}

/// Upgrade the spool `db` at `path` from schema `found` to this master's.
pub fn upgrade(db: &Database, path: &Path, found: u32) -> Result<Upgraded, StoreError> {
    if found > SCHEMA_VERSION {
        return Err(StoreError::Newer { found });
    }
    if found < OLDEST {
        return Err(StoreError::Schema { found });
    }
    let (applied, spool_id, generation, clean) = super::spool_state(db)?;
    // The journal's changes beyond the database: all of them, or the upgrade waits.
    let journal_path = super::journal_path(path);
    let bytes = journal::read(&journal_path).map_err(|source| StoreError::Journal {
        path: journal_path.clone(),
        source,
    })?;
    let header = bytes.as_deref().map(journal::decode_header);
    let ours = matches!(header, Some(journal::HeaderRead::Found(h))
        if h.spool_id == spool_id && (h.generation == generation || h.generation + 1 == generation));
    let records = match (ours, clean) {
        (true, _) => {
            let scan = journal::scan(bytes.as_deref().unwrap_or_default(), applied);
            if scan.lost.is_some() {
                return Err(refused(&journal_path, found, "damaged before its end"));
            }
            scan.records
        }
        (false, true) => Vec::new(),
        (false, false) => {
            return Err(refused(&journal_path, found, "missing or not this spool's"));
        }
    };
    // The copy, before anything changes.
    let copy = copy_path(path, found);
    let keep = |from: &Path, to: &Path| {
        std::fs::copy(from, to).map_err(|source| StoreError::Copy {
            path: to.to_path_buf(),
            source,
        })
    };
    keep(path, &copy)?;
    if journal_path.exists() {
        keep(&journal_path, &copy_path(&journal_path, found))?;
    }
    tracing::info!(
        "spool: upgrading {} from schema {found} to {SCHEMA_VERSION}; the spool as it was is kept as {}",
        path.display(),
        copy.display()
    );
    for change in CHANGES.iter().filter(|c| c.schema > found) {
        tracing::info!("spool: schema {}: {}", change.schema, change.what);
    }
    let mut done = Upgraded {
        from: found,
        copy,
        ..Upgraded::default()
    };
    let txn = db.begin_write()?;
    {
        let mut objects = txn.open_table(OBJECTS)?;
        let old: Vec<(String, Vec<u8>)> = objects
            .iter()?
            .map(|e| e.map(|(k, v)| (k.value().to_string(), v.value().to_vec())))
            .collect::<Result<_, _>>()?;
        for (key, bytes) in old {
            let object: Object = read(&bytes, found, || key.clone())?;
            objects.insert(key.as_str(), gantry_proto::encode(&object)?.as_slice())?;
            done.objects += 1;
        }
        let old: Vec<(AccountKey, Vec<u8>)> = if found < 16 {
            // 16: keyed by the attempt too; 21: by the qrsh -inherit task (0: none).
            let table = txn.open_table(ACCOUNTING_BEFORE_16)?;
            let old = table
                .iter()?
                .map(|e| {
                    e.map(|(k, v)| {
                        let (job, task) = k.value();
                        ((job, task, 0, 0), v.value().to_vec())
                    })
                })
                .collect::<Result<_, _>>()?;
            drop(table);
            txn.delete_table(ACCOUNTING_BEFORE_16)?;
            old
        } else if found < 21 {
            let table = txn.open_table(ACCOUNTING_BEFORE_21)?;
            let old = table
                .iter()?
                .map(|e| {
                    e.map(|(k, v)| {
                        let (job, task, attempt) = k.value();
                        ((job, task, attempt, 0), v.value().to_vec())
                    })
                })
                .collect::<Result<_, _>>()?;
            drop(table);
            txn.delete_table(ACCOUNTING_BEFORE_21)?;
            old
        } else {
            txn.open_table(ACCOUNTING)?
                .iter()?
                .map(|e| e.map(|(k, v)| (k.value(), v.value().to_vec())))
                .collect::<Result<_, _>>()?
        };
        let mut accounting = txn.open_table(ACCOUNTING)?;
        for (key, bytes) in old {
            let record: gantry_proto::AccountingRecord =
                read(&bytes, found, || format!("accounting record {key:?}"))?;
            accounting.insert(key, gantry_proto::encode(&record)?.as_slice())?;
            done.accounting += 1;
        }
    }
    let mut last_seq = applied;
    for (seq, payload) in &records {
        let ops: Vec<Op> = read(payload, found, || format!("journal change {seq}"))?;
        write_ops(&txn, &ops)?;
        done.journal_changes += ops.len();
        last_seq = *seq;
    }
    {
        let mut meta = txn.open_table(META)?;
        meta.insert("schema", SCHEMA_VERSION.to_be_bytes().as_slice())?;
        meta.insert("journal_seq", last_seq.to_be_bytes().as_slice())?;
    }
    txn.commit()?;
    tracing::info!(
        objects = done.objects,
        accounting = done.accounting,
        journal_changes = done.journal_changes,
        "spool: upgraded from schema {found} to {SCHEMA_VERSION}"
    );
    Ok(done)
}

fn read<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    found: u32,
    what: impl Fn() -> String,
) -> Result<T, StoreError> {
    reader::read(bytes, found, SCHEMA_VERSION, CHANGES).map_err(|source| StoreError::Migrate {
        found,
        what: what(),
        source,
    })
}

fn refused(journal: &Path, found: u32, what: &str) -> StoreError {
    StoreError::UpgradeRefused(format!(
        "spool journal {} is {what}, after a master that did not shut down cleanly: the spool is not upgraded (start the master that wrote schema {found} on it, with --recover-spool if it asks for it, and stop it, then upgrade)",
        journal.display()
    ))
}

#[cfg(test)]
mod tests;
