#![allow(clippy::unwrap_used)]

use super::*;
use crate::core::jobs::{Job, TaskState};
use crate::core::state::{Object, Op};
use crate::synthetic::{add_host, cluster, connected, job, set_queue, start, submit};
use gantry_proto::TaskId;
use std::sync::Arc;

/// A host's reports, to change in place.
fn host_runtime<'a>(s: &'a mut ClusterState, host: &str) -> &'a mut HostRuntime {
    Arc::make_mut(
        Arc::make_mut(&mut s.input.runtime)
            .get_mut(host)
            .expect("a host of the test"),
    )
}

const LOAD: &[(&str, &str)] = &[
    ("arch", "lx-amd64"),
    ("num_proc", "2"),
    ("np_load_avg", "0.10"),
    ("mem_free", "4G"),
];

fn cycle(s: &ClusterState) -> Vec<(u64, String)> {
    s.schedule(Time::from_secs(0), &connected(s))
        .dispatches
        .into_iter()
        .map(|d| (d.job_id.get(), format!("{}@{}", d.queue, d.host)))
        .collect()
}

/// The first reason `qstat -j` gives for a job on a queue instance.
fn why(s: &ClusterState, id: u64, qi: &str) -> String {
    let j = s.input.jobs.get(&JobId(id)).unwrap();
    s.explain(j, &connected(s), Time::from_secs(0))
        .into_iter()
        .find(|r| r.contains(&format!("\"{qi}\"")) || r.contains(qi.split('@').nth(1).unwrap()))
        .unwrap_or_default()
}

#[test]
fn load_thresholds_put_an_instance_in_alarm() {
    let mut s = cluster(&[]);
    add_host(
        &mut s,
        "busy",
        "",
        &[("np_load_avg", "2.000000"), ("num_proc", "2")],
    );
    submit(&mut s, job(1, "u1", &[], &[]));
    assert!(cycle(&s).is_empty());
    let reasons = s.explain(
        s.input.jobs.get(&JobId(1)).unwrap(),
        &connected(&s),
        Time::from_secs(0),
    );
    assert_eq!(
        reasons,
        vec![
            "queue instance \"all.q@busy\" dropped because it is overloaded: np_load_avg=2.000000 (no load adjustment) >= 1.75".to_string(),
            "All queues dropped because of overload or full".to_string(),
        ]
    );
    // qhost -q and qstat -f show the instance in alarm state.
    let view = s.host_view(
        "busy",
        crate::core::sched::Time::from_secs(0),
        &Default::default(),
    );
    assert_eq!(view.queues[0].states, "a");
    set_queue(&mut s, "all.q", "load_thresholds", "NONE");
    assert_eq!(
        s.host_view(
            "busy",
            crate::core::sched::Time::from_secs(0),
            &Default::default()
        )
        .queues[0]
            .states,
        ""
    );
    assert_eq!(cycle(&s).len(), 1);
}

#[test]
fn suspend_thresholds_stop_and_continue_jobs_one_interval_at_a_time() {
    let mut s = cluster(&[]);
    add_host(
        &mut s,
        "n1",
        "",
        &[("np_load_avg", "2.000000"), ("num_proc", "2")],
    );
    set_queue(&mut s, "all.q", "slots", "4");
    set_queue(&mut s, "all.q", "load_thresholds", "NONE");
    set_queue(&mut s, "all.q", "suspend_thresholds", "np_load_avg=1.5");
    set_queue(&mut s, "all.q", "suspend_interval", "0:1:0");
    for (id, started) in [(1, 10), (2, 30), (3, 20)] {
        submit(&mut s, job(id, "u1", &[], &[]));
        start(&mut s, id, 1, "all.q", "n1");
        let mut j = Job::clone(&s.input.jobs[&JobId(id)]);
        if let Some(TaskState::Running { start_time, .. }) = j.tasks.get_mut(TaskId(1)) {
            *start_time = started;
        }
        submit(&mut s, j);
    }
    let key = ("all.q".to_string(), "n1".to_string());
    let mut last = HashMap::new();
    // Over the threshold: the latest started job first, then one per interval.
    let a = s.threshold_actions(Time::from_secs(100), &last);
    assert_eq!(a.suspend, vec![(JobId(2), TaskId(1), "n1".to_string())]);
    assert_eq!(a.acted, vec![key.clone()]);
    Arc::make_mut(&mut s.input.threshold_suspended).insert((JobId(2), TaskId(1)));
    last.insert(key.clone(), 100);
    assert_eq!(
        s.threshold_actions(Time::from_secs(130), &last),
        ThresholdActions::default()
    );
    assert_eq!(
        s.threshold_actions(Time::from_secs(160), &last).suspend,
        vec![(JobId(3), TaskId(1), "n1".to_string())]
    );
    // The instance is in suspend alarm: A, and nothing new starts there.
    assert_eq!(
        s.host_view(
            "n1",
            crate::core::sched::Time::from_secs(0),
            &Default::default()
        )
        .queues[0]
            .states,
        "A"
    );
    submit(&mut s, job(9, "u1", &[], &[]));
    assert!(cycle(&s).is_empty());
    let w = why(&s, 9, "all.q@n1");
    assert!(w.contains(
        "queue instance \"all.q@n1\" is in suspend alarm: np_load_avg=2.000000 (no load adjustment) >= 1.5"
    ), "{w}");
    // Back under the threshold: the stopped jobs continue, one per interval.
    host_runtime(&mut s, "n1").load_values[0].value = "0.100000".into();
    let a = s.threshold_actions(Time::from_secs(160), &last);
    assert_eq!(a.resume, vec![(JobId(2), TaskId(1), "n1".to_string())]);
    assert!(a.suspend.is_empty());
    // No thresholds at all: the same.
    host_runtime(&mut s, "n1").load_values[0].value = "2.000000".into();
    set_queue(&mut s, "all.q", "suspend_thresholds", "NONE");
    assert_eq!(
        s.threshold_actions(Time::from_secs(160), &last).resume,
        vec![(JobId(2), TaskId(1), "n1".to_string())]
    );
}

/// A cluster of two hosts with two slots each and four jobs, and a cycle's decisions
/// taken on an image of it, as the scheduler's thread takes them.
fn decided_on_an_image() -> (ClusterState, ClusterImage, u64, Vec<Dispatch>) {
    let mut s = cluster(&[]);
    add_host(&mut s, "n1", "", LOAD);
    add_host(&mut s, "n2", "", LOAD);
    set_queue(&mut s, "all.q", "slots", "2");
    for id in 1..=4 {
        submit(&mut s, job(id, "u1", &[], &[]));
    }
    let image = s.image();
    let generation = s.config_generation;
    let decisions = image
        .view()
        .schedule(Time::from_secs(0), &connected(&s))
        .dispatches;
    assert_eq!(decisions.len(), 4);
    (s, image, generation, decisions)
}

fn jobs_of(dispatches: &[Dispatch]) -> Vec<u64> {
    let mut ids: Vec<u64> = dispatches.iter().map(|d| d.job_id.get()).collect();
    ids.sort();
    ids
}

#[test]
fn an_image_decides_what_the_state_decides_and_keeps_it_while_the_state_changes() {
    let (mut s, image, _, decisions) = decided_on_an_image();
    assert_eq!(
        cycle(&s),
        decisions
            .iter()
            .map(|d| (d.job_id.get(), format!("{}@{}", d.queue, d.host)))
            .collect::<Vec<_>>()
    );
    // The state changes after the image was taken: the image does not.
    Arc::make_mut(&mut s.input.jobs).remove(&JobId(1));
    submit(&mut s, job(9, "u1", &[], &[]));
    set_queue(&mut s, "all.q", "slots", "1");
    assert!(image.jobs.contains_key(&JobId(1)) && !image.jobs.contains_key(&JobId(9)));
    assert_eq!(
        image
            .view()
            .schedule(Time::from_secs(0), &connected(&s))
            .dispatches,
        decisions
    );
    assert!(!s.input.jobs.contains_key(&JobId(1)) && s.input.jobs.contains_key(&JobId(9)));
}

#[test]
fn decisions_on_an_unchanged_state_are_all_committed() {
    let (s, image, generation, decisions) = decided_on_an_image();
    let checked = s.revalidate(&image, generation, decisions.clone(), &connected(&s));
    assert_eq!((checked.kept, checked.dropped), (decisions, 0));
}

#[test]
fn a_job_deleted_held_or_altered_meanwhile_loses_its_dispatch_and_only_it() {
    let (mut s, image, generation, decisions) = decided_on_an_image();
    // Job 1 deleted, job 2 held (a new version of the job), a new job 5 submitted.
    s.apply(&Op::Delete(crate::core::state::job_key(JobId(1))));
    let mut held = Job::clone(&s.input.jobs[&JobId(2)]);
    held.spec.hold = true;
    submit(&mut s, held);
    submit(&mut s, job(5, "u1", &[], &[]));
    let checked = s.revalidate(&image, generation, decisions, &connected(&s));
    assert_eq!(jobs_of(&checked.kept), [3, 4]);
    assert_eq!(checked.dropped, 2);
}

#[test]
fn a_configuration_change_meanwhile_drops_every_dispatch() {
    type Change = fn(&mut ClusterState);
    let cases: [(&str, Change); 4] = [
        ("queue slots lowered", |s| {
            set_queue(s, "all.q", "slots", "1")
        }),
        ("queue instance disabled", |s| {
            s.apply(&Op::Put(Object::DisabledQueues(vec![(
                "all.q".into(),
                "n1".into(),
            )])))
        }),
        ("host deleted", |s| {
            s.apply(&Op::Delete("exechost/n2".into()))
        }),
        ("scheduler configuration", |s| {
            let mut conf = gantry_common::schedconf::default_schedconf();
            for (k, v) in &mut conf.entries {
                if k == "job_load_adjustments" {
                    *v = "NONE".into();
                }
            }
            s.apply(&Op::Put(Object::Config(conf)))
        }),
    ];
    for (what, change) in cases {
        let (mut s, image, generation, decisions) = decided_on_an_image();
        change(&mut s);
        let checked = s.revalidate(&image, generation, decisions, &connected(&s));
        assert_eq!((checked.kept.len(), checked.dropped), (0, 4), "{what}");
    }
}

#[test]
fn what_cannot_take_a_dispatchs_resources_keeps_it() {
    let (mut s, image, generation, decisions) = decided_on_an_image();
    // A load report, a new submission, a job id handed out: none takes what the
    // dispatches were given.
    s.record_load("n1", Vec::new(), Time::from_secs(1));
    submit(&mut s, job(7, "u2", &[], &[]));
    s.apply(&Op::NextJobId(JobId(100)));
    let checked = s.revalidate(&image, generation, decisions.clone(), &connected(&s));
    assert_eq!((checked.kept, checked.dropped), (decisions, 0));
}

#[test]
fn a_host_whose_execd_left_meanwhile_loses_its_dispatches() {
    let (s, image, generation, decisions) = decided_on_an_image();
    let only_n1: HashSet<String> = ["n1".to_string()].into();
    let checked = s.revalidate(&image, generation, decisions, &only_n1);
    assert!(checked.kept.iter().all(|d| d.host == "n1"));
    assert_eq!((checked.kept.len(), checked.dropped), (2, 2));
}
