//! `wizard-bench`: an open-loop load generator that speaks the real player protocol.
//!
//! One run plays `games` games of `seats` seats, `humans` of them played by this
//! generator over websockets and the rest AI seats added by the host. Every bot human
//! schedules its move at turn start + think time (1.5 s in realistic pacing, 0 at full
//! speed) whether or not earlier answers came; the latency of a move is the time from
//! that intended send time to the first `state` that shows the move applied. Latencies
//! go into HDR histograms. Accepted work (lobbies, games, moves) and refusals (`busy`,
//! `rate_limited`, 1013/1008 closes, HTTP 503 at the door) are counted separately.
//!
//! Modes: steady games (`--games`), open-loop new-game arrivals (`--arrival-rate`:
//! each arrival creates a lobby, starts one game, plays it and leaves), attacks
//! (`--attack MODE`, one per row of the attack table, bounded in count and time, loopback only),
//! phased attack runs (`--phases N`: baseline and attack phases interleaved, with a
//! `/health` prober, newcomers, returning players and a stall monitor beside the games)
//! and idle connections (`--idle N`: server RSS per idle websocket). Each run appends
//! one JSON line to a history file; [`compare`] shows the latest run against earlier
//! ones, [`attack_table`] the phased runs as the attack table.
//!
//! Everything a run measures runs on one thread (a local executor), so the generator can
//! be pinned to one core with `taskset`; a phased run's attacks run in worker processes
//! of their own ([`attack_worker`]).

mod absent;
mod attack;
mod game;
mod history;
mod honest;
mod hostile;
mod idle;
mod net;
pub mod overload;
mod phases;
mod procfs;
pub mod quick;
mod raw;
pub mod reads;
mod resume;
mod seen;
mod shards;
mod validate;
mod violations;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_io::Timer;
use futures_lite::FutureExt;
use hdrhistogram::Histogram;
use serde_json::{Value, json};

// The interface: the binary and the server's tests use these.
pub use attack::{ATTACKS, Attack, AttackStats, Window};
pub use history::{compare, table};
pub use phases::{attack_table, attack_worker, phase_table};
pub use violations::violation_cases;

use attack::attack_task;
use game::game;
use idle::idle_run;
pub use idle::{summary, table_row};
use validate::validate;

/// How bot humans pace their moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pacing {
    /// The seed's: 1.5 s think time per human move (the server's `AI_MOVE_DELAY`, 0.8 s
    /// by default, paces the AI seats).
    Realistic,
    /// No think time (run the server with `AI_MOVE_DELAY=0 TRICK_PAUSE=0`).
    Full,
}

impl Pacing {
    pub fn name(self) -> &'static str {
        match self {
            Pacing::Realistic => "realistic",
            Pacing::Full => "full",
        }
    }
}

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct Settings {
    pub addr: SocketAddr,
    /// The websocket path (`/ws`).
    pub path: String,
    pub games: usize,
    /// Seats played by the generator per game (the host is one of them).
    pub humans: usize,
    /// Seats per game; the host adds `seats - humans` AI seats.
    pub seats: usize,
    pub pacing: Pacing,
    /// Think time per human move (1.5 s realistic, 0 full).
    pub think: Duration,
    /// Each think time is drawn uniformly within this much of `think` (0: exactly
    /// `think`, as the original design's bots), so that games do not stay in step as
    /// bots thinking exactly as long do ([`think_us`]).
    pub think_jitter: Duration,
    /// Measured window after set-up and warm-up.
    pub duration: Duration,
    /// Game set-ups are spread over this time (open-loop, at their intended times).
    pub ramp: Duration,
    /// Time after the ramp before measuring starts.
    pub warmup: Duration,
    /// Generator connections per source address (127.a.b.c).
    pub per_ip: usize,
    /// New games per second (0: the `games` games play back to back instead).
    pub arrival_rate: f64,
    pub attack: Option<Attack>,
    /// Concurrent attack connections.
    pub attack_conns: usize,
    /// Upper bound on attack operations (connections in a storm, messages in a flood,
    /// lobby creations in spam).
    pub attack_count: u64,
    /// Distinct source addresses the attack uses.
    pub attack_ips: usize,
    /// Operations per second per attack connection where a mode paces itself (0: as
    /// fast as the server answers; the no-reader then sends 8 a second).
    pub attack_rate: f64,
    /// The CPUs the attack worker process runs on (empty: those it inherits). On one
    /// machine, the attacker's CPU stands for its own machines' and for the server
    /// host's network stack (see `spawn_attack`).
    pub attack_cpus: Vec<usize>,
    /// Phased mode: this many pairs of a baseline phase (no attack) and an attack
    /// phase, interleaved, each `phase_duration` long (0: one window of `duration`).
    pub phases: usize,
    pub phase_duration: Duration,
    /// The baseline phases' length (zero: `phase_duration`).
    pub baseline_duration: Duration,
    /// A running game with no move for this long counts as stalled.
    pub stall_after: Duration,
    /// Phased mode: `/health` is asked this often, open-loop (zero: never).
    pub health_every: Duration,
    /// One guest per game leaves and comes back with its token this often (zero:
    /// never): a returning player.
    pub rejoin_every: Duration,
    /// A new player says hello this often (zero: never), from its own address, and
    /// with `newcomer_lobby` creates a lobby and leaves it.
    pub newcomer_every: Duration,
    pub newcomer_lobby: bool,
    /// Phased mode: a group of `seats` new players queues for quick play this often
    /// (zero: never); their times to seat are `seat_latency`.
    pub quick_every: Duration,
    /// A bot whose connection ends before the run does (the server restarted: a 1012
    /// close, or a crash: the socket just ends) reconnects after 100-500 ms with its
    /// token, as PROTOCOL.md 6.1 asks of clients, and plays on; it checks that nothing
    /// it saw of its game is missing or changed.
    pub resume: bool,
    /// The game bots say `hello {deltas: true}` and hold their state from deltas
    /// (PROTOCOL.md 7.5; `--deltas 0`: full states, as older clients).
    pub deltas: bool,
    /// Each game bot creates a profile (`create_profile`, PROTOCOL.md 7.1) right after
    /// its `hello`, so its games are rated and recorded with a profile seat (run the
    /// server with `PROFILE_CREATE_RATE` at least `--per-ip`). Names are the run's
    /// process id and the bot's index, so two runs against one server do not collide.
    pub profiles: bool,
    /// Follow shard routes (PROTOCOL.md 6.3): guests join at `/ws/<the code's shard>`,
    /// bots come back at `/ws/<their token's shard>`, and every connection that lands
    /// on a shard not owning its code or token is counted as misrouted (`shards.rs`).
    pub shard_routes: bool,
    /// With `resume`: write every bot's way back (shard, ended, back) to this file.
    pub resume_log: Option<PathBuf>,
    /// Idle mode: open this many connections, say hello, measure server RSS per one.
    pub idle: usize,
    pub server_pid: Option<u32>,
    /// Where to append the run's JSON line (none: do not record).
    pub history: Option<PathBuf>,
    /// Free text stored with the run (e.g. `limits-off`).
    pub label: String,
    /// The run's own arguments: a phased run starts each attack phase's worker
    /// process with them.
    pub command_line: Vec<String>,
    /// Set in an attack worker: its attack window, as Unix times in milliseconds.
    pub worker_window_unix_ms: Option<(u64, u64)>,
}

impl Settings {
    /// Defaults for `addr`: one realistic game of 1 human + 3 AI for 30 s.
    pub fn new(addr: SocketAddr) -> Settings {
        Settings {
            addr,
            path: "/ws".into(),
            games: 1,
            humans: 1,
            seats: 4,
            pacing: Pacing::Realistic,
            think: Duration::from_millis(1500),
            think_jitter: Duration::ZERO,
            duration: Duration::from_secs(30),
            ramp: Duration::from_secs(5),
            warmup: Duration::from_secs(2),
            per_ip: 8,
            arrival_rate: 0.0,
            attack: None,
            attack_conns: 50,
            attack_count: 10_000,
            attack_ips: 1,
            attack_rate: 0.0,
            attack_cpus: Vec::new(),
            phases: 0,
            phase_duration: Duration::from_secs(10),
            baseline_duration: Duration::ZERO,
            stall_after: Duration::from_secs(5),
            health_every: Duration::from_millis(50),
            rejoin_every: Duration::ZERO,
            newcomer_every: Duration::ZERO,
            newcomer_lobby: true,
            quick_every: Duration::ZERO,
            resume: false,
            deltas: true,
            profiles: false,
            shard_routes: false,
            resume_log: None,
            idle: 0,
            server_pid: None,
            worker_window_unix_ms: None,
            command_line: Vec::new(),
            history: None,
            label: String::new(),
        }
    }

    /// Parses `ws://HOST:PORT/PATH` (loopback or not; attacks check separately).
    pub fn parse_url(url: &str) -> Result<(SocketAddr, String), String> {
        let rest = url
            .strip_prefix("ws://")
            .ok_or_else(|| format!("--url: expected ws://HOST:PORT/PATH, got {url:?}"))?;
        let (host, path) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].to_owned()),
            None => (rest, "/ws".to_owned()),
        };
        let host = host.replace("localhost", "127.0.0.1");
        let addr = host
            .parse()
            .map_err(|e| format!("--url: {host:?} is not IP:PORT ({e})"))?;
        Ok((addr, path))
    }

    /// The length of a baseline phase.
    pub fn baseline(&self) -> Duration {
        if self.baseline_duration.is_zero() {
            self.phase_duration
        } else {
            self.baseline_duration
        }
    }

    fn mode(&self) -> &'static str {
        if self.idle > 0 {
            "idle"
        } else if self.arrival_rate > 0.0 {
            "arrivals"
        } else if self.games > 0 {
            "games"
        } else {
            "attack"
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "mode": self.mode(),
            "url": format!("ws://{}{}", self.addr, self.path),
            "games": self.games,
            "humans": self.humans,
            "seats": self.seats,
            "pacing": self.pacing.name(),
            "think_ms": self.think.as_millis() as u64,
            "think_jitter_ms": self.think_jitter.as_millis() as u64,
            "duration_s": self.duration.as_secs_f64(),
            "ramp_s": self.ramp.as_secs_f64(),
            "warmup_s": self.warmup.as_secs_f64(),
            "per_ip": self.per_ip,
            "arrival_rate": self.arrival_rate,
            "attack": self.attack.map(Attack::name),
            "attack_conns": self.attack_conns,
            "attack_count": self.attack_count,
            "attack_ips": self.attack_ips,
            "attack_rate": self.attack_rate,
            "attack_cpus": self.attack_cpus,
            "phases": self.phases,
            "phase_duration_s": self.phase_duration.as_secs_f64(),
            "baseline_duration_s": self.baseline().as_secs_f64(),
            "stall_after_s": self.stall_after.as_secs_f64(),
            "health_every_ms": self.health_every.as_millis() as u64,
            "rejoin_every_s": self.rejoin_every.as_secs_f64(),
            "deltas": self.deltas,
            "profiles": self.profiles,
            "newcomer_every_s": self.newcomer_every.as_secs_f64(),
            "newcomer_lobby": self.newcomer_lobby,
            "quick_every_s": self.quick_every.as_secs_f64(),
            "resume": self.resume,
            "shard_routes": self.shard_routes,
            "idle": self.idle,
            "label": self.label,
        })
    }
}

/// Refusals, counted apart from accepted work.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Refusals {
    /// `busy` to `create_lobby`.
    pub busy_create: u64,
    /// `busy` to `start_game`.
    pub busy_start: u64,
    /// `busy` at hello (a connection limit; a 1013 close follows).
    pub busy_connection: u64,
    pub rate_limited: u64,
    pub close_1013: u64,
    pub close_1008: u64,
    /// HTTP 503 at the door (no websocket).
    pub http_503: u64,
    /// Connection attempts that failed otherwise (reset, refused, other statuses).
    pub connect_failed: u64,
    /// Honest requests (a newcomer's hello or lobby, a rejoin) with no answer in time.
    pub timed_out: u64,
}

impl Refusals {
    /// Distinct refused requests: busy answers, rate limits, door refusals (a 1013
    /// close follows a `busy` already counted).
    pub fn total(&self) -> u64 {
        self.busy_create
            + self.busy_start
            + self.busy_connection
            + self.rate_limited
            + self.http_503
    }

    /// Everything an honest player may meet that is not being served: the refusals,
    /// failed connects and requests that got no answer.
    pub fn honest_total(&self) -> u64 {
        self.total() + self.connect_failed + self.timed_out
    }
}

/// Counters and histograms of one run.
#[derive(Debug)]
pub struct Stats {
    /// Moves applied in all games (from the hosts' events), in the window.
    pub moves: u64,
    /// Moves of the generator's humans answered in the window (latency samples).
    pub human_moves: u64,
    pub lobbies: u64,
    pub games_started: u64,
    pub games_finished: u64,
    /// Finished games whose final view lacks a round's score.
    pub games_unscored: u64,
    pub welcomed: u64,
    pub refusals: Refusals,
    /// Other error replies by code.
    pub errors: BTreeMap<String, u64>,
    /// Move latency in microseconds, from the intended send time.
    pub move_latency: Histogram<u64>,
    /// Arrivals mode: intended arrival to the first state of the started game, in us.
    pub start_latency: Histogram<u64>,
    pub attack: AttackStats,
    /// Peak open generator connections.
    pub peak_connections: u64,
    open_connections: u64,
    /// `/health` latency in microseconds from the intended probe time.
    pub health_latency: Histogram<u64>,
    /// Probes that failed or got no 200 within their timeout.
    pub health_failed: u64,
    /// Honest connections the server closed or dropped (any code) before the end.
    pub honest_closed: u64,
    /// Bytes of the `state` and `delta` frames the game bots received (the whole run).
    pub state_bytes: u64,
    /// Running games that went `stall_after` without a move.
    pub stalled: u64,
    /// Longest time a running game went without a move, in microseconds.
    pub move_gap_max_us: u64,
    /// Returning players that got their seat back / newcomers served.
    pub rejoined: u64,
    pub newcomers: u64,
    /// Quick players seated, and each one's time from `quick_play` to its game's
    /// `state`, in microseconds (`quick_every`).
    pub quick_seated: u64,
    pub seat_latency: Histogram<u64>,
    /// `resume`: bots back in their game after their connection ended.
    pub resumed: u64,
    /// `resume`: from a bot's connection ending to its first `state` back in its
    /// lobby, in microseconds.
    pub resume_latency: Histogram<u64>,
    /// `resume`: bots that came back to no lobby, or not at all before the run ended.
    pub resume_failed: u64,
    /// `resume`: bots whose game, once back, lacked or changed something they had seen
    /// (a card played, a bid, a round's score); the first few reasons.
    pub resume_mismatch: u64,
    pub resume_mismatches: Vec<String>,
    /// `resume`: how the bots' connections ended before they came back, by close code
    /// (1012: the server restarting; 1006: gone without a close).
    pub resume_ended: BTreeMap<u16, u64>,
    /// `resume_log`: (token's shard, ended, back in the game), Unix milliseconds.
    pub resume_events: Vec<(String, u64, u64)>,
    /// `shard_routes`: connections that landed on a shard not owning their code or
    /// token (`wrong_shard`, 421, a token or lobby of another shard); the first reasons.
    pub misrouted: u64,
    pub misroutes: Vec<String>,
    /// `shard_routes`: lobbies created, by the shard their code names.
    pub lobbies_by_shard: BTreeMap<String, u64>,
    /// `shard_routes`: games finished, by the shard their lobby's code names.
    pub finished_by_shard: BTreeMap<String, u64>,
}

impl Stats {
    /// Counts one misrouted connection, keeping the first few reasons (`shards.rs`).
    fn misroute(&mut self, why: String) {
        self.misrouted += 1;
        if self.misroutes.len() < shards::MISROUTES_KEPT {
            self.misroutes.push(why);
        }
    }

    fn new() -> Stats {
        Stats {
            moves: 0,
            human_moves: 0,
            lobbies: 0,
            games_started: 0,
            games_finished: 0,
            games_unscored: 0,
            welcomed: 0,
            refusals: Refusals::default(),
            errors: BTreeMap::new(),
            move_latency: histogram(),
            start_latency: histogram(),
            attack: AttackStats::default(),
            peak_connections: 0,
            open_connections: 0,
            health_latency: histogram(),
            health_failed: 0,
            honest_closed: 0,
            state_bytes: 0,
            stalled: 0,
            move_gap_max_us: 0,
            rejoined: 0,
            newcomers: 0,
            quick_seated: 0,
            seat_latency: histogram(),
            resumed: 0,
            resume_latency: histogram(),
            resume_failed: 0,
            resume_mismatch: 0,
            resume_mismatches: Vec::new(),
            resume_ended: BTreeMap::new(),
            resume_events: Vec::new(),
            misrouted: 0,
            misroutes: Vec::new(),
            lobbies_by_shard: BTreeMap::new(),
            finished_by_shard: BTreeMap::new(),
        }
    }

    fn opened(&mut self) {
        self.open_connections += 1;
        self.peak_connections = self.peak_connections.max(self.open_connections);
    }

    fn closed(&mut self) {
        self.open_connections = self.open_connections.saturating_sub(1);
    }
}

#[allow(clippy::expect_used)] // constant, valid bounds: cannot fail
fn histogram() -> Histogram<u64> {
    // 1 us to 1 hour, 3 significant digits.
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

/// p50/p95/p99/p99.9/max in milliseconds.
pub fn percentiles(h: &Histogram<u64>) -> Value {
    let ms = |q: f64| (h.value_at_quantile(q) as f64 / 1000.0 * 1000.0).round() / 1000.0;
    json!({
        "count": h.len(),
        "p50": ms(0.50),
        "p95": ms(0.95),
        "p99": ms(0.99),
        "p999": ms(0.999),
        "max": (h.max() as f64).round() / 1000.0,
        "mean": (h.mean() / 1000.0 * 1000.0).round() / 1000.0,
    })
}

/// The single-threaded executor every task runs on.
type Exec = Rc<smol::LocalExecutor<'static>>;

/// What every task shares (one thread: plain cells).
#[derive(Debug)]
struct Ctx {
    settings: Settings,
    stats: RefCell<Stats>,
    /// Measuring starts here (latencies and moves before it are not recorded).
    window_start: Instant,
    /// Every task stops here.
    deadline: Instant,
    /// Per game: whether it is running and when it last moved (for stalls).
    progress: RefCell<Vec<honest::Progress>>,
}

impl Ctx {
    fn measuring(&self, at: Instant) -> bool {
        at >= self.window_start && at < self.deadline
    }
}

/// The result of a run: the JSON line that was (or would be) appended to the history.
#[derive(Debug)]
pub struct Report {
    pub line: Value,
    pub stats: Stats,
}

/// Runs the generator to completion (bounded by ramp + warm-up + duration + a few
/// seconds) on the calling thread and appends the result to the history file.
pub fn run(settings: Settings) -> Result<Report, String> {
    validate(&settings)?;
    net::raise_nofile_limit();
    let ex: Exec = Rc::new(smol::LocalExecutor::new());
    let report = smol::block_on(ex.run(run_async(ex.clone(), settings)))?;
    if let Some(path) = &report_path(&report) {
        history::append(path, &report.line)?;
    }
    Ok(report)
}

fn report_path(report: &Report) -> Option<PathBuf> {
    report.line["history"].as_str().map(PathBuf::from)
}

async fn run_async(ex: Exec, settings: Settings) -> Result<Report, String> {
    let t0 = Instant::now();
    let setup = if settings.arrival_rate > 0.0 || settings.games == 0 || settings.idle > 0 {
        Duration::ZERO
    } else {
        settings.ramp + settings.warmup
    };
    let window_start = t0 + setup;
    let span = if settings.phases > 0 {
        (settings.baseline() + settings.phase_duration) * settings.phases as u32
    } else {
        settings.duration
    };
    let deadline = window_start + span;
    let ctx = Rc::new(Ctx {
        settings: settings.clone(),
        stats: RefCell::new(Stats::new()),
        window_start,
        deadline,
        progress: RefCell::new(vec![honest::Progress::default(); settings.games]),
    });
    let server = procfs::Sampler::new(settings.server_pid);
    let own = procfs::Sampler::new(Some(std::process::id()));

    if settings.idle > 0 {
        let idle = idle_run(&ctx, &server).await;
        return finish(ctx, t0, idle, None, None);
    }

    let mut tasks = spawn_games(&ex, &ctx, t0);
    if settings.phases > 0 {
        return phases::run(&ex, &ctx, tasks, &server, t0).await;
    }
    if let Some(attack) = settings.attack {
        let w = Window {
            start: window_start,
            end: deadline,
        };
        for i in 0..settings.attack_conns.max(1) {
            tasks.push(ex.spawn(attack_task(ctx.clone(), attack, i, w)));
        }
    }

    let (server_json, own_json) = sample_window(&ctx, &server, &own, tasks).await;
    finish(ctx, t0, Value::Null, Some(server_json), Some(own_json))
}

/// The games' tasks: open loop (arrival g at the window's start + g / rate, whatever
/// happened to earlier ones), or `games` games started over the ramp.
fn spawn_games(ex: &Exec, ctx: &Rc<Ctx>, t0: Instant) -> Vec<smol::Task<()>> {
    let settings = &ctx.settings;
    let mut tasks = Vec::new();
    if settings.arrival_rate > 0.0 {
        let ctx2 = ctx.clone();
        let ex2 = ex.clone();
        tasks.push(ex.spawn(async move {
            let mut children = Vec::new();
            let mut g = 0usize;
            loop {
                let at = ctx2.window_start
                    + Duration::from_secs_f64(g as f64 / ctx2.settings.arrival_rate);
                if at >= ctx2.deadline || (ctx2.settings.games > 0 && g >= ctx2.settings.games) {
                    break;
                }
                Timer::at(at).await;
                children.push(ex2.spawn(game(ex2.clone(), ctx2.clone(), g, at, true)));
                g += 1;
            }
            for child in children {
                child.await;
            }
        }));
    } else {
        for g in 0..settings.games {
            let at = t0
                + settings
                    .ramp
                    .mul_f64(g as f64 / settings.games.max(1) as f64);
            tasks.push(ex.spawn(game(ex.clone(), ctx.clone(), g, at, false)));
        }
    }
    tasks
}

/// Samples the server over the window (CPU at its start and end, RSS every second) and
/// this process (CPU), then waits for `tasks` to close; the two windows as JSON.
async fn sample_window(
    ctx: &Ctx,
    server: &procfs::Sampler,
    own: &procfs::Sampler,
    tasks: Vec<smol::Task<()>>,
) -> (Value, Value) {
    let deadline = ctx.deadline;
    Timer::at(ctx.window_start).await;
    let server_start = server.sample();
    let own_start = own.sample();
    let mut rss_max = server_start.as_ref().map_or(0, |s| s.rss_kib);
    while Instant::now() < deadline {
        Timer::at((Instant::now() + Duration::from_secs(1)).min(deadline)).await;
        if let Some(s) = server.sample() {
            rss_max = rss_max.max(s.rss_kib);
        }
    }
    let server_end = server.sample();
    let own_end = own.sample();
    // Tasks stop at the deadline; give them a moment to close cleanly.
    let join = async {
        for t in tasks {
            t.await;
        }
    };
    join.or(async {
        Timer::after(Duration::from_secs(5)).await;
    })
    .await;
    let pid = ctx.settings.server_pid;
    let server_json = procfs::window_json(server_start, server_end, rss_max, pid);
    let own_json = procfs::window_json(own_start, own_end, 0, Some(std::process::id()));
    (server_json, own_json)
}

fn finish(
    ctx: Rc<Ctx>,
    t0: Instant,
    idle: Value,
    server: Option<Value>,
    generator: Option<Value>,
) -> Result<Report, String> {
    let settings = &ctx.settings;
    let window = ctx.deadline.duration_since(ctx.window_start).as_secs_f64();
    let stats = std::mem::replace(&mut *ctx.stats.borrow_mut(), Stats::new());
    let r = &stats.refusals;
    let a = &stats.attack;
    let mut settings_json = settings.to_json();
    if let Some(pid) = settings.server_pid {
        settings_json["server_env"] = procfs::server_env(pid);
    }
    let server = if idle.is_null() {
        server.unwrap_or(Value::Null)
    } else {
        idle.clone()
    };
    let cpu_per_move_us = server
        .get("cpu_seconds")
        .and_then(Value::as_f64)
        .filter(|_| stats.moves > 0)
        .map(|cpu| (cpu * 1e6 / stats.moves as f64 * 100.0).round() / 100.0);
    let moves_per_core_second = server
        .get("cpu_seconds")
        .and_then(Value::as_f64)
        .filter(|c| *c > 0.0)
        .map(|cpu| (stats.moves as f64 / cpu).round());
    let results = json!({
        "window_s": window,
        "wall_s": (t0.elapsed().as_secs_f64() * 100.0).round() / 100.0,
        "accepted": {
            "welcomed": stats.welcomed,
            "lobbies": stats.lobbies,
            "games_started": stats.games_started,
            "games_finished": stats.games_finished,
            "games_unscored": stats.games_unscored,
            "moves": stats.moves,
            "moves_per_s": (stats.moves as f64 / window).round(),
            "human_moves": stats.human_moves,
        },
        "refused": {
            "total": r.total(),
            "busy_create": r.busy_create,
            "busy_start": r.busy_start,
            "busy_connection": r.busy_connection,
            "rate_limited": r.rate_limited,
            "close_1013": r.close_1013,
            "close_1008": r.close_1008,
            "http_503": r.http_503,
            "connect_failed": r.connect_failed,
        },
        "errors": stats.errors,
        "move_latency_ms": percentiles(&stats.move_latency),
        "start_latency_ms": percentiles(&stats.start_latency),
        "peak_connections": stats.peak_connections,
        "moves_per_core_second": moves_per_core_second,
        "server_cpu_us_per_move": cpu_per_move_us,
        "attack": settings.attack.map(|_| a.to_json(window)),
        "health_latency_ms": percentiles(&stats.health_latency),
        "honest": {
            "refused": stats.honest_refused(),
            "timed_out": r.timed_out,
            "closed_by_server": stats.honest_closed,
            "state_bytes": stats.state_bytes,
            "health_failed": stats.health_failed,
            "stalled": stats.stalled,
            "move_gap_max_ms": stats.move_gap_max_us as f64 / 1000.0,
            "rejoined": stats.rejoined,
            "newcomers": stats.newcomers,
        },
        "resume": settings.resume.then(|| json!({
            "resumed": stats.resumed,
            "failed": stats.resume_failed,
            "mismatched": stats.resume_mismatch,
            "mismatches": stats.resume_mismatches,
            "ended": stats.resume_ended.iter().map(|(k, v)| (k.to_string(), *v)).collect::<BTreeMap<_, _>>(),
            "latency_ms": percentiles(&stats.resume_latency),
        })),
        "shards": settings.shard_routes.then(|| json!({
            "misrouted": stats.misrouted,
            "misroutes": stats.misroutes,
            "lobbies_by_shard": stats.lobbies_by_shard,
            "finished_by_shard": stats.finished_by_shard,
        })),
    });
    shards::write_resume_log(&ctx, &stats.resume_events)?;
    let line = json!({
        "ts": SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        "commit": history::commit(),
        "settings": settings_json,
        "machine": procfs::machine(),
        "results": results,
        "server": server,
        "generator": generator.unwrap_or(Value::Null),
        "history": settings.history.as_ref().map(|p| p.display().to_string()),
    });
    Ok(Report { line, stats })
}

/// The think time of seat `index`'s move number `n`: `think`, or with a jitter a value
/// drawn uniformly from `think` plus or minus `jitter` (at least 0), the same for the
/// same arguments (a SplitMix64 of both: no clock, no shared generator between tasks).
pub fn think_us(think: Duration, jitter: Duration, index: usize, n: u64) -> u64 {
    let think_us = u64::try_from(think.as_micros()).unwrap_or(u64::MAX);
    let jitter_us = u64::try_from(jitter.as_micros()).unwrap_or(u64::MAX / 4);
    if jitter_us == 0 {
        return think_us;
    }
    let mut z = ((index as u64) << 32 ^ n).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let offset_us = z % (2 * jitter_us + 1);
    think_us.saturating_add(offset_us).saturating_sub(jitter_us)
}
