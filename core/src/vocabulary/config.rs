//! Server and AI service settings (PROTOCOL.md section 5), parsed from (name, value) pairs.
//!
//! The shells read the environment and hand every pair to [`Config::from_pairs`] or
//! [`AiServiceConfig::from_pairs`]; this module never reads it itself. Unknown names are
//! ignored, an empty value means "use the default", surrounding whitespace is ignored,
//! and anything else that does not parse or is out of range is a [`ConfigError`] naming
//! the variable. Durations are given in seconds (fractions allowed) and stored as `_us`.
//! [`SETTINGS`] lists every variable with its default, for docs and deployment checks.
//!
//! Submodules: `ai_service` ([`AiServiceConfig`] and [`AiAgent`]), `shell`
//! ([`ShellConfig`], the settings only the shells read, at `config.shell`), `raw` (one
//! value's parsers: counts, durations, rates, shares, lists), `cidr` ([`IpCidr`]).

mod ai_service;
mod cidr;
mod raw;
mod shell;

use std::fmt;

use crate::vocabulary::load::LoadLevel;
use crate::vocabulary::shard::ShardId;
use crate::vocabulary::time::US_PER_SEC;

use raw::Raw;

pub use ai_service::{AiAgent, AiServiceConfig};
pub use cidr::{IpCidr, IpCidrError};
pub use shell::{LogFormat, ShellConfig, StoreSpec, redact_password};

/// Which program reads a setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Component {
    Server,
    AiService,
}

/// One environment variable: its name, its default as it would be written, who reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    pub name: &'static str,
    /// The default, written as a value of the variable ("" = empty).
    pub default: &'static str,
    pub component: Component,
    pub meaning: &'static str,
}

const fn server(name: &'static str, default: &'static str, meaning: &'static str) -> Setting {
    Setting {
        name,
        default,
        component: Component::Server,
        meaning,
    }
}

const fn ai(name: &'static str, default: &'static str, meaning: &'static str) -> Setting {
    Setting {
        name,
        default,
        component: Component::AiService,
        meaning,
    }
}

/// Every variable [`Config`] and [`AiServiceConfig`] read, with its default.
///
/// `AI_SHARED_SECRET` appears once per component because both programs need it.
#[rustfmt::skip]
pub const SETTINGS: &[Setting] = &[
    server("BIND", "0.0.0.0:8000", "address and port the server listens on"),
    server("BIND_WAIT", "0", "seconds a starting server waits for BIND while another process holds it (0 = exit 1 at once)"),
    server("ALLOWED_ORIGINS", "", "comma-separated origins allowed to open /ws (empty = all)"),
    server("TRUSTED_PROXIES", "", "comma-separated IPs or CIDRs whose X-Forwarded-For is believed"),
    server("AI_SHARED_SECRET", "", "secret the AI service must present (empty = no auth, dev only)"),
    server("EMBEDDED_AI", "1", "1/true: run AI workers inside the server; 0/false: external AI service"),
    server("SESSION_TTL", "1800", "seconds a disconnected session is kept for reconnecting"),
    server("MAX_LOBBIES", "1000", "lobbies that may exist at once"),
    server("MAX_CONNECTIONS", "500", "open player connections in total"),
    server("MAX_CONNECTIONS_PER_IP", "10", "open player connections per client IP"),
    server("MESSAGE_RATE", "10", "messages per second a connection may send on average"),
    server("MESSAGE_BURST", "30", "messages a connection may send in a burst (at least 1)"),
    server("MAX_RATE_VIOLATIONS", "50", "dropped messages after which a connection is closed with 1008"),
    server("LOBBY_CREATE_RATE", "10", "lobbies one client IP may create per minute"),
    server("PROFILE_CREATE_RATE", "5", "profiles one client IP may create per hour"),
    server("PROFILES_MAX", "100000", "profiles kept at once; past it create_profile is refused with busy"),
    server("MAX_ACTIVE_GAMES", "50", "running games; beyond this new games are refused"),
    server("AI_MOVE_DELAY", "0.8", "seconds an AI player waits before its move is shown"),
    server("TRICK_PAUSE", "1.8", "seconds a completed trick stays on the table"),
    server("AI_DECISION_TIMEOUT", "5", "seconds the server waits for an AI decision"),
    server("AI_MAX_INFLIGHT", "64", "AI requests waiting at once before moves are played without asking"),
    server("AI_BREAKER_FAILURES", "5", "real AI failures in a row that open the circuit breaker"),
    server("AI_BREAKER_COOLDOWN", "30", "seconds the AI is not asked after the breaker opens"),
    server("LOAD_SAMPLE_INTERVAL", "1", "seconds between load samples"),
    server("LOAD_LAG_BUSY", "0.1", "loop lag in seconds that makes a sample busy"),
    server("LOAD_LAG_OVERLOAD", "0.25", "loop lag in seconds that makes a sample overloaded"),
    server("LOAD_LAG_SEVERE", "1", "loop lag in seconds that makes one sample enough to overload"),
    server("LOAD_CPU_BUSY", "0.7", "share of the CPU quota (0..1) that makes a sample busy"),
    server("LOAD_CPU_OVERLOAD", "0.9", "share of the CPU quota (0..1) that makes a sample overloaded"),
    server("LOAD_THROTTLE_OVERLOAD", "0.5", "share of throttled periods (0..1) that makes a sample overloaded"),
    server("LOAD_OVERLOAD_SAMPLES", "3", "overloaded samples in a row that enter the overloaded level"),
    server("LOAD_RECOVER_SAMPLES", "10", "calmer samples in a row that leave busy or overloaded"),
    server("LOAD_FORCE_LEVEL", "", "pin the load level to normal, busy or overloaded (empty = measure)"),
    server("KEEPALIVE_INTERVAL", "20", "seconds a peer may be silent before it is pinged, and between unanswered pings"),
    server("KEEPALIVE_TIMEOUT", "60", "seconds without a sign of life (a whole message, a ping or a pong; not a fragment) after which a connection is closed"),
    server("SHUTDOWN_GRACE", "10", "seconds running games may go on after SIGTERM before closing with 1001"),
    server("LOG_LEVEL", "info", "log filter, e.g. info or debug"),
    server("LOG_FORMAT", "text", "log line format: text or json"),
    server("HANDSHAKE_TIMEOUT", "10", "seconds a new connection has to finish the HTTP/WebSocket handshake"),
    server("WRITE_TIMEOUT", "10", "seconds a send may stay blocked before the reader is disconnected"),
    server("MAX_MESSAGE_BYTES", "65536", "largest incoming message in bytes; larger closes with 1009"),
    server("OUTBOUND_QUEUE_MESSAGES", "256", "messages queued for one connection before it is disconnected"),
    server("OUTBOUND_QUEUE_BYTES", "1048576", "bytes queued for one connection before it is disconnected"),
    server("OUTBOUND_QUEUE_CHAT_MESSAGES", "64", "chat lines queued for one connection; beyond, and before the queue would overflow, the oldest are dropped and counted in a chat_gap note"),
    server("IP_TABLE_MAX", "10000", "entries in each per-address rate table (lobby creation, reconnects, failed joins and spectates, spectates, chat, chat history replays, new sockets); past it the bucket soonest full is forgotten"),
    server("MAX_SESSIONS", "5000", "sessions kept in the session registry"),
    // The door.
    server("MAX_SOCKETS_PER_IP", "", "TCP sockets one client address may hold, upgraded or not (empty = 2 x MAX_CONNECTIONS_PER_IP, at least MAX_CONNECTIONS_PER_IP + 16)"),
    server("FIRST_BYTE_TIMEOUT", "2", "seconds a new connection has to send its first byte (at most HANDSHAKE_TIMEOUT)"),
    server("SOCKET_SEND_BUFFER_BYTES", "65536", "kernel send buffer asked for each accepted socket (SO_SNDBUF)"),
    server("SOCKET_RECV_BUFFER_BYTES", "65536", "kernel receive buffer asked for each accepted socket (SO_RCVBUF)"),
    server("LISTEN_BACKLOG", "1024", "connections the kernel queues for accept (capped by net.core.somaxconn)"),
    server("EXECUTOR_THREADS", "1", "threads that run the server's tasks (0 = one per whole core of the CPU quota, at most the CPUs the process may use)"),
    // Durable games (PROTOCOL.md 6.1).
    server("STORE", "sqlite:wizard-data/wizard.db", "where games are kept: memory, sqlite:PATH (created with its folder), or postgres://USER[:PASS]@HOST:PORT/DB (also postgresql://; shared by a shard's standby)"),
    server("STORE_BUSY_TIMEOUT", "10", "seconds the SQLite store's writer waits for a lock another process holds on the file (a backup tool, an operator's sqlite3) before that fold fails; it is tried again, and players go on meanwhile"),
    server("STORE_INIT", "0", "1: make a new, empty SQLite store even where an empty or table-less file, a journal or a lock says a store was (recovery after a lost file; remove it again after the start)"),
    server("HISTORY_DAYS", "90", "days a finished game is kept for /games/<id> and the profiles' recent games (0 = keep nothing); needs a durable STORE"),
    server("HISTORY_PURGE_INTERVAL", "60", "seconds between the store's deletions of games older than HISTORY_DAYS"),
    server("HISTORY_PURGE_ROWS", "1000", "games the store deletes at most per deletion pass (each in its own short transaction)"),
    server("GAMES_RATE", "60", "GET /games/<id> requests one client IP may make per minute"),
    server("STORE_SYNC_INTERVAL", "1", "seconds between the store writer's turns: folding the journal into SQLite and syncing it to disk (about what a power loss can take)"),
    server("LOBBY_IDLE_TTL", "300", "seconds a lobby not running a game is kept once all its humans are disconnected"),
    server("ABANDONED_GAME_TTL", "90", "seconds after which a running game with no human connected goes dormant (a table the quick-play matchmaker seated: at once)"),
    server("MAX_LOBBIES_PER_IP", "10", "lobbies (waiting, running or finished) created from one client IP that may exist at once"),
    server("MAX_GAMES_PER_IP", "5", "running games in lobbies created from one client IP"),
    server("RECONNECT_RATE", "30", "new player connections one client IP may open per minute"),
    server("RECONNECT_BURST", "20", "new player connections one client IP may open in a burst"),
    server("JOIN_FAIL_RATE", "10", "join_lobby and spectate attempts with an unknown code one client IP may make per minute"),
    server("JOIN_FAIL_BURST", "10", "join_lobby and spectate attempts with an unknown code one client IP may make in a burst"),
    server("SOCKET_RATE", "20", "new TCP sockets one client IP may open per second (beyond: closed at once)"),
    server("SOCKET_BURST", "40", "new TCP sockets one client IP may open in a burst"),
    // Spectators and table chat (PROTOCOL.md 6.4).
    server("MAX_SPECTATORS", "20", "spectators one lobby may have at once"),
    server("CHAT_RATE", "20", "chat lines one session may send per minute (a burst of as many)"),
    server("CHAT_IP_RATE", "30", "chat lines one client IP may send per minute, whatever its sessions"),
    server("CHAT_IP_BURST", "20", "chat lines one client IP may send in a burst"),
    server("CHAT_LOBBY_RATE", "60", "spectators' chat lines one lobby may carry per minute, all its spectators together (seats not counted)"),
    server("CHAT_LOBBY_BURST", "30", "spectators' chat lines one lobby may carry in a burst"),
    server("CHAT_HISTORY_BYTES", "16384", "bytes of a lobby's kept chat lines replayed to whoever joins or watches (the newest lines that fit)"),
    server("CHAT_REPLAY_RATE", "30", "chat history replays one client IP may receive per minute; beyond, only a chat_gap note"),
    server("CHAT_REPLAY_BURST", "20", "chat history replays one client IP may receive in a burst"),
    server("SPECTATE_RATE", "10", "spectate requests one client IP may make per minute"),
    server("SPECTATE_BURST", "10", "spectate requests one client IP may make in a burst"),
    server("SPECTATORS_STATE_INTERVAL", "0.5", "seconds between two states that show a lobby's members its changed list of spectators; the changes in between come together (0 = at once)"),
    server("REMOVED_PLAYER_TTL", "600", "seconds a player the host removed (and its address) may not join or watch that lobby again"),
    server("REMOVED_PLAYERS_MAX", "20", "removed players one lobby remembers; past it the oldest is forgotten"),
    // Public tables and quick play (PROTOCOL.md 7.2).
    server("QUICK_PLAY_WAIT", "30", "seconds a quick-play ticket waits for players of a close rating before it is seated with whoever waits and normal AI players fill the table"),
    server("QUICK_PLAY_INTERVAL", "1", "seconds between two passes of the matchmaker over the pool (the accepted rating spread widens with the wait; a table of close ratings is seated at once)"),
    server("QUICK_PLAY_SETTLE", "0.25", "seconds a quick-play ticket waits before it is grouped: a player who queues and walks away at once never takes a seat from players who stay (0: grouped at once)"),
    server("QUICK_PLAY_AWAY", "15", "seconds a quick-play table waits for a player who disconnected before the AI plays their turns (their seat stays theirs: back, they play again; a table all of whose players are gone sleeps at once)"),
    server("QUICK_PLAY_JOIN_WAIT", "10", "with shards: seconds a table formed from the shared pool keeps the seats of players matched on other shards; whoever has not joined by then is replaced by a normal AI player and the game starts"),
    server("QUICK_PLAY_MAX", "", "quick-play tickets waiting at once; beyond, quick_play gets busy (empty = MAX_LOBBIES)"),
    server("LIST_TABLES_RATE", "30", "list_tables requests one client IP may make per minute"),
    server("LIST_TABLES_BURST", "10", "list_tables requests one client IP may make in a burst"),
    // Shards (PROTOCOL.md 6.3).
    server("SHARD_ID", "", "this shard's id, one character of ABCDEFGHJKLMNPQRSTUVWXYZ23456789, first in every lobby code and session token it issues (empty = not sharded)"),
    ai("AI_SERVER_URL", "ws://127.0.0.1:8000/internal/ai", "server endpoint the AI service connects to (ws:// only)"),
    ai("AI_SHARED_SECRET", "", "secret presented to the server (must match the server's)"),
    ai("AI_WORKERS", "1", "decisions computed at the same time"),
    ai("AI_MAX_QUEUE", "64", "requests in progress before refusing with overloaded"),
    ai("AI_DEGRADE_QUEUE", "8", "other waiting requests from which the heuristic decides instead"),
    ai("AI_AGENT", "search", "primary agent: search, heuristic or random"),
    ai("LOG_LEVEL", "info", "log filter, e.g. info or debug"),
    ai("LOG_FORMAT", "text", "log line format: text or json"),
];

/// Sockets a browser may open beside its websockets for one page load (up to six
/// parallel fetches per host, more with a few tabs): the least headroom the door's
/// per-address share keeps over `MAX_CONNECTIONS_PER_IP`.
pub const SOCKETS_PER_IP_PAGE_HEADROOM: usize = 16;

/// `MAX_SOCKETS_PER_IP` when unset: twice `MAX_CONNECTIONS_PER_IP`, and at least
/// [`SOCKETS_PER_IP_PAGE_HEADROOM`] more than it.
pub fn default_sockets_per_ip(conns_per_ip_max: usize) -> usize {
    conns_per_ip_max
        .saturating_mul(2)
        .max(conns_per_ip_max.saturating_add(SOCKETS_PER_IP_PAGE_HEADROOM))
}

/// A value that does not parse or is out of range, naming its variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub variable: &'static str,
    pub value: String,
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {:?} {}", self.variable, self.value, self.reason)
    }
}

impl std::error::Error for ConfigError {}

/// Everything the server reads from its environment.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// What only the shells read (the listener, sockets, store, logs).
    pub shell: ShellConfig,
    /// Origins allowed to open `/ws`, without trailing slash; empty = all.
    pub allowed_origins: Vec<String>,
    pub trusted_proxies: Vec<IpCidr>,
    /// Empty = AI connections are not authenticated (dev only).
    pub ai_shared_secret: String,
    pub session_ttl_us: u64,
    pub lobbies_max: usize,
    pub conns_max: usize,
    pub conns_per_ip_max: usize,
    pub message_rate_per_sec: f64,
    pub message_burst: u32,
    pub rate_violations_max: u32,
    pub lobby_create_rate_per_min: f64,
    /// `PROFILE_CREATE_RATE`: profiles one address may create per hour.
    pub profile_create_rate_per_hour: f64,
    /// `PROFILES_MAX`: profiles a server keeps at once.
    pub profiles_max: usize,
    /// `HISTORY_DAYS`: days finished games are kept (0: none is recorded).
    pub history_days: u32,
    pub active_games_max: usize,
    pub ai_move_delay_us: u64,
    pub trick_pause_us: u64,
    pub ai_decision_timeout_us: u64,
    pub ai_inflight_max: usize,
    pub ai_breaker_failures_max: u32,
    pub ai_breaker_cooldown_us: u64,
    pub load_sample_interval_us: u64,
    pub load_lag_busy_us: u64,
    pub load_lag_overload_us: u64,
    pub load_lag_severe_us: u64,
    /// Shares of the CPU quota, 0..=1.
    pub load_cpu_busy_share: f64,
    pub load_cpu_overload_share: f64,
    /// Share of CFS periods throttled, 0..=1.
    pub load_throttle_overload_share: f64,
    pub load_overload_samples: u32,
    pub load_recover_samples: u32,
    pub load_force_level: Option<LoadLevel>,
    pub shutdown_grace_us: u64,
    pub message_bytes_max: usize,
    pub ip_table_entries_max: usize,
    pub sessions_max: usize,
    /// Sockets one address may hold; 2 x `conns_per_ip_max` unless set.
    pub sockets_per_ip_max: usize,
    pub lobby_idle_ttl_us: u64,
    pub abandoned_game_ttl_us: u64,
    pub lobbies_per_ip_max: usize,
    pub games_per_ip_max: usize,
    pub reconnect_rate_per_min: f64,
    pub reconnect_burst: u32,
    pub join_fail_rate_per_min: f64,
    pub join_fail_burst: u32,
    pub socket_rate_per_sec: f64,
    pub socket_burst: u32,
    /// `MAX_SPECTATORS`: spectators per lobby.
    pub spectators_per_lobby_max: usize,
    /// `CHAT_RATE`: chat lines per session per minute, and the burst.
    pub chat_rate_per_min: u32,
    /// `CHAT_IP_RATE`, `CHAT_IP_BURST`: chat lines per client address.
    pub chat_ip_rate_per_min: f64,
    pub chat_ip_burst: u32,
    /// `CHAT_LOBBY_RATE`, `CHAT_LOBBY_BURST`: spectators' chat lines per lobby.
    pub chat_lobby_rate_per_min: f64,
    pub chat_lobby_burst: u32,
    /// `CHAT_HISTORY_BYTES`: the newest kept lines that fit are replayed.
    pub chat_history_bytes_max: usize,
    /// `CHAT_REPLAY_RATE`, `CHAT_REPLAY_BURST`: history replays per client address.
    pub chat_replay_rate_per_min: f64,
    pub chat_replay_burst: u32,
    /// `QUICK_PLAY_WAIT`: after this long a ticket is seated with AI seats.
    pub quick_play_wait_us: u64,
    /// `QUICK_PLAY_INTERVAL`: between two passes of the matchmaker.
    pub quick_play_interval_us: u64,
    /// `QUICK_PLAY_SETTLE`: how long a ticket waits before it is grouped.
    pub quick_play_settle_us: u64,
    /// `QUICK_PLAY_AWAY`: after this long disconnected, a quick-play player's turns are
    /// played for them.
    pub quick_play_away_us: u64,
    /// `QUICK_PLAY_JOIN_WAIT`: how long a table formed from the shards' shared pool
    /// keeps the seats of players matched on other shards.
    pub quick_play_join_wait_us: u64,
    /// `QUICK_PLAY_MAX`: tickets in the pool (None: `MAX_LOBBIES`).
    pub quick_play_max: Option<usize>,
    /// `LIST_TABLES_RATE`, `LIST_TABLES_BURST`: `list_tables` requests per address.
    pub list_tables_rate_per_min: f64,
    pub list_tables_burst: u32,
    /// `SPECTATE_RATE`, `SPECTATE_BURST`: `spectate` requests per client address.
    pub spectate_rate_per_min: f64,
    pub spectate_burst: u32,
    /// `SPECTATORS_STATE_INTERVAL`: members see spectators come and go at most this
    /// often.
    pub spectators_state_interval_us: u64,
    /// `REMOVED_PLAYER_TTL`: how long a removed player may not come back.
    pub removed_player_ttl_us: u64,
    /// `REMOVED_PLAYERS_MAX`: removed players remembered per lobby.
    pub removed_players_max: usize,
    /// `SHARD_ID`: `None` when not sharded.
    pub shard: Option<ShardId>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            shell: ShellConfig::default(),
            allowed_origins: Vec::new(),
            trusted_proxies: Vec::new(),
            ai_shared_secret: String::new(),
            session_ttl_us: 1800 * US_PER_SEC,
            lobbies_max: 1000,
            conns_max: 500,
            conns_per_ip_max: 10,
            message_rate_per_sec: 10.0,
            message_burst: 30,
            rate_violations_max: 50,
            lobby_create_rate_per_min: 10.0,
            profile_create_rate_per_hour: 5.0,
            profiles_max: 100_000,
            history_days: 90,
            active_games_max: 50,
            ai_move_delay_us: 800_000,
            trick_pause_us: 1_800_000,
            ai_decision_timeout_us: 5 * US_PER_SEC,
            ai_inflight_max: 64,
            ai_breaker_failures_max: 5,
            ai_breaker_cooldown_us: 30 * US_PER_SEC,
            load_sample_interval_us: US_PER_SEC,
            load_lag_busy_us: 100_000,
            load_lag_overload_us: 250_000,
            load_lag_severe_us: US_PER_SEC,
            load_cpu_busy_share: 0.7,
            load_cpu_overload_share: 0.9,
            load_throttle_overload_share: 0.5,
            load_overload_samples: 3,
            load_recover_samples: 10,
            load_force_level: None,
            shutdown_grace_us: 10 * US_PER_SEC,
            message_bytes_max: 65_536,
            ip_table_entries_max: 10_000,
            sessions_max: 5_000,
            sockets_per_ip_max: 26,
            lobby_idle_ttl_us: 300 * US_PER_SEC,
            abandoned_game_ttl_us: 90 * US_PER_SEC,
            lobbies_per_ip_max: 10,
            games_per_ip_max: 5,
            reconnect_rate_per_min: 30.0,
            reconnect_burst: 20,
            join_fail_rate_per_min: 10.0,
            join_fail_burst: 10,
            socket_rate_per_sec: 20.0,
            socket_burst: 40,
            spectators_per_lobby_max: 20,
            chat_rate_per_min: 20,
            chat_ip_rate_per_min: 30.0,
            chat_ip_burst: 20,
            chat_lobby_rate_per_min: 60.0,
            chat_lobby_burst: 30,
            chat_history_bytes_max: 16_384,
            chat_replay_rate_per_min: 30.0,
            chat_replay_burst: 20,
            quick_play_wait_us: 30 * US_PER_SEC,
            quick_play_interval_us: US_PER_SEC,
            quick_play_settle_us: 250_000,
            quick_play_away_us: 15 * US_PER_SEC,
            quick_play_join_wait_us: 10 * US_PER_SEC,
            quick_play_max: None,
            list_tables_rate_per_min: 30.0,
            list_tables_burst: 10,
            spectate_rate_per_min: 10.0,
            spectate_burst: 10,
            spectators_state_interval_us: 500_000,
            removed_player_ttl_us: 600 * US_PER_SEC,
            removed_players_max: 20,
            shard: None,
        }
    }
}

impl Config {
    /// `QUICK_PLAY_MAX`, or `MAX_LOBBIES` when unset.
    pub fn quick_play_tickets_max(&self) -> usize {
        self.quick_play_max.unwrap_or(self.lobbies_max)
    }

    /// Reads the server's variables from `pairs` (typically the whole environment).
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Config, ConfigError> {
        let mut c = Config::default();
        let (mut sockets_per_ip_max, mut first_byte_timeout_us) = (None, None);
        for (name, text) in pairs {
            let Some(v) = Raw::find(Component::Server, name, text) else {
                continue;
            };
            match v.name {
                "BIND" => c.shell.bind = v.parsed("is not an address like 0.0.0.0:8000")?,
                "ALLOWED_ORIGINS" => c.allowed_origins = v.origins()?,
                "TRUSTED_PROXIES" => c.trusted_proxies = v.cidrs()?,
                "AI_SHARED_SECRET" => c.ai_shared_secret = v.text.to_owned(),
                "EMBEDDED_AI" => c.shell.embedded_ai = v.flag()?,
                "SESSION_TTL" => c.session_ttl_us = v.duration_us(1)?,
                "MAX_LOBBIES" => c.lobbies_max = v.count(1)?,
                "MAX_CONNECTIONS" => c.conns_max = v.count(1)?,
                "MAX_CONNECTIONS_PER_IP" => c.conns_per_ip_max = v.count(1)?,
                "MESSAGE_RATE" => c.message_rate_per_sec = v.rate()?,
                "MESSAGE_BURST" => c.message_burst = v.count(1)?,
                "MAX_RATE_VIOLATIONS" => c.rate_violations_max = v.count(1)?,
                "LOBBY_CREATE_RATE" => c.lobby_create_rate_per_min = v.rate()?,
                "PROFILE_CREATE_RATE" => c.profile_create_rate_per_hour = v.rate()?,
                "PROFILES_MAX" => c.profiles_max = v.count(1)?,
                "HISTORY_DAYS" => c.history_days = v.count(0)?,
                "HISTORY_PURGE_INTERVAL" => {
                    c.shell.history_purge_interval_us = v.duration_us(1000)?
                }
                "HISTORY_PURGE_ROWS" => c.shell.history_purge_rows_max = v.count(1)?,
                "GAMES_RATE" => c.shell.games_rate_per_min = v.rate()?,
                "MAX_ACTIVE_GAMES" => c.active_games_max = v.count(1)?,
                "AI_MOVE_DELAY" => c.ai_move_delay_us = v.duration_us(0)?,
                "TRICK_PAUSE" => c.trick_pause_us = v.duration_us(0)?,
                "AI_DECISION_TIMEOUT" => c.ai_decision_timeout_us = v.duration_us(1)?,
                "AI_MAX_INFLIGHT" => c.ai_inflight_max = v.count(1)?,
                "AI_BREAKER_FAILURES" => c.ai_breaker_failures_max = v.count(1)?,
                "AI_BREAKER_COOLDOWN" => c.ai_breaker_cooldown_us = v.duration_us(1)?,
                "LOAD_SAMPLE_INTERVAL" => c.load_sample_interval_us = v.duration_us(1)?,
                "LOAD_LAG_BUSY" => c.load_lag_busy_us = v.duration_us(1)?,
                "LOAD_LAG_OVERLOAD" => c.load_lag_overload_us = v.duration_us(1)?,
                "LOAD_LAG_SEVERE" => c.load_lag_severe_us = v.duration_us(1)?,
                "LOAD_CPU_BUSY" => c.load_cpu_busy_share = v.share()?,
                "LOAD_CPU_OVERLOAD" => c.load_cpu_overload_share = v.share()?,
                "LOAD_THROTTLE_OVERLOAD" => c.load_throttle_overload_share = v.share()?,
                "LOAD_OVERLOAD_SAMPLES" => c.load_overload_samples = v.count(1)?,
                "LOAD_RECOVER_SAMPLES" => c.load_recover_samples = v.count(1)?,
                "LOAD_FORCE_LEVEL" => {
                    c.load_force_level = Some(v.parsed("is not normal, busy or overloaded")?)
                }
                "KEEPALIVE_INTERVAL" => c.shell.keepalive_interval_us = v.duration_us(1)?,
                "KEEPALIVE_TIMEOUT" => c.shell.keepalive_timeout_us = v.duration_us(1)?,
                "SHUTDOWN_GRACE" => c.shutdown_grace_us = v.duration_us(0)?,
                "LOG_LEVEL" => c.shell.log_level = v.text.to_owned(),
                "LOG_FORMAT" => c.shell.log_format = v.parsed("is not text or json")?,
                "HANDSHAKE_TIMEOUT" => c.shell.handshake_timeout_us = v.duration_us(1)?,
                "WRITE_TIMEOUT" => c.shell.write_timeout_us = v.duration_us(1)?,
                "MAX_MESSAGE_BYTES" => c.message_bytes_max = v.count(1)?,
                "OUTBOUND_QUEUE_MESSAGES" => c.shell.outbound_queue_messages_max = v.count(1)?,
                "OUTBOUND_QUEUE_BYTES" => c.shell.outbound_queue_bytes_max = v.count(1)?,
                "OUTBOUND_QUEUE_CHAT_MESSAGES" => {
                    c.shell.outbound_queue_chat_messages_max = v.count(1)?
                }
                "IP_TABLE_MAX" => c.ip_table_entries_max = v.count(1)?,
                "MAX_SESSIONS" => c.sessions_max = v.count(1)?,
                "MAX_SOCKETS_PER_IP" => sockets_per_ip_max = Some(v.count(1)?),
                "FIRST_BYTE_TIMEOUT" => first_byte_timeout_us = Some(v.duration_us(1)?),
                "SOCKET_SEND_BUFFER_BYTES" => c.shell.socket_send_buffer_bytes = v.count(4096)?,
                "SOCKET_RECV_BUFFER_BYTES" => c.shell.socket_recv_buffer_bytes = v.count(4096)?,
                "LISTEN_BACKLOG" => c.shell.listen_backlog_max = v.count(1)?,
                "BIND_WAIT" => c.shell.bind_wait_us = v.duration_us(0)?,
                "EXECUTOR_THREADS" => c.shell.executor_threads = v.count(0)?,
                "STORE" => {
                    c.shell.store =
                        v.parsed("is not memory, sqlite:PATH or postgres://USER@HOST:PORT/DB")?
                }
                "STORE_SYNC_INTERVAL" => c.shell.store_sync_interval_us = v.duration_us(1000)?,
                "STORE_INIT" => c.shell.store_init = v.flag()?,
                "STORE_BUSY_TIMEOUT" => c.shell.store_busy_timeout_us = v.duration_us(1000)?,
                "LOBBY_IDLE_TTL" => c.lobby_idle_ttl_us = v.duration_us(1)?,
                "ABANDONED_GAME_TTL" => c.abandoned_game_ttl_us = v.duration_us(1)?,
                "MAX_LOBBIES_PER_IP" => c.lobbies_per_ip_max = v.count(1)?,
                "MAX_GAMES_PER_IP" => c.games_per_ip_max = v.count(1)?,
                "RECONNECT_RATE" => c.reconnect_rate_per_min = v.rate()?,
                "RECONNECT_BURST" => c.reconnect_burst = v.count(1)?,
                "JOIN_FAIL_RATE" => c.join_fail_rate_per_min = v.rate()?,
                "JOIN_FAIL_BURST" => c.join_fail_burst = v.count(1)?,
                "SOCKET_RATE" => c.socket_rate_per_sec = v.rate()?,
                "SOCKET_BURST" => c.socket_burst = v.count(1)?,
                "MAX_SPECTATORS" => c.spectators_per_lobby_max = v.count(0)?,
                "CHAT_RATE" => c.chat_rate_per_min = v.count(1)?,
                "CHAT_IP_RATE" => c.chat_ip_rate_per_min = v.rate()?,
                "CHAT_IP_BURST" => c.chat_ip_burst = v.count(1)?,
                "CHAT_LOBBY_RATE" => c.chat_lobby_rate_per_min = v.rate()?,
                "CHAT_LOBBY_BURST" => c.chat_lobby_burst = v.count(1)?,
                "CHAT_HISTORY_BYTES" => c.chat_history_bytes_max = v.count(0)?,
                "CHAT_REPLAY_RATE" => c.chat_replay_rate_per_min = v.rate()?,
                "CHAT_REPLAY_BURST" => c.chat_replay_burst = v.count(1)?,
                "QUICK_PLAY_WAIT" => c.quick_play_wait_us = v.duration_us(0)?,
                "QUICK_PLAY_INTERVAL" => c.quick_play_interval_us = v.duration_us(1000)?,
                "QUICK_PLAY_SETTLE" => c.quick_play_settle_us = v.duration_us(0)?,
                "QUICK_PLAY_AWAY" => c.quick_play_away_us = v.duration_us(0)?,
                "QUICK_PLAY_JOIN_WAIT" => c.quick_play_join_wait_us = v.duration_us(0)?,
                "QUICK_PLAY_MAX" => c.quick_play_max = Some(v.count(1)?),
                "LIST_TABLES_RATE" => c.list_tables_rate_per_min = v.rate()?,
                "LIST_TABLES_BURST" => c.list_tables_burst = v.count(1)?,
                "SPECTATE_RATE" => c.spectate_rate_per_min = v.rate()?,
                "SPECTATE_BURST" => c.spectate_burst = v.count(1)?,
                "SPECTATORS_STATE_INTERVAL" => c.spectators_state_interval_us = v.duration_us(0)?,
                "REMOVED_PLAYER_TTL" => c.removed_player_ttl_us = v.duration_us(0)?,
                "REMOVED_PLAYERS_MAX" => c.removed_players_max = v.count(0)?,
                "SHARD_ID" => {
                    c.shard =
                        Some(v.parsed("is not one character of ABCDEFGHJKLMNPQRSTUVWXYZ23456789")?)
                }
                _ => {} // every SETTINGS name has an arm; the tests check that
            }
        }
        c.sockets_per_ip_max =
            sockets_per_ip_max.unwrap_or_else(|| default_sockets_per_ip(c.conns_per_ip_max));
        // Unset, the first byte is due after 2 s or the whole handshake time if shorter.
        c.shell.first_byte_timeout_us = first_byte_timeout_us.unwrap_or_else(|| {
            c.shell
                .first_byte_timeout_us
                .min(c.shell.handshake_timeout_us)
        });
        c.check_order()?;
        c.shell.check()?;
        c.check_door()?;
        Ok(c)
    }

    /// Checks between variables: thresholds must rise from busy to severe.
    fn check_order(&self) -> Result<(), ConfigError> {
        if self.load_lag_busy_us > self.load_lag_overload_us {
            return Err(order_error(
                "LOAD_LAG_BUSY",
                format_secs(self.load_lag_busy_us),
                "LOAD_LAG_OVERLOAD",
                format_secs(self.load_lag_overload_us),
            ));
        }
        if self.load_lag_overload_us > self.load_lag_severe_us {
            return Err(order_error(
                "LOAD_LAG_OVERLOAD",
                format_secs(self.load_lag_overload_us),
                "LOAD_LAG_SEVERE",
                format_secs(self.load_lag_severe_us),
            ));
        }
        if self.load_cpu_busy_share > self.load_cpu_overload_share {
            let (busy, overload) = (self.load_cpu_busy_share, self.load_cpu_overload_share);
            return Err(order_error(
                "LOAD_CPU_BUSY",
                busy.to_string(),
                "LOAD_CPU_OVERLOAD",
                overload.to_string(),
            ));
        }
        Ok(())
    }
}

impl Config {
    /// The door's settings against the others: an address may hold at least as many
    /// sockets as player connections.
    fn check_door(&self) -> Result<(), ConfigError> {
        if self.sockets_per_ip_max < self.conns_per_ip_max {
            return Err(ConfigError {
                variable: "MAX_SOCKETS_PER_IP",
                value: self.sockets_per_ip_max.to_string(),
                reason: format!(
                    "must not be less than MAX_CONNECTIONS_PER_IP ({})",
                    self.conns_per_ip_max
                ),
            });
        }
        Ok(())
    }
}

fn order_error(
    variable: &'static str,
    value: String,
    other: &str,
    other_value: String,
) -> ConfigError {
    ConfigError {
        variable,
        value,
        reason: format!("must not exceed {other} ({other_value})"),
    }
}

/// Seconds as text for error messages, without trailing zeros.
fn format_secs(us: u64) -> String {
    let text = format!("{}.{:06}", us / US_PER_SEC, us % US_PER_SEC);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}
