//! Figures from /proc: a process's CPU time and RSS, the machine.

use std::time::Instant;

use serde_json::{Value, json};

/// USER_HZ on Linux.
const TICKS_PER_SECOND: f64 = 100.0;

/// One reading of a process.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub at: Instant,
    /// utime + stime of every thread, in seconds.
    pub cpu_seconds: f64,
    pub rss_kib: u64,
}

/// Reads `/proc/<pid>` on demand.
#[derive(Clone, Copy, Debug)]
pub struct Sampler {
    pid: Option<u32>,
}

impl Sampler {
    pub fn new(pid: Option<u32>) -> Sampler {
        Sampler { pid }
    }

    pub fn sample(&self) -> Option<Sample> {
        let pid = self.pid?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Fields after the command name (which may hold spaces and parentheses).
        let rest = stat.rsplit_once(')')?.1;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // utime and stime are fields 14 and 15: indices 11 and 12 after the ')'.
        let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok());
        let cpu = (ticks(11)? + ticks(12)?) as f64 / TICKS_PER_SECOND;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let rss_kib = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())?;
        Some(Sample {
            at: Instant::now(),
            cpu_seconds: cpu,
            rss_kib,
        })
    }
}

/// CPU share of one core and RSS over a window.
pub fn window_json(
    start: Option<Sample>,
    end: Option<Sample>,
    rss_max_kib: u64,
    pid: Option<u32>,
) -> Value {
    let (Some(a), Some(b)) = (start, end) else {
        return json!({ "pid": pid, "error": "not measured (no --server-pid or process gone)" });
    };
    let wall = b.at.duration_since(a.at).as_secs_f64().max(1e-9);
    let cpu = b.cpu_seconds - a.cpu_seconds;
    json!({
        "pid": pid,
        "cpu_seconds": (cpu * 100.0).round() / 100.0,
        "cpu_percent_of_core": (cpu / wall * 100.0 * 100.0).round() / 100.0,
        "rss_mib_start": (a.rss_kib as f64 / 1024.0 * 10.0).round() / 10.0,
        "rss_mib_end": (b.rss_kib as f64 / 1024.0 * 10.0).round() / 10.0,
        "rss_mib_max": (rss_max_kib.max(b.rss_kib) as f64 / 1024.0 * 10.0).round() / 10.0,
    })
}

/// The machine: CPUs and their model.
pub fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.trim().to_owned())
        .unwrap_or_default();
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    json!({ "nproc": nproc, "cpu_model": model, "hostname": host.trim() })
}

/// The server's settings that shape a run (from `/proc/<pid>/environ`), plus its CPU
/// affinity and cgroup CPU quota when visible.
pub fn server_env(pid: u32) -> Value {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let mut env = serde_json::Map::new();
    for entry in environ.split(|b| *b == 0) {
        let entry = String::from_utf8_lossy(entry);
        if let Some((k, v)) = entry.split_once('=') {
            let relevant = [
                "MAX_",
                "LOAD_",
                "AI_",
                "TRICK_",
                "MESSAGE_",
                "LOBBY_",
                "EMBEDDED_AI",
                "SESSION_",
            ]
            .iter()
            .any(|p| k.starts_with(p));
            if relevant && k != "AI_SHARED_SECRET" {
                env.insert(k.to_owned(), Value::String(v.to_owned()));
            }
        }
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    if let Some(cpus) = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
    {
        env.insert("cpus_allowed".into(), Value::String(cpus.trim().to_owned()));
    }
    Value::Object(env)
}
