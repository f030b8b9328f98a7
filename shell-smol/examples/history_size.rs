//! Measures the SQLite store's history: the bytes a finished game takes on disk and the
//! time to answer `/games/<id>` from the store. Whole 4-player games played by the
//! heuristic player (`wizard_core::machine::records::history::played_games`, one profile
//! seat each) are committed to a fresh store as the server commits them (a `game`
//! record each) and folded into its `games` and `game_seats` tables; the folder's
//! growth over an empty store, per game, is the size. Then the history reader answers
//! `--reads` requests for them, one at a time (read, decode and replay), timed.
//!
//! Then the writer's part of a game's end: `--write-runs R` more games are committed
//! each in a transaction of its own (a commit and a fold, [`Store::flush`]), and as
//! many in folds of 10, against the same count of folds of one move record: the wall
//! time and the process's CPU (the writer's thread with the committing one) per game
//! and per fold. With `--postgres URL` the writes go to shard `Z` of that database
//! (its rows deleted first) instead, and the size and reads are not measured.
//!
//! `cargo run --release -p wizard-server --example history_size -- [--games N] [--reads K] [--write-runs R] [--dir PATH] [--postgres URL]`

#![allow(clippy::expect_used, clippy::print_stderr, clippy::print_stdout)] // a measuring tool stops on a broken setup

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use wizard_core::machine::records::Record;
use wizard_core::machine::records::history::played_games;
use wizard_server::pg_store::PgStore;
use wizard_server::store::Store;
use wizard_server::store::history::{Query, Reader};

fn folder_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn main() {
    let (mut games, mut reads, mut write_runs) = (2_000u64, 500usize, 200u64);
    let mut postgres: Option<String> = None;
    let mut dir = std::env::temp_dir().join(format!("wizard-history-{}", std::process::id()));
    use lexopt::ValueExt as _;
    let mut args = lexopt::Parser::from_env();
    while let Some(arg) = args.next().expect("arguments") {
        use lexopt::Arg::Long;
        match arg {
            Long("games") => games = args.value().expect("--games N").parse().expect("N"),
            Long("reads") => reads = args.value().expect("--reads K").parse().expect("K"),
            Long("write-runs") => {
                write_runs = args.value().expect("--write-runs R").parse().expect("R")
            }
            Long("dir") => dir = PathBuf::from(args.value().expect("--dir PATH")),
            Long("postgres") => {
                postgres = Some(args.value().expect("--postgres URL").string().expect("URL"))
            }
            other => {
                eprintln!("{}", other.unexpected());
                std::process::exit(2);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("wizard.db");
    let mut played = played_games(games + write_runs * 2, 4);
    let to_write: Vec<Record> = played
        .split_off(games as usize)
        .into_iter()
        .map(Record::Game)
        .collect();
    if let Some(url) = &postgres {
        let mut client = wizard_server::pg_store::connect(url, shard()).expect("connect");
        let _ = client.execute("DELETE FROM wizard_records WHERE shard = 'Z'", &[]);
        drop(client);
        let (store, _) = PgStore::open(url, shard()).expect("store");
        let fill: Vec<Record> = played.into_iter().map(Record::Game).collect();
        for chunk in fill.chunks(1_000) {
            store.commit(chunk.to_vec()).expect("commit");
        }
        store.flush().expect("flush");
        time_writes("postgres", &to_write, |records| {
            store.commit(records).expect("commit");
            store.flush().expect("flush");
        });
        return;
    }
    let ids: Vec<String> = played.iter().map(|g| g.id.clone()).collect();
    let records: Vec<Record> = played.into_iter().map(Record::Game).collect();
    let body_bytes: usize = records.iter().map(|r| r.encode().len()).sum();
    {
        let (store, _) = Store::open_sqlite(&path, Duration::from_secs(1)).expect("store");
        store.flush().expect("flush");
    }
    let empty = folder_bytes(&dir);
    {
        let (mut store, _) = Store::open_sqlite(&path, Duration::from_secs(1)).expect("store");
        for chunk in records.chunks(1_000) {
            store.commit(chunk.to_vec()).expect("commit");
        }
        store.flush().expect("flush");
    }
    let full = folder_bytes(&dir);
    println!(
        "{games} finished 4-player games: {:.0} bytes of record text per game; the store grew by {:.1} MiB, {:.0} bytes per game on disk (tables, indexes and free pages)",
        body_bytes as f64 / games as f64,
        (full - empty) as f64 / 1_048_576.0,
        (full - empty) as f64 / games as f64
    );
    let reader = Reader::sqlite(&path);
    let mut took = Vec::with_capacity(reads);
    let mut answered = 0;
    smol::block_on(async {
        for i in 0..reads {
            let id = &ids[i * 7919 % ids.len()];
            let started = Instant::now();
            if let Ok(Some(body)) = reader.ask(Query::Game(id.clone())).await {
                answered += usize::from(body.contains("\"rounds\""));
            }
            took.push(started.elapsed());
        }
    });
    took.sort();
    let at = |q: f64| took[((took.len() as f64 * q) as usize).min(took.len() - 1)];
    println!(
        "{reads} /games/<id> reads from the store, one at a time ({answered} answered): median {:.2} ms, p99 {:.2} ms",
        at(0.5).as_secs_f64() * 1000.0,
        at(0.99).as_secs_f64() * 1000.0
    );
    {
        let (mut store, _) = Store::open_sqlite(&path, Duration::from_secs(1)).expect("store");
        time_writes("sqlite", &to_write, |records| {
            store.commit(records).expect("commit");
            store.flush().expect("flush");
        });
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn shard() -> Option<wizard_core::vocabulary::shard::ShardId> {
    "Z".parse().ok()
}

/// Folds of one game, of ten games and of one move record (`write` commits and folds
/// its records): the wall time and the process's CPU per game and per fold.
fn time_writes(store: &str, games: &[Record], mut write: impl FnMut(Vec<Record>)) {
    let half = games.len() / 2;
    let a_move = Record::Move {
        lobby: wizard_core::vocabulary::ids::LobbyId(1),
        game_no: 1,
        seat: 0,
        action: wizard_core::vocabulary::game::Action::Bid { bid: 0 },
        by: wizard_core::vocabulary::io::MoveSource::Human,
        autoplayed: false,
    };
    let one_games: Vec<Vec<Record>> = games[..half].iter().map(|g| vec![g.clone()]).collect();
    let ten_games: Vec<Vec<Record>> = games[half..].chunks(10).map(<[Record]>::to_vec).collect();
    let moves: Vec<Vec<Record>> = (0..half).map(|_| vec![a_move.clone()]).collect();
    for (what, folds, per_fold) in [
        ("one move record a fold", moves, 1usize),
        ("one game a fold", one_games, 1),
        ("ten games a fold", ten_games, 10),
    ] {
        let count = folds.len();
        let (wall, cpu) = (Instant::now(), wizard_server::process::read().cpu_seconds);
        for records in folds {
            write(records);
        }
        let cpu_s = wizard_server::process::read().cpu_seconds - cpu;
        let wall_s = wall.elapsed().as_secs_f64();
        let n = (count * per_fold) as f64;
        println!(
            "{store} writes, {what}: {count} folds; per record {:.0} us wall, {:.0} us CPU; per fold {:.0} us wall, {:.0} us CPU",
            wall_s * 1e6 / n,
            cpu_s * 1e6 / n,
            wall_s * 1e6 / count as f64,
            cpu_s * 1e6 / count as f64
        );
    }
}
