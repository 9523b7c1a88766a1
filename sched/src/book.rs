//! The book stage: what a placement takes, debited where the cycle reads it (every
//! layer's consumables, the admit stage's gates) and the load a start adds to its host.

use gantry_proto::Consumable;

use crate::matching::*;
use crate::model::*;
use crate::time::Time;

impl Snapshot {
    /// Book a placement: its consumables on every layer and under every gate (unless
    /// its allocation already did), and the load its start adds to its hosts.
    pub fn book(&mut self, d: &Demand, p: &crate::place::Placement) {
        if !p.booked {
            self.debit(d, &p.grants, 1.0);
        }
        self.started(&p.grants);
    }

    /// Jobs just placed raise their hosts' adjusted load at once (a full weight per
    /// slot), which may put queue instances there over their load thresholds for the
    /// rest of the cycle.
    pub(crate) fn started(&mut self, grants: &[(usize, u32)]) {
        if self.adjustments.is_empty() {
            return;
        }
        for &(inst, slots) in grants {
            let h = self.instances[inst].host;
            let host = &mut self.hosts[h];
            host.weight += slots as f64;
            adjust(
                &self.catalog,
                &self.adjustments,
                &mut host.layer,
                &host.reported,
                host.weight,
                host.nproc,
            );
            for i in self.hosts[h].instances.clone() {
                if self.instances[i].unusable.is_none() {
                    self.instances[i].unusable = overload_message(
                        &self.catalog,
                        &self.hosts[h],
                        &self.adjustments,
                        &self.instances[i].thresholds,
                    )
                    .map(Unusable::Overloaded);
                }
            }
        }
    }

    /// Debit (or with a negative sign, credit) a job's consumables on the layers of the
    /// queue instances it was granted: booked from now for its run time.
    pub fn debit(&mut self, d: &Demand, grants: &[(usize, u32)], sign: f64) {
        self.book_gates(d, grants, sign);
        let from = self.now;
        self.hold(d, grants, sign, from, d.until(from));
    }

    /// Book an EXCL attribute: once globally, once on each host and on each queue
    /// instance a task holds slots in, however many slots.
    fn hold_exclusive(
        &mut self,
        attr: usize,
        amount: f64,
        grants: &[(usize, u32)],
        from: Time,
        until: Option<Time>,
    ) {
        if grants.is_empty() {
            return;
        }
        self.global
            .book(&mut self.calendar, attr, amount, from, until);
        let mut hosts: Vec<usize> = Vec::new();
        for &(inst, _) in grants {
            let host = self.instances[inst].host;
            if !hosts.contains(&host) {
                hosts.push(host);
                self.hosts[host]
                    .layer
                    .book(&mut self.calendar, attr, amount, from, until);
            }
            self.instances[inst]
                .layer
                .book(&mut self.calendar, attr, amount, from, until);
        }
    }

    /// Book a job's consumables on the layers of its grants over `[from, until)` (a
    /// credit is a negative booking of the same interval).
    pub fn hold(
        &mut self,
        d: &Demand,
        grants: &[(usize, u32)],
        sign: f64,
        from: Time,
        until: Option<Time>,
    ) {
        let total: u32 = grants.iter().map(|(_, n)| n).sum();
        let consumables: Vec<(usize, f64, Consumable)> = d.consumables(&self.catalog).collect();
        for (attr, amount, kind) in consumables {
            if self.catalog.exclusive.contains(&attr) {
                self.hold_exclusive(attr, sign * amount, grants, from, until);
                continue;
            }
            let per_slot = kind != Consumable::Job;
            let global = if per_slot {
                amount * total as f64
            } else {
                amount
            };
            self.global
                .book(&mut self.calendar, attr, sign * global, from, until);
            for (n, (inst, slots)) in grants.iter().enumerate() {
                let here = match (per_slot, n) {
                    (true, _) => amount * *slots as f64,
                    (false, 0) => amount,
                    (false, _) => 0.0,
                };
                let host = self.instances[*inst].host;
                self.hosts[host]
                    .layer
                    .book(&mut self.calendar, attr, sign * here, from, until);
                self.instances[*inst].layer.book(
                    &mut self.calendar,
                    attr,
                    sign * here,
                    from,
                    until,
                );
            }
        }
    }
}
