//! Scenario 3: storm + flood + lobby spam while 500 games run.

use wizard_sim::report::percentile;

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
