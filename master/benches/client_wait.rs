//! How long a client request waits for the Cluster actor while scheduling cycles run
//! back to back, on the synthetic cluster of the scheduler benchmark (1,000 hosts x 2
//! queues, 10,000 pending jobs; and the same with 100 quota sets of 10 rules).
//!
//! The actor's turns are reproduced on this thread with the master's own code: one
//! mailbox (a channel) takes requests, which arrive every 2 ms from a thread of their
//! own, in turn `qstat` of one user's jobs, a submission, and the end of a running job
//! (each applied to the state, as the actor applies a commit); and cycle outcomes, whose
//! dispatches are re-validated and applied. The first cycle fills the cluster's 8,000
//! slots; later ones find room where jobs ended, among the jobs still pending.
//! - `thread`: cycles run on the master's scheduler thread ([`CycleThread`]) on an image
//!   of the state; the actor re-validates each outcome, builds the dispatches' job
//!   changes and hands the next cycle over at once.
//! - `inline`: the cycle runs on the actor's thread (the master before the scheduler
//!   thread), then the requests queued meanwhile are answered.
//!
//! The spool's journal write is not included (the job benchmarks measure it). Prints
//! the median, 90th percentile and maximum wait, over `GANTRY_WAIT_SECS` seconds
//! (default 10) per mode, and the longest turn of each kind.
//!
//! Run: `cargo bench -p gantry-master --bench client_wait`

use std::collections::HashSet;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use gantry_master::cycle_thread::{CycleOutcome, CycleRequest, CycleThread};
use gantry_master::jobs::Job;
use gantry_master::sched::Time;
use gantry_master::state::{job_key, ClusterState, Object, Op};
use gantry_master::synthetic::{connected, job, running, submit};

#[allow(dead_code)] // the reservation variant of the cycle benchmark is not used here
mod common;
use common::{build, with_quotas};

const EVERY: Duration = Duration::from_millis(2);

enum Event {
    Request(Instant, u64),
    Done(Box<CycleOutcome>),
}

/// One client request, as the actor answers it.
fn answer(
    s: &mut ClusterState,
    n: u64,
    started: &HashSet<(gantry_proto::JobId, gantry_proto::TaskId)>,
) {
    match n % 3 {
        0 => {
            std::hint::black_box(s.job_views(&["user3".to_string()], started, 0));
        }
        1 => submit(s, job(1_000_000 + n, "user3", &[], &[])),
        _ => {
            // The running job that started first ends.
            let ended = s
                .input
                .jobs
                .values()
                .find(|j| j.tasks.placed_states().next().is_some())
                .map(|j| j.id);
            if let Some(id) = ended {
                s.apply(&Op::Delete(job_key(id)));
            }
        }
    }
}

/// What the actor does with a cycle's dispatches: re-validated, then applied.
fn dispatch(s: &mut ClusterState, outcome: CycleOutcome) -> usize {
    let CycleOutcome {
        request, decisions, ..
    } = outcome;
    let checked = s.revalidate(
        &request.image,
        request.generation,
        decisions.dispatches,
        &request.connected,
    );
    let ops: Vec<Op> = checked
        .kept
        .iter()
        .map(|d| {
            let mut j = Job::clone(&s.input.jobs[&d.job_id]);
            j.tasks.insert(d.task_id, running(d));
            Op::Put(Object::Job(j))
        })
        .collect();
    s.apply_all(&ops);
    ops.len()
}

struct Figures {
    waits: Vec<Duration>,
    cycles: usize,
    /// The longest turn of the actor per kind: qstat, qsub, a job's end, a cycle's
    /// outcome.
    longest: [Duration; 4],
}

fn run(mut s: ClusterState, on_thread: bool, secs: u64) -> Figures {
    let hosts = connected(&s);
    let started = HashSet::new();
    let (tx, mailbox) = mpsc::channel::<Event>();
    let clients = tx.clone();
    let until = Instant::now() + Duration::from_secs(secs);
    let generator = std::thread::spawn(move || {
        let mut n = 0;
        let mut next = Instant::now();
        while next < until {
            if let Some(d) = next.checked_duration_since(Instant::now()) {
                std::thread::sleep(d);
            }
            if clients.send(Event::Request(Instant::now(), n)).is_err() {
                return;
            }
            n += 1;
            next += EVERY;
        }
    });
    let request = |s: &ClusterState| CycleRequest {
        image: s.image(),
        generation: s.config_generation,
        connected: hosts.clone(),
        at: Time::from_secs(0),
    };
    let mut waits = Vec::new();
    let mut cycles = 0;
    let mut longest = [Duration::ZERO; 4];
    let mut turn = |kind: usize, began: Instant| {
        longest[kind] = longest[kind].max(began.elapsed());
    };
    if on_thread {
        let done = tx.clone();
        let thread = CycleThread::start(move |o| {
            let _ = done.send(Event::Done(Box::new(o)));
        })
        .expect("the scheduler's thread");
        drop(tx);
        thread.run(request(&s)).expect("a cycle handed over");
        while let Ok(event) = mailbox.recv() {
            match event {
                Event::Request(at, n) => {
                    let began = Instant::now();
                    answer(&mut s, n, &started);
                    turn((n % 3) as usize, began);
                    waits.push(at.elapsed());
                }
                Event::Done(outcome) => {
                    cycles += 1;
                    let began = Instant::now();
                    std::hint::black_box(dispatch(&mut s, *outcome));
                    turn(3, began);
                    if Instant::now() < until {
                        let began = Instant::now();
                        thread.run(request(&s)).expect("a cycle handed over");
                        turn(3, began);
                    } else if generator.is_finished() {
                        break;
                    }
                }
            }
        }
    } else {
        drop(tx);
        while Instant::now() < until || !generator.is_finished() {
            let began = Instant::now();
            let outcome = request(&s).run();
            cycles += 1;
            std::hint::black_box(dispatch(&mut s, outcome));
            turn(3, began);
            while let Ok(event) = mailbox.try_recv() {
                if let Event::Request(at, n) = event {
                    let began = Instant::now();
                    answer(&mut s, n, &started);
                    turn((n % 3) as usize, began);
                    waits.push(at.elapsed());
                }
            }
        }
    }
    let _ = generator.join();
    waits.sort();
    Figures {
        waits,
        cycles,
        longest,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument picks the modes to run.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let secs: u64 = std::env::var("GANTRY_WAIT_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let plain = build();
    let quotas = with_quotas(plain.clone());
    for (cluster, s) in [("plain", &plain), ("quota", &quotas)] {
        for (mode, on_thread) in [("inline", false), ("thread", true)] {
            let name = format!("{cluster}/{mode}");
            if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
                continue;
            }
            let f = run(s.clone(), on_thread, secs);
            let at = |p: usize| f.waits[(f.waits.len() * p / 100).min(f.waits.len() - 1)];
            println!(
                "{name:13} requests {:5}  cycles {:4}  wait: median {}  p90 {}  max {}",
                f.waits.len(),
                f.cycles,
                ms(at(50)),
                ms(at(90)),
                ms(f.waits[f.waits.len() - 1]),
            );
            let [qstat, qsub, end, cycle] = f.longest;
            println!(
                "{:13} longest turn: qstat {}  qsub {}  job end {}  cycle outcome {}",
                "",
                ms(qstat),
                ms(qsub),
                ms(end),
                ms(cycle),
            );
        }
    }
}
