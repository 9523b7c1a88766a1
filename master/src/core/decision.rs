//! What a decided request comes to, whatever the request: the spool writes to commit,
//! what to do once they are durable ([`Effect`]: orders to execds, waiters to wake, a
//! log line) and the reply. The Cluster actor commits, then carries out the effects,
//! then answers; a refused request writes nothing and has no effect.

use gantry_proto::{FromMaster, JobId, Refusal, TaskId, ToExecd};

use std::collections::HashSet;

use gantry_sched::{KeptSnapshot, Time};

use crate::core::state::Op;

/// What a decided request does.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Spool writes, committed before anything else happens.
    pub ops: Vec<Op>,
    /// What the master does once they are durable.
    pub effects: Vec<Effect>,
    /// The answer, once both are done.
    pub reply: FromMaster,
}

impl Decision {
    /// The decision, asking for a scheduling cycle if it writes anything.
    pub fn asking_for_cycle(mut self) -> Decision {
        if !self.ops.is_empty() && !self.effects.contains(&Effect::Schedule) {
            self.effects.push(Effect::Schedule);
        }
        self
    }

    /// An answer: nothing written, nothing done.
    pub fn answer(reply: FromMaster) -> Decision {
        Decision {
            ops: Vec::new(),
            effects: Vec::new(),
            reply,
        }
    }

    /// A refusal: nothing written, nothing done.
    pub fn refused(refusal: Refusal) -> Decision {
        Decision::answer(FromMaster::Refused(refusal))
    }
}

/// What the master does after a decision's writes are durable.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// An order to the execd of a host, if it is connected (one that is not gets its
    /// orders from the state when it comes back).
    Send { host: String, order: ToExecd },
    /// A job left without running (deleted while pending): its `qsub -sync y` waiters
    /// are answered.
    JobLeft(JobId),
    /// A task was removed or its report recorded: its execd's confirmation of the start
    /// no longer counts.
    Forget { job: JobId, task: TaskId },
    /// A job ended: `qstat -s z` shows it among the last `finished_jobs`.
    Finished(Box<gantry_proto::JobView>),
    /// A job ended with its tasks accounted: its `qsub -sync y` waiters get its outcome.
    JobEnded(JobId),
    /// An advance reservation's mail (`qrsub -m`), if it asked for this event.
    ArMail(
        Box<gantry_proto::AdvanceReservation>,
        gantry_common::mail::ArEvent,
    ),
    /// A line for the master's log, about what the caller changed.
    Log {
        user: String,
        host: String,
        line: String,
    },
    /// Tell a connected execd to shut down (`qconf -ke`, `-kej`): it takes no more jobs.
    StopExecd { host: String, kill_jobs: bool },
    /// The master shuts itself down (`qconf -km`) once the answer is out.
    ShutDownMaster,
    /// The reply is the spool's accounting records (`qacct`) of every job, or of the job
    /// of this id or name.
    AnswerWithAccounting { job: Option<String> },
    /// The reply is the outcome of a backup of the cell written to this file.
    AnswerWithBackup { path: String },
    /// What a cycle reads changed: a scheduling cycle is asked for (it runs when
    /// [`gantry_sched::ClusterView::cycle_due`] says one is due).
    Schedule,
}

/// What a decision reads besides the state, as the shell knows it when the request
/// arrives.
pub struct Context<'a> {
    /// The master's clock.
    pub now: Time,
    /// The hosts jobs may be dispatched to (execd connected, not shutting down), made
    /// only for the requests that ask (a set of every host's name).
    pub dispatchable: &'a dyn Fn() -> HashSet<String>,
    /// Has this host an execd session (shutting down or not)?
    pub connected: &'a dyn Fn(&str) -> bool,
    /// The caller's Unix groups (asked only by the requests that need them).
    pub caller_groups: &'a dyn Fn() -> Vec<String>,
    /// A user's Unix groups, by name (`qquota`'s rules on `@group`).
    pub groups_of_name: &'a dyn Fn(&str) -> Vec<String>,
    /// Does this host name resolve in the master's name service (`/etc/hosts`, DNS)?
    /// Asked only for a name a request gives that is no host of the cell's.
    pub resolves: &'a dyn Fn(&str) -> bool,
    /// The bytes the caller's job scripts hold in the spool.
    pub caller_script_bytes: u64,
    /// The snapshot advance reservations are granted on, kept between `qrsub`s.
    pub ar_snapshot: &'a mut KeptSnapshot,
}
