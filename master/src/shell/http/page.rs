//! The status page: server-rendered HTML (no script, no assets fetched from anywhere),
//! made from the same answers the `q*` commands get: hosts with their load and slots
//! and queue instances with their states (`qhost -q`, `qstat -f`), the jobs with
//! filters by user, state and queue (`qstat`), a job's `qstat -j` (why it waits), the
//! quota rules' usage as bars (`qquota`), the group quota tree (`qquota -g`) and the
//! advance reservations on a timeline (`qrstat`).

use std::fmt::Write;

use gantry_common::output::JobEntry;
use gantry_proto::{AdvanceReservation, FromMaster, GroupRow, HostReport, QuotaRow};

/// `text` with HTML's special characters escaped.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222}\
table{border-collapse:collapse;margin-bottom:1.5em}\
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-size:.9em}\
th{background:#f0f0f0}.bar{background:#eee;width:12em;height:.9em;display:inline-block}\
.bar span{background:#3a7;height:100%;display:block}.bar span.full{background:#c33}\
.tl{position:relative;background:#f6f6f6;height:1.2em;width:40em}\
.tl span{position:absolute;background:#48c;height:100%}\
nav a{margin-right:1em}pre{background:#f6f6f6;padding:1em}";

/// The page's frame around `body`.
/// A refusal as a page: what the JSON error would say, in HTML.
pub fn error(message: &str) -> String {
    frame(
        "Gantry: refused",
        &format!("<p class=\"error\">{}</p>\n", esc(message.trim_end())),
    )
}

pub fn frame(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\
<style>{STYLE}</style></head><body><nav><a href=\"/\">Status</a>\
<a href=\"/api/v1/openapi.json\">API</a><a href=\"/metrics\">Metrics</a></nav>\
<h1>{}</h1>\n{body}</body></html>\n",
        esc(title),
        esc(title)
    )
}

/// The filters of the job table (`?user=&state=&queue=`).
#[derive(Debug, Default, Clone, serde::Deserialize)]
pub struct JobFilter {
    pub user: Option<String>,
    /// `pending`, `running`, `held`, `error`, or state letters (`qw`, `r`, ...).
    pub state: Option<String>,
    pub queue: Option<String>,
}

impl JobFilter {
    fn admits(&self, j: &JobEntry) -> bool {
        fn given(v: &Option<String>) -> Option<&str> {
            v.as_deref().filter(|s| !s.is_empty())
        }
        if given(&self.user).is_some_and(|u| u != j.owner) {
            return false;
        }
        if let Some(q) = given(&self.queue) {
            let queue = j.queue.as_deref().unwrap_or("");
            if queue != q && queue.split('@').next() != Some(q) {
                return false;
            }
        }
        match given(&self.state) {
            None => true,
            Some("pending") => j.state.contains('q'),
            Some("running") => j.state.contains('r') || j.state.contains('t'),
            Some("held") => j.state.contains('h'),
            Some("error") => j.state.contains('E'),
            Some(letters) => j.state == letters,
        }
    }
}

/// What the page is made of, each as the master answered it.
pub struct Parts {
    pub hosts: FromMaster,
    pub jobs: Vec<JobEntry>,
    pub quotas: FromMaster,
    pub groups: FromMaster,
    pub ars: FromMaster,
    pub now: i64,
}

pub fn status(parts: &Parts, filter: &JobFilter) -> String {
    let mut b = String::new();
    if let FromMaster::Hosts(report) = &parts.hosts {
        hosts(&mut b, report);
    }
    jobs(&mut b, &parts.jobs, filter);
    if let FromMaster::Quotas(rows) = &parts.quotas {
        quotas(&mut b, rows);
    }
    if let FromMaster::Groups(rows) = &parts.groups {
        groups(&mut b, rows);
    }
    if let FromMaster::Ars(ars) = &parts.ars {
        reservations(&mut b, ars, parts.now);
    }
    frame("Gantry cluster status", &b)
}

fn load<'a>(report: &'a gantry_proto::HostView, name: &str) -> &'a str {
    gantry_common::load::get(&report.load_values, name).unwrap_or("-")
}

/// A memory load value as qhost prints one (`23.4G`), or as reported if it is none.
fn memory(value: &str) -> String {
    gantry_common::value::parse_memory(value)
        .map_or_else(|_| value.to_string(), gantry_common::value::format_memory_1)
}

fn hosts(b: &mut String, report: &HostReport) {
    b.push_str("<h2 id=\"hosts\">Hosts</h2>\n<table><tr><th>host</th><th>state</th><th>arch</th><th>cpus</th><th>load</th><th>mem free</th><th>slots used/total</th></tr>\n");
    for h in &report.hosts {
        let (used, total) = h
            .queues
            .iter()
            .fold((0, 0), |(u, t), q| (u + q.used, t + q.total));
        let _ = writeln!(
            b,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{used}/{total}</td></tr>",
            esc(&h.name),
            if h.reachable { "up" } else { "unknown" },
            esc(load(h, "arch")),
            esc(load(h, "num_proc")),
            esc(load(h, "load_avg")),
            esc(&memory(load(h, "mem_free"))),
        );
    }
    b.push_str("</table>\n<h2 id=\"queues\">Queue instances</h2>\n<table><tr><th>queue instance</th><th>type</th><th>slots resv/used/total</th><th>states</th><th>why</th></tr>\n");
    let mut rows: Vec<(String, &gantry_proto::QueueInstanceView)> = report
        .hosts
        .iter()
        .flat_map(|h| {
            h.queues
                .iter()
                .map(move |q| (format!("{}@{}", q.queue, h.name), q))
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, q) in rows {
        let why: Vec<String> = q
            .reasons
            .iter()
            .map(|(letter, r)| format!("{letter}: {}", esc(r)))
            .collect();
        let _ = writeln!(
            b,
            "<tr><td>{}</td><td>{}</td><td>{}/{}/{}</td><td>{}</td><td>{}</td></tr>",
            esc(&name),
            esc(&q.qtype),
            q.reserved,
            q.used,
            q.total,
            esc(&q.states),
            why.join("<br>")
        );
    }
    b.push_str("</table>\n");
}

fn jobs(b: &mut String, jobs: &[JobEntry], filter: &JobFilter) {
    let value = |v: &Option<String>| esc(v.as_deref().unwrap_or(""));
    let _ = write!(
        b,
        "<h2 id=\"jobs\">Jobs</h2>\n<form method=\"get\" action=\"/\">\
user <input name=\"user\" value=\"{}\"> state <select name=\"state\">",
        value(&filter.user)
    );
    for s in ["", "pending", "running", "held", "error"] {
        let selected = if filter.state.as_deref().unwrap_or("") == s {
            " selected"
        } else {
            ""
        };
        let label = if s.is_empty() { "any" } else { s };
        let _ = write!(b, "<option value=\"{s}\"{selected}>{label}</option>");
    }
    let _ = writeln!(
        b,
        "</select> queue <input name=\"queue\" value=\"{}\"> <button type=\"submit\">Filter</button></form>",
        value(&filter.queue)
    );
    b.push_str("<table id=\"job-table\"><tr><th>job</th><th>name</th><th>owner</th><th>state</th><th>queue</th><th>slots</th><th>tasks</th></tr>\n");
    let mut shown = 0;
    for j in jobs.iter().filter(|j| filter.admits(j)) {
        shown += 1;
        let _ = writeln!(
            b,
            "<tr class=\"job\"><td><a href=\"/jobs/{0}\">{0}</a></td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td><td>{5}</td><td>{6}</td></tr>",
            j.job_id,
            esc(&j.name),
            esc(&j.owner),
            esc(&j.state),
            esc(j.queue.as_deref().unwrap_or("")),
            j.slots,
            esc(&j.tasks)
        );
    }
    let _ = writeln!(
        b,
        "</table>\n<p id=\"job-count\">{shown} of {} jobs shown</p>",
        jobs.len()
    );
}

fn quotas(b: &mut String, rows: &[QuotaRow]) {
    b.push_str("<h2 id=\"quotas\">Resource quotas</h2>\n");
    if rows.is_empty() {
        b.push_str("<p>No quota rule counts anything now.</p>\n");
        return;
    }
    b.push_str(
        "<table><tr><th>rule</th><th>for</th><th>resource</th><th>used/limit</th><th></th></tr>\n",
    );
    for r in rows {
        let filters: Vec<String> = r.filters.iter().map(|(k, v)| format!("{k} {v}")).collect();
        for l in &r.limits {
            let used = l.used.as_deref().unwrap_or("");
            let fraction = match (used.parse::<f64>(), l.limit.parse::<f64>()) {
                (Ok(u), Ok(m)) if m > 0.0 => (u / m).clamp(0.0, 1.0),
                _ => 0.0,
            };
            let _ = writeln!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td><td><span class=\"bar\"><span class=\"{}\" style=\"width:{:.0}%\"></span></span></td></tr>",
                esc(&r.rule),
                esc(&filters.join(", ")),
                esc(&l.resource),
                esc(used),
                esc(&l.limit),
                if fraction >= 1.0 { "full" } else { "" },
                fraction * 100.0
            );
        }
    }
    b.push_str("</table>\n");
}

fn groups(b: &mut String, rows: &[GroupRow]) {
    if rows.len() <= 1 {
        return;
    }
    b.push_str("<h2 id=\"groups\">Group quotas</h2>\n<table><tr><th>group</th><th>quota</th><th>demand</th><th>running</th><th>allocation</th></tr>\n");
    for g in rows {
        let depth = g.name.matches('.').count();
        let _ = writeln!(
            b,
            "<tr><td style=\"padding-left:{}em\">{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td></tr>",
            0.6 + depth as f64 * 1.2,
            esc(&g.name),
            g.quota,
            g.demand,
            g.running,
            g.allocation
        );
    }
    b.push_str("</table>\n");
}

fn reservations(b: &mut String, ars: &[AdvanceReservation], now: i64) {
    b.push_str("<h2 id=\"ars\">Advance reservations</h2>\n");
    if ars.is_empty() {
        b.push_str("<p>None.</p>\n");
        return;
    }
    let until = ars.iter().map(|a| a.end).max().unwrap_or(now).max(now + 1);
    let span = (until - now) as f64;
    b.push_str("<table><tr><th>id</th><th>name</th><th>owner</th><th>state</th><th>start</th><th>end</th><th>from now until the last ends</th></tr>\n");
    for a in ars {
        let left = ((a.start - now).max(0) as f64 / span * 100.0).clamp(0.0, 100.0);
        let width = ((a.end - a.start.max(now)).max(0) as f64 / span * 100.0).clamp(0.5, 100.0);
        let when = |t: i64| gantry_common::dates::local_time(t, "%m/%d/%Y %H:%M:%S");
        let _ = writeln!(
            b,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><div class=\"tl\"><span style=\"left:{left:.1}%;width:{width:.1}%\"></span></div></td></tr>",
            a.id,
            esc(a.spec.name.as_deref().unwrap_or("")),
            esc(&a.owner),
            a.state.letter(),
            when(a.start),
            when(a.end),
        );
    }
    b.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: u64, owner: &str, state: &str, queue: Option<&str>) -> JobEntry {
        JobEntry {
            job_id: id,
            name: "<script>".into(),
            owner: owner.into(),
            priority: 0,
            state: state.into(),
            submit_time: 0,
            start_time: None,
            queue: queue.map(str::to_string),
            slots: 1,
            tasks: String::new(),
            hard_resources: Vec::new(),
            priority_parts: None,
        }
    }

    #[test]
    fn the_job_filters_select_by_user_state_and_queue() {
        let jobs = [
            job(1, "alice", "r", Some("all.q@node1")),
            job(2, "bob", "qw", None),
            job(3, "alice", "hqw", None),
            job(4, "bob", "Eqw", None),
        ];
        let f = |user: &str, state: &str, queue: &str| JobFilter {
            user: Some(user.into()),
            state: Some(state.into()),
            queue: Some(queue.into()),
        };
        let table: &[(JobFilter, &[u64])] = &[
            (JobFilter::default(), &[1, 2, 3, 4]),
            (f("alice", "", ""), &[1, 3]),
            (f("", "pending", ""), &[2, 3, 4]),
            (f("", "held", ""), &[3]),
            (f("", "error", ""), &[4]),
            (f("", "running", ""), &[1]),
            (f("", "", "all.q"), &[1]),
            (f("", "", "all.q@node1"), &[1]),
            (f("bob", "qw", ""), &[2]),
        ];
        for (filter, want) in table {
            let got: Vec<u64> = jobs
                .iter()
                .filter(|j| filter.admits(j))
                .map(|j| j.job_id)
                .collect();
            assert_eq!(&got, want, "{filter:?}");
        }
    }

    #[test]
    fn what_users_name_is_escaped() {
        let mut b = String::new();
        jobs(&mut b, &[job(1, "a\"b", "r", None)], &JobFilter::default());
        assert!(
            b.contains("<td>&lt;script&gt;</td><td>a&quot;b</td>"),
            "{b}"
        );
        assert!(!b.contains("<script>"));
    }
}
