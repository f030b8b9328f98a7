//! `wizard-bench quick`: time to seat with N players queueing for quick play at once on
//! one server. Every player connects (each from its own loopback address group) and
//! says hello first; then all send `quick_play` together and each one's time from its
//! send to the `state` of its running game is kept. Prints p50, p99 and the largest,
//! and how many players were seated with AI seats.
//!
//! Across shards, `--addr` names each shard as `ID=HOST:PORT`, once per shard: the
//! players are spread over them in turn, and a player told `matched {code, shard}`
//! follows it as the web client does (a new connection to that shard, `hello`,
//! `join_lobby`); its time runs until the game's `state` there. `moved` counts them.
//!
//! `--kill ID=PID --kill-after-ms MS` sends SIGKILL to shard ID's process MS after the
//! players queued: a shard dying while tables form. Each shard's players and how many
//! of them were seated are printed; a player of a surviving shard not seated is a
//! ticket lost.
//!
//! ```text
//! wizard-bench quick --addr 127.0.0.1:8000 [--players N] [--seats S]
//! wizard-bench quick --addr A=127.0.0.1:8001 --addr B=127.0.0.1:8002 [--players N]
//!     [--kill A=PID --kill-after-ms MS]
//! ```

#![allow(clippy::print_stderr)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_tungstenite::tungstenite::Message;
use futures_lite::StreamExt;
use wizard_core::vocabulary::wire::{ClientMessage, ServerMessage, decode_server, encode_client};

use crate::net::{Ws, connect, raise_nofile_limit, source_ip};

/// `quick`'s usage line.
pub const USAGE: &str = "usage: wizard-bench quick --addr [ID=]HOST:PORT [--addr ID=HOST:PORT ...] [--players N] [--seats S] [--kill ID=PID --kill-after-ms MS]\n";

/// Players per source address (under the server's `MAX_CONNECTIONS_PER_IP`).
const PER_IP: usize = 5;
/// A player not seated after this long counts as a failure.
const SEAT_TIMEOUT: Duration = Duration::from_secs(120);

struct Args {
    /// The shards (an empty id for a server without shards), players spread in turn.
    addrs: Vec<(String, SocketAddr)>,
    players: usize,
    seats: u8,
    /// The shard whose process is killed, and its pid.
    kill: Option<(String, i32)>,
    kill_after: Duration,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut parser = lexopt::Parser::from_args(args.iter().cloned());
    let mut addrs = Vec::new();
    let (mut players, mut seats) = (30, 4);
    let (mut kill, mut kill_after) = (None, Duration::ZERO);
    while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
        match arg {
            lexopt::Arg::Long("addr") => {
                let v = parser.value().map_err(|e| e.to_string())?;
                let v = v.to_string_lossy();
                let (id, at) = v.split_once('=').unwrap_or(("", &v));
                let at = at.parse().map_err(|_| "--addr: [ID=]HOST:PORT")?;
                addrs.push((id.to_owned(), at));
            }
            lexopt::Arg::Long("players") => {
                let v = parser.value().map_err(|e| e.to_string())?;
                players = v
                    .to_string_lossy()
                    .parse()
                    .map_err(|_| "--players: a count")?;
            }
            lexopt::Arg::Long("seats") => {
                let v = parser.value().map_err(|e| e.to_string())?;
                seats = v.to_string_lossy().parse().map_err(|_| "--seats: 3 to 6")?;
            }
            lexopt::Arg::Long("kill") => {
                let v = parser.value().map_err(|e| e.to_string())?;
                let v = v.to_string_lossy();
                let (id, pid) = v.split_once('=').ok_or("--kill: ID=PID")?;
                let pid = pid.parse().map_err(|_| "--kill: ID=PID")?;
                kill = Some((id.to_owned(), pid));
            }
            lexopt::Arg::Long("kill-after-ms") => {
                let v = parser.value().map_err(|e| e.to_string())?;
                let ms = v
                    .to_string_lossy()
                    .parse()
                    .map_err(|_| "--kill-after-ms: a count")?;
                kill_after = Duration::from_millis(ms);
            }
            other => return Err(format!("unexpected {other:?}")),
        }
    }
    if addrs.is_empty() {
        return Err("--addr is required".to_owned());
    }
    if let Some((id, _)) = &kill
        && !addrs.iter().any(|(a, _)| a == id)
    {
        return Err(format!("--kill: no shard {id:?} among --addr"));
    }
    Ok(Args {
        addrs,
        players,
        seats,
        kill,
        kill_after,
    })
}

async fn send(ws: &mut Ws, m: &ClientMessage) -> bool {
    ws.send(Message::text(encode_client(m))).await.is_ok()
}

async fn next(ws: &mut Ws) -> Option<ServerMessage> {
    loop {
        match ws.next().await? {
            Ok(Message::Text(t)) => return decode_server(t.as_str()).ok(),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
}

/// Connects and says hello; the connection once its `state` came.
async fn arrive(addr: SocketAddr, k: usize) -> Option<Ws> {
    let mut ws = connect(addr, "/ws", source_ip(0, k / PER_IP)).await.ok()?;
    if !send(
        &mut ws,
        &ClientMessage::Hello {
            token: None,
            profile_key: None,
            deltas: false,
        },
    )
    .await
    {
        return None;
    }
    while !matches!(next(&mut ws).await?, ServerMessage::State { .. }) {}
    Some(ws)
}

/// What one player's wait came to.
struct Seated {
    wait: Duration,
    /// AI seats at its table.
    ai: bool,
    /// Told `matched`: seated on another shard.
    moved: bool,
}

/// Queues and waits for the running game (following `matched` to its shard).
async fn queue(
    mut ws: Ws,
    k: usize,
    seats: u8,
    shards: Arc<Vec<(String, SocketAddr)>>,
    go: async_channel::Receiver<()>,
) -> Option<Seated> {
    let _ = go.recv().await;
    let name = format!("Q{k}");
    let start = Instant::now();
    if !send(
        &mut ws,
        &ClientMessage::QuickPlay {
            name: name.clone(),
            seats: Some(seats),
        },
    )
    .await
    {
        return None;
    }
    let mut moved = false;
    loop {
        match next(&mut ws).await? {
            ServerMessage::State {
                lobby: Some(lobby),
                game: Some(_),
                ..
            } => {
                let ai = lobby.players.iter().any(|p| p.is_ai);
                return Some(Seated {
                    wait: start.elapsed(),
                    ai,
                    moved,
                });
            }
            ServerMessage::Matched { code, shard } if !moved => {
                let addr = shards.iter().find(|(id, _)| *id == shard)?.1;
                ws = arrive(addr, k).await?;
                if !send(
                    &mut ws,
                    &ClientMessage::JoinLobby {
                        code,
                        name: name.clone(),
                    },
                )
                .await
                {
                    return None;
                }
                moved = true;
            }
            ServerMessage::Error { code, message, .. } => {
                eprintln!("player {k}: {code:?} {message}");
                return None;
            }
            _ => {}
        }
    }
}

/// Runs `wizard-bench quick`.
pub fn run(args: &[String]) -> std::process::ExitCode {
    let args = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprint!("{e}\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    raise_nofile_limit();
    let ex = Arc::new(smol::Executor::new());
    let result = smol::block_on(ex.run(async {
        let mut conns = Vec::with_capacity(args.players);
        for k in 0..args.players {
            let addr = args
                .addrs
                .get(k % args.addrs.len())
                .map(|(_, a)| *a)
                .ok_or("no --addr")?;
            match arrive(addr, k).await {
                Some(ws) => conns.push(ws),
                None => return Err(format!("player {k} could not connect")),
            }
        }
        let (go_tx, go_rx) = async_channel::bounded::<()>(1);
        let shards = Arc::new(args.addrs.clone());
        let tasks: Vec<_> = conns
            .into_iter()
            .enumerate()
            .map(|(k, ws)| {
                let go = go_rx.clone();
                let seats = args.seats;
                let shards = Arc::clone(&shards);
                ex.spawn(async move {
                    futures_lite::future::or(queue(ws, k, seats, shards, go), async {
                        async_io::Timer::after(SEAT_TIMEOUT).await;
                        None
                    })
                    .await
                })
            })
            .collect();
        drop(go_tx); // every waiting task starts at once
        if let Some((id, pid)) = &args.kill {
            async_io::Timer::after(args.kill_after).await;
            let pid = rustix::process::Pid::from_raw(*pid).ok_or("--kill: no pid 0")?;
            rustix::process::kill_process(pid, rustix::process::Signal::KILL)
                .map_err(|e| format!("--kill: shard {id}: {e}"))?;
            eprintln!("killed shard {id}");
        }
        let mut seated = Vec::new();
        for t in tasks {
            seated.push(t.await);
        }
        Ok(seated)
    }));
    match result {
        Err(e) => {
            eprintln!("{e}");
            std::process::ExitCode::FAILURE
        }
        Ok(seated) => report(&args, &seated),
    }
}

/// Prints the seat waits' percentiles and each shard's players seated; success when
/// every player of a shard not killed was seated.
fn report(args: &Args, seated: &[Option<Seated>]) -> std::process::ExitCode {
    let players = args.players;
    let mut ms: Vec<f64> = seated
        .iter()
        .flatten()
        .map(|s| s.wait.as_secs_f64() * 1000.0)
        .collect();
    ms.sort_by(f64::total_cmp);
    let with_ai = seated.iter().flatten().filter(|s| s.ai).count();
    let moved = seated.iter().flatten().filter(|s| s.moved).count();
    let at = |q: f64| {
        let i = ((ms.len() as f64 * q).ceil() as usize).clamp(1, ms.len().max(1)) - 1;
        ms.get(i).copied().unwrap_or(f64::NAN)
    };
    println!(
        "players {} seated {} with_ai {} moved {} p50_ms {:.1} p99_ms {:.1} max_ms {:.1}",
        players,
        ms.len(),
        with_ai,
        moved,
        at(0.5),
        at(0.99),
        ms.last().copied().unwrap_or(f64::NAN)
    );
    let mut lost = 0;
    for (i, (id, _)) in args.addrs.iter().enumerate() {
        let home = || seated.iter().skip(i).step_by(args.addrs.len());
        let (n, ok) = (home().count(), home().flatten().count());
        let killed = args.kill.as_ref().is_some_and(|(k, _)| k == id);
        if !killed {
            lost += n - ok;
        }
        let note = if killed { " (killed)" } else { "" };
        println!("shard {id:?}{note}: players {n} seated {ok}");
    }
    if lost == 0 {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
