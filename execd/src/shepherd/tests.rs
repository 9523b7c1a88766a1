use super::limits::mem_of;
use super::*;
use gantry_proto::{JobId, JobOwner, JobSpec, TaskId, TaskRange};

fn start() -> JobStart {
    JobStart {
        job_id: JobId(42),
        task_id: TaskId(3),
        spec: JobSpec {
            hard_resources: vec![("h_rt".into(), "0:1:0".into())],
            array: Some(TaskRange {
                first: 1,
                last: 5,
                step: 1,
            }),
            ..JobSpec::binary("hello", "/bin/true", "head")
        },
        owner: JobOwner {
            user: "u1".into(),
            uid: 1000,
            gid: 1000,
            groups: vec!["u1".into()],
        },
        queue: "all.q@n1".into(),
        host: "n1".into(),
        slots: 1,
        submit_time: 0,
        queue_settings: vec![("h_rt".into(), "0:0:30".into())],
        pe: None,
        granted: vec![gantry_proto::Grant {
            queue: "all.q".into(),
            host: "n1".into(),
            slots: 1,
        }],
        restarted: 0,
        checkpoint: None,
        session_key: None,
        pe_task: None,
    }
}

#[test]
fn the_pe_hostfile_lists_every_grant() {
    let mut s = start();
    s.pe = Some("mpi".into());
    s.granted.push(gantry_proto::Grant {
        queue: "all.q".into(),
        host: "n2".into(),
        slots: 3,
    });
    assert_eq!(
        pe_hostfile(&s, None),
        "n1 1 all.q@n1 UNDEFINED\nn2 3 all.q@n2 UNDEFINED\n"
    );
    // `-binding pe`: this host's cores in the fourth column.
    let b = crate::binding::TaskBinding {
        kind: gantry_common::binding::BindingType::Pe,
        cores: vec![(0, 0), (0, 1)],
        cpus: vec![0, 1],
    };
    assert_eq!(
        pe_hostfile(&s, Some(&b)),
        "n1 1 all.q@n1 0,0:0,1\nn2 3 all.q@n2 UNDEFINED\n"
    );
}

#[test]
fn paths_and_limits() {
    let s = start();
    assert_eq!(
        expand_path(
            "$HOME/out/$JOB_NAME.$JOB_ID.$TASK_ID.$USER@$HOSTNAME",
            &s,
            "/home/u1"
        ),
        "/home/u1/out/hello.42.3.u1@n1"
    );
    assert_eq!(
        output_path(&s, Path::new("/nonexistent"), "/home/u1", 'o'),
        PathBuf::from("/nonexistent/hello.o42.3")
    );
    assert_eq!(
        limit(&s, "h_rt", time_of),
        Some(30.0),
        "the queue's smaller limit wins"
    );
    assert_eq!(limit(&s, "h_vmem", mem_of), None);
}

/// The signal table users write (`signal` of a checkpointing environment) is the
/// kernel's.
#[test]
fn signal_names_are_the_kernels() {
    for n in 1..=31 {
        let want = Signal::try_from(n).map(|s| s.as_str());
        assert_eq!(gantry_common::signal::name(n), want.ok(), "{n}");
    }
}

#[test]
fn reports_round_trip_and_partial_ones_are_not_reports() {
    let r = JobReport {
        job_id: JobId(1),
        task_id: TaskId(1),
        host: "h".into(),
        queue: "all.q@h".into(),
        exit_status: 3,
        signal: None,
        failed: 0,
        failure: String::new(),
        start_time: 1,
        end_time: 2,
        utime_us: 5,
        stime_us: 6,
        maxrss_kb: 7,
        accounted: Default::default(),
        checkpointed: true,
        pe_task: Some(3),
    };
    let bytes = encode_report(&r);
    assert_eq!(decode_report(&bytes), Some(r));
    assert_eq!(decode_report(&bytes[..bytes.len() - 1]), None);
    assert_eq!(decode_report(b""), None);
}
