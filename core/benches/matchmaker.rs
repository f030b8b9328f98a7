//! Criterion benchmarks of the quick-play matchmaker's CPU per ticket with 10 000
//! tickets in the pool: a ticket in and out, a pass over the whole pool, and 10 000
//! players of equal rating arriving and being seated.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a benchmark may stop on a broken setup

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use wizard_core::Time;
use wizard_core::machine::matchmaker::{MatchConfig, Matchmaker};

const POOL: u32 = 10_000;

fn config() -> MatchConfig {
    MatchConfig {
        wait_us: 30_000_000,
        interval_us: 1_000_000,
        tickets_max: 20_000,
        settle_us: 0,
    }
}

/// 10 000 tickets over the four table sizes whose ratings are 10 points apart in each
/// size: no two fit at one table before their wait widens the spread.
fn full_pool() -> Matchmaker<u32> {
    let mut m = Matchmaker::new(config());
    let mut out = Vec::new();
    for k in 0..POOL {
        let seats = 3 + (k % 4) as u8;
        m.enqueue(Time::ZERO, k, seats, f64::from(k / 4) * 10.0, &mut out)
            .unwrap();
    }
    assert!(out.is_empty() && m.len() == POOL as usize);
    m
}

fn benches(c: &mut Criterion) {
    c.bench_function("matchmaker/enqueue_and_cancel_at_10k", |b| {
        let mut m = full_pool();
        let mut out = Vec::new();
        let mut k = POOL;
        b.iter(|| {
            k += 1;
            // Between two tickets of its size, 5 points from each: no table.
            let rating = f64::from(k % POOL / 4) * 10.0 + 5.0;
            m.enqueue(Time::ZERO, k, 3 + (k % 4) as u8, rating, &mut out)
                .unwrap();
            black_box(m.cancel(k));
        });
        assert!(out.is_empty());
    });
    c.bench_function("matchmaker/pass_over_10k", |b| {
        let pool = full_pool();
        b.iter_batched(
            || (pool.clone(), Vec::new()),
            |(mut m, mut out)| {
                // A pass is due after one interval; nothing fits yet.
                m.poll(Time(1_000_000), &mut out);
                black_box((m.len(), out.len()))
            },
            BatchSize::LargeInput,
        )
    });
    c.bench_function("matchmaker/seat_10k_arrivals", |b| {
        b.iter(|| {
            let mut m = Matchmaker::new(config());
            let mut out = Vec::new();
            for k in 0..POOL {
                m.enqueue(Time(u64::from(k)), k, 4, 0.0, &mut out).unwrap();
            }
            black_box(out.len())
        })
    });
}

criterion_group!(group, benches);
criterion_main!(group);
