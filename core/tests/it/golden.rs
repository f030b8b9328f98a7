//! Replays the golden games in `fixtures/games/`: the same seed and actions must give
//! exactly the recorded events and final scores.

// A test of the core, not the core: it reads the golden files.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use serde::Deserialize;
use wizard_core::vocabulary::game::{Action, Event, Game, Options};

#[derive(Deserialize)]
struct Golden {
    players: u8,
    options: Options,
    seed: u64,
    actions: Vec<(u8, Action)>,
    events: Vec<serde_json::Value>,
    scores: Vec<i32>,
}

#[test]
fn golden_games_replay_exactly() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/games");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "golden games present: {files:?}");
    for path in files {
        let name = path.display();
        let golden: Golden = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut events: Vec<Event> = Vec::new();
        let mut game = Game::new(golden.players, golden.options, golden.seed, &mut events).unwrap();
        for (i, &(seat, action)) in golden.actions.iter().enumerate() {
            game.apply(seat, action, &mut events)
                .unwrap_or_else(|e| panic!("{name}: action {i} {action:?} by {seat}: {e}"));
        }
        let produced: Vec<serde_json::Value> = events
            .iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .collect();
        assert_eq!(produced.len(), golden.events.len(), "{name}: event count");
        for (i, (got, want)) in produced.iter().zip(&golden.events).enumerate() {
            assert_eq!(got, want, "{name}: event {i}");
        }
        // Events decode back into the same values (clients in Rust rely on it).
        for want in &golden.events {
            let event: Event = serde_json::from_value(want.clone()).unwrap();
            assert_eq!(&serde_json::to_value(&event).unwrap(), want);
        }
        assert_eq!(game.scores(), golden.scores.as_slice(), "{name}: scores");
        assert!(game.ranking().is_some(), "{name}: the game finished");
    }
}
