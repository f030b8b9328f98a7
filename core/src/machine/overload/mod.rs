//! Overload control sub-machines and the pure parsers the load probe needs.
//!
//! Each sub-machine is a plain struct that takes `now` and returns a decision; only the
//! server turns decisions into outputs.

pub mod breaker;
pub mod connections;
pub mod level;
pub mod retry;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The server's load level, as reported in `server_status` and `/health`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadLevel {
    #[default]
    Normal,
    /// Informational: the server is working hard but still admits new games.
    Busy,
    /// New games are refused until the level recovers.
    Overloaded,
}

impl LoadLevel {
    pub fn name(self) -> &'static str {
        match self {
            LoadLevel::Normal => "normal",
            LoadLevel::Busy => "busy",
            LoadLevel::Overloaded => "overloaded",
        }
    }
}

impl fmt::Display for LoadLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A string that is not `normal`, `busy` or `overloaded`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadLevelParseError;

impl fmt::Display for LoadLevelParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("expected normal, busy or overloaded")
    }
}

impl std::error::Error for LoadLevelParseError {}

impl FromStr for LoadLevel {
    type Err = LoadLevelParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "normal" => Ok(LoadLevel::Normal),
            "busy" => Ok(LoadLevel::Busy),
            "overloaded" => Ok(LoadLevel::Overloaded),
            _ => Err(LoadLevelParseError),
        }
    }
}
