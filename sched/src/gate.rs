//! The admit stage's contract: a [`Gate`] may keep a placement off a queue instance for
//! reasons outside the resource layers, and [`Gates`] are the gates of one cycle, asked
//! in the order they were registered (the resource quota sets first, then the group
//! quotas, then any other). A new gate implements [`Gate`] in its own module and is
//! registered with one [`Gates::register`] where the cycle opens its gates.
//!
//! A gate is asked after the cheap layer checks and before a placement is taken, and is
//! told of every placement (and of every placement given back) so that it can count
//! what the cycle has placed so far.

use std::any::Any;

use crate::decisions::Misfit;
use crate::model::{Demand, Snapshot};

/// One gate of the admit stage. A gate is plain data the cycle owns: `Send`, so that a
/// snapshot with its gates can be kept on the scheduler's thread between cycles.
pub trait Gate: std::fmt::Debug + Send + Any {
    /// What the gate is (for diagnostics).
    fn name(&self) -> &'static str;

    /// May `slots` slots of the demand be placed on instance `inst`? With `detail`, a
    /// refusal says why in the scheduler's words (`qstat -j`, `qsub -w v`); without, the
    /// cycle only needs to know.
    fn admit(
        &mut self,
        snap: &Snapshot,
        d: &Demand,
        inst: usize,
        slots: u32,
        detail: bool,
    ) -> Result<(), Misfit>;

    /// Is it known from earlier in this cycle that the gate refuses this (asked before
    /// the layers, so it must be cheap)? How: [`Misfit::QuotaEverywhere`] when on every
    /// instance alike, else [`Misfit::Unexplained`].
    fn known_refused(&self, _d: &Demand, _inst: usize, _slots: u32) -> Option<Misfit> {
        None
    }

    /// A placement was taken (`sign` 1) or given back (-1): count it.
    fn book(&mut self, snap: &Snapshot, d: &Demand, grants: &[(usize, u32)], sign: f64);

    /// Forget everything counted: what could a job get with nothing running.
    fn forget_bookings(&mut self);

    fn clone_box(&self) -> Box<dyn Gate>;
}

/// The gates of one cycle, asked in the order registered.
#[derive(Debug, Default)]
pub struct Gates {
    list: Vec<Box<dyn Gate>>,
}

impl Clone for Gates {
    fn clone(&self) -> Gates {
        Gates {
            list: self.list.iter().map(|g| g.clone_box()).collect(),
        }
    }
}

impl Gates {
    /// Add a gate, asked after those already registered.
    pub fn register(&mut self, gate: Box<dyn Gate>) {
        self.list.push(gate);
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The registered gate of type `G`, for the stage that registered it.
    pub fn get<G: Gate>(&self) -> Option<&G> {
        self.list
            .iter()
            .find_map(|g| (g.as_ref() as &dyn Any).downcast_ref::<G>())
    }

    /// The same, to change.
    pub fn get_mut<G: Gate>(&mut self) -> Option<&mut G> {
        self.list
            .iter_mut()
            .find_map(|g| (g.as_mut() as &mut dyn Any).downcast_mut::<G>())
    }

    /// Take the registered gate of type `G` out of the list.
    pub fn take<G: Gate>(&mut self) -> Option<G> {
        let at = self
            .list
            .iter()
            .position(|g| (g.as_ref() as &dyn Any).is::<G>())?;
        let gate: Box<dyn Any> = self.list.remove(at);
        gate.downcast::<G>().ok().map(|g| *g)
    }

    /// Ask every gate whether `slots` slots of `d` may go on `inst`: the first refusal.
    pub fn admit(
        &mut self,
        snap: &Snapshot,
        d: &Demand,
        inst: usize,
        slots: u32,
        detail: bool,
    ) -> Result<(), Misfit> {
        for gate in &mut self.list {
            gate.admit(snap, d, inst, slots, detail)?;
        }
        Ok(())
    }

    /// Does a gate already know it refuses this, and how?
    pub fn known_refused(&self, d: &Demand, inst: usize, slots: u32) -> Option<Misfit> {
        self.list
            .iter()
            .find_map(|g| g.known_refused(d, inst, slots))
    }

    /// Tell every gate of a placement taken (`sign` 1) or given back (-1).
    pub fn book(&mut self, snap: &Snapshot, d: &Demand, grants: &[(usize, u32)], sign: f64) {
        for gate in &mut self.list {
            gate.book(snap, d, grants, sign);
        }
    }

    /// Every gate forgets what it counted.
    pub fn forget_bookings(&mut self) {
        for gate in &mut self.list {
            gate.forget_bookings();
        }
    }
}
