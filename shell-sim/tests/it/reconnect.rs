//! Full servers and honest players: players of running games come back through a storm
//! that fills `MAX_CONNECTIONS` and the socket cap (admitted past the cap), and new
//! players are not locked out by sessions of abandoned lobbies.

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

/// Abandoned lobbies do not lock new players out: at `MAX_SESSIONS` the player gone
/// longest from a lobby that is not playing makes room (the swarm's seed 154).
#[test]
fn abandoned_lobbies_make_room_for_new_players() {
    let r = run(scenario("abandoned_lobbies"), 154);
    println!("{}", r.render());
    assert_clean(&r, &[]);
    assert!(
        r.coverage.get("session_evicted").copied().unwrap_or(0) > 0,
        "no session made room"
    );
}
