//! The `code` of an `error` message and the close codes of player connections
//! (PROTOCOL.md, "Error codes" and "Close codes").

use std::fmt;

use serde::{Deserialize, Serialize};

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
    /// The code or token belongs to another shard, named by the `error`'s `shard`
    /// (PROTOCOL.md section 6.3).
    WrongShard,
}

impl ErrorCode {
    /// Every code, in the order of PROTOCOL.md's table.
    pub const ALL: [ErrorCode; 10] = [
        ErrorCode::Invalid,
        ErrorCode::HelloRequired,
        ErrorCode::NotFound,
        ErrorCode::NotAllowed,
        ErrorCode::IllegalAction,
        ErrorCode::Busy,
        ErrorCode::RateLimited,
        ErrorCode::SessionReplaced,
        ErrorCode::Removed,
        ErrorCode::WrongShard,
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
            ErrorCode::WrongShard => "wrong_shard",
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
    // The frame layer:
    /// 1002: the client broke RFC 6455 (see [`crate::vocabulary::io::BadFrame::Protocol`]).
    ProtocolError,
    /// 1007: a text message or close reason that is not UTF-8.
    InvalidPayload,
    /// 1012: the server restarts with a durable store; reconnect soon, the game is kept.
    ServiceRestart,
}

impl CloseCode {
    /// Every close code, in the order of PROTOCOL.md (the frame layer's last).
    pub const ALL: [CloseCode; 9] = [
        CloseCode::ShuttingDown,
        CloseCode::BinaryFrame,
        CloseCode::MessageFlood,
        CloseCode::MessageTooLarge,
        CloseCode::ConnectionLimit,
        CloseCode::SessionReplaced,
        CloseCode::ProtocolError,
        CloseCode::InvalidPayload,
        CloseCode::ServiceRestart,
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
            CloseCode::ProtocolError => 1002,
            CloseCode::InvalidPayload => 1007,
            CloseCode::ServiceRestart => 1012,
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
            CloseCode::ProtocolError => "websocket protocol error",
            CloseCode::InvalidPayload => "text is not valid UTF-8",
            CloseCode::ServiceRestart => "server restarting, reconnect soon",
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
