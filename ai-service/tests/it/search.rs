//! The search against the engine: sampled worlds are positions the engine accepts and
//! that respect what the seat knows, rollouts are legal games with the right scores,
//! the search never picks an illegal action and is deterministic under an iteration
//! budget.

use proptest::prelude::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha12Rng;
use wizard_ai::agent::{Budget, decision_rng};
use wizard_ai::search::{
    self, Fallback, SearchConfig, inferred_voids, respects_voids, rollout, sample_world,
};
use wizard_core::vocabulary::game::{
    Action, BidRestriction, Card, Game, Options, Phase, Seat, Suit, bot,
};

/// The heuristic's ranking of cards (Wizards, trumps, plain by rank, Jesters).
fn power(card: Card, trump: Option<Suit>) -> u8 {
    match card {
        Card::Wizard(_) => 100,
        Card::Jester(_) => 0,
        Card::Suited { suit, rank } if Some(suit) == trump => 40 + rank,
        Card::Suited { rank, .. } => rank,
    }
}

pub fn options(i: u8) -> Options {
    Options {
        hidden_bids: i % 2 == 1,
        bid_restriction: [
            BidRestriction::None,
            BidRestriction::House,
            BidRestriction::Canadian,
        ][usize::from(i / 2 % 3)],
        turn_seconds: 0,
    }
}

/// A game after `steps` random legal actions, at a seat to act (None if finished).
pub fn random_position(
    players: u8,
    options: Options,
    seed: u64,
    steps: u32,
) -> Option<(Game, Seat)> {
    let mut game = Game::new(players, options, seed, &mut Vec::new()).unwrap();
    let mut rng = ChaCha12Rng::seed_from_u64(seed ^ 0x5eed);
    for _ in 0..steps {
        let seat = game.next_to_act()?;
        let legal = game.legal_actions(seat);
        let a = legal[rng.random_range(0..legal.len())];
        game.apply(seat, a, &mut Vec::new()).unwrap();
    }
    game.next_to_act().map(|s| (game, s))
}

fn position_strategy() -> impl Strategy<Value = (u8, u8, u64, u32)> {
    (3u8..=6, 0u8..6, any::<u64>(), 0u32..400)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn search_never_returns_an_illegal_action((players, opt, seed, steps) in position_strategy()) {
        let Some((game, seat)) = random_position(players, options(opt), seed, steps) else {
            return Ok(());
        };
        let obs = game.observation(seat);
        let mut rng = decision_rng(seed, seat, 0);
        let out = search::search(&obs, &Budget::iterations(2), &SearchConfig::default(), &mut rng).unwrap();
        prop_assert!(obs.legal_actions.contains(&out.action));
        for (a, _) in &out.values {
            prop_assert!(obs.legal_actions.contains(a));
        }
    }

    #[test]
    fn sampled_worlds_are_engine_positions_and_roll_out_legally((players, opt, seed, steps) in position_strategy()) {
        let Some((game, seat)) = random_position(players, options(opt), seed, steps) else {
            return Ok(());
        };
        let obs = game.observation(seat);
        let mut rng = ChaCha12Rng::seed_from_u64(seed);
        let hidden = sample_world(&obs, &mut rng).unwrap();
        let world = Game::from_world(&obs, seat, &hidden, seed).unwrap();
        prop_assert_eq!(world.observation(seat), obs.clone());
        let first = obs.legal_actions[rng.random_range(0..obs.legal_actions.len())];
        let r = rollout(&obs, &hidden, first).unwrap();
        let mut replay = world;
        let round = replay.round();
        for (i, &(s, a)) in r.actions.iter().enumerate() {
            if i > 0 {
                // After the root action every seat plays the core's heuristic; the copy
                // may break a tie differently, but only between cards of equal power.
                let obs_s = replay.observation(s);
                let bot_action = bot::decide(&obs_s, &mut ChaCha12Rng::seed_from_u64(0)).unwrap();
                match (a, bot_action) {
                    (Action::Play { card }, Action::Play { card: b }) => {
                        prop_assert_eq!(power(card, obs_s.trump_suit), power(b, obs_s.trump_suit));
                    }
                    _ => prop_assert_eq!(a, bot_action),
                }
            }
            prop_assert!(replay.apply(s, a, &mut Vec::new()).is_ok(), "illegal {:?} by {}", a, s);
        }
        // The round ended exactly where the rollout stopped, with the same score change.
        prop_assert!(replay.round() > round || replay.phase() == Phase::Finished);
        let row = &replay.round_scores()[usize::from(round) - 1];
        prop_assert_eq!(row[usize::from(seat)], r.delta);
    }

    #[test]
    fn inferred_voids_are_facts((players, opt, seed, steps) in position_strategy()) {
        let Some((game, seat)) = random_position(players, options(opt), seed, steps) else {
            return Ok(());
        };
        let obs = game.observation(seat);
        let (voids, replayed) = inferred_voids(&obs).unwrap();
        prop_assert!(replayed, "a real observation replays");
        for s in 0..players {
            for c in game.hand(s) {
                if let Some(suit) = c.suit() {
                    prop_assert_eq!(voids[usize::from(s)] & (1 << suit.index()), 0);
                }
            }
        }
    }
}

/// Whether the viewer of `obs` may play `a` or `b` alike, by the rules: two Wizards, two
/// Jesters, or two cards of one suit with no card of that suit between them that
/// another seat could hold (every one in the own hand, played or turned).
fn interchangeable(obs: &wizard_core::vocabulary::game::Observation, a: Action, b: Action) -> bool {
    let (Action::Play { card: a }, Action::Play { card: b }) = (a, b) else {
        return a == b;
    };
    match (a, b) {
        (Card::Wizard(_), Card::Wizard(_)) | (Card::Jester(_), Card::Jester(_)) => true,
        (Card::Suited { suit, rank: ra }, Card::Suited { suit: sb, rank: rb }) if suit == sb => {
            (ra.min(rb) + 1..ra.max(rb)).all(|rank| {
                let c = Card::Suited { suit, rank };
                obs.hand.contains(&c) || obs.played.contains(&c) || obs.trump_card == Some(c)
            })
        }
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The search evaluates one card of each class of interchangeable cards, and does
    /// not search at all when every legal card is in one class.
    #[test]
    fn interchangeable_cards_are_searched_once((players, opt, seed, steps) in position_strategy()) {
        let Some((game, seat)) = random_position(players, options(opt), seed, steps) else {
            return Ok(());
        };
        let obs = game.observation(seat);
        let mut rng = decision_rng(seed, seat, 0);
        let out = search::search(&obs, &Budget::iterations(2), &SearchConfig::default(), &mut rng).unwrap();
        let legal = &obs.legal_actions;
        let one_class = legal.iter().all(|&a| interchangeable(&obs, a, legal[0]));
        let expected = match legal.len() {
            1 => Some(Fallback::Forced),
            _ if one_class => Some(Fallback::Interchangeable),
            _ => None,
        };
        prop_assert_eq!(&out.fallback, &expected);
        for (i, (a, _)) in out.values.iter().enumerate() {
            for (b, _) in &out.values[..i] {
                prop_assert!(!interchangeable(&obs, *a, *b), "{:?} and {:?} both searched", a, b);
            }
        }
        if out.fallback.is_none() {
            // Every legal card has a searched card of its class (bids may be left out).
            for &a in legal.iter().filter(|a| matches!(a, Action::Play { .. })) {
                prop_assert!(out.values.iter().any(|&(b, _)| interchangeable(&obs, a, b)));
            }
        }
    }
}

#[test]
fn samples_respect_voids_almost_always() {
    let (mut checked, mut respected) = (0, 0);
    for seed in 0..200u64 {
        let players = 3 + u8::try_from(seed % 4).unwrap();
        let steps = u32::try_from(seed * 7 % 300).unwrap();
        let Some((game, seat)) = random_position(players, Options::default(), seed, steps) else {
            continue;
        };
        let obs = game.observation(seat);
        let mut rng = ChaCha12Rng::seed_from_u64(seed);
        for _ in 0..5 {
            let hidden = sample_world(&obs, &mut rng).unwrap();
            checked += 1;
            respected += usize::from(respects_voids(&obs, &hidden).unwrap());
        }
    }
    assert!(respected * 100 >= checked * 98, "{respected} of {checked}");
}

#[test]
fn search_is_deterministic_under_an_iteration_budget() {
    for seed in 0..12u64 {
        let players = 3 + u8::try_from(seed % 4).unwrap();
        let steps = u32::try_from(seed * 13 % 90).unwrap();
        let Some((game, seat)) = random_position(players, options(0), seed, steps) else {
            continue;
        };
        let obs = game.observation(seat);
        let run = || {
            let mut rng = decision_rng(seed, seat, 3);
            search::search(
                &obs,
                &Budget::iterations(8),
                &SearchConfig::default(),
                &mut rng,
            )
            .unwrap()
        };
        let (a, b) = (run(), run());
        assert_eq!(a, b);
        if obs.legal_actions.len() > 1 && a.fallback != Some(Fallback::Interchangeable) {
            assert_eq!(a.worlds, 8);
        }
    }
}

#[test]
fn a_passed_deadline_returns_the_heuristic_at_once() {
    let (game, seat) = random_position(4, Options::default(), 5, 30).unwrap();
    let obs = game.observation(seat);
    let budget = Budget {
        deadline: Some(std::time::Instant::now()),
        iterations_max: None,
    };
    let out = search::search(
        &obs,
        &budget,
        &SearchConfig::default(),
        &mut decision_rng(1, seat, 0),
    )
    .unwrap();
    assert!(obs.legal_actions.contains(&out.action));
    assert_eq!(out.worlds, 0);
}

/// A Wizard turned up is out of play: no sampled hand may hold it.
#[test]
fn the_turned_card_is_never_dealt() {
    let mut found = 0;
    for seed in 0..400u64 {
        let Some((game, seat)) = random_position(4, Options::default(), seed, 0) else {
            continue;
        };
        let obs = game.observation(seat);
        let Some(turned) = obs
            .trump_card
            .filter(|c| matches!(c, Card::Wizard(_) | Card::Jester(_)))
        else {
            continue;
        };
        found += 1;
        let hidden = sample_world(&obs, &mut ChaCha12Rng::seed_from_u64(seed)).unwrap();
        assert!(hidden.hands.iter().flatten().all(|&c| c != turned));
        assert!(!hidden.undealt.contains(&turned));
    }
    assert!(found > 0);
}
