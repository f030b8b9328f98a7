//! The SQLite store's writer thread: every `STORE_SYNC_INTERVAL` (sooner when asked) it
//! takes what the core task wrote to the journal, inserts it into SQLite in one
//! transaction, syncs, deletes the journal generations all of whose rows are in the
//! file, and compacts when it pays; a fold that fails keeps its rows and every
//! generation and is tried again ([`super::sqlite`] says why and how).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};
use tracing::{debug, error, info, warn};
use wizard_core::machine::records::liveness::{Liveness, RowCount, RowKey, RowKind, Rows as _};

use super::history::{self, HistoryOptions};
use super::journal;
use super::rows::{key_columns, row_key_of};
use super::sqlite::{
    FaultPoint, Faults, GENERATION_RESERVED_BYTES, GENERATION_RESERVED_BYTES_MAX,
    GENERATION_ROTATE_BYTES, PENDING_FOLD_BYTES, Pending, RETRY_FIRST, RETRY_MAX,
    STOP_FOLD_TRIES_MAX, Shared, StoreCounters, injected, injected_error,
};

/// The writer thread's own state: the SQLite connection and what it knows of the rows.
#[derive(Debug)]
pub(super) struct Writer {
    pub(super) conn: Connection,
    pub(super) path: PathBuf,
    /// Live and dead rows in the table, counted as they are inserted.
    pub(super) liveness: Liveness<RowCount>,
    pub(super) compact_rows_min: u64,
    /// The pending buffers the core task fills while this thread folds the others.
    pub(super) incoming: Pending,
    /// The rows taken and not folded yet, oldest first: one turn's, or more while folds
    /// fail.
    pub(super) backlog: Pending,
    pub(super) faults: Option<Faults>,
    pub(super) counters: Arc<StoreCounters>,
    /// Wakes the core task after a turn a waiting commit asked for.
    pub(super) wake_core: async_channel::Sender<()>,
    /// How long finished games are kept, and when the next purge is due.
    pub(super) history: HistoryOptions,
    pub(super) next_purge: Instant,
}

impl Writer {
    /// Folds what the core task wrote every `interval` (or sooner when asked), syncs,
    /// deletes the journal generations whose rows are all in SQLite, and compacts when
    /// it pays; a failed fold keeps its rows and the generations and is tried again
    /// with a backoff. Once more (a few times at most) when stopped.
    pub(super) fn run(&mut self, shared: &Shared, interval: Duration, first_generation: u64) {
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
            let result = self.turn(folded_through, &mut oldest, &mut unsynced);
            if result.is_ok() && !stop {
                self.purge_if_due();
            }
            let backlog_bytes = self.backlog.frames.len();
            let wake_core = self.report(shared, &result, backlog_bytes);
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
                if self.may_stop(&result, stop_tries, backlog_bytes) {
                    break;
                }
                std::thread::sleep(backoff);
            }
        }
    }

    /// One turn's work on the rows taken through generation `folded_through`: the fold
    /// and its sync, then the deletion of the generations from `oldest` on that are
    /// all in SQLite now, then the compaction when it pays.
    fn turn(
        &mut self,
        folded_through: u64,
        oldest: &mut u64,
        unsynced: &mut bool,
    ) -> Result<(), String> {
        let started = Instant::now();
        let folded = self
            .fold(folded_through, unsynced)
            .map_err(|e| format!("cannot fold into {}: {e}", self.path.display()))?;
        if folded {
            self.counters.folded(started.elapsed());
        }
        // Every row taken so far is committed and synced in SQLite, so every row of
        // these generations is.
        while *oldest <= folded_through {
            self.delete_generation(*oldest);
            *oldest += 1;
        }
        self.compact_if_it_pays()
            .map_err(|e| format!("cannot compact {}: {e}", self.path.display()))
    }

    /// Publishes a turn's outcome: the counters, and in the queue the bytes still to
    /// fold and since when folds fail (saying so in the log when that starts and
    /// ends). Returns whether a commit waits for this turn (the core task to wake).
    fn report(&self, shared: &Shared, result: &Result<(), String>, backlog_bytes: usize) -> bool {
        self.counters
            .unfolded_bytes
            .store(backlog_bytes as u64, Ordering::Relaxed);
        self.counters
            .fold_failing
            .store(result.is_err(), Ordering::Relaxed);
        let mut front = shared.lock();
        let queue = &mut front.queue;
        queue.backlog_bytes = backlog_bytes;
        match result {
            Ok(()) => {
                if let Some((since, _)) = queue.fold_failing.take() {
                    warn!(
                        store = %self.path.display(),
                        failing_ms = since.elapsed().as_millis() as u64,
                        "Store folds resumed"
                    );
                }
            }
            Err(e) if queue.fold_failing.is_none() => {
                error!(
                    store = %self.path.display(),
                    error = %e,
                    unfolded_bytes = backlog_bytes,
                    "Store fold failed: its rows stay in the journal, retrying"
                );
                queue.fold_failing = Some((Instant::now(), e.clone()));
            }
            Err(e) => {
                debug!(store = %self.path.display(), error = %e, "Store fold failed again");
            }
        }
        std::mem::take(&mut queue.core_waiting)
    }

    /// Whether a stopping writer may stop after its `stop_tries`th turn: its last fold
    /// succeeded, or it tried `STOP_FOLD_TRIES_MAX` times (leaving `backlog_bytes` to
    /// the journal, and saying so).
    fn may_stop(&self, result: &Result<(), String>, stop_tries: u32, backlog_bytes: usize) -> bool {
        if result.is_ok() {
            return true;
        }
        if stop_tries < STOP_FOLD_TRIES_MAX {
            return false;
        }
        warn!(
            store = %self.path.display(),
            unfolded_bytes = backlog_bytes,
            "Store writer stopping with rows not folded: they stay in the journal for the next start"
        );
        true
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

    /// Deletes the games older than `HISTORY_DAYS` once `HISTORY_PURGE_INTERVAL` has
    /// passed since the last purge, in bounded passes ([`history::purge_sqlite`]); a
    /// failure is logged and tried again at the next interval.
    fn purge_if_due(&mut self) {
        let now = Instant::now();
        if now < self.next_purge {
            return;
        }
        self.next_purge = now + self.history.purge_interval;
        match history::purge_sqlite(&mut self.conn, &self.history, history::wall_ms()) {
            Ok(deleted) => {
                self.counters
                    .history_purged
                    .fetch_add(deleted, Ordering::Relaxed);
            }
            Err(e) => {
                warn!(store = %self.path.display(), error = %e, "History purge failed; tried again later");
            }
        }
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
pub(super) fn checkpoint(conn: &Connection) -> rusqlite::Result<()> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(0))
        .map(drop)
}

/// One transaction: every row (sequence number, key, body) appended in order (a fold
/// writes only the table's last pages; dead rows go in [`Writer::compact_if_it_pays`]),
/// and the journal position it reaches (`folded_seq`, and `journal_from`, the first
/// generation not folded).
pub(super) fn insert<'a>(
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
            let body = std::str::from_utf8(body).map_err(rusqlite::Error::Utf8Error)?;
            last_seq = Some(seq);
            if key.kind == RowKind::Game {
                // History has its own tables, which a restore does not read.
                history::insert_sqlite(&tx, body)?;
                continue;
            }
            let (lobby, session, kind, game_no) = key_columns(key);
            statement.execute(params![seq as i64, lobby, session, kind, game_no, body])?;
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
