#![allow(clippy::unwrap_used)]

use super::*;
use crate::synthetic::{add_host, cluster, job, start, submit};

const LOAD: &[(&str, &str)] = &[("num_proc", "2"), ("np_load_avg", "0.10")];

fn caller(user: &str, host: &str) -> Caller {
    Caller {
        user: user.into(),
        uid: 2000,
        gid: 2000,
        host: host.into(),
    }
}

/// Job 1 of u1 pending, job 2 of u1 running on all.q@n1, job 3 of u2 running on
/// all.q@n2.
fn state() -> ClusterState {
    let mut s = cluster(&[]);
    add_host(&mut s, "n1", "", LOAD);
    add_host(&mut s, "n2", "", LOAD);
    submit(&mut s, job(1, "u1", &[], &[]));
    submit(&mut s, job(2, "u1", &[], &[]));
    submit(&mut s, job(3, "u2", &[], &[]));
    start(&mut s, 2, 1, "all.q", "n1");
    start(&mut s, 3, 1, "all.q", "n2");
    s
}

fn messages(reply: &FromMaster) -> Vec<(String, bool)> {
    match reply {
        FromMaster::Items(items) => items
            .iter()
            .map(|i| (i.message.clone(), i.refused))
            .collect(),
        FromMaster::Done { messages } => messages.iter().map(|m| (m.clone(), false)).collect(),
        FromMaster::Refused(r) => vec![(r.message.clone(), true)],
        other => panic!("unexpected reply {other:?}"),
    }
}

fn kill(host: &str, job_id: u64) -> Effect {
    Effect::Send {
        host: host.into(),
        order: ToExecd::KillJob {
            job_id: JobId(job_id),
            task_id: TaskId(1),
        },
    }
}

#[test]
fn qdel_decides_writes_effects_and_reply_per_job() {
    let s = state();
    let u1 = caller("u1", "head");
    // A pending job goes at once; its -sync waiters are answered once that is durable.
    let d = s.decide_delete_jobs(&u1, &["1".into()], &[], false);
    assert_eq!(
        d.ops,
        vec![Op::Delete(crate::core::state::job_key(JobId(1)))]
    );
    assert_eq!(d.effects, vec![Effect::JobLeft(JobId(1))]);
    assert_eq!(messages(&d.reply), [("u1 has deleted job 1".into(), false)]);
    // A running one is registered for deletion and its execd told to kill it.
    let d = s.decide_delete_jobs(&u1, &["2".into()], &[], false);
    let [Op::Put(Object::Job(j))] = &d.ops[..] else {
        panic!("{:?}", d.ops);
    };
    assert!(matches!(
        j.tasks.get(TaskId(1)),
        Some(TaskState::Deleting { .. })
    ));
    assert_eq!(d.effects, vec![kill("n1", 2)]);
    assert_eq!(
        messages(&d.reply),
        [("u1 has registered the job 2 for deletion".into(), false)]
    );
    // With -f it goes at once: its record waits for the host's report, and the
    // execd's confirmation of the start no longer counts.
    let d = s.decide_delete_jobs(&u1, &["2".into()], &[], true);
    assert!(
        matches!(&d.ops[..], [Op::Put(Object::ForcedAway(_)), Op::Delete(k)] if *k == crate::core::state::job_key(JobId(2)))
    );
    assert_eq!(
        d.effects,
        vec![
            Effect::Forget {
                job: JobId(2),
                task: TaskId(1)
            },
            kill("n1", 2),
            Effect::JobLeft(JobId(2))
        ]
    );
}

#[test]
fn qdel_refuses_item_by_item_and_writes_nothing_for_the_refused() {
    let s = state();
    let u1 = caller("u1", "head");
    // Another user's job and a job that does not exist, beside one of the caller's.
    let d = s.decide_delete_jobs(&u1, &["1".into(), "3".into(), "9".into()], &[], false);
    assert_eq!(
        d.ops,
        vec![Op::Delete(crate::core::state::job_key(JobId(1)))]
    );
    assert_eq!(
        messages(&d.reply),
        [
            ("u1 has deleted job 1".into(), false),
            (
                "u1 - you do not have the necessary privileges to delete the job \"3\"".into(),
                true
            ),
            ("denied: job \"9\" does not exist".into(), true),
        ]
    );
    // Nothing the caller may delete: a refusal, no write, no effect.
    let d = s.decide_delete_jobs(&u1, &["3".into()], &[], false);
    assert_eq!((d.ops.len(), d.effects.len()), (0, 0));
    assert!(matches!(d.reply, FromMaster::Refused(_)));
    // The manager may, from an administrative host only.
    let d = s.decide_delete_jobs(&caller("root", "head"), &["3".into()], &[], false);
    assert_eq!(d.effects, vec![kill("n2", 3)]);
    let d = s.decide_delete_jobs(&caller("root", "n1"), &["3".into()], &[], false);
    assert_eq!(
        messages(&d.reply),
        [("denied: host \"n1\" is no admin host".into(), true)]
    );
}

#[test]
fn suspension_signals_the_running_tasks_after_the_write() {
    let s = state();
    let d = s.decide_suspend_jobs(&caller("u1", "head"), &["2".into()], true, false);
    let [Op::Put(Object::Job(j))] = &d.ops[..] else {
        panic!("{:?}", d.ops);
    };
    assert!(j.suspended.contains(&TaskId(1)));
    assert_eq!(
        d.effects,
        vec![Effect::Send {
            host: "n1".into(),
            order: ToExecd::SignalJob {
                job_id: JobId(2),
                task_id: TaskId(1),
                signal: libc_signal::SIGSTOP
            }
        }]
    );
    // A pending job cannot be suspended.
    let d = s.decide_suspend_jobs(&caller("u1", "head"), &["1".into()], true, false);
    assert_eq!(
        messages(&d.reply),
        [("denied: job \"1\" is not running".into(), true)]
    );
    assert!(d.ops.is_empty() && d.effects.is_empty());
    // A queue instance suspended by the manager stops the tasks in it, and only those.
    let d = s.decide_suspend_queues(&caller("root", "head"), &["all.q@n2".into()], true, false);
    assert_eq!(
        d.ops,
        vec![Op::Put(Object::SuspendedQueues(vec![(
            "all.q".into(),
            "n2".into()
        )]))]
    );
    assert_eq!(
        d.effects,
        vec![Effect::Send {
            host: "n2".into(),
            order: ToExecd::SignalJob {
                job_id: JobId(3),
                task_id: TaskId(1),
                signal: libc_signal::SIGSTOP
            }
        }]
    );
}

#[test]
fn qalter_changes_pending_jobs_only_and_has_no_effect() {
    let s = state();
    let changes = gantry_proto::JobChanges {
        priority: Some(-5),
        ..Default::default()
    };
    let d = s.decide_alter_jobs(
        &caller("u1", "head"),
        &[],
        &["1".into()],
        &changes,
        &Default::default(),
        crate::core::sched::Time::from_secs(0),
    );
    let [Op::Put(Object::Job(j))] = &d.ops[..] else {
        panic!("{:?}", d.ops);
    };
    assert_eq!(j.spec.priority, -5);
    assert!(d.effects.is_empty());
    let d = s.decide_alter_jobs(
        &caller("u1", "head"),
        &[],
        &["2".into()],
        &changes,
        &Default::default(),
        crate::core::sched::Time::from_secs(0),
    );
    assert!(d.ops.is_empty());
    assert_eq!(
        messages(&d.reply),
        [(
            "denied: job \"2\" has no pending tasks; only pending jobs can be changed".into(),
            true
        )]
    );
}

/// `-ot` and `-js` change a running job too (SGE's words), the rest does not.
#[test]
fn qalter_gives_a_running_job_override_tickets_and_a_job_share() {
    let s = state();
    let changes = gantry_proto::JobChanges {
        override_tickets: Some(100),
        job_share: Some(5),
        ..Default::default()
    };
    let d = s.decide_alter_jobs(
        &caller("root", "head"),
        &[],
        &["2".into()],
        &changes,
        &Default::default(),
        crate::core::sched::Time::from_secs(0),
    );
    assert_eq!(
        messages(&d.reply),
        [
            (
                "root@head sets override tickets of job 2 to 100".into(),
                false
            ),
            ("root@head sets job share of job 2 to 5".into(), false),
        ]
    );
    assert!(d.ops.contains(&Op::Put(Object::JobOverride {
        job: JobId(2),
        tickets: 100
    })));
    assert!(
        d.ops.iter().any(
            |op| matches!(op, Op::Put(Object::Job(j)) if j.id == JobId(2) && j.spec.job_share == 5)
        ),
        "{:?}",
        d.ops
    );
    assert!(d.effects.is_empty());
}

fn report(job_id: u64, host: &str, failed: u32) -> gantry_proto::JobReport {
    gantry_proto::JobReport {
        job_id: JobId(job_id),
        task_id: TaskId(1),
        host: host.into(),
        queue: "all.q".into(),
        exit_status: 0,
        signal: None,
        failed,
        failure: if failed == 0 {
            String::new()
        } else {
            "failed".into()
        },
        start_time: 100,
        end_time: 107,
        utime_us: 0,
        stime_us: 0,
        maxrss_kb: 0,
        accounted: Default::default(),
        checkpointed: false,
        pe_task: None,
    }
}

fn ack(host: &str, job_id: u64) -> Effect {
    Effect::Send {
        host: host.into(),
        order: ToExecd::ReportAck {
            job_id: JobId(job_id),
            task_id: TaskId(1),
            pe_task: None,
        },
    }
}

#[test]
fn a_report_is_accounted_once_and_acknowledged_each_time_it_comes() {
    let s = state();
    // Job 2's report twice in one burst (sent again after a lost acknowledgement).
    let batch = vec![
        ("n1".to_string(), report(2, "n1", 0)),
        ("n1".to_string(), report(2, "n1", 0)),
    ];
    let d = s.decide_reports(&batch, 500);
    let accounted = d
        .ops
        .iter()
        .filter(|o| matches!(o, Op::Account(r) if r.job_id == JobId(2)))
        .count();
    assert_eq!(accounted, 1);
    assert!(d
        .ops
        .contains(&Op::Delete(crate::core::state::job_key(JobId(2)))));
    let Effect::Finished(view) = &d.effects[1] else {
        panic!("{:?}", d.effects);
    };
    assert_eq!((view.job_id, view.start_time), (JobId(2), Some(500)));
    assert_eq!(
        [&d.effects[..1], &d.effects[2..]].concat(),
        vec![
            Effect::Forget {
                job: JobId(2),
                task: TaskId(1)
            },
            ack("n1", 2),
            ack("n1", 2),
            Effect::JobEnded(JobId(2))
        ]
    );
    assert!(d.unknown.is_empty());
}

#[test]
fn reports_of_tasks_that_could_not_start_or_are_unknown() {
    let s = state();
    // The host could not start job 2 at all: back to pending, its queue instance in
    // error. Job 3's own setup failed: it waits in Eqw. Job 9 is not known: acknowledged.
    let batch = vec![
        (
            "n1".to_string(),
            report(2, "n1", gantry_proto::ShepherdFailure::BeforeJob.code()),
        ),
        (
            "n2".to_string(),
            report(3, "n2", gantry_proto::ShepherdFailure::NoCwd.code()),
        ),
        ("n2".to_string(), report(9, "n2", 0)),
    ];
    let d = s.decide_reports(&batch, 500);
    // The instance in error, with SGE's words for why (`qstat -explain E`).
    assert!(d.ops.contains(&Op::Put(Object::ErrorQueues(vec![
        crate::core::state::QueueInError {
            queue: "all.q".into(),
            host: "n1".into(),
            why: "queue all.q marked QERROR as result of job 2's failure at host n1".into(),
        }
    ]))));
    let job = |id: u64| {
        d.ops
            .iter()
            .find_map(|o| match o {
                Op::Put(Object::Job(j)) if j.id == JobId(id) => Some(j.clone()),
                _ => None,
            })
            .unwrap()
    };
    assert!(job(2).tasks.has_pending());
    assert!(matches!(
        job(3).tasks.get(TaskId(1)),
        Some(TaskState::Error { .. })
    ));
    // Both attempts are accounted, as SGE accounts a start that failed.
    let accounted: Vec<u64> = d
        .ops
        .iter()
        .filter_map(|o| match o {
            Op::Account(r) => Some(r.job_id.0),
            _ => None,
        })
        .collect();
    assert_eq!(accounted, vec![2, 3]);
    assert_eq!(d.unknown, vec![("n2".to_string(), JobId(9), TaskId(0))]);
    assert!(d.effects.contains(&ack("n2", 9)));
}

#[test]
fn what_a_failed_procedure_does_to_the_task_and_its_queue_instance() {
    use gantry_proto::ShepherdFailure as F;
    #[derive(Debug, PartialEq)]
    enum After {
        Pending,
        Eqw,
        Ended,
    }
    // (failure, queue instance in error, what becomes of the task), as SGE 8.1.9's
    // shepherd and job_exit treat them; every one is accounted.
    let table = [
        (F::BeforeProlog, true, After::Pending),
        (F::InProlog, true, After::Pending),
        (F::BeforePeStart, true, After::Pending),
        (F::InPeStart, true, After::Pending),
        (F::InEpilog, true, After::Pending),
        (F::BeforeEpilog, true, After::Pending),
        // A pe_stop procedure fails after the job ran: the job ends.
        (F::InPeStop, true, After::Ended),
        (F::BeforePeStop, true, After::Ended),
        (F::ApplicationError, false, After::Eqw),
        (F::Reschedule, false, After::Pending),
    ];
    for (failure, errored, after) in table {
        let s = state();
        let d = s.decide_reports(&[("n1".to_string(), report(2, "n1", failure.code()))], 500);
        let in_error = d.ops.iter().any(|o| {
            matches!(o, Op::Put(Object::ErrorQueues(q)) if q.iter().any(|e| e.queue == "all.q" && e.host == "n1"))
        });
        assert_eq!(in_error, errored, "{failure:?}");
        let job = d.ops.iter().find_map(|o| match o {
            Op::Put(Object::Job(j)) if j.id == JobId(2) => Some(j.clone()),
            _ => None,
        });
        let got = match job.as_ref().and_then(|j| j.tasks.get(TaskId(1))) {
            Some(TaskState::Pending) => After::Pending,
            Some(TaskState::Error { .. }) => After::Eqw,
            _ => After::Ended,
        };
        assert_eq!(got, after, "{failure:?}");
        let accounted = d
            .ops
            .iter()
            .any(|o| matches!(o, Op::Account(r) if r.job_id == JobId(2)));
        assert!(accounted, "{failure:?}");
    }
}

#[test]
fn a_task_whose_host_failed_runs_again_only_if_rerunnable() {
    let after_job = gantry_proto::ShepherdFailure::AfterJob.code();
    let migrate = gantry_proto::ShepherdFailure::Migrate.code();
    // (job's -r, queue's rerun, -ckpt, failure, left a checkpoint, runs again); the
    // run that ended is accounted either way, as SGE's job_exit accounts it.
    let table = [
        (Some(true), "FALSE", false, after_job, false, true),
        (Some(false), "TRUE", false, after_job, false, false),
        (None, "TRUE", false, after_job, false, true),
        (None, "FALSE", false, after_job, false, false),
        // A checkpointing job always runs again; one that migrated too.
        (Some(false), "FALSE", true, after_job, false, true),
        (Some(false), "FALSE", true, migrate, false, true),
        (Some(false), "FALSE", true, migrate, true, true),
    ];
    for (restart, rerun, ckpt, failed, checkpointed, again) in table {
        let mut s = state();
        crate::synthetic::set_queue(&mut s, "all.q", "rerun", rerun);
        let mut j = crate::core::jobs::Job::clone(&s.input.jobs[&JobId(2)]);
        j.spec.restart = restart;
        if ckpt {
            j.spec.ckpt = Some("c".into());
        }
        submit(&mut s, j);
        let mut r = report(2, "n1", failed);
        r.checkpointed = checkpointed;
        let d = s.decide_reports(&[("n1".to_string(), r)], 500);
        let accounted = d
            .ops
            .iter()
            .any(|o| matches!(o, Op::Account(r) if r.job_id == JobId(2) && r.attempt == 0));
        let rerun_job = d.ops.iter().find_map(|o| match o {
            Op::Put(Object::Job(j)) if j.id == JobId(2) && j.tasks.has_pending() => Some(j),
            _ => None,
        });
        let case = format!("-r {restart:?}, rerun {rerun}, ckpt {ckpt}, failed {failed}");
        assert_eq!((rerun_job.is_some(), accounted), (again, true), "{case}");
        if let Some(j) = rerun_job {
            assert_eq!(j.restarted.get(&TaskId(1)), Some(&1), "{case}");
            assert_eq!(j.ckpt_arena.contains(&TaskId(1)), checkpointed, "{case}");
        }
        assert!(d.effects.contains(&ack("n1", 2)));
    }
    // A task that ended normally is accounted, rerunnable or not.
    let mut s = state();
    crate::synthetic::set_queue(&mut s, "all.q", "rerun", "TRUE");
    let d = s.decide_reports(&[("n1".to_string(), report(2, "n1", 0))], 500);
    assert!(d
        .ops
        .iter()
        .any(|o| matches!(o, Op::Account(r) if r.job_id == JobId(2))));
}
