//! Scenario 3: storm + flood + lobby spam while 500 games run.

use wizard_sim::runs::report::percentile;

use crate::common::{assert_clean, run, scenario};

#[test]
fn attackers_do_not_slow_running_games() {
    let with = run(scenario("attack"), 3);
    let mut quiet = scenario("attack");
    quiet.attacks.clear();
    let without = run(quiet, 3);
    assert_clean(&with, &[]);
    assert_clean(&without, &[]);
    let p99 = |r: &wizard_sim::Report| percentile(&r.move_latency_us, 99.0) as f64 / 1e3;
    let mean = |r: &wizard_sim::Report| {
        r.move_latency_us.iter().sum::<u64>() as f64 / r.move_latency_us.len().max(1) as f64
    };
    println!(
        "mean move latency with attackers {:.1} us, without {:.1} us",
        mean(&with),
        mean(&without)
    );
    println!("{}", with.render());
    println!(
        "move p99 with attackers {:.2} ms, without {:.2} ms",
        p99(&with),
        p99(&without)
    );
    assert!(
        with.move_latency_us.len() > 5000,
        "too few moves: {}",
        with.move_latency_us.len()
    );
    assert!(
        p99(&with) <= 2.0 * p99(&without),
        "attackers slowed the games"
    );
    for key in [
        "close_1008",
        "close_1013",
        "conn_refused_per_ip",
        "error_rate_limited",
    ] {
        assert!(with.counters.get(key).copied().unwrap_or(0) > 0, "no {key}");
    }
}

/// Guessing lobby codes with `spectate` spends the address's `JOIN_FAIL_RATE` like
/// `join_lobby` does: after `JOIN_FAIL_BURST` (10) unknown codes, and 10 a minute more,
/// every guess is `rate_limited`, while the honest games go on.
#[test]
fn spectate_guessers_spend_the_join_fail_budget() {
    use wizard_sim::runs::scenario::{Attack, AttackKind};
    let mut s = scenario("door_and_frames");
    s.attacks = vec![Attack {
        kind: AttackKind::SpectateGuess,
        count: 2,
        rate_per_s: 5.0,
        from_s: 2.0,
        to_s: 12.0,
        ips: 1,
        hold_ms: 0.0,
    }];
    let r = run(s, 1);
    assert_clean(&r, &[]);
    let cover = |k: &str| r.coverage.get(k).copied().unwrap_or(0);
    println!(
        "guesses: {} not_found, {} rate_limited",
        cover("refused_not_found"),
        cover("refused_rate_limited")
    );
    // About 100 guesses in 10 s from one address.
    assert!(cover("refused_rate_limited") > 50, "{:?}", r.coverage);
    assert!(cover("refused_not_found") <= 12, "{:?}", r.coverage);
}
