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
use wizard_core::Time;
use wizard_core::shell::cgroup::{
    CgroupLocation, CgroupVersion, CpuStat, cpu_cgroup_dir, parse_cfs_quota, parse_cpu_max,
    parse_cpu_stat,
};
use wizard_core::shell::probe::{CpuReading, Probe};
use wizard_core::vocabulary::io::Input;

use crate::core_task::CoreMsg;

/// Samples between re-reads of the CPU quota.
pub const QUOTA_REREAD_SAMPLES: u32 = 10;

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

/// A reading of the process CPU and the cgroup's throttling counters.
fn reading(cgroup: Option<&Cgroup>) -> CpuReading {
    CpuReading {
        cpu_us: u64::try_from(process_cpu().as_micros()).unwrap_or(u64::MAX),
        periods: cgroup
            .and_then(Cgroup::stat)
            .map(|s| (s.nr_periods, s.nr_throttled)),
    }
}

/// Runs the probe until the core task is gone. The arithmetic (lags, schedule, CPU and
/// throttled shares) is the core's [`Probe`], shared with the simulator.
pub async fn run(inbox: Sender<CoreMsg>, interval: Duration, cgroup: Option<Cgroup>) {
    let mut quota = cgroup.as_ref().and_then(Cgroup::quota_cores);
    info!(
        quota_cores = quota,
        cgroup = cgroup.as_ref().map(|c| c.dir().display().to_string()),
        "Load probe started"
    );
    let origin = Instant::now();
    let since =
        |t: Instant| Time(u64::try_from(t.duration_since(origin).as_micros()).unwrap_or(u64::MAX));
    let interval_us = u64::try_from(interval.as_micros()).unwrap_or(u64::MAX);
    let mut probe = Probe::new(interval_us, Time::ZERO, reading(cgroup.as_ref()));
    let mut samples: u32 = 0;
    loop {
        let intended = Instant::now() + Duration::from_micros(probe.next_sleep_us());
        // `Timer` resolves to its deadline, not to when it fired: read the clock.
        Timer::at(intended).await;
        let woke = Instant::now();
        if !probe.woke(since(intended), since(woke)) {
            continue;
        }
        let sample = probe.sample(since(woke), reading(cgroup.as_ref()), quota);
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
