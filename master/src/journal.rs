//! The spool's journal. Every change the master acknowledges is first written here as one
//! record and made durable with a single `fdatasync`; the database (redb) receives the
//! changes in batches at checkpoints. A durable redb commit rewrites several B-tree pages
//! and its header and syncs them (about half a millisecond here); a journal record is one
//! write into a file whose blocks already exist, so its sync flushes one page.
//!
//! A record is `length (u32) | crc32 (u32) | sequence (u64) | payload`, little-endian,
//! the checksum covering the sequence and the payload. Sequence numbers grow forever;
//! the database remembers the last one it contains. After a checkpoint the journal is
//! written again from its start, over the old records: on recovery, records the database
//! already has are skipped, the following ones are taken while their sequence numbers
//! follow on, and the first torn, stale or corrupt record ends the journal.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

const HEADER: usize = 16;

/// The journal file is filled with zeros up to this size when it is created, so that
/// appending a record does not change the file's size or allocate blocks (which would
/// make every sync write the file system's metadata too).
pub const PREALLOCATED: u64 = 8 << 20;

/// One record, ready to be written.
pub fn encode_record(seq: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + payload.len());
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&checksum(seq, payload).to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(payload);
    out
}

fn checksum(seq: u64, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&seq.to_le_bytes());
    h.update(payload);
    h.finalize()
}

/// The records of `bytes` not yet in a database that holds everything up to `applied`:
/// those following `applied` without a gap, up to the first record that is torn,
/// corrupt or out of sequence. Returns them with the offset just past the last record
/// read (where the next record goes).
pub fn replayable(bytes: &[u8], applied: u64) -> (Vec<(u64, &[u8])>, usize) {
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut end = 0usize;
    while let Some((seq, payload, next)) = record_at(bytes, at) {
        if seq <= applied && out.is_empty() {
            // Already in the database (a record from before the last checkpoint).
            at = next;
            continue;
        }
        if seq != applied + 1 + out.len() as u64 {
            break;
        }
        out.push((seq, payload));
        at = next;
        end = next;
    }
    (out, end)
}

fn record_at(bytes: &[u8], at: usize) -> Option<(u64, &[u8], usize)> {
    let header = bytes.get(at..at.checked_add(HEADER)?)?;
    let len = u32::from_le_bytes(header[0..4].try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(header[4..8].try_into().ok()?);
    let seq = u64::from_le_bytes(header[8..16].try_into().ok()?);
    if len == 0 {
        return None;
    }
    let start = at + HEADER;
    let payload = bytes.get(start..start.checked_add(len)?)?;
    (checksum(seq, payload) == crc).then_some((seq, payload, start + len))
}

/// A record read back: its sequence number and payload.
pub type Record = (u64, Vec<u8>);

/// The journal file, open for appending records.
pub struct Journal {
    file: File,
    /// Where the next record goes.
    offset: u64,
    /// The sequence number of the next record.
    next_seq: u64,
}

impl Journal {
    /// Open (or create) the journal at `path` for a database holding every record up to
    /// `applied`; returns the journal and the records to apply, in order.
    pub fn open(path: &Path, applied: u64) -> std::io::Result<(Journal, Vec<Record>)> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let (records, end) = replayable(&bytes, applied);
        let replay: Vec<(u64, Vec<u8>)> =
            records.into_iter().map(|(s, p)| (s, p.to_vec())).collect();
        let next_seq = replay.last().map_or(applied, |(s, _)| *s) + 1;
        if (bytes.len() as u64) < PREALLOCATED {
            let zeros = vec![0u8; 1 << 20];
            let mut len = bytes.len() as u64;
            while len < PREALLOCATED {
                let n = (PREALLOCATED - len).min(zeros.len() as u64) as usize;
                file.write_all_at(&zeros[..n], len)?;
                len += n as u64;
            }
            file.sync_all()?;
        }
        Ok((
            Journal {
                file,
                offset: end as u64,
                next_seq,
            },
            replay,
        ))
    }

    /// Write one record durably; returns its sequence number. A record that could not
    /// be written is overwritten by the next one (same place, same number).
    pub fn append(&mut self, payload: &[u8]) -> std::io::Result<u64> {
        let seq = self.next_seq;
        let record = encode_record(seq, payload);
        self.file.write_all_at(&record, self.offset)?;
        self.file.sync_data()?;
        self.offset += record.len() as u64;
        self.next_seq += 1;
        Ok(seq)
    }

    /// The sequence number of the last record written (0 if none ever was).
    pub fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }

    /// Bytes of records since the last checkpoint.
    pub fn len(&self) -> u64 {
        self.offset
    }

    /// The database now holds every record: the next one goes to the start again.
    pub fn restart(&mut self) {
        self.offset = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn journal_of(records: &[(u64, &[u8])]) -> Vec<u8> {
        records
            .iter()
            .flat_map(|(s, p)| encode_record(*s, p))
            .collect()
    }

    #[test]
    fn records_after_the_applied_one_are_replayed_in_order() {
        let bytes = journal_of(&[(1, b"a"), (2, b"bb"), (3, b"ccc")]);
        let (r, end) = replayable(&bytes, 1);
        assert_eq!(r, vec![(2, &b"bb"[..]), (3, &b"ccc"[..])]);
        assert_eq!(end, bytes.len());
        let (r, _) = replayable(&bytes, 3);
        assert!(r.is_empty());
    }

    #[test]
    fn a_torn_or_corrupt_record_ends_the_journal() {
        let mut bytes = journal_of(&[(1, b"a"), (2, b"bb"), (3, b"ccc")]);
        let first = encode_record(1, b"a").len();
        let second = encode_record(2, b"bb").len();
        // Torn: the third record's payload is cut short.
        let torn = &bytes[..bytes.len() - 1];
        assert_eq!(replayable(torn, 0).0.len(), 2);
        // Corrupt: a flipped bit in the second record's payload.
        bytes[first + HEADER] ^= 1;
        let (r, end) = replayable(&bytes, 0);
        assert_eq!(r, vec![(1, &b"a"[..])]);
        assert_eq!(end, first);
        assert!(end < first + second);
    }

    #[test]
    fn old_records_behind_new_ones_are_not_replayed() {
        // Checkpoint at 5, then records 6 and 7 written over the start of an older
        // generation (records 1..=5).
        let old = journal_of(&[
            (1, b"one"),
            (2, b"two"),
            (3, b"three"),
            (4, b"4"),
            (5, b"5"),
        ]);
        let new = journal_of(&[(6, b"six"), (7, b"seven")]);
        let mut bytes = old.clone();
        bytes[..new.len()].copy_from_slice(&new);
        let (r, _) = replayable(&bytes, 5);
        assert_eq!(r, vec![(6, &b"six"[..]), (7, &b"seven"[..])]);
        // Nothing written since the checkpoint: the old generation is skipped entirely.
        let (r, end) = replayable(&old, 5);
        assert!(r.is_empty());
        assert_eq!(end, 0);
    }

    #[test]
    fn a_gap_in_the_sequence_ends_the_journal() {
        let bytes = journal_of(&[(4, b"a"), (6, b"b")]);
        let (r, _) = replayable(&bytes, 3);
        assert_eq!(r, vec![(4, &b"a"[..])]);
    }

    #[test]
    fn the_file_survives_reopening_and_restarts_after_a_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spool.journal");
        {
            let (mut j, replay) = Journal::open(&path, 0).unwrap();
            assert!(replay.is_empty());
            assert_eq!(j.append(b"first").unwrap(), 1);
            assert_eq!(j.append(b"second").unwrap(), 2);
        }
        assert_eq!(std::fs::metadata(&path).unwrap().len(), PREALLOCATED);
        {
            let (mut j, replay) = Journal::open(&path, 0).unwrap();
            assert_eq!(
                replay,
                vec![(1, b"first".to_vec()), (2, b"second".to_vec())]
            );
            // The database took both (a checkpoint): the journal starts over.
            j.restart();
            assert_eq!(j.append(b"third").unwrap(), 3);
        }
        let (j, replay) = Journal::open(&path, 2).unwrap();
        assert_eq!(replay, vec![(3, b"third".to_vec())]);
        assert_eq!(j.last_seq(), 3);
    }

    proptest! {
        // Whatever a crash leaves (a record cut anywhere, garbage after it), what is
        // replayed is exactly a prefix of what was written after the checkpoint.
        #[test]
        fn replay_is_a_prefix_of_what_was_written(
            payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..40), 0..12),
            applied in 0u64..4,
            cut in any::<prop::sample::Index>(),
            garbage in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let written: Vec<(u64, Vec<u8>)> = payloads
                .iter()
                .enumerate()
                .map(|(i, p)| (applied + 1 + i as u64, p.clone()))
                .collect();
            let mut bytes: Vec<u8> = written.iter().flat_map(|(s, p)| encode_record(*s, p)).collect();
            let keep = cut.index(bytes.len() + 1);
            bytes.truncate(keep);
            bytes.extend_from_slice(&garbage);
            let (r, _) = replayable(&bytes, applied);
            prop_assert!(r.len() <= written.len());
            for ((s, p), (ws, wp)) in r.iter().zip(&written) {
                prop_assert_eq!(s, ws);
                prop_assert_eq!(*p, wp.as_slice());
            }
        }
    }
}
