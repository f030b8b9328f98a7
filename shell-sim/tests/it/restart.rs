//! The server process killed mid-overload and restored from its durable store
//! (`fixtures/scenarios/restart.json`): every player comes back with its token and
//! resumes with nothing it saw lost (the resume checker, `checks/resume.rs`), and every
//! game running at a kill finishes. A scenario cannot restart a server without a
//! durable store.

use crate::common::{assert_clean, run, scenario};

fn counter(r: &wizard_sim::Report, name: &str) -> u64 {
    r.counters.get(name).copied().unwrap_or(0)
}

#[test]
fn players_resume_after_a_kill_and_every_game_finishes() {
    for seed in [1, 2] {
        let r = run(scenario("restart"), seed);
        assert_clean(&r, &[]);
        assert_eq!(counter(&r, "restarts"), 2, "seed {seed}");
        // The kills came mid-overload: the level was up before the first.
        assert!(
            r.timeline.iter().take(3).any(|s| s.level != "normal"),
            "seed {seed}: not loaded at the first kill"
        );
        let resumed = r.coverage.get("restart_resumed").copied().unwrap_or(0);
        assert!(resumed >= 40, "seed {seed}: {resumed} players resumed");
        let games = counter(&r, "restart_games");
        assert!(games >= 20, "seed {seed}: {games} games running at a kill");
        assert_eq!(counter(&r, "restart_games_finished"), games, "seed {seed}");
        // Some moves were made by a process that was killed, the rest by the restored
        // ones: the report adds them up.
        assert!(counter(&r, "moves_human") > 5000, "seed {seed}");
        assert!(counter(&r, "refused_while_down") > 0, "seed {seed}");
    }
}

#[test]
fn a_restart_needs_a_durable_store() {
    let mut s = scenario("restart");
    s.env.insert("STORE".into(), "memory".into());
    let err = wizard_sim::run(s, 1).expect_err("a memory store cannot be restored");
    assert!(err.0.contains("durable store"), "{}", err.0);
}
