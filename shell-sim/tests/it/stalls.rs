//! Scenario 5: a 1.2 s stall makes the server overloaded within 1.1 s, a 150 ms stall
//! never does, and load oscillating around a threshold changes the level at most four
//! times a minute.

use crate::common::{assert_clean, run, scenario};

#[test]
fn a_long_stall_overloads_a_short_one_does_not() {
    let r = run(scenario("stalls"), 5);
    println!("{:?}", r.level_changes);
    assert_clean(&r, &[]);
    let overloaded: Vec<f64> = r
        .level_changes
        .iter()
        .filter(|(_, _, to)| *to == "overloaded")
        .map(|(t, _, _)| *t)
        .collect();
    assert_eq!(overloaded.len(), 1, "{:?}", r.level_changes);
    // The long stall runs from 20.0 to 21.2 s.
    assert!(
        overloaded[0] > 20.0 && overloaded[0] <= 21.2 + 1.1,
        "{overloaded:?}"
    );
}

#[test]
fn oscillating_load_changes_the_level_at_most_four_times_a_minute() {
    let r = run(scenario("oscillation"), 5);
    println!("{:?}", r.level_changes);
    assert_clean(&r, &[]);
    for (t0, _, _) in &r.level_changes {
        let n = r
            .level_changes
            .iter()
            .filter(|(t, _, _)| *t >= *t0 && *t < t0 + 60.0)
            .count();
        assert!(
            n <= 4,
            "{n} changes in the minute from {t0}: {:?}",
            r.level_changes
        );
    }
    assert!(
        !r.level_changes.is_empty(),
        "the load never reached the threshold"
    );
}
