//! One scheduling cycle on a synthetic snapshot (no network, no spool): 10,000 pending
//! jobs in 100 categories against 1,000 hosts x 2 queues, every host and queue with 20
//! complex values of mixed types (consumables among them), every host with the 25 load
//! values an execd reports. The cycle includes building the snapshot from the cluster
//! state, as the master does on every cycle.
//!
//! The same cycle is also measured with 100 resource quota sets of 10 rules each
//! (expanded users, host groups and dynamic limits mixed), to see what quotas add.
//!
//! Run: `cargo bench -p gantry-master --bench schedule`

use criterion::{criterion_group, criterion_main, Criterion};
use gantry_master::sched::{KeptSnapshot, Time, Trigger};
use gantry_master::synthetic::{connected, job, start, submit};

mod common;
use common::{
    build, scale_array, with_bulk, with_groups, with_policies, with_quotas, with_reservations, JOBS,
};

fn bench(c: &mut Criterion) {
    let s = build();
    let hosts = connected(&s);
    // For profilers (perf, callgrind):
    // `GANTRY_CYCLES=plain|quota|accounts|groups|kept|idle|bulk|full|full_quota|array|array_quota` (and `_cold`) runs five cycles of one
    // kind and nothing else (see `measured_cycles`).
    if let Ok(kind) = std::env::var("GANTRY_CYCLES") {
        if kind == "kept" || kind == "idle" || kind == "bulk" {
            // Five cycles on the kept snapshot, one host's load report before each;
            // `idle`: after the first cycle's dispatches started (the cluster full, the
            // jobs left pending placeable nowhere); `bulk`: the same with 20,000 more
            // jobs of one category pending.
            let mut s = if kind == "bulk" {
                with_bulk(s, 20_000)
            } else {
                s
            };
            if kind != "kept" {
                let first = s.schedule(Time::from_secs(0), &hosts).dispatches;
                for d in &first {
                    start(&mut s, d.job_id.get(), d.task_id.get(), &d.queue, &d.host);
                }
            }
            let mut kept = KeptSnapshot::default();
            let host = "node0500".to_string();
            let report = s.input.runtime[&host].load_values.clone();
            std::hint::black_box(kept.schedule(&s.image(), Time::from_secs(0), &hosts));
            measured_cycles(&kind, || {
                s.record_load(&host, report.clone(), Time::from_secs(0));
                let image = s.image();
                std::hint::black_box(kept.schedule(&image, Time::from_secs(0), &hosts));
            });
            std::process::exit(0);
        }
        if kind == "full" || kind == "full_quota" {
            // `benches/clients.sh`'s cell: 1,000 hosts full (4,000 tasks of one array
            // running), 30,000 single jobs pending that fit nowhere; each measured cycle
            // follows one more `qsub` (and every other one a host's load report), as
            // there every submission asks for a cycle.
            let mut s = scale_array(1000, kind == "full_quota");
            let hosts = connected(&s);
            let mut kept = KeptSnapshot::default();
            let first = kept.schedule(&s.image(), Time::from_secs(0), &hosts);
            for d in &first.dispatches {
                start(&mut s, d.job_id.get(), d.task_id.get(), &d.queue, &d.host);
            }
            let mut next = 2;
            let mut one_more = |s: &mut gantry_master::state::ClusterState| {
                let mut j = job(next, "gtbench", &[], &[]);
                j.spec.args = vec!["3600".into()];
                submit(s, j);
                next += 1;
            };
            for _ in 0..30_000 {
                one_more(&mut s);
            }
            std::hint::black_box(kept.schedule(&s.image(), Time::from_secs(1), &hosts));
            let host = "sim0500".to_string();
            let report = s.input.runtime[&host].load_values.clone();
            let mut n = 0;
            measured_cycles(&kind, || {
                one_more(&mut s);
                if n % 2 == 1 {
                    s.record_load(&host, report.clone(), Time::from_secs(1));
                }
                n += 1;
                let image = s.image();
                let d = kept.schedule(&image, Time::from_secs(1), &hosts);
                assert!(d.dispatches.is_empty(), "the cluster is full");
            });
            eprintln!("{kind}: {:?}", kept.counters);
            std::process::exit(0);
        }
        if kind.starts_with("array") {
            // `benches/scale.sh`'s array experiment: one cycle places 4,000 tasks, on
            // the scheduler thread's kept snapshot as in the master (`array_cold`,
            // `array_quota_cold`: a snapshot built afresh for each cycle, as after the
            // quota sets changed).
            let s = scale_array(1000, kind.starts_with("array_quota"));
            let hosts = connected(&s);
            let image = s.image();
            let mut kept = KeptSnapshot::default();
            let placed = kept.schedule(&image, Time::from_secs(0), &hosts);
            eprintln!("{kind}: {} dispatches", placed.dispatches.len());
            measured_cycles(&kind, || {
                if kind.ends_with("cold") {
                    kept = KeptSnapshot::default();
                }
                std::hint::black_box(kept.schedule(&image, Time::from_secs(0), &hosts));
            });
            std::process::exit(0);
        }
        let s = match kind.as_str() {
            "quota" => with_quotas(s),
            "accounts" => with_groups(s, 100, false),
            "groups" => with_groups(s, 100, true),
            "owners" => with_policies(s, 1000, false),
            "policies" => with_policies(s, 1000, true),
            // The issue-4 cluster's own ten users with the policies on.
            "policies10" => with_policies(s, 10, true),
            _ => s,
        };
        measured_cycles(&kind, || {
            std::hint::black_box(s.schedule(Time::from_secs(0), &hosts).dispatches);
        });
        std::process::exit(0);
    }
    let dispatched = s.schedule(Time::from_secs(0), &hosts).dispatches.len();
    eprintln!("one cycle dispatches {dispatched} of {JOBS} jobs");
    let q = with_quotas(s.clone());
    let limited = q.schedule(Time::from_secs(0), &hosts).dispatches.len();
    eprintln!("with 100 quota sets of 10 rules: {limited} of {JOBS} jobs");
    let mut g = c.benchmark_group("scheduler");
    g.sample_size(10);
    g.bench_function("cycle_10k_jobs_100_categories_1000_hosts_2_queues", |b| {
        b.iter(|| s.schedule(Time::from_secs(0), &hosts).dispatches)
    });
    g.bench_function("snapshot_only", |b| {
        b.iter(|| s.snapshot(&hosts, Time::from_secs(0)))
    });
    g.bench_function("cycle_with_100_quota_sets_of_10_rules", |b| {
        b.iter(|| q.schedule(Time::from_secs(0), &hosts).dispatches)
    });
    // Resource reservation: every job `-R y` with an h_rt, reserved for up to 100 of
    // those that cannot start (the ones after them backfill around them), against the
    // same jobs without reservations.
    let unreserved = with_reservations(s.clone(), 0);
    let reserved = with_reservations(s.clone(), 100);
    let made = reserved
        .schedule(Time::from_secs(0), &hosts)
        .reservations
        .len();
    eprintln!("with max_reservation 100: {made} reservations");
    g.bench_function("cycle_h_rt_without_reservations", |b| {
        b.iter(|| unreserved.schedule(Time::from_secs(0), &hosts).dispatches)
    });
    g.bench_function("cycle_h_rt_with_max_reservation_100", |b| {
        b.iter(|| reserved.schedule(Time::from_secs(0), &hosts).dispatches)
    });
    // Hierarchical group quotas: the jobs in 100 groups of a tree, against the same
    // jobs (the same accounts) without a tree.
    let ungrouped = with_groups(s.clone(), 100, false);
    let grouped = with_groups(s.clone(), 100, true);
    eprintln!(
        "with 100 groups: {} of {JOBS} jobs (without the tree {})",
        grouped
            .schedule(Time::from_secs(0), &hosts)
            .dispatches
            .len(),
        ungrouped
            .schedule(Time::from_secs(0), &hosts)
            .dispatches
            .len()
    );
    g.bench_function("cycle_accounts_without_groups", |b| {
        b.iter(|| ungrouped.schedule(Time::from_secs(0), &hosts).dispatches)
    });
    g.bench_function("cycle_with_100_groups", |b| {
        b.iter(|| grouped.schedule(Time::from_secs(0), &hosts).dispatches)
    });
    // The functional and share-tree policies on (1,000 users with shares, a share tree
    // four levels deep, usage), against the same owners under SGE's defaults.
    let owners = with_policies(s.clone(), 1000, false);
    let policies = with_policies(s.clone(), 1000, true);
    g.bench_function("cycle_1000_owners_default_policy", |b| {
        b.iter(|| owners.schedule(Time::from_secs(0), &hosts).dispatches)
    });
    g.bench_function("cycle_1000_owners_share_tree_and_functional", |b| {
        b.iter(|| policies.schedule(Time::from_secs(0), &hosts).dispatches)
    });
    g.finish();
    // The scheduler's thread keeps its snapshot between cycles: after one host's load
    // report, only that host's part is built again before the cycle.
    let mut kept_cluster = s.clone();
    let mut kept = KeptSnapshot::default();
    let reporter = "node0500".to_string();
    let report = kept_cluster.input.runtime[&reporter].load_values.clone();
    kept.snapshot(&kept_cluster.image(), &hosts, Time::from_secs(0));
    let mut g = c.benchmark_group("kept");
    g.sample_size(10);
    g.bench_function("snapshot_after_one_load_report", |b| {
        b.iter(|| {
            kept_cluster.record_load(&reporter, report.clone(), Time::from_secs(0));
            let image = kept_cluster.image();
            kept.snapshot(&image, &hosts, Time::from_secs(0))
                .order
                .len()
        })
    });
    g.bench_function("cycle_after_one_load_report", |b| {
        b.iter(|| {
            kept_cluster.record_load(&reporter, report.clone(), Time::from_secs(0));
            let image = kept_cluster.image();
            kept.schedule(&image, Time::from_secs(0), &hosts).dispatches
        })
    });
    g.finish();
    assert_eq!(
        kept.counters.rebuilt, 1,
        "a load report rebuilt the whole snapshot"
    );
    // What one load report costs the master when it changes no decision: the check for
    // a new host's slots and the values recorded (the handler does nothing else; the
    // timer asks once a second whether a cycle is due, measured apart).
    // Every host has reported before: its slots are set from its num_proc, as the
    // master does at a host's first report.
    let mut r = s.clone();
    let names: Vec<String> = r.input.exechosts.keys().cloned().collect();
    for name in &names {
        let values = r.input.runtime[name].load_values.clone();
        if let Some(change) = r.slots_for_new_host(name, &values) {
            r.apply_all(&change.ops);
        }
    }
    let host = "node0500".to_string();
    let values = r.input.runtime[&host].load_values.clone();
    let mut g = c.benchmark_group("master");
    g.bench_function("load_report_without_cycle", |b| {
        b.iter(|| {
            assert!(r.slots_for_new_host(&host, &values).is_none());
            r.record_load(&host, values.clone(), Time::from_secs(1));
        })
    });
    let trigger = Trigger {
        state_changed: false,
        loads_changed: true,
        last_cycle: Some(Time::from_secs(0)),
    };
    g.bench_function("is_a_cycle_due", |b| {
        b.iter(|| s.view().cycle_due(&trigger, Time::from_secs(2)))
    });
    // The timer's once-a-second look at the queues' suspend_thresholds (none set here,
    // as in SGE's default queue).
    let acted = std::collections::HashMap::new();
    g.bench_function("suspend_thresholds_check", |b| {
        b.iter(|| s.threshold_actions(Time::from_secs(2), &acted))
    });
    g.finish();
}

/// Five cycles, and nothing else: callgrind collects inside this function only
/// (`--toggle-collect='*measured_cycles*'`), not in the cycle the quota sets' setup runs
/// first (as the master, to size the next cycle's counters) nor in the one that fills
/// the cluster for `idle`.
#[inline(never)]
fn measured_cycles(kind: &str, mut cycle: impl FnMut()) {
    // `GANTRY_CYCLE_COUNT`: more than five (for a sampling profiler).
    let count = std::env::var("GANTRY_CYCLE_COUNT")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(5);
    for _ in 0..count {
        let t = std::time::Instant::now();
        cycle();
        if std::env::var("GANTRY_CYCLE_TIMES").is_ok() {
            eprintln!("{kind} cycle {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
