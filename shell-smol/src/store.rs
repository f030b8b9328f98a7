//! The durable store (`STORE=sqlite:PATH`): the core's records in one SQLite file,
//! committed by the core task itself, and a sync thread that brings committed records
//! to disk on its own cadence.
//!
//! - **Commit before acknowledge.** The core task commits each pass's records with
//!   [`Store::commit`] and sends that pass's frames only once the transaction is
//!   committed. It commits on its own thread: a writer thread of the store's own cost
//!   two thread wake-ups per pass, a third of the store's CPU at 1000 paced games. SQLite runs in WAL mode with `synchronous=NORMAL`: a commit appends to
//!   the write-ahead log without waiting for the disk, so it survives a crash of the
//!   process (the log is in the kernel's page cache) at a few tens of microseconds.
//! - **Syncs off the move path.** Automatic checkpoints are off; every
//!   `STORE_SYNC_INTERVAL` a second connection checkpoints (`PASSIVE`, beside the
//!   writer), which syncs the log and the database file to disk. A power loss can take
//!   the commits of the last interval.
//! - **A bounded log.** Under steady writes that checkpoint never catches up with the
//!   writer (it copies what was there when it began), and SQLite starts the log afresh
//!   only after a checkpoint that left nothing behind: the log grew by 8 MB a second at
//!   1000 paced games. So after each sync the writer, between two commits, checkpoints
//!   the few commits the sync missed (with their fsyncs: a short pause once per
//!   interval, not per move); the next commit then starts the log from its beginning,
//!   and `journal_size_limit` gives the file back beyond [`LOG_BYTES_KEPT`].
//! - **Small.** A record supersedes older ones (a lobby's newest record, a new game's
//!   moves); a lobby or session that is gone takes its records with it. So the file,
//!   and the restore time, follow the live games, not the history.
//! - **One process at a time.** The process holds an exclusive lock on `PATH.lock`
//!   while it runs; a new one started during a deploy waits for it, then restores.
//! - The file, its log and its lock are created with mode 0600.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, params};
use tracing::{debug, error, info, warn};
use wizard_core::records::{Record, RecordKey};

/// The write-ahead log's file is cut back to this size when the log starts afresh.
const LOG_BYTES_KEPT: u64 = 16 * 1024 * 1024;

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

/// The open store: the writer's connection, the sync thread and the process lock.
#[derive(Debug)]
pub struct Store {
    /// `None` once closed.
    conn: Mutex<Option<Connection>>,
    path: PathBuf,
    /// Set by the sync thread after each checkpoint: the writer catches up.
    synced: Arc<AtomicBool>,
    sync_stop: Option<mpsc::Sender<()>>,
    syncer: Option<JoinHandle<()>>,
    /// Held while the process runs: the exclusive lock on `PATH.lock`.
    _lock: File,
}

impl Store {
    /// Opens (creating it and its folder) the SQLite store at `path`, waiting for the
    /// lock a previous process may still hold. Returns the store and every record in
    /// it, oldest first.
    pub fn open_sqlite(
        path: &Path,
        sync_interval: Duration,
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
        let conn = Connection::open(path).map_err(sql("cannot open", path))?;
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
             PRAGMA journal_size_limit={LOG_BYTES_KEPT};
             CREATE TABLE IF NOT EXISTS records (
                 seq INTEGER PRIMARY KEY,
                 lobby INTEGER,
                 session INTEGER,
                 kind TEXT NOT NULL,
                 game_no INTEGER,
                 body TEXT NOT NULL
             );
             CREATE INDEX IF NOT EXISTS records_lobby ON records (lobby, kind);
             CREATE INDEX IF NOT EXISTS records_session ON records (session);"
        ))
        .map_err(sql("cannot set up", path))?;
        let records = load(&conn, path)?;
        let synced = Arc::new(AtomicBool::new(false));
        let sync_synced = Arc::clone(&synced);
        let (sync_stop, stop) = mpsc::channel();
        let sync_path = path.to_path_buf();
        let syncer = std::thread::Builder::new()
            .name("wizard-store-sync".into())
            .spawn(move || sync_loop(&sync_path, sync_interval, &stop, &sync_synced))
            .map_err(|e| StoreError(format!("store sync thread: {e}")))?;
        info!(store = %path.display(), records = records.len(), "Store opened");
        Ok((
            Store {
                conn: Mutex::new(Some(conn)),
                path: path.to_path_buf(),
                synced,
                sync_stop: Some(sync_stop),
                syncer: Some(syncer),
                _lock: lock,
            },
            records,
        ))
    }

    /// Commits `records` in one transaction, on the calling thread (SQLite without an
    /// fsync: tens of microseconds); after a sync, catches up with it first (see the
    /// module's "a bounded log").
    pub fn commit(&self, records: &[Record]) -> Result<(), String> {
        let mut guard = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(conn) = guard.as_mut() else {
            return Err("the store is closed".into());
        };
        if self.synced.swap(false, Ordering::AcqRel) && !catch_up(conn, &self.path) {
            // The sync thread was checkpointing again: try at the next commit.
            self.synced.store(true, Ordering::Release);
        }
        commit(conn, records).map_err(|e| {
            error!(store = %self.path.display(), error = %e, "Store commit failed");
            e.to_string()
        })
    }
}

impl Drop for Store {
    /// Closes the writer's connection, then stops the sync thread after one last sync
    /// of everything committed.
    fn drop(&mut self) {
        drop(
            self.conn
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        debug!("Store writer stopped");
        drop(self.sync_stop.take());
        if let Some(syncer) = self.syncer.take() {
            let _ = syncer.join();
        }
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

/// Every record, oldest first.
fn load(conn: &Connection, path: &Path) -> Result<Vec<Record>, StoreError> {
    let mut statement = conn
        .prepare("SELECT seq, body FROM records ORDER BY seq")
        .map_err(sql("cannot read", path))?;
    let rows = statement
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
        .map_err(sql("cannot read", path))?;
    let mut records = Vec::new();
    for row in rows {
        let (seq, body) = row.map_err(sql("cannot read", path))?;
        let record = Record::decode(&body)
            .map_err(|e| StoreError(format!("{} record {seq}: {e}", path.display())))?;
        records.push(record);
    }
    Ok(records)
}

/// The writer's checkpoint of what the last sync missed (see the module's "a bounded
/// log"); false when another checkpoint was running.
fn catch_up(conn: &Connection, path: &Path) -> bool {
    let result: rusqlite::Result<(i64, i64, i64)> =
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        });
    match result {
        Ok((busy, _, _)) => busy == 0,
        Err(e) => {
            warn!(store = %path.display(), error = %e, "Store checkpoint failed");
            true
        }
    }
}

/// One transaction: every record in order, with the records it makes useless deleted.
fn commit(conn: &mut Connection, records: &[Record]) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    for record in records {
        let (lobby, session) = match record.key() {
            RecordKey::Lobby(id) => (Some(id.0 as i64), None),
            RecordKey::Session(id) => (None, Some(id.0 as i64)),
        };
        match record {
            Record::LobbyGone { .. } => {
                tx.prepare_cached("DELETE FROM records WHERE lobby = ?1")?
                    .execute(params![lobby])?;
                continue;
            }
            Record::SessionGone { .. } => {
                tx.prepare_cached("DELETE FROM records WHERE session = ?1")?
                    .execute(params![session])?;
                continue;
            }
            Record::Lobby(l) => {
                tx.prepare_cached(
                    "DELETE FROM records WHERE lobby = ?1
                     AND (kind = 'lobby' OR (kind = 'move' AND game_no != ?2))",
                )?
                .execute(params![lobby, l.game_no as i64])?;
            }
            Record::Session { .. } => {
                tx.prepare_cached("DELETE FROM records WHERE session = ?1")?
                    .execute(params![session])?;
            }
            Record::Move { .. } => {}
        }
        let (kind, game_no) = match record {
            Record::Lobby(l) => ("lobby", Some(l.game_no as i64)),
            Record::Move { game_no, .. } => ("move", Some(*game_no as i64)),
            _ => ("session", None),
        };
        tx.prepare_cached(
            "INSERT INTO records (lobby, session, kind, game_no, body) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![lobby, session, kind, game_no, record.encode()])?;
    }
    tx.commit()
}

/// Checkpoints every `interval` on its own connection, and once more when stopped.
fn sync_loop(path: &Path, interval: Duration, stop: &mpsc::Receiver<()>, synced: &AtomicBool) {
    let conn = match Connection::open(path) {
        Ok(conn) => conn,
        Err(e) => {
            error!(store = %path.display(), error = %e, "Store sync connection failed; commits are synced only by the kernel");
            return;
        }
    };
    let _ = conn.busy_timeout(Duration::from_secs(1));
    let mut next = Instant::now() + interval;
    loop {
        let wait = next.saturating_duration_since(Instant::now());
        let stopped = !matches!(
            stop.recv_timeout(wait),
            Err(mpsc::RecvTimeoutError::Timeout)
        );
        let result: rusqlite::Result<Option<i64>> = conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(0))
            .optional();
        match result {
            Ok(_) => synced.store(true, Ordering::Release),
            Err(e) => warn!(store = %path.display(), error = %e, "Store sync failed"),
        }
        if stopped {
            break;
        }
        next += interval;
    }
}
