//! The load probe: event-loop lag, process CPU against the CPU quota, and the cgroup's
//! throttled share, reported to the core as [`Input::LoadSample`] every
//! `LOAD_SAMPLE_INTERVAL`.
//!
//! It runs on the same executor as the core task, so its lateness is the lateness every
//! task sees. CPU comes from `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)` (nanosecond
//! accounting, not 10 ms ticks); quota and throttling come from the process's own
//! cgroup, v1 or v2, located through `/proc/self/cgroup` and the mount table with the
//! core's pure parsers. The quota is re-read periodically (a container's limit can be
//! changed live); without one the process counts as having one core. The probe only
//! measures: the core decides what the figures mean.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use async_channel::Sender;
use async_io::Timer;
use rustix::time::{ClockId, clock_gettime};
use tracing::{debug, info};
use wizard_core::io::Input;
use wizard_core::overload::cgroup::{
    CgroupLocation, CgroupVersion, CpuStat, cpu_cgroup_dir, parse_cfs_quota, parse_cpu_max,
    parse_cpu_stat,
};
use wizard_core::overload::level::LoadSample;

use crate::core_task::CoreMsg;

/// The probe's sleeps vary between these bounds so that it does not beat in step with
/// periodic work.
pub const SLEEP_MS_MIN: u64 = 10;
pub const SLEEP_MS_MAX: u64 = 20;
/// Samples between re-reads of the CPU quota.
pub const QUOTA_REREAD_SAMPLES: u32 = 10;
/// Lag measurements kept per interval at most (one per 10 ms for 10 s).
pub const LAGS_MAX: usize = 1000;

/// Where the process's CPU cgroup files are, if anywhere.
#[derive(Clone, Debug)]
pub struct Cgroup {
    location: CgroupLocation,
}

impl Cgroup {
    /// Finds the process's own CPU cgroup; `None` outside Linux cgroups.
    pub fn discover() -> Option<Cgroup> {
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let mounts = std::fs::read_to_string("/proc/self/mountinfo")
            .or_else(|_| std::fs::read_to_string("/proc/mounts"))
            .ok();
        match cpu_cgroup_dir(&own, mounts.as_deref()) {
            Ok(location) => Some(Cgroup { location }),
            Err(e) => {
                debug!(error = %e, "no CPU cgroup found; assuming one core, no throttling");
                None
            }
        }
    }

    /// The directory of the CPU controller files.
    pub fn dir(&self) -> PathBuf {
        self.location.cpu.dir()
    }

    pub fn version(&self) -> CgroupVersion {
        self.location.version
    }

    /// The tightest CPU quota in cores of this cgroup and its ancestors within the
    /// mount (a container's limit is often set on a parent); `None` when unlimited.
    pub fn quota_cores(&self) -> Option<f64> {
        let mount = PathBuf::from(&self.location.cpu.mount_point);
        let mut dir = self.dir();
        let mut tightest: Option<f64> = None;
        loop {
            if let Some(cores) = self.read_quota(&dir) {
                tightest = Some(tightest.map_or(cores, |t| t.min(cores)));
            }
            if dir == mount || !dir.pop() || !dir.starts_with(&mount) {
                break;
            }
        }
        tightest
    }

    fn read_quota(&self, dir: &Path) -> Option<f64> {
        let quota = match self.location.version {
            CgroupVersion::V2 => parse_cpu_max(&read(dir, "cpu.max")?).ok()?,
            CgroupVersion::V1 => parse_cfs_quota(
                &read(dir, "cpu.cfs_quota_us")?,
                &read(dir, "cpu.cfs_period_us")?,
            )
            .ok()?,
        };
        quota.cores()
    }

    /// The cgroup's `cpu.stat`.
    pub fn stat(&self) -> Option<CpuStat> {
        parse_cpu_stat(&read(&self.dir(), "cpu.stat")?).ok()
    }
}

fn read(dir: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(file)).ok()
}

/// Process CPU time used so far.
pub fn process_cpu() -> Duration {
    let t = clock_gettime(ClockId::ProcessCPUTime);
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let nanos = u32::try_from(t.tv_nsec).unwrap_or(0);
    Duration::new(secs, nanos)
}

/// Executor threads for a quota: whole cores, at least one, at most the machine's.
pub fn threads_for(quota_cores: Option<f64>) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    match quota_cores {
        Some(cores) if cores.is_finite() => (cores.floor() as usize).clamp(1, cpus),
        _ => cpus,
    }
}

/// Max and 99th percentile of `lags_us` (sorted in place); zeros when empty.
pub fn summarize(lags_us: &mut [u64]) -> (u64, u64) {
    if lags_us.is_empty() {
        return (0, 0);
    }
    lags_us.sort_unstable();
    let last = lags_us.len() - 1;
    // Nearest rank: the smallest value at or above 99 % of the measurements.
    let p99_index = (lags_us.len() * 99).div_ceil(100).saturating_sub(1);
    let max = lags_us.get(last).copied().unwrap_or(0);
    let p99 = lags_us.get(p99_index).copied().unwrap_or(max);
    (max, p99)
}

/// CPU used over `wall` as a share of `quota_cores` capped at one core.
pub fn cpu_share(cpu: Duration, wall: Duration, quota_cores: Option<f64>) -> f64 {
    let cores = quota_cores.unwrap_or(1.0).clamp(0.001, 1.0);
    let wall_secs = wall.as_secs_f64();
    if wall_secs <= 0.0 {
        return 0.0;
    }
    (cpu.as_secs_f64() / (wall_secs * cores)).max(0.0)
}

/// Share of CFS periods throttled between two `cpu.stat` readings.
pub fn throttled_share(before: Option<CpuStat>, after: Option<CpuStat>) -> f64 {
    let (Some(b), Some(a)) = (before, after) else {
        return 0.0;
    };
    let periods = a.nr_periods.saturating_sub(b.nr_periods);
    if periods == 0 {
        return 0.0;
    }
    let throttled = a.nr_throttled.saturating_sub(b.nr_throttled);
    (throttled as f64 / periods as f64).clamp(0.0, 1.0)
}

/// Runs the probe until the core task is gone.
pub async fn run(inbox: Sender<CoreMsg>, interval: Duration, cgroup: Option<Cgroup>) {
    let mut quota = cgroup.as_ref().and_then(Cgroup::quota_cores);
    info!(
        quota_cores = quota,
        cgroup = cgroup.as_ref().map(|c| c.dir().display().to_string()),
        "Load probe started"
    );
    let mut lags_us: Vec<u64> = Vec::with_capacity(128);
    let mut step: u64 = 0;
    let mut samples: u32 = 0;
    let mut start = Instant::now();
    let mut cpu_start = process_cpu();
    let mut stat_start = cgroup.as_ref().and_then(Cgroup::stat);
    loop {
        step = step.wrapping_add(1);
        let sleep_ms = SLEEP_MS_MIN + (step.wrapping_mul(7) % (SLEEP_MS_MAX - SLEEP_MS_MIN + 1));
        let sleep = Duration::from_millis(sleep_ms);
        let intended = Instant::now() + sleep;
        // `Timer` resolves to its deadline, not to when it fired: read the clock.
        Timer::at(intended).await;
        let lag = Instant::now().saturating_duration_since(intended);
        if lags_us.len() < LAGS_MAX {
            lags_us.push(u64::try_from(lag.as_micros()).unwrap_or(u64::MAX));
        }
        let now = Instant::now();
        let wall = now.saturating_duration_since(start);
        if wall < interval {
            continue;
        }
        let cpu_now = process_cpu();
        let stat_now = cgroup.as_ref().and_then(Cgroup::stat);
        let (lag_us_max, lag_us_p99) = summarize(&mut lags_us);
        let sample = LoadSample {
            lag_us_max,
            lag_us_p99,
            cpu_share: cpu_share(cpu_now.saturating_sub(cpu_start), wall, quota),
            throttled_share: throttled_share(stat_start, stat_now),
        };
        lags_us.clear();
        (start, cpu_start, stat_start) = (now, cpu_now, stat_now);
        if inbox
            .send(CoreMsg::Input(Input::LoadSample(sample)))
            .await
            .is_err()
        {
            return;
        }
        samples = samples.wrapping_add(1);
        if samples.is_multiple_of(QUOTA_REREAD_SAMPLES) {
            let fresh = cgroup.as_ref().and_then(Cgroup::quota_cores);
            if fresh != quota {
                info!(from = quota, to = fresh, "CPU quota changed");
                quota = fresh;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        assert_eq!(summarize(&mut []), (0, 0));
        assert_eq!(summarize(&mut [5]), (5, 5));
        let mut lags: Vec<u64> = (1..=100).rev().collect();
        assert_eq!(summarize(&mut lags), (100, 99));
        let mut lags: Vec<u64> = (1..=1000).collect();
        assert_eq!(summarize(&mut lags), (1000, 990));
    }

    #[test]
    fn cpu_against_quota() {
        let s = Duration::from_secs(1);
        assert!((cpu_share(s / 2, s, None) - 0.5).abs() < 1e-9);
        assert!((cpu_share(s / 2, s, Some(4.0)) - 0.5).abs() < 1e-9); // at most one core
        assert!((cpu_share(s / 10, s, Some(0.15)) - 0.1 / 0.15).abs() < 1e-9);
        assert_eq!(cpu_share(s, Duration::ZERO, None), 0.0);
    }

    #[test]
    fn throttling_between_readings() {
        let stat = |nr_periods, nr_throttled| CpuStat {
            nr_periods,
            nr_throttled,
            ..CpuStat::default()
        };
        assert_eq!(throttled_share(None, Some(stat(10, 5))), 0.0);
        assert_eq!(throttled_share(Some(stat(10, 5)), Some(stat(10, 5))), 0.0);
        assert_eq!(throttled_share(Some(stat(10, 5)), Some(stat(20, 10))), 0.5);
    }

    #[test]
    fn threads_from_quota() {
        assert_eq!(threads_for(Some(0.15)), 1);
        assert_eq!(threads_for(Some(1.0)), 1);
        assert!(threads_for(None) >= 1);
    }

    #[test]
    fn a_blocked_executor_shows_as_lag() {
        let (tx, rx) = async_channel::bounded(4);
        let ex = smol::LocalExecutor::new();
        let sample = smol::block_on(ex.run(async {
            ex.spawn(run(tx, Duration::from_millis(150), None)).detach();
            // Let the probe start sleeping, then hold the only thread for 80 ms.
            Timer::after(Duration::from_millis(5)).await;
            std::thread::sleep(Duration::from_millis(80));
            rx.recv().await
        }));
        let Ok(CoreMsg::Input(Input::LoadSample(sample))) = sample else {
            panic!("no sample: {sample:?}");
        };
        assert!(sample.lag_us_max >= 50_000, "{sample:?}");
    }

    #[test]
    fn discovery_does_not_panic_here() {
        if let Some(cgroup) = Cgroup::discover() {
            let _ = (cgroup.quota_cores(), cgroup.stat(), cgroup.version());
        }
        assert!(process_cpu() > Duration::ZERO);
    }
}
