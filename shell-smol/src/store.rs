//! The durable store (`STORE=sqlite:PATH`): the core's records in one SQLite file,
//! fronted by a journal that the core task appends each pass's records to, and one
//! writer thread that folds the journal into SQLite and syncs it on its own cadence.
//!
//! - **Commit before acknowledge.** The core task hands each pass's records to
//!   [`Store::commit`] and sends that pass's frames only once they are written to the
//!   journal ([`crate::journal`]): one frame copied into a shared mapping of the
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
//! - **Restore.** [`Store::open_sqlite`] claims the file ([`crate::store_file`]: its
//!   identity, the locks, where its journal is), folds whatever the journal holds
//!   beyond SQLite's `folded_seq` (a crash between two folds), syncs, deletes the
//!   journal and returns every record, oldest first.
//! - **Bounded.** The records waiting for the writer, taken or not, are at most
//!   [`PENDING_BYTES_MAX`]; the commits waiting for the journal are bounded by what the
//!   core task holds (`HELD_FRAMES_MAX`, `HELD_BYTES_MAX`: it takes no input beyond).
//!   The write-ahead log starts afresh after each fold, since the writer is the only
//!   one writing, and `journal_size_limit` gives the file back beyond
//!   [`LOG_BYTES_KEPT`].
//! - **Small.** The writer only appends; it counts the rows a restore no longer needs
//!   (older lobby and session records, an earlier game's moves, whatever a lobby or a
//!   session that is gone left: `wizard_core::records::liveness`, the same fold as the
//!   restore) and, once they outnumber the live ones and [`COMPACT_ROWS_MIN`], deletes
//!   them in one pass. So the file, and the restore time, follow the live games, not
//!   the history, within a factor of two. Deleting as it went cost a B-tree page per
//!   row through the lobby index, several times the rest of the store's work.
//! - **One process at a time**, whatever path names the file ([`crate::store_file`]).
//! - The file, its log, the journal and the lock are created with mode 0600.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use rusqlite::{Connection, OptionalExtension, params};
use tracing::{debug, error, info, warn};
use wizard_core::records::Record;
use wizard_core::records::liveness::{Liveness, RowCount, RowKey, RowKind, Rows as _};

use crate::handoff::Handoff;
use crate::journal;
use crate::store_file::{self, Claim};

/// The write-ahead log's file is cut back to this size when the log starts afresh.
const LOG_BYTES_KEPT: u64 = 16 * 1024 * 1024;
/// Dead rows below which the writer does not compact (a pass over the table is paid
/// for by at least this many).
pub const COMPACT_ROWS_MIN: u64 = 100_000;
/// The writer connection's page cache, at most (SQLite's default, 2 MiB, made a fold
/// read index pages back from the kernel and spill dirty pages before its commit).
const CACHE_KIB: u64 = 32 * 1024;
/// Journal bytes waiting for the writer at which it folds without waiting for its
/// interval.
pub const PENDING_FOLD_BYTES: usize = 8 * 1024 * 1024;
/// Journal bytes not folded yet (waiting for the writer, or taken by a fold that
/// failed) beyond which a commit waits for the writer.
pub const PENDING_BYTES_MAX: usize = 64 * 1024 * 1024;
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
const GENERATION_RESERVED_BYTES_MAX: u64 = 4 * PENDING_FOLD_BYTES as u64;
/// The pending buffer's capacity kept from one turn to the next (the core task and the
/// writer swap two of them, so that a steady state allocates nothing).
const PENDING_KEPT_BYTES: usize = 4 * 1024 * 1024;
/// The first wait before a failed commit or fold is tried again; each failure in a row
/// doubles it, up to [`RETRY_MAX`].
pub const RETRY_FIRST: Duration = Duration::from_millis(50);
pub const RETRY_MAX: Duration = Duration::from_secs(2);
/// Folds a stopping writer tries before it leaves the rest to the journal.
const STOP_FOLD_TRIES_MAX: u32 = 3;

/// A store that cannot be used (the operator's or the disk's fault).
#[derive(Debug)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

fn sql(what: &str, path: &Path) -> impl Fn(rusqlite::Error) -> StoreError {
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

fn injected(faults: &Option<Faults>, point: FaultPoint) -> bool {
    faults.as_ref().is_some_and(|f| (f.0)(point))
}

fn injected_error(point: FaultPoint) -> std::io::Error {
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
}

impl SqliteOptions {
    pub fn new(sync_interval: Duration) -> SqliteOptions {
        SqliteOptions {
            sync_interval,
            compact_rows_min: COMPACT_ROWS_MIN,
            init: false,
            busy_timeout: Duration::from_secs(10),
            faults: None,
        }
    }
}

/// Records on their way to SQLite: the journal frames that hold them, as written, and
/// each one's key. The writer reads the bodies back out of the frames, so that a
/// commit builds no string and no row per record, and nothing the core task allocated
/// is freed on the writer's thread.
#[derive(Debug, Default)]
struct Pending {
    /// Frames back to back, as appended to the journal ([`journal::push_frame`]).
    frames: Vec<u8>,
    /// Each row's key, in the frames' order.
    keys: Vec<RowKey>,
}

impl Pending {
    /// Empties it for the next turn, keeping its buffers unless a burst made them large.
    fn clear(&mut self) {
        self.frames.clear();
        self.keys.clear();
        if self.frames.capacity() > PENDING_KEPT_BYTES {
            *self = Pending::default();
        }
    }

    /// Appends `other`'s rows after its own.
    fn extend(&mut self, other: &Pending) {
        self.frames.extend_from_slice(&other.frames);
        self.keys.extend_from_slice(&other.keys);
    }
}

/// What the core task fills and the writer takes ([`Handoff`]'s queue).
#[derive(Debug)]
struct Queue {
    journal: journal::Writer,
    /// Written to the journal, not yet taken by the writer.
    pending: Pending,
    /// Bytes the writer took but could not fold yet (its folds fail).
    backlog_bytes: usize,
    /// Since when, and why, the writer's folds fail (`None` while they succeed).
    fold_failing: Option<(Instant, String)>,
    /// A commit waits for room: the writer wakes the core task after its next turn.
    core_waiting: bool,
}

type Shared = Handoff<Queue>;

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
/// ([`crate::store_metrics`]).
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
        }
    }
}

impl StoreCounters {
    fn folded(&self, took: Duration) {
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
    /// Held while the process runs: the locks on the file ([`store_file::claim`]).
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
        let (claim, mut conn) = store_file::claim(path, options.init)?;
        let path = claim.home.clone();
        let path = path.as_path();
        conn.busy_timeout(options.busy_timeout)
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
        store_file::create_tables(&conn).map_err(sql("cannot set up", path))?;
        let (next_seq, generation) = recover(&mut conn, path)?;
        let records = load(&conn, path)?;
        let mut liveness = Liveness::<RowCount>::default();
        for (seq, record) in &records {
            liveness.add(*seq, record.row_key());
        }
        let records: Vec<Record> = records.into_iter().map(|(_, r)| r).collect();
        let journal = journal::Writer::create(path, generation, GENERATION_RESERVED_BYTES)
            .map_err(|e| {
                StoreError(format!(
                    "cannot create {}: {e}",
                    journal::generation_path(path, generation).display()
                ))
            })?;
        if let Err(e) = journal.prefault(GENERATION_ROTATE_BYTES) {
            debug!(error = %e, "Journal generation not faulted in ahead");
        }
        let queue = Queue {
            journal,
            pending: Pending::default(),
            backlog_bytes: 0,
            fold_failing: None,
            core_waiting: false,
        };
        let shared = Arc::new(Handoff::new(queue, next_seq));
        let (wake_tx, wakes) = async_channel::bounded(1);
        let counters = Arc::new(StoreCounters::default());
        let mut writer = Writer {
            conn,
            path: path.to_path_buf(),
            liveness,
            compact_rows_min: options.compact_rows_min,
            incoming: Pending::default(),
            backlog: Pending::default(),
            faults: options.faults.clone(),
            counters: Arc::clone(&counters),
            wake_core: wake_tx,
        };
        let writer_shared = Arc::clone(&shared);
        let interval = options.sync_interval;
        let writer = std::thread::Builder::new()
            .name("wizard-store".into())
            .spawn(move || writer.run(&writer_shared, interval, generation))
            .map_err(|e| StoreError(format!("store writer thread: {e}")))?;
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

fn meta(conn: &Connection, key: &str) -> rusqlite::Result<Option<u64>> {
    conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| {
        r.get::<_, i64>(0)
    })
    .optional()
    .map(|v| v.map(|v| v as u64))
}

/// Folds into SQLite what the journal holds beyond SQLite's `folded_seq`, as far as it
/// runs on without a gap, syncs, and deletes the journal. Returns the next sequence
/// number and the number of the journal generation to write next.
fn recover(conn: &mut Connection, path: &Path) -> Result<(u64, u64), StoreError> {
    // A file written before the journal existed has no `folded_seq`: everything in it
    // was committed to SQLite directly.
    let folded_seq = match meta(conn, "folded_seq").map_err(sql("cannot read", path))? {
        Some(seq) => seq,
        None => conn
            .query_row("SELECT COALESCE(MAX(seq), 0) FROM records", [], |r| {
                r.get::<_, i64>(0)
            })
            .map_err(sql("cannot read", path))? as u64,
    };
    // Generations below it were folded before (one left behind, or brought back by a
    // power loss after its deletion, is stale).
    let journal_from = meta(conn, "journal_from")
        .map_err(sql("cannot read", path))?
        .unwrap_or(0);
    let generations = journal::generations(path).map_err(|e| {
        StoreError(format!(
            "cannot list the journal of {}: {e}",
            path.display()
        ))
    })?;
    let mut rows = Vec::new();
    let mut next_seq = folded_seq + 1;
    let mut cut: Option<String> = None;
    for (number, file) in generations.iter().filter(|(n, _)| *n >= journal_from) {
        if cut.is_some() {
            break;
        }
        let bytes = std::fs::read(file)
            .map_err(|e| StoreError(format!("cannot read {}: {e}", file.display())))?;
        let contents = journal::read(&bytes);
        for (seq, body) in contents.rows {
            if seq < next_seq {
                continue;
            }
            if seq > next_seq {
                cut = Some(format!(
                    "generation {number} jumps from record {next_seq} to {seq}"
                ));
                break;
            }
            let record = Record::decode(&body)
                .map_err(|e| StoreError(format!("{} record {seq}: {e}", file.display())))?;
            rows.push((seq, record.row_key(), body));
            next_seq += 1;
        }
        if contents.torn_bytes > 0 && cut.is_none() {
            cut = Some(format!(
                "generation {number} ends in {} bytes that are no whole record",
                contents.torn_bytes
            ));
        }
    }
    if let Some(why) = &cut {
        // Only a power loss or a damaged disk leaves this; what follows is dropped.
        warn!(store = %path.display(), why = %why, kept = rows.len(), "The store's journal is cut");
    }
    let generation = generations
        .last()
        .map_or(journal_from, |(n, _)| (n + 1).max(journal_from))
        .max(1);
    let folded = rows
        .iter()
        .map(|(seq, key, body)| (*seq, *key, body.as_bytes()));
    insert(conn, folded, generation).map_err(sql("cannot fold the journal into", path))?;
    checkpoint(conn).map_err(sql("cannot sync", path))?;
    for (_, file) in &generations {
        std::fs::remove_file(file)
            .map_err(|e| StoreError(format!("cannot delete {}: {e}", file.display())))?;
    }
    if !rows.is_empty() {
        info!(store = %path.display(), records = rows.len(), "Folded the journal left by the last process");
    }
    Ok((next_seq, generation))
}

/// Rows a reader hands to a decoding thread at once.
const LOAD_BATCH_ROWS: usize = 16 * 1024;

/// Rows read for a decoding thread: their bodies in one buffer (one allocation a batch,
/// not one a row).
#[derive(Default)]
pub(crate) struct Batch {
    seqs: Vec<u64>,
    ends: Vec<usize>,
    text: String,
}

impl Batch {
    pub(crate) fn push(&mut self, seq: u64, body: &str) {
        self.text.push_str(body);
        self.seqs.push(seq);
        self.ends.push(self.text.len());
    }

    fn len(&self) -> usize {
        self.seqs.len()
    }

    fn rows(&self) -> impl Iterator<Item = (u64, &str)> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        self.seqs
            .iter()
            .zip(starts.zip(&self.ends))
            .map(|(seq, (start, end))| (*seq, self.text.get(start..*end).unwrap_or_default()))
    }
}

/// Every record with its sequence number, oldest first. This thread reads the rows in
/// order, in batches that the other cores decode while it reads the next (a restart's
/// restore waits for it: 1.8 million records for 10 000 games). At most two batches
/// per decoding thread wait for one.
fn load(conn: &Connection, path: &Path) -> Result<Vec<(u64, Record)>, StoreError> {
    let mut statement = conn
        .prepare("SELECT seq, body FROM records ORDER BY seq")
        .map_err(sql("cannot read", path))?;
    let mut rows = statement.query([]).map_err(sql("cannot read", path))?;
    let failed = sql("cannot read", path);
    let at = path.display().to_string();
    decode_in_batches(&at, |batch| {
        let Some(row) = rows.next().map_err(&failed)? else {
            return Ok(false);
        };
        let seq = row.get::<_, i64>(0).map_err(&failed)? as u64;
        let body = row.get_ref(1).map_err(&failed)?;
        let body = body.as_str().map_err(|e| failed(e.into()))?;
        batch.push(seq, body);
        Ok(true)
    })
}

/// Reads rows with `read_row` (which pushes one row into the batch it is given and
/// says whether there was one) on this thread, in batches that the other cores decode
/// while it reads the next; returns every record with its sequence number, in the
/// order read. `at` names the store in errors (a row that is not a record names its
/// sequence number). At most two batches per decoding thread wait for one. Shared by
/// the SQLite and the PostgreSQL store.
pub(crate) fn decode_in_batches(
    at: &str,
    mut read_row: impl FnMut(&mut Batch) -> Result<bool, StoreError>,
) -> Result<Vec<(u64, Record)>, StoreError> {
    type Decoded = (usize, Result<Vec<(u64, Record)>, StoreError>);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get().min(8))
        .max(2)
        - 1;
    let (batch_tx, batch_rx) = std::sync::mpsc::sync_channel::<(usize, Batch)>(threads * 2);
    let batch_rx = Mutex::new(batch_rx);
    let (done_tx, done_rx) = std::sync::mpsc::channel::<Decoded>();
    let decode = |batch: Batch| -> Result<Vec<(u64, Record)>, StoreError> {
        batch
            .rows()
            .map(|(seq, body)| {
                Record::decode(body)
                    .map(|r| (seq, r))
                    .map_err(|e| StoreError(format!("{at} record {seq}: {e}")))
            })
            .collect()
    };
    let read: Result<usize, StoreError> = std::thread::scope(|scope| {
        for _ in 0..threads {
            let (batch_rx, done_tx) = (&batch_rx, done_tx.clone());
            scope.spawn(move || {
                loop {
                    let next = batch_rx
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .recv();
                    let Ok((index, batch)) = next else { break };
                    if done_tx.send((index, decode(batch))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        let mut batches = 0;
        let mut batch = Batch::default();
        // Dropping the sender on every way out ends the decoding threads.
        let batch_tx = batch_tx;
        loop {
            let more = read_row(&mut batch)?;
            if batch.len() == LOAD_BATCH_ROWS || (!more && !batch.seqs.is_empty()) {
                let full = std::mem::take(&mut batch);
                batch_tx
                    .send((batches, full))
                    .map_err(|_| StoreError("a decoding thread stopped".into()))?;
                batches += 1;
            }
            if !more {
                return Ok(batches);
            }
        }
    });
    let batches = read?;
    let mut decoded: Vec<Option<Vec<(u64, Record)>>> = (0..batches).map(|_| None).collect();
    for (index, part) in done_rx.iter() {
        if let Some(slot) = decoded.get_mut(index) {
            *slot = Some(part?);
        }
    }
    let mut records = Vec::with_capacity(batches * LOAD_BATCH_ROWS);
    for part in decoded {
        records.extend(part.ok_or_else(|| StoreError("a decoding thread panicked".into()))?);
    }
    Ok(records)
}

/// The key columns a record's row is stored with, beside its body: `(lobby, session,
/// kind, game_no)`, the same in SQLite and PostgreSQL. Compaction reads them back
/// with [`row_key_of`] instead of decoding bodies.
pub(crate) fn key_columns(key: RowKey) -> (Option<i64>, Option<i64>, &'static str, Option<i64>) {
    let id = Some(key.id as i64);
    let (lobby, session) = match key.kind {
        RowKind::Session | RowKind::SessionGone => (None, id),
        RowKind::Lobby | RowKind::Move | RowKind::LobbyGone => (id, None),
    };
    let game_no = matches!(key.kind, RowKind::Lobby | RowKind::Move).then_some(key.game_no as i64);
    (lobby, session, key.kind.name(), game_no)
}

/// A row's key from its stored columns ([`key_columns`]); `None` for a kind this build
/// does not know (compaction keeps such a row).
pub(crate) fn row_key_of(
    kind: &str,
    lobby: Option<i64>,
    session: Option<i64>,
    game_no: Option<i64>,
) -> Option<RowKey> {
    let kind = RowKind::from_name(kind)?;
    let id = match kind {
        RowKind::Session | RowKind::SessionGone => session,
        _ => lobby,
    };
    Some(RowKey {
        kind,
        id: id.unwrap_or_default() as u64,
        game_no: game_no.unwrap_or_default() as u64,
    })
}

/// The writer thread's own state: the SQLite connection and what it knows of the rows.
#[derive(Debug)]
struct Writer {
    conn: Connection,
    path: PathBuf,
    /// Live and dead rows in the table, counted as they are inserted.
    liveness: Liveness<RowCount>,
    compact_rows_min: u64,
    /// The pending buffers the core task fills while this thread folds the others.
    incoming: Pending,
    /// The rows taken and not folded yet, oldest first: one turn's, or more while folds
    /// fail.
    backlog: Pending,
    faults: Option<Faults>,
    counters: Arc<StoreCounters>,
    /// Wakes the core task after a turn a waiting commit asked for.
    wake_core: async_channel::Sender<()>,
}

impl Writer {
    /// Folds what the core task wrote every `interval` (or sooner when asked), syncs,
    /// deletes the journal generations whose rows are all in SQLite, and compacts when
    /// it pays; a failed fold keeps its rows and the generations and is tried again
    /// with a backoff. Once more (a few times at most) when stopped.
    fn run(&mut self, shared: &Shared, interval: Duration, first_generation: u64) {
        // The oldest generation not yet deleted.
        let mut oldest = first_generation;
        let mut next = Instant::now() + interval;
        let mut backoff = RETRY_FIRST;
        let mut stop_tries = 0;
        // Rows are inserted but not yet synced.
        let mut unsynced = false;
        loop {
            let (folded_through, asked, stop) = self.take(shared, next);
            shared.taken();
            let started = Instant::now();
            let result = self
                .fold(folded_through, &mut unsynced)
                .map(|folded| {
                    if folded {
                        self.counters.folded(started.elapsed());
                    }
                })
                .map_err(|e| format!("cannot fold into {}: {e}", self.path.display()));
            let result = result.and_then(|()| {
                // Every row taken so far is committed and synced in SQLite, so every
                // row of these generations is.
                while oldest <= folded_through {
                    self.delete_generation(oldest);
                    oldest += 1;
                }
                self.compact_if_it_pays()
                    .map_err(|e| format!("cannot compact {}: {e}", self.path.display()))
            });
            let backlog_bytes = self.backlog.frames.len();
            self.counters
                .unfolded_bytes
                .store(backlog_bytes as u64, Ordering::Relaxed);
            self.counters
                .fold_failing
                .store(result.is_err(), Ordering::Relaxed);
            let wake_core = {
                let mut front = shared.lock();
                let queue = &mut front.queue;
                queue.backlog_bytes = backlog_bytes;
                match &result {
                    Ok(()) => {
                        if let Some((since, _)) = queue.fold_failing.take() {
                            warn!(
                                store = %self.path.display(),
                                failing_ms = since.elapsed().as_millis() as u64,
                                "Store folds resumed"
                            );
                        }
                    }
                    Err(e) => {
                        if queue.fold_failing.is_none() {
                            error!(
                                store = %self.path.display(),
                                error = %e,
                                unfolded_bytes = backlog_bytes,
                                "Store fold failed: its rows stay in the journal, retrying"
                            );
                            queue.fold_failing = Some((Instant::now(), e.clone()));
                        } else {
                            debug!(store = %self.path.display(), error = %e, "Store fold failed again");
                        }
                    }
                }
                std::mem::take(&mut queue.core_waiting)
            };
            match &result {
                Ok(()) => {
                    backoff = RETRY_FIRST;
                    next = Instant::now() + interval;
                    shared.turn_done(asked, Ok(()));
                }
                Err(e) => {
                    self.counters.fold_failures.fetch_add(1, Ordering::Relaxed);
                    next = Instant::now() + backoff.min(interval.max(RETRY_FIRST));
                    backoff = (backoff * 2).min(RETRY_MAX);
                    shared.turn_failed_for_now(asked, e.clone());
                }
            }
            if wake_core {
                let _ = self.wake_core.try_send(());
            }
            if stop {
                stop_tries += 1;
                if result.is_ok() || stop_tries >= STOP_FOLD_TRIES_MAX {
                    if result.is_err() {
                        warn!(
                            store = %self.path.display(),
                            unfolded_bytes = backlog_bytes,
                            "Store writer stopping with rows not folded: they stay in the journal for the next start"
                        );
                    }
                    break;
                }
                std::thread::sleep(backoff);
            }
        }
    }

    /// Inserts the backlog in one transaction (then it is empty, and `unsynced`
    /// set), and syncs (then `unsynced` is clear). Returns whether it inserted
    /// anything. On an error what was not inserted stays in the backlog, and what was
    /// inserted but not synced is synced by a later turn: nothing is inserted twice.
    fn fold(&mut self, folded_through: u64, unsynced: &mut bool) -> Result<bool, String> {
        let inserted = !self.backlog.keys.is_empty();
        if inserted {
            if injected(&self.faults, FaultPoint::Insert) {
                return Err(injected_error(FaultPoint::Insert).to_string());
            }
            let rows = journal::rows(&self.backlog.frames).zip(&self.backlog.keys);
            let rows = rows.map(|((seq, body), key)| (seq, *key, body));
            insert(&mut self.conn, rows, folded_through + 1).map_err(|e| e.to_string())?;
            for ((seq, _), key) in journal::rows(&self.backlog.frames).zip(&self.backlog.keys) {
                self.liveness.add(seq, *key);
            }
            self.backlog.clear();
            *unsynced = true;
        }
        if !*unsynced {
            // Nothing written since the last sync: an idle server touches the disk no
            // more.
            return Ok(false);
        }
        if injected(&self.faults, FaultPoint::Checkpoint) {
            return Err(injected_error(FaultPoint::Checkpoint).to_string());
        }
        checkpoint(&self.conn).map_err(|e| e.to_string())?;
        *unsynced = false;
        Ok(inserted)
    }

    /// Deletes journal generation `number` (its rows are all in SQLite).
    fn delete_generation(&self, number: u64) {
        let file = journal::generation_path(&self.path, number);
        let deleted = if injected(&self.faults, FaultPoint::DeleteGeneration) {
            Err(injected_error(FaultPoint::DeleteGeneration))
        } else {
            std::fs::remove_file(&file)
        };
        // One left behind is skipped by the next start (it is below `journal_from`).
        if let Err(e) = deleted
            && e.kind() != std::io::ErrorKind::NotFound
        {
            warn!(file = %file.display(), error = %e, "Cannot delete a folded journal generation");
        }
    }

    /// Waits for the writer's turn (`next`, a flush, a full buffer or the stop), then
    /// takes the pending rows (after the backlog, giving the core task the empty
    /// buffers) and starts a new journal generation. Returns the last generation the
    /// rows taken so far fill, the flushes they answer and whether to stop.
    fn take(&mut self, shared: &Shared, next: Instant) -> (u64, u64, bool) {
        let mut front = shared.wait_turn(next, |q| q.pending.frames.len() >= PENDING_FOLD_BYTES);
        // Once half full, a new generation for what comes next, so that this one can
        // go once folded (the last one goes with the stop). Until then the core task
        // goes on filling the same one: a restart skips the rows it holds that were
        // folded. The next one is allocated for four turns like this one at least, so
        // that the core task rarely has to grow it, and made with the lock released:
        // its creation and its page faults (`prefault`) cost the writer, never a
        // commit's wait. Rows committed meanwhile go to the current one, and are taken
        // with it below.
        let mut successor = None;
        if !front.stopping() && front.queue.journal.bytes() >= GENERATION_ROTATE_BYTES {
            let number = front.queue.journal.number() + 1;
            let turn_bytes = front.queue.pending.frames.len() as u64;
            drop(front);
            successor = Some(self.new_generation(number, turn_bytes));
            front = shared.lock();
        }
        std::mem::swap(&mut front.queue.pending, &mut self.incoming);
        let current = front.queue.journal.number();
        let mut folded_through = current - 1;
        if front.stopping() {
            // Unmapped before it is deleted; nothing is committed after the stop.
            front.queue.journal.close();
            folded_through = current;
            if let Some(Ok(mut unused)) = successor {
                unused.close();
                let file = journal::generation_path(&self.path, unused.number());
                if let Err(e) = std::fs::remove_file(&file) {
                    warn!(file = %file.display(), error = %e, "Cannot delete an unused journal generation");
                }
            }
        } else {
            match successor {
                Some(Ok(writer)) => {
                    front.queue.journal = writer;
                    folded_through = current;
                }
                Some(Err(e)) => {
                    // The core task goes on filling the current one (growing it); the
                    // next turn tries again.
                    self.counters
                        .generation_failures
                        .fetch_add(1, Ordering::Relaxed);
                    warn!(store = %self.path.display(), error = %e, "Cannot start the next journal generation; the current one goes on");
                }
                None => {}
            }
        }
        let answered = (folded_through, front.flushes_asked(), front.stopping());
        drop(front);
        if self.backlog.keys.is_empty() {
            std::mem::swap(&mut self.backlog, &mut self.incoming);
        } else {
            self.backlog.extend(&self.incoming);
        }
        self.incoming.clear();
        answered
    }

    /// Creates journal generation `number`, allocated for four turns of
    /// `turn_bytes` (within `GENERATION_RESERVED_BYTES` and
    /// `GENERATION_RESERVED_BYTES_MAX`), with the part the core task will fill before
    /// the next rotation faulted in ahead ([`journal::Writer::prefault`]).
    fn new_generation(&self, number: u64, turn_bytes: u64) -> Result<journal::Writer, String> {
        let reserved_bytes =
            (4 * turn_bytes).clamp(GENERATION_RESERVED_BYTES, GENERATION_RESERVED_BYTES_MAX);
        let created = if injected(&self.faults, FaultPoint::NewGeneration) {
            Err(injected_error(FaultPoint::NewGeneration))
        } else {
            journal::Writer::create(&self.path, number, reserved_bytes)
        };
        let writer = created.map_err(|e| {
            format!(
                "cannot create {}: {e}",
                journal::generation_path(&self.path, number).display()
            )
        })?;
        // Filled to half, then about a turn more before the writer's next turn
        // rotates it.
        if let Err(e) = writer.prefault(GENERATION_ROTATE_BYTES + 2 * turn_bytes) {
            debug!(error = %e, "Journal generation not faulted in ahead");
        }
        Ok(writer)
    }
    /// Deletes the dead rows once they outnumber the live ones and `compact_rows_min`:
    /// reads every row's kind and key (not its body) in order, finds the dead ones
    /// with the same fold as a restore, and deletes them in one transaction. Each
    /// compaction costs about a pass over the table, paid for by as many dead rows.
    fn compact_if_it_pays(&mut self) -> rusqlite::Result<()> {
        let dead = self.liveness.dead().count();
        if dead <= self.liveness.live().max(self.compact_rows_min) {
            return Ok(());
        }
        let started = Instant::now();
        let mut found = Liveness::<Vec<u64>>::default();
        {
            let mut statement = self
                .conn
                .prepare("SELECT seq, kind, lobby, session, game_no FROM records ORDER BY seq")?;
            let mut rows = statement.query([])?;
            while let Some(row) = rows.next()? {
                let kind: String = row.get(1)?;
                // A row this build does not know is kept.
                if let Some(key) = row_key_of(&kind, row.get(2)?, row.get(3)?, row.get(4)?) {
                    found.add(row.get::<_, i64>(0)? as u64, key);
                }
            }
        }
        let mut doomed = found.take_dead();
        doomed.sort_unstable();
        let tx = self.conn.transaction()?;
        {
            let mut delete = tx.prepare_cached("DELETE FROM records WHERE seq = ?1")?;
            for seq in &doomed {
                delete.execute([*seq as i64])?;
            }
        }
        tx.commit()?;
        checkpoint(&self.conn)?;
        self.liveness.take_dead();
        info!(
            store = %self.path.display(),
            deleted = doomed.len(),
            live = found.live(),
            compact_ms = started.elapsed().as_millis() as u64,
            "Store compacted"
        );
        Ok(())
    }
}

/// Syncs: copies the write-ahead log into the database file, with its fsyncs. The
/// writer is the only one writing, so the log starts afresh at the next fold.
fn checkpoint(conn: &Connection) -> rusqlite::Result<()> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(0))
        .map(drop)
}

/// One transaction: every row (sequence number, key, body) appended in order (a fold
/// writes only the table's last pages; dead rows go in [`Writer::compact_if_it_pays`]),
/// and the journal position it reaches (`folded_seq`, and `journal_from`, the first
/// generation not folded).
fn insert<'a>(
    conn: &mut Connection,
    rows: impl IntoIterator<Item = (u64, RowKey, &'a [u8])>,
    journal_from: u64,
) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    let mut last_seq = None;
    {
        let mut statement = tx.prepare_cached(
            "INSERT INTO records (seq, lobby, session, kind, game_no, body)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        for (seq, key, body) in rows {
            let (lobby, session, kind, game_no) = key_columns(key);
            let body = std::str::from_utf8(body).map_err(rusqlite::Error::Utf8Error)?;
            statement.execute(params![seq as i64, lobby, session, kind, game_no, body])?;
            last_seq = Some(seq);
        }
    }
    let mut set = tx.prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")?;
    if let Some(last) = last_seq {
        set.execute(params!["folded_seq", last as i64])?;
    }
    set.execute(params!["journal_from", journal_from as i64])?;
    drop(set);
    tx.commit()
}

/// The store the core task commits to, whichever `STORE` names: each pass's records go
/// in with [`Backend::commit`], and that pass's frames wait until the ticket it returns
/// is durable ([`Backend::durable_through`]).
#[derive(Debug)]
pub enum Backend {
    /// Durable once its journal frame is written: at once, unless the journal cannot
    /// take it (then once [`Store::retry`] wrote it).
    Sqlite(Store),
    /// Durable once the writer's transaction holding it committed (group commit).
    #[cfg(feature = "postgres")]
    Postgres(crate::pg_store::PgStore),
}

impl Backend {
    /// Commits `records` (not empty); returns the ticket that the pass's frames wait
    /// for.
    pub fn commit(&mut self, records: Vec<Record>) -> Result<u64, String> {
        match self {
            Backend::Sqlite(store) => store.commit(records),
            #[cfg(feature = "postgres")]
            Backend::Postgres(store) => store.commit(records),
        }
    }

    /// Every ticket up to this one is durable.
    pub fn durable_through(&self) -> u64 {
        match self {
            Backend::Sqlite(store) => store.durable_through(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(store) => store.durable_through(),
        }
    }

    /// Why the store stopped working for good, once it did (the process must stop
    /// acknowledging and exit).
    pub fn failed(&self) -> Option<String> {
        match self {
            Backend::Sqlite(_) => None,
            #[cfg(feature = "postgres")]
            Backend::Postgres(store) => store.failed(),
        }
    }

    /// Why commits are not acknowledged now, while the store tries again by itself.
    pub fn unavailable(&self) -> Option<String> {
        match self {
            Backend::Sqlite(store) => store.unavailable().map(str::to_owned),
            #[cfg(feature = "postgres")]
            Backend::Postgres(store) => store.unavailable(),
        }
    }

    /// When the store wants [`Backend::retry`] called, if it does.
    pub fn retry_at(&self) -> Option<Instant> {
        match self {
            Backend::Sqlite(store) => store.retry_at(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => None,
        }
    }

    /// Tries waiting commits again (`soon`: woken by the store, not by the clock).
    pub fn retry(&mut self, now: Instant, soon: bool) {
        match self {
            Backend::Sqlite(store) => {
                store.retry(now, soon);
            }
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => {}
        }
    }

    /// What wakes the core task while it takes input: the PostgreSQL store's commits
    /// (the SQLite store's are durable at once; it wakes only a paused core task).
    pub fn wakes_while_running(&self) -> Option<&async_channel::Receiver<()>> {
        match self {
            Backend::Sqlite(_) => None,
            #[cfg(feature = "postgres")]
            Backend::Postgres(store) => Some(store.wakes()),
        }
    }

    /// Woken when a commit became durable, the store made room, or it failed.
    pub fn wakes(&self) -> &async_channel::Receiver<()> {
        match self {
            Backend::Sqlite(store) => store.wakes(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(store) => store.wakes(),
        }
    }
}
