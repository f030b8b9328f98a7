//! Scenario 1: the seed's overload test (15 % of a CPU, 30 games at full speed).

use crate::common::{assert_clean, run, scenario};

/// The seed's measured timeline (Python server, docs: "Overload test").
const SEED_TIMELINE: &str = "0 s load starts | ~1 s busy | ~3 s overloaded (CPU 100 % of quota, throttled 100 %), \
create_lobby refused | 534 moves made while overloaded | ~14 s back to normal";

#[test]
fn busy_then_overloaded_then_normal_while_games_keep_moving() {
    for seed in [1, 2] {
        let r = run(scenario("seed_overload"), seed);
        println!("{}", r.render());
        println!("seed's measured timeline: {SEED_TIMELINE}");
        assert_clean(&r, &[]);
        let busy = r.first_level("busy").unwrap();
        let overloaded = r.first_level("overloaded").unwrap();
        assert!(busy <= 1.1, "busy at {busy}");
        // Samples are due on a fixed one-second grid (the core's probe), so a late
        // wake-up under the quota no longer pushes the third sample past 3.1 s.
        assert!(overloaded <= 3.1, "overloaded at {overloaded}");
        let over: Vec<_> = r
            .timeline
            .iter()
            .filter(|s| s.level == "overloaded")
            .collect();
        let moves_overloaded: u64 = over.iter().map(|s| s.moves).sum();
        assert!(moves_overloaded > 0, "no move while overloaded");
        let refused_overloaded: u64 = over.iter().map(|s| s.busy).sum();
        assert!(
            refused_overloaded > 0,
            "nothing refused busy while overloaded"
        );
        let create = r.requests.get("create_lobby").unwrap();
        assert!(!create.refused_us.is_empty(), "create_lobby never refused");
        // The load ends with the last sample that still saw the CPU busy (a timeline
        // row shows the sample of the second before it).
        let load_end = r
            .timeline
            .iter()
            .filter(|s| s.cpu >= 0.7)
            .map(|s| s.t_s as f64)
            .fold(0.0, f64::max);
        let normal = r.last_normal().unwrap();
        assert!(
            normal <= load_end + 12.0,
            "normal at {normal}, load ended at {load_end}"
        );
        println!(
            "seed {seed}: busy {busy:.2}s overloaded {overloaded:.2}s, {moves_overloaded} moves while overloaded, load ended {load_end}s, normal {normal:.2}s"
        );
    }
}
