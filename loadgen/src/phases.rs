//! Phased mode: baseline and attack phases interleaved in one run against the same
//! server, with the honest games playing through all of them; one summary per phase,
//! the run's acceptance row of the attack matrix, and the matrix table over runs.
//!
//! Server RSS comes from `/proc/<pid>/status` (`VmRSS`) of `--server-pid`, sampled every
//! 250 ms; the server's `/metrics` has no process memory.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_io::Timer;
use futures_lite::FutureExt;
use serde_json::{Value, json};

use crate::attack::{Attack, AttackStats, Window, attack_task};
use crate::{
    Ctx, Exec, Refusals, Report, Settings, Stats, finish, history, honest, net, percentiles, procfs,
};

/// The attack table's acceptance: attack move p99 within this factor of the baseline's...
const P99_RATIO_MAX: f64 = 2.0;
/// ...and under this, in ms; `/health` p99 at most this, in ms.
const MOVE_P99_MS_MAX: f64 = 50.0;
const HEALTH_P99_MS_MAX: f64 = 10.0;

impl Refusals {
    fn add(&mut self, o: &Refusals) {
        self.busy_create += o.busy_create;
        self.busy_start += o.busy_start;
        self.busy_connection += o.busy_connection;
        self.rate_limited += o.rate_limited;
        self.close_1013 += o.close_1013;
        self.close_1008 += o.close_1008;
        self.http_503 += o.http_503;
        self.connect_failed += o.connect_failed;
        self.timed_out += o.timed_out;
    }
}

impl Stats {
    /// Adds `o`'s counts and histograms to these.
    fn absorb(&mut self, o: &Stats) {
        self.moves += o.moves;
        self.human_moves += o.human_moves;
        self.lobbies += o.lobbies;
        self.games_started += o.games_started;
        self.games_finished += o.games_finished;
        self.welcomed += o.welcomed;
        self.refusals.add(&o.refusals);
        for (k, v) in &o.errors {
            *self.errors.entry(k.clone()).or_default() += v;
        }
        let _ = self.move_latency.add(&o.move_latency);
        let _ = self.start_latency.add(&o.start_latency);
        let _ = self.health_latency.add(&o.health_latency);
        let (a, b) = (&mut self.attack, &o.attack);
        a.attempts += b.attempts;
        a.accepted += b.accepted;
        a.refusals.add(&b.refusals);
        a.cut += b.cut;
        for (k, v) in &b.endings {
            *a.endings.entry(k.clone()).or_default() += v;
        }
        a.busy_without_retry_after += b.busy_without_retry_after;
        a.cases.extend(b.cases.clone());
        a.mismatches.extend(b.mismatches.clone());
        a.held_ms_max = a.held_ms_max.max(b.held_ms_max);
        a.found += b.found;
        self.peak_connections = self.peak_connections.max(o.peak_connections);
        self.health_failed += o.health_failed;
        self.honest_closed += o.honest_closed;
        self.stalled += o.stalled;
        self.move_gap_max_us = self.move_gap_max_us.max(o.move_gap_max_us);
        self.rejoined += o.rejoined;
        self.newcomers += o.newcomers;
        self.quick_seated += o.quick_seated;
        let _ = self.seat_latency.add(&o.seat_latency);
    }

    /// Everything honest players met that was not service.
    pub fn honest_refused(&self) -> u64 {
        self.refusals.honest_total() + self.honest_closed
    }
}

/// The stats so far, replaced by empty ones (the open-connection count carries on).
fn take(ctx: &Ctx) -> Stats {
    let mut st = ctx.stats.borrow_mut();
    let mut fresh = Stats::new();
    fresh.open_connections = st.open_connections;
    std::mem::replace(&mut *st, fresh)
}

/// RSS start, end and max in KiB over a phase.
#[derive(Clone, Copy, Debug, Default)]
struct Rss {
    start: u64,
    end: u64,
    max: u64,
}

async fn sample_until(server: &procfs::Sampler, end: Instant) -> Option<Rss> {
    let first = server.sample()?.rss_kib;
    let mut rss = Rss {
        start: first,
        end: first,
        max: first,
    };
    while Instant::now() < end {
        Timer::at((Instant::now() + Duration::from_millis(250)).min(end)).await;
        if let Some(s) = server.sample() {
            rss.end = s.rss_kib;
            rss.max = rss.max.max(s.rss_kib);
        }
    }
    Some(rss)
}

fn mib(kib: u64) -> f64 {
    (kib as f64 / 1024.0 * 10.0).round() / 10.0
}

/// One phase's machine-readable summary.
fn phase_json(k: usize, attack: Option<Attack>, st: &Stats, rss: Option<Rss>, s: f64) -> Value {
    let r = &st.refusals;
    json!({
        "phase": k,
        "kind": if attack.is_some() { "attack" } else { "baseline" },
        "attack": attack.map(Attack::name),
        "window_s": s,
        "moves": st.moves,
        "human_moves": st.human_moves,
        "games_finished": st.games_finished,
        "move_latency_ms": percentiles(&st.move_latency),
        "health_latency_ms": percentiles(&st.health_latency),
        "health_failed": st.health_failed,
        "honest_refused": st.honest_refused(),
        "refused": {
            "busy_create": r.busy_create, "busy_start": r.busy_start,
            "busy_connection": r.busy_connection, "rate_limited": r.rate_limited,
            "close_1013": r.close_1013, "close_1008": r.close_1008, "http_503": r.http_503,
            "connect_failed": r.connect_failed, "timed_out": r.timed_out,
            "closed_by_server": st.honest_closed,
        },
        "errors": st.errors,
        "stalled": st.stalled,
        "move_gap_max_ms": st.move_gap_max_us as f64 / 1000.0,
        "rejoined": st.rejoined,
        "newcomers": st.newcomers,
        "quick_seated": st.quick_seated,
        "seat_latency_ms": percentiles(&st.seat_latency),
        "rss_mib": rss.map(|r| json!({"start": mib(r.start), "end": mib(r.end), "max": mib(r.max)})),
        "attack_stats": attack.map(|_| st.attack.to_json(s)),
    })
}

/// Attack tasks stop at their window's end by themselves; the worker waits this much
/// longer for their last counts.
const ATTACK_LINGER: Duration = Duration::from_secs(3);
/// The attack worker's CPU priority (nice), the lowest.
const ATTACK_NICE: i32 = 19;
/// The line of the worker's output that carries its counts.
const ATTACK_LINE: &str = "ATTACK ";

/// Starts one phase's attack in a worker process: this program again, with the run's
/// arguments and the phase's window, at the lowest CPU priority. The attacker stands for
/// other machines. Run on the honest clients' thread, or on a thread sharing their
/// reactor, its work delayed their reading of the server's answers, so their latency
/// measured the generator's own queue rather than the server (row 10's 400 retriers
/// saturated the generator's core while the server's stayed at a third). The server
/// sees the same attack either way. Its counts arrive when it is over.
///
/// `--attack-cpus` pins the worker. Even at the lowest priority, a worker on the honest
/// clients' core delays them: on loopback the sender's CPU also runs the receiving
/// side of the network stack, in soft interrupts that no priority defers (the ping
/// flood kept the generator's core 80 % busy, a fifth of it in `sendto`, while the
/// server's core was 88 % idle). On the server's core the attack's packets cost what
/// they would cost a real server host, and the honest clients stand for other machines.
///
/// A run without a command line (the library, as the tests drive it) runs the attack on
/// its own executor `ex` instead, with its own counts all the same.
fn spawn_attack(
    ex: &Exec,
    s: &Settings,
    w: Window,
) -> Result<smol::Task<Result<AttackStats, String>>, String> {
    if s.command_line.is_empty() {
        let settings = s.clone();
        return Ok(ex.spawn(async move { Ok(attack_run(settings, w).await) }));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find wizard-bench: {e}"))?;
    let unix_ms = |at: Instant| {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let at = if at >= Instant::now() {
            now + (at - Instant::now())
        } else {
            now.saturating_sub(Instant::now() - at)
        };
        at.as_millis().to_string()
    };
    let mut cmd = smol::process::Command::new(exe);
    cmd.args(&s.command_line)
        .args(["--worker-start-unix-ms", &unix_ms(w.start)])
        .args(["--worker-end-unix-ms", &unix_ms(w.end)])
        .args(["--history", "none"])
        .stdout(std::process::Stdio::piped())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start the attack worker: {e}"))?;
    Ok(smol::spawn(async move {
        let out = child
            .output()
            .await
            .map_err(|e| format!("attack worker: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix(ATTACK_LINE))
            .ok_or_else(|| format!("the attack worker gave no counts ({}): {text}", out.status))?;
        serde_json::from_str(line).map_err(|e| format!("attack worker counts: {e}"))
    }))
}

/// Runs `--attack-conns` attack connections within `w` (on the current executor) with
/// counts of their own, and returns them once every connection stopped or
/// [`ATTACK_LINGER`] after the window.
async fn attack_run(settings: Settings, w: Window) -> AttackStats {
    let Some(attack) = settings.attack else {
        return AttackStats::default();
    };
    let conns = settings.attack_conns.max(1);
    let ctx = Rc::new(Ctx {
        settings,
        stats: RefCell::new(Stats::new()),
        window_start: w.start,
        deadline: w.end + ATTACK_LINGER,
        progress: RefCell::new(Vec::new()),
    });
    let tasks: Vec<_> = (0..conns)
        .map(|i| attack_task(ctx.clone(), attack, i, w))
        .collect();
    futures_util::future::join_all(tasks)
        .or(async {
            Timer::at(w.end + ATTACK_LINGER).await;
            Vec::new()
        })
        .await;
    take(&ctx).attack
}

/// The attack worker (`--worker-start-unix-ms`, set by a phased run): runs the attack
/// within its window at the lowest CPU priority and prints its counts as one
/// `ATTACK {json}` line.
pub fn attack_worker(settings: Settings) -> Result<String, String> {
    let (start_ms, end_ms) = settings
        .worker_window_unix_ms
        .ok_or("an attack worker needs its window")?;
    settings.attack.ok_or("an attack worker needs --attack")?;
    // The worker's stderr is the run's own.
    #[allow(clippy::print_stderr)]
    if let Err(e) = rustix::process::setpriority_process(None, ATTACK_NICE) {
        eprintln!(
            "attack worker: cannot lower its priority ({e}); it competes with the honest clients"
        );
    }
    if !settings.attack_cpus.is_empty() {
        let mut cpus = rustix::thread::CpuSet::new();
        for &cpu in &settings.attack_cpus {
            if cpu >= rustix::thread::CpuSet::MAX_CPU {
                return Err(format!("--attack-cpus: no CPU {cpu}"));
            }
            cpus.set(cpu);
        }
        rustix::thread::sched_setaffinity(None, &cpus).map_err(|e| {
            format!(
                "--attack-cpus: cannot run on {:?}: {e}",
                settings.attack_cpus
            )
        })?;
    }
    net::raise_nofile_limit();
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64;
    let at = |ms: u64| Instant::now() + Duration::from_millis(ms.saturating_sub(now_ms));
    let w = Window {
        start: at(start_ms),
        end: at(end_ms.max(start_ms)),
    };
    let ex = smol::LocalExecutor::new();
    let stats = smol::block_on(ex.run(attack_run(settings, w)));
    let counts = serde_json::to_string(&stats).map_err(|e| e.to_string())?;
    Ok(format!("{ATTACK_LINE}{counts}\n"))
}

/// The honest players beside the games: the stall monitor, and the `/health` prober,
/// the newcomers and the quick-play groups where their settings ask for them.
fn spawn_honest(ex: &Exec, ctx: &Rc<Ctx>, tasks: &mut Vec<smol::Task<()>>) {
    let s = &ctx.settings;
    tasks.push(ex.spawn(honest::monitor(ctx.clone())));
    if !s.health_every.is_zero() {
        tasks.push(ex.spawn(honest::prober(ex.clone(), ctx.clone())));
    }
    if !s.newcomer_every.is_zero() {
        tasks.push(ex.spawn(honest::newcomers(ex.clone(), ctx.clone())));
    }
    if !s.quick_every.is_zero() {
        tasks.push(ex.spawn(honest::quick_groups(ex.clone(), ctx.clone())));
    }
}

/// Runs the phases (the games are already spawned in `tasks`) and the report.
pub(super) async fn run(
    ex: &Exec,
    ctx: &Rc<Ctx>,
    mut tasks: Vec<smol::Task<()>>,
    server: &procfs::Sampler,
    t0: Instant,
) -> Result<Report, String> {
    let s = &ctx.settings;
    let attack = s.attack.ok_or("phased mode needs --attack")?;
    spawn_honest(ex, ctx, &mut tasks);
    Timer::at(ctx.window_start).await;
    let mut total = take(ctx); // the set-up: lobbies, games started
    let mut kinds = [Stats::new(), Stats::new()];
    let mut rss_kinds = [Rss::default(), Rss::default()];
    let mut lines = Vec::new();
    for k in 0..2 * s.phases {
        let on = k % 2 == 1;
        let pair = (s.baseline() + s.phase_duration) * (k / 2) as u32;
        let start = ctx.window_start + pair + if on { s.baseline() } else { Duration::ZERO };
        let length = if on { s.phase_duration } else { s.baseline() };
        let end = start + length;
        let w = Window { start, end };
        let attacker = on.then(|| spawn_attack(ex, s, w)).transpose()?;
        let rss = sample_until(server, end).await;
        let attack_stats = match attacker {
            Some(worker) => {
                worker
                    .or(async {
                        Timer::at(end + ATTACK_LINGER + Duration::from_secs(2)).await;
                        Err("the attack worker did not finish".to_owned())
                    })
                    .await?
            }
            None => AttackStats::default(),
        };
        let mut st = take(ctx);
        st.attack = attack_stats;
        let secs = length.as_secs_f64();
        lines.push(phase_json(k, on.then_some(attack), &st, rss, secs));
        if let Some(r) = rss {
            let m = &mut rss_kinds[usize::from(on)];
            m.max = m.max.max(r.max);
        }
        kinds[usize::from(on)].absorb(&st);
    }
    async {
        for t in tasks {
            t.await;
        }
    }
    .or(async {
        Timer::after(Duration::from_secs(5)).await;
    })
    .await;
    let row = matrix_row(
        s,
        &kinds,
        &rss_kinds,
        server.sample().is_some() || s.server_pid.is_some(),
    );
    for st in &kinds {
        total.absorb(st);
    }
    total.absorb(&take(ctx));
    *ctx.stats.borrow_mut() = total;
    let server_json =
        json!({ "pid": s.server_pid, "rss_mib_max": mib(rss_kinds[0].max.max(rss_kinds[1].max)) });
    let mut report = finish(ctx.clone(), t0, Value::Null, Some(server_json), None)?;
    report.line["phases"] = Value::Array(lines);
    report.line["results"]["matrix"] = row;
    Ok(report)
}

/// The run's row of the attack matrix, with the acceptance verdict (RSS is compared
/// by hand with `MAX_CONNECTIONS` x the documented per-connection bound).
fn matrix_row(s: &Settings, kinds: &[Stats; 2], rss: &[Rss; 2], measured: bool) -> Value {
    let p99 = |h: &hdrhistogram::Histogram<u64>| h.value_at_quantile(0.99) as f64 / 1000.0;
    let (base, att) = (&kinds[0], &kinds[1]);
    let (b99, a99) = (p99(&base.move_latency), p99(&att.move_latency));
    let ratio = if b99 > 0.0 { a99 / b99 } else { f64::INFINITY };
    let h99 = p99(&att.health_latency);
    let p50 = |h: &hdrhistogram::Histogram<u64>| h.value_at_quantile(0.5) as f64 / 1000.0;
    let (seat_b99, seat_a99) = (p99(&base.seat_latency), p99(&att.seat_latency));
    let quick = !s.quick_every.is_zero();
    let seat_ratio = if seat_b99 > 0.0 {
        seat_a99 / seat_b99
    } else {
        f64::INFINITY
    };
    let refused = att.honest_refused() + base.honest_refused();
    let stalled = att.stalled + base.stalled;
    let failures = [
        (ratio > P99_RATIO_MAX, "move p99 over 2x baseline"),
        (a99 >= MOVE_P99_MS_MAX, "move p99 >= 50 ms"),
        (h99 > HEALTH_P99_MS_MAX, "health p99 > 10 ms"),
        (att.health_failed + base.health_failed > 0, "health failed"),
        (refused > 0, "honest refusals"),
        (stalled > 0, "stalled games"),
        (att.human_moves == 0, "no honest move"),
        (
            quick && seat_ratio > P99_RATIO_MAX,
            "seat p99 over 2x baseline",
        ),
        (quick && att.quick_seated == 0, "no quick player seated"),
    ];
    let why: Vec<&str> = failures.iter().filter(|f| f.0).map(|f| f.1).collect();
    json!({
        "attack": s.attack.map(Attack::name),
        "label": s.label,
        "baseline_move_p99_ms": b99,
        "attack_move_p99_ms": a99,
        "ratio": (ratio * 100.0).round() / 100.0,
        "baseline_health_p99_ms": p99(&base.health_latency),
        "health_p99_ms": h99,
        "health_failed": att.health_failed + base.health_failed,
        "honest_refused": refused,
        "stalled": stalled,
        "rss_mib_baseline": measured.then(|| mib(rss[0].max)),
        "rss_mib_attack": measured.then(|| mib(rss[1].max)),
        "attack_cut": att.attack.cut,
        "seat_p50_ms": quick.then(|| json!({"baseline": p50(&base.seat_latency), "attack": p50(&att.seat_latency)})),
        "seat_p99_ms": quick.then(|| json!({"baseline": seat_b99, "attack": seat_a99})),
        "seat_ratio": quick.then(|| (seat_ratio * 100.0).round() / 100.0),
        "mismatches": att.attack.mismatches.len(),
        "verdict": if why.is_empty() { "ok".to_owned() } else { why.join(", ") },
    })
}

const HEADER: &str = "| attack | label | baseline move p99 | attack move p99 | ratio | health p99 | \
                      honest refused | stalled | RSS base / attack | verdict |\n\
                      |---|---|---|---|---|---|---|---|---|---|\n";

fn matrix_line(m: &Value) -> String {
    let rss = |v: &Value| v.as_f64().map_or("-".to_owned(), |x| format!("{x} MiB"));
    format!(
        "| {} | {} | {} ms | {} ms | {} | {} ms | {} | {} | {} / {} | {} |\n",
        m["attack"].as_str().unwrap_or("-"),
        m["label"].as_str().unwrap_or(""),
        m["baseline_move_p99_ms"],
        m["attack_move_p99_ms"],
        m["ratio"],
        m["health_p99_ms"],
        m["honest_refused"],
        m["stalled"],
        rss(&m["rss_mib_baseline"]),
        rss(&m["rss_mib_attack"]),
        m["verdict"].as_str().unwrap_or(""),
    )
}

/// The per-phase table of one run (for the human after the JSON lines).
pub fn phase_table(line: &Value) -> String {
    let mut out = String::from(
        "| phase | kind | moves | move p50 / p99 | health p50 / p99 | seated | seat p50 / p99 | honest refused | stalled | RSS max |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for p in line["phases"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "| {} | {} | {} | {} / {} ms | {} / {} ms | {} | {} / {} ms | {} | {} | {} MiB |\n",
            p["phase"],
            p["kind"].as_str().unwrap_or(""),
            p["moves"],
            p["move_latency_ms"]["p50"],
            p["move_latency_ms"]["p99"],
            p["health_latency_ms"]["p50"],
            p["health_latency_ms"]["p99"],
            p["quick_seated"],
            p["seat_latency_ms"]["p50"],
            p["seat_latency_ms"]["p99"],
            p["honest_refused"],
            p["stalled"],
            p["rss_mib"]["max"],
        ));
    }
    if let Some(m) = line["results"].get("matrix") {
        out.push_str(&format!("\n{HEADER}{}", matrix_line(m)));
    }
    out
}

/// The attack matrix over the last `last` phased runs in the history.
pub fn attack_table(path: &Path, last: usize) -> Result<String, String> {
    let lines = history::load(path)?;
    let rows: Vec<&Value> = lines
        .iter()
        .filter_map(|l| l["results"].get("matrix"))
        .collect();
    let mut out = HEADER.to_owned();
    for m in &rows[rows.len().saturating_sub(last)..] {
        out.push_str(&matrix_line(m));
    }
    Ok(out)
}
