#![allow(clippy::unwrap_used)]

use super::*;
use crate::jobs::{Job, TaskState};
use crate::state::{Object, Op};
use crate::synthetic::{add_host, cluster, connected, job, set_queue, start, submit};
use gantry_common::value::Value;
use std::sync::Arc;

/// A host's reports, to change in place.
fn host_runtime<'a>(s: &'a mut ClusterState, host: &str) -> &'a mut HostRuntime {
    Arc::make_mut(
        Arc::make_mut(&mut s.runtime)
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
        .map(|d| (d.job_id, format!("{}@{}", d.queue, d.host)))
        .collect()
}

/// The first reason `qstat -j` gives for a job on a queue instance.
fn why(s: &ClusterState, id: u64, qi: &str) -> String {
    let j = s.jobs.get(&id).unwrap();
    s.explain(j, &connected(s), Time::from_secs(0))
        .into_iter()
        .find(|r| r.contains(&format!("\"{qi}\"")) || r.contains(qi.split('@').nth(1).unwrap()))
        .unwrap_or_default()
}

fn demand_of(s: &ClusterState, snap: &Snapshot, id: u64, slots: u32) -> Demand {
    let mut d = demand(&snap.catalog, s.jobs.get(&id).unwrap()).unwrap();
    d.slots = slots;
    d
}

fn instance(snap: &Snapshot, qi: &str) -> usize {
    snap.instances
        .iter()
        .position(|i| format!("{}@{}", i.queue, snap.hosts[i.host].name) == qi)
        .unwrap()
}

fn left(snap: &Snapshot, qi: &str, attr: &str) -> f64 {
    let inst = instance(snap, qi);
    let id = snap.catalog.id(attr).unwrap();
    let o = snap.instances[inst].layer.get(id).unwrap();
    // What is left at this instant.
    available(o, snap.used(o, Some(snap.now))).unwrap().0
}

#[test]
fn e1_a_fixed_value_is_required_by_every_slot_and_never_consumed() {
    // j1 requests t01=10 with 4 slots; q1 has 5 slots and t01 <= 20.
    let mut s = cluster(&["t01 INT <= YES NO 0"]);
    add_host(&mut s, "n1", "", LOAD);
    set_queue(&mut s, "all.q", "slots", "5");
    set_queue(&mut s, "all.q", "complex_values", "t01=20");
    submit(&mut s, job(1, "u1", &[("t01", "10")], &[]));
    let mut snap = s.snapshot(&connected(&s), Time::from_secs(0));
    let d = demand_of(&s, &snap, 1, 4);
    let q1 = instance(&snap, "all.q@n1");
    assert_eq!(snap.matches(&d, q1, Pass::All(4)), Ok(()));
    snap.debit(&d, &[(q1, 4)], 1.0);
    // Afterwards: slots = 1 and t01 <= 20.
    assert_eq!(left(&snap, "all.q@n1", "slots"), 1.0);
    let t01 = snap.catalog.id("t01").unwrap();
    let o = snap.instances[q1].layer.get(t01).unwrap();
    assert_eq!(o.fixed, Some(Value::Num(20.0)));
    assert_eq!(snap.used(o, None), 0.0);
    // A request above the fixed value never fits, whatever is free.
    submit(&mut s, job(2, "u1", &[("t01", "30")], &[]));
    assert_eq!(
        why(&s, 2, "all.q@n1"),
        "(-l t01=30) cannot run in queue instance \"all.q@n1\" because it offers only qf:t01=20"
    );
}

#[test]
fn e2_a_consumable_is_debited_per_slot_on_every_queue_it_is_granted_on() {
    // j2 requests t02=20 with 4 slots: 2 on q2 (5 slots, t02=40), 1 on q3 (1 slot), 1 on q4 (3 slots).
    let mut s = cluster(&["t02 INT <= YES YES 0"]);
    for h in ["h2", "h3", "h4"] {
        add_host(&mut s, h, "", LOAD);
    }
    set_queue(&mut s, "all.q", "slots", "5,[h3=1],[h4=3]");
    set_queue(&mut s, "all.q", "complex_values", "t02=40");
    submit(&mut s, job(2, "u1", &[("t02", "20")], &[]));
    let mut snap = s.snapshot(&connected(&s), Time::from_secs(0));
    let d = demand_of(&s, &snap, 2, 4);
    let (q2, q3, q4) = (
        instance(&snap, "all.q@h2"),
        instance(&snap, "all.q@h3"),
        instance(&snap, "all.q@h4"),
    );
    // q2 can hold two of the four instances, not three (3 * 20 > 40).
    assert_eq!(snap.matches(&d, q2, Pass::Consumables(2)), Ok(()));
    assert!(snap.matches(&d, q2, Pass::Consumables(3)).is_err());
    snap.debit(&d, &[(q2, 2), (q3, 1), (q4, 1)], 1.0);
    assert_eq!(left(&snap, "all.q@h2", "slots"), 3.0);
    assert_eq!(left(&snap, "all.q@h2", "t02"), 0.0);
    assert_eq!(left(&snap, "all.q@h3", "slots"), 0.0);
    assert_eq!(left(&snap, "all.q@h3", "t02"), 20.0);
    assert_eq!(left(&snap, "all.q@h4", "slots"), 2.0);
    assert_eq!(left(&snap, "all.q@h4", "t02"), 20.0);
    // Crediting gives everything back.
    snap.debit(&d, &[(q2, 2), (q3, 1), (q4, 1)], -1.0);
    assert_eq!(left(&snap, "all.q@h2", "t02"), 40.0);
    assert_eq!(left(&snap, "all.q@h3", "slots"), 1.0);
}

#[test]
fn a_per_job_consumable_is_debited_once_on_the_master_queue() {
    let mut s = cluster(&["lic INT <= YES JOB 0"]);
    add_host(&mut s, "h1", "lic=3", LOAD);
    add_host(&mut s, "h2", "lic=3", LOAD);
    set_queue(&mut s, "all.q", "slots", "4");
    s.global_host = Arc::new(Some(
        exechost::parse_exechost("hostname global\ncomplex_values lic=5\n").unwrap_or_else(|_| {
            let mut h = exechost::parse_exechost("hostname h0\ncomplex_values lic=5\n").unwrap();
            h.hostname = "global".into();
            h
        }),
    ));
    submit(&mut s, job(1, "u1", &[("lic", "2")], &[]));
    let mut snap = s.snapshot(&connected(&s), Time::from_secs(0));
    let d = demand_of(&s, &snap, 1, 4);
    let (a, b) = (instance(&snap, "all.q@h1"), instance(&snap, "all.q@h2"));
    snap.debit(&d, &[(a, 3), (b, 1)], 1.0);
    let lic = snap.catalog.id("lic").unwrap();
    let used = |o: Option<&Offer>| snap.used(o.unwrap(), None);
    assert_eq!(used(snap.global.get(lic)), 2.0);
    let host = |i: usize| &snap.hosts[snap.instances[i].host].layer;
    assert_eq!(used(host(a).get(lic)), 2.0);
    assert_eq!(used(host(b).get(lic)), 0.0);
}

use gantry_common::exechost;

#[test]
fn section_3_a_load_value_overridden_on_its_own_layer() {
    // arch reported as lx-amd64, overridden in the host's definition.
    let mut s = cluster(&[]);
    add_host(&mut s, "n1", "arch=special", LOAD);
    add_host(&mut s, "n2", "", LOAD);
    submit(&mut s, job(1, "u1", &[("arch", "special")], &[]));
    submit(&mut s, job(2, "u1", &[("arch", "lx-amd64")], &[]));
    assert_eq!(
        cycle(&s),
        vec![(1, "all.q@n1".to_string()), (2, "all.q@n2".to_string())]
    );
    // ... but not in a queue: the host layer decides first.
    set_queue(&mut s, "all.q", "complex_values", "arch=other");
    submit(&mut s, job(3, "u1", &[("arch", "other")], &[]));
    assert_eq!(
        why(&s, 3, "all.q@n2"),
        "(-l arch=other) cannot run at host \"n2\" because it offers only hl:arch=lx-amd64"
    );
    assert!(cycle(&s).iter().all(|(id, _)| *id != 3));
}

#[test]
fn section_3_the_more_restrictive_of_configured_and_reported_counts() {
    // mem_free: custom 1G / load 4G -> 1G; custom 1G / load 0.9G -> 0.9G.
    let mut s = cluster(&[]);
    add_host(&mut s, "a", "mem_free=1G", LOAD);
    add_host(
        &mut s,
        "b",
        "mem_free=1G",
        &[("mem_free", "0.9G"), ("np_load_avg", "0.1")],
    );
    submit(&mut s, job(1, "u1", &[("mem_free", "2G")], &[]));
    assert_eq!(
        why(&s, 1, "all.q@a"),
        "(-l mem_free=2G) cannot run at host \"a\" because it offers only hf:mem_free=1.000G"
    );
    submit(&mut s, job(2, "u1", &[("mem_free", "950M")], &[]));
    assert_eq!(
        why(&s, 2, "all.q@b"),
        "(-l mem_free=950M) cannot run at host \"b\" because it offers only hl:mem_free=921.600M"
    );
    // A queue may only restrict further.
    set_queue(&mut s, "all.q", "complex_values", "mem_free=512M");
    submit(&mut s, job(3, "u1", &[("mem_free", "600M")], &[]));
    assert_eq!(
        why(&s, 3, "all.q@a"),
        "(-l mem_free=600M) cannot run in queue instance \"all.q@a\" because it offers only qf:mem_free=512.000M"
    );
    submit(&mut s, job(4, "u1", &[("mem_free", "500M")], &[]));
    let placed = cycle(&s);
    assert!(placed.iter().any(|(id, _)| *id == 4));
    assert!(placed.iter().all(|(id, _)| *id == 4));
}

#[test]
fn matching_stops_at_the_first_failing_layer() {
    let mut s = cluster(&["lic INT <= YES YES 0"]);
    add_host(&mut s, "n1", "lic=4", LOAD);
    let mut g = exechost::parse_exechost("hostname x\ncomplex_values lic=0\n").unwrap();
    g.hostname = "global".into();
    s.global_host = Arc::new(Some(g));
    submit(&mut s, job(1, "u1", &[("lic", "1")], &[]));
    let reasons = s.explain(s.jobs.get(&1).unwrap(), &connected(&s), Time::from_secs(0));
    assert_eq!(
        reasons,
        vec!["(-l lic=1) cannot run globally because it offers only gc:lic=0".to_string()]
    );
    assert!(cycle(&s).is_empty());
}

#[test]
fn string_types_match_as_section_5_says() {
    let mut s = cluster(&["os RESTRING == YES NO NONE", "site CSTRING == YES NO NONE"]);
    add_host(&mut s, "n1", "os=linux,site=Berlin", LOAD);
    let cases: &[(&str, &str, bool)] = &[
        ("os", "linux|solaris", true),
        ("os", "lin*", true),
        ("os", "l?nux", true),
        ("os", "sol*", false),
        ("os", "[linux|solaris]", false),
        ("os", "LINUX", false),
        ("site", "berlin", true),
        ("site", "BERLIN", true),
        ("site", "paris", false),
        ("arch", "lx-amd64", true),
        ("arch", "lx-*", false),
        ("hostname", "N1", true),
        ("hostname", "n*", true),
        ("hostname", "m*", false),
    ];
    for (n, (name, value, fits)) in cases.iter().enumerate() {
        let mut s = s.clone();
        submit(&mut s, job(n as u64 + 1, "u1", &[(name, value)], &[]));
        assert_eq!(!cycle(&s).is_empty(), *fits, "-l {name}={value}");
    }
    Arc::make_mut(&mut s.jobs).clear();
}

#[test]
fn a_resource_only_one_host_has_keeps_jobs_there_and_never_goes_negative() {
    let mut s = cluster(&["gpu INT <= YES YES 0", "bigmem BOOL == YES NO 0"]);
    add_host(&mut s, "gpu1", "gpu=2", LOAD);
    add_host(&mut s, "big1", "bigmem=true", LOAD);
    set_queue(&mut s, "all.q", "slots", "8");
    for id in 1..=5 {
        submit(&mut s, job(id, "u1", &[("gpu", "1")], &[]));
    }
    submit(&mut s, job(6, "u1", &[("bigmem", "true")], &[]));
    submit(&mut s, job(7, "u1", &[("bigmem", "false")], &[]));
    let placed = cycle(&s);
    assert_eq!(
        placed,
        vec![
            (1, "all.q@gpu1".to_string()),
            (2, "all.q@gpu1".to_string()),
            (6, "all.q@big1".to_string()),
        ]
    );
    assert_eq!(
        why(&s, 7, "all.q@gpu1"),
        "(-l bigmem=false) cannot run in queue instance \"all.q@gpu1\" because job requests unknown resource (bigmem)"
    );
    for (id, qi) in &placed {
        let (q, h) = qi.split_once('@').unwrap();
        start(&mut s, *id, 1, q, h);
    }
    // The two GPUs are in use: nothing more starts until one is given back.
    assert!(cycle(&s).iter().all(|(id, _)| *id > 5));
    assert_eq!(
        why(&s, 3, "all.q@gpu1"),
        "(-l gpu=1) cannot run at host \"gpu1\" because it offers only hc:gpu=0"
    );
    Arc::make_mut(&mut s.jobs).remove(&1);
    assert_eq!(cycle(&s)[0], (3, "all.q@gpu1".to_string()));
}

#[test]
fn a_consumable_default_is_debited_from_jobs_that_do_not_ask() {
    let mut s = cluster(&["mem_req MEMORY <= YES YES 1G"]);
    add_host(&mut s, "n1", "mem_req=2G", LOAD);
    add_host(&mut s, "n2", "", LOAD);
    set_queue(&mut s, "all.q", "slots", "4,[n2=1]");
    for id in 1..=6 {
        submit(&mut s, job(id, "u1", &[], &[]));
    }
    // n1 takes two (2G / 1G each), n2 its one slot: where the consumable is not defined
    // the default does not stop a job.
    let placed = cycle(&s);
    assert_eq!(placed.len(), 3);
    assert_eq!(
        placed.iter().filter(|(_, q)| q == "all.q@n1").count(),
        2,
        "{placed:?}"
    );
}

#[test]
fn soft_requests_rank_candidates() {
    let mut s = cluster(&["bigmem BOOL == YES NO 0"]);
    add_host(&mut s, "a", "", LOAD);
    add_host(&mut s, "b", "bigmem=true", LOAD);
    submit(&mut s, job(1, "u1", &[], &[("bigmem", "true")]));
    submit(&mut s, job(2, "u1", &[], &[("arch", "nosuch")]));
    assert_eq!(
        cycle(&s),
        vec![(1, "all.q@b".to_string()), (2, "all.q@a".to_string())]
    );
}

#[test]
fn a_forced_attribute_takes_only_jobs_that_request_it() {
    let mut s = cluster(&["special BOOL == FORCED NO 0"]);
    add_host(&mut s, "a", "special=true", LOAD);
    add_host(&mut s, "b", "", LOAD);
    submit(&mut s, job(1, "u1", &[], &[]));
    submit(&mut s, job(2, "u1", &[("special", "true")], &[]));
    assert_eq!(
        cycle(&s),
        vec![(1, "all.q@b".to_string()), (2, "all.q@a".to_string())]
    );
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
    let reasons = s.explain(s.jobs.get(&1).unwrap(), &connected(&s), Time::from_secs(0));
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
        crate::sched::Time::from_secs(0),
        &Default::default(),
    );
    assert_eq!(view.queues[0].states, "a");
    set_queue(&mut s, "all.q", "load_thresholds", "NONE");
    assert_eq!(
        s.host_view(
            "busy",
            crate::sched::Time::from_secs(0),
            &Default::default()
        )
        .queues[0]
            .states,
        ""
    );
    assert_eq!(cycle(&s).len(), 1);
}

#[test]
fn queue_sort_method_orders_candidates() {
    let mut s = cluster(&[]);
    add_host(&mut s, "a", "", &[("np_load_avg", "0.9")]);
    add_host(&mut s, "b", "", &[("np_load_avg", "0.1")]);
    let mut q = gantry_common::queue::new_queue("low.q", "a");
    q.attr_mut("seq_no").unwrap().default = "1".into();
    s.apply(&crate::state::Op::Put(crate::state::Object::Queue(q)));
    set_queue(&mut s, "all.q", "seq_no", "5");
    submit(&mut s, job(1, "u1", &[], &[]));
    // load: the least loaded host first.
    assert_eq!(cycle(&s), vec![(1, "all.q@b".to_string())]);
    s.sched = Arc::new(Some(
        gantry_common::schedconf::parse_schedconf("queue_sort_method seqno\n").unwrap(),
    ));
    assert_eq!(cycle(&s), vec![(1, "low.q@a".to_string())]);
}

#[test]
fn access_lists_and_queue_lists() {
    let mut s = cluster(&[]);
    add_host(&mut s, "a", "", LOAD);
    Arc::make_mut(&mut s.usersets).insert(
        "staff".into(),
        gantry_proto::UserSet {
            name: "staff".into(),
            types: vec!["ACL".into()],
            fshare: 0,
            oticket: 0,
            entries: vec!["u1".into()],
        },
    );
    set_queue(&mut s, "all.q", "user_lists", "staff");
    submit(&mut s, job(1, "u1", &[], &[]));
    submit(&mut s, job(2, "u2", &[], &[]));
    assert_eq!(cycle(&s), vec![(1, "all.q@a".to_string())]);
    assert_eq!(
        why(&s, 2, "all.q@a"),
        "queue instance \"all.q@a\" dropped because user \"u2\" has no access to it"
    );
    // `@group` entries admit the members of a Unix group.
    Arc::make_mut(&mut s.usersets)
        .get_mut("staff")
        .unwrap()
        .entries
        .push("@physics".into());
    Arc::make_mut(&mut s.jobs).clear();
    let mut j = job(4, "u4", &[], &[]);
    j.owner.groups = vec!["u4".into(), "physics".into()];
    submit(&mut s, j);
    assert!(cycle(&s).iter().any(|(id, _)| *id == 4));
    let mut j = job(3, "u1", &[], &[]);
    j.spec.queues = vec!["other.q".into()];
    submit(&mut s, j);
    assert!(cycle(&s).iter().all(|(id, _)| *id != 3));
}

#[test]
fn one_category_is_matched_once_and_fills_what_is_free() {
    let mut s = cluster(&[]);
    for h in 0..10 {
        add_host(&mut s, &format!("n{h}"), "", LOAD);
    }
    set_queue(&mut s, "all.q", "slots", "4");
    for id in 1..=1000 {
        submit(&mut s, job(id, "u1", &[("arch", "lx-amd64")], &[]));
    }
    let placed = cycle(&s);
    assert_eq!(placed.len(), 40);
    assert_eq!(placed[0].0, 1);
    assert_eq!(placed[39].0, 40);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Under any burst of requests, no consumable is ever handed out beyond its
        /// capacity on any layer.
        #[test]
        fn consumables_never_go_negative(
            caps in proptest::collection::vec(0u32..5, 1..5),
            requests in proptest::collection::vec(0u32..3, 1..40),
            slots in 1u32..6,
        ) {
            let mut s = cluster(&["gpu INT <= YES YES 0"]);
            for (n, c) in caps.iter().enumerate() {
                add_host(&mut s, &format!("h{n}"), &format!("gpu={c}"), LOAD);
            }
            set_queue(&mut s, "all.q", "slots", &slots.to_string());
            for (n, r) in requests.iter().enumerate() {
                submit(&mut s, job(n as u64 + 1, "u1", &[("gpu", &r.to_string())], &[]));
            }
            let placed = s.schedule(Time::from_secs(0), &connected(&s)).dispatches;
            for (n, c) in caps.iter().enumerate() {
                let host = format!("h{n}");
                let here: Vec<_> = placed.iter().filter(|d| d.host == host).collect();
                let gpus: u32 = here.iter().map(|d| requests[d.job_id as usize - 1]).sum();
                prop_assert!(gpus <= *c, "{host}: {gpus} > {c}");
                prop_assert!(here.len() as u32 <= slots);
            }
        }
    }
}

mod parallel {
    use super::*;

    fn pe_job(id: u64, pe: &str, range: &str, hard: &[(&str, &str)]) -> crate::jobs::Job {
        let mut j = job(id, "u1", hard, &[]);
        j.spec.pe = Some((pe.into(), range.into()));
        j
    }

    /// (job, PE, [(queue instance, slots)])
    type Placed = (u64, Option<String>, Vec<(String, u32)>);

    fn grants(s: &ClusterState) -> Vec<Placed> {
        s.schedule(Time::from_secs(0), &connected(s))
            .dispatches
            .into_iter()
            .map(|d| {
                (
                    d.job_id,
                    d.pe,
                    d.grants
                        .into_iter()
                        .map(|g| (format!("{}@{}", g.queue, g.host), g.slots))
                        .collect(),
                )
            })
            .collect()
    }

    fn three_hosts(slots: &str) -> ClusterState {
        let mut s = cluster(&["t02 INT <= YES YES 0", "lic INT <= YES JOB 0"]);
        for h in ["a", "b", "c"] {
            add_host(&mut s, h, "", LOAD);
        }
        set_queue(&mut s, "all.q", "slots", slots);
        s
    }

    fn g(list: &[(&str, u32)]) -> Vec<(String, u32)> {
        list.iter().map(|(q, n)| (q.to_string(), *n)).collect()
    }

    #[test]
    fn fill_up_fills_each_host_before_the_next() {
        let mut s = three_hosts("4");
        submit(&mut s, pe_job(1, "mpi", "6", &[]));
        assert_eq!(
            grants(&s),
            vec![(1, Some("mpi".into()), g(&[("all.q@a", 4), ("all.q@b", 2)]))]
        );
    }

    #[test]
    fn round_robin_takes_one_slot_per_host_in_turn() {
        let mut s = three_hosts("4");
        submit(&mut s, pe_job(1, "make", "5", &[]));
        assert_eq!(
            grants(&s),
            vec![(
                1,
                Some("make".into()),
                g(&[("all.q@a", 2), ("all.q@b", 2), ("all.q@c", 1)])
            )]
        );
    }

    #[test]
    fn pe_slots_keeps_a_job_on_one_host_and_ranges_take_what_fits() {
        let mut s = three_hosts("4");
        submit(&mut s, pe_job(1, "smp", "6", &[]));
        assert!(grants(&s).is_empty());
        let reasons = s.explain(s.jobs.get(&1).unwrap(), &connected(&s), Time::from_secs(0));
        assert_eq!(
            reasons.last().unwrap(),
            "cannot run in PE \"smp\" because it only offers 4 slots"
        );
        Arc::make_mut(&mut s.jobs).clear();
        submit(&mut s, pe_job(2, "smp", "2-6", &[]));
        assert_eq!(
            grants(&s),
            vec![(2, Some("smp".into()), g(&[("all.q@a", 4)]))]
        );
    }

    #[test]
    fn an_integer_rule_gives_each_host_exactly_that_many() {
        let mut s = three_hosts("4,[c=1]");
        let mut pe =
            gantry_common::pe::parse_pe("pe_name two\nslots 100\nallocation_rule 2\n").unwrap();
        pe.slots = 100;
        s.apply(&crate::state::Op::Put(crate::state::Object::Pe(pe)));
        set_queue(&mut s, "all.q", "pe_list", "two");
        submit(&mut s, pe_job(1, "two", "4-6", &[]));
        // c has one slot: it is skipped, not given one.
        assert_eq!(
            grants(&s),
            vec![(1, Some("two".into()), g(&[("all.q@a", 2), ("all.q@b", 2)]))]
        );
    }

    #[test]
    fn e2_a_per_slot_consumable_splits_a_parallel_job_over_queues() {
        // q2: 5 slots, t02=40; q3: 1 slot; q4: 3 slots; j2 requests t02=20 with 4 slots.
        let mut s = cluster(&["t02 INT <= YES YES 0"]);
        for h in ["h2", "h3", "h4"] {
            add_host(&mut s, h, "", LOAD);
        }
        set_queue(&mut s, "all.q", "slots", "5,[h3=1],[h4=3]");
        set_queue(&mut s, "all.q", "complex_values", "t02=40");
        submit(&mut s, pe_job(2, "mpi", "4", &[("t02", "20")]));
        assert_eq!(
            grants(&s),
            vec![(
                2,
                Some("mpi".into()),
                g(&[("all.q@h2", 2), ("all.q@h3", 1), ("all.q@h4", 1)])
            )]
        );
        // Running, it holds exactly that: h2 has 3 slots and t02=0 left.
        let d = s
            .schedule(Time::from_secs(0), &connected(&s))
            .dispatches
            .remove(0);
        let mut job = Job::clone(&s.jobs[&2]);
        job.tasks.insert(1, crate::synthetic::running(&d));
        submit(&mut s, job);
        let snap = s.snapshot(&connected(&s), Time::from_secs(0));
        assert_eq!(left(&snap, "all.q@h2", "slots"), 3.0);
        assert_eq!(left(&snap, "all.q@h2", "t02"), 0.0);
        assert_eq!(left(&snap, "all.q@h3", "t02"), 20.0);
        assert_eq!(snap.pe_used.get("mpi"), Some(&4));
    }

    #[test]
    fn the_pe_slot_limit_and_per_job_consumables_hold() {
        let mut s = three_hosts("4");
        let mut pe = s.pes.get("mpi").unwrap().clone();
        pe.slots = 3;
        s.apply(&crate::state::Op::Put(crate::state::Object::Pe(pe)));
        submit(&mut s, pe_job(1, "mpi", "4", &[]));
        submit(&mut s, pe_job(2, "mpi", "2", &[("lic", "1")]));
        submit(&mut s, pe_job(3, "mp?", "1", &[("lic", "1")]));
        let mut g0 = exechost::parse_exechost("hostname x\ncomplex_values lic=1\n").unwrap();
        g0.hostname = "global".into();
        s.global_host = Arc::new(Some(g0));
        let placed = grants(&s);
        // Job 1 wants more than the PE has; job 2 takes the one license (once, not per
        // slot); job 3 would fit the PE but finds no license left.
        assert_eq!(placed, vec![(2, Some("mpi".into()), g(&[("all.q@a", 2)]))]);
        let reasons = s.explain(s.jobs.get(&1).unwrap(), &connected(&s), Time::from_secs(0));
        assert_eq!(
            reasons.last().unwrap(),
            "cannot run in PE \"mpi\" because it only offers 3 slots"
        );
    }

    #[test]
    fn a_queue_without_the_pe_is_dropped() {
        let mut s = three_hosts("4");
        set_queue(&mut s, "all.q", "pe_list", "smp");
        submit(&mut s, pe_job(1, "mpi", "2", &[]));
        assert!(grants(&s).is_empty());
        assert_eq!(
            why(&s, 1, "all.q@a"),
            "cannot run in queue instance \"all.q@a\" because PE \"mpi\" is not in pe_list"
        );
    }
}

#[test]
fn qstat_f_resources_are_printed_as_sge_prints_them() {
    // The reference host of ../shared/reference/sge/02_hosts_and_load.txt (qstat -f -F).
    let reported: &[(&str, &str)] = &[
        ("load_avg", "0.326172"),
        ("load_short", "0.498535"),
        ("load_medium", "0.326172"),
        ("load_long", "0.144531"),
        ("arch", "lx-amd64"),
        ("num_proc", "2"),
        ("mem_free", "23.357G"),
        ("swap_free", "0"),
        ("virtual_free", "23.357G"),
        ("mem_total", "23.541G"),
        ("swap_total", "0"),
        ("virtual_total", "23.541G"),
        ("mem_used", "187.832M"),
        ("swap_used", "0"),
        ("virtual_used", "187.832M"),
        ("cpu", "0.000000"),
        ("m_topology", "SCC"),
        ("m_topology_inuse", "SCC"),
        ("m_socket", "1"),
        ("m_core", "2"),
        ("m_thread", "2"),
        ("np_load_avg", "0.163086"),
        ("np_load_short", "0.249268"),
        ("np_load_medium", "0.163086"),
        ("np_load_long", "0.072265"),
    ];
    let mut s = cluster(&[]);
    add_host(&mut s, "vm", "", reported);
    set_queue(&mut s, "all.q", "slots", "1,[vm=2]");
    let snap = s.snapshot(&connected(&s), Time::from_secs(0));
    let lines: String = snap.resources()[&("all.q".to_string(), "vm".to_string())]
        .iter()
        .map(|(k, v)| format!("\t{k}={v}\n"))
        .collect();
    // SGE 8.1.9's `qstat -f -F` for that host, from the reference transcript.
    let reference = include_str!("../../tests/fixtures/qstat-f-F.txt");
    let start = reference.find("\thl:load_avg=").unwrap();
    assert_eq!(lines, &reference[start..]);
}

#[test]
fn load_adjustments_throttle_dispatch_as_sge_does() {
    // ../shared/reference/sge/07_load_adjustment.txt: a 2-core host, all.q with 8 slots,
    // SGE's defaults (job_load_adjustments np_load_avg=0.50, decay 0:7:30, threshold
    // np_load_avg=1.75): of 12 jobs submitted at once, 7 start.
    let mut s = cluster(&[]);
    add_host(
        &mut s,
        "vm",
        "",
        &[
            ("num_proc", "2"),
            ("np_load_avg", "0.155518"),
            ("load_avg", "0.311035"),
        ],
    );
    set_queue(&mut s, "all.q", "slots", "8");
    for id in 1..=12 {
        submit(&mut s, job(id, "user1", &[], &[]));
    }
    let now = 1_000;
    // The host reports as time goes on (it is unreachable once `max_unheard` passes).
    let heard = |s: &mut ClusterState, at: i64| {
        for r in Arc::make_mut(&mut s.runtime).values_mut() {
            Arc::make_mut(r).last_heard = Some(Time::from_secs(at));
        }
    };
    heard(&mut s, now);
    let placed = s.schedule(Time::from_secs(now), &connected(&s)).dispatches;
    assert_eq!(placed.len(), 7);
    // Started 5 and 4 seconds ago, the seven hold the host over its threshold.
    for (n, d) in placed.iter().enumerate() {
        start(&mut s, d.job_id, 1, &d.queue, &d.host);
        let mut j = Job::clone(&s.jobs[&d.job_id]);
        if let Some(TaskState::Running { start_time, .. }) = j.tasks.get_mut(1) {
            *start_time = now - if n < 3 { 5 } else { 4 };
        }
        submit(&mut s, j);
    }
    assert!(s
        .schedule(Time::from_secs(now), &connected(&s))
        .dispatches
        .is_empty());
    let reasons = s.explain(
        s.jobs.get(&12).unwrap(),
        &connected(&s),
        Time::from_secs(now),
    );
    assert_eq!(
        reasons,
        vec![
            "queue instance \"all.q@vm\" dropped because it is overloaded: np_load_avg=1.888296 (= 0.155518 + 0.50 * 6.931111 with nproc=2) >= 1.75".to_string(),
            "All queues dropped because of overload or full".to_string(),
        ]
    );
    // Once the decay time has passed, the adjustment is gone.
    heard(&mut s, now + 450);
    assert_eq!(
        s.schedule(Time::from_secs(now + 450), &connected(&s))
            .dispatches
            .len(),
        1
    );
    // Without adjustments, all eight slots fill at once.
    s.sched = Arc::new(Some(
        gantry_common::schedconf::parse_schedconf("job_load_adjustments NONE\n").unwrap(),
    ));
    assert_eq!(
        s.schedule(Time::from_secs(now), &connected(&s))
            .dispatches
            .len(),
        1
    );
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
        let mut j = Job::clone(&s.jobs[&id]);
        if let Some(TaskState::Running { start_time, .. }) = j.tasks.get_mut(1) {
            *start_time = started;
        }
        submit(&mut s, j);
    }
    let key = ("all.q".to_string(), "n1".to_string());
    let mut last = HashMap::new();
    // Over the threshold: the latest started job first, then one per interval.
    let a = s.threshold_actions(Time::from_secs(100), &last);
    assert_eq!(a.suspend, vec![(2, 1, "n1".to_string())]);
    assert_eq!(a.acted, vec![key.clone()]);
    Arc::make_mut(&mut s.threshold_suspended).insert((2, 1));
    last.insert(key.clone(), 100);
    assert_eq!(
        s.threshold_actions(Time::from_secs(130), &last),
        ThresholdActions::default()
    );
    assert_eq!(
        s.threshold_actions(Time::from_secs(160), &last).suspend,
        vec![(3, 1, "n1".to_string())]
    );
    // The instance is in suspend alarm: A, and nothing new starts there.
    assert_eq!(
        s.host_view("n1", crate::sched::Time::from_secs(0), &Default::default())
            .queues[0]
            .states,
        "A"
    );
    submit(&mut s, job(9, "u1", &[], &[]));
    assert!(cycle(&s).is_empty());
    let w = why(&s, 9, "all.q@n1");
    assert!(w.contains(
        "dropped because it is in suspend alarm: np_load_avg=2.000000 (no load adjustment) >= 1.5"
    ), "{w}");
    // Back under the threshold: the stopped jobs continue, one per interval.
    host_runtime(&mut s, "n1").load_values[0].value = "0.100000".into();
    let a = s.threshold_actions(Time::from_secs(160), &last);
    assert_eq!(a.resume, vec![(2, 1, "n1".to_string())]);
    assert!(a.suspend.is_empty());
    // No thresholds at all: the same.
    host_runtime(&mut s, "n1").load_values[0].value = "2.000000".into();
    set_queue(&mut s, "all.q", "suspend_thresholds", "NONE");
    assert_eq!(
        s.threshold_actions(Time::from_secs(160), &last).resume,
        vec![(2, 1, "n1".to_string())]
    );
}

#[test]
fn the_order_stage_serves_priority_first_then_submission() {
    use gantry_sched::order::{JobOrder, PriorityThenSubmission};
    // (job id, priority) as submitted -> the ids in the order served.
    type Case = (&'static [(u64, i32)], &'static [u64]);
    let table: &[Case] = &[
        (&[(1, 0), (2, 0), (3, 0)], &[1, 2, 3]),
        (&[(3, 0), (1, 0), (2, 0)], &[1, 2, 3]),
        (&[(1, 0), (2, 10), (3, -5)], &[2, 1, 3]),
        (&[(5, -1), (4, -1), (9, 1023)], &[9, 4, 5]),
    ];
    for (jobs, want) in table {
        let jobs: Vec<Job> = jobs
            .iter()
            .map(|&(id, p)| {
                let mut j = job(id, "user1", &[], &[]);
                j.spec.priority = p;
                j
            })
            .collect();
        let mut refs: Vec<&Job> = jobs.iter().collect();
        PriorityThenSubmission.sort(&mut refs);
        let got: Vec<u64> = refs.iter().map(|j| j.id).collect();
        assert_eq!(&got, want);
    }
}

#[test]
fn a_demand_runs_for_its_h_rt_else_its_s_rt_else_unknown() {
    // (hard requests, run time in seconds)
    type Case = (&'static [(&'static str, &'static str)], Option<i64>);
    let table: &[Case] = &[
        (&[], None),
        (&[("h_rt", "1:00:00")], Some(3600)),
        (&[("s_rt", "600")], Some(600)),
        (&[("s_rt", "600"), ("h_rt", "0:30:0")], Some(1800)),
        (&[("arch", "lx-amd64")], None),
    ];
    let s = cluster(&[]);
    let catalog = Catalog::new(&s.complexes);
    for (hard, want) in table {
        let d = demand(&catalog, &job(1, "u1", hard, &[])).unwrap();
        assert_eq!(d.run_time, want.map(Span::from_secs), "{hard:?}");
    }
}

/// A booking in the future (an advance reservation, later) keeps out exactly the jobs
/// whose run time would overlap it; with none, the calendar reads as "free now".
#[test]
fn a_future_booking_admits_jobs_that_end_before_it_and_no_others() {
    let mut s = cluster(&[]);
    add_host(&mut s, "n1", "", LOAD);
    set_queue(&mut s, "all.q", "slots", "4");
    submit(&mut s, job(1, "u1", &[("h_rt", "1800")], &[]));
    submit(&mut s, job(2, "u1", &[("h_rt", "7200")], &[]));
    submit(&mut s, job(3, "u1", &[], &[]));
    // The host reported at 0 and is reachable until max_unheard has passed.
    let now = Time::from_secs(100);
    let mut snap = s.snapshot(&connected(&s), now);
    let q = instance(&snap, "all.q@n1");
    let fits = |snap: &Snapshot, id: u64| {
        let d = demand_of(&s, snap, id, 1);
        snap.fits(&d, q, Pass::Consumables(1))
    };
    for id in 1..=3 {
        assert!(fits(&snap, id), "job {id} with nothing booked");
    }
    // All four slots from an hour from now, for an hour.
    let reserved = demand_of(&s, &snap, 3, 4);
    let from = now + Span::from_secs(3600);
    snap.hold(
        &reserved,
        &[(q, 4)],
        1.0,
        from,
        Some(from + Span::from_secs(3600)),
    );
    assert_eq!(
        left(&snap, "all.q@n1", "slots"),
        4.0,
        "free now is unchanged"
    );
    assert!(fits(&snap, 1), "half an hour ends before the booking");
    assert!(!fits(&snap, 2), "two hours overlap it");
    assert!(
        !fits(&snap, 3),
        "no run time: it would hold the slot for ever"
    );
    assert_eq!(
        snap.matches(&demand_of(&s, &snap, 2, 1), q, Pass::All(1)),
        Err(Misfit::Request {
            level: Level::Queue,
            name: "slots".into(),
            requested: "1".into(),
            offered: "qc:slots=0".into(),
        })
    );
}

/// A cycle runs only with pending work and only when something it reads changed.
#[test]
fn a_cycle_is_due_only_when_something_it_reads_changed() {
    let at = |ms: i64| Time::from_millis(ms);
    let t = |state_changed, loads_changed, last: Option<i64>| Trigger {
        state_changed,
        loads_changed,
        last_cycle: last.map(at),
    };
    let mut s = cluster(&[]);
    add_host(&mut s, "n1", "", LOAD);
    s.sched = Arc::new(Some(
        gantry_common::schedconf::parse_schedconf("job_load_adjustments NONE\n").unwrap(),
    ));
    // Nothing pending: never.
    assert!(!s.view().cycle_due(&t(true, true, None), at(0)));
    submit(&mut s, job(1, "u1", &[], &[]));
    // (trigger, now in ms, due?)
    let table = [
        (t(false, false, None), 0, true),
        (t(true, false, Some(10_000)), 10_100, true),
        (t(false, true, Some(10_000)), 10_500, false),
        (t(false, true, Some(10_000)), 11_000, true),
        (t(false, false, Some(10_000)), 60_000, false),
    ];
    for (trigger, now, due) in table {
        assert_eq!(
            s.view().cycle_due(&trigger, at(now)),
            due,
            "{trigger:?} at {now}"
        );
    }
    // A start time that has come since the last cycle; one still ahead.
    let mut later = job(2, "u1", &[], &[]);
    later.spec.start_after = Some(30);
    submit(&mut s, later);
    assert!(s
        .view()
        .cycle_due(&t(false, false, Some(20_000)), at(30_000)));
    assert!(!s
        .view()
        .cycle_due(&t(false, false, Some(30_000)), at(31_000)));
    assert!(!s
        .view()
        .cycle_due(&t(false, false, Some(10_000)), at(29_000)));
    // A task started within load_adjustment_decay_time: its adjustment decays.
    start(&mut s, 1, 1, "all.q", "n1");
    assert!(!s
        .view()
        .cycle_due(&t(false, false, Some(40_000)), at(50_000)));
    s.sched = Arc::new(None);
    assert!(s
        .view()
        .cycle_due(&t(false, false, Some(40_000)), at(50_000)));
    assert!(!s
        .view()
        .cycle_due(&t(false, false, Some(40_000)), at(40_500)));
    assert!(!s
        .view()
        .cycle_due(&t(false, false, Some(500_000)), at(501_000)));
}

#[test]
fn requests_that_do_not_resolve_are_typed_errors_in_sge_words() {
    let s = cluster(&[]);
    let catalog = Catalog::new(&s.complexes);
    let mut bad_range = job(3, "u1", &[], &[]);
    bad_range.spec.pe = Some(("mpi".into(), "4-2x".into()));
    let table = [
        (
            job(1, "u1", &[("nosuch", "1")], &[]),
            DemandError::UnknownResource("nosuch".into()),
            "job requests unknown resource \"nosuch\"",
        ),
        (
            job(2, "u1", &[("h_rt", "soon")], &[]),
            DemandError::InvalidValue {
                name: "h_rt".into(),
                value: "soon".into(),
            },
            "job requests an invalid value \"h_rt=soon\"",
        ),
        (
            bad_range,
            DemandError::InvalidSlotRange("4-2x".into()),
            "job requests an invalid slot range \"4-2x\"",
        ),
    ];
    for (j, want, text) in table {
        let err = demand(&catalog, &j).unwrap_err();
        assert_eq!(err, want);
        assert_eq!(err.to_string(), text);
        assert_eq!(s.could_ever_run(&j), Err(CannotRun::Demand(want)));
    }
}

/// A gate from outside the crate plugs into the admit stage: it is asked where jobs may
/// go, its refusal is the reason `-w v` and `qstat -j` give, and it is told of every
/// placement.
#[test]
fn a_new_gate_plugs_into_the_admit_stage() {
    use gantry_sched::admit::Gate;
    #[derive(Debug, Clone, Default)]
    struct NotOn {
        host: String,
        booked: u32,
    }
    impl Gate for NotOn {
        fn name(&self) -> &'static str {
            "not on one host"
        }
        fn admit(
            &mut self,
            snap: &Snapshot,
            _d: &Demand,
            inst: usize,
            _slots: u32,
            detail: bool,
        ) -> Result<(), Misfit> {
            if snap.hosts[snap.instances[inst].host].name != self.host {
                return Ok(());
            }
            Err(if detail {
                Misfit::Unusable(Unusable::Disabled)
            } else {
                Misfit::Unexplained
            })
        }
        fn book(&mut self, _: &Snapshot, _: &Demand, grants: &[(usize, u32)], sign: f64) {
            let n: u32 = grants.iter().map(|g| g.1).sum();
            if sign > 0.0 {
                self.booked += n;
            }
        }
        fn forget_bookings(&mut self) {
            self.booked = 0;
        }
        fn clone_box(&self) -> Box<dyn Gate> {
            Box::new(self.clone())
        }
    }
    let mut s = cluster(&[]);
    add_host(&mut s, "n1", "", LOAD);
    add_host(&mut s, "n2", "", LOAD);
    set_queue(&mut s, "all.q", "slots", "2");
    for id in 1..=6 {
        submit(&mut s, job(id, "u1", &[], &[]));
    }
    let mut snap = s.snapshot_at(&connected(&s), Time::from_secs(0), true);
    snap.add_gate(Box::new(NotOn {
        host: "n1".into(),
        booked: 0,
    }));
    let d = demand_of(&s, &snap, 1, 1);
    let n1 = instance(&snap, "all.q@n1");
    assert_eq!(
        snap.matches(&d, n1, Pass::All(1)),
        Err(Misfit::Unusable(Unusable::Disabled))
    );
    let placed = s.dispatch(&mut snap, Time::from_secs(0));
    let hosts: Vec<&str> = placed.iter().map(|p| p.host.as_str()).collect();
    assert_eq!(hosts, ["n2", "n2"], "only n2, and only its two slots");
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
    let mut ids: Vec<u64> = dispatches.iter().map(|d| d.job_id).collect();
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
            .map(|d| (d.job_id, format!("{}@{}", d.queue, d.host)))
            .collect::<Vec<_>>()
    );
    // The state changes after the image was taken: the image does not.
    Arc::make_mut(&mut s.jobs).remove(&1);
    submit(&mut s, job(9, "u1", &[], &[]));
    set_queue(&mut s, "all.q", "slots", "1");
    assert!(image.jobs.contains_key(&1) && !image.jobs.contains_key(&9));
    assert_eq!(
        image
            .view()
            .schedule(Time::from_secs(0), &connected(&s))
            .dispatches,
        decisions
    );
    assert!(!s.jobs.contains_key(&1) && s.jobs.contains_key(&9));
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
    s.apply(&Op::Delete(crate::state::job_key(1)));
    let mut held = Job::clone(&s.jobs[&2]);
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
            s.apply(&Op::Put(Object::Config(
                gantry_common::schedconf::parse_schedconf("job_load_adjustments NONE\n").unwrap(),
            )))
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
    s.apply(&Op::NextJobId(100));
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
