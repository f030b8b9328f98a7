//! Writes the golden games in `fixtures/games/`: a seed, options and the actions of a
//! game played by heuristic players, with the events and final scores the engine
//! produced. The data-driven test `golden` replays them; regenerate only when a rules
//! change is intended, and review the diff.
//!
//! `cargo run -p wizard-core --example golden_games`

// A tool around the core, not the core: it writes the golden files.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::fmt::Write as _;

use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;
use wizard_core::vocabulary::game::{BidRestriction, Game, Options, bot};

fn main() {
    let cases = [
        ("3p_default", 3, Options::default(), 11),
        (
            "4p_hidden_bids",
            4,
            Options {
                hidden_bids: true,
                ..Options::default()
            },
            22,
        ),
        (
            "5p_house",
            5,
            Options {
                bid_restriction: BidRestriction::House,
                ..Options::default()
            },
            33,
        ),
        (
            "6p_canadian",
            6,
            Options {
                bid_restriction: BidRestriction::Canadian,
                turn_seconds: 30,
                ..Options::default()
            },
            44,
        ),
    ];
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/games");
    std::fs::create_dir_all(dir).unwrap();
    for (name, players, options, seed) in cases {
        let mut events = Vec::new();
        let mut game = Game::new(players, options, seed, &mut events).unwrap();
        let mut rng = ChaCha12Rng::seed_from_u64(seed);
        let mut actions = Vec::new();
        while let Some(seat) = game.next_to_act() {
            let action = bot::decide(&game.observation(seat), &mut rng).unwrap();
            game.apply(seat, action, &mut events).unwrap();
            actions.push((seat, action));
        }
        let json = |v: &dyn erased::Json| v.json();
        let mut out = String::new();
        writeln!(out, "{{").unwrap();
        writeln!(
            out,
            "  \"description\": \"{players} heuristic players, seed {seed}\","
        )
        .unwrap();
        writeln!(out, "  \"players\": {players},").unwrap();
        writeln!(out, "  \"options\": {},", json(&options)).unwrap();
        writeln!(out, "  \"seed\": {seed},").unwrap();
        let lines: Vec<String> = actions.iter().map(|a| format!("    {}", json(a))).collect();
        writeln!(out, "  \"actions\": [\n{}\n  ],", lines.join(",\n")).unwrap();
        let lines: Vec<String> = events.iter().map(|e| format!("    {}", json(e))).collect();
        writeln!(out, "  \"events\": [\n{}\n  ],", lines.join(",\n")).unwrap();
        writeln!(out, "  \"scores\": {}", json(&game.scores())).unwrap();
        writeln!(out, "}}").unwrap();
        std::fs::write(format!("{dir}/{name}.json"), out).unwrap();
    }
}

mod erased {
    pub trait Json {
        fn json(&self) -> String;
    }
    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> String {
            serde_json::to_string(self).unwrap()
        }
    }
}
