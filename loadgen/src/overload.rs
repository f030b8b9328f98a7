//! `wizard-bench overload`: closed-loop load that speaks the real protocol: `games`
//! games at full speed, each one human (this client) and `ai` AI seats, the human
//! moving as soon as a state shows its turn. Each game connects from its own 127.0.0.x
//! address so per-IP limits do not interfere. Used by `bench/cpu_quota_test.sh` (the
//! overload timeline) and `bench/ctx_switches.sh` (context switches and CPU per move).
//!
//! ```text
//! wizard-bench overload --addr 127.0.0.1:8000 [--games 30] [--ai 2] [--load-secs 12]
//!                 [--recover-secs 20] [--timeline FILE]      # overload timeline + checks
//! wizard-bench overload --addr ... --moves 20000 --pid PID   # per-move figures
//! ```
//!
//! In timeline mode it polls `/health` every second, prints the table (time, level,
//! lag, CPU, throttled, moves) and checks the overload story: `overloaded` within
//! 5 s, `create_lobby` refused with `busy` while overloaded, moves going on while
//! overloaded, back to `normal` once the load stops. Exit status 1 when a check fails.

#![allow(clippy::print_stderr, clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_io::{Async, Timer};
use async_tungstenite::WebSocketStream;
use async_tungstenite::tungstenite::Message;
use async_tungstenite::tungstenite::client::IntoClientRequest;
use futures_lite::io::{AsyncReadExt, AsyncWriteExt};
use futures_lite::{FutureExt, StreamExt};
use wizard_core::vocabulary::game::{Event, Phase};
use wizard_core::vocabulary::wire::{
    ClientMessage, ErrorCode, GameView, LobbyStatus, ServerMessage, decode_server,
};
use wizard_core::vocabulary::wire::{decode_health, encode_client};

type Ws = WebSocketStream<Async<TcpStream>>;

/// Game starts are spread over this many milliseconds in timeline mode.
const STAGGER_MS: u64 = 2000;

#[derive(Clone, Debug)]
struct Args {
    addr: SocketAddr,
    games: usize,
    ai: usize,
    load_secs: u64,
    recover_secs: u64,
    timeline: Option<String>,
    moves: Option<u64>,
    pid: Option<u32>,
}

/// `overload`'s usage line.
pub const USAGE: &str = "usage: wizard-bench overload --addr HOST:PORT [--games N] [--ai N] [--load-secs S] \
     [--recover-secs S] [--timeline FILE] [--moves N --pid PID]\n";

/// `--help` on `overload`'s command line.
struct Help;

/// Reads `overload`'s flags through `lexopt` (`--name value` or `--name=value`); a
/// message for an unknown flag, a missing or a bad value.
fn args(raw: &[String]) -> Result<Result<Args, Help>, String> {
    use lexopt::prelude::*;
    fn parsed<T: std::str::FromStr>(parser: &mut lexopt::Parser, name: &str) -> Result<T, String> {
        let value = parser.value().map_err(|e| e.to_string())?;
        let text = value.to_string_lossy();
        text.parse()
            .map_err(|_| format!("--{name}: {text:?} is not valid"))
    }
    let mut a = Args {
        addr: SocketAddr::from(([127, 0, 0, 1], 8000)),
        games: 30,
        ai: 2,
        load_secs: 12,
        recover_secs: 20,
        timeline: None,
        moves: None,
        pid: None,
    };
    let mut parser = lexopt::Parser::from_args(raw);
    while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
        match arg {
            Long("addr") => a.addr = parsed(&mut parser, "addr")?,
            Long("games") => a.games = parsed(&mut parser, "games")?,
            Long("ai") => a.ai = parsed(&mut parser, "ai")?,
            Long("load-secs") => a.load_secs = parsed(&mut parser, "load-secs")?,
            Long("recover-secs") => a.recover_secs = parsed(&mut parser, "recover-secs")?,
            Long("timeline") => a.timeline = Some(parsed(&mut parser, "timeline")?),
            Long("moves") => a.moves = Some(parsed(&mut parser, "moves")?),
            Long("pid") => a.pid = Some(parsed(&mut parser, "pid")?),
            Short('h') | Long("help") => return Ok(Err(Help)),
            other => return Err(other.unexpected().to_string()),
        }
    }
    if !(2..=5).contains(&a.ai) {
        return Err(format!("--ai: 2 to 5 AI seats, not {}", a.ai));
    }
    Ok(Ok(a))
}

/// What every game task shares.
#[derive(Debug, Default)]
struct Shared {
    /// Moves applied (bids, trump choices, cards) in every game, from the events.
    moves: AtomicU64,
    games_finished: AtomicU64,
    starts_refused: AtomicU64,
    /// Set when the load phase is over: game tasks stop.
    stop: AtomicBool,
    /// Set when every game task has its lobby (per-move mode measures from here).
    ready: AtomicU64,
}

/// A TCP connection from the local address `from`.
fn tcp_from(addr: SocketAddr, from: IpAddr) -> std::io::Result<Async<TcpStream>> {
    use rustix::net::{AddressFamily, SocketType, bind, connect, socket};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None)?;
    bind(&fd, &SocketAddr::new(from, 0))?;
    connect(&fd, &addr)?;
    Async::new(TcpStream::from(fd))
}

async fn connect(addr: SocketAddr, from: IpAddr) -> Ws {
    let request = format!("ws://{addr}/ws").into_client_request().unwrap();
    let tcp = tcp_from(addr, from).expect("connect");
    let (ws, _) = async_tungstenite::client_async(request, tcp)
        .await
        .expect("handshake");
    ws
}

async fn send(ws: &mut Ws, message: &ClientMessage) -> bool {
    ws.send(Message::text(encode_client(message))).await.is_ok()
}

async fn recv(ws: &mut Ws) -> Option<ServerMessage> {
    loop {
        match ws.next().await? {
            Ok(Message::Text(text)) => return decode_server(text.as_str()).ok(),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

fn moves_in(events: &[Event]) -> u64 {
    events.iter().filter(|e| e.mover().is_some()).count() as u64
}

/// One game's human: lobby, AI seats, then games back to back until told to stop.
async fn game(i: usize, args: Args, shared: Arc<Shared>) {
    let from = IpAddr::from([127, 0, 0, 10 + u8::try_from(i % 200).unwrap()]);
    let mut ws = connect(args.addr, from).await;
    send(
        &mut ws,
        &ClientMessage::Hello {
            token: None,
            deltas: false,
            profile_key: None,
        },
    )
    .await;
    if !seat_table(&mut ws, i, &args, &shared).await {
        return;
    }
    shared.ready.fetch_add(1, Ordering::Relaxed);
    while shared.ready.load(Ordering::Relaxed) < args.games as u64 {
        Timer::after(Duration::from_millis(5)).await;
    }
    // Starts spread over the first seconds, so that games are at different stages
    // when the server becomes overloaded (the timeline mode only).
    if args.moves.is_none() {
        Timer::after(Duration::from_millis(
            STAGGER_MS * i as u64 / args.games as u64,
        ))
        .await;
    }
    send(&mut ws, &ClientMessage::StartGame).await;
    while !shared.stop.load(Ordering::Relaxed) {
        let Some(message) = recv(&mut ws).await else {
            return;
        };
        match message {
            ServerMessage::State {
                lobby: Some(lobby),
                game,
                events,
            } => {
                shared.moves.fetch_add(moves_in(&events), Ordering::Relaxed);
                if events
                    .iter()
                    .any(|e| matches!(e, Event::GameFinished { .. }))
                {
                    shared.games_finished.fetch_add(1, Ordering::Relaxed);
                }
                play(&mut ws, lobby.status, game).await;
            }
            ServerMessage::Error {
                code: ErrorCode::Busy,
                ..
            } => {
                // Not accepting games: try again a little later (the load drops).
                shared.starts_refused.fetch_add(1, Ordering::Relaxed);
                Timer::after(Duration::from_millis(500)).await;
                send(&mut ws, &ClientMessage::StartGame).await;
            }
            _ => {}
        }
    }
}

/// Creates the lobby (again while refused) and adds the AI seats; `false` when told to
/// stop or the connection ended first.
async fn seat_table(ws: &mut Ws, i: usize, args: &Args, shared: &Shared) -> bool {
    let create = ClientMessage::CreateLobby {
        name: format!("Load {i}"),
        public: false,
    };
    let mut accepting = true;
    let mut seats = 0;
    let mut asked = false;
    while seats < args.ai + 1 {
        if shared.stop.load(Ordering::Relaxed) {
            return false;
        }
        let Some(message) = recv(ws).await else {
            return false;
        };
        match message {
            ServerMessage::ServerStatus {
                accepting_games, ..
            } => accepting = accepting_games,
            ServerMessage::State { lobby: None, .. } if !asked && accepting => {
                asked = true;
                send(ws, &create).await;
            }
            ServerMessage::State { lobby: Some(l), .. } => {
                seats = l.players.len();
                if seats < args.ai + 1 {
                    send(ws, &ClientMessage::AddAi { level: None }).await;
                }
            }
            ServerMessage::Error { .. } => {
                Timer::after(Duration::from_millis(500)).await;
                send(ws, &create).await;
                asked = true;
            }
            _ => {}
        }
    }
    true
}

/// The human's answer to a state: its move on its turn, back to the lobby after a
/// game, a new game from the lobby.
async fn play(ws: &mut Ws, status: LobbyStatus, game: Option<GameView>) {
    match (status, game) {
        (LobbyStatus::Playing, Some(g)) => {
            let obs = &g.observation;
            if g.you.is_some()
                && obs.to_act == g.you
                && obs.phase != Phase::Finished
                && let Some(action) = obs.legal_actions.first()
            {
                send(ws, &ClientMessage::Action { action: *action }).await;
            }
        }
        (LobbyStatus::Finished, _) => {
            send(ws, &ClientMessage::ReturnToLobby).await;
        }
        (LobbyStatus::Waiting, _) => {
            send(ws, &ClientMessage::StartGame).await;
        }
        _ => {}
    }
}

/// A separate player that tries to create a lobby whenever the server says it is
/// overloaded; records what it was told.
async fn create_probe(args: Args, refused_busy: Arc<AtomicU64>, created: Arc<AtomicU64>) {
    let mut ws = connect(args.addr, IpAddr::from([127, 0, 0, 250])).await;
    send(
        &mut ws,
        &ClientMessage::Hello {
            token: None,
            deltas: false,
            profile_key: None,
        },
    )
    .await;
    while let Some(message) = recv(&mut ws).await {
        match message {
            ServerMessage::ServerStatus {
                load: wizard_core::vocabulary::load::LoadLevel::Overloaded,
                ..
            } => {
                send(
                    &mut ws,
                    &ClientMessage::CreateLobby {
                        name: "Probe".into(),
                        public: false,
                    },
                )
                .await;
            }
            ServerMessage::Error {
                code: ErrorCode::Busy,
                ..
            } => {
                refused_busy.fetch_add(1, Ordering::Relaxed);
            }
            ServerMessage::State { lobby: Some(_), .. } => {
                created.fetch_add(1, Ordering::Relaxed);
                send(&mut ws, &ClientMessage::LeaveLobby).await;
            }
            _ => {}
        }
    }
}

async fn http_get(addr: SocketAddr, path: &str) -> Option<String> {
    let get = async {
        let mut tcp = Async::<TcpStream>::connect(addr).await.ok()?;
        let request = format!("GET {path} HTTP/1.1\r\nHost: load\r\nConnection: close\r\n\r\n");
        tcp.write_all(request.as_bytes()).await.ok()?;
        let mut response = String::new();
        tcp.read_to_string(&mut response).await.ok()?;
        response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())
    };
    get.or(async {
        Timer::after(Duration::from_secs(3)).await;
        None
    })
    .await
}

/// `/proc/<pid>` figures: context switches per thread (name, voluntary, involuntary;
/// `/proc/<pid>/status` counts the main thread only, so every task is read) and the
/// process's CPU seconds (utime + stime of `/proc/<pid>/stat`, all threads).
fn proc_figures(pid: u32) -> (Vec<(String, u64, u64)>, f64) {
    let mut threads = Vec::new();
    let mut tids: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    tids.sort();
    for tid in tids {
        let dir = format!("/proc/{pid}/task/{tid}");
        let status = std::fs::read_to_string(format!("{dir}/status")).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0u64)
        };
        let name = std::fs::read_to_string(format!("{dir}/comm")).unwrap_or_default();
        threads.push((
            format!("{}/{tid}", name.trim()),
            field("voluntary_ctxt_switches:"),
            field("nonvoluntary_ctxt_switches:"),
        ));
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime is field 14, stime 15 (1-based): index 11 and 12 after the ')'.
    let hz = 100.0; // USER_HZ on Linux
    (threads, (ticks(11) + ticks(12)) as f64 / hz)
}

/// Per-move mode: play until `moves` moves were applied, report `/proc/<pid>` deltas.
async fn per_move(args: Args, shared: Arc<Shared>, moves: u64, pid: u32) -> bool {
    let started = Instant::now();
    while shared.ready.load(Ordering::Relaxed) < args.games as u64 {
        Timer::after(Duration::from_millis(5)).await;
    }
    let (threads0, cpu0) = proc_figures(pid);
    let m0 = shared.moves.load(Ordering::Relaxed);
    let t0 = Instant::now();
    while shared.moves.load(Ordering::Relaxed) - m0 < moves {
        Timer::after(Duration::from_millis(2)).await;
        if started.elapsed() > Duration::from_secs(300) {
            eprintln!("gave up after 300 s");
            return false;
        }
    }
    let (threads1, cpu1) = proc_figures(pid);
    let done = (shared.moves.load(Ordering::Relaxed) - m0) as f64;
    let wall = t0.elapsed().as_secs_f64();
    shared.stop.store(true, Ordering::Relaxed);
    let (mut vol, mut invol) = (0u64, 0u64);
    let mut per_thread = Vec::new();
    for (name, v1, n1) in &threads1 {
        let (v0, n0) = threads0
            .iter()
            .find(|(n, _, _)| n == name)
            .map_or((0, 0), |(_, v, n)| (*v, *n));
        let (dv, dn) = (v1 - v0, n1 - n0);
        vol += dv;
        invol += dn;
        per_thread.push(format!("{name} {dv}/{dn}"));
    }
    println!(
        "moves {done:.0} in {wall:.2} s ({:.0}/s): server CPU {:.2} s = {:.1} us/move; \
         context switches voluntary {vol} ({:.3}/move), involuntary {invol} ({:.3}/move); \
         per thread voluntary/involuntary: {}",
        done / wall,
        cpu1 - cpu0,
        (cpu1 - cpu0) * 1e6 / done,
        vol as f64 / done,
        invol as f64 / done,
        per_thread.join(", ")
    );
    true
}

/// Timeline mode: poll `/health` each second during the load and the recovery.
async fn timeline(args: Args, shared: Arc<Shared>) -> bool {
    let refused_busy = Arc::new(AtomicU64::new(0));
    let created = Arc::new(AtomicU64::new(0));
    let probe = smol::spawn(create_probe(
        args.clone(),
        Arc::clone(&refused_busy),
        Arc::clone(&created),
    ));
    let start = Instant::now();
    // The wall clock at `start`, so that the server's own log times can be set on
    // this timeline (bench/calibrate_rows.py).
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let mut lines = vec![format!(
        "{:>5}  {:<10}  {:>8}  {:>5}  {:>9}  {:>6}  {:>5}  {}",
        "t (s)", "level", "lag (ms)", "CPU", "throttled", "moves", "games", "event"
    )];
    println!("{}", lines[0]);
    let mut story = Story {
        last_level: String::from("normal"),
        ..Story::default()
    };
    let mut tick = 0u64;
    loop {
        tick += 1;
        Timer::at(start + Duration::from_secs(tick)).await;
        let t = start.elapsed().as_secs_f64();
        let (line, over) = story.second(t, &args, &shared, &refused_busy).await;
        println!("{line}");
        lines.push(line);
        if over {
            break;
        }
    }
    drop(probe);
    let ok = story.check(&args, &refused_busy, &created, &mut lines);
    let summary = format!(
        "total moves {}, games finished {}, starts refused {}",
        shared.moves.load(Ordering::Relaxed),
        shared.games_finished.load(Ordering::Relaxed),
        shared.starts_refused.load(Ordering::Relaxed)
    );
    println!("{summary}");
    lines.push(summary);
    lines.push(format!("started at unix time {started_unix_s:.6} s"));
    if let Some(path) = &args.timeline {
        let _ = std::fs::write(path, lines.join("\n") + "\n");
    }
    ok
}

/// What the timeline saw of the overload story, second by second (times in seconds
/// from the start).
#[derive(Debug, Default)]
struct Story {
    first_overloaded: Option<f64>,
    moves_overloaded: u64,
    busy_while_overloaded: bool,
    /// Back to normal: (after the load was gone, after the client stopped).
    normal_after_load: Option<(f64, f64)>,
    last_moves: u64,
    load_stopped_at: Option<f64>,
    load_gone_at: Option<f64>,
    last_level: String,
}

impl Story {
    /// The second at `t`: the load stopped when its time is up, `/health` read, the
    /// story's events noted; its table line, and whether the timeline is over.
    async fn second(
        &mut self,
        t: f64,
        args: &Args,
        shared: &Shared,
        refused_busy: &AtomicU64,
    ) -> (String, bool) {
        let mut event = String::new();
        if self.load_stopped_at.is_none() && t >= args.load_secs as f64 {
            shared.stop.store(true, Ordering::Relaxed);
            self.load_stopped_at = Some(t);
            event.push_str("load stops; ");
        }
        let moves = shared.moves.load(Ordering::Relaxed);
        let delta = moves - self.last_moves;
        self.last_moves = moves;
        let health = http_get(args.addr, "/health")
            .await
            .and_then(|b| decode_health(&b).ok());
        let Some(h) = health else {
            return (format!("{t:>5.1}  (no /health answer within 3 s)"), false);
        };
        let level = h.load.to_string();
        if level != self.last_level {
            event.push_str(&format!("{} -> {level}; ", self.last_level));
            self.last_level = level.clone();
        }
        // The load is gone when the client stopped, or earlier when no game could
        // restart after overload refused new games and no move was made any more.
        if self.load_gone_at.is_none()
            && (self.load_stopped_at.is_some() || (self.first_overloaded.is_some() && delta == 0))
        {
            self.load_gone_at = Some(t);
            if self.load_stopped_at.is_none() {
                event.push_str("no moves: running games over, new ones refused; ");
            }
        }
        if level == "overloaded" {
            self.first_overloaded.get_or_insert(t);
            self.moves_overloaded += delta;
            if refused_busy.load(Ordering::Relaxed) > 0 && !self.busy_while_overloaded {
                self.busy_while_overloaded = true;
                event.push_str("create_lobby refused with busy; ");
            }
        }
        let line = format!(
            "{t:>5.1}  {level:<10}  {:>8.1}  {:>5.2}  {:>9.2}  {delta:>6}  {:>5}  {}",
            h.loop_lag * 1e3,
            h.cpu,
            h.throttled,
            h.active_games,
            event.trim_end_matches("; ")
        );
        if let (Some(stopped), Some(gone)) = (self.load_stopped_at, self.load_gone_at)
            && level == "normal"
            && self.first_overloaded.is_some()
        {
            self.normal_after_load = Some((t - gone, t - stopped));
            return (line, true);
        }
        let over = self
            .load_stopped_at
            .is_some_and(|s| t - s > args.recover_secs as f64);
        (line, over)
    }

    /// The overload story's checks, each printed and added to `lines`; whether all
    /// passed.
    fn check(
        &self,
        args: &Args,
        refused_busy: &AtomicU64,
        created: &AtomicU64,
        lines: &mut Vec<String>,
    ) -> bool {
        let mut ok = true;
        let mut check = |pass: bool, what: String| {
            ok &= pass;
            let line = format!("{} {what}", if pass { "PASS" } else { "FAIL" });
            println!("{line}");
            lines.push(line);
        };
        let first_overloaded = self.first_overloaded;
        check(
            first_overloaded.is_some_and(|t| t <= 5.5),
            format!("overloaded within 5 s (first seen at {first_overloaded:?} s)"),
        );
        check(
            self.busy_while_overloaded,
            format!(
                "create_lobby refused with busy while overloaded ({} refusals, {} lobbies created)",
                refused_busy.load(Ordering::Relaxed),
                created.load(Ordering::Relaxed)
            ),
        );
        check(
            self.moves_overloaded > 0,
            format!("moves made while overloaded: {}", self.moves_overloaded),
        );
        let recovered = match self.normal_after_load {
            Some((gone, stopped)) => {
                format!("{gone:.1} s after the last move, {stopped:.1} s after the client stopped")
            }
            None => format!("not within {} s", args.recover_secs),
        };
        check(
            self.normal_after_load
                .is_some_and(|(gone, _)| gone <= args.recover_secs as f64),
            format!("back to normal after the load stopped: {recovered}"),
        );
        ok
    }
}

/// Runs the mode with its arguments (after `overload`); failure when a check fails.
pub fn run(raw: &[String]) -> std::process::ExitCode {
    let args = match args(raw) {
        Ok(Ok(args)) => args,
        Ok(Err(Help)) => {
            print!("{USAGE}");
            return std::process::ExitCode::SUCCESS;
        }
        Err(e) => {
            eprint!("wizard-bench overload: {e}\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    let shared = Arc::new(Shared::default());
    let ex = Arc::new(smol::Executor::new());
    // Two threads: the client must not be the bottleneck.
    let (done_tx, done_rx) = async_channel::bounded::<()>(1);
    for _ in 0..1 {
        let (ex, done_rx) = (Arc::clone(&ex), done_rx.clone());
        std::thread::spawn(move || smol::block_on(ex.run(done_rx.recv())));
    }
    let ok = smol::block_on(ex.run(async {
        for i in 0..args.games {
            ex.spawn(game(i, args.clone(), Arc::clone(&shared)))
                .detach();
        }
        match (args.moves, args.pid) {
            (Some(moves), Some(pid)) => {
                per_move(args.clone(), Arc::clone(&shared), moves, pid).await
            }
            _ => timeline(args.clone(), Arc::clone(&shared)).await,
        }
    }));
    drop(done_tx);
    if ok {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
