//! Random distributions of durations, as scenario files write them, and the seeded
//! generator every random choice of a run descends from.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha12Rng;
use serde::{Deserialize, Serialize};

/// The generator of a run: one seed, forked per purpose so that adding a client does
/// not shift every other random draw.
pub fn fork(seed: u64, purpose: u64) -> ChaCha12Rng {
    let mixed = seed ^ purpose.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ChaCha12Rng::seed_from_u64(mixed)
}

/// A duration distribution in milliseconds:
/// `{"const": 5}`, `{"uniform": [1, 10]}`, `{"exp": 20}` (mean),
/// `{"lognormal": [median, sigma]}`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dist {
    Const(f64),
    Uniform([f64; 2]),
    Exp(f64),
    Lognormal([f64; 2]),
}

impl Default for Dist {
    fn default() -> Self {
        Dist::Const(0.0)
    }
}

impl Dist {
    /// One sample in microseconds (never negative).
    pub fn sample_us(&self, rng: &mut ChaCha12Rng) -> u64 {
        let ms = match *self {
            Dist::Const(v) => v,
            Dist::Uniform([a, b]) => {
                if b > a {
                    a + (b - a) * rng.random::<f64>()
                } else {
                    a
                }
            }
            Dist::Exp(mean) => -mean * (1.0 - rng.random::<f64>()).ln(),
            Dist::Lognormal([median, sigma]) => median * (sigma * normal(rng)).exp(),
        };
        ms_to_us(ms)
    }

    /// The same distribution `factor` times slower.
    pub fn scaled(&self, factor: f64) -> Dist {
        match *self {
            Dist::Const(v) => Dist::Const(v * factor),
            Dist::Uniform([a, b]) => Dist::Uniform([a * factor, b * factor]),
            Dist::Exp(mean) => Dist::Exp(mean * factor),
            Dist::Lognormal([median, sigma]) => Dist::Lognormal([median * factor, sigma]),
        }
    }
}

/// Milliseconds (possibly fractional) to whole microseconds, clamped at zero.
pub fn ms_to_us(ms: f64) -> u64 {
    if ms.is_finite() && ms > 0.0 {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let us = (ms * 1000.0).round() as u64;
        us
    } else {
        0
    }
}

/// Seconds to whole microseconds, clamped at zero.
pub fn secs_to_us(secs: f64) -> u64 {
    ms_to_us(secs * 1000.0)
}

/// A standard normal sample (Box-Muller).
fn normal(rng: &mut ChaCha12Rng) -> f64 {
    let u1 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_reproducible_and_sane() {
        let d = Dist::Lognormal([10.0, 0.5]);
        let a: Vec<u64> = (0..5).map(|_| 0).collect();
        assert_eq!(a.len(), 5);
        let mut r1 = fork(7, 1);
        let mut r2 = fork(7, 1);
        for _ in 0..100 {
            assert_eq!(d.sample_us(&mut r1), d.sample_us(&mut r2));
        }
        let mut r = fork(1, 2);
        let mean = (0..10_000)
            .map(|_| Dist::Exp(5.0).sample_us(&mut r) as f64)
            .sum::<f64>()
            / 10_000.0;
        assert!((mean - 5000.0).abs() < 300.0, "{mean}");
        assert_eq!(Dist::Uniform([2.0, 2.0]).sample_us(&mut r), 2000);
    }
}
