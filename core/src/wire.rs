//! The wire messages of PROTOCOL.md sections 2 and 4 as serde types.
//!
//! Every type derives `Serialize` and `Deserialize` with the exact wire shape, so it can
//! be embedded anywhere (fixtures, transcripts). The `decode_*` functions are the fast,
//! strict entry points for whole websocket frames: they classify junk into a typed
//! [`DecodeError`] whose text is fit for the `error.message` field, and they avoid
//! serde's buffered internally-tagged path. The `encode_*` functions never fail.
//!
//! This module does no IO and holds no state: the server decides what to do with a
//! decoded message, a decode error, or a close code.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeOwned, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::game::{Action, BidRestriction, Event, Observation, Options, Seat};
use crate::overload::LoadLevel;

// ---------------------------------------------------------------------------------------
// Player protocol: client to server
// ---------------------------------------------------------------------------------------

/// A message from a player's client on `/ws` (PROTOCOL.md section 2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMessage {
    /// Must be first on every connection; a known token resumes that session.
    Hello {
        #[serde(default)]
        token: Option<String>,
    },
    CreateLobby {
        name: String,
    },
    JoinLobby {
        code: String,
        name: String,
    },
    LeaveLobby,
    AddAi,
    RemovePlayer {
        player_id: String,
    },
    /// Host only: every field present replaces that option; absent (or null) ones stay.
    SetOptions {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hidden_bids: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bid_restriction: Option<BidRestriction>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn_seconds: Option<u16>,
    },
    StartGame,
    Action {
        action: Action,
    },
    ReturnToLobby,
}

impl ClientMessage {
    /// The wire `type` of this message, for logs and metrics.
    pub fn type_name(&self) -> &'static str {
        match self {
            ClientMessage::Hello { .. } => "hello",
            ClientMessage::CreateLobby { .. } => "create_lobby",
            ClientMessage::JoinLobby { .. } => "join_lobby",
            ClientMessage::LeaveLobby => "leave_lobby",
            ClientMessage::AddAi => "add_ai",
            ClientMessage::RemovePlayer { .. } => "remove_player",
            ClientMessage::SetOptions { .. } => "set_options",
            ClientMessage::StartGame => "start_game",
            ClientMessage::Action { .. } => "action",
            ClientMessage::ReturnToLobby => "return_to_lobby",
        }
    }
}

// ---------------------------------------------------------------------------------------
// Player protocol: server to client
// ---------------------------------------------------------------------------------------

/// A message from the server to a player's client on `/ws` (PROTOCOL.md section 2).
///
/// `State` is a few hundred bytes inline; a message is built once and encoded at once,
/// so boxing it would add an allocation for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage {
    /// `player_id` is public (12 hex characters); `token` is the session's secret.
    Welcome {
        player_id: String,
        token: String,
        name: String,
    },
    /// The full view after a change; `lobby` and `game` are null when not seated.
    State {
        lobby: Option<LobbyView>,
        game: Option<GameView>,
        events: Vec<Event>,
    },
    ServerStatus {
        load: LoadLevel,
        accepting_games: bool,
    },
    Error {
        code: ErrorCode,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
    },
}

/// Where a lobby stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LobbyStatus {
    Waiting,
    Playing,
    Finished,
}

/// A lobby as its members see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LobbyView {
    /// 6 characters from `ABCDEFGHJKLMNPQRSTUVWXYZ23456789`.
    pub code: String,
    pub status: LobbyStatus,
    pub host_id: String,
    pub options: Options,
    /// In seat order.
    pub players: Vec<PlayerView>,
    pub min_players: u8,
    pub max_players: u8,
    pub ai_available: bool,
}

/// One seat of a lobby.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlayerView {
    pub id: String,
    pub name: String,
    pub is_ai: bool,
    pub connected: bool,
}

/// A running or finished game as one seat sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameView {
    pub you: Seat,
    pub observation: Observation,
}

/// The `code` of an `error` message (PROTOCOL.md, "Error codes").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Not JSON, unknown `type`, missing or wrong field.
    Invalid,
    /// Any message before `hello`.
    HelloRequired,
    /// Unknown lobby code or player.
    NotFound,
    /// A lobby rule: not host, lobby full, wrong status, too few players.
    NotAllowed,
    /// The rules engine refused the action.
    IllegalAction,
    /// Not accepting games, or connection limits reached.
    Busy,
    /// Dropped by the token bucket, or lobby creation rate exceeded.
    RateLimited,
    /// The same session was opened elsewhere (the connection is then closed with 4000).
    SessionReplaced,
    /// The host removed you from the lobby.
    Removed,
}

impl ErrorCode {
    /// Every code, in the order of PROTOCOL.md's table.
    pub const ALL: [ErrorCode; 9] = [
        ErrorCode::Invalid,
        ErrorCode::HelloRequired,
        ErrorCode::NotFound,
        ErrorCode::NotAllowed,
        ErrorCode::IllegalAction,
        ErrorCode::Busy,
        ErrorCode::RateLimited,
        ErrorCode::SessionReplaced,
        ErrorCode::Removed,
    ];

    /// The wire name, e.g. `hello_required`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::Invalid => "invalid",
            ErrorCode::HelloRequired => "hello_required",
            ErrorCode::NotFound => "not_found",
            ErrorCode::NotAllowed => "not_allowed",
            ErrorCode::IllegalAction => "illegal_action",
            ErrorCode::Busy => "busy",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::SessionReplaced => "session_replaced",
            ErrorCode::Removed => "removed",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why the server closes a player connection (PROTOCOL.md, "Close codes").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CloseCode {
    /// 1001: the server is shutting down.
    ShuttingDown,
    /// 1003: a binary frame was received.
    BinaryFrame,
    /// 1008: too many messages dropped by the rate limiter.
    MessageFlood,
    /// 1009: a message larger than 64 KiB.
    MessageTooLarge,
    /// 1013: a connection limit was reached; try again later.
    ConnectionLimit,
    /// 4000: the same session was opened elsewhere.
    SessionReplaced,
}

impl CloseCode {
    /// Every close code, in the order of PROTOCOL.md.
    pub const ALL: [CloseCode; 6] = [
        CloseCode::ShuttingDown,
        CloseCode::BinaryFrame,
        CloseCode::MessageFlood,
        CloseCode::MessageTooLarge,
        CloseCode::ConnectionLimit,
        CloseCode::SessionReplaced,
    ];

    /// The websocket close status code.
    pub fn code(self) -> u16 {
        match self {
            CloseCode::ShuttingDown => 1001,
            CloseCode::BinaryFrame => 1003,
            CloseCode::MessageFlood => 1008,
            CloseCode::MessageTooLarge => 1009,
            CloseCode::ConnectionLimit => 1013,
            CloseCode::SessionReplaced => 4000,
        }
    }

    /// A short reason for the close frame (well under the 123-byte limit).
    pub fn reason(self) -> &'static str {
        match self {
            CloseCode::ShuttingDown => "server shutting down",
            CloseCode::BinaryFrame => "binary frames are not supported",
            CloseCode::MessageFlood => "message flood",
            CloseCode::MessageTooLarge => "message larger than 64 KiB",
            CloseCode::ConnectionLimit => "connection limit reached, try again later",
            CloseCode::SessionReplaced => "session opened elsewhere",
        }
    }

    /// The close code with this status code, if it is one of ours.
    pub fn from_code(code: u16) -> Option<CloseCode> {
        CloseCode::ALL.into_iter().find(|c| c.code() == code)
    }
}

impl fmt::Display for CloseCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code(), self.reason())
    }
}

// ---------------------------------------------------------------------------------------
// AI protocol (`/internal/ai`)
// ---------------------------------------------------------------------------------------

/// A message from the server to the AI service (PROTOCOL.md section 4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AiRequest {
    /// Decide for the seat to move; `timeout` is how many seconds the server waits.
    Decide {
        request_id: u64,
        observation: Observation,
        timeout: f64,
    },
}

/// A message from the AI service to the server (PROTOCOL.md section 4).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AiReply {
    Decision {
        request_id: u64,
        action: Action,
        /// Which agent decided, e.g. `search`, `heuristic`, `random`.
        agent: String,
    },
    Error {
        request_id: u64,
        code: AiErrorCode,
        message: String,
    },
}

impl AiReply {
    /// The request this reply answers.
    pub fn request_id(&self) -> u64 {
        match self {
            AiReply::Decision { request_id, .. } | AiReply::Error { request_id, .. } => *request_id,
        }
    }
}

/// Why the AI service did not decide. `Overloaded` and `Expired` are load shedding by a
/// healthy service and do not count as failures for the circuit breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AiErrorCode {
    Overloaded,
    Expired,
    Internal,
}

impl AiErrorCode {
    /// True for load shedding by a healthy service (not a breaker failure).
    pub fn is_shedding(self) -> bool {
        matches!(self, AiErrorCode::Overloaded | AiErrorCode::Expired)
    }
}

// ---------------------------------------------------------------------------------------
// `GET /health`
// ---------------------------------------------------------------------------------------

/// The body of `GET /health` (PROTOCOL.md section 1), fields in the documented order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Health {
    /// Always `"ok"` while the process runs.
    pub status: String,
    pub load: LoadLevel,
    /// Event-loop lag in seconds.
    pub loop_lag: f64,
    /// CPU use as a fraction of the CPU quota.
    pub cpu: f64,
    /// Fraction of recent time the cgroup was throttled.
    pub throttled: f64,
    pub accepting_games: bool,
    pub lobbies: u64,
    pub active_games: u64,
    pub sessions: u64,
    pub connections: u64,
    pub ai_available: bool,
    pub ai: AiHealth,
}

/// The AI bridge part of [`Health`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AiHealth {
    pub connections: u64,
    pub pending: u64,
    /// `closed`, `open` or `half_open`.
    pub breaker: String,
}

// ---------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------

/// Why a frame is not a valid message (the sender's fault). The `Display` text is short
/// and human-readable, fit for an `error` message with code `invalid`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Not valid JSON (including trailing junk and nesting too deep).
    NotJson,
    /// Valid JSON, but not an object.
    NotAnObject,
    /// An object without a `type` field.
    MissingType,
    /// A `type` this direction does not know, truncated to [`TYPE_ECHO_CHARS_MAX`] chars.
    UnknownType { type_name: String },
    /// A required field is missing or has the wrong type or value (a junk card, a
    /// negative bid, a non-string `type`, ...).
    BadField { message: String },
}

/// How much of an unknown `type` is echoed back in [`DecodeError::UnknownType`].
pub const TYPE_ECHO_CHARS_MAX: usize = 32;
/// How long a [`DecodeError::BadField`] message may grow (serde echoes input values).
pub const FIELD_MESSAGE_CHARS_MAX: usize = 160;

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::NotJson => f.write_str("message is not valid JSON"),
            DecodeError::NotAnObject => f.write_str("message must be a JSON object"),
            DecodeError::MissingType => f.write_str("message has no \"type\" field"),
            DecodeError::UnknownType { type_name } => {
                write!(f, "unknown message type {type_name:?}")
            }
            DecodeError::BadField { message } => f.write_str(message),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Decodes a player's frame on `/ws`.
pub fn decode_client(text: &str) -> Result<ClientMessage, DecodeError> {
    let type_name = envelope(text)?;
    let message = match type_name.as_ref() {
        "hello" => {
            fields::<HelloFields>(text, "hello").map(|f| ClientMessage::Hello { token: f.token })?
        }
        "create_lobby" => fields::<NameFields>(text, "create_lobby")
            .map(|f| ClientMessage::CreateLobby { name: f.name })?,
        "join_lobby" => {
            fields::<JoinFields>(text, "join_lobby").map(|f| ClientMessage::JoinLobby {
                code: f.code,
                name: f.name,
            })?
        }
        "leave_lobby" => ClientMessage::LeaveLobby,
        "add_ai" => ClientMessage::AddAi,
        "remove_player" => {
            fields::<RemoveFields>(text, "remove_player").map(|f| ClientMessage::RemovePlayer {
                player_id: f.player_id,
            })?
        }
        "set_options" => {
            fields::<SetOptionsFields>(text, "set_options").map(|f| ClientMessage::SetOptions {
                hidden_bids: f.hidden_bids,
                bid_restriction: f.bid_restriction,
                turn_seconds: f.turn_seconds,
            })?
        }
        "start_game" => ClientMessage::StartGame,
        "action" => fields::<ActionFields>(text, "action")
            .map(|f| ClientMessage::Action { action: f.action })?,
        "return_to_lobby" => ClientMessage::ReturnToLobby,
        other => return Err(unknown_type(other)),
    };
    Ok(message)
}

/// Decodes a server frame on `/ws` (for clients, load generators and tests).
pub fn decode_server(text: &str) -> Result<ServerMessage, DecodeError> {
    let type_name = envelope(text)?;
    match type_name.as_ref() {
        "welcome" => fields::<WelcomeFields>(text, "welcome").map(|f| ServerMessage::Welcome {
            player_id: f.player_id,
            token: f.token,
            name: f.name,
        }),
        "state" => fields::<StateFields>(text, "state").map(|f| ServerMessage::State {
            lobby: f.lobby,
            game: f.game,
            events: f.events,
        }),
        "server_status" => {
            fields::<StatusFields>(text, "server_status").map(|f| ServerMessage::ServerStatus {
                load: f.load,
                accepting_games: f.accepting_games,
            })
        }
        "error" => fields::<ErrorFields>(text, "error").map(|f| ServerMessage::Error {
            code: f.code,
            message: f.message,
            retry_after_ms: f.retry_after_ms,
        }),
        other => Err(unknown_type(other)),
    }
}

/// Decodes a server frame on `/internal/ai` (for the AI service and tests).
pub fn decode_ai_request(text: &str) -> Result<AiRequest, DecodeError> {
    let type_name = envelope(text)?;
    match type_name.as_ref() {
        "decide" => fields::<DecideFields>(text, "decide").map(|f| AiRequest::Decide {
            request_id: f.request_id,
            observation: f.observation,
            timeout: f.timeout,
        }),
        other => Err(unknown_type(other)),
    }
}

/// Decodes an AI service frame on `/internal/ai`.
pub fn decode_ai_reply(text: &str) -> Result<AiReply, DecodeError> {
    let type_name = envelope(text)?;
    match type_name.as_ref() {
        "decision" => fields::<DecisionFields>(text, "decision").map(|f| AiReply::Decision {
            request_id: f.request_id,
            action: f.action,
            agent: f.agent,
        }),
        "error" => fields::<AiErrorFields>(text, "error").map(|f| AiReply::Error {
            request_id: f.request_id,
            code: f.code,
            message: f.message,
        }),
        other => Err(unknown_type(other)),
    }
}

/// The `request_id` of an AI frame that did not decode (e.g. an illegal card), so the
/// server can fail that request at once instead of waiting for its timeout.
pub fn peek_request_id(text: &str) -> Option<u64> {
    serde_json::from_str::<RequestIdFields>(text)
        .ok()
        .map(|f| f.request_id)
}

/// Decodes a `GET /health` body.
pub fn decode_health(text: &str) -> Result<Health, DecodeError> {
    envelope_object(text)?;
    fields::<Health>(text, "health")
}

// ---------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------

/// Encodes a server message for a player.
pub fn encode(message: &ServerMessage) -> String {
    to_json(message)
}

/// Encodes a client message (for clients, load generators and tests).
pub fn encode_client(message: &ClientMessage) -> String {
    to_json(message)
}

/// Encodes a request for the AI service.
pub fn encode_ai_request(request: &AiRequest) -> String {
    to_json(request)
}

/// Encodes an AI service reply (for the AI service and tests).
pub fn encode_ai_reply(reply: &AiReply) -> String {
    to_json(reply)
}

/// Encodes the `GET /health` body.
pub fn encode_health(health: &Health) -> String {
    to_json(health)
}

/// These types hold only strings, numbers, bools, sequences and string-keyed structs,
/// so serialization cannot fail; a failure would be a bug in a `Serialize` impl.
fn to_json<T: Serialize>(value: &T) -> String {
    match serde_json::to_string(value) {
        Ok(text) => text,
        Err(e) => {
            debug_assert!(false, "wire types always serialize: {e}");
            String::new()
        }
    }
}

// ---------------------------------------------------------------------------------------
// Two-pass decoding: first the `type` (borrowed, other values skipped without
// allocation), then the fields of that one type straight into a plain struct. This
// avoids serde's internally-tagged path, which buffers the whole object into an
// intermediate tree first.
// ---------------------------------------------------------------------------------------

/// What the first pass found at the top level.
enum Envelope<'a> {
    NotObject,
    /// An object; its `type`, if it has one.
    Object(Option<Cow<'a, str>>),
}

/// Returns the message's `type`, after checking the whole text is one JSON object.
fn envelope(text: &str) -> Result<Cow<'_, str>, DecodeError> {
    envelope_object(text)?.ok_or(DecodeError::MissingType)
}

fn envelope_object(text: &str) -> Result<Option<Cow<'_, str>>, DecodeError> {
    match serde_json::from_str::<Envelope<'_>>(text) {
        Ok(Envelope::Object(type_name)) => Ok(type_name),
        Ok(Envelope::NotObject) => Err(DecodeError::NotAnObject),
        // Only our own visitors raise data errors (a non-string or repeated `type`).
        Err(e) if e.is_data() => Err(bad_field("message", &e)),
        Err(_) => Err(DecodeError::NotJson),
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Envelope<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EnvelopeVisitor)
    }
}

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut type_name: Option<Cow<'de, str>> = None;
        while let Some(KeyIsType(is_type)) = map.next_key::<KeyIsType>()? {
            if is_type {
                if type_name.is_some() {
                    return Err(de::Error::custom("duplicate field `type`"));
                }
                type_name = Some(map.next_value::<TypeName<'de>>()?.0);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Envelope::Object(type_name))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Envelope::NotObject)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Envelope::NotObject)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Envelope::NotObject)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Envelope::NotObject)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Envelope::NotObject)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Envelope::NotObject)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Envelope::NotObject)
    }
}

/// Whether an object key is `type`, found without allocating the key.
struct KeyIsType(bool);

impl<'de> Deserialize<'de> for KeyIsType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(KeyIsTypeVisitor)
    }
}

struct KeyIsTypeVisitor;

impl Visitor<'_> for KeyIsTypeVisitor {
    type Value = KeyIsType;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(KeyIsType(v == "type"))
    }
}

/// The `type` value: a string, borrowed from the input unless it has escapes.
struct TypeName<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for TypeName<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(TypeNameVisitor)
    }
}

struct TypeNameVisitor;

impl<'de> Visitor<'de> for TypeNameVisitor {
    type Value = TypeName<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`type` to be a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(TypeName(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(TypeName(Cow::Owned(v.to_owned())))
    }
}

/// Second pass: the fields of one message type. `type` and unknown fields are ignored.
fn fields<T: DeserializeOwned>(text: &str, type_name: &str) -> Result<T, DecodeError> {
    serde_json::from_str(text).map_err(|e| bad_field(type_name, &e))
}

fn unknown_type(type_name: &str) -> DecodeError {
    DecodeError::UnknownType {
        type_name: type_name.chars().take(TYPE_ECHO_CHARS_MAX).collect(),
    }
}

/// serde_json's message without its " at line L column C" suffix (the client sends one
/// line), truncated because serde echoes offending values.
fn bad_field(type_name: &str, e: &serde_json::Error) -> DecodeError {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let bare = full.strip_suffix(&suffix).unwrap_or(&full);
    let mut message = format!("invalid {type_name}: ");
    message.extend(bare.chars().take(FIELD_MESSAGE_CHARS_MAX));
    DecodeError::BadField { message }
}

#[derive(Deserialize)]
struct HelloFields {
    #[serde(default)]
    token: Option<String>,
}

#[derive(Deserialize)]
struct NameFields {
    name: String,
}

#[derive(Deserialize)]
struct JoinFields {
    code: String,
    name: String,
}

#[derive(Deserialize)]
struct RemoveFields {
    player_id: String,
}

#[derive(Deserialize)]
struct SetOptionsFields {
    #[serde(default)]
    hidden_bids: Option<bool>,
    #[serde(default)]
    bid_restriction: Option<BidRestriction>,
    #[serde(default)]
    turn_seconds: Option<u16>,
}

#[derive(Deserialize)]
struct ActionFields {
    action: Action,
}

#[derive(Deserialize)]
struct WelcomeFields {
    player_id: String,
    token: String,
    name: String,
}

#[derive(Deserialize)]
struct StateFields {
    lobby: Option<LobbyView>,
    game: Option<GameView>,
    events: Vec<Event>,
}

#[derive(Deserialize)]
struct StatusFields {
    load: LoadLevel,
    accepting_games: bool,
}

#[derive(Deserialize)]
struct ErrorFields {
    code: ErrorCode,
    message: String,
    #[serde(default)]
    retry_after_ms: Option<u64>,
}

#[derive(Deserialize)]
struct DecideFields {
    request_id: u64,
    observation: Observation,
    timeout: f64,
}

#[derive(Deserialize)]
struct DecisionFields {
    request_id: u64,
    action: Action,
    agent: String,
}

#[derive(Deserialize)]
struct AiErrorFields {
    request_id: u64,
    code: AiErrorCode,
    message: String,
}

#[derive(Deserialize)]
struct RequestIdFields {
    request_id: u64,
}
