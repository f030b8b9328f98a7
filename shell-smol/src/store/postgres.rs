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

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use postgres::fallible_iterator::FallibleIterator as _;
use postgres::types::ToSql;
use postgres::{Client, NoTls, Statement};
use tracing::{debug, error, info, warn};
use wizard_core::machine::records::Record;
use wizard_core::machine::records::liveness::{Liveness, RowCount, RowKey, Rows as _};
use wizard_core::vocabulary::config::redact_password;
use wizard_core::vocabulary::shard::ShardId;

use super::directory::{self, ProfileChange};
use super::handoff::Handoff;
use super::history::{self, HistoryOptions, Query, Reader};
use super::pg_copy::{self as copy, CopyError};
use super::rows::{decode_in_batches, key_columns, row_key_of};
use super::{COMPACT_ROWS_MIN, PENDING_BYTES_MAX, StoreError};

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
/// Defaults for a URL that does not set them: how long a connection attempt and an
/// unacknowledged write may take, and TCP keepalives, so that a vanished database is
/// noticed in seconds, not hours.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(5);
const KEEPALIVE_IDLE: Duration = Duration::from_secs(5);

/// The advisory lock (one `bigint`) that the owner of shard `shard` holds: `WIZARD` in
/// ASCII, then the shard id's byte (0 when not sharded), so it does not collide with
/// another application's locks by accident.
pub fn lock_key(shard: Option<ShardId>) -> i64 {
    const WIZARD: i64 = 0x5749_5A41_5244; // "WIZARD"
    (WIZARD << 8) | shard.map_or(0, |s| i64::from(s.as_char() as u8))
}

/// The lock taken while the table is created, so that shards starting together do not
/// race on `CREATE TABLE IF NOT EXISTS`.
fn schema_lock_key() -> i64 {
    lock_key(None) ^ 0xFF
}

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS wizard_records (
    shard text NOT NULL,
    seq bigint NOT NULL,
    lobby bigint,
    session bigint,
    kind text NOT NULL,
    game_no bigint,
    body text NOT NULL,
    PRIMARY KEY (shard, seq)
);
CREATE INDEX IF NOT EXISTS wizard_records_games ON wizard_records (session) WHERE kind = 'game';
CREATE INDEX IF NOT EXISTS wizard_records_games_finished ON wizard_records (shard, game_no) WHERE kind = 'game'";

const INSERT: &str = "INSERT INTO wizard_records (shard, seq, lobby, session, kind, game_no, body)
    SELECT $1, * FROM unnest($2::int8[], $3::int8[], $4::int8[], $5::text[], $6::int8[], $7::text[])";

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

/// The store's failure, for the log and the exit: the URL without its password.
fn pg(what: &str, shown: &str) -> impl Fn(postgres::Error) -> StoreError {
    let at = format!("{what} {shown}");
    move |e| StoreError(format!("{at}: {e}"))
}

/// Connects to `url` (no TLS: see the module's notes), with the timeouts and
/// keepalives of this module where the URL sets none, and `synchronous_commit = on`.
pub fn connect(url: &str, shard: Option<ShardId>) -> Result<Client, StoreError> {
    let shown = redact_password(url);
    let mut config: postgres::Config = url
        .parse()
        .map_err(|e| StoreError(format!("{shown}: {e}")))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(TCP_USER_TIMEOUT);
    }
    config.keepalives(true);
    if config.get_keepalives_idle() == Duration::from_secs(2 * 60 * 60) {
        config.keepalives_idle(KEEPALIVE_IDLE);
    }
    if config.get_application_name().is_none() {
        let name = match shard {
            Some(s) => format!("wizard-server shard {s}"),
            None => "wizard-server".to_string(),
        };
        config.application_name(&name);
    }
    let mut client = config
        .connect(NoTls)
        .map_err(pg("cannot connect to", &shown))?;
    client
        .batch_execute("SET synchronous_commit = on")
        .map_err(pg("cannot set up", &shown))?;
    Ok(client)
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
        let records = load(&mut client, &shard_name, &shown)?;
        let mut liveness = Liveness::<RowCount>::default();
        for (seq, record) in &records {
            liveness.add(*seq, record.row_key());
        }
        let last_seq = records.last().map_or(0, |(seq, _)| *seq);
        // A row past the last one read cannot exist (this process holds the lock), but
        // numbering after the table's maximum costs one query and rules it out.
        let max_seq: i64 = client
            .query_one(
                "SELECT COALESCE(MAX(seq), 0) FROM wizard_records WHERE shard = $1",
                &[&shard_name],
            )
            .map_err(pg("cannot read", &shown))?
            .get(0);
        let last_seq = last_seq.max(max_seq as u64);
        let records: Vec<Record> = records.into_iter().map(|(_, r)| r).collect();
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
        let writer_shared = Arc::clone(&shared);
        let mut writer = Writer {
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
        let writer = std::thread::Builder::new()
            .name("wizard-store".into())
            .spawn(move || writer.run(&writer_shared))
            .map_err(|e| StoreError(format!("store writer thread: {e}")))?;
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
        let (url, shown) = (self.url.clone(), self.shown.clone());
        let mut client: Option<Client> = None;
        Some(Reader::with(move |query| {
            if client
                .as_mut()
                .is_none_or(|c| c.is_valid(OWNER_CHECK_TIMEOUT).is_err())
            {
                client = connect(&url, None)
                    .inspect_err(
                        |e| warn!(store = %shown, error = %e, "History reader cannot connect"),
                    )
                    .ok();
            }
            let c = client.as_mut()?;
            answer_pg(c, query)
                .inspect_err(|e| warn!(store = %shown, error = %detail(e), "History read failed"))
                .ok()
                .flatten()
        }))
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

fn create_schema(client: &mut Client) -> Result<(), postgres::Error> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&schema_lock_key()])?;
    tx.batch_execute(SCHEMA)?;
    tx.batch_execute(directory::SCHEMA)?;
    tx.commit()
}

/// Takes shard `shard`'s lock on `client`'s session, trying every
/// [`LOCK_RETRY_INTERVAL`] while another process holds it.
fn wait_for_lock(
    client: &mut Client,
    shard: Option<ShardId>,
    shown: &str,
) -> Result<(), StoreError> {
    let key = lock_key(shard);
    let shard_name = shard.map(|s| s.to_string()).unwrap_or_default();
    let started = Instant::now();
    let mut said: Option<Instant> = None;
    loop {
        let got: bool = client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
            .map_err(pg("cannot lock the shard in", shown))?
            .get(0);
        if got {
            if said.is_some() {
                info!(
                    store = %shown,
                    shard = %shard_name,
                    waited_ms = started.elapsed().as_millis() as u64,
                    "Took over the shard"
                );
            }
            return Ok(());
        }
        if said.is_none_or(|at| at.elapsed() >= WAIT_LOG_INTERVAL) {
            warn!(
                store = %shown,
                shard = %shard_name,
                waited_s = started.elapsed().as_secs(),
                retry_ms = LOCK_RETRY_INTERVAL.as_millis() as u64,
                "Waiting for the store's lock: standing by, another server owns this shard"
            );
            said = Some(Instant::now());
        }
        std::thread::sleep(LOCK_RETRY_INTERVAL);
    }
}

/// This shard's records with their sequence numbers, oldest first: streamed (rows
/// arrive while earlier ones are decoded on the other cores) as `COPY ... TO STDOUT` in
/// PostgreSQL's binary format, which hands over the bytes as they come: a `Row` a
/// record (`query_raw`) cost about three times as much CPU as SQLite's read
/// (docs/BENCHMARKS.md, "From PostgreSQL").
fn load(client: &mut Client, shard: &str, shown: &str) -> Result<Vec<(u64, Record)>, StoreError> {
    let failed = pg("cannot read", shown);
    // COPY takes no parameters: the shard goes in as a literal (one character of the
    // shard alphabet or nothing; quoted and its quotes doubled all the same).
    let query = format!(
        "COPY (SELECT seq, body FROM wizard_records WHERE shard = '{}' AND kind <> 'game' ORDER BY seq) \
         TO STDOUT (FORMAT binary)",
        shard.replace('\'', "''")
    );
    let mut reader = client.copy_out(query.as_str()).map_err(&failed)?;
    let bad = |e: CopyError| StoreError(format!("cannot read {shown}: {e}"));
    copy::read_header(&mut reader).map_err(bad)?;
    let mut body = Vec::new();
    decode_in_batches(shown, |batch| {
        let Some(seq) = copy::read_row(&mut reader, &mut body).map_err(bad)? else {
            return Ok(false);
        };
        let text = std::str::from_utf8(&body)
            .map_err(|e| StoreError(format!("cannot read {shown}: record {seq}: {e}")))?;
        batch.push(seq, text);
        Ok(true)
    })
}

/// The writer thread's own state: the connection that holds the shard's lock.
struct Writer {
    client: Client,
    insert: Statement,
    /// Where to connect again after a lost connection.
    url: String,
    shard_id: Option<ShardId>,
    shard: String,
    shown: String,
    /// Live and dead rows of this shard, counted as they are inserted.
    liveness: Liveness<RowCount>,
    compact_rows_min: u64,
    /// How long finished games are kept, and when the next purge is due.
    history: HistoryOptions,
    next_purge: Instant,
}

impl Writer {
    /// Commits whatever is queued, as soon as something is; checks the connection
    /// when idle; compacts when it pays. A commit that fails is tried again
    /// ([`Writer::recover`]): on the same connection while it is sound and still holds
    /// the shard's lock (a statement timeout, a lock held by someone else), else on a
    /// new one that takes the lock again. The store fails for good only when another
    /// process owns the shard by then, or it could not commit for [`RETRY_WAIT_MAX`].
    fn run(&mut self, shared: &Shared) {
        loop {
            let (mut rows, asked, stop) = self.take(shared);
            shared.handoff.taken();
            let result = if rows.is_empty() {
                if stop {
                    Ok(())
                } else {
                    self.client
                        .is_valid(OWNER_CHECK_TIMEOUT)
                        .map_err(|e| format!("lost {}: {e}", self.shown))
                }
            } else {
                self.insert(&rows)
                    .map_err(|e| format!("cannot commit to {}: {}", self.shown, detail(&e)))
            };
            let result = match result {
                Ok(()) => Ok(()),
                Err(e) => self.recover(shared, e, &mut rows),
            };
            let result = result.and_then(|()| {
                if let Some(last) = rows.last() {
                    shared.durable_seq.store(last.seq, Ordering::Release);
                    let _ = shared.core_wake.try_send(());
                    for row in &rows {
                        self.liveness.add(row.seq, row.key);
                    }
                }
                self.compact_if_it_pays()
                    .map_err(|e| format!("cannot compact {}: {e}", self.shown))
            });
            if result.is_ok() && !stop {
                self.purge_if_due();
            }
            let failed = result.is_err();
            if let Err(e) = &result {
                error!(store = %self.shown, error = %e, "Store failed: this process no longer owns its shard");
            }
            shared.handoff.turn_done(asked, result);
            if failed {
                // The core task stops acknowledging: it learns it from `failed`.
                let _ = shared.core_wake.try_send(());
            }
            if stop || failed {
                return;
            }
        }
    }

    /// After `first` failed (a commit of `rows`, or the idle check): tries again with a
    /// backoff until `rows` are committed (then `Ok`), for [`RETRY_WAIT_MAX`] at most.
    /// A sound connection that still holds the shard's lock commits again as it is; a
    /// lost one is made anew and takes the lock again, never waiting for it: if another
    /// process took the shard meanwhile, this one has lost it for good (fencing). The
    /// rows a commit whose answer was lost did write are found by their numbers and
    /// not written twice.
    fn recover(
        &mut self,
        shared: &Shared,
        first: String,
        rows: &mut Vec<Row>,
    ) -> Result<(), String> {
        let started = Instant::now();
        let mut backoff = RETRY_FIRST;
        let mut why = first;
        warn!(store = %self.shown, error = %why, "Store commit failed: holding every frame it covers, retrying");
        shared.set_retrying(Some(why.clone()));
        let _ = shared.core_wake.try_send(());
        loop {
            if started.elapsed() >= RETRY_WAIT_MAX {
                shared.set_retrying(None);
                return Err(format!(
                    "no commit for {} s: {why}",
                    RETRY_WAIT_MAX.as_secs()
                ));
            }
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(RETRY_MAX);
            match self.still_owner() {
                Ok(true) => {}
                Ok(false) => {
                    shared.set_retrying(None);
                    return Err(format!("another process owns the shard now ({why})"));
                }
                Err(e) => {
                    why = e;
                    continue;
                }
            }
            // The rows a lost answer's commit did write: they are this process's.
            let committed = match self.max_seq() {
                Ok(m) => m,
                Err(e) => {
                    why = format!("cannot read {}: {}", self.shown, detail(&e));
                    continue;
                }
            };
            rows.retain(|r| r.seq > committed);
            let done = if rows.is_empty() {
                Ok(())
            } else {
                self.insert(rows)
                    .map_err(|e| format!("cannot commit to {}: {}", self.shown, detail(&e)))
            };
            match done {
                Ok(()) => {
                    shared.set_retrying(None);
                    warn!(
                        store = %self.shown,
                        waited_ms = started.elapsed().as_millis() as u64,
                        "Store commits resumed: acknowledging again"
                    );
                    // Rows written by the lost answer's commit are durable too.
                    if committed > shared.durable_seq.load(Ordering::Acquire) && rows.is_empty() {
                        shared.durable_seq.store(committed, Ordering::Release);
                        let _ = shared.core_wake.try_send(());
                    }
                    return Ok(());
                }
                Err(e) => why = e,
            }
        }
    }

    /// Whether this process still owns its shard: its connection is sound and holds
    /// the shard's lock, or a new connection took the lock at once. `Ok(false)`:
    /// another process holds it. `Err`: the database cannot be reached now.
    fn still_owner(&mut self) -> Result<bool, String> {
        let key = lock_key(self.shard_id);
        // The writer's session holds no advisory lock but its shard's (the schema's
        // is taken for a transaction only).
        let holds = |client: &mut Client| -> Result<bool, postgres::Error> {
            client
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' \
                     AND granted AND pid = pg_backend_pid())",
                    &[],
                )
                .map(|r| r.get(0))
        };
        if self.client.is_valid(OWNER_CHECK_TIMEOUT).is_ok() {
            return holds(&mut self.client)
                .map_err(|e| format!("cannot check the lock: {}", detail(&e)));
        }
        let mut client = connect(&self.url, self.shard_id).map_err(|e| e.0)?;
        let got: bool = client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
            .map_err(|e| format!("cannot lock the shard in {}: {e}", self.shown))?
            .get(0);
        if !got {
            return Ok(false);
        }
        self.insert = client
            .prepare(INSERT)
            .map_err(|e| format!("cannot set up {}: {e}", self.shown))?;
        self.client = client;
        warn!(store = %self.shown, shard = %self.shard, "Connected again; this process still owns the shard");
        Ok(true)
    }

    /// The highest sequence number of this shard in the table.
    fn max_seq(&mut self) -> Result<u64, postgres::Error> {
        let max: i64 = self
            .client
            .query_one(
                "SELECT COALESCE(MAX(seq), 0) FROM wizard_records WHERE shard = $1",
                &[&self.shard],
            )?
            .get(0);
        Ok(max as u64)
    }

    /// Waits for records, a flush, the stop or the idle check's time, then takes the
    /// queued rows. Returns them, the flushes they answer and whether to stop.
    fn take(&self, shared: &Shared) -> (Vec<Row>, u64, bool) {
        let until = Instant::now() + OWNER_CHECK_INTERVAL;
        let mut front = shared.handoff.wait_turn(until, |q| !q.rows.is_empty());
        let queue = std::mem::take(&mut front.queue);
        (queue.rows, front.flushes_asked(), front.stopping())
    }

    /// One transaction holding `rows`: one statement when they fit in one.
    fn insert(&mut self, rows: &[Row]) -> Result<(), postgres::Error> {
        let profiles = rows.iter().any(|r| r.profile.is_some());
        if rows.len() <= INSERT_ROWS_MAX && !profiles {
            return insert_rows(&mut self.client, &self.insert, &self.shard, rows);
        }
        let mut tx = self.client.transaction()?;
        for chunk in rows.chunks(INSERT_ROWS_MAX) {
            insert_rows(&mut tx, &self.insert, &self.shard, chunk)?;
        }
        // The shared profile tables change with the records that change them.
        directory::apply(&mut tx, rows.iter().filter_map(|r| r.profile.as_ref()))?;
        tx.commit()
    }

    /// Deletes this shard's games finished more than `HISTORY_DAYS` ago once
    /// `HISTORY_PURGE_INTERVAL` has passed, at most `HISTORY_PURGE_ROWS` per statement
    /// (the SQLite store's rule, [`super::history`]); a failure is logged and tried
    /// again at the next interval.
    fn purge_if_due(&mut self) {
        let now = Instant::now();
        if now < self.next_purge {
            return;
        }
        self.next_purge = now + self.history.purge_interval;
        let cutoff = self.history.cutoff_ms(history::wall_ms()) as i64;
        let rows_max = i64::from(self.history.purge_rows_max);
        let mut deleted = 0u64;
        for _ in 0..history::PURGE_PASSES_MAX {
            let pass = self.client.execute(
                "DELETE FROM wizard_records WHERE shard = $1 AND seq IN (
                     SELECT seq FROM wizard_records
                     WHERE shard = $1 AND kind = 'game' AND game_no < $2
                     ORDER BY game_no LIMIT $3)",
                &[&self.shard, &cutoff, &rows_max],
            );
            match pass {
                Ok(n) => {
                    deleted += n;
                    if n < rows_max as u64 {
                        break;
                    }
                }
                Err(e) => {
                    warn!(store = %self.shown, error = %detail(&e), "History purge failed; tried again later");
                    break;
                }
            }
        }
        if deleted > 0 {
            info!(store = %self.shown, shard = %self.shard, deleted, "History purged: games older than HISTORY_DAYS deleted");
        }
    }

    /// Deletes this shard's dead rows once they outnumber the live ones and
    /// `compact_rows_min`, with the same fold as a restore (the SQLite store's rule).
    fn compact_if_it_pays(&mut self) -> Result<(), postgres::Error> {
        let dead = self.liveness.dead().count();
        if dead <= self.liveness.live().max(self.compact_rows_min) {
            return Ok(());
        }
        let started = Instant::now();
        let mut found = Liveness::<Vec<u64>>::default();
        let params: [&(dyn ToSql + Sync); 1] = [&self.shard];
        let mut rows = self.client.query_raw(
            "SELECT seq, kind, lobby, session, game_no FROM wizard_records
             WHERE shard = $1 ORDER BY seq",
            params,
        )?;
        while let Some(row) = rows.next()? {
            let kind: &str = row.try_get(1)?;
            // A row this build does not know is kept.
            if let Some(key) = row_key_of(kind, row.try_get(2)?, row.try_get(3)?, row.try_get(4)?) {
                found.add(row.try_get::<_, i64>(0)? as u64, key);
            }
        }
        drop(rows);
        let doomed: Vec<i64> = found.take_dead().into_iter().map(|s| s as i64).collect();
        self.client.execute(
            "DELETE FROM wizard_records WHERE shard = $1 AND seq = ANY($2)",
            &[&self.shard, &doomed],
        )?;
        self.liveness.take_dead();
        info!(
            store = %self.shown,
            shard = %self.shard,
            deleted = doomed.len(),
            live = found.live(),
            compact_ms = started.elapsed().as_millis() as u64,
            "Store compacted"
        );
        Ok(())
    }
}

/// A history read, of every shard's games (a game may be asked of any shard): a game's
/// body by its id (the whole id compared), or a profile's recent games (its lines,
/// newest first).
fn answer_pg(client: &mut Client, query: &Query) -> Result<Option<String>, postgres::Error> {
    match query {
        Query::Game(id) => {
            let row_id = history::row_id_of(id);
            let rows = client.query(
                "SELECT body FROM wizard_records WHERE kind = 'game' AND session = $1",
                &[&row_id],
            )?;
            Ok(rows
                .iter()
                .filter_map(|r| r.try_get::<_, &str>(0).ok())
                .find(|body| history::game_id_of(body).as_deref() == Some(id.as_str()))
                .and_then(history::replay))
        }
        Query::Recent(profile) => {
            let needle = format!(
                "%\"profile_id\":\"{}\"%",
                profile.replace(['%', '_', '\\'], "")
            );
            let rows = client.query(
                "SELECT body FROM wizard_records WHERE kind = 'game' AND body LIKE $1
                 ORDER BY game_no DESC LIMIT $2",
                &[&needle, &(history::RECENT_GAMES_MAX as i64)],
            )?;
            let lines: Vec<String> = rows
                .iter()
                .filter_map(|r| r.try_get::<_, &str>(0).ok())
                .filter_map(|body| history::seat_line(body, profile))
                .collect();
            Ok(Some(format!("[{}]", lines.join(","))))
        }
    }
}

/// A PostgreSQL error with the server's own message, where it sent one (the error's
/// `Display` says only "db error").
fn detail(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{e}: {} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

/// One `INSERT` of `rows` as arrays (`unnest`), over `client`.
fn insert_rows(
    client: &mut impl postgres::GenericClient,
    statement: &Statement,
    shard: &str,
    rows: &[Row],
) -> Result<(), postgres::Error> {
    let mut seqs = Vec::with_capacity(rows.len());
    let mut lobbies = Vec::with_capacity(rows.len());
    let mut sessions = Vec::with_capacity(rows.len());
    let mut kinds = Vec::with_capacity(rows.len());
    let mut game_nos = Vec::with_capacity(rows.len());
    let mut bodies = Vec::with_capacity(rows.len());
    for row in rows {
        let (lobby, session, kind, game_no) = key_columns(row.key);
        seqs.push(row.seq as i64);
        lobbies.push(lobby);
        sessions.push(session);
        kinds.push(kind);
        game_nos.push(game_no);
        bodies.push(row.body.as_str());
    }
    client.execute(
        statement,
        &[
            &shard, &seqs, &lobbies, &sessions, &kinds, &game_nos, &bodies,
        ],
    )?;
    Ok(())
}
