//! Quick play during overload (`quick_play_storm.json`): a storm of players asking
//! `quick_play` while 30 full-speed games overload a server at 15 % of a core, scripts
//! refused `busy` beside them, and a trickle of players for large tables afterwards.

use crate::common::{assert_clean, run, scenario};

fn counter(r: &wizard_sim::Report, what: &str) -> u64 {
    r.counters.get(what).copied().unwrap_or(0)
}

#[test]
fn a_quick_play_storm_during_overload_seats_everyone_it_admits() {
    for seed in [1, 2] {
        let r = run(scenario("quick_play_storm"), seed);
        println!("{}", r.render());
        // Every checker holds, the quick-play checker's among them: the server's pool
        // is the players' after every input, no one is seated twice or after a cancel,
        // every ticket is seated or refused within QUICK_PLAY_WAIT and one interval.
        assert_clean(&r, &[]);
        let overloaded = r.first_level("overloaded").unwrap();
        assert!(
            overloaded <= 3.5,
            "overloaded at {overloaded}, after the storm began"
        );
        // The scripts asking during the overload are refused, each with retry_after_ms.
        assert!(counter(&r, "quick_refused_busy") >= 40, "{:?}", r.counters);
        // Most of the 320 players are seated, at tables of players and, after
        // QUICK_PLAY_WAIT (5 s), at tables filled with AI seats.
        assert!(counter(&r, "quick_seated") >= 250, "{:?}", r.counters);
        assert!(counter(&r, "quick_seated_full") >= 40, "{:?}", r.counters);
        assert!(counter(&r, "quick_seated_with_ai") >= 1, "{:?}", r.counters);
        let waited = counter(&r, "quick_wait_ms_max");
        assert!(
            (5_000..=counter(&r, "quick_wait_bound_ms")).contains(&waited),
            "longest wait {waited} ms"
        );
        // Players leave the pool both ways, and their tickets with them.
        assert!(counter(&r, "quick_cancelled") >= 1, "{:?}", r.counters);
        assert!(counter(&r, "quick_walked_away") >= 1, "{:?}", r.counters);
        assert!(r.prober_success_s.is_some(), "{}", r.render());
    }
}
