//! `wizard-bench`: an open-loop load generator for wizard-server (see `src/bench/`).
//!
//! ```text
//! wizard-bench [run] --url ws://127.0.0.1:8000/ws [--server-pid PID]
//!     [--games N] [--humans H] [--seats S] [--pacing realistic|full] [--think-ms MS]
//!     [--think-jitter-ms MS]
//!     [--duration S] [--ramp S] [--warmup S] [--per-ip N] [--arrival-rate GAMES_PER_S]
//!     [--attack MODE] [--attack-conns N] [--attack-count N] [--attack-ips N]
//!     [--attack-rate OPS_PER_S] [--attack-cpus LIST] [--phases N] [--phase-duration S] [--baseline-duration S]
//!     [--stall-after S]
//!     [--health-every-ms MS] [--rejoin-every S] [--newcomer-every S] [--newcomer-lobby 0|1]
//!     [--quick-every S]
//!     [--resume 0|1] [--shard-routes 0|1] [--resume-log FILE] [--deltas 0|1]
//!     [--profiles 0|1] [--idle N] [--history FILE|none] [--label TEXT]
//! wizard-bench compare [--history FILE] [--last N]
//! wizard-bench table [--history FILE] [--last N]
//! wizard-bench attack-table [--history FILE] [--last N]
//! wizard-bench overload --addr 127.0.0.1:8000 ...   (closed-loop overload, see `overload`)
//! wizard-bench quick --addr 127.0.0.1:8000 [--players N] [--seats S]   (time to seat)
//! wizard-bench reads --addr 127.0.0.1:8000 [--rate PER_S] [--duration S] [--addrs N]   (history pages)
//! wizard-bench --help | --version
//! ```
//!
//! The command line is read with `lexopt`: an unknown flag, a flag without its value or
//! a bad value is refused with exit 2 and a message on stderr; a run that fails exits 1.
//!
//! With `--phases N` a run prints one `PHASE {json}` line per phase, then the phase
//! table and the run's row of the attack matrix.
//!
//! It starts no server. Each run appends one JSON line to the history
//! (`bench/history.jsonl` by default).

use wizard_bench as bench;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const DEFAULT_HISTORY: &str = "bench/history.jsonl";

/// Why the command stopped: a usage error is the user's (exit 2), a failed run is not
/// (exit 1).
#[derive(Debug)]
enum Exit {
    Help,
    Version,
    Usage(String),
    Failed(String),
}

impl From<String> for Exit {
    fn from(message: String) -> Exit {
        Exit::Usage(message)
    }
}

impl From<lexopt::Error> for Exit {
    fn from(e: lexopt::Error) -> Exit {
        Exit::Usage(e.to_string())
    }
}

fn main() -> ExitCode {
    let args: Result<Vec<String>, _> = std::env::args_os()
        .skip(1)
        .map(|a| a.into_string())
        .collect();
    let result = match args {
        Ok(args) if args.first().map(String::as_str) == Some("overload") => {
            return bench::overload::run(&args[1..]);
        }
        Ok(args) if args.first().map(String::as_str) == Some("quick") => {
            return bench::quick::run(&args[1..]);
        }
        Ok(args) if args.first().map(String::as_str) == Some("reads") => {
            return bench::reads::run(&args[1..]);
        }
        Ok(args) => real_main(args),
        Err(arg) => Err(Exit::Usage(format!("argument {arg:?} is not UTF-8"))),
    };
    let mut stderr = std::io::stderr();
    match result {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(Exit::Help) => {
            print!("{}", usage());
            ExitCode::SUCCESS
        }
        Err(Exit::Version) => {
            println!("wizard-bench {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Err(Exit::Usage(e)) => {
            let _ = write!(stderr, "wizard-bench: {e}\n{}", usage());
            ExitCode::from(2)
        }
        Err(Exit::Failed(e)) => {
            let _ = writeln!(stderr, "wizard-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn real_main(mut args: Vec<String>) -> Result<String, Exit> {
    let command = match args.first().map(String::as_str) {
        Some("compare" | "table" | "attack-table" | "run") => args.remove(0),
        _ => "run".into(),
    };
    let known = match command.as_str() {
        "run" => RUN_FLAGS,
        _ => HISTORY_FLAGS,
    };
    let pairs = pairs(&args, known)?;
    let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    match command.as_str() {
        "compare" | "table" | "attack-table" => {
            let path = PathBuf::from(get("--history").unwrap_or(DEFAULT_HISTORY));
            let last = num(get("--last"), "--last", 10usize)?;
            match command.as_str() {
                "compare" => bench::compare(&path, last),
                "table" => bench::table(&path, last),
                _ => bench::attack_table(&path, last),
            }
            .map_err(Exit::Failed)
        }
        _ => {
            let url = get("--url").unwrap_or("ws://127.0.0.1:8000/ws");
            let (addr, path) = bench::Settings::parse_url(url)?;
            let mut s = bench::Settings::new(addr);
            s.path = path;
            s.history = Some(PathBuf::from(DEFAULT_HISTORY));
            set_shape(&mut s, &pairs)?;
            set_overrides(&mut s, &pairs)?;
            if s.arrival_rate > 0.0 && get("--games").is_none() {
                // Arrivals go on for the whole duration unless capped with --games.
                s.games = 0;
            }
            s.command_line = args.clone();
            if s.worker_window_unix_ms.is_some() {
                return bench::attack_worker(s).map_err(Exit::Failed);
            }
            run(s)
        }
    }
}

/// `run`'s first pass over its flags: the run's shape and `--pacing` (which sets the
/// think time), every other flag of `run` known and left to [`set_overrides`].
fn set_shape(s: &mut bench::Settings, pairs: &[(String, String)]) -> Result<(), Exit> {
    for (k, v) in pairs {
        let v = v.as_str();
        match k.as_str() {
            "--url" => {}
            "--server-pid" => s.server_pid = Some(num(Some(v), k, 0u32)?),
            "--games" => s.games = num(Some(v), k, 0)?,
            "--humans" => s.humans = num(Some(v), k, 0)?,
            "--seats" => s.seats = num(Some(v), k, 0)?,
            "--pacing" => {
                s.pacing = match v {
                    "realistic" => bench::Pacing::Realistic,
                    "full" => bench::Pacing::Full,
                    _ => {
                        return Err(Exit::Usage(format!(
                            "--pacing: realistic or full, not {v:?}"
                        )));
                    }
                };
                s.think = match s.pacing {
                    bench::Pacing::Realistic => Duration::from_millis(1500),
                    bench::Pacing::Full => Duration::ZERO,
                };
            }
            "--think-ms"
            | "--think-jitter-ms"
            | "--duration"
            | "--ramp"
            | "--warmup"
            | "--per-ip"
            | "--arrival-rate"
            | "--attack"
            | "--attack-conns"
            | "--attack-count"
            | "--attack-ips"
            | "--idle"
            | "--history"
            | "--label"
            | "--attack-rate"
            | "--attack-cpus"
            | "--phases"
            | "--phase-duration"
            | "--baseline-duration"
            | "--stall-after"
            | "--health-every-ms"
            | "--rejoin-every"
            | "--newcomer-every"
            | "--newcomer-lobby"
            | "--quick-every"
            | "--resume"
            | "--deltas"
            | "--profiles"
            | "--shard-routes"
            | "--resume-log"
            | "--worker-start-unix-ms"
            | "--worker-end-unix-ms" => {}
            other => return Err(Exit::Usage(format!("unknown argument {other}"))),
        }
    }
    Ok(())
}

/// `run`'s second pass: options that override what `--pacing` set.
fn set_overrides(s: &mut bench::Settings, pairs: &[(String, String)]) -> Result<(), Exit> {
    for (k, v) in pairs {
        let v = v.as_str();
        match k.as_str() {
            "--think-ms" => s.think = Duration::from_millis(num(Some(v), k, 0)?),
            "--think-jitter-ms" => {
                s.think_jitter = Duration::from_millis(num(Some(v), k, 0)?);
            }
            "--duration" => s.duration = secs(v, k)?,
            "--ramp" => s.ramp = secs(v, k)?,
            "--warmup" => s.warmup = secs(v, k)?,
            "--per-ip" => s.per_ip = num(Some(v), k, 0)?,
            "--arrival-rate" => s.arrival_rate = num(Some(v), k, 0.0)?,
            "--attack" => {
                s.attack =
                    Some(bench::Attack::parse(v).ok_or_else(|| {
                        format!("--attack: {}, not {v:?}", bench::Attack::names())
                    })?);
            }
            "--attack-conns" => s.attack_conns = num(Some(v), k, 0)?,
            "--attack-count" => s.attack_count = num(Some(v), k, 0)?,
            "--attack-ips" => s.attack_ips = num(Some(v), k, 0)?,
            "--idle" => s.idle = num(Some(v), k, 0)?,
            "--attack-rate" => s.attack_rate = num(Some(v), k, 0.0)?,
            "--attack-cpus" => {
                s.attack_cpus = v
                    .split(',')
                    .map(|c| num(Some(c.trim()), k, 0usize))
                    .collect::<Result<_, _>>()?;
            }
            "--phases" => s.phases = num(Some(v), k, 0)?,
            "--phase-duration" => s.phase_duration = secs(v, k)?,
            "--baseline-duration" => s.baseline_duration = secs(v, k)?,
            "--stall-after" => s.stall_after = secs(v, k)?,
            "--health-every-ms" => s.health_every = Duration::from_millis(num(Some(v), k, 0)?),
            "--rejoin-every" => s.rejoin_every = secs(v, k)?,
            "--newcomer-every" => s.newcomer_every = secs(v, k)?,
            "--newcomer-lobby" => s.newcomer_lobby = v != "0",
            "--quick-every" => s.quick_every = secs(v, k)?,
            "--resume" => s.resume = v != "0",
            "--deltas" => s.deltas = v != "0",
            "--profiles" => s.profiles = v != "0",
            "--shard-routes" => s.shard_routes = v != "0",
            "--resume-log" => s.resume_log = Some(PathBuf::from(v)),
            "--history" => {
                s.history = (v != "none").then(|| PathBuf::from(v));
            }
            "--label" => s.label = v.to_owned(),
            "--worker-start-unix-ms" | "--worker-end-unix-ms" => {
                let ms = num(Some(v), k, 0u64)?;
                let (mut a, mut b) = s.worker_window_unix_ms.unwrap_or((ms, ms));
                if k == "--worker-start-unix-ms" {
                    a = ms;
                } else {
                    b = ms;
                }
                s.worker_window_unix_ms = Some((a, b));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Runs the load and writes its report: the phases and their matrix, the summary, the
/// history line's file.
fn run(s: bench::Settings) -> Result<String, Exit> {
    let report = bench::run(s).map_err(Exit::Failed)?;
    let mut out = String::new();
    if let Some(phases) = report.line["phases"].as_array() {
        for p in phases {
            out.push_str(&format!("PHASE {p}\n"));
        }
        out.push_str(&format!("MATRIX {}\n", report.line["results"]["matrix"]));
    }
    out.push_str(&bench::summary(&report.line));
    if report.line["phases"].is_array() {
        out.push_str(&bench::phase_table(&report.line));
    }
    if let Some(h) = report.line["history"].as_str() {
        out.push_str(&format!("appended to {h}\n"));
    }
    Ok(out)
}

/// Flags of `run` (each takes a value); the last two are set by a phased run for its
/// attack worker (`phases.rs`).
const RUN_FLAGS: &[&str] = &[
    "--url",
    "--server-pid",
    "--games",
    "--humans",
    "--seats",
    "--pacing",
    "--think-ms",
    "--think-jitter-ms",
    "--duration",
    "--ramp",
    "--warmup",
    "--per-ip",
    "--arrival-rate",
    "--attack",
    "--attack-conns",
    "--attack-count",
    "--attack-ips",
    "--idle",
    "--history",
    "--label",
    "--attack-rate",
    "--attack-cpus",
    "--phases",
    "--phase-duration",
    "--baseline-duration",
    "--stall-after",
    "--health-every-ms",
    "--rejoin-every",
    "--newcomer-every",
    "--newcomer-lobby",
    "--quick-every",
    "--resume",
    "--deltas",
    "--profiles",
    "--shard-routes",
    "--resume-log",
    "--worker-start-unix-ms",
    "--worker-end-unix-ms",
];

/// Flags of `compare`, `table` and `attack-table`.
const HISTORY_FLAGS: &[&str] = &["--history", "--last"];

/// The command line's `--name value` pairs (also `--name=value`), in order, through
/// `lexopt`: a flag not in `known`, a flag without its value or a stray word is an
/// error; `--help` and `--version` anywhere print and exit.
fn pairs(args: &[String], known: &[&str]) -> Result<Vec<(String, String)>, Exit> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(args);
    let mut out = Vec::new();
    while let Some(arg) = parser.next()? {
        let name = match arg {
            Short('h') | Long("help") => return Err(Exit::Help),
            Short('V') | Long("version") => return Err(Exit::Version),
            Long(name) => format!("--{name}"),
            other => return Err(other.unexpected().into()),
        };
        if !known.contains(&name.as_str()) {
            return Err(Exit::Usage(format!("unknown argument {name}")));
        }
        let value = parser.value()?.string()?;
        out.push((name, value));
    }
    Ok(out)
}

fn num<T: std::str::FromStr>(v: Option<&str>, name: &str, default: T) -> Result<T, String> {
    match v {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| format!("{name}: {v:?} is not a number")),
    }
}

fn secs(v: &str, name: &str) -> Result<Duration, String> {
    let x: f64 = num(Some(v), name, 0.0)?;
    if !(0.0..=86_400.0).contains(&x) {
        return Err(format!("{name}: {v} is out of range"));
    }
    Ok(Duration::from_secs_f64(x))
}

fn usage() -> String {
    "usage: wizard-bench [run] --url ws://127.0.0.1:PORT/ws [--server-pid PID] [--games N] \
     [--humans H] [--seats S] [--pacing realistic|full] [--think-ms MS] [--think-jitter-ms MS] \
     [--duration S] [--ramp S] [--warmup S] [--per-ip N] [--arrival-rate GAMES_PER_S] \
     [--attack MODE] [--attack-conns N] [--attack-count N] [--attack-ips N] \
     [--attack-rate OPS_PER_S] [--attack-cpus LIST] [--phases N] [--phase-duration S] [--baseline-duration S] [--stall-after S] \
     [--health-every-ms MS] [--rejoin-every S] [--newcomer-every S] [--newcomer-lobby 0|1] [--quick-every S] \
     [--resume 0|1] [--shard-routes 0|1] [--resume-log FILE] [--deltas 0|1] [--profiles 0|1] [--idle N] [--history FILE|none] [--label TEXT]\n       \
     wizard-bench compare [--history FILE] [--last N]\n       \
     wizard-bench table [--history FILE] [--last N]\n       \
     wizard-bench attack-table [--history FILE] [--last N]\n       \
     wizard-bench --help | --version\n       \
     MODE: "
        .to_owned()
        + &bench::Attack::names()
        + "\n"
        + bench::overload::USAGE
        + bench::reads::USAGE
}
