//! The durable store (`STORE=sqlite:PATH`): the core's records in one SQLite file,
//! fronted by a journal that the core task appends each pass's records to, and one
//! writer thread that folds the journal into SQLite and syncs it on its own cadence.
//!
//! - **Commit before acknowledge.** The core task hands each pass's records to
//!   [`Store::commit`] and sends that pass's frames only once they are written to the
//!   journal ([`crate::journal`]): one frame copied into a shared mapping of the
//!   journal file, on the core task's own thread, with no syscall. A copied frame is in
//!   the kernel's page cache, so a crash of the process loses nothing that any player
//!   saw.
//! - **One writer, in batches.** The writer thread owns the SQLite connection. Every
//!   `STORE_SYNC_INTERVAL` (sooner when [`PENDING_FOLD_BYTES`] are waiting) it takes
//!   the records written since its last turn, starts a new journal generation, inserts
//!   them in one transaction (WAL mode, `synchronous=NORMAL`), checkpoints, which
//!   syncs the log and the database file to disk, and only then deletes the journal
//!   generations it folded. Inserting a second's moves in one transaction writes each
//!   B-tree page once for all of them instead of once per move: SQLite committing each
//!   pass on the core thread cost 57 % more CPU per move at 1000 paced games.
//! - **What a power loss can take.** Neither the journal nor SQLite's log is synced on a
//!   move's path: a power loss or a kernel crash can take what was written since the
//!   writer's last sync, about one interval. A restore replays the journal only as far
//!   as it runs on without a gap from what SQLite holds, and drops a cut or damaged
//!   tail, so a game comes back as it stood at some moment, never with a hole.
//! - **Restore.** [`Store::open_sqlite`] folds whatever the journal holds beyond
//!   SQLite's `folded_seq` (a crash between two folds), syncs, deletes the journal and
//!   returns every record, oldest first.
//! - **Bounded.** The records waiting for the writer are at most
//!   [`PENDING_BYTES_MAX`]; beyond it a commit waits for the writer (a disk that cannot
//!   keep up slows the game loop rather than fill memory). The write-ahead log starts
//!   afresh after each fold, since the writer is the only one writing, and
//!   `journal_size_limit` gives the file back beyond [`LOG_BYTES_KEPT`].
//! - **Small.** The writer only appends; it counts the rows a restore no longer needs
//!   (older lobby and session records, an earlier game's moves, whatever a lobby or a
//!   session that is gone left: `wizard_core::records::liveness`, the same fold as the
//!   restore) and, once they outnumber the live ones and [`COMPACT_ROWS_MIN`], deletes
//!   them in one pass. So the file, and the restore time, follow the live games, not
//!   the history, within a factor of two. Deleting as it went cost a B-tree page per
//!   row through the lobby index, several times the rest of the store's work.
//! - **One process at a time.** The process holds an exclusive lock on `PATH.lock`
//!   while it runs; a new one started during a deploy waits for it, then restores.
//! - The file, its log, the journal and the lock are created with mode 0600.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, params};
use tracing::{debug, error, info, warn};
use wizard_core::records::Record;
use wizard_core::records::liveness::{Liveness, RowCount, RowKey, RowKind, Rows as _};

use crate::handoff::Handoff;
use crate::journal;

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
/// Journal bytes waiting for the writer beyond which a commit waits for it.
pub const PENDING_BYTES_MAX: usize = 64 * 1024 * 1024;
/// Bytes each journal generation file is allocated when the writer starts it, at
/// least (four turns' worth of records when that is more, up to
/// `GENERATION_RESERVED_BYTES_MAX`). At 1000 paced games a
/// second of records is about 40 KiB. Kept small because allocating and deleting
/// costs: 16 MiB a second cost the writer about 1.5 us a move more at 1000 paced games
/// (session 14).
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
}

/// What the core task fills and the writer takes ([`Handoff`]'s queue).
#[derive(Debug)]
struct Queue {
    journal: journal::Writer,
    /// Written to the journal, not yet taken by the writer.
    pending: Pending,
}

type Shared = Handoff<Queue>;

/// The open store: the journal, the writer thread and the process lock.
#[derive(Debug)]
pub struct Store {
    shared: Arc<Shared>,
    writer: Option<JoinHandle<()>>,
    path: PathBuf,
    /// Held while the process runs: the exclusive lock on `PATH.lock`.
    _lock: File,
}

impl Store {
    /// Opens (creating it and its folder) the SQLite store at `path`, waiting for the
    /// lock a previous process may still hold, and folds in what its journal holds.
    /// Returns the store and every record in it, oldest first. The writer folds and
    /// syncs every `sync_interval`.
    pub fn open_sqlite(
        path: &Path,
        sync_interval: Duration,
    ) -> Result<(Store, Vec<Record>), StoreError> {
        Store::open_sqlite_compacting_at(path, sync_interval, COMPACT_ROWS_MIN)
    }

    /// [`Store::open_sqlite`], compacting once the dead records are more than the live
    /// ones and more than `compact_rows_min` (tests make it small).
    pub fn open_sqlite_compacting_at(
        path: &Path,
        sync_interval: Duration,
        compact_rows_min: u64,
    ) -> Result<(Store, Vec<Record>), StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| StoreError(format!("cannot create {}: {e}", dir.display())))?;
        }
        let lock = lock(&lock_path(path))?;
        // Created 0600 before SQLite opens it; SQLite gives its log the same mode.
        OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| StoreError(format!("cannot create {}: {e}", path.display())))?;
        let mut conn = Connection::open(path).map_err(sql("cannot open", path))?;
        conn.busy_timeout(Duration::from_secs(10))
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
             CREATE TABLE IF NOT EXISTS records (
                 seq INTEGER PRIMARY KEY,
                 lobby INTEGER,
                 session INTEGER,
                 kind TEXT NOT NULL,
                 game_no INTEGER,
                 body TEXT NOT NULL
             );
             DROP INDEX IF EXISTS records_lobby;
             DROP INDEX IF EXISTS records_lobby_game;
             DROP INDEX IF EXISTS records_session;
             CREATE TABLE IF NOT EXISTS meta (
                 key TEXT PRIMARY KEY,
                 value INTEGER NOT NULL
             );"
        ))
        .map_err(sql("cannot set up", path))?;
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
        };
        let shared = Arc::new(Handoff::new(queue, next_seq));
        let writer_shared = Arc::clone(&shared);
        let writer_path = path.to_path_buf();
        let writer = std::thread::Builder::new()
            .name("wizard-store".into())
            .spawn(move || {
                let mut writer = Writer {
                    conn,
                    path: writer_path,
                    liveness,
                    compact_rows_min,
                    spare: Pending::default(),
                };
                writer.run(&writer_shared, sync_interval, generation);
            })
            .map_err(|e| StoreError(format!("store writer thread: {e}")))?;
        info!(store = %path.display(), records = records.len(), "Store opened");
        Ok((
            Store {
                shared,
                writer: Some(writer),
                path: path.to_path_buf(),
                _lock: lock,
            },
            records,
        ))
    }

    /// Makes `records` durable against a crash of the process: one frame appended to
    /// the journal, on the calling thread. The writer thread inserts them into SQLite
    /// later. Fails once the store failed (the caller must not send the frames of
    /// these records, and should exit, to restart from what was written).
    pub fn commit(&self, records: Vec<Record>) -> Result<(), String> {
        if records.is_empty() {
            return Ok(());
        }
        let mut guard = self
            .shared
            .lock_for_commit(|q| q.pending.frames.len() >= PENDING_BYTES_MAX)?;
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
        if let Err(e) = queue.journal.append(&pending.frames[start..]) {
            pending.frames.truncate(start);
            pending.keys.truncate(keys_before);
            let e = format!(
                "cannot write {}: {e}",
                journal::generation_path(&self.path, queue.journal.number()).display()
            );
            error!(store = %self.path.display(), error = %e, "Store commit failed");
            front.fail(e.clone());
            return Err(e);
        }
        front.next_seq += records.len() as u64;
        let fold_now = front.queue.pending.frames.len() >= PENDING_FOLD_BYTES;
        drop(guard);
        if fold_now {
            self.shared.wake_writer();
        }
        Ok(())
    }

    /// Has the writer fold everything committed so far into SQLite and sync it, and
    /// waits for that (tests, benchmarks, and whoever wants a synced file now).
    pub fn flush(&self) -> Result<(), String> {
        self.shared.flush()
    }
}

impl Drop for Store {
    /// Stops the writer after one last fold and sync of everything committed.
    fn drop(&mut self) {
        self.shared.stop();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
        debug!(store = %self.path.display(), "Store writer stopped");
    }
}

fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Takes the exclusive lock on `path`, waiting (and saying so) while another process
/// holds it.
fn lock(path: &Path) -> Result<File, StoreError> {
    use rustix::fs::{FlockOperation, flock};
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| StoreError(format!("cannot create {}: {e}", path.display())))?;
    if flock(&file, FlockOperation::NonBlockingLockExclusive).is_err() {
        warn!(lock = %path.display(), "Waiting for the store's lock (another server still runs on it)");
        flock(&file, FlockOperation::LockExclusive)
            .map_err(|e| StoreError(format!("cannot lock {}: {e}", path.display())))?;
    }
    Ok(file)
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
    spare: Pending,
}

impl Writer {
    /// Folds what the core task wrote every `interval` (or sooner when asked), syncs,
    /// deletes the folded journal generations, and compacts when it pays; once more
    /// when stopped.
    fn run(&mut self, shared: &Shared, interval: Duration, first_generation: u64) {
        // The oldest generation not yet deleted.
        let mut oldest = first_generation;
        let mut next = Instant::now() + interval;
        loop {
            let (folded_through, asked, stop) = self.take(shared, next);
            shared.taken();
            next = Instant::now() + interval;
            let taken = &self.spare;
            // With nothing written since its last turn the file is already synced: an
            // idle server touches the disk no more.
            let result = if taken.keys.is_empty() {
                Ok(())
            } else {
                let rows = journal::rows(&taken.frames).zip(&taken.keys);
                let rows = rows.map(|((seq, body), key)| (seq, *key, body));
                insert(&mut self.conn, rows, folded_through + 1)
                    .and_then(|()| checkpoint(&self.conn))
            };
            if result.is_ok() {
                for ((seq, _), key) in journal::rows(&taken.frames).zip(&taken.keys) {
                    self.liveness.add(seq, *key);
                }
                while oldest <= folded_through {
                    let file = journal::generation_path(&self.path, oldest);
                    if let Err(e) = std::fs::remove_file(&file)
                        && e.kind() != std::io::ErrorKind::NotFound
                    {
                        warn!(file = %file.display(), error = %e, "Cannot delete a folded journal generation");
                    }
                    oldest += 1;
                }
            }
            self.spare.clear();
            let result = result
                .and_then(|()| self.compact_if_it_pays())
                .map_err(|e| {
                    let e = format!("cannot fold into {}: {e}", self.path.display());
                    error!(store = %self.path.display(), error = %e, "Store failed");
                    e
                });
            shared.turn_done(asked, result);
            if stop {
                break;
            }
        }
    }

    /// Waits for the writer's turn (`next`, a flush, a full buffer or the stop), then
    /// takes the pending rows (into `self.spare`, giving the core task the empty
    /// buffers) and starts a new journal generation. Returns the last generation the
    /// rows fill, the flushes they answer and whether to stop.
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
        std::mem::swap(&mut front.queue.pending, &mut self.spare);
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
                    error!(store = %self.path.display(), error = %e, "Store failed");
                    front.fail(e);
                }
                None => {}
            }
        }
        (folded_through, front.flushes_asked(), front.stopping())
    }

    /// Creates journal generation `number`, allocated for four turns of
    /// `turn_bytes` (within `GENERATION_RESERVED_BYTES` and
    /// `GENERATION_RESERVED_BYTES_MAX`), with the part the core task will fill before
    /// the next rotation faulted in ahead ([`journal::Writer::prefault`]).
    fn new_generation(&self, number: u64, turn_bytes: u64) -> Result<journal::Writer, String> {
        let reserved_bytes =
            (4 * turn_bytes).clamp(GENERATION_RESERVED_BYTES, GENERATION_RESERVED_BYTES_MAX);
        let writer = journal::Writer::create(&self.path, number, reserved_bytes).map_err(|e| {
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
    /// Durable once its journal frame is written: nothing to wait for.
    Sqlite(Store),
    /// Durable once the writer's transaction holding it committed (group commit).
    Postgres(crate::pg_store::PgStore),
}

impl Backend {
    /// Commits `records` (not empty); returns the ticket that the pass's frames wait
    /// for, or `None` when they are durable already.
    pub fn commit(&self, records: Vec<Record>) -> Result<Option<u64>, String> {
        match self {
            Backend::Sqlite(store) => store.commit(records).map(|()| None),
            Backend::Postgres(store) => store.commit(records).map(Some),
        }
    }

    /// Every ticket up to this one is durable.
    pub fn durable_through(&self) -> u64 {
        match self {
            Backend::Sqlite(_) => u64::MAX,
            Backend::Postgres(store) => store.durable_through(),
        }
    }

    /// Why the store stopped working, once it did (the process must stop acknowledging
    /// and exit).
    pub fn failed(&self) -> Option<String> {
        match self {
            Backend::Sqlite(_) => None,
            Backend::Postgres(store) => store.failed(),
        }
    }

    /// Woken when a commit became durable or the store failed (the PostgreSQL store;
    /// the SQLite store never makes the core task wait).
    pub fn wakes(&self) -> Option<&async_channel::Receiver<()>> {
        match self {
            Backend::Sqlite(_) => None,
            Backend::Postgres(store) => Some(store.wakes()),
        }
    }
}
