//! The durable store (`STORE=sqlite:PATH`): the core's records in one SQLite file,
//! fronted by a journal that the core task appends each pass's records to, and one
//! writer thread that folds the journal into SQLite and syncs it on its own cadence.
//!
//! - **Commit before acknowledge.** The core task hands each pass's records to
//!   [`Store::commit`] and sends that pass's frames only once they are written to the
//!   journal ([`super::journal`]): one frame copied into a shared mapping of the
//!   journal file, on the core task's own thread, with no syscall. A copied frame is in
//!   the kernel's page cache, so a crash of the process loses nothing that any player
//!   saw. Each commit returns a ticket; [`Store::durable_through`] says which tickets
//!   are in the journal.
//! - **A commit that cannot be written waits, it is never dropped.** When the journal
//!   cannot take a frame (the disk is full and the generation must grow, or the writer
//!   is [`PENDING_BYTES_MAX`] behind), the commit's records stay in memory, in order,
//!   with every later commit behind them; the core task holds the frames of those
//!   passes and takes no new input (running games pause), and [`Store::retry`] tries
//!   again with a backoff from [`RETRY_FIRST`] to [`RETRY_MAX`], and as soon as the
//!   writer made room. When the fault clears the held frames go out and play resumes,
//!   by itself. [`Store::unavailable`] says why meanwhile (`/ready` answers 503
//!   `store`).
//! - **One writer, in batches.** The writer thread owns the SQLite connection. Every
//!   `STORE_SYNC_INTERVAL` (sooner when [`PENDING_FOLD_BYTES`] are waiting) it takes
//!   the records written since its last turn, starts a new journal generation, inserts
//!   them in one transaction (WAL mode, `synchronous=NORMAL`), checkpoints, which
//!   syncs the log and the database file to disk, and only then deletes the journal
//!   generations it folded. Inserting a second's moves in one transaction writes each
//!   B-tree page once for all of them instead of once per move: SQLite committing each
//!   pass on the core thread cost 57 % more CPU per move at 1000 paced games.
//! - **A fold that fails loses nothing.** A failed insert, checkpoint or compaction
//!   (a full disk, another process holding SQLite's lock past the busy timeout) keeps
//!   the rows it took (the next turn inserts them with the newer ones, in order) and
//!   every journal generation: a generation is deleted only once every row in it is
//!   committed and synced in SQLite. The writer tries again with a backoff, says so in
//!   the log and in [`StoreHealth`], and goes on by itself once a fold succeeds. The
//!   journal already holds those rows, so players go on meanwhile; only once the
//!   writer is [`PENDING_BYTES_MAX`] behind do commits wait (above). A writer stopped
//!   while its folds fail leaves the journal for the next start to fold.
//! - **What a power loss can take.** Neither the journal nor SQLite's log is synced on a
//!   move's path: a power loss or a kernel crash can take what was written since the
//!   writer's last sync, about one interval. A restore replays the journal only as far
//!   as it runs on without a gap from what SQLite holds, and drops a cut or damaged
//!   tail, so a game comes back as it stood at some moment, never with a hole.
//! - **Restore.** [`Store::open_sqlite`] claims the file ([`super::file`]: its
//!   identity, the locks, where its journal is), folds whatever the journal holds
//!   beyond SQLite's `folded_seq` (a crash between two folds), syncs, deletes the
//!   journal and returns every record, oldest first (`restore.rs`).
//! - **Bounded.** The records waiting for the writer, taken or not, are at most
//!   [`PENDING_BYTES_MAX`]; the commits waiting for the journal are bounded by what the
//!   core task holds (`HELD_FRAMES_MAX`, `HELD_BYTES_MAX`: it takes no input beyond).
//!   The write-ahead log starts afresh after each fold, since the writer is the only
//!   one writing, and `journal_size_limit` gives the file back beyond
//!   [`LOG_BYTES_KEPT`].
//! - **Small.** The writer only appends; it counts the rows a restore no longer needs
//!   (older lobby and session records, an earlier game's moves, whatever a lobby or a
//!   session that is gone left: `wizard_core::machine::records::liveness`, the same fold as the
//!   restore) and, once they outnumber the live ones and [`COMPACT_ROWS_MIN`], deletes
//!   them in one pass. So the file, and the restore time, follow the live games, not
//!   the history, within a factor of two. Deleting as it went cost a B-tree page per
//!   row through the lobby index, several times the rest of the store's work.
//! - **One process at a time**, whatever path names the file ([`super::file`]).
//! - The file, its log, the journal and the lock are created with mode 0600.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use rusqlite::Connection;
use tracing::{debug, error, info, warn};
use wizard_core::machine::records::Record;
use wizard_core::machine::records::liveness::RowKey;

use super::file::{self, Claim};
use super::fold::Writer;
use super::handoff::Handoff;
use super::journal;
use super::restore::{load, recover};
use super::rows::counted;
use super::{COMPACT_ROWS_MIN, PENDING_BYTES_MAX, StoreError};

/// The write-ahead log's file is cut back to this size when the log starts afresh.
pub(super) const LOG_BYTES_KEPT: u64 = 16 * 1024 * 1024;
/// The writer connection's page cache, at most (SQLite's default, 2 MiB, made a fold
/// read index pages back from the kernel and spill dirty pages before its commit).
pub(super) const CACHE_KIB: u64 = 32 * 1024;
/// Journal bytes waiting for the writer at which it folds without waiting for its
/// interval.
pub const PENDING_FOLD_BYTES: usize = 8 * 1024 * 1024;
/// Bytes each journal generation file is allocated when the writer starts it, at
/// least (four turns' worth of records when that is more, up to
/// `GENERATION_RESERVED_BYTES_MAX`). At 1000 paced games a
/// second of records is about 40 KiB. Kept small because allocating and deleting
/// costs: 16 MiB a second cost the writer about 1.5 us a move more at 1000 paced games.
pub const GENERATION_RESERVED_BYTES: u64 = 1024 * 1024;
/// Bytes of frames in a generation from which the writer starts the next one at its
/// turn (below, the core task keeps filling it: a new file each turn cost the writer
/// its allocation, mapping and deletion every second).
pub const GENERATION_ROTATE_BYTES: u64 = GENERATION_RESERVED_BYTES / 2;
/// Bytes a generation is allocated at most when the writer starts it, however much
/// the last turn brought (a burst beyond it grows the file on the core task instead of
/// reserving disk for it ahead).
pub(super) const GENERATION_RESERVED_BYTES_MAX: u64 = 4 * PENDING_FOLD_BYTES as u64;
/// The pending buffer's capacity kept from one turn to the next (the core task and the
/// writer swap two of them, so that a steady state allocates nothing).
pub(super) const PENDING_KEPT_BYTES: usize = 4 * 1024 * 1024;
/// The first wait before a failed commit or fold is tried again; each failure in a row
/// doubles it, up to [`RETRY_MAX`].
pub const RETRY_FIRST: Duration = Duration::from_millis(50);
pub const RETRY_MAX: Duration = Duration::from_secs(2);
/// Folds a stopping writer tries before it leaves the rest to the journal.
pub(super) const STOP_FOLD_TRIES_MAX: u32 = 3;

pub(super) fn sql(what: &str, path: &Path) -> impl Fn(rusqlite::Error) -> StoreError {
    let at = format!("{what} {}", path.display());
    move |e| StoreError(format!("{at}: {e}"))
}

/// A step of the store that a test can make fail ([`SqliteOptions::faults`]), as a
/// full disk, a held lock or an I/O error would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultPoint {
    /// The core task's copy of a commit into the journal.
    JournalAppend,
    /// The writer's creation of the next journal generation.
    NewGeneration,
    /// The writer's insert of a turn's rows into SQLite.
    Insert,
    /// The writer's checkpoint (the sync) after an insert.
    Checkpoint,
    /// The writer's deletion of a folded journal generation.
    DeleteGeneration,
}

/// Says which steps fail: called before each one, `true` makes it fail.
#[derive(Clone)]
pub struct Faults(pub Arc<dyn Fn(FaultPoint) -> bool + Send + Sync>);

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Faults")
    }
}

pub(super) fn injected(faults: &Option<Faults>, point: FaultPoint) -> bool {
    faults.as_ref().is_some_and(|f| (f.0)(point))
}

pub(super) fn injected_error(point: FaultPoint) -> std::io::Error {
    std::io::Error::other(format!("injected fault at {point:?}"))
}

/// How the SQLite store is opened.
#[derive(Clone, Debug)]
pub struct SqliteOptions {
    /// How often the writer folds and syncs (`STORE_SYNC_INTERVAL`).
    pub sync_interval: Duration,
    /// Dead rows below which the writer does not compact.
    pub compact_rows_min: u64,
    /// `STORE_INIT`: make a new store where traces of one are left.
    pub init: bool,
    /// `STORE_BUSY_TIMEOUT`: how long a statement waits for a lock another process
    /// holds before it fails (and the fold is tried again later).
    pub busy_timeout: Duration,
    /// Steps made to fail (tests).
    pub faults: Option<Faults>,
    /// `HISTORY_DAYS` and its purge.
    pub history: super::history::HistoryOptions,
}

impl SqliteOptions {
    pub fn new(sync_interval: Duration) -> SqliteOptions {
        SqliteOptions {
            sync_interval,
            compact_rows_min: COMPACT_ROWS_MIN,
            init: false,
            busy_timeout: Duration::from_secs(10),
            faults: None,
            history: super::history::HistoryOptions::default(),
        }
    }
}

/// Records on their way to SQLite: the journal frames that hold them, as written, and
/// each one's key. The writer reads the bodies back out of the frames, so that a
/// commit builds no string and no row per record, and nothing the core task allocated
/// is freed on the writer's thread.
#[derive(Debug, Default)]
pub(super) struct Pending {
    /// Frames back to back, as appended to the journal ([`journal::push_frame`]).
    pub(super) frames: Vec<u8>,
    /// Each row's key, in the frames' order.
    pub(super) keys: Vec<RowKey>,
}

impl Pending {
    /// Empties it for the next turn, keeping its buffers unless a burst made them large.
    pub(super) fn clear(&mut self) {
        self.frames.clear();
        self.keys.clear();
        if self.frames.capacity() > PENDING_KEPT_BYTES {
            *self = Pending::default();
        }
    }

    /// Appends `other`'s rows after its own.
    pub(super) fn extend(&mut self, other: &Pending) {
        self.frames.extend_from_slice(&other.frames);
        self.keys.extend_from_slice(&other.keys);
    }
}

/// What the core task fills and the writer takes ([`Handoff`]'s queue).
#[derive(Debug)]
pub(super) struct Queue {
    pub(super) journal: journal::Writer,
    /// Written to the journal, not yet taken by the writer.
    pub(super) pending: Pending,
    /// Bytes the writer took but could not fold yet (its folds fail).
    pub(super) backlog_bytes: usize,
    /// Since when, and why, the writer's folds fail (`None` while they succeed).
    pub(super) fold_failing: Option<(Instant, String)>,
    /// A commit waits for room: the writer wakes the core task after its next turn.
    pub(super) core_waiting: bool,
}

pub(super) type Shared = Handoff<Queue>;

/// The store's state as operators see it ([`Store::health`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreHealth {
    /// Commits cannot be written: since when (seconds ago) and why.
    pub stalled: Option<(Duration, String)>,
    /// The writer's folds into SQLite fail: since when (seconds ago) and why.
    pub fold_failing: Option<(Duration, String)>,
    /// Journal bytes not folded into SQLite yet.
    pub unfolded_bytes: usize,
}

/// Counts the store keeps for `/metrics`, shared with the writer thread
/// ([`super::metrics`]).
#[derive(Debug)]
pub struct StoreCounters {
    /// Failures by kind: a commit the journal could not take, a fold (insert, sync or
    /// compaction) that failed, a journal generation that could not be made.
    pub commit_failures: AtomicU64,
    pub fold_failures: AtomicU64,
    pub generation_failures: AtomicU64,
    /// How long each fold (the insert of a turn's rows and the sync) took.
    pub fold_seconds: Histogram,
    /// Whether the writer's last fold failed.
    pub fold_failing: AtomicBool,
    /// Journal bytes the writer took and could not fold yet.
    pub unfolded_bytes: AtomicU64,
    /// Finished games deleted by the history purge since the start.
    pub history_purged: AtomicU64,
}

impl Default for StoreCounters {
    fn default() -> StoreCounters {
        StoreCounters {
            commit_failures: AtomicU64::new(0),
            fold_failures: AtomicU64::new(0),
            generation_failures: AtomicU64::new(0),
            // 0.5 ms to about 33 s.
            fold_seconds: Histogram::new(exponential_buckets(0.0005, 2.0, 17)),
            fold_failing: AtomicBool::new(false),
            unfolded_bytes: AtomicU64::new(0),
            history_purged: AtomicU64::new(0),
        }
    }
}

impl StoreCounters {
    pub(super) fn folded(&self, took: Duration) {
        self.fold_seconds.observe(took.as_secs_f64());
    }
}

/// Commits that could not be written to the journal yet.
#[derive(Debug)]
struct Stall {
    since: Instant,
    why: String,
    retry_at: Instant,
    backoff: Duration,
}

/// The open store: the journal, the writer thread and the process's claim on the file.
#[derive(Debug)]
pub struct Store {
    shared: Arc<Shared>,
    writer: Option<JoinHandle<()>>,
    /// The path the journal is named after (the store's home).
    path: PathBuf,
    /// The ticket of the last commit, and of the last one written to the journal.
    tickets: u64,
    durable: u64,
    /// Commits not written to the journal yet, oldest first, with their tickets.
    stalled: VecDeque<(u64, Vec<Record>)>,
    stall: Option<Stall>,
    wakes: async_channel::Receiver<()>,
    faults: Option<Faults>,
    counters: Arc<StoreCounters>,
    /// Held while the process runs: the locks on the file ([`file::claim`]).
    _claim: Claim,
}

impl Store {
    /// Opens (creating it and its folder where no file is) the SQLite store at `path`,
    /// waiting for the lock a previous process may still hold, and folds in what its
    /// journal holds. Returns the store and every record in it, oldest first. The
    /// writer folds and syncs every `sync_interval`.
    pub fn open_sqlite(
        path: &Path,
        sync_interval: Duration,
    ) -> Result<(Store, Vec<Record>), StoreError> {
        Store::open_sqlite_with(path, SqliteOptions::new(sync_interval))
    }

    /// [`Store::open_sqlite`], compacting once the dead records are more than the live
    /// ones and more than `compact_rows_min` (tests make it small).
    pub fn open_sqlite_compacting_at(
        path: &Path,
        sync_interval: Duration,
        compact_rows_min: u64,
    ) -> Result<(Store, Vec<Record>), StoreError> {
        let options = SqliteOptions {
            compact_rows_min,
            ..SqliteOptions::new(sync_interval)
        };
        Store::open_sqlite_with(path, options)
    }

    /// [`Store::open_sqlite`] with every option.
    pub fn open_sqlite_with(
        path: &Path,
        options: SqliteOptions,
    ) -> Result<(Store, Vec<Record>), StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| StoreError(format!("cannot create {}: {e}", dir.display())))?;
        }
        let (claim, mut conn) = file::claim(path, options.init)?;
        let path = claim.home.clone();
        let path = path.as_path();
        set_up(&conn, path, options.busy_timeout)?;
        let (next_seq, generation) = recover(&mut conn, path)?;
        let (records, liveness) = counted(load(&conn, path)?);
        let queue = Queue {
            journal: first_generation(path, generation)?,
            pending: Pending::default(),
            backlog_bytes: 0,
            fold_failing: None,
            core_waiting: false,
        };
        let shared = Arc::new(Handoff::new(queue, next_seq));
        let (wake_tx, wakes) = async_channel::bounded(1);
        let counters = Arc::new(StoreCounters::default());
        let writer = Writer {
            conn,
            path: path.to_path_buf(),
            liveness,
            compact_rows_min: options.compact_rows_min,
            incoming: Pending::default(),
            backlog: Pending::default(),
            faults: options.faults.clone(),
            counters: Arc::clone(&counters),
            wake_core: wake_tx,
            history: options.history,
            // The first purge soon after the start, not at once: the restore first.
            next_purge: Instant::now() + Duration::from_secs(1).min(options.history.purge_interval),
        };
        let writer = start_writer(writer, &shared, options.sync_interval, generation)?;
        info!(store = %path.display(), records = records.len(), "Store opened");
        Ok((
            Store {
                shared,
                writer: Some(writer),
                path: path.to_path_buf(),
                tickets: 0,
                durable: 0,
                stalled: VecDeque::new(),
                stall: None,
                wakes,
                faults: options.faults,
                counters,
                _claim: claim,
            },
            records,
        ))
    }

    /// Commits `records`: one frame appended to the journal, on the calling thread,
    /// which makes them durable against a crash of the process; the writer thread
    /// inserts them into SQLite later. Returns the commit's ticket: its frames may go
    /// out once [`Store::durable_through`] reaches it. A commit the journal cannot take
    /// now (or that comes after one) waits in memory for [`Store::retry`].
    pub fn commit(&mut self, records: Vec<Record>) -> Result<u64, String> {
        if records.is_empty() {
            return Ok(self.tickets);
        }
        self.tickets += 1;
        let ticket = self.tickets;
        if !self.stalled.is_empty() {
            self.stalled.push_back((ticket, records));
            return Ok(ticket);
        }
        match self.append(records) {
            Ok(()) => self.durable = ticket,
            Err((records, why)) => {
                self.stalled.push_back((ticket, records));
                self.stalled_by(why, Instant::now());
            }
        }
        Ok(ticket)
    }

    /// Every ticket up to this one is in the journal.
    pub fn durable_through(&self) -> u64 {
        self.durable
    }

    /// When the commits waiting for the journal are tried again, if any wait.
    pub fn retry_at(&self) -> Option<Instant> {
        self.stall.as_ref().map(|s| s.retry_at)
    }

    /// Tries the commits waiting for the journal again, oldest first, if their time
    /// came (`now`) or `soon` (the writer made room). Returns whether they all went in.
    pub fn retry(&mut self, now: Instant, soon: bool) -> bool {
        let Some(stall) = &self.stall else {
            return true;
        };
        if !soon && now < stall.retry_at {
            return false;
        }
        while let Some((ticket, records)) = self.stalled.pop_front() {
            if let Err((records, why)) = self.append(records) {
                self.stalled.push_front((ticket, records));
                self.stalled_by(why, now);
                return false;
            }
            self.durable = ticket;
        }
        if let Some(stall) = self.stall.take() {
            warn!(
                store = %self.path.display(),
                stalled_ms = now.saturating_duration_since(stall.since).as_millis() as u64,
                "Store commits resumed: acknowledging again"
            );
        }
        true
    }

    /// Why commits are not acknowledged now, if they are not.
    pub fn unavailable(&self) -> Option<&str> {
        self.stall.as_ref().map(|s| s.why.as_str())
    }

    /// The store's state for operators.
    pub fn health(&self) -> StoreHealth {
        let now = Instant::now();
        let front = self.shared.lock();
        let queue = &front.queue;
        StoreHealth {
            stalled: self
                .stall
                .as_ref()
                .map(|s| (now.saturating_duration_since(s.since), s.why.clone())),
            fold_failing: queue
                .fold_failing
                .as_ref()
                .map(|(since, why)| (now.saturating_duration_since(*since), why.clone())),
            unfolded_bytes: queue.pending.frames.len() + queue.backlog_bytes,
        }
    }

    /// The counts for `/metrics`.
    pub fn counters(&self) -> &Arc<StoreCounters> {
        &self.counters
    }

    /// The file's path (resolved: the store's home).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Woken after a writer's turn that a waiting commit asked for.
    pub fn wakes(&self) -> &async_channel::Receiver<()> {
        &self.wakes
    }

    /// Notes a commit that could not be written: the first of a stall starts it (and
    /// says so), a later one doubles its backoff.
    fn stalled_by(&mut self, why: String, now: Instant) {
        self.counters
            .commit_failures
            .fetch_add(1, Ordering::Relaxed);
        match &mut self.stall {
            Some(stall) => {
                stall.backoff = (stall.backoff * 2).min(RETRY_MAX);
                stall.retry_at = now + stall.backoff;
                stall.why = why;
            }
            None => {
                error!(
                    store = %self.path.display(),
                    error = %why,
                    "Store cannot commit: acknowledging nothing new and pausing games until it can (retrying)"
                );
                self.stall = Some(Stall {
                    since: now,
                    why,
                    retry_at: now + RETRY_FIRST,
                    backoff: RETRY_FIRST,
                });
            }
        }
    }

    /// Appends one frame of `records` to the journal, or gives them back with why not.
    fn append(&self, records: Vec<Record>) -> Result<(), (Vec<Record>, String)> {
        let mut guard = self.shared.lock();
        if let Some(e) = guard.failed() {
            let e = e.clone();
            return Err((records, e));
        }
        let behind = guard.queue.pending.frames.len() + guard.queue.backlog_bytes;
        if behind >= PENDING_BYTES_MAX {
            guard.queue.core_waiting = true;
            drop(guard);
            self.shared.wake_writer();
            return Err((
                records,
                format!("the store's writer is {behind} bytes behind"),
            ));
        }
        let front = &mut *guard;
        let queue = &mut front.queue;
        let pending = &mut queue.pending;
        let keys_before = pending.keys.len();
        pending.keys.extend(records.iter().map(Record::row_key));
        let start = journal::push_frame(
            &mut pending.frames,
            (front.next_seq..).zip(&records),
            |record, out| record.encode_into(out),
        );
        let appended = if injected(&self.faults, FaultPoint::JournalAppend) {
            Err(injected_error(FaultPoint::JournalAppend))
        } else {
            queue.journal.append(&pending.frames[start..])
        };
        if let Err(e) = appended {
            pending.frames.truncate(start);
            pending.keys.truncate(keys_before);
            let e = format!(
                "cannot write {}: {e}",
                journal::generation_path(&self.path, queue.journal.number()).display()
            );
            return Err((records, e));
        }
        front.next_seq += records.len() as u64;
        let fold_now = pending.frames.len() >= PENDING_FOLD_BYTES;
        drop(guard);
        if fold_now {
            self.shared.wake_writer();
        }
        Ok(())
    }

    /// Has the writer fold everything committed so far into SQLite and sync it, and
    /// waits for that (tests, benchmarks, and whoever wants a synced file now). Fails
    /// when commits still wait for the journal, or the fold failed.
    pub fn flush(&self) -> Result<(), String> {
        if let Some(stall) = &self.stall {
            return Err(stall.why.clone());
        }
        self.shared.flush()
    }
}

impl Drop for Store {
    /// Stops the writer after one last fold and sync of everything committed (tried a
    /// few times; what does not fold stays in the journal for the next start).
    fn drop(&mut self) {
        if !self.stalled.is_empty() {
            warn!(
                store = %self.path.display(),
                commits = self.stalled.len(),
                "Store stopping with commits never written: no player saw them"
            );
        }
        self.shared.stop();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
        debug!(store = %self.path.display(), "Store writer stopped");
    }
}

/// Sets the connection up for the writer: `busy_timeout` (`STORE_BUSY_TIMEOUT`), WAL
/// with `synchronous=NORMAL` and no automatic checkpoint (the writer syncs), the page
/// cache and the log's size, the indexes earlier versions made dropped, the tables a
/// newer build adds made.
fn set_up(conn: &Connection, path: &Path, busy_timeout: Duration) -> Result<(), StoreError> {
    conn.busy_timeout(busy_timeout)
        .map_err(sql("busy timeout", path))?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .map_err(sql("WAL mode", path))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError(format!(
            "{}: journal mode {mode}, not WAL",
            path.display()
        )));
    }
    conn.execute_batch(&format!(
        "PRAGMA synchronous=NORMAL;
         PRAGMA wal_autocheckpoint=0;
         PRAGMA cache_size=-{CACHE_KIB};
         PRAGMA journal_size_limit={LOG_BYTES_KEPT};
         DROP INDEX IF EXISTS records_lobby;
         DROP INDEX IF EXISTS records_lobby_game;
         DROP INDEX IF EXISTS records_session;"
    ))
    .map_err(sql("cannot set up", path))?;
    file::create_tables(conn).map_err(sql("cannot set up", path))
}

/// Journal generation `generation` of the store at `path`, the first the core task
/// writes to: allocated `GENERATION_RESERVED_BYTES`, its first half faulted in ahead.
fn first_generation(path: &Path, generation: u64) -> Result<journal::Writer, StoreError> {
    let journal =
        journal::Writer::create(path, generation, GENERATION_RESERVED_BYTES).map_err(|e| {
            StoreError(format!(
                "cannot create {}: {e}",
                journal::generation_path(path, generation).display()
            ))
        })?;
    if let Err(e) = journal.prefault(GENERATION_ROTATE_BYTES) {
        debug!(error = %e, "Journal generation not faulted in ahead");
    }
    Ok(journal)
}

/// Starts the writer thread, folding every `interval` from journal generation
/// `generation` on.
fn start_writer(
    mut writer: Writer,
    shared: &Arc<Shared>,
    interval: Duration,
    generation: u64,
) -> Result<JoinHandle<()>, StoreError> {
    let writer_shared = Arc::clone(shared);
    std::thread::Builder::new()
        .name("wizard-store".into())
        .spawn(move || writer.run(&writer_shared, interval, generation))
        .map_err(|e| StoreError(format!("store writer thread: {e}")))
}
