//! Granting an advance reservation (`qrsub`: the master's whole decision, its checks
//! and the placement on the calendar) against the scheduler benchmark's cluster (1,000
//! hosts x 2 queues with 20 complex values each) with 10,000 running jobs (half with an
//! `h_rt`, half without) and 1,000 granted reservations spread over the next days.
//!
//! Run: `cargo bench -p gantry-master --bench ar`

use criterion::{criterion_group, criterion_main, Criterion};
use gantry_master::jobs::TaskState;
use gantry_master::sched::{KeptSnapshot, Time};
use gantry_master::state::{ClusterState, Object, Op};
use gantry_master::synthetic::{connected, set_queue};
use gantry_proto::{ArSpec, Caller};

#[allow(dead_code)] // the quota sets of the cycle benchmark are not used here
mod common;
use common::{build, JOBS};

const ARS: u64 = 1000;
/// The hosts reported at 0 and are reachable for `max_unheard` after.
const NOW: i64 = 100;

fn caller() -> Caller {
    Caller {
        user: "root".into(),
        uid: 0,
        gid: 0,
        host: "head".into(),
    }
}

/// The request of the n-th reservation: one to four slots (a parallel environment for
/// more than one), starting within the next four days, for one to four hours.
fn spec(n: u64) -> ArSpec {
    let slots = 1 + n % 4;
    ArSpec {
        account: "sge".into(),
        submit_host: "head".into(),
        start: Some(NOW + 600 + (n as i64 * 337) % (4 * 86_400)),
        duration: Some(3600 * (1 + (n as i64 % 4))),
        pe: (slots > 1).then(|| ("smp".to_string(), slots.to_string())),
        queues: vec![if n.is_multiple_of(2) {
            "all.q"
        } else {
            "short.q"
        }
        .to_string()],
        ..ArSpec::default()
    }
}

/// The cluster with every job running (half of them with an `h_rt`) and `ARS`
/// reservations granted.
fn loaded() -> ClusterState {
    let mut s = build();
    for q in ["all.q", "short.q"] {
        set_queue(&mut s, q, "slots", "16");
    }
    let ids: Vec<gantry_proto::JobId> = s.input.jobs.keys().copied().collect();
    for id in ids {
        if id.get().is_multiple_of(2) {
            let mut j = gantry_master::jobs::Job::clone(&s.input.jobs[&id]);
            j.spec
                .hard_resources
                .push(("h_rt".into(), (600 + id.get() % 7200).to_string()));
            s.apply(&Op::Put(Object::Job(j)));
        }
    }
    let hosts = connected(&s);
    let at = Time::from_secs(NOW);
    run_all(&mut s, &hosts, at);
    // The jobs whose licences ran out run without their requests.
    let waiting: Vec<gantry_proto::JobId> = s
        .input
        .jobs
        .values()
        .filter(|j| j.tasks.has_pending())
        .map(|j| j.id)
        .collect();
    for id in waiting {
        let mut j = gantry_master::jobs::Job::clone(&s.input.jobs[&id]);
        j.spec.hard_resources.retain(|(k, _)| k == "h_rt");
        s.apply(&Op::Put(Object::Job(j)));
    }
    run_all(&mut s, &hosts, at);
    // No cap on the number of reservations.
    let mut global = s.global().into_owned();
    for (k, v) in &mut global.entries {
        if k == "max_advance_reservations" {
            *v = "0".into();
        }
    }
    s.apply(&Op::Put(Object::Config(global)));
    let running = s
        .input
        .jobs
        .values()
        .filter(|j| !j.tasks.has_pending())
        .count();
    assert_eq!(running as u64, JOBS, "every job runs");
    let mut kept = KeptSnapshot::default();
    for n in 0..ARS {
        let d = s.decide_submit_ar(&caller(), &[], &spec(n), &hosts, at, &mut kept);
        assert!(!d.ops.is_empty(), "reservation {n} granted: {:?}", d.reply);
        s.apply_all(&d.ops);
    }
    assert_eq!(s.input.ars.len() as u64, ARS);
    s
}

/// Cycles until nothing more starts, each dispatch committed as the master does.
fn run_all(s: &mut ClusterState, hosts: &std::collections::HashSet<String>, at: Time) {
    for _ in 0..20 {
        let d = s.schedule(at, hosts).dispatches;
        if d.is_empty() {
            break;
        }
        for d in d {
            let mut j = gantry_master::jobs::Job::clone(&s.input.jobs[&d.job_id]);
            j.tasks.insert(
                d.task_id,
                TaskState::Running {
                    host: d.host.clone(),
                    queue: d.queue.clone(),
                    start_time: NOW - 60,
                    grants: d.grants.clone(),
                    pe: d.pe.clone(),
                },
            );
            s.apply(&Op::Put(Object::Job(j)));
        }
    }
}

fn bench(c: &mut Criterion) {
    let s = loaded();
    let hosts = connected(&s);
    let at = Time::from_secs(NOW);
    let mut g = c.benchmark_group("advance_reservation");
    g.sample_size(20);
    // The master keeps the snapshot it grants on between `qrsub`s.
    let mut granting = KeptSnapshot::default();
    g.bench_function("qrsub_10k_running_1000_ars_1000_hosts", |b| {
        let mut n = ARS;
        b.iter(|| {
            n += 1;
            let d = s.decide_submit_ar(&caller(), &[], &spec(n), &hosts, at, &mut granting);
            assert!(!d.ops.is_empty());
            d
        })
    });
    // The same with what changes between two `qrsub`s on a busy cluster (untimed):
    // 20 running jobs end and as many start in their place (each a changed job), 25
    // hosts report (1,000 hosts at the default `load_report_time` of 40 s), and the
    // oldest reservation is deleted and its request asked for again (granted, it is
    // the newest: a thousand stay granted, spread as before).
    let mut busy = s.clone();
    let mut churning = KeptSnapshot::default();
    let running: Vec<gantry_proto::JobId> = busy.input.jobs.keys().copied().collect();
    let reporters: Vec<String> = busy.input.runtime.keys().cloned().collect();
    // The request of each granted reservation, oldest first.
    let mut asked: std::collections::VecDeque<(gantry_proto::ArId, u64)> = busy
        .input
        .ars
        .keys()
        .zip(0..ARS)
        .map(|(&id, n)| (id, n))
        .collect();
    g.bench_function("qrsub_after_churn_10k_running_1000_ars_1000_hosts", |b| {
        let mut turn = 0usize;
        b.iter_custom(|iters| {
            let mut timed = std::time::Duration::ZERO;
            for _ in 0..iters {
                for k in 0..20 {
                    let id = running[(turn * 20 + k) % running.len()];
                    let mut j = gantry_master::jobs::Job::clone(&busy.input.jobs[&id]);
                    let placed: Vec<(gantry_proto::TaskId, TaskState)> =
                        j.tasks.placed().map(|(t, st)| (t, st.clone())).collect();
                    for (t, mut st) in placed {
                        if let TaskState::Running { start_time, .. } = &mut st {
                            *start_time = NOW - (turn % 50) as i64;
                        }
                        j.tasks.insert(t, st);
                    }
                    busy.apply(&Op::Put(Object::Job(j)));
                }
                for k in 0..25 {
                    let h = &reporters[(turn * 25 + k) % reporters.len()];
                    let report = busy.input.runtime[h].load_values.clone();
                    busy.record_load(h, report, at);
                }
                turn += 1;
                let Some((oldest, n)) = asked.pop_front() else {
                    break;
                };
                busy.apply(&Op::Delete(gantry_master::state::ar_key(oldest)));
                let started = std::time::Instant::now();
                let d = busy.decide_submit_ar(&caller(), &[], &spec(n), &hosts, at, &mut churning);
                timed += started.elapsed();
                assert!(!d.ops.is_empty(), "reservation {n}: {:?}", d.reply);
                busy.apply_all(&d.ops);
                asked.push_back((
                    *busy
                        .input
                        .ars
                        .keys()
                        .next_back()
                        .unwrap_or(&gantry_proto::ArId(0)),
                    n,
                ));
            }
            timed
        })
    });
    g.bench_function("snapshot_10k_running_1000_ars", |b| {
        b.iter(|| s.snapshot(&hosts, at).order.len())
    });
    // The scheduler's thread keeps its snapshot between cycles: after one host's load
    // report it rebuilds that host's part and books again what runs, its demands kept.
    let mut kept_cluster = s.clone();
    let mut kept = KeptSnapshot::default();
    let reporter = "node0500".to_string();
    let report = kept_cluster.input.runtime[&reporter].load_values.clone();
    kept.snapshot(&kept_cluster.image(), &hosts, at);
    g.bench_function("kept_snapshot_10k_running_1000_ars", |b| {
        b.iter(|| {
            kept_cluster.record_load(&reporter, report.clone(), at);
            let image = kept_cluster.image();
            kept.snapshot(&image, &hosts, at).order.len()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
