//! Scenario 6: a 60 s surge at 3x capacity, then removed. With the shipped backoff a
//! new lobby is accepted (and the level is normal) within 15 s; naive immediate retry
//! recovers measurably slower.

use wizard_sim::runs::scenario::Retry;

use crate::common::{assert_clean, run, scenario};

#[test]
fn backoff_recovers_within_15_s_and_naive_retry_slower() {
    let backoff = run(scenario("metastability"), 6);
    println!("{}", backoff.render());
    // The liveness checker holds the default promise: normal and a new lobby within
    // 15 s, every running game moving.
    assert_clean(&backoff, &[]);
    let heal = backoff.heal_s;
    assert!(
        backoff
            .level_changes
            .iter()
            .any(|&(t, _, to)| to == "overloaded" && t < heal),
        "the surge never overloaded the server: {:?}",
        backoff.level_changes
    );
    let mut s = scenario("metastability");
    for a in &mut s.arrivals {
        a.retry = Retry::Naive;
    }
    let naive = run(s, 6);
    println!("{}", naive.render());
    // Naive retry may break the liveness promises: that is what it shows.
    assert_clean(&naive, &["liveness:"]);
    let b = backoff.prober_success_s.unwrap() - heal;
    let n = naive.prober_success_s.map_or(f64::INFINITY, |t| t - heal);
    let started = |r: &wizard_sim::Report| r.counters.get("games_started").copied().unwrap_or(0);
    println!(
        "new lobby accepted {b:.1} s after the surge with backoff, {n:.1} s with naive retry; \
         games started {} and {}",
        started(&backoff),
        started(&naive)
    );
    assert!(b <= 15.0);
    assert!(
        n > b + 2.0,
        "naive retry did not recover measurably slower ({n} vs {b})"
    );
}
