//! The resource calendar: every consumable of the global host, of every exec host and of
//! every queue instance (slots included) as a capacity booked over time.
//!
//! A running task is a booking from its start to its expected end (open-ended when the
//! job gives no run time); an advance reservation is a booking that starts in the
//! future. "Free now" is the calendar read at now; placing a job asks what is free over
//! the interval `[now, now + run time)`, or from now on for a job without a run time.
//!
//! Every interval is half-open: a booking `[from, until)` no longer holds its amount at
//! `until`, so a booking may start at the instant another ends.
//!
//! The common case costs what one number per resource costs: while every booking of a
//! resource started at or before the queried start and none has ended by then, the peak
//! over any interval from there on is the resource's total, kept as bookings come and go.

use crate::time::{Span, Time};

/// A bookable resource: one consumable on one layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceId(u32);

/// One booking, to release it or change its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BookingId(u32);

/// What goes wrong using a calendar: ids that are not (or no longer) in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CalendarError {
    #[error("resource {0} is not in the calendar")]
    UnknownResource(u32),
    #[error("booking {0} is not in the calendar")]
    UnknownBooking(u32),
}

#[derive(Debug, Clone)]
struct Booking {
    resource: u32,
    amount: f64,
    from: Time,
    /// None: open-ended.
    until: Option<Time>,
    live: bool,
}

/// What the common query reads of a resource, kept together.
#[derive(Debug, Clone, Copy)]
struct Summary {
    capacity: f64,
    /// The sum of the amounts of all its bookings.
    total: f64,
    /// The latest start of its bookings (`Time::MIN` with none).
    latest_start: Time,
    /// The earliest end of its bookings (`Time::MAX` with none, or all open-ended).
    earliest_end: Time,
    /// Some booking holds a negative amount (more given back than added): its end
    /// raises the level, so the total is not the peak.
    negative: bool,
}

/// An amount below this is negative (not a rounding error of a give-back).
const NEGATIVE: f64 = -1e-9;

impl Summary {
    /// Everything has begun by `t`, nothing has ended and nothing is negative: the total
    /// holds from `t` until the first end, and can only fall after it.
    fn settled_at(&self, t: Time) -> bool {
        self.latest_start <= t && self.earliest_end > t && !self.negative
    }
}

/// The start and end bounds of a resource's bookings.
fn bounds(list: &[u32], bookings: &[Booking], s: &mut Summary) {
    s.latest_start = Time::MIN;
    s.earliest_end = Time::MAX;
    s.negative = false;
    for &b in list {
        let b = &bookings[b as usize];
        s.negative |= b.amount < NEGATIVE;
        s.latest_start = s.latest_start.max(b.from);
        if let Some(u) = b.until {
            s.earliest_end = s.earliest_end.min(u);
        }
    }
}

/// Capacities booked over time.
#[derive(Debug, Clone, Default)]
pub struct Calendar {
    /// Per resource: what the common query reads.
    summaries: Vec<Summary>,
    /// Per resource: its bookings (ids), in no particular order.
    lists: Vec<Vec<u32>>,
    bookings: Vec<Booking>,
    /// Released booking slots, reused.
    free: Vec<u32>,
    /// While a trial runs: what it booked and added, to take back.
    trial: Option<Vec<Change>>,
}

/// A change a trial made, as [`Calendar::rollback`] takes it back.
#[derive(Debug, Clone, Copy)]
enum Change {
    /// A booking of its own.
    Booked(u32),
    /// An amount added to an existing booking.
    Added(u32, f64),
}

impl Calendar {
    pub fn new() -> Calendar {
        Calendar::default()
    }

    /// A new resource of the given capacity (`f64::INFINITY`: unlimited).
    pub fn add_resource(&mut self, capacity: f64) -> ResourceId {
        self.summaries.push(Summary {
            capacity,
            total: 0.0,
            latest_start: Time::MIN,
            earliest_end: Time::MAX,
            negative: false,
        });
        self.lists.push(Vec::new());
        ResourceId(self.summaries.len() as u32 - 1)
    }

    pub fn resource_count(&self) -> usize {
        self.summaries.len()
    }

    /// How many bookings the calendar holds.
    pub fn booking_count(&self) -> usize {
        self.bookings.len() - self.free.len()
    }

    fn resource(&self, r: ResourceId) -> Result<&Summary, CalendarError> {
        self.summaries
            .get(r.0 as usize)
            .ok_or(CalendarError::UnknownResource(r.0))
    }

    /// The bookings of a resource known to exist.
    fn list(&self, r: ResourceId) -> impl Iterator<Item = &Booking> {
        self.lists[r.0 as usize]
            .iter()
            .map(|&b| &self.bookings[b as usize])
    }

    fn booking(&self, b: BookingId) -> Result<&Booking, CalendarError> {
        match self.bookings.get(b.0 as usize) {
            Some(x) if x.live => Ok(x),
            _ => Err(CalendarError::UnknownBooking(b.0)),
        }
    }

    pub fn capacity(&self, r: ResourceId) -> Result<f64, CalendarError> {
        Ok(self.resource(r)?.capacity)
    }

    /// A capacity changes (a configuration change, or a value the host reports); what is
    /// booked stays booked, even beyond the new capacity.
    pub fn set_capacity(&mut self, r: ResourceId, capacity: f64) -> Result<(), CalendarError> {
        self.resource(r)?;
        self.summaries[r.0 as usize].capacity = capacity;
        Ok(())
    }

    /// Book `amount` of a resource over `[from, until)` (`until` None: from `from` on).
    /// The calendar records what it is told; whether it fits is the caller's question
    /// ([`Calendar::free_over`], [`Calendar::earliest_fit`]) — a task that is already
    /// running is booked even where it overcommits.
    pub fn book(
        &mut self,
        r: ResourceId,
        amount: f64,
        from: Time,
        until: Option<Time>,
    ) -> Result<BookingId, CalendarError> {
        self.resource(r)?;
        let booking = Booking {
            resource: r.0,
            amount,
            from,
            until,
            live: true,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.bookings[id as usize] = booking;
                id
            }
            None => {
                self.bookings.push(booking);
                self.bookings.len() as u32 - 1
            }
        };
        self.lists[r.0 as usize].push(id);
        if let Some(trial) = &mut self.trial {
            trial.push(Change::Booked(id));
        }
        let res = &mut self.summaries[r.0 as usize];
        res.total += amount;
        res.negative |= amount < NEGATIVE;
        res.latest_start = res.latest_start.max(from);
        if let Some(u) = until {
            res.earliest_end = res.earliest_end.min(u);
        }
        Ok(BookingId(id))
    }

    /// Add `amount` over `[from, until)` without a booking of its own to release: it
    /// joins the resource's latest booking when that has the same interval (a cycle
    /// books every task it places from now for its run time), and a negative amount
    /// gives back what such an addition took.
    pub fn add(
        &mut self,
        r: ResourceId,
        amount: f64,
        from: Time,
        until: Option<Time>,
    ) -> Result<(), CalendarError> {
        self.resource(r)?;
        if let Some(&last) = self.lists[r.0 as usize].last() {
            let b = &mut self.bookings[last as usize];
            if b.from == from && b.until == until {
                b.amount += amount;
                if let Some(trial) = &mut self.trial {
                    trial.push(Change::Added(last, amount));
                }
                let res = &mut self.summaries[r.0 as usize];
                res.total += amount;
                res.negative |= b.amount < NEGATIVE;
                return Ok(());
            }
        }
        self.book(r, amount, from, until).map(|_| ())
    }

    /// Begin a trial: what is booked and added from now on (and only that: releases,
    /// ends and capacities are not recorded) is taken back by [`Calendar::rollback`].
    /// A question asked on a calendar kept between questions books its answer in a
    /// trial.
    pub fn begin_trial(&mut self) {
        self.trial = Some(Vec::new());
    }

    /// Take back everything booked and added since [`Calendar::begin_trial`], last
    /// first, and end the trial (nothing to do without one).
    pub fn rollback(&mut self) {
        let Some(changes) = self.trial.take() else {
            return;
        };
        for change in changes.into_iter().rev() {
            match change {
                // Each was live when recorded, and nothing released since.
                Change::Booked(b) => {
                    let _ = self.release(BookingId(b));
                }
                Change::Added(b, amount) => {
                    let booking = &mut self.bookings[b as usize];
                    booking.amount -= amount;
                    let r = booking.resource as usize;
                    self.summaries[r].total -= amount;
                    bounds(&self.lists[r], &self.bookings, &mut self.summaries[r]);
                }
            }
        }
    }

    /// Take a booking back (its task ended, its reservation was deleted).
    pub fn release(&mut self, b: BookingId) -> Result<(), CalendarError> {
        let booking = self.booking(b)?.clone();
        self.bookings[b.0 as usize].live = false;
        self.free.push(b.0);
        let r = booking.resource as usize;
        let list = &mut self.lists[r];
        if let Some(n) = list.iter().position(|&x| x == b.0) {
            list.swap_remove(n);
        }
        let res = &mut self.summaries[r];
        res.total -= booking.amount;
        if list.is_empty() {
            // No drift of float sums between busy periods.
            res.total = 0.0;
        }
        bounds(list, &self.bookings, res);
        Ok(())
    }

    /// Change when a booking ends (a job's run time changed, or became known).
    pub fn set_end(&mut self, b: BookingId, until: Option<Time>) -> Result<(), CalendarError> {
        self.booking(b)?;
        let booking = &mut self.bookings[b.0 as usize];
        booking.until = until;
        let r = booking.resource as usize;
        bounds(&self.lists[r], &self.bookings, &mut self.summaries[r]);
        Ok(())
    }

    /// Release every booking that has ended by `now`; how many there were.
    pub fn expire(&mut self, now: Time) -> usize {
        let ended: Vec<u32> = (0..self.bookings.len() as u32)
            .filter(|&b| {
                let b = &self.bookings[b as usize];
                b.live && b.until.is_some_and(|u| u <= now)
            })
            .collect();
        for &b in &ended {
            // Every id in `ended` is live: releasing cannot fail.
            let _ = self.release(BookingId(b));
        }
        ended.len()
    }

    /// What is booked at one instant.
    pub fn used_at(&self, r: ResourceId, t: Time) -> Result<f64, CalendarError> {
        let res = self.resource(r)?;
        if res.settled_at(t) {
            return Ok(res.total);
        }
        Ok(self
            .list(r)
            .filter(|b| b.from <= t && b.until.is_none_or(|u| u > t))
            .map(|b| b.amount)
            .sum())
    }

    /// The most booked at any instant of `[from, until)` (`until` None: from `from` on;
    /// an empty interval is the instant `from`).
    #[inline]
    pub fn peak_over(
        &self,
        r: ResourceId,
        from: Time,
        until: Option<Time>,
    ) -> Result<f64, CalendarError> {
        let res = self.resource(r)?;
        if res.settled_at(from) {
            return Ok(res.total);
        }
        Ok(self.sweep(r, from, until))
    }

    /// [`Calendar::peak_over`] the long way: the bookings that overlap the interval,
    /// start by start and end by end.
    #[inline(never)]
    fn sweep(&self, r: ResourceId, from: Time, until: Option<Time>) -> f64 {
        // An empty interval is the instant `from`: the millisecond from it.
        let until = until.map(|u| u.max(from + Span::from_millis(1)));
        let mut level = 0.0;
        // (time, change): ends sort before starts at the same instant (half-open).
        let mut events: Vec<(Time, f64)> = Vec::new();
        for b in self.list(r) {
            if b.until.is_some_and(|u| u <= from) {
                continue;
            }
            if until.is_some_and(|u| b.from >= u) {
                continue;
            }
            if b.from <= from {
                level += b.amount;
            } else {
                events.push((b.from, b.amount));
            }
            if let Some(e) = b.until {
                if until.is_none_or(|u| e < u) {
                    events.push((e, -b.amount));
                }
            }
        }
        events.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        let mut peak = level;
        for (_, change) in events {
            level += change;
            peak = peak.max(level);
        }
        peak
    }

    /// What is free over `[from, until)`: the capacity less the peak booked in it.
    pub fn free_over(
        &self,
        r: ResourceId,
        from: Time,
        until: Option<Time>,
    ) -> Result<f64, CalendarError> {
        Ok(self.resource(r)?.capacity - self.peak_over(r, from, until)?)
    }

    /// The earliest time at or after `from` when `amount` fits for `length` (None: from
    /// then on), or None when it never does. It is `from` or the end of a booking: only
    /// an end frees anything.
    pub fn earliest_fit(
        &self,
        r: ResourceId,
        amount: f64,
        from: Time,
        length: Option<Span>,
    ) -> Result<Option<Time>, CalendarError> {
        let res = self.resource(r)?;
        let fits = |t: Time| -> Result<bool, CalendarError> {
            let peak = self.peak_over(r, t, length.map(|l| t + l))?;
            Ok(peak + amount <= res.capacity)
        };
        if fits(from)? {
            return Ok(Some(from));
        }
        let mut ends: Vec<Time> = self
            .list(r)
            .filter_map(|b| b.until)
            .filter(|&u| u > from)
            .collect();
        ends.sort_unstable();
        ends.dedup();
        for t in ends {
            if fits(t)? {
                return Ok(Some(t));
            }
        }
        Ok(None)
    }

    /// When bookings of a resource end after `t` (unsorted): the only times anything of
    /// it becomes free.
    pub fn ends_after(
        &self,
        r: ResourceId,
        t: Time,
    ) -> Result<impl Iterator<Item = Time> + '_, CalendarError> {
        self.resource(r)?;
        Ok(self.list(r).filter_map(|b| b.until).filter(move |&u| u > t))
    }

    /// The earliest time at or after `from` when every `(resource, amount)` fits at once
    /// for `length`, or None when that never happens.
    pub fn earliest_fit_all(
        &self,
        wants: &[(ResourceId, f64)],
        from: Time,
        length: Option<Span>,
    ) -> Result<Option<Time>, CalendarError> {
        let mut t = from;
        'again: loop {
            for &(r, amount) in wants {
                match self.earliest_fit(r, amount, t, length)? {
                    None => return Ok(None),
                    Some(later) if later > t => {
                        t = later;
                        continue 'again;
                    }
                    Some(_) => {}
                }
            }
            return Ok(Some(t));
        }
    }
}

#[cfg(test)]
mod tests;
