//! The load probe's arithmetic: lag percentiles, CPU against the quota, throttling, and
//! samples on a fixed schedule however late the wake-ups are; the grid the shells wake on
//! for the core's deadlines.

use wizard_core::Time;
use wizard_core::shell::probe::{CpuReading, Probe, cpu_share, summarize};

#[test]
fn percentiles_are_nearest_rank() {
    assert_eq!(summarize(&mut []), (0, 0));
    assert_eq!(summarize(&mut [5]), (5, 5));
    let mut lags: Vec<u64> = (1..=100).rev().collect();
    assert_eq!(summarize(&mut lags), (100, 99));
    let mut lags: Vec<u64> = (1..=1000).collect();
    assert_eq!(summarize(&mut lags), (1000, 990));
}

#[test]
fn cpu_is_measured_against_the_quota_capped_at_one_core() {
    assert!((cpu_share(500_000, 1_000_000, None) - 0.5).abs() < 1e-9);
    assert!((cpu_share(500_000, 1_000_000, Some(4.0)) - 0.5).abs() < 1e-9);
    assert!((cpu_share(150_000, 1_000_000, Some(0.15)) - 1.0).abs() < 1e-9);
    assert_eq!(cpu_share(5, 0, None), 0.0);
}

#[test]
fn a_sample_reports_lag_cpu_and_throttling() {
    let start = CpuReading {
        cpu_us: 0,
        periods: Some((0, 0)),
    };
    let mut p = Probe::new(1_000_000, Time(0), start);
    assert!(!p.woke(Time(10_000), Time(12_000)));
    assert!(p.woke(Time(1_000_000), Time(1_000_000)));
    let end = CpuReading {
        cpu_us: 150_000,
        periods: Some((10, 10)),
    };
    let s = p.sample(Time(1_000_000), end, Some(0.15));
    assert_eq!(s.lag_us_max, 2000);
    assert!((s.cpu_share - 1.0).abs() < 1e-9);
    assert!((s.throttled_share - 1.0).abs() < 1e-9);
    // Without cgroup counters there is no throttling to report.
    let mut p = Probe::new(1_000_000, Time(0), CpuReading::default());
    p.woke(Time(1_000_000), Time(1_000_000));
    assert_eq!(
        p.sample(Time(1_000_000), CpuReading::default(), None)
            .throttled_share,
        0.0
    );
}

/// Every wake-up is 90 ms late (a throttled CFS period): samples stay due at whole
/// seconds instead of drifting by the lateness each time.
#[test]
fn samples_stay_on_their_schedule_when_wake_ups_are_late() {
    let mut p = Probe::new(1_000_000, Time(0), CpuReading::default());
    let mut now = Time(0);
    let mut samples_at = Vec::new();
    while samples_at.len() < 5 {
        let intended = now.plus_us(p.next_sleep_us());
        now = intended.plus_us(90_000);
        if p.woke(intended, now) {
            p.sample(now, CpuReading::default(), None);
            samples_at.push(now.as_micros());
        }
    }
    for (k, at) in (1u64..).zip(&samples_at) {
        assert!(
            *at >= k * 1_000_000 && *at < k * 1_000_000 + 120_000,
            "sample {k} at {at} us"
        );
    }
}

#[test]
fn deadlines_wake_on_the_grid_and_due_ones_at_once() {
    use wizard_core::machine::timers::{WAKE_GRID_US, wake_at};
    let g = WAKE_GRID_US;
    // (deadline, now, wake)
    let cases = [
        (5, 5, 5),
        (3, 5, 5),
        (0, 0, 0),
        (6, 5, g),
        (g, 5, g),
        (g + 1, 5, 2 * g),
        (2 * g - 1, g, 2 * g),
        (800_123, 1, 800_000 + g),
        (u64::MAX, 0, u64::MAX),
    ];
    for (deadline, now, wake) in cases {
        assert_eq!(
            wake_at(Time(deadline), Time(now)),
            Time(wake),
            "deadline {deadline} at {now}"
        );
    }
    // Deadlines within one step of the grid share their wake-up, never early.
    let wakes: std::collections::BTreeSet<Time> = (1..=g)
        .map(|d| {
            let w = wake_at(Time(7 * g + d), Time(0));
            assert!(w >= Time(7 * g + d));
            w
        })
        .collect();
    assert_eq!(wakes.len(), 1);
}
