//! `qstat`'s listing: the rows of the job table (or the default listing's lines made
//! of them), made and encoded off the actor's thread, and kept from one listing to the
//! next.

use gantry_proto::{
    JobId, JobLine, JobLineOut, JobRow, JobState, JobView, QueueAt, RowTasks, TaskId,
};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use imbl::ordmap::DiffItem;

use gantry_sched::priority::Priorities;

use gantry_common::joblines::{decimal, push_head, push_tail, PriorColumn};

use super::{task_ranges, Job, TaskState};

/// The parts of the state `qstat`'s rows are made of: shared with the state (each an
/// `Arc` the state changes copy-on-write), so taking one costs three reference counts
/// and the rows can be made off the actor's thread.
#[derive(Debug, Clone)]
pub struct JobsImage {
    pub(super) jobs: Arc<gantry_sched::view::JobTable>,
    pub(super) suspended_queues: Arc<HashSet<(String, String)>>,
    pub(super) threshold_suspended: Arc<std::collections::BTreeSet<(JobId, TaskId)>>,
    /// The last cycle's priorities (the `prior` column).
    pub(super) priorities: Option<Arc<Priorities>>,
    /// Seconds since 1970: a start time (`-a`) after it holds its job (`qstat -s ha`).
    pub(super) now: i64,
}

/// The `prior` a row shows (SGE's last scheduling run's, 0 before any and for a job it
/// did not consider), in hundred-thousandths.
fn row_prio(priorities: Option<&Priorities>, job: JobId, task: Option<TaskId>) -> i64 {
    let Some(p) = priorities.and_then(|p| p.jobs.get(&job)) else {
        return 0;
    };
    // A task that started after the last calculation keeps the priority it was
    // dispatched by, as SGE's running jobs show theirs.
    let prio = match task {
        Some(t) => p.task(t).or(p.pending).map(|t| t.prio),
        None => p.pending.map(|t| t.prio),
    };
    prio.map_or(0, |x| (x * 100_000.0).round() as i64)
}

/// What a listing is made of: rows (`qstat`'s forms that choose their columns, or
/// order the jobs by queue) or the job lines of the default listing, as the client
/// prints them (see [`gantry_proto::JobLine`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ListingForm {
    #[default]
    Rows,
    Lines,
}

impl ListingForm {
    /// The users whose jobs a `qstat` listing shows, and its form; `None` for any other
    /// request.
    pub fn asked(request: &gantry_proto::ToMaster) -> Option<(Vec<String>, Self)> {
        match request {
            gantry_proto::ToMaster::ShowJobs { users } => Some((users.clone(), ListingForm::Rows)),
            gantry_proto::ToMaster::ShowJobLines { users } => {
                Some((users.clone(), ListingForm::Lines))
            }
            _ => None,
        }
    }
}

/// Writes rows as the default listing's job lines, the priority column of the row
/// before kept (jobs submitted together share it).
#[derive(Debug, Default)]
struct LineMaker {
    prior: PriorColumn,
    head: String,
    tail: String,
}

impl LineMaker {
    /// `row`'s line, borrowed from the maker until the next.
    fn line(&mut self, row: &JobRow<'_>) -> JobLineOut<'_> {
        let prior = self.prior.of(row.prio);
        self.head.clear();
        push_head(
            &mut self.head,
            row.job_id,
            prior,
            row.name,
            row.owner,
            row.state.letters_of_row(row.restarted),
        );
        let mut digits = [0u8; 20];
        let tasks = match &row.tasks {
            RowTasks::None => "",
            RowTasks::One(t) => decimal(u64::from(t.get()), &mut digits),
            RowTasks::Ranges(r) => r,
        };
        self.tail.clear();
        let queue = match row.queue {
            Some(q) => [q.queue, "@", q.host],
            None => [""; 3],
        };
        push_tail(&mut self.tail, Some(&queue), row.slots, tasks);
        JobLineOut {
            state: row.state,
            head: &self.head,
            when: row.start_time.unwrap_or(row.submit_time),
            tail: &self.tail,
        }
    }
}

/// Does a listing of `users` (all: empty, or `*`) show the jobs of `owner`?
pub(crate) fn wanted(users: &[String], owner: &str) -> bool {
    users.is_empty() || users.iter().any(|u| u == "*" || u == owner)
}

/// The encoded rows (or lines, by its form) of the jobs whose rows depend on nothing but
/// the job (nothing of it placed, no `-hold_jid`), kept from one `qstat` listing to the
/// next with the job table they were made from: the next listing compares the two
/// tables (`imbl`'s diff skips what they share, and tells a job unchanged by its `Arc`)
/// and encodes again only the jobs that changed since; the rows of the others are kept
/// in runs.
#[derive(Debug, Default)]
pub struct ListingCache {
    /// What its entries are.
    form: ListingForm,
    /// The job table the cache is of.
    jobs: gantry_sched::view::JobTable,
    /// The cached jobs, in job id order.
    entries: Vec<CachedJob>,
    /// The owners' names, indexed by [`CachedJob::owner`].
    owners: Vec<String>,
    /// Every entry's rows (or lines), one after another.
    rows: Vec<u8>,
    /// The jobs of the table whose rows are made for every listing (something placed,
    /// or `-hold_jid`).
    live: std::collections::BTreeSet<JobId>,
    /// The priorities the rows show.
    priorities: Option<Arc<Priorities>>,
}

#[derive(Debug, Clone, Copy)]
struct CachedJob {
    id: JobId,
    /// When the job was submitted (pending jobs are listed by priority, then by it).
    submit_time: i64,
    owner: u32,
    /// How many rows, in `rows[start..end]`.
    count: usize,
    start: usize,
    end: usize,
}

impl ListingCache {
    /// Keep the entries `from[range]` of the last cache, with their rows (one copy).
    fn keep(&mut self, from: &ListingCache, range: std::ops::Range<usize>) {
        let kept = &from.entries[range];
        let (Some(first), Some(last)) = (kept.first(), kept.last()) else {
            return;
        };
        let shift = self.rows.len() as isize - first.start as isize;
        self.rows
            .extend_from_slice(&from.rows[first.start..last.end]);
        self.entries.extend(kept.iter().map(|e| CachedJob {
            start: (e.start as isize + shift) as usize,
            end: (e.end as isize + shift) as usize,
            ..*e
        }));
    }

    /// The rows of `entries[range]` whose owners are wanted, each job's a part of the
    /// listing with the key it is listed by; how many rows.
    fn wanted_items(
        &self,
        range: std::ops::Range<usize>,
        owner_wanted: &[bool],
        prios: Option<&Priorities>,
        items: &mut Vec<(PendingKey, Part)>,
    ) -> usize {
        let mut count = 0;
        for e in &self.entries[range] {
            if owner_wanted[e.owner as usize] && e.count > 0 {
                count += e.count;
                items.push((
                    pending_key(prios, e.id, e.submit_time),
                    Part::Cached(e.start..e.end),
                ));
            }
        }
        count
    }
}

/// The order pending jobs are listed in: the higher priority first, then the earlier
/// submission, then the lower id (SGE's; without priorities, submission and id).
type PendingKey = (u64, i64, JobId);

fn pending_key(prios: Option<&Priorities>, id: JobId, submit_time: i64) -> PendingKey {
    (
        gantry_sched::order::descending(row_prio(prios, id, None) as f64),
        submit_time,
        id,
    )
}

/// A part of a listing's answer after its header and running rows: rows of the cache
/// it was made with, or rows made for it.
#[derive(Debug, Clone)]
enum Part {
    Cached(std::ops::Range<usize>),
    Made(std::ops::Range<usize>),
}

/// A listing's encoded answer as the parts it is written from: its header (the
/// answer's tag and number of rows), the running rows, then the pending ones, runs of
/// them in the cache it was made with and shares rather than copies (a listing of
/// megabytes is not copied again to be written), between rows made for it.
#[derive(Debug)]
pub struct ListingAnswer {
    header: Vec<u8>,
    running: Vec<u8>,
    made: Vec<u8>,
    pending: Vec<Part>,
    cache: Arc<ListingCache>,
}

impl ListingAnswer {
    /// Its bytes, part after part.
    pub fn slices(&self) -> impl Iterator<Item = &[u8]> {
        let pending = self.pending.iter().map(|p| match p {
            Part::Cached(r) => &self.cache.rows[r.clone()],
            Part::Made(r) => &self.made[r.clone()],
        });
        [&self.header[..], &self.running[..]]
            .into_iter()
            .chain(pending)
    }

    pub fn len(&self) -> usize {
        self.slices().map(<[u8]>::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its bytes in one buffer (an answer relayed to another host).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        for s in self.slices() {
            out.extend_from_slice(s);
        }
        out
    }
}

/// Are a job's rows made for every listing: does anything but the job decide them
/// (running tasks' states come from elsewhere, `-hold_jid` from other jobs)?
fn live(job: &Job) -> bool {
    job.tasks.placed().next().is_some()
        || !job.spec.hold_jids.is_empty()
        || !job.spec.hold_jids_ad.is_empty()
        || job.spec.start_after.is_some()
}

impl JobsImage {
    /// The rows of `users`' jobs (all: empty, or `*`); `started`: the tasks whose execd
    /// reported them started.
    pub fn views(&self, users: &[String], started: &HashSet<(JobId, TaskId)>) -> Vec<JobView> {
        let mut running = Vec::new();
        let mut pending = Vec::new();
        self.rows(users, started, |row| match row.queue {
            Some(_) => running.push(row.to_view()),
            None => pending.push(row.to_view()),
        });
        // Pending jobs by priority (stable: a job's rows stay together, in order).
        let prios = self.priorities.as_deref();
        pending.sort_by_key(|v| pending_key(prios, v.job_id, v.submit_time));
        running.extend(pending);
        running
    }

    /// The default listing's job lines of `users`' jobs, in the order of
    /// [`JobsImage::views`].
    pub fn lines(&self, users: &[String], started: &HashSet<(JobId, TaskId)>) -> Vec<JobLine> {
        let mut maker = LineMaker::default();
        let mut running = Vec::new();
        let mut pending = Vec::new();
        let prios = self.priorities.as_deref();
        self.rows(users, started, |row| {
            let line = maker.line(&row);
            let line = JobLine {
                state: line.state,
                head: line.head.to_string(),
                when: line.when,
                tail: line.tail.to_string(),
            };
            match row.queue {
                Some(_) => running.push(line),
                None => pending.push((pending_key(prios, row.job_id, row.submit_time), line)),
            }
        });
        // Pending jobs by priority (stable: a job's lines stay together, in order).
        pending.sort_by_key(|(k, _)| *k);
        running.extend(pending.into_iter().map(|(_, l)| l));
        running
    }

    /// The encoding of [`gantry_proto::FromMaster::Jobs`] with the rows
    /// [`JobsImage::views`] makes, encoded from the job table as they are made (no row
    /// is copied out of it first). (The master makes listings with a cache: see
    /// [`JobsImage::encoded_views_with`].)
    #[cfg(test)]
    pub fn encoded_views(
        &self,
        users: &[String],
        started: &HashSet<(JobId, TaskId)>,
    ) -> Result<Vec<u8>, gantry_proto::ProtoError> {
        Ok(self
            .encoded_views_with(users, started, None, ListingForm::Rows)?
            .0
            .to_vec())
    }

    /// The same in `form` (the encoding of [`gantry_proto::FromMaster::JobLines`] with
    /// [`JobsImage::lines`]' lines for [`ListingForm::Lines`]), with the rows of every
    /// job that has not changed since `cache` was made taken from it (one of the same
    /// form); and the cache for the next listing.
    pub fn encoded_views_with(
        &self,
        users: &[String],
        started: &HashSet<(JobId, TaskId)>,
        cache: Option<&ListingCache>,
        form: ListingForm,
    ) -> Result<(ListingAnswer, Arc<ListingCache>), gantry_proto::ProtoError> {
        let empty = ListingCache {
            form,
            ..ListingCache::default()
        };
        let old = cache.filter(|c| c.form == form).unwrap_or(&empty);
        let mut next = ListingCache {
            form,
            jobs: (*self.jobs).clone(),
            entries: Vec::with_capacity(old.entries.len() + 64),
            owners: old.owners.clone(),
            rows: Vec::with_capacity(old.rows.len() + 4096),
            live: old.live.clone(),
            priorities: self.priorities.clone(),
        };
        let mut owner_ids: HashMap<String, u32> = (0..)
            .zip(&next.owners)
            .map(|(n, o)| (o.clone(), n))
            .collect();
        let mut failed = None;
        let mut lines = LineMaker::default();
        let mut encode = |row: &JobRow<'_>, into: &mut Vec<u8>| {
            let before = std::mem::take(into);
            let made = match form {
                ListingForm::Rows => gantry_proto::encode_job_row(row, before),
                ListingForm::Lines => gantry_proto::encode_job_line(&lines.line(row), before),
            };
            match made {
                Ok(rows) => *into = rows,
                Err(e) => failed = Some(e),
            }
        };
        // The jobs changed since the cache was made, and those whose priority did, in id
        // order: each one's entry goes, and a job still there is cached again (or made
        // live).
        let mut changes: Vec<(JobId, Option<&Arc<Job>>)> = old
            .jobs
            .diff(&self.jobs)
            .map(|change| match change {
                DiffItem::Add(id, job) | DiffItem::Update { new: (id, job), .. } => {
                    (*id, Some(job))
                }
                DiffItem::Remove(id, _) => (*id, None),
            })
            .collect();
        let same_priorities = match (&old.priorities, &self.priorities) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same_priorities {
            let (before, now) = (old.priorities.as_deref(), self.priorities.as_deref());
            let reprioritized: Vec<(JobId, Option<&Arc<Job>>)> = old
                .entries
                .iter()
                .filter(|e| row_prio(before, e.id, None) != row_prio(now, e.id, None))
                .filter_map(|e| self.jobs.get(&e.id).map(|j| (e.id, Some(j))))
                .collect();
            if !reprioritized.is_empty() {
                changes.extend(reprioritized);
                changes.sort_by_key(|(id, _)| *id);
                changes.dedup_by_key(|(id, _)| *id);
            }
        }
        let mut at = 0;
        for (id, now) in changes {
            let upto = at + old.entries[at..].partition_point(|e| e.id < id);
            next.keep(old, at..upto);
            at = upto + usize::from(old.entries.get(upto).is_some_and(|e| e.id == id));
            next.live.remove(&id);
            let Some(job) = now else {
                continue;
            };
            if live(job) {
                next.live.insert(id);
                continue;
            }
            let start = next.rows.len();
            let mut count = 0;
            self.job_rows(job, started, &mut |row| {
                encode(&row, &mut next.rows);
                count += 1;
            });
            let owner = match owner_ids.get(&job.owner.user) {
                Some(&n) => n,
                None => {
                    let n = next.owners.len() as u32;
                    next.owners.push(job.owner.user.clone());
                    owner_ids.insert(job.owner.user.clone(), n);
                    n
                }
            };
            next.entries.push(CachedJob {
                id,
                submit_time: job.submit_time,
                owner,
                count,
                start,
                end: next.rows.len(),
            });
        }
        next.keep(old, at..old.entries.len());
        // The listing: the running rows of the live jobs, then every pending row in id
        // order, runs of the cached ones between the live jobs' own.
        let owner_wanted: Vec<bool> = next.owners.iter().map(|o| wanted(users, o)).collect();
        let (mut running, mut made) = (Vec::new(), Vec::new());
        let mut count = 0;
        // Every pending part (a cached job's rows, a live job's rows made now) with the
        // key it is listed by: priority, then submission, then id, as SGE lists them.
        let prios = self.priorities.as_deref();
        let mut items: Vec<(PendingKey, Part)> = Vec::with_capacity(next.entries.len());
        let mut at = 0;
        for id in &next.live {
            let Some(job) = self.jobs.get(id) else {
                continue;
            };
            let upto = at + next.entries[at..].partition_point(|e| e.id < *id);
            count += next.wanted_items(at..upto, &owner_wanted, prios, &mut items);
            at = upto;
            if wanted(users, &job.owner.user) {
                let from = made.len();
                self.job_rows(job, started, &mut |row| {
                    let into = match row.queue {
                        Some(_) => &mut running,
                        None => &mut made,
                    };
                    encode(&row, into);
                    count += 1;
                });
                if made.len() > from {
                    items.push((
                        pending_key(prios, *id, job.submit_time),
                        Part::Made(from..made.len()),
                    ));
                }
            }
        }
        count += next.wanted_items(at..next.entries.len(), &owner_wanted, prios, &mut items);
        if !items.is_sorted_by_key(|(k, _)| *k) {
            items.sort_unstable_by_key(|(k, _)| *k);
        }
        // Adjacent parts written as one.
        let mut pending: Vec<Part> = Vec::new();
        for (_, part) in items {
            match (pending.last_mut(), part) {
                (Some(Part::Cached(r)), Part::Cached(s)) if r.end == s.start => r.end = s.end,
                (Some(Part::Made(r)), Part::Made(s)) if r.end == s.start => r.end = s.end,
                (_, part) => pending.push(part),
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        let header = match form {
            ListingForm::Rows => gantry_proto::encode_jobs_answer(count, &[])?,
            ListingForm::Lines => gantry_proto::encode_job_lines_answer(count, &[])?,
        };
        let cache = Arc::new(next);
        let answer = ListingAnswer {
            header,
            running,
            made,
            pending,
            cache: cache.clone(),
        };
        Ok((answer, cache))
    }

    /// Each row of `users`' jobs, as [`JobsImage::views`] lists them (running tasks one
    /// by one, pending tasks of a job together), borrowed from the job table.
    fn rows(
        &self,
        users: &[String],
        started: &HashSet<(JobId, TaskId)>,
        mut emit: impl FnMut(JobRow<'_>),
    ) {
        for job in self.jobs.values() {
            if wanted(users, &job.owner.user) {
                self.job_rows(job, started, &mut emit);
            }
        }
    }

    /// One job's rows.
    fn job_rows<'j>(
        &self,
        job: &'j Job,
        started: &HashSet<(JobId, TaskId)>,
        emit: &mut impl FnMut(JobRow<'j>),
    ) {
        {
            let prios = self.priorities.as_deref();
            // A pending parallel job shows the fewest slots its range asks for, as SGE.
            let pending_slots = job
                .spec
                .pe
                .as_ref()
                .and_then(|(_, range)| gantry_common::pe::parse_slot_range(range))
                .map_or(1, |(min, _)| min);
            let base = |state: JobState, tasks: RowTasks| JobRow {
                prio: row_prio(prios, job.id, None),
                job_id: job.id,
                name: &job.spec.name,
                owner: &job.owner.user,
                priority: job.spec.priority,
                state,
                submit_time: job.submit_time,
                start_time: None,
                queue: None,
                slots: pending_slots,
                tasks,
                hard_resources: &job.spec.hard_resources,
                hold_jids: &job.spec.hold_jids,
                is_array: job.is_array(),
                restarted: false,
            };
            let ranges = |tasks: &[TaskId]| match job.is_array() {
                true => RowTasks::Ranges(task_ranges(tasks, job.spec.array.map_or(1, |r| r.step))),
                false => RowTasks::None,
            };
            let mut failed: Vec<TaskId> = Vec::new();
            for (task, t) in job.tasks.placed() {
                match t {
                    TaskState::Pending => {}
                    TaskState::Error { .. } => failed.push(task),
                    TaskState::Running {
                        host,
                        queue,
                        start_time,
                        grants,
                        ..
                    }
                    | TaskState::Deleting {
                        host,
                        queue,
                        start_time,
                        grants,
                        ..
                    } => {
                        let state = match t {
                            TaskState::Deleting { .. } => JobState::Deleting,
                            _ if job.suspended.contains(&task) => JobState::Suspended,
                            _ if (!self.suspended_queues.is_empty()
                                && self
                                    .suspended_queues
                                    .contains(&(queue.clone(), host.clone())))
                                || self.threshold_suspended.contains(&(job.id, task)) =>
                            {
                                JobState::QueueSuspended
                            }
                            _ if started.contains(&(job.id, task)) => JobState::Running,
                            _ => JobState::Transferring,
                        };
                        let mut row = base(
                            state,
                            if job.is_array() {
                                RowTasks::One(task)
                            } else {
                                RowTasks::None
                            },
                        );
                        row.start_time = Some(*start_time);
                        row.prio = row_prio(prios, job.id, Some(task));
                        row.restarted = job.restarted.contains_key(&task);
                        row.queue = Some(QueueAt { queue, host });
                        row.slots = grants.iter().map(|g| g.slots).sum::<u32>().max(1);
                        emit(row);
                    }
                }
            }
            if job.tasks.has_pending() {
                let holds = gantry_sched::view::pending_holds(&self.jobs, job, self.now);
                // Tasks waiting to run again are a row of their own (`Rq`), as SGE
                // groups tasks by state.
                let pending_tasks = job.tasks.pending();
                let again: Vec<TaskId> = job
                    .restarted
                    .keys()
                    .copied()
                    .filter(|t| pending_tasks.contains(*t))
                    .collect();
                let mut fresh = None;
                if !again.is_empty() {
                    let mut rest = pending_tasks.clone();
                    for t in &again {
                        rest.remove(*t);
                    }
                    fresh = Some(rest);
                }
                let fresh = fresh.as_ref().unwrap_or(pending_tasks);
                if !fresh.is_empty() {
                    let tasks = if job.is_array() {
                        RowTasks::Ranges(fresh.ranges_text())
                    } else {
                        RowTasks::None
                    };
                    emit(base(JobState::Pending { holds }, tasks));
                }
                if !again.is_empty() {
                    let mut row = base(JobState::Pending { holds }, ranges(&again));
                    row.restarted = true;
                    emit(row);
                }
            }
            if !failed.is_empty() {
                emit(base(JobState::Error, ranges(&failed)));
            }
        }
    }
}
/// A finished job as `qstat -s z` shows it.
pub fn zombie_view(job: &Job, end_time: i64) -> JobView {
    JobView {
        job_id: job.id,
        name: job.spec.name.clone(),
        owner: job.owner.user.clone(),
        priority: job.spec.priority,
        state: JobState::Zombie,
        submit_time: job.submit_time,
        start_time: Some(end_time),
        queue: None,
        slots: 1,
        tasks: String::new(),
        hard_resources: job.spec.hard_resources.clone(),
        hold_jids: job.spec.hold_jids.clone(),
        is_array: job.is_array(),
        restarted: false,
        prio: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::state::ClusterState;

    /// `qstat`'s listing encoded from the job table is the listing of its rows encoded
    /// whole: running, transferring, suspended and deleting tasks, pending, held,
    /// restarted and failed ones of arrays, plain jobs, and only the users asked for.
    #[test]
    fn the_encoded_listing_is_the_listing_of_its_rows() {
        use crate::synthetic::{job, running_on, submit};
        let mut s = crate::synthetic::cluster(&[]);
        let mut plain = job(1, "alice", &[("h_rt", "60")], &[]);
        plain.tasks.insert(TaskId(1), running_on("all.q", "node1"));
        submit(&mut s, plain);
        let mut array = job(2, "bob", &[], &[]);
        array.spec.array = Some(gantry_proto::TaskRange {
            first: 1,
            last: 9,
            step: 2,
        });
        array.tasks = gantry_common::tasks::Tasks::array(1, 9, 2);
        array.tasks.insert(TaskId(1), running_on("all.q", "node1"));
        array.tasks.insert(TaskId(3), running_on("all.q", "node2"));
        array
            .tasks
            .insert(TaskId(5), TaskState::Error { reason: "x".into() });
        array.restarted.insert(TaskId(7), 1);
        array.suspended.insert(TaskId(3));
        submit(&mut s, array);
        let mut held = job(3, "alice", &[], &[]);
        held.spec.hold = true;
        held.spec.hold_jids = vec!["2".into()];
        submit(&mut s, held);
        let image = s.jobs_image(0);
        let started: HashSet<(JobId, TaskId)> = [(JobId(2), TaskId(1))].into_iter().collect();
        for users in [vec![], vec!["alice".to_string()], vec!["*".to_string()]] {
            let views = image.views(&users, &started);
            assert!(!views.is_empty());
            assert_eq!(
                image.encoded_views(&users, &started).unwrap(),
                gantry_proto::encode(&gantry_proto::FromMaster::Jobs(views.clone())).unwrap(),
                "{users:?}"
            );
            // The default listing's lines: those of the same rows, in the same order,
            // each the format's columns.
            let lines = image.lines(&users, &started);
            assert_eq!(
                image
                    .encoded_views_with(&users, &started, None, ListingForm::Lines)
                    .unwrap()
                    .0
                    .to_vec(),
                gantry_proto::encode(&gantry_proto::FromMaster::JobLines(lines.clone())).unwrap(),
                "{users:?}"
            );
            assert_eq!(lines.len(), views.len());
            for (line, v) in lines.iter().zip(&views) {
                let head = format!(
                    "{:>7} {} {:<10.10} {:<12.12} {:<5} ",
                    v.job_id,
                    gantry_common::joblines::prior(v.prio),
                    v.name,
                    v.owner,
                    v.state_letters()
                );
                let tasks = if v.tasks.is_empty() {
                    "       "
                } else {
                    &v.tasks
                };
                let queue = v.queue.as_deref().unwrap_or("");
                let tail = format!(" {queue:<30} {:>5} {tasks}\n", v.slots);
                assert_eq!(
                    (line.state, &line.head, line.when, &line.tail),
                    (v.state, &head, v.start_time.unwrap_or(v.submit_time), &tail)
                );
            }
        }
        let all = image.views(&[], &started);
        let states: Vec<(u64, &str, &str)> = all
            .iter()
            .map(|v| (v.job_id.get(), v.state_letters(), v.tasks.as_str()))
            .collect();
        assert_eq!(
            states,
            [
                (1, "t", ""),
                (2, "r", "1"),
                (2, "s", "3"),
                (2, "qw", "9"),
                (2, "Rq", "7"),
                (2, "Eqw", "5"),
                (3, "hqw", ""),
            ]
        );
    }

    /// A listing that takes the unchanged jobs' rows from the last one's is the listing
    /// made afresh, whatever changed in between: a job changed, removed, added, started,
    /// held, waiting for another; and whoever lists (the cache keeps every owner's).
    #[test]
    fn a_listing_from_the_last_ones_rows_is_the_listing_made_afresh() {
        use crate::synthetic::{job, running_on, submit};
        let mut s = crate::synthetic::cluster(&[]);
        for id in 1..=40 {
            submit(
                &mut s,
                job(id, ["alice", "bob", "carol"][id as usize % 3], &[], &[]),
            );
        }
        let started = HashSet::new();
        let everyone: Vec<String> = Vec::new();
        let (_, mut cache) = s
            .jobs_image(0)
            .encoded_views_with(&everyone, &started, None, ListingForm::Rows)
            .unwrap();
        type Change = Box<dyn Fn(&mut ClusterState)>;
        let changes: Vec<Change> = vec![
            Box::new(|_| {}),
            Box::new(|s| {
                let mut j = Job::clone(&s.input.jobs[&JobId(5)]);
                j.spec.name = "renamed".into();
                submit(s, j);
            }),
            Box::new(|s| {
                crate::core::state::ClusterState::apply(
                    s,
                    &crate::core::state::Op::Delete(crate::core::state::job_key(JobId(7))),
                );
            }),
            Box::new(|s| submit(s, job(41, "dave", &[], &[]))),
            Box::new(|s| {
                let mut j = Job::clone(&s.input.jobs[&JobId(9)]);
                j.tasks.insert(TaskId(1), running_on("all.q", "node1"));
                submit(s, j);
            }),
            Box::new(|s| {
                let mut j = Job::clone(&s.input.jobs[&JobId(10)]);
                j.spec.hold = true;
                submit(s, j);
            }),
            Box::new(|s| {
                let mut j = Job::clone(&s.input.jobs[&JobId(11)]);
                j.spec.hold_jids = vec!["12".into()];
                submit(s, j);
            }),
            Box::new(|s| {
                crate::core::state::ClusterState::apply(
                    s,
                    &crate::core::state::Op::Delete(crate::core::state::job_key(JobId(12))),
                );
            }),
        ];
        for (n, change) in changes.iter().enumerate() {
            change(&mut s);
            let image = s.jobs_image(0);
            for users in [vec![], vec!["alice".to_string()], vec!["dave".to_string()]] {
                let afresh = image.encoded_views(&users, &started).unwrap();
                let (cached, _) = image
                    .encoded_views_with(&users, &started, Some(&cache), ListingForm::Rows)
                    .unwrap();
                assert_eq!(cached.to_vec(), afresh, "change {n}, {users:?}");
                // A cache of rows is none for a listing of lines.
                let (lines, _) = image
                    .encoded_views_with(&users, &started, Some(&cache), ListingForm::Lines)
                    .unwrap();
                assert_eq!(
                    lines.to_vec(),
                    gantry_proto::encode(&gantry_proto::FromMaster::JobLines(
                        image.lines(&users, &started)
                    ))
                    .unwrap()
                );
            }
            cache = image
                .encoded_views_with(&everyone, &started, Some(&cache), ListingForm::Rows)
                .unwrap()
                .1;
        }
    }

    #[derive(Debug, Clone)]
    enum Change {
        Submit(usize),
        Rename(u64),
        Delete(u64),
        Place(u64),
        Unplace(u64),
        Hold(u64),
        HoldJid(u64, u64),
        /// A scheduling run gave every job a priority (from the seed): pending jobs
        /// are listed by it.
        Prioritize(u64),
        /// A listing of these users (none: everyone), checked against one made afresh,
        /// whose cache the next listing starts from.
        List(Option<usize>),
    }

    fn change() -> impl proptest::strategy::Strategy<Value = Change> {
        use proptest::prelude::*;
        prop_oneof![
            3 => (0..3usize).prop_map(Change::Submit),
            1 => (1..30u64).prop_map(Change::Rename),
            1 => (1..30u64).prop_map(Change::Delete),
            1 => (1..30u64).prop_map(Change::Place),
            1 => (1..30u64).prop_map(Change::Unplace),
            1 => (1..30u64).prop_map(Change::Hold),
            1 => (1..30u64, 1..30u64).prop_map(|(a, b)| Change::HoldJid(a, b)),
            1 => any::<u64>().prop_map(Change::Prioritize),
            3 => proptest::option::of(0..3usize).prop_map(Change::List),
        ]
    }

    proptest::proptest! {
        /// Listings from the last one's cache, after any changes between them, are
        /// the listings made afresh, for any users.
        #[test]
        fn cached_listings_are_listings_made_afresh(changes in proptest::collection::vec(change(), 1..60)) {
            use crate::synthetic::{job, running_on, submit};
            const OWNERS: [&str; 3] = ["alice", "bob", "carol"];
            let mut s = crate::synthetic::cluster(&[]);
            let started = HashSet::new();
            let mut cache: Option<Arc<ListingCache>> = None;
            let mut line_cache: Option<Arc<ListingCache>> = None;
            let mut next_id = 1;
            let edit = |s: &mut ClusterState, id: u64, f: &dyn Fn(&mut Job)| {
                if let Some(j) = s.input.jobs.get(&JobId(id)) {
                    let mut j = Job::clone(j);
                    f(&mut j);
                    submit(s, j);
                }
            };
            for c in changes {
                match c {
                    Change::Submit(o) => {
                        submit(&mut s, job(next_id, OWNERS[o], &[], &[]));
                        next_id += 1;
                    }
                    Change::Rename(id) => edit(&mut s, id, &|j| j.spec.name.push('x')),
                    Change::Delete(id) => ClusterState::apply(
                        &mut s,
                        &crate::core::state::Op::Delete(crate::core::state::job_key(JobId(id))),
                    ),
                    Change::Place(id) => edit(&mut s, id, &|j| {
                        j.tasks.insert(TaskId(1), running_on("all.q", "node1"));
                    }),
                    Change::Unplace(id) => edit(&mut s, id, &|j| {
                        j.tasks.insert(TaskId(1), TaskState::Pending);
                    }),
                    Change::Hold(id) => edit(&mut s, id, &|j| j.spec.hold = !j.spec.hold),
                    Change::HoldJid(id, on) => edit(&mut s, id, &|j| j.spec.hold_jids = vec![on.to_string()]),
                    Change::Prioritize(seed) => {
                        let mut p = gantry_sched::priority::Priorities::default();
                        for id in s.input.jobs.keys() {
                            // A few distinct values, so that ties occur.
                            let prio = ((id.get().wrapping_mul(seed | 1) >> 7) % 4) as f64 / 4.0;
                            let t = gantry_sched::priority::Tickets { prio, ..Default::default() };
                            p.jobs.insert(*id, gantry_sched::priority::JobPriority {
                                pending: Some(t),
                                ..Default::default()
                            });
                        }
                        s.live.priorities = Some(Arc::new(p));
                    }
                    Change::List(users) => {
                        let users: Vec<String> = users.map(|o| OWNERS[o].to_string()).into_iter().collect();
                        let image = s.jobs_image(0);
                        // Made row by row, apart from the encoding's own code.
                        let afresh = gantry_proto::encode(&gantry_proto::FromMaster::Jobs(
                            image.views(&users, &started),
                        ))
                        .unwrap();
                        let (cached, next) = image
                            .encoded_views_with(&users, &started, cache.as_deref(), ListingForm::Rows)
                            .unwrap();
                        proptest::prop_assert_eq!(cached.to_vec(), afresh);
                        cache = Some(next);
                        // Pending jobs by priority, then submission, then id.
                        let keys: Vec<_> = image
                            .views(&users, &started)
                            .iter()
                            .filter(|v| v.queue.is_none())
                            .map(|v| (std::cmp::Reverse(v.prio), v.submit_time, v.job_id))
                            .collect();
                        proptest::prop_assert!(keys.is_sorted(), "{:?}", keys);
                        // The default listing's lines, cached alike.
                        let afresh = gantry_proto::encode(&gantry_proto::FromMaster::JobLines(
                            image.lines(&users, &started),
                        ))
                        .unwrap();
                        let (cached, next) = image
                            .encoded_views_with(&users, &started, line_cache.as_deref(), ListingForm::Lines)
                            .unwrap();
                        proptest::prop_assert_eq!(cached.to_vec(), afresh);
                        line_cache = Some(next);
                    }
                }
            }
        }
    }
}
