//! The spool's journal. Every change the master acknowledges is first written here as one
//! record and made durable with a single `fdatasync`; the database (redb) receives the
//! changes in batches at checkpoints. A durable redb commit rewrites several B-tree pages
//! and its header and syncs them (about half a millisecond here); a journal record is one
//! write into a file whose blocks already exist, so its sync flushes one page.
//!
//! The file starts with a header naming the spool it belongs to (a random id the
//! database holds too) and its generation (the database's count of checkpoints). Then
//! come records, `length (u32) | crc32 (u32) | sequence (u64) | payload`, little-endian,
//! the checksum covering the sequence and the payload. Sequence numbers grow forever; the
//! database remembers the last one it contains. After a checkpoint the header is
//! rewritten with the next generation and records are written again from the start,
//! over the old ones.
//!
//! Reading it back ([`scan`]) takes the records that follow the database's last one, in
//! sequence, and tells apart how it ends: cleanly (zeros, or an older record); with a
//! torn last record (bytes that are no record and nothing valid after them: a write a
//! crash cut short, never acknowledged); or with damage before the end (bytes that are
//! no record, followed by records of later changes: those in between are lost).

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// A record's header: length, checksum, sequence.
const HEADER: usize = 16;

/// The file's header: magic, spool id, generation, checksum.
pub const FILE_HEADER: usize = 32;
const MAGIC: &[u8; 8] = b"GNTYJRN2";

/// The journal file is filled with zeros up to this size when it is created, so that
/// appending a record does not change the file's size or allocate blocks (which would
/// make every sync write the file system's metadata too).
pub const PREALLOCATED: u64 = 8 << 20;

/// Whose journal this is, and of which checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub spool_id: u64,
    pub generation: u64,
}

pub fn encode_header(h: Header) -> [u8; FILE_HEADER] {
    let mut out = [0u8; FILE_HEADER];
    out[..8].copy_from_slice(MAGIC);
    out[8..16].copy_from_slice(&h.spool_id.to_le_bytes());
    out[16..24].copy_from_slice(&h.generation.to_le_bytes());
    let crc = crc32fast::hash(&out[..24]);
    out[24..28].copy_from_slice(&crc.to_le_bytes());
    out
}

/// What the start of a journal file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderRead {
    /// No header: an empty file, or one of zeros.
    Empty,
    /// Bytes that are no header of this format.
    Unreadable,
    Found(Header),
}

pub fn decode_header(bytes: &[u8]) -> HeaderRead {
    let Some(h) = bytes.get(..FILE_HEADER) else {
        return if bytes.iter().all(|b| *b == 0) {
            HeaderRead::Empty
        } else {
            HeaderRead::Unreadable
        };
    };
    if h.iter().all(|b| *b == 0) {
        return HeaderRead::Empty;
    }
    let word = |at: usize| u64::from_le_bytes(h[at..at + 8].try_into().unwrap_or([0; 8]));
    let crc = u32::from_le_bytes(h[24..28].try_into().unwrap_or([0; 4]));
    if &h[..8] != MAGIC || crc32fast::hash(&h[..24]) != crc {
        return HeaderRead::Unreadable;
    }
    HeaderRead::Found(Header {
        spool_id: word(8),
        generation: word(16),
    })
}

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

/// The valid record at `at`: sequence, payload, and where the next one starts.
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

/// Nothing was ever written at `at` (the preallocated zeros, or the end of the file).
fn blank_at(bytes: &[u8], at: usize) -> bool {
    bytes
        .get(at..)
        .is_none_or(|rest| rest.iter().take(HEADER).all(|b| *b == 0))
}

/// Bytes that are no record, where a record was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    pub offset: usize,
    /// The sequence number its header claims, if the header looks like one.
    pub claimed_seq: Option<u64>,
    /// What of its payload is there (for naming the change, when it decodes).
    pub payload: Vec<u8>,
}

/// What a journal holds beyond a database that has every record up to `applied`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scan {
    /// The records to apply, in sequence from `applied + 1`.
    pub records: Vec<(u64, Vec<u8>)>,
    /// Where the next record goes.
    pub end: usize,
    /// The journal ends with bytes that are no record and nothing valid follows: the
    /// last write, cut short by a crash (never acknowledged).
    pub torn: Option<Unreadable>,
    /// Damage before the end: bytes that are no record, then records of later changes.
    /// The changes `lost.0 ..= lost.1` (sequence numbers) are gone.
    pub lost: Option<(u64, u64, Unreadable)>,
    /// The valid records after the damage, in sequence (applied only in recovery).
    pub after_loss: Vec<(u64, Vec<u8>)>,
    /// Unreadable bytes where only changes the database has already were (no loss).
    pub skipped: Vec<usize>,
}

/// The first valid record at or after `from` with a sequence number of at least
/// `expected` (and not absurdly beyond it).
fn next_valid(bytes: &[u8], from: usize, expected: u64) -> Option<(usize, u64)> {
    let last = bytes.len().checked_sub(HEADER)?;
    (from..=last).find_map(|p| {
        let seq = u64::from_le_bytes(bytes[p + 8..p + 16].try_into().ok()?);
        if seq < expected || seq - expected > (1 << 32) {
            return None;
        }
        record_at(bytes, p).map(|_| (p, seq))
    })
}

fn unreadable(bytes: &[u8], at: usize) -> Unreadable {
    let header = bytes.get(at..at + HEADER);
    let claimed = header.map(|h| {
        (
            u32::from_le_bytes(h[0..4].try_into().unwrap_or([0; 4])) as usize,
            u64::from_le_bytes(h[8..16].try_into().unwrap_or([0; 8])),
        )
    });
    let payload = claimed
        .map(|(len, _)| {
            let start = at + HEADER;
            let end = start.saturating_add(len).min(bytes.len());
            bytes.get(start..end).unwrap_or(&[]).to_vec()
        })
        .unwrap_or_default();
    Unreadable {
        offset: at,
        claimed_seq: claimed.map(|(_, s)| s),
        payload,
    }
}

/// Read the records of a journal (`bytes`, its header included) for a database holding
/// every record up to `applied`.
pub fn scan(bytes: &[u8], applied: u64) -> Scan {
    let mut out = Scan {
        end: FILE_HEADER,
        ..Scan::default()
    };
    let mut at = FILE_HEADER;
    let mut expected = applied + 1;
    loop {
        match record_at(bytes, at) {
            Some((seq, payload, next)) if seq == expected => {
                out.records.push((seq, payload.to_vec()));
                at = next;
                out.end = next;
                expected += 1;
            }
            // An older record: before the new ones (from before the last checkpoint),
            // skipped; after them, the end.
            Some((seq, _, next)) if seq < expected => {
                if out.records.is_empty() {
                    at = next;
                } else {
                    return out;
                }
            }
            Some((seq, _, _)) => {
                // A later change where the next one should be: those between are lost.
                let lost = Unreadable {
                    offset: at,
                    claimed_seq: Some(seq),
                    payload: Vec::new(),
                };
                out.lost = Some((expected, seq - 1, lost));
                out.after_loss = follow(bytes, at, seq);
                return out;
            }
            None if blank_at(bytes, at) => return out,
            None => match next_valid(bytes, at + 1, expected) {
                // Only a record the database has was damaged: resume.
                Some((p, seq)) if seq == expected => {
                    out.skipped.push(at);
                    at = p;
                }
                Some((p, seq)) => {
                    out.lost = Some((expected, seq - 1, unreadable(bytes, at)));
                    out.after_loss = follow(bytes, p, seq);
                    return out;
                }
                None => {
                    out.torn = Some(unreadable(bytes, at));
                    return out;
                }
            },
        }
    }
}

/// The valid records from `at` on, in sequence from `seq`.
fn follow(bytes: &[u8], mut at: usize, mut seq: u64) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some((s, payload, next)) = record_at(bytes, at) {
        if s != seq {
            break;
        }
        out.push((s, payload.to_vec()));
        at = next;
        seq += 1;
    }
    out
}

/// Read a journal file whole (an absent one reads as no bytes).
pub fn read(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    match File::open(path) {
        Ok(mut f) => {
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes)?;
            Ok(Some(bytes))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The journal file, open for appending records.
pub struct Journal {
    file: File,
    /// Where the next record goes.
    offset: u64,
    /// The sequence number of the next record.
    next_seq: u64,
    header: Header,
}

impl Journal {
    /// Open (or create) the journal at `path` to append after `end` (from [`scan`]),
    /// the next record numbered `next_seq`; a header other than `header` is replaced
    /// (and the records start over).
    pub fn open(
        path: &Path,
        header: Header,
        end: usize,
        next_seq: u64,
    ) -> std::io::Result<Journal> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)?;
        // Every job's environment passes through it: the master's user's alone, also
        // when an earlier version created it readable by all.
        file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        let mut first = vec![0u8; FILE_HEADER];
        let got = file.read_at(&mut first, 0).unwrap_or(0);
        let keep = got == FILE_HEADER && decode_header(&first) == HeaderRead::Found(header);
        let len = file.metadata()?.len();
        if len < PREALLOCATED {
            let zeros = vec![0u8; 1 << 20];
            let mut at = len;
            while at < PREALLOCATED {
                let n = (PREALLOCATED - at).min(zeros.len() as u64) as usize;
                file.write_all_at(&zeros[..n], at)?;
                at += n as u64;
            }
        }
        let mut journal = Journal {
            file,
            offset: end.max(FILE_HEADER) as u64,
            next_seq,
            header,
        };
        if keep {
            journal.file.sync_all()?;
        } else {
            journal.restart(header.generation)?;
        }
        Ok(journal)
    }

    /// Write one record durably; returns its sequence number. A record that could not
    /// be written is overwritten by the next one (same place, same number). The record
    /// is followed by an empty record header (the next record overwrites it), so that
    /// what older records left behind it never reads as a torn write.
    pub fn append(&mut self, payload: &[u8]) -> std::io::Result<u64> {
        let seq = self.next_seq;
        let mut record = encode_record(seq, payload);
        let len = record.len();
        record.extend_from_slice(&[0u8; HEADER]);
        self.file.write_all_at(&record, self.offset)?;
        self.file.sync_data()?;
        self.offset += len as u64;
        self.next_seq += 1;
        Ok(seq)
    }

    /// The sequence number of the last record written (0 if none ever was).
    pub fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }

    /// Bytes of records since the last checkpoint.
    pub fn len(&self) -> u64 {
        self.offset - FILE_HEADER as u64
    }

    pub fn header(&self) -> Header {
        self.header
    }

    /// The database holds the records up to some sequence number as of checkpoint
    /// `generation`, and later ones follow: the header says so, the records stay (those
    /// the database holds are skipped when the journal is read).
    pub fn set_generation(&mut self, generation: u64) -> std::io::Result<()> {
        self.header.generation = generation;
        self.file.write_all_at(&encode_header(self.header), 0)?;
        self.file.sync_data()
    }

    /// The database now holds every record, as of checkpoint `generation`: the header
    /// says so, and the next record goes to the start again.
    pub fn restart(&mut self, generation: u64) -> std::io::Result<()> {
        self.header.generation = generation;
        self.file.write_all_at(&encode_header(self.header), 0)?;
        // The first record slot is cleared, so that no older record reads as new.
        self.file.write_all_at(&[0u8; HEADER], FILE_HEADER as u64)?;
        self.file.sync_data()?;
        self.offset = FILE_HEADER as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const H: Header = Header {
        spool_id: 7,
        generation: 3,
    };

    fn journal_of(records: &[(u64, &[u8])]) -> Vec<u8> {
        let mut out = encode_header(H).to_vec();
        out.extend(records.iter().flat_map(|(s, p)| encode_record(*s, p)));
        out
    }

    fn seqs(r: &[(u64, Vec<u8>)]) -> Vec<u64> {
        r.iter().map(|(s, _)| *s).collect()
    }

    #[test]
    fn headers_round_trip_and_other_bytes_are_not_headers() {
        assert_eq!(decode_header(&encode_header(H)), HeaderRead::Found(H));
        assert_eq!(decode_header(&[]), HeaderRead::Empty);
        assert_eq!(decode_header(&[0u8; 100]), HeaderRead::Empty);
        let mut bad = encode_header(H);
        bad[17] ^= 1;
        assert_eq!(decode_header(&bad), HeaderRead::Unreadable);
        assert_eq!(
            decode_header(b"GNTYJRN1 an old journal"),
            HeaderRead::Unreadable
        );
    }

    #[test]
    fn records_after_the_applied_one_are_replayed_in_order() {
        let bytes = journal_of(&[(1, b"a"), (2, b"bb"), (3, b"ccc")]);
        let s = scan(&bytes, 1);
        assert_eq!(seqs(&s.records), vec![2, 3]);
        assert_eq!(s.end, bytes.len());
        assert_eq!((s.torn.is_none(), s.lost.is_none()), (true, true));
        assert!(scan(&bytes, 3).records.is_empty());
    }

    #[test]
    fn a_torn_last_record_is_told_apart_from_damage_before_the_end() {
        let bytes = journal_of(&[(1, b"a"), (2, b"bb"), (3, b"ccc")]);
        let first = FILE_HEADER + encode_record(1, b"a").len();
        // Torn: the last record's payload is cut short (the rest of the file zeros).
        let mut torn = bytes[..bytes.len() - 1].to_vec();
        torn.extend_from_slice(&[0u8; 64]);
        let s = scan(&torn, 0);
        assert_eq!(seqs(&s.records), vec![1, 2]);
        let t = s.torn.unwrap();
        assert_eq!(t.claimed_seq, Some(3));
        assert!(t.payload.starts_with(b"cc"));
        assert!(s.lost.is_none());
        // Damage: a flipped bit in the second record, the third still there after it.
        let mut damaged = bytes.clone();
        damaged[first + HEADER] ^= 1;
        let s = scan(&damaged, 0);
        assert_eq!(seqs(&s.records), vec![1]);
        let (from, to, at) = s.lost.unwrap();
        assert_eq!((from, to, at.offset), (2, 2, first));
        assert_eq!(seqs(&s.after_loss), vec![3]);
        assert!(s.torn.is_none());
        // Damage in a length field: found all the same.
        let mut damaged = bytes.clone();
        damaged[first] ^= 0x40;
        let s = scan(&damaged, 0);
        assert_eq!(s.lost.as_ref().map(|l| (l.0, l.1)), Some((2, 2)));
    }

    #[test]
    fn damage_where_only_applied_changes_were_loses_nothing() {
        // Records 1..=3 are in the database; 4 and 5 are new.
        let mut bytes = journal_of(&[
            (1, b"one"),
            (2, b"two"),
            (3, b"three"),
            (4, b"4"),
            (5, b"5"),
        ]);
        bytes[FILE_HEADER + HEADER + 1] ^= 1; // inside record 1
        let s = scan(&bytes, 3);
        assert_eq!(seqs(&s.records), vec![4, 5]);
        assert_eq!(s.skipped, vec![FILE_HEADER]);
        assert!(s.lost.is_none() && s.torn.is_none());
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
        // As appended: each record followed by an empty record header.
        let mut new = journal_of(&[(6, b"six"), (7, b"seven")]);
        new.extend_from_slice(&[0u8; HEADER]);
        let mut bytes = old.clone();
        bytes[..new.len()].copy_from_slice(&new);
        let s = scan(&bytes, 5);
        assert_eq!(seqs(&s.records), vec![6, 7]);
        assert!(s.lost.is_none() && s.torn.is_none());
        // Nothing written since the checkpoint: the old generation is skipped entirely.
        let s = scan(&old, 5);
        assert!(s.records.is_empty());
        assert_eq!(s.end, FILE_HEADER);
    }

    #[test]
    fn a_later_change_where_the_next_should_be_is_a_loss() {
        let bytes = journal_of(&[(4, b"a"), (6, b"b")]);
        let s = scan(&bytes, 3);
        assert_eq!(seqs(&s.records), vec![4]);
        assert_eq!(s.lost.map(|l| (l.0, l.1)), Some((5, 5)));
        assert_eq!(seqs(&s.after_loss), vec![6]);
    }

    #[test]
    fn the_file_survives_reopening_and_restarts_after_a_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spool.journal");
        assert_eq!(read(&path).unwrap(), None);
        {
            let mut j = Journal::open(&path, H, 0, 1).unwrap();
            assert_eq!(j.append(b"first").unwrap(), 1);
            assert_eq!(j.append(b"second").unwrap(), 2);
        }
        assert_eq!(std::fs::metadata(&path).unwrap().len(), PREALLOCATED);
        let bytes = read(&path).unwrap().unwrap();
        assert_eq!(decode_header(&bytes), HeaderRead::Found(H));
        let s = scan(&bytes, 0);
        assert_eq!(
            s.records,
            vec![(1, b"first".to_vec()), (2, b"second".to_vec())]
        );
        {
            let mut j = Journal::open(&path, H, s.end, 3).unwrap();
            // The database took both (a checkpoint): the journal starts over.
            j.restart(4).unwrap();
            assert_eq!(j.append(b"third").unwrap(), 3);
        }
        let bytes = read(&path).unwrap().unwrap();
        assert_eq!(
            decode_header(&bytes),
            HeaderRead::Found(Header {
                spool_id: 7,
                generation: 4
            })
        );
        let s = scan(&bytes, 2);
        assert_eq!(s.records, vec![(3, b"third".to_vec())]);
    }

    proptest! {
        // Whatever a crash leaves (a record cut anywhere, zeros after it), what is
        // replayed is exactly a prefix of what was written after the checkpoint, and a
        // cut is never taken for damage before the end.
        #[test]
        fn a_cut_journal_replays_a_prefix_and_reports_no_loss(
            payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..40), 0..12),
            applied in 0u64..4,
            cut in any::<prop::sample::Index>(),
        ) {
            let written: Vec<(u64, Vec<u8>)> = payloads
                .iter()
                .enumerate()
                .map(|(i, p)| (applied + 1 + i as u64, p.clone()))
                .collect();
            let mut bytes = encode_header(H).to_vec();
            bytes.extend(written.iter().flat_map(|(s, p)| encode_record(*s, p)));
            let keep = FILE_HEADER + cut.index(bytes.len() - FILE_HEADER + 1);
            bytes.truncate(keep);
            bytes.extend_from_slice(&[0u8; 64]);
            let s = scan(&bytes, applied);
            prop_assert!(s.lost.is_none());
            prop_assert!(s.records.len() <= written.len());
            for ((s, p), (ws, wp)) in s.records.iter().zip(&written) {
                prop_assert_eq!(s, ws);
                prop_assert_eq!(p, wp);
            }
        }

        // A changed byte anywhere among the new records never goes unnoticed: either
        // every record still reads, or the scan reports a loss or a torn end.
        #[test]
        fn a_changed_byte_is_never_silent(
            payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..40), 1..12),
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let mut bytes = encode_header(H).to_vec();
            for (i, p) in payloads.iter().enumerate() {
                bytes.extend(encode_record(1 + i as u64, p));
            }
            let body = bytes.len() - FILE_HEADER;
            let at = FILE_HEADER + at.index(body);
            bytes[at] ^= flip;
            bytes.extend_from_slice(&[0u8; 64]);
            let s = scan(&bytes, 0);
            let silent = s.records.len() < payloads.len() && s.lost.is_none() && s.torn.is_none();
            prop_assert!(!silent, "{} of {} records, no loss reported", s.records.len(), payloads.len());
        }
    }
}
