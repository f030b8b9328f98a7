//! Counters and gauges of the server machine, read by the shell for `/metrics` and by
//! the simulator's report. Counters only grow; gauges are recomputed on read. Counters
//! with a label are [`Counts`], one slot per variant of an enum that names itself
//! ([`Tally`]), so a typo is a compile error and `/metrics` shows every label.

use std::marker::PhantomData;

use crate::vocabulary::io::{DecidedBy, FallbackReason, MoveSource, RefuseReason};
use crate::vocabulary::load::LoadLevel;
use crate::vocabulary::wire::{CloseCode, ErrorCode};

/// An enum whose variants label a counter: every variant, in a fixed order, each with
/// its label in `/metrics`.
pub trait Tally: Copy + Eq + 'static {
    /// Every variant; `ALL[v.index()] == v`.
    const ALL: &'static [Self];
    /// The label, e.g. `per_ip`.
    fn name(self) -> &'static str;
    /// The variant's place in [`Tally::ALL`].
    fn index(self) -> usize;
}

/// One counter per variant of `E`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counts<E: Tally> {
    slots: Vec<u64>,
    of: PhantomData<E>,
}

impl<E: Tally> Default for Counts<E> {
    fn default() -> Self {
        Counts {
            slots: vec![0; E::ALL.len()],
            of: PhantomData,
        }
    }
}

impl<E: Tally> Counts<E> {
    /// Adds one to `e`'s counter.
    pub fn bump(&mut self, e: E) {
        if let Some(n) = self.slots.get_mut(e.index()) {
            *n += 1;
        }
    }

    pub fn get(&self, e: E) -> u64 {
        self.slots.get(e.index()).copied().unwrap_or(0)
    }

    /// The sum over every variant.
    pub fn total(&self) -> u64 {
        self.slots.iter().sum()
    }

    /// Every variant with its count, zeros included, in [`Tally::ALL`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = (E, u64)> + '_ {
        E::ALL.iter().map(|e| (*e, self.get(*e)))
    }
}

/// Why a lobby request got `busy` or `rate_limited` from a per-address or capacity
/// rule (the `requests_refused` counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RequestRefusal {
    /// `MAX_LOBBIES_PER_IP` lobbies of this address exist.
    LobbiesPerIp,
    /// `MAX_GAMES_PER_IP` games of this address run.
    GamesPerIp,
    /// `JOIN_FAIL_RATE`: too many unknown lobby codes from this address.
    JoinFailRate,
    /// `MAX_LOBBIES` lobbies exist and none is idle.
    MaxLobbies,
    /// `SPECTATE_RATE`: too many `spectate` requests from this address.
    SpectateRate,
    /// `CHAT_IP_RATE`: too many chat lines from this address.
    ChatIpRate,
    /// `CHAT_LOBBY_RATE`: too many spectators' chat lines in this lobby.
    ChatLobbyRate,
    /// `PROFILE_CREATE_RATE`: too many new profiles from this address.
    ProfileRate,
    /// `PROFILES_MAX` profiles exist.
    MaxProfiles,
    /// `LIST_TABLES_RATE`: too many `list_tables` from this address.
    ListTablesRate,
}

/// Why `quick_play` got `busy`, or a group of the pool could not be seated (the
/// `quick_play_refused` counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum QuickPlayRefusal {
    /// Not accepting games (overloaded, `MAX_ACTIVE_GAMES`, `MAX_LOBBIES`, shutting
    /// down): no ticket kept.
    NotAccepting,
    /// `QUICK_PLAY_MAX` tickets wait already.
    PoolFull,
    /// `MAX_GAMES_PER_IP` games of this address run.
    GamesPerIp,
    /// A group was formed but games were no longer accepted: its players were told
    /// `busy` and their tickets dropped.
    GroupRefused,
}

/// `Tally` for a fieldless enum with an `ALL` list and a `name` of its own.
macro_rules! tally {
    ($t:ty, [$($v:expr),+ $(,)?], $name:expr) => {
        impl Tally for $t {
            const ALL: &'static [Self] = &[$($v),+];
            fn name(self) -> &'static str {
                let name: fn(Self) -> &'static str = $name;
                name(self)
            }
            fn index(self) -> usize {
                self as usize
            }
        }
    };
}

tally!(
    DecidedBy,
    [
        DecidedBy::Search,
        DecidedBy::Heuristic,
        DecidedBy::Easy,
        DecidedBy::Random,
        DecidedBy::Other,
    ],
    DecidedBy::name
);
tally!(
    RequestRefusal,
    [
        RequestRefusal::LobbiesPerIp,
        RequestRefusal::GamesPerIp,
        RequestRefusal::JoinFailRate,
        RequestRefusal::MaxLobbies,
        RequestRefusal::SpectateRate,
        RequestRefusal::ChatIpRate,
        RequestRefusal::ChatLobbyRate,
        RequestRefusal::ProfileRate,
        RequestRefusal::MaxProfiles,
        RequestRefusal::ListTablesRate,
    ],
    |r| match r {
        RequestRefusal::LobbiesPerIp => "lobbies_per_ip",
        RequestRefusal::GamesPerIp => "games_per_ip",
        RequestRefusal::JoinFailRate => "join_fail_rate",
        RequestRefusal::MaxLobbies => "max_lobbies",
        RequestRefusal::SpectateRate => "spectate_rate",
        RequestRefusal::ChatIpRate => "chat_ip_rate",
        RequestRefusal::ChatLobbyRate => "chat_lobby_rate",
        RequestRefusal::ProfileRate => "profile_rate",
        RequestRefusal::MaxProfiles => "max_profiles",
        RequestRefusal::ListTablesRate => "list_tables_rate",
    }
);
tally!(
    QuickPlayRefusal,
    [
        QuickPlayRefusal::NotAccepting,
        QuickPlayRefusal::PoolFull,
        QuickPlayRefusal::GamesPerIp,
        QuickPlayRefusal::GroupRefused,
    ],
    |r| match r {
        QuickPlayRefusal::NotAccepting => "not_accepting",
        QuickPlayRefusal::PoolFull => "pool_full",
        QuickPlayRefusal::GamesPerIp => "games_per_ip",
        QuickPlayRefusal::GroupRefused => "group_refused",
    }
);
tally!(
    RefuseReason,
    [
        RefuseReason::Total,
        RefuseReason::PerIp,
        RefuseReason::Sessions,
        RefuseReason::AiConnections,
        RefuseReason::Reconnects,
    ],
    RefuseReason::name
);
tally!(
    ErrorCode,
    [
        ErrorCode::Invalid,
        ErrorCode::HelloRequired,
        ErrorCode::NotFound,
        ErrorCode::NotAllowed,
        ErrorCode::IllegalAction,
        ErrorCode::Busy,
        ErrorCode::RateLimited,
        ErrorCode::SessionReplaced,
        ErrorCode::Removed,
    ],
    ErrorCode::name
);
tally!(
    CloseCode,
    [
        CloseCode::ShuttingDown,
        CloseCode::BinaryFrame,
        CloseCode::MessageFlood,
        CloseCode::MessageTooLarge,
        CloseCode::ConnectionLimit,
        CloseCode::SessionReplaced,
        CloseCode::ProtocolError,
        CloseCode::InvalidPayload,
        CloseCode::ServiceRestart,
    ],
    |c| match c {
        CloseCode::ShuttingDown => "1001",
        CloseCode::BinaryFrame => "1003",
        CloseCode::MessageFlood => "1008",
        CloseCode::MessageTooLarge => "1009",
        CloseCode::ConnectionLimit => "1013",
        CloseCode::SessionReplaced => "4000",
        CloseCode::ProtocolError => "1002",
        CloseCode::InvalidPayload => "1007",
        CloseCode::ServiceRestart => "1012",
    }
);
tally!(
    MoveSource,
    [MoveSource::Human, MoveSource::Ai, MoveSource::Fallback],
    |m| match m {
        MoveSource::Human => "human",
        MoveSource::Ai => "ai",
        MoveSource::Fallback => "fallback",
    }
);
tally!(
    FallbackReason,
    [
        FallbackReason::NoService,
        FallbackReason::BreakerOpen,
        FallbackReason::InflightCap,
        FallbackReason::Timeout,
        FallbackReason::Disconnected,
        FallbackReason::Malformed,
        FallbackReason::Illegal,
        FallbackReason::Internal,
        FallbackReason::Overloaded,
        FallbackReason::Expired,
        FallbackReason::TurnTimeout,
    ],
    FallbackReason::name
);
tally!(
    LoadLevel,
    [LoadLevel::Normal, LoadLevel::Busy, LoadLevel::Overloaded],
    LoadLevel::name
);

/// Monotonic counters since start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Player and AI connections accepted (after the connection limits).
    pub connections_opened: u64,
    /// Players of running games admitted past `MAX_CONNECTIONS` when they came back.
    pub resumed_past_cap: u64,
    /// Connections refused by the core, by reason.
    pub connections_refused: Counts<RefuseReason>,
    /// Close frames the core asked for, by close code.
    pub closes: Counts<CloseCode>,
    /// Client messages handled (after the rate limiter let them through).
    pub messages: u64,
    /// Client messages dropped by the per-connection token bucket.
    pub messages_dropped: u64,
    /// `error` replies, by error code.
    pub errors: Counts<ErrorCode>,
    /// Moves applied to games, by who made them.
    pub moves: Counts<MoveSource>,
    pub games_started: u64,
    pub games_finished: u64,
    /// Finished games with a profile seat, whose ratings were updated.
    pub games_rated: u64,
    /// Finished games recorded for history (`HISTORY_DAYS`).
    pub games_recorded: u64,
    pub lobbies_created: u64,
    /// Requests sent to the AI service.
    pub ai_requests: u64,
    /// Moves the fallback made instead of the AI, by reason.
    pub fallbacks: Counts<FallbackReason>,
    /// AI moves applied, by the agent of the service that decided them.
    pub ai_decisions: Counts<DecidedBy>,
    pub breaker_opened: u64,
    /// Load level changes, by the level entered.
    pub level_changes: Counts<LoadLevel>,
    pub sessions_expired: u64,
    /// Disconnected sessions forgotten at `MAX_SESSIONS` to make room for a new player
    /// (outside running games that someone plays first, then from games whose humans
    /// are all away).
    pub sessions_evicted: u64,
    /// Lobby requests refused by a per-address or capacity rule, by reason.
    pub requests_refused: Counts<RequestRefusal>,
    /// Running games put to sleep after `ABANDONED_GAME_TTL` with no human connected.
    pub games_dormant: u64,
    /// Dormant games woken by a returning human.
    pub games_woken: u64,
    /// Lobbies without a running game deleted after `LOBBY_IDLE_TTL` with no human.
    pub lobbies_idle_deleted: u64,
    /// Idle lobbies (no running game, no human connected) deleted at `MAX_LOBBIES` to
    /// make room for a new one.
    pub lobbies_evicted: u64,
    /// Quick-play tickets taken into the pool (a ticket replaced counts again).
    pub quick_play_queued: u64,
    /// Tickets taken out without a seat: `cancel_quick_play`, leaving, another lobby,
    /// the connection closing.
    pub quick_play_cancelled: u64,
    /// `quick_play` refused with `busy`, and groups that could not be seated, by reason.
    pub quick_play_refused: Counts<QuickPlayRefusal>,
    /// Tables quick play seated, by table size (index 0 for 3 seats) and AI seats.
    pub quick_play_groups: [[u64; 6]; 4],
    /// `list_tables` answered.
    pub tables_listed: u64,
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
    /// `MAX_LOBBIES` lobbies exist and none of them is idle: a new lobby is refused.
    pub lobbies_full: bool,
    pub level: crate::vocabulary::load::LoadLevel,
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
    pub last_sample: crate::vocabulary::load::LoadSample,
    pub shutting_down: bool,
    /// Quick-play tickets waiting in the pool (at most `QUICK_PLAY_MAX`).
    pub quick_play_tickets: u64,
}
