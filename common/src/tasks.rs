//! A job's unfinished tasks: the pending ones as runs of the array's task range, the
//! dispatched (or failed) ones one by one.
//!
//! An array of 100,000 tasks is one run while it waits, so its size does not grow with
//! the array (`qsub -t 1-100000`: a few bytes, not one map entry per task), and the job
//! object the spool rewrites when a task starts or ends stays as small as the tasks
//! that run.

use std::collections::BTreeMap;

use gantry_proto::{Grant, TaskId};
use serde::{Deserialize, Serialize};

/// Where a task is in its life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskState {
    Pending,
    /// Sent to an execd (`t` until it says it started, then `r`).
    Running {
        /// The master queue instance (where the job script runs).
        host: String,
        queue: String,
        start_time: i64,
        /// Every queue instance the task holds slots in, the master queue first.
        grants: Vec<Grant>,
        /// The parallel environment granted (a `-pe` request may name several).
        pe: Option<String>,
    },
    /// `qdel` of a running task: killed, waiting for its report (`dr`).
    Deleting {
        host: String,
        queue: String,
        start_time: i64,
        grants: Vec<Grant>,
        pe: Option<String>,
    },
    /// The task could not be started (its shepherd failed before the job ran): it waits
    /// in error state (`Eqw`) until `qmod -cj` clears it or `qdel` removes it.
    Error {
        reason: String,
    },
}

/// Pending task ids: disjoint runs `first..=last` in ascending order, each holding
/// `first, first + step, ..., last`. Every id is one of the array's (`origin` plus a
/// multiple of `step`), so the runs never interleave. A task put back (a requeue, a
/// cleared error) joins the run it extends, or becomes a run of one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingTasks {
    origin: u32,
    step: u32,
    runs: Vec<(u32, u32)>,
}

impl PendingTasks {
    /// `first, first + step, ...` up to `last` (the last id is the one the step
    /// reaches, as `qsub -t 1-10:4` means 1, 5 and 9).
    pub fn range(first: u32, last: u32, step: u32) -> PendingTasks {
        let step = step.max(1);
        let mut p = PendingTasks {
            origin: first,
            step,
            runs: Vec::new(),
        };
        if first <= last {
            let last = first + (last - first) / step * step;
            p.runs.push((first, last));
        }
        p
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// How many tasks.
    pub fn len(&self) -> u64 {
        self.runs
            .iter()
            .map(|(a, b)| u64::from((b - a) / self.step) + 1)
            .sum()
    }

    /// Whether `t` is one of the array's ids.
    fn of_the_array(&self, t: u32) -> bool {
        t >= self.origin && (t - self.origin).is_multiple_of(self.step)
    }

    /// The run that could hold `t`: the last one starting at or before it.
    fn run_of(&self, t: u32) -> Option<usize> {
        let i = self.runs.partition_point(|r| r.0 <= t);
        i.checked_sub(1).filter(|&i| t <= self.runs[i].1)
    }

    pub fn contains(&self, TaskId(t): TaskId) -> bool {
        self.of_the_array(t) && self.run_of(t).is_some()
    }

    /// Take `t` out; false if it was not pending.
    pub fn remove(&mut self, TaskId(t): TaskId) -> bool {
        let Some(i) = self.run_of(t).filter(|_| self.of_the_array(t)) else {
            return false;
        };
        let (a, b) = self.runs[i];
        match (t == a, t == b) {
            (true, true) => {
                self.runs.remove(i);
            }
            (true, false) => self.runs[i].0 = a + self.step,
            (false, true) => self.runs[i].1 = b - self.step,
            (false, false) => {
                self.runs[i].1 = t - self.step;
                self.runs.insert(i + 1, (t + self.step, b));
            }
        }
        true
    }

    /// Put `t` back; false if it was pending already or is not one of the array's ids.
    pub fn insert(&mut self, TaskId(t): TaskId) -> bool {
        if !self.of_the_array(t) || self.contains(TaskId(t)) {
            return false;
        }
        let i = self.runs.partition_point(|r| r.0 < t);
        let step = self.step;
        // Whether `t` continues the run before it, or the one after starts one step on.
        let joins_before = i > 0 && self.runs[i - 1].1.checked_add(step) == Some(t);
        let joins_after = i < self.runs.len() && t.checked_add(step) == Some(self.runs[i].0);
        match (joins_before, joins_after) {
            (true, true) => {
                self.runs[i - 1].1 = self.runs[i].1;
                self.runs.remove(i);
            }
            (true, false) => self.runs[i - 1].1 = t,
            (false, true) => self.runs[i].0 = t,
            (false, false) => self.runs.insert(i, (t, t)),
        }
        true
    }

    /// Every pending id, ascending.
    pub fn iter(&self) -> impl Iterator<Item = TaskId> + '_ {
        self.runs
            .iter()
            .flat_map(move |&(a, b)| (a..=b).step_by(self.step as usize).map(TaskId))
    }

    /// The lowest pending id.
    pub fn first(&self) -> Option<TaskId> {
        self.runs.first().map(|r| TaskId(r.0))
    }

    /// Take out every pending id in `lo..=hi`; returns them. Works on whole runs, so
    /// that deleting an array of any size costs its number of runs.
    pub fn remove_within(&mut self, TaskId(lo): TaskId, TaskId(hi): TaskId) -> PendingTasks {
        let step = u64::from(self.step);
        let mut removed = PendingTasks {
            origin: self.origin,
            step: self.step,
            runs: Vec::new(),
        };
        let mut kept = Vec::with_capacity(self.runs.len() + 1);
        for &(a, b) in &self.runs {
            let (a64, b64) = (u64::from(a), u64::from(b));
            // The first and last ids of this run inside lo..=hi.
            let from = if lo <= a {
                a64
            } else {
                a64 + (u64::from(lo) - a64).div_ceil(step) * step
            };
            let to = if hi >= b {
                b64
            } else if hi < a {
                kept.push((a, b));
                continue;
            } else {
                a64 + (u64::from(hi) - a64) / step * step
            };
            if from > to {
                kept.push((a, b));
                continue;
            }
            // from and to are ids of the run, so they and their neighbours fit in u32.
            let (from, to) = (from as u32, to as u32);
            if from > a {
                kept.push((a, from - self.step));
            }
            removed.runs.push((from, to));
            if to < b {
                kept.push((to + self.step, b));
            }
        }
        self.runs = kept;
        removed
    }

    /// As `qstat` shows a task list: `1-100000:1`, `3`, `5-9:2,12`, and a run of two
    /// as the two (`1,3`), SGE's format.
    pub fn ranges_text(&self) -> String {
        self.runs
            .iter()
            .map(|&(a, b)| run_text(a, b, self.step))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// One run of task ids as SGE writes it (`range_to_dstring`): `7`, `1,3` (two), or
/// `1-9:2`.
pub fn run_text(start: u32, end: u32, step: u32) -> String {
    if start == end {
        start.to_string()
    } else if start.checked_add(step) == Some(end) {
        format!("{start},{end}")
    } else {
        format!("{start}-{end}:{step}")
    }
}

/// A job's tasks not yet finished.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tasks {
    pending: PendingTasks,
    /// Dispatched (running, being deleted) or in error; never `Pending`.
    placed: BTreeMap<TaskId, TaskState>,
}

/// What `Tasks::get` answers for a pending task.
static PENDING: TaskState = TaskState::Pending;

impl Tasks {
    /// A plain job: task 1, pending.
    pub fn single() -> Tasks {
        Tasks::array(1, 1, 1)
    }

    /// An array's tasks, all pending.
    pub fn array(first: u32, last: u32, step: u32) -> Tasks {
        Tasks {
            pending: PendingTasks::range(first, last, step),
            placed: BTreeMap::new(),
        }
    }

    pub fn get(&self, t: TaskId) -> Option<&TaskState> {
        match self.placed.get(&t) {
            Some(s) => Some(s),
            None => self.pending.contains(t).then_some(&PENDING),
        }
    }

    pub fn contains(&self, t: TaskId) -> bool {
        self.get(t).is_some()
    }

    /// A task that is not pending, to change in place.
    pub fn get_mut(&mut self, t: TaskId) -> Option<&mut TaskState> {
        self.placed.get_mut(&t)
    }

    /// Set a task's state (`Pending` puts it back among the pending ones).
    pub fn insert(&mut self, t: TaskId, state: TaskState) {
        if matches!(state, TaskState::Pending) {
            self.placed.remove(&t);
            self.pending.insert(t);
        } else {
            self.pending.remove(t);
            self.placed.insert(t, state);
        }
    }

    /// Forget a task (it finished or was deleted); its state before, if it had one.
    pub fn remove(&mut self, t: TaskId) -> Option<TaskState> {
        if self.pending.remove(t) {
            return Some(TaskState::Pending);
        }
        self.placed.remove(&t)
    }

    /// No task left: the job is over.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.placed.is_empty()
    }

    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    pub fn pending(&self) -> &PendingTasks {
        &self.pending
    }

    pub fn pending_mut(&mut self) -> &mut PendingTasks {
        &mut self.pending
    }

    /// The tasks that are not pending (dispatched, being deleted, in error), by id.
    pub fn placed(&self) -> impl Iterator<Item = (TaskId, &TaskState)> + '_ {
        self.placed.iter().map(|(t, s)| (*t, s))
    }

    /// The states of the tasks that are not pending.
    pub fn placed_states(&self) -> impl Iterator<Item = &TaskState> + '_ {
        self.placed.values()
    }

    /// Tasks that hold slots now (running, or killed and not yet reported).
    pub fn holding_slots(&self) -> usize {
        self.placed
            .values()
            .filter(|s| matches!(s, TaskState::Running { .. } | TaskState::Deleting { .. }))
            .count()
    }

    /// Is a task in error state (`Eqw`)?
    pub fn has_errors(&self) -> bool {
        self.placed
            .values()
            .any(|s| matches!(s, TaskState::Error { .. }))
    }

    /// Tasks in error state go back to pending (`qmod -cj`); returns how many.
    pub fn clear_errors(&mut self) -> usize {
        let failed: Vec<TaskId> = self
            .placed
            .iter()
            .filter(|(_, s)| matches!(s, TaskState::Error { .. }))
            .map(|(t, _)| *t)
            .collect();
        for t in &failed {
            self.insert(*t, TaskState::Pending);
        }
        failed.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tids(ids: &[u32]) -> Vec<TaskId> {
        ids.iter().copied().map(TaskId).collect()
    }
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn ranges_follow_the_step_and_print_as_qstat_does() {
        for (first, last, step, text, len) in [
            (1, 100_000, 1, "1-100000:1", 100_000),
            (1, 10, 4, "1-9:4", 3),
            (3, 3, 1, "3", 1),
            (2, 3, 5, "2", 1),
            (1, 2, 1, "1,2", 2),
            (1, 3, 2, "1,3", 2),
        ] {
            let p = PendingTasks::range(first, last, step);
            assert_eq!(p.ranges_text(), text);
            assert_eq!(p.len(), len);
            assert_eq!(p.iter().count() as u64, len);
        }
        let mut p = PendingTasks::range(1, 9, 2);
        assert!(p.remove(TaskId(5)));
        assert!(!p.remove(TaskId(5)));
        assert!(!p.remove(TaskId(4)), "4 is not a task of 1-9:2");
        assert_eq!(p.ranges_text(), "1,3,7,9");
        assert!(p.insert(TaskId(5)));
        assert_eq!(p.ranges_text(), "1-9:2");
        assert!(p.remove(TaskId(1)) && p.remove(TaskId(9)));
        assert_eq!(p.ranges_text(), "3-7:2");
        assert_eq!(
            p.remove_within(TaskId(4), TaskId(100))
                .iter()
                .map(TaskId::get)
                .collect::<Vec<_>>(),
            [5, 7]
        );
        assert_eq!(p.ranges_text(), "3");
    }

    #[test]
    fn a_plain_job_is_task_one() {
        let mut t = Tasks::single();
        assert_eq!(t.get(TaskId(1)), Some(&TaskState::Pending));
        assert!(t.has_pending());
        t.insert(TaskId(1), TaskState::Error { reason: "x".into() });
        assert!(!t.has_pending());
        assert_eq!(t.clear_errors(), 1);
        assert_eq!(t.get(TaskId(1)), Some(&TaskState::Pending));
        assert_eq!(t.remove(TaskId(1)), Some(TaskState::Pending));
        assert!(t.is_empty());
    }

    #[test]
    fn a_pending_array_stays_small() {
        let t = Tasks::array(1, 100_000, 1);
        let bytes = gantry_proto::encode(&t).expect("encodes");
        assert!(bytes.len() < 16, "{} bytes", bytes.len());
    }

    #[test]
    fn removing_a_range_costs_runs_not_tasks() {
        let mut p = PendingTasks::range(1, 4_000_000_000, 1);
        let gone = p.remove_within(TaskId(0), TaskId(u32::MAX));
        assert_eq!((gone.len(), p.is_empty()), (4_000_000_000, true));
        let mut p = PendingTasks::range(u32::MAX - 10, u32::MAX, 5);
        assert_eq!(p.ranges_text(), "4294967285-4294967295:5");
        assert_eq!(
            p.remove_within(TaskId(u32::MAX - 1), TaskId(u32::MAX))
                .ranges_text(),
            "4294967295"
        );
        assert_eq!(p.ranges_text(), "4294967285,4294967290");
    }

    proptest! {
        /// Taking out a range of ids leaves what a plain set leaves, and returns the rest.
        #[test]
        fn removing_a_range_matches_a_set(
            first in 1u32..20,
            count in 0u32..40,
            step in 1u32..4,
            holes in proptest::collection::vec(0u32..140, 0..20),
            lo in 0u32..140,
            len in 0u32..140,
        ) {
            let last = first + count * step;
            let mut p = PendingTasks::range(first, last, step);
            let mut model: BTreeSet<u32> = (first..=last).step_by(step as usize).collect();
            for t in holes {
                p.remove(TaskId(t));
                model.remove(&t);
            }
            let hi = lo.saturating_add(len);
            let gone = p.remove_within(TaskId(lo), TaskId(hi));
            let (inside, outside): (Vec<u32>, Vec<u32>) =
                model.iter().partition(|t| (lo..=hi).contains(*t));
            prop_assert_eq!(gone.iter().map(TaskId::get).collect::<Vec<_>>(), inside.clone());
            prop_assert_eq!(p.iter().map(TaskId::get).collect::<Vec<_>>(), outside.clone());
            prop_assert_eq!(gone.ranges_text(), crate::job::task_ranges(&tids(&inside), step));
            prop_assert_eq!(p.ranges_text(), crate::job::task_ranges(&tids(&outside), step));
        }

        /// Any sequence of removals and insertions of an array's ids keeps the set
        /// equal to a plain set of ids, in order, and never shows a run twice.
        #[test]
        fn pending_tasks_behave_as_a_set(
            first in 1u32..20,
            count in 0u32..40,
            step in 1u32..4,
            ops in proptest::collection::vec((any::<bool>(), 0u32..140), 0..80),
        ) {
            let last = first + count * step;
            let mut p = PendingTasks::range(first, last, step);
            let mut model: BTreeSet<u32> = (first..=last).step_by(step as usize).collect();
            for (put, t) in ops {
                if put {
                    let of_the_array = t >= first && (t - first).is_multiple_of(step);
                    prop_assert_eq!(p.insert(TaskId(t)), of_the_array && model.insert(t));
                } else {
                    prop_assert_eq!(p.remove(TaskId(t)), model.remove(&t));
                }
                prop_assert_eq!(p.iter().map(TaskId::get).collect::<Vec<_>>(), model.iter().copied().collect::<Vec<_>>());
                prop_assert_eq!(p.len(), model.len() as u64);
                prop_assert_eq!(p.first().map(TaskId::get), model.first().copied());
                // Disjoint, ascending, and never two runs that could be one (so that
                // qstat's task list is the same as from the ids one by one).
                for w in p.runs.windows(2) {
                    prop_assert!(w[0].1 + step < w[1].0);
                }
                let ids: Vec<u32> = model.iter().copied().collect();
                prop_assert_eq!(p.ranges_text(), crate::job::task_ranges(&tids(&ids), step));
                for t in 0..140 {
                    prop_assert_eq!(p.contains(TaskId(t)), model.contains(&t));
                }
            }
        }
    }
}
