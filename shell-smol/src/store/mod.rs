//! The durable stores: where the core's records are committed before a pass's frames
//! go out, and where a restart reads them back.
//!
//! - [`sqlite`] (`STORE=sqlite:PATH`, the default): a journal the core task appends
//!   to ([`journal`]), folded into SQLite by a writer thread ([`fold`]); the file's
//!   identity, locks and home ([`file`]); the restore that folds in a crash's
//!   journal (`restore`).
//! - [`postgres`] (`STORE=postgres://...`, shards; the `postgres` cargo feature): a
//!   writer thread's group commit on the connection that holds the shard's lock.
//! - Both: the hand-off between the core task and a writer thread (`handoff`), the
//!   rows' key columns and the batched decoding of a restore ([`rows`]), and
//!   [`Backend`], the one store the core task commits to. Finished games, kept apart
//!   for `HISTORY_DAYS` and read off the core task: [`history`]. The store's series in
//!   `/metrics`: [`metrics`].

#[cfg(feature = "postgres")]
pub mod directory;
pub mod file;
pub mod fold;
pub(crate) mod handoff;
pub mod history;
pub mod journal;
pub mod metrics;
#[cfg(feature = "postgres")]
mod pg_copy;
#[cfg(feature = "postgres")]
pub mod pool;
#[cfg(feature = "postgres")]
pub mod postgres;
mod restore;
pub mod rows;
pub mod sqlite;

use std::time::Instant;

use wizard_core::machine::records::Record;

#[cfg(feature = "postgres")]
pub use directory::{Directory, Pending};

/// Without PostgreSQL there is no store shared by shards: nothing to look up.
#[cfg(not(feature = "postgres"))]
#[derive(Debug)]
pub struct Directory;

#[cfg(not(feature = "postgres"))]
impl Directory {
    pub fn lookup(&self, _: &wizard_core::vocabulary::wire::ClientMessage) -> Option<Pending> {
        None
    }
}

/// Without PostgreSQL no lookup is ever on its way.
#[cfg(not(feature = "postgres"))]
#[derive(Debug)]
pub struct Pending;

#[cfg(not(feature = "postgres"))]
impl Pending {
    pub async fn news(self) -> Option<wizard_core::vocabulary::profile::SharedProfiles> {
        None
    }
}

pub use sqlite::{
    FaultPoint, Faults, GENERATION_RESERVED_BYTES, GENERATION_ROTATE_BYTES, PENDING_FOLD_BYTES,
    RETRY_FIRST, RETRY_MAX, SqliteOptions, Store, StoreCounters, StoreHealth,
};

/// Dead rows below which a store's writer does not compact (a pass over the table is
/// paid for by at least this many).
pub const COMPACT_ROWS_MIN: u64 = 100_000;
/// Bytes of records not yet written into the database (waiting for the writer, or
/// taken by a write that failed) beyond which a commit waits for the writer.
pub const PENDING_BYTES_MAX: usize = 64 * 1024 * 1024;

/// A store that cannot be used (the operator's or the disk's fault).
#[derive(Debug)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

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
    Postgres(postgres::PgStore),
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
