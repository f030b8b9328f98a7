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
//! (`--attack storm|flood|lobby-spam`, bounded in count and time, loopback only) and idle
//! connections (`--idle N`: server RSS per idle websocket). Each run appends one JSON
//! line to a history file; [`compare`] shows the latest run against earlier ones.
//!
//! Everything runs on one thread (a local executor), so the generator can be pinned to
//! one core with `taskset`.

// Compiled into the binary and into the integration test, each using a part of it.
#![allow(dead_code)]

mod history;
mod net;
mod procfs;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_io::Timer;
use async_tungstenite::tungstenite::Message;
use futures_lite::{FutureExt, StreamExt};
use hdrhistogram::Histogram;
use serde_json::{Value, json};
use wizard_core::game::{Action, Event, Phase};
use wizard_core::wire::{
    ClientMessage, ErrorCode, LobbyStatus, ServerMessage, decode_server, encode_client,
};

pub use history::{compare, table};
use net::{Ws, connect, source_ip};

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

/// An attack mode, run beside the games (or alone with `--games 0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attack {
    /// Open connections as fast as possible, say hello, close.
    Storm,
    /// Connections that send messages as fast as they can.
    Flood,
    /// Connections that create lobbies as fast as they can.
    LobbySpam,
}

impl Attack {
    pub fn name(self) -> &'static str {
        match self {
            Attack::Storm => "storm",
            Attack::Flood => "flood",
            Attack::LobbySpam => "lobby-spam",
        }
    }

    pub fn parse(s: &str) -> Option<Attack> {
        match s {
            "storm" => Some(Attack::Storm),
            "flood" => Some(Attack::Flood),
            "lobby-spam" => Some(Attack::LobbySpam),
            _ => None,
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
    /// Idle mode: open this many connections, say hello, measure server RSS per one.
    pub idle: usize,
    pub server_pid: Option<u32>,
    /// Where to append the run's JSON line (none: do not record).
    pub history: Option<PathBuf>,
    /// Free text stored with the run (e.g. `limits-off`).
    pub label: String,
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
            duration: Duration::from_secs(30),
            ramp: Duration::from_secs(5),
            warmup: Duration::from_secs(2),
            per_ip: 8,
            arrival_rate: 0.0,
            attack: None,
            attack_conns: 50,
            attack_count: 10_000,
            attack_ips: 1,
            idle: 0,
            server_pid: None,
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
            "duration_s": self.duration.as_secs_f64(),
            "ramp_s": self.ramp.as_secs_f64(),
            "warmup_s": self.warmup.as_secs_f64(),
            "per_ip": self.per_ip,
            "arrival_rate": self.arrival_rate,
            "attack": self.attack.map(Attack::name),
            "attack_conns": self.attack_conns,
            "attack_count": self.attack_count,
            "attack_ips": self.attack_ips,
            "idle": self.idle,
            "label": self.label,
        })
    }
}

/// Refusals, counted apart from accepted work.
#[derive(Clone, Debug, Default)]
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
}

/// What the attack tasks saw.
#[derive(Clone, Debug, Default)]
pub struct AttackStats {
    /// Connections opened, messages sent or lobbies asked for.
    pub attempts: u64,
    /// Welcomes in a storm, answered messages in a flood, lobbies created in spam.
    pub accepted: u64,
    pub refusals: Refusals,
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
}

impl Stats {
    fn new() -> Stats {
        Stats {
            moves: 0,
            human_moves: 0,
            lobbies: 0,
            games_started: 0,
            games_finished: 0,
            welcomed: 0,
            refusals: Refusals::default(),
            errors: BTreeMap::new(),
            move_latency: histogram(),
            start_latency: histogram(),
            attack: AttackStats::default(),
            peak_connections: 0,
            open_connections: 0,
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

fn validate(s: &Settings) -> Result<(), String> {
    if s.humans == 0 || s.humans > s.seats || !(3..=6).contains(&s.seats) {
        return Err(format!(
            "--humans {} --seats {}: 1 <= humans <= seats, 3 <= seats <= 6",
            s.humans, s.seats
        ));
    }
    if s.per_ip == 0 {
        return Err("--per-ip must be at least 1".into());
    }
    if s.attack.is_some() && !s.addr.ip().is_loopback() {
        return Err("attack modes only run against a loopback address".into());
    }
    if s.attack_ips > 60_000 {
        return Err("--attack-ips: at most 60000".into());
    }
    Ok(())
}

async fn run_async(ex: Exec, settings: Settings) -> Result<Report, String> {
    let t0 = Instant::now();
    let setup = if settings.arrival_rate > 0.0 || settings.games == 0 || settings.idle > 0 {
        Duration::ZERO
    } else {
        settings.ramp + settings.warmup
    };
    let window_start = t0 + setup;
    let deadline = window_start + settings.duration;
    let ctx = Rc::new(Ctx {
        settings: settings.clone(),
        stats: RefCell::new(Stats::new()),
        window_start,
        deadline,
    });
    let server = procfs::Sampler::new(settings.server_pid);
    let own = procfs::Sampler::new(Some(std::process::id()));

    if settings.idle > 0 {
        let idle = idle_run(&ctx, &server).await;
        return finish(ctx, t0, idle, None, None);
    }

    let mut tasks = Vec::new();
    if settings.arrival_rate > 0.0 {
        // Open loop: arrival g at window start + g / rate, whatever happened to
        // earlier ones.
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
    if let Some(attack) = settings.attack {
        for i in 0..settings.attack_conns.max(1) {
            tasks.push(ex.spawn(attack_task(ctx.clone(), attack, i)));
        }
    }

    // Sample the server: CPU at the window's start and end, RSS every second.
    Timer::at(window_start).await;
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
    let server_json = procfs::window_json(server_start, server_end, rss_max, settings.server_pid);
    let own_json = procfs::window_json(own_start, own_end, 0, Some(std::process::id()));
    finish(ctx, t0, Value::Null, Some(server_json), Some(own_json))
}

fn finish(
    ctx: Rc<Ctx>,
    t0: Instant,
    idle: Value,
    server: Option<Value>,
    generator: Option<Value>,
) -> Result<Report, String> {
    let settings = &ctx.settings;
    let window = settings.duration.as_secs_f64();
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
        "attack": settings.attack.map(|_| json!({
            "attempts": a.attempts,
            "accepted": a.accepted,
            "refused": a.refusals.total(),
            "busy": a.refusals.busy_create + a.refusals.busy_connection + a.refusals.busy_start,
            "rate_limited": a.refusals.rate_limited,
            "close_1013": a.refusals.close_1013,
            "close_1008": a.refusals.close_1008,
            "http_503": a.refusals.http_503,
            "connect_failed": a.refusals.connect_failed,
        })),
    });
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

// ---------------------------------------------------------------------------------------
// Games
// ---------------------------------------------------------------------------------------

/// Where a player stands in its script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Waiting for the state after hello.
    Hello,
    /// Host: `create_lobby` sent.
    Creating,
    /// Host: waiting for every seat; guests: `join_lobby` sent.
    Filling,
    /// Host: `start_game` sent.
    Starting,
    Playing,
    /// Host: `return_to_lobby` sent after a finished game.
    Returned,
}

/// One game: the host and its guests, each on its own connection.
async fn game(ex: Exec, ctx: Rc<Ctx>, g: usize, at: Instant, one_game: bool) {
    Timer::at(at).await;
    let (code_tx, code_rx) = async_channel::bounded::<String>(8);
    let guests: Vec<_> = (1..ctx.settings.humans)
        .map(|h| {
            let ctx = ctx.clone();
            let code_rx = code_rx.clone();
            ex.spawn(async move {
                if let Ok(code) = code_rx.recv().await {
                    player(ctx, g, h, at, one_game, Some(code), None).await;
                }
            })
        })
        .collect();
    drop(code_rx);
    player(ctx.clone(), g, 0, at, one_game, None, Some(code_tx)).await;
    for guest in guests {
        guest.await;
    }
}

/// A pending move: when to send it, what, and when it was meant to be sent (later
/// than that only when a rate-limited send is repeated).
#[derive(Clone, Copy, Debug)]
struct Pending {
    at: Instant,
    intended: Instant,
    action: Action,
}

enum Wake {
    Message(Option<Result<Message, async_tungstenite::tungstenite::Error>>),
    Timer,
}

/// One bot human. The host (`code_tx` set) creates the lobby, adds the AI seats and
/// starts games; guests join with `code`.
async fn player(
    ctx: Rc<Ctx>,
    g: usize,
    h: usize,
    arrival: Instant,
    one_game: bool,
    code: Option<String>,
    code_tx: Option<async_channel::Sender<String>>,
) {
    let s = &ctx.settings;
    let index = g * s.humans + h;
    let from = source_ip(0, index / s.per_ip);
    let Some(mut ws) = open(&ctx, from, false).await else {
        return;
    };
    let host = code_tx.is_some();
    let mut step = Step::Hello;
    let mut accepting = true;
    let mut pending: Option<Pending> = None;
    let mut awaiting: Option<Pending> = None;
    let mut retry_at: Option<Instant> = None;
    let mut you: Option<u8> = None;
    let mut ai_needed = s.seats - s.humans;
    let _ = send(&mut ws, &ClientMessage::Hello { token: None }).await;
    loop {
        let mut wake = ctx.deadline;
        if let Some(p) = pending {
            wake = wake.min(p.at);
        }
        if let Some(r) = retry_at {
            wake = wake.min(r);
        }
        let event = async { Wake::Message(ws.next().await) }
            .or(async {
                Timer::at(wake).await;
                Wake::Timer
            })
            .await;
        let now = Instant::now();
        match event {
            Wake::Timer => {
                if now >= ctx.deadline {
                    break;
                }
                if let Some(p) = pending.filter(|p| p.at <= now) {
                    pending = None;
                    awaiting = Some(p);
                    if !send(&mut ws, &ClientMessage::Action { action: p.action }).await {
                        break;
                    }
                }
                if retry_at.is_some_and(|r| r <= now) {
                    retry_at = None;
                    let message = match step {
                        Step::Creating => ClientMessage::CreateLobby {
                            name: format!("Bench {g}"),
                        },
                        _ => ClientMessage::StartGame,
                    };
                    if !send(&mut ws, &message).await {
                        break;
                    }
                }
            }
            Wake::Message(None) | Wake::Message(Some(Err(_))) => break,
            Wake::Message(Some(Ok(Message::Close(frame)))) => {
                let code = frame.map_or(0, |f| u16::from(f.code));
                let mut st = ctx.stats.borrow_mut();
                match code {
                    1013 => st.refusals.close_1013 += 1,
                    1008 => st.refusals.close_1008 += 1,
                    _ => {}
                }
                break;
            }
            Wake::Message(Some(Ok(Message::Text(text)))) => {
                let Ok(message) = decode_server(text.as_str()) else {
                    count_error(&ctx, "undecodable");
                    continue;
                };
                match message {
                    ServerMessage::Welcome { .. } => ctx.stats.borrow_mut().welcomed += 1,
                    ServerMessage::ServerStatus {
                        accepting_games, ..
                    } => accepting = accepting_games,
                    ServerMessage::Error {
                        code: err,
                        retry_after_ms,
                        ..
                    } => {
                        if err == ErrorCode::RateLimited
                            && let Some(p) = awaiting.take()
                        {
                            // The move was dropped: send it again when allowed; its
                            // latency still counts from the first intended time.
                            let wait = Duration::from_millis(retry_after_ms.unwrap_or(100).max(1));
                            pending = Some(Pending {
                                at: now + wait,
                                ..p
                            });
                        }
                        let give_up = {
                            let mut st = ctx.stats.borrow_mut();
                            match (err, step) {
                                (ErrorCode::Busy, Step::Creating) => st.refusals.busy_create += 1,
                                (ErrorCode::Busy, Step::Starting) => st.refusals.busy_start += 1,
                                (ErrorCode::Busy, _) => st.refusals.busy_connection += 1,
                                (ErrorCode::RateLimited, _) => st.refusals.rate_limited += 1,
                                (other, _) => {
                                    *st.errors.entry(format!("{other:?}")).or_default() += 1
                                }
                            }
                            err == ErrorCode::Busy
                                && matches!(step, Step::Creating | Step::Starting)
                        };
                        if give_up {
                            if one_game {
                                // Open-loop arrivals take a refusal as the answer.
                                break;
                            }
                            retry_at = Some(now + Duration::from_secs(1));
                        }
                    }
                    ServerMessage::State {
                        lobby,
                        game,
                        events,
                    } => {
                        if let Some(seat) = game.as_ref().map(|g| g.you) {
                            you = Some(seat);
                        }
                        // Moves applied: counted once per game, from the host's view.
                        if host && ctx.measuring(now) {
                            ctx.stats.borrow_mut().moves += moves_in(&events);
                        }
                        if let (Some(Pending { intended, .. }), Some(seat)) = (awaiting, you)
                            && events.iter().any(|e| is_move_of(e, seat))
                        {
                            awaiting = None;
                            if ctx.measuring(intended) {
                                let mut st = ctx.stats.borrow_mut();
                                st.human_moves += 1;
                                let us = now.saturating_duration_since(intended).as_micros();
                                st.move_latency.saturating_record(us as u64);
                            }
                        }
                        let Some(lobby) = lobby else {
                            if step == Step::Hello {
                                if let Some(code) = &code {
                                    step = Step::Filling;
                                    let join = ClientMessage::JoinLobby {
                                        code: code.clone(),
                                        name: format!("G{h}"),
                                    };
                                    if !send(&mut ws, &join).await {
                                        break;
                                    }
                                } else if host {
                                    step = Step::Creating;
                                    let create = ClientMessage::CreateLobby {
                                        name: format!("Bench {g}"),
                                    };
                                    if !accepting && one_game {
                                        ctx.stats.borrow_mut().refusals.busy_create += 1;
                                        break;
                                    }
                                    if !send(&mut ws, &create).await {
                                        break;
                                    }
                                }
                            }
                            continue;
                        };
                        if host && step == Step::Creating {
                            step = Step::Filling;
                            ctx.stats.borrow_mut().lobbies += 1;
                            if let Some(tx) = &code_tx {
                                for _ in 1..s.humans {
                                    let _ = tx.try_send(lobby.code.clone());
                                }
                            }
                        }
                        if host && step == Step::Filling && ai_needed > 0 {
                            while ai_needed > 0 {
                                ai_needed -= 1;
                                if !send(&mut ws, &ClientMessage::AddAi).await {
                                    break;
                                }
                            }
                        }
                        let ready = lobby.players.len() >= s.seats;
                        match lobby.status {
                            LobbyStatus::Waiting
                                if host
                                    && ready
                                    && matches!(step, Step::Filling | Step::Returned)
                                    && retry_at.is_none() =>
                            {
                                step = Step::Starting;
                                if !send(&mut ws, &ClientMessage::StartGame).await {
                                    break;
                                }
                            }
                            LobbyStatus::Playing if step != Step::Playing => {
                                if host {
                                    let mut st = ctx.stats.borrow_mut();
                                    st.games_started += 1;
                                    if one_game {
                                        let us = now.saturating_duration_since(arrival).as_micros();
                                        st.start_latency.saturating_record(us as u64);
                                    }
                                }
                                step = Step::Playing;
                            }
                            LobbyStatus::Finished if step == Step::Playing => {
                                if host {
                                    ctx.stats.borrow_mut().games_finished += 1;
                                }
                                pending = None;
                                awaiting = None;
                                if one_game {
                                    break;
                                }
                                if host {
                                    step = Step::Returned;
                                    if !send(&mut ws, &ClientMessage::ReturnToLobby).await {
                                        break;
                                    }
                                } else {
                                    step = Step::Filling;
                                }
                            }
                            _ => {}
                        }
                        // Our turn per the latest state: schedule the move (once per turn).
                        if let Some(game) = game
                            && lobby.status == LobbyStatus::Playing
                            && pending.is_none()
                            && awaiting.is_none()
                        {
                            let obs = &game.observation;
                            if obs.to_act == Some(game.you)
                                && obs.phase != Phase::Finished
                                && let Some(action) = obs.legal_actions.first()
                            {
                                pending = Some(Pending {
                                    at: now + s.think,
                                    intended: now + s.think,
                                    action: *action,
                                });
                            }
                        }
                    }
                }
            }
            Wake::Message(Some(Ok(_))) => {}
        }
    }
    let _ = ws.close(None).await;
    ctx.stats.borrow_mut().closed();
}

fn moves_in(events: &[Event]) -> u64 {
    events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::BidMade { .. } | Event::CardPlayed { .. } | Event::TrumpChosen { .. }
            )
        })
        .count() as u64
}

fn is_move_of(event: &Event, seat: u8) -> bool {
    match event {
        Event::BidMade { player, .. }
        | Event::CardPlayed { player, .. }
        | Event::TrumpChosen { player, .. } => *player == seat,
        _ => false,
    }
}

fn count_error(ctx: &Ctx, what: &str) {
    *ctx.stats
        .borrow_mut()
        .errors
        .entry(what.to_owned())
        .or_default() += 1;
}

async fn send(ws: &mut Ws, message: &ClientMessage) -> bool {
    ws.send(Message::text(encode_client(message))).await.is_ok()
}

/// Opens a websocket from `from`, counting a door refusal (503) or a failure into the
/// games' or the attack's refusals.
async fn open(ctx: &Ctx, from: std::net::IpAddr, attack: bool) -> Option<Ws> {
    let result = connect(ctx.settings.addr, &ctx.settings.path, from).await;
    let mut st = ctx.stats.borrow_mut();
    let refusals = if attack {
        &mut st.attack.refusals
    } else {
        &mut st.refusals
    };
    match result {
        Ok(ws) => {
            st.opened();
            Some(ws)
        }
        Err(Some(503)) => {
            refusals.http_503 += 1;
            None
        }
        Err(_) => {
            refusals.connect_failed += 1;
            None
        }
    }
}

// ---------------------------------------------------------------------------------------
// Attacks
// ---------------------------------------------------------------------------------------

async fn attack_task(ctx: Rc<Ctx>, attack: Attack, i: usize) {
    Timer::at(ctx.window_start).await;
    let s = &ctx.settings;
    let from = source_ip(1, i % s.attack_ips.max(1));
    let budget = |ctx: &Ctx| {
        let st = ctx.stats.borrow();
        Instant::now() < ctx.deadline && st.attack.attempts < ctx.settings.attack_count
    };
    match attack {
        Attack::Storm => {
            while budget(&ctx) {
                ctx.stats.borrow_mut().attack.attempts += 1;
                let Some(mut ws) = open(&ctx, from, true).await else {
                    Timer::after(Duration::from_millis(1)).await;
                    continue;
                };
                let _ = send(&mut ws, &ClientMessage::Hello { token: None }).await;
                let outcome = async {
                    while let Some(Ok(message)) = ws.next().await {
                        match message {
                            Message::Text(t) => match decode_server(t.as_str()) {
                                Ok(ServerMessage::Welcome { .. }) => return Some(true),
                                Ok(ServerMessage::Error {
                                    code: ErrorCode::Busy,
                                    ..
                                }) => return Some(false),
                                _ => {}
                            },
                            Message::Close(_) => return None,
                            _ => {}
                        }
                    }
                    None
                }
                .or(async {
                    Timer::after(Duration::from_secs(5)).await;
                    None
                })
                .await;
                {
                    let mut st = ctx.stats.borrow_mut();
                    match outcome {
                        Some(true) => st.attack.accepted += 1,
                        Some(false) => {
                            st.attack.refusals.busy_connection += 1;
                            st.attack.refusals.close_1013 += 1;
                        }
                        None => st.attack.refusals.connect_failed += 1,
                    }
                    st.closed();
                }
                let _ = ws.close(None).await;
            }
        }
        Attack::Flood | Attack::LobbySpam => {
            while budget(&ctx) {
                let Some(mut ws) = open(&ctx, from, true).await else {
                    Timer::after(Duration::from_millis(100)).await;
                    continue;
                };
                let _ = send(&mut ws, &ClientMessage::Hello { token: None }).await;
                let message = if attack == Attack::Flood {
                    ClientMessage::LeaveLobby
                } else {
                    ClientMessage::CreateLobby {
                        name: "Spam".into(),
                    }
                };
                let mut open_conn = true;
                let mut sent = 0u64;
                while open_conn && budget(&ctx) {
                    ctx.stats.borrow_mut().attack.attempts += 1;
                    if !send(&mut ws, &message).await {
                        break;
                    }
                    sent += 1;
                    // Read whatever arrived; now and then wait a little for answers.
                    let wait = if sent.is_multiple_of(64) {
                        Duration::from_millis(2)
                    } else {
                        Duration::ZERO
                    };
                    open_conn = drain(&ctx, &mut ws, attack, wait).await;
                }
                if open_conn {
                    drain(&ctx, &mut ws, attack, Duration::from_millis(300)).await;
                }
                let _ = ws.close(None).await;
                ctx.stats.borrow_mut().closed();
            }
        }
    }
}

/// Reads the attack connection's answers until none came for `wait`; false once the
/// connection is closed.
async fn drain(ctx: &Ctx, ws: &mut Ws, attack: Attack, wait: Duration) -> bool {
    loop {
        let next = if wait.is_zero() {
            match futures_lite::future::poll_once(ws.next()).await {
                Some(next) => next,
                None => return true,
            }
        } else {
            let timed = async { Some(ws.next().await) }
                .or(async {
                    Timer::after(wait).await;
                    None
                })
                .await;
            match timed {
                Some(next) => next,
                None => return true,
            }
        };
        let mut st = ctx.stats.borrow_mut();
        match next {
            Some(Ok(Message::Text(t))) => match decode_server(t.as_str()) {
                Ok(ServerMessage::State { lobby, .. })
                    if attack == Attack::Flood || lobby.is_some() =>
                {
                    st.attack.accepted += 1;
                }
                Ok(ServerMessage::Error { code, .. }) => match code {
                    ErrorCode::RateLimited => st.attack.refusals.rate_limited += 1,
                    ErrorCode::Busy => st.attack.refusals.busy_create += 1,
                    _ => {}
                },
                _ => {}
            },
            Some(Ok(Message::Close(frame))) => {
                match frame.map_or(0, |f| u16::from(f.code)) {
                    1008 => st.attack.refusals.close_1008 += 1,
                    1013 => st.attack.refusals.close_1013 += 1,
                    _ => {}
                }
                return false;
            }
            Some(Ok(_)) => {}
            None | Some(Err(_)) => return false,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Idle connections
// ---------------------------------------------------------------------------------------

/// Opens `idle` connections that say hello and then idle; the server's RSS growth per
/// connection.
async fn idle_run(ctx: &Rc<Ctx>, server: &procfs::Sampler) -> Value {
    let s = &ctx.settings;
    Timer::after(Duration::from_millis(500)).await;
    let before = server.sample();
    let done = Rc::new(Cell::new(0usize));
    let mut conns = Vec::new();
    for i in 0..s.idle {
        if Instant::now() >= ctx.deadline {
            break;
        }
        let Some(mut ws) = open(ctx, source_ip(0, i / s.per_ip), false).await else {
            continue;
        };
        let _ = send(&mut ws, &ClientMessage::Hello { token: None }).await;
        // Read up to the state that follows welcome and server_status.
        let ok = async {
            while let Some(Ok(m)) = ws.next().await {
                if let Message::Text(t) = m {
                    match decode_server(t.as_str()) {
                        Ok(ServerMessage::State { .. }) => return true,
                        Ok(ServerMessage::Error { .. }) => return false,
                        _ => {}
                    }
                }
            }
            false
        }
        .or(async {
            Timer::after(Duration::from_secs(5)).await;
            false
        })
        .await;
        if ok {
            done.set(done.get() + 1);
            ctx.stats.borrow_mut().welcomed += 1;
        }
        conns.push(ws);
    }
    Timer::after(Duration::from_secs(2)).await;
    let after = server.sample();
    let n = done.get();
    let result = match (before, after) {
        (Some(b), Some(a)) => {
            let delta = a.rss_kib as f64 - b.rss_kib as f64;
            json!({
                "connections": n,
                "rss_kib_before": b.rss_kib,
                "rss_kib_after": a.rss_kib,
                "rss_kib_per_connection": if n > 0 { (delta / n as f64 * 100.0).round() / 100.0 } else { 0.0 },
            })
        }
        _ => json!({ "connections": n, "error": "no --server-pid: RSS not measured" }),
    };
    for mut ws in conns {
        let _ = ws.close(None).await;
    }
    result
}

/// The seed's before/after style row for one run: clients, p95, refused.
pub fn table_row(line: &Value) -> String {
    let r = &line["results"];
    let s = &line["settings"];
    let clients = if s["arrival_rate"].as_f64().unwrap_or(0.0) > 0.0 {
        format!("{} games/s", s["arrival_rate"])
    } else {
        format!("{} games", s["games"])
    };
    let p95 = if r["start_latency_ms"]["count"].as_u64().unwrap_or(0) > 0 {
        format!(
            "start {} ms, move {} ms",
            r["start_latency_ms"]["p95"], r["move_latency_ms"]["p95"]
        )
    } else {
        format!("move {} ms", r["move_latency_ms"]["p95"])
    };
    format!(
        "| {} | {} | {} | {} |",
        s["label"].as_str().unwrap_or(""),
        clients,
        p95,
        r["refused"]["total"]
    )
}

/// A human-readable summary of a report.
pub fn summary(line: &Value) -> String {
    let r = &line["results"];
    let s = &line["settings"];
    let mut out = String::new();
    let lat = &r["move_latency_ms"];
    out.push_str(&format!(
        "mode {} games {} humans {}/{} pacing {} window {} s\n",
        s["mode"], s["games"], s["humans"], s["seats"], s["pacing"], r["window_s"]
    ));
    out.push_str(&format!(
        "accepted: lobbies {} games started {} finished {} moves {} ({}/s), human moves {}\n",
        r["accepted"]["lobbies"],
        r["accepted"]["games_started"],
        r["accepted"]["games_finished"],
        r["accepted"]["moves"],
        r["accepted"]["moves_per_s"],
        r["accepted"]["human_moves"]
    ));
    out.push_str(&format!("refused: {}\n", r["refused"]));
    if r["errors"].as_object().is_some_and(|o| !o.is_empty()) {
        out.push_str(&format!("other errors: {}\n", r["errors"]));
    }
    out.push_str(&format!(
        "move latency ms (from intended send): n {} p50 {} p95 {} p99 {} p99.9 {} max {}\n",
        lat["count"], lat["p50"], lat["p95"], lat["p99"], lat["p999"], lat["max"]
    ));
    let st = &r["start_latency_ms"];
    if st["count"].as_u64().unwrap_or(0) > 0 {
        out.push_str(&format!(
            "new-game latency ms (arrival to game start): n {} p50 {} p95 {} p99 {} max {}\n",
            st["count"], st["p50"], st["p95"], st["p99"], st["max"]
        ));
    }
    if !r["attack"].is_null() {
        out.push_str(&format!("attack: {}\n", r["attack"]));
    }
    out.push_str(&format!("server: {}\n", line["server"]));
    out.push_str(&format!("generator: {}\n", line["generator"]));
    if !r["moves_per_core_second"].is_null() {
        out.push_str(&format!(
            "server moves per core-second {}, CPU per move {} us\n",
            r["moves_per_core_second"], r["server_cpu_us_per_move"]
        ));
    }
    out.push_str("| run | clients | p95 | refused |\n|---|---|---|---|\n");
    out.push_str(&table_row(line));
    out.push('\n');
    out
}
