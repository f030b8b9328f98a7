//! AI levels (PROTOCOL.md section 6.5) and the easy player: the heuristic misjudging on
//! purpose. Written once here, so the server's fallback and the AI service play an easy
//! seat alike.
//!
//! The easy player takes the heuristic's decision and then, with the caller's RNG:
//! - bids one more or one less than the heuristic with probability
//!   [`EASY_BID_MISS_RATE`] (a legal neighbour, chosen at random when both are legal;
//!   the heuristic's bid when neither is);
//! - plays a card chosen uniformly among the legal ones with probability
//!   [`EASY_CARD_RANDOM_RATE`] (which may be the heuristic's card);
//! - chooses the trump suit as the heuristic does.
//!
//! It is deterministic given that RNG, like the heuristic.

use std::fmt;
use std::str::FromStr;

use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};

use super::bot::{self, Params};
use super::observation::Observation;
use super::selfplay;
use super::types::{Action, Phase};

/// How often the easy player's bid is off by one from the heuristic's (when a
/// neighbouring bid is legal).
pub const EASY_BID_MISS_RATE: f64 = 0.25;
/// How often the easy player plays a card chosen at random among the legal ones.
pub const EASY_CARD_RANDOM_RATE: f64 = 0.20;

/// How well an AI seat plays.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum AiLevel {
    /// The heuristic, misjudging on purpose ([`decide_easy`]).
    Easy,
    /// The heuristic ([`bot::decide`]).
    Normal,
    /// The AI service's primary agent (`AI_AGENT`, `search` by default); the heuristic
    /// when the service cannot answer.
    #[default]
    Strong,
}

impl AiLevel {
    /// Every level, weakest first.
    pub const ALL: [AiLevel; 3] = [AiLevel::Easy, AiLevel::Normal, AiLevel::Strong];

    /// The wire name: `easy`, `normal`, `strong`.
    pub fn name(self) -> &'static str {
        match self {
            AiLevel::Easy => "easy",
            AiLevel::Normal => "normal",
            AiLevel::Strong => "strong",
        }
    }

    /// Whether it is the default, [`AiLevel::Strong`] (records leave it out then).
    pub fn is_strong(&self) -> bool {
        *self == AiLevel::Strong
    }
}

impl fmt::Display for AiLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A level name that is not `easy`, `normal` or `strong`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AiLevelError;

impl fmt::Display for AiLevelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("level must be easy, normal or strong")
    }
}

impl std::error::Error for AiLevelError {}

impl FromStr for AiLevel {
    type Err = AiLevelError;

    fn from_str(s: &str) -> Result<AiLevel, AiLevelError> {
        AiLevel::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or(AiLevelError)
    }
}

/// The server's fallback decision for an AI seat of `level`: the easy player for
/// `easy`, the shipped heuristic otherwise. `None` when the seat has nothing to do.
pub fn fallback(level: AiLevel, obs: &Observation, rng: &mut impl Rng) -> Option<Action> {
    match level {
        AiLevel::Easy => decide_easy(&Params::default(), obs, rng),
        AiLevel::Normal | AiLevel::Strong => bot::decide(obs, rng),
    }
}

/// The easy player's decision with the heuristic tuned by `params`; `None` when the
/// seat has nothing to do.
pub fn decide_easy(params: &Params<'_>, obs: &Observation, rng: &mut impl Rng) -> Option<Action> {
    let heuristic = bot::decide_with(params, obs, rng)?;
    Some(misjudge(obs, heuristic, rng))
}

/// What the easy player makes of the heuristic's `action` (see the module doc). Always
/// one of `obs.legal_actions` when `action` is.
pub fn misjudge(obs: &Observation, action: Action, rng: &mut impl Rng) -> Action {
    match (obs.phase, action) {
        (Phase::Bidding, Action::Bid { bid }) => {
            if !rng.random_bool(EASY_BID_MISS_RATE) {
                return action;
            }
            let neighbours: Vec<Action> = [bid.checked_sub(1), bid.checked_add(1)]
                .into_iter()
                .flatten()
                .map(|bid| Action::Bid { bid })
                .filter(|a| obs.legal_actions.contains(a))
                .collect();
            match neighbours.len() {
                0 => action,
                n => neighbours
                    .get(rng.random_range(0..n))
                    .copied()
                    .unwrap_or(action),
            }
        }
        (Phase::Playing, Action::Play { .. }) => {
            if rng.random_bool(EASY_CARD_RANDOM_RATE) {
                selfplay::random_action(obs, rng).unwrap_or(action)
            } else {
                action
            }
        }
        _ => action,
    }
}
