//! Counters and gauges of the server machine, read by the shell for `/metrics` and by
//! the simulator's report. Counters only grow; gauges are recomputed on read.

use std::collections::BTreeMap;

/// Monotonic counters since start. Maps are keyed by fixed names (error codes, close
/// codes, fallback reasons), so they stay small.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Player and AI connections accepted (after the connection limits).
    pub connections_opened: u64,
    /// Players of running games admitted past `MAX_CONNECTIONS` when they came back.
    pub resumed_past_cap: u64,
    /// Connections refused at the door, by reason (`total`, `per_ip`, `sessions`, ...).
    pub connections_refused: BTreeMap<&'static str, u64>,
    /// Close frames the core asked for, by close code.
    pub closes: BTreeMap<u16, u64>,
    /// Client messages handled (after the rate limiter let them through).
    pub messages: u64,
    /// Client messages dropped by the per-connection token bucket.
    pub messages_dropped: u64,
    /// `error` replies, by error code.
    pub errors: BTreeMap<&'static str, u64>,
    /// Moves applied to games, by who made them (`human`, `ai`, `fallback`).
    pub moves: BTreeMap<&'static str, u64>,
    pub games_started: u64,
    pub games_finished: u64,
    pub lobbies_created: u64,
    /// Requests sent to the AI service.
    pub ai_requests: u64,
    /// Moves the fallback made instead of the AI, by reason.
    pub fallbacks: BTreeMap<&'static str, u64>,
    pub breaker_opened: u64,
    /// Load level changes, by the level entered.
    pub level_changes: BTreeMap<&'static str, u64>,
    pub sessions_expired: u64,
    /// Disconnected sessions forgotten at `MAX_SESSIONS` to make room for a new player
    /// (outside running games that someone plays first, then from games whose humans
    /// are all away).
    pub sessions_evicted: u64,
    /// Lobby requests refused by a per-address or capacity rule, by reason
    /// (`lobbies_per_ip`, `games_per_ip`, `join_fail_rate`, `max_lobbies`).
    pub requests_refused: BTreeMap<&'static str, u64>,
    /// Running games put to sleep after `ABANDONED_GAME_TTL` with no human connected.
    pub games_dormant: u64,
    /// Dormant games woken by a returning human.
    pub games_woken: u64,
    /// Lobbies without a running game deleted after `LOBBY_IDLE_TTL` with no human.
    pub lobbies_idle_deleted: u64,
    /// Idle lobbies (no running game, no human connected) deleted at `MAX_LOBBIES` to
    /// make room for a new one.
    pub lobbies_evicted: u64,
}

/// Adds one to `map[key]`.
pub fn bump<K: Ord>(map: &mut BTreeMap<K, u64>, key: K) {
    *map.entry(key).or_insert(0) += 1;
}

/// Current sizes and states, computed on read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gauges {
    pub connections: u64,
    pub player_connections: u64,
    pub sessions: u64,
    pub lobbies: u64,
    /// Running games that are not dormant (the ones `MAX_ACTIVE_GAMES` counts).
    pub active_games: u64,
    /// Running games asleep until a human of theirs comes back.
    pub dormant_games: u64,
    /// Disconnected sessions a new player may evict at `MAX_SESSIONS`.
    pub evictable_sessions: u64,
    /// Lobbies without a running game and without a connected human, which a new
    /// lobby may replace at `MAX_LOBBIES`.
    pub idle_lobbies: u64,
    pub accepting_games: bool,
    pub level: crate::overload::LoadLevel,
    pub ai_connections: u64,
    pub ai_pending: u64,
    /// AI requests sent as the breaker's half-open probe (never more than one).
    pub ai_probes_pending: u64,
    /// `closed`, `open` or `half_open`.
    pub breaker: &'static str,
    /// Entries in the fullest per-IP table (lobby creation, reconnects, failed join
    /// codes); each is bounded by `IP_TABLE_MAX`.
    pub ip_table_entries: u64,
    /// The last load sample received.
    pub last_sample: crate::overload::level::LoadSample,
    pub shutting_down: bool,
}
