//! The load probe's arithmetic, shared by the production shell and the simulator: sleep
//! 10 to 20 ms, record how late each wake-up is (event-loop lag), and once per
//! `LOAD_SAMPLE_INTERVAL` turn the lags, the process CPU and the cgroup's throttling
//! counters into a [`LoadSample`].
//!
//! Samples are due on a fixed schedule (start + k x interval), not "an interval after the
//! last late wake-up": under a tight CPU quota a wake-up can be most of a CFS period late,
//! and measuring from it would let every sample drift later. The CPU share is still
//! computed over the time that really passed between two readings.

use crate::machine::overload::level::LoadSample;
use crate::vocabulary::time::Time;

/// The probe's sleeps vary between these bounds, so they do not beat with the 100 ms
/// CFS period.
pub const SLEEP_MS_MIN: u64 = 10;
pub const SLEEP_MS_MAX: u64 = 20;
/// Lag measurements kept per interval at most (one per 10 ms for 10 s).
pub const LAGS_MAX: usize = 1000;

/// One reading of the process's CPU and its cgroup's throttling counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuReading {
    /// Process CPU time (all threads) since an arbitrary origin.
    pub cpu_us: u64,
    /// CFS periods elapsed and periods throttled, when the cgroup has a quota.
    pub periods: Option<(u64, u64)>,
}

/// The probe's state between samples.
#[derive(Clone, Debug)]
pub struct Probe {
    interval_us: u64,
    step: u64,
    lags_us: Vec<u64>,
    /// When the current interval's reading was taken.
    read_at: Time,
    reading: CpuReading,
    /// When the next sample is due.
    due: Time,
}

impl Probe {
    pub fn new(interval_us: u64, now: Time, reading: CpuReading) -> Probe {
        let interval_us = interval_us.max(1);
        Probe {
            interval_us,
            step: 0,
            lags_us: Vec::with_capacity(128),
            read_at: now,
            reading,
            due: now.plus_us(interval_us),
        }
    }

    /// How long the next sleep is: a deterministic 10-20 ms pattern.
    pub fn next_sleep_us(&mut self) -> u64 {
        self.step = self.step.wrapping_add(1);
        let ms = SLEEP_MS_MIN + (self.step.wrapping_mul(7) % (SLEEP_MS_MAX - SLEEP_MS_MIN + 1));
        ms * 1000
    }

    /// Records a wake-up at `woke` that was meant for `intended`; true when a sample is
    /// due (then call [`Probe::sample`] with a fresh reading).
    pub fn woke(&mut self, intended: Time, woke: Time) -> bool {
        if self.lags_us.len() < LAGS_MAX {
            self.lags_us.push(woke.since_us(intended));
        }
        woke >= self.due
    }

    /// Closes the interval at `now` with `reading`; `quota_cores` is the CPU quota
    /// (`None` = no quota, counted as one core; more than one core counts as one).
    pub fn sample(
        &mut self,
        now: Time,
        reading: CpuReading,
        quota_cores: Option<f64>,
    ) -> LoadSample {
        let (lag_us_max, lag_us_p99) = summarize(&mut self.lags_us);
        self.lags_us.clear();
        let wall_us = now.since_us(self.read_at);
        let cpu_us = reading.cpu_us.saturating_sub(self.reading.cpu_us);
        let throttled_share = match (self.reading.periods, reading.periods) {
            (Some((p0, t0)), Some((p1, t1))) => {
                let periods = p1.saturating_sub(p0);
                if periods == 0 {
                    0.0
                } else {
                    (t1.saturating_sub(t0) as f64 / periods as f64).clamp(0.0, 1.0)
                }
            }
            _ => 0.0,
        };
        self.read_at = now;
        self.reading = reading;
        // Next due time on the fixed grid, skipping intervals that passed entirely.
        while self.due <= now {
            self.due = self.due.plus_us(self.interval_us);
        }
        LoadSample {
            lag_us_max,
            lag_us_p99,
            cpu_share: cpu_share(cpu_us, wall_us, quota_cores),
            throttled_share,
        }
    }
}

/// CPU time over wall time as a share of the quota, the quota capped at one core (the
/// game logic runs on one core).
pub fn cpu_share(cpu_us: u64, wall_us: u64, quota_cores: Option<f64>) -> f64 {
    if wall_us == 0 {
        return 0.0;
    }
    let cores = quota_cores.unwrap_or(1.0).clamp(0.001, 1.0);
    (cpu_us as f64 / (wall_us as f64 * cores)).max(0.0)
}

/// Max and p99 (nearest rank: the smallest value at or above 99 % of the measurements).
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
