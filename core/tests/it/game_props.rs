//! Property tests over random games: 3 to 6 players, every option combination, random
//! legal actions, with the invariants of the rules checked after every step.

use std::collections::BTreeSet;

use proptest::prelude::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha12Rng;
use wizard_core::vocabulary::game::{
    Action, BidRestriction, Card, Event, Game, Options, Phase, Suit, rounds_for,
};

fn options_strategy() -> impl Strategy<Value = Options> {
    (any::<bool>(), 0..3u8, prop_oneof![Just(0u16), 10..=300u16]).prop_map(
        |(hidden_bids, r, turn_seconds)| Options {
            hidden_bids,
            bid_restriction: [
                BidRestriction::None,
                BidRestriction::House,
                BidRestriction::Canadian,
            ][usize::from(r)],
            turn_seconds,
        },
    )
}

/// Every action that could ever be sent: all bids up to 21, all plays, all trumps.
fn action_universe() -> Vec<Action> {
    let mut all: Vec<Action> = (0..=21).map(|bid| Action::Bid { bid }).collect();
    all.extend(Card::deck().into_iter().map(|card| Action::Play { card }));
    all.extend(
        Suit::ALL
            .into_iter()
            .map(|suit| Action::ChooseTrump { suit }),
    );
    all
}

/// The 60 cards are each in exactly one place: a hand, played this round (which holds
/// the current trick), the turned card, or the undealt deck.
fn check_card_conservation(game: &Game) -> Result<(), TestCaseError> {
    let mut places: Vec<Card> = Vec::with_capacity(60);
    for seat in 0..game.players() {
        places.extend_from_slice(game.hand(seat));
    }
    places.extend_from_slice(game.played());
    places.extend(game.trump_card());
    places.extend_from_slice(game.undealt());
    let distinct: BTreeSet<Card> = places.iter().copied().collect();
    prop_assert_eq!(places.len(), 60, "cards in some place");
    prop_assert_eq!(distinct.len(), 60, "no card in two places");
    let trick: Vec<Card> = game.trick().iter().map(|p| p.card).collect();
    prop_assert!(
        game.played().ends_with(&trick),
        "the trick is the tail of played"
    );
    Ok(())
}

/// Seat i's serialized view holds no other seat's hand card and no hidden bid.
fn check_views(game: &Game) -> Result<(), TestCaseError> {
    let hidden_phase = game.options().hidden_bids
        && game.phase() == Phase::Bidding
        && game.bids().iter().any(Option::is_none);
    for seat in 0..game.players() {
        let obs = game.observation(seat);
        let json = serde_json::to_string(&obs).unwrap();
        for other in (0..game.players()).filter(|&o| o != seat) {
            for card in game.hand(other) {
                prop_assert!(
                    !json.contains(&format!("\"{card}\"")),
                    "seat {} sees {} of seat {}",
                    seat,
                    card,
                    other
                );
            }
            if hidden_phase {
                prop_assert_eq!(obs.bids[usize::from(other)], None, "hidden bid leaked");
            }
        }
        let mut own: Vec<Card> = game.hand(seat).to_vec();
        own.sort();
        prop_assert_eq!(&obs.hand, &own);
        prop_assert_eq!(&obs.legal_actions, &game.legal_actions(seat));
    }
    check_spliced_views(game)
}

/// The pre-encoded public parts with each seat's own fields spliced in are byte for
/// byte the encoding of that seat's observation (what the server sends).
fn check_spliced_views(game: &Game) -> Result<(), TestCaseError> {
    let public = game.observation_json();
    let deadline = |to_act: Option<u8>| to_act.map(|s| 1_000 + u64::from(s));
    for seat in 0..game.players() + 1 {
        let mut obs = game.observation(seat);
        obs.turn_deadline_ms = deadline(obs.to_act);
        let mut spliced = String::new();
        public.write_seat(game, seat, deadline, &mut spliced);
        prop_assert_eq!(
            spliced,
            serde_json::to_string(&obs).unwrap(),
            "seat {}",
            seat
        );
    }
    Ok(())
}

/// Legal actions are exactly the accepted ones; refused actions change nothing.
fn check_legality(game: &Game, universe: &[Action]) -> Result<(), TestCaseError> {
    for seat in 0..game.players() {
        let legal = game.legal_actions(seat);
        prop_assert_eq!(legal.is_empty(), !game.awaits(seat));
        for &action in universe {
            let accepted = game.check(seat, action).is_ok();
            prop_assert_eq!(
                accepted,
                legal.contains(&action),
                "seat {} {:?}",
                seat,
                action
            );
        }
        for &action in &legal {
            let mut copy = game.clone();
            prop_assert!(copy.apply(seat, action, &mut Vec::new()).is_ok());
        }
    }
    Ok(())
}

#[derive(Default)]
struct Tally {
    rounds_started: u8,
    dealer: Option<u8>,
    expect_first_player: Option<u8>,
    scores: Vec<i32>,
}

/// Checks each event against an independent reference of rounds, leads and scores.
fn check_events(game: &Game, events: &[Event], tally: &mut Tally) -> Result<(), TestCaseError> {
    let n = game.players();
    for event in events {
        match event {
            Event::RoundStarted {
                round,
                dealer,
                trump_card,
                trump_suit,
            } => {
                tally.rounds_started += 1;
                prop_assert_eq!(*round, tally.rounds_started);
                if let Some(previous) = tally.dealer {
                    prop_assert_eq!(*dealer, (previous + 1) % n, "the deal passes left");
                }
                tally.dealer = Some(*dealer);
                tally.expect_first_player = Some((dealer + 1) % n);
                if *round == rounds_for(n) {
                    prop_assert_eq!(*trump_card, None, "the last round has no turned card");
                    prop_assert_eq!(*trump_suit, None, "the last round has no trump");
                }
            }
            Event::BidMade { bid, .. } => {
                prop_assert_eq!(
                    bid.is_none(),
                    game.options().hidden_bids,
                    "bid values are public exactly when bids are open"
                );
            }
            Event::CardPlayed { player, .. } => {
                if let Some(first) = tally.expect_first_player.take() {
                    prop_assert_eq!(*player, first, "trick 1 is led by dealer + 1");
                }
            }
            Event::RoundFinished {
                bids,
                tricks,
                deltas,
                scores,
            } => {
                let total: u32 = tricks.iter().map(|&t| u32::from(t)).sum();
                prop_assert_eq!(
                    total,
                    u32::from(tally.rounds_started),
                    "r tricks in round r"
                );
                if tally.scores.is_empty() {
                    tally.scores = vec![0; usize::from(n)];
                }
                for i in 0..usize::from(n) {
                    let (b, t) = (i32::from(bids[i]), i32::from(tricks[i]));
                    let formula = if b == t {
                        20 + 10 * t
                    } else {
                        -10 * (t - b).abs()
                    };
                    prop_assert_eq!(deltas[i], formula);
                    tally.scores[i] += deltas[i];
                }
                prop_assert_eq!(scores, &tally.scores);
            }
            Event::GameFinished { scores, ranking } => {
                prop_assert_eq!(tally.rounds_started, rounds_for(n));
                prop_assert_eq!(scores, &tally.scores);
                prop_assert_eq!(ranking.len(), usize::from(n));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Every event of a game and every action taken, in order.
type Played = (Vec<Event>, Vec<(u8, Action)>);

/// Plays a whole game with random legal actions; returns every event and action.
fn play(
    players: u8,
    options: Options,
    seed: u64,
    action_seed: u64,
    check_every: usize,
) -> Result<Played, TestCaseError> {
    let universe = action_universe();
    let mut all_events = Vec::new();
    let mut game = Game::new(players, options, seed, &mut all_events).unwrap();
    let mut tally = Tally::default();
    check_events(&game, &all_events, &mut tally)?;
    let mut rng = ChaCha12Rng::seed_from_u64(action_seed);
    let mut actions = Vec::new();
    let mut step = 0usize;
    while game.phase() != Phase::Finished {
        check_card_conservation(&game)?;
        if step.is_multiple_of(check_every) {
            check_legality(&game, &universe)?;
            check_views(&game)?;
            // An illegal action changes nothing.
            let before = format!("{game:?}");
            let seat = rng.random_range(0..players);
            let junk = universe[rng.random_range(0..universe.len())];
            if game.check(seat, junk).is_err() {
                prop_assert!(game.apply(seat, junk, &mut Vec::new()).is_err());
                prop_assert_eq!(format!("{game:?}"), before);
            }
        }
        let acting: Vec<u8> = game.seats_to_act().collect();
        prop_assert!(!acting.is_empty(), "a running game always awaits someone");
        let seat = acting[rng.random_range(0..acting.len())];
        let legal = game.legal_actions(seat);
        let action = legal[rng.random_range(0..legal.len())];
        let mut events = Vec::new();
        game.apply(seat, action, &mut events).unwrap();
        check_events(&game, &events, &mut tally)?;
        all_events.extend(events);
        actions.push((seat, action));
        step += 1;
    }
    prop_assert_eq!(game.round(), rounds_for(players));
    prop_assert!(game.seats_to_act().next().is_none());
    check_views(&game)?;
    Ok((all_events, actions))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_games_keep_every_rule(
        players in 3..=6u8,
        options in options_strategy(),
        seed in any::<u64>(),
        action_seed in any::<u64>(),
    ) {
        play(players, options, seed, action_seed, 7)?;
    }

    #[test]
    fn same_seed_and_actions_give_the_same_game(
        players in 3..=6u8,
        options in options_strategy(),
        seed in any::<u64>(),
        action_seed in any::<u64>(),
    ) {
        let (events, actions) = play(players, options, seed, action_seed, usize::MAX)?;
        let mut replayed = Vec::new();
        let mut game = Game::new(players, options, seed, &mut replayed).unwrap();
        for (seat, action) in actions {
            game.apply(seat, action, &mut replayed).unwrap();
        }
        prop_assert_eq!(replayed, events);
    }
}
