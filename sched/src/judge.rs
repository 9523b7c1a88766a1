//! The judge stage of a snapshot: at the time of a cycle (or a question), each host's
//! values with the load of recent starts, each queue instance usable or why not
//! (disabled, in error, suspended, over a threshold, its host unreachable), and the
//! order candidates are tried in; the load and suspend alarms of queue instances and
//! what `suspend_thresholds` call for.

use gantry_proto::{JobId, TaskId};
use std::collections::{HashMap, HashSet};

/// A queue instance's thresholds (`name`, limit) with its host as the matching reads it.
type ThresholdHost = (Catalog, Host, Vec<(String, String)>);

use gantry_common::job::{Job, TaskState};
use gantry_common::value::{self, Value};
use gantry_common::{conf, queue};

use crate::matching::*;
use crate::model::*;
use crate::time::Time;
use crate::view::ClusterView;

impl<'a> ClusterView<'a> {
    /// Everything of [`ClusterView::finish_snapshot`] but the bookings: the time, the
    /// hosts' adjusted values and loads, every queue instance's state, the candidate
    /// order. `running`: the jobs
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

/// What `suspend_thresholds` call for: tasks to stop and to continue (job, task, host),
/// and the queue instances acted on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThresholdActions {
    pub suspend: Vec<(JobId, TaskId, String)>,
    pub resume: Vec<(JobId, TaskId, String)>,
    pub acted: Vec<(String, String)>,
}

impl<'a> ClusterView<'a> {
    /// Is a queue instance in load alarm (state `a`): which of its `load_thresholds` the
    /// host's reported values exceed, as the scheduler words it.
    pub fn load_alarm(&self, q: &gantry_proto::ClusterQueue, host: &str) -> Option<String> {
        self.threshold_alarm(q, host, "load_thresholds")
    }

    /// Is a queue instance in suspend alarm (state `A`): which of its
    /// `suspend_thresholds` the host's reported values exceed.
    pub fn suspend_alarm(&self, q: &gantry_proto::ClusterQueue, host: &str) -> Option<String> {
        self.threshold_alarm(q, host, "suspend_thresholds")
    }

    pub(crate) fn threshold_alarm(
        &self,
        q: &gantry_proto::ClusterQueue,
        host: &str,
        key: &str,
    ) -> Option<String> {
        let (catalog, h, thresholds) = self.threshold_host(q, host, key)?;
        overload_message(&catalog, &h, &[], &thresholds)
    }

    /// Every one of a queue instance's `load_thresholds` or `suspend_thresholds` (`key`)
    /// the host's reported values stand beyond: (attribute, value, threshold), what
    /// `qstat -explain a` and `-explain A` list.
    pub fn threshold_alarms(
        &self,
        q: &gantry_proto::ClusterQueue,
        host: &str,
        key: &str,
    ) -> Vec<(String, String, String)> {
        self.threshold_host(q, host, key)
            .map(|(catalog, h, thresholds)| crate::matching::alarms(&catalog, &h, &thresholds))
            .unwrap_or_default()
    }

    /// The queue instance's thresholds under `key` and its host's reported values, as
    /// the matching reads them; None without thresholds.
    fn threshold_host(
        &self,
        q: &gantry_proto::ClusterQueue,
        host: &str,
        key: &str,
    ) -> Option<ThresholdHost> {
        let groups = self.groups_of(host);
        let thresholds = q
            .attr(key)
            .map(|a| queue::value_on_host(a, host, &groups))
            .filter(|v| !v.eq_ignore_ascii_case("NONE"))
            .and_then(|v| conf::split_pairs(v, 0, key).ok())
            .unwrap_or_default();
        if thresholds.is_empty() {
            return None;
        }
        let catalog = Catalog::new(self.complexes);
        let mut layer = Layer::default();
        for lv in self.runtime.get(host).map_or(&[][..], |r| &r.load_values) {
            if let Some(id) = catalog.id(&lv.name) {
                if let Some(v) = catalog.parse(id, &lv.value) {
                    layer.set_load(id, v);
                }
            }
        }
        let h = Host {
            name: host.to_string(),
            layer,
            groups: Vec::new(),
            user_lists: Vec::new(),
            xuser_lists: Vec::new(),
            projects: Vec::new(),
            xprojects: Vec::new(),
            load: 0.0,
            nproc: 1.0,
            weight: 0.0,
            reported: Vec::new(),
            instances: Vec::new(),
        };
        Some((catalog, h, thresholds))
    }

    /// What the queues' `suspend_thresholds` call for at `now`: on an instance over its
    /// thresholds, stop `nsuspend` more of its running jobs (the latest started first)
    /// every `suspend_interval`; on one back under them, continue `nsuspend` of those it
    /// stopped per interval. `last` is when each instance was last acted on.
    ///
    /// Only instances with thresholds, or with a task they stopped, are looked at, and
    /// the jobs are read once for all of them: the master asks every second.
    pub fn threshold_actions(
        &self,
        at: Time,
        last: &HashMap<(String, String), i64>,
    ) -> ThresholdActions {
        let now = at.secs();
        let mut out = ThresholdActions::default();
        // The instances holding a task their thresholds stopped: (queue, host).
        let mut holding_stopped: HashSet<(&str, &str)> = HashSet::new();
        for (j, t) in self.threshold_suspended {
            if let Some(TaskState::Running { host, queue, .. }) =
                self.jobs.get(j).and_then(|job| job.tasks.get(*t))
            {
                holding_stopped.insert((queue.as_str(), host.as_str()));
            }
        }
        let memberships = crate::view::memberships(self.hostgroups);
        // (queue, host, nsuspend, over its thresholds)
        let mut due: Vec<(String, String, usize, bool)> = Vec::new();
        for q in self.queues.values() {
            for host in self.queue_hosts_of(q) {
                if !self.is_reachable(&host, at) {
                    continue;
                }
                let groups: Vec<&str> = memberships
                    .get(&host)
                    .map_or(Vec::new(), |g| g.iter().map(String::as_str).collect());
                let on_host = |k: &str| q.attr(k).map(|a| queue::value_on_host(a, &host, &groups));
                let interval = on_host("suspend_interval")
                    .and_then(|v| value::parse_time(v).ok())
                    .unwrap_or(300.0) as i64;
                let nsuspend: usize = on_host("nsuspend")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(1);
                let key = (q.name.clone(), host.clone());
                if last.get(&key).is_some_and(|t| now - t < interval) || nsuspend == 0 {
                    continue;
                }
                let stopped_here = holding_stopped.contains(&(q.name.as_str(), host.as_str()));
                let has_thresholds =
                    on_host("suspend_thresholds").is_some_and(|v| !v.eq_ignore_ascii_case("NONE"));
                if !has_thresholds && !stopped_here {
                    continue;
                }
                let alarm = self.suspend_alarm(q, &host).is_some();
                if alarm || stopped_here {
                    due.push((q.name.clone(), host, nsuspend, alarm));
                }
            }
        }
        if due.is_empty() {
            return out;
        }
        // Their running tasks, not suspended otherwise: (start time, job, task).
        let index: HashMap<(&str, &str), usize> = due
            .iter()
            .enumerate()
            .map(|(n, (q, h, _, _))| ((q.as_str(), h.as_str()), n))
            .collect();
        let mut tasks: Vec<Vec<(i64, JobId, TaskId)>> = vec![Vec::new(); due.len()];
        for job in self.jobs.values() {
            for (task, t) in job.tasks.placed() {
                if let TaskState::Running {
                    host,
                    queue,
                    start_time,
                    ..
                } = t
                {
                    if let Some(&n) = index.get(&(queue.as_str(), host.as_str())) {
                        if !job.suspended.contains(&task) {
                            tasks[n].push((*start_time, job.id, task));
                        }
                    }
                }
            }
        }
        let stopped = |t: &(i64, JobId, TaskId)| self.threshold_suspended.contains(&(t.1, t.2));
        for ((queue, host, nsuspend, alarm), mut tasks) in due.into_iter().zip(tasks) {
            let pick: Vec<(JobId, TaskId)> = if alarm {
                tasks.sort_by(|a, b| b.cmp(a));
                tasks
                    .iter()
                    .filter(|t| !stopped(t))
                    .take(nsuspend)
                    .map(|t| (t.1, t.2))
                    .collect()
            } else {
                tasks.sort();
                tasks
                    .iter()
                    .filter(|t| stopped(t))
                    .take(nsuspend)
                    .map(|t| (t.1, t.2))
                    .collect()
            };
            if pick.is_empty() {
                continue;
            }
            let list = if alarm {
                &mut out.suspend
            } else {
                &mut out.resume
            };
            list.extend(pick.into_iter().map(|(j, t)| (j, t, host.clone())));
            out.acted.push((queue, host));
        }
        out
    }
}
