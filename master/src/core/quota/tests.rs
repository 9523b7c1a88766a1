#![allow(clippy::unwrap_used)]

use super::*;
use crate::core::door::Door;
use crate::core::state::{Object, Op};
use crate::synthetic::{add_host, cluster, set_queue};

/// A cluster of hosts (each with `num_proc` as given) whose `all.q` has room for 100
/// jobs per host, with no load adjustments to get in the way.
fn hosts(extra_complexes: &[&str], hosts: &[(&str, &str)]) -> ClusterState {
    let mut s = cluster(extra_complexes);
    for (name, nproc) in hosts {
        add_host(
            &mut s,
            name,
            "",
            &[
                ("arch", "lx-amd64"),
                ("num_proc", nproc),
                ("np_load_avg", "0.00"),
            ],
        );
    }
    set_queue(&mut s, "all.q", "slots", "100");
    set_queue(&mut s, "all.q", "load_thresholds", "NONE");
    s
}

/// Add resource quota sets from text, as `qconf -Arqs` would.
fn add_sets(s: &mut ClusterState, text: &str) {
    let sets = gantry_common::rqs::parse_sets(text).unwrap();
    for (seq, set) in (s.quota_sets.len() as u64 + 1..).zip(sets) {
        gantry_common::rqs::check_set(&set, &s.input.complexes).unwrap();
        s.apply(&Op::Put(Object::QuotaSet { seq, set }));
    }
}

#[test]
fn an_attribute_a_quota_set_uses_cannot_leave_the_complex() {
    let mut s = hosts(
        &["lic INT <= YES YES 0", "cores INT <= YES NO 0"],
        &[("n1", "2")],
    );
    add_sets(
        &mut s,
        "{\n name l\n enabled true\n limit users {*} to lic=2\n limit hosts {*} to slots=$cores*2\n}\n",
    );
    let root = gantry_proto::Caller {
        user: "root".into(),
        uid: 0,
        gid: 0,
        host: "head".into(),
    };
    let without = |name: &str| -> String {
        let list: Vec<gantry_proto::ComplexAttr> = s
            .input
            .complexes
            .iter()
            .filter(|a| a.name != name)
            .cloned()
            .collect();
        gantry_common::complex::print_complexes(&list)
    };
    for (attr, want) in [
        (
            "lic",
            "denied: attribute \"lic\" is still referenced in resource quota set \"l\"",
        ),
        (
            "cores",
            "denied: attribute \"cores\" is still referenced in resource quota set \"l\"",
        ),
    ] {
        let req = gantry_proto::ToMaster::ModifyObject {
            kind: gantry_proto::ObjectKind::Complex,
            text: without(attr),
        };
        let refused = s
            .handle(&root, &req, crate::core::sched::Time::from_secs(0))
            .unwrap_err();
        assert_eq!(refused.message, want);
    }
}
