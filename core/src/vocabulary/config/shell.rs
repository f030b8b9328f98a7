//! The settings only the shells read ([`ShellConfig`]): the listening socket, what the
//! shell applies to each socket (timeouts, buffers, keepalive, outbound queues), the
//! store, logging and the embedded AI workers. The core's own logic never reads them;
//! they are parsed with the rest in [`super::Config::from_pairs`], so both shells read
//! them alike.

use std::net::SocketAddr;
use std::str::FromStr;

use crate::vocabulary::time::US_PER_SEC;

use super::{ConfigError, format_secs, order_error};

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

impl FromStr for LogFormat {
    type Err = ();
    fn from_str(s: &str) -> Result<LogFormat, ()> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(()),
        }
    }
}

/// Where the server keeps its games (`STORE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreSpec {
    /// In memory only: a restart ends every game.
    Memory,
    /// A SQLite file at this path (relative to the working directory).
    Sqlite(String),
    /// A PostgreSQL database, by its URL as written (`postgres://` or
    /// `postgresql://USER[:PASS]@HOST:PORT/DB`); the shell checks the rest when it
    /// connects.
    Postgres(String),
}

impl StoreSpec {
    pub fn is_durable(&self) -> bool {
        !matches!(self, StoreSpec::Memory)
    }
}

impl FromStr for StoreSpec {
    type Err = ();
    fn from_str(text: &str) -> Result<StoreSpec, ()> {
        match text.split_once(':') {
            None if text == "memory" => Ok(StoreSpec::Memory),
            Some(("postgres" | "postgresql", rest)) if rest.starts_with("//") && rest.len() > 2 => {
                Ok(StoreSpec::Postgres(text.trim().to_string()))
            }
            Some(("sqlite", path)) if !path.trim().is_empty() => {
                Ok(StoreSpec::Sqlite(path.trim().to_string()))
            }
            _ => Err(()),
        }
    }
}

impl std::fmt::Display for StoreSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreSpec::Memory => f.write_str("memory"),
            StoreSpec::Sqlite(path) => write!(f, "sqlite:{path}"),
            // Without the password, if the URL has one: this is what logs print.
            StoreSpec::Postgres(url) => f.write_str(&redact_password(url)),
        }
    }
}

/// `url` with the password of its user part (`user:PASS@`) replaced by `***`.
pub fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user, host)) if user.contains(':') => {
            let name = user.split(':').next().unwrap_or_default();
            format!("{scheme}://{name}:***@{host}{path}")
        }
        _ => url.to_string(),
    }
}

/// The server's settings that only a shell reads (`config.shell`).
#[derive(Clone, Debug, PartialEq)]
pub struct ShellConfig {
    pub bind: SocketAddr,
    /// How long a starting server waits for `bind` while another process holds it (0:
    /// it says so and exits at once).
    pub bind_wait_us: u64,
    pub embedded_ai: bool,
    pub keepalive_interval_us: u64,
    pub keepalive_timeout_us: u64,
    pub log_level: String,
    pub log_format: LogFormat,
    pub handshake_timeout_us: u64,
    pub write_timeout_us: u64,
    pub outbound_queue_messages_max: usize,
    pub outbound_queue_bytes_max: usize,
    /// Chat lines queued for one connection before the oldest give way.
    pub outbound_queue_chat_messages_max: usize,
    pub first_byte_timeout_us: u64,
    pub socket_send_buffer_bytes: usize,
    pub socket_recv_buffer_bytes: usize,
    /// The listening socket's accept queue (`listen`'s backlog).
    pub listen_backlog_max: u32,
    /// Executor threads (0: one per whole core of the CPU quota, at most the CPUs the
    /// process may use). One by default: with two, a move cost about a fifth more CPU
    /// (docs/BENCHMARKS.md, "Fewer wake-ups per move").
    pub executor_threads: usize,
    pub store: StoreSpec,
    /// How often the store syncs its committed records to disk.
    pub store_sync_interval_us: u64,
    /// Whether a new store may be made where something says one was, or in an
    /// existing file that holds no tables (`STORE_INIT`): off, a file without the
    /// store's identity stops start-up instead of starting empty.
    pub store_init: bool,
    /// How long one SQLite statement of the store's writer waits for a lock another
    /// process holds on the file before the fold fails and is tried again.
    pub store_busy_timeout_us: u64,
    /// How often the store deletes finished games older than `HISTORY_DAYS`.
    pub history_purge_interval_us: u64,
    /// Games deleted at most per pass.
    pub history_purge_rows_max: u32,
    /// `GET /games/<id>` requests per client address per minute.
    pub games_rate_per_min: f64,
}

impl Default for ShellConfig {
    fn default() -> ShellConfig {
        ShellConfig {
            bind: SocketAddr::from(([0, 0, 0, 0], 8000)),
            bind_wait_us: 0,
            embedded_ai: true,
            keepalive_interval_us: 20 * US_PER_SEC,
            keepalive_timeout_us: 60 * US_PER_SEC,
            log_level: "info".to_owned(),
            log_format: LogFormat::Text,
            handshake_timeout_us: 10 * US_PER_SEC,
            write_timeout_us: 10 * US_PER_SEC,
            outbound_queue_messages_max: 256,
            outbound_queue_bytes_max: 1_048_576,
            outbound_queue_chat_messages_max: 64,
            first_byte_timeout_us: 2 * US_PER_SEC,
            socket_send_buffer_bytes: 65_536,
            socket_recv_buffer_bytes: 65_536,
            listen_backlog_max: 1024,
            executor_threads: 1,
            store: StoreSpec::Sqlite("wizard-data/wizard.db".to_string()),
            store_sync_interval_us: US_PER_SEC,
            store_init: false,
            store_busy_timeout_us: 10 * US_PER_SEC,
            history_purge_interval_us: 60 * US_PER_SEC,
            history_purge_rows_max: 1000,
            games_rate_per_min: 60.0,
        }
    }
}

impl ShellConfig {
    /// Checks between the shell's variables: a ping is due before the connection times
    /// out, and a first byte before the whole head.
    pub(super) fn check(&self) -> Result<(), ConfigError> {
        if self.keepalive_interval_us >= self.keepalive_timeout_us {
            return Err(ConfigError {
                variable: "KEEPALIVE_INTERVAL",
                value: format_secs(self.keepalive_interval_us),
                reason: format!(
                    "must be less than KEEPALIVE_TIMEOUT ({})",
                    format_secs(self.keepalive_timeout_us)
                ),
            });
        }
        if self.first_byte_timeout_us > self.handshake_timeout_us {
            return Err(order_error(
                "FIRST_BYTE_TIMEOUT",
                format_secs(self.first_byte_timeout_us),
                "HANDSHAKE_TIMEOUT",
                format_secs(self.handshake_timeout_us),
            ));
        }
        Ok(())
    }
}
