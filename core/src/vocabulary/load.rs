//! The server's load as every wing speaks of it: the [`LoadLevel`] (in
//! `server_status`, `/health` and the AI protocol) and the probe's [`LoadSample`] (an
//! [`crate::vocabulary::io::Input`]). Samples become levels in the machine's
//! `overload::level`.

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

/// One load probe report, covering the interval since the previous one.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoadSample {
    /// Largest event-loop lag seen in the interval.
    pub lag_us_max: u64,
    /// 99th percentile of the event-loop lag in the interval.
    pub lag_us_p99: u64,
    /// Process CPU time over the interval as a share of the CPU quota, where the quota
    /// is capped at one core (the game logic runs on one core): 1.0 is saturation.
    pub cpu_share: f64,
    /// Share of the cgroup's scheduling periods in the interval that were throttled.
    pub throttled_share: f64,
}
