//! The PostgreSQL store's writer thread: the group commit of everything queued over
//! the connection that holds the shard's lock, a failed commit tried again (fencing:
//! the lock taken again at once, or the store failed for good), the idle ownership
//! check, compaction and the history purge ([`super`] says why and how).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Instant;

use postgres::fallible_iterator::FallibleIterator as _;
use postgres::types::ToSql;
use postgres::{Client, Statement};
use tracing::{error, info, warn};
use wizard_core::machine::records::liveness::{Liveness, RowCount, Rows as _};
use wizard_core::vocabulary::shard::ShardId;

use super::super::StoreError;
use super::super::directory;
use super::super::history::{self, HistoryOptions};
use super::super::rows::{key_columns, row_key_of};
use super::connection::{connect, detail, lock_key};
use super::restore::max_seq;
use super::{
    INSERT_ROWS_MAX, OWNER_CHECK_INTERVAL, OWNER_CHECK_TIMEOUT, RETRY_FIRST, RETRY_MAX,
    RETRY_WAIT_MAX, Row, Shared,
};

/// The statement a commit inserts rows with: one row an element of each array.
pub(super) const INSERT: &str = "INSERT INTO wizard_records (shard, seq, lobby, session, kind, game_no, body)
    SELECT $1, * FROM unnest($2::int8[], $3::int8[], $4::int8[], $5::text[], $6::int8[], $7::text[])";

/// The writer thread's own state: the connection that holds the shard's lock.
pub(super) struct Writer {
    pub(super) client: Client,
    pub(super) insert: Statement,
    /// Where to connect again after a lost connection.
    pub(super) url: String,
    pub(super) shard_id: Option<ShardId>,
    pub(super) shard: String,
    pub(super) shown: String,
    /// Live and dead rows of this shard, counted as they are inserted.
    pub(super) liveness: Liveness<RowCount>,
    pub(super) compact_rows_min: u64,
    /// How long finished games are kept, and when the next purge is due.
    pub(super) history: HistoryOptions,
    pub(super) next_purge: Instant,
}

/// Starts the writer thread on `writer`, with what it shares with the core task.
pub(super) fn spawn(
    mut writer: Writer,
    shared: &Arc<Shared>,
) -> Result<JoinHandle<()>, StoreError> {
    let writer_shared = Arc::clone(shared);
    std::thread::Builder::new()
        .name("wizard-store".into())
        .spawn(move || writer.run(&writer_shared))
        .map_err(|e| StoreError(format!("store writer thread: {e}")))
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
            let committed = match max_seq(&mut self.client, &self.shard) {
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
