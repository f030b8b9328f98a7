//! The SQLite store under faults: a property test of the writer with every step made to
//! fail at random (the journal's append, a new generation, the insert, the sync, the
//! deletion of a folded generation), and then a fresh start: every acknowledged record
//! is there, in order, and nothing else. The faults of a real disk and a real lock are
//! in `store_disk.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use wizard_core::machine::records::Record;
use wizard_core::machine::session::SessionId;
use wizard_server::store::{FaultPoint, Faults, SqliteOptions, Store};

use super::durable::TempDir;

const POINTS: [FaultPoint; 5] = [
    FaultPoint::JournalAppend,
    FaultPoint::NewGeneration,
    FaultPoint::Insert,
    FaultPoint::Checkpoint,
    FaultPoint::DeleteGeneration,
];

fn bit(point: FaultPoint) -> u32 {
    1 << POINTS.iter().position(|p| *p == point).unwrap_or(0)
}

#[derive(Clone, Debug)]
enum Op {
    /// A pass's records: `n` sessions of `bytes` each (large ones fill a generation).
    Commit { n: u8, big: bool },
    /// These steps fail from now on (a bit per [`POINTS`]), the others succeed.
    Faults(u32),
    /// The core task's retry of waiting commits, as its timer or the writer wakes it.
    Retry,
    /// A writer's turn asked for and waited for.
    Flush,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1u8..6, prop::bool::weighted(0.1)).prop_map(|(n, big)| Op::Commit { n, big }),
        2 => (0u32..32).prop_map(Op::Faults),
        2 => Just(Op::Retry),
        2 => Just(Op::Flush),
    ]
}

fn session(k: u64, big: bool) -> Record {
    Record::Session {
        session: SessionId(k),
        player_id: format!("{k:012x}"),
        // A large digest stands for a large record (a lobby with long names).
        token_sha256: if big {
            "ab".repeat(20_000)
        } else {
            "cd".repeat(32)
        },
    }
}

fn id_of(record: &Record) -> u64 {
    match record {
        Record::Session { session, .. } => session.0,
        other => panic!("not a session: {other:?}"),
    }
}

/// Runs `ops` on a store whose steps fail as they say, then stops it with its faults
/// still on (a process that exits while its disk fails), opens it again without
/// faults, and returns (the acknowledged records' ids, the ids read back).
fn run(ops: &[Op]) -> (Vec<u64>, Vec<u64>) {
    let dir = TempDir::new();
    let path = dir.0.join("wizard.db");
    let failing = Arc::new(AtomicU32::new(0));
    let faults = {
        let failing = Arc::clone(&failing);
        Faults(Arc::new(move |point| {
            failing.load(Ordering::Relaxed) & bit(point) != 0
        }))
    };
    let options = SqliteOptions {
        faults: Some(faults),
        ..SqliteOptions::new(Duration::from_millis(5))
    };
    let (mut store, first) = Store::open_sqlite_with(&path, options).expect("opens");
    assert!(first.is_empty());
    // Each commit's ticket and ids, until acknowledged.
    let mut waiting: Vec<(u64, Vec<u64>)> = Vec::new();
    let mut acknowledged: Vec<u64> = Vec::new();
    let mut next = 1u64;
    for op in ops {
        match op {
            Op::Commit { n, big } => {
                let ids: Vec<u64> = (next..next + u64::from(*n)).collect();
                next += u64::from(*n);
                let records = ids.iter().map(|k| session(*k, *big)).collect();
                let ticket = store
                    .commit(records)
                    .expect("a commit never fails for good");
                waiting.push((ticket, ids));
            }
            Op::Faults(bits) => failing.store(*bits, Ordering::Relaxed),
            Op::Retry => {
                store.retry(Instant::now(), true);
            }
            Op::Flush => {
                let _ = store.flush();
            }
        }
        // What the core task would send now: the passes whose tickets are durable.
        let durable = store.durable_through();
        let done = waiting.iter().take_while(|(t, _)| *t <= durable).count();
        for (_, ids) in waiting.drain(..done) {
            acknowledged.extend(ids);
        }
    }
    drop(store);
    let (_store, read) = Store::open_sqlite(&path, Duration::from_secs(1)).expect("reopens");
    (acknowledged, read.iter().map(id_of).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever fails, and whenever: every acknowledged record is in the store after a
    /// restart, in order, and no record that was not acknowledged.
    #[test]
    fn every_acknowledged_record_survives_any_failing_step(ops in prop::collection::vec(op(), 1..40)) {
        let (acknowledged, read) = run(&ops);
        prop_assert_eq!(read, acknowledged);
    }
}

/// The cases the property must cover, each made to happen for sure: a fold that fails
/// and then succeeds, a sync that fails after its insert (the rows are not inserted
/// twice), a journal that cannot take a commit (held, then written in order), and a
/// stop while every step fails.
#[test]
fn each_fault_loses_nothing_acknowledged() {
    use Op::*;
    let cases: &[(&str, Vec<Op>)] = &[
        (
            "insert fails, then works",
            vec![
                Commit { n: 3, big: false },
                Faults(bit(FaultPoint::Insert)),
                Flush,
                Commit { n: 2, big: false },
                Flush,
                Faults(0),
                Flush,
                Commit { n: 1, big: false },
            ],
        ),
        (
            "sync fails after the insert",
            vec![
                Commit { n: 3, big: false },
                Faults(bit(FaultPoint::Checkpoint)),
                Flush,
                Commit { n: 2, big: false },
                Flush,
                Faults(0),
                Flush,
            ],
        ),
        (
            "the journal refuses, then takes the held commits in order",
            vec![
                Commit { n: 2, big: false },
                Faults(bit(FaultPoint::JournalAppend)),
                Commit { n: 2, big: false },
                Commit { n: 2, big: false },
                Retry,
                Faults(0),
                Commit { n: 1, big: false },
                Retry,
                Commit { n: 1, big: false },
            ],
        ),
        (
            "no new generation: the current one grows",
            vec![
                Faults(bit(FaultPoint::NewGeneration) | bit(FaultPoint::DeleteGeneration)),
                Commit { n: 5, big: true },
                Flush,
                Commit { n: 5, big: true },
                Flush,
                Commit { n: 5, big: true },
            ],
        ),
        (
            "stopped while everything fails",
            vec![
                Commit { n: 3, big: false },
                Flush,
                Commit { n: 3, big: true },
                Faults(31),
                Flush,
                Commit { n: 2, big: false },
            ],
        ),
    ];
    for (what, ops) in cases {
        let (acknowledged, read) = run(ops);
        assert!(!acknowledged.is_empty(), "{what}: something acknowledged");
        assert_eq!(read, acknowledged, "{what}");
    }
    // The journal case held commits: fewer acknowledged than committed until the
    // retry after the fault cleared.
    let (acknowledged, _) = run(&[
        Commit { n: 2, big: false },
        Faults(bit(FaultPoint::JournalAppend)),
        Commit { n: 2, big: false },
    ]);
    assert_eq!(acknowledged, vec![1, 2], "held, not acknowledged");
}
