//! The server machine: the one place that turns the sub-machines' decisions into
//! outputs. It owns connections, sessions, lobbies, the AI bridge, load levels and every
//! deadline, and is driven only through [`Server::handle`] and [`Server::poll_timeout`].
//!
//! Submodules split the work along its seams: `conns` (opening, the per-connection
//! token bucket, closing), `players` (hello, lobby messages, admission), `games` (moves,
//! AI turns, fallback), `views` (personal `state` messages), `status` (load samples,
//! deadlines, shutdown, and what is published after every input), `absent` (what
//! players who are gone may hold: idle lobbies, dormant games, evictable sessions),
//! `watch` (spectators and table chat), `quick` (public tables and the quick-play
//! pool), `shared` (the shards' shared quick-play pool: tickets out, groups in, the
//! seats kept for players of other shards).

mod absent;
mod conns;
mod deltas;
mod durable;
mod games;
mod history;
mod players;
mod profiles;
mod quick;
mod shared;
mod status;
mod views;
mod watch;

use std::collections::BTreeMap;
use std::net::IpAddr;

use rand_chacha::ChaCha12Rng;

use crate::machine::ai_bridge::AiBridge;
use crate::machine::audience::Audience;
use crate::machine::lobby::LobbyManager;
use crate::machine::matchmaker::{MatchConfig, Matchmaker};
use crate::machine::name_holds::NameHolds;
use crate::machine::overload::breaker::{BreakerConfig, BreakerState};
use crate::machine::overload::connections::ConnectionLimiter;
use crate::machine::overload::level::{LoadLevels, LoadThresholds};
use crate::machine::profiles::ProfileRegistry;
use crate::machine::records::{LobbyRecord, Record};
use crate::machine::removed::Removed;
use crate::machine::session::SessionRegistry;
use crate::machine::timers::Timers;
use crate::vocabulary::config::Config;
use crate::vocabulary::ids::ConnId;
use crate::vocabulary::ids::{LobbyId, SessionId};
use crate::vocabulary::io::{
    BadFrame, ConnKind, Delivery, Input, Note, Output, RefuseReason, WakeReason,
};
use crate::vocabulary::limiter::{IpKey, KeyedRateLimiter, TokenBucket, rate_from};
use crate::vocabulary::load::LoadLevel;
use crate::vocabulary::load::LoadSample;
use crate::vocabulary::rng::{self, Purpose, Seed};
use crate::vocabulary::shard::ShardId;
use crate::vocabulary::stats::{Counters, Gauges};
use crate::vocabulary::time::Time;
use crate::vocabulary::wire::{
    self, AiHealth, CloseCode, DecodeError, ErrorCode, Health, ServerMessage,
};

/// How often idle per-IP buckets are swept.
const SWEEP_INTERVAL_US: u64 = 30_000_000;

/// What a `server_status` message says: the load level and whether new games are
/// accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Status {
    load: LoadLevel,
    accepting_games: bool,
}

/// One open websocket as the core sees it.
#[derive(Debug)]
struct Conn {
    kind: ConnKind,
    ip: IpAddr,
    /// The session after `hello` (players only).
    session: Option<SessionId>,
    bucket: TokenBucket,
    drops: u32,
    /// The last `server_status` sent on this connection.
    status_sent: Option<Status>,
    /// The core asked to close it; further frames are ignored.
    closing: bool,
    /// Whether it holds a slot of the connection limiter.
    counted: bool,
    /// Opened with `MAX_CONNECTIONS` reached (`Total`) or over `RECONNECT_RATE`
    /// (`Reconnects`): held, uncounted, until its `hello` shows a player of a running
    /// game coming back (admitted past the cap or rate) or anything else (refused with
    /// `busy` and 1013, for this reason), for at most [`HELLO_GRACE_US`].
    waiting: Option<RefuseReason>,
    /// What a connection that takes deltas last received (PROTOCOL.md 7.5); `None`
    /// for every other (boxed: most connections pay only for the pointer).
    deltas: Option<Box<deltas::DeltaView>>,
}

/// The `error` text of `hello_required`.
pub(crate) const HELLO_FIRST: &str = "Say hello first.";

/// How long a connection over `MAX_CONNECTIONS` may take to say `hello`.
pub const HELLO_GRACE_US: u64 = 5_000_000;

/// A named deadline.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum TimerKey {
    Lobby(LobbyId),
    AiRequest(u64),
    Session(SessionId),
    Breaker,
    Sweep,
    Shutdown,
    HelloGrace(ConnId),
    /// Every human of the lobby is disconnected: `LOBBY_IDLE_TTL` or
    /// `ABANDONED_GAME_TTL` runs out.
    Away(LobbyId),
    /// The lobby's spectators changed within `SPECTATORS_STATE_INTERVAL` of the last
    /// state that showed them: its members see the list then.
    Spectators(LobbyId),
    /// The matchmaker's next wake-up.
    QuickPlay,
    /// A table formed from the shards' shared pool stops keeping seats for players of
    /// other shards (`QUICK_PLAY_JOIN_WAIT`).
    Reserved(LobbyId),
}

impl TimerKey {
    fn reason(&self) -> WakeReason {
        match self {
            TimerKey::Lobby(_) => WakeReason::Turn,
            TimerKey::AiRequest(_) => WakeReason::AiDeadline,
            TimerKey::Session(_) => WakeReason::SessionExpiry,
            TimerKey::Breaker => WakeReason::Breaker,
            TimerKey::Sweep => WakeReason::Sweep,
            TimerKey::Shutdown => WakeReason::Shutdown,
            TimerKey::HelloGrace(_) => WakeReason::HelloGrace,
            TimerKey::Away(_) => WakeReason::Absent,
            TimerKey::Spectators(_) => WakeReason::Spectators,
            TimerKey::QuickPlay | TimerKey::Reserved(_) => WakeReason::QuickPlay,
        }
    }
}

/// The Wizard server as a pure state machine. See the crate documentation for the
/// drive contract.
#[derive(Debug)]
pub struct Server {
    config: Config,
    now: Time,
    conns: BTreeMap<ConnId, Conn>,
    limiter: ConnectionLimiter,
    sessions: SessionRegistry,
    lobbies: LobbyManager,
    bridge: AiBridge,
    levels: LoadLevels,
    lobby_rate: KeyedRateLimiter<IpKey>,
    /// Profiles (PROTOCOL.md 7.1), at most `PROFILES_MAX`.
    profiles: ProfileRegistry,
    /// New profiles per address (`PROFILE_CREATE_RATE`).
    profile_rate: KeyedRateLimiter<IpKey>,
    /// Profile names another shard's creation holds, or the shared store left unchecked.
    name_holds: NameHolds,
    /// Public game ids.
    game_ids: ChaCha12Rng,
    /// Profiles changed since a shell last asked, while one watches
    /// ([`Server::watch_profiles`]).
    profile_changes: Option<std::collections::BTreeSet<String>>,
    /// The wall clock at [`Time`] zero, milliseconds since the Unix epoch, as the shell
    /// told it ([`Server::set_wall_clock`]): history's dates are this plus `now`.
    wall_epoch_ms: u64,
    /// New player connections per address (`RECONNECT_RATE`).
    reconnect_rate: KeyedRateLimiter<IpKey>,
    /// `join_lobby` and `spectate` with an unknown code per address (`JOIN_FAIL_RATE`).
    join_fail_rate: KeyedRateLimiter<IpKey>,
    /// `spectate` requests per address (`SPECTATE_RATE`).
    spectate_rate: KeyedRateLimiter<IpKey>,
    /// Chat lines per address, all its sessions together (`CHAT_IP_RATE`).
    chat_ip_rate: KeyedRateLimiter<IpKey>,
    /// Chat history replays per address (`CHAT_REPLAY_RATE`).
    chat_replay_rate: KeyedRateLimiter<IpKey>,
    /// `list_tables` requests per address (`LIST_TABLES_RATE`).
    list_tables_rate: KeyedRateLimiter<IpKey>,
    /// The quick-play pool, keyed by session: at most `QUICK_PLAY_MAX` tickets, one
    /// per session, each of a connected session (`server/quick.rs`).
    matchmaker: Matchmaker<SessionId>,
    /// With the shards' shared pool ([`Server::share_quick_play`]): the ticket changes
    /// for the shell and the seats kept for other shards' players (`server/shared.rs`).
    shared: Option<shared::SharedPool>,
    timers: Timers<TimerKey>,
    game_seeds: ChaCha12Rng,
    retry_rng: ChaCha12Rng,
    counters: Counters,
    last_sample: LoadSample,
    /// The status last published to everyone.
    status: Status,
    ai_was_available: bool,
    breaker_was: BreakerState,
    shutting_down: bool,
    finished: bool,
    /// Records for a durable store, while it keeps them ([`Server::keep_records`]).
    records: Option<Vec<Record>>,
    /// Each lobby's last record, so that an unchanged lobby is not recorded again.
    persisted_lobbies: BTreeMap<LobbyId, LobbyRecord>,
    /// Lobbies the restore could not replay ([`Server::set_aside`]).
    set_aside: Vec<durable::SetAside>,
    /// Spectators and chat history of the lobbies that have any (`server/watch.rs`);
    /// one entry at most per existing lobby.
    audiences: BTreeMap<LobbyId, Audience>,
    /// The lobby part of `state` each lobby was last shown with, and its JSON
    /// (`server/views.rs`); one entry at most per existing lobby.
    lobby_views: BTreeMap<LobbyId, LobbyViewCache>,
    /// Players the host removed, kept out for `REMOVED_PLAYER_TTL`, per lobby that has
    /// any (`server/watch.rs`): at most `REMOVED_PLAYERS_MAX` each, one entry at most
    /// per existing lobby.
    removed: BTreeMap<LobbyId, Removed>,
    /// When each lobby's members were last sent a state for a change of its spectators
    /// (`SPECTATORS_STATE_INTERVAL`); one entry at most per existing lobby.
    spectators_shown: BTreeMap<LobbyId, Time>,
}

pub use durable::{RestoreError, SetAside};
use views::LobbyViewCache;

impl Server {
    /// A server with `config`, all randomness descending from `seed`, started at `now`.
    pub fn new(config: Config, seed: Seed, now: Time) -> Server {
        let thresholds = LoadThresholds {
            lag_busy_us: config.load_lag_busy_us,
            lag_overload_us: config.load_lag_overload_us,
            lag_severe_us: config.load_lag_severe_us,
            cpu_busy_share: config.load_cpu_busy_share,
            cpu_overload_share: config.load_cpu_overload_share,
            throttle_overload_share: config.load_throttle_overload_share,
            overload_samples: config.load_overload_samples,
            recover_samples: config.load_recover_samples,
        };
        let mut levels = LoadLevels::new(thresholds);
        levels.force(config.load_force_level);
        let breaker = BreakerConfig {
            failures_max: config.ai_breaker_failures_max,
            cooldown_us: config.ai_breaker_cooldown_us,
        };
        let bridge = AiBridge::new(
            breaker,
            rng::fork(&seed, Purpose::Breaker),
            u32::try_from(config.ai_inflight_max).unwrap_or(u32::MAX),
            config.ai_decision_timeout_us,
        );
        let lobby_rate = KeyedRateLimiter::new(
            rate_from(config.lobby_create_rate_per_min, 60_000_000),
            u64::from(config.lobby_create_rate_per_min.ceil().max(1.0) as u32),
            config.ip_table_entries_max,
        );
        let profile_rate = KeyedRateLimiter::new(
            rate_from(config.profile_create_rate_per_hour, 3_600_000_000),
            u64::from(config.profile_create_rate_per_hour.ceil().max(1.0) as u32),
            config.ip_table_entries_max,
        );
        let reconnect_rate = KeyedRateLimiter::new(
            rate_from(config.reconnect_rate_per_min, 60_000_000),
            u64::from(config.reconnect_burst.max(1)),
            config.ip_table_entries_max,
        );
        let join_fail_rate = KeyedRateLimiter::new(
            rate_from(config.join_fail_rate_per_min, 60_000_000),
            u64::from(config.join_fail_burst.max(1)),
            config.ip_table_entries_max,
        );
        let per_ip_per_min = |rate_per_min: f64, burst: u32| {
            KeyedRateLimiter::new(
                rate_from(rate_per_min, 60_000_000),
                u64::from(burst.max(1)),
                config.ip_table_entries_max,
            )
        };
        let spectate_rate = per_ip_per_min(config.spectate_rate_per_min, config.spectate_burst);
        let chat_ip_rate = per_ip_per_min(config.chat_ip_rate_per_min, config.chat_ip_burst);
        let chat_replay_rate =
            per_ip_per_min(config.chat_replay_rate_per_min, config.chat_replay_burst);
        let list_tables_rate =
            per_ip_per_min(config.list_tables_rate_per_min, config.list_tables_burst);
        let matchmaker = Matchmaker::new(MatchConfig {
            wait_us: config.quick_play_wait_us,
            interval_us: config.quick_play_interval_us,
            tickets_max: config.quick_play_tickets_max(),
            settle_us: config.quick_play_settle_us,
        });
        let mut timers = Timers::default();
        timers.set(TimerKey::Sweep, now.plus_us(SWEEP_INTERVAL_US));
        let status = Status {
            load: levels.level(),
            accepting_games: true,
        };
        Server {
            limiter: ConnectionLimiter::new(config.conns_max, config.conns_per_ip_max),
            sessions: SessionRegistry::new(
                config.sessions_max,
                rng::fork(&seed, Purpose::Tokens),
                rng::fork(&seed, Purpose::PlayerIds),
                config.shard,
            ),
            lobbies: LobbyManager::new(
                config.lobbies_max,
                rng::fork(&seed, Purpose::LobbyCodes),
                config.shard,
            ),
            game_seeds: rng::fork(&seed, Purpose::GameSeeds),
            profiles: ProfileRegistry::new(
                config.profiles_max,
                rng::fork(&seed, Purpose::ProfileKeys),
                rng::fork(&seed, Purpose::ProfileIds),
            ),
            profile_rate,
            name_holds: NameHolds::default(),
            game_ids: rng::fork(&seed, Purpose::GameIds),
            profile_changes: None,
            wall_epoch_ms: 0,
            retry_rng: rng::fork(&seed, Purpose::Retry),
            breaker_was: bridge.breaker_state(),
            bridge,
            levels,
            lobby_rate,
            reconnect_rate,
            join_fail_rate,
            spectate_rate,
            chat_ip_rate,
            chat_replay_rate,
            list_tables_rate,
            matchmaker,
            shared: None,
            timers,
            counters: Counters::default(),
            last_sample: LoadSample::default(),
            status,
            ai_was_available: false,
            shutting_down: false,
            finished: false,
            records: None,
            persisted_lobbies: BTreeMap::new(),
            set_aside: Vec::new(),
            audiences: BTreeMap::new(),
            lobby_views: BTreeMap::new(),
            removed: BTreeMap::new(),
            spectators_shown: BTreeMap::new(),
            conns: BTreeMap::new(),
            now,
            config,
        }
    }

    /// Handles one input at `now`, appending every consequence to `out`.
    pub fn handle(&mut self, now: Time, input: Input, out: &mut Vec<Output>) {
        let start = out.len();
        self.handle_input(now, input, out);
        if let Some(new) = out.get_mut(start..) {
            self.frame_states(new);
        }
    }

    fn handle_input(&mut self, now: Time, input: Input, out: &mut Vec<Output>) {
        debug_assert!(now >= self.now, "time went backwards: {now} < {}", self.now);
        let now = now.max(self.now);
        self.now = now;
        match input {
            Input::Opened { conn, kind, ip } => self.on_opened(now, conn, kind, ip, out),
            Input::Message { conn, message } => {
                if self.admit_frame(now, conn, out) {
                    self.on_message(now, conn, message, out);
                }
            }
            Input::Undecodable { conn, .. }
                if self.conns.get(&conn).is_some_and(|c| c.waiting.is_some()) =>
            {
                // Held over MAX_CONNECTIONS or RECONNECT_RATE: only a `hello` may follow.
                self.refuse_waiting(conn, None, out);
            }
            Input::Undecodable { conn, error } => {
                if self.admit_frame(now, conn, out) {
                    // A known message with bad fields before `hello` is still a message
                    // before `hello`: that is the first thing wrong with it.
                    let before_hello =
                        matches!(
                            &error,
                            DecodeError::BadField { type_name, .. }
                                if *type_name != "hello" && *type_name != "message"
                        ) && self.conns.get(&conn).is_some_and(|c| c.session.is_none());
                    if before_hello {
                        self.send_error(conn, ErrorCode::HelloRequired, HELLO_FIRST, None, out);
                    } else {
                        self.send_error(conn, ErrorCode::Invalid, &error.to_string(), None, out);
                    }
                }
            }
            Input::BadFrame { conn, frame } => {
                let code = match frame {
                    BadFrame::Binary => CloseCode::BinaryFrame,
                    BadFrame::TooLarge => CloseCode::MessageTooLarge,
                    BadFrame::Protocol => CloseCode::ProtocolError,
                    BadFrame::InvalidUtf8 => CloseCode::InvalidPayload,
                    BadFrame::Flood => {
                        self.frame_flood(conn, out);
                        CloseCode::MessageFlood
                    }
                };
                self.close(conn, code, out);
            }
            Input::AiMessage {
                conn,
                reply,
                request_id,
                arrived,
            } => {
                let reply = reply.map_err(|_| ());
                self.on_ai_message(now, conn, reply, request_id, arrived, out)
            }
            Input::Closed { conn } => self.on_closed(now, conn, out),
            Input::LoadSample(sample) => self.on_sample(sample, out),
            Input::Timeout => {}
            Input::Shutdown => self.on_shutdown(now, out),
            Input::SharedProfiles(news) => self.learn_profiles(&news),
            Input::Pool(event) => self.on_pool(now, event, out),
        }
        self.run_due(now, out);
        self.sync_quick_play_timer();
        self.after_change(now, out);
        self.release_gone_audiences(out);
        self.release_gone_removed();
        self.release_gone_views();
        self.flush_gone();
    }

    /// The next instant the core must be woken with [`Input::Timeout`], and why.
    pub fn poll_timeout(&self) -> Option<(Time, WakeReason)> {
        if self.finished {
            return None;
        }
        self.timers.next().map(|(t, k)| (t, k.reason()))
    }

    /// Whether new lobbies and games are admitted now: what `/health` and
    /// `server_status` say. False as well when `MAX_LOBBIES` lobbies exist and none of
    /// them is idle (which a new lobby would replace), so that they agree with
    /// `create_lobby`.
    pub fn accepting_games(&self) -> bool {
        self.games_admitted() && self.lobbies.has_room_for_new()
    }

    /// Whether new games may start (in lobbies that exist): not shutting down, not
    /// overloaded, fewer than `MAX_ACTIVE_GAMES` running (dormant games not counted).
    fn games_admitted(&self) -> bool {
        !self.shutting_down
            && self.levels.level() != LoadLevel::Overloaded
            && self.lobbies.active_games() < self.config.active_games_max
    }

    /// After shutdown's grace period: everyone was closed and the shell may exit.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    pub fn level(&self) -> LoadLevel {
        self.levels.level()
    }

    pub fn gauges(&self) -> Gauges {
        let players = self.limiter.open() as u64;
        Gauges {
            connections: self.conns.len() as u64,
            player_connections: players,
            sessions: self.sessions.len() as u64,
            lobbies: self.lobbies.len() as u64,
            active_games: self.lobbies.active_games() as u64,
            dormant_games: self.lobbies.dormant_games() as u64,
            evictable_sessions: self.sessions.evictable_len() as u64,
            idle_lobbies: self.lobbies.idle_len() as u64,
            accepting_games: self.accepting_games(),
            lobbies_full: !self.lobbies.has_room_for_new(),
            level: self.levels.level(),
            ai_connections: self.bridge.connections() as u64,
            ai_pending: self.bridge.pending() as u64,
            ai_probes_pending: self.bridge.probes_pending() as u64,
            breaker: self.bridge.breaker_state().name(),
            ip_table_entries: self
                .lobby_rate
                .len()
                .max(self.reconnect_rate.len())
                .max(self.join_fail_rate.len())
                .max(self.spectate_rate.len())
                .max(self.chat_ip_rate.len())
                .max(self.chat_replay_rate.len())
                .max(self.list_tables_rate.len()) as u64,
            last_sample: self.last_sample,
            shutting_down: self.shutting_down,
            quick_play_tickets: self.matchmaker.len() as u64,
        }
    }

    /// The body of `GET /health`: always `"ok"` while the process runs.
    pub fn health(&self) -> Health {
        Health {
            status: "ok".to_string(),
            load: self.levels.level(),
            loop_lag: self.last_sample.lag_us_max as f64 / 1e6,
            cpu: self.last_sample.cpu_share,
            throttled: self.last_sample.throttled_share,
            accepting_games: self.accepting_games(),
            lobbies: self.lobbies.len() as u64,
            active_games: self.lobbies.active_games() as u64,
            sessions: self.sessions.len() as u64,
            connections: self.limiter.open() as u64,
            ai_available: self.bridge.available(),
            ai: AiHealth {
                connections: self.bridge.connections() as u64,
                pending: self.bridge.pending() as u64,
                breaker: self.bridge.breaker_state().name().to_string(),
            },
            version: crate::VERSION.to_string(),
            shard: self.config.shard.map(|s| s.to_string()),
        }
    }

    /// The `retry_after_ms` of a `busy` now: for a refusal of new games while
    /// overloaded (`load_bound`), the least time the load level needs to recover
    /// (`LOAD_RECOVER_SAMPLES` calmer samples); otherwise the floor of
    /// [`crate::machine::overload::retry::BUSY_RETRY_MIN_US`]; spread at random.
    pub(crate) fn busy_retry_after_ms(&mut self, load_bound: bool) -> u64 {
        let wait_us = if load_bound && self.levels.level() == LoadLevel::Overloaded {
            u64::from(self.config.load_recover_samples)
                .saturating_mul(self.config.load_sample_interval_us)
        } else {
            0
        };
        crate::machine::overload::retry::busy_retry_after_ms(wait_us, &mut self.retry_rng)
    }

    fn send_error(
        &mut self,
        conn: ConnId,
        code: ErrorCode,
        message: &str,
        retry_after_ms: Option<u64>,
        out: &mut Vec<Output>,
    ) {
        self.counters.errors.bump(code);
        out.push(Output::Note(Note::Refused { conn, code }));
        // Every `busy` says when to come back (PROTOCOL.md section 6.2).
        let retry_after_ms = match (code, retry_after_ms) {
            (ErrorCode::Busy, None) => Some(self.busy_retry_after_ms(true)),
            (_, given) => given,
        };
        let text = wire::encode(&ServerMessage::Error {
            code,
            message: message.to_string(),
            retry_after_ms,
            shard: None,
        });
        out.push(Output::Send {
            conn,
            text,
            delivery: Delivery::Every,
        });
    }

    /// `wrong_shard`: the code or token in the message belongs to shard `owner`, where
    /// the client repeats the message (PROTOCOL.md section 6.3).
    fn send_wrong_shard(&mut self, conn: ConnId, owner: ShardId, out: &mut Vec<Output>) {
        let code = ErrorCode::WrongShard;
        self.counters.errors.bump(code);
        out.push(Output::Note(Note::Refused { conn, code }));
        let text = wire::encode(&ServerMessage::Error {
            code,
            message: format!("That belongs to shard {owner}: connect to /ws/{owner}."),
            retry_after_ms: None,
            shard: Some(owner.to_string()),
        });
        out.push(Output::Send {
            conn,
            text,
            delivery: Delivery::Every,
        });
    }
}
