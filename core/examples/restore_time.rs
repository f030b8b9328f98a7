//! Measures `Server::restore` for many running games halfway through, and the size of
//! their records as the store keeps them: each game has 1 human and 3 AI seats, and
//! half its moves made by the heuristic player.
//!
//! `cargo run --release -p wizard-core --example restore_time -- [--games N] [--runs K]`

// A tool around the core, not the core: it reads its command line and the clock.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::net::IpAddr;
use std::time::Instant;

use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;
use sha2::Digest as _;
use wizard_core::config::Config;
use wizard_core::game::{Game, Options, bot};
use wizard_core::io::MoveSource;
use wizard_core::records::{LobbyRecord, Record, SeatRecord};
use wizard_core::rng::Seed;
use wizard_core::session::{LobbyId, SessionId};
use wizard_core::wire::LobbyStatus;
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
    let mut records = Vec::new();
    let mut rng = ChaCha12Rng::seed_from_u64(1);
    for g in 0..games {
        let session = g + 1;
        records.push(Record::Session {
            session: SessionId(session),
            player_id: format!("{session:012x}"),
            token_sha256: sha2::Sha256::digest(session.to_le_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        });
        let seed = g * 7919 + 13;
        let seats = (0..4)
            .map(|s| SeatRecord {
                player_id: if s == 0 {
                    format!("{session:012x}")
                } else {
                    format!("ai-{g:08x}{s}")
                },
                name: format!("P{s}"),
                session: (s == 0).then_some(SessionId(session)),
            })
            .collect();
        records.push(Record::Lobby(LobbyRecord {
            lobby: LobbyId(g + 1),
            code: format!("{:06}", g),
            status: LobbyStatus::Playing,
            host: format!("{session:012x}"),
            options: Options::default(),
            seats,
            owner: IpAddr::from([10, (g >> 16) as u8, (g >> 8) as u8, g as u8]),
            game_no: 1,
            seed: Some(seed),
        }));
        let mut events = Vec::new();
        let mut game = Game::new(4, Options::default(), seed, &mut events).unwrap();
        // A 4-player game has 15 rounds: play the first 7 and a half.
        while u32::from(game.round()) * 2 <= u32::from(game.rounds()) + 1 {
            let Some(seat) = game.next_to_act() else {
                break;
            };
            let action = bot::decide(&game.observation(seat), &mut rng).unwrap();
            game.apply(seat, action, &mut events).unwrap();
            events.clear();
            records.push(Record::Move {
                lobby: LobbyId(g + 1),
                game_no: 1,
                seat,
                action,
                by: if seat == 0 {
                    MoveSource::Human
                } else {
                    MoveSource::Ai
                },
                autoplayed: false,
            });
        }
    }
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
