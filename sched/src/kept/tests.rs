//! The kept snapshot against a fresh one: after any sequence of load reports,
//! configuration changes, submissions, starts, ends and the passing of time, a cycle on
//! the kept snapshot sees and decides what a cycle on a fresh snapshot does.
#![allow(clippy::unwrap_used)]

use gantry_proto::{AdvanceReservation, ArId, JobId, LoadValue};
use std::collections::HashSet;

use proptest::prelude::*;

use super::*;
use crate::synthetic::{job, Cluster};

const HOSTS: usize = 5;

fn host(n: usize) -> String {
    format!("node{n}")
}

fn load(np_load_avg: f64) -> Vec<(&'static str, String)> {
    with_mem_free(np_load_avg, 4)
}

/// The load values of a host with `np_load_avg` and `mem_free` (in G).
fn with_mem_free(np_load_avg: f64, mem_free: u8) -> Vec<(&'static str, String)> {
    vec![
        ("arch", "lx-amd64".into()),
        ("num_proc", "2".into()),
        ("np_load_avg", format!("{np_load_avg:.2}")),
        ("load_avg", format!("{:.2}", np_load_avg * 2.0)),
        ("mem_free", format!("{mem_free}G")),
    ]
}

/// Two queues over five hosts, a host consumable and a global one, load thresholds
/// that the load adjustments of recent starts can cross.
fn cluster() -> Cluster {
    let mut c = Cluster::new(&["lic INT <= YES YES 0", "scratch MEMORY <= YES YES 0"]);
    for n in 0..HOSTS {
        let l = load(0.1);
        let l: Vec<(&str, &str)> = l.iter().map(|(k, v)| (*k, v.as_str())).collect();
        c.add_host(&host(n), "lic=3,scratch=10G", &l);
    }
    c.set_queue("all.q", "slots", "2");
    c.set_queue("all.q", "load_thresholds", "np_load_avg=1.2");
    let mut short = gantry_common::queue::new_queue("short.q", "@allhosts");
    if let Some(a) = short.attr_mut("seq_no") {
        *a = gantry_common::queue::parse_attr("1").unwrap();
    }
    c.put_queue(short);
    c.set_queue("short.q", "slots", "1");
    for pe in gantry_common::pe::default_pes() {
        c.put_pe(pe);
    }
    let mut global =
        gantry_common::exechost::parse_exechost("hostname h0\ncomplex_values lic=8\n").unwrap();
    global.hostname = "global".into();
    c.global_host = Some(global);
    c
}

#[derive(Debug, Clone)]
enum Op {
    /// A host reports a new `np_load_avg` and `mem_free` (0-5 G, from the same number).
    Report(usize, u8),
    /// A host reports the same values again (a new report, equal content).
    Same(usize),
    /// A host's `complex_values` change (configuration).
    HostLicences(usize, u8),
    /// A queue's slots change (configuration).
    QueueSlots(u8),
    /// `queue_sort_method` switches (configuration).
    SortBySeqNo(bool),
    /// A queue instance is disabled or enabled again.
    Disable(usize, bool),
    /// A host's execd leaves or comes back.
    Connected(usize, bool),
    /// Jobs are submitted: licences, scratch in G, h_rt in seconds or none, mem_free
    /// in G or none, how many alike.
    Submit(u8, u8, Option<u16>, Option<u8>, u8),
    /// A job like [`Op::Submit`]'s that waits: held (`-h`), for a start time (`-a`,
    /// seconds from now) or for the newest job (`-hold_jid`).
    SubmitWaiting(u8, u8, Waits),
    /// The oldest held job is released (`qrls`).
    Release,
    /// A parallel job (`-pe mpi N`) with licences.
    SubmitParallel(u8, u8),
    /// The last cycle's decisions are committed.
    Commit,
    /// The oldest job ends.
    End,
    /// Time passes.
    Advance(u16),
    /// A quota set with a per-user limit of slots and a dynamic one per host (on: with
    /// the user limit given), or none. Its first rule holds one host (by the limit) to
    /// one slot: sets differ in which rules take which queue instance.
    Quota(Option<u8>),
}

#[derive(Debug, Clone)]
enum Waits {
    Held,
    StartAfter(u16),
    Newest,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..HOSTS, 0..30u8).prop_map(|(h, l)| Op::Report(h, l)),
        2 => (0..HOSTS).prop_map(Op::Same),
        1 => (0..HOSTS, 0..5u8).prop_map(|(h, l)| Op::HostLicences(h, l)),
        1 => (1..4u8).prop_map(Op::QueueSlots),
        1 => any::<bool>().prop_map(Op::SortBySeqNo),
        1 => (0..HOSTS * 2, any::<bool>()).prop_map(|(i, d)| Op::Disable(i, d)),
        1 => (0..HOSTS, any::<bool>()).prop_map(|(h, c)| Op::Connected(h, c)),
        3 => (0..3u8, 0..6u8, proptest::option::of(1..900u16))
            .prop_flat_map(|(l, s, t)| {
                (proptest::option::of(1..6u8), 1..4u8)
                    .prop_map(move |(m, n)| Op::Submit(l, s, t, m, n))
            }),
        2 => (0..3u8, 0..6u8, prop_oneof![
                Just(Waits::Held),
                (1..300u16).prop_map(Waits::StartAfter),
                Just(Waits::Newest),
            ])
            .prop_map(|(l, s, w)| Op::SubmitWaiting(l, s, w)),
        1 => Just(Op::Release),
        1 => (0..3u8, 2..6u8).prop_map(|(l, n)| Op::SubmitParallel(l, n)),
        3 => Just(Op::Commit),
        1 => Just(Op::End),
        2 => (0..400u16).prop_map(Op::Advance),
        1 => proptest::option::of(1..12u8).prop_map(Op::Quota),
    ]
}

/// What a cycle reads of a snapshot, in a form that does not depend on hash order.
fn seen(s: &Snapshot) -> String {
    let mut pe_used: Vec<_> = s.pe_used.iter().collect();
    pe_used.sort();
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        s.global, s.hosts, s.instances, s.order, s.calendar, pe_used, s.adjustments, s.now
    )
}

struct World {
    c: Cluster,
    image: Option<ClusterImage>,
    connected: HashSet<String>,
    now: Time,
    last: Vec<crate::cycle::Dispatch>,
    next_id: u64,
}

impl World {
    fn apply(&mut self, op: &Op) {
        let c = &mut self.c;
        match *op {
            Op::Report(h, l) => {
                let values = with_mem_free(l as f64 / 10.0, l % 6)
                    .into_iter()
                    .map(|(name, value)| LoadValue {
                        name: name.into(),
                        value,
                    })
                    .collect();
                let r = c.host_runtime(&host(h));
                r.load_values = values;
                r.last_heard = Some(self.now);
            }
            Op::Same(h) => {
                let r = c.host_runtime(&host(h));
                r.last_heard = Some(self.now);
            }
            Op::HostLicences(h, l) => {
                let e = c.exechosts.get_mut(&host(h)).unwrap();
                e.complex_values = vec![("lic".into(), l.to_string())];
            }
            Op::QueueSlots(n) => c.set_queue("all.q", "slots", &n.to_string()),
            Op::SortBySeqNo(seq) => {
                if let Some(conf) = c.sched.as_mut() {
                    let method = if seq { "seqno" } else { "load" };
                    for (k, v) in &mut conf.entries {
                        if k == "queue_sort_method" {
                            *v = method.into();
                        }
                    }
                }
            }
            Op::Disable(i, d) => {
                let q = if i % 2 == 0 { "all.q" } else { "short.q" };
                let key = (q.to_string(), host(i / 2));
                if d {
                    c.disabled.insert(key);
                } else {
                    c.disabled.remove(&key);
                }
            }
            Op::Connected(h, on) => {
                if on {
                    self.connected.insert(host(h));
                } else {
                    self.connected.remove(&host(h));
                }
            }
            Op::Submit(lic, scratch, h_rt, mem_free, alike) => {
                let (lic, scratch) = (lic.to_string(), format!("{scratch}G"));
                let h_rt = h_rt.map(|t| t.to_string());
                let mem_free = mem_free.map(|m| format!("{m}G"));
                let mut hard = vec![("lic", lic.as_str()), ("scratch", scratch.as_str())];
                if let Some(t) = h_rt.as_deref() {
                    hard.push(("h_rt", t));
                }
                if let Some(m) = mem_free.as_deref() {
                    hard.push(("mem_free", m));
                }
                for _ in 0..alike {
                    self.next_id += 1;
                    let mut j = job(self.next_id, "alice", &hard, &[]);
                    j.submit_time = self.now.secs();
                    c.put_job(j);
                }
            }
            Op::SubmitWaiting(lic, scratch, ref waits) => {
                let (lic, scratch) = (lic.to_string(), format!("{scratch}G"));
                let hard = [("lic", lic.as_str()), ("scratch", scratch.as_str())];
                let newest = c.jobs.keys().next_back().copied();
                self.next_id += 1;
                let mut j = job(self.next_id, "alice", &hard, &[]);
                j.submit_time = self.now.secs();
                match *waits {
                    Waits::Held => j.spec.hold = true,
                    Waits::StartAfter(s) => j.spec.start_after = Some(self.now.secs() + s as i64),
                    Waits::Newest => {
                        j.spec.hold_jids = newest.map(|id| id.to_string()).into_iter().collect()
                    }
                }
                c.put_job(j);
            }
            Op::SubmitParallel(lic, slots) => {
                let lic = lic.to_string();
                self.next_id += 1;
                let mut j = job(self.next_id, "alice", &[("lic", lic.as_str())], &[]);
                j.submit_time = self.now.secs();
                j.spec.pe = Some(("mpi".into(), slots.to_string()));
                c.put_job(j);
            }
            Op::Release => {
                if let Some(held) = c.jobs.values().find(|j| j.spec.hold) {
                    let mut j = (**held).clone();
                    j.spec.hold = false;
                    c.put_job(j);
                }
            }
            Op::Commit => commit_at(c, &std::mem::take(&mut self.last), self.now),
            Op::End => {
                if let Some(&id) = c.jobs.keys().next() {
                    c.remove_job(id.get());
                }
            }
            Op::Advance(s) => self.now = self.now + crate::time::Span::from_secs(s as i64),
            Op::Quota(limit) => {
                c.quota_sets.clear();
                if let Some(n) = limit {
                    // Odd: the per-host limit falls as the adjusted load rises (and
                    // rises again as the adjustment decays).
                    let per_host = if n % 2 == 1 {
                        "3-$np_load_avg*2"
                    } else {
                        "$num_proc"
                    };
                    let one = host(n as usize % HOSTS);
                    let text = format!(
                        "{{\n name limits\n enabled true\n limit hosts {one} to slots=1\n limit users {{*}} to slots={n}\n limit hosts {{*}} to slots={per_host}\n}}\n"
                    );
                    let mut sets = gantry_common::rqs::parse_sets(&text).unwrap();
                    c.put_quota_set(1, sets.remove(0));
                } else {
                    c.settle_quotas();
                }
            }
        }
    }
}

use gantry_common::job::{Job, TaskState};

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_kept_snapshot_decides_what_a_fresh_one_does(ops in proptest::collection::vec(op(), 1..40)) {
        let c = cluster();
        let connected = c.connected();
        let mut w = World { c, image: None, connected, now: Time::from_secs(0), last: Vec::new(), next_id: 0 };
        // One kept for snapshots, one for cycles (which keep their bookings between
        // cycles and settle on the last one's outcome).
        let (mut kept, mut cycles) = (KeptSnapshot::default(), KeptSnapshot::default());
        for op in &ops {
            w.apply(op);
            let image = w.c.image_after(w.image.as_ref());
            let fresh_snap = image.view().snapshot_at(&w.connected, w.now, true);
            let kept_snap = seen(kept.snapshot(&image, &w.connected, w.now));
            prop_assert_eq!(kept_snap, seen(&fresh_snap), "after {:?}", op);
            let fresh = image.view().schedule(w.now, &w.connected);
            let decided = cycles.schedule(&image, w.now, &w.connected);
            prop_assert_eq!(counted_aside(&decided), counted_aside(&fresh), "after {:?}", op);
            w.last = decided.dispatches;
            w.image = Some(image);
        }
    }
}

fn report(c: &mut Cluster, h: usize, np_load_avg: f64) {
    c.host_runtime(&host(h)).load_values = load(np_load_avg)
        .into_iter()
        .map(|(name, value)| LoadValue {
            name: name.into(),
            value,
        })
        .collect();
}

/// Decisions without the count of quota counters the cycle used (a hint sizing the
/// next cycle's table: a settled cycle checks fewer instances, and makes fewer per-host
/// counters), nor whether the cycle was quiet (only a kept snapshot's can be), nor how
/// many jobs and categories it looked at (a settled cycle skips the full ones).
fn counted_aside(d: &Decisions) -> Decisions {
    Decisions {
        quota_counters: 0,
        quiet: false,
        considered: 0,
        categories: 0,
        ..d.clone()
    }
}

/// (bases built whole, hosts built again)
fn built(kept: &KeptSnapshot) -> (u64, u64) {
    (kept.counters.rebuilt, kept.counters.hosts_refreshed)
}

#[test]
fn a_report_rebuilds_its_host_only_and_a_configuration_change_everything() {
    let mut c = cluster();
    c.put_job(job(1, "alice", &[], &[]));
    let connected = c.connected();
    let at = Time::from_secs(0);
    let mut kept = KeptSnapshot::default();
    let first = c.image_after(None);
    kept.schedule(&first, at, &connected);
    assert_eq!(built(&kept), (1, 0));

    // Nothing changed: nothing is built again.
    let same = c.image_after(Some(&first));
    kept.schedule(&same, at, &connected);
    assert_eq!(built(&kept), (1, 0));

    // Two hosts report: those two are built again.
    report(&mut c, 1, 0.5);
    report(&mut c, 3, 0.7);
    let reported = c.image_after(Some(&same));
    kept.schedule(&reported, at, &connected);
    assert_eq!(built(&kept), (1, 2));
    let snap = kept.snapshot(&reported, &connected, at);
    let np = snap.catalog.id("np_load_avg").unwrap();
    let seen_load = |s: &Snapshot, h: usize| s.hosts[h].layer.get(np).unwrap().load.clone();
    assert_eq!(
        seen_load(snap, 3),
        Some(gantry_common::value::Value::Num(0.7))
    );

    // A queue changes: the whole base is built again.
    c.set_queue("all.q", "slots", "3");
    let changed = c.image_after(Some(&reported));
    kept.schedule(&changed, at, &connected);
    assert_eq!(built(&kept), (2, 2));
}

/// A reservation request for the ledger test: `slots` (a parallel one for more than
/// one), licences, over `[start, start + len)`.
fn reservation(id: u64, start: i64, len: i64, slots: u8, lic: u8) -> AdvanceReservation {
    let mut spec = gantry_proto::ArSpec {
        account: "sge".into(),
        submit_host: "head".into(),
        ..gantry_proto::ArSpec::default()
    };
    if slots > 1 {
        spec.pe = Some(("smp".into(), slots.to_string()));
    }
    if lic > 0 {
        spec.resources = vec![("lic".into(), lic.to_string())];
    }
    AdvanceReservation {
        id: ArId(id),
        spec,
        owner: "alice".into(),
        group: "alice".into(),
        submission_time: 0,
        start,
        end: start + len,
        granted: Vec::new(),
        granted_pe: None,
        state: gantry_proto::ArState::Waiting,
        errors: Vec::new(),
    }
}

#[derive(Debug, Clone)]
enum Grant {
    /// Ask for a reservation `(offset from now, length, slots, licences)`; granted,
    /// keep it when `keep`.
    Ask(u16, u16, u8, u8, bool),
    /// Delete the n-th reservation.
    Delete(usize),
    /// A reservation's window opens (its state as the master's clock sets it).
    Open(usize),
}

fn grant_op() -> impl Strategy<Value = Grant> {
    prop_oneof![
        // A window from now meets the tasks running past their run time.
        4 => (prop_oneof![Just(0u16), 0..600u16], 1..900u16, 1..4u8, 0..3u8, any::<bool>())
            .prop_map(|(o, l, s, lic, keep)| Grant::Ask(o, l, s, lic, keep)),
        1 => (0..6usize).prop_map(Grant::Delete),
        1 => (0..6usize).prop_map(Grant::Open),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Reservations granted on a snapshot that keeps what runs and what is reserved
    /// booked between grants are granted exactly where a fresh snapshot grants them,
    /// whatever started, ended, changed or was reserved in between.
    #[test]
    fn kept_bookings_grant_what_a_fresh_snapshot_grants(
        ops in proptest::collection::vec((op(), proptest::option::of(grant_op())), 1..40)
    ) {
        let c = cluster();
        let connected = c.connected();
        let mut w = World { c, image: None, connected, now: Time::from_secs(0), last: Vec::new(), next_id: 0 };
        let mut granting = KeptSnapshot::default();
        let mut next_ar = 1;
        for (op, grant) in &ops {
            w.apply(op);
            let image = w.c.image_after(w.image.as_ref());
            w.last = image.view().schedule(w.now, &w.connected).dispatches;
            let now = w.now.secs();
            match grant {
                Some(Grant::Ask(offset, len, slots, lic, keep)) => {
                    let mut ar = reservation(next_ar, now + *offset as i64, *len as i64, *slots, *lic);
                    next_ar += 1;
                    let fresh = image.view().reserve(&ar, &[], &w.connected, w.now);
                    let kept = granting.reserve(&image, &w.connected, w.now, &ar, &[]);
                    prop_assert_eq!(&kept, &fresh, "after {:?}", op);
                    if let (Ok(g), true) = (kept, keep) {
                        ar.granted = g.grants;
                        ar.granted_pe = g.pe;
                        w.c.ars.insert(ar.id, ar);
                    }
                }
                Some(Grant::Delete(n)) => {
                    if let Some(&id) = w.c.ars.keys().nth(*n) {
                        w.c.ars.remove(&id);
                    }
                }
                Some(Grant::Open(n)) => {
                    if let Some(a) = w.c.ars.values_mut().nth(*n) {
                        a.state = gantry_common::ar::clock_state(a, now);
                    }
                }
                None => {
                    // A probe that keeps nothing: the same answer both ways.
                    let ar = reservation(0, now, 600, 2, 1);
                    let fresh = image.view().reserve(&ar, &[], &w.connected, w.now);
                    let kept = granting.reserve(&image, &w.connected, w.now, &ar, &[]);
                    prop_assert_eq!(&kept, &fresh, "after {:?}", op);
                }
            }
            w.image = Some(image);
        }
    }
}

#[test]
fn kept_bookings_book_only_what_changed() {
    let mut c = cluster();
    for id in 1..=4 {
        c.put_job(job(id, "alice", &[("h_rt", "600")], &[]));
    }
    let connected = c.connected();
    let at = Time::from_secs(0);
    let first = c.image_after(None);
    for d in first.view().schedule(at, &connected).dispatches {
        let j = c.jobs[&d.job_id].clone();
        let mut j = Job::clone(&j);
        j.tasks.insert(d.task_id, crate::synthetic::running(&d));
        c.put_job(j);
    }
    let mut granting = KeptSnapshot::default();
    let probe = reservation(9, 60, 600, 1, 0);
    let running = c.image_after(Some(&first));
    granting
        .reserve(&running, &connected, at, &probe, &[])
        .unwrap();
    assert_eq!(
        granting.ledger_counters(),
        Some(crate::LedgerCounters {
            booked: 4,
            released: 0
        })
    );
    // Nothing changed: nothing booked or released.
    let same = c.image_after(Some(&running));
    granting
        .reserve(&same, &connected, at, &probe, &[])
        .unwrap();
    assert_eq!(granting.ledger_counters().unwrap().booked, 4);
    // One ends, a host reports: one released, nothing booked, no ledger begun again.
    c.remove_job(2);
    report(&mut c, 1, 0.5);
    let ended = c.image_after(Some(&same));
    granting
        .reserve(&ended, &connected, at, &probe, &[])
        .unwrap();
    assert_eq!(
        granting.ledger_counters(),
        Some(crate::LedgerCounters {
            booked: 4,
            released: 1
        })
    );
    assert_eq!(granting.counters.ledgers_begun, 1);
    assert_eq!(granting.counters.hosts_refreshed, 1);
}

#[test]
fn a_task_past_its_run_time_stays_booked_until_just_after_now() {
    let mut c = Cluster::new(&[]);
    c.add_host("n1", "", &[("arch", "lx-amd64"), ("num_proc", "1")]);
    c.set_queue("all.q", "slots", "1");
    c.put_job(job(1, "alice", &[("h_rt", "100")], &[]));
    c.start(1, 1, "all.q", "n1");
    let connected = c.connected();
    let mut granting = KeptSnapshot::default();
    let mut image = c.image_after(None);
    // (now, window start): the task holds its slot until 100, then while it runs on.
    for (now, start, granted) in [
        (0, 50, false),
        (0, 100, true),
        (99, 100, true),
        (150, 150, false),
        (300, 300, false),
        (300, 301, true),
    ] {
        c.host_runtime("n1").last_heard = Some(Time::from_secs(now));
        image = c.image_after(Some(&image));
        let probe = reservation(9, start, 10, 1, 0);
        let at = Time::from_secs(now);
        let fresh = image.view().reserve(&probe, &[], &connected, at);
        let kept = granting.reserve(&image, &connected, at, &probe, &[]);
        assert_eq!(kept, fresh, "at {now} from {start}");
        assert_eq!(kept.is_ok(), granted, "at {now} from {start}");
    }
    // The job itself never changed: booked once, then again only once past its end.
    assert_eq!(granting.ledger_counters().unwrap().released, 2);
}

#[test]
fn a_full_cluster_settles_and_only_what_changed_is_looked_at_again() {
    let mut c = cluster();
    let connected = c.connected();
    let at = Time::from_secs(0);
    // 15 slots: 14 jobs alike, one asking for more memory than any host has free,
    // then 5 more alike.
    for id in 1..=14 {
        c.put_job(job(id, "alice", &[], &[]));
    }
    c.put_job(job(15, "bob", &[("mem_free", "5G")], &[]));
    for id in 16..=20 {
        c.put_job(job(id, "alice", &[], &[]));
    }
    let mut kept = KeptSnapshot::default();
    let mut image = c.image_after(None);
    let first = kept.schedule(&image, at, &connected);
    assert_eq!(first.dispatches.len(), 15);
    assert!(first.dispatches.iter().all(|d| d.job_id.get() != 15));
    assert_eq!(kept.counters.unsettled, Some(Unsettled::NoLastCycle));
    commit_at(&mut c, &first.dispatches, at);

    // Full: the next cycle looks at everything (the last one placed tasks), those
    // after it settle; none places anything.
    for n in 0..=2 {
        image = c.image_after(Some(&image));
        let decided = kept.schedule(&image, at, &connected);
        assert!(decided.dispatches.is_empty());
        assert_eq!(kept.counters.settled, n);
    }
    assert_eq!(kept.counters.unsettled, Some(Unsettled::Placed));

    // A job ends: the cycle looks at everything again; the next job in line, 17,
    // takes its place, not bob's (no memory).
    let mut ending = first.dispatches.iter().map(|d| d.job_id.get());
    c.remove_job(ending.next().unwrap());
    image = c.image_after(Some(&image));
    let decided = kept.schedule(&image, at, &connected);
    assert_eq!(kept.counters.unsettled, Some(Unsettled::Released));
    assert_eq!(decided, image.view().schedule(at, &connected));
    assert_eq!(decided.dispatches.len(), 1);
    assert_eq!(decided.dispatches[0].job_id, JobId(17));

    // Not committed: the next cycle does not settle either, and decides the same.
    let settled = kept.counters.settled;
    image = c.image_after(Some(&image));
    let again = kept.schedule(&image, at, &connected);
    assert_eq!(kept.counters.settled, settled);
    assert_eq!(again, decided);
    commit_at(&mut c, &again.dispatches, at);

    // Four more end: the last three alike start, then a slot stays free (bob's job
    // has no memory anywhere), and the cycle after settles.
    for next in [Some(18), Some(19), Some(20), None] {
        c.remove_job(ending.next().unwrap());
        image = c.image_after(Some(&image));
        let decided = kept.schedule(&image, at, &connected);
        assert_eq!(decided.dispatches.first().map(|d| d.job_id.get()), next);
        commit_at(&mut c, &decided.dispatches, at);
    }
    let settled = kept.counters.settled;
    image = c.image_after(Some(&image));
    assert!(kept.schedule(&image, at, &connected).dispatches.is_empty());
    assert_eq!(kept.counters.settled, settled + 1);

    // Every host reports more memory free: settled on the hosts that reported, bob's
    // job is placed.
    for h in 0..HOSTS {
        c.host_runtime(&host(h)).load_values = with_mem_free(0.1, 6)
            .into_iter()
            .map(|(name, value)| LoadValue {
                name: name.into(),
                value,
            })
            .collect();
    }
    image = c.image_after(Some(&image));
    let decided = kept.schedule(&image, at, &connected);
    assert_eq!(kept.counters.settled, settled + 2);
    assert_eq!(decided, image.view().schedule(at, &connected));
    assert_eq!(decided.dispatches.len(), 1);
    assert_eq!(decided.dispatches[0].job_id, JobId(15));
}

#[test]
fn a_submission_to_a_full_cluster_is_a_quiet_cycle_unless_it_may_find_room() {
    let mut c = cluster();
    let connected = c.connected();
    let at = Time::from_secs(0);
    // 15 slots, 20 jobs alike.
    for id in 1..=20 {
        c.put_job(job(id, "alice", &[], &[]));
    }
    let mut kept = KeptSnapshot::default();
    let mut image = c.image_after(None);
    let first = kept.schedule(&image, at, &connected);
    assert_eq!(first.dispatches.len(), 15);
    commit_at(&mut c, &first.dispatches, at);
    let mut cycle = |c: &mut Cluster, at: Time, quiet: bool| {
        image = c.image_after(Some(&image));
        let before = kept.counters.quiet;
        let decided = kept.schedule(&image, at, &connected);
        assert_eq!(
            decided.quiet, quiet,
            "the decisions say whether it was quiet"
        );
        let fresh = image.view().schedule(at, &connected);
        assert_eq!(
            Decisions {
                quiet: false,
                considered: 0,
                categories: 0,
                ..decided.clone()
            },
            Decisions {
                considered: 0,
                categories: 0,
                ..fresh
            }
        );
        assert_eq!(
            kept.counters.quiet,
            before + u64::from(quiet),
            "quiet: {quiet}"
        );
        decided
    };
    // The cycle after the one that placed passes over the jobs, the next is quiet.
    assert!(cycle(&mut c, at, false).dispatches.is_empty());
    assert!(cycle(&mut c, at, true).dispatches.is_empty());
    // A job alike: quiet. One of a category not seen before: a whole cycle, quiet again
    // after it.
    c.put_job(job(21, "alice", &[], &[]));
    cycle(&mut c, at, true);
    c.put_job(job(22, "bob", &[("mem_free", "1G")], &[]));
    cycle(&mut c, at, false);
    cycle(&mut c, at, true);
    // A full host reports: nothing finds room there, quiet.
    c.host_runtime(&host(2)).last_heard = Some(at);
    cycle(&mut c, at, true);
    // Held, then released: quiet both times (its category has no room).
    let mut held = job(23, "alice", &[], &[]);
    held.spec.hold = true;
    c.put_job(held.clone());
    cycle(&mut c, at, true);
    held.spec.hold = false;
    c.put_job(held);
    cycle(&mut c, at, true);
    // A job of a new category waiting for a start time: whole once, quiet until the
    // time comes, whole then.
    let mut later = job(24, "carol", &[], &[]);
    later.spec.start_after = Some(60);
    c.put_job(later);
    cycle(&mut c, at, false);
    cycle(&mut c, Time::from_secs(59), true);
    cycle(&mut c, Time::from_secs(60), false);
    // One waiting for job 1 to end, in a category with room (it asks for nothing
    // another job asks): whole when job 1 ends.
    let mut after = job(25, "dave", &[], &[]);
    after.spec.hold_jids = vec!["1".into()];
    c.put_job(after);
    cycle(&mut c, at, false);
    cycle(&mut c, at, true);
    c.remove_job(1);
    let decided = cycle(&mut c, at, false);
    assert_eq!(decided.dispatches.len(), 1);
}

#[test]
fn a_dynamic_limit_on_an_adjusted_load_opens_again_as_the_adjustment_decays() {
    let mut c = cluster();
    c.set_queue("all.q", "load_thresholds", "NONE");
    c.set_queue("all.q", "slots", "10");
    c.set_queue("short.q", "slots", "0");
    // The hosts stay reachable without reporting again (a report would loosen them).
    c.max_unheard = 100_000;
    let text = "{\n name limits\n enabled true\n limit hosts {*} to slots=6-$np_load_avg*4\n}\n";
    let mut sets = gantry_common::rqs::parse_sets(text).unwrap();
    c.put_quota_set(1, sets.remove(0));
    let connected = c.connected();
    let mut kept = KeptSnapshot::default();
    let mut now = Time::from_secs(0);
    // A few jobs start, then many more are submitted: where the first started, the
    // adjusted load holds the limit below what the hosts' own load allows.
    let mut image = c.image_after(None);
    let mut started = 0;
    for (first, last) in [(1, 4), (5, 40)] {
        for id in first..=last {
            c.put_job(job(id, "alice", &[], &[]));
        }
        image = c.image_after(Some(&image));
        let decided = kept.schedule(&image, now, &connected);
        assert_eq!(
            counted_aside(&decided),
            counted_aside(&image.view().schedule(now, &connected))
        );
        started += decided.dispatches.len();
        commit_at(&mut c, &decided.dispatches, now);
    }
    image = c.image_after(Some(&image));
    assert!(kept.schedule(&image, now, &connected).dispatches.is_empty());
    let settled = kept.counters.settled;
    // Later, nothing else changed: as the adjustment decays, the limit rises again.
    now = now + crate::time::Span::from_secs(600);
    image = c.image_after(Some(&image));
    let decided = kept.schedule(&image, now, &connected);
    assert_eq!(kept.counters.settled, settled + 1);
    assert_eq!(
        counted_aside(&decided),
        counted_aside(&image.view().schedule(now, &connected))
    );
    assert!(
        !decided.dispatches.is_empty(),
        "{started} started, none more after the decay"
    );
}

/// Commit a cycle's dispatches as started at `now` (those of jobs still there).
fn commit_at(c: &mut Cluster, dispatches: &[crate::cycle::Dispatch], now: Time) {
    for d in dispatches {
        let Some(mut j) = c.jobs.get(&d.job_id).map(|j| Job::clone(j)) else {
            continue;
        };
        let mut state = crate::synthetic::running(d);
        if let TaskState::Running { start_time, .. } = &mut state {
            *start_time = now.secs();
        }
        j.tasks.insert(d.task_id, state);
        c.put_job(j);
    }
}
