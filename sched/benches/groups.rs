//! A cycle's group quota allocation: the demand of 10,000 pending jobs summed into a
//! tree of 1,000 groups (10 top-level groups of 9 children of 10 children each, static
//! and proportional quotas mixed, half accepting surplus), then the allocation over a
//! pool of 4,000 slots.
//!
//! Run: `cargo bench -p gantry-sched --bench groups`

use criterion::{criterion_group, criterion_main, Criterion};
use gantry_proto::{GroupEntry, GroupQuota};
use gantry_sched::groups::{allocate, demand_by_group};

const JOBS: usize = 10_000;

fn tree() -> Vec<GroupEntry> {
    let mut out = Vec::new();
    let entry = |name: String, quota: GroupQuota, n: usize| GroupEntry {
        name,
        quota,
        accept_surplus: n.is_multiple_of(2),
        autoregroup: false,
        user_lists: Vec::new(),
    };
    for a in 0..10 {
        let top = format!("g{a}");
        out.push(entry(top.clone(), GroupQuota::Proportional(0.1), a));
        for b in 0..9 {
            let mid = format!("{top}.s{b}");
            // Proportional under a proportional group; a few static ones.
            let q = if b < 3 {
                GroupQuota::Static(20)
            } else {
                GroupQuota::Proportional(0.1)
            };
            out.push(entry(mid.clone(), q, b));
            for c in 0..10 {
                out.push(entry(
                    format!("{mid}.t{c}"),
                    GroupQuota::Proportional(0.1),
                    c,
                ));
            }
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let tree = tree();
    assert_eq!(tree.len(), 1000);
    // Jobs spread over the leaves, some naming a user after the group, some none.
    let accounts: Vec<String> = (0..JOBS)
        .map(|j| match j % 10 {
            0 => "sge".to_string(),
            1 => format!("g{}.s{}.u{j}", j % 10, j % 9),
            _ => format!("g{}.s{}.t{}", j % 10, j % 9, j % 7),
        })
        .collect();
    let weights: Vec<f64> = (0..JOBS).map(|j| (1 + j % 4) as f64).collect();
    let mut g = c.benchmark_group("group_quotas");
    g.bench_function("demand_and_allocation_1000_groups_10000_jobs", |b| {
        b.iter(|| {
            let demand = demand_by_group(
                &tree,
                accounts
                    .iter()
                    .map(String::as_str)
                    .zip(weights.iter().copied()),
            );
            allocate(&tree, &demand, 4000.0, true)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
