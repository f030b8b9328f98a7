//! Determinized Monte Carlo search ("perfect information Monte Carlo" with heuristic
//! rollouts): the strong agent.
//!
//! For one decision it repeatedly
//! 1. samples a world: the other seats' hands drawn from the unseen cards, consistent
//!    with every suit a seat has shown out of (the `sample` submodule documents what is known
//!    and what is lost), hidden bids filled in by the heuristic, and weighted by how
//!    well the sampled hands explain the opponents' public bids;
//! 2. plays every candidate action in that same world (common random numbers: all
//!    candidates see the same cards, so their difference is not card luck), and rolls
//!    the ROUND out with every seat played by a copy of the core's heuristic;
//! 3. adds the seat's round score change (not its tricks) to the candidate's total.
//!
//! It stops at the budget's deadline or iteration count (one iteration = one world,
//! all candidates still in the race) and returns the candidate with the best weighted
//! mean. Candidates are the legal actions, except that bids far from the heuristic's
//! estimate are not tried.
//!
//! The stopping rule (the `race` submodule): once every candidate has
//! `stop_worlds_min` worlds, a candidate whose mean is below the leader's by more than
//! `stop_z` standard errors of their paired difference is dropped (the worlds are
//! common, so the difference's variance is small when the answer is clear), and the
//! search ends as soon as one candidate is left. A candidate is also dropped once the
//! value the search expects to lose by dropping it (how much better than the leader it
//! may in truth be, on average, given that mean and standard error) is below
//! `stop_loss` points: a close call between candidates worth the same is not worth
//! more worlds. A candidate that has scored exactly as the leader in each of
//! `stop_tie_worlds_min` worlds is dropped as indistinguishable. Cards that are
//! interchangeable whatever the hidden hands (two Wizards, two Jesters, two cards of a
//! suit with no card between them that another seat could hold) are one candidate.
//! It never returns an action outside `obs.legal_actions`: with one legal action, an
//! expired deadline or an observation it cannot read, the heuristic's choice stands.

mod race;
mod sample;
pub(crate) mod sim;

use std::time::Instant;

use rand::Rng;
use wizard_core::vocabulary::game::bot::{self, Params};
use wizard_core::vocabulary::game::world::Hidden;
use wizard_core::vocabulary::game::{Action, Card, Observation, Phase, Seat};

use crate::agent::Budget;
use race::Race;
use sample::Knowledge;
pub use sample::KnowledgeError;
use sim::{Heuristic, SEATS_MAX, Sim, Stage};

/// Tuning of the search. [`SearchConfig::default`] is the shipped agent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SearchConfig {
    /// Worlds to sample when the budget sets neither a deadline nor an iteration count.
    pub worlds_default: u32,
    /// Bids further than this from the heuristic's estimate are not evaluated.
    pub bid_window: f32,
    /// Spread (in tricks) of the bid-likelihood weight of a world; 0 turns it off.
    pub bid_sigma: f32,
    /// The value of a rollout is the seat's round score change minus this times the
    /// mean change of the other seats (0: own score only; 1: the margin on the table).
    pub opponent_weight: f32,
    /// The stopping rule's confidence: a candidate is dropped once its mean is below
    /// the leader's by more than this many standard errors of their paired difference,
    /// and the search stops when one candidate is left; 0 turns the rule off.
    pub stop_z: f32,
    /// The stopping rule also drops a candidate once the value the search expects to
    /// lose by dropping it (how much better than the leader it may in truth be, on
    /// average, given the paired difference's mean and standard error) is below this
    /// many points; 0 turns this part off.
    pub stop_loss: f32,
    /// Worlds every candidate gets before the stopping rule may drop one.
    pub stop_worlds_min: u32,
    /// Worlds before a candidate that scored exactly as the leader in every one of them
    /// is dropped as indistinguishable.
    pub stop_tie_worlds_min: u32,
}

impl Default for SearchConfig {
    fn default() -> SearchConfig {
        SearchConfig {
            worlds_default: 200,
            bid_window: 2.0,
            bid_sigma: 1.0,
            opponent_weight: 0.0,
            stop_z: 3.0,
            stop_loss: 0.1,
            stop_worlds_min: 32,
            stop_tie_worlds_min: 128,
        }
    }
}

/// Why a search fell back to the heuristic's action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// Only one legal action: nothing to search.
    Forced,
    /// Every legal action is interchangeable with the heuristic's (see
    /// [`interchangeable`]): whichever is played, the round goes the same.
    Interchangeable,
    /// The deadline had passed before the first world.
    Deadline,
    /// The observation could not be read as a position (see [`KnowledgeError`]).
    Knowledge(KnowledgeError),
}

/// The result of one search.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchOutcome {
    pub action: Action,
    /// Worlds evaluated (each with every candidate).
    pub worlds: u32,
    /// Each candidate with its weighted mean round score change.
    pub values: Vec<(Action, f64)>,
    /// Set when the heuristic's action was returned without searching.
    pub fallback: Option<Fallback>,
}

/// The error of a search: there is no legal action to choose from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoLegalAction;

impl std::fmt::Display for NoLegalAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the observation lists no legal action")
    }
}

impl std::error::Error for NoLegalAction {}

/// Searches the decision of the seat `obs` belongs to.
pub fn search(
    obs: &Observation,
    budget: &Budget,
    config: &SearchConfig,
    rng: &mut impl Rng,
) -> Result<SearchOutcome, NoLegalAction> {
    let params = Params::default();
    let default = bot::decide_with(&params, obs, rng).ok_or(NoLegalAction)?;
    let fallback = |why: Fallback| SearchOutcome {
        action: default,
        worlds: 0,
        values: Vec::new(),
        fallback: Some(why),
    };
    if obs.legal_actions.len() == 1 {
        return Ok(fallback(Fallback::Forced));
    }
    if budget.deadline.is_some_and(|d| Instant::now() >= d) {
        return Ok(fallback(Fallback::Deadline));
    }
    let knowledge = match Knowledge::new(obs) {
        Ok(k) => k,
        Err(e) => return Ok(fallback(Fallback::Knowledge(e))),
    };
    let Some(base) = Sim::from_observation(obs) else {
        return Ok(fallback(Fallback::Knowledge(KnowledgeError::NotToAct)));
    };
    let heuristic = base.heuristic(&params);
    let candidates = candidates(obs, &knowledge, &base, &heuristic, config, default);
    if candidates.len() == 1 {
        return Ok(fallback(Fallback::Interchangeable));
    }
    let round = Round {
        obs,
        knowledge: &knowledge,
        base: &base,
        heuristic: &heuristic,
        config,
    };
    let (race, worlds) = round.race(&candidates, budget, rng);
    let values: Vec<(Action, f64)> = candidates
        .iter()
        .enumerate()
        .map(|(c, &a)| (a, race.mean(c)))
        .collect();
    // The heuristic's action is the first candidate: a strictly better mean must beat it.
    let best = candidates.get(race.leader()).copied().unwrap_or(default);
    let action = if obs.legal_actions.contains(&best) {
        best
    } else {
        default
    };
    Ok(SearchOutcome {
        action,
        worlds,
        values,
        fallback: None,
    })
}

/// What each sampled world of a search is built from: the seat's observation and
/// knowledge, the round as it stands, the heuristic playing it out.
struct Round<'a> {
    obs: &'a Observation,
    knowledge: &'a Knowledge,
    base: &'a Sim,
    heuristic: &'a Heuristic,
    config: &'a SearchConfig,
}

impl Round<'_> {
    /// Races `candidates` over sampled worlds until the race is decided or the budget
    /// (worlds or deadline) is spent: the race, and the worlds it saw.
    fn race(&self, candidates: &[Action], budget: &Budget, rng: &mut impl Rng) -> (Race, u32) {
        let (obs, knowledge, config) = (self.obs, self.knowledge, self.config);
        let (base, heuristic) = (*self.base, self.heuristic);
        let worlds_max = match (budget.iterations_max, budget.deadline) {
            (Some(n), _) => n.max(1),
            (None, Some(_)) => u32::MAX,
            (None, None) => config.worlds_default.max(1),
        };
        let viewer = knowledge.viewer;
        let mut race = Race::new(
            candidates.len(),
            config.stop_z,
            config.stop_loss,
            config.stop_worlds_min,
            config.stop_tie_worlds_min,
        );
        let mut worlds = 0u32;
        let mut hands = [0u64; SEATS_MAX];
        let mut pool = Vec::with_capacity(60);
        while worlds < worlds_max && !race.decided() {
            if worlds > 0 && budget.deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            knowledge.sample(rng, &mut hands, &mut pool);
            let mut world = base;
            world.hands = hands;
            fill_hidden_bids(obs, &mut world, heuristic);
            let weight =
                f64::from(knowledge.log_weight(obs, &world, heuristic, config.bid_sigma)).exp();
            race.world(weight, |c| {
                let mut sim = world;
                sim.apply(viewer, candidates[c]);
                sim.roll_out(heuristic);
                value(&sim, viewer, config.opponent_weight)
            });
            worlds += 1;
        }
        (race, worlds)
    }
}

/// What a finished rollout is worth to `viewer`.
fn value(sim: &Sim, viewer: Seat, opponent_weight: f32) -> f64 {
    let own = f64::from(sim.delta(viewer));
    if opponent_weight == 0.0 {
        return own;
    }
    let n = sim.players();
    let others: f64 = (0..n)
        .filter(|&s| s != viewer)
        .map(|s| f64::from(sim.delta(s)))
        .sum();
    own - f64::from(opponent_weight) * others / f64::from(n.saturating_sub(1).max(1))
}

/// The actions worth evaluating, the heuristic's first; always a subset of the legal
/// actions.
fn candidates(
    obs: &Observation,
    knowledge: &Knowledge,
    base: &Sim,
    heuristic: &Heuristic,
    config: &SearchConfig,
    default: Action,
) -> Vec<Action> {
    let mut out = vec![default];
    let estimate = if obs.phase == Phase::Bidding {
        let mut own = *base;
        own.hands[usize::from(knowledge.viewer)] = obs.hand.iter().fold(0, |m, &c| m | sim::bit(c));
        Some(own.bid_estimate(knowledge.viewer, heuristic))
    } else {
        None
    };
    for &a in &obs.legal_actions {
        let near = match (a, estimate) {
            (Action::Bid { bid }, Some(e)) => (f32::from(bid) - e).abs() <= config.bid_window,
            _ => true,
        };
        let unknown = knowledge.unknown();
        if near && !out.iter().any(|&b| interchangeable(a, b, unknown)) {
            out.push(a);
        }
    }
    out
}

/// Whether playing `a` or `b` (two cards of the viewer's hand) makes no difference to
/// the round whatever the hidden cards are, `unknown` being the cards the viewer has
/// not seen: both are Wizards (the first Wizard takes the trick, whichever it is), both
/// Jesters, or they are of one suit and every card of that suit ranked between them is
/// out of the other seats' reach (in the viewer's hand, played or turned), so each
/// beats and loses to exactly the same cards of the others. The search evaluates one
/// card of such a class (the first in its order, the heuristic's own when it is in the
/// class): the others would only repeat its rollouts. Equal actions are
/// interchangeable too.
fn interchangeable(a: Action, b: Action, unknown: sim::Mask) -> bool {
    let (Action::Play { card: a }, Action::Play { card: b }) = (a, b) else {
        return a == b;
    };
    match (a, b) {
        (Card::Wizard(_), Card::Wizard(_)) | (Card::Jester(_), Card::Jester(_)) => true,
        (Card::Suited { suit: sa, .. }, Card::Suited { suit: sb, .. }) if sa == sb => {
            let (lo, hi) = (a.index().min(b.index()), a.index().max(b.index()));
            // The cards strictly between the two, in index (= rank) order within the suit.
            let between = ((1u64 << hi) - 1) & !((1u64 << (lo + 1)) - 1);
            between & unknown == 0
        }
        _ => false,
    }
}

/// Under hidden bids, seats that have bid but whose bid the viewer cannot see get the
/// bid the heuristic would make with their sampled hand.
fn fill_hidden_bids(obs: &Observation, world: &mut Sim, heuristic: &Heuristic) {
    if !obs.options.hidden_bids || world.stage() != Stage::Bidding {
        return;
    }
    for (seat, (&bid, &has)) in (0u8..).zip(obs.bids.iter().zip(&obs.has_bid)) {
        if has && bid.is_none() {
            let guess = world.heuristic_bid(seat, heuristic);
            world.bids[usize::from(seat)] = Some(guess);
        }
    }
}

/// One world as the search samples it, in the core's terms, so it can be checked
/// against the engine (`Game::from_world`) and used by tools.
pub fn sample_world(obs: &Observation, rng: &mut impl Rng) -> Result<Hidden, KnowledgeError> {
    let knowledge = Knowledge::new(obs)?;
    let mut world = Sim::from_observation(obs).ok_or(KnowledgeError::NotToAct)?;
    let mut hands = [0u64; SEATS_MAX];
    knowledge.sample(rng, &mut hands, &mut Vec::new());
    world.hands = hands;
    let heuristic = world.heuristic(&Params::default());
    fill_hidden_bids(obs, &mut world, &heuristic);
    let n = usize::from(obs.players);
    let held = hands.iter().take(n).fold(0u64, |m, &h| m | h);
    let seen = obs
        .played
        .iter()
        .chain(obs.trump_card.iter())
        .fold(held, |m, &c| m | sim::bit(c));
    // The viewer's hand in the order its legal plays are listed, so the world's view
    // lists them alike (the engine lists legal cards in hand order).
    let mut own: Vec<Card> = obs
        .legal_actions
        .iter()
        .filter_map(|a| match a {
            Action::Play { card } => Some(*card),
            _ => None,
        })
        .collect();
    let rest: Vec<Card> = obs
        .hand
        .iter()
        .copied()
        .filter(|c| !own.contains(c))
        .collect();
    own.extend(rest);
    let viewer = usize::from(knowledge.viewer);
    Ok(Hidden {
        hands: (0..n)
            .map(|s| match hands.get(s) {
                _ if s == viewer => own.clone(),
                Some(&h) => sim::cards(h).collect(),
                None => Vec::new(),
            })
            .collect(),
        undealt: sim::cards(sim::DECK & !seen).collect(),
        bids: (0..n)
            .map(|s| {
                let shown = obs.bids.get(s).copied().flatten();
                world
                    .bids
                    .get(s)
                    .copied()
                    .flatten()
                    .filter(|_| shown.is_none())
            })
            .collect(),
    })
}

/// Whether every hand of `hidden` avoids the suits its seat has shown out of in `obs`.
pub fn respects_voids(obs: &Observation, hidden: &Hidden) -> Result<bool, KnowledgeError> {
    let knowledge = Knowledge::new(obs)?;
    Ok((0u8..).zip(&hidden.hands).all(|(seat, hand)| {
        let mask = hand.iter().fold(0u64, |m, &c| m | sim::bit(c));
        sample::respects(mask, knowledge.voids(seat))
    }))
}

/// A rollout as the search does it, from the world `hidden` after the viewer's `first`
/// action: every action in order and the viewer's round score change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rollout {
    pub actions: Vec<(Seat, Action)>,
    pub delta: i32,
}

/// Plays the round out from `hidden` like the search's inner loop, recording the
/// actions, so tests can replay them on the engine.
pub fn rollout(
    obs: &Observation,
    hidden: &Hidden,
    first: Action,
) -> Result<Rollout, KnowledgeError> {
    let viewer = obs.to_act.ok_or(KnowledgeError::NotToAct)?;
    let mut sim = Sim::from_observation(obs).ok_or(KnowledgeError::NotToAct)?;
    for (seat, hand) in hidden.hands.iter().enumerate().take(SEATS_MAX) {
        sim.hands[seat] = hand.iter().fold(0u64, |m, &c| m | sim::bit(c));
    }
    for (seat, bid) in hidden.bids.iter().enumerate().take(SEATS_MAX) {
        if bid.is_some() {
            sim.bids[seat] = *bid;
        }
    }
    let heuristic = sim.heuristic(&Params::default());
    let mut actions = vec![(viewer, first)];
    sim.apply(viewer, first);
    while let Some((seat, action)) = sim.heuristic_step(&heuristic) {
        actions.push((seat, action));
        sim.apply(seat, action);
    }
    Ok(Rollout {
        actions,
        delta: sim.delta(viewer),
    })
}

/// The suits each seat is known to lack (bit `Suit::index()`), and whether they come
/// from a full replay of the round (else only the current and last trick were used).
pub fn inferred_voids(obs: &Observation) -> Result<(Vec<u8>, bool), KnowledgeError> {
    let knowledge = Knowledge::new(obs)?;
    let voids = (0..obs.players).map(|s| knowledge.voids(s)).collect();
    Ok((voids, knowledge.replayed))
}
