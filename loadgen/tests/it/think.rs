//! The bots' think times (`wizard_bench::think_us`): exact without a jitter, spread
//! within it with one, and the same for the same seat and move.

use std::time::Duration;

use wizard_bench::think_us;

#[test]
fn a_think_time_is_exact_without_jitter_and_spread_within_it_with_one() {
    let think = Duration::from_millis(1500);
    let cases: [(u64, u64, u64); 3] = [
        // (jitter ms, lowest us allowed, highest us allowed)
        (0, 1_500_000, 1_500_000),
        (500, 1_000_000, 2_000_000),
        // A jitter larger than the think time never makes a negative time.
        (2_000, 0, 3_500_000),
    ];
    for (jitter_ms, low, high) in cases {
        let jitter = Duration::from_millis(jitter_ms);
        let times: Vec<u64> = (0..400)
            .map(|n| think_us(think, jitter, (n % 7) as usize, n / 7))
            .collect();
        assert!(
            times.iter().all(|t| (low..=high).contains(t)),
            "jitter {jitter_ms} ms: {times:?}"
        );
        let distinct: std::collections::BTreeSet<_> = times.iter().collect();
        if jitter_ms == 0 {
            assert_eq!(distinct.len(), 1);
        } else {
            // Spread over the range: both halves are used, and most draws differ (below
            // 0 they are all 0).
            assert!(distinct.len() > 300, "jitter {jitter_ms} ms");
            let mid = (low + high) / 2;
            assert!(times.iter().any(|&t| t < mid) && times.iter().any(|&t| t > mid));
        }
        // The same seat and move get the same time.
        assert_eq!(
            think_us(think, jitter, 3, 17),
            think_us(think, jitter, 3, 17)
        );
    }
}
