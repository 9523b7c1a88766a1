//! Queue selection: `qselect` and `qstat -q/-qs/-U/-pe/-l`.

use super::*;
use gantry_proto::{QueueSelection, QueuesSelected};
use gantry_sched::model::Request;

impl ClusterState {
    /// The queue instances a selection names, in SGE's order (`-q`, then `-qs`, `-U`,
    /// `-pe`, `-l`), and with `fitting_jobs` the pending jobs a selected instance would
    /// run were it empty (SGE's qstat lists only those under a `-q`, `-U`, `-pe` or `-l`
    /// selection). An unknown parallel environment or resource is refused; an unknown
    /// queue selects nothing (`emptied_by: -q`).
    pub(crate) fn select_queues(
        &self,
        sel: &QueueSelection,
        now: gantry_sched::Time,
    ) -> Result<QueuesSelected, Refusal> {
        if let Some(bad) = sel.states.as_deref().and_then(|s| {
            s.chars()
                .find(|c| !"acdosuACDES".contains(*c))
                .map(|c| (c, s))
        }) {
            let text = format!("unknown queue state: {} found in string: {}", bad.0, bad.1);
            return Err(refuse(
                RefusalKind::Invalid,
                format!("error: {text}\n{text}"),
            ));
        }
        for pe in &sel.pes {
            if !self
                .input
                .pes
                .keys()
                .any(|name| gantry_common::job::wildcard(pe, name))
            {
                return Err(refuse(
                    RefusalKind::NotFound,
                    "error: no such parallel environment",
                ));
            }
        }
        let all: HashSet<String> = self.input.exechosts.keys().cloned().collect();
        let snap = self.snapshot(&all, now);
        let mut requests = Vec::with_capacity(sel.resources.len());
        for (name, value) in &sel.resources {
            let Some(attr) = snap.catalog.id(name) else {
                return Err(refuse(
                    RefusalKind::NotFound,
                    format!("unknown resource \"{name}\""),
                ));
            };
            // A name alone asks for TRUE (a BOOL's way); of any other type it selects
            // nothing, as SGE's.
            let text = value.as_deref().unwrap_or("TRUE");
            match snap.catalog.parse(attr, text) {
                Some(value) => requests.push(Request {
                    attr,
                    value,
                    text: text.to_string(),
                    implicit: false,
                }),
                None => return Ok(QueuesSelected::default()),
            }
        }
        let counts = self.slot_counts(now);
        let mut views = Vec::new();
        for host in self.input.exechosts.keys() {
            let groups: Vec<String> = self
                .groups_of(host)
                .into_iter()
                .map(str::to_string)
                .collect();
            for q in self.host_view(host, now, &counts).queues {
                views.push((q, host.clone(), groups.clone()));
            }
        }
        let mut emptied_by = None;
        let mut keep = |views: &mut Vec<_>, option: &str, test: &dyn Fn(&_) -> bool| {
            let before = views.len();
            views.retain(|v| test(v));
            if before > 0 && views.is_empty() && emptied_by.is_none() {
                emptied_by = Some(option.to_string());
            }
        };
        type View = (QueueInstanceView, String, Vec<String>);
        if !sel.queues.is_empty() {
            keep(&mut views, "-q", &|(q, host, groups): &View| {
                let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
                sel.queues.iter().any(|pattern| {
                    gantry_common::job::queue_reference_matches(pattern, &q.queue, host, &groups)
                })
            });
        }
        if let Some(states) = &sel.states {
            // Not a selection SGE names when it leaves nothing.
            views.retain(|(q, _, _): &View| states.chars().any(|c| q.states.contains(c)));
        }
        if !sel.users.is_empty() {
            let admitting: HashSet<String> =
                self.instances_admitting(&sel.users).into_iter().collect();
            keep(&mut views, "-U", &|(q, host, _): &View| {
                admitting.contains(&format!("{}@{host}", q.queue))
            });
        }
        if !sel.pes.is_empty() {
            keep(&mut views, "-pe", &|(q, host, groups): &View| {
                let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
                self.input.queues.get(&q.queue).is_some_and(|c| {
                    c.attr("pe_list").is_some_and(|a| {
                        let on_host = queue::value_on_host(a, host, &groups);
                        gantry_common::conf::split_list(on_host).iter().any(|pe| {
                            sel.pes
                                .iter()
                                .any(|want| gantry_common::job::wildcard(want, pe))
                        })
                    })
                })
            });
        }
        let index: HashMap<(&str, &str), usize> = snap
            .instances
            .iter()
            .enumerate()
            .map(|(n, i)| ((i.queue.as_str(), snap.hosts[i.host].name.as_str()), n))
            .collect();
        // `-l`, last: each instance offers the requests, or is dropped.
        let mut instances: Vec<String> = Vec::with_capacity(views.len());
        let mut selected: Vec<usize> = Vec::with_capacity(views.len());
        for (q, host, _) in &views {
            let n = index.get(&(q.queue.as_str(), host.as_str())).copied();
            if n.map_or(requests.is_empty(), |n| {
                snap.offers_when_empty(&requests, n)
            }) {
                instances.push(format!("{}@{host}", q.queue));
                selected.extend(n);
            }
        }
        instances.sort();
        let mut fitting_jobs = Vec::new();
        if sel.fitting_jobs {
            for job in self.input.jobs.values().filter(|j| j.tasks.has_pending()) {
                let hard: Vec<Request> = job
                    .spec
                    .hard_resources
                    .iter()
                    .filter_map(|(name, text)| {
                        let attr = snap.catalog.id(name)?;
                        Some(Request {
                            attr,
                            value: snap.catalog.parse(attr, text)?,
                            text: text.clone(),
                            implicit: false,
                        })
                    })
                    .collect();
                if selected.iter().any(|&n| snap.offers_when_empty(&hard, n)) {
                    fitting_jobs.push(job.id);
                }
            }
        }
        Ok(QueuesSelected {
            instances,
            emptied_by,
            fitting_jobs,
        })
    }
}
