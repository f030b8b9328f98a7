//! When a refused client may usefully try again: the `retry_after_ms` of every `busy`
//! error (PROTOCOL.md section 6.2).
//!
//! The wait is the least time after which the refusal can have gone away, spread by a
//! random share so that clients refused together do not come back together: a crowd of
//! retriers that all waited the same fixed time would arrive as one burst again.

use rand::Rng;

/// The shortest wait: below it a retry finds the same capacity with near certainty
/// (games last minutes, the load level is re-measured once per sample interval).
pub const BUSY_RETRY_MIN_US: u64 = 5_000_000;
/// The random spread added on top of the wait, in percent of it (0 to this).
pub const BUSY_RETRY_JITTER_PCT: u64 = 50;

/// `retry_after_ms` for a `busy`: `wait_us` (at least [`BUSY_RETRY_MIN_US`]) plus a
/// random 0 to [`BUSY_RETRY_JITTER_PCT`] % of it, in whole milliseconds.
pub fn busy_retry_after_ms(wait_us: u64, rng: &mut impl Rng) -> u64 {
    let wait_ms = wait_us.max(BUSY_RETRY_MIN_US).div_ceil(1000);
    let spread_ms = wait_ms.saturating_mul(BUSY_RETRY_JITTER_PCT) / 100;
    wait_ms.saturating_add(rng.next_u64() % spread_ms.saturating_add(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha12Rng;

    #[test]
    fn waits_at_least_the_floor_and_spreads_within_the_jitter() {
        let mut rng = ChaCha12Rng::seed_from_u64(1);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let ms = busy_retry_after_ms(0, &mut rng);
            assert!((5_000..=7_500).contains(&ms), "{ms}");
            seen.insert(ms);
            let ms = busy_retry_after_ms(10_000_000, &mut rng);
            assert!((10_000..=15_000).contains(&ms), "{ms}");
        }
        assert!(
            seen.len() > 100,
            "no spread: {} distinct values",
            seen.len()
        );
    }
}
