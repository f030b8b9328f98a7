//! The standard `process_*` metrics of a Prometheus client, read from the OS at each
//! scrape: CPU seconds, resident and virtual memory, open and allowed file descriptors,
//! threads and the start time.

use std::time::{SystemTime, UNIX_EPOCH};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use rustix::time::{ClockId, clock_gettime};

/// The `process_*` metrics, registered without the `wizard_` prefix.
#[derive(Debug)]
pub struct ProcessMetrics {
    cpu_seconds: Counter<f64, std::sync::atomic::AtomicU64>,
    cpu_seconds_seen: f64,
    resident_bytes: Gauge,
    virtual_bytes: Gauge,
    open_fds: Gauge,
    max_fds: Gauge,
    threads: Gauge,
}

/// What one reading of the OS found (`None`: not readable here).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Reading {
    pub cpu_seconds: f64,
    pub resident_bytes: Option<u64>,
    pub virtual_bytes: Option<u64>,
    pub threads: Option<u64>,
    pub open_fds: Option<u64>,
    pub max_fds: Option<u64>,
}

impl ProcessMetrics {
    /// Registers the metrics in `registry`; the start time is now (the server's start).
    pub fn register(registry: &mut Registry) -> ProcessMetrics {
        let m = ProcessMetrics {
            cpu_seconds: Counter::default(),
            cpu_seconds_seen: 0.0,
            resident_bytes: Gauge::default(),
            virtual_bytes: Gauge::default(),
            open_fds: Gauge::default(),
            max_fds: Gauge::default(),
            threads: Gauge::default(),
        };
        let start: Gauge<f64, std::sync::atomic::AtomicU64> = Gauge::default();
        start.set(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64(),
        );
        registry.register(
            "process_cpu_seconds",
            "user and system CPU time of every thread, in seconds",
            m.cpu_seconds.clone(),
        );
        registry.register(
            "process_resident_memory_bytes",
            "resident memory (VmRSS)",
            m.resident_bytes.clone(),
        );
        registry.register(
            "process_virtual_memory_bytes",
            "virtual memory (VmSize)",
            m.virtual_bytes.clone(),
        );
        registry.register(
            "process_open_fds",
            "open file descriptors (sockets included)",
            m.open_fds.clone(),
        );
        registry.register(
            "process_max_fds",
            "the file descriptor limit (RLIMIT_NOFILE, soft)",
            m.max_fds.clone(),
        );
        registry.register("process_threads", "threads", m.threads.clone());
        registry.register(
            "process_start_time_seconds",
            "when the server started, in seconds since the Unix epoch",
            start,
        );
        m
    }

    /// Reads the OS and updates the metrics.
    pub fn update(&mut self) {
        let r = read();
        if r.cpu_seconds > self.cpu_seconds_seen {
            self.cpu_seconds
                .inc_by(r.cpu_seconds - self.cpu_seconds_seen);
            self.cpu_seconds_seen = r.cpu_seconds;
        }
        let set = |g: &Gauge, v: Option<u64>| {
            if let Some(v) = v {
                g.set(i64::try_from(v).unwrap_or(i64::MAX));
            }
        };
        set(&self.resident_bytes, r.resident_bytes);
        set(&self.virtual_bytes, r.virtual_bytes);
        set(&self.threads, r.threads);
        set(&self.open_fds, r.open_fds);
        set(&self.max_fds, r.max_fds);
    }
}

/// One reading: CPU from `clock_gettime`, memory and threads from `/proc/self/status`,
/// descriptors from `/proc/self/fd` and `getrlimit`.
pub fn read() -> Reading {
    let t = clock_gettime(ClockId::ProcessCPUTime);
    let mut r = Reading {
        cpu_seconds: t.tv_sec as f64 + t.tv_nsec as f64 / 1e9,
        ..Reading::default()
    };
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        (r.resident_bytes, r.virtual_bytes, r.threads) = parse_status(&status);
    }
    r.open_fds = std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|d| d.count() as u64);
    r.max_fds = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    r
}

/// VmRSS and VmSize (kB in the file) in bytes, and Threads, from `/proc/PID/status`.
pub fn parse_status(status: &str) -> (Option<u64>, Option<u64>, Option<u64>) {
    let field = |name: &str| {
        status.lines().find_map(|l| {
            let rest = l.strip_prefix(name)?.strip_prefix(':')?;
            rest.split_whitespace().next()?.parse::<u64>().ok()
        })
    };
    (
        field("VmRSS").map(|kb| kb * 1024),
        field("VmSize").map(|kb| kb * 1024),
        field("Threads"),
    )
}

#[cfg(test)]
mod tests {
    use super::parse_status;

    #[test]
    fn status_fields_in_bytes() {
        let status =
            "Name:\twizard-server\nVmSize:\t  123456 kB\nVmRSS:\t    6784 kB\nThreads:\t3\n";
        assert_eq!(
            parse_status(status),
            (Some(6784 * 1024), Some(123_456 * 1024), Some(3))
        );
        assert_eq!(parse_status("Name:\tx\n"), (None, None, None));
    }
}
