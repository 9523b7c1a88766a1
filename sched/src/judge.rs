//! The judge stage of a snapshot: at the time of a cycle (or a question), each host's
//! values with the load of recent starts, each queue instance usable or why not
//! (disabled, in error, suspended, over a threshold, its host unreachable), and the
//! order candidates are tried in.

use std::collections::{HashMap, HashSet};

use gantry_common::job::{Job, TaskState};
use gantry_common::value::Value;

use crate::matching::*;
use crate::model::*;
use crate::time::Time;
use crate::view::ClusterView;

impl<'a> ClusterView<'a> {
    /// Everything of [`ClusterView::finish_snapshot`] but the bookings: the time, the
    /// hosts' adjusted values and loads, every queue instance's state, the candidate
    /// order, and the gates emptied of what an earlier cycle booked. `running`: the jobs
    /// with running tasks when they are known (None: every job is looked at for the
    /// load of their recent starts).
    pub(crate) fn judge_instances(
        &self,
        snap: &mut Snapshot,
        connected: &HashSet<String>,
        now: Time,
        adjusted: bool,
        running: Option<&[&Job]>,
    ) {
        let sconf = self.sched_conf();
        snap.now = now;
        snap.default_duration = sconf.default_duration;
        snap.reservations.clear();
        *snap.gates.get_mut() = Default::default();
        // Recently started job slots per host, each weighted by the decay time left.
        let mut weights: HashMap<&str, f64, foldhash::fast::RandomState> = HashMap::default();
        if adjusted && sconf.decay_secs > 0.0 && !snap.adjustments.is_empty() {
            let now = now.secs();
            let jobs: Box<dyn Iterator<Item = &Job>> = match running {
                Some(jobs) => Box::new(jobs.iter().copied()),
                None => Box::new(self.jobs.values().map(|j| &**j)),
            };
            for job in jobs {
                for t in job.tasks.placed_states() {
                    if let TaskState::Running {
                        grants, start_time, ..
                    } = t
                    {
                        let age = (now - start_time).max(0) as f64;
                        if age < sconf.decay_secs {
                            let w = 1.0 - age / sconf.decay_secs;
                            for g in grants {
                                *weights.entry(g.host.as_str()).or_insert(0.0) +=
                                    w * g.slots as f64;
                            }
                        }
                    }
                }
            }
        }
        let Snapshot {
            catalog,
            hosts,
            instances,
            adjustments,
            ..
        } = snap;
        // Each host's name hashed twice, not once per queue instance.
        let reachable: Vec<bool> = hosts
            .iter()
            .map(|h| connected.contains(&h.name) && self.is_reachable(&h.name, now))
            .collect();
        for host in hosts.iter_mut() {
            host.weight = weights.get(host.name.as_str()).copied().unwrap_or(0.0);
            adjust(
                catalog,
                adjustments,
                &mut host.layer,
                &host.reported,
                host.weight,
                host.nproc,
            );
            host.load = sconf
                .load_formula
                .iter()
                .map(|(w, n)| {
                    if n.is_empty() {
                        return *w;
                    }
                    let v = catalog
                        .id(n)
                        .and_then(|id| host.layer.get(id))
                        .and_then(|o| o.load.clone().or(o.fixed.clone()));
                    match v {
                        Some(Value::Num(x)) => w * x,
                        _ => 0.0,
                    }
                })
                .sum();
        }
        for inst in instances.iter_mut() {
            let host = &hosts[inst.host];
            // Most clusters have no instance in these sets: no key is made for them.
            let listed = |set: &HashSet<(String, String)>| {
                !set.is_empty() && set.contains(&(inst.queue.clone(), host.name.clone()))
            };
            inst.unusable = if listed(self.disabled) {
                Some(Unusable::Disabled)
            } else if listed(self.errored) {
                Some(Unusable::Error)
            } else if listed(self.suspended_queues) {
                Some(Unusable::Suspended)
            } else if let Some(why) = (!inst.suspend_thresholds.is_empty())
                .then(|| {
                    self.queues
                        .get(&inst.queue)
                        .and_then(|q| self.suspend_alarm(q, &host.name))
                })
                .flatten()
            {
                Some(Unusable::SuspendAlarm(why))
            } else if !reachable[inst.host] {
                Some(Unusable::Unreachable)
            } else {
                overload_message(catalog, host, adjustments, &inst.thresholds)
                    .map(Unusable::Overloaded)
            };
        }
        let mut order: Vec<usize> = (0..instances.len()).collect();
        order.sort_by(|&a, &b| {
            let (ia, ib) = (&instances[a], &instances[b]);
            let (la, lb) = (hosts[ia.host].load, hosts[ib.host].load);
            let first = match sconf.sort {
                SortMethod::SeqNo => ia.seq_no.cmp(&ib.seq_no).then(la.total_cmp(&lb)),
                SortMethod::Load => la.total_cmp(&lb).then(ia.seq_no.cmp(&ib.seq_no)),
            };
            // Host name, then queue name: ranked once with the base.
            first.then(snap.instance_index.rank[a].cmp(&snap.instance_index.rank[b]))
        });
        snap.order = order;
    }
}
