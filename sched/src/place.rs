//! The place stage: where a job's tasks go. The candidates of a category (every
//! instance whose static values fit, fewest soft-request violations first, then in
//! `queue_sort_method` order) and, per task, the first candidate with room, or for a
//! parallel job an allocation by its parallel environment's rule.

use gantry_common::job::{wildcard, Job};
use gantry_proto::{ArId, JobId};

use crate::decisions::Misfit;
use crate::gate::Gates;
use crate::matching::*;
use crate::model::*;

/// What makes jobs alike: the same requests by the same user and project (and advance
/// reservation, which exempts from quotas, and account, which names a job's group).
/// Jobs alike share a [`Category`]. Borrowed from the job: hashed once per pending job
/// and cycle, never copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CategoryKey<'j> {
    pub hard_resources: &'j [(String, String)],
    pub soft_resources: &'j [(String, String)],
    pub queues: &'j [String],
    pub soft_queues: &'j [String],
    pub masterq: &'j [String],
    pub ckpt: Option<&'j str>,
    pub user: &'j str,
    pub project: Option<&'j str>,
    pub pe: Option<&'j (String, String)>,
    pub ar: Option<ArId>,
    pub account: &'j str,
    /// The owner's Unix groups: `@group` entries of access lists and quota rules.
    pub groups: &'j [String],
    pub queue_kind: crate::model::QueueKind,
}

pub fn category_key(job: &Job) -> CategoryKey<'_> {
    CategoryKey {
        hard_resources: &job.spec.hard_resources,
        soft_resources: &job.spec.soft_resources,
        queues: &job.spec.queues,
        soft_queues: &job.spec.soft_queues,
        masterq: &job.spec.masterq,
        ckpt: job.spec.ckpt.as_deref(),
        user: &job.owner.user,
        project: job.spec.project.as_deref(),
        pe: job.spec.pe.as_ref(),
        ar: job.spec.ar,
        account: &job.spec.account,
        groups: &job.owner.groups,
        queue_kind: crate::model::QueueKind::of(&job.spec),
    }
}

/// Jobs alike within one cycle: their demand, and where they may go.
#[derive(Debug, Clone)]
pub struct Category {
    pub demand: Demand,
    /// Candidate instances, best first.
    pub candidates: Vec<usize>,
    /// Candidates before this one cannot take another job of the category.
    pub cursor: usize,
    /// A gate refused the category everywhere (a quota set, or its group at its
    /// allocation): closed where its cursor stood, for a later pass of group quotas to
    /// open again when the group gets more.
    pub closed: bool,
    /// The job it was made for.
    pub job: JobId,
    /// Its candidates are only the instances where room may have come since the last
    /// cycle, which left it none (see [`crate::settled`]).
    pub restricted: bool,
}

impl Category {
    /// Nothing left for the category in this cycle: resources only shrink while a
    /// cycle places jobs.
    pub fn exhausted(&self) -> bool {
        self.closed || self.cursor >= self.candidates.len()
    }

    /// Open it again from its first candidate.
    pub fn reopen(&mut self) {
        self.cursor = 0;
        self.closed = false;
    }
}

/// Where one task goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    /// (instance, slots), the master queue first.
    pub grants: Vec<(usize, u32)>,
    /// The parallel environment chosen for a `-pe` request.
    pub pe: Option<String>,
    /// Already booked: a parallel allocation books slot by slot as it takes them.
    pub booked: bool,
}

impl Snapshot {
    /// The category of a job, numbered `id` within the cycle (None: the job requests
    /// what the complex no longer has).
    pub fn category(&self, job: &Job, id: usize) -> Option<Category> {
        self.category_among(job, id, None)
    }

    /// A category with the candidates among `only` (by instance; None: all).
    pub(crate) fn category_among(
        &self,
        job: &Job,
        id: usize,
        only: Option<&[bool]>,
    ) -> Option<Category> {
        let mut d = demand(&self.catalog, job)
            .ok()?
            .with_default_run_time(self.default_duration);
        d.category = id;
        let mut scored: Vec<(usize, usize)> = self
            .static_candidates(&d, only)
            .into_iter()
            .map(|i| (self.soft_violations(&d, i), i))
            .collect();
        // Stable: instances with fewer soft violations first, else sort order.
        scored.sort_by_key(|(v, _)| *v);
        Some(Category {
            demand: d,
            candidates: scored.into_iter().map(|(_, i)| i).collect(),
            cursor: 0,
            closed: false,
            job: job.id,
            restricted: only.is_some(),
        })
    }

    /// Place one task of a category: a parallel job by its environment's allocation
    /// rule, any other on the first candidate with room that every gate admits. None
    /// when nothing is left for the category in this cycle (its cursor then says so).
    pub fn place_task(&mut self, gates: &mut Gates, cat: &mut Category) -> Option<Placement> {
        let d = &cat.demand;
        if let Some(per) = &d.pe {
            return match self.allocate_pe(gates, d, per, &cat.candidates) {
                Some((pe, grants)) => Some(Placement {
                    grants,
                    pe: Some(pe),
                    booked: true,
                }),
                None => {
                    cat.cursor = cat.candidates.len();
                    None
                }
            };
        }
        while !cat.exhausted() {
            match self.check(
                gates,
                d,
                cat.candidates[cat.cursor],
                Check::Consumables(d.slots),
                false,
            ) {
                Ok(()) => break,
                // Full under a rule that decides everywhere: so is every other instance.
                Err(Misfit::QuotaEverywhere) => cat.closed = true,
                Err(_) => cat.cursor += 1,
            }
        }
        if cat.closed {
            return None;
        }
        let &inst = cat.candidates.get(cat.cursor)?;
        Some(Placement {
            grants: vec![(inst, d.slots)],
            pe: None,
            booked: false,
        })
    }

    /// The instances a category's jobs could run in, ignoring consumables, in sort order:
    /// the global layer is matched once, each host once, each queue instance on top;
    /// only those of `only` (by instance) when given.
    pub(crate) fn static_candidates(&self, d: &Demand, only: Option<&[bool]>) -> Vec<usize> {
        let layer_ok = |layer: &Layer| {
            d.hard
                .iter()
                .all(|r| self.holds_on(layer, r, d.slots, Check::Static, None) != Some(false))
        };
        if !layer_ok(&self.global) {
            return Vec::new();
        }
        let lists_ok = |allow: &[String], deny: &[String], projects: (&[String], &[String])| {
            (allow.is_empty() || self.in_userset(d, allow))
                && !self.in_userset(d, deny)
                && match &d.project {
                    Some(p) => {
                        !projects.1.contains(p) && (projects.0.is_empty() || projects.0.contains(p))
                    }
                    None => projects.0.is_empty(),
                }
        };
        let mut host_ok: Vec<Option<bool>> = vec![None; self.hosts.len()];
        self.order
            .iter()
            .copied()
            .filter(|&inst| only.is_none_or(|only| only[inst]))
            .filter(|&inst| {
                let h = self.instances[inst].host;
                let ok = *host_ok[h].get_or_insert_with(|| {
                    let host = &self.hosts[h];
                    lists_ok(
                        &host.user_lists,
                        &host.xuser_lists,
                        (&host.projects, &host.xprojects),
                    ) && layer_ok(&host.layer)
                });
                ok && self
                    .check_from(
                        &mut Gates::default(),
                        d,
                        inst,
                        Check::Static,
                        false,
                        Level::Queue,
                    )
                    .is_ok()
            })
            .collect()
    }

    /// Place a parallel job: the first parallel environment matching the request (in
    /// name order) whose allocation rule can give it at least `min` slots on the
    /// candidates (as many as possible up to `max`). Consumables are debited as slots
    /// are taken; a failed attempt gives everything back.
    pub fn allocate_pe(
        &mut self,
        gates: &mut Gates,
        d: &Demand,
        per: &PeRequest,
        candidates: &[usize],
    ) -> Option<(String, Vec<(usize, u32)>)> {
        let (mut per_slot, mut per_job) = d.split(&self.catalog);
        let names: Vec<String> = self
            .pes
            .keys()
            .filter(|n| wildcard(&per.pattern, n))
            .cloned()
            .collect();
        for name in names {
            let pe = &self.pes[&name];
            if (!pe.user_lists.is_empty() && !self.in_userset(d, &pe.user_lists))
                || self.in_userset(d, &pe.xuser_lists)
            {
                continue;
            }
            let free = pe
                .slots
                .saturating_sub(self.pe_in_use(&name, d.until(self.now)));
            let max = per.max.min(free);
            if max < per.min {
                continue;
            }
            let rule = pe.allocation_rule;
            per_slot.granted_pe = Some(name.clone());
            per_job.granted_pe = Some(name.clone());
            let offering: Vec<usize> = candidates
                .iter()
                .copied()
                .filter(|&i| self.instances[i].pe_list.contains(&name))
                .collect();
            // `-masterq`: each instance it names may be the master (the first slot
            // taken), tried in turn; the others take slots only where `-q` allows.
            let orders: Vec<Vec<usize>> = if d.masterq.is_empty() {
                vec![offering]
            } else {
                let in_list = |i: usize, list: &[String]| list.iter().any(|q| self.wants(q, i));
                let slaves: Vec<usize> = offering
                    .iter()
                    .copied()
                    .filter(|&i| d.queues.is_empty() || in_list(i, &d.queues))
                    .collect();
                offering
                    .iter()
                    .copied()
                    .filter(|&m| in_list(m, &d.masterq))
                    .map(|m| {
                        std::iter::once(m)
                            .chain(slaves.iter().copied().filter(|&s| s != m))
                            .collect()
                    })
                    .collect()
            };
            for order in orders {
                // A master instance outside the `-q` list holds the master task only.
                let master_only = !d.masterq.is_empty()
                    && !d.queues.is_empty()
                    && !d.queues.iter().any(|q| self.wants(q, order[0]));
                let mut grants = if master_only {
                    self.allocate_after_master(gates, &per_slot, rule, &order, per.min, max)
                } else {
                    self.allocate(gates, &per_slot, rule, &order, per.min, max)
                };
                let total = grants_total(&grants);
                let master = grants.first().map(|g| g.0);
                let master_ok = d.masterq.is_empty() || master == order.first().copied();
                let fits_job = master
                    .is_some_and(|m| self.fits(gates, &per_job, m, Check::Consumables(total)));
                if total >= per.min && fits_job && master_ok {
                    if let Some(m) = master {
                        self.debit(gates, &per_job, &[(m, total)], 1.0);
                    }
                    self.hold_pe(PeHold {
                        pe: name.clone(),
                        slots: total,
                        from: self.now,
                        until: d.until(self.now),
                    });
                    return Some((name, grants));
                }
                self.debit(gates, &per_slot, &grants, -1.0);
                grants.clear();
            }
        }
        None
    }

    /// A parallel job whose master instance (`order[0]`) takes only the master task:
    /// one slot there, the rest by the rule on the others (on the master's host for
    /// `$pe_slots`). Nothing taken when either part finds no room.
    fn allocate_after_master(
        &mut self,
        gates: &mut Gates,
        d: &Demand,
        rule: gantry_common::pe::AllocationRule,
        order: &[usize],
        min: u32,
        max: u32,
    ) -> Vec<(usize, u32)> {
        let master = order[0];
        if max == 0 || !self.fits(gates, d, master, Check::Consumables(1)) {
            return Vec::new();
        }
        self.debit(gates, d, &[(master, 1)], 1.0);
        let host = self.instances[master].host;
        let rest: Vec<usize> = order[1..]
            .iter()
            .copied()
            .filter(|&i| {
                rule != gantry_common::pe::AllocationRule::PeSlots || self.instances[i].host == host
            })
            .collect();
        let others = if max > 1 {
            self.allocate(gates, d, rule, &rest, min.saturating_sub(1), max - 1)
        } else {
            Vec::new()
        };
        let mut grants = vec![(master, 1)];
        grants.extend(others);
        grants
    }

    /// Take slots one by one by an allocation rule; the grants in the order first taken.
    pub(crate) fn allocate(
        &mut self,
        gates: &mut Gates,
        d: &Demand,
        rule: gantry_common::pe::AllocationRule,
        offering: &[usize],
        min: u32,
        max: u32,
    ) -> Vec<(usize, u32)> {
        use gantry_common::pe::AllocationRule;
        let mut hosts: Vec<usize> = Vec::new();
        for &i in offering {
            let h = self.instances[i].host;
            if !hosts.contains(&h) {
                hosts.push(h);
            }
        }
        let mut grants: Vec<(usize, u32)> = Vec::new();
        // EXCL attributes are taken once per host, not per slot: apart from the slots.
        let exclusive = |r: &Request| self.catalog.exclusive.contains(&r.attr);
        let mut per_slot = d.clone();
        per_slot.hard.retain(|r| !exclusive(r));
        let mut per_host = d.clone();
        per_host.hard.retain(exclusive);
        per_host.soft.clear();
        // Giving a host's slots back gives its EXCL share back too.
        let whole = d;
        let (d, per_host) = (&per_slot, (!per_host.hard.is_empty()).then_some(per_host));
        // Up to `want` more slots on host `h`, instance by instance.
        let take = |snap: &mut Snapshot,
                    gates: &mut Gates,
                    grants: &mut Vec<(usize, u32)>,
                    h: usize,
                    want: u32| {
            let mut got = 0;
            let on_host: Vec<usize> = offering
                .iter()
                .copied()
                .filter(|&i| snap.instances[i].host == h)
                .collect();
            let first_on_host = !grants.iter().any(|g| snap.instances[g.0].host == h);
            if let (Some(ph), true) = (&per_host, first_on_host) {
                match on_host.first() {
                    Some(&i) if snap.fits(gates, ph, i, Check::Consumables(1)) => {}
                    _ => return 0,
                }
            }
            let mut taken: Vec<(usize, u32)> = Vec::new();
            for i in on_host {
                while got < want && snap.fits(gates, d, i, Check::Consumables(1)) {
                    snap.debit(gates, d, &[(i, 1)], 1.0);
                    match grants.iter_mut().find(|g| g.0 == i) {
                        Some(g) => g.1 += 1,
                        None => grants.push((i, 1)),
                    }
                    match taken.iter_mut().find(|g| g.0 == i) {
                        Some(g) => g.1 += 1,
                        None => taken.push((i, 1)),
                    }
                    got += 1;
                }
            }
            if let (Some(ph), true, false) = (&per_host, first_on_host, taken.is_empty()) {
                snap.debit(gates, ph, &taken, 1.0);
            }
            got
        };
        match rule {
            AllocationRule::PeSlots => {
                for &h in &hosts {
                    let mut here = Vec::new();
                    let got = take(self, gates, &mut here, h, max);
                    if got >= min {
                        return here;
                    }
                    self.debit(gates, whole, &here, -1.0);
                }
            }
            AllocationRule::FillUp => {
                for &h in &hosts {
                    let total = grants_total(&grants);
                    if total >= max {
                        break;
                    }
                    take(self, gates, &mut grants, h, max - total);
                }
            }
            AllocationRule::RoundRobin => loop {
                let mut progress = false;
                for &h in &hosts {
                    if grants_total(&grants) >= max {
                        break;
                    }
                    progress |= take(self, gates, &mut grants, h, 1) == 1;
                }
                if !progress || grants_total(&grants) >= max {
                    break;
                }
            },
            AllocationRule::PerHost(n) => {
                for &h in &hosts {
                    if grants_total(&grants) + n > max {
                        break;
                    }
                    let mut here = Vec::new();
                    if take(self, gates, &mut here, h, n) == n {
                        grants.extend(here);
                    } else {
                        self.debit(gates, whole, &here, -1.0);
                    }
                }
            }
        }
        grants
    }

    /// How many soft requests an instance violates (a soft queue list counts as one).
    pub(crate) fn soft_violations(&self, d: &Demand, inst: usize) -> usize {
        let layers = self.layers(inst);
        let queue = usize::from(
            !d.soft_queues.is_empty() && !d.soft_queues.iter().any(|q| self.wants(q, inst)),
        );
        queue
            + d.soft
                .iter()
                .filter(|r| {
                    let mut defined = false;
                    for (_, layer) in layers {
                        match self.holds_on(layer, r, 1, Check::All(1), d.until(self.now)) {
                            Some(false) => return true,
                            Some(true) => defined = true,
                            None => {}
                        }
                    }
                    !defined
                })
                .count()
    }
}

pub(crate) fn grants_total(grants: &[(usize, u32)]) -> u32 {
    grants.iter().map(|(_, n)| n).sum()
}
