//! `qstat`'s listings, made off the actor's thread and shared by the requests that wait
//! at once.
//!
//! A request takes its image of the job table from the actor when it arrives, then
//! waits in a queue for a turn at making (one per core). Whoever gets a turn takes every
//! request waiting and makes one listing per distinct user list from the newest of their
//! images: each request is answered with the jobs as they were after it arrived (the
//! newest image was taken after every other one of the batch), and eight pollers asking
//! at once cost one listing, not eight. A request whose entry another turn took has
//! nothing left to make.

use gantry_proto::{JobId, TaskId};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::core::jobs::{JobsImage, ListingAnswer, ListingCache, ListingForm};

/// Where one request's listing goes: its encoded answer, or why it could not be made.
pub type Deliver = Box<dyn FnOnce(Result<&ListingAnswer, ListingError>) + Send>;

/// Why a listing could not be made (every request it was for is told).
#[derive(Debug, Clone, thiserror::Error)]
#[error("error: the job list could not be encoded: {0}")]
pub struct ListingError(Arc<gantry_proto::ProtoError>);

/// A request waiting for its listing.
pub(crate) struct Waiting {
    /// The order in which the actor handed out the images (see [`next_image`]).
    pub seq: u64,
    /// The job table (and the tasks whose start was confirmed) when it arrived.
    pub image: JobsImage,
    pub started: HashSet<(JobId, TaskId)>,
    /// The users whose jobs it lists (the caller's name for `$user`), and in what form.
    pub users: Vec<String>,
    pub form: ListingForm,
    /// When it arrived, and how long the actor took to hand out its image.
    pub asked: Instant,
    pub actor: Duration,
    pub deliver: Deliver,
}

/// A batch's newest image: its number, the job table, the tasks started.
type Newest = (u64, JobsImage, HashSet<(JobId, TaskId)>);

#[derive(Default)]
struct Queue {
    waiting: Vec<Waiting>,
}

/// The number of the image the actor hands out now: numbers grow in the order the
/// images are taken (the actor takes them one at a time).
pub(crate) fn next_image() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn queue() -> &'static Mutex<Queue> {
    static QUEUE: OnceLock<Mutex<Queue>> = OnceLock::new();
    QUEUE.get_or_init(Default::default)
}

/// The rows (or lines) of the last listing made in `form`, for the next to take those
/// of the jobs that did not change since (see [`ListingCache`]).
fn last_listing(form: ListingForm) -> &'static Mutex<Option<Arc<ListingCache>>> {
    type Last = Mutex<Option<Arc<ListingCache>>>;
    static ROWS: OnceLock<Last> = OnceLock::new();
    static LINES: OnceLock<Last> = OnceLock::new();
    match form {
        ListingForm::Rows => &ROWS,
        ListingForm::Lines => &LINES,
    }
    .get_or_init(Default::default)
}

/// Queue a request with its image.
pub(crate) fn enqueue(w: Waiting) {
    if let Ok(mut q) = queue().lock() {
        q.waiting.push(w);
    }
}

/// Make the listings of every request waiting and deliver them (on a blocking thread,
/// in a turn at making): nothing when another turn took them already.
pub(crate) fn serve_waiting() {
    let batch = match queue().lock() {
        Ok(mut q) => std::mem::take(&mut q.waiting),
        Err(_) => return,
    };
    let began = Instant::now();
    let size = batch.len();
    // The newest image answers them all: taken after every request of the batch came.
    let mut newest: Option<Newest> = None;
    type Group = Vec<(Instant, Duration, Deliver)>;
    let mut by_users: HashMap<(ListingForm, Vec<String>), Group> = HashMap::new();
    for w in batch {
        let Waiting {
            seq,
            image,
            started,
            users,
            form,
            asked,
            actor,
            deliver,
        } = w;
        if newest.as_ref().is_none_or(|(n, ..)| seq > *n) {
            newest = Some((seq, image, started));
        }
        by_users
            .entry((form, users))
            .or_default()
            .push((asked, actor, deliver));
    }
    let Some((_, image, started)) = newest else {
        return;
    };
    for ((form, users), group) in by_users {
        let from = Instant::now();
        let last = last_listing(form).lock().ok().and_then(|last| last.clone());
        let encoded = image
            .encoded_views_with(&users, &started, last.as_deref(), form)
            .map(|(bytes, next)| {
                if let Ok(mut last) = last_listing(form).lock() {
                    *last = Some(next);
                }
                bytes
            })
            .map_err(|e| ListingError(Arc::new(e)));
        let made = from.elapsed();
        let encoded = Arc::new(encoded);
        let one = move |encoded: &Result<ListingAnswer, ListingError>,
                        (asked, actor, deliver): (Instant, Duration, Deliver)| {
            let waited = began.saturating_duration_since(asked + actor);
            let made_at = asked.elapsed();
            let bytes = encoded.as_ref().map_or(0, ListingAnswer::len);
            deliver(encoded.as_ref().map_err(ListingError::clone));
            // Where a listing's time went: the actor's image, waiting for a turn (or
            // for the listing another request's turn made), making the rows, writing
            // them; how many requests the listing answered.
            tracing::debug!(
                turn_micros = waited.as_micros() as u64,
                actor_micros = actor.as_micros() as u64,
                made_micros = made.as_micros() as u64,
                total_micros = made_at.as_micros() as u64,
                written_micros = (asked.elapsed() - made_at).as_micros() as u64,
                bytes,
                batch = size,
                "jobs listed"
            );
        };
        // Each client reads its answer as it gets a core: written side by side, each
        // by a thread of its own, after this turn at making is over (a client that
        // reads slowly holds its writer, not the turns of the others).
        for request in group {
            let encoded = encoded.clone();
            let spawned = std::thread::Builder::new()
                .name("qstat-writer".into())
                .spawn(move || one(&encoded, request));
            if let Err(e) = spawned {
                tracing::error!(
                    "cannot start a thread to write a job list ({e}): its client gets none"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{job, submit};

    /// Requests waiting at once are answered by one listing per user list, made from
    /// the newest image (whatever order they queued in); a turn that finds them taken
    /// makes nothing.
    #[test]
    fn requests_waiting_at_once_share_a_listing_of_the_newest_image() {
        let mut s = crate::synthetic::cluster(&[]);
        submit(&mut s, job(1, "alice", &[], &[]));
        let older = s.jobs_image(0);
        submit(&mut s, job(2, "bob", &[], &[]));
        let newer = s.jobs_image(0);
        let expected = |users: &[&str]| {
            let users: Vec<String> = users.iter().map(|u| u.to_string()).collect();
            newer.encoded_views(&users, &HashSet::new()).unwrap()
        };
        type Got = Arc<Mutex<Vec<(usize, Vec<u8>)>>>;
        let got: Got = Arc::default();
        let request = |n: usize, seq: u64, image: &JobsImage, users: &[&str]| {
            let got = got.clone();
            Waiting {
                seq,
                image: image.clone(),
                started: HashSet::new(),
                users: users.iter().map(|u| u.to_string()).collect(),
                form: ListingForm::Rows,
                asked: Instant::now(),
                actor: Duration::ZERO,
                deliver: Box::new(move |made: Result<&ListingAnswer, ListingError>| {
                    got.lock().unwrap().push((n, made.unwrap().to_vec()));
                }),
            }
        };
        // The newest image queued between two older ones.
        enqueue(request(0, 7, &older, &["*"]));
        enqueue(request(1, 9, &newer, &["bob"]));
        enqueue(request(2, 8, &older, &["*"]));
        serve_waiting();
        serve_waiting();
        // Written by threads of their own: each comes.
        let deadline = Instant::now() + Duration::from_secs(20);
        while got.lock().unwrap().len() < 3 {
            assert!(Instant::now() < deadline, "not every listing was written");
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut got = got.lock().unwrap().clone();
        got.sort();
        assert_eq!(
            got,
            vec![
                (0, expected(&["*"])),
                (1, expected(&["bob"])),
                (2, expected(&["*"]))
            ]
        );
        assert_ne!(
            expected(&["*"]),
            older
                .encoded_views(&["*".to_string()], &HashSet::new())
                .unwrap()
        );
    }
}
