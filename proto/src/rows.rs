//! `qstat`'s rows on the wire without a string per field: the master encodes them
//! borrowed from its job table ([`JobRow`]), the client decodes them borrowed from the
//! answer ([`JobViewRef`]); both are byte for byte the [`JobView`] they stand for.

use serde::{Deserialize, Serialize};

use crate::{JobId, JobState, JobView, TaskId};

/// A [`JobView`] decoded in place: its strings borrowed from the answer's bytes, so a
/// client listing tens of thousands of rows makes no string per field (see
/// [`crate::decode_jobs_answer`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct JobViewRef<'a> {
    pub job_id: JobId,
    pub name: &'a str,
    pub owner: &'a str,
    pub priority: i32,
    pub state: JobState,
    pub submit_time: i64,
    pub start_time: Option<i64>,
    pub queue: Option<&'a str>,
    pub slots: u32,
    pub tasks: &'a str,
    #[serde(borrow)]
    pub hard_resources: Vec<(&'a str, &'a str)>,
    #[serde(borrow)]
    pub hold_jids: Vec<&'a str>,
    pub is_array: bool,
    pub restarted: bool,
    pub prio: i64,
}

impl JobViewRef<'_> {
    /// The row's state as `qstat` prints it.
    pub fn state_letters(&self) -> &'static str {
        self.state.letters_of_row(self.restarted)
    }
}

/// A [`JobView`] made of what the master's job table holds, borrowed: it encodes
/// exactly as the `JobView` it stands for, so that a listing of tens of thousands of
/// rows is encoded without copying each job's strings into a row first (see
/// [`crate::encode_jobs_answer`]).
#[derive(Debug, Clone, Serialize)]
pub struct JobRow<'a> {
    pub job_id: JobId,
    pub name: &'a str,
    pub owner: &'a str,
    pub priority: i32,
    pub state: JobState,
    pub submit_time: i64,
    pub start_time: Option<i64>,
    pub queue: Option<QueueAt<'a>>,
    pub slots: u32,
    pub tasks: RowTasks,
    pub hard_resources: &'a [(String, String)],
    pub hold_jids: &'a [String],
    pub is_array: bool,
    pub restarted: bool,
    pub prio: i64,
}

/// A queue instance as a row names it, `queue@host`; encoded as that string.
#[derive(Debug, Clone, Copy)]
pub struct QueueAt<'a> {
    pub queue: &'a str,
    pub host: &'a str,
}

impl std::fmt::Display for QueueAt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.queue, self.host)
    }
}

impl Serialize for QueueAt<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A row's task ids as [`JobView::tasks`] writes them; encoded as that string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowTasks {
    /// A job that is not an array.
    None,
    /// One task of an array.
    One(TaskId),
    /// Task ranges (`2-5:1`).
    Ranges(String),
}

impl std::fmt::Display for RowTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowTasks::None => Ok(()),
            RowTasks::One(t) => write!(f, "{t}"),
            RowTasks::Ranges(r) => f.write_str(r),
        }
    }
}

impl Serialize for RowTasks {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RowTasks::None => s.serialize_str(""),
            RowTasks::One(_) => s.collect_str(self),
            RowTasks::Ranges(r) => s.serialize_str(r),
        }
    }
}

impl JobRow<'_> {
    /// The owned row it stands for.
    pub fn to_view(&self) -> JobView {
        JobView {
            job_id: self.job_id,
            name: self.name.to_string(),
            owner: self.owner.to_string(),
            priority: self.priority,
            state: self.state,
            submit_time: self.submit_time,
            start_time: self.start_time,
            queue: self.queue.map(|q| q.to_string()),
            slots: self.slots,
            tasks: self.tasks.to_string(),
            hard_resources: self.hard_resources.to_vec(),
            hold_jids: self.hold_jids.to_vec(),
            is_array: self.is_array,
            restarted: self.restarted,
            prio: self.prio,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A borrowed row encodes byte for byte as the owned row it stands for, whatever
    /// its queue and tasks.
    #[test]
    fn a_job_row_encodes_as_its_job_view() {
        let resources = [("h_rt".to_string(), "60".to_string())];
        let holds = ["7".to_string(), "build".to_string()];
        let rows = [
            (None, RowTasks::None, &resources[..0], &holds[..0]),
            (
                Some(QueueAt {
                    queue: "all.q",
                    host: "node0001",
                }),
                RowTasks::One(TaskId(123456)),
                &resources[..],
                &holds[..],
            ),
            (
                None,
                RowTasks::Ranges("2-5:1,9".into()),
                &resources[..],
                &holds[..1],
            ),
        ];
        for (n, (queue, tasks, hard_resources, hold_jids)) in rows.into_iter().enumerate() {
            let row = JobRow {
                job_id: JobId(300 + n as u64),
                name: "sleep",
                owner: "gtbench",
                priority: -(n as i32) * 100,
                state: JobState::pending(n == 2),
                submit_time: 1_700_000_000,
                start_time: queue.map(|_| 1_700_000_100),
                queue,
                slots: 1 + n as u32,
                tasks,
                hard_resources,
                hold_jids,
                is_array: n > 0,
                restarted: n == 1,
                prio: 55_500 - n as i64,
            };
            let view = row.to_view();
            assert_eq!(
                postcard::to_stdvec(&row).unwrap(),
                postcard::to_stdvec(&view).unwrap(),
                "{view:?}"
            );
        }
    }
}

/// Reads a [`JobViewRef`] off postcard's bytes field by field, as the derived
/// deserializer would, without serde's machinery between: a listing of tens of
/// thousands of rows spent most of its decoding there (tested against the derived one).
struct RowReader<'a> {
    bytes: &'a [u8],
}

type Read<T> = Result<T, postcard::Error>;

impl<'a> RowReader<'a> {
    fn byte(&mut self) -> Read<u8> {
        let (&b, rest) = self
            .bytes
            .split_first()
            .ok_or(postcard::Error::DeserializeUnexpectedEnd)?;
        self.bytes = rest;
        Ok(b)
    }

    /// An unsigned varint of at most `max_bytes` bytes.
    fn varint(&mut self, max_bytes: u32) -> Read<u64> {
        let mut value = 0u64;
        for n in 0..max_bytes {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << (7 * n);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(postcard::Error::DeserializeBadVarint)
    }

    fn u64(&mut self) -> Read<u64> {
        self.varint(10)
    }

    fn u32(&mut self) -> Read<u32> {
        u32::try_from(self.varint(5)?).map_err(|_| postcard::Error::DeserializeBadVarint)
    }

    fn i64(&mut self) -> Read<i64> {
        let z = self.u64()?;
        Ok((z >> 1) as i64 ^ -((z & 1) as i64))
    }

    fn i32(&mut self) -> Read<i32> {
        let z = self.u32()?;
        Ok((z >> 1) as i32 ^ -((z & 1) as i32))
    }

    fn bool(&mut self) -> Read<bool> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(postcard::Error::DeserializeBadBool),
        }
    }

    fn len(&mut self) -> Read<usize> {
        usize::try_from(self.u64()?).map_err(|_| postcard::Error::DeserializeBadVarint)
    }

    /// A string's bytes, unchecked.
    fn string_bytes(&mut self) -> Read<&'a [u8]> {
        let len = self.len()?;
        if len > self.bytes.len() {
            return Err(postcard::Error::DeserializeUnexpectedEnd);
        }
        let (s, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        Ok(s)
    }

    fn str(&mut self) -> Read<&'a str> {
        std::str::from_utf8(self.string_bytes()?).map_err(|_| postcard::Error::DeserializeBadUtf8)
    }

    fn option<T>(&mut self, some: impl FnOnce(&mut Self) -> Read<T>) -> Read<Option<T>> {
        match self.byte()? {
            0 => Ok(None),
            1 => some(self).map(Some),
            _ => Err(postcard::Error::DeserializeBadOption),
        }
    }

    fn state(&mut self) -> Read<JobState> {
        Ok(match self.u32()? {
            0 => JobState::Pending {
                holds: crate::Holds(self.byte()?),
            },
            1 => JobState::Error,
            2 => JobState::Transferring,
            3 => JobState::Running,
            4 => JobState::Suspended,
            5 => JobState::QueueSuspended,
            6 => JobState::Deleting,
            7 => JobState::Zombie,
            _ => return Err(postcard::Error::DeserializeBadEnum),
        })
    }

    fn row(&mut self) -> Read<JobViewRef<'a>> {
        Ok(JobViewRef {
            job_id: JobId(self.u64()?),
            name: self.str()?,
            owner: self.str()?,
            priority: self.i32()?,
            state: self.state()?,
            submit_time: self.i64()?,
            start_time: self.option(Self::i64)?,
            queue: self.option(Self::str)?,
            slots: self.u32()?,
            tasks: self.str()?,
            hard_resources: {
                let n = self.len()?;
                let mut pairs = Vec::with_capacity(n.min(self.bytes.len()));
                for _ in 0..n {
                    pairs.push((self.str()?, self.str()?));
                }
                pairs
            },
            hold_jids: {
                let n = self.len()?;
                let mut refs = Vec::with_capacity(n.min(self.bytes.len()));
                for _ in 0..n {
                    refs.push(self.str()?);
                }
                refs
            },
            is_array: self.bool()?,
            restarted: self.bool()?,
            prio: self.i64()?,
        })
    }
}

impl<'a> JobViewRef<'a> {
    /// The row at the start of `bytes`, and the bytes after it.
    pub fn take_from(bytes: &'a [u8]) -> Result<(JobViewRef<'a>, &'a [u8]), postcard::Error> {
        let mut r = RowReader { bytes };
        let row = r.row()?;
        Ok((row, r.bytes))
    }
}

/// One line of `qstat`'s default listing as the master writes it for a client: the
/// columns before the time and those after it, as `gantry_common::joblines` writes
/// them, the time (seconds since the epoch) for the client to write in its own zone,
/// and the row's state for the client's `-s` to choose by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobLine {
    pub state: JobState,
    pub head: String,
    pub when: i64,
    pub tail: String,
}

/// A [`JobLine`] borrowed from the master's own strings: encodes exactly as the
/// `JobLine` it stands for (see [`crate::encode_job_line`]).
#[derive(Debug, Clone, Serialize)]
pub struct JobLineOut<'a> {
    pub state: JobState,
    pub head: &'a str,
    pub when: i64,
    pub tail: &'a str,
}

/// A [`JobLine`] decoded in place: its columns are the answer's bytes, written out as
/// they are (the master made them of strings), with no check or copy in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobLineRef<'a> {
    pub state: JobState,
    pub head: &'a [u8],
    pub when: i64,
    pub tail: &'a [u8],
}

impl<'a> JobLineRef<'a> {
    /// The line at the start of `bytes`, and the bytes after it.
    pub fn take_from(bytes: &'a [u8]) -> Result<(JobLineRef<'a>, &'a [u8]), postcard::Error> {
        let mut r = RowReader { bytes };
        let line = JobLineRef {
            state: r.state()?,
            head: r.string_bytes()?,
            when: r.i64()?,
            tail: r.string_bytes()?,
        };
        Ok((line, r.bytes))
    }
}

#[cfg(test)]
mod reader_tests {
    use super::*;
    use proptest::prelude::*;

    fn state() -> impl Strategy<Value = JobState> {
        prop_oneof![
            any::<u8>().prop_map(|b| JobState::Pending {
                holds: crate::Holds(b)
            }),
            Just(JobState::Error),
            Just(JobState::Transferring),
            Just(JobState::Running),
            Just(JobState::Suspended),
            Just(JobState::QueueSuspended),
            Just(JobState::Deleting),
            Just(JobState::Zombie),
        ]
    }

    fn view() -> impl Strategy<Value = JobView> {
        (
            (
                any::<u64>(),
                ".{0,12}",
                "[a-z]{0,9}",
                any::<i32>(),
                state(),
                any::<i64>(),
            ),
            (
                proptest::option::of(any::<i64>()),
                proptest::option::of("[a-z.@0-9]{0,40}"),
                any::<u32>(),
                "[0-9:,-]{0,20}",
                proptest::collection::vec((".{0,6}", ".{0,6}"), 0..3),
                proptest::collection::vec(".{0,6}", 0..3),
                any::<bool>(),
                any::<bool>(),
                any::<i64>(),
            ),
        )
            .prop_map(
                |((job_id, name, owner, priority, state, submit_time), rest)| {
                    let (
                        start_time,
                        queue,
                        slots,
                        tasks,
                        hard_resources,
                        hold_jids,
                        is_array,
                        restarted,
                        prio,
                    ) = rest;
                    JobView {
                        job_id: JobId(job_id),
                        name,
                        owner,
                        priority,
                        state,
                        submit_time,
                        start_time,
                        queue,
                        slots,
                        tasks,
                        hard_resources,
                        hold_jids,
                        is_array,
                        restarted,
                        prio,
                    }
                },
            )
    }

    proptest! {
        /// The reader decodes what the derived deserializer decodes, leaves the same
        /// bytes after it, and refuses where it refuses (any cut of a row).
        #[test]
        fn the_row_reader_reads_what_serde_reads(v in view(), tail in proptest::collection::vec(any::<u8>(), 0..4), cut in any::<prop::sample::Index>()) {
            let mut bytes = crate::encode(&v).unwrap();
            let whole = bytes.len();
            bytes.extend(&tail);
            let derived: (JobViewRef<'_>, &[u8]) = postcard::take_from_bytes(&bytes).unwrap();
            prop_assert_eq!(JobViewRef::take_from(&bytes).unwrap(), derived);
            let cut = cut.index(whole);
            prop_assert!(JobViewRef::take_from(&bytes[..cut]).is_err());
            prop_assert!(postcard::take_from_bytes::<JobViewRef<'_>>(&bytes[..cut]).is_err());
        }

        /// The line reader reads what the derived deserializer reads (the strings as
        /// their bytes), and refuses any cut of a line.
        #[test]
        fn the_line_reader_reads_what_serde_reads(state in state(), head in ".{0,60}", when in any::<i64>(), tail in ".{0,60}", after in proptest::collection::vec(any::<u8>(), 0..4), cut in any::<prop::sample::Index>()) {
            let line = JobLine { state, head, when, tail };
            let mut bytes = crate::encode(&line).unwrap();
            prop_assert_eq!(&bytes, &crate::encode(&JobLineOut { state, head: &line.head, when, tail: &line.tail }).unwrap());
            let whole = bytes.len();
            bytes.extend(&after);
            let (read, rest) = JobLineRef::take_from(&bytes).unwrap();
            prop_assert_eq!(read, JobLineRef { state, head: line.head.as_bytes(), when, tail: line.tail.as_bytes() });
            prop_assert_eq!(rest, &after[..]);
            prop_assert!(JobLineRef::take_from(&bytes[..cut.index(whole)]).is_err());
        }

        /// Bytes that are no row: refused by both, or read alike by both.
        #[test]
        fn any_bytes_are_read_as_serde_reads_them(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let derived = postcard::take_from_bytes::<JobViewRef<'_>>(&bytes).ok();
            prop_assert_eq!(JobViewRef::take_from(&bytes).ok(), derived);
        }
    }
}
