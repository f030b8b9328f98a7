//! The rules of Wizard (RULES.md): cards, the game state machine, per-seat observations,
//! the cheap heuristic player and the AI levels.

mod action_de;
pub mod bot;
mod bot_table;
pub mod card;
pub mod level;
pub mod observation;
pub mod observation_json;
pub mod rules;
pub mod selfplay;
pub mod trick;
pub mod types;
pub mod world;

pub use card::{Card, CardParseError, Suit, SuitParseError};
pub use level::AiLevel;
pub use observation::Observation;
pub use observation_json::ObservationJson;
pub use rules::{Game, ranking, round_score, rounds_for};
pub use types::{
    Action, ActionError, BidRestriction, CompletedTrick, Event, Options, OptionsError, Phase,
    Placing, PlayedCard, Seat, SetupError,
};
