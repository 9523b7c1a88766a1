//! `qstat -g c`: the cluster queue summary, one line per cluster queue: the mean
//! normalised load of its hosts, its slots used, reserved, available and in all, and
//! the slots of its instances that are unavailable for a while (`aoACDS`: load or
//! suspend alarm, orphaned, calendar, subordinated) or until an administrator acts
//! (`cdsuE`: ambiguous, disabled, suspended, unknown, in error).

use std::collections::BTreeMap;

use gantry_proto::HostReport;

/// One cluster queue's line.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct QueueSummary {
    /// Sum and count of the normalised loads of its instances' hosts.
    load_sum: f64,
    load_count: u32,
    pub used: u32,
    pub reserved: u32,
    pub available: u32,
    pub total: u32,
    pub temp_disabled: u32,
    pub manual_intervention: u32,
}

impl QueueSummary {
    /// The mean normalised load, if some host of the queue reports one.
    pub fn load(&self) -> Option<f64> {
        (self.load_count > 0).then(|| self.load_sum / f64::from(self.load_count))
    }
}

/// The cluster queues named by `queues` (all when empty), by name.
/// `selected`: the queue instances (`queue@host`) a queue selection left (all: None).
pub fn summarise(
    hosts: &HostReport,
    selected: Option<&std::collections::HashSet<String>>,
) -> BTreeMap<String, QueueSummary> {
    let mut out: BTreeMap<String, QueueSummary> = BTreeMap::new();
    for h in &hosts.hosts {
        let load = normalised_load(&h.load_values);
        for q in &h.queues {
            if selected.is_some_and(|s| !s.contains(&format!("{}@{}", q.queue, h.name))) {
                continue;
            }
            let s = out.entry(q.queue.clone()).or_default();
            s.used += q.used;
            s.reserved += q.reserved;
            s.total += q.total;
            let has = |letters: &str| q.states.chars().any(|c| letters.contains(c));
            if has("cdsuE") {
                s.manual_intervention += q.total;
            } else if has("aoACDS") {
                s.temp_disabled += q.total;
            } else {
                s.available += q.total.saturating_sub(q.used + q.reserved);
            }
            if let Some(l) = load.filter(|_| !has("u")) {
                s.load_sum += l;
                s.load_count += 1;
            }
        }
    }
    out
}

/// `np_load_avg`, or `load_avg` divided by `num_proc`.
fn normalised_load(values: &[gantry_proto::LoadValue]) -> Option<f64> {
    let get = |n: &str| gantry_common::load::get(values, n).and_then(|v| v.parse::<f64>().ok());
    get("np_load_avg").or_else(|| {
        let procs = get("num_proc").filter(|p| *p > 0.0)?;
        Some(get("load_avg")? / procs)
    })
}

pub fn render(summary: &BTreeMap<String, QueueSummary>) -> String {
    let mut out = String::from(
        "CLUSTER QUEUE                   CQLOAD   USED    RES  AVAIL  TOTAL aoACDS  cdsuE  \n",
    );
    out.push_str(&"-".repeat(80));
    out.push('\n');
    for (name, s) in summary {
        let load = s
            .load()
            .map_or_else(|| "-NA-".to_string(), |l| format!("{l:.2}"));
        out.push_str(&format!(
            "{name:<30} {load:>7}{:>7}{:>7}{:>7}{:>7}{:>7}{:>7} \n",
            s.used, s.reserved, s.available, s.total, s.temp_disabled, s.manual_intervention
        ));
    }
    out
}

/// Which of its forms `qstat -g c` prints.
pub enum Form {
    Text,
    Xml,
    Json,
}

/// `qstat -g c -json`: the same lines as one document.
pub fn render_json(summary: &BTreeMap<String, QueueSummary>) -> String {
    use gantry_common::output::{ClusterQueueLine, ClusterQueueSummary};
    let doc = ClusterQueueSummary {
        cluster_queues: summary
            .iter()
            .map(|(name, s)| ClusterQueueLine {
                name: name.clone(),
                load: s.load(),
                used: s.used,
                resv: s.reserved,
                available: s.available,
                total: s.total,
                temp_disabled: s.temp_disabled,
                manual_intervention: s.manual_intervention,
            })
            .collect(),
    };
    crate::json_line(&doc)
}

pub fn render_xml(summary: &BTreeMap<String, QueueSummary>) -> String {
    let mut out = format!(
        "<?xml version='1.0'?>\n<job_info  {}>\n",
        super::QSTAT_XMLNS
    );
    for (name, s) in summary {
        out.push_str("  <cluster_queue_summary>\n");
        out.push_str(&format!("    <name>{}</name>\n", crate::xml::escape(name)));
        if let Some(l) = s.load() {
            out.push_str(&format!("    <load>{l:.5}</load>\n"));
        }
        for (tag, v) in [
            ("used", s.used),
            ("resv", s.reserved),
            ("available", s.available),
            ("total", s.total),
            ("temp_disabled", s.temp_disabled),
            ("manual_intervention", s.manual_intervention),
        ] {
            out.push_str(&format!("    <{tag}>{v}</{tag}>\n"));
        }
        out.push_str("  </cluster_queue_summary>\n");
    }
    out.push_str("</job_info>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_proto::{HostView, LoadValue, QueueInstanceView};

    fn instance(
        queue: &str,
        used: u32,
        reserved: u32,
        total: u32,
        states: &str,
    ) -> QueueInstanceView {
        QueueInstanceView {
            queue: queue.into(),
            qtype: "BIP".into(),
            reserved,
            reserved_all: reserved,
            used,
            total,
            states: states.into(),
            resources: vec![],
            reasons: Vec::new(),
        }
    }

    fn host(name: &str, np_load: Option<&str>, queues: Vec<QueueInstanceView>) -> HostView {
        let load_values = np_load
            .map(|l| {
                vec![LoadValue {
                    name: "np_load_avg".into(),
                    value: l.into(),
                }]
            })
            .unwrap_or_default();
        HostView {
            name: name.into(),
            reachable: true,
            load_values,
            complex_values: vec![],
            queues,
        }
    }

    #[test]
    fn slots_are_counted_by_the_state_of_their_instance() {
        let report = HostReport {
            hosts: vec![
                host(
                    "a",
                    Some("0.30"),
                    vec![
                        instance("all.q", 1, 0, 2, ""),
                        instance("b.q", 0, 0, 4, "d"),
                    ],
                ),
                host("b", Some("0.40"), vec![instance("all.q", 0, 1, 2, "a")]),
                host("c", None, vec![instance("all.q", 0, 0, 2, "u")]),
            ],
            complexes: vec![],
        };
        let text = render(&summarise(&report, None));
        let b_q: std::collections::HashSet<String> = ["b.q@a".to_string()].into();
        assert_eq!(
            text,
            "CLUSTER QUEUE                   CQLOAD   USED    RES  AVAIL  TOTAL aoACDS  cdsuE  \n\
             --------------------------------------------------------------------------------\n\
             all.q                             0.35      1      1      1      6      2      2 \n\
             b.q                               0.30      0      0      0      4      0      4 \n"
        );
        let only = render(&summarise(&report, Some(&b_q)));
        assert_eq!(only.lines().count(), 3, "{only}");
        let xml = render_xml(&summarise(&report, Some(&b_q)));
        assert!(xml.contains("    <name>b.q</name>\n    <load>0.30000</load>\n    <used>0</used>\n    <resv>0</resv>\n    <available>0</available>\n    <total>4</total>\n    <temp_disabled>0</temp_disabled>\n    <manual_intervention>4</manual_intervention>\n"), "{xml}");
    }
}
