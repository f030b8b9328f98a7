//! Criterion benchmarks of the rules engine: whole random games, observation encoding

#![allow(clippy::expect_used, clippy::unwrap_used)] // a benchmark may stop on a broken setup
//! and the heuristic player's decisions.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha12Rng;
use wizard_core::vocabulary::game::{Game, Options, bot};

/// Plays one 4-player game with random legal actions, building every acting seat's
/// legal actions and observation at each step, as the server does.
fn random_game(seed: u64) -> i32 {
    let mut events = Vec::new();
    let mut game = Game::new(4, Options::default(), seed, &mut events).expect("valid setup");
    let mut rng = ChaCha12Rng::seed_from_u64(seed ^ 0x5eed);
    loop {
        let Some(seat) = game.seats_to_act().next() else {
            break;
        };
        let obs = game.observation(seat);
        let legal = &obs.legal_actions;
        let action = legal[rng.random_range(0..legal.len())];
        events.clear();
        game.apply(seat, action, &mut events).expect("legal action");
    }
    game.scores().iter().sum()
}

fn benches(c: &mut Criterion) {
    c.bench_function("game/random_4p_full_game", |b| {
        let mut seed = 0u64;
        b.iter(|| {
            seed += 1;
            black_box(random_game(seed))
        })
    });

    // A mid-game observation (round 8 of 15, cards on the table) encoded to JSON.
    let mut events = Vec::new();
    let mut game = Game::new(4, Options::default(), 7, &mut events).expect("valid setup");
    let mut rng = ChaCha12Rng::seed_from_u64(7);
    while game.round() < 8 || game.trick().len() < 2 {
        let seat = game.seats_to_act().next().expect("game running");
        let legal = game.legal_actions(seat);
        let action = legal[rng.random_range(0..legal.len())];
        game.apply(seat, action, &mut events).expect("legal action");
    }
    let seat = game.seats_to_act().next().expect("game running");
    let obs = game.observation(seat);
    c.bench_function("observation/build", |b| {
        b.iter(|| black_box(game.observation(black_box(seat))))
    });
    c.bench_function("observation/encode_json", |b| {
        b.iter(|| black_box(serde_json::to_string(black_box(&obs)).expect("serializable")))
    });
    c.bench_function("bot/decide_play", |b| {
        let mut rng = ChaCha12Rng::seed_from_u64(1);
        b.iter(|| black_box(bot::decide(black_box(&obs), &mut rng)))
    });
}

criterion_group!(game_benches, benches);
criterion_main!(game_benches);
