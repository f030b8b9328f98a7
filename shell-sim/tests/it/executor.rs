//! The executor's turns (`executor.rs`): accept-path work beyond the whole quota takes
//! its turns beside the core task and the probe, so neither starves. Before the
//! executor, the same scenario left the probe without a sample and every game without
//! a move from 3 s to 20 s (19 s of lag measured at last).

use wizard_core::shell::door::Door;

use crate::common::{assert_clean, run, scenario};

fn counter(r: &wizard_sim::Report, name: &str) -> u64 {
    r.counters.get(name).copied().unwrap_or(0)
}

#[test]
fn arrivals_costing_more_than_the_quota_starve_neither_the_probe_nor_the_loop() {
    let config = wizard_core::vocabulary::config::Config::default();
    let hard_cap = Door::for_config(&config).caps().hard_cap as u64;
    for seed in [1, 2] {
        let r = run(scenario("executor"), seed);
        assert_clean(&r, &[]);
        // A sample every second of the 28 s run (the first after one second).
        let samples = counter(&r, "probe_samples");
        assert!(samples >= 27, "seed {seed}: {samples} samples");
        // From the second sample of the storm (2 s to 12 s) on, the CPU is the storm's and throttled, yet the
        // probe wakes within one CFS period (100 ms; it is throttled for 90 ms of each)
        // and the games move every second.
        for s in r.timeline.iter().filter(|s| (4..=12).contains(&s.t_s)) {
            assert!(
                s.moves > 0 && s.lag_max_ms < 100.0 && s.throttled > 0.9,
                "seed {seed}: {s:?}"
            );
        }
        // The accept path's work exceeded the quota: its queue filled up to the
        // listen backlog (1024), and the kernel refused what came beyond it. Closes of
        // sockets the door holds (first-byte timeouts) queue beyond it, at most one per
        // socket the door can hold.
        let queue = counter(&r, "door_queue_max");
        assert!(
            (1024..=1024 + hard_cap).contains(&queue),
            "seed {seed}: door queue {queue}, hard cap {hard_cap}"
        );
        assert!(counter(&r, "sockets_backlog_refused") > 0, "seed {seed}");
    }
}
