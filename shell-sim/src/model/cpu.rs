//! The server thread's CPU under a cgroup quota: work runs at one core's speed until
//! the quota of the current CFS period is used up, then the thread is throttled until
//! the next period begins. Counters mirror the kernel's `cpu.stat` (`nr_periods`,
//! `nr_throttled`, `usage`), so the load probe reads them as the shell reads cgroup files.
//!
//! Periods are aligned at multiples of `period_us` from time zero. Like the kernel, a
//! period is counted only when the cgroup had something to run in it.
//!
//! Two kinds of work run beside the thread and share its quota: the server's idle
//! floor (its executor threads' epoll wake-ups and eventfd writes, charged at the start
//! of every period, so every period counts) and work on other threads of the process
//! ([`Cpu::charge`]: the embedded AI's workers). Parallel work past a period's quota is
//! owed by the next period, at most one period's worth: the AI workers run at nice 10,
//! so the kernel never lets them take the event loop's share for longer.

use wizard_core::Time;

/// The thread's CPU accounting.
#[derive(Clone, Debug)]
pub struct Cpu {
    period_us: u64,
    /// CPU time allowed per period; `None` is one whole core.
    quota_us: Option<u64>,
    period: u64,
    used_in_period_us: u64,
    period_counted: bool,
    period_throttled: bool,
    usage_us: u64,
    nr_periods: u64,
    nr_throttled: u64,
    /// The idle floor's CPU per period.
    floor_us: u64,
}

/// A snapshot of the counters, as `cpu.stat` would show them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuStat {
    pub usage_us: u64,
    pub nr_periods: u64,
    pub nr_throttled: u64,
}

impl Cpu {
    /// `quota_cores` of one core per `period_us` (`None` or >= 1: unlimited for one
    /// thread), of which the idle floor takes `floor_us_per_s` of CPU a second.
    pub fn new(quota_cores: Option<f64>, period_us: u64, floor_us_per_s: u64) -> Cpu {
        let period_us = period_us.max(1000);
        let quota_us = quota_cores.filter(|c| *c < 1.0).map(|c| {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let q = (c.max(0.001) * period_us as f64).round() as u64;
            q.max(1)
        });
        Cpu {
            period_us,
            quota_us,
            period: 0,
            used_in_period_us: 0,
            period_counted: false,
            period_throttled: false,
            usage_us: 0,
            nr_periods: 0,
            nr_throttled: 0,
            floor_us: floor_us_per_s.saturating_mul(period_us) / 1_000_000,
        }
    }

    /// The quota in cores the probe divides by (one core when unlimited).
    pub fn quota_cores(&self) -> f64 {
        match self.quota_us {
            Some(q) => q as f64 / self.period_us as f64,
            None => 1.0,
        }
    }

    pub fn stat(&self) -> CpuStat {
        CpuStat {
            usage_us: self.usage_us,
            nr_periods: self.nr_periods,
            nr_throttled: self.nr_throttled,
        }
    }

    /// The counters at `now`, the idle floor of the current period included.
    pub fn stat_at(&mut self, now: Time) -> CpuStat {
        self.enter_period(now.0);
        self.stat()
    }

    fn enter_period(&mut self, t: u64) {
        // Work charged for a time the thread has passed already lands in its period.
        let p = (t / self.period_us).max(self.period);
        if p != self.period {
            let skipped = p - self.period - 1;
            let owed = self.quota_us.map_or(0, |q| {
                let over = self.used_in_period_us.saturating_sub(q);
                over.min(q).saturating_sub(skipped.saturating_mul(q))
            });
            if self.floor_us > 0 {
                // The floor runs in every period, those the thread slept through too.
                self.nr_periods += skipped;
                self.usage_us += skipped.saturating_mul(self.floor_us);
            }
            self.period = p;
            self.used_in_period_us = owed;
            self.period_counted = false;
            self.period_throttled = false;
        }
        if !self.period_counted {
            self.period_counted = true;
            self.nr_periods += 1;
            self.used_in_period_us += self.floor_us;
            self.usage_us += self.floor_us;
        }
    }

    /// Work of `us` on another thread of the process at `now`: it uses the quota (and
    /// shows in `usage`) without occupying the thread.
    pub fn charge(&mut self, now: Time, us: u64) {
        if us == 0 {
            return;
        }
        self.enter_period(now.0);
        self.usage_us += us;
        self.used_in_period_us += us;
    }

    /// Runs `work_us` of CPU starting at `start`; returns when it is done.
    pub fn run(&mut self, start: Time, work_us: u64) -> Time {
        let mut t = start.0;
        let mut left = work_us;
        if left == 0 {
            return start;
        }
        self.usage_us += work_us;
        let Some(quota) = self.quota_us else {
            self.enter_period(t);
            return Time(t + left);
        };
        loop {
            self.enter_period(t);
            let period_end = (self.period + 1) * self.period_us;
            let avail = quota.saturating_sub(self.used_in_period_us);
            let here = left.min(avail).min(period_end - t);
            t += here;
            self.used_in_period_us += here;
            left -= here;
            if left == 0 {
                return Time(t);
            }
            if self.used_in_period_us >= quota {
                if !self.period_throttled {
                    self.period_throttled = true;
                    self.nr_throttled += 1;
                }
                t = period_end;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_throttles_until_the_next_period() {
        let mut cpu = Cpu::new(Some(0.15), 100_000, 0);
        // 30 ms of work at 15 ms per 100 ms: 15 ms, wait, 15 ms.
        let end = cpu.run(Time(0), 30_000);
        assert_eq!(end, Time(115_000));
        let s = cpu.stat();
        assert_eq!((s.nr_periods, s.nr_throttled, s.usage_us), (2, 1, 30_000));
    }

    #[test]
    fn unlimited_runs_at_once() {
        let mut cpu = Cpu::new(None, 100_000, 0);
        assert_eq!(cpu.run(Time(10), 5), Time(15));
        assert_eq!(cpu.stat().nr_throttled, 0);
        assert!((cpu.quota_cores() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn the_idle_floor_takes_its_share_of_every_period() {
        // 2 % of a core is 2 ms per 100 ms; a floor of 14.5 ms a second takes 1.45 ms
        // of it, so 1 ms of work needs two periods.
        let mut cpu = Cpu::new(Some(0.02), 100_000, 14_500);
        let end = cpu.run(Time(0), 1_000);
        assert_eq!(end, Time(100_450));
        // Periods the thread slept through count, with their floor.
        let s = cpu.stat_at(Time(1_000_000));
        assert_eq!(s.nr_periods, 11);
        assert_eq!(s.usage_us, 1_000 + 11 * 1_450);
        assert_eq!(s.nr_throttled, 1);
    }

    #[test]
    fn parallel_work_uses_the_quota_and_owes_at_most_one_period() {
        let mut cpu = Cpu::new(Some(0.1), 100_000, 0);
        // 50 ms charged at once: this period's 10 ms and at most the next one's.
        cpu.charge(Time(0), 50_000);
        assert_eq!(cpu.run(Time(1_000), 1_000), Time(200_000 + 1_000));
        assert_eq!(cpu.stat().usage_us, 51_000);
        // Unlimited: charged work only counts.
        let mut free = Cpu::new(None, 100_000, 0);
        free.charge(Time(0), 50_000);
        assert_eq!(free.run(Time(0), 10), Time(10));
    }
}
