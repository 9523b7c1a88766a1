//! The scheduler configuration's policy attributes (`sched_conf(5)`), as numbers.

use gantry_common::usage::{Amounts, Decay};
use gantry_proto::Config;

/// A ticket policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Override,
    Functional,
    Share,
}

/// What the priority calculation reads of the scheduler configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyConf {
    pub weight_user: f64,
    pub weight_project: f64,
    pub weight_department: f64,
    pub weight_job: f64,
    /// `weight_tickets_functional`.
    pub tickets_functional: f64,
    /// `weight_tickets_share`.
    pub tickets_share: f64,
    /// `policy_hierarchy`: each policy in the order computed, and whether it is
    /// dependent (orders jobs by the tickets the policies before it gave). Every
    /// policy is there: those the string leaves out come last, independent.
    pub hierarchy: Vec<(Policy, bool)>,
    pub share_override_tickets: bool,
    pub share_functional_shares: bool,
    pub max_functional_jobs_to_schedule: usize,
    pub max_pending_tasks_per_job: u32,
    /// How usage decays: `halftime` (0: it does not), and each kind that
    /// `halflife_decay_list` names by its own half-life.
    pub decay: Decay,
    pub usage_weights: Amounts,
    pub compensation_factor: f64,
    pub weight_urgency: f64,
    pub weight_priority: f64,
    pub weight_ticket: f64,
    pub weight_waiting_time: f64,
    pub weight_deadline: f64,
    pub report_pjob_tickets: bool,
}

impl Default for PolicyConf {
    /// A fresh cell's values (`qconf -ssconf` of SGE 8.1.9 as Debian installs it).
    fn default() -> Self {
        PolicyConf::from_config(None)
    }
}

/// `policy_hierarchy` as a list (see [`PolicyConf::hierarchy`]).
pub fn hierarchy(text: &str) -> Vec<(Policy, bool)> {
    let mut out: Vec<(Policy, bool)> = Vec::new();
    if !text.trim().eq_ignore_ascii_case("NONE") {
        for c in text.trim().chars() {
            let p = match c.to_ascii_uppercase() {
                'O' => Policy::Override,
                'F' => Policy::Functional,
                'S' => Policy::Share,
                _ => continue,
            };
            if !out.iter().any(|(q, _)| *q == p) {
                out.push((p, true));
            }
        }
    }
    for p in [Policy::Override, Policy::Functional, Policy::Share] {
        if !out.iter().any(|(q, _)| *q == p) {
            out.push((p, false));
        }
    }
    out
}

impl PolicyConf {
    /// The values of a scheduler configuration (a fresh cell's where it has none or an
    /// attribute is missing: the configuration was checked when it was written).
    pub fn from_config(sched: Option<&Config>) -> PolicyConf {
        let defaults = gantry_common::schedconf::default_schedconf();
        let get = |name: &str| -> String {
            sched
                .and_then(|c| c.get(name))
                .or_else(|| defaults.get(name))
                .unwrap_or_default()
                .to_string()
        };
        let num = |name: &str| get(name).trim().parse::<f64>().unwrap_or(0.0);
        let flag = |name: &str| get(name).trim().eq_ignore_ascii_case("true");
        let mut usage_weights = Amounts::default();
        for pair in get("usage_weight_list").split([',', ' ']) {
            if let Some((k, v)) = pair.split_once('=') {
                let v = v.trim().parse::<f64>().unwrap_or(0.0);
                match k.trim() {
                    "cpu" => usage_weights.cpu = v,
                    "mem" => usage_weights.mem = v,
                    "io" => usage_weights.io = v,
                    _ => {}
                }
            }
        }
        PolicyConf {
            weight_user: num("weight_user"),
            weight_project: num("weight_project"),
            weight_department: num("weight_department"),
            weight_job: num("weight_job"),
            tickets_functional: num("weight_tickets_functional"),
            tickets_share: num("weight_tickets_share"),
            hierarchy: hierarchy(&get("policy_hierarchy")),
            share_override_tickets: flag("share_override_tickets"),
            share_functional_shares: flag("share_functional_shares"),
            max_functional_jobs_to_schedule: num("max_functional_jobs_to_schedule") as usize,
            max_pending_tasks_per_job: num("max_pending_tasks_per_job") as u32,
            decay: Decay::new(num("halftime").max(0.0), &get("halflife_decay_list")),
            usage_weights,
            compensation_factor: num("compensation_factor"),
            weight_urgency: num("weight_urgency"),
            weight_priority: num("weight_priority"),
            weight_ticket: num("weight_ticket"),
            weight_waiting_time: num("weight_waiting_time"),
            weight_deadline: num("weight_deadline"),
            report_pjob_tickets: flag("report_pjob_tickets"),
        }
    }

    /// Do the ticket policies give any job a ticket at all?
    pub fn tickets_on(&self) -> bool {
        self.tickets_functional > 0.0 || self.tickets_share > 0.0
    }
}
