//! Scenario 4: AI faults. Every AI turn is answered within its deadline; the breaker
//! opens for real failures and never for `overloaded`.

use crate::common::{assert_clean, run, scenario};

#[test]
fn every_ai_turn_is_answered_and_the_breaker_cycles() {
    let r = run(scenario("ai_faults"), 4);
    println!("{}", r.render());
    assert_clean(&r, &[]);
    assert!(
        r.ai_deadline_overshoot_us_max <= 1_000_000,
        "deadline overshot by {} us",
        r.ai_deadline_overshoot_us_max
    );
    let c = |k: &str| r.counters.get(k).copied().unwrap_or(0);
    assert!(c("breaker_opened") > 0, "the breaker never opened");
    for k in [
        "fallback_timeout",
        "fallback_malformed",
        "fallback_illegal",
        "fallback_overloaded",
        "fallback_disconnected",
    ] {
        assert!(c(k) > 0, "no {k}");
    }
    assert!(r.coverage.contains_key("breaker_closed"));
    assert!(c("moves_ai") > 0 && c("moves_fallback") > 0);
}

#[test]
fn overloaded_answers_never_open_the_breaker() {
    let r = run(scenario("ai_overloaded"), 4);
    assert_clean(&r, &[]);
    let c = |k: &str| r.counters.get(k).copied().unwrap_or(0);
    assert!(c("fallback_overloaded") > 100, "{:?}", r.counters);
    assert_eq!(c("breaker_opened"), 0);
}
