//! The core's clock type: microseconds since the server started, always passed in.
//!
//! The core never reads a clock. Shells convert their monotonic clock to [`Time`]; the
//! simulator advances a virtual one. Durations are plain `u64` microseconds named with
//! a `_us` suffix.

use std::fmt;

/// Microseconds in one second.
pub const US_PER_SEC: u64 = 1_000_000;
/// Microseconds in one millisecond.
pub const US_PER_MS: u64 = 1_000;

/// An instant: microseconds since the server's start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

impl Time {
    pub const ZERO: Time = Time(0);
    /// Later than any real instant; useful as "never".
    pub const MAX: Time = Time(u64::MAX);

    pub fn from_secs(secs: u64) -> Time {
        Time(secs.saturating_mul(US_PER_SEC))
    }

    pub fn from_millis(ms: u64) -> Time {
        Time(ms.saturating_mul(US_PER_MS))
    }

    pub fn as_micros(self) -> u64 {
        self.0
    }

    /// This instant plus `us` microseconds, saturating at [`Time::MAX`].
    pub fn plus_us(self, us: u64) -> Time {
        Time(self.0.saturating_add(us))
    }

    /// Microseconds from `earlier` to `self`; 0 when `earlier` is later.
    pub fn since_us(self, earlier: Time) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.0 / US_PER_SEC;
        let us = self.0 % US_PER_SEC;
        write!(f, "{secs}.{us:06}s")
    }
}
