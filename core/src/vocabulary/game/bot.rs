//! The cheap heuristic player: the server's fallback and the AI service's degrade agent.
//!
//! It decides from an [`Observation`] alone (so it can never cheat), in microseconds:
//! - bids the sum of per-card trick probabilities from a table calibrated by simulation
//!   (`cargo run --release -p wizard-core --example calibrate_bot`), shaded by the bids
//!   already on the table and kept within the bid restriction;
//! - picks the trump suit that maximises that expected trick count;
//! - plays by need: win as cheaply as possible while tricks are needed, otherwise shed
//!   the highest card that does not win, keeping Jesters as escapes.
//!
//! Ties are broken with the caller's RNG, so it is deterministic given that RNG.

use rand::{Rng, RngExt};

use super::bot_table::CALIBRATED;
use super::card::{Card, Suit};
use super::observation::Observation;
use super::trick;
use super::types::{Action, PLAYERS_MIN, Phase};

/// Hand-size buckets of the trick-probability table.
pub const HAND_BUCKETS: usize = 6;
/// Card classes: Wizard, Jester, trump ranks 2..=14, plain ranks 2..=14.
pub const CARD_CLASSES: usize = 28;
/// Player counts 3..=6.
pub const PLAYER_COUNTS: usize = 4;

/// Probability that a card takes a trick, by player count, whether the round has a
/// trump suit, hand size bucket and card class.
#[derive(Clone, Debug, PartialEq)]
pub struct BidTable {
    pub p: [[[[f32; CARD_CLASSES]; HAND_BUCKETS]; 2]; PLAYER_COUNTS],
}

impl BidTable {
    /// The probability for one card in the given situation.
    pub fn get(&self, players: u8, trump: Option<Suit>, hand_size: u8, card: Card) -> f32 {
        let pi = usize::from(players.saturating_sub(PLAYERS_MIN)).min(PLAYER_COUNTS - 1);
        let ti = usize::from(trump.is_some());
        self.p[pi][ti][hand_bucket(hand_size)][card_class(card, trump)]
    }
}

/// The bucket of a hand size (cards dealt per player this round).
pub fn hand_bucket(hand_size: u8) -> usize {
    match hand_size {
        0 | 1 => 0,
        2 => 1,
        3 | 4 => 2,
        5..=7 => 3,
        8..=11 => 4,
        _ => 5,
    }
}

/// The class of a card relative to the trump suit.
pub fn card_class(card: Card, trump: Option<Suit>) -> usize {
    match card {
        Card::Wizard(_) => 0,
        Card::Jester(_) => 1,
        Card::Suited { suit, rank } if Some(suit) == trump => 2 + usize::from(rank - 2),
        Card::Suited { rank, .. } => 15 + usize::from(rank - 2),
    }
}

/// How the heuristic player is tuned. [`Params::default`] is the shipped player.
#[derive(Clone, Copy, Debug)]
pub struct Params<'a> {
    pub table: &'a BidTable,
    /// Added to the expected trick count before rounding a bid (positive bids higher).
    pub aggression: f32,
    /// How much each trick that earlier bidders claim beyond their share lowers our bid.
    pub bid_pressure: f32,
}

impl Default for Params<'static> {
    fn default() -> Self {
        Params {
            table: &CALIBRATED,
            aggression: 0.0,
            bid_pressure: 0.25,
        }
    }
}

/// The shipped heuristic's decision for the seat that `obs` belongs to; `None` when
/// that seat has nothing to do.
pub fn decide(obs: &Observation, rng: &mut impl Rng) -> Option<Action> {
    decide_with(&Params::default(), obs, rng)
}

/// The heuristic's decision with explicit tuning.
pub fn decide_with(params: &Params<'_>, obs: &Observation, rng: &mut impl Rng) -> Option<Action> {
    let first = *obs.legal_actions.first()?;
    let action = match obs.phase {
        Phase::ChoosingTrump => choose_trump(params, obs),
        Phase::Bidding => choose_bid(params, obs),
        Phase::Playing => choose_card(obs, rng),
        Phase::Finished => None,
    };
    // Never return something the engine did not list (the AI bridge re-validates too).
    Some(
        action
            .filter(|a| obs.legal_actions.contains(a))
            .unwrap_or(first),
    )
}

/// Expected tricks of `hand` under `trump`.
pub fn expected_tricks(params: &Params<'_>, obs: &Observation, trump: Option<Suit>) -> f32 {
    obs.hand
        .iter()
        .map(|&c| params.table.get(obs.players, trump, obs.round, c))
        .sum()
}

fn choose_trump(params: &Params<'_>, obs: &Observation) -> Option<Action> {
    let mut best: Option<(f32, Suit)> = None;
    for suit in Suit::ALL {
        let value = expected_tricks(params, obs, Some(suit));
        if best.is_none_or(|(v, _)| value > v) {
            best = Some((value, suit));
        }
    }
    best.map(|(_, suit)| Action::ChooseTrump { suit })
}

fn choose_bid(params: &Params<'_>, obs: &Observation) -> Option<Action> {
    let seat = usize::from(obs.to_act?);
    let round = f32::from(obs.round);
    let players = f32::from(obs.players);
    let mut estimate = expected_tricks(params, obs, obs.trump_suit);
    // Earlier visible bids: what they claim beyond an even share leaves less for us.
    let (known, claimed) = obs
        .bids
        .iter()
        .enumerate()
        .filter(|&(s, _)| s != seat)
        .filter_map(|(_, b)| *b)
        .fold((0u8, 0u32), |(n, sum), b| (n + 1, sum + u32::from(b)));
    let share = round * f32::from(known) / players;
    #[allow(clippy::cast_precision_loss)]
    let pressure = claimed as f32 - share;
    estimate = (estimate - params.bid_pressure * pressure + params.aggression).clamp(0.0, round);
    // The nearest legal bid (the restriction may forbid the rounded one).
    obs.legal_actions
        .iter()
        .filter_map(|a| match *a {
            Action::Bid { bid } => Some(bid),
            _ => None,
        })
        .min_by(|&a, &b| {
            let da = (f32::from(a) - estimate).abs();
            let db = (f32::from(b) - estimate).abs();
            da.total_cmp(&db).then(a.cmp(&b))
        })
        .map(|bid| Action::Bid { bid })
}

/// A card's general power under `trump`: Wizards, then trumps, then plain cards by rank,
/// Jesters last.
fn power(card: Card, trump: Option<Suit>) -> u8 {
    match card {
        Card::Wizard(_) => 100,
        Card::Jester(_) => 0,
        Card::Suited { suit, rank } if Some(suit) == trump => 40 + rank,
        Card::Suited { rank, .. } => rank,
    }
}

fn choose_card(obs: &Observation, rng: &mut impl Rng) -> Option<Action> {
    let seat = usize::from(obs.to_act?);
    let bid = obs.bids.get(seat).copied().flatten().unwrap_or(0);
    let won = obs.tricks_won.get(seat).copied().unwrap_or(0);
    let want_tricks = bid > won;
    let trump = obs.trump_suit;
    let legal: Vec<Card> = obs
        .legal_actions
        .iter()
        .filter_map(|a| match *a {
            Action::Play { card } => Some(card),
            _ => None,
        })
        .collect();
    let by_power = |c: &Card| i32::from(power(*c, trump));
    let card = if obs.trick.is_empty() {
        if want_tricks {
            pick(&legal, by_power, true, rng)
        } else {
            let plain: Vec<Card> = legal.iter().copied().filter(|c| !c.is_jester()).collect();
            pick(
                if plain.is_empty() { &legal } else { &plain },
                by_power,
                false,
                rng,
            )
        }
    } else {
        let mut cards: Vec<Card> = obs.trick.iter().map(|p| p.card).collect();
        let position = cards.len();
        let mut winners = Vec::new();
        let mut losers = Vec::new();
        for &c in &legal {
            cards.push(c);
            if trick::winner(&cards, trump) == Some(position) {
                winners.push(c);
            } else {
                losers.push(c);
            }
            cards.pop();
        }
        if want_tricks {
            if winners.is_empty() {
                let plain: Vec<Card> = losers.iter().copied().filter(|c| !c.is_jester()).collect();
                pick(
                    if plain.is_empty() { &losers } else { &plain },
                    by_power,
                    false,
                    rng,
                )
            } else {
                pick(&winners, by_power, false, rng)
            }
        } else {
            let plain: Vec<Card> = losers.iter().copied().filter(|c| !c.is_jester()).collect();
            if !plain.is_empty() {
                pick(&plain, by_power, true, rng)
            } else if !losers.is_empty() {
                pick(&losers, by_power, false, rng)
            } else {
                pick(&winners, by_power, false, rng)
            }
        }
    };
    card.map(|card| Action::Play { card })
}

/// The card with the highest (or lowest) key; equal keys are broken by `rng`.
fn pick(
    cards: &[Card],
    key: impl Fn(&Card) -> i32,
    highest: bool,
    rng: &mut impl Rng,
) -> Option<Card> {
    let sign = if highest { 1 } else { -1 };
    let best = cards.iter().map(|c| sign * key(c)).max()?;
    let ties: Vec<Card> = cards
        .iter()
        .copied()
        .filter(|c| sign * key(c) == best)
        .collect();
    match ties.len() {
        0 => None,
        1 => ties.first().copied(),
        n => ties.get(rng.random_range(0..n)).copied(),
    }
}
