//! The synthetic cluster the scheduler benchmarks share: 1,000 hosts x 2 queues, every
//! host and queue with 20 complex values of mixed types (consumables among them), every
//! host with the 25 load values an execd reports, 10,000 pending jobs in 100 categories;
//! and 100 resource quota sets of 10 rules each to add to it.

use gantry_master::state::{Object, Op};
use gantry_master::synthetic::{add_host, cluster, job, set_queue, submit};

pub const HOSTS: usize = 1000;
pub const JOBS: u64 = 10_000;
const CATEGORIES: u64 = 100;

/// 20 user-defined complex attributes: 5 INT consumables, 5 MEMORY thresholds, 5 BOOL
/// flags, 5 STRING labels.
fn complexes() -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..5 {
        out.push(format!("lic{i} INT <= YES YES 0"));
        out.push(format!("scratch{i} MEMORY <= YES NO 0"));
        out.push(format!("feature{i} BOOL == YES NO 0"));
        out.push(format!("label{i} STRING == YES NO NONE"));
    }
    out
}

fn host_values(h: usize) -> String {
    let mut v = Vec::new();
    for i in 0..5 {
        v.push(format!("lic{i}={}", 2 + (h + i) % 6));
        v.push(format!("scratch{i}={}G", 10 + (h * 7 + i) % 90));
        v.push(format!("feature{i}={}", !(h + i).is_multiple_of(3)));
        v.push(format!("label{i}=rack{}", (h / 40 + i) % 25));
    }
    v.join(",")
}

fn loads(h: usize) -> Vec<(String, String)> {
    let np = (h % 17) as f64 / 20.0;
    vec![
        ("arch".into(), "lx-amd64".into()),
        ("num_proc".into(), "16".into()),
        ("load_avg".into(), format!("{:.6}", np * 16.0)),
        ("load_short".into(), format!("{:.6}", np * 16.0)),
        ("load_medium".into(), format!("{:.6}", np * 16.0)),
        ("load_long".into(), format!("{:.6}", np * 16.0)),
        ("np_load_avg".into(), format!("{np:.6}")),
        ("np_load_short".into(), format!("{np:.6}")),
        ("np_load_medium".into(), format!("{np:.6}")),
        ("np_load_long".into(), format!("{np:.6}")),
        ("mem_free".into(), format!("{}G", 32 + h % 200)),
        ("mem_total".into(), "256G".into()),
        ("mem_used".into(), "10G".into()),
        ("swap_free".into(), "0".into()),
        ("swap_total".into(), "0".into()),
        ("swap_used".into(), "0".into()),
        ("virtual_free".into(), format!("{}G", 32 + h % 200)),
        ("virtual_total".into(), "256G".into()),
        ("virtual_used".into(), "10G".into()),
        ("cpu".into(), "12.000000".into()),
        ("m_socket".into(), "2".into()),
        ("m_core".into(), "16".into()),
        ("m_thread".into(), "16".into()),
        ("m_topology".into(), "SCCCCCCCCSCCCCCCCC".into()),
        ("m_topology_inuse".into(), "SCCCCCCCCSCCCCCCCC".into()),
    ]
}

/// The requests of category `c`: a mix of consumable, threshold, flag, label and load
/// requests, so categories differ in what they match.
fn requests(c: u64) -> Vec<(String, String)> {
    let i = c % 5;
    let mut r = vec![
        (format!("lic{i}"), "1".to_string()),
        (format!("scratch{i}"), format!("{}G", 5 + c % 50)),
    ];
    if c.is_multiple_of(2) {
        r.push((format!("feature{i}"), "true".into()));
    }
    if c.is_multiple_of(3) {
        r.push((format!("label{i}"), format!("rack{}", c % 25)));
    }
    if c.is_multiple_of(4) {
        r.push(("mem_free".into(), format!("{}G", 16 + c % 64)));
    }
    r
}

pub fn build() -> gantry_master::state::ClusterState {
    let extra = complexes();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let mut s = cluster(&extra);
    for h in 0..HOSTS {
        let l = loads(h);
        let l: Vec<(&str, &str)> = l.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        add_host(&mut s, &format!("node{h:04}"), &host_values(h), &l);
    }
    // Two queues over every host, each with 20 complex values of its own.
    let queue_values: Vec<String> = (0..5)
        .flat_map(|i| {
            [
                format!("lic{i}=100"),
                format!("scratch{i}=500G"),
                format!("feature{i}=true"),
                format!("label{i}=any"),
            ]
        })
        .collect();
    let mut short = gantry_common::queue::new_queue("short.q", "@allhosts");
    if let Some(a) = short.attr_mut("seq_no") {
        a.default = "1".into();
    }
    s.apply(&Op::Put(Object::Queue(short)));
    for q in ["all.q", "short.q"] {
        set_queue(&mut s, q, "slots", "4");
        set_queue(&mut s, q, "load_thresholds", "NONE");
        // Labels are host properties: a queue value would hide them (section 3).
        let cv: Vec<String> = queue_values
            .iter()
            .filter(|v| !v.starts_with("label"))
            .cloned()
            .collect();
        set_queue(&mut s, q, "complex_values", &cv.join(","));
    }
    for id in 1..=JOBS {
        let r = requests(id % CATEGORIES);
        let r: Vec<(&str, &str)> = r.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        submit(&mut s, job(id, &format!("user{}", id % 10), &r, &[]));
    }
    s
}

/// `n` more jobs pending after those of [`build`], all of one category (its first),
/// as a bulk submission leaves them.
pub fn with_bulk(
    mut s: gantry_master::state::ClusterState,
    n: u64,
) -> gantry_master::state::ClusterState {
    let r = requests(0);
    let r: Vec<(&str, &str)> = r.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    for id in JOBS + 1..=JOBS + n {
        submit(&mut s, job(id, "user0", &r, &[]));
    }
    s
}

/// 100 resource quota sets of 10 rules each over the cluster of [`build`]: host groups
/// `@rack0..9` (100 hosts each), ACLs `team0..4` (two users each), and rules mixing
/// expanded and plain users, projects, PEs, queues, host groups and dynamic limits
/// (`slots=$num_proc*2` per host). Jobs have no project or PE, so some rules never take
/// them; the last rule of every set takes everyone.
pub fn with_quotas(
    mut s: gantry_master::state::ClusterState,
) -> gantry_master::state::ClusterState {
    for r in 0..10 {
        let hosts: Vec<String> = (0..HOSTS)
            .filter(|h| h % 10 == r)
            .map(|h| format!("node{h:04}"))
            .collect();
        s.apply(&Op::Put(Object::HostGroup(gantry_proto::HostGroup {
            name: format!("@rack{r}"),
            hostlist: hosts,
        })));
    }
    for t in 0..5 {
        s.apply(&Op::Put(Object::UserSet(gantry_proto::UserSet {
            name: format!("team{t}"),
            types: vec!["ACL".into()],
            fshare: 0,
            oticket: 0,
            entries: vec![format!("user{}", 2 * t), format!("user{}", 2 * t + 1)],
        })));
    }
    let mut text = String::new();
    for i in 0..100 {
        let (u, t, r) = (i % 10, i % 5, i % 10);
        text.push_str(&format!(
            "{{\n name set{i}\n enabled true\n\
             limit name w hosts {{@rack{r7}}} to slots=6\n\
             limit name u users {{user{u}}} hosts {{@rack{r}}} to slots=$num_proc*2\n\
             limit name team users @team{t} queues short.q to lic{t}=400\n\
             limit name proj projects {{p{p}}} to slots=500\n\
             limit name pe pes {{mpi}} to slots=64\n\
             limit name grp users {{@team{t2}}} hosts @rack{r3} to slots=300\n\
             limit name x users !user{u} hosts {{@rack{r5}}} to slots=$num_proc*4\n\
             limit name y queues all.q hosts {{*}} to lic{t1}=20\n\
             limit name z users {{*}} to slots=700\n\
             limit to slots=100000\n}}\n",
            p = i % 7,
            t1 = (i + 1) % 5,
            t2 = (i + 1) % 5,
            r3 = (r + 3) % 10,
            r5 = (r + 5) % 10,
            r7 = (r + 7) % 10,
        ));
    }
    let sets = gantry_common::rqs::parse_sets(&text).expect("the benchmark's quota sets");
    for (seq, set) in (1..).zip(sets) {
        gantry_common::rqs::check_set(&set, &s.input.complexes).expect("valid quota set");
        s.apply(&Op::Put(Object::QuotaSet { seq, set }));
    }
    // As the master does after every cycle: the next one starts with room for as many
    // quota counters as this one used.
    let hosts = gantry_master::synthetic::connected(&s);
    let counters = s
        .schedule(gantry_master::sched::Time::from_secs(0), &hosts)
        .quota_counters;
    std::sync::Arc::make_mut(&mut s.input.quota_book).note_cycle_counters(counters);
    s
}

/// The cluster of [`build`] with every job asking for a resource reservation (`-R y`)
/// and running at most `h_rt` (10 to 60 minutes), and `max_reservation` set.
pub fn with_reservations(
    mut s: gantry_master::state::ClusterState,
    max_reservation: u32,
) -> gantry_master::state::ClusterState {
    let ids: Vec<gantry_proto::JobId> = s.input.jobs.keys().copied().collect();
    for id in ids {
        let mut j = gantry_master::jobs::Job::clone(&s.input.jobs[&id]);
        j.spec.reserve = true;
        j.spec
            .hard_resources
            .push(("h_rt".into(), (600 + (id.get() % 6) * 600).to_string()));
        s.apply(&Op::Put(Object::Job(j)));
    }
    let mut conf = (*s.input.sched)
        .clone()
        .expect("the scheduler configuration");
    for (k, v) in &mut conf.entries {
        if k == "max_reservation" {
            *v = max_reservation.to_string();
        }
    }
    s.apply(&Op::Put(Object::Config(conf)));
    s
}

/// The jobs in `n` groups of hierarchical group quotas (job `id` in group `g{id % n}`,
/// along its category), each group of an equal proportion accepting surplus; with
/// `tree` false the same accounts without a tree (the baseline).
pub fn with_groups(
    mut s: gantry_master::state::ClusterState,
    n: u64,
    tree: bool,
) -> gantry_master::state::ClusterState {
    let ids: Vec<gantry_proto::JobId> = s.input.jobs.keys().copied().collect();
    for id in ids {
        let mut j = gantry_master::jobs::Job::clone(&s.input.jobs[&id]);
        j.spec.account = format!("g{}", id.get() % n);
        s.apply(&Op::Put(Object::Job(j)));
    }
    if tree {
        let groups = (0..n)
            .map(|g| gantry_proto::GroupEntry {
                name: format!("g{g}"),
                quota: gantry_proto::GroupQuota::Proportional(1.0 / n as f64),
                accept_surplus: true,
                autoregroup: false,
                user_lists: Vec::new(),
            })
            .collect();
        s.apply(&Op::Put(Object::GroupTree(groups)));
    }
    s
}

/// The cell of `benches/scale.sh`'s `array` experiment: `hosts` hosts of 4 processors
/// and 16G, `all.q` of 4 slots without load thresholds, one array of 10,000 tasks of one
/// user pending; with `quotas`, the script's two quota sets (100 rules over 25 host
/// groups, none binding, and `slots=$num_proc*2` per host).
pub fn scale_array(hosts: usize, quotas: bool) -> gantry_master::state::ClusterState {
    let mut s = cluster(&[]);
    let names: Vec<String> = (1..=hosts).map(|h| format!("sim{h:04}")).collect();
    for name in &names {
        add_host(
            &mut s,
            name,
            "",
            &[
                ("arch", "lx-amd64"),
                ("num_proc", "4"),
                ("load_avg", "0.000000"),
                ("np_load_avg", "0.000000"),
                ("mem_total", "16G"),
                ("mem_free", "16G"),
            ],
        );
    }
    set_queue(&mut s, "all.q", "slots", "4");
    set_queue(&mut s, "all.q", "load_thresholds", "NONE");
    let mut array = job(1, "gtbench", &[], &[]);
    array.tasks = gantry_common::tasks::Tasks::array(1, 10_000, 1);
    submit(&mut s, array);
    if !quotas {
        return s;
    }
    let per = hosts / 25;
    let mut text = String::from("{\n name simgroups\n enabled true\n");
    for k in 1..=25 {
        let g = format!("simg{k:02}");
        s.apply(&Op::Put(Object::HostGroup(gantry_proto::HostGroup {
            name: format!("@{g}"),
            hostlist: names[(k - 1) * per..k * per].to_vec(),
        })));
        text.push_str(&format!(
            " limit users {{user1}} hosts {{@{g}}} to slots=4\n\
             limit users {{user2,user3}} hosts @{g} to slots=8\n\
             limit users @testusers hosts {{@{g}}} to slots=4\n\
             limit users * hosts @{g} to slots={}\n",
            per * 4
        ));
    }
    text.push_str("}\n{\n name perhost\n enabled true\n limit hosts {*} to slots=$num_proc*2\n}\n");
    s.apply(&Op::Put(Object::UserSet(gantry_proto::UserSet {
        name: "testusers".into(),
        types: vec!["ACL".into()],
        fshare: 0,
        oticket: 0,
        entries: vec!["user1".into()],
    })));
    let sets = gantry_common::rqs::parse_sets(&text).expect("the scale quota sets");
    for (seq, set) in (1..).zip(sets) {
        gantry_common::rqs::check_set(&set, &s.input.complexes).expect("valid quota set");
        s.apply(&Op::Put(Object::QuotaSet { seq, set }));
    }
    s
}

/// The jobs owned by `users` users (job `id` of `user{id % users}`), each with a user
/// object; with `policies` the functional and share-tree policies on (10,000 tickets
/// each, every user's functional shares, the share tree of
/// [`gantry_sched::synthetic::share_tree_of`] and some usage of every
/// user), without them the same owners and objects under SGE's default configuration
/// (the baseline).
pub fn with_policies(
    mut s: gantry_master::state::ClusterState,
    users: u64,
    policies: bool,
) -> gantry_master::state::ClusterState {
    use gantry_common::usage::{Amounts, Usage, UsageOf};
    let ids: Vec<gantry_proto::JobId> = s.input.jobs.keys().copied().collect();
    for id in ids {
        let mut j = gantry_master::jobs::Job::clone(&s.input.jobs[&id]);
        j.owner.user = format!("user{}", id.get() % users);
        s.apply(&Op::Put(Object::Job(j)));
    }
    for u in 0..users {
        let mut user = gantry_common::user::User::new(&format!("user{u}"));
        user.fshare = 1 + (u % 13) as u32;
        s.apply(&Op::Put(Object::User(user)));
    }
    if policies {
        s.apply(&Op::Put(Object::ShareTree(Some(
            gantry_sched::synthetic::share_tree_of(users),
        ))));
        for u in 0..users {
            s.apply(&Op::Put(Object::Usage {
                of: UsageOf::User(format!("user{u}")),
                usage: Usage {
                    decayed: Amounts::new((u % 17) as f64 * 3600.0, 0.0, 0.0),
                    at: 0,
                    long_term: Amounts::default(),
                },
            }));
        }
        let mut conf = (*s.input.sched)
            .clone()
            .expect("the scheduler configuration");
        for (k, v) in &mut conf.entries {
            if k == "weight_tickets_share" || k == "weight_tickets_functional" {
                *v = "10000".into();
            }
        }
        s.apply(&Op::Put(Object::Config(conf)));
    }
    s
}
