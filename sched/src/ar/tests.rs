//! Advance reservations on synthetic clusters: granting beside running jobs and other
//! reservations, what a reservation holds against ordinary jobs, and its own jobs
//! placed inside it.
#![allow(clippy::unwrap_used)]

use gantry_proto::{AdvanceReservation, ArId, ArSpec, ArState, Grant, JobId, TaskId};

use crate::ar::Granted;
use crate::cycle::CannotRun;
use crate::synthetic::{job, Cluster};
use crate::time::Time;

const LOAD: &[(&str, &str)] = &[
    ("arch", "lx-amd64"),
    ("num_proc", "2"),
    ("np_load_avg", "0.10"),
];

/// A reservation of `owner` for `[start, end)` as asked for; `change` adjusts the
/// request.
fn ar(id: u64, start: i64, end: i64, change: impl FnOnce(&mut ArSpec)) -> AdvanceReservation {
    let mut spec = ArSpec {
        account: "sge".into(),
        submit_host: "head".into(),
        ..ArSpec::default()
    };
    change(&mut spec);
    AdvanceReservation {
        id: ArId(id),
        spec,
        owner: "u1".into(),
        group: "u1".into(),
        submission_time: 0,
        start,
        end,
        granted: Vec::new(),
        granted_pe: None,
        state: ArState::Waiting,
        errors: Vec::new(),
    }
}

pub(super) fn cluster(slots: &str) -> Cluster {
    let mut s = Cluster::new(&[]);
    s.add_host("n1", "", LOAD);
    s.add_host("n2", "", LOAD);
    s.set_queue("all.q", "slots", slots);
    s
}

/// Grant `ar` at `now` and keep it granted in the cluster.
fn grant(s: &mut Cluster, mut ar: AdvanceReservation, now: i64) -> Result<Granted, CannotRun> {
    let granted = s
        .view()
        .reserve(&ar, &[], &s.connected(), Time::from_secs(now))?;
    ar.granted = granted.grants.clone();
    ar.granted_pe = granted.pe.clone();
    if now >= ar.start {
        ar.state = ArState::Running;
    }
    s.ars.insert(ar.id, ar);
    Ok(granted)
}

fn slots(g: &Granted) -> Vec<String> {
    g.grants
        .iter()
        .map(|Grant { queue, host, slots }| format!("{queue}@{host}={slots}"))
        .collect()
}

fn dispatched(s: &Cluster, now: i64) -> Vec<(u64, String)> {
    s.view()
        .schedule(Time::from_secs(now), &s.connected())
        .dispatches
        .into_iter()
        .map(|d| (d.job_id.get(), d.host))
        .collect()
}

#[test]
fn reservations_are_granted_only_where_their_whole_window_has_room() {
    let mut s = cluster("2");
    // Two slots on each host: four in all.
    let g = grant(
        &mut s,
        ar(1, 100, 200, |a| a.pe = Some(("make".into(), "3".into()))),
        10,
    )
    .unwrap();
    assert_eq!(g.pe, Some(("make".into(), 3)));
    assert_eq!(g.grants.iter().map(|g| g.slots).sum::<u32>(), 3);
    // One slot left over the window: a second of two slots overlaps and is refused...
    let overlapping = ar(2, 150, 250, |a| a.pe = Some(("make".into(), "2".into())));
    assert!(grant(&mut s, overlapping, 10).is_err());
    // ... one slot fits beside it, and three once the first is over.
    assert!(grant(&mut s, ar(3, 150, 250, |_| {}), 10).is_ok());
    let after = ar(4, 200, 300, |a| a.pe = Some(("make".into(), "3".into())));
    assert_eq!(grant(&mut s, after, 10).unwrap().grants.len(), 2);
    // One slot is left from 250 on (nothing was booked by the refusal): not two.
    let two = ar(5, 250, 300, |a| a.pe = Some(("make".into(), "2".into())));
    assert!(grant(&mut s, two, 10).is_err());
    assert!(grant(&mut s, ar(6, 250, 300, |_| {}), 10).is_ok());
}

#[test]
fn a_job_without_a_run_time_keeps_reservations_off_its_slots() {
    let mut s = cluster("[n1=1],[n2=1]");
    s.set_queue("all.q", "slots", "1");
    s.put_job(job(1, "u1", &[], &[]));
    s.start(1, 1, "all.q", "n1");
    // n1's slot is held for ever: the reservation goes to n2, a second finds nothing.
    let g = grant(&mut s, ar(1, 100, 200, |_| {}), 10).unwrap();
    assert_eq!(slots(&g), vec!["all.q@n2=1"]);
    assert!(grant(&mut s, ar(2, 100, 200, |_| {}), 10).is_err());
    // A job with h_rt ending before the window leaves room for one after it.
    let mut s = cluster("1");
    s.put_job(job(1, "u1", &[("h_rt", "50")], &[]));
    s.start(1, 1, "all.q", "n1");
    s.put_job(job(2, "u1", &[("h_rt", "50")], &[]));
    s.start(2, 1, "all.q", "n2");
    assert!(grant(&mut s, ar(1, 20, 200, |_| {}), 10).is_err());
    assert!(grant(&mut s, ar(2, 50, 200, |_| {}), 10).is_ok());
}

#[test]
fn ordinary_jobs_run_only_where_they_end_before_a_window_opens() {
    let mut s = cluster("1");
    grant(
        &mut s,
        ar(1, 1000, 2000, |a| a.pe = Some(("make".into(), "2".into()))),
        10,
    )
    .unwrap();
    s.put_job(job(1, "u1", &[("h_rt", "900")], &[]));
    s.put_job(job(2, "u1", &[("h_rt", "1100")], &[]));
    s.put_job(job(3, "u1", &[], &[]));
    // Only the job that ends before the window (at 910) starts.
    assert_eq!(dispatched(&s, 10), vec![(1, "n1".to_string())]);
    let why = s.view().explain(
        s.jobs.get(&JobId(3)).unwrap(),
        &s.connected(),
        Time::from_secs(10),
    );
    assert!(
        why.iter().any(|r| r.contains("dropped because it is full")),
        "{why:?}"
    );
}

#[test]
fn a_reservations_jobs_run_inside_it_and_only_while_it_is_open() {
    let mut s = cluster("2");
    // Three of the four slots, from 100 to 200.
    grant(
        &mut s,
        ar(7, 100, 200, |a| a.pe = Some(("make".into(), "3".into()))),
        10,
    )
    .unwrap();
    let in_ar = |id: u64, hard: &[(&str, &str)]| {
        let mut j = job(id, "u1", hard, &[]);
        j.spec.ar = Some(ArId(7));
        j
    };
    for id in 1..=4 {
        s.put_job(in_ar(id, &[]));
    }
    s.put_job(in_ar(5, &[("h_rt", "150")]));
    s.put_job(job(6, "u1", &[("h_rt", "50")], &[]));
    // Before the window: no job of it starts; the ordinary one does (it ends in time).
    assert_eq!(dispatched(&s, 10).len(), 1);
    // Inside the window: three of its jobs, one per reserved slot, and none beyond.
    s.ars.get_mut(&ArId(7)).unwrap().state = ArState::Running;
    let d = dispatched(&s, 110);
    let mine: Vec<u64> = d.iter().map(|(j, _)| *j).filter(|j| *j <= 5).collect();
    assert_eq!(mine, vec![1, 2, 3], "{d:?}");
    // Job 5 would run past the window's end (110 + 150 > 200): it never starts.
    let mut s2 = s.clone();
    for id in 1..=4 {
        s2.remove_job(id);
    }
    assert!(dispatched(&s2, 110).iter().all(|(j, _)| *j != 5));
    // In hard error handling an errored reservation takes no jobs.
    let mut s3 = s.clone();
    let a = s3.ars.get_mut(&ArId(7)).unwrap();
    a.state = ArState::Error;
    a.spec.hard_error = true;
    assert!(dispatched(&s3, 110).iter().all(|(j, _)| *j > 5));
}

#[test]
fn every_user_of_the_access_list_must_have_access() {
    let mut s = cluster("1");
    let mut deny = gantry_common::userset::new_userset("denied", "ACL");
    deny.entries = vec!["u3".into()];
    s.put_userset(deny);
    s.set_queue("all.q", "xuser_lists", "NONE,[n1=denied]");
    let g = grant(
        &mut s,
        ar(1, 100, 200, |a| a.users = vec!["u1".into(), "u3".into()]),
        10,
    )
    .unwrap();
    assert_eq!(slots(&g), vec!["all.q@n2=1"]);
    assert!(grant(&mut s, ar(2, 100, 200, |a| a.users = vec!["u3".into()]), 10).is_err());
    // Without u3 in its list, n1 is fine.
    assert!(grant(&mut s, ar(3, 100, 200, |a| a.users = vec!["u1".into()]), 10).is_ok());
}

mod model {
    //! Random sequences of reservation grants and deletions and job starts and ends
    //! against a brute-force model: at every second, per queue instance, what the
    //! reservations and the running jobs hold.
    use super::*;
    use proptest::prelude::*;

    const HOSTS: [&str; 2] = ["n1", "n2"];
    const SLOTS: u32 = 3;
    const HORIZON: i64 = 40;

    #[derive(Debug, Clone)]
    enum Step {
        /// Reserve `slots` over `[start, start + len)`.
        Grant { start: i64, len: i64, slots: u32 },
        /// Delete the n-th reservation still granted.
        Delete(usize),
        /// A job of one slot starts on a host, running `h_rt` (None: no run time).
        Start { host: usize, h_rt: Option<i64> },
        /// The n-th running job ends.
        End(usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => (0..HORIZON, 1..15i64, 1..=4u32)
                .prop_map(|(start, len, slots)| Step::Grant { start, len, slots }),
            1 => (0..8usize).prop_map(Step::Delete),
            2 => (0..2usize, proptest::option::of(1..20i64))
                .prop_map(|(host, h_rt)| Step::Start { host, h_rt }),
            1 => (0..8usize).prop_map(Step::End),
        ]
    }

    /// What the model says is held on a host at second `t`.
    fn held(s: &Cluster, host: &str, t: i64) -> u32 {
        let by_ars: u32 = s
            .ars
            .values()
            .filter(|a| a.start <= t && t < a.end)
            .flat_map(|a| a.granted.iter())
            .filter(|g| g.host == host)
            .map(|g| g.slots)
            .sum();
        let by_jobs = s
            .jobs
            .values()
            .filter(|j| {
                let rt = j.spec.hard_resources.iter().find(|(k, _)| k == "h_rt");
                rt.is_none_or(|(_, v)| t < v.parse::<i64>().unwrap())
            })
            .filter(|j| {
                j.tasks.placed_states().any(|st| {
                    matches!(st, gantry_common::job::TaskState::Running { host: h, .. } if h == host)
                })
            })
            .count() as u32;
        by_ars + by_jobs
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn grants_never_overbook_and_refuse_only_what_does_not_fit(
            steps in proptest::collection::vec(step(), 1..25)
        ) {
            let mut s = cluster(&SLOTS.to_string());
            let mut next = 1u64;
            for st in steps {
                match st {
                    Step::Grant { start, len, slots } => {
                        let a = ar(next, start, start + len, |a| {
                            a.pe = Some(("smp".into(), slots.to_string()));
                        });
                        next += 1;
                        // Would the model fit it on one host (smp: $pe_slots)?
                        let fits = HOSTS.iter().any(|h| {
                            (start..start + len).all(|t| held(&s, h, t) + slots <= SLOTS)
                        });
                        let granted = grant(&mut s, a, 0);
                        prop_assert_eq!(granted.is_ok(), fits, "grant {}..{} x{}", start, start + len, slots);
                    }
                    Step::Delete(n) => {
                        if let Some(&id) = s.ars.keys().nth(n) {
                            s.ars.remove(&id);
                        }
                    }
                    Step::Start { host, h_rt } => {
                        // Only where the model has room from now (0) for its run time.
                        let until = h_rt.unwrap_or(HORIZON + 20);
                        let h = HOSTS[host];
                        if (0..until).all(|t| held(&s, h, t) < SLOTS) {
                            let id = 1000 + s.jobs.len() as u64;
                            let hard: Vec<(&str, String)> =
                                h_rt.map(|r| ("h_rt", r.to_string())).into_iter().collect();
                            let hard: Vec<(&str, &str)> =
                                hard.iter().map(|(k, v)| (*k, v.as_str())).collect();
                            s.put_job(job(id, "u1", &hard, &[]));
                            s.start(id, 1, "all.q", h);
                        }
                    }
                    Step::End(n) => {
                        if let Some(&id) = s.jobs.keys().nth(n) {
                            s.remove_job(id.get());
                        }
                    }
                }
                for h in HOSTS {
                    for t in 0..HORIZON + 20 {
                        prop_assert!(held(&s, h, t) <= SLOTS, "{} over capacity at {}", h, t);
                    }
                }
            }
        }
    }
}

#[test]
fn a_job_of_a_reservation_must_end_duration_offset_before_it() {
    let mut s = cluster("1");
    let mut a = ar(3, 100, 200, |_| {});
    a.state = ArState::Running;
    grant(&mut s, a, 10).unwrap();
    s.ars.get_mut(&ArId(3)).unwrap().state = ArState::Running;
    let mut j = job(1, "u1", &[("h_rt", "60")], &[]);
    j.spec.ar = Some(ArId(3));
    s.put_job(j);
    // 110 + 60 + DURATION_OFFSET (60 by default) is past 200: it waits, and says why.
    assert!(dispatched(&s, 110).is_empty());
    let why = s.view().explain(
        s.jobs.get(&JobId(1)).unwrap(),
        &s.connected(),
        Time::from_secs(110),
    );
    assert_eq!(
        why,
        vec!["the job duration exceeds the end time of the advance reservation id 3".to_string()]
    );
    // With DURATION_OFFSET=0 in the scheduler's params it fits.
    let conf = s.sched.as_mut().unwrap();
    for (k, v) in &mut conf.entries {
        if k == "params" {
            *v = "DURATION_OFFSET=0".into();
        }
    }
    assert_eq!(dispatched(&s, 110), vec![(1, "n1".to_string())]);
}

#[test]
fn a_job_fits_a_reservation_only_within_what_it_holds() {
    let mut s = cluster("4");
    grant(
        &mut s,
        ar(5, 100, 200, |a| a.pe = Some(("smp".into(), "2".into()))),
        10,
    )
    .unwrap();
    let a = s.ars[&ArId(5)].clone();
    let fits = |hard: &[(&str, &str)], pe: Option<&str>| {
        let mut j = job(1, "u1", hard, &[]);
        j.spec.ar = Some(ArId(5));
        j.spec.pe = pe.map(|n| ("smp".to_string(), n.to_string()));
        s.view().could_run_in_reservation(&j, &a)
    };
    assert!(fits(&[], None));
    assert!(fits(&[], Some("2")));
    assert!(!fits(&[], Some("3")), "more slots than it holds");
    assert_eq!(a.granted[0].host, "n1");
    assert!(fits(&[("h", "n1")], None));
    assert!(!fits(&[("h", "n2")], None), "a host it does not hold");
}

#[test]
fn overlapping_reservations_never_exceed_a_parallel_environments_slots() {
    let mut s = cluster("4");
    if let Some(pe) = s.pes.get_mut("smp") {
        pe.slots = 3;
    }
    let smp = |n: &str| {
        let n = n.to_string();
        move |a: &mut ArSpec| a.pe = Some(("smp".into(), n))
    };
    // Two slots of smp's three from 100 to 200: one more fits beside, two do not.
    grant(&mut s, ar(1, 100, 200, smp("2")), 10).unwrap();
    assert!(grant(&mut s, ar(2, 150, 250, smp("2")), 10).is_err());
    assert!(grant(&mut s, ar(3, 150, 250, smp("1")), 10).is_ok());
    // After both windows, all three again.
    assert!(grant(&mut s, ar(4, 250, 300, smp("3")), 10).is_ok());
    // Open windows count only where they meet the new one: at 120, reservation 1 is
    // open until 200 (two slots) and 3 opens at 150 (one): nothing left over
    // [150, 200); from 200 one slot (3's) until 250.
    assert!(grant(&mut s, ar(5, 160, 190, smp("1")), 120).is_err());
    assert!(grant(&mut s, ar(6, 200, 250, smp("2")), 120).is_ok());
}

#[test]
fn running_parallel_tasks_hold_their_environments_slots_until_they_end() {
    let mut s = cluster("4");
    if let Some(pe) = s.pes.get_mut("smp") {
        pe.slots = 3;
    }
    // A parallel job of three slots runs from 0 for 100 s (h_rt), another without a
    // run time holds nothing of smp (it runs in mpi).
    let mut j = job(1, "u1", &[("h_rt", "100")], &[]);
    j.spec.pe = Some(("smp".into(), "3".into()));
    s.put_job(j);
    let placed = dispatched(&s, 0);
    assert_eq!(placed.len(), 1, "{placed:?}");
    let d = s
        .view()
        .schedule(Time::from_secs(0), &s.connected())
        .dispatches;
    let mut j = gantry_common::job::Job::clone(&s.jobs[&JobId(1)]);
    j.tasks.insert(TaskId(1), crate::synthetic::running(&d[0]));
    s.put_job(j);
    let smp = |a: &mut ArSpec| a.pe = Some(("smp".into(), "1".into()));
    // While it runs, no smp slot is left; once its run time is over, all three are.
    assert!(grant(&mut s, ar(1, 50, 150, smp), 10).is_err());
    assert!(grant(&mut s, ar(2, 100, 150, smp), 10).is_ok());
}

#[test]
fn an_interactive_reservation_takes_only_interactive_instances() {
    let mut s = cluster("1");
    s.set_queue("all.q", "qtype", "BATCH,[n2=BATCH INTERACTIVE]");
    let g = grant(&mut s, ar(1, 100, 200, |a| a.interactive = true), 10).unwrap();
    assert_eq!(slots(&g), vec!["all.q@n2=1"]);
    assert!(grant(&mut s, ar(2, 100, 200, |a| a.interactive = true), 10).is_err());
    // A batch reservation still finds n1.
    assert_eq!(
        slots(&grant(&mut s, ar(3, 100, 200, |_| {}), 10).unwrap()),
        vec!["all.q@n1=1"]
    );
}

#[test]
fn a_parallel_job_starts_only_if_its_environment_has_slots_over_its_run_time() {
    let mut s = cluster("4");
    if let Some(pe) = s.pes.get_mut("smp") {
        pe.slots = 3;
    }
    // All three smp slots reserved from 100 to 200 (on one host: $pe_slots).
    let smp = |a: &mut ArSpec| a.pe = Some(("smp".into(), "3".into()));
    grant(&mut s, ar(1, 100, 200, smp), 10).unwrap();
    let parallel = |id: u64, hard: &[(&str, &str)]| {
        let mut j = job(id, "u1", hard, &[]);
        j.spec.pe = Some(("smp".into(), "1".into()));
        j
    };
    // Without a run time it would hold a slot into the window: it waits, though the
    // other host has every slot free; one that ends before the window starts.
    s.put_job(parallel(2, &[]));
    assert!(dispatched(&s, 10).is_empty());
    s.put_job(parallel(3, &[("h_rt", "60")]));
    assert_eq!(
        dispatched(&s, 10).iter().map(|d| d.0).collect::<Vec<_>>(),
        vec![3]
    );
    // After the window, the first one runs too.
    s.ars.clear();
    assert_eq!(dispatched(&s, 10).len(), 2);
}
