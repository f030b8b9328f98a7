//! Criterion benchmark of the SQLite store: what the core task pays to make a pass's
//! records durable before its frames go out, and what the writer pays to fold them into
//! SQLite.
//!
//! `store_commit/one_move`: one move record per commit, each from the next of `LOBBIES`
//! running games (the paced case: one move a pass). `moves_per_commit/N`: N moves of N
//! games in one commit (a busier pass). The writer folds on its own cadence (1 s) in the
//! background, so its share is in the figure in proportion. `store_second`: the
//! writer's share made exact: 1000 moves of 1000 games in commits of 3 (about a second
//! at 1000 paced games), then a fold and sync ([`Store::flush`]); per move. Its
//! `_core_thread_only` twin counts the committing thread's CPU alone: the core task's
//! part, the rest being the writer's.
//!
//! The store runs in a temporary folder, as in the server. Times are the process's CPU
//! time (its threads' user and system time), not wall time: the target is CPU
//! per move, and the disk's waits would drown it in noise.

#![allow(clippy::expect_used)] // a benchmark may stop on a broken setup

use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use wizard_core::machine::records::Record;
use wizard_core::machine::session::LobbyId;
use wizard_core::vocabulary::game::{Action, Card};
use wizard_core::vocabulary::io::MoveSource;
use wizard_server::store::Store;

/// Running games the moves belong to.
const LOBBIES: u64 = 1000;
/// Moves already in each game's record before measuring (a game halfway through).
const MOVES_BEFORE: u64 = 100;

fn a_move(k: u64) -> Record {
    Record::Move {
        lobby: LobbyId(k % LOBBIES + 1),
        game_no: 1,
        seat: (k % 4) as u8,
        action: if k.is_multiple_of(3) {
            Action::Bid { bid: (k % 5) as u8 }
        } else {
            Action::Play {
                card: Card::Wizard((k % 4 + 1) as u8),
            }
        },
        by: if k.is_multiple_of(4) {
            MoveSource::Human
        } else {
            MoveSource::Ai
        },
        autoplayed: false,
    }
}

/// The CPU time of the whole process (the sync thread's checkpoints included): what
/// the issue counts, without the waits for the disk that make wall time noisy.
fn cpu_time() -> Duration {
    clock(rustix::time::ClockId::ProcessCPUTime)
}

/// The CPU time of the calling thread alone: the core task's part of a commit, without
/// the writer's folds that run meanwhile.
fn thread_cpu_time() -> Duration {
    clock(rustix::time::ClockId::ThreadCPUTime)
}

fn clock(id: rustix::time::ClockId) -> Duration {
    let t = rustix::time::clock_gettime(id);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// One commit as the core task makes it: when the writer is too far behind for the
/// journal to take it, it waits (as the core task pauses) until the writer made room
/// and the commit went in; so the figures count every record written.
fn commit(store: &mut Store, records: Vec<Record>) {
    store.commit(records).expect("commit");
    while store.unavailable().is_some() {
        let _ = store.wakes().recv_blocking();
        store.retry(std::time::Instant::now(), true);
    }
}

fn folder() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wizard-store-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temporary folder");
    dir
}

fn commits(c: &mut Criterion) {
    let dir = folder();
    let (mut store, _) =
        Store::open_sqlite(&dir.join("bench.db"), Duration::from_secs(1)).expect("store");
    let mut k = 0u64;
    let fill: Vec<Record> = (0..LOBBIES * MOVES_BEFORE).map(a_move).collect();
    for chunk in fill.chunks(10_000) {
        commit(&mut store, chunk.to_vec());
    }
    store.flush().expect("fill");
    k += LOBBIES * MOVES_BEFORE;
    let mut group = c.benchmark_group("store_commit");
    for n in [1u64, 4, 16] {
        group.throughput(Throughput::Elements(n));
        let name = if n == 1 {
            "one_move".to_owned()
        } else {
            format!("moves_per_commit/{n}")
        };
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let passes: Vec<Vec<Record>> = (0..iters)
                    .map(|_| {
                        k += n;
                        (k - n..k).map(a_move).collect()
                    })
                    .collect();
                let before = cpu_time();
                for records in passes {
                    commit(&mut store, records);
                }
                cpu_time().saturating_sub(before)
            })
        });
    }
    group.finish();
    let mut group = c.benchmark_group("store_second");
    group.throughput(Throughput::Elements(LOBBIES));
    group.sample_size(10);
    // `clock`: the process's CPU, the writer's fold included (`then_fold`), or the
    // calling thread's alone: the part the core task pays (`core_thread_only`).
    for (name, clock, fold) in [
        (
            "1000_moves_in_passes_of_3_then_fold",
            cpu_time as fn() -> Duration,
            true,
        ),
        (
            "1000_moves_in_passes_of_3_core_thread_only",
            thread_cpu_time,
            false,
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let passes: Vec<Vec<Record>> = (0..LOBBIES.div_ceil(3))
                        .map(|_| {
                            k += 3;
                            (k - 3..k).map(a_move).collect()
                        })
                        .collect();
                    store.flush().expect("flush");
                    let before = clock();
                    for records in passes {
                        commit(&mut store, records);
                    }
                    if fold {
                        store.flush().expect("flush");
                    }
                    total += clock().saturating_sub(before);
                }
                total
            })
        });
    }
    group.finish();
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, commits);
criterion_main!(benches);
