//! The scheduler's own thread: a cycle runs on an image of the cluster state (see
//! [`ClusterImage`]) while the Cluster actor goes on answering clients and execds; its
//! decisions come back to the actor, which checks them against its state as it is then
//! ([`crate::state::ClusterState::revalidate`]) and commits what still holds.

use std::collections::HashSet;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::sched::{ClusterImage, Decisions, Time};

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
    /// Run the cycle here.
    pub fn run(self) -> CycleOutcome {
        let started = Instant::now();
        let decisions = self.image.view().schedule(self.at, &self.connected);
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
    /// Start the thread; `done` gets each outcome, on that thread.
    pub fn start(done: impl Fn(CycleOutcome) + Send + 'static) -> std::io::Result<CycleThread> {
        let (to_thread, requests) = mpsc::channel::<CycleRequest>();
        std::thread::Builder::new()
            .name("scheduler".into())
            .spawn(move || {
                for request in requests {
                    done(request.run());
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
