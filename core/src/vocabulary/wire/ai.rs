//! The AI service's messages on `/internal/ai` (PROTOCOL.md section 4) and the body of
//! `GET /health` (section 1), with their decoders and encoders.

use serde::{Deserialize, Serialize};

use crate::machine::overload::LoadLevel;
use crate::vocabulary::game::{Action, AiLevel, Observation};

use super::codec::{DecodeError, envelope, envelope_object, fields, to_json, unknown_type};

// ---------------------------------------------------------------------------------------
// AI protocol (`/internal/ai`)
// ---------------------------------------------------------------------------------------

/// A message from the server to the AI service (PROTOCOL.md section 4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AiRequest {
    /// Decide for the seat to move; `timeout` is how many seconds the server waits,
    /// `level` how well to play (PROTOCOL.md section 6.5; absent is `strong`).
    Decide {
        request_id: u64,
        observation: Observation,
        timeout: f64,
        #[serde(default)]
        level: AiLevel,
    },
}

impl AiRequest {
    /// The request's id, which its reply names.
    pub fn request_id(&self) -> u64 {
        match self {
            AiRequest::Decide { request_id, .. } => *request_id,
        }
    }
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
    /// The build's version (PROTOCOL.md section 6.2); empty from a server before it.
    #[serde(default)]
    pub version: String,
    /// The server's `SHARD_ID`, only on a sharded server (PROTOCOL.md section 6.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
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

/// Decodes a server frame on `/internal/ai` (for the AI service and tests).
pub fn decode_ai_request(text: &str) -> Result<AiRequest, DecodeError> {
    let type_name = envelope(text)?;
    match type_name.as_ref() {
        "decide" => fields::<DecideFields>(text, "decide").map(|f| AiRequest::Decide {
            request_id: f.request_id,
            observation: f.observation,
            timeout: f.timeout,
            level: f.level,
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

#[derive(Deserialize)]
struct DecideFields {
    request_id: u64,
    observation: Observation,
    timeout: f64,
    #[serde(default)]
    level: AiLevel,
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
