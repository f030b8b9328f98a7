//! Scenario 2: offered new-game load at 1x, 4x and 8x capacity, admission control
//! off and on. With limits, accepted latency stays flat and refusals absorb the excess.

use crate::common::{assert_clean, create_figures, run, scenario};

fn variant(factor: f64, limits: bool) -> (f64, usize, usize) {
    let mut s = scenario("limits");
    for a in &mut s.arrivals {
        a.rate_per_s *= factor;
    }
    if !limits {
        for (k, v) in [
            ("LOAD_FORCE_LEVEL", "normal"),
            ("MAX_ACTIVE_GAMES", "100000"),
            ("MAX_LOBBIES", "100000"),
        ] {
            s.env.insert(k.into(), v.into());
        }
    }
    let r = run(s, 7);
    assert_clean(&r, &[]);
    create_figures(&r)
}

#[test]
fn refusing_keeps_accepted_latency_flat() {
    let mut table = Vec::new();
    for limits in [false, true] {
        for factor in [1.0, 4.0, 8.0] {
            let (p95, accepted, refused) = variant(factor, limits);
            println!(
                "limits {limits:5} load {factor}x: accepted {accepted:4} p95 {p95:9.1} ms, refused {refused}"
            );
            table.push((limits, factor, p95, accepted, refused));
        }
    }
    let get = |l: bool, f: f64| *table.iter().find(|t| t.0 == l && t.1 == f).unwrap();
    let (off1, off8) = (get(false, 1.0), get(false, 8.0));
    let (on1, on4, on8) = (get(true, 1.0), get(true, 4.0), get(true, 8.0));
    // Without limits nothing is refused and latency grows with the load.
    assert_eq!(off8.4, 0);
    assert!(
        off8.2 > 4.0 * off1.2.max(1.0),
        "no queueing without limits: {off1:?} {off8:?}"
    );
    // With limits the excess is refused and accepted latency stays flat.
    assert!(
        on8.4 > on4.4 && on4.4 > on1.4,
        "refusals do not absorb the excess: {on1:?} {on4:?} {on8:?}"
    );
    assert!(
        on8.2 < off8.2 / 2.0,
        "limits did not bound latency: {on8:?} vs {off8:?}"
    );
    // At 3.5 % of a core (2 % after the idle floor) every answer can wait out a throttled CFS period (98 ms) or two;
    // with limits that is all the waiting there is, whatever the load.
    for on in [on1, on4, on8] {
        assert!(on.2 <= 250.0, "accepted latency not bounded: {on:?}");
    }
}
