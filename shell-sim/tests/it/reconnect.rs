//! Players of running games come back through a full server: a storm from many
//! addresses fills `MAX_CONNECTIONS` and the socket cap, and reconnecting players are
//! admitted past the cap instead of being locked out of their games.

use crate::common::{assert_clean, run, scenario};

#[test]
fn players_of_running_games_get_back_in_through_a_storm() {
    for seed in [1, 2] {
        let r = run(scenario("reconnect_full"), seed);
        println!("{}", r.render());
        // No "closed 1013 in a running game", every game moved, liveness held.
        assert_clean(&r, &[]);
        let count = |k: &str| r.coverage.get(k).copied().unwrap_or(0);
        assert!(
            count("resumed_past_cap") > 0,
            "nobody came back past the cap"
        );
        assert!(
            count("socket_cap") > 0,
            "the storm never reached the socket cap"
        );
    }
}
