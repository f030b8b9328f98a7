//! Calibrates the heuristic player's trick-probability table by simulation.
//!
//! Plays games with four heuristic players for every player count, records for each
//! dealt card (by class, hand size and whether the round has trump) whether it took a
//! trick, and turns the counts into probabilities: smoothed towards the previous table,
//! monotone in rank. Repeats so that the play it measures is the play the table makes.
//!
//! `cargo run --release -p wizard-core --example calibrate_bot -- [--games N] [--iterations K] [--write]`
//! With `--write` the table replaces `core/src/vocabulary/game/bot_table.rs`.

// A tool around the core, not the core: it reads its command line and writes the table.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::print_stderr)]

use std::fmt::Write as _;

use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;
use wizard_core::vocabulary::game::bot::{
    self, BidTable, CARD_CLASSES, HAND_BUCKETS, PLAYER_COUNTS, Params, card_class, hand_bucket,
};
use wizard_core::vocabulary::game::{Card, Event, Game, Options, Phase, Suit};

/// Pseudo-observations of the previous table added to each cell.
const PRIOR_WEIGHT: f64 = 30.0;

type Counts = [[[[(f64, f64); CARD_CLASSES]; HAND_BUCKETS]; 2]; PLAYER_COUNTS];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str, default: u64| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map_or(default, |v| v.parse().expect("a number"))
    };
    let games = value("--games", 4000);
    let iterations = value("--iterations", 3);
    let mut table = Params::default().table.clone();
    for iteration in 0..iterations {
        let mut counts: Counts = [[[[(0.0, 0.0); CARD_CLASSES]; HAND_BUCKETS]; 2]; PLAYER_COUNTS];
        for players in 3..=6u8 {
            for g in 0..games {
                let seed = (iteration << 48) ^ (u64::from(players) << 40) ^ g;
                record_game(&table, players, seed, &mut counts);
            }
        }
        table = smooth(&table, &counts);
        eprintln!("iteration {iteration}: {games} games per player count");
    }
    let source = render(&table);
    if args.iter().any(|a| a == "--write") {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/vocabulary/game/bot_table.rs"
        );
        std::fs::write(path, source).expect("write bot_table.rs");
        eprintln!("wrote {path}");
    } else {
        print!("{source}");
    }
}

/// Plays one game with heuristic players and adds each dealt card's outcome.
fn record_game(table: &BidTable, players: u8, seed: u64, counts: &mut Counts) {
    let params = Params {
        table,
        ..Params::default()
    };
    let mut events = Vec::new();
    let mut game = Game::new(players, Options::default(), seed, &mut events).unwrap();
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    let mut dealt: Vec<Vec<Card>> = Vec::new();
    let mut trump: Option<Suit> = None;
    let mut winners: Vec<Card> = Vec::new();
    while let Some(seat) = game.next_to_act() {
        if game.phase() == Phase::Playing && game.played().is_empty() && dealt.is_empty() {
            dealt = (0..players).map(|s| game.hand(s).to_vec()).collect();
            trump = game.trump_suit();
        }
        let obs = game.observation(seat);
        let action = bot::decide_with(&params, &obs, &mut rng).unwrap();
        events.clear();
        game.apply(seat, action, &mut events).unwrap();
        for event in &events {
            match event {
                Event::TrickCompleted { winner, cards } => {
                    winners.extend(cards.iter().filter(|p| p.player == *winner).map(|p| p.card));
                }
                Event::RoundFinished { tricks, .. } => {
                    let round = u8::try_from(tricks.iter().map(|&t| usize::from(t)).sum::<usize>())
                        .unwrap();
                    let cell = &mut counts[usize::from(players - 3)][usize::from(trump.is_some())]
                        [hand_bucket(round)];
                    for card in dealt.iter().flatten() {
                        let slot = &mut cell[card_class(*card, trump)];
                        slot.0 += 1.0;
                        if winners.contains(card) {
                            slot.1 += 1.0;
                        }
                    }
                    dealt.clear();
                    winners.clear();
                }
                _ => {}
            }
        }
    }
}

/// Probabilities from counts, smoothed towards the previous table and made monotone in
/// rank (pool-adjacent-violators over trump ranks and over plain ranks).
// Four parallel tables indexed the same way read clearer with indices.
#[allow(clippy::needless_range_loop)]
fn smooth(previous: &BidTable, counts: &Counts) -> BidTable {
    let mut table = previous.clone();
    for p in 0..PLAYER_COUNTS {
        for t in 0..2 {
            for b in 0..HAND_BUCKETS {
                let cell = &counts[p][t][b];
                let mut probs = [0f64; CARD_CLASSES];
                let mut weights = [0f64; CARD_CLASSES];
                for c in 0..CARD_CLASSES {
                    let (n, wins) = cell[c];
                    let prior = f64::from(previous.p[p][t][b][c]);
                    probs[c] = (wins + PRIOR_WEIGHT * prior) / (n + PRIOR_WEIGHT);
                    weights[c] = n + PRIOR_WEIGHT;
                }
                isotonic(&mut probs[2..15], &weights[2..15]);
                isotonic(&mut probs[15..28], &weights[15..28]);
                for c in 0..CARD_CLASSES {
                    #[allow(clippy::cast_possible_truncation)]
                    let v = probs[c] as f32;
                    table.p[p][t][b][c] = v;
                }
            }
        }
    }
    table
}

/// Weighted pool-adjacent-violators: the closest non-decreasing sequence.
fn isotonic(values: &mut [f64], weights: &[f64]) {
    let mut blocks: Vec<(f64, f64, usize)> = Vec::new(); // (mean, weight, length)
    for (&v, &w) in values.iter().zip(weights) {
        blocks.push((v, w, 1));
        while blocks.len() > 1 {
            let (m2, w2, l2) = blocks[blocks.len() - 1];
            let (m1, w1, l1) = blocks[blocks.len() - 2];
            if m1 <= m2 {
                break;
            }
            blocks.truncate(blocks.len() - 2);
            blocks.push(((m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, l1 + l2));
        }
    }
    let mut i = 0;
    for (mean, _, len) in blocks {
        for v in &mut values[i..i + len] {
            *v = mean;
        }
        i += len;
    }
}

fn render(table: &BidTable) -> String {
    let mut s = String::new();
    s.push_str("//! The heuristic player's trick-probability table, calibrated by simulation.\n");
    s.push_str("//!\n");
    s.push_str("//! Generated by `cargo run --release -p wizard-core --example calibrate_bot -- --write`;\n");
    s.push_str(
        "//! do not edit by hand. Index: [players - 3][round has trump][hand-size bucket]\n",
    );
    s.push_str("//! [class: Wizard, Jester, trump 2..=14, plain 2..=14].\n\n");
    s.push_str("use super::bot::BidTable;\n\n");
    s.push_str("/// The shipped calibration.\n");
    s.push_str("pub static CALIBRATED: BidTable = BidTable {\n    p: [\n");
    for by_trump in &table.p {
        s.push_str("        [\n");
        for by_bucket in by_trump {
            s.push_str("            [\n");
            for row in by_bucket {
                let cells: Vec<String> = row.iter().map(|v| format!("{v:.4}")).collect();
                writeln!(s, "                [{}],", cells.join(", ")).unwrap();
            }
            s.push_str("            ],\n");
        }
        s.push_str("        ],\n");
    }
    s.push_str("    ],\n};\n");
    s
}
