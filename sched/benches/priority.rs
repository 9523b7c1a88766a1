//! The priority calculation alone: tickets (share tree four levels deep, functional,
//! override off), urgency and `prio` for 10,000 pending jobs of 1,000 users, as a cycle
//! computes them before it orders the jobs (issue 36: under 10 ms).

use std::collections::BTreeMap;

use criterion::{criterion_group, criterion_main, Criterion};

use gantry_common::usage::{Amounts, Usage, UsageBook, UsageOf};
use gantry_proto::{Config, JobId, TaskId};
use gantry_sched::priority::{priorities, PolicyConf, PolicyJob, PolicyObjects};

const USERS: u64 = 1_000;
const JOBS: u64 = 10_000;

fn conf(share: &str, functional: &str) -> PolicyConf {
    let mut c: Config = gantry_common::schedconf::default_schedconf();
    for (k, v) in &mut c.entries {
        match k.as_str() {
            "weight_tickets_share" => *v = share.into(),
            "weight_tickets_functional" => *v = functional.into(),
            _ => {}
        }
    }
    PolicyConf::from_config(Some(&c))
}

fn bench(c: &mut Criterion) {
    let users: BTreeMap<String, gantry_common::user::User> = (0..USERS)
        .map(|u| {
            let mut user = gantry_common::user::User::new(&format!("user{u}"));
            user.fshare = 1 + (u % 13) as u32;
            (user.name.clone(), user)
        })
        .collect();
    let mut usage = UsageBook::default();
    for u in 0..USERS {
        usage.records.insert(
            UsageOf::User(format!("user{u}")),
            Usage {
                decayed: Amounts::new((u % 17) as f64 * 3600.0, 0.0, 0.0),
                at: 0,
                long_term: Amounts::default(),
            },
        );
    }
    let tree = gantry_sched::synthetic::share_tree_of(USERS);
    let projects = BTreeMap::new();
    let departments = BTreeMap::from([("defaultdepartment".to_string(), (0, 0))]);
    let objects = PolicyObjects {
        users: &users,
        projects: &projects,
        departments: &departments,
        share_tree: Some(&tree),
        usage: &usage,
    };
    let names: Vec<String> = (0..USERS).map(|u| format!("user{u}")).collect();
    let jobs: Vec<PolicyJob<'_>> = (1..=JOBS)
        .map(|id| PolicyJob {
            id: JobId(id),
            submit_time: id as i64,
            posix_priority: 0,
            deadline: None,
            job_share: 0,
            override_tickets: 0,
            user: &names[(id % USERS) as usize],
            project: None,
            department: Some("defaultdepartment"),
            min_slots: 1,
            rrcontr: 1000.0,
            running: Vec::new(),
            pending: vec![TaskId(1)],
        })
        .collect();
    let mut g = c.benchmark_group("priority");
    g.sample_size(20);
    for (name, conf) in [
        ("10k_pending_1k_users_no_tickets", conf("0", "0")),
        (
            "10k_pending_1k_users_share_tree_depth_4",
            conf("10000", "0"),
        ),
        ("10k_pending_1k_users_functional", conf("0", "10000")),
        (
            "10k_pending_1k_users_share_tree_and_functional",
            conf("10000", "10000"),
        ),
    ] {
        let p = priorities(&conf, &jobs, &objects, 20_000, 100);
        assert_eq!(p.jobs.len(), JOBS as usize);
        g.bench_function(name, |b| {
            b.iter(|| priorities(&conf, &jobs, &objects, 20_000, 100))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
