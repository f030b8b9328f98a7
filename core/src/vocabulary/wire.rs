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
//!
//! The player protocol lives here; submodules hold the rest: `codes` (error and close
//! codes), `ai` (the AI service's messages and `GET /health`), `codec` (the typed
//! [`DecodeError`], the two-pass decoder and the encoder every direction shares), and
//! `peek` (cheap looks into a `state` frame for clients that decode only what they use).

mod ai;
mod codec;
mod codes;
pub mod flat;
pub mod held;
pub mod merge_patch;
pub mod peek;

use serde::{Deserialize, Serialize};

use crate::vocabulary::figure::Figure;
use crate::vocabulary::game::{Action, AiLevel, BidRestriction, Event, Observation, Options, Seat};
use crate::vocabulary::ids::ProfileKey;
use crate::vocabulary::load::LoadLevel;

use codec::{envelope, fields, to_json, unknown_type};

pub use ai::{
    AiErrorCode, AiHealth, AiReply, AiRequest, Health, decode_ai_reply, decode_ai_request,
    decode_health, encode_ai_reply, encode_ai_request, encode_health, peek_request_id,
};
pub use codec::{DecodeError, FIELD_MESSAGE_CHARS_MAX, TYPE_ECHO_CHARS_MAX};
pub use codes::{CloseCode, ErrorCode};

// ---------------------------------------------------------------------------------------
// Player protocol: client to server
// ---------------------------------------------------------------------------------------

/// A message from a player's client on `/ws` (PROTOCOL.md section 2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMessage {
    /// Must be first on every connection; a known token resumes that session, a known
    /// `profile_key` signs it in (PROTOCOL.md 7.1).
    Hello {
        #[serde(default)]
        token: Option<String>,
        /// The client takes `delta` frames after its first full `state` (PROTOCOL.md
        /// 7.5); absent is false, and then nothing changes for it.
        #[serde(default, skip_serializing_if = "is_false")]
        deltas: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        profile_key: Option<ProfileKey>,
    },
    /// Asks for a full `state` (after a `delta` whose `base` is not the last `seq`).
    Resync,
    /// `public`: listed by `list_tables` (PROTOCOL.md 7.2).
    CreateLobby {
        name: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        public: bool,
    },
    JoinLobby {
        code: String,
        name: String,
    },
    LeaveLobby,
    /// Host only; `level` absent (or null) is [`AiLevel::Strong`].
    AddAi {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        level: Option<AiLevel>,
    },
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
        /// Listed by `list_tables` or not (PROTOCOL.md 7.2).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        public: Option<bool>,
    },
    StartGame,
    Action {
        action: Action,
    },
    ReturnToLobby,
    /// Watch a lobby without a seat (PROTOCOL.md 6.4).
    Spectate {
        code: String,
        name: String,
    },
    /// A line of table chat (PROTOCOL.md 6.4).
    Chat {
        text: String,
    },
    /// A new profile, which the session is signed in with from then on.
    CreateProfile {
        name: String,
    },
    /// Deletes the profile the session is signed in with.
    DeleteProfile,
    /// Join the quick-play pool for a table of `seats` (3 to 6; absent: 4).
    QuickPlay {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seats: Option<u8>,
    },
    /// Leave the quick-play pool.
    CancelQuickPlay,
    /// The public tables: waiting ones with a free seat, and with `running` the running
    /// ones to watch as well.
    ListTables {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        running: bool,
    },
}

impl ClientMessage {
    /// The wire `type` of this message, for logs and metrics.
    pub fn type_name(&self) -> &'static str {
        match self {
            ClientMessage::Hello { .. } => "hello",
            ClientMessage::Resync => "resync",
            ClientMessage::CreateLobby { .. } => "create_lobby",
            ClientMessage::JoinLobby { .. } => "join_lobby",
            ClientMessage::LeaveLobby => "leave_lobby",
            ClientMessage::AddAi { .. } => "add_ai",
            ClientMessage::RemovePlayer { .. } => "remove_player",
            ClientMessage::SetOptions { .. } => "set_options",
            ClientMessage::StartGame => "start_game",
            ClientMessage::Action { .. } => "action",
            ClientMessage::ReturnToLobby => "return_to_lobby",
            ClientMessage::Spectate { .. } => "spectate",
            ClientMessage::Chat { .. } => "chat",
            ClientMessage::CreateProfile { .. } => "create_profile",
            ClientMessage::DeleteProfile => "delete_profile",
            ClientMessage::QuickPlay { .. } => "quick_play",
            ClientMessage::CancelQuickPlay => "cancel_quick_play",
            ClientMessage::ListTables { .. } => "list_tables",
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage {
    /// `player_id` is public (12 hex characters); `token` is the session's secret.
    Welcome {
        player_id: String,
        token: String,
        name: String,
        /// The server's `SHARD_ID`, only on a sharded server: where the client
        /// reconnects (`/ws/<shard>`, PROTOCOL.md section 6.3).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shard: Option<String>,
        /// The profile the session is signed in with; null for a guest.
        #[serde(default)]
        profile: Option<ProfileView>,
    },
    /// The answer to `create_profile`: `key` is the profile's secret, sent only here.
    Profile {
        id: String,
        key: String,
        name: String,
        rating: Figure,
        mu: Figure,
        sigma: Figure,
        games: u32,
    },
    /// The answer to `delete_profile`.
    ProfileDeleted { id: String },
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
        /// With `wrong_shard`: the id of the shard that owns the code or token.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shard: Option<String>,
    },
    /// A line of table chat: `from` is the sender's public player id, `at_ms` the
    /// server's clock (milliseconds since it started) when it was said.
    Chat {
        from: String,
        name: String,
        text: String,
        at_ms: u64,
    },
    /// The session waits in the quick-play pool since `since_ms` (the server's clock,
    /// milliseconds since it started).
    Queued { since_ms: u64 },
    /// The shards' shared pool seated the session's ticket at table `code` on shard
    /// `shard`: the client connects to `/ws/<shard>` and joins it with `join_lobby`.
    Matched { code: String, shard: String },
    /// The answer to `list_tables`.
    Tables { tables: Vec<TableView> },
    /// `missed` chat lines of this connection's lobby were left out here: a slow
    /// reader's queue dropped them so that chat never costs it the connection, or a
    /// history replay was cut short.
    ChatGap { missed: u32 },
    /// The change from the `state` numbered `base` to the one numbered `seq`, for a
    /// client that said `hello {deltas: true}` (PROTOCOL.md 7.5): `patch` is a JSON
    /// Merge Patch of the state's `lobby` and `game` ([`merge_patch`]); `events` are
    /// the new state's. (Decoded into a tree its members lose their order: apply the
    /// patch to the text with [`merge_patch::apply`] for exact views.)
    Delta {
        seq: u64,
        base: u64,
        patch: serde_json::Value,
        events: Vec<Event>,
    },
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A profile as its owner sees it in `welcome` (never its key).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileView {
    pub id: String,
    pub name: String,
    /// `mu - 3 sigma`, rounded to hundredths.
    pub rating: Figure,
    pub mu: Figure,
    pub sigma: Figure,
    pub games: u32,
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
    /// The names of those watching without a seat, in the order they came.
    #[serde(default)]
    pub spectators: Vec<String>,
    /// Listed by `list_tables` (PROTOCOL.md 7.2); left out when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub public: bool,
}

/// A public table as `list_tables` lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableView {
    pub code: String,
    /// The host's name.
    pub host: String,
    /// Seats taken.
    pub seats: u8,
    pub max_seats: u8,
    pub options: Options,
    /// `waiting` (a seat to take) or `playing` (to watch).
    pub status: LobbyStatus,
    /// Whether its games are rated (only with profiles).
    pub rated: bool,
    /// The mean rating of its seated profiles; null without any.
    pub rating: Option<f64>,
}

/// One seat of a lobby.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlayerView {
    pub id: String,
    pub name: String,
    pub is_ai: bool,
    pub connected: bool,
    /// An AI seat's level; absent for a human.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<AiLevel>,
    /// The profile this seat rates, with its shown rating, `mu` and `sigma`; absent
    /// for guests and AI levels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating: Option<Figure>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mu: Option<Figure>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigma: Option<Figure>,
    /// After a rated game: how much the game changed the shown rating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating_change: Option<Figure>,
}

/// A running or finished game as one seat sees it, or as a spectator does (`you` null:
/// no hand, no hidden bid, no legal actions).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameView {
    pub you: Option<Seat>,
    /// The game's public id (a string of at least 64 random bits).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    pub observation: Observation,
}

// ---------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------

/// Decodes a player's frame on `/ws`.
pub fn decode_client(text: &str) -> Result<ClientMessage, DecodeError> {
    let type_name = envelope(text)?;
    let message = match type_name.as_ref() {
        "hello" => fields::<HelloFields>(text, "hello").map(|f| ClientMessage::Hello {
            token: f.token,
            profile_key: f.profile_key,
            deltas: f.deltas,
        })?,
        "resync" => ClientMessage::Resync,
        "create_lobby" => {
            fields::<CreateFields>(text, "create_lobby").map(|f| ClientMessage::CreateLobby {
                name: f.name,
                public: f.public,
            })?
        }
        "join_lobby" => {
            fields::<JoinFields>(text, "join_lobby").map(|f| ClientMessage::JoinLobby {
                code: f.code,
                name: f.name,
            })?
        }
        "leave_lobby" => ClientMessage::LeaveLobby,
        "add_ai" => fields::<AddAiFields>(text, "add_ai")
            .map(|f| ClientMessage::AddAi { level: f.level })?,
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
                public: f.public,
            })?
        }
        "start_game" => ClientMessage::StartGame,
        "action" => fields::<ActionFields>(text, "action")
            .map(|f| ClientMessage::Action { action: f.action })?,
        "return_to_lobby" => ClientMessage::ReturnToLobby,
        "spectate" => fields::<JoinFields>(text, "spectate").map(|f| ClientMessage::Spectate {
            code: f.code,
            name: f.name,
        })?,
        "chat" => {
            fields::<ChatFields>(text, "chat").map(|f| ClientMessage::Chat { text: f.text })?
        }
        "create_profile" => fields::<NameFields>(text, "create_profile")
            .map(|f| ClientMessage::CreateProfile { name: f.name })?,
        "delete_profile" => ClientMessage::DeleteProfile,
        "quick_play" => {
            fields::<QuickPlayFields>(text, "quick_play").map(|f| ClientMessage::QuickPlay {
                name: f.name,
                seats: f.seats,
            })?
        }
        "cancel_quick_play" => ClientMessage::CancelQuickPlay,
        "list_tables" => fields::<ListTablesFields>(text, "list_tables")
            .map(|f| ClientMessage::ListTables { running: f.running })?,
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
            shard: f.shard,
            profile: f.profile,
        }),
        "profile" => fields::<ProfileFields>(text, "profile").map(|f| ServerMessage::Profile {
            id: f.id,
            key: f.key,
            name: f.name,
            rating: f.rating,
            mu: f.mu,
            sigma: f.sigma,
            games: f.games,
        }),
        "profile_deleted" => fields::<ProfileDeletedFields>(text, "profile_deleted")
            .map(|f| ServerMessage::ProfileDeleted { id: f.id }),
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
            shard: f.shard,
        }),
        "chat" => fields::<ChatLineFields>(text, "chat").map(|f| ServerMessage::Chat {
            from: f.from,
            name: f.name,
            text: f.text,
            at_ms: f.at_ms,
        }),
        "chat_gap" => fields::<ChatGapFields>(text, "chat_gap")
            .map(|f| ServerMessage::ChatGap { missed: f.missed }),
        "queued" => fields::<QueuedFields>(text, "queued").map(|f| ServerMessage::Queued {
            since_ms: f.since_ms,
        }),
        "matched" => fields::<MatchedFields>(text, "matched").map(|f| ServerMessage::Matched {
            code: f.code,
            shard: f.shard,
        }),
        "tables" => fields::<TablesFields>(text, "tables")
            .map(|f| ServerMessage::Tables { tables: f.tables }),
        "delta" => fields::<DeltaFields>(text, "delta").map(|f| ServerMessage::Delta {
            seq: f.seq,
            base: f.base,
            patch: f.patch,
            events: f.events,
        }),
        other => Err(unknown_type(other)),
    }
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

#[derive(Deserialize)]
struct HelloFields {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    profile_key: Option<ProfileKey>,
    #[serde(default)]
    deltas: bool,
}

#[derive(Deserialize)]
struct DeltaFields {
    seq: u64,
    base: u64,
    patch: serde_json::Value,
    events: Vec<Event>,
}

#[derive(Deserialize)]
struct NameFields {
    name: String,
}

#[derive(Deserialize)]
struct CreateFields {
    name: String,
    #[serde(default)]
    public: bool,
}

#[derive(Deserialize)]
struct QuickPlayFields {
    name: String,
    #[serde(default)]
    seats: Option<u8>,
}

#[derive(Deserialize)]
struct ListTablesFields {
    #[serde(default)]
    running: bool,
}

#[derive(Deserialize)]
struct QueuedFields {
    since_ms: u64,
}

#[derive(Deserialize)]
struct MatchedFields {
    code: String,
    shard: String,
}

#[derive(Deserialize)]
struct TablesFields {
    tables: Vec<TableView>,
}

#[derive(Deserialize)]
struct JoinFields {
    code: String,
    name: String,
}

#[derive(Deserialize)]
struct ChatFields {
    text: String,
}

#[derive(Deserialize)]
struct ChatGapFields {
    missed: u32,
}

#[derive(Deserialize)]
struct ChatLineFields {
    from: String,
    name: String,
    text: String,
    at_ms: u64,
}

#[derive(Deserialize)]
struct AddAiFields {
    #[serde(default)]
    level: Option<AiLevel>,
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
    #[serde(default)]
    public: Option<bool>,
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
    #[serde(default)]
    shard: Option<String>,
    #[serde(default)]
    profile: Option<ProfileView>,
}

#[derive(Deserialize)]
struct ProfileFields {
    id: String,
    key: String,
    name: String,
    rating: Figure,
    mu: Figure,
    sigma: Figure,
    games: u32,
}

#[derive(Deserialize)]
struct ProfileDeletedFields {
    id: String,
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
    #[serde(default)]
    shard: Option<String>,
}
