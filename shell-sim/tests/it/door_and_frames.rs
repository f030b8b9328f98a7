//! Issue 14 rows 1 and 2 in the simulator: fragment flooders read by the core's
//! `ws::FrameReader` and silent sockets held by the core's `overload::door::Door`,
//! beside honest games whose players keep coming back through the storm.

use wizard_core::overload::door::Door;

use crate::common::{assert_clean, run, scenario};

#[test]
fn fragment_floods_are_cut_and_silent_sockets_never_lock_players_out() {
    let s = scenario("door_and_frames");
    let caps = Door::for_config(&s.config().unwrap()).caps();
    for seed in [1, 2] {
        let r = run(s.clone(), seed);
        println!("{}", r.render());
        // Honest games finish their moves, nothing is lost, liveness holds.
        assert_clean(&r, &[]);
        let count = |k: &str| r.counters.get(k).copied().unwrap_or(0);
        // Row 1: the frame budget, not KEEPALIVE_TIMEOUT, ends each flooder, with 1008.
        assert!(count("frame_floods") > 10, "few frame floods: {r:?}");
        assert!(
            r.coverage.get("frame_flood_closed").copied().unwrap_or(0) >= count("frame_floods"),
            "a frame flood was not closed with 1008"
        );
        // Row 2: the storm filled the door, silent sockets were evicted or timed out,
        // and no honest player (new or coming back) was refused or answered 503.
        assert!(
            count("sockets_open_max") >= caps.cap as u64,
            "the storm never filled the door"
        );
        assert!(count("sockets_evicted") > 100, "few evictions");
        assert!(count("first_byte_timeouts") > 0, "no first-byte timeout");
        assert_eq!(count("honest_sockets_refused"), 0);
        assert!(count("moves_human") > 300, "too few moves");
    }
}
