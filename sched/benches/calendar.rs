#![allow(clippy::unwrap_used)] // a benchmark of a known-good calendar
//! The calendar's "free over an interval" query against one number per resource, on the
//! scheduler benchmark's cluster: 1,000 hosts with 2 queue instances each (their slots)
//! and the host's memory, 10,000 running tasks booked on them.
//!
//! `plain`: what the cycle reads today (capacity less used, one `Vec<f64>` entry per
//! resource).
//! `calendar`: the same question asked as "free over [now, now + h_rt)", every booking
//! started in the past (the common case, no reservation anywhere).
//! `calendar_future`: as `calendar` with a future booking (an advance reservation) on one
//! host in ten, so that a tenth of the queries sweep their bookings.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use gantry_sched::{Calendar, ResourceId, Span, Time};

const HOSTS: usize = 1000;
const QUEUES: usize = 2;
const TASKS: usize = 10_000;

struct Cluster {
    calendar: Calendar,
    /// Per instance: its slots; per host: its memory.
    slots: Vec<ResourceId>,
    memory: Vec<ResourceId>,
    plain_capacity: Vec<f64>,
    plain_used: Vec<f64>,
    plain_memory_used: Vec<f64>,
}

fn cluster(future: bool) -> Cluster {
    let now = Time::from_secs(1_000_000);
    let mut calendar = Calendar::new();
    let mut slots = Vec::new();
    let mut memory = Vec::new();
    for _ in 0..HOSTS {
        memory.push(calendar.add_resource(64.0e9));
        for _ in 0..QUEUES {
            slots.push(calendar.add_resource(8.0));
        }
    }
    let mut plain_used = vec![0.0; slots.len()];
    let mut plain_memory_used = vec![0.0; memory.len()];
    for task in 0..TASKS {
        let inst = (task * 7919) % slots.len();
        let started = now - Span::from_secs((task % 600) as i64);
        // Half the tasks have an h_rt, half run open-ended.
        let until = (task % 2 == 0).then(|| started + Span::from_secs(3600));
        calendar.book(slots[inst], 1.0, started, until).unwrap();
        calendar
            .book(memory[inst / QUEUES], 1.0e9, started, until)
            .unwrap();
        plain_used[inst] += 1.0;
        plain_memory_used[inst / QUEUES] += 1.0e9;
    }
    if future {
        for host in (0..HOSTS).step_by(10) {
            let from = now + Span::from_secs(7200);
            calendar
                .book(
                    slots[host * QUEUES],
                    4.0,
                    from,
                    Some(from + Span::from_secs(3600)),
                )
                .unwrap();
        }
    }
    Cluster {
        calendar,
        plain_capacity: vec![8.0; slots.len()],
        plain_used,
        plain_memory_used,
        slots,
        memory,
    }
}

fn bench(c: &mut Criterion) {
    let now = Time::from_secs(1_000_000);
    let run = Some(now + Span::from_secs(1800));
    let plain = cluster(false);
    c.bench_function("free_now/plain", |b| {
        b.iter(|| {
            let mut fits = 0;
            for i in 0..plain.slots.len() {
                let free = plain.plain_capacity[i] - plain.plain_used[i];
                let mem = 64.0e9 - plain.plain_memory_used[i / QUEUES];
                if free >= black_box(1.0) && mem >= 1.0e9 {
                    fits += 1;
                }
            }
            fits
        })
    });
    for (name, future) in [("calendar", false), ("calendar_future", true)] {
        let cl = cluster(future);
        c.bench_function(&format!("free_over/{name}"), |b| {
            b.iter(|| {
                let mut fits = 0;
                for (i, &r) in cl.slots.iter().enumerate() {
                    let free = cl.calendar.free_over(r, now, black_box(run)).unwrap();
                    let mem = cl
                        .calendar
                        .free_over(cl.memory[i / QUEUES], now, run)
                        .unwrap();
                    if free >= black_box(1.0) && mem >= 1.0e9 {
                        fits += 1;
                    }
                }
                fits
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
