//! The load probe as the production shell runs it: the arithmetic is the core's
//! [`wizard_core::shell::probe::Probe`], the very code shell-smol's probe uses; here
//! the sleeping and waking are events of the simulator, and the CPU reading comes from
//! the simulated CPU instead of the kernel.

use wizard_core::Time;
use wizard_core::machine::overload::level::LoadSample;
use wizard_core::shell::probe::{self, CpuReading};

use crate::model::cpu::CpuStat;

fn reading(stat: CpuStat) -> CpuReading {
    CpuReading {
        cpu_us: stat.usage_us,
        periods: Some((stat.nr_periods, stat.nr_throttled)),
    }
}

/// The probe's state between samples.
#[derive(Clone, Debug)]
pub struct Probe {
    inner: probe::Probe,
}

impl Probe {
    pub fn new(interval_us: u64, now: Time, stat: CpuStat) -> Probe {
        Probe {
            inner: probe::Probe::new(interval_us, now, reading(stat)),
        }
    }

    /// How long the next sleep is (the shell's deterministic 10-20 ms pattern).
    pub fn next_sleep_us(&mut self) -> u64 {
        self.inner.next_sleep_us()
    }

    /// The probe woke at `woke`, intending `intended`: records the lag and returns a
    /// sample when one is due.
    pub fn woke(
        &mut self,
        intended: Time,
        woke: Time,
        stat: CpuStat,
        quota_cores: f64,
    ) -> Option<LoadSample> {
        self.inner
            .woke(intended, woke)
            .then(|| self.inner.sample(woke, reading(stat), Some(quota_cores)))
    }
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
