//! qstat's machine-readable forms: `-xml` as SGE 8.1.9 writes it, and `-json`.

use gantry_proto::JobViewRef;

use super::prior;
use crate::dates::local_time;

pub(crate) const QSTAT_XMLNS: &str = "xmlns:xsd=\"http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qstat/qstat.xsd\"";

fn xml_job(x: &mut crate::xml::Xml, indent: usize, j: &JobViewRef, with_queue: bool) {
    let running = j.queue.is_some();
    // SGE's qstat -xml quotes this attribute with double quotes (its other XML, single).
    x.open_raw(
        indent,
        "job_list",
        if running {
            "state=\"running\""
        } else {
            "state=\"pending\""
        },
    );
    let i = indent + 2;
    x.element(i, "JB_job_number", &[], &j.job_id.to_string());
    x.element(i, "JAT_prio", &[], &prior(j.prio));
    x.element(i, "JB_name", &[], j.name);
    x.element(i, "JB_owner", &[], j.owner);
    x.element(i, "state", &[], j.state_letters());
    let iso = |t: i64| local_time(t, "%Y-%m-%dT%H:%M:%S");
    match j.start_time {
        Some(t) => x.element(i, "JAT_start_time", &[], &iso(t)),
        None => x.element(i, "JB_submission_time", &[], &iso(j.submit_time)),
    }
    if with_queue {
        x.element(i, "queue_name", &[], j.queue.unwrap_or(""));
    }
    x.element(i, "slots", &[], &j.slots.to_string());
    if !j.tasks.is_empty() {
        x.element(i, "tasks", &[], j.tasks);
    }
    x.close(indent, "job_list");
}

/// `qstat -xml` (and with `-f`, the queue instances).
pub fn render_qstat_xml(hosts: Option<&gantry_proto::HostReport>, jobs: &[JobViewRef]) -> String {
    let mut x = crate::xml::Xml::new();
    x.open_raw(0, "job_info ", QSTAT_XMLNS);
    x.open(2, "queue_info", &[]);
    match hosts {
        None => {
            for j in jobs.iter().filter(|j| j.queue.is_some()) {
                xml_job(&mut x, 4, j, true);
            }
        }
        Some(report) => {
            for h in &report.hosts {
                for q in &h.queues {
                    let name = format!("{}@{}", q.queue, h.name);
                    x.open(4, "Queue-List", &[]);
                    x.element(6, "name", &[], &name);
                    x.element(6, "qtype", &[], &q.qtype);
                    x.element(6, "slots_used", &[], &q.used.to_string());
                    x.element(6, "slots_resv", &[], &q.reserved.to_string());
                    x.element(6, "slots_total", &[], &q.total.to_string());
                    if let Some(l) = gantry_common::load::get(&h.load_values, "load_avg")
                        .and_then(|v| v.parse::<f64>().ok())
                    {
                        x.element(6, "load_avg", &[], &format!("{l:.5}"));
                    }
                    if let Some(a) = gantry_common::load::get(&h.load_values, "arch") {
                        x.element(6, "arch", &[], a);
                    }
                    if !q.states.is_empty() {
                        x.element(6, "state", &[], &q.states);
                    }
                    // `-explain E`: SGE's XML carries the error's message alone.
                    for (_, reason) in q.reasons.iter().filter(|(l, _)| *l == 'E') {
                        x.element(6, "message", &[], reason);
                    }
                    for j in jobs.iter().filter(|j| j.queue == Some(name.as_str())) {
                        xml_job(&mut x, 6, j, false);
                    }
                    x.close(4, "Queue-List");
                }
            }
        }
    }
    x.close(2, "queue_info");
    x.open(2, "job_info", &[]);
    // SGE's full form (-f, -explain) names no queue for a pending job; its job
    // listing gives an empty one.
    for j in jobs.iter().filter(|j| j.queue.is_none()) {
        xml_job(&mut x, 4, j, hosts.is_none());
    }
    x.close(2, "job_info");
    x.close(0, "job_info");
    x.finish()
}

/// `qstat -json`: the jobs as one JSON document; with `-f` (or `-F`, `-explain`) the
/// queue instances too, each named and counted as SGE's XML names them (`slots_used`,
/// `slots_resv`, `slots_total`, `state`), with what it offers under `-F` and why it is
/// in its states under `-explain`.
/// With `-pri`, `-urg` or `-ext` (`prios`: the last cycle's priorities), each row's
/// priority parts too.
pub fn render_qstat_json(
    hosts: Option<&gantry_proto::HostReport>,
    jobs: &[JobViewRef],
    offered: Option<&[String]>,
    prios: Option<&[gantry_proto::PriorityRow]>,
) -> String {
    use gantry_common::output::{queue_instances, JobEntry, JobList, PriorityParts};
    let jobs: Vec<JobEntry> = jobs
        .iter()
        .map(|j| {
            let mut entry = JobEntry::of(j);
            if let Some(prios) = prios {
                // A running row is its task's; a pending row the job's pending tasks'.
                let task = j.queue.map(|_| j.tasks.parse::<u32>().unwrap_or(1));
                entry.priority_parts = prios
                    .iter()
                    .find(|p| p.job_id == j.job_id && p.task.map(|t| t.get()) == task)
                    .map(PriorityParts::of);
            }
            entry
        })
        .collect();
    let doc = JobList {
        queues: hosts.map(|report| queue_instances(report, &jobs, offered)),
        jobs,
    };
    crate::json_line(&doc)
}
