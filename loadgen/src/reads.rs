//! `wizard-bench reads`: the latency of the history and profile pages (`/games/<id>`,
//! `/profiles/<id>`, `/leaderboard`) at a fixed request rate, open loop: request `i`
//! is due at `start + i / rate`, its latency runs from that intended time to the last
//! byte of the answer, and the routes take turns. Each request is one connection (as a
//! browser's page load is), from one of `--addrs` loopback addresses in turn, so that a
//! server with its default `SOCKET_RATE` and `GAMES_RATE` refuses none at the default
//! rate (100 a second over 200 addresses: half a socket a second and 10 `/games`
//! requests a minute per address).
//!
//! The ids are found first: the profiles of `/leaderboard`, then the recent games of
//! each (`/profiles/<id>`): a server with no ranked profile is an error (play some
//! rated games first). Prints one JSON line: per route the count, the answers by
//! status and the latency p50 / p99 / max in milliseconds.
//!
//! ```text
//! wizard-bench reads --addr 127.0.0.1:8000 [--rate 100] [--duration 30] [--addrs 200]
//! ```

#![allow(clippy::print_stderr, clippy::print_stdout)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_lite::{AsyncReadExt, AsyncWriteExt, FutureExt};

use crate::net::{source_ip, tcp_from};

/// `reads`' usage line.
pub const USAGE: &str =
    "usage: wizard-bench reads --addr HOST:PORT [--rate PER_S] [--duration S] [--addrs N]\n";

/// A request not answered after this long counts as failed (status 0).
const ANSWER_WAIT_MAX: Duration = Duration::from_secs(10);
/// At most this many bytes of an answer are read (a game's JSON is about 30 KB).
const ANSWER_BYTES_MAX: usize = 1 << 20;
/// At most this many requests in one run (the rate times the duration).
const REQUESTS_MAX: u64 = 1_000_000;
/// At most this many profiles are asked for their recent games while finding ids.
const PROFILES_ASKED_MAX: usize = 100;

struct Args {
    addr: SocketAddr,
    rate_per_s: f64,
    duration: Duration,
    addrs: usize,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut parser = lexopt::Parser::from_args(args.iter().cloned());
    let mut addr = None;
    let (mut rate_per_s, mut duration_s, mut addrs) = (100.0f64, 30.0f64, 200usize);
    while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
        let lexopt::Arg::Long(name) = arg else {
            return Err(format!("unexpected {arg:?}"));
        };
        let name = name.to_owned();
        let v = parser.value().map_err(|e| e.to_string())?;
        let v = v.to_string_lossy();
        let bad = || format!("--{name}: bad value {v:?}");
        match name.as_str() {
            "addr" => addr = Some(v.parse().map_err(|_| bad())?),
            "rate" => rate_per_s = v.parse().map_err(|_| bad())?,
            "duration" => duration_s = v.parse().map_err(|_| bad())?,
            "addrs" => addrs = v.parse().map_err(|_| bad())?,
            _ => return Err(format!("unknown argument --{name}")),
        }
    }
    if !(rate_per_s > 0.0 && duration_s > 0.0 && rate_per_s * duration_s <= REQUESTS_MAX as f64) {
        return Err(format!(
            "--rate and --duration: positive, at most {REQUESTS_MAX} requests"
        ));
    }
    if addrs == 0 {
        return Err("--addrs: at least 1".to_owned());
    }
    Ok(Args {
        addr: addr.ok_or("--addr is required")?,
        rate_per_s,
        duration: Duration::from_secs_f64(duration_s),
        addrs,
    })
}

/// One `GET path` on a connection of its own from address group `k`: the status (0
/// when the connection or the answer failed) and the body.
async fn get(addr: SocketAddr, k: usize, path: &str) -> (u16, String) {
    let fetch = async {
        let mut tcp = tcp_from(addr, source_ip(2, k)).await.ok()?;
        let request = format!("GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n");
        tcp.write_all(request.as_bytes()).await.ok()?;
        let mut answer = Vec::new();
        (&mut tcp)
            .take(ANSWER_BYTES_MAX as u64)
            .read_to_end(&mut answer)
            .await
            .ok()?;
        let text = String::from_utf8_lossy(&answer).into_owned();
        let status = text.split(' ').nth(1)?.parse().ok()?;
        let body = text
            .split_once("\r\n\r\n")
            .map_or(String::new(), |(_, b)| b.to_owned());
        Some((status, body))
    };
    fetch
        .or(async {
            async_io::Timer::after(ANSWER_WAIT_MAX).await;
            None
        })
        .await
        .unwrap_or((0, String::new()))
}

/// The profiles of `/leaderboard` and the games of their pages.
async fn find_ids(addr: SocketAddr) -> Result<(Vec<String>, Vec<String>), String> {
    let (status, body) = get(addr, 0, "/leaderboard").await;
    let board: serde_json::Value =
        serde_json::from_str(&body).map_err(|_| format!("/leaderboard: status {status}"))?;
    let profiles: Vec<String> = board["profiles"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["id"].as_str().map(str::to_owned))
        .collect();
    let mut games = Vec::new();
    for (k, id) in profiles.iter().take(PROFILES_ASKED_MAX).enumerate() {
        let (_, body) = get(addr, k + 1, &format!("/profiles/{id}")).await;
        let page: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        for g in page["recent_games"].as_array().into_iter().flatten() {
            if let Some(id) = g["id"].as_str().filter(|id| !games.iter().any(|x| x == id)) {
                games.push(id.to_owned());
            }
        }
    }
    if profiles.is_empty() || games.is_empty() {
        return Err(format!(
            "found {} ranked profiles and {} games: play rated games first",
            profiles.len(),
            games.len()
        ));
    }
    Ok((profiles, games))
}

/// What one route's requests came to.
#[derive(Default)]
struct Route {
    latency_ms: Vec<f64>,
    by_status: BTreeMap<u16, u64>,
}

impl Route {
    fn json(&mut self) -> serde_json::Value {
        self.latency_ms.sort_by(f64::total_cmp);
        let ms = &self.latency_ms;
        let at = |q: f64| {
            let i = ((ms.len() as f64 * q).ceil() as usize).clamp(1, ms.len().max(1)) - 1;
            ms.get(i)
                .map_or(f64::NAN, |v| (v * 1000.0).round() / 1000.0)
        };
        serde_json::json!({
            "count": ms.len(),
            "by_status": self.by_status.iter().map(|(s, n)| (s.to_string(), *n)).collect::<BTreeMap<_, _>>(),
            "p50_ms": at(0.5),
            "p99_ms": at(0.99),
            "max_ms": ms.last().copied().unwrap_or(f64::NAN),
        })
    }
}

/// Runs `wizard-bench reads`.
pub fn run(args: &[String]) -> std::process::ExitCode {
    let args = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprint!("wizard-bench reads: {e}\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    crate::net::raise_nofile_limit();
    let ex = Rc::new(smol::LocalExecutor::new());
    let result = smol::block_on(ex.run(measure(ex.clone(), &args)));
    match result {
        Ok(line) => {
            println!("{line}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("wizard-bench reads: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn measure(
    ex: Rc<smol::LocalExecutor<'static>>,
    args: &Args,
) -> Result<serde_json::Value, String> {
    let (profiles, games) = find_ids(args.addr).await?;
    let count = (args.rate_per_s * args.duration.as_secs_f64()) as u64;
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(count as usize);
    for i in 0..count {
        let due = start + Duration::from_secs_f64(i as f64 / args.rate_per_s);
        async_io::Timer::at(due).await;
        let n = i as usize / 3;
        let (route, path) = match i % 3 {
            0 => (0, format!("/games/{}", games[n % games.len()])),
            1 => (1, format!("/profiles/{}", profiles[n % profiles.len()])),
            _ => (2, "/leaderboard".to_owned()),
        };
        let (addr, k) = (args.addr, 1 + PROFILES_ASKED_MAX + i as usize % args.addrs);
        tasks.push(ex.spawn(async move {
            let (status, _) = get(addr, k, &path).await;
            (route, status, due.elapsed())
        }));
    }
    let mut routes: [Route; 3] = Default::default();
    for t in tasks {
        let (route, status, took) = t.await;
        let r = &mut routes[route];
        *r.by_status.entry(status).or_default() += 1;
        r.latency_ms.push(took.as_secs_f64() * 1000.0);
    }
    let [g, p, l] = &mut routes;
    Ok(serde_json::json!({
        "rate_per_s": args.rate_per_s,
        "duration_s": args.duration.as_secs_f64(),
        "addrs": args.addrs,
        "games_known": games.len(),
        "profiles_known": profiles.len(),
        "games": g.json(),
        "profiles": p.json(),
        "leaderboard": l.json(),
    }))
}
