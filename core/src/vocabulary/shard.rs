//! Shard identity (PROTOCOL.md section 6.3): the `SHARD_ID` a server may have, and which
//! shard a lobby code or session token names.
//!
//! A shard's id is one character of the lobby-code alphabet. A sharded server puts it
//! first in every lobby code it creates (in place of the first random character, so a
//! code keeps its length) and in front of every session token it issues (in addition
//! to the token's random bytes, so a token stays as hard to guess). The first
//! character of a code or a sharded token thus names the shard that owns it; this
//! module is the one place that reads it ([`owner_of`]), for every message that
//! carries a code or a token. It is not a state machine: pure functions and a value.

use std::fmt;
use std::str::FromStr;

use crate::machine::lobby::CODE_ALPHABET;
use crate::vocabulary::rng::TOKEN_CHARS;

/// A shard's id: one character of [`CODE_ALPHABET`], stored upper case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ShardId(u8);

impl ShardId {
    /// The id as its one character.
    pub fn as_char(self) -> char {
        char::from(self.0)
    }

    /// The id as a one-character string (e.g. for the `shard` field of `wrong_shard`).
    pub fn as_str(&self) -> &str {
        // One ASCII byte is always UTF-8.
        std::str::from_utf8(std::slice::from_ref(&self.0)).unwrap_or("")
    }

    /// The id of an alphabet character, case-insensitively (codes are); `None` for any
    /// other byte.
    fn from_byte(byte: u8) -> Option<ShardId> {
        let upper = byte.to_ascii_uppercase();
        CODE_ALPHABET.contains(&upper).then_some(ShardId(upper))
    }
}

impl fmt::Display for ShardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `SHARD_ID` is not one character of the lobby-code alphabet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadShardId;

impl FromStr for ShardId {
    type Err = BadShardId;

    /// Exactly one character of [`CODE_ALPHABET`], upper case as written there (a
    /// setting is written once, so it is held to the one spelling that routes use).
    fn from_str(text: &str) -> Result<ShardId, BadShardId> {
        match text.as_bytes() {
            [byte] if CODE_ALPHABET.contains(byte) => Ok(ShardId(*byte)),
            _ => Err(BadShardId),
        }
    }
}

/// Length of a session token issued by a sharded server: the shard's id, then the
/// same [`TOKEN_CHARS`] characters of randomness as an unsharded token.
pub const SHARDED_TOKEN_CHARS: usize = TOKEN_CHARS + 1;

/// The shard a lobby code or a session token names: its first character when that is
/// one of [`CODE_ALPHABET`] (case-insensitive, like codes), `None` otherwise. Whether
/// the string is a code or a token of this shape is the caller's business (see
/// [`token_owner`]).
pub fn owner_of(code_or_token: &str) -> Option<ShardId> {
    code_or_token
        .trim()
        .bytes()
        .next()
        .and_then(ShardId::from_byte)
}

/// The shard a token names when it has the shape of a sharded token
/// ([`SHARDED_TOKEN_CHARS`] long); `None` for an unsharded token (issued by a server
/// without `SHARD_ID`) and anything else.
pub fn token_owner(token: &str) -> Option<ShardId> {
    if token.len() != SHARDED_TOKEN_CHARS {
        return None;
    }
    owner_of(token)
}

/// Where a code or token belongs as seen from a server with `own` as its `SHARD_ID`:
/// `Some(owner)` when it names another shard, `None` when it is this server's (or the
/// server is not sharded, or the string names no shard).
pub fn elsewhere(own: Option<ShardId>, owner: Option<ShardId>) -> Option<ShardId> {
    match (own, owner) {
        (Some(own), Some(owner)) if owner != own => Some(owner),
        _ => None,
    }
}
