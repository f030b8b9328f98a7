//! Measures the SQLite store's history: the bytes a finished game takes on disk and the
//! time to answer `/games/<id>` from the store. Whole 4-player games played by the
//! heuristic player (`wizard_core::machine::records::history::played_games`, one profile
//! seat each) are committed to a fresh store as the server commits them (a `game`
//! record each) and folded into its `games` and `game_seats` tables; the folder's
//! growth over an empty store, per game, is the size. Then the history reader answers
//! `--reads` requests for them, one at a time (read, decode and replay), timed.
//!
//! `cargo run --release -p wizard-server --example history_size -- [--games N] [--reads K] [--dir PATH]`

#![allow(clippy::expect_used, clippy::print_stderr, clippy::print_stdout)] // a measuring tool stops on a broken setup

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use wizard_core::machine::records::Record;
use wizard_core::machine::records::history::played_games;
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
    let (mut games, mut reads) = (2_000u64, 500usize);
    let mut dir = std::env::temp_dir().join(format!("wizard-history-{}", std::process::id()));
    use lexopt::ValueExt as _;
    let mut args = lexopt::Parser::from_env();
    while let Some(arg) = args.next().expect("arguments") {
        use lexopt::Arg::Long;
        match arg {
            Long("games") => games = args.value().expect("--games N").parse().expect("N"),
            Long("reads") => reads = args.value().expect("--reads K").parse().expect("K"),
            Long("dir") => dir = PathBuf::from(args.value().expect("--dir PATH")),
            other => {
                eprintln!("{}", other.unexpected());
                std::process::exit(2);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("wizard.db");
    let played = played_games(games, 4);
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
    let _ = std::fs::remove_dir_all(&dir);
}
