//! What a simulated player does at the table: pick a move from its own view (the
//! shipped heuristic, sometimes a random legal move), and tell whether a later view
//! shows a move it made (the checkers' "no accepted move lost").

use rand::Rng;
use rand_chacha::ChaCha12Rng;
use wizard_core::game::{Action, Observation, Phase, bot, selfplay};

/// A move the player sent, as it saw the game then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentMove {
    pub action: Action,
    pub round: u8,
    pub sent_us: u64,
}

/// The player's choice for `obs` (mostly the heuristic, one in ten random).
pub fn choose(obs: &Observation, rng: &mut ChaCha12Rng) -> Option<Action> {
    if rng.random_range(0..10) == 0 {
        selfplay::random_action(obs, rng)
    } else {
        bot::decide(obs, rng)
    }
}

/// Whether `obs` (seen by `seat`) shows `m` applied.
pub fn reflects(obs: &Observation, seat: u8, m: &SentMove) -> bool {
    if obs.round != m.round || obs.phase == Phase::Finished {
        return true;
    }
    match m.action {
        Action::Bid { .. } => obs.has_bid.get(usize::from(seat)).copied().unwrap_or(false),
        Action::Play { card } => !obs.hand.contains(&card),
        Action::ChooseTrump { .. } => obs.phase != Phase::ChoosingTrump,
    }
}

/// How far a game has come, as one seat sees it: (round, bids made, cards played).
/// Within one game it never goes back; a new game starts again at round 1.
pub fn progress(obs: &Observation) -> (u8, usize, usize) {
    let bids = obs.has_bid.iter().filter(|b| **b).count();
    (obs.round, bids, obs.played.len())
}
