//! The PostgreSQL store's sessions: the connection with its timeouts, keepalives and
//! `synchronous_commit = on`, the advisory locks (a shard's, the schema's), the tables
//! made under the schema's lock, and a standby's wait for its shard's lock.

use std::time::{Duration, Instant};

use postgres::{Client, NoTls};
use tracing::{info, warn};
use wizard_core::vocabulary::config::redact_password;
use wizard_core::vocabulary::shard::ShardId;

use super::super::StoreError;
use super::super::directory;
use super::{LOCK_RETRY_INTERVAL, WAIT_LOG_INTERVAL};

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

/// The store's failure, for the log and the exit: the URL without its password.
pub(super) fn pg(what: &str, shown: &str) -> impl Fn(postgres::Error) -> StoreError {
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

/// Creates the store's tables and the shared profile tables, under the schema's lock.
pub(super) fn create_schema(client: &mut Client) -> Result<(), postgres::Error> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&schema_lock_key()])?;
    tx.batch_execute(SCHEMA)?;
    tx.batch_execute(directory::SCHEMA)?;
    tx.commit()
}

/// Takes shard `shard`'s lock on `client`'s session, trying every
/// [`LOCK_RETRY_INTERVAL`] while another process holds it.
pub(super) fn wait_for_lock(
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

/// A PostgreSQL error with the server's own message, where it sent one (the error's
/// `Display` says only "db error").
pub(super) fn detail(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{e}: {} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}
