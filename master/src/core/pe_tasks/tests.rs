#![allow(clippy::unwrap_used)]

use super::*;
use crate::synthetic::{add_host, cluster, job, submit};
use gantry_proto::{AccountingRecord, Grant};

const LOAD: &[(&str, &str)] = &[("num_proc", "4"), ("np_load_avg", "0.10")];

fn caller(user: &str, host: &str) -> Caller {
    Caller {
        user: user.into(),
        uid: 2000,
        gid: 2000,
        host: host.into(),
    }
}

/// PEs `ctrl` (control_slaves TRUE, job_is_first_task FALSE), `first` (TRUE, TRUE),
/// `sum` (TRUE, accounting_summary TRUE) and `noctrl`; job 5 of u1 running in `pe`
/// with 2 slots on n1 (its master host) and 2 on n2.example.com; n3 takes no part.
fn state(pe: &str) -> ClusterState {
    let mut s = cluster(&[]);
    for h in ["n1", "n2.example.com", "n3"] {
        add_host(&mut s, h, "", LOAD);
    }
    for (name, ctrl, first, sum) in [
        ("ctrl", true, false, false),
        ("first", true, true, false),
        ("sum", true, false, true),
        ("noctrl", false, false, false),
    ] {
        let mut p = gantry_common::pe::Pe::new(name);
        p.slots = 8;
        p.control_slaves = ctrl;
        p.job_is_first_task = first;
        p.accounting_summary = sum;
        s.apply(&Op::Put(Object::Pe(p)));
    }
    let mut j = job(5, "u1", &[], &[]);
    j.tasks.insert(
        TaskId(1),
        TaskState::Running {
            host: "n1".into(),
            queue: "all.q".into(),
            start_time: 0,
            grants: vec![
                Grant {
                    queue: "all.q".into(),
                    host: "n1".into(),
                    slots: 2,
                },
                Grant {
                    queue: "all.q".into(),
                    host: "n2.example.com".into(),
                    slots: 2,
                },
            ],
            pe: Some(pe.into()),
        },
    );
    submit(&mut s, j);
    s
}

fn request(host: &str) -> PeTaskRequest {
    PeTaskRequest {
        job_id: JobId(5),
        task_id: TaskId(0),
        host: host.into(),
        command: vec!["orted".into(), "-mca".into(), "x".into()],
        env: vec![
            ("OMPI_X".into(), "1".into()),
            ("LD_PRELOAD".into(), "/evil.so".into()),
        ],
        cwd: None,
        noshell: false,
        pty: false,
    }
}

fn inherit(s: &ClusterState, who: &str, from: &str, host: &str) -> Decision {
    decide_inherit(s, &|_| true, 100, &caller(who, from), request(host))
}

/// Apply a decision's writes, as the master commits them.
fn commit(s: &mut ClusterState, d: &Decision) {
    s.apply_all(&d.ops);
}

fn refusal(d: &Decision) -> String {
    match &d.reply {
        FromMaster::Refused(r) => r.message.clone(),
        other => panic!("not refused: {other:?}"),
    }
}

const NOT_ACCEPTED: &str = "didn't accept task";

#[test]
fn host_names_resolve_as_open_mpi_and_users_write_them() {
    let hosts: Vec<String> = ["n1", "n2.example.com", "a.x", "a.y"]
        .iter()
        .map(|h| h.to_string())
        .collect();
    // (named, resolved)
    let table = [
        ("n1", Some("n1")),
        ("N1", Some("n1")),
        ("n2", Some("n2.example.com")),
        ("n2.example.com", Some("n2.example.com")),
        ("n1.example.com", Some("n1")),
        ("localhost", Some("caller")),
        ("127.0.0.1", Some("caller")),
        ("::1", Some("caller")),
        // Two hosts share the short name: it names neither.
        ("a", None),
        ("a.x", Some("a.x")),
        ("nosuchhost", None),
    ];
    for (named, want) in table {
        assert_eq!(resolve_host(named, "caller", hosts.iter()), want, "{named}");
    }
}

#[test]
fn a_host_takes_its_slots_in_tasks_less_the_job_script_when_it_is_the_first_task() {
    // (slots here, master host, job_is_first_task, tasks at once)
    let table = [
        (2, true, false, 2),
        (2, true, true, 1),
        (1, true, true, 0),
        (2, false, true, 2),
        (3, false, false, 3),
    ];
    for (slots, master, first, want) in table {
        assert_eq!(
            task_limit(slots, master, first),
            want,
            "{slots} {master} {first}"
        );
    }
}

#[test]
fn a_task_starts_on_a_granted_host_with_the_jobs_environment_and_its_own_key() {
    let s = state("ctrl");
    let d = inherit(&s, "u1", "n1", "n2");
    let FromMaster::SessionGranted {
        job_id,
        task_id,
        pe_task,
        host,
        key,
    } = &d.reply
    else {
        panic!("refused: {:?}", d.reply);
    };
    assert_eq!(
        (*job_id, *task_id, *pe_task, host.as_str()),
        (JobId(5), TaskId(1), Some(1), "n2.example.com")
    );
    assert_eq!(*key, s.pe_session_key(JobId(5), TaskId(1), 1));
    assert_ne!(*key, s.session_key(JobId(5), TaskId(1)));
    let [Effect::Send { host, order }] = d.effects.as_slice() else {
        panic!("effects {:?}", d.effects);
    };
    assert_eq!(host, "n2.example.com");
    let ToExecd::StartJob(start) = order else {
        panic!("order {order:?}");
    };
    assert_eq!(start.pe_task, Some(1));
    assert_eq!(start.host, "n2.example.com");
    assert_eq!(start.queue, "all.q@n2.example.com");
    assert_eq!(start.spec.name, "petask");
    assert_eq!(
        start.spec.script,
        JobScript::Interactive {
            kind: gantry_proto::InteractiveKind::Qrsh,
            command: Some("orted".into())
        }
    );
    assert_eq!(start.spec.args, ["-mca", "x"]);
    assert!(start.spec.binary_shell, "run by the owner's shell");
    assert!(start.spec.env.contains(&("OMPI_X".into(), "1".into())));
    assert!(
        !start.spec.env.iter().any(|(k, _)| k == "LD_PRELOAD"),
        "LD_PRELOAD is never passed"
    );
    assert_eq!(start.spec.stdout_path.as_deref(), Some("/dev/null"));
    assert_eq!(start.session_key.as_ref(), Some(key));
}

#[test]
fn tasks_are_refused_as_sge_refuses_them_and_nothing_changes() {
    let s = state("ctrl");
    let refused = |d: &Decision, why: &str| {
        assert!(d.ops.is_empty() && d.effects.is_empty(), "{d:?}");
        let m = refusal(d);
        assert!(
            m.starts_with("error: executing task of job 5 failed: ") && m.contains(why),
            "{m}"
        );
    };
    // Not the owner.
    refused(&inherit(&s, "u2", "n1", "n1"), NOT_ACCEPTED);
    // A host of the cell the job has no slot on.
    refused(&inherit(&s, "u1", "n1", "n3"), NOT_ACCEPTED);
    assert_eq!(
        refusal(&inherit(&s, "u1", "n1", "n3")),
        "error: executing task of job 5 failed: execution daemon on host \"n3\" didn't accept task"
    );
    // No such host.
    assert_eq!(
        refusal(&inherit(&s, "u1", "n1", "nosuchhost")),
        "error: executing task of job 5 failed: failed sending task to execd@nosuchhost: can't resolve host name"
    );
    // No such job.
    let mut r = request("n1");
    r.job_id = JobId(99);
    let d = decide_inherit(&s, &|_| true, 100, &caller("u1", "n1"), r);
    assert_eq!(
        refusal(&d),
        "error: executing task of job 99 failed: execution daemon on host \"n1\" didn't accept task"
    );
    // control_slaves FALSE.
    let s = state("noctrl");
    refused(&inherit(&s, "u1", "n1", "n1"), NOT_ACCEPTED);
    // The host's execd is away.
    let s = state("ctrl");
    let d = decide_inherit(&s, &|h| h != "n1", 100, &caller("u1", "n1"), request("n1"));
    refused(&d, NOT_ACCEPTED);
}

#[test]
fn more_tasks_than_slots_are_refused_and_a_finished_task_frees_its_slot() {
    for (pe, on_master) in [("ctrl", 2), ("first", 1)] {
        let mut s = state(pe);
        for n in 1..=on_master {
            let d = inherit(&s, "u1", "n1", "localhost");
            assert!(
                matches!(d.reply, FromMaster::SessionGranted { pe_task: Some(p), .. } if p == n),
                "{pe}: {:?}",
                d.reply
            );
            commit(&mut s, &d);
        }
        refusal(&inherit(&s, "u1", "n1", "n1"));
        // The other host still has its two.
        for _ in 0..2 {
            let d = inherit(&s, "u1", "n1", "n2");
            assert!(matches!(d.reply, FromMaster::SessionGranted { .. }), "{pe}");
            commit(&mut s, &d);
        }
        refusal(&inherit(&s, "u1", "n1", "n2"));
        // Task 1 (on n1) ends: accounted with its number, its slot free again.
        let mut report = JobReport::empty(JobId(5), TaskId(1), "n1", 150);
        report.pe_task = Some(1);
        report.exit_status = 4;
        let decided = s.decide_reports(&[("n1".into(), report.clone())], 150);
        let records = account_ops(&decided.ops);
        assert_eq!(records.len(), 1, "{pe}");
        assert_eq!(records[0].report.pe_task, Some(1));
        assert_eq!(records[0].report.exit_status, 4);
        assert_eq!(records[0].submit_time, 100, "the task's own start");
        assert!(decided.effects.iter().any(|e| matches!(
            e,
            Effect::Send {
                order: ToExecd::ReportAck {
                    pe_task: Some(1),
                    ..
                },
                ..
            }
        )));
        s.apply_all(&decided.ops);
        // Again (the acknowledgement was lost): acknowledged, not accounted twice.
        let again = s.decide_reports(&[("n1".into(), report)], 151);
        assert!(
            !again.ops.iter().any(|o| matches!(o, Op::Account(_))),
            "{pe}"
        );
        let d = inherit(&s, "u1", "n1", "n1");
        let want = on_master + 2 + 1;
        assert!(
            matches!(d.reply, FromMaster::SessionGranted { pe_task: Some(p), .. } if p == want),
            "{pe}: numbers are not used twice: {:?}",
            d.reply
        );
    }
}

fn account_ops(ops: &[Op]) -> Vec<AccountingRecord> {
    ops.iter()
        .filter_map(|o| match o {
            Op::Account(r) => Some((**r).clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_jobs_end_kills_its_tasks_and_they_are_accounted_after_it() {
    let mut s = state("ctrl");
    for host in ["n1", "n2"] {
        let d = inherit(&s, "u1", "n1", host);
        commit(&mut s, &d);
    }
    let job_report = JobReport::empty(JobId(5), TaskId(1), "n1", 200);
    let decided = s.decide_reports(&[("n1".into(), job_report)], 200);
    let kills: Vec<&str> = decided
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::Send {
                host,
                order: ToExecd::KillPeTasks { .. },
            } => Some(host.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(kills, ["n1", "n2.example.com"]);
    let records = account_ops(&decided.ops);
    assert_eq!(records.len(), 1, "the job's own record");
    assert_eq!(records[0].report.pe_task, None);
    s.apply_all(&decided.ops);
    assert!(!s.input.jobs.contains_key(&JobId(5)));
    // The killed tasks report after the job has gone: accounted all the same.
    for (n, host) in [(1, "n1"), (2, "n2.example.com")] {
        let mut r = JobReport::empty(JobId(5), TaskId(1), host, 201);
        r.pe_task = Some(n);
        r.signal = Some(9);
        r.exit_status = 137;
        let decided = s.decide_reports(&[(host.into(), r)], 201);
        let records = account_ops(&decided.ops);
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].job_name, "true", "the job's name, not petask");
        assert_eq!(records[0].report.exit_status, 137);
        s.apply_all(&decided.ops);
    }
    assert!(s.pe_tasks.is_empty(), "nothing left once all have ended");
}

#[test]
fn accounting_summary_writes_one_record_with_the_tasks_usage() {
    let mut s = state("sum");
    for host in ["n1", "n2"] {
        let d = inherit(&s, "u1", "n1", host);
        commit(&mut s, &d);
    }
    let mut r = JobReport::empty(JobId(5), TaskId(1), "n1", 150);
    r.pe_task = Some(1);
    r.utime_us = 1_000;
    r.maxrss_kb = 500;
    let decided = s.decide_reports(&[("n1".into(), r)], 150);
    assert!(account_ops(&decided.ops).is_empty(), "no record of its own");
    s.apply_all(&decided.ops);
    let mut job_report = JobReport::empty(JobId(5), TaskId(1), "n1", 200);
    job_report.utime_us = 10;
    job_report.maxrss_kb = 100;
    let decided = s.decide_reports(&[("n1".into(), job_report)], 200);
    assert!(account_ops(&decided.ops).is_empty(), "held for task 2");
    s.apply_all(&decided.ops);
    let mut r = JobReport::empty(JobId(5), TaskId(1), "n2.example.com", 201);
    r.pe_task = Some(2);
    r.utime_us = 100;
    r.stime_us = 7;
    let decided = s.decide_reports(&[("n2.example.com".into(), r)], 201);
    let records = account_ops(&decided.ops);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].report.pe_task, None, "the job's record");
    assert_eq!(records[0].report.utime_us, 1_110);
    assert_eq!(records[0].report.stime_us, 7);
    assert_eq!(records[0].report.maxrss_kb, 500);
    s.apply_all(&decided.ops);
    assert!(s.pe_tasks.is_empty());
}

#[test]
fn a_task_that_sent_its_exit_status_frees_its_slot_before_its_report() {
    let mut s = state("first");
    let d = inherit(&s, "u1", "n1", "n1");
    commit(&mut s, &d);
    refusal(&inherit(&s, "u1", "n1", "n1"));
    s.live.pe_exiting.insert((JobId(5), TaskId(1), 1));
    let d = inherit(&s, "u1", "n1", "n1");
    assert!(
        matches!(
            d.reply,
            FromMaster::SessionGranted {
                pe_task: Some(2),
                ..
            }
        ),
        "{:?}",
        d.reply
    );
    commit(&mut s, &d);
    assert!(
        s.live.pe_exiting.contains(&(JobId(5), TaskId(1), 1)),
        "still exiting"
    );
    // Its report: no longer running, no longer exiting.
    let mut r = JobReport::empty(JobId(5), TaskId(1), "n1", 150);
    r.pe_task = Some(1);
    let decided = s.decide_reports(&[("n1".into(), r)], 150);
    s.apply_all(&decided.ops);
    assert!(s.live.pe_exiting.is_empty());
    refusal(&inherit(&s, "u1", "n1", "n1"));
}

#[test]
fn qstat_g_t_has_a_slave_line_per_slot_a_task_may_take() {
    // (PE, lines in order)
    let m = |q: &str| (q.to_string(), true);
    let s = |q: &str| (q.to_string(), false);
    let table = [
        (
            "ctrl",
            vec![
                m("all.q@n1"),
                s("all.q@n1"),
                s("all.q@n1"),
                s("all.q@n2.example.com"),
                s("all.q@n2.example.com"),
            ],
        ),
        (
            "first",
            vec![
                m("all.q@n1"),
                s("all.q@n1"),
                s("all.q@n2.example.com"),
                s("all.q@n2.example.com"),
            ],
        ),
    ];
    for (pe, want) in table {
        let st = state(pe);
        let lines = task_lines(&st, &["*".to_string()]);
        assert_eq!(lines.len(), 1, "{pe}");
        assert_eq!(lines[0].lines, want, "{pe}");
        assert!(task_lines(&st, &["u2".to_string()]).is_empty());
    }
}
