//! `qstat -j ids -xml` and `-json`: a job's details as SGE 8.1.9 writes them in XML
//! (`detailed_job_info`, its `JB_*` element names, in the order of its own output for a
//! plain job; the fields such a job lacks in the order of SGE's job object), and as one
//! JSON document with stable field names.

use gantry_proto::{JobDetail, JobScript};

use crate::xml::Xml;

const DETAIL_XMLNS: &str = "xmlns:xsd=\"http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qstat/detailed_job_info.xsd\"";

/// SGE's mail option bits (`symbols.h`).
fn mail_bits(options: &str) -> u32 {
    options
        .chars()
        .map(|c| match c {
            'a' => 0x0004_0000,
            'b' => 0x0008_0000,
            'e' => 0x0010_0000,
            'n' => 0x0020_0000,
            's' => 0x0040_0000,
            _ => 0,
        })
        .fold(0, |a, b| a | b)
}

/// SGE's `JB_type` bits (`sge_job.h`): immediate 0x01, binary 0x40, array 0x80, no
/// shell 0x100.
fn job_type(d: &JobDetail) -> u32 {
    let spec = &d.spec;
    let mut t = 0;
    if spec.immediate {
        t |= 0x01;
    }
    if matches!(spec.script, JobScript::Binary { .. }) {
        t |= 0x40;
        if !spec.binary_shell {
            t |= 0x100;
        }
    }
    if spec.array.is_some() {
        t |= 0x80;
    }
    t
}

/// A path list (`-o`, `-e`, `-i`, `-S`): an element per path, with its host if it has one.
fn path_list(x: &mut Xml, indent: usize, name: &str, path: &Option<String>) {
    if let Some(p) = path {
        x.open(indent, name, &[]);
        let list = gantry_common::path_list::parse(p).unwrap_or_else(|_| {
            vec![gantry_common::path_list::PathFor {
                host: None,
                path: p,
            }]
        });
        for e in list {
            x.open(indent + 2, "path_list", &[]);
            x.element(indent + 4, "PN_path", &[], e.path);
            if let Some(h) = e.host {
                x.element(indent + 4, "PN_host", &[], h);
            }
            x.close(indent + 2, "path_list");
        }
        x.close(indent, name);
    }
}

fn requests(x: &mut Xml, indent: usize, name: &str, list: &[(String, String)]) {
    if list.is_empty() {
        return;
    }
    x.open(indent, name, &[]);
    for (k, v) in list {
        x.open(indent + 2, "qstat_l_requests", &[]);
        x.element(indent + 4, "CE_name", &[], k);
        x.element(indent + 4, "CE_stringval", &[], v);
        x.close(indent + 2, "qstat_l_requests");
    }
    x.close(indent, name);
}

fn queues(x: &mut Xml, indent: usize, name: &str, list: &[String]) {
    if list.is_empty() {
        return;
    }
    x.open(indent, name, &[]);
    for q in list {
        x.open(indent + 2, "destin_ident_list", &[]);
        x.element(indent + 4, "QR_name", &[], q);
        x.close(indent + 2, "destin_ident_list");
    }
    x.close(indent, name);
}

fn job_xml(x: &mut Xml, d: &JobDetail) {
    let spec = &d.spec;
    let i = 6;
    x.open(4, "element", &[]);
    x.element(i, "JB_job_number", &[], &d.job_id.to_string());
    x.element(i, "JB_ar", &[], &spec.ar.map_or(0, |a| a.get()).to_string());
    x.element(i, "JB_exec_file", &[], &format!("job_scripts/{}", d.job_id));
    x.element(i, "JB_submission_time", &[], &d.submit_time.to_string());
    x.element(i, "JB_owner", &[], &d.owner.user);
    x.element(i, "JB_uid", &[], &d.owner.uid.to_string());
    x.element(i, "JB_group", &[], &d.group);
    x.element(i, "JB_gid", &[], &d.owner.gid.to_string());
    x.element(i, "JB_account", &[], &spec.account);
    if let Some(cwd) = &spec.cwd {
        x.element(i, "JB_cwd", &[], cwd);
    }
    path_list(x, i, "JB_stdout_path_list", &spec.stdout_path);
    path_list(x, i, "JB_stderr_path_list", &spec.stderr_path);
    path_list(x, i, "JB_stdin_path_list", &spec.stdin_path);
    x.element(i, "JB_merge_stderr", &[], &spec.merge_output.to_string());
    requests(x, i, "JB_hard_resource_list", &spec.hard_resources);
    requests(x, i, "JB_soft_resource_list", &spec.soft_resources);
    queues(x, i, "JB_hard_queue_list", &spec.queues);
    queues(x, i, "JB_soft_queue_list", &spec.soft_queues);
    x.open(i, "JB_mail_list", &[]);
    for r in gantry_common::mail::recipients(&spec.mail_list, &d.owner.user, &spec.submit_host) {
        let (user, host) = r.split_once('@').unwrap_or((r.as_str(), ""));
        x.open(i + 2, "element", &[]);
        x.element(i + 4, "MR_user", &[], user);
        if !host.is_empty() {
            x.element(i + 4, "MR_host", &[], host);
        }
        x.close(i + 2, "element");
    }
    x.close(i, "JB_mail_list");
    x.element(i, "JB_notify", &[], &spec.notify.to_string());
    x.element(i, "JB_job_name", &[], &spec.name);
    x.element(i, "JB_jobshare", &[], &spec.job_share.to_string());
    path_list(x, i, "JB_shell_list", &spec.shell);
    if !spec.env.is_empty() {
        x.open(i, "JB_env_list", &[]);
        for (k, v) in &spec.env {
            // SGE keeps the submit environment's SGE_O_ variables under this prefix.
            let name = match k.strip_prefix("SGE_") {
                Some(rest) if rest.starts_with("O_") => format!("__SGE_PREFIX__{rest}"),
                _ => k.clone(),
            };
            x.open(i + 2, "job_sublist", &[]);
            x.element(i + 4, "VA_variable", &[], &name);
            // A variable without a value has no VA_value (SGE's NULL).
            if !v.is_empty() {
                x.element(i + 4, "VA_value", &[], v);
            }
            x.close(i + 2, "job_sublist");
        }
        x.close(i, "JB_env_list");
    }
    if !spec.context.is_empty() {
        x.open(i, "JB_context", &[]);
        for (k, v) in &spec.context {
            x.open(i + 2, "context_list", &[]);
            x.element(i + 4, "VA_variable", &[], k);
            x.element(i + 4, "VA_value", &[], v);
            x.close(i + 2, "context_list");
        }
        x.close(i, "JB_context");
    }
    if !spec.args.is_empty() {
        x.open(i, "JB_job_args", &[]);
        for a in &spec.args {
            x.open(i + 2, "element", &[]);
            x.element(i + 4, "ST_name", &[], a);
            x.close(i + 2, "element");
        }
        x.close(i, "JB_job_args");
    }
    x.element(i, "JB_script_file", &[], spec.script.script_file());
    for (name, list) in [
        ("JB_jid_request_list", &spec.hold_jids),
        ("JB_ja_ad_request_list", &spec.hold_jids_ad),
    ] {
        if !list.is_empty() {
            x.open(i, name, &[]);
            for r in list {
                x.open(i + 2, "element", &[]);
                x.element(i + 4, "JRE_job_name", &[], r);
                x.close(i + 2, "element");
            }
            x.close(i, name);
        }
    }
    x.element(
        i,
        "JB_deadline",
        &[],
        &spec.deadline.unwrap_or(0).to_string(),
    );
    x.element(
        i,
        "JB_execution_time",
        &[],
        &spec.start_after.unwrap_or(0).to_string(),
    );
    // SGE's bits for the `-c` letters (symbols.h) and the interval in seconds.
    let selector = spec.ckpt_when.as_deref();
    let attr: u32 = d
        .checkpoint_attr
        .as_deref()
        .or(selector)
        .filter(|w| gantry_common::ckpt::valid_when(w))
        .map_or(0, |w| {
            w.chars()
                .map(|c| match c {
                    'm' => 1,
                    's' => 2,
                    'x' => 4,
                    'n' => 8,
                    'r' => 16,
                    _ => 0,
                })
                .sum()
        });
    x.element(i, "JB_checkpoint_attr", &[], &attr.to_string());
    x.element(
        i,
        "JB_checkpoint_interval",
        &[],
        &gantry_common::ckpt::job_interval(selector)
            .unwrap_or(0)
            .to_string(),
    );
    x.element(i, "JB_reserve", &[], &spec.reserve.to_string());
    x.element(
        i,
        "JB_mail_options",
        &[],
        &mail_bits(&spec.mail_options).to_string(),
    );
    // SGE keeps the priority offset by 1024.
    x.element(i, "JB_priority", &[], &(spec.priority + 1024).to_string());
    let restart = match spec.restart {
        None => 0,
        Some(true) => 1,
        Some(false) => 2,
    };
    x.element(i, "JB_restart", &[], &restart.to_string());
    x.element(i, "JB_verify", &[], "0");
    x.element(i, "JB_script_size", &[], "0");
    x.element(
        i,
        "JB_verify_suitable_queues",
        &[],
        &spec.verify.sge_number().to_string(),
    );
    x.element(i, "JB_soft_wallclock_gmt", &[], "0");
    x.element(i, "JB_hard_wallclock_gmt", &[], "0");
    x.element(
        i,
        "JB_override_tickets",
        &[],
        &d.override_tickets.to_string(),
    );
    x.element(i, "JB_version", &[], "0");
    let (first, last, step) = spec.array.map_or((1, 1, 1), |r| (r.first, r.last, r.step));
    x.open(i, "JB_ja_structure", &[]);
    x.open(i + 2, "task_id_range", &[]);
    x.element(i + 4, "RN_min", &[], &first.to_string());
    x.element(i + 4, "RN_max", &[], &last.to_string());
    x.element(i + 4, "RN_step", &[], &step.to_string());
    x.close(i + 2, "task_id_range");
    x.close(i, "JB_ja_structure");
    if let Some((pe, range)) = &spec.pe {
        x.element(i, "JB_pe", &[], pe);
        x.element(i, "JB_pe_range", &[], range);
    }
    if let Some(p) = &spec.project {
        x.element(i, "JB_project", &[], p);
    }
    x.element(i, "JB_type", &[], &job_type(d).to_string());
    x.open(i, "JB_binding", &[]);
    x.open(i + 2, "element", &[]);
    match spec.binding.as_deref() {
        Some(b) => x.element(i + 4, "BN_strategy", &[], b),
        // SGE's element for a job without binding, every field of it.
        None => {
            x.element(i + 4, "BN_strategy", &[], "no_job_binding");
            for field in [
                "BN_type",
                "BN_parameter_n",
                "BN_parameter_socket_offset",
                "BN_parameter_core_offset",
                "BN_parameter_striding_step_size",
            ] {
                x.element(i + 4, field, &[], "0");
            }
            x.element(i + 4, "BN_parameter_explicit", &[], "no_explicit_binding");
        }
    }
    x.close(i + 2, "element");
    x.close(i, "JB_binding");
    x.element(
        i,
        "JB_ja_task_concurrency",
        &[],
        &spec.max_running_tasks.unwrap_or(0).to_string(),
    );
    x.element(i, "JB_nurg", &[], &format!("{:.6}", d.nurg));
    x.close(4, "element");
}

/// The number SGE's scheduler gives a message (its `SCHEDD_INFO_*` in
/// sge_schedd_text.h: `Job is in hold state` is 33), known by its words; None for
/// Gantry's own messages.
fn sge_message_number(text: &str) -> Option<u32> {
    let dropped = |what: &str| {
        text.starts_with("queue instance \"")
            && text.ends_with(&format!("\" dropped because it is {what}"))
    };
    let n = match text {
        "All queues dropped because of overload or full" => 28,
        "execution time not reached" => 31,
        "Job is in error state" => 32,
        "Job is in hold state" => 33,
        "job dropped because of user limitations" => 34,
        "job dropped because of job dependencies" => 35,
        "cannot run because resources requested are not available for parallel job" => 18,
        _ if text.starts_with("(-l ") && text.contains(") cannot run at host \"") => 0,
        _ if text.starts_with("(-l ") && text.contains(") cannot run in queue \"") => 17,
        _ if text.starts_with("(-l ") && text.contains(") cannot run globally because ") => 20,
        _ if text.starts_with("has no permission for ") => 1,
        _ if text.ends_with("because it is not contained in its hard queue list (-q)") => 6,
        _ if text.starts_with("cannot run because total slots of pe \"") => 19,
        _ if text.starts_with("cannot run in PE \"")
            && text.contains("\" because it only offers ") =>
        {
            24
        }
        _ if text.starts_with("cannot run because no access to pe \"") => 25,
        _ if text.starts_with("queue instance \"")
            && text.contains("\" dropped because it is overloaded: ") =>
        {
            27
        }
        _ if dropped("full") => 37,
        _ if dropped("suspended") => 38,
        _ if dropped("disabled") => 39,
        _ if dropped("temporarily not available") => 40,
        _ if text.starts_with("Job cannot run in queue instance \"")
            && text.contains(" because exceeds limit in rule ") =>
        {
            48
        }
        _ => return None,
    };
    Some(n)
}

/// `qstat -j ids -xml`.
pub fn render_xml(details: &[JobDetail]) -> String {
    let mut x = Xml::new();
    x.open_raw(0, "detailed_job_info ", DETAIL_XMLNS);
    x.open(2, "djob_info", &[]);
    for d in details {
        job_xml(&mut x, d);
    }
    x.close(2, "djob_info");
    let messages: Vec<(gantry_proto::JobId, &String)> = details
        .iter()
        .flat_map(|d| d.reasons.iter().map(move |r| (d.job_id, r)))
        .collect();
    if !messages.is_empty() {
        x.open(2, "messages", &[]);
        x.open(4, "element", &[]);
        x.open(6, "SME_message_list", &[]);
        for (job, text) in messages {
            x.open(8, "element", &[]);
            x.open(10, "MES_job_number_list", &[]);
            x.open(12, "ulong_sublist", &[]);
            x.element(14, "ULNG_value", &[], &job.to_string());
            x.close(12, "ulong_sublist");
            x.close(10, "MES_job_number_list");
            if let Some(n) = sge_message_number(text) {
                x.element(10, "MES_message_number", &[], &n.to_string());
            }
            x.element(10, "MES_message", &[], text);
            x.close(8, "element");
        }
        x.close(6, "SME_message_list");
        x.close(4, "element");
        x.close(2, "messages");
    }
    x.close(0, "detailed_job_info");
    x.finish()
}

/// `qstat -j -json`: every job's details (`gantry_common::output::JobDetailEntry`), with
/// its priority parts (`prios`, every user's, to rank it among the others).
pub fn render_json(details: &[JobDetail], prios: &[gantry_proto::PriorityRow]) -> String {
    use gantry_common::output::{JobDetailEntry, JobDetailList};
    crate::json_line(&JobDetailList {
        jobs: details
            .iter()
            .map(|d| JobDetailEntry::of(d, prios))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_proto::{JobId, JobOwner, JobSpec};

    /// Job 38 of `06_qsub_qdel_qacct.txt` (`qsub -h -N held -b y /bin/true` as user1).
    /// SGE's numbers for its messages (`MES_message_number`), as its XML has them
    /// (tests/sge/recorded/73_qstat_xml.txt: 33 for a hold).
    #[test]
    fn messages_carry_sges_numbers() {
        let table: &[(&str, Option<u32>)] = &[
            ("Job is in hold state", Some(33)),
            ("queue instance \"all.q@vm\" dropped because it is full", Some(37)),
            ("All queues dropped because of overload or full", Some(28)),
            ("cannot run in PE \"smp\" because it only offers 0 slots", Some(24)),
            ("(-l arch=x) cannot run in queue \"all.q@vm\" because it offers only qf:arch=lx-amd64", Some(17)),
            ("(-l h=a) cannot run at host \"vm\" because it offers only hl:arch=lx-amd64", Some(0)),
            ("job dropped because of job dependencies", Some(35)),
            ("reserved: task 1 to start at 12/03/2026 14:10:00 in all.q@vm=2", None),
        ];
        for (text, want) in table {
            assert_eq!(sge_message_number(text), *want, "{text}");
        }
    }

    fn held() -> JobDetail {
        JobDetail {
            job_id: JobId(38),
            spec: JobSpec {
                hold: true,
                env: vec![("SGE_O_HOME".into(), "/home/user1".into())],
                ..JobSpec::binary("held", "/bin/true", "vm")
            },
            owner: JobOwner {
                user: "user1".into(),
                uid: 1001,
                gid: 1002,
                groups: vec!["user1".into()],
            },
            group: "user1".into(),
            submit_time: 1_795_302_131,
            reasons: vec!["Job is in hold state".into()],
            errors: vec![],
            running: vec![],
            checkpoint_attr: None,
            override_tickets: 0,
            version: 0,
            predecessors: Vec::new(),
            successors: Vec::new(),
            nurg: 0.0,
        }
    }

    #[test]
    fn xml_reads_as_sges_detailed_job_info() {
        let xml = render_xml(&[held()]);
        // SGE 8.1.9's own output for the same job, line for line where Gantry keeps
        // the same things.
        let sge_start = "<?xml version='1.0'?>
<detailed_job_info  xmlns:xsd=\"http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qstat/detailed_job_info.xsd\">
  <djob_info>
    <element>
      <JB_job_number>38</JB_job_number>
      <JB_ar>0</JB_ar>
      <JB_exec_file>job_scripts/38</JB_exec_file>
      <JB_submission_time>1795302131</JB_submission_time>
      <JB_owner>user1</JB_owner>
      <JB_uid>1001</JB_uid>
      <JB_group>user1</JB_group>
      <JB_gid>1002</JB_gid>
      <JB_account>sge</JB_account>
      <JB_merge_stderr>false</JB_merge_stderr>
      <JB_mail_list>
        <element>
          <MR_user>user1</MR_user>
          <MR_host>vm</MR_host>
        </element>
      </JB_mail_list>
      <JB_notify>false</JB_notify>
      <JB_job_name>held</JB_job_name>
      <JB_jobshare>0</JB_jobshare>
      <JB_env_list>
        <job_sublist>
          <VA_variable>__SGE_PREFIX__O_HOME</VA_variable>
          <VA_value>/home/user1</VA_value>
        </job_sublist>
      </JB_env_list>
      <JB_script_file>/bin/true</JB_script_file>
";
        assert!(xml.starts_with(sge_start), "{xml}");
        for line in [
            "      <JB_deadline>0</JB_deadline>\n      <JB_execution_time>0</JB_execution_time>\n      <JB_checkpoint_attr>0</JB_checkpoint_attr>\n      <JB_checkpoint_interval>0</JB_checkpoint_interval>\n      <JB_reserve>false</JB_reserve>\n      <JB_mail_options>0</JB_mail_options>\n      <JB_priority>1024</JB_priority>\n      <JB_restart>0</JB_restart>\n",
            "      <JB_ja_structure>\n        <task_id_range>\n          <RN_min>1</RN_min>\n          <RN_max>1</RN_max>\n          <RN_step>1</RN_step>\n        </task_id_range>\n      </JB_ja_structure>\n",
            "          <MES_job_number_list>\n            <ulong_sublist>\n              <ULNG_value>38</ULNG_value>\n            </ulong_sublist>\n          </MES_job_number_list>\n",
            "<MES_message>Job is in hold state</MES_message>",
        ] {
            assert!(xml.contains(line), "{line}\n{xml}");
        }
        // A binary job runs without a shell in Gantry (unless -shell y): SGE's
        // binary and no-shell bits.
        assert!(xml.contains("<JB_type>320</JB_type>"), "{xml}");
        assert!(xml.ends_with("</detailed_job_info>\n"));
    }

    #[test]
    fn json_names_every_field() {
        let row = |job: u64, prio: f64| gantry_proto::PriorityRow {
            job_id: gantry_proto::JobId(job),
            task: None,
            prio,
            nurg: 0.5,
            npprior: 0.5,
            ntckts: prio,
            urg: 1000.0,
            rrcontr: 1000.0,
            wtcontr: 0.0,
            dlcontr: 0.0,
            ppri: 0,
            ovrts: 0,
            otckt: 0.0,
            ftckt: 250.0,
            stckt: 0.0,
            share: 0.1,
            project: None,
            department: Some("defaultdepartment".into()),
            deadline: None,
            usage: None,
        };
        let prios = [row(38, 0.2), row(39, 0.7), row(40, 0.1)];
        let doc: serde_json::Value = serde_json::from_str(&render_json(&[held()], &prios)).unwrap();
        let job = &doc["jobs"][0];
        // Why it waits: one pending job goes before it.
        assert_eq!(job["priority"]["pending_rank"], 2);
        assert_eq!(job["priority"]["pending_jobs"], 3);
        assert_eq!(job["priority"]["rows"][0]["ftckt"], 250.0);
        assert_eq!(
            job["priority"]["rows"][0]["department"],
            "defaultdepartment"
        );
        assert_eq!(job["job_number"], 38);
        assert_eq!(job["job_name"], "held");
        assert_eq!(job["hold"], true);
        assert_eq!(job["job_type"], "binary");
        assert_eq!(job["mail_list"][0], "user1@vm");
        assert_eq!(job["scheduling_info"][0], "Job is in hold state");
    }
}
