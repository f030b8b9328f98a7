//! The test vectors of RULES.md, driven through the public rules API.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha12Rng;
use wizard_core::vocabulary::game::trick::{self, Lead};
use wizard_core::vocabulary::game::{
    Action, ActionError, BidRestriction, Card, Event, Game, Options, Phase, Suit, ranking,
    round_score,
};

/// Parses a vector's card list: `h5`, `W` (a Wizard), `J` (a Jester). Wizards and
/// Jesters get distinct numbers in order of appearance.
fn cards(list: &str) -> Vec<Card> {
    let (mut wizards, mut jesters) = (0, 0);
    list.split(',')
        .map(str::trim)
        .map(|code| match code {
            "W" => {
                wizards += 1;
                Card::Wizard(wizards)
            }
            "J" => {
                jesters += 1;
                Card::Jester(jesters)
            }
            other => other.parse().unwrap(),
        })
        .collect()
}

fn suit(name: &str) -> Option<Suit> {
    (name != "none").then(|| name.parse().unwrap())
}

#[test]
fn trick_winners() {
    // (cards in play order, trump, 1-based winner) straight from RULES.md.
    let vectors = [
        ("h5, h9", "clubs", 2),
        ("h5, s13", "clubs", 1),
        ("h13, c2", "clubs", 2),
        ("h13, W, W", "clubs", 2),
        ("W, c13, W", "clubs", 1),
        ("J, J, J", "clubs", 1),
        ("J, s2, s9", "none", 3),
        ("J, s2, h13", "none", 2),
        ("J, J, d2", "clubs", 3),
        ("J, W, h13", "hearts", 2),
        ("s7, s12, h3", "none", 2),
    ];
    for (list, trump, expected) in vectors {
        let played = cards(list);
        let winner = trick::winner(&played, suit(trump)).unwrap() + 1;
        assert_eq!(winner, expected, "{list} with trump {trump}");
    }
    assert_eq!(trick::winner(&[], Some(Suit::Clubs)), None);
}

#[test]
fn legal_plays() {
    let hand = cards("s2, h9, W, J");
    // (cards already in the trick, expected legal subset of the hand).
    let vectors = [
        ("s8", "s2, W, J"),
        ("d8", "s2, h9, W, J"),
        ("W", "s2, h9, W, J"),
        ("J, W, h2", "s2, h9, W, J"),
        ("J, h2", "h9, W, J"),
    ];
    for (trick_so_far, expected) in vectors {
        // Cards in the trick are other copies than the hand's Wizard and Jester.
        let played: Vec<Card> = cards(trick_so_far)
            .into_iter()
            .map(|c| match c {
                Card::Wizard(_) => Card::Wizard(4),
                Card::Jester(_) => Card::Jester(4),
                c => c,
            })
            .collect();
        let lead = trick::lead(played.iter().copied());
        let legal: Vec<Card> = hand
            .iter()
            .copied()
            .filter(|&c| trick::may_play(&hand, lead, c))
            .collect();
        assert_eq!(legal, cards(expected), "after {trick_so_far}");
    }
    assert_eq!(trick::lead([]), Lead::Open);
    assert_eq!(trick::lead(cards("J, J")), Lead::Open);
    assert_eq!(trick::lead(cards("J, W, h2")), Lead::Wizard);
}

#[test]
fn scores() {
    for (bid, took, expected) in [
        (0, 0, 20),
        (3, 3, 50),
        (2, 5, -30),
        (4, 1, -30),
        (1, 0, -10),
    ] {
        assert_eq!(round_score(bid, took), expected, "bid {bid} took {took}");
    }
}

#[test]
fn ranking_shares_places_on_ties() {
    let placings = ranking(&[30, 50, 30, -10]);
    let rows: Vec<(u8, i32, u8)> = placings
        .iter()
        .map(|p| (p.player, p.score, p.place))
        .collect();
    assert_eq!(rows, vec![(1, 50, 1), (0, 30, 2), (2, 30, 2), (3, -10, 4)]);
}

/// Plays random legal actions until round `round` is in its bidding phase with nobody
/// having bid yet.
fn game_at_bidding_of_round(players: u8, options: Options, seed: u64, round: u8) -> Game {
    let mut events = Vec::new();
    let mut game = Game::new(players, options, seed, &mut events).unwrap();
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    loop {
        if game.round() == round && game.phase() == Phase::Bidding {
            return game;
        }
        let seat = game.seats_to_act().next().unwrap();
        let legal = game.legal_actions(seat);
        let action = legal[rng.random_range(0..legal.len())];
        game.apply(seat, action, &mut events).unwrap();
    }
}

fn bid(game: &mut Game, bids: &[u8]) {
    let mut events = Vec::new();
    for &b in bids {
        let seat = game.to_act().unwrap();
        game.apply(seat, Action::Bid { bid: b }, &mut events)
            .unwrap();
    }
}

#[test]
fn house_restriction_forbids_the_bid_that_makes_the_total_equal_the_tricks() {
    let house = Options {
        bid_restriction: BidRestriction::House,
        ..Options::default()
    };
    for seed in 0..20 {
        let mut game = game_at_bidding_of_round(4, house, seed, 3);
        bid(&mut game, &[1, 1, 0]);
        let dealer = game.dealer();
        assert_eq!(game.to_act(), Some(dealer), "the dealer bids last");
        assert_eq!(game.forbidden_bid(dealer), Some(1));
        assert!(!game.legal_actions(dealer).contains(&Action::Bid { bid: 1 }));
        let before = format!("{game:?}");
        let refused = game.apply(dealer, Action::Bid { bid: 1 }, &mut Vec::new());
        assert_eq!(refused, Err(ActionError::BidRestricted { bid: 1 }));
        assert_eq!(format!("{game:?}"), before, "a refused bid changes nothing");

        // Earlier bids summing past r forbid nothing.
        let mut game = game_at_bidding_of_round(4, house, seed, 3);
        bid(&mut game, &[2, 2, 0]);
        assert_eq!(game.forbidden_bid(game.dealer()), None);
        assert_eq!(game.legal_actions(game.dealer()).len(), 4);
    }
}

#[test]
fn canadian_restriction_applies_only_when_the_dealer_leads_and_never_to_zero() {
    let canadian = Options {
        bid_restriction: BidRestriction::Canadian,
        ..Options::default()
    };
    let (mut leading, mut not_leading) = (0, 0);
    for seed in 0..200 {
        let mut game = game_at_bidding_of_round(4, canadian, seed, 3);
        bid(&mut game, &[1, 1, 0]);
        let dealer = game.dealer();
        let scores = game.scores().to_vec();
        let dealer_score = scores[usize::from(dealer)];
        let leads = (0..4u8).all(|s| s == dealer || scores[usize::from(s)] < dealer_score);
        let expected = leads.then_some(1);
        assert_eq!(
            game.forbidden_bid(dealer),
            expected,
            "seed {seed} scores {scores:?}"
        );
        if leads {
            leading += 1
        } else {
            not_leading += 1
        }
        // A forbidden value of 0 is always allowed.
        let mut game = game_at_bidding_of_round(4, canadian, seed, 3);
        bid(&mut game, &[1, 1, 1]);
        assert_eq!(game.forbidden_bid(game.dealer()), None);
    }
    assert!(
        leading > 0 && not_leading > 0,
        "both cases seen: {leading} / {not_leading}"
    );
}

#[test]
fn hidden_bids_are_collected_at_once_and_revealed_together() {
    let hidden = Options {
        hidden_bids: true,
        bid_restriction: BidRestriction::House,
        ..Options::default()
    };
    let mut game = game_at_bidding_of_round(4, hidden, 3, 2);
    assert_eq!(game.seats_to_act().count(), 4, "everyone may bid at once");
    assert_eq!(game.to_act(), None);
    let mut events = Vec::new();
    // Bid in reverse seat order; the restriction does not apply (total 2 == r is fine).
    for (seat, b) in [(3, 0), (2, 1), (1, 0), (0, 1)] {
        game.apply(seat, Action::Bid { bid: b }, &mut events)
            .unwrap();
        if seat != 0 {
            let obs = game.observation(0);
            assert!(
                obs.bids.iter().all(Option::is_none),
                "hidden from seat 0: {:?}",
                obs.bids
            );
            assert_eq!(obs.to_act, Some(0));
            assert!(
                game.apply(seat, Action::Bid { bid: 0 }, &mut Vec::new())
                    .is_err()
            );
        }
    }
    let made: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::BidMade { .. }))
        .collect();
    assert!(
        made.iter()
            .all(|e| matches!(e, Event::BidMade { bid: None, .. }))
    );
    assert!(events.contains(&Event::BidsRevealed {
        bids: vec![1, 0, 1, 0]
    }));
    assert_eq!(game.phase(), Phase::Playing);
    assert_eq!(
        game.observation(2).bids,
        vec![Some(1), Some(0), Some(1), Some(0)]
    );
}

#[test]
fn a_turned_wizard_lets_the_dealer_choose_trump() {
    let mut seen = 0;
    for seed in 0..400 {
        let mut events = Vec::new();
        let mut game = Game::new(3, Options::default(), seed, &mut events).unwrap();
        if game.phase() != Phase::ChoosingTrump {
            continue;
        }
        seen += 1;
        let dealer = game.dealer();
        assert!(matches!(game.trump_card(), Some(Card::Wizard(_))));
        assert_eq!(game.trump_suit(), None);
        assert_eq!(
            game.legal_actions(dealer).len(),
            4,
            "four suits, no 'no trump'"
        );
        let other = (dealer + 1) % 3;
        assert!(matches!(
            game.apply(
                other,
                Action::ChooseTrump { suit: Suit::Clubs },
                &mut events
            ),
            Err(ActionError::NotYourTurn { .. })
        ));
        assert!(matches!(
            game.apply(dealer, Action::Bid { bid: 0 }, &mut events),
            Err(ActionError::WrongPhase {
                phase: Phase::ChoosingTrump
            })
        ));
        events.clear();
        game.apply(
            dealer,
            Action::ChooseTrump { suit: Suit::Spades },
            &mut events,
        )
        .unwrap();
        assert_eq!(
            events,
            vec![Event::TrumpChosen {
                player: dealer,
                suit: Suit::Spades
            }]
        );
        assert_eq!(game.trump_suit(), Some(Suit::Spades));
        assert_eq!(
            game.to_act(),
            Some(other),
            "bidding starts left of the dealer"
        );
    }
    assert!(seen > 0, "some seed turns a Wizard in round 1");
}

#[test]
fn a_turned_jester_means_no_trump() {
    let mut seen = 0;
    for seed in 0..400 {
        let mut events = Vec::new();
        let game = Game::new(5, Options::default(), seed, &mut events).unwrap();
        if matches!(game.trump_card(), Some(Card::Jester(_))) {
            seen += 1;
            assert_eq!(game.trump_suit(), None);
            assert_eq!(game.phase(), Phase::Bidding);
        }
    }
    assert!(seen > 0);
}

#[test]
fn bad_setups_and_options_are_refused() {
    let mut events = Vec::new();
    for players in [0, 1, 2, 7, 200] {
        assert!(Game::new(players, Options::default(), 1, &mut events).is_err());
    }
    for turn_seconds in [1, 9, 301, 1000] {
        let options = Options {
            turn_seconds,
            ..Options::default()
        };
        assert!(
            Game::new(4, options, 1, &mut events).is_err(),
            "{turn_seconds}"
        );
    }
    for turn_seconds in [0, 10, 300] {
        let options = Options {
            turn_seconds,
            ..Options::default()
        };
        assert!(
            Game::new(4, options, 1, &mut events).is_ok(),
            "{turn_seconds}"
        );
    }
    assert!(
        events
            .iter()
            .all(|e| matches!(e, Event::RoundStarted { round: 1, .. }))
    );
}

/// Every applied action shows up as exactly one event naming its seat as the mover;
/// the events that follow from moves (rounds, tricks, reveals, scores) name none.
#[test]
fn each_move_has_one_event_with_its_mover() {
    let mut rng = ChaCha12Rng::seed_from_u64(9);
    let mut events = Vec::new();
    let mut game = Game::new(4, Options::default(), 9, &mut events).unwrap();
    assert_eq!(events.iter().filter_map(Event::mover).count(), 0);
    let mut moves = 0;
    while let Some(seat) = game.observation(0).to_act {
        let legal = game.legal_actions(seat);
        let action = legal[rng.random_range(0..legal.len())];
        events.clear();
        game.apply(seat, action, &mut events).unwrap();
        let movers: Vec<u8> = events.iter().filter_map(Event::mover).collect();
        assert_eq!(movers, [seat], "{action:?} gave {events:?}");
        moves += 1;
    }
    assert!(moves > 100, "the game ended after {moves} moves");
}
