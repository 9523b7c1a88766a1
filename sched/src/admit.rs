//! The admit stage: gates that may keep a placement off a queue instance for reasons
//! outside the resource layers. The resource quota sets are the first gate; group
//! quotas and reservation windows plug in as more.
//!
//! A gate is asked after the cheap layer checks and before a placement is taken, and is
//! told of every placement (and of every placement given back) so that it can count
//! what the cycle has placed so far.

use crate::model::{Demand, Misfit, Snapshot};
use crate::quota::QuotaCycle;

/// One gate of the admit stage. A gate is plain data the cycle owns: `Send`, so that a
/// snapshot with its gates can be kept on the scheduler's thread between cycles.
pub trait Gate: std::fmt::Debug + Send {
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

/// The gates of one cycle, asked in order.
#[derive(Debug, Default)]
pub struct Gates {
    /// The resource quota sets (none while no set is enabled).
    pub quota: Option<QuotaCycle>,
    /// The group quotas (none without a group tree), asked after the quota sets.
    pub groups: Option<crate::groups::GroupGate>,
    /// Further gates, asked last.
    pub more: Vec<Box<dyn Gate>>,
}

impl Clone for Gates {
    fn clone(&self) -> Gates {
        Gates {
            quota: self.quota.clone(),
            groups: self.groups.clone(),
            more: self.more.iter().map(|g| g.clone_box()).collect(),
        }
    }
}

impl Gates {
    pub fn is_empty(&self) -> bool {
        self.quota.is_none() && self.groups.is_none() && self.more.is_empty()
    }

    pub fn each(&self) -> impl Iterator<Item = &dyn Gate> {
        self.quota
            .iter()
            .map(|q| q as &dyn Gate)
            .chain(self.groups.iter().map(|g| g as &dyn Gate))
            .chain(self.more.iter().map(|g| g.as_ref()))
    }

    pub fn each_mut(&mut self) -> impl Iterator<Item = &mut dyn Gate> {
        self.quota
            .iter_mut()
            .map(|q| q as &mut dyn Gate)
            .chain(self.groups.iter_mut().map(|g| g as &mut dyn Gate))
            .chain(self.more.iter_mut().map(|g| g.as_mut() as &mut dyn Gate))
    }
}

impl Snapshot {
    /// Add a gate, asked after those the snapshot has (the quota sets first).
    pub fn add_gate(&mut self, gate: Box<dyn Gate>) {
        self.gates.get_mut().more.push(gate);
    }

    /// Ask every gate whether `slots` slots of `d` may go on `inst`: the first refusal.
    pub fn admit(&self, d: &Demand, inst: usize, slots: u32, detail: bool) -> Result<(), Misfit> {
        let mut gates = self.gates.borrow_mut();
        if gates.is_empty() {
            return Ok(());
        }
        for gate in gates.each_mut() {
            gate.admit(self, d, inst, slots, detail)?;
        }
        Ok(())
    }

    /// Does a gate already know it refuses this, and how?
    pub fn known_refused(&self, d: &Demand, inst: usize, slots: u32) -> Option<Misfit> {
        let gates = self.gates.borrow();
        if gates.is_empty() {
            return None;
        }
        let known = gates.each().find_map(|g| g.known_refused(d, inst, slots));
        known
    }

    /// Tell every gate of a placement taken (`sign` 1) or given back (-1).
    pub fn book_gates(&self, d: &Demand, grants: &[(usize, u32)], sign: f64) {
        let mut gates = self.gates.borrow_mut();
        if gates.is_empty() {
            return;
        }
        for gate in gates.each_mut() {
            gate.book(self, d, grants, sign);
        }
    }
}
