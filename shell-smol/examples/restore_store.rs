//! Measures a restart's restore from the SQLite store (or, with `--postgres URL`, the
//! PostgreSQL store, as shard `Z` of that database): many running games halfway
//! through (`wizard_core::machine::records::halfway_games`) are written to a fresh store, then
//! each run opens it (the lock, the journal, reading and decoding every record) and
//! rebuilds the server from the records (`Server::restore`), timed apart, in wall time
//! and in the CPU time of all the process's threads (steadier on a busy machine); and
//! the store's size per game.
//!
//! `cargo run --release -p wizard-server --example restore_store -- [--games N] [--runs K] [--dir PATH] [--postgres URL]`

#![allow(clippy::expect_used, clippy::print_stderr)] // a measuring tool stops on a broken setup

use std::path::PathBuf;
use std::time::{Duration, Instant};

use wizard_core::machine::records::Record;
use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::rng::Seed;
use wizard_core::{Server, Time};
use wizard_server::pg_store::PgStore;
use wizard_server::store::Store;

/// The store measured: a SQLite file, or shard `Z` of a PostgreSQL database.
enum Target {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Target {
    /// Opens the store: it and what it read.
    fn open(&self) -> (Box<dyn std::any::Any>, Vec<Record>) {
        match self {
            Target::Sqlite(path) => {
                let (store, read) = Store::open_sqlite(path, Duration::from_secs(1)).expect("open");
                (Box::new(store), read)
            }
            Target::Postgres(url) => {
                let (store, read) = PgStore::open(url, shard()).expect("open");
                (Box::new(store), read)
            }
        }
    }
}

fn shard() -> Option<wizard_core::vocabulary::shard::ShardId> {
    "Z".parse().ok()
}

fn main() {
    let (mut games, mut runs) = (10_000u64, 3usize);
    let mut dir = std::env::temp_dir().join(format!("wizard-restore-{}", std::process::id()));
    let mut postgres: Option<String> = None;
    use lexopt::ValueExt as _;
    let mut args = lexopt::Parser::from_env();
    while let Some(arg) = args.next().expect("arguments") {
        use lexopt::Arg::Long;
        match arg {
            Long("games") => games = args.value().expect("--games N").parse().expect("N"),
            Long("runs") => runs = args.value().expect("--runs K").parse().expect("K"),
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
    let records = wizard_core::machine::records::halfway_games(games);
    let count = records.len();
    let written = Instant::now();
    let target = match &postgres {
        None => {
            let (mut store, _) = Store::open_sqlite(&path, Duration::from_secs(1)).expect("store");
            for chunk in records.chunks(10_000) {
                store.commit(chunk.to_vec()).expect("commit");
            }
            store.flush().expect("flush");
            Target::Sqlite(path.clone())
        }
        Some(url) => {
            let mut client = wizard_server::pg_store::connect(url, shard()).expect("connect");
            let _ = client.execute("DELETE FROM wizard_records WHERE shard = 'Z'", &[]);
            drop(client);
            let (store, _) = PgStore::open(url, shard()).expect("store");
            for chunk in records.chunks(10_000) {
                store.commit(chunk.to_vec()).expect("commit");
            }
            store.flush().expect("flush");
            Target::Postgres(url.clone())
        }
    };
    let bytes: u64 = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0);
    println!(
        "{games} games halfway, {count} records written in {:.2} s; the store's folder holds {:.1} MiB ({:.1} KiB per game)",
        written.elapsed().as_secs_f64(),
        bytes as f64 / 1048576.0,
        bytes as f64 / games as f64 / 1024.0
    );
    let config = Config::from_pairs([
        ("MAX_LOBBIES", games.to_string().as_str()),
        ("MAX_SESSIONS", (games * 2).to_string().as_str()),
        ("MAX_ACTIVE_GAMES", games.to_string().as_str()),
        ("MAX_LOBBIES_PER_IP", "1000"),
        ("MAX_GAMES_PER_IP", "1000"),
    ])
    .expect("config");
    for run in 0..runs {
        let started = Instant::now();
        let cpu_started = wizard_server::process::read().cpu_seconds;
        let (store, read) = target.open();
        let opened = started.elapsed();
        let cpu_opened = wizard_server::process::read().cpu_seconds;
        assert_eq!(read.len(), count, "every record back");
        let server = Server::restore(config.clone(), Seed::from_u64(run as u64), Time::ZERO, read)
            .expect("restore");
        let total = started.elapsed();
        let cpu_total = wizard_server::process::read().cpu_seconds;
        assert_eq!(server.gauges().active_games, games);
        println!(
            "run {run}: open and read {:.3} s, restore {:.3} s, total {:.3} s \
             (CPU of every thread: {:.3} s, {:.3} s, {:.3} s)",
            opened.as_secs_f64(),
            (total - opened).as_secs_f64(),
            total.as_secs_f64(),
            cpu_opened - cpu_started,
            cpu_total - cpu_opened,
            cpu_total - cpu_started,
        );
        drop(store);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
