//! The keepalive rule (`wizard_core::shell::keepalive`): who is pinged, who is closed, and
//! when the writers look, through its public API.

use wizard_core::Time;
use wizard_core::shell::keepalive::{Due, KEEPALIVE_GRID_US_MAX, Keepalive};

const S: u64 = 1_000_000;

fn rule(interval_s: u64, timeout_s: u64) -> Keepalive {
    Keepalive {
        interval_us: interval_s * S,
        timeout_us: timeout_s * S,
    }
}

fn t(us: u64) -> Time {
    Time(us)
}

#[test]
fn a_look_finds_a_ping_after_the_interval_of_silence_and_a_close_after_the_timeout() {
    // (now, heard, pinged, due) with the defaults: interval 20 s, timeout 60 s.
    let cases: &[(u64, u64, Option<u64>, Due)] = &[
        (0, 0, None, Due::Nothing),
        (20 * S - 1, 0, None, Due::Nothing),
        (20 * S, 0, None, Due::Ping),
        // Pinged at 20 s, no answer: the next ping 20 s after the ping.
        (39 * S, 0, Some(20 * S), Due::Nothing),
        (40 * S, 0, Some(20 * S), Due::Ping),
        // Heard after the ping (the pong): the next ping counts from the pong.
        (40 * S, 25 * S, Some(20 * S), Due::Nothing),
        (45 * S, 25 * S, Some(20 * S), Due::Ping),
        // Silent for the timeout: closed, whatever the pings.
        (60 * S, 0, Some(40 * S), Due::Close),
        (60 * S, 0, None, Due::Close),
        (61 * S, S, None, Due::Close),
        (61 * S - 1, S, None, Due::Ping),
        // A player heard every few seconds is never pinged.
        (100 * S, 94 * S, None, Due::Nothing),
    ];
    let k = rule(20, 60);
    for &(now, heard, pinged, want) in cases {
        assert_eq!(
            k.due(t(now), t(heard), pinged.map(t)),
            want,
            "now {now} heard {heard} pinged {pinged:?}"
        );
    }
}

#[test]
fn looks_fall_on_a_grid_shared_by_every_connection() {
    // (interval s, timeout s, heard us, pinged us, next look us)
    let cases: &[(u64, u64, u64, Option<u64>, u64)] = &[
        // Step 250 ms (the cap): the ping due at 20.3 s is looked at 20.5 s.
        (20, 60, 300_000, None, 20_500_000),
        (20, 60, 0, None, 20 * S),
        // After a ping at 20.6 s (no answer since 0): the next at 40.6 s -> 40.75 s.
        (20, 60, 0, Some(20_600_000), 40_750_000),
        // The close comes before the next ping: heard at 0, pinged at 50 s -> close 60 s.
        (20, 60, 0, Some(50 * S), 60 * S),
    ];
    for &(interval_s, timeout_s, heard, pinged, want) in cases {
        let k = rule(interval_s, timeout_s);
        assert_eq!(k.grid_us(), KEEPALIVE_GRID_US_MAX);
        assert_eq!(
            k.next_look(t(heard), pinged.map(t)),
            t(want),
            "heard {heard} pinged {pinged:?}"
        );
    }
    // A short interval: the step is a quarter of it (0.1 s -> 25 ms).
    let short = Keepalive {
        interval_us: 100_000,
        timeout_us: 500_000,
    };
    assert_eq!(short.grid_us(), 25_000);
    assert_eq!(short.next_look(t(10_000), None), t(125_000));
    // Two connections heard 0.2 s apart look at the same instant.
    let k = rule(20, 60);
    assert_eq!(
        k.next_look(t(3_010_000), None),
        k.next_look(t(3_210_000), None)
    );
}

/// A peer that never answers, looked at as a writer does (at each `next_look`): its
/// pings, then its close, at most one grid step after the exact times.
#[test]
fn a_silent_peer_is_pinged_each_interval_then_closed_within_a_step_of_the_timeout() {
    for (interval_us, timeout_us, opened) in [
        (20 * S, 60 * S, 0),
        (20 * S, 60 * S, 123_456),
        (100_000, 500_000, 7_777),
        (3 * S, 10 * S, 999_999),
    ] {
        let k = Keepalive {
            interval_us,
            timeout_us,
        };
        let heard = t(opened);
        let mut pinged = None;
        let mut pings = Vec::new();
        let closed = loop {
            let now = k.next_look(heard, pinged);
            match k.due(now, heard, pinged) {
                Due::Nothing => panic!("a look at {now:?} found nothing"),
                Due::Ping => {
                    pings.push(now);
                    pinged = Some(now);
                }
                Due::Close => break now,
            }
            assert!(pings.len() < 100, "no close");
        };
        let step = k.grid_us();
        let close_at = opened + timeout_us;
        assert!(
            closed.0 >= close_at && closed.0 < close_at + step,
            "{closed:?}"
        );
        assert!(!pings.is_empty());
        let mut last = opened;
        for p in &pings {
            assert!(
                p.0 >= last + interval_us && p.0 < last + interval_us + step,
                "{p:?}"
            );
            last = p.0;
        }
    }
}

/// A player heard every `every` is never pinged, and each look finds nothing due.
#[test]
fn a_player_heard_within_the_interval_is_never_pinged() {
    let k = rule(20, 60);
    let every = 6 * S;
    let mut heard = t(0);
    let mut look = k.next_look(heard, None);
    for step in 1..100u64 {
        let now = t(step * every);
        // Looks that came before this message.
        while look < now {
            assert_eq!(k.due(look, heard, None), Due::Nothing, "look {look:?}");
            look = k.next_look(heard, None);
        }
        heard = now;
    }
}
