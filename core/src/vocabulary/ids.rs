//! The ids of the server's things: connections ([`ConnId`], numbered by the shell),
//! sessions ([`SessionId`]) and lobbies ([`LobbyId`]), numbered by the machine. Each is
//! never reused within one server's life and prints as its bare number. A profile key
//! ([`ProfileKey`]) is the secret a profile signs in with.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A connection, numbered by the shell; never reused within one server's life.
/// Printed as its bare number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u64);

impl ConnId {
    /// The id a shell numbers its next connection with.
    pub fn next(self) -> ConnId {
        ConnId(self.0 + 1)
    }
}

impl fmt::Display for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A session, numbered by the registry; never reused. Stored and printed as its bare
/// number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(pub u64);

/// A lobby, numbered by the lobby manager; never reused. Stored and printed as its bare
/// number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LobbyId(pub u64);

impl SessionId {
    /// The id the registry numbers the session after this one with.
    pub fn next(self) -> SessionId {
        SessionId(self.0 + 1)
    }
}

impl LobbyId {
    /// The id the lobby manager numbers the lobby after this one with.
    pub fn next(self) -> LobbyId {
        LobbyId(self.0 + 1)
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for LobbyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A profile key as a client sends it: a secret, so its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProfileKey(pub String);

impl fmt::Debug for ProfileKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProfileKey(..)")
    }
}
