//! The PostgreSQL store (`STORE=postgres://USER[:PASS]@HOST:PORT/DB`): the core's
//! records in a table shared by every shard, one writer thread that group-commits
//! them, and the advisory lock that makes one process at a time the owner of a shard.
//!
//! - **Commit before acknowledge, grouped.** The core task hands each pass's records to
//!   [`PgStore::commit`], which numbers them and queues them for the writer without
//!   waiting; the core task keeps running and holds that pass's frames until
//!   [`PgStore::durable_through`] reaches the pass's ticket (`crate::core_task`). The
//!   writer takes everything queued and inserts it with one statement (one
//!   transaction, one round trip), then wakes the core task. Whatever queued while a
//!   commit was in flight goes in the next one: a round trip per commit, never per
//!   move. A local journal, as the SQLite store keeps, would not do: a standby on
//!   another machine cannot read a dead machine's journal, so a move is acknowledged
//!   only once PostgreSQL has it.
//! - **`synchronous_commit = on`**, set on the writer's session whatever the server's
//!   default: a commit returns once PostgreSQL flushed its WAL, so neither a crash of
//!   the shard nor a crash of PostgreSQL (or its machine) takes a move a player saw.
//!   (`off` would let a PostgreSQL crash take up to three `wal_writer_delay`s, 600 ms by
//!   default, of acknowledged moves; group commit already pays one flush for many
//!   moves.)
//! - **Rows.** Table `wizard_records`: `(shard, seq)` is the key, `shard` the
//!   `SHARD_ID` (`""` when not sharded) and `seq` one sequence per shard; the other
//!   columns and the body are those of the SQLite store ([`super::rows::key_columns`],
//!   the record's JSON). Restore reads this shard's rows in `seq` order, streamed, and
//!   decodes them on the other cores while reading ([`super::rows::decode_in_batches`]).
//! - **Compaction** as in the SQLite store: the writer counts the rows a restore no
//!   longer needs (`wizard_core::machine::records::liveness`) and, once they outnumber the live
//!   ones and [`super::COMPACT_ROWS_MIN`], deletes them in one statement (frames
//!   wait meanwhile).
//! - **Ownership.** The writer's connection holds the session-level advisory lock
//!   [`lock_key`] of its shard for as long as the process serves; every commit goes
//!   over that connection. A second process for the same shard (a standby) tries the
//!   lock every [`LOCK_RETRY_INTERVAL`] and only then restores and serves; it says
//!   so in the log when it starts waiting and every [`WAIT_LOG_INTERVAL`].
//! - **Fencing, and trying again.** A commit or an ownership check
//!   ([`OWNER_CHECK_INTERVAL`], when idle) that fails keeps its rows and is tried again
//!   with a backoff, the core task holding the frames they cover and pausing games
//!   meanwhile ([`PgStore::unavailable`]). A connection still sound that still holds
//!   the shard's lock commits again as it is; a lost one is made anew and takes the
//!   lock again without waiting, and the rows a commit whose answer was lost did write
//!   are found by their sequence numbers. If another process took the lock meanwhile,
//!   or nothing committed for [`RETRY_WAIT_MAX`], the store fails for good and wakes the
//!   core task, which drops every held frame and exits non-zero. As a lost session
//!   cannot commit, a process that lost the lock cannot acknowledge anything, whatever
//!   it still believes.
//! - **Bounded.** The records waiting for the writer are at most
//!   [`super::PENDING_BYTES_MAX`]; beyond it a commit waits for the writer. A
//!   statement carries at most [`INSERT_ROWS_MAX`] rows (more go in one transaction).
//! - **TLS** is not set up (`NoTls`): the store is meant for loopback or a private
//!   network. Adding it means the `postgres-native-tls` or `postgres-openssl` crate's
//!   connector in place of `NoTls` in [`connect`], and `sslmode=require` in the URL.
//!
//! This file holds what the core task calls ([`PgStore`]); below it, by role:
//! `connection.rs` (the session, its locks, the tables), `writer.rs` (the writer
//! thread), `restore.rs` (reading a shard back) and `games.rs` (the history reads).

mod connection;
mod games;
mod restore;
mod writer;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::{debug, info};
use wizard_core::machine::records::Record;
use wizard_core::machine::records::liveness::RowKey;
use wizard_core::vocabulary::config::redact_password;
use wizard_core::vocabulary::shard::ShardId;

use super::directory::ProfileChange;
use super::handoff::Handoff;
use super::history::{HistoryOptions, Reader};
use super::{COMPACT_ROWS_MIN, PENDING_BYTES_MAX, StoreError};
use connection::{create_schema, pg, wait_for_lock};
use restore::{Restored, read_shard};
use writer::{INSERT, Writer};

pub use connection::{connect, lock_key};

/// How often a standby tries to take its shard's lock.
pub const LOCK_RETRY_INTERVAL: Duration = Duration::from_millis(200);
/// How often a waiting standby says again that it waits.
pub const WAIT_LOG_INTERVAL: Duration = Duration::from_secs(60);
/// How long the writer may be idle before it checks that its connection (and so its
/// lock) is still there, and how long that check may take.
pub const OWNER_CHECK_INTERVAL: Duration = Duration::from_millis(250);
pub const OWNER_CHECK_TIMEOUT: Duration = Duration::from_secs(2);
/// Rows in one `INSERT` statement.
pub const INSERT_ROWS_MAX: usize = 10_000;
/// How long the writer tries again to commit (or to own its shard again after a lost
/// connection) before the store fails for good, and the backoff between tries.
pub const RETRY_WAIT_MAX: Duration = Duration::from_secs(30);
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(2);

/// A record on its way to PostgreSQL: its sequence number, key and stored form.
#[derive(Debug)]
struct Row {
    seq: u64,
    key: RowKey,
    body: String,
    /// What the record changes in the shared profile tables (`directory.rs`).
    profile: Option<ProfileChange>,
}

/// What the core task queues and the writer takes ([`Handoff`]'s queue).
#[derive(Debug, Default)]
struct Queue {
    /// Numbered, not yet taken by the writer.
    rows: Vec<Row>,
    bytes: usize,
}

/// What the core task and the writer share.
#[derive(Debug)]
struct Shared {
    handoff: Handoff<Queue>,
    /// Every record up to this sequence number is committed.
    durable_seq: AtomicU64,
    /// Wakes the core task: something became durable, or the store failed.
    core_wake: async_channel::Sender<()>,
    /// Why commits do not go through now while the writer tries again (a statement
    /// that failed, a connection being made again), and whether they do not (read
    /// without the lock on every pass).
    retrying: std::sync::Mutex<Option<String>>,
    retrying_now: AtomicBool,
}

impl Shared {
    fn set_retrying(&self, why: Option<String>) {
        let mut current = self
            .retrying
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.retrying_now.store(why.is_some(), Ordering::Relaxed);
        *current = why;
    }
}

/// The open store: the writer thread, which owns the connection holding the shard's
/// lock.
#[derive(Debug)]
pub struct PgStore {
    shared: Arc<Shared>,
    writer: Option<JoinHandle<()>>,
    wakes: async_channel::Receiver<()>,
    /// The URL without its password, for logs.
    shown: String,
    /// Where the history reader connects.
    url: String,
}

impl PgStore {
    /// Connects to `url`, creates the table if needed, waits for shard `shard`'s lock
    /// (a standby waits here, trying every [`LOCK_RETRY_INTERVAL`]) and reads this
    /// shard's records. Returns the store and every record, oldest first.
    pub fn open(url: &str, shard: Option<ShardId>) -> Result<(PgStore, Vec<Record>), StoreError> {
        PgStore::open_compacting_at(url, shard, COMPACT_ROWS_MIN)
    }

    /// [`PgStore::open`], compacting once the dead records are more than the live ones
    /// and more than `compact_rows_min` (tests make it small).
    pub fn open_compacting_at(
        url: &str,
        shard: Option<ShardId>,
        compact_rows_min: u64,
    ) -> Result<(PgStore, Vec<Record>), StoreError> {
        PgStore::open_with(url, shard, compact_rows_min, HistoryOptions::default())
    }

    /// [`PgStore::open_compacting_at`] with `HISTORY_DAYS` and its purge.
    pub fn open_with(
        url: &str,
        shard: Option<ShardId>,
        compact_rows_min: u64,
        history: HistoryOptions,
    ) -> Result<(PgStore, Vec<Record>), StoreError> {
        let shown = redact_password(url);
        let mut client = connect(url, shard)?;
        create_schema(&mut client).map_err(pg("cannot set up", &shown))?;
        wait_for_lock(&mut client, shard, &shown)?;
        let shard_name = shard.map(|s| s.to_string()).unwrap_or_default();
        let started = Instant::now();
        let Restored {
            records,
            liveness,
            last_seq,
        } = read_shard(&mut client, &shard_name, &shown)?;
        info!(
            store = %shown,
            shard = %shard_name,
            records = records.len(),
            read_ms = started.elapsed().as_millis() as u64,
            "Store opened; this process owns the shard"
        );
        let insert = client
            .prepare(INSERT)
            .map_err(pg("cannot set up", &shown))?;
        let (core_wake, wakes) = async_channel::bounded(1);
        let shared = Arc::new(Shared {
            handoff: Handoff::new(Queue::default(), last_seq + 1),
            durable_seq: AtomicU64::new(last_seq),
            core_wake,
            retrying: std::sync::Mutex::new(None),
            retrying_now: AtomicBool::new(false),
        });
        let writer = Writer {
            client,
            insert,
            url: url.to_owned(),
            shard_id: shard,
            shard: shard_name,
            shown: shown.clone(),
            liveness,
            compact_rows_min,
            history,
            next_purge: Instant::now() + Duration::from_secs(1).min(history.purge_interval),
        };
        let writer = writer::spawn(writer, &shared)?;
        Ok((
            PgStore {
                shared,
                writer: Some(writer),
                wakes,
                shown,
                url: url.to_owned(),
            },
            records,
        ))
    }

    /// A reader of this shard's finished games, on a connection of its own made at its
    /// first request.
    pub fn history_reader(&self) -> Option<Reader> {
        Some(games::reader(self.url.clone(), self.shown.clone()))
    }

    /// Numbers `records` and queues them for the writer; returns the ticket (the last
    /// record's sequence number) that [`PgStore::durable_through`] reaches once they
    /// are committed. Does not wait, unless [`PENDING_BYTES_MAX`] are already queued.
    /// Fails once the store failed: the caller must not send these records' frames.
    pub fn commit(&self, records: Vec<Record>) -> Result<u64, String> {
        let handoff = &self.shared.handoff;
        let mut front = handoff.lock_for_commit(|q| q.bytes >= PENDING_BYTES_MAX)?;
        let was_empty = front.queue.rows.is_empty();
        for record in records {
            let body = record.encode();
            let seq = front.next_seq;
            front.next_seq += 1;
            front.queue.bytes += body.len();
            front.queue.rows.push(Row {
                seq,
                key: record.row_key(),
                body,
                profile: ProfileChange::of(&record),
            });
        }
        let ticket = front.next_seq - 1;
        drop(front);
        if was_empty {
            handoff.wake_writer();
        }
        Ok(ticket)
    }

    /// Every record up to this sequence number (a [`PgStore::commit`] ticket) is
    /// committed.
    pub fn durable_through(&self) -> u64 {
        self.shared.durable_seq.load(Ordering::Acquire)
    }

    /// Why the store stopped working, once it did.
    pub fn failed(&self) -> Option<String> {
        self.shared.handoff.lock().failed().cloned()
    }

    /// Why commits do not go through now while the writer tries again, if they do
    /// not (the core task pauses games meanwhile; `/ready` says `store`).
    pub fn unavailable(&self) -> Option<String> {
        if !self.shared.retrying_now.load(Ordering::Relaxed) {
            return None;
        }
        self.shared
            .retrying
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Woken (at most one wake waits) when a commit is done or the store failed.
    pub fn wakes(&self) -> &async_channel::Receiver<()> {
        &self.wakes
    }

    /// Has the writer commit everything queued so far, and waits for that (tests and
    /// benchmarks).
    pub fn flush(&self) -> Result<(), String> {
        self.shared.handoff.flush()
    }
}

impl Drop for PgStore {
    /// Stops the writer after it committed everything queued; its connection closes,
    /// which gives up the shard's lock.
    fn drop(&mut self) {
        self.shared.handoff.stop();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
        debug!(store = %self.shown, "Store writer stopped");
    }
}
