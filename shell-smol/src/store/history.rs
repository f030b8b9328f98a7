//! Finished games in the store (PROTOCOL.md 7.4): kept apart from the records a
//! restore reads, for `HISTORY_DAYS`, and read back off the core task.
//!
//! - **Written with the game's end.** The core's `game` record travels in the same
//!   batch as the game's last move and its rating update; the writer inserts it into
//!   `games` (and each profile seat's line into `game_seats`) in the transaction that
//!   inserts that batch's other rows, never into `records`, so a restore does not read
//!   history and its time does not grow with it.
//! - **Retention in bounded passes.** Every `HISTORY_PURGE_INTERVAL` the writer deletes
//!   the games finished more than `HISTORY_DAYS` ago, at most `HISTORY_PURGE_ROWS` per
//!   transaction, oldest first, until none is left or a pass took fewer: each pass
//!   holds the file's write lock briefly, and games go on meanwhile (the journal takes
//!   their moves). With `HISTORY_DAYS` 0 it deletes every game kept before.
//! - **Read off the game path.** [`Reader`]: one thread with its own read-only
//!   connection (SQLite's write-ahead log lets it read while the writer writes) answers
//!   `/games/<id>` and the profiles' recent games from a queue of at most
//!   [`READ_QUEUE_MAX`] requests; past it a request is refused at once (`503`), never
//!   queued without bound. The replay (the rules engine run over the game's moves)
//!   runs on that thread too.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, params};
use tracing::{info, warn};
use wizard_core::machine::records::Record;
use wizard_core::machine::records::history::HistoryRecord;

/// Requests waiting for the reader at most; more are refused at once.
pub const READ_QUEUE_MAX: usize = 64;
/// Recent games a profile page lists.
pub const RECENT_GAMES_MAX: usize = 20;
/// Deletion passes one purge runs at most (so at most this many times
/// `HISTORY_PURGE_ROWS` games per `HISTORY_PURGE_INTERVAL`).
pub const PURGE_PASSES_MAX: u32 = 100;
const MS_PER_DAY: u64 = 86_400_000;

/// How long history is kept and how it is purged.
#[derive(Clone, Copy, Debug)]
pub struct HistoryOptions {
    pub days: u32,
    pub purge_interval: Duration,
    pub purge_rows_max: u32,
}

impl Default for HistoryOptions {
    fn default() -> HistoryOptions {
        HistoryOptions {
            days: 90,
            purge_interval: Duration::from_secs(60),
            purge_rows_max: 1000,
        }
    }
}

impl HistoryOptions {
    /// Games finished before this (milliseconds since the Unix epoch) are deleted.
    pub fn cutoff_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(u64::from(self.days) * MS_PER_DAY)
    }
}

/// The wall clock, milliseconds since the Unix epoch.
pub fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The SQLite store's history tables (also on every open).
pub fn create_tables(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS games (
             id TEXT PRIMARY KEY,
             finished_ms INTEGER NOT NULL,
             body TEXT NOT NULL
         );
         CREATE INDEX IF NOT EXISTS games_finished ON games (finished_ms);
         CREATE TABLE IF NOT EXISTS game_seats (
             profile TEXT NOT NULL,
             finished_ms INTEGER NOT NULL,
             game TEXT NOT NULL,
             line TEXT NOT NULL
         );
         CREATE INDEX IF NOT EXISTS game_seats_profile ON game_seats (profile, finished_ms);
         CREATE INDEX IF NOT EXISTS game_seats_game ON game_seats (game);",
    )
}

/// Inserts a `game` record's body (as the journal holds it) into the history tables,
/// inside the writer's transaction. A body that is not a game record is an error
/// (the fold is tried again, and the row stays in the journal).
pub fn insert_sqlite(tx: &Transaction<'_>, body: &str) -> rusqlite::Result<()> {
    let Ok(Record::Game(game)) = Record::decode(body) else {
        return Err(rusqlite::Error::InvalidQuery);
    };
    tx.prepare_cached("INSERT OR REPLACE INTO games (id, finished_ms, body) VALUES (?1, ?2, ?3)")?
        .execute(params![game.id, game.finished_ms as i64, body])?;
    let mut seat = tx.prepare_cached(
        "INSERT INTO game_seats (profile, finished_ms, game, line) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (profile, line) in game.seat_summaries() {
        seat.execute(params![profile, game.finished_ms as i64, game.id, line])?;
    }
    Ok(())
}

/// One pass: deletes at most `rows_max` of the oldest games finished before
/// `cutoff_ms`, with their seats' lines, in one transaction. Returns how many.
pub fn purge_pass_sqlite(
    conn: &mut Connection,
    cutoff_ms: u64,
    rows_max: u32,
) -> rusqlite::Result<usize> {
    let tx = conn.transaction()?;
    let ids: Vec<String> = {
        let mut select = tx.prepare_cached(
            "SELECT id FROM games WHERE finished_ms < ?1 ORDER BY finished_ms LIMIT ?2",
        )?;
        let rows =
            select.query_map(params![cutoff_ms as i64, i64::from(rows_max)], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    {
        let mut game = tx.prepare_cached("DELETE FROM games WHERE id = ?1")?;
        let mut seats = tx.prepare_cached("DELETE FROM game_seats WHERE game = ?1")?;
        for id in &ids {
            game.execute([id])?;
            seats.execute([id])?;
        }
    }
    tx.commit()?;
    Ok(ids.len())
}

/// Passes of [`purge_pass_sqlite`] until a pass deletes fewer than `rows_max` (or
/// [`PURGE_PASSES_MAX`]). Returns the games deleted.
pub fn purge_sqlite(
    conn: &mut Connection,
    options: &HistoryOptions,
    now_ms: u64,
) -> rusqlite::Result<u64> {
    let cutoff = options.cutoff_ms(now_ms);
    let mut deleted = 0u64;
    for _ in 0..PURGE_PASSES_MAX {
        let n = purge_pass_sqlite(conn, cutoff, options.purge_rows_max)?;
        deleted += n as u64;
        if n < options.purge_rows_max as usize {
            break;
        }
    }
    if deleted > 0 {
        info!(
            deleted,
            "History purged: games older than HISTORY_DAYS deleted"
        );
    }
    Ok(deleted)
}

/// What the reader is asked.
#[derive(Debug)]
pub enum Query {
    /// A finished game's `/games/<id>` body.
    Game(String),
    /// A profile's recent games, as a JSON array of lines, newest first.
    Recent(String),
}

/// A request and where its answer goes.
type Request = (Query, async_channel::Sender<Option<String>>);

/// Why a read was not answered.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadError {
    /// [`READ_QUEUE_MAX`] requests wait already (the client may try again soon).
    Busy,
    /// The reader stopped or failed (the store's fault).
    Failed,
}

/// The history reader: one thread, a bounded queue ([`READ_QUEUE_MAX`]).
#[derive(Debug)]
pub struct Reader {
    queue: SyncSender<Request>,
}

impl Reader {
    /// Starts the reader of the SQLite store at `path`.
    pub fn sqlite(path: &Path) -> Reader {
        let path = path.to_path_buf();
        let mut conn: Option<Connection> = None;
        Reader::with(move |query| {
            if conn.is_none() {
                conn = open_reading(&path);
            }
            let c = conn.as_ref()?;
            answer_sqlite(c, query).unwrap_or_else(|e| {
                warn!(store = %path.display(), error = %e, "History read failed");
                None
            })
        })
    }

    /// A reader thread answering with `answer` (each store's reads).
    pub fn with(mut answer: impl FnMut(&Query) -> Option<String> + Send + 'static) -> Reader {
        let (queue, requests) = std::sync::mpsc::sync_channel::<Request>(READ_QUEUE_MAX);
        let spawned = std::thread::Builder::new()
            .name("wizard-history".into())
            .spawn(move || {
                for (query, reply) in requests.iter() {
                    let _ = reply.try_send(answer(&query));
                }
            });
        if let Err(e) = spawned {
            // Its queue's receiver is gone: every request answers `Failed`.
            warn!(error = %e, "History reader thread not started");
        }
        Reader { queue }
    }

    /// Asks the reader; `Ok(None)` when there is no such game or profile line.
    pub async fn ask(&self, query: Query) -> Result<Option<String>, ReadError> {
        let (tx, rx) = async_channel::bounded(1);
        match self.queue.try_send((query, tx)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(ReadError::Busy),
            Err(TrySendError::Disconnected(_)) => return Err(ReadError::Failed),
        }
        rx.recv().await.map_err(|_| ReadError::Failed)
    }
}

fn open_reading(path: &PathBuf) -> Option<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    match Connection::open_with_flags(path, flags) {
        Ok(c) => {
            let _ = c.busy_timeout(Duration::from_secs(2));
            Some(c)
        }
        Err(e) => {
            warn!(store = %path.display(), error = %e, "History reader cannot open the store");
            None
        }
    }
}

fn answer_sqlite(conn: &Connection, query: &Query) -> rusqlite::Result<Option<String>> {
    match query {
        Query::Game(id) => {
            let body: Option<String> = conn
                .prepare_cached("SELECT body FROM games WHERE id = ?1")?
                .query_row([id], |r| r.get(0))
                .optional()?;
            Ok(body.and_then(|b| replay(&b)))
        }
        Query::Recent(profile) => {
            let mut select = conn.prepare_cached(
                "SELECT line FROM game_seats WHERE profile = ?1 ORDER BY finished_ms DESC LIMIT ?2",
            )?;
            let lines = select
                .query_map(params![profile, RECENT_GAMES_MAX as i64], |r| {
                    r.get::<_, String>(0)
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(Some(format!("[{}]", lines.join(","))))
        }
    }
}

/// The number a store keys a game's row by ([`wizard_core::machine::records::history::row_id`]), as a column holds it.
pub fn row_id_of(id: &str) -> i64 {
    wizard_core::machine::records::history::row_id(id) as i64
}

/// The id of the game a stored `game` record holds.
pub fn game_id_of(body: &str) -> Option<String> {
    match Record::decode(body) {
        Ok(Record::Game(game)) => Some(game.id),
        _ => None,
    }
}

/// `profile`'s line among its recent games, from a stored `game` record.
pub fn seat_line(body: &str, profile: &str) -> Option<String> {
    let Ok(Record::Game(game)) = Record::decode(body) else {
        return None;
    };
    game.seat_summaries()
        .into_iter()
        .find(|(p, _)| p == profile)
        .map(|(_, line)| line)
}

/// The `/games/<id>` body of a stored `game` record (`None`, logged, for a record that
/// does not replay).
pub fn replay(body: &str) -> Option<String> {
    let game: HistoryRecord = match Record::decode(body) {
        Ok(Record::Game(game)) => game,
        _ => return None,
    };
    match game.replay_json() {
        Ok(json) => Some(json),
        Err(e) => {
            warn!(game = %game.id, error = %e, "A stored game does not replay");
            None
        }
    }
}
