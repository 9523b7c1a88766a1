//! One cycle's own state over a snapshot: the admit stage's gates with what the cycle
//! booked under them, the group rounds' order and allocation, the reservations made,
//! and what is kept for the next cycle on the same snapshot (the categories the last
//! cycle left without room, the queue instances' quota places). The snapshot itself is
//! plain data ([`crate::model`]); everything a cycle works out as it goes lives here.

use std::sync::Arc;

use crate::decisions::Reservation;
use crate::gate::Gates;
use crate::group_rounds::StarvationOrder;
use crate::groups::Allocation;
use crate::quota::{Places, QuotaCycle, Quotas};
use crate::settled::Settled;

/// One cycle's state: made afresh for a cycle, or kept with a snapshot between cycles.
#[derive(Debug, Clone, Default)]
pub struct Pass {
    /// The admit stage's gates (the resource quota sets first), with what this cycle
    /// has booked under them. Gates from outside the crate are registered after the
    /// cycle's own ([`Gates::register`]).
    pub gates: Gates,
    /// With group quotas, the order this cycle serves the groups in.
    pub(crate) group_order: Option<StarvationOrder>,
    /// With group quotas, this cycle's allocation (handed out with the decisions).
    pub(crate) group_allocation: Option<Allocation>,
    /// The `-R y` reservations this cycle made.
    pub reservations: Vec<Reservation>,
    /// In a cycle on a kept snapshot: the categories the last cycle left without room,
    /// and where room may have come since (None: every category is looked at whole).
    pub(crate) settled: Option<Settled>,
    /// Which rules of the quota sets take each queue instance, as the last cycle on
    /// this snapshot worked it out, with the sets it was worked out under: a snapshot
    /// kept between cycles is rebuilt when queues or host groups change, so the next
    /// cycle under the same sets need not work it out again.
    pub(crate) quota_places: Option<(Arc<Quotas>, Places)>,
    /// Every job's priority this cycle (the order stage serves pending jobs by it).
    pub(crate) priorities: Option<Arc<crate::priority::Priorities>>,
    /// This cycle's pending jobs looked at (the most of any of its passes), and the
    /// categories they fell into.
    pub(crate) considered: usize,
    pub(crate) categories: usize,
}

impl Pass {
    /// The cycle's gates closed at its end: the quota places kept for the next cycle
    /// under the same sets; how many quota usage counters the cycle used.
    pub(crate) fn close_gates(&mut self) -> usize {
        let quota = self.gates.take::<QuotaCycle>();
        self.gates = Gates::default();
        let quota_counters = quota.as_ref().map_or(0, |q| q.usage.len());
        self.quota_places = quota.map(|q| (q.quotas, q.at.places));
        quota_counters
    }

    /// Forget what an earlier question on this state booked and decided (the kept
    /// caches stay).
    pub(crate) fn reset(&mut self) {
        self.gates = Gates::default();
        self.reservations.clear();
    }
}
