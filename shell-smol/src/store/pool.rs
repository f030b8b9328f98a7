//! The shards' shared quick-play pool in PostgreSQL (PROTOCOL.md 7.2, shards): every
//! shard's tickets in one table, groups formed by one shard at a time with the core's
//! own rule ([`form_groups`]), off the core thread.
//!
//! - **One thread, one connection** per shard ([`SharedPool::start`]), apart from the
//!   store's writer: the pool never delays a commit. It wakes every `QUICK_PLAY_INTERVAL`,
//!   at once (at most every [`CYCLE_GAP_MIN`]) when the core hands it a change, and when
//!   the tickets it wrote have waited `QUICK_PLAY_SETTLE` (they may be grouped then); while
//!   its shard has tickets waiting it also looks every [`MATCHED_POLL`] for those that
//!   another shard seated, so that a player is told `matched` without waiting for the
//!   next interval.
//! - **A cycle** writes the core's ticket changes ([`PoolChange`]), renews this shard's
//!   lease ([`lease_us`]), hands the core the tickets of this shard that another shard
//!   seated (`matched`), then, holding the transaction-level advisory lock
//!   [`form_lock_key`] (one shard at a time): deletes the tickets of shards whose lease
//!   ran out, puts back in the pool the tickets of groups whose forming shard's lease
//!   ran out before it seated them, reads the oldest `QUICK_PLAY_MAX` free tickets and
//!   forms groups from them. A group with a ticket of this shard is claimed here: its
//!   tickets of this shard leave the table, those of other shards are marked with the
//!   group, and the core seats it ([`PoolEvent::Formed`]); its answer, the lobby's code
//!   ([`PoolChange::Seated`]), is written on those tickets for their shards to read, or
//!   ([`PoolChange::Refused`]) the group's tickets go back to the pool. A group with no
//!   ticket of this shard is left to a shard that has one.
//! - **Nothing lost with a shard.** A shard killed while a group forms leaves its
//!   claim behind: once its lease has run out (three intervals, at least one second)
//!   the next cycle of any shard frees the other shards' tickets of that group, which
//!   wait on with their places in time. Its own tickets leave with its lease: their
//!   players lost their connection with it and queue again.
//! - **Bounded.** Each shard holds at most `QUICK_PLAY_MAX` tickets (the core's bound),
//!   so the table at most that many per shard; a cycle reads at most `QUICK_PLAY_MAX`
//!   tickets and waits for the advisory lock at most [`STATEMENT_TIMEOUT`]; the changes
//!   waiting for the thread are at most [`CHANGES_MAX`] (beyond, the oldest ticket
//!   changes are dropped and counted, and the players concerned are seated by the
//!   wait's AI rule or their shard's next change).
//! - **Time** is PostgreSQL's clock (`clock_timestamp()`), so that shards' waits compare.
//! - Tickets are not kept across a restart: a process that takes a shard deletes that
//!   shard's tickets first, and their players queue again.

use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use postgres::{Client, Transaction};
use tracing::{info, warn};
use wizard_core::machine::matchmaker::{Group, MatchConfig, Ticket, form_groups};
use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::ids::SessionId;
use wizard_core::vocabulary::io::Input;
use wizard_core::vocabulary::pool::{PoolChange, PoolEvent};
use wizard_core::vocabulary::shard::ShardId;
use wizard_core::vocabulary::time::{Time, US_PER_SEC};

use super::postgres::{connect, lock_key};
use crate::core_task::CoreMsg;

/// Changes waiting for the pool's thread, at most.
pub const CHANGES_MAX: usize = 65_536;
/// Between two cycles woken by changes, at least.
pub const CYCLE_GAP_MIN: Duration = Duration::from_millis(20);
/// Any statement of the pool (the advisory lock's wait among them), at most.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);
/// While this shard has tickets waiting, how often the thread looks for those another
/// shard seated (one indexed `DELETE ... RETURNING`), between full cycles.
pub const MATCHED_POLL: Duration = Duration::from_millis(50);

/// Settling instants kept at most; past it, a ticket's cycle comes with the interval's.
pub const SETTLES_MAX: usize = 1024;
/// After a failed cycle, before trying again.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS wizard_quick_shards (
    shard text PRIMARY KEY,
    lease_until_us bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS wizard_quick_groups (
    id bigserial PRIMARY KEY,
    shard text NOT NULL
);
CREATE TABLE IF NOT EXISTS wizard_quick_tickets (
    shard text NOT NULL,
    session bigint NOT NULL,
    seats smallint NOT NULL,
    rating_milli bigint NOT NULL,
    since_us bigint NOT NULL,
    group_id bigint,
    code text,
    host text,
    PRIMARY KEY (shard, session)
);
CREATE INDEX IF NOT EXISTS wizard_quick_tickets_free
    ON wizard_quick_tickets (since_us) WHERE group_id IS NULL;
CREATE INDEX IF NOT EXISTS wizard_quick_tickets_group
    ON wizard_quick_tickets (group_id) WHERE group_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS wizard_quick_tickets_matched
    ON wizard_quick_tickets (shard) WHERE code IS NOT NULL;";

/// PostgreSQL's clock in microseconds since the epoch.
const NOW_US: &str = "(extract(epoch from clock_timestamp()) * 1000000)::bigint";

/// The advisory lock a shard holds (for one transaction) while it forms groups.
pub fn form_lock_key() -> i64 {
    lock_key(None) ^ 0x5150
}

/// How long a shard's tickets and claims outlive its last cycle: three intervals, at
/// least one second.
pub fn lease_us(config: &Config) -> u64 {
    config
        .quick_play_interval_us
        .saturating_mul(3)
        .max(US_PER_SEC)
}

#[derive(Default)]
struct Queue {
    changes: Vec<PoolChange>,
    dropped: u64,
    stop: bool,
}

/// The core task's handle on the pool's thread.
pub struct SharedPool {
    queue: Arc<(Mutex<Queue>, Condvar)>,
    thread: Option<JoinHandle<()>>,
    /// Groups this shard formed.
    pub groups_formed: Arc<AtomicU64>,
}

impl std::fmt::Debug for SharedPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedPool").finish_non_exhaustive()
    }
}

fn lock_queue(queue: &Mutex<Queue>) -> std::sync::MutexGuard<'_, Queue> {
    queue
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl SharedPool {
    /// Starts the pool's thread for shard `shard` on `url`; what it decides goes to the
    /// core task's `inbox`.
    pub fn start(
        url: &str,
        shard: ShardId,
        config: &Config,
        inbox: async_channel::Sender<CoreMsg>,
    ) -> std::io::Result<SharedPool> {
        let queue = Arc::new((Mutex::new(Queue::default()), Condvar::new()));
        let groups_formed = Arc::new(AtomicU64::new(0));
        let mut worker = Worker {
            url: url.to_owned(),
            shard,
            name: shard.to_string(),
            config: MatchConfig {
                wait_us: config.quick_play_wait_us,
                interval_us: config.quick_play_interval_us,
                tickets_max: config.quick_play_tickets_max(),
                settle_us: config.quick_play_settle_us,
            },
            lease_us: lease_us(config),
            queue: Arc::clone(&queue),
            inbox,
            client: None,
            pending: Vec::new(),
            fresh: true,
            waiting: BTreeSet::new(),
            settles: VecDeque::new(),
            groups_formed: Arc::clone(&groups_formed),
        };
        let thread = std::thread::Builder::new()
            .name("wizard-quick-pool".to_owned())
            .spawn(move || worker.run())?;
        Ok(SharedPool {
            queue,
            thread: Some(thread),
            groups_formed,
        })
    }

    /// Hands the core's ticket changes to the thread (waking it).
    pub fn push(&self, changes: Vec<PoolChange>) {
        if changes.is_empty() {
            return;
        }
        let (queue, wake) = &*self.queue;
        let mut q = lock_queue(queue);
        q.changes.extend(changes);
        if q.changes.len() > CHANGES_MAX {
            let over = q.changes.len() - CHANGES_MAX;
            q.changes.drain(..over);
            q.dropped += over as u64;
        }
        wake.notify_one();
    }
}

impl Drop for SharedPool {
    fn drop(&mut self) {
        let (queue, wake) = &*self.queue;
        lock_queue(queue).stop = true;
        wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Worker {
    url: String,
    shard: ShardId,
    name: String,
    config: MatchConfig,
    lease_us: u64,
    queue: Arc<(Mutex<Queue>, Condvar)>,
    inbox: async_channel::Sender<CoreMsg>,
    client: Option<Client>,
    /// Changes taken from the queue and not yet written (kept across a failed cycle).
    pending: Vec<PoolChange>,
    /// This process has not yet cleared its shard's tickets of an earlier process.
    fresh: bool,
    /// This shard's sessions with a ticket in the table (at most `QUICK_PLAY_MAX`).
    waiting: BTreeSet<u64>,
    /// When the tickets of each cycle that wrote some settle, oldest first (at most
    /// [`SETTLES_MAX`]): a cycle is due then.
    settles: VecDeque<Instant>,
    groups_formed: Arc<AtomicU64>,
}

/// A ticket of the shared pool: its shard's id byte and its session.
type Key = (u8, u64);

impl Worker {
    fn run(&mut self) {
        let interval = Duration::from_micros(self.config.interval_us.max(1000));
        let mut last = Instant::now() - interval;
        let mut last_look = Instant::now();
        loop {
            {
                let shared = Arc::clone(&self.queue);
                let (queue, wake) = &*shared;
                let mut q = lock_queue(queue);
                loop {
                    if q.stop {
                        return;
                    }
                    let since = last.elapsed();
                    let woken = !q.changes.is_empty() && since >= CYCLE_GAP_MIN;
                    let settle = self
                        .settles
                        .front()
                        .map(|t| t.saturating_duration_since(Instant::now()));
                    if woken || since >= interval || settle.is_some_and(|d| d.is_zero()) {
                        break;
                    }
                    if !self.waiting.is_empty() && last_look.elapsed() >= MATCHED_POLL {
                        drop(q);
                        last_look = Instant::now();
                        if let Err(e) = self.look_for_matched() {
                            warn!(error = %e, "Quick-play pool: a cycle failed; trying again");
                            self.client = None;
                        }
                        q = lock_queue(queue);
                        continue;
                    }
                    let mut wait = if q.changes.is_empty() {
                        interval - since
                    } else {
                        CYCLE_GAP_MIN.saturating_sub(since)
                    };
                    if !self.waiting.is_empty() {
                        wait = wait.min(MATCHED_POLL.saturating_sub(last_look.elapsed()));
                    }
                    if let Some(settle) = settle {
                        wait = wait.min(settle);
                    }
                    q = wake
                        .wait_timeout(q, wait.max(Duration::from_millis(1)))
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                self.pending.append(&mut q.changes);
                if q.dropped > 0 {
                    warn!(
                        dropped = q.dropped,
                        "Quick-play pool: ticket changes dropped (the pool's thread is behind)"
                    );
                    q.dropped = 0;
                }
            }
            last = Instant::now();
            while self.settles.front().is_some_and(|t| *t <= last) {
                self.settles.pop_front();
            }
            if let Err(e) = self.cycle() {
                warn!(error = %e, "Quick-play pool: a cycle failed; trying again");
                self.client = None;
                std::thread::sleep(RETRY_AFTER);
            }
            if self.inbox.is_closed() {
                return;
            }
        }
    }

    fn client(&mut self) -> Result<&mut Client, String> {
        if self.client.is_none() {
            let mut client = connect(&self.url, Some(self.shard)).map_err(|e| e.0)?;
            let timeout_ms = STATEMENT_TIMEOUT.as_millis();
            client
                .batch_execute(&format!("SET statement_timeout = {timeout_ms}"))
                .map_err(|e| e.to_string())?;
            let mut tx = client.transaction().map_err(|e| e.to_string())?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&form_lock_key()])
                .map_err(|e| e.to_string())?;
            tx.batch_execute(SCHEMA).map_err(|e| e.to_string())?;
            tx.commit().map_err(|e| e.to_string())?;
            self.client = Some(client);
        }
        self.client
            .as_mut()
            .ok_or_else(|| "no connection".to_owned())
    }

    /// One cycle: see the module documentation.
    fn cycle(&mut self) -> Result<(), String> {
        let me = self.name.clone();
        let lease_us = i64::try_from(self.lease_us).unwrap_or(i64::MAX);
        let fresh = self.fresh;
        let changes = std::mem::take(&mut self.pending);
        let written = self.write(&me, lease_us, fresh, &changes);
        if let Err(e) = written {
            // Kept, in order, ahead of whatever came meanwhile.
            self.pending = changes;
            return Err(e);
        }
        self.fresh = false;
        if changes.iter().any(|c| matches!(c, PoolChange::Put { .. }))
            && self.settles.len() < SETTLES_MAX
        {
            // The tickets' `since` is the database's clock at the write just done.
            let settle = Duration::from_micros(self.config.settle_us) + CYCLE_GAP_MIN;
            self.settles.push_back(Instant::now() + settle);
        }
        for change in &changes {
            match change {
                PoolChange::Put { session, .. } => {
                    self.waiting.insert(session.0);
                }
                PoolChange::Drop { session } => {
                    self.waiting.remove(&session.0);
                }
                PoolChange::Seated { .. } | PoolChange::Refused { .. } => {}
            }
        }
        self.look_for_matched()?;
        let formed = self.form(&me)?;
        for event in formed {
            if let PoolEvent::Formed { local, .. } = &event {
                for s in local {
                    self.waiting.remove(&s.0);
                }
            }
            self.groups_formed.fetch_add(1, Ordering::Relaxed);
            self.tell_core(event);
        }
        Ok(())
    }

    /// Hands the core this shard's tickets that another shard seated.
    fn look_for_matched(&mut self) -> Result<(), String> {
        let me = self.name.clone();
        for event in self.take_matched(&me)? {
            if let PoolEvent::Matched { session, .. } = &event {
                self.waiting.remove(&session.0);
            }
            self.tell_core(event);
        }
        Ok(())
    }

    fn tell_core(&self, event: PoolEvent) {
        let _ = self.inbox.send_blocking(CoreMsg::Input(Input::Pool(event)));
    }

    /// The core's changes and this shard's lease, in one transaction.
    fn write(
        &mut self,
        me: &str,
        lease_us: i64,
        fresh: bool,
        changes: &[PoolChange],
    ) -> Result<(), String> {
        let client = self.client()?;
        let mut tx = client.transaction().map_err(|e| e.to_string())?;
        let e = |e: postgres::Error| e.to_string();
        if fresh {
            clear_earlier_tickets(&mut tx, me).map_err(e)?;
        }
        tx.execute(
            &format!(
                "INSERT INTO wizard_quick_shards (shard, lease_until_us) VALUES ($1, {NOW_US} + $2)
                 ON CONFLICT (shard) DO UPDATE SET lease_until_us = EXCLUDED.lease_until_us"
            ),
            &[&me, &lease_us],
        )
        .map_err(e)?;
        for change in changes {
            write_change(&mut tx, me, change).map_err(e)?;
        }
        tx.commit().map_err(e)
    }

    /// This shard's tickets that another shard seated: out of the table, to the core.
    fn take_matched(&mut self, me: &str) -> Result<Vec<PoolEvent>, String> {
        let client = self.client()?;
        let rows = client
            .query(
                "DELETE FROM wizard_quick_tickets WHERE shard = $1 AND code IS NOT NULL
                 RETURNING session, code, host",
                &[&me],
            )
            .map_err(|e| e.to_string())?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                let session: i64 = row.get(0);
                let code: String = row.get(1);
                let host: String = row.get(2);
                Some(PoolEvent::Matched {
                    session: SessionId(session as u64),
                    code,
                    shard: host.parse().ok()?,
                })
            })
            .collect())
    }

    /// Under the pool's lock: expiry, then the groups with a ticket of this shard.
    fn form(&mut self, me: &str) -> Result<Vec<PoolEvent>, String> {
        let config = self.config;
        let my_byte = self.shard.as_char() as u8;
        let limit = i64::try_from(config.tickets_max).unwrap_or(i64::MAX);
        let client = self.client()?;
        let e = |e: postgres::Error| e.to_string();
        let mut tx = client.transaction().map_err(e)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&form_lock_key()])
            .map_err(e)?;
        let now_us: i64 = tx
            .query_one(&format!("SELECT {NOW_US}"), &[])
            .map_err(e)?
            .get(0);
        expire(&mut tx, now_us).map_err(e)?;
        let tickets = free_tickets(&mut tx, limit).map_err(e)?;
        let now = Time(u64::try_from(now_us).unwrap_or(0));
        let mut events = Vec::new();
        for group in form_groups(config, now, tickets) {
            if !group.players.iter().any(|t| t.key.0 == my_byte) {
                continue;
            }
            events.push(claim_group(&mut tx, me, my_byte, &group).map_err(e)?);
        }
        tx.commit().map_err(e)?;
        Ok(events)
    }
}

/// Deletes the tickets an earlier process of shard `me` left (its players queue
/// again), saying how many.
fn clear_earlier_tickets(tx: &mut Transaction<'_>, me: &str) -> Result<(), postgres::Error> {
    let gone = tx.execute("DELETE FROM wizard_quick_tickets WHERE shard = $1", &[&me])?;
    if gone > 0 {
        info!(
            tickets = gone,
            "Quick-play pool: an earlier process's tickets of this shard deleted"
        );
    }
    Ok(())
}

/// Writes one of the core's ticket changes of shard `me`: a ticket put or dropped, or
/// a group it formed seated (its code for the other shards' tickets) or refused (its
/// tickets back in the pool).
fn write_change(
    tx: &mut Transaction<'_>,
    me: &str,
    change: &PoolChange,
) -> Result<(), postgres::Error> {
    match change {
        PoolChange::Put {
            session,
            seats,
            rating_milli,
        } => {
            let (session, seats) = (session.0 as i64, i16::from(*seats));
            tx.execute(
                &format!(
                    "INSERT INTO wizard_quick_tickets (shard, session, seats, rating_milli, since_us)
                     VALUES ($1, $2, $3, $4, {NOW_US})
                     ON CONFLICT (shard, session) DO UPDATE SET seats = EXCLUDED.seats,
                         rating_milli = EXCLUDED.rating_milli, group_id = NULL, code = NULL, host = NULL"
                ),
                &[&me, &session, &seats, rating_milli],
            )?;
        }
        PoolChange::Drop { session } => {
            tx.execute(
                "DELETE FROM wizard_quick_tickets WHERE shard = $1 AND session = $2",
                &[&me, &(session.0 as i64)],
            )?;
        }
        PoolChange::Seated { group, code } => {
            let group = *group as i64;
            tx.execute(
                "UPDATE wizard_quick_tickets SET code = $2, host = $3 WHERE group_id = $1",
                &[&group, code, &me],
            )?;
            tx.execute("DELETE FROM wizard_quick_groups WHERE id = $1", &[&group])?;
        }
        PoolChange::Refused { group } => {
            let group = *group as i64;
            tx.execute(
                "UPDATE wizard_quick_tickets SET group_id = NULL WHERE group_id = $1 AND code IS NULL",
                &[&group],
            )?;
            tx.execute("DELETE FROM wizard_quick_groups WHERE id = $1", &[&group])?;
        }
    }
    Ok(())
}

/// Deletes the tickets of shards whose lease ran out by `now_us`, and puts back in the
/// pool the other shards' tickets of groups whose forming shard's lease ran out.
fn expire(tx: &mut Transaction<'_>, now_us: i64) -> Result<(), postgres::Error> {
    let live = "SELECT shard FROM wizard_quick_shards WHERE lease_until_us > $1";
    tx.execute(
        &format!("DELETE FROM wizard_quick_tickets WHERE shard NOT IN ({live})"),
        &[&now_us],
    )?;
    let orphans = format!("SELECT id FROM wizard_quick_groups WHERE shard NOT IN ({live})");
    tx.execute(
        &format!(
            "UPDATE wizard_quick_tickets SET group_id = NULL
             WHERE code IS NULL AND group_id IN ({orphans})"
        ),
        &[&now_us],
    )?;
    tx.execute(
        &format!("DELETE FROM wizard_quick_groups WHERE id IN ({orphans})"),
        &[&now_us],
    )?;
    Ok(())
}

/// The oldest free tickets of every shard, at most `limit` (rows that do not fit a
/// ticket are passed over).
fn free_tickets(tx: &mut Transaction<'_>, limit: i64) -> Result<Vec<Ticket<Key>>, postgres::Error> {
    let rows = tx.query(
        "SELECT shard, session, seats, rating_milli, since_us FROM wizard_quick_tickets
         WHERE group_id IS NULL ORDER BY since_us LIMIT $1",
        &[&limit],
    )?;
    Ok(rows
        .iter()
        .filter_map(|row| {
            let shard: String = row.get(0);
            let session: i64 = row.get(1);
            let seats: i16 = row.get(2);
            Some(Ticket::<Key> {
                key: (*shard.as_bytes().first()?, session as u64),
                seats: u8::try_from(seats).ok()?,
                rating_milli: row.get(3),
                since: Time(u64::try_from(row.get::<_, i64>(4)).ok()?),
            })
        })
        .collect())
}

/// Claims `group` for shard `me` (id byte `my_byte`): a group row, this shard's
/// tickets out of the table, the other shards' marked with the group; the event that
/// has the core seat it.
fn claim_group(
    tx: &mut Transaction<'_>,
    me: &str,
    my_byte: u8,
    group: &Group<Key>,
) -> Result<PoolEvent, postgres::Error> {
    let id: i64 = tx
        .query_one(
            "INSERT INTO wizard_quick_groups (shard) VALUES ($1) RETURNING id",
            &[&me],
        )?
        .get(0);
    let mut local = Vec::new();
    let mut remote = 0u8;
    for t in &group.players {
        let shard = char::from(t.key.0).to_string();
        let session = t.key.1 as i64;
        if t.key.0 == my_byte {
            local.push(SessionId(t.key.1));
            tx.execute(
                "DELETE FROM wizard_quick_tickets WHERE shard = $1 AND session = $2",
                &[&shard, &session],
            )?;
        } else {
            remote += 1;
            tx.execute(
                "UPDATE wizard_quick_tickets SET group_id = $3 WHERE shard = $1 AND session = $2",
                &[&shard, &session, &id],
            )?;
        }
    }
    Ok(PoolEvent::Formed {
        group: id as u64,
        seats: group.seats,
        local,
        remote,
    })
}
