//! The scheduler's own thread: a cycle runs on an image of the cluster state (see
//! [`ClusterImage`]) while the Cluster actor goes on answering clients and execds; its
//! decisions come back to the actor, which checks them against its state as it is then
//! ([`crate::core::state::ClusterState::revalidate`]) and commits what still holds.

use std::collections::HashSet;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::core::sched::{ClusterImage, Decisions, KeptSnapshot, Time};

/// What one cycle reads.
#[derive(Debug, Clone)]
pub struct CycleRequest {
    pub image: ClusterImage,
    /// The state's configuration generation when the image was taken.
    pub generation: u64,
    /// The hosts with a connected execd.
    pub connected: HashSet<String>,
    /// The cycle's time.
    pub at: Time,
}

/// A cycle's result, with what it read.
#[derive(Debug)]
pub struct CycleOutcome {
    pub request: CycleRequest,
    pub decisions: Decisions,
    /// How long the cycle took.
    pub took: Duration,
}

impl CycleRequest {
    /// Run the cycle here, on a snapshot built for it.
    pub fn run(self) -> CycleOutcome {
        self.run_with(&mut |r: &CycleRequest| r.image.view().schedule(r.at, &r.connected))
    }

    /// Run `cycle` here. A cycle that panics (a bug) decides nothing: the error is
    /// logged and the outcome still comes back, so the master goes on answering and
    /// tries again at the next change instead of waiting for the outcome forever.
    fn run_with(self, cycle: &mut dyn FnMut(&CycleRequest) -> Decisions) -> CycleOutcome {
        let started = Instant::now();
        let decisions = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cycle(&self)))
            .unwrap_or_else(|panic| {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!("the scheduling cycle failed ({why}); nothing dispatched");
                Decisions::default()
            });
        CycleOutcome {
            took: started.elapsed(),
            request: self,
            decisions,
        }
    }
}

/// The thread and the way to it. Dropping it ends the thread once it has finished the
/// cycle it runs.
#[derive(Debug)]
pub struct CycleThread {
    to_thread: mpsc::Sender<CycleRequest>,
}

impl CycleThread {
    /// Start the thread; `done` gets each outcome, on that thread. The thread keeps
    /// the snapshot of its last cycle and brings it up to date for the next (see
    /// [`KeptSnapshot`]): a configuration change rebuilds it, a host's load report
    /// that host's part.
    pub fn start(done: impl Fn(CycleOutcome) + Send + 'static) -> std::io::Result<CycleThread> {
        let mut kept = KeptSnapshot::default();
        CycleThread::start_with(
            move |r: &CycleRequest| kept.schedule(&r.image, r.at, &r.connected),
            done,
        )
    }

    /// The same with another cycle (a test's); see [`CycleRequest::run`] for a cycle
    /// that panics.
    pub fn start_with(
        mut cycle: impl FnMut(&CycleRequest) -> Decisions + Send + 'static,
        done: impl Fn(CycleOutcome) + Send + 'static,
    ) -> std::io::Result<CycleThread> {
        let (to_thread, requests) = mpsc::channel::<CycleRequest>();
        std::thread::Builder::new()
            .name("scheduler".into())
            .spawn(move || {
                for request in requests {
                    done(request.run_with(&mut cycle));
                }
            })?;
        Ok(CycleThread { to_thread })
    }

    /// Hand a cycle to the thread; the request comes back if the thread is gone.
    pub fn run(&self, request: CycleRequest) -> Result<(), Box<CycleRequest>> {
        self.to_thread
            .send(request)
            .map_err(|mpsc::SendError(r)| Box::new(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> CycleRequest {
        CycleRequest {
            image: ClusterImage::default(),
            generation: 7,
            connected: HashSet::new(),
            at: Time::from_secs(1),
        }
    }

    #[test]
    fn a_cycle_that_panics_still_comes_back_with_nothing_decided() {
        let (tx, rx) = mpsc::channel();
        let thread = CycleThread::start_with(
            |r: &CycleRequest| {
                if r.generation == 7 {
                    panic!("a bug");
                }
                Decisions::default()
            },
            move |o| tx.send(o).unwrap(),
        )
        .unwrap();
        thread.run(request()).unwrap();
        let outcome = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(outcome.request.generation, 7);
        assert!(outcome.decisions.dispatches.is_empty());
        // The thread is still there for the next cycle.
        let mut next = request();
        next.generation = 8;
        thread.run(next).unwrap();
        let outcome = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(outcome.request.generation, 8);
    }
}
