//! The resource quota sets on synthetic clusters: the specification's rule sets,
//! expanded and plain filters, projects, dynamic limits, the most restrictive set,
//! memory per slot, usage kept exact as jobs start, end and change, advance
//! reservation jobs, parallel jobs, `qquota`'s rows and `qstat -j`'s reasons.
#![allow(clippy::unwrap_used)]

use gantry_proto::{ArId, Grant, HostGroup, JobId, QuotaQuery, TaskId, UserSet};
use std::collections::BTreeMap;

use gantry_common::job::{Job, TaskState};

use super::*;
use crate::model::Demand;
use crate::synthetic::{job, Cluster};
use crate::time::Time;

/// A cluster of hosts (each with `num_proc` as given) whose `all.q` has room for 100
/// jobs per host, with no load adjustments to get in the way.
fn hosts(extra_complexes: &[&str], hosts: &[(&str, &str)]) -> Cluster {
    let mut s = Cluster::new(extra_complexes);
    for (name, nproc) in hosts {
        s.add_host(
            name,
            "",
            &[
                ("arch", "lx-amd64"),
                ("num_proc", nproc),
                ("np_load_avg", "0.00"),
            ],
        );
    }
    s.set_queue("all.q", "slots", "100");
    s.set_queue("all.q", "load_thresholds", "NONE");
    s
}

/// Add resource quota sets from text, as `qconf -Arqs` would.
fn add_sets(s: &mut Cluster, text: &str) {
    let sets = gantry_common::rqs::parse_sets(text).unwrap();
    for (seq, set) in (s.quota_sets.len() as u64 + 1..).zip(sets) {
        gantry_common::rqs::check_set(&set, &s.complexes).unwrap();
        s.put_quota_set(seq, set);
    }
}

/// The global host's `complex_values`.
fn global_values(s: &mut Cluster, values: &[(&str, &str)]) {
    let mut g = s
        .global_host
        .clone()
        .unwrap_or_else(|| gantry_proto::ExecHost::new("global"));
    g.complex_values = values
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    s.global_host = Some(g);
}

fn userset(s: &mut Cluster, name: &str, entries: &[&str]) {
    s.put_userset(UserSet {
        name: name.into(),
        types: vec!["ACL".into()],
        fshare: 0,
        oticket: 0,
        entries: entries.iter().map(|e| e.to_string()).collect(),
    });
}

fn hostgroup(s: &mut Cluster, name: &str, members: &[&str]) {
    s.put_hostgroup(HostGroup {
        name: name.into(),
        hostlist: members.iter().map(|m| m.to_string()).collect(),
    });
}

/// Submit `n` jobs of a user (requests and project as given), ids from `first`.
fn jobs(
    s: &mut Cluster,
    first: u64,
    n: u64,
    user: &str,
    hard: &[(&str, &str)],
    project: Option<&str>,
) {
    for id in first..first + n {
        let mut j = job(id, user, hard, &[]);
        j.spec.project = project.map(str::to_string);
        s.put_job(j);
    }
}

/// Run scheduling cycles until nothing more starts, starting what they dispatch (as the
/// Cluster actor commits it). Returns the running tasks per (user, host).
fn settle(s: &mut Cluster) -> BTreeMap<(String, String), u32> {
    loop {
        let decisions = s
            .view()
            .schedule(Time::from_secs(0), &s.connected())
            .dispatches;
        if decisions.is_empty() {
            break;
        }
        s.commit(&decisions);
    }
    running(s)
}

fn running(s: &Cluster) -> BTreeMap<(String, String), u32> {
    let mut out = BTreeMap::new();
    for j in s.jobs.values() {
        for t in j.tasks.placed_states() {
            if let TaskState::Running { host, .. } = t {
                *out.entry((j.owner.user.clone(), host.clone())).or_insert(0) += 1;
            }
        }
    }
    out
}

fn per_user(s: &Cluster) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for ((u, _), n) in running(s) {
        *out.entry(u).or_insert(0) += n;
    }
    out
}

fn per_host(s: &Cluster) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for ((_, h), n) in running(s) {
        *out.entry(h).or_insert(0) += n;
    }
    out
}

fn map(pairs: &[(&str, u32)]) -> BTreeMap<String, u32> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// The usage the book keeps, as it would be rebuilt from scratch.
fn assert_usage_exact(s: &Cluster) {
    let mut fresh = s.clone();
    fresh.settle_quotas();
    assert_eq!(
        s.quota_book.usage.readable(),
        fresh.quota_book.usage.readable()
    );
}

fn finish(s: &mut Cluster, id: u64) {
    s.remove_job(id);
}

#[test]
fn expanded_users_limit_each_user_plain_users_limit_all_together() {
    let mut s = hosts(&[], &[("n1", "2")]);
    add_sets(
        &mut s,
        "{\n name per_user\n enabled true\n limit users {*} to slots=2\n}\n",
    );
    jobs(&mut s, 1, 5, "u1", &[], None);
    jobs(&mut s, 11, 5, "u2", &[], None);
    jobs(&mut s, 21, 5, "u3", &[], None);
    settle(&mut s);
    assert_eq!(per_user(&s), map(&[("u1", 2), ("u2", 2), ("u3", 2)]));
    assert_usage_exact(&s);

    let mut s = hosts(&[], &[("n1", "2")]);
    add_sets(
        &mut s,
        "{\n name all_users\n enabled true\n limit users * to slots=2\n}\n",
    );
    jobs(&mut s, 1, 5, "u1", &[], None);
    jobs(&mut s, 11, 5, "u2", &[], None);
    settle(&mut s);
    assert_eq!(per_user(&s), map(&[("u1", 2)]));
}

#[test]
fn ruleset1_and_ruleset2_of_the_specification() {
    // compiler_lic INT <= YES YES 0; ruleset1 gives roland 3, project jobs 2 in all,
    // everyone else 1 in all; ruleset2 caps everyone at 20 together.
    let mut s = hosts(&["compiler_lic INT <= YES YES 0"], &[("n1", "2")]);
    global_values(&mut s, &[("compiler_lic", "100")]);
    add_sets(
        &mut s,
        "{\n name ruleset1\n enabled true\n limit users roland to compiler_lic=3\n limit projects * to compiler_lic=2\n limit users * to compiler_lic=1\n}\n\
         {\n name ruleset2\n enabled true\n limit users * to compiler_lic=20\n}\n",
    );
    let lic = &[("compiler_lic", "1")][..];
    jobs(&mut s, 1, 5, "roland", lic, Some("p1")); // roland wins in any project
    jobs(&mut s, 11, 5, "andre", lic, Some("p1"));
    jobs(&mut s, 21, 5, "bob", lic, Some("p2"));
    jobs(&mut s, 31, 5, "carl", lic, None);
    jobs(&mut s, 41, 5, "dave", lic, None);
    settle(&mut s);
    // roland 3; andre and bob share the project rule's 2; carl and dave share 1.
    let got = per_user(&s);
    assert_eq!(got["roland"], 3);
    assert_eq!(
        got.get("andre").unwrap_or(&0) + got.get("bob").unwrap_or(&0),
        2
    );
    assert_eq!(
        got.get("carl").unwrap_or(&0) + got.get("dave").unwrap_or(&0),
        1
    );
    // Jobs not asking for the licence are not limited by either set.
    jobs(&mut s, 51, 4, "carl", &[], None);
    settle(&mut s);
    assert_eq!(per_user(&s)["carl"] - got.get("carl").unwrap_or(&0), 4);
    assert_usage_exact(&s);

    // ruleset2 denies once 20 are in use, though ruleset1 would allow more.
    let mut s = hosts(&["compiler_lic INT <= YES YES 0"], &[("n1", "2")]);
    global_values(&mut s, &[("compiler_lic", "100")]);
    add_sets(
        &mut s,
        "{\n name ruleset1\n enabled true\n limit users {*} to compiler_lic=3\n}\n\
         {\n name ruleset2\n enabled true\n limit users * to compiler_lic=20\n}\n",
    );
    for u in 0..10 {
        jobs(&mut s, 100 + u * 10, 5, &format!("user{u}"), lic, None);
    }
    settle(&mut s);
    assert_eq!(per_user(&s).values().sum::<u32>(), 20);
    assert!(per_user(&s).values().all(|n| *n <= 3));
}

#[test]
fn an_excluded_user_is_not_limited_even_when_listed() {
    for filter in ["@staff,!roland", "@staff,!roland,roland"] {
        let mut s = hosts(&[], &[("n1", "2")]);
        userset(&mut s, "staff", &["roland", "andre"]);
        add_sets(
            &mut s,
            &format!("{{\n name staff\n enabled true\n limit users {filter} to slots=1\n}}\n"),
        );
        jobs(&mut s, 1, 3, "roland", &[], None);
        jobs(&mut s, 11, 3, "andre", &[], None);
        jobs(&mut s, 21, 3, "zoe", &[], None);
        settle(&mut s);
        assert_eq!(
            per_user(&s),
            map(&[("andre", 1), ("roland", 3), ("zoe", 3)]),
            "{filter}"
        );
    }
}

#[test]
fn an_expanded_host_group_limits_each_member_host() {
    let mut s = hosts(&[], &[("durin", "2"), ("carc", "2"), ("other", "2")]);
    hostgroup(&mut s, "@lx_hosts", &["durin", "carc"]);
    add_sets(
        &mut s,
        "{\n name lx\n enabled true\n limit users * hosts {@lx_hosts} to slots=2\n}\n",
    );
    jobs(&mut s, 1, 20, "u1", &[], None);
    settle(&mut s);
    let hosts = per_host(&s);
    assert_eq!(hosts["durin"], 2);
    assert_eq!(hosts["carc"], 2);
    assert_eq!(hosts["other"], 16);

    // The same group as a plain list: both hosts together.
    let mut s = hosts_again();
    add_sets(
        &mut s,
        "{\n name lx\n enabled true\n limit hosts @lx_hosts to slots=2\n}\n",
    );
    jobs(&mut s, 1, 20, "u1", &[], None);
    settle(&mut s);
    let hosts = per_host(&s);
    assert_eq!(
        hosts.get("durin").unwrap_or(&0) + hosts.get("carc").unwrap_or(&0),
        2
    );
}

fn hosts_again() -> Cluster {
    let mut s = hosts(&[], &[("durin", "2"), ("carc", "2"), ("other", "2")]);
    hostgroup(&mut s, "@lx_hosts", &["durin", "carc"]);
    s
}

#[test]
fn projects_absent_star_and_not_star() {
    // (filter, jobs with a project may run, jobs without may run)
    let cases = [
        ("", 1, 1),             // no filter: all jobs together
        ("projects *", 1, 10),  // only jobs with a project
        ("projects !*", 10, 1), // only jobs without one
        ("projects p1", 1, 10),
        ("projects !p1", 10, 1), // all but p1's jobs, those without a project too
    ];
    for (filter, with, without) in cases {
        let mut s = hosts(&[], &[("n1", "2")]);
        add_sets(
            &mut s,
            &format!("{{\n name p\n enabled true\n limit {filter} to slots=1\n}}\n"),
        );
        jobs(&mut s, 1, 10, "withp", &[], Some("p1"));
        jobs(&mut s, 11, 10, "nop", &[], None);
        settle(&mut s);
        let got = per_user(&s);
        let total = if filter.is_empty() { 1 } else { with + without };
        if filter.is_empty() {
            assert_eq!(got.values().sum::<u32>(), total, "{filter}");
        } else {
            assert_eq!(got.get("withp").copied().unwrap_or(0), with, "{filter}");
            assert_eq!(got.get("nop").copied().unwrap_or(0), without, "{filter}");
        }
    }
}

#[test]
fn dynamic_limits_follow_each_hosts_num_proc() {
    let mut s = hosts(&[], &[("small", "2"), ("big", "16")]);
    add_sets(
        &mut s,
        "{\n name per_host\n enabled true\n limit hosts {*} to slots=$num_proc*2\n}\n",
    );
    jobs(&mut s, 1, 100, "u1", &[], None);
    settle(&mut s);
    assert_eq!(per_host(&s), map(&[("big", 32), ("small", 4)]));
    // A new report of num_proc changes the limit at the next cycle.
    s.host_runtime("small").load_values[1].value = "4".into();
    settle(&mut s);
    assert_eq!(per_host(&s)["small"], 8);
    // A host that has not reported num_proc counts a large value (the man page).
    let mut s = hosts(&[], &[("quiet", "2")]);
    s.host_runtime("quiet")
        .load_values
        .retain(|l| l.name != "num_proc");
    add_sets(
        &mut s,
        "{\n name per_host\n enabled true\n limit hosts {*} to slots=$num_proc*1+1\n}\n",
    );
    jobs(&mut s, 1, 50, "u1", &[], None);
    settle(&mut s);
    assert_eq!(per_host(&s)["quiet"], 50);
}

#[test]
fn a_rule_over_each_host_counts_each_of_its_limits_apart_in_one_cycle() {
    // Two limits of one rule expanded over hosts: on every host, three slots and four
    // licences. Two jobs of two licences each fill the licences first; the cycle
    // finds each limit's counters on each host by their own rows.
    let mut s = hosts(&["lic INT <= YES YES 0"], &[("n1", "4"), ("n2", "4")]);
    global_values(&mut s, &[("lic", "100")]);
    add_sets(
        &mut s,
        "{\n name per_host\n enabled true\n limit hosts {*} to slots=3,lic=4\n}\n",
    );
    jobs(&mut s, 1, 10, "u1", &[("lic", "2")], None);
    let first = s
        .view()
        .schedule(Time::from_secs(0), &s.connected())
        .dispatches;
    s.commit(&first);
    assert_eq!(per_host(&s), map(&[("n1", 2), ("n2", 2)]));
    // Jobs without licences: one more slot on each host.
    jobs(&mut s, 11, 10, "u1", &[], None);
    settle(&mut s);
    assert_eq!(per_host(&s), map(&[("n1", 3), ("n2", 3)]));
    assert_usage_exact(&s);
}

#[test]
fn a_cycle_keeps_no_counter_a_hosts_capacity_keeps_under_its_limit() {
    // Four slots a host. u1's rule allows 8 a host (never reached: no counter kept);
    // u2's allows 3 (a counter a host, and it binds).
    let sets =
        "{\n name roomy\n enabled true\n limit users {u1} hosts {*} to slots=$num_proc*2\n}\n\
                {\n name tight\n enabled true\n limit users {u2} hosts {*} to slots=3\n}\n";
    let cluster = |user: &str| {
        let mut s = hosts(&[], &[("n1", "4"), ("n2", "4")]);
        s.set_queue("all.q", "slots", "4");
        add_sets(&mut s, sets);
        jobs(&mut s, 1, 10, user, &[("h_rt", "100")], None);
        s
    };
    let mut s = cluster("u1");
    let d = s.view().schedule(Time::from_secs(0), &s.connected());
    assert_eq!((d.dispatches.len(), d.quota_counters), (8, 0));
    s.commit(&d.dispatches);
    assert_eq!(per_host(&s), map(&[("n1", 4), ("n2", 4)]));
    assert_usage_exact(&s);
    let mut s = cluster("u2");
    let d = s.view().schedule(Time::from_secs(0), &s.connected());
    assert_eq!((d.dispatches.len(), d.quota_counters), (6, 2));
    s.commit(&d.dispatches);
    assert_eq!(per_host(&s), map(&[("n1", 3), ("n2", 3)]));
    // Host by host: $num_proc*2 reaches n1's four slots, not n2's two.
    let mut s = hosts(&[], &[("n1", "2"), ("n2", "1")]);
    s.set_queue("all.q", "slots", "4");
    add_sets(&mut s, sets);
    jobs(&mut s, 1, 10, "u1", &[], None);
    let d = s.view().schedule(Time::from_secs(0), &s.connected());
    assert_eq!((d.dispatches.len(), d.quota_counters), (6, 1));
    s.commit(&d.dispatches);
    assert_eq!(per_host(&s), map(&[("n1", 4), ("n2", 2)]));
    // What the counter already holds counts: four jobs still run on n1 in a queue that
    // is gone (the host's capacity no longer holds them), so a limit of six a host
    // leaves two more there.
    let mut s = hosts(&[], &[("n1", "4")]);
    s.set_queue("all.q", "slots", "4");
    add_sets(
        &mut s,
        "{\n name six\n enabled true\n limit users {u1} hosts {*} to slots=6\n}\n",
    );
    jobs(&mut s, 1, 10, "u1", &[], None);
    for id in 1..=4 {
        s.start(id, 1, "gone.q", "n1");
    }
    s.settle_quotas();
    settle(&mut s);
    assert_eq!(per_host(&s), map(&[("n1", 6)]));
    // A dynamic limit reading a value the cycle's own starts move (np_load_avg, by
    // the load adjustments) is not the same all through the cycle: its counters stay.
    let mut s = hosts(&[], &[("n1", "4"), ("n2", "4")]);
    s.set_queue("all.q", "slots", "4");
    add_sets(
        &mut s,
        "{\n name adjusted\n enabled true\n limit users {u1} hosts {*} to slots=8-$np_load_avg*4\n}\n",
    );
    jobs(&mut s, 1, 10, "u1", &[], None);
    let d = s.view().schedule(Time::from_secs(0), &s.connected());
    assert_eq!(d.quota_counters, 2);
    // A job asking for a negative amount gives its host more than its capacity: then
    // the capacity bounds nothing, and every counter is kept. n1 has four licences;
    // u1's running job asks for -2; u2's rule allows four.
    let mut s = Cluster::new(&["lic INT <= YES YES 0"]);
    s.add_host(
        "n1",
        "lic=4",
        &[
            ("arch", "lx-amd64"),
            ("num_proc", "4"),
            ("np_load_avg", "0.00"),
        ],
    );
    s.set_queue("all.q", "slots", "10");
    s.set_queue("all.q", "load_thresholds", "NONE");
    add_sets(
        &mut s,
        "{\n name lic\n enabled true\n limit users {u2} hosts {*} to lic=4\n}\n",
    );
    jobs(&mut s, 1, 1, "u1", &[("lic", "-2")], None);
    s.start(1, 1, "all.q", "n1");
    jobs(&mut s, 11, 6, "u2", &[("lic", "1")], None);
    s.settle_quotas();
    settle(&mut s);
    assert_eq!(per_user(&s), map(&[("u1", 1), ("u2", 4)]));
    // A cycle that may reserve keeps every counter: a reservation counts whenever it
    // starts, beyond what the host holds now.
    let mut s = cluster("u1");
    let conf = s.sched.as_mut().unwrap();
    conf.entries.retain(|(k, _)| k != "max_reservation");
    conf.entries
        .push(("max_reservation".to_string(), "10".to_string()));
    let mut waiting = job(20, "u1", &[("h_rt", "100")], &[]);
    waiting.spec.reserve = true;
    s.put_job(waiting);
    let d = s.view().schedule(Time::from_secs(0), &s.connected());
    assert_eq!((d.dispatches.len(), d.quota_counters), (8, 2));
    assert_eq!(d.reservations.len(), 1);
}

#[test]
fn inside_a_set_the_first_matching_rule_decides() {
    let mut s = hosts(&[], &[("n1", "2")]);
    add_sets(
        &mut s,
        "{\n name firewall\n enabled true\n limit users u1 to slots=5\n limit users * to slots=1\n}\n",
    );
    jobs(&mut s, 1, 10, "u1", &[], None);
    jobs(&mut s, 11, 10, "u2", &[], None);
    settle(&mut s);
    assert_eq!(per_user(&s), map(&[("u1", 5), ("u2", 1)]));
    // A rule that matches but does not limit the resource ends the search all the same.
    let mut s = hosts(&["lic INT <= YES YES 0"], &[("n1", "2")]);
    add_sets(
        &mut s,
        "{\n name first\n enabled true\n limit users u1 to lic=1\n limit users * to slots=1\n}\n",
    );
    jobs(&mut s, 1, 4, "u1", &[], None);
    settle(&mut s);
    assert_eq!(per_user(&s), map(&[("u1", 4)]));
}

#[test]
fn the_most_restrictive_set_wins_and_disabled_sets_do_not_count() {
    let mut s = hosts(&[], &[("n1", "2")]);
    add_sets(
        &mut s,
        "{\n name a\n enabled true\n limit users {*} to slots=3\n}\n\
         {\n name b\n enabled true\n limit hosts {*} to slots=2\n}\n\
         {\n name c\n enabled false\n limit to slots=0\n}\n",
    );
    jobs(&mut s, 1, 10, "u1", &[], None);
    settle(&mut s);
    assert_eq!(per_user(&s), map(&[("u1", 2)]));
    // Usage is kept for the disabled set too: enabling it finds it exact.
    assert_usage_exact(&s);
}

#[test]
fn memory_limits_are_debited_per_slot_defaults_included() {
    let mut s = hosts(
        &["virtual_free2 MEMORY <= YES YES 1G", "lic INT <= YES JOB 0"],
        &[("n1", "2")],
    );
    global_values(&mut s, &[("virtual_free2", "100G"), ("lic", "10")]);
    add_sets(
        &mut s,
        "{\n name mem\n enabled true\n limit users {*} to virtual_free2=5G,lic=2\n}\n",
    );
    // Each job takes the default 1G: five fit, the sixth does not.
    jobs(&mut s, 1, 7, "u1", &[], None);
    // 2G each: two fit.
    jobs(&mut s, 11, 4, "u2", &[("virtual_free2", "2G")], None);
    settle(&mut s);
    assert_eq!(per_user(&s), map(&[("u1", 5), ("u2", 2)]));
    let j = s.jobs.get(&JobId(6)).unwrap();
    let why = s.view().explain(j, &s.connected(), Time::from_secs(0));
    assert_eq!(
        why,
        vec!["cannot run because it exceeds limit \"u1/////\" in rule \"mem/1\"".to_string()]
    );
    assert_usage_exact(&s);
}

#[test]
fn usage_stays_exact_as_jobs_end_are_deleted_or_change() {
    let mut s = hosts(&[], &[("n1", "2"), ("n2", "2")]);
    userset(&mut s, "testusers", &["u1", "u2"]);
    add_sets(
        &mut s,
        "{\n name max_u_slots\n enabled true\n limit users {*} to slots=2\n}\n\
         {\n name host_slots\n enabled true\n limit hosts {*} to slots=$num_proc*1\n}\n\
         {\n name per_group\n enabled true\n limit name testers users @testusers hosts @allhosts to slots=3\n limit name others users * to slots=1\n}\n",
    );
    jobs(&mut s, 1, 5, "u1", &[], None);
    jobs(&mut s, 11, 5, "u2", &[], None);
    jobs(&mut s, 21, 5, "u3", &[], None);
    settle(&mut s);
    assert_usage_exact(&s);
    // testers: 3 in all for u1 and u2; u3 one (others).
    let got = per_user(&s);
    assert_eq!(got["u1"] + got["u2"], 3);
    assert_eq!(got["u3"], 1);
    // Jobs end: their usage goes; the next cycle fills up again to the same limits.
    let ids: Vec<u64> = s
        .jobs
        .values()
        .filter(|j| {
            j.tasks
                .placed_states()
                .any(|t| matches!(t, TaskState::Running { .. }))
        })
        .map(|j| j.id.get())
        .collect();
    for id in &ids[..2] {
        finish(&mut s, *id);
    }
    assert_usage_exact(&s);
    settle(&mut s);
    let got = per_user(&s);
    assert_eq!(got["u1"] + got["u2"], 3);
    assert_usage_exact(&s);
    // A set changes: usage is recounted under the new rules.
    add_sets(
        &mut s,
        "{\n name extra\n enabled true\n limit users u3 to slots=10\n}\n",
    );
    assert_usage_exact(&s);
    assert_eq!(
        s.quota_book.usage.readable()[&(
            3,
            0,
            "/////".to_string(),
            s.quota_book.catalog.as_ref().unwrap().id("slots").unwrap() as u32
        )],
        1.0
    );
    // A running task becomes a deleting one (qdel), then goes away.
    let id = ids[2];
    let mut j = Job::clone(&s.jobs[&JobId(id)]);
    if let Some(TaskState::Running {
        host,
        queue,
        start_time,
        grants,
        pe,
    }) = j.tasks.get(TaskId(1)).cloned()
    {
        j.tasks.insert(
            TaskId(1),
            TaskState::Deleting {
                host,
                queue,
                start_time,
                grants,
                pe,
            },
        );
    }
    s.put_job(j);
    assert_usage_exact(&s);
    finish(&mut s, id);
    assert_usage_exact(&s);
}

#[test]
fn advance_reservation_jobs_are_neither_limited_nor_counted() {
    let mut s = hosts(&[], &[("n1", "2")]);
    add_sets(
        &mut s,
        "{\n name none\n enabled true\n limit to slots=0\n}\n",
    );
    // Reservation 7 holds one slot of n1, its window open.
    s.ars.insert(
        ArId(7),
        gantry_proto::AdvanceReservation {
            id: ArId(7),
            spec: gantry_proto::ArSpec::default(),
            owner: "u1".into(),
            group: "u1".into(),
            submission_time: 0,
            start: 0,
            end: 100_000,
            granted: vec![gantry_proto::Grant {
                queue: "all.q".into(),
                host: "n1".into(),
                slots: 1,
            }],
            granted_pe: None,
            state: gantry_proto::ArState::Running,
            errors: Vec::new(),
        },
    );
    let mut j = job(1, "u1", &[], &[]);
    j.spec.ar = Some(ArId(7));
    s.put_job(j);
    jobs(&mut s, 2, 1, "u1", &[], None);
    settle(&mut s);
    assert_eq!(per_user(&s), map(&[("u1", 1)]));
    assert!(matches!(
        s.jobs[&JobId(1)].tasks.get(TaskId(1)).unwrap(),
        TaskState::Running { .. }
    ));
    assert_eq!(s.quota_book.usage.nonzero().count(), 0);
}

#[test]
fn could_ever_run_sees_a_limit_no_job_fits_under() {
    let mut s = hosts(&[], &[("n1", "2")]);
    add_sets(
        &mut s,
        "{\n name drain\n enabled true\n limit to slots=0\n}\n",
    );
    let j = job(1, "u1", &[], &[]);
    let why = s.view().could_ever_run(&j).unwrap_err().reasons();
    assert_eq!(
        why,
        vec!["cannot run because it exceeds limit \"/////\" in rule \"drain/1\"".to_string()]
    );
}

#[test]
fn a_parallel_job_is_limited_and_counted_slot_by_slot_per_host() {
    let mut s = hosts(&[], &[("n1", "2"), ("n2", "2")]);
    s.set_queue("all.q", "pe_list", "make");
    add_sets(
        &mut s,
        "{\n name pe_hosts\n enabled true\n limit pes make hosts {*} to slots=3\n}\n",
    );
    let mut j = job(1, "u1", &[], &[]);
    j.spec.pe = Some(("make".into(), "5".into()));
    s.put_job(j);
    settle(&mut s);
    let TaskState::Running { grants, .. } = &s.jobs[&JobId(1)].tasks.get(TaskId(1)).unwrap() else {
        panic!("the PE job does not run: {:?}", s.jobs[&JobId(1)].tasks);
    };
    let total: u32 = grants.iter().map(|g: &Grant| g.slots).sum();
    assert_eq!(total, 5);
    assert!(grants.iter().all(|g| g.slots <= 3), "{grants:?}");
    assert_usage_exact(&s);
    // A second one cannot get 5 more (1 left per host).
    let mut j = job(2, "u1", &[], &[]);
    j.spec.pe = Some(("make".into(), "5".into()));
    s.put_job(j);
    settle(&mut s);
    assert!(matches!(
        s.jobs[&JobId(2)].tasks.get(TaskId(1)).unwrap(),
        TaskState::Pending
    ));
}

#[test]
fn qquota_rows_are_the_callers_rules_with_usage() {
    let mut s = hosts(&[], &[("vm", "2")]);
    userset(&mut s, "testusers", &["user1", "user2", "user3"]);
    add_sets(
        &mut s,
        "{\n name max_u_slots\n enabled true\n limit users {*} to slots=2\n}\n\
         {\n name host_slots\n enabled true\n limit hosts {*} to slots=$num_proc*1\n}\n\
         {\n name per_group\n enabled true\n limit name testers users @testusers hosts @allhosts to slots=3\n limit name others users * to slots=1\n}\n",
    );
    jobs(&mut s, 1, 5, "user1", &[], None);
    jobs(&mut s, 6, 2, "user2", &[], None);
    settle(&mut s);
    let show = |s: &Cluster, who: &str, users: &[&str]| -> Vec<String> {
        let q = QuotaQuery {
            users: users.iter().map(|u| u.to_string()).collect(),
            ..Default::default()
        };
        s.view()
            .quota_rows(&q, who, &|_| Vec::new())
            .into_iter()
            .map(|r| {
                let l = &r.limits[0];
                let f: Vec<String> = r.filters.iter().map(|(k, v)| format!("{k} {v}")).collect();
                format!(
                    "{} {}={}/{} {}",
                    r.rule,
                    l.resource,
                    l.used.clone().unwrap_or_default(),
                    l.limit,
                    f.join(" ")
                )
            })
            .collect()
    };
    let everything = vec![
        "max_u_slots/1 slots=2/2 users user1".to_string(),
        "host_slots/1 slots=2/2 hosts vm".to_string(),
        "per_group/testers slots=2/3 users @testusers hosts @allhosts".to_string(),
    ];
    assert_eq!(show(&s, "user1", &[]), everything);
    assert_eq!(show(&s, "user2", &[]), everything[1..].to_vec());
    assert_eq!(show(&s, "root", &[]), everything[1..2].to_vec());
    assert_eq!(show(&s, "root", &["*"]), everything);
    assert_eq!(show(&s, "root", &["user1"]), everything);
    // -h, -q, -l narrow the rows.
    let q = QuotaQuery {
        users: vec!["*".into()],
        hosts: vec!["other".into()],
        ..Default::default()
    };
    let rows: Vec<String> = s
        .view()
        .quota_rows(&q, "root", &|_| Vec::new())
        .into_iter()
        .map(|r| r.rule)
        .collect();
    assert_eq!(rows, vec!["max_u_slots/1".to_string()]);
    let q = QuotaQuery {
        users: vec!["*".into()],
        resources: vec!["h_vmem".into()],
        ..Default::default()
    };
    assert!(s.view().quota_rows(&q, "root", &|_| Vec::new()).is_empty());
    // A disabled set shows nothing.
    let mut set = s.quota_sets["host_slots"].clone();
    set.1.enabled = false;
    s.put_quota_set(set.0, set.1);
    assert!(!show(&s, "root", &["*"])
        .iter()
        .any(|r| r.starts_with("host_slots")));
}

#[test]
fn qstat_j_names_the_first_blocking_rule_in_set_order() {
    let mut s = hosts(&[], &[("vm", "2")]);
    add_sets(
        &mut s,
        "{\n name max_u_slots\n enabled true\n limit users {*} to slots=2\n}\n\
         {\n name host_slots\n enabled true\n limit hosts {*} to slots=$num_proc*1\n}\n",
    );
    jobs(&mut s, 1, 5, "user1", &[], None);
    jobs(&mut s, 6, 2, "user2", &[], None);
    settle(&mut s);
    let why = |id: u64| {
        s.view()
            .explain(&s.jobs[&JobId(id)], &s.connected(), Time::from_secs(0))
    };
    assert_eq!(
        why(5),
        vec![
            "cannot run because it exceeds limit \"user1/////\" in rule \"max_u_slots/1\""
                .to_string()
        ]
    );
    assert_eq!(
        why(7),
        vec![
            "cannot run because it exceeds limit \"////vm/\" in rule \"host_slots/1\"".to_string()
        ]
    );
    assert_eq!(
        s.view()
            .quota_blocked_jobs(&s.connected(), Time::from_secs(0)),
        [3, 4, 5, 6, 7].map(JobId).to_vec()
    );
}

/// Filters match by the pure function alone, table-driven.
#[test]
fn filter_matching_table() {
    let catalog = Catalog::new(&gantry_common::complex::default_complexes());
    let usersets: HashMap<String, Vec<String>> = [
        (
            "staff".to_string(),
            vec!["roland".to_string(), "andre".to_string()],
        ),
        ("chem".to_string(), vec!["@chemists".to_string()]),
    ]
    .into();
    // (rule, user, user's groups, project, pe, queue, host, host groups) -> key
    type Case<'a> = (
        &'a str,
        &'a str,
        &'a [&'a str],
        Option<&'a str>,
        Option<&'a str>,
        &'a str,
        &'a str,
        &'a [&'a str],
        Option<&'a str>,
    );
    let cases: &[Case] = &[
        (
            "to slots=1",
            "u",
            &[],
            None,
            None,
            "all.q",
            "h",
            &[],
            Some("/////"),
        ),
        (
            "users {*} to slots=1",
            "u",
            &[],
            None,
            None,
            "all.q",
            "h",
            &[],
            Some("u/////"),
        ),
        (
            "users * to slots=1",
            "u",
            &[],
            None,
            None,
            "all.q",
            "h",
            &[],
            Some("/////"),
        ),
        (
            "users {@staff} to slots=1",
            "andre",
            &[],
            None,
            None,
            "q",
            "h",
            &[],
            Some("andre/////"),
        ),
        (
            "users {@staff} to slots=1",
            "zoe",
            &[],
            None,
            None,
            "q",
            "h",
            &[],
            None,
        ),
        (
            "users {!@staff} to slots=1",
            "zoe",
            &[],
            None,
            None,
            "q",
            "h",
            &[],
            Some("zoe/////"),
        ),
        (
            "users {!@staff} to slots=1",
            "roland",
            &[],
            None,
            None,
            "q",
            "h",
            &[],
            None,
        ),
        (
            "users @chem to slots=1",
            "x",
            &["chemists"],
            None,
            None,
            "q",
            "h",
            &[],
            Some("/////"),
        ),
        (
            "users @nosuchacl to slots=1",
            "x",
            &[],
            None,
            None,
            "q",
            "h",
            &[],
            None,
        ),
        (
            "users !roland to slots=1",
            "andre",
            &[],
            None,
            None,
            "q",
            "h",
            &[],
            Some("/////"),
        ),
        (
            "users !roland to slots=1",
            "roland",
            &[],
            None,
            None,
            "q",
            "h",
            &[],
            None,
        ),
        (
            "projects {*} to slots=1",
            "u",
            &[],
            Some("p1"),
            None,
            "q",
            "h",
            &[],
            Some("/p1////"),
        ),
        (
            "projects * to slots=1",
            "u",
            &[],
            None,
            None,
            "q",
            "h",
            &[],
            None,
        ),
        (
            "projects !* to slots=1",
            "u",
            &[],
            None,
            None,
            "q",
            "h",
            &[],
            Some("/////"),
        ),
        (
            "projects !* to slots=1",
            "u",
            &[],
            Some("p1"),
            None,
            "q",
            "h",
            &[],
            None,
        ),
        (
            "pes {mpi,smp} to slots=1",
            "u",
            &[],
            None,
            Some("smp"),
            "q",
            "h",
            &[],
            Some("//smp///"),
        ),
        (
            "pes * to slots=1",
            "u",
            &[],
            None,
            None,
            "q",
            "h",
            &[],
            None,
        ),
        (
            "queues {all.q} to slots=1",
            "u",
            &[],
            None,
            None,
            "all.q",
            "h",
            &[],
            Some("///all.q//"),
        ),
        (
            "queues !all.q to slots=1",
            "u",
            &[],
            None,
            None,
            "all.q",
            "h",
            &[],
            None,
        ),
        (
            "hosts {@lx_hosts} to slots=1",
            "u",
            &[],
            None,
            None,
            "q",
            "durin",
            &["@lx_hosts"],
            Some("////durin/"),
        ),
        (
            "hosts {@lx_hosts} to slots=1",
            "u",
            &[],
            None,
            None,
            "q",
            "other",
            &[],
            None,
        ),
        (
            "hosts {!@lx_hosts} to slots=1",
            "u",
            &[],
            None,
            None,
            "q",
            "other",
            &[],
            Some("////other/"),
        ),
        (
            "hosts n* to slots=1",
            "u",
            &[],
            None,
            None,
            "q",
            "n07",
            &[],
            Some("/////"),
        ),
        (
            "users {*} hosts {*} to slots=1",
            "u",
            &[],
            None,
            None,
            "q",
            "h",
            &[],
            Some("u////h/"),
        ),
    ];
    for (rule, user, groups, project, pe, queue, host, hgroups, want) in cases {
        let text = format!("{{\n name s\n limit {rule}\n}}\n");
        let set = gantry_common::rqs::parse_sets(&text).unwrap().remove(0);
        let quotas = Quotas::new(vec![set], &catalog, usersets.clone());
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        let hgroups: Vec<String> = hgroups.iter().map(|g| g.to_string()).collect();
        let c = Consumer {
            user,
            groups: &groups,
            project: *project,
            pe: *pe,
        };
        let p = Place {
            queue,
            host,
            host_groups: &hgroups,
        };
        // The scheduler's own path: the consumer's plan, finished for the place.
        let d = Demand {
            hard: Vec::new(),
            soft: Vec::new(),
            queues: Vec::new(),
            soft_queues: Vec::new(),
            masterq: Vec::new(),
            ckpt: None,
            user: user.to_string(),
            groups: groups.clone(),
            project: project.map(str::to_string),
            account: String::new(),
            slots: 1,
            pe: None,
            part: crate::model::Part::Whole,
            granted_pe: None,
            category: 0,
            quota_exempt: false,
            queue_kind: crate::model::QueueKind::Batch,
            run_time: None,
        };
        let mut usage = Usage::default();
        let plan = quotas.plan(&catalog, &d, &c, &mut usage, false);
        let gates = quotas.gates_at(&plan, &p, &mut usage, &|_| None);
        let got = gates.first().map(|g| match g {
            RuleCheck::Counter { slot, .. } => usage.consumer_text(usage.key(*slot)),
            RuleCheck::Never { key, .. } => usage.consumer_text(key),
        });
        assert_eq!(got.as_deref(), *want, "{rule} for {user}");
    }
}

mod cycle_against_gates_at {
    //! The cycle's quota gate (plans, place masks, families, the last placement's
    //! counters) against the plain path, `plan` then `gates_at` per place: after the
    //! cycles settle, no counter is over its limit, and every job left pending is
    //! denied by some rule on every host.
    use super::*;
    use proptest::prelude::*;

    const USERS: [&str; 6] = [
        "",
        "users {*}",
        "users u1",
        "users {u1,u2}",
        "users !u2",
        "users @team",
    ];
    const HOSTS: [&str; 6] = [
        "",
        "hosts {*}",
        "hosts @ga",
        "hosts {@gb}",
        "hosts h1",
        "hosts !h2",
    ];
    /// A dynamic limit needs its rule expanded over hosts.
    const HOSTS_EACH: [&str; 6] = [
        "hosts {*}",
        "hosts {*}",
        "hosts {@ga}",
        "hosts {@gb}",
        "hosts {h1}",
        "hosts {!h2}",
    ];
    const QUEUES: [&str; 4] = ["", "queues all.q", "queues !all.q", "queues {all.q}"];

    fn limit(kind: usize, n: u32) -> String {
        match kind {
            0 => format!("slots={n}"),
            1 => format!("slots=$num_proc*{n}"),
            2 => format!("lic={n}"),
            _ => format!("slots={},lic={n}", n + 1),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn no_counter_overrun_and_every_pending_job_denied(
            nprocs in proptest::collection::vec(1u32..5, 4),
            rules in proptest::collection::vec(
                (0usize..6, 0usize..6, 0usize..4, 0usize..4, 1u32..6),
                1..8,
            ),
            sets in 1usize..4,
            lic_jobs in 0u64..5,
        ) {
            let names = ["h1", "h2", "h3", "h4"];
            let nproc_text: Vec<String> = nprocs.iter().map(u32::to_string).collect();
            let spec: Vec<(&str, &str)> = names
                .iter()
                .zip(&nproc_text)
                .map(|(h, n)| (*h, n.as_str()))
                .collect();
            let mut s = hosts(&["lic INT <= YES YES 0"], &spec);
            global_values(&mut s, &[("lic", "1000")]);
            hostgroup(&mut s, "@ga", &["h1", "h2"]);
            hostgroup(&mut s, "@gb", &["h3", "h4"]);
            userset(&mut s, "team", &["u1", "u3"]);
            let sets = sets.min(rules.len());
            let mut text = String::new();
            for set in 0..sets {
                text.push_str(&format!("{{\n name set{set}\n enabled true\n"));
                for (u, h, q, kind, n) in rules.iter().skip(set).step_by(sets) {
                    let hosts = if *kind == 1 { HOSTS_EACH[*h] } else { HOSTS[*h] };
                    let filters = [USERS[*u], QUEUES[*q], hosts].join(" ");
                    text.push_str(&format!(" limit {filters} to {}\n", limit(*kind, *n)));
                }
                text.push_str("}\n");
            }
            let text = text.replace("   ", " ").replace("  ", " ");
            add_sets(&mut s, &text);
            for (k, user) in ["u1", "u2", "u3"].iter().enumerate() {
                let first = 1 + 10 * k as u64;
                jobs(&mut s, first, lic_jobs, user, &[("lic", "1")], None);
                jobs(&mut s, first + lic_jobs, 8 - lic_jobs, user, &[], None);
            }
            settle(&mut s);
            assert_usage_exact(&s);
            let book = &s.quota_book;
            let catalog = book.catalog.clone().expect("a catalog");
            let quotas = book.quotas.clone();
            let num_proc = catalog.id("num_proc").expect("num_proc");
            let mut usage = book.usage.clone();
            let gates_of = |job: &Job, host: &str, usage: &mut Usage| {
                let d = crate::model::demand(&catalog, job).expect("a demand");
                let c = Consumer::of(&d, None);
                let plan = quotas.plan(&catalog, &d, &c, usage, true);
                let groups = book.memberships.get(host).cloned().unwrap_or_default();
                let place = Place { queue: "all.q", host, host_groups: &groups };
                let n = nprocs[names.iter().position(|h| *h == host).expect("a host")];
                quotas.gates_at(&plan, &place, usage, &|attr| {
                    (attr == num_proc).then_some(f64::from(n))
                })
            };
            for job in s.jobs.values() {
                for t in job.tasks.placed_states() {
                    if let TaskState::Running { host, .. } = t {
                        for g in gates_of(job, host, &mut usage) {
                            prop_assert!(g.allows(&usage, 0, true), "{g:?} over its limit\n{text}");
                        }
                    }
                }
            }
            for job in s.jobs.values().filter(|j| j.tasks.placed_states().next().is_none()) {
                for host in names {
                    let gates = gates_of(job, host, &mut usage);
                    prop_assert!(
                        gates.iter().any(|g| !g.allows(&usage, 1, true)),
                        "job {} pending though {host} takes it\n{text}",
                        job.id
                    );
                }
            }
        }
    }
}

/// A key has one counter, found again by `slot` and read by `get`, whether it has a host
/// of its own (kept by host) or not; keys differing in any part, the host included,
/// have counters of their own; a key never given a counter reads 0.
#[test]
fn every_key_has_one_counter_with_or_without_a_host() {
    let mut usage = Usage::default();
    let (alice, node1, node2) = (
        usage.name_id("alice"),
        usage.name_id("node1"),
        usage.name_id("node2"),
    );
    let key = |set: u32, user: u32, host: u32, attr: u32| UsageKey {
        set,
        rule: 1,
        members: [user, 0, 0, 0, host],
        attr,
    };
    let keys = [
        key(0, alice, 0, 0),
        key(0, alice, node1, 0),
        key(0, alice, node2, 0),
        key(0, 0, node1, 0),
        key(1, alice, node1, 0),
        key(0, alice, node1, 1),
        // A host id beyond the names known when the first counters were made.
        key(0, alice, 40, 0),
    ];
    let slots: Vec<usize> = keys.iter().map(|k| usage.slot(*k)).collect();
    assert_eq!(slots, (0..keys.len()).collect::<Vec<_>>());
    for (n, k) in keys.iter().enumerate() {
        assert_eq!(usage.slot(*k), slots[n]);
        assert_eq!(usage.key(slots[n]), k);
        usage.add(slots[n], n as f64 + 1.0);
    }
    for (n, k) in keys.iter().enumerate() {
        assert_eq!(usage.get(k), n as f64 + 1.0);
    }
    assert_eq!(usage.len(), keys.len());
    assert_eq!(usage.get(&key(0, alice, 39, 0)), 0.0);
    assert_eq!(usage.get(&key(0, alice, 41, 0)), 0.0);
    assert_eq!(usage.get(&key(2, alice, node1, 0)), 0.0);
    assert_eq!(usage.consumer_text(&keys[1]), "alice////node1/");
}
