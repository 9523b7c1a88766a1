#![allow(clippy::unwrap_used)]
//! The calendar against a brute-force model: every booking a list entry, every query an
//! instant-by-instant sum over a small integer time domain.

use super::*;
use proptest::prelude::*;

/// Every booking time lies below this; beyond it nothing changes any more.
const HORIZON: i64 = 60;

fn t(x: i64) -> Time {
    Time::from_millis(x)
}

#[derive(Debug, Clone, Default)]
struct Model {
    capacity: Vec<f64>,
    /// (booking, resource, amount, from, until)
    bookings: Vec<(BookingId, usize, f64, i64, Option<i64>)>,
}

impl Model {
    /// Past every booking's start and end and any query's length: nothing changes any
    /// more from here on.
    fn horizon(&self) -> i64 {
        let last = self
            .bookings
            .iter()
            .map(|b| b.4.unwrap_or(b.3).max(b.3))
            .max()
            .unwrap_or(0);
        last.max(HORIZON) + 30
    }

    fn used_at(&self, r: usize, at: i64) -> f64 {
        self.bookings
            .iter()
            .filter(|b| b.1 == r && b.3 <= at && b.4.is_none_or(|u| u > at))
            .map(|b| b.2)
            .sum()
    }

    fn peak_over(&self, r: usize, from: i64, until: Option<i64>) -> f64 {
        let end = match until {
            Some(u) if u > from => u,
            Some(_) => from + 1,
            None => self.horizon() * 2,
        };
        (from..end)
            .map(|x| self.used_at(r, x))
            .fold(f64::NEG_INFINITY, f64::max)
    }

    fn earliest_fit(&self, r: usize, amount: f64, from: i64, length: Option<i64>) -> Option<i64> {
        (from..self.horizon())
            .find(|&x| self.peak_over(r, x, length.map(|l| x + l)) + amount <= self.capacity[r])
    }
}

#[derive(Debug, Clone)]
enum Op {
    Book {
        resource: usize,
        amount: u8,
        from: i64,
        length: Option<i64>,
    },
    Release(usize),
    SetEnd(usize, Option<i64>),
    Expire(i64),
    SetCapacity(usize, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..3usize, 1..5u8, 0..HORIZON, proptest::option::of(1..20i64)).prop_map(
            |(resource, amount, from, length)| Op::Book { resource, amount, from, length }
        ),
        1 => (0..40usize).prop_map(Op::Release),
        1 => (0..40usize, proptest::option::of(1..HORIZON)).prop_map(|(b, u)| Op::SetEnd(b, u)),
        1 => (0..HORIZON).prop_map(Op::Expire),
        1 => (0..3usize, 0..12u8).prop_map(|(r, c)| Op::SetCapacity(r, c)),
    ]
}

fn query() -> impl Strategy<Value = (usize, u8, i64, Option<i64>)> {
    (
        0..3usize,
        1..6u8,
        0..HORIZON,
        // Length 0: the instant.
        proptest::option::of(0..25i64),
    )
}

/// Apply one operation to both; the model's bookings keep their calendar ids.
fn apply(cal: &mut Calendar, model: &mut Model, res: &[ResourceId], op: &Op) {
    match *op {
        Op::Book {
            resource,
            amount,
            from,
            length,
        } => {
            let until = length.map(|l| from + l);
            let id = cal
                .book(res[resource], amount as f64, t(from), until.map(t))
                .unwrap();
            model
                .bookings
                .push((id, resource, amount as f64, from, until));
        }
        Op::Release(n) => {
            if model.bookings.is_empty() {
                return;
            }
            let b = model.bookings.remove(n % model.bookings.len());
            cal.release(b.0).unwrap();
            assert_eq!(cal.release(b.0), Err(CalendarError::UnknownBooking(b.0 .0)));
        }
        Op::SetEnd(n, until) => {
            if model.bookings.is_empty() {
                return;
            }
            let n = n % model.bookings.len();
            // An end before the start would be no booking at all: keep it after.
            let until = until.map(|u| u.max(model.bookings[n].3 + 1));
            model.bookings[n].4 = until;
            cal.set_end(model.bookings[n].0, until.map(t)).unwrap();
        }
        Op::Expire(now) => {
            let before = model.bookings.len();
            model.bookings.retain(|b| b.4.is_none_or(|u| u > now));
            assert_eq!(cal.expire(t(now)), before - model.bookings.len());
        }
        Op::SetCapacity(r, c) => {
            model.capacity[r] = c as f64;
            cal.set_capacity(res[r], c as f64).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Random sequences of booking, release, end changes and expiry: every query agrees
    /// with the model.
    #[test]
    fn agrees_with_the_model(
        ops in proptest::collection::vec(op(), 1..40),
        queries in proptest::collection::vec(query(), 1..12),
    ) {
        let mut cal = Calendar::new();
        let mut model = Model { capacity: vec![8.0; 3], ..Model::default() };
        let res: Vec<ResourceId> = (0..3).map(|_| cal.add_resource(8.0)).collect();
        for op in &ops {
            apply(&mut cal, &mut model, &res, op);
            prop_assert_eq!(cal.booking_count(), model.bookings.len());
        }
        for &(r, amount, from, length) in &queries {
            let until = length.map(|l| from + l);
            prop_assert_eq!(cal.used_at(res[r], t(from)).unwrap(), model.used_at(r, from));
            prop_assert_eq!(
                cal.peak_over(res[r], t(from), until.map(t)).unwrap(),
                model.peak_over(r, from, until),
                "peak over [{}, {:?}) of {}", from, until, r
            );
            prop_assert_eq!(
                cal.free_over(res[r], t(from), until.map(t)).unwrap(),
                model.capacity[r] - model.peak_over(r, from, until)
            );
            prop_assert_eq!(
                cal.earliest_fit(res[r], amount as f64, t(from), length.map(Span::from_millis))
                    .unwrap()
                    .map(Time::millis),
                model.earliest_fit(r, amount as f64, from, length),
                "earliest fit of {} on {} from {} for {:?}", amount, r, from, length
            );
        }
    }

    /// Booking only where the calendar says a demand fits never exceeds a capacity at any
    /// instant, and a joint fit fits on every resource it names.
    #[test]
    fn booking_where_it_fits_never_overcommits(
        wants in proptest::collection::vec(
            (proptest::collection::vec((0..3usize, 1..6u8), 1..3), 0..HORIZON, proptest::option::of(1..25i64)),
            1..30,
        ),
    ) {
        let mut cal = Calendar::new();
        let capacity = [4.0, 6.0, 9.0];
        let res: Vec<ResourceId> = capacity.iter().map(|&c| cal.add_resource(c)).collect();
        let mut model = Model { capacity: capacity.to_vec(), ..Model::default() };
        for (parts, from, length) in wants {
            let mut parts: Vec<(usize, f64)> = parts.into_iter().map(|(r, a)| (r, a as f64)).collect();
            parts.sort_by_key(|p| p.0);
            parts.dedup_by_key(|p| p.0);
            let asks: Vec<(ResourceId, f64)> = parts.iter().map(|&(r, a)| (res[r], a)).collect();
            let span = length.map(Span::from_millis);
            let joint = (from..model.horizon()).find(|&x| {
                parts.iter().all(|&(r, a)| {
                    model.peak_over(r, x, length.map(|l| x + l)) + a <= capacity[r]
                })
            });
            let found = cal.earliest_fit_all(&asks, t(from), span).unwrap();
            prop_assert_eq!(found.map(Time::millis), joint);
            let Some(start) = found else {
                continue;
            };
            prop_assert!(start >= t(from));
            for &(r, a) in &parts {
                let until = length.map(|l| start.millis() + l);
                prop_assert!(model.peak_over(r, start.millis(), until) + a <= capacity[r]);
                let id = cal.book(res[r], a, start, until.map(t)).unwrap();
                model.bookings.push((id, r, a, start.millis(), until));
            }
            for (r, &c) in capacity.iter().enumerate() {
                for x in 0..model.horizon() {
                    prop_assert!(model.used_at(r, x) <= c, "{} over {} at {}", r, c, x);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Additions (merged into the latest booking of the same interval, negative ones
    /// giving back) read as the same bookings made one by one.
    #[test]
    fn additions_agree_with_the_model(
        adds in proptest::collection::vec(
            (0..2usize, -2..5i8, 0..4i64, proptest::option::of(1..3i64)),
            1..40,
        ),
        queries in proptest::collection::vec(query(), 1..12),
    ) {
        let mut cal = Calendar::new();
        let res: Vec<ResourceId> = (0..3).map(|_| cal.add_resource(8.0)).collect();
        let mut model = Model { capacity: vec![8.0; 3], ..Model::default() };
        for (r, amount, from, length) in adds {
            // Few distinct intervals, so that additions merge.
            let (from, until) = (from * 10, length.map(|l| from * 10 + l * 10));
            cal.add(res[r], amount as f64, t(from), until.map(t)).unwrap();
            model.bookings.push((BookingId(u32::MAX), r, amount as f64, from, until));
        }
        for &(r, _, from, length) in &queries {
            let until = length.map(|l| from + l);
            prop_assert_eq!(cal.used_at(res[r], t(from)).unwrap(), model.used_at(r, from));
            prop_assert_eq!(
                cal.peak_over(res[r], t(from), until.map(t)).unwrap(),
                model.peak_over(r, from, until)
            );
        }
    }
}

#[test]
fn unknown_ids_are_errors() {
    let mut cal = Calendar::new();
    let r = cal.add_resource(1.0);
    assert_eq!(
        cal.used_at(ResourceId(7), t(0)),
        Err(CalendarError::UnknownResource(7))
    );
    assert_eq!(
        cal.book(ResourceId(1), 1.0, t(0), None),
        Err(CalendarError::UnknownResource(1))
    );
    assert_eq!(
        cal.set_end(BookingId(0), None),
        Err(CalendarError::UnknownBooking(0))
    );
    let b = cal.book(r, 1.0, t(0), None).unwrap();
    cal.release(b).unwrap();
    assert_eq!(cal.release(b), Err(CalendarError::UnknownBooking(b.0)));
}

#[test]
fn half_open_intervals_and_future_bookings() {
    let mut cal = Calendar::new();
    let slots = cal.add_resource(4.0);
    // A running task, 2 slots until 100; a reservation of 3 slots from 150 to 200.
    cal.book(slots, 2.0, t(0), Some(t(100))).unwrap();
    cal.book(slots, 3.0, t(150), Some(t(200))).unwrap();
    assert_eq!(cal.used_at(slots, t(99)).unwrap(), 2.0);
    assert_eq!(cal.used_at(slots, t(100)).unwrap(), 0.0);
    assert_eq!(cal.free_over(slots, t(50), Some(t(150))).unwrap(), 2.0);
    assert_eq!(cal.free_over(slots, t(50), Some(t(151))).unwrap(), 1.0);
    // Two slots for 60: now, as the task leaves two. Three for 40: at 100, ending
    // before the reservation; three for 60 would overlap it: only after it.
    assert_eq!(
        cal.earliest_fit(slots, 2.0, t(50), Some(Span::from_millis(60)))
            .unwrap(),
        Some(t(50))
    );
    assert_eq!(
        cal.earliest_fit(slots, 3.0, t(50), Some(Span::from_millis(40)))
            .unwrap(),
        Some(t(100))
    );
    assert_eq!(
        cal.earliest_fit(slots, 3.0, t(50), Some(Span::from_millis(60)))
            .unwrap(),
        Some(t(200))
    );
    // Two slots without an end: only after the reservation.
    assert_eq!(
        cal.earliest_fit(slots, 2.0, t(50), None).unwrap(),
        Some(t(200))
    );
    // Five never fit.
    assert_eq!(cal.earliest_fit(slots, 5.0, t(0), None).unwrap(), None);
    // An open-ended booking holds for ever.
    cal.book(slots, 4.0, t(300), None).unwrap();
    assert_eq!(cal.earliest_fit(slots, 1.0, t(250), None).unwrap(), None);
    assert_eq!(
        cal.earliest_fit(slots, 1.0, t(250), Some(Span::from_millis(50)))
            .unwrap(),
        Some(t(250))
    );
    assert_eq!(cal.expire(t(200)), 2);
    assert_eq!(cal.booking_count(), 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Bookings and additions made in a trial, rolled back, leave every answer as it
    /// was before the trial; bookings after it behave as on a calendar that never had
    /// one.
    #[test]
    fn a_rolled_back_trial_leaves_every_answer_as_before(
        before in proptest::collection::vec(op(), 0..30),
        tried in proptest::collection::vec(
            (0..3usize, -2..5i8, 0..4i64, proptest::option::of(1..3i64), any::<bool>()),
            1..20,
        ),
        after in proptest::collection::vec(op(), 0..10),
        queries in proptest::collection::vec(query(), 1..12),
    ) {
        let mut cal = Calendar::new();
        let mut model = Model { capacity: vec![8.0; 3], ..Model::default() };
        let res: Vec<ResourceId> = (0..3).map(|_| cal.add_resource(8.0)).collect();
        for op in &before {
            apply(&mut cal, &mut model, &res, op);
        }
        cal.begin_trial();
        for &(r, amount, from, length, own) in &tried {
            let (from, until) = (t(from * 10), length.map(|l| t(from * 10 + l * 10)));
            if own {
                cal.book(res[r], amount as f64, from, until).unwrap();
            } else {
                cal.add(res[r], amount as f64, from, until).unwrap();
            }
        }
        cal.rollback();
        prop_assert_eq!(cal.booking_count(), model.bookings.len());
        for op in &after {
            apply(&mut cal, &mut model, &res, op);
        }
        prop_assert_eq!(cal.booking_count(), model.bookings.len());
        for &(r, _, from, length) in &queries {
            let until = length.map(|l| from + l);
            prop_assert!((cal.used_at(res[r], t(from)).unwrap() - model.used_at(r, from)).abs() < 1e-9);
            prop_assert!(
                (cal.peak_over(res[r], t(from), until.map(t)).unwrap() - model.peak_over(r, from, until)).abs() < 1e-9,
                "peak over [{}, {:?}) of {}", from, until, r
            );
        }
    }
}
