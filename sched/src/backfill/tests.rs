//! Resource reservation and backfilling on synthetic clusters.
#![allow(clippy::unwrap_used)]

use crate::synthetic::{job, Cluster};
use crate::time::Time;
use gantry_proto::JobId;

const LOAD: &[(&str, &str)] = &[
    ("arch", "lx-amd64"),
    ("num_proc", "4"),
    ("np_load_avg", "0.10"),
];

fn set_sched(s: &mut Cluster, key: &str, value: &str) {
    let conf = s.sched.as_mut().unwrap();
    match conf.entries.iter_mut().find(|(k, _)| k == key) {
        Some(e) => e.1 = value.to_string(),
        None => conf.entries.push((key.to_string(), value.to_string())),
    }
}

/// One host `n1` whose `all.q` has `slots`, no load thresholds and no load
/// adjustments, with `max_reservation` set.
fn one_host(slots: &str, max_reservation: &str) -> Cluster {
    let mut s = Cluster::new(&[]);
    s.add_host("n1", "", LOAD);
    s.set_queue("all.q", "slots", slots);
    s.set_queue("all.q", "load_thresholds", "NONE");
    set_sched(&mut s, "max_reservation", max_reservation);
    set_sched(&mut s, "job_load_adjustments", "NONE");
    s
}

/// One host of four slots, jobs 1, 2, ... started at 0 on it, each ending at its
/// `ends` (h_rt), and job 10 waiting first in line: a 4-slot `-R y` job.
fn held_until(ends: &[&str], max_reservation: &str) -> Cluster {
    let mut s = one_host("4", max_reservation);
    s.set_queue("all.q", "pe_list", "smp");
    for (id, rt) in (1..).zip(ends) {
        s.put_job(job(id, "u1", &[("h_rt", rt)], &[]));
        s.start(id, 1, "all.q", "n1");
    }
    let mut big = job(10, "u2", &[("h_rt", "100")], &[]);
    big.spec.pe = Some(("smp".into(), "4".into()));
    big.spec.reserve = true;
    big.spec.priority = 100;
    s.put_job(big);
    s
}

/// One host of four slots, each held by a job started at 0 and ending at 100, 200, 300
/// and 400 (h_rt); then, by priority, a 4-slot `-R y` job and three 1-slot jobs: one
/// short enough to end before 400, one that does not, one without a run time.
fn busy(max_reservation: &str) -> Cluster {
    let mut s = held_until(&["100", "200", "300", "400"], max_reservation);
    s.put_job(job(11, "u3", &[("h_rt", "50")], &[]));
    s.put_job(job(12, "u3", &[("h_rt", "500")], &[]));
    s.put_job(job(13, "u3", &[], &[]));
    s
}

fn cycle(s: &Cluster, now: i64) -> (Vec<u64>, Vec<(u64, i64)>) {
    let d = s.view().schedule(Time::from_secs(now), &s.connected());
    (
        d.dispatches.iter().map(|d| d.job_id.get()).collect(),
        d.reservations
            .iter()
            .map(|r| (r.job_id.get(), r.start.secs()))
            .collect(),
    )
}

#[test]
fn without_reservation_the_big_job_starves_behind_small_ones() {
    let mut s = busy("0");
    // At 100 the first slot frees: a small job takes it, and so on as slots free.
    s.remove_job(1);
    let (started, reserved) = cycle(&s, 100);
    assert_eq!(started, vec![11]);
    assert!(reserved.is_empty());
}

#[test]
fn a_reservation_holds_the_earliest_time_and_short_jobs_backfill() {
    let mut s = busy("10");
    s.remove_job(1);
    // The big job cannot start at 100; every slot is free at 400: it is reserved for
    // then. The 50 s job ends before (backfills); the 500 s one and the one without a
    // run time would not, and wait.
    let (started, reserved) = cycle(&s, 100);
    assert_eq!(reserved, vec![(10, 400)]);
    assert_eq!(started, vec![11]);
    // The job ending at 400 ends early, at 250 (with the one of 200): the reservation
    // moves forward to 300, when the last other slot frees.
    s.remove_job(2);
    s.remove_job(4);
    let (_, reserved) = cycle(&s, 250);
    assert_eq!(reserved, vec![(10, 300)]);
    // Everything ended: the big job starts.
    s.remove_job(3);
    let (started, reserved) = cycle(&s, 300);
    assert_eq!(started.first(), Some(&10));
    assert!(reserved.is_empty());
}

#[test]
fn default_duration_lets_jobs_without_h_rt_backfill() {
    let mut s = busy("10");
    set_sched(&mut s, "default_duration", "0:1:0");
    s.remove_job(1);
    // Job 13 has no h_rt: taken to run 60 s, it ends at 160, before 400.
    let (started, reserved) = cycle(&s, 100);
    assert_eq!(reserved, vec![(10, 400)]);
    assert_eq!(started, vec![11]);
    let mut s2 = busy("10");
    set_sched(&mut s2, "default_duration", "0:1:0");
    s2.remove_job(1);
    s2.remove_job(11);
    let (started, _) = cycle(&s2, 100);
    assert_eq!(started, vec![13]);
}

#[test]
fn only_max_reservation_jobs_are_reserved() {
    let mut s = busy("1");
    let mut second = job(20, "u2", &[("h_rt", "100")], &[]);
    second.spec.pe = Some(("smp".into(), "4".into()));
    second.spec.reserve = true;
    second.spec.priority = 50;
    s.put_job(second);
    s.remove_job(1);
    let (_, reserved) = cycle(&s, 100);
    assert_eq!(reserved, vec![(10, 400)]);
}

#[test]
fn a_reservation_counts_in_its_group_as_the_start_it_stands_for() {
    // At 100, one slot free: the 4-slot job and the short one in group physics, whose
    // allocation is the whole pool (4). Without `-R y` nothing of physics runs or is
    // booked: the short job starts. With it, the reservation at 400 takes physics' 4 in this cycle, as the
    // start it stands for would: the short job waits for the group, not for room.
    for (reserve, started, reserved) in [(false, vec![11], vec![]), (true, vec![], vec![(10, 400)])]
    {
        let mut s = busy("1");
        s.remove_job(1);
        s.group_tree = gantry_common::groups::parse_groups("physics 1.0 TRUE FALSE").unwrap();
        for id in [10, 11] {
            let mut j = gantry_common::job::Job::clone(&s.jobs[&JobId(id)]);
            j.spec.account = "physics".into();
            j.spec.reserve = reserve && id == 10;
            s.put_job(j);
        }
        let (got, got_reserved) = cycle(&s, 100);
        let physics: Vec<u64> = got.into_iter().filter(|id| [10, 11].contains(id)).collect();
        assert_eq!(
            (physics, got_reserved),
            (started, reserved),
            "reserve {reserve}"
        );
    }
}

#[test]
fn a_parallel_job_takes_its_slots_of_its_group_once() {
    // Every slot free, physics' allocation 4: the 4-slot job starts (its per-job part
    // takes no slots of the group; it once counted them twice and waited for ever).
    let mut s = busy("0");
    for id in 1..=4 {
        s.remove_job(id);
    }
    s.group_tree = gantry_common::groups::parse_groups("physics 1.0 FALSE FALSE").unwrap();
    let mut j = gantry_common::job::Job::clone(&s.jobs[&JobId(10)]);
    j.spec.account = "physics".into();
    s.put_job(j);
    let (started, _) = cycle(&s, 0);
    assert_eq!(started.first(), Some(&10));
}

#[test]
fn a_reservation_is_made_behind_jobs_alike_that_found_no_room() {
    // The host full until 100; three jobs alike (the same requests, user and project)
    // in a row find no room, then the fourth, alike but asking for a reservation, gets
    // one: jobs alike after an exhausted category are passed over without a lookup,
    // except those that ask for a reservation.
    let mut s = one_host("1", "5");
    s.put_job(job(1, "u1", &[("h_rt", "100")], &[]));
    s.start(1, 1, "all.q", "n1");
    for id in 2..=4 {
        s.put_job(job(id, "u2", &[("h_rt", "50")], &[]));
    }
    let mut last = job(5, "u2", &[("h_rt", "50")], &[]);
    last.spec.reserve = true;
    s.put_job(last);
    let (started, reserved) = cycle(&s, 0);
    assert!(started.is_empty(), "{started:?}");
    assert_eq!(reserved, vec![(5, 100)]);
}

/// A cycle on the kept snapshot after one that reserved looks at every category again:
/// the reservation is made afresh (here not at all), and what it kept from others is
/// free, though nothing was released.
#[test]
fn a_cycle_after_one_that_reserved_settles_on_nothing_it_kept_out() {
    // One slot free, the `-R y` job reserving all four from 300.
    let mut s = held_until(&["100", "200", "300"], "1");
    // Without a run time it would hold the free slot into the reservation.
    s.put_job(job(11, "u3", &[], &[]));
    let connected = s.connected();
    let at = Time::from_secs(0);
    let mut kept = crate::KeptSnapshot::default();
    let image = s.image_after(None);
    let first = kept.schedule(&image, at, &connected);
    assert!(first.dispatches.is_empty(), "{first:?}");
    assert_eq!(first.reservations.len(), 1);
    s.remove_job(10);
    let image = s.image_after(Some(&image));
    let decided = kept.schedule(&image, at, &connected);
    assert_eq!(decided, image.view().schedule(at, &connected));
    let started: Vec<u64> = decided.dispatches.iter().map(|d| d.job_id.get()).collect();
    assert_eq!(started, [11]);
}
