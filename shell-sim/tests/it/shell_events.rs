//! What the shell ends by itself, each asked for by a scenario file and held to its
//! outcome through the public API: `SESSION_TTL` for players who walk away, takeovers (`session_replaced`, 4000), oversized
//! frames (1009), `KEEPALIVE_TIMEOUT`, `WRITE_TIMEOUT`, turn timers (the fallback plays),
//! SIGTERM with its grace (1001) and with a durable store (1012), the idle floor, the
//! embedded AI's CPU and the durable store's on the quota.

use crate::common::{assert_clean, run, scenario};

fn counter(r: &wizard_sim::Report, name: &str) -> u64 {
    r.counters.get(name).copied().unwrap_or(0)
}

#[test]
fn the_shell_ends_takeovers_oversized_mute_and_blocked_connections() {
    for seed in [1, 2] {
        let r = run(scenario("shell_events"), seed);
        assert_clean(&r, &[]);
        // Every takeover replaced the older connection: one error, one 4000 each.
        let replaced = counter(&r, "error_session_replaced");
        assert!(replaced > 10, "seed {seed}: takeovers {replaced}");
        assert_eq!(counter(&r, "close_4000"), replaced, "seed {seed}");
        assert!(counter(&r, "close_1009") > 10, "seed {seed}: oversized");
        assert!(counter(&r, "keepalive_timeouts") > 5, "seed {seed}: mute");
        assert!(
            counter(&r, "write_timeouts") >= 1,
            "seed {seed}: slow reader"
        );
        assert!(
            r.coverage.contains_key("autoplayed"),
            "seed {seed}: turn timer"
        );
        assert!(
            r.coverage.contains_key("progress_turn_timer"),
            "seed {seed}"
        );
        // The two walkers' sessions expired, each seat turning AI no earlier than
        // SESSION_TTL after its close and no later than the slack after it (the
        // checker, `expiry.rs`, holds the timing and the seat).
        assert_eq!(counter(&r, "walkers"), 2, "seed {seed}");
        assert_eq!(counter(&r, "walkers_expired_seen"), 2, "seed {seed}");
        assert_eq!(counter(&r, "sessions_expired"), 2, "seed {seed}");
    }
}

#[test]
fn sigterm_gives_running_games_their_grace_then_1001() {
    let r = run(scenario("shutdown"), 1);
    assert_clean(&r, &[]);
    // SIGTERM at 6 s, SHUTDOWN_GRACE 3 s: the process ends at 9 s, on the 5 ms grid.
    let at = counter(&r, "finished_at_ms");
    assert!((9000..9010).contains(&at), "finished at {at} ms");
    // Every connection (12 players of games, 2 in lobbies, the in-process AI link) got 1001.
    assert_eq!(counter(&r, "close_1001"), 15);
    assert_eq!(counter(&r, "close_1012"), 0);
    assert!(counter(&r, "refused_after_exit") > 0);
}

#[test]
fn sigterm_with_a_durable_store_closes_every_player_with_1012_at_once() {
    let mut s = scenario("shutdown");
    s.env.insert("STORE".into(), "sqlite:wizard-sim.db".into());
    let r = run(s, 1);
    assert_clean(&r, &[]);
    let at = counter(&r, "finished_at_ms");
    assert!((6000..6010).contains(&at), "finished at {at} ms");
    // The 14 players get 1012; the in-process AI link is closed with 1001.
    assert_eq!(counter(&r, "close_1012"), 14);
    assert_eq!(counter(&r, "close_1001"), 1);
}

#[test]
fn the_idle_floor_and_the_embedded_ai_use_the_quota() {
    let mut idle = scenario("shutdown");
    idle.tables.clear();
    idle.ai = None;
    idle.shutdown_at_s = 0.0;
    let r = run(idle, 1);
    // 12 s at the idle floor without the embedded AI (no AI service), and nothing else.
    let floors = wizard_sim::model::calibration::calibration().figures;
    let usage = counter(&r, "cpu_usage_us") as f64;
    let idle_us = 12.0 * floors.idle_floor_ai_off_us_per_s;
    assert!(
        (usage - idle_us).abs() < idle_us / 100.0,
        "idle usage {usage} us, expected {idle_us}"
    );
    // The same games with the AI inside the process and apart: the cost model's
    // `ai_embedded_us` and `ai_embedded_answer_us` a decision more (in process no frame
    // is read or written).
    let mut usage = Vec::new();
    for embedded in ["1", "0"] {
        let mut s = scenario("shutdown");
        s.shutdown_at_s = 0.0;
        s.env.insert("EMBEDDED_AI".into(), embedded.into());
        let r = run(s, 1);
        assert_clean(&r, &[]);
        usage.push((
            counter(&r, "cpu_usage_us"),
            counter(&r, "ai_embedded_decisions"),
        ));
    }
    let ((with, decisions), (without, none)) = (usage[0], usage[1]);
    assert!(decisions > 50 && none == 0, "{usage:?}");
    // The runs differ a little apart from the AI (timing shifts the games), so the
    // difference is held to the decisions' cost and the higher idle floor of 12 s with
    // the AI's workers, within a quarter.
    let extra = with.saturating_sub(without) as f64;
    let floor_us = 12.0 * (floors.idle_floor_ai_on_us_per_s - floors.idle_floor_ai_off_us_per_s);
    let expected =
        decisions as f64 * (floors.ai_embedded_us + floors.ai_embedded_answer_us) + floor_us;
    assert!(
        (extra - expected).abs() < expected / 4.0,
        "embedded AI cost {extra} us for {decisions} decisions: {usage:?}"
    );
}

#[test]
fn a_durable_store_costs_its_commits_on_the_quota() {
    // The same games with a durable store and without: each record's commit (on the
    // core thread) and fold (the writer thread) come out of the quota, per the cost
    // model; without a durable store nothing is committed.
    let mut runs = Vec::new();
    for store in ["sqlite:wizard-sim.db", "memory"] {
        let mut s = scenario("shutdown");
        s.shutdown_at_s = 0.0;
        s.env.insert("STORE".into(), store.into());
        let r = run(s, 1);
        assert_clean(&r, &[]);
        runs.push((
            counter(&r, "cpu_usage_us"),
            counter(&r, "store_commits"),
            counter(&r, "store_records"),
        ));
    }
    let ((with, commits, records), (without, none, no_records)) = (runs[0], runs[1]);
    assert!(commits > 100 && records >= commits, "{runs:?}");
    assert_eq!((none, no_records), (0, 0), "{runs:?}");
    let cost = wizard_sim::model::cost::CostModel::default();
    let expected = records as f64 * (cost.store_record_us + cost.store_fold_us);
    // As with the embedded AI, timing shifts the games a little: within a quarter.
    let extra = with.saturating_sub(without) as f64;
    assert!(
        (extra - expected).abs() < expected / 4.0,
        "store cost {extra} us for {commits} commits of {records} records: {runs:?}"
    );
}
