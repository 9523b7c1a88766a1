#![allow(clippy::unwrap_used)]
//! The allocation for hand-computed trees (each expected number worked out in a comment
//! from the rules in the module's documentation, not from the code's output), and its
//! properties over random trees.

use super::*;
use gantry_proto::{ArId, JobId};
use proptest::prelude::*;

fn tree(text: &str) -> Vec<GroupEntry> {
    gantry_common::groups::parse_groups(text).unwrap()
}

fn demand(pairs: &[(&str, f64)]) -> HashMap<String, f64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// (group, quota, allocation) for every group, rounded to 1e-6.
fn table(a: &Allocation) -> Vec<(String, f64, f64)> {
    let r = |x: f64| (x * 1e6).round() / 1e6;
    a.groups
        .iter()
        .map(|g| (g.name.clone(), r(g.quota), r(g.allocation)))
        .collect()
}

fn row(name: &str, quota: f64, allocation: f64) -> (String, f64, f64) {
    (name.to_string(), quota, allocation)
}

#[test]
fn hand_computed_trees() {
    struct Case {
        what: &'static str,
        tree: &'static str,
        demand: &'static [(&'static str, f64)],
        pool: f64,
        integral: bool,
        want: Vec<(String, f64, f64)>,
        unused: f64,
    }
    let cases = vec![
        // Static only. Quotas: a 60, b 30, the root keeps 100 - 90 = 10. Fair share: a
        // 60 (asks 80, 20 left), b 10 (20 unused), the root 0 (10 unused). The root's
        // surplus 30 goes to the accepting child still asking: a gets its 20.
        Case {
            what: "static only, surplus accepted",
            tree: "a 60 TRUE FALSE\nb 30 TRUE FALSE",
            demand: &[("a", 80.0), ("b", 10.0)],
            pool: 100.0,
            integral: true,
            want: vec![row(ROOT, 10.0, 0.0), row("a", 60.0, 80.0), row("b", 30.0, 10.0)],
            unused: 10.0,
        },
        // The same with a refusing surplus: it stays at 60, 30 unused.
        Case {
            what: "static only, surplus refused",
            tree: "a 60 FALSE FALSE\nb 30 TRUE FALSE",
            demand: &[("a", 80.0), ("b", 10.0)],
            pool: 100.0,
            integral: true,
            want: vec![row(ROOT, 10.0, 0.0), row("a", 60.0, 60.0), row("b", 30.0, 10.0)],
            unused: 30.0,
        },
        // Proportional only, the example: 0.7 and 0.3 of 10 slots, both
        // saturating: 7 and 3.
        Case {
            what: "proportional, saturating",
            tree: "physics 0.7 TRUE FALSE\nchemistry 0.3 TRUE FALSE",
            demand: &[("physics", 100.0), ("chemistry", 100.0)],
            pool: 10.0,
            integral: true,
            want: vec![row(ROOT, 0.0, 0.0), row("chemistry", 3.0, 3.0), row("physics", 7.0, 7.0)],
            unused: 0.0,
        },
        // Autoregroup changes no allocation: a refuses surplus and stays at its 60 of
        // 100 though it asks 80 (20 unused with b's 30, the root's 10 for its own 0);
        // the cycle's last pass lets a's jobs compete for the idle slots in the root
        // (`autoregroup_groups_compete_again_in_the_root`).
        Case {
            what: "autoregroup: the allocation as without it",
            tree: "a 60 FALSE TRUE\nb 30 TRUE FALSE",
            demand: &[("a", 80.0), ("b", 10.0)],
            pool: 100.0,
            integral: true,
            want: vec![row(ROOT, 10.0, 0.0), row("a", 60.0, 60.0), row("b", 30.0, 10.0)],
            unused: 30.0,
        },
        // Chemistry stops asking: its 3 go to physics, which accepts.
        Case {
            what: "a group without demand lends everything",
            tree: "physics 0.7 TRUE FALSE\nchemistry 0.3 TRUE FALSE",
            demand: &[("physics", 100.0)],
            pool: 10.0,
            integral: true,
            want: vec![row(ROOT, 0.0, 0.0), row("chemistry", 3.0, 0.0), row("physics", 7.0, 10.0)],
            unused: 0.0,
        },
        // Both ask for more than their quota and both accept: the root's surplus (none
        // here) is all there is; each keeps its quota.
        // Mixed: a static 40 first, b and c half each of the 60 left: 30 and 30; the
        // root keeps nothing. Demands a 10 (30 unused), b 50 (20 short), c 45 (15
        // short): the root shares 30 by quota between b and c, both accepting: 15 each;
        // c needs only 15: b 45, c 45, nothing left.
        Case {
            what: "mixed static and proportional",
            tree: "a 40 TRUE FALSE\nb 0.5 TRUE FALSE\nc 0.5 TRUE FALSE",
            demand: &[("a", 10.0), ("b", 50.0), ("c", 45.0)],
            pool: 100.0,
            integral: true,
            want: vec![
                row(ROOT, 0.0, 0.0),
                row("a", 40.0, 10.0),
                row("b", 30.0, 45.0),
                row("c", 30.0, 45.0),
            ],
            unused: 0.0,
        },
        // Nested: physics 0.7 of 100 = 70 for its subtree; hep static 20, th half of
        // the 50 left = 25; physics keeps 70 - 45 = 25 for its own jobs; chemistry 30.
        Case {
            what: "nested quotas",
            tree: "physics 0.7 TRUE FALSE\nphysics.hep 20 TRUE FALSE\nphysics.th 0.5 TRUE FALSE\nchemistry 0.3 TRUE FALSE",
            demand: &[("physics", 25.0), ("physics.hep", 20.0), ("physics.th", 25.0), ("chemistry", 30.0)],
            pool: 100.0,
            integral: true,
            want: vec![
                row(ROOT, 0.0, 0.0),
                row("chemistry", 30.0, 30.0),
                row("physics", 25.0, 25.0),
                row("physics.hep", 20.0, 20.0),
                row("physics.th", 25.0, 25.0),
            ],
            unused: 0.0,
        },
        // Interior demand: physics 0.5 of 40 = 20, hep half of it = 10, physics keeps
        // 10 for its own jobs (asking 30); chemistry 20 asks nothing. Hep asks 5: 5
        // unused, handed at physics to physics itself (hep asks no more): physics 15.
        // At the root chemistry's 20 unused go to physics (its subtree still asks 15):
        // physics 30, and 5 stay unused.
        Case {
            what: "demand in an interior group",
            tree: "physics 0.5 TRUE FALSE\nphysics.hep 0.5 TRUE FALSE\nchemistry 0.5 TRUE FALSE",
            demand: &[("physics", 30.0), ("physics.hep", 5.0)],
            pool: 40.0,
            integral: true,
            want: vec![
                row(ROOT, 0.0, 0.0),
                row("chemistry", 20.0, 0.0),
                row("physics", 10.0, 30.0),
                row("physics.hep", 10.0, 5.0),
            ],
            unused: 5.0,
        },
        // Thirds of 10: 0.333 each is 3.33, the root keeps 0.01, which it shares by
        // quota as surplus: 3.3333 each. Whole slots: 3 each, fractions 0.3333 x 3 = 1
        // pooled: one unit, fractions and quotas tie, the name decides: a 4.
        Case {
            what: "rounding of fractional slots",
            tree: "a 0.333 TRUE FALSE\nb 0.333 TRUE FALSE\nc 0.333 TRUE FALSE",
            demand: &[("a", 10.0), ("b", 10.0), ("c", 10.0)],
            pool: 10.0,
            integral: true,
            want: vec![
                row(ROOT, 0.01, 0.0),
                row("a", 3.33, 4.0),
                row("b", 3.33, 3.0),
                row("c", 3.33, 3.0),
            ],
            unused: 0.0,
        },
        // Weighted demand (h_vmem-weighted, fractional) without whole slots: a 0.6 of
        // 10 = 6 asks 2.5; b 4 asks 7.25: b gets its 4 and a's 3.5 unused.
        Case {
            what: "weighted demand, fractions kept",
            tree: "a 0.6 TRUE FALSE\nb 0.4 TRUE FALSE",
            demand: &[("a", 2.5), ("b", 7.25)],
            pool: 10.0,
            integral: false,
            want: vec![row(ROOT, 0.0, 0.0), row("a", 6.0, 2.5), row("b", 4.0, 7.25)],
            unused: 0.25,
        },
        // Jobs in no declared group run in the root: it keeps 50 of 100 and takes b's
        // unused 50 too, b not asking.
        Case {
            what: "the root's own jobs",
            tree: "b 50 TRUE FALSE",
            demand: &[("<none>", 200.0)],
            pool: 100.0,
            integral: true,
            want: vec![row(ROOT, 50.0, 100.0), row("b", 50.0, 0.0)],
            unused: 0.0,
        },
    ];
    for c in cases {
        let a = allocate(&tree(c.tree), &demand(c.demand), c.pool, c.integral);
        assert_eq!(table(&a), c.want, "{}", c.what);
        assert!(
            (a.unused - c.unused).abs() < 1e-6,
            "{}: unused {}",
            c.what,
            a.unused
        );
    }
}

#[test]
fn jobs_count_in_the_group_their_account_names() {
    let t = tree("physics 0.7 TRUE FALSE\nphysics.hep 20 TRUE FALSE\nchemistry 0.3 TRUE FALSE");
    let jobs = [
        ("physics.hep", 4.0),
        ("physics.hep.alice", 2.0),
        ("physics.bob", 1.0),
        ("chemistry", 3.0),
        ("sge", 5.0),
        ("biology.x", 1.0),
    ];
    let d = demand_by_group(&t, jobs.into_iter());
    let mut d: Vec<(String, f64)> = d.into_iter().collect();
    d.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        d,
        [
            ("<none>".to_string(), 6.0),
            ("chemistry".to_string(), 3.0),
            ("physics".to_string(), 1.0),
            ("physics.hep".to_string(), 6.0),
        ]
    );
}

#[test]
fn surplus_received_is_reported() {
    let a = allocate(
        &tree("physics 0.7 TRUE FALSE\nchemistry 0.3 TRUE FALSE"),
        &demand(&[("physics", 100.0)]),
        10.0,
        true,
    );
    let p = a.get("physics").unwrap();
    assert_eq!((p.quota, p.allocation, p.surplus), (7.0, 10.0, 3.0));
    assert_eq!(a.get("chemistry").unwrap().surplus, 0.0);
}

/// A random tree of up to 8 groups under paths a, a.b, ... with valid quotas.
fn random_tree() -> impl Strategy<Value = Vec<GroupEntry>> {
    proptest::collection::vec(
        (
            proptest::collection::vec("[ab]", 1..3),
            0..30u64,
            1..5u32,
            any::<bool>(),
            any::<bool>(),
        ),
        0..8,
    )
    .prop_map(|groups| {
        let mut out: Vec<GroupEntry> = Vec::new();
        for (path, stat, frac, is_static, accept) in groups {
            // Parents first: every prefix of the path becomes a group.
            for depth in 1..=path.len() {
                let name = path[..depth].join(".");
                if out.iter().any(|g| g.name == name) {
                    continue;
                }
                out.push(GroupEntry {
                    name,
                    quota: if is_static {
                        GroupQuota::Static(stat)
                    } else {
                        GroupQuota::Proportional(frac as f64 / 10.0)
                    },
                    accept_surplus: accept,
                    autoregroup: false,
                    user_lists: Vec::new(),
                });
            }
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn allocations_keep_their_promises(
        groups in random_tree(),
        demands in proptest::collection::vec(0..40u32, 8),
        pool in 0..120u32,
        integral in any::<bool>(),
    ) {
        let mut names: Vec<String> = groups.iter().map(|g| g.name.clone()).collect();
        names.push(ROOT.to_string());
        let d: HashMap<String, f64> = names
            .iter()
            .zip(&demands)
            .map(|(n, &v)| (n.clone(), v as f64))
            .collect();
        let a = allocate(&groups, &d, pool as f64, integral);
        let total: f64 = a.groups.iter().map(|g| g.allocation).sum();
        // Never more than the pool, and never more than a group asks for.
        prop_assert!(total <= pool as f64 + 1e-6, "{} > {}", total, pool);
        for g in &a.groups {
            prop_assert!(g.allocation <= g.demand + 1e-6, "{:?}", g);
            // A group asking no more than its quota gets what it asks for.
            if g.demand <= g.quota + 1e-9 {
                prop_assert!((g.allocation - g.demand).abs() < 1e-6, "{:?}", g);
            }
            // Without accept_surplus, a group's subtree never beyond its quota (an
            // interior group's configured quota is its subtree's total).
            if !g.accept_surplus {
                let prefix = format!("{}.", g.name);
                let subtree: f64 = a
                    .groups
                    .iter()
                    .filter(|s| s.name == g.name || s.name.starts_with(&prefix))
                    .map(|s| s.allocation)
                    .sum();
                prop_assert!(subtree <= g.subtree_quota + 1e-6, "{:?}: {}", g, subtree);
            }
            if integral {
                prop_assert!((g.allocation - g.allocation.round()).abs() < 1e-6, "{:?}", g);
            }
        }
        // The order the groups were declared in changes nothing.
        let mut reversed = groups.clone();
        reversed.reverse();
        prop_assert_eq!(allocate(&reversed, &d, pool as f64, integral), a);
    }
}

mod in_the_cycle {
    //! Group quotas in a cycle on a synthetic cluster: the allocation caps what each
    //! group starts, unused quota goes to a group that accepts it, and `qstat -j` says
    //! why a job waits.
    use super::*;
    use crate::synthetic::{job, Cluster};
    use crate::time::Time;
    use std::collections::HashSet;

    /// Five hosts of two slots: a pool of 10.
    fn cluster(tree_text: &str) -> Cluster {
        let mut c = Cluster::new(&[]);
        for n in 0..5 {
            c.add_host(
                &format!("n{n}"),
                "",
                &[("arch", "lx-amd64"), ("num_proc", "2")],
            );
        }
        c.set_queue("all.q", "slots", "2");
        c.group_tree = tree(tree_text);
        c
    }

    fn submit(c: &mut Cluster, first: u64, count: u64, account: &str) {
        for id in first..first + count {
            let mut j = job(id, "u1", &[], &[]);
            j.spec.account = account.to_string();
            c.put_job(j);
        }
    }

    /// Dispatches per account.
    fn started(c: &Cluster) -> HashMap<String, usize> {
        let mut out = HashMap::new();
        for d in c
            .view()
            .schedule(Time::from_secs(0), &c.connected())
            .dispatches
        {
            *out.entry(c.jobs[&d.job_id].spec.account.clone())
                .or_insert(0) += 1;
        }
        out
    }

    #[test]
    fn proportional_groups_share_the_pool_and_lend_what_they_leave() {
        let mut c = cluster("physics 0.7 TRUE FALSE\nchemistry 0.3 TRUE FALSE");
        // Chemistry submitted first: the allocation, not the order, decides.
        submit(&mut c, 1, 20, "chemistry");
        submit(&mut c, 100, 20, "physics.alice");
        let s = started(&c);
        assert_eq!(
            (s.get("physics.alice"), s.get("chemistry")),
            (Some(&7), Some(&3))
        );
        // Chemistry asks for nothing: physics, accepting, takes all ten.
        let mut c2 = cluster("physics 0.7 TRUE FALSE\nchemistry 0.3 TRUE FALSE");
        submit(&mut c2, 100, 20, "physics");
        assert_eq!(started(&c2).get("physics"), Some(&10));
        // Refusing surplus, physics stays at its 7.
        let mut c3 = cluster("physics 0.7 FALSE FALSE\nchemistry 0.3 TRUE FALSE");
        submit(&mut c3, 100, 20, "physics");
        assert_eq!(started(&c3).get("physics"), Some(&7));
        let why = c3
            .view()
            .explain(&c3.jobs[&JobId(119)], &c3.connected(), Time::from_secs(0));
        // Explained against the running jobs: none run yet, so only the cycle's own
        // placements would say so; with seven running it is at its allocation.
        assert!(
            why.is_empty() || !why.iter().any(|w| w.contains("group")),
            "{why:?}"
        );
        for id in 100..107 {
            c3.start(id, 1, "all.q", &format!("n{}", (id - 100) / 2));
        }
        let why = c3
            .view()
            .explain(&c3.jobs[&JobId(119)], &c3.connected(), Time::from_secs(0));
        assert!(
            why.contains(
                &"cannot run because group \"physics\" is at its allocation of 7 slots".to_string()
            ),
            "{why:?}"
        );
    }

    #[test]
    fn verifying_a_job_of_a_group_without_demand_finds_its_queues() {
        // Chemistry asks for nothing: its allocation is 0 this cycle, which says
        // nothing of where a new job of it could ever run (`qsub -w v`).
        let mut c = cluster("physics 0.7 TRUE FALSE\nchemistry 0.3 FALSE FALSE");
        submit(&mut c, 100, 20, "physics");
        let mut j = job(1, "u1", &[], &[]);
        j.spec.account = "chemistry".into();
        assert_eq!(c.view().could_ever_run(&j), Ok(1));
    }

    #[test]
    fn jobs_in_no_group_run_in_the_root_last() {
        let mut c = cluster("physics 5 TRUE FALSE");
        submit(&mut c, 1, 20, "sge");
        submit(&mut c, 100, 3, "physics");
        let s = started(&c);
        // Physics asks 3 of its 5; the root keeps 5 and gets physics' 2 unused.
        assert_eq!((s.get("physics"), s.get("sge")), (Some(&3), Some(&7)));
        // The cycle hands its allocation out with its decisions (the master logs it).
        let d = c.view().schedule(Time::from_secs(0), &c.connected());
        let groups = d.groups.expect("an allocation");
        let root = groups.get(ROOT).unwrap();
        assert_eq!((root.quota, root.demand, root.allocation), (5.0, 20.0, 7.0));
        assert!(Cluster::new(&[])
            .view()
            .schedule(Time::from_secs(0), &HashSet::new())
            .groups
            .is_none());
    }

    /// The five hosts, the first of another architecture (a pool of 10 slots); each
    /// group submits `count` jobs, `arm` those that run on the first host only.
    fn one_arm_host(tree_text: &str, rounds: Option<&str>) -> Cluster {
        let mut c = Cluster::new(&[]);
        for n in 0..5 {
            let arch = if n == 0 { "lx-arm64" } else { "lx-amd64" };
            c.add_host(&format!("n{n}"), "", &[("arch", arch), ("num_proc", "2")]);
        }
        c.set_queue("all.q", "slots", "2");
        c.group_tree = tree(tree_text);
        if let Some(r) = rounds {
            set_sched(&mut c, "group_quota_rounds", r);
        }
        c
    }

    /// One attribute of the scheduler configuration.
    fn set_sched(c: &mut Cluster, key: &str, value: &str) {
        let mut conf = c
            .sched
            .take()
            .unwrap_or_else(gantry_common::schedconf::default_schedconf);
        for (k, v) in &mut conf.entries {
            if k == key {
                *v = value.to_string();
            }
        }
        c.sched = Some(conf);
    }

    fn submit_arm(c: &mut Cluster, first: u64, count: u64, account: &str) {
        for id in first..first + count {
            let mut j = job(id, "u1", &[("arch", "lx-arm64")], &[]);
            j.spec.account = account.to_string();
            c.put_job(j);
        }
    }

    #[test]
    fn rounds_hand_on_what_a_group_could_not_use() {
        // Physics and chemistry 0.5 each of 10: 5 and 5 in the first round. Physics'
        // jobs fit on the arm host only (2 slots): it uses 2 of its 5. The second round
        // takes physics' demand as 2: chemistry, asking 20, gets 10 - 2 = 8 and starts
        // 3 more. With one round (HTCondor's GROUP_QUOTA_MAX_ALLOCATION_ROUNDS 1) the
        // 3 slots stay idle this cycle.
        let tree_text = "physics 0.5 TRUE FALSE\nchemistry 0.5 TRUE FALSE";
        for (rounds, want) in [(None, 8), (Some("2"), 8), (Some("1"), 5)] {
            let mut c = one_arm_host(tree_text, rounds);
            submit_arm(&mut c, 1, 20, "physics");
            submit(&mut c, 100, 20, "chemistry");
            let d = c.view().schedule(Time::from_secs(0), &c.connected());
            let mut s: HashMap<String, usize> = HashMap::new();
            for x in &d.dispatches {
                *s.entry(c.jobs[&x.job_id].spec.account.clone()).or_insert(0) += 1;
            }
            assert_eq!(
                (s.get("physics"), s.get("chemistry")),
                (Some(&2), Some(&want)),
                "rounds {rounds:?}"
            );
            // The allocation handed out is the last round's.
            let groups = d.groups.expect("an allocation");
            let chemistry = groups.get("chemistry").unwrap();
            assert_eq!(chemistry.allocation, want as f64, "rounds {rounds:?}");
            // Every task at most once.
            let tasks: HashSet<(u64, u32)> = d
                .dispatches
                .iter()
                .map(|x| (x.job_id.get(), x.task_id.get()))
                .collect();
            assert_eq!(tasks.len(), d.dispatches.len());
        }
    }

    #[test]
    fn a_later_round_places_an_array_job_s_remaining_tasks_once() {
        // One array job per group: physics' 20 tasks fit on the arm host only.
        let mut c = one_arm_host("physics 0.5 TRUE FALSE\nchemistry 0.5 TRUE FALSE", None);
        let mut p = job(1, "u1", &[("arch", "lx-arm64")], &[]);
        p.spec.account = "physics".into();
        p.tasks = gantry_common::tasks::Tasks::array(1, 20, 1);
        c.put_job(p);
        let mut q = job(2, "u1", &[], &[]);
        q.spec.account = "chemistry".into();
        q.tasks = gantry_common::tasks::Tasks::array(1, 20, 1);
        c.put_job(q);
        let d = c.view().schedule(Time::from_secs(0), &c.connected());
        let chemistry: Vec<u32> = d
            .dispatches
            .iter()
            .filter(|x| x.job_id.get() == 2)
            .map(|x| x.task_id.get())
            .collect();
        assert_eq!(chemistry, (1..=8).collect::<Vec<u32>>());
    }

    #[test]
    fn autoregroup_groups_compete_again_in_the_root() {
        // Physics 0.3 of 10 refuses surplus; chemistry 0.7 asks for 2. Physics' 3 are
        // all it may have, the root has no quota of its own (the children take it all):
        // 5 slots stay idle. With autoregroup, physics' held-back jobs compete again in
        // the root, whose limit is the whole pool: physics takes the idle 5 too.
        for (autoregroup, want) in [("FALSE", 3), ("TRUE", 8)] {
            let mut c = cluster(&format!(
                "physics 0.3 FALSE {autoregroup}\nchemistry 0.7 TRUE FALSE"
            ));
            submit(&mut c, 1, 20, "physics");
            submit(&mut c, 100, 2, "chemistry");
            let s = started(&c);
            assert_eq!(
                (s.get("physics"), s.get("chemistry")),
                (Some(&want), Some(&2)),
                "autoregroup {autoregroup}"
            );
        }
    }

    #[test]
    fn group_sort_decides_who_is_served_first() {
        // Physics 0.6 (6 slots) and chemistry 0.4 (4) of 10, but two hosts are
        // disabled: 6 slots to be had. With the default `usage/quota` both are at 0 and
        // the earlier submission (chemistry's) goes first: chemistry 4, physics 2. With
        // `-quota` the larger quota goes first: physics takes all 6.
        for (sort, want) in [(None, (2, 4)), (Some("-quota"), (6, 0))] {
            let mut c = cluster("physics 0.6 TRUE FALSE\nchemistry 0.4 TRUE FALSE");
            for n in ["n3", "n4"] {
                c.disabled.insert(("all.q".into(), n.into()));
            }
            if let Some(sort) = sort {
                set_sched(&mut c, "group_sort", sort);
            }
            submit(&mut c, 1, 20, "chemistry");
            submit(&mut c, 100, 20, "physics");
            let s = started(&c);
            let got = (
                s.get("physics").copied().unwrap_or(0),
                s.get("chemistry").copied().unwrap_or(0),
            );
            assert_eq!(got, want, "group_sort {sort:?}");
        }
    }

    #[test]
    fn slot_weight_formula_weighs_jobs_and_pool() {
        // `slots*2`: the pool weighs 20; physics' static 6 is three jobs of weight 2,
        // the root keeps 14, seven jobs, and gets physics' unused nothing: 3 + 7 = 10.
        // By slots (the default) physics runs 6 and the root 4.
        for (weight, want) in [(None, (6, 4)), (Some("slots*2"), (3, 7))] {
            let mut c = cluster("physics 6 FALSE FALSE");
            if let Some(w) = weight {
                set_sched(&mut c, "group_slot_weight", w);
            }
            submit(&mut c, 1, 20, "physics");
            submit(&mut c, 100, 20, "sge");
            let s = started(&c);
            assert_eq!(
                (s["physics"], s["sge"]),
                want,
                "group_slot_weight {weight:?}"
            );
            let d = c.view().schedule(Time::from_secs(0), &c.connected());
            let groups = d.groups.unwrap();
            let want_pool = if weight.is_some() { 20.0 } else { 10.0 };
            assert_eq!(groups.pool, want_pool);
        }
        // Fractions stay fractions: physics 0.33 of 20 weighs 6.6, three jobs (6); a
        // fourth would take it to 8. The second round finds it used 6 of its 6.6, all
        // it could, and allocates it that.
        let mut c = cluster("physics 0.33 FALSE FALSE");
        set_sched(&mut c, "group_slot_weight", "slots*2");
        submit(&mut c, 1, 20, "physics");
        assert_eq!(started(&c)["physics"], 3);
        let d = c.view().schedule(Time::from_secs(0), &c.connected());
        let physics = d.groups.unwrap().get("physics").unwrap().clone();
        assert!((physics.quota - 6.6).abs() < 1e-9, "{physics:?}");
        assert_eq!(physics.allocation, 6.0);
    }

    #[test]
    fn advance_reservations_count_in_their_group_while_their_window_is_open() {
        // Chemistry holds four one-slot reservations (`qrsub -A chemistry`) open now:
        // its usage is 4 of its 5. Of the 6 slots left, physics (0 of 5, the more
        // starved) gets 5 and chemistry 1, though chemistry's jobs were submitted
        // first. A job inside a reservation counts as the reservation does, not again.
        use gantry_proto::{AdvanceReservation, ArSpec, ArState};
        // Before the window opens the reservations count in no group: chemistry, its
        // jobs first, takes its 5 of the 6 slots its jobs (of no known run time) can
        // have beside the reservations, physics 1.
        for (open, want) in [(true, (5, 1)), (false, (1, 5))] {
            let mut c = cluster("physics 0.5 TRUE FALSE\nchemistry 0.5 TRUE FALSE");
            let start = if open { 0 } else { 600 };
            for id in 1..=4 {
                let mut ar = AdvanceReservation {
                    id: ArId(id),
                    spec: ArSpec {
                        account: "chemistry".into(),
                        submit_host: "head".into(),
                        ..ArSpec::default()
                    },
                    owner: "u1".into(),
                    group: "u1".into(),
                    submission_time: 0,
                    start,
                    end: start + 3600,
                    granted: Vec::new(),
                    granted_pe: None,
                    state: if open {
                        ArState::Running
                    } else {
                        ArState::Waiting
                    },
                    errors: Vec::new(),
                };
                let granted = c
                    .view()
                    .reserve(&ar, &[], &c.connected(), Time::from_secs(0))
                    .unwrap();
                ar.granted = granted.grants;
                c.ars.insert(ArId(id), ar);
            }
            let mut inside = job(50, "u1", &[], &[]);
            inside.spec.account = "chemistry".into();
            inside.spec.ar = Some(ArId(1));
            c.put_job(inside);
            submit(&mut c, 1, 20, "chemistry");
            submit(&mut c, 100, 20, "physics");
            let d = c.view().schedule(Time::from_secs(0), &c.connected());
            let count = |g: &str| {
                d.dispatches
                    .iter()
                    .filter(|x| x.job_id.get() != 50 && c.jobs[&x.job_id].spec.account == g)
                    .count()
            };
            assert_eq!((count("physics"), count("chemistry")), want, "open {open}");
            let chemistry = d.groups.unwrap().get("chemistry").unwrap().clone();
            // What it holds once the cycle's starts are made: the reservations' 4 and
            // the one job started, or the 5 started.
            assert_eq!(chemistry.running, 5.0);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]

        /// A cycle's decisions (its rounds and autoregroup pass included) do not
        /// depend on the order the groups were declared in.
        #[test]
        fn a_cycle_does_not_depend_on_the_order_groups_were_declared_in(
            groups in random_tree(),
            jobs in proptest::collection::vec((0..9usize, 1..4u64), 1..8),
            autoregroup in proptest::collection::vec(any::<bool>(), 8),
        ) {
            let mut groups = groups;
            for (g, a) in groups.iter_mut().zip(&autoregroup) {
                g.autoregroup = *a;
            }
            let mut names: Vec<String> = groups.iter().map(|g| g.name.clone()).collect();
            names.push("sge".to_string());
            let build = |tree: Vec<GroupEntry>| {
                let mut c = cluster("");
                c.group_tree = tree;
                let mut id = 1;
                for &(g, n) in &jobs {
                    submit(&mut c, id, n * 3, &names[g % names.len()]);
                    id += n * 3;
                }
                c
            };
            let a = build(groups.clone());
            let mut reversed = groups.clone();
            reversed.reverse();
            let b = build(reversed);
            let da = a.view().schedule(Time::from_secs(0), &a.connected());
            let db = b.view().schedule(Time::from_secs(0), &b.connected());
            let ids = |d: &crate::Decisions| {
                d.dispatches.iter().map(|x| (x.job_id.get(), x.task_id.get())).collect::<Vec<_>>()
            };
            prop_assert_eq!(ids(&da), ids(&db));
            prop_assert_eq!(&da.groups, &db.groups);
            // Never more than the cluster's ten slots.
            prop_assert!(da.dispatches.len() <= 10);
        }
    }
}
