//! One seat's view of a game (RULES.md, "Observation"): what the seat may know and
//! nothing more. It is what players receive as `game.observation` and what the AI
//! service decides from.
//!
//! Architecture invariant: an observation is built only from public state and the
//! viewer's own hand, so it never holds another seat's hand or a hidden bid.

use serde::{Deserialize, Serialize};

use super::card::{Card, Suit};
use super::rules::Game;
use super::types::{Action, CompletedTrick, Options, Phase, Placing, PlayedCard, Seat};

/// A seat's view. Field order follows RULES.md so encoded views read like the example.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    pub players: u8,
    pub round: u8,
    pub rounds: u8,
    pub phase: Phase,
    pub dealer: Seat,
    /// The seat whose action is awaited; under hidden bids the viewer while it has not
    /// bid, else null; null when finished.
    pub to_act: Option<Seat>,
    /// Milliseconds left before the fallback acts for a timed-out human, set by the
    /// server when `turn_seconds` is on; the engine has no clock and leaves it null.
    pub turn_deadline_ms: Option<u64>,
    pub trump_card: Option<Card>,
    pub trump_suit: Option<Suit>,
    /// The viewer's own hand, sorted by suit and rank, Wizards and Jesters last.
    pub hand: Vec<Card>,
    pub bids: Vec<Option<u8>>,
    pub has_bid: Vec<bool>,
    pub tricks_won: Vec<u8>,
    pub trick: Vec<PlayedCard>,
    pub leader: Seat,
    pub last_trick: Option<CompletedTrick>,
    /// Every card played this round, in order.
    pub played: Vec<Card>,
    pub scores: Vec<i32>,
    /// Score change per finished round: `round_scores[r][seat]`.
    pub round_scores: Vec<Vec<i32>>,
    pub options: Options,
    pub legal_actions: Vec<Action>,
    /// The final ranking once the game is finished (an addition to RULES.md's example,
    /// so a reconnecting player sees the result).
    #[serde(default)]
    pub ranking: Option<Vec<Placing>>,
}

impl Game {
    /// The view of `seat`. A seat outside the table gets a spectator's view: public
    /// information only, with an empty hand and no legal actions.
    pub fn observation(&self, seat: Seat) -> Observation {
        let hidden = self.bids_hidden();
        let bids = (0u8..)
            .zip(&self.bids)
            .map(|(s, &b)| if hidden && s != seat { None } else { b })
            .collect();
        let to_act = self.to_act_for(seat);
        let mut hand = self.hand(seat).to_vec();
        hand.sort_unstable();
        Observation {
            players: self.players,
            round: self.round,
            rounds: self.rounds,
            phase: self.phase,
            dealer: self.dealer,
            to_act,
            turn_deadline_ms: None,
            trump_card: self.trump_card,
            trump_suit: self.trump_suit,
            hand,
            bids,
            has_bid: self.bids.iter().map(Option::is_some).collect(),
            tricks_won: self.tricks_won.clone(),
            trick: self.trick.clone(),
            leader: self.leader,
            last_trick: self.last_trick.clone(),
            played: self.played.clone(),
            scores: self.scores.clone(),
            round_scores: self.round_scores.clone(),
            options: self.options,
            legal_actions: self.legal_actions(seat),
            ranking: self.ranking.clone(),
        }
    }

    /// Whether bids are hidden from other seats now (hidden bids, bidding not over).
    pub(super) fn bids_hidden(&self) -> bool {
        self.options.hidden_bids
            && self.phase == Phase::Bidding
            && self.bids.iter().any(Option::is_none)
    }

    /// The seat to act as `seat` sees it: under hidden bids every seat that has not
    /// bid sees itself.
    pub(super) fn to_act_for(&self, seat: Seat) -> Option<Seat> {
        match self.to_act() {
            Some(s) => Some(s),
            None if self.phase == Phase::Bidding && self.awaits(seat) => Some(seat),
            None => None,
        }
    }
}
