//! What the world tells the core ([`Input`]) and what the core asks of the world
//! ([`Output`]). The shells translate sockets, timers and signals into inputs and carry
//! out outputs; they decide nothing themselves.

use std::net::IpAddr;

use crate::vocabulary::ids::{ConnId, LobbyId};
use crate::vocabulary::load::LoadLevel;
use crate::vocabulary::load::LoadSample;
use crate::vocabulary::profile::SharedProfiles;
use crate::vocabulary::time::Time;
use crate::vocabulary::wire::{
    AiReply, AiRequest, ClientMessage, CloseCode, DecodeError, ErrorCode,
};

/// Which websocket route a connection came through, or the in-process AI link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConnKind {
    /// `/ws`: a player's client.
    Player,
    /// `/internal/ai`: the AI service (already authenticated by the upgrade check).
    Ai,
    /// The AI service inside the server's process (`EMBEDDED_AI=1`): no socket and no
    /// text. Its requests leave as [`Output::AiRequest`] values and its replies come
    /// back as [`Input::AiMessage`]; otherwise it is an AI connection like [`Self::Ai`]
    /// (the same bridge, deadlines, breaker and notes).
    AiInProcess,
}

impl ConnKind {
    /// True for an AI service connection, over a websocket or in process.
    pub fn is_ai(self) -> bool {
        matches!(self, ConnKind::Ai | ConnKind::AiInProcess)
    }
}

/// A frame the shell could not turn into a text message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadFrame {
    /// A binary frame (the protocol is JSON text only).
    Binary,
    /// A message larger than `MAX_MESSAGE_BYTES`, or in more than
    /// [`crate::shell::ws::MESSAGE_FRAGMENTS_MAX`] frames.
    TooLarge,
    // The frame layer (`crate::shell::ws`):
    /// An RFC 6455 violation: unmasked, reserved bits, unknown opcode, a fragmented or
    /// oversized control frame, a continuation out of place, an invalid close code
    /// (closed with 1002).
    Protocol,
    /// A text message or close reason that is not UTF-8 (closed with 1007).
    InvalidUtf8,
    /// `MAX_RATE_VIOLATIONS` frames dropped by the frame budget (closed with 1008).
    Flood,
}

/// What happened in the world.
#[derive(Clone, Debug)]
pub enum Input {
    /// A websocket was upgraded. `ip` is the client address after the trusted-proxy
    /// rule (see [`crate::shell::upgrade`]).
    Opened {
        conn: ConnId,
        kind: ConnKind,
        ip: IpAddr,
    },
    /// A player's text frame, decoded by the shell with [`crate::vocabulary::wire::decode_client`].
    Message {
        conn: ConnId,
        message: ClientMessage,
    },
    /// A player's text frame that did not decode.
    Undecodable { conn: ConnId, error: DecodeError },
    /// A frame the protocol does not allow.
    BadFrame { conn: ConnId, frame: BadFrame },
    /// A text frame from the AI service, decoded with [`crate::vocabulary::wire::decode_ai_reply`];
    /// `request_id` is what [`crate::vocabulary::wire::peek_request_id`] found when decoding failed.
    /// `arrived` is when the answer came, if before the pass that reads it (an
    /// in-process answer read when needed, [`crate::shell::reply_wait`]): the round trip ends
    /// there.
    AiMessage {
        conn: ConnId,
        reply: Result<AiReply, DecodeError>,
        request_id: Option<u64>,
        arrived: Option<Time>,
    },
    /// The connection is gone (closed by either side, or the transport failed).
    Closed { conn: ConnId },
    /// The load probe's figures for the last interval.
    LoadSample(LoadSample),
    /// A deadline from [`crate::Server::poll_timeout`] may have passed. Early, late or
    /// repeated timeouts are harmless.
    Timeout,
    /// Stop accepting new games, let running games go on for `SHUTDOWN_GRACE`, then
    /// close everyone with 1001.
    Shutdown,
    /// What the deployment's shared store holds about the profiles the next message
    /// of a connection names (a shell with a store shared by every shard sends it just
    /// before that message): the core takes each profile newer than its own copy, and
    /// forgets one deleted on another shard.
    SharedProfiles(SharedProfiles),
    /// The shards' shared quick-play pool formed a group here or matched a ticket of
    /// this shard elsewhere (a shell that keeps that pool).
    Pool(crate::vocabulary::pool::PoolEvent),
}

impl Input {
    /// Every [`Input::kind_name`], for labels declared ahead.
    pub const KIND_NAMES: [&'static str; 11] = [
        "opened",
        "message",
        "undecodable",
        "bad_frame",
        "ai_message",
        "closed",
        "load_sample",
        "timeout",
        "shutdown",
        "shared_profiles",
        "pool",
    ];

    /// The input's kind, as a metric label.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Input::Opened { .. } => "opened",
            Input::Message { .. } => "message",
            Input::Undecodable { .. } => "undecodable",
            Input::BadFrame { .. } => "bad_frame",
            Input::AiMessage { .. } => "ai_message",
            Input::Closed { .. } => "closed",
            Input::LoadSample(_) => "load_sample",
            Input::Timeout => "timeout",
            Input::Shutdown => "shutdown",
            Input::SharedProfiles(_) => "shared_profiles",
            Input::Pool(_) => "pool",
        }
    }

    /// The input for a complete text message from `conn`: the rule every shell (and
    /// every test driver) turns a text frame into an input with, written once. A
    /// player's message is decoded ([`Input::Message`] or [`Input::Undecodable`]); an
    /// AI reply is decoded, and when that fails its `request_id` is peeked so that the
    /// core can still answer the request it belonged to.
    pub fn from_text(conn: ConnId, kind: ConnKind, text: &str) -> Input {
        match kind {
            ConnKind::Player => match crate::vocabulary::wire::decode_client(text) {
                Ok(message) => Input::Message { conn, message },
                Err(error) => Input::Undecodable { conn, error },
            },
            ConnKind::Ai | ConnKind::AiInProcess => {
                let reply = crate::vocabulary::wire::decode_ai_reply(text);
                let request_id = match reply {
                    Ok(_) => None,
                    Err(_) => crate::vocabulary::wire::peek_request_id(text),
                };
                Input::AiMessage {
                    conn,
                    reply,
                    request_id,
                    arrived: None,
                }
            }
        }
    }
}

/// How a slow reader's outbound queue may treat a frame ([`crate::shell::outqueue`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Delivered once, in order: everything but the two kinds below.
    Every,
    /// A full `state` snapshot without events: a newer one replaces it in the queue
    /// (only the newest view matters; a state that carries events is `Every`, or its
    /// events would be lost).
    Newest,
    /// A table `chat` line (said now or replayed from the history): it gives way in a
    /// slow reader's queue, oldest first, counted in a `chat_gap` note, so that chat
    /// never costs a player the connection.
    Chat,
}

/// What the world should do.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// Send a text frame; `delivery` says what a slow reader's queue may do with it.
    Send {
        conn: ConnId,
        text: String,
        delivery: Delivery,
    },
    /// Hand a decision request to the in-process AI service on `conn` (a
    /// [`ConnKind::AiInProcess`] connection; a websocket AI connection gets the request
    /// as a [`Output::Send`] of its JSON instead).
    /// (Boxed: an observation is large, and every other output would pay for it.)
    /// `needed_at` is the earliest instant the core can use the answer (the move's
    /// `AI_MOVE_DELAY` or `TRICK_PAUSE`, at most the request's deadline): an answer that
    /// comes sooner need not wake the core ([`crate::shell::reply_wait`]).
    AiRequest {
        conn: ConnId,
        request: Box<AiRequest>,
        needed_at: Time,
    },
    /// Close the connection with this code after the frames already queued.
    Close { conn: ConnId, code: CloseCode },
    /// Something worth a log line or a metric; nothing to carry out.
    Note(Note),
}

/// Where a shell carries out outputs: one method per kind of [`Output`].
pub trait Router {
    /// Queue `text` on `conn` by the queue's rule for its `delivery`.
    fn send(&mut self, conn: ConnId, text: String, delivery: Delivery);
    /// Hand `request` to the in-process AI service on `conn`. A shell without one never
    /// opens a [`ConnKind::AiInProcess`] connection; the default sends the request's
    /// JSON as a frame, as for a websocket AI connection.
    fn ai_request(&mut self, conn: ConnId, request: Box<AiRequest>, needed_at: Time) {
        let _ = needed_at;
        self.send(
            conn,
            crate::vocabulary::wire::encode_ai_request(&request),
            Delivery::Every,
        );
    }
    /// Close `conn` with `code` after the frames already queued.
    fn close(&mut self, conn: ConnId, code: CloseCode);
    /// A fact for logs and metrics.
    fn note(&mut self, note: Note);
}

impl Output {
    /// Hands this output to `router`.
    pub fn route(self, router: &mut impl Router) {
        match self {
            Output::Send {
                conn,
                text,
                delivery,
            } => router.send(conn, text, delivery),
            Output::AiRequest {
                conn,
                request,
                needed_at,
            } => router.ai_request(conn, request, needed_at),
            Output::Close { conn, code } => router.close(conn, code),
            Output::Note(note) => router.note(note),
        }
    }
}

/// Why the fallback player moved instead of the AI service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FallbackReason {
    /// No AI service is connected.
    NoService,
    /// The circuit breaker is open.
    BreakerOpen,
    /// Every AI connection has `AI_MAX_INFLIGHT` requests waiting.
    InflightCap,
    /// No answer within `AI_DECISION_TIMEOUT`.
    Timeout,
    /// The AI connection was lost with the request pending.
    Disconnected,
    /// The answer was not a valid message.
    Malformed,
    /// The answer was an action the rules refuse.
    Illegal,
    /// The service answered `error` `internal`.
    Internal,
    /// The service shed the request (`overloaded`).
    Overloaded,
    /// The service shed the request (`expired`).
    Expired,
    /// A human's `turn_seconds` ran out.
    TurnTimeout,
}

impl FallbackReason {
    pub fn name(self) -> &'static str {
        match self {
            FallbackReason::NoService => "no_service",
            FallbackReason::BreakerOpen => "breaker_open",
            FallbackReason::InflightCap => "inflight_cap",
            FallbackReason::Timeout => "timeout",
            FallbackReason::Disconnected => "disconnected",
            FallbackReason::Malformed => "malformed",
            FallbackReason::Illegal => "illegal",
            FallbackReason::Internal => "internal",
            FallbackReason::Overloaded => "overloaded",
            FallbackReason::Expired => "expired",
            FallbackReason::TurnTimeout => "turn_timeout",
        }
    }

    /// Whether this counts as a real failure of the AI service for the breaker.
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            FallbackReason::Timeout
                | FallbackReason::Disconnected
                | FallbackReason::Malformed
                | FallbackReason::Illegal
                | FallbackReason::Internal
        )
    }
}

/// Why the core refused a connection or cut it off: the one vocabulary of the
/// connection limiter, the session registry, the AI bridge and the reconnect rate. (A
/// socket the shell refuses before any websocket work is a
/// [`crate::shell::door::DoorRefusal`].)
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RefuseReason {
    /// `MAX_CONNECTIONS` open.
    Total,
    /// `MAX_CONNECTIONS_PER_IP` open from this address.
    PerIp,
    /// `MAX_SESSIONS` sessions exist.
    Sessions,
    /// Too many AI service connections.
    AiConnections,
    /// `RECONNECT_RATE` new connections from this address (a player of a running game
    /// coming back is admitted anyway).
    Reconnects,
}

impl RefuseReason {
    pub fn name(self) -> &'static str {
        match self {
            RefuseReason::Total => "total",
            RefuseReason::PerIp => "per_ip",
            RefuseReason::Sessions => "sessions",
            RefuseReason::AiConnections => "ai_connections",
            RefuseReason::Reconnects => "reconnect_rate",
        }
    }
}

impl std::fmt::Display for RefuseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Facts for logs and metrics. The shell decides how to render them; the simulator's
/// checkers read them too.
#[derive(Clone, Debug, PartialEq)]
pub enum Note {
    LevelChanged {
        from: LoadLevel,
        to: LoadLevel,
        sample: LoadSample,
    },
    ConnectionRefused {
        conn: ConnId,
        ip: IpAddr,
        reason: RefuseReason,
    },
    /// Opened with `MAX_CONNECTIONS` reached: held, uncounted, until its `hello`.
    ConnectionHeld {
        conn: ConnId,
        ip: IpAddr,
    },
    /// A held connection's `hello` resumed a player of a running game: admitted past
    /// `MAX_CONNECTIONS`.
    ResumedPastCap {
        conn: ConnId,
        ip: IpAddr,
    },
    FloodClosed {
        conn: ConnId,
        ip: IpAddr,
    },
    /// A message got an `error` reply.
    Refused {
        conn: ConnId,
        code: ErrorCode,
    },
    /// A move was applied to a game (by a human, the AI or the fallback).
    MoveApplied {
        lobby: LobbyId,
        seat: u8,
        by: MoveSource,
    },
    /// An AI seat's or timed-out human's move was made by the fallback player.
    Fallback {
        lobby: LobbyId,
        seat: u8,
        reason: FallbackReason,
    },
    /// The AI circuit breaker opened after this many consecutive failures.
    BreakerOpened {
        failures: u32,
        cooldown_us: u64,
    },
    BreakerClosed,
    AiConnected {
        conn: ConnId,
    },
    AiDisconnected {
        conn: ConnId,
        pending: u32,
    },
    /// The AI service answered a request we waited for (a decision or an error):
    /// `round_trip_us` from the pass that asked to the answer's arrival (the pass that
    /// read it, unless the input says it came sooner), on the core's clock (the shell's
    /// histogram `wizard_ai_round_trip_seconds`).
    AiAnswered {
        round_trip_us: u64,
    },
    GameStarted {
        lobby: LobbyId,
        players: u8,
    },
    GameFinished {
        lobby: LobbyId,
    },
    LobbyDeleted {
        lobby: LobbyId,
    },
    SessionExpired,
    /// At `MAX_SESSIONS`, the longest-disconnected session outside a running game was
    /// forgotten to make room for a new one.
    SessionEvicted,
    ShutdownStarted,
    /// A held connection's `hello` resumed a player of a running game: admitted past
    /// `RECONNECT_RATE`.
    ResumedPastRate {
        conn: ConnId,
        ip: IpAddr,
    },
    /// A running game had no human connected for `ABANDONED_GAME_TTL` (a quick-play
    /// game: none connected any more): it stops moving and leaves its
    /// `MAX_ACTIVE_GAMES` slot until one of them comes back.
    GameDormant {
        lobby: LobbyId,
    },
    /// A human of a dormant game came back: it runs again (even past `MAX_ACTIVE_GAMES`).
    GameWoken {
        lobby: LobbyId,
    },
    /// A lobby without a running game had no human connected for `LOBBY_IDLE_TTL`, or
    /// an idle lobby or dormant game made room for a new lobby at `MAX_LOBBIES`: it
    /// was deleted with its (disconnected) sessions. A `LobbyDeleted` follows.
    LobbyIdle {
        lobby: LobbyId,
        sessions: u32,
    },
    /// Quick play seated a table: `humans` players and `ai` AI seats; `waited_us` is
    /// each player's wait, oldest first (the shell's histogram
    /// `wizard_quick_play_seat_seconds`).
    QuickPlaySeated {
        lobby: LobbyId,
        humans: u8,
        ai: u8,
        waited_us: Vec<u64>,
    },
}

/// Who made a move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveSource {
    Human,
    /// The AI service's answer; `agent` is not kept (it is free text from the service).
    Ai,
    Fallback,
}

/// Which agent of the AI service decided an applied AI move, from the `agent` its
/// reply names (the `ai_decisions` counter): `Search` is the strong level's primary
/// agent, `Heuristic` what the service degrades to under load (and the normal level),
/// `Other` any name this build does not know (free text from the service).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecidedBy {
    Search,
    Heuristic,
    Easy,
    Random,
    Other,
}

impl DecidedBy {
    /// The agent a reply's `agent` names.
    pub fn from_agent_name(name: &str) -> DecidedBy {
        match name {
            "search" => DecidedBy::Search,
            "heuristic" => DecidedBy::Heuristic,
            "easy" => DecidedBy::Easy,
            "random" => DecidedBy::Random,
            _ => DecidedBy::Other,
        }
    }

    /// The label in `/metrics`.
    pub fn name(self) -> &'static str {
        match self {
            DecidedBy::Search => "search",
            DecidedBy::Heuristic => "heuristic",
            DecidedBy::Easy => "easy",
            DecidedBy::Random => "random",
            DecidedBy::Other => "other",
        }
    }
}

/// Why the core wants to be woken (the reason of [`crate::Server::poll_timeout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum WakeReason {
    /// An AI move may be applied, or a human's turn timer runs out.
    Turn,
    /// An AI request's deadline.
    AiDeadline,
    /// The breaker's cooldown ends.
    Breaker,
    /// A disconnected session expires.
    SessionExpiry,
    /// Periodic cleanup of per-IP tables.
    Sweep,
    /// The shutdown grace period ends.
    Shutdown,
    /// A connection held over `MAX_CONNECTIONS` did not say `hello` in time.
    HelloGrace,
    /// A lobby or game whose humans are all disconnected reaches `LOBBY_IDLE_TTL` or
    /// `ABANDONED_GAME_TTL`.
    Absent,
    /// A lobby's members are shown the spectators who came or went since
    /// `SPECTATORS_STATE_INTERVAL` began.
    Spectators,
    /// The matchmaker's next pass, or a quick-play ticket's `QUICK_PLAY_WAIT` runs out.
    QuickPlay,
}
