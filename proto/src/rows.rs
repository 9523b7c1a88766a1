//! `qstat`'s rows on the wire without a string per field: the master encodes them
//! borrowed from its job table ([`JobRow`]), the client decodes them borrowed from the
//! answer ([`JobViewRef`]); both are byte for byte the [`JobView`] they stand for.

use serde::{Deserialize, Serialize};

use crate::{JobState, JobView};

/// A [`JobView`] decoded in place: its strings borrowed from the answer's bytes, so a
/// client listing tens of thousands of rows makes no string per field (see
/// [`crate::decode_jobs_answer`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct JobViewRef<'a> {
    pub job_id: u64,
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
    pub job_id: u64,
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
    One(u32),
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
                RowTasks::One(123456),
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
                job_id: 300 + n as u64,
                name: "sleep",
                owner: "gtbench",
                priority: -(n as i32) * 100,
                state: JobState::Pending { held: n == 2 },
                submit_time: 1_700_000_000,
                start_time: queue.map(|_| 1_700_000_100),
                queue,
                slots: 1 + n as u32,
                tasks,
                hard_resources,
                hold_jids,
                is_array: n > 0,
                restarted: n == 1,
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
