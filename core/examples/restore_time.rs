//! Measures `Server::restore` for many running games halfway through, and the size of
//! their records as the store keeps them: each game has 1 human and 3 AI seats, and
//! half its moves made by the heuristic player.
//!
//! `cargo run --release -p wizard-core --example restore_time -- [--games N] [--runs K]`

// A tool around the core, not the core: it reads its command line and the clock.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::Instant;

use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::rng::Seed;
use wizard_core::{Server, Time};

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let games = arg(&args, "--games", 10_000);
    let runs = arg(&args, "--runs", 5);
    let records = wizard_core::machine::records::halfway_games(games);
    let bytes: usize = records.iter().map(|r| r.encode().len()).sum();
    let config = Config::from_pairs([
        ("MAX_LOBBIES", games.to_string().as_str()),
        ("MAX_SESSIONS", (games * 2).to_string().as_str()),
        ("MAX_ACTIVE_GAMES", games.to_string().as_str()),
        ("MAX_LOBBIES_PER_IP", "1000"),
        ("MAX_GAMES_PER_IP", "1000"),
    ])
    .unwrap();
    let mut times = Vec::new();
    for run in 0..runs {
        let input = records.clone();
        let started = Instant::now();
        let server =
            Server::restore(config.clone(), Seed::from_u64(run), Time::ZERO, input).unwrap();
        times.push(started.elapsed().as_secs_f64());
        assert_eq!(server.gauges().active_games, games);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{games} games halfway, {} records, {:.1} MiB of record text ({:.1} KiB per game); restore median {:.3} s, min {:.3} s, max {:.3} s over {runs} runs",
        records.len(),
        bytes as f64 / 1048576.0,
        bytes as f64 / games as f64 / 1024.0,
        times[times.len() / 2],
        times[0],
        times[times.len() - 1],
    );
}
