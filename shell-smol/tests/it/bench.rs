//! `wizard-bench`'s library (the `loadgen` crate) against a test server: it counts
//! moves and refusals, measures latency and appends a history line.

pub use wizard_bench as bench_lib;

use std::time::Duration;

use bench_lib::{Attack, Pacing, Settings};

use crate::client::TestServer;

fn temp_history(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("wizard-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("history.jsonl")
}

#[test]
fn bench_counts_moves_and_refusals_and_writes_history() {
    // Two games may run; the other two hosts are refused `busy` at start_game and retry.
    let server = TestServer::start(&[
        ("AI_MOVE_DELAY", "0"),
        ("TRICK_PAUSE", "0"),
        ("MAX_ACTIVE_GAMES", "2"),
        ("EMBEDDED_AI", "0"),
        ("MESSAGE_RATE", "1000"),
        ("MESSAGE_BURST", "1000"),
    ]);
    let history = temp_history("games");
    let mut s = Settings::new(server.addr);
    s.games = 4;
    s.humans = 2;
    s.pacing = Pacing::Full;
    s.think = Duration::ZERO;
    s.ramp = Duration::from_millis(200);
    s.warmup = Duration::ZERO;
    s.duration = Duration::from_secs(3);
    s.server_pid = Some(std::process::id());
    s.history = Some(history.clone());
    s.label = "test".into();
    let report = bench_lib::run(s).unwrap();
    let st = &report.stats;
    let results = &report.line["results"];
    assert!(st.lobbies >= 2, "{results}");
    assert!(st.games_started >= 2, "{results}");
    assert!(st.moves > 100, "{results}");
    assert!(st.human_moves > 20, "{results}");
    // Games play to the end: a bot that missed a turn would stall its game for good
    // and hold one of the two slots.
    assert!(st.games_finished >= 2, "{results}");
    assert_eq!(st.move_latency.len(), st.human_moves);
    // At MAX_ACTIVE_GAMES the server is not accepting games: create_lobby (or
    // start_game) gets `busy`, counted as a refusal, not as accepted work.
    assert!(
        st.refusals.busy_create + st.refusals.busy_start > 0,
        "{results}"
    );

    let text = std::fs::read_to_string(&history).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1);
    let line: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(line["results"]["accepted"]["moves"], st.moves);
    assert_eq!(
        line["results"]["refused"]["busy_create"],
        st.refusals.busy_create
    );
    assert!(line["results"]["move_latency_ms"]["p99"].is_number());
    assert!(line["server"]["cpu_percent_of_core"].is_number());
    assert!(line["machine"]["nproc"].as_u64().unwrap() >= 1);
    assert_eq!(line["settings"]["label"], "test");

    // A second run is compared with the first.
    let compared = bench_lib::compare(&history, 5);
    assert!(compared.unwrap().contains("latest"));
    let table = bench_lib::table(&history, 5).unwrap();
    assert!(table.contains("| test | 4 games |"), "{table}");
    let _ = std::fs::remove_dir_all(history.parent().unwrap());
}

#[test]
fn bench_flood_is_counted_as_refusals() {
    let server = TestServer::start(&[
        ("MESSAGE_RATE", "5"),
        ("MESSAGE_BURST", "5"),
        ("MAX_RATE_VIOLATIONS", "20"),
    ]);
    let history = temp_history("flood");
    let mut s = Settings::new(server.addr);
    s.games = 0;
    s.attack = Some(Attack::Flood);
    s.attack_conns = 2;
    s.attack_count = 500;
    s.duration = Duration::from_secs(2);
    s.history = Some(history.clone());
    let report = bench_lib::run(s).unwrap();
    let a = &report.stats.attack;
    let results = &report.line["results"]["attack"];
    assert!(a.accepted > 0, "{results}");
    assert!(a.refusals.rate_limited > 0, "{results}");
    assert!(a.refusals.close_1008 > 0, "{results}");
    assert!(a.attempts <= 500, "{results}");
    assert!(std::fs::read_to_string(&history).unwrap().lines().count() == 1);
    let _ = std::fs::remove_dir_all(history.parent().unwrap());
}
