//! The calculation against what SGE 8.1.9 printed for the same cell
//! (`tests/fixtures/sge/fairshare/`), against hand computations of
//! `docs/dev/sge-priority-notes.md`, and its properties.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use proptest::prelude::*;

use gantry_common::project::Project;
use gantry_common::sharetree::parse_share_tree;
use gantry_common::usage::{Amounts, Usage, UsageBook, UsageOf};
use gantry_common::user::User;
use gantry_proto::{Config, JobId, TaskId};

use super::*;

fn users(shares: &[(&str, u32, u32)]) -> BTreeMap<String, User> {
    shares
        .iter()
        .map(|&(name, fshare, oticket)| {
            (
                name.to_string(),
                User {
                    fshare,
                    oticket,
                    ..User::new(name)
                },
            )
        })
        .collect()
}

fn job(id: u32, user: &'static str, submit: i64) -> PolicyJob<'static> {
    PolicyJob {
        id: JobId(u64::from(id)),
        submit_time: submit,
        posix_priority: 0,
        deadline: None,
        job_share: 0,
        override_tickets: 0,
        user,
        project: None,
        department: Some("defaultdepartment"),
        min_slots: 1,
        rrcontr: 1000.0,
        running: Vec::new(),
        pending: vec![TaskId(1)],
    }
}

fn running(mut j: PolicyJob<'static>) -> PolicyJob<'static> {
    j.running = std::mem::take(&mut j.pending);
    j
}

/// The scheduler configuration of a fresh cell with these attributes changed.
fn conf(changes: &[(&str, &str)]) -> PolicyConf {
    let mut c: Config = gantry_common::schedconf::default_schedconf();
    for (k, v) in changes {
        match c.entries.iter_mut().find(|(key, _)| key == k) {
            Some(e) => e.1 = v.to_string(),
            None => panic!("no attribute {k}"),
        }
    }
    PolicyConf::from_config(Some(&c))
}

struct Cell {
    users: BTreeMap<String, User>,
    projects: BTreeMap<String, Project>,
    departments: BTreeMap<String, (u32, u32)>,
    tree: Option<gantry_common::sharetree::ShareNode>,
    usage: UsageBook,
}

impl Cell {
    fn new(users: BTreeMap<String, User>) -> Cell {
        Cell {
            users,
            projects: BTreeMap::new(),
            departments: BTreeMap::from([("defaultdepartment".to_string(), (0, 0))]),
            tree: None,
            usage: UsageBook::default(),
        }
    }

    fn objects(&self) -> PolicyObjects<'_> {
        PolicyObjects {
            users: &self.users,
            projects: &self.projects,
            departments: &self.departments,
            share_tree: self.tree.as_ref(),
            usage: &self.usage,
        }
    }
}

/// What `qstat -ext`/`-pri` print of a job's first task: prior, ntckts, tckts, ftckt,
/// stckt, share.
fn shown(p: &Priorities, id: u32) -> (String, String, i64, i64, i64, String) {
    let jp = &p.jobs[&JobId(u64::from(id))];
    let t = jp.first().unwrap();
    (
        format!("{:7.5}", t.prio),
        format!("{:7.5}", t.ntckts),
        t.total() as i64,
        t.ftckt as i64,
        t.stckt as i64,
        format!("{:<5.2}", t.share),
    )
}

const T0: i64 = 1_795_843_994;

/// The cell of the recorded transcripts: users with fshare 10/30/60, the share tree
/// `inputs/tree_b.stree` (user1 75, user2 25; user3 not in it).
fn recorded_cell() -> Cell {
    let mut cell = Cell::new(users(&[
        ("user1", 10, 0),
        ("user2", 30, 0),
        ("user3", 60, 0),
    ]));
    cell.tree = Some(
        parse_share_tree(
            "id=0\nname=Root\ntype=0\nshares=1\nchildnodes=1,2\n\
id=1\nname=user1\ntype=0\nshares=75\nchildnodes=NONE\n\
id=2\nname=user2\ntype=0\nshares=25\nchildnodes=NONE\n",
        )
        .unwrap(),
    );
    cell
}

/// The jobs of `02_functional_priority.txt` and `03_sharetree_priority.txt`: 2 and 3
/// (user1), 4 and 5 (user2), 6 running and 7 (user3); 3 and 5 with `-p -100`, 6 with a
/// deadline.
fn recorded_jobs() -> Vec<PolicyJob<'static>> {
    let mut jobs = vec![
        job(2, "user1", T0 - 1),
        job(3, "user1", T0),
        job(4, "user2", T0),
        job(5, "user2", T0),
        running(job(6, "user3", T0)),
        job(7, "user3", T0),
    ];
    jobs[1].posix_priority = -100;
    jobs[3].posix_priority = -100;
    jobs[4].deadline = Some(T0 + 7166);
    jobs
}

/// The functional policy of `02_functional_priority.txt`: fshare 10/30/60,
/// `weight_tickets_functional 10000`; user3's job 6 runs, jobs 2 and 3 (user1), 4 and 5
/// (user2) and 7 (user3) pend; 3 and 5 with `-p -100`; 6 with a deadline.
#[test]
fn functional_tickets_are_those_sge_gave() {
    let c = conf(&[("weight_tickets_functional", "10000")]);
    // The cell's share tree gives nothing without share-tree tickets.
    let cell = recorded_cell();
    let jobs = recorded_jobs();
    let now = T0 + 7;
    let p = priorities(&c, &jobs, &cell.objects(), now, 0);
    let s = |s: &str| s.to_string();
    assert_eq!(
        shown(&p, 6),
        (s("1.00000"), s("1.00000"), 10000, 10000, 0, s("1.00 "))
    );
    assert_eq!(
        shown(&p, 4),
        (s("0.04167"), s("0.08333"), 833, 833, 0, s("0.34 "))
    );
    assert_eq!(
        shown(&p, 7),
        (s("0.04167"), s("0.08333"), 833, 833, 0, s("0.34 "))
    );
    assert_eq!(
        shown(&p, 5),
        (s("0.02083"), s("0.04167"), 416, 416, 0, s("0.17 "))
    );
    assert_eq!(
        shown(&p, 2),
        (s("0.01278"), s("0.02500"), 250, 250, 0, s("0.10 "))
    );
    assert_eq!(
        shown(&p, 3),
        (s("0.00625"), s("0.01250"), 125, 125, 0, s("0.05 "))
    );
    let j = |id: u32| &p.jobs[&JobId(u64::from(id))];
    assert_eq!(format!("{:7.5}", j(3).npprior), "0.45117");
    assert_eq!(format!("{:7.5}", j(2).urgency.nurg), "0.00055");
    assert_eq!(format!("{:7.5}", j(6).urgency.nurg), "1.00000");
    assert_eq!(format!("{:8.0}", j(6).urgency.dlcontr), "     503");
    assert_eq!(format!("{:8.0}", j(4).urgency.urg), "    1002");
}

/// The share tree of `03_sharetree_priority.txt` (user1 75, user2 25, no usage yet;
/// user3 not in the tree): the same jobs.
#[test]
fn share_tree_tickets_without_usage_are_those_sge_gave() {
    let c = conf(&[("weight_tickets_share", "10000"), ("halftime", "1")]);
    let cell = recorded_cell();
    let jobs = recorded_jobs();
    let p = priorities(&c, &jobs, &cell.objects(), T0 + 14, 0);
    let s = |s: &str| s.to_string();
    assert_eq!(
        shown(&p, 6),
        (s("0.50000"), s("0.00000"), 0, 0, 0, s("0.00 "))
    );
    assert_eq!(
        shown(&p, 2),
        (s("0.50028"), s("1.00000"), 7500, 0, 7500, s("0.50 "))
    );
    assert_eq!(
        shown(&p, 3),
        (s("0.25000"), s("0.50000"), 3750, 0, 3750, s("0.25 "))
    );
    assert_eq!(
        shown(&p, 4),
        (s("0.16667"), s("0.33333"), 2500, 0, 2500, s("0.17 "))
    );
    assert_eq!(
        shown(&p, 5),
        (s("0.08333"), s("0.16667"), 1250, 0, 1250, s("0.08 "))
    );
    assert_eq!(
        shown(&p, 7),
        (s("0.00000"), s("0.00000"), 0, 0, 0, s("0.00 "))
    );
}

/// `04_sharetree_usage.txt`: user1 has used 62.93 CPU seconds (decayed) and runs job
/// 10; 11 (user1), 12 and 13 (user2), 14 (user3) pend.
#[test]
fn share_tree_tickets_with_usage_are_those_sge_gave() {
    let c = conf(&[("weight_tickets_share", "10000"), ("halftime", "1")]);
    let mut cell = recorded_cell();
    let now = T0 + 150;
    cell.usage.records.insert(
        UsageOf::User("user1".into()),
        Usage {
            decayed: Amounts::new(62.925604, 0.098510, 0.014685),
            at: now,
            long_term: Amounts::new(63.292361, 0.099065, 0.014768),
        },
    );
    let jobs = vec![
        running(job(10, "user1", T0)),
        job(11, "user1", T0),
        job(12, "user2", T0),
        job(13, "user2", T0),
        job(14, "user3", T0),
    ];
    let p = priorities(&c, &jobs, &cell.objects(), now, 0);
    let s = |s: &str| s.to_string();
    assert_eq!(
        shown(&p, 10),
        (s("0.75000"), s("1.00000"), 10000, 0, 10000, s("1.00 "))
    );
    assert_eq!(
        shown(&p, 12),
        (s("0.73274"), s("0.96548"), 9654, 0, 9654, s("0.66 "))
    );
    assert_eq!(
        shown(&p, 13),
        (s("0.49137"), s("0.48274"), 4827, 0, 4827, s("0.33 "))
    );
    assert_eq!(
        shown(&p, 11),
        (s("0.25863"), s("0.01726"), 172, 0, 172, s("0.01 "))
    );
    assert_eq!(
        shown(&p, 14),
        (s("0.25000"), s("0.00000"), 0, 0, 0, s("0.00 "))
    );
}

/// Hand computations of `docs/dev/sge-priority-notes.md` section 9.2: a deeper tree,
/// compensation and `default` leaves.
#[test]
fn share_tree_targets_follow_sges_rules() {
    let c = conf(&[
        ("weight_tickets_share", "10000"),
        ("compensation_factor", "2.000000"),
    ]);
    let mut cell = Cell::new(users(&[
        ("a", 0, 0),
        ("b", 0, 0),
        ("u1", 0, 0),
        ("u2", 0, 0),
        ("u3", 0, 0),
    ]));
    // Compensation: B used 200, A nothing; B is above twice its long-term target.
    cell.tree = Some(
        parse_share_tree(
            "id=0\nname=Root\ntype=0\nshares=1\nchildnodes=1,2\n\
id=1\nname=a\ntype=0\nshares=75\nchildnodes=NONE\n\
id=2\nname=b\ntype=0\nshares=25\nchildnodes=NONE\n",
        )
        .unwrap(),
    );
    cell.usage.records.insert(
        UsageOf::User("a".into()),
        Usage {
            decayed: Amounts::new(6000.0, 0.0, 0.0),
            at: T0,
            long_term: Amounts::default(),
        },
    );
    cell.usage.records.insert(
        UsageOf::User("b".into()),
        Usage {
            decayed: Amounts::new(200.0, 0.0, 0.0),
            at: T0,
            long_term: Amounts::default(),
        },
    );
    let jobs = vec![job(1, "a", T0), job(2, "b", T0)];
    let p = priorities(&c, &jobs, &cell.objects(), T0, 0);
    let st = |p: &Priorities, id: u32| p.jobs[&JobId(u64::from(id))].pending.unwrap().stckt;
    assert!((st(&p, 1) - 3157.9).abs() < 1.0, "{}", st(&p, 1));
    assert!((st(&p, 2) - 6842.1).abs() < 1.0, "{}", st(&p, 2));

    // A two-level tree without usage: G1 (60) {u1 50, u2 50}, G2 (40) {u3}; u1 has two
    // jobs, u2 and u3 one: the level below the root divides each group's target.
    cell.usage = UsageBook::default();
    cell.tree = Some(
        parse_share_tree(
            "id=0\nname=Root\ntype=0\nshares=1\nchildnodes=1,4\n\
id=1\nname=G1\ntype=0\nshares=60\nchildnodes=2,3\n\
id=2\nname=u1\ntype=0\nshares=50\nchildnodes=NONE\n\
id=3\nname=u2\ntype=0\nshares=50\nchildnodes=NONE\n\
id=4\nname=G2\ntype=0\nshares=40\nchildnodes=5\n\
id=5\nname=u3\ntype=0\nshares=1\nchildnodes=NONE\n",
        )
        .unwrap(),
    );
    let jobs = vec![
        job(1, "u1", T0),
        job(2, "u1", T0),
        job(3, "u2", T0),
        job(4, "u3", T0),
    ];
    let p = priorities(&c, &jobs, &cell.objects(), T0, 0);
    let got: Vec<i64> = (1..=4).map(|i| st(&p, i).round() as i64).collect();
    assert_eq!(got, [6000, 2000, 3000, 4000]);

    // Each user a `default` leaf stands for gets its shares whole.
    cell.tree = Some(
        parse_share_tree(
            "id=0\nname=Root\ntype=0\nshares=1\nchildnodes=1,2\n\
id=1\nname=a\ntype=0\nshares=50\nchildnodes=NONE\n\
id=2\nname=default\ntype=0\nshares=25\nchildnodes=NONE\n",
        )
        .unwrap(),
    );
    let jobs = vec![
        job(1, "a", T0),
        job(2, "u1", T0),
        job(3, "u2", T0),
        job(4, "nobody", T0),
    ];
    let p = priorities(&c, &jobs, &cell.objects(), T0, 0);
    let got: Vec<i64> = (1..=4).map(|i| st(&p, i).round() as i64).collect();
    assert_eq!(
        got,
        [5000, 2500, 2500, 0],
        "a user without an object has no node"
    );
}

/// Override tickets (notes 4.3): shared among an object's jobs, the k-th pending job
/// of a user getting `oticket / (running + k + 1)`; not shared, each gets them whole.
#[test]
fn override_tickets_are_shared_as_sge_shares_them() {
    let cell = Cell::new(users(&[("a", 0, 300), ("b", 0, 0)]));
    let mut jobs = vec![
        running(job(1, "a", T0)),
        job(2, "a", T0),
        job(3, "a", T0),
        job(4, "b", T0),
    ];
    jobs[3].override_tickets = 50;
    let ot = |p: &Priorities, id: u32| p.jobs[&JobId(u64::from(id))].first().unwrap().otckt;
    let p = priorities(&conf(&[]), &jobs, &cell.objects(), T0, 0);
    assert_eq!(
        [ot(&p, 1), ot(&p, 2), ot(&p, 3), ot(&p, 4)],
        [300.0, 150.0, 100.0, 50.0]
    );
    let p = priorities(
        &conf(&[("share_override_tickets", "FALSE")]),
        &jobs,
        &cell.objects(),
        T0,
        0,
    );
    assert_eq!(
        [ot(&p, 1), ot(&p, 2), ot(&p, 3), ot(&p, 4)],
        [300.0, 300.0, 300.0, 50.0]
    );
}

/// Urgency (notes section 3): slots times their urgency, waiting time, deadline.
#[test]
fn urgency_adds_resources_waiting_and_deadline() {
    let c = conf(&[]);
    let mut j = job(1, "a", T0);
    j.rrcontr = 4000.0;
    j.deadline = Some(T0 + 100);
    let u = urgency(&c, &j, T0 + 10);
    assert_eq!(u.rrcontr, 4000.0);
    assert!((u.wtcontr - 2.78).abs() < 1e-9);
    assert!((u.dlcontr - 3_600_000.0 / 90.0).abs() < 1e-6);
    // Past the deadline it stays at weight_deadline.
    assert_eq!(urgency(&c, &j, T0 + 500).dlcontr, 3_600_000.0);
    assert_eq!(normalize(5.0, 5.0, 5.0), 0.5);
    assert_eq!(normalize(3.0, 1.0, 5.0), 0.5);
}

#[test]
fn policy_hierarchy_lists_every_policy() {
    use Policy::*;
    assert_eq!(
        conf::hierarchy("OFS"),
        [(Override, true), (Functional, true), (Share, true)]
    );
    assert_eq!(
        conf::hierarchy("F"),
        [(Functional, true), (Override, false), (Share, false)]
    );
    assert_eq!(
        conf::hierarchy("NONE"),
        [(Override, false), (Functional, false), (Share, false)]
    );
}

proptest! {
    /// Tickets are never negative, the running jobs' functional tickets add up to
    /// `weight_tickets_functional`, and the result does not depend on the order the
    /// jobs are listed in.
    #[test]
    fn tickets_are_never_negative_and_do_not_depend_on_listing_order(
        specs in proptest::collection::vec((0usize..4, any::<bool>(), -3i32..3, 0u32..3), 1..12),
        fshares in proptest::collection::vec(0u32..100, 4),
        otickets in proptest::collection::vec(0u32..50, 4),
        with_tree in any::<bool>(),
    ) {
        let names = ["u0", "u1", "u2", "u3"];
        let table: Vec<(&str, u32, u32)> = (0..4).map(|i| (names[i], fshares[i], otickets[i])).collect();
        let mut cell = Cell::new(users(&table));
        if with_tree {
            cell.tree = Some(parse_share_tree(
                "id=0\nname=Root\ntype=0\nshares=1\nchildnodes=1,2\n\
id=1\nname=G\ntype=0\nshares=3\nchildnodes=3,4\n\
id=2\nname=u2\ntype=0\nshares=1\nchildnodes=NONE\n\
id=3\nname=u0\ntype=0\nshares=2\nchildnodes=NONE\n\
id=4\nname=default\ntype=0\nshares=1\nchildnodes=NONE\n").unwrap());
        }
        let c = conf(&[("weight_tickets_functional", "1000"), ("weight_tickets_share", "1000")]);
        let jobs: Vec<PolicyJob> = specs.iter().enumerate().map(|(i, &(u, run, p, js))| {
            let mut j = job(i as u32 + 1, names[u], T0 + i as i64);
            j.posix_priority = p * 100;
            j.job_share = js;
            if run { running(j) } else { j }
        }).collect();
        let a = priorities(&c, &jobs, &cell.objects(), T0 + 100, 4);
        for jp in a.jobs.values() {
            for t in jp.running.iter().map(|(_, t)| t).chain(jp.pending.iter()) {
                prop_assert!(t.otckt >= 0.0 && t.ftckt >= 0.0 && t.stckt >= 0.0);
                prop_assert!(t.prio >= 0.0);
            }
        }
        let running_ft: f64 = jobs.iter().filter(|j| !j.running.is_empty())
            .map(|j| a.jobs[&j.id].first().unwrap().ftckt).sum();
        let any_share = jobs.iter().any(|j| !j.running.is_empty()
            && (cell.users[j.user].fshare > 0 || j.job_share > 0));
        if any_share {
            prop_assert!((running_ft - 1000.0).abs() < 1e-6, "{}", running_ft);
        }
        let mut reversed = jobs.clone();
        reversed.reverse();
        let b = priorities(&c, &reversed, &cell.objects(), T0 + 100, 4);
        // The same numbers (up to the order floating point sums were taken in).
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(1.0);
        prop_assert_eq!(a.jobs.len(), b.jobs.len());
        for (id, x) in &a.jobs {
            let y = &b.jobs[id];
            prop_assert!(close(x.urgency.nurg, y.urgency.nurg));
            for (t, tx) in x.running.iter().map(|(t, x)| (Some(*t), x)).chain(x.pending.iter().map(|p| (None, p))) {
                let ty = match t { Some(t) => y.task(t).unwrap(), None => y.pending.unwrap() };
                let ty = &ty;
                for (u, v) in [(tx.otckt, ty.otckt), (tx.ftckt, ty.ftckt), (tx.stckt, ty.stckt), (tx.share, ty.share), (tx.prio, ty.prio)] {
                    prop_assert!(close(u, v), "job {} task {:?}: {} vs {}", id, t, u, v);
                }
            }
        }
    }
}

/// `06_halflife_decay_list.txt`: `halflife_decay_list cpu=1` decays user1's CPU usage
/// with a one-minute half-life; SGE's `sge_share_mon` showed 4.912302, then 31 s later
/// 2.668081, 30 s after that 1.477965, and `qstat -ext` the tickets of user1's job 3
/// and user2's job 4 each time. Gantry, given only the first figure, decays it to the
/// others (within 0.01 %) and gives the same tickets and `prior` (SGE's scheduling
/// run and the `sge_share_mon` before it were up to a second apart: the first
/// tickets are those of the usage a second later).
#[test]
fn usage_decays_by_halflife_decay_list_as_sge_decayed_it() {
    let c = conf(&[
        ("weight_tickets_share", "10000"),
        ("halftime", "168"),
        ("halflife_decay_list", "cpu=1"),
    ]);
    let mut cell = recorded_cell();
    let t = T0 + 1000;
    cell.usage.records.insert(
        UsageOf::User("user1".into()),
        Usage {
            decayed: Amounts::new(4.912302, 0.0, 0.0),
            at: t,
            long_term: Amounts::new(9.417992, 0.0, 0.0),
        },
    );
    let jobs = vec![job(3, "user1", t - 30), job(4, "user2", t - 30)];
    // (seconds later, SGE's cpu, job 3's tickets, job 4's, their prior)
    let recorded = [
        (0, 4.912302, 3184, 6815, ("0.48357", "0.75000")),
        (31, 2.668081, 4574, 5425, ("0.67165", "0.75000")),
        (61, 1.477965, 6035, 3964, ("0.75000", "0.57844")),
    ];
    for (after, cpu, t3, t4, (p3, p4)) in recorded {
        let now = t + after;
        let decayed = cell
            .usage
            .decayed(&UsageOf::User("user1".into()), now, &c.decay)
            .cpu;
        assert!(
            (decayed - cpu).abs() < 1e-4 * cpu,
            "{after} s: {decayed}, SGE {cpu}"
        );
        let run = |at: i64| {
            let p = priorities(&c, &jobs, &cell.objects(), at, 0);
            (shown(&p, 3), shown(&p, 4))
        };
        let (a, b) = [run(now), run(now + 1)]
            .into_iter()
            .find(|(a, b)| (a.2 - t3).abs() <= 1 && (b.2 - t4).abs() <= 1)
            .unwrap_or_else(|| panic!("{after} s: {:?} {:?}", run(now), run(now + 1)));
        assert_eq!((a.0.as_str(), b.0.as_str()), (p3, p4), "{after} s");
    }
}
