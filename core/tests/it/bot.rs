//! The heuristic player: always legal, deterministic given its RNG, and clearly
//! stronger than random play.

use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;
use wizard_core::vocabulary::game::selfplay::{mean_ci95, play_out, random_action};
use wizard_core::vocabulary::game::{BidRestriction, Game, Options, bot};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Over whole games with every option combination, every decision is legal (the
    /// engine would refuse anything else and `play_out` would report it).
    #[test]
    fn the_bot_only_makes_legal_moves(
        players in 3..=6u8,
        hidden_bids in any::<bool>(),
        restriction in 0..3usize,
        seed in any::<u64>(),
    ) {
        let options = Options {
            hidden_bids,
            bid_restriction: [BidRestriction::None, BidRestriction::House, BidRestriction::Canadian][restriction],
            turn_seconds: 0,
        };
        let mut game = Game::new(players, options, seed, &mut Vec::new()).unwrap();
        let mut rng = ChaCha12Rng::seed_from_u64(seed);
        let result = play_out(&mut game, |_, obs| bot::decide(obs, &mut rng).unwrap());
        prop_assert!(result.is_ok(), "{:?}", result.err());
    }
}

fn bot_game(seed: u64, rng_seed: u64) -> Vec<i32> {
    let mut game = Game::new(4, Options::default(), seed, &mut Vec::new()).unwrap();
    let mut rng = ChaCha12Rng::seed_from_u64(rng_seed);
    play_out(&mut game, |_, obs| bot::decide(obs, &mut rng).unwrap()).unwrap();
    game.scores().to_vec()
}

#[test]
fn the_bot_is_deterministic_given_its_rng() {
    for seed in 0..5 {
        assert_eq!(bot_game(seed, 9), bot_game(seed, 9));
    }
}

#[test]
fn the_bot_has_nothing_to_do_when_it_may_not_act() {
    let game = Game::new(4, Options::default(), 1, &mut Vec::new()).unwrap();
    let idle = (0..4).find(|&s| !game.awaits(s)).unwrap();
    let mut rng = ChaCha12Rng::seed_from_u64(1);
    assert_eq!(bot::decide(&game.observation(idle), &mut rng), None);
}

/// 1000 seeded 4-player games, the heuristic in a rotating seat against three random
/// players. Prints the mean score difference per game with its 95 % interval (the
/// figure in docs/RULES.md comes from the release example `bot_strength`).
#[test]
fn the_bot_beats_random_players() {
    let diffs: Vec<f64> = (0..1000u64)
        .map(|seed| {
            let bot_seat = u8::try_from(seed % 4).unwrap();
            let mut game = Game::new(4, Options::default(), seed, &mut Vec::new()).unwrap();
            let mut rng = ChaCha12Rng::seed_from_u64(seed ^ 0xb07);
            play_out(&mut game, |seat, obs| {
                if seat == bot_seat {
                    bot::decide(obs, &mut rng).unwrap()
                } else {
                    random_action(obs, &mut rng).unwrap()
                }
            })
            .unwrap();
            let s = game.scores();
            let others: i32 = (0..4)
                .filter(|&i| i != usize::from(bot_seat))
                .map(|i| s[i])
                .sum();
            f64::from(s[usize::from(bot_seat)]) - f64::from(others) / 3.0
        })
        .collect();
    let (mean, half) = mean_ci95(&diffs);
    println!("heuristic vs random, 4 players, 1000 games: {mean:.1} ± {half:.1} points per game");
    assert!(
        mean - half > 100.0,
        "the heuristic should beat random play clearly: {mean} ± {half}"
    );
}
