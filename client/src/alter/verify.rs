//! `qalter -verify`: the attributes a qalter would change, as SGE's qalter prints its
//! modification (the lines of `qstat -j` for what is given, in that order, the job name
//! always), and nothing is changed.

use gantry_common::path_list;
use gantry_proto::JobChanges;

use crate::dates::local_time;

/// `by_name`: the job name the qalter names its jobs by, if it does (SGE's request then
/// carries it before the new name: `:lists:newname`).
pub fn render_changes(c: &JobChanges, by_name: Option<&str>) -> String {
    let mut out = String::new();
    let mut row =
        |key: &str, value: String| out.push_str(&format!("{:<28}{value}\n", format!("{key}:")));
    let pairs = |l: &[(String, String)]| {
        l.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let when = |t: i64| local_time(t, "%a %b %e %H:%M:%S %Y");
    let yes_no = |b: bool| if b { "y" } else { "n" }.to_string();
    if let Some(t) = c.deadline {
        row("deadline", when(t));
    }
    if let Some(Some(t)) = c.start_after {
        row("execution_time", when(t));
    }
    if let Some(a) = &c.account {
        row("account", a.clone());
    }
    if let Some(ck) = &c.ckpt {
        row("checkpoint_object", ck.clone());
    }
    if let Some(d) = &c.cwd {
        row("cwd", d.clone());
    }
    if let Some(e) = &c.stderr_path {
        row("stderr_path_list", path_list::display(e));
    }
    if c.reserve == Some(true) {
        row("reserve", "y".to_string());
    }
    if c.merge_output == Some(true) {
        row("merge", "y".to_string());
    }
    if let Some(l) = &c.hard_resources {
        row("hard resource_list", pairs(l));
    }
    if let Some(l) = &c.soft_resources {
        row("soft resource_list", pairs(l));
    }
    if let Some(m) = &c.mail_options {
        row("mail_options", m.clone());
    }
    if let Some(m) = &c.mail_list {
        row("mail_list", m.join(","));
    }
    if let Some(n) = c.notify {
        row("notify", if n { "TRUE" } else { "FALSE" }.to_string());
    }
    let name = c.name.clone().unwrap_or_default();
    row(
        "job_name",
        match by_name {
            Some(target) => format!(":{target}:{name}"),
            None => name,
        },
    );
    if let Some(o) = &c.stdout_path {
        row("stdout_path_list", path_list::display(o));
    }
    if let Some(i) = &c.stdin_path {
        row("stdin_path_list", path_list::display(i));
    }
    if let Some(p) = c.priority {
        row("priority", p.to_string());
    }
    if let Some(js) = c.job_share {
        row("jobshare", js.to_string());
    }
    if let Some(q) = &c.queues {
        row("hard_queue_list", q.join(","));
    }
    if let Some(q) = &c.soft_queues {
        row("soft_queue_list", q.join(","));
    }
    if let Some(r) = c.restart {
        row("restart", yes_no(r));
    }
    if let Some(s) = &c.shell {
        row("shell_list", path_list::display_shells(s));
    }
    if let Some(env) = &c.env {
        row("env_list", pairs(env));
    }
    if let Some(q) = &c.masterq {
        row("master hard queue_list", q.join(","));
    }
    if let Some(h) = &c.hold_jids {
        row("jid_predecessor_list (req)", h.join(","));
    }
    if let Some(h) = &c.hold_jids_ad {
        row("ja_ad_predecessor_list (req)", h.join(","));
    }
    if let Some(t) = c.override_tickets {
        row("oticket", t.to_string());
    }
    if let Some(p) = &c.project {
        row("project", p.clone());
    }
    if let Some(ar) = c.ar {
        row("ar_id", ar.to_string());
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What SGE 8.1.9's qalter -verify printed on this machine.
    #[test]
    fn changes_read_as_sges_verify() {
        let none = JobChanges::default();
        assert_eq!(
            render_changes(&none, None),
            "job_name:                   \n\n"
        );
        assert_eq!(
            render_changes(&none, Some("lists")),
            "job_name:                   :lists:\n\n"
        );
        let c = JobChanges {
            hard_resources: Some(vec![("h_rt".into(), "100".into())]),
            stdout_path: Some("/tmp/x".into()),
            priority: Some(-5),
            ..JobChanges::default()
        };
        assert_eq!(
            render_changes(&c, None),
            "hard resource_list:         h_rt=100\njob_name:                   \nstdout_path_list:           NONE:NONE:/tmp/x\npriority:                   -5\n\n"
        );
        let named = JobChanges {
            name: Some("newname".into()),
            ..JobChanges::default()
        };
        assert_eq!(
            render_changes(&named, None),
            "job_name:                   newname\n\n"
        );
    }
}
