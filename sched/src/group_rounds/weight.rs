//! What a job's slots weigh in group quotas (`group_slot_weight` in the scheduler
//! configuration; by default `slots`, so that a weighted slot is a slot), and the pool
//! of weighted slots the cluster offers.
//!
//! In the formula, `slots` is the slots a task takes and any other name a complex
//! attribute: for a job, what it requests of it per slot (its default where the complex
//! gives the job one, else 0); for the pool, what a queue instance offers of it per
//! slot (the instance's value, else its host's, else the global one, configured or
//! reported, divided by the
//! instance's slots), so that a job taking a whole instance weighs what the instance
//! adds to the pool. A weight that comes out negative or not finite (a division by
//! zero, an instance offering an infinite amount) counts the slots instead.

use gantry_common::formula::Formula;
use gantry_common::job::{Job, TaskState};
use gantry_common::value::Value;
use gantry_proto::AdvanceReservation;

use crate::model::{demand, Request, Snapshot};

/// The slot weight formula of a cycle; None: plain slots.
#[derive(Debug, Clone, Default)]
pub struct SlotWeight(Option<Formula>);

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Num(n) => Some(*n),
        _ => None,
    }
}

/// `formula`'s value, or `slots` where that is not a weight.
fn weight_or_slots(formula: &Formula, slots: f64, value: &dyn Fn(&str) -> Option<f64>) -> f64 {
    let w = formula.eval(&|n| if n == "slots" { Some(slots) } else { value(n) });
    if w.is_finite() && w >= 0.0 {
        w
    } else {
        slots
    }
}

impl SlotWeight {
    pub fn new(formula: &Formula) -> SlotWeight {
        SlotWeight((!formula.is_name("slots")).then(|| formula.clone()))
    }

    /// Is a weighted slot a slot (allocations then in whole slots)?
    pub fn is_slots(&self) -> bool {
        self.0.is_none()
    }

    /// What `slots` slots of a job with these hard requests weigh.
    pub fn of_requests(&self, snap: &Snapshot, hard: &[Request], slots: f64) -> f64 {
        let Some(f) = &self.0 else {
            return slots;
        };
        weight_or_slots(f, slots, &|name| {
            let attr = snap.catalog.id(name)?;
            hard.iter()
                .find(|r| r.attr == attr)
                .and_then(|r| number(&r.value))
        })
    }

    /// A job's weight running (what its tasks hold now) and pending (what its pending
    /// tasks would take, a parallel job's range minimum each).
    pub fn of_job(&self, snap: &Snapshot, job: &Job) -> (f64, f64) {
        let running_slots = || {
            job.tasks.placed_states().filter_map(|t| match t {
                TaskState::Running { grants, .. } | TaskState::Deleting { grants, .. } => {
                    Some(grants.iter().map(|g| g.slots as f64).sum::<f64>())
                }
                _ => None,
            })
        };
        let per_task = job
            .spec
            .pe
            .as_ref()
            .and_then(|(_, range)| gantry_common::pe::parse_slot_range(range))
            .map_or(1.0, |(min, _)| min as f64);
        let pending = job.tasks.pending().len() as f64;
        if self.0.is_none() {
            return (running_slots().sum(), pending * per_task);
        }
        // A job whose requests the complex no longer knows weighs its slots.
        let hard = demand(&snap.catalog, job)
            .map(|d| d.hard)
            .unwrap_or_default();
        (
            running_slots()
                .map(|s| self.of_requests(snap, &hard, s))
                .sum(),
            pending * self.of_requests(snap, &hard, per_task),
        )
    }

    /// What an advance reservation's slots weigh.
    pub fn of_reservation(&self, snap: &Snapshot, ar: &AdvanceReservation) -> f64 {
        let slots: f64 = ar.granted.iter().map(|g| g.slots as f64).sum();
        if self.0.is_none() {
            return slots;
        }
        let hard = crate::ar::request_demand(&snap.catalog, ar)
            .map(|d| d.hard)
            .unwrap_or_default();
        self.of_requests(snap, &hard, slots)
    }

    /// The pool: what every queue instance's slots weigh.
    pub fn pool(&self, snap: &Snapshot) -> f64 {
        let fixed = |layer: &crate::model::Layer, attr: usize| {
            layer
                .get(attr)
                .and_then(|o| o.fixed.as_ref().or(o.load.as_ref()))
                .and_then(number)
        };
        let Some(slots_attr) = snap.catalog.id("slots") else {
            return 0.0;
        };
        snap.instances
            .iter()
            .filter_map(|i| {
                let slots = fixed(&i.layer, slots_attr)?;
                let Some(f) = &self.0 else {
                    return Some(slots);
                };
                Some(weight_or_slots(f, slots, &|name| {
                    let attr = snap.catalog.id(name)?;
                    let offered = fixed(&i.layer, attr)
                        .or_else(|| fixed(&snap.hosts[i.host].layer, attr))
                        .or_else(|| fixed(&snap.global, attr))?;
                    (slots > 0.0).then(|| offered / slots)
                }))
            })
            .sum()
    }
}
