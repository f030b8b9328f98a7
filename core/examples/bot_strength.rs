//! Measures the heuristic player against random players: in each game one seat
//! (rotating) is the heuristic, the others play uniformly random legal actions; the
//! figure is the heuristic's score minus the mean of the random players' scores.
//!
//! `cargo run --release -p wizard-core --example bot_strength -- [--games N]`

// A tool around the core, not the core: it reads its command line.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(clippy::expect_used, clippy::unwrap_used)]

use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;
use wizard_core::vocabulary::game::selfplay::{mean_ci95, play_out, random_action};
use wizard_core::vocabulary::game::{Game, Options, bot};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let games: u64 = args
        .iter()
        .position(|a| a == "--games")
        .and_then(|i| args.get(i + 1))
        .map_or(1000, |v| v.parse().expect("a number"));
    println!("heuristic vs random, {games} games per player count");
    println!("players  mean diff/game  95% CI");
    for players in 3..=6u8 {
        let diffs: Vec<f64> = (0..games).map(|g| one_game(players, g)).collect();
        let (mean, half) = mean_ci95(&diffs);
        println!(
            "{players:>7}  {mean:>14.1}  [{:.1}, {:.1}]",
            mean - half,
            mean + half
        );
    }
}

fn one_game(players: u8, seed: u64) -> f64 {
    let bot_seat = u8::try_from(seed % u64::from(players)).unwrap();
    let mut game = Game::new(players, Options::default(), seed, &mut Vec::new()).unwrap();
    let mut rng = ChaCha12Rng::seed_from_u64(seed ^ 0xb07);
    play_out(&mut game, |seat, obs| {
        let action = if seat == bot_seat {
            bot::decide(obs, &mut rng)
        } else {
            random_action(obs, &mut rng)
        };
        action.unwrap()
    })
    .unwrap();
    let scores = game.scores();
    let others: i32 = (0..players)
        .filter(|&s| s != bot_seat)
        .map(|s| scores[usize::from(s)])
        .sum();
    f64::from(scores[usize::from(bot_seat)]) - f64::from(others) / f64::from(players - 1)
}
