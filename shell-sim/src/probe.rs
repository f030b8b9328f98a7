//! The load probe as the production shell runs it (shell-smol/src/probe.rs): it sleeps
//! 10 to 20 ms, measures how late it woke (the event-loop lag), and once at least
//! `LOAD_SAMPLE_INTERVAL` has passed reports max and p99 lag, CPU over the interval
//! against the quota, and the throttled share of CFS periods as a [`LoadSample`].
//!
//! Here the sleeping and waking are events of the simulator; this file holds only the
//! arithmetic, which is the shell's own.

use wizard_core::Time;
use wizard_core::overload::level::LoadSample;

use crate::cpu::CpuStat;

/// The probe's sleeps vary between these bounds (as in the shell).
pub const SLEEP_MS_MIN: u64 = 10;
pub const SLEEP_MS_MAX: u64 = 20;
/// Lag measurements kept per interval at most.
pub const LAGS_MAX: usize = 1000;

/// The probe's state between samples.
#[derive(Clone, Debug)]
pub struct Probe {
    interval_us: u64,
    step: u64,
    lags_us: Vec<u64>,
    start: Time,
    stat_start: CpuStat,
}

impl Probe {
    pub fn new(interval_us: u64, now: Time, stat: CpuStat) -> Probe {
        Probe {
            interval_us: interval_us.max(1),
            step: 0,
            lags_us: Vec::with_capacity(128),
            start: now,
            stat_start: stat,
        }
    }

    /// How long the next sleep is (the shell's deterministic 10-20 ms pattern).
    pub fn next_sleep_us(&mut self) -> u64 {
        self.step = self.step.wrapping_add(1);
        let ms = SLEEP_MS_MIN + (self.step.wrapping_mul(7) % (SLEEP_MS_MAX - SLEEP_MS_MIN + 1));
        ms * 1000
    }

    /// The probe woke at `woke`, intending `intended`: records the lag and returns a
    /// sample when the interval is over.
    pub fn woke(
        &mut self,
        intended: Time,
        woke: Time,
        stat: CpuStat,
        quota_cores: f64,
    ) -> Option<LoadSample> {
        if self.lags_us.len() < LAGS_MAX {
            self.lags_us.push(woke.since_us(intended));
        }
        let wall_us = woke.since_us(self.start);
        if wall_us < self.interval_us {
            return None;
        }
        let (lag_us_max, lag_us_p99) = summarize(&mut self.lags_us);
        let cpu_us = stat.usage_us.saturating_sub(self.stat_start.usage_us);
        let cores = quota_cores.clamp(0.001, 1.0);
        let periods = stat.nr_periods.saturating_sub(self.stat_start.nr_periods);
        let throttled = stat
            .nr_throttled
            .saturating_sub(self.stat_start.nr_throttled);
        let sample = LoadSample {
            lag_us_max,
            lag_us_p99,
            cpu_share: cpu_us as f64 / (wall_us as f64 * cores),
            throttled_share: if periods == 0 {
                0.0
            } else {
                (throttled as f64 / periods as f64).clamp(0.0, 1.0)
            },
        };
        self.lags_us.clear();
        self.start = woke;
        self.stat_start = stat;
        Some(sample)
    }
}

/// Max and p99 (nearest rank) of the lags, as the shell computes them.
pub fn summarize(lags_us: &mut [u64]) -> (u64, u64) {
    if lags_us.is_empty() {
        return (0, 0);
    }
    lags_us.sort_unstable();
    let last = lags_us.len() - 1;
    let p99_index = (lags_us.len() * 99).div_ceil(100).saturating_sub(1);
    let max = lags_us.get(last).copied().unwrap_or(0);
    let p99 = lags_us.get(p99_index).copied().unwrap_or(max);
    (max, p99)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_after_the_interval() {
        let mut p = Probe::new(1_000_000, Time(0), CpuStat::default());
        let busy = CpuStat {
            usage_us: 150_000,
            nr_periods: 10,
            nr_throttled: 10,
        };
        assert!(p.woke(Time(10_000), Time(12_000), busy, 0.15).is_none());
        let s = p.woke(Time(1_000_000), Time(1_000_000), busy, 0.15);
        let s = s.unwrap_or_default();
        assert_eq!(s.lag_us_max, 2000);
        assert!((s.cpu_share - 1.0).abs() < 1e-9);
        assert!((s.throttled_share - 1.0).abs() < 1e-9);
    }
}
