//! The scheduler's tests on synthetic clusters: the complex specification's examples
//! (E1, E2, sections 3 and 5), matching layer by layer, soft requests, forced
//! attributes, queue sorting, access lists, categories, parallel environments, load
//! adjustments, `qstat -F`'s resources, the stages (order, admit with a gate from
//! outside, the calendar's future bookings) and when a cycle is due.
#![allow(clippy::unwrap_used)]

use gantry_proto::{JobId, TaskId};
use std::sync::Arc;

use gantry_common::job::{Job, TaskState};
use gantry_common::value::Value;

use crate::cycle::*;
use crate::decisions::{Misfit, ProjectMisfit};
use crate::gate::Gates;
use crate::matching::*;
use crate::model::*;
use crate::synthetic::{job, Cluster};
use crate::time::{Span, Time};

const LOAD: &[(&str, &str)] = &[
    ("arch", "lx-amd64"),
    ("num_proc", "2"),
    ("np_load_avg", "0.10"),
    ("mem_free", "4G"),
];

fn cycle(s: &Cluster) -> Vec<(u64, String)> {
    s.view()
        .schedule(Time::from_secs(0), &s.connected())
        .dispatches
        .into_iter()
        .map(|d| (d.job_id.get(), format!("{}@{}", d.queue, d.host)))
        .collect()
}

/// The first reason `qstat -j` gives for a job on a queue instance.
fn why(s: &Cluster, id: u64, qi: &str) -> String {
    let j = s.jobs.get(&JobId(id)).unwrap();
    s.view()
        .explain(j, &s.connected(), Time::from_secs(0))
        .into_iter()
        .find(|r| {
            r.contains(&format!("\"{qi}\""))
                || r.contains(qi.split('@').nth(1).unwrap())
                // The cluster queue's own check names the queue alone.
                || r.contains(&format!("\"{}\" because of cluster queue", qi.split('@').next().unwrap()))
        })
        .unwrap_or_default()
}

fn demand_of(s: &Cluster, snap: &Snapshot, id: u64, slots: u32) -> Demand {
    let mut d = demand(&snap.catalog, s.jobs.get(&JobId(id)).unwrap()).unwrap();
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
    let mut s = Cluster::new(&["t01 INT <= YES NO 0"]);
    s.add_host("n1", "", LOAD);
    s.set_queue("all.q", "slots", "5");
    s.set_queue("all.q", "complex_values", "t01=20");
    s.put_job(job(1, "u1", &[("t01", "10")], &[]));
    let mut snap = s.view().snapshot(&s.connected(), Time::from_secs(0));
    let d = demand_of(&s, &snap, 1, 4);
    let q1 = instance(&snap, "all.q@n1");
    assert_eq!(
        snap.matches(&mut Gates::default(), &d, q1, Check::All(4)),
        Ok(())
    );
    snap.debit(&mut Gates::default(), &d, &[(q1, 4)], 1.0);
    // Afterwards: slots = 1 and t01 <= 20.
    assert_eq!(left(&snap, "all.q@n1", "slots"), 1.0);
    let t01 = snap.catalog.id("t01").unwrap();
    let o = snap.instances[q1].layer.get(t01).unwrap();
    assert_eq!(o.fixed, Some(Value::Num(20.0)));
    assert_eq!(snap.used(o, None), 0.0);
    // A request above the fixed value never fits, whatever is free.
    s.put_job(job(2, "u1", &[("t01", "30")], &[]));
    assert_eq!(
        why(&s, 2, "all.q@n1"),
        // SGE decides it for the cluster queue (tests/sge/recorded/54_reason_bool.txt).
        "(-l t01=30) cannot run in queue \"all.q\" because of cluster queue"
    );
}

#[test]
fn e2_a_consumable_is_debited_per_slot_on_every_queue_it_is_granted_on() {
    // j2 requests t02=20 with 4 slots: 2 on q2 (5 slots, t02=40), 1 on q3 (1 slot), 1 on q4 (3 slots).
    let mut s = Cluster::new(&["t02 INT <= YES YES 0"]);
    for h in ["h2", "h3", "h4"] {
        s.add_host(h, "", LOAD);
    }
    s.set_queue("all.q", "slots", "5,[h3=1],[h4=3]");
    s.set_queue("all.q", "complex_values", "t02=40");
    s.put_job(job(2, "u1", &[("t02", "20")], &[]));
    let mut snap = s.view().snapshot(&s.connected(), Time::from_secs(0));
    let d = demand_of(&s, &snap, 2, 4);
    let (q2, q3, q4) = (
        instance(&snap, "all.q@h2"),
        instance(&snap, "all.q@h3"),
        instance(&snap, "all.q@h4"),
    );
    // q2 can hold two of the four instances, not three (3 * 20 > 40).
    assert_eq!(
        snap.matches(&mut Gates::default(), &d, q2, Check::Consumables(2)),
        Ok(())
    );
    assert!(snap
        .matches(&mut Gates::default(), &d, q2, Check::Consumables(3))
        .is_err());
    snap.debit(&mut Gates::default(), &d, &[(q2, 2), (q3, 1), (q4, 1)], 1.0);
    assert_eq!(left(&snap, "all.q@h2", "slots"), 3.0);
    assert_eq!(left(&snap, "all.q@h2", "t02"), 0.0);
    assert_eq!(left(&snap, "all.q@h3", "slots"), 0.0);
    assert_eq!(left(&snap, "all.q@h3", "t02"), 20.0);
    assert_eq!(left(&snap, "all.q@h4", "slots"), 2.0);
    assert_eq!(left(&snap, "all.q@h4", "t02"), 20.0);
    // Crediting gives everything back.
    snap.debit(
        &mut Gates::default(),
        &d,
        &[(q2, 2), (q3, 1), (q4, 1)],
        -1.0,
    );
    assert_eq!(left(&snap, "all.q@h2", "t02"), 40.0);
    assert_eq!(left(&snap, "all.q@h3", "slots"), 1.0);
}

#[test]
fn a_per_job_consumable_is_debited_once_on_the_master_queue() {
    let mut s = Cluster::new(&["lic INT <= YES JOB 0"]);
    s.add_host("h1", "lic=3", LOAD);
    s.add_host("h2", "lic=3", LOAD);
    s.set_queue("all.q", "slots", "4");
    s.global_host = Some(
        exechost::parse_exechost("hostname global\ncomplex_values lic=5\n").unwrap_or_else(|_| {
            let mut h = exechost::parse_exechost("hostname h0\ncomplex_values lic=5\n").unwrap();
            h.hostname = "global".into();
            h
        }),
    );
    s.put_job(job(1, "u1", &[("lic", "2")], &[]));
    let mut snap = s.view().snapshot(&s.connected(), Time::from_secs(0));
    let d = demand_of(&s, &snap, 1, 4);
    let (a, b) = (instance(&snap, "all.q@h1"), instance(&snap, "all.q@h2"));
    snap.debit(&mut Gates::default(), &d, &[(a, 3), (b, 1)], 1.0);
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
    let mut s = Cluster::new(&[]);
    s.add_host("n1", "arch=special", LOAD);
    s.add_host("n2", "", LOAD);
    s.put_job(job(1, "u1", &[("arch", "special")], &[]));
    s.put_job(job(2, "u1", &[("arch", "lx-amd64")], &[]));
    assert_eq!(
        cycle(&s),
        vec![(1, "all.q@n1".to_string()), (2, "all.q@n2".to_string())]
    );
    // ... but not in a queue: the host layer decides first.
    s.set_queue("all.q", "complex_values", "arch=other");
    s.put_job(job(3, "u1", &[("arch", "other")], &[]));
    assert_eq!(
        why(&s, 3, "all.q@n2"),
        "(-l arch=other) cannot run at host \"n2\" because it offers only hl:arch=lx-amd64"
    );
    assert!(cycle(&s).iter().all(|(id, _)| *id != 3));
}

#[test]
fn section_3_the_more_restrictive_of_configured_and_reported_counts() {
    // mem_free: custom 1G / load 4G -> 1G; custom 1G / load 0.9G -> 0.9G.
    let mut s = Cluster::new(&[]);
    s.add_host("a", "mem_free=1G", LOAD);
    s.add_host(
        "b",
        "mem_free=1G",
        &[("mem_free", "0.9G"), ("np_load_avg", "0.1")],
    );
    s.put_job(job(1, "u1", &[("mem_free", "2G")], &[]));
    assert_eq!(
        why(&s, 1, "all.q@a"),
        "(-l mem_free=2G) cannot run at host \"a\" because it offers only hf:mem_free=1.000G"
    );
    s.put_job(job(2, "u1", &[("mem_free", "950M")], &[]));
    assert_eq!(
        why(&s, 2, "all.q@b"),
        "(-l mem_free=950M) cannot run at host \"b\" because it offers only hl:mem_free=921.600M"
    );
    // A queue may only restrict further.
    s.set_queue("all.q", "complex_values", "mem_free=512M");
    s.put_job(job(3, "u1", &[("mem_free", "600M")], &[]));
    assert_eq!(
        why(&s, 3, "all.q@a"),
        "(-l mem_free=600M) cannot run in queue \"all.q\" because of cluster queue"
    );
    s.put_job(job(4, "u1", &[("mem_free", "500M")], &[]));
    let placed = cycle(&s);
    assert!(placed.iter().any(|(id, _)| *id == 4));
    assert!(placed.iter().all(|(id, _)| *id == 4));
}

#[test]
fn matching_stops_at_the_first_failing_layer() {
    let mut s = Cluster::new(&["lic INT <= YES YES 0"]);
    s.add_host("n1", "lic=4", LOAD);
    let mut g = exechost::parse_exechost("hostname x\ncomplex_values lic=0\n").unwrap();
    g.hostname = "global".into();
    s.global_host = Some(g);
    s.put_job(job(1, "u1", &[("lic", "1")], &[]));
    let reasons = s.view().explain(
        s.jobs.get(&JobId(1)).unwrap(),
        &s.connected(),
        Time::from_secs(0),
    );
    assert_eq!(
        reasons,
        vec!["(-l lic=1) cannot run globally because it offers only gc:lic=0.000000".to_string()]
    );
    assert!(cycle(&s).is_empty());
}

/// Every string type's request is an expression, as SGE 8.1.9 matches it (the
/// specification's section 5 matched STRING exactly: `-l arch=lx-*` did not run).
#[test]
fn string_types_match_as_sge_8_1_9_does() {
    let mut s = Cluster::new(&["os RESTRING == YES NO NONE", "site CSTRING == YES NO NONE"]);
    s.add_host("n1", "os=linux,site=Berlin", LOAD);
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
        ("arch", "lx-*", true),
        ("arch", "LX-*", false),
        ("arch", "lx-*&!*arm*", true),
        ("arch", "!lx-*", false),
        ("hostname", "N1", true),
        ("hostname", "n*", true),
        ("hostname", "m*", false),
    ];
    for (n, (name, value, fits)) in cases.iter().enumerate() {
        let mut s = s.clone();
        s.put_job(job(n as u64 + 1, "u1", &[(name, value)], &[]));
        assert_eq!(!cycle(&s).is_empty(), *fits, "-l {name}={value}");
    }
    s.jobs.clear();
}

#[test]
fn a_resource_only_one_host_has_keeps_jobs_there_and_never_goes_negative() {
    let mut s = Cluster::new(&["gpu INT <= YES YES 0", "bigmem BOOL == YES NO 0"]);
    s.add_host("gpu1", "gpu=2", LOAD);
    s.add_host("big1", "bigmem=true", LOAD);
    s.set_queue("all.q", "slots", "8");
    for id in 1..=5 {
        s.put_job(job(id, "u1", &[("gpu", "1")], &[]));
    }
    s.put_job(job(6, "u1", &[("bigmem", "true")], &[]));
    s.put_job(job(7, "u1", &[("bigmem", "false")], &[]));
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
        "(-l bigmem=false) cannot run in queue \"all.q@gpu1\" because job requests unknown resource (bigmem)"
    );
    for (id, qi) in &placed {
        let (q, h) = qi.split_once('@').unwrap();
        s.start(*id, 1, q, h);
    }
    // The two GPUs are in use: nothing more starts until one is given back.
    assert!(cycle(&s).iter().all(|(id, _)| *id > 5));
    assert_eq!(
        why(&s, 3, "all.q@gpu1"),
        "(-l gpu=1) cannot run at host \"gpu1\" because it offers only hc:gpu=0.000000"
    );
    s.jobs.remove(&JobId(1));
    assert_eq!(cycle(&s)[0], (3, "all.q@gpu1".to_string()));
}

#[test]
fn a_consumable_default_is_debited_from_jobs_that_do_not_ask() {
    let mut s = Cluster::new(&["mem_req MEMORY <= YES YES 1G"]);
    s.add_host("n1", "mem_req=2G", LOAD);
    s.add_host("n2", "", LOAD);
    s.set_queue("all.q", "slots", "4,[n2=1]");
    for id in 1..=6 {
        s.put_job(job(id, "u1", &[], &[]));
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
    let mut s = Cluster::new(&["bigmem BOOL == YES NO 0"]);
    s.add_host("a", "", LOAD);
    s.add_host("b", "bigmem=true", LOAD);
    s.put_job(job(1, "u1", &[], &[("bigmem", "true")]));
    s.put_job(job(2, "u1", &[], &[("arch", "nosuch")]));
    assert_eq!(
        cycle(&s),
        vec![(1, "all.q@b".to_string()), (2, "all.q@a".to_string())]
    );
}

#[test]
fn a_forced_attribute_takes_only_jobs_that_request_it() {
    let mut s = Cluster::new(&["special BOOL == FORCED NO 0"]);
    s.add_host("a", "special=true", LOAD);
    s.add_host("b", "", LOAD);
    s.put_job(job(1, "u1", &[], &[]));
    s.put_job(job(2, "u1", &[("special", "true")], &[]));
    assert_eq!(
        cycle(&s),
        vec![(1, "all.q@b".to_string()), (2, "all.q@a".to_string())]
    );
}

#[test]
fn queue_sort_method_orders_candidates() {
    let mut s = Cluster::new(&[]);
    s.add_host("a", "", &[("np_load_avg", "0.9")]);
    s.add_host("b", "", &[("np_load_avg", "0.1")]);
    let mut q = gantry_common::queue::new_queue("low.q", "a");
    q.attr_mut("seq_no").unwrap().default = "1".into();
    s.put_queue(q);
    s.set_queue("all.q", "seq_no", "5");
    s.put_job(job(1, "u1", &[], &[]));
    // load: the least loaded host first.
    assert_eq!(cycle(&s), vec![(1, "all.q@b".to_string())]);
    s.sched = Some(sched_with("queue_sort_method", "seqno"));
    assert_eq!(cycle(&s), vec![(1, "low.q@a".to_string())]);
}

#[test]
fn access_lists_and_queue_lists() {
    let mut s = Cluster::new(&[]);
    s.add_host("a", "", LOAD);
    s.usersets.insert(
        "staff".into(),
        gantry_proto::UserSet {
            name: "staff".into(),
            types: vec!["ACL".into()],
            fshare: 0,
            oticket: 0,
            entries: vec!["u1".into()],
        },
    );
    s.set_queue("all.q", "user_lists", "staff");
    s.put_job(job(1, "u1", &[], &[]));
    s.put_job(job(2, "u2", &[], &[]));
    assert_eq!(cycle(&s), vec![(1, "all.q@a".to_string())]);
    assert_eq!(
        why(&s, 2, "all.q@a"),
        // SCHEDD_INFO_HASNOPERMISSION_SS (msg_schedd.h 47043)
        "has no permission for queue \"all.q@a\""
    );
    // `@group` entries admit the members of a Unix group.
    s.usersets
        .get_mut("staff")
        .unwrap()
        .entries
        .push("@physics".into());
    s.jobs.clear();
    let mut j = job(4, "u4", &[], &[]);
    j.owner.groups = vec!["u4".into(), "physics".into()];
    s.put_job(j);
    assert!(cycle(&s).iter().any(|(id, _)| *id == 4));
    let mut j = job(3, "u1", &[], &[]);
    j.spec.queues = vec!["other.q".into()];
    s.put_job(j);
    assert!(cycle(&s).iter().all(|(id, _)| *id != 3));
}

#[test]
fn one_category_is_matched_once_and_fills_what_is_free() {
    let mut s = Cluster::new(&[]);
    for h in 0..10 {
        s.add_host(&format!("n{h}"), "", LOAD);
    }
    s.set_queue("all.q", "slots", "4");
    for id in 1..=1000 {
        s.put_job(job(id, "u1", &[("arch", "lx-amd64")], &[]));
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
            let mut s = Cluster::new(&["gpu INT <= YES YES 0"]);
            for (n, c) in caps.iter().enumerate() {
                s.add_host(&format!("h{n}"), &format!("gpu={c}"), LOAD);
            }
            s.set_queue("all.q", "slots", &slots.to_string());
            for (n, r) in requests.iter().enumerate() {
                s.put_job(job(n as u64 + 1, "u1", &[("gpu", &r.to_string())], &[]));
            }
            let placed = s.view().schedule(Time::from_secs(0), &s.connected()).dispatches;
            for (n, c) in caps.iter().enumerate() {
                let host = format!("h{n}");
                let here: Vec<_> = placed.iter().filter(|d| d.host == host).collect();
                let gpus: u32 = here.iter().map(|d| requests[d.job_id.get() as usize - 1]).sum();
                prop_assert!(gpus <= *c, "{host}: {gpus} > {c}");
                prop_assert!(here.len() as u32 <= slots);
            }
        }
    }
}

mod parallel {
    use super::*;

    fn pe_job(id: u64, pe: &str, range: &str, hard: &[(&str, &str)]) -> Job {
        let mut j = job(id, "u1", hard, &[]);
        j.spec.pe = Some((pe.into(), range.into()));
        j
    }

    /// (job, PE, [(queue instance, slots)])
    type Placed = (u64, Option<String>, Vec<(String, u32)>);

    fn grants(s: &Cluster) -> Vec<Placed> {
        s.view()
            .schedule(Time::from_secs(0), &s.connected())
            .dispatches
            .into_iter()
            .map(|d| {
                (
                    d.job_id.get(),
                    d.pe,
                    d.grants
                        .into_iter()
                        .map(|g| (format!("{}@{}", g.queue, g.host), g.slots))
                        .collect(),
                )
            })
            .collect()
    }

    fn three_hosts(slots: &str) -> Cluster {
        let mut s = Cluster::new(&["t02 INT <= YES YES 0", "lic INT <= YES JOB 0"]);
        for h in ["a", "b", "c"] {
            s.add_host(h, "", LOAD);
        }
        s.set_queue("all.q", "slots", slots);
        s
    }

    fn g(list: &[(&str, u32)]) -> Vec<(String, u32)> {
        list.iter().map(|(q, n)| (q.to_string(), *n)).collect()
    }

    /// EXCL: a parallel job asking for exclusive use takes each of its hosts whole (its
    /// share booked once per host, not per slot), and none that runs another job.
    #[test]
    fn an_exclusive_parallel_job_takes_each_host_whole() {
        let mut s = Cluster::new(&["exclusive BOOL EXCL YES YES 0"]);
        for h in ["a", "b", "c"] {
            s.add_host(h, "exclusive=true", LOAD);
        }
        s.set_queue("all.q", "slots", "4");
        s.put_job(job(1, "u1", &[], &[]));
        s.put_job(pe_job(2, "mpi", "6", &[("exclusive", "true")]));
        s.put_job(job(3, "u1", &[], &[]));
        // SGE's order: the parallel job first (its urgency counts its 6 slots); the
        // others then keep off both its hosts, the one it uses 2 slots of too.
        assert_eq!(
            grants(&s),
            vec![
                (2, Some("mpi".into()), g(&[("all.q@a", 4), ("all.q@b", 2)])),
                (1, None, g(&[("all.q@c", 1)])),
                (3, None, g(&[("all.q@c", 1)])),
            ]
        );
        // Without urgency, in submission order: it takes no host another job runs on.
        s.sched = Some(sched_with("weight_urgency", "0.000000"));
        assert_eq!(
            grants(&s),
            vec![
                (1, None, g(&[("all.q@a", 1)])),
                (2, Some("mpi".into()), g(&[("all.q@b", 4), ("all.q@c", 2)])),
                (3, None, g(&[("all.q@a", 1)])),
            ]
        );
    }

    /// `-masterq`: the master task (the first grant) goes where `-masterq` says; with
    /// a `-q` list that does not name that instance, it holds the master task only and
    /// the other slots go where `-q` says.
    #[test]
    fn the_master_task_goes_where_masterq_says() {
        let mut s = three_hosts("4");
        let mut j = pe_job(1, "mpi", "6", &[]);
        j.spec.masterq = vec!["all.q@c".into()];
        s.put_job(j);
        assert_eq!(
            grants(&s),
            vec![(1, Some("mpi".into()), g(&[("all.q@c", 4), ("all.q@a", 2)]))]
        );
        let mut s = three_hosts("4");
        let mut j = pe_job(2, "mpi", "5", &[]);
        j.spec.queues = vec!["all.q@a".into(), "all.q@b".into()];
        j.spec.masterq = vec!["all.q@c".into()];
        s.put_job(j);
        assert_eq!(
            grants(&s),
            vec![(2, Some("mpi".into()), g(&[("all.q@c", 1), ("all.q@a", 4)]))]
        );
        // No room for the master where -masterq says: the job waits.
        let mut s = three_hosts("4,[c=0]");
        let mut j = pe_job(3, "mpi", "2", &[]);
        j.spec.masterq = vec!["all.q@c".into()];
        s.put_job(j);
        assert_eq!(grants(&s), vec![]);
    }

    #[test]
    fn fill_up_fills_each_host_before_the_next() {
        let mut s = three_hosts("4");
        s.put_job(pe_job(1, "mpi", "6", &[]));
        assert_eq!(
            grants(&s),
            vec![(1, Some("mpi".into()), g(&[("all.q@a", 4), ("all.q@b", 2)]))]
        );
    }

    #[test]
    fn round_robin_takes_one_slot_per_host_in_turn() {
        let mut s = three_hosts("4");
        s.put_job(pe_job(1, "make", "5", &[]));
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
        s.put_job(pe_job(1, "smp", "6", &[]));
        assert!(grants(&s).is_empty());
        let reasons = s.view().explain(
            s.jobs.get(&JobId(1)).unwrap(),
            &s.connected(),
            Time::from_secs(0),
        );
        // No host takes all six, so $pe_slots offers SGE's 0 (as SGE 8.1.9 says it:
        // tests/sge/recorded/85_resource_reservation.txt, 26_qsub_verify.txt).
        assert_eq!(
            reasons.last().unwrap(),
            "cannot run in PE \"smp\" because it only offers 0 slots"
        );
        s.jobs.clear();
        s.put_job(pe_job(2, "smp", "2-6", &[]));
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
        s.put_pe(pe);
        s.set_queue("all.q", "pe_list", "two");
        s.put_job(pe_job(1, "two", "4-6", &[]));
        // c has one slot: it is skipped, not given one.
        assert_eq!(
            grants(&s),
            vec![(1, Some("two".into()), g(&[("all.q@a", 2), ("all.q@b", 2)]))]
        );
    }

    #[test]
    fn e2_a_per_slot_consumable_splits_a_parallel_job_over_queues() {
        // q2: 5 slots, t02=40; q3: 1 slot; q4: 3 slots; j2 requests t02=20 with 4 slots.
        let mut s = Cluster::new(&["t02 INT <= YES YES 0"]);
        for h in ["h2", "h3", "h4"] {
            s.add_host(h, "", LOAD);
        }
        s.set_queue("all.q", "slots", "5,[h3=1],[h4=3]");
        s.set_queue("all.q", "complex_values", "t02=40");
        s.put_job(pe_job(2, "mpi", "4", &[("t02", "20")]));
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
            .view()
            .schedule(Time::from_secs(0), &s.connected())
            .dispatches
            .remove(0);
        let mut job = Job::clone(&s.jobs[&JobId(2)]);
        job.tasks.insert(TaskId(1), crate::synthetic::running(&d));
        s.put_job(job);
        let snap = s.view().snapshot(&s.connected(), Time::from_secs(0));
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
        s.put_pe(pe);
        s.put_job(pe_job(1, "mpi", "4", &[]));
        s.put_job(pe_job(2, "mpi", "2", &[("lic", "1")]));
        s.put_job(pe_job(3, "mp?", "1", &[("lic", "1")]));
        let mut g0 = exechost::parse_exechost("hostname x\ncomplex_values lic=1\n").unwrap();
        g0.hostname = "global".into();
        s.global_host = Some(g0);
        let placed = grants(&s);
        // Job 1 wants more than the PE has; job 2 takes the one license (once, not per
        // slot); job 3 would fit the PE but finds no license left.
        assert_eq!(placed, vec![(2, Some("mpi".into()), g(&[("all.q@a", 2)]))]);
        let reasons = s.view().explain(
            s.jobs.get(&JobId(1)).unwrap(),
            &s.connected(),
            Time::from_secs(0),
        );
        assert_eq!(
            reasons.last().unwrap(),
            "cannot run in PE \"mpi\" because it only offers 3 slots"
        );
    }

    #[test]
    fn a_queue_without_the_pe_is_dropped() {
        let mut s = three_hosts("4");
        s.set_queue("all.q", "pe_list", "smp");
        s.put_job(pe_job(1, "mpi", "2", &[]));
        assert!(grants(&s).is_empty());
        assert_eq!(
            why(&s, 1, "all.q@a"),
            "cannot run in queue \"all.q@a\" because PE \"mpi\" is not in pe list"
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
    let mut s = Cluster::new(&[]);
    s.add_host("vm", "", reported);
    s.set_queue("all.q", "slots", "1,[vm=2]");
    let snap = s.view().snapshot(&s.connected(), Time::from_secs(0));
    let lines: String = snap.resources()[&("all.q".to_string(), "vm".to_string())]
        .iter()
        .map(|(k, v)| format!("\t{k}={v}\n"))
        .collect();
    // SGE 8.1.9's `qstat -f -F` for that host, from the reference transcript.
    let reference = include_str!("../../master/tests/fixtures/qstat-f-F.txt");
    let start = reference.find("\thl:load_avg=").unwrap();
    assert_eq!(lines, &reference[start..]);
}

#[test]
fn load_adjustments_throttle_dispatch_as_sge_does() {
    // ../shared/reference/sge/07_load_adjustment.txt: a 2-core host, all.q with 8 slots,
    // SGE's defaults (job_load_adjustments np_load_avg=0.50, decay 0:7:30, threshold
    // np_load_avg=1.75): of 12 jobs submitted at once, 7 start.
    let mut s = Cluster::new(&[]);
    s.add_host(
        "vm",
        "",
        &[
            ("num_proc", "2"),
            ("np_load_avg", "0.155518"),
            ("load_avg", "0.311035"),
        ],
    );
    s.set_queue("all.q", "slots", "8");
    for id in 1..=12 {
        s.put_job(job(id, "user1", &[], &[]));
    }
    let now = 1_000;
    // The host reports as time goes on (it is unreachable once `max_unheard` passes).
    let heard = |s: &mut Cluster, at: i64| {
        for r in s.runtime.values_mut() {
            Arc::make_mut(r).last_heard = Some(Time::from_secs(at));
        }
    };
    heard(&mut s, now);
    let placed = s
        .view()
        .schedule(Time::from_secs(now), &s.connected())
        .dispatches;
    assert_eq!(placed.len(), 7);
    // Started 5 and 4 seconds ago, the seven hold the host over its threshold.
    for (n, d) in placed.iter().enumerate() {
        s.start(d.job_id.get(), 1, &d.queue, &d.host);
        let mut j = Job::clone(&s.jobs[&d.job_id]);
        if let Some(TaskState::Running { start_time, .. }) = j.tasks.get_mut(TaskId(1)) {
            *start_time = now - if n < 3 { 5 } else { 4 };
        }
        s.put_job(j);
    }
    assert!(s
        .view()
        .schedule(Time::from_secs(now), &s.connected())
        .dispatches
        .is_empty());
    let reasons = s.view().explain(
        s.jobs.get(&JobId(12)).unwrap(),
        &s.connected(),
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
        s.view()
            .schedule(Time::from_secs(now + 450), &s.connected())
            .dispatches
            .len(),
        1
    );
    // Without adjustments, all eight slots fill at once.
    s.sched = Some(sched_with("job_load_adjustments", "NONE"));
    assert_eq!(
        s.view()
            .schedule(Time::from_secs(now), &s.connected())
            .dispatches
            .len(),
        1
    );
}

#[test]
fn the_order_stage_serves_priority_first_then_submission() {
    use crate::order::{JobOrder, PriorityOrder};
    // (job id, -p) as submitted -> the ids in the order served: with SGE's default
    // weights (`weight_priority 0`) -p counts for nothing, with `weight_priority 1` it
    // comes first; without priorities worked out, -p stands for them.
    type Case = (&'static [(u64, i32)], &'static [u64], &'static [u64]);
    let table: &[Case] = &[
        (&[(1, 0), (2, 0), (3, 0)], &[1, 2, 3], &[1, 2, 3]),
        (&[(3, 0), (1, 0), (2, 0)], &[1, 2, 3], &[1, 2, 3]),
        (&[(1, 0), (2, 10), (3, -5)], &[1, 2, 3], &[2, 1, 3]),
        (&[(5, -1), (4, -1), (9, 1023)], &[4, 5, 9], &[9, 4, 5]),
    ];
    for (jobs, by_default, by_p) in table {
        let mut s = Cluster::new(&[]);
        for &(id, p) in *jobs {
            let mut j = job(id, "user1", &[], &[]);
            j.spec.priority = p;
            s.put_job(j);
        }
        let now = Time::from_secs(1_000_000);
        for (conf, want) in [
            (sched_with("weight_priority", "0.000000"), by_default),
            (sched_with("weight_priority", "1.000000"), by_p),
        ] {
            s.sched = Some(conf);
            let view = s.view();
            let p = view.priorities(now, 0);
            let mut refs: Vec<&Job> = view.jobs.values().map(|j| &**j).collect();
            PriorityOrder::new(Some(&p)).sort(&mut refs);
            let got: Vec<u64> = refs.iter().map(|j| j.id.get()).collect();
            assert_eq!(&got, want);
            let mut refs: Vec<&Job> = view.jobs.values().map(|j| &**j).collect();
            PriorityOrder::new(None).sort(&mut refs);
            let got: Vec<u64> = refs.iter().map(|j| j.id.get()).collect();
            assert_eq!(&got, by_p);
        }
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
    let s = Cluster::new(&[]);
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
    let mut s = Cluster::new(&[]);
    s.add_host("n1", "", LOAD);
    s.set_queue("all.q", "slots", "4");
    s.put_job(job(1, "u1", &[("h_rt", "1800")], &[]));
    s.put_job(job(2, "u1", &[("h_rt", "7200")], &[]));
    s.put_job(job(3, "u1", &[], &[]));
    // The host reported at 0 and is reachable until max_unheard has passed.
    let now = Time::from_secs(100);
    let mut snap = s.view().snapshot(&s.connected(), now);
    let q = instance(&snap, "all.q@n1");
    let fits = |snap: &Snapshot, id: u64| {
        let d = demand_of(&s, snap, id, 1);
        snap.fits(&mut Gates::default(), &d, q, Check::Consumables(1))
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
        snap.matches(
            &mut Gates::default(),
            &demand_of(&s, &snap, 2, 1),
            q,
            Check::All(1)
        ),
        Err(Misfit::Request {
            level: Level::Queue,
            name: "slots".into(),
            // SGE lists the job's hard requests, whichever failed.
            requested: "h_rt=7200".into(),
            // SGE prints what is left of an INT consumable as a double.
            offered: "qc:slots=0.000000".into(),
            for_default: false,
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
    let mut s = Cluster::new(&[]);
    s.add_host("n1", "", LOAD);
    s.sched = Some(sched_with("job_load_adjustments", "NONE"));
    // Nothing pending: never.
    assert!(!s.view().cycle_due(&t(true, true, None), at(0)));
    s.put_job(job(1, "u1", &[], &[]));
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
    s.put_job(later);
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
    s.start(1, 1, "all.q", "n1");
    assert!(!s
        .view()
        .cycle_due(&t(false, false, Some(40_000)), at(50_000)));
    s.sched = None;
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

/// With nothing pending, a change is worked out by a cycle when running jobs hold
/// tickets it can move (their priorities and tickets are what `qstat -ext` shows), and
/// only then.
#[test]
fn a_change_to_running_jobs_tickets_is_due_with_nothing_pending() {
    let changed = Trigger {
        state_changed: true,
        loads_changed: false,
        last_cycle: Some(Time::from_millis(10_000)),
    };
    let mut s = Cluster::new(&[]);
    s.add_host("n1", "", LOAD);
    s.put_job(job(1, "u1", &[], &[]));
    s.start(1, 1, "all.q", "n1");
    assert!(!s.view().cycle_due(&changed, Time::from_millis(10_100)));
    // A job's own override tickets (`qalter -ot`).
    s.job_otickets.insert(JobId(1), 50);
    assert!(s.view().cycle_due(&changed, Time::from_millis(10_100)));
    s.job_otickets.clear();
    // A ticket policy.
    s.sched = Some(sched_with("weight_tickets_functional", "10000"));
    assert!(s.view().cycle_due(&changed, Time::from_millis(10_100)));
    // Nothing running: nothing to work out.
    s.jobs = Default::default();
    assert!(!s.view().cycle_due(&changed, Time::from_millis(10_100)));
}

#[test]
fn requests_that_do_not_resolve_are_typed_errors_in_sge_words() {
    let s = Cluster::new(&[]);
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
        assert_eq!(s.view().could_ever_run(&j), Err(CannotRun::Demand(want)));
    }
}

/// A gate from outside the crate plugs into the admit stage: it is asked where jobs may
/// go, its refusal is the reason `-w v` and `qstat -j` give, and it is told of every
/// placement.
#[test]
fn a_new_gate_plugs_into_the_admit_stage() {
    use crate::gate::Gate;
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
    let mut s = Cluster::new(&[]);
    s.add_host("n1", "", LOAD);
    s.add_host("n2", "", LOAD);
    s.set_queue("all.q", "slots", "2");
    for id in 1..=6 {
        s.put_job(job(id, "u1", &[], &[]));
    }
    let mut snap = s
        .view()
        .snapshot_at(&s.connected(), Time::from_secs(0), true);
    let mut state = s.view().open_pass(&snap);
    state.gates.register(Box::new(NotOn {
        host: "n1".into(),
        booked: 0,
    }));
    let d = demand_of(&s, &snap, 1, 1);
    let n1 = instance(&snap, "all.q@n1");
    assert_eq!(
        snap.matches(&mut state.gates, &d, n1, Check::All(1)),
        Err(Misfit::Unusable(Unusable::Disabled))
    );
    let placed = s.view().dispatch(&mut snap, &mut state, Time::from_secs(0));
    let hosts: Vec<&str> = placed.iter().map(|p| p.host.as_str()).collect();
    assert_eq!(hosts, ["n2", "n2"], "only n2, and only its two slots");
}

#[test]
fn memberships_answer_what_groups_of_answers_for_every_host() {
    use gantry_proto::HostGroup;
    let group = |name: &str, hosts: &[&str]| HostGroup {
        name: name.into(),
        hostlist: hosts.iter().map(|h| h.to_string()).collect(),
    };
    let mut groups = std::collections::BTreeMap::new();
    for g in [
        group("@a", &["h1", "h2", "h1"]),
        group("@b", &["@a", "h3"]),
        group("@c", &["@b", "@a", "h4"]),
        // A cycle: bounded, not endless.
        group("@x", &["@y", "h5"]),
        group("@y", &["@x"]),
        group("@empty", &[]),
    ] {
        groups.insert(g.name.clone(), g);
    }
    let all = crate::view::memberships(&groups);
    for host in ["h1", "h2", "h3", "h4", "h5", "h6"] {
        let one: Vec<String> = crate::view::groups_of(&groups, host)
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(all.get(host).cloned().unwrap_or_default(), one, "{host}");
    }
    assert_eq!(all["h1"], ["@a", "@b", "@c"]);
    assert_eq!(all["h5"], ["@x", "@y"]);
    assert!(!all.contains_key("h6"));
}

/// `-hold_jid_ad`: task N of the dependent array job waits while task N of a
/// predecessor (by id or name) is in the system; the others go.
#[test]
fn array_dependencies_hold_each_task_for_its_counterpart() {
    let mut s = Cluster::new(&[]);
    s.add_host("h1", "", LOAD);
    s.set_queue("all.q", "slots", "8");
    let array = |id: u64, name: &str| {
        let mut j = job(id, "u1", &[], &[]);
        j.spec.name = name.into();
        j.spec.array = Some(gantry_proto::TaskRange {
            first: 1,
            last: 3,
            step: 1,
        });
        j.tasks = gantry_common::tasks::Tasks::array(1, 3, 1);
        j
    };
    // The predecessor is held: none of its tasks leaves, so no dependent task runs.
    let mut first = array(1, "first");
    first.spec.hold = true;
    s.put_job(first);
    for (id, reference) in [(2, "1"), (3, "fir*")] {
        let mut j = array(id, "then");
        j.spec.hold_jids_ad = vec![reference.into()];
        s.put_job(j);
    }
    assert_eq!(cycle(&s), vec![]);
    let why = s
        .view()
        .explain(&s.jobs[&JobId(2)], &s.connected(), Time::from_secs(0));
    assert!(
        why.iter()
            .any(|r| r == "job dropped because of job dependencies"),
        "{why:?}"
    );
    // Task 2 of the predecessor is gone: task 2 of each dependent job may run, alone.
    let mut first = Job::clone(&s.jobs[&JobId(1)]);
    first.tasks.remove(TaskId(2));
    s.put_job(first);
    let d = s
        .view()
        .schedule(Time::from_secs(0), &s.connected())
        .dispatches;
    let started: Vec<(u64, u32)> = d
        .iter()
        .map(|d| (d.job_id.get(), d.task_id.get()))
        .collect();
    assert_eq!(started, vec![(2, 2), (3, 2)]);
    // A job naming itself by name does not wait for itself.
    let mut own = array(4, "self");
    own.spec.hold_jids_ad = vec!["self".into()];
    s.put_job(own);
    let d = s
        .view()
        .schedule(Time::from_secs(0), &s.connected())
        .dispatches;
    assert_eq!(d.iter().filter(|d| d.job_id.get() == 4).count(), 3);
}

/// `-soft -q`: a preference, not a requirement. The preferred queue is taken while it
/// has room; when it has none, the job runs elsewhere.
#[test]
fn a_soft_queue_list_is_a_preference() {
    let mut s = Cluster::new(&[]);
    s.add_host("h1", "", LOAD);
    s.set_queue("all.q", "slots", "1");
    s.set_queue("all.q", "seq_no", "0");
    let mut other = gantry_common::queue::new_queue("other.q", "@allhosts");
    if let Some(a) = other.attr_mut("seq_no") {
        *a = gantry_common::queue::parse_attr("1").unwrap();
    }
    s.put_queue(other);
    s.set_queue("other.q", "slots", "1");
    s.sched = Some(sched_with("queue_sort_method", "seqno"));
    // Without a preference, all.q comes first (seq_no 0); two jobs preferring other.q:
    // the first gets it, the second runs in all.q all the same.
    for id in 1..=2 {
        let mut j = job(id, "u1", &[], &[]);
        j.spec.soft_queues = vec!["other.q".into()];
        s.put_job(j);
    }
    assert_eq!(
        cycle(&s),
        vec![(1, "other.q@h1".to_string()), (2, "all.q@h1".to_string())]
    );
}

/// `-now y`: a job starts whole in the cycle that sees it or not at all; an array job
/// whose tasks do not all fit starts none (and leaves the room to the jobs after it);
/// a held immediate job is reported as not started.
#[test]
fn an_immediate_job_starts_whole_or_is_reported_unplaced() {
    let mut s = Cluster::new(&[]);
    s.add_host("h1", "", LOAD);
    s.set_queue("all.q", "slots", "2");
    let immediate_array = |id: u64, tasks: u32| {
        let mut j = job(id, "u1", &[], &[]);
        j.spec.immediate = true;
        j.spec.array = Some(gantry_proto::TaskRange {
            first: 1,
            last: tasks,
            step: 1,
        });
        j.tasks = gantry_common::tasks::Tasks::array(1, tasks, 1);
        j
    };
    s.put_job(immediate_array(1, 3));
    s.put_job(job(2, "u1", &[], &[]));
    let d = s.view().schedule(Time::from_secs(0), &s.connected());
    let started: Vec<(u64, u32)> = d
        .dispatches
        .iter()
        .map(|d| (d.job_id.get(), d.task_id.get()))
        .collect();
    assert_eq!(
        started,
        vec![(2, 1)],
        "none of job 1's three tasks fits in two slots"
    );
    assert_eq!(d.immediate_unplaced, vec![JobId(1)]);
    // Two tasks fit in two slots: both start.
    s.remove_job(2);
    s.put_job(immediate_array(1, 2));
    let d = s.view().schedule(Time::from_secs(0), &s.connected());
    let started: Vec<(u64, u32)> = d
        .dispatches
        .iter()
        .map(|d| (d.job_id.get(), d.task_id.get()))
        .collect();
    assert_eq!(started, vec![(1, 1), (1, 2)]);
    assert!(d.immediate_unplaced.is_empty());
    // A held immediate job cannot start now.
    let mut held = immediate_array(1, 1);
    held.spec.hold = true;
    s.put_job(held);
    let d = s.view().schedule(Time::from_secs(0), &s.connected());
    assert!(d.dispatches.is_empty());
    assert_eq!(d.immediate_unplaced, vec![JobId(1)]);
}

/// SGE 8.1.9's EXCL operator: a job asking for `exclusive=true` runs only on a host
/// nothing else runs on, and nothing else starts there while it runs; jobs that do not
/// ask share hosts as ever; a parallel job takes each of its hosts whole, once.
#[test]
fn exclusive_host_access() {
    let mut s = Cluster::new(&["exclusive BOOL EXCL YES YES 0"]);
    s.add_host("h1", "exclusive=true", LOAD);
    s.add_host("h2", "exclusive=true", LOAD);
    s.set_queue("all.q", "slots", "4");
    let exclusive = |id: u64| job(id, "u1", &[("exclusive", "true")], &[]);
    // Two ordinary jobs share h1 (the sort order fills it first); the exclusive job
    // takes h2, the only empty host; a second exclusive job finds none.
    s.put_job(job(1, "u1", &[], &[]));
    s.put_job(job(2, "u1", &[], &[]));
    s.put_job(exclusive(3));
    s.put_job(exclusive(4));
    let placed = cycle(&s);
    assert_eq!(
        placed,
        vec![
            (1, "all.q@h1".to_string()),
            (2, "all.q@h1".to_string()),
            (3, "all.q@h2".to_string()),
        ]
    );
    // With job 3 running on h2, an ordinary job stays off h2 even when h1 is full.
    for (id, host) in [(1, "h1"), (2, "h1"), (3, "h2")] {
        let mut j = Job::clone(&s.jobs[&JobId(id)]);
        j.tasks.insert(
            TaskId(1),
            TaskState::Running {
                host: host.into(),
                queue: "all.q".into(),
                start_time: 0,
                grants: vec![gantry_proto::Grant {
                    queue: "all.q".into(),
                    host: host.into(),
                    slots: 1,
                }],
                pe: None,
            },
        );
        s.put_job(j);
    }
    s.remove_job(4);
    for id in 5..=7 {
        s.put_job(job(id, "u1", &[], &[]));
    }
    let placed = cycle(&s);
    assert_eq!(
        placed,
        vec![(5, "all.q@h1".to_string()), (6, "all.q@h1".to_string())],
        "h1 has two slots left; h2 is held whole by job 3"
    );
    assert_eq!(
        why(&s, 7, "all.q@h2"),
        "(-l NONE) cannot run at host \"h2\" because exclusive resource (exclusive) is already in use"
    );
}

/// Every reason a queue instance, host or the global host refuses a job, as SGE 8.1.9's
/// scheduler words it: each expected text is the format string of
/// `source/libs/sched/msg_schedd.h` (message id in the comment) filled as
/// `sge_select_queue.c` fills it.
#[test]
fn every_reason_reads_as_sges_catalogue() {
    let (q, h) = ("all.q", "n1");
    let table: Vec<(Misfit, &str)> = vec![
        // 47048 SCHEDD_INFO_NOTINHARDQUEUELST_S "cannot run in queue "SFQ" because it is not contained in its hard queue list (-q)"
        (
            Misfit::NotInQueueList,
            "cannot run in queue \"all.q@n1\" because it is not contained in its hard queue list (-q)",
        ),
        // 47054 SCHEDD_INFO_NOTASERIALQUEUE_S
        (
            Misfit::NotBatch,
            "cannot run in queue instance \"all.q@n1\" because it is not of type batch",
        ),
        // 47053 SCHEDD_INFO_QUEUENOTINTERACTIVE_S
        (
            Misfit::NotInteractive,
            "cannot run in queue instance \"all.q@n1\" because it is not of type interactive",
        ),
        // 47080 SCHEDD_INFO_QUEUEDISABLED_
        (
            Misfit::Unusable(Unusable::Disabled),
            "queue instance \"all.q@n1\" dropped because it is disabled",
        ),
        // 47081 SCHEDD_INFO_QUEUENOTAVAIL_
        (
            Misfit::Unusable(Unusable::Unreachable),
            "queue instance \"all.q@n1\" dropped because it is temporarily not available",
        ),
        // 47079 SCHEDD_INFO_QUEUESUSP_
        (
            Misfit::Unusable(Unusable::Suspended),
            "queue instance \"all.q@n1\" dropped because it is suspended",
        ),
        // 47067 SCHEDD_INFO_QUEUEINALARM_SS
        (
            Misfit::Unusable(Unusable::SuspendAlarm("np_load_avg=2.0 >= 1.5".into())),
            "queue instance \"all.q@n1\" is in suspend alarm: np_load_avg=2.0 >= 1.5",
        ),
        // 47068 SCHEDD_INFO_QUEUEOVERLOADED_SS
        (
            Misfit::Unusable(Unusable::Overloaded("np_load_avg=2.0 >= 1.75".into())),
            "queue instance \"all.q@n1\" dropped because it is overloaded: np_load_avg=2.0 >= 1.75",
        ),
        // 47043 SCHEDD_INFO_HASNOPERMISSION_SS "has no permission for "SFN" "SFQ"" (host, queue)
        (Misfit::NoAccess(Level::Host), "has no permission for host \"n1\""),
        (
            Misfit::NoAccess(Level::Queue),
            "has no permission for queue \"all.q@n1\"",
        ),
        // 47045 SCHEDD_INFO_HASNOPRJ_S
        (
            Misfit::Project {
                level: Level::Queue,
                why: ProjectMisfit::NoProject,
            },
            "(no project) does not have the correct project to run in queue \"all.q@n1\"",
        ),
        // 47044 SCHEDD_INFO_HASINCORRECTPRJ_SSS
        (
            Misfit::Project {
                level: Level::Host,
                why: ProjectMisfit::NotListed("chem".into()),
            },
            "(project chem) does not have the correct project to run in host \"n1\"",
        ),
        // 47046 SCHEDD_INFO_EXCLPRJ_SSS
        (
            Misfit::Project {
                level: Level::Queue,
                why: ProjectMisfit::Excluded("chem".into()),
            },
            "(project chem) is not allowed to run in queue \"all.q@n1\" based on the excluded project list",
        ),
        // 47061 SCHEDD_INFO_CANNOTRUNGLOBALLY_SS, 47042 _CANNOTRUNATHOST_SSS,
        // 47059 _CANNOTRUNINQUEUE_SSS: the job's hard request list, then the reason
        (
            Misfit::Request {
                level: Level::Global,
                name: "lic".into(),
                requested: "lic=2,h_rt=60".into(),
                offered: "gc:lic=1".into(),
                for_default: false,
            },
            "(-l lic=2,h_rt=60) cannot run globally because it offers only gc:lic=1",
        ),
        (
            Misfit::Request {
                level: Level::Host,
                name: "mem_free".into(),
                requested: "mem_free=1T".into(),
                offered: "hl:mem_free=23.356G".into(),
                for_default: false,
            },
            "(-l mem_free=1T) cannot run at host \"n1\" because it offers only hl:mem_free=23.356G",
        ),
        (
            Misfit::Request {
                level: Level::Queue,
                name: "slots".into(),
                requested: "NONE".into(),
                offered: "qc:slots=0".into(),
                for_default: false,
            },
            "(-l NONE) cannot run in queue \"all.q@n1\" because it offers only qc:slots=0",
        ),
        // 47211 MSG_SCHEDD_JOBREQUESTSUNKOWNRESOURCE_S as the reason of 47059
        (
            Misfit::UnknownResource {
                name: "gpu".into(),
                requested: "gpu=1".into(),
            },
            "(-l gpu=1) cannot run in queue \"all.q@n1\" because job requests unknown resource (gpu)",
        ),
        // 47217 MSG_SCHEDD_EXCLUSIVE_IN_USE_S as the reason of 47042
        (
            Misfit::ExclusiveInUse {
                level: Level::Host,
                name: "exclusive".into(),
                requested: "exclusive=true".into(),
            },
            "(-l exclusive=true) cannot run at host \"n1\" because exclusive resource (exclusive) is already in use",
        ),
        // 47063 SCHEDD_INFO_NOGLOBFORCEDRES_SS, 47062 _NOFORCEDRES_SS,
        // 47056 _NOTREQFORCEDRES_SS
        (
            Misfit::Forced {
                level: Level::Global,
                name: "site".into(),
            },
            "does not request globally 'forced' resource \"site\"",
        ),
        (
            Misfit::Forced {
                level: Level::Host,
                name: "site".into(),
            },
            "does not request 'forced' resource \"site\" of host n1",
        ),
        (
            Misfit::Forced {
                level: Level::Queue,
                name: "site".into(),
            },
            "does not request 'forced' resource \"site\" of queue instance all.q@n1",
        ),
        // 47050 SCHEDD_INFO_NOTINQUEUELSTOFPE_SS
        (
            Misfit::NoPe("mpi".into()),
            "cannot run in queue \"all.q@n1\" because PE \"mpi\" is not in pe list",
        ),
    ];
    for (misfit, want) in table {
        assert_eq!(misfit.message(q, h), want, "{misfit:?}");
    }
}

/// The scheduler configuration of a fresh cell with one attribute changed.
fn sched_with(key: &str, value: &str) -> gantry_proto::Config {
    let mut conf = gantry_common::schedconf::default_schedconf();
    for (k, v) in &mut conf.entries {
        if k == key {
            *v = value.to_string();
        }
    }
    conf
}

/// Urgency's resource contribution (`sge_priority(5)`, notes section 3): every hard
/// request's amount times its complex's urgency times the slots assumed (one slot's
/// `slots` request included), a string request its urgency once; a parallel job's slots
/// as its PE's `urgency_slots` says.
#[test]
fn resource_urgency_counts_requests_times_slots_as_sge_does() {
    use crate::view::priorities::{assumed_slots, resource_contribution};
    let mut s = Cluster::new(&[
        "gpu INT <= YES YES 0",
        "scratch MEMORY <= YES YES 0",
        "site STRING == YES NO NONE",
    ]);
    for (name, urgency) in [("gpu", 500), ("scratch", 1), ("site", 70)] {
        if let Some(c) = s.complexes.iter_mut().find(|c| c.name == name) {
            c.urgency = urgency;
        }
    }
    for (name, rule) in [("mpi", "min"), ("smp", "max"), ("make", "avg")] {
        if let Some(p) = s.pes.get_mut(name) {
            p.urgency_slots = rule.into();
            p.slots = 6;
        }
    }
    let with_pe = |pe: &str, range: &str, hard: &[(&str, &str)]| {
        let mut j = job(1, "u1", hard, &[]);
        j.spec.pe = Some((pe.into(), range.into()));
        j
    };
    // (job, slots assumed, lowest slots, rrcontr)
    let cases: Vec<(Job, f64, u32, f64)> = vec![
        (job(1, "u1", &[], &[]), 1.0, 1, 1000.0),
        (job(1, "u1", &[("gpu", "2")], &[]), 1.0, 1, 2000.0),
        (job(1, "u1", &[("scratch", "1K")], &[]), 1.0, 1, 2024.0),
        (job(1, "u1", &[("site", "x")], &[]), 1.0, 1, 1070.0),
        (with_pe("mpi", "4", &[("gpu", "1")]), 4.0, 4, 6000.0),
        (with_pe("mpi", "2-8", &[]), 2.0, 2, 2000.0),
        (with_pe("smp", "2-8", &[]), 6.0, 2, 6000.0),
        (with_pe("make", "2-5", &[]), 3.0, 2, 3000.0),
        (with_pe("m*", "2-8", &[]), 4.0, 2, 4000.0),
        (with_pe("nosuch", "2-8", &[]), 1.0, 2, 1000.0),
    ];
    let view = s.view();
    for (j, slots, lowest, rr) in cases {
        assert_eq!(assumed_slots(&view, &j), (slots, lowest), "{:?}", j.spec.pe);
        assert_eq!(
            resource_contribution(view.complexes, &j, slots),
            rr,
            "{:?} {:?}",
            j.spec.pe,
            j.spec.hard_resources
        );
    }
}

/// `qtype` decides who a queue instance takes, as SGE's scheduler decides it: batch
/// jobs `BATCH` queues only, interactive jobs started now (`qrsh`, `qlogin`) only
/// `INTERACTIVE` ones, interactive jobs that may wait (`-now n`) either.
#[test]
fn queue_types_take_the_jobs_sge_gives_them() {
    use gantry_proto::{InteractiveKind, JobScript};
    let interactive = |id: u64, now: bool| {
        let mut j = job(id, "u1", &[], &[]);
        j.spec.script = JobScript::Interactive {
            kind: InteractiveKind::Qrsh,
            command: Some("hostname".into()),
        };
        j.spec.immediate = now;
        j
    };
    // (qtype, batch job placed, qrsh -now y placed, qrsh -now n placed)
    let table = [
        ("BATCH INTERACTIVE", true, true, true),
        ("BATCH", true, false, true),
        ("INTERACTIVE", false, true, true),
        ("NONE", false, false, false),
    ];
    for (qtype, batch, now, later) in table {
        let mut s = Cluster::new(&[]);
        s.add_host("n1", "", LOAD);
        s.set_queue("all.q", "qtype", qtype);
        s.set_queue("all.q", "slots", "3");
        s.put_job(job(1, "u1", &[], &[]));
        s.put_job(interactive(2, true));
        s.put_job(interactive(3, false));
        let placed: Vec<u64> = cycle(&s).iter().map(|(j, _)| *j).collect();
        assert_eq!(
            (
                placed.contains(&1),
                placed.contains(&2),
                placed.contains(&3)
            ),
            (batch, now, later),
            "qtype {qtype}: {placed:?}"
        );
    }
}

#[test]
fn predecessors_are_the_jobs_in_the_system_a_hold_jid_names() {
    let mut jobs = JobTable::new();
    for (id, name) in [(1, "first"), (2, "second"), (3, "first")] {
        let mut j = job(id, "u1", &[], &[]);
        j.spec.name = name.into();
        jobs.insert(JobId(id), Arc::new(j));
    }
    let refs = |r: &[&str]| r.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    for (references, me, want) in [
        (refs(&["1"]), 2, vec![1]),
        (refs(&["first"]), 2, vec![1, 3]),
        (refs(&["first"]), 3, vec![1]),
        (refs(&["f*", "2"]), 9, vec![1, 2, 3]),
        (refs(&["99", "nosuch"]), 2, vec![]),
    ] {
        let got: Vec<u64> = crate::view::predecessors(&jobs, &references, JobId(me))
            .iter()
            .map(|j| j.0)
            .collect();
        assert_eq!(got, want, "{references:?} of job {me}");
    }
}
