//! A rate limit on the log lines an attacker can cause (refused connections, floods,
//! connections admitted past the cap, failed accepts): at most [`LINES_PER_WINDOW`]
//! lines of one kind per [`WINDOW_US`], then one "suppressed K similar lines" summary
//! when the window is over. The events themselves are all counted in `/metrics`; the
//! log only has to say that they happen, without rolling the files in minutes.
//!
//! Pure: time comes in as microseconds, and the caller writes the lines.

/// Length of one window.
pub const WINDOW_US: u64 = 10_000_000;
/// Lines of one kind written per window at most.
pub const LINES_PER_WINDOW: u32 = 10;

/// The kinds of line limited, each with its own window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LineKind {
    ConnectionRefused,
    FloodClosed,
    ResumedPastCap,
    AcceptFailed,
}

impl LineKind {
    pub const ALL: [LineKind; 4] = [
        LineKind::ConnectionRefused,
        LineKind::FloodClosed,
        LineKind::ResumedPastCap,
        LineKind::AcceptFailed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            LineKind::ConnectionRefused => "connection_refused",
            LineKind::FloodClosed => "flood_closed",
            LineKind::ResumedPastCap => "resumed_past_cap",
            LineKind::AcceptFailed => "accept_failed",
        }
    }

    fn index(self) -> usize {
        match self {
            LineKind::ConnectionRefused => 0,
            LineKind::FloodClosed => 1,
            LineKind::ResumedPastCap => 2,
            LineKind::AcceptFailed => 3,
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Window {
    start_us: u64,
    written: u32,
    suppressed: u64,
    /// Suppressed in earlier windows and not yet summarised.
    carried: u64,
}

/// One window per [`LineKind`].
#[derive(Clone, Debug, Default)]
pub struct LogLimiter {
    windows: [Window; 4],
}

impl LogLimiter {
    /// Whether a line of `kind` at `now_us` may be written; counts it either way.
    pub fn allow(&mut self, kind: LineKind, now_us: u64) -> bool {
        let w = &mut self.windows[kind.index()];
        if w.written == 0 && w.suppressed == 0 || now_us >= w.start_us.saturating_add(WINDOW_US) {
            // A new window; what the old one suppressed waits for `summaries`.
            *w = Window {
                start_us: now_us,
                written: 0,
                suppressed: 0,
                carried: w.carried.saturating_add(w.suppressed),
            };
        }
        if w.written < LINES_PER_WINDOW {
            w.written += 1;
            true
        } else {
            w.suppressed += 1;
            false
        }
    }

    /// Calls `summary(kind, suppressed)` for every window that is over and suppressed
    /// lines, and starts afresh for those kinds. Cheap enough to call after every batch.
    pub fn summaries(&mut self, now_us: u64, mut summary: impl FnMut(LineKind, u64)) {
        for kind in LineKind::ALL {
            let w = &mut self.windows[kind.index()];
            let over = now_us >= w.start_us.saturating_add(WINDOW_US);
            let n = w.carried + if over { w.suppressed } else { 0 };
            if n > 0 {
                summary(kind, n);
                w.carried = 0;
                if over {
                    *w = Window::default();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(limiter: &mut LogLimiter, now_us: u64) -> Vec<(LineKind, u64)> {
        let mut out = Vec::new();
        limiter.summaries(now_us, |k, n| out.push((k, n)));
        out
    }

    #[test]
    fn a_burst_writes_the_first_lines_then_one_summary() {
        let mut limiter = LogLimiter::default();
        let kind = LineKind::FloodClosed;
        let written = (0..4333u64)
            .filter(|i| limiter.allow(kind, i * 4_000))
            .count();
        // 4 333 events over 17.3 s: two windows of 10 lines.
        assert_eq!(written, 2 * LINES_PER_WINDOW as usize);
        let summaries = drain(&mut limiter, 30_000_000);
        assert_eq!(summaries.len(), 1);
        let (k, suppressed) = summaries[0];
        assert_eq!(k, kind);
        assert!(suppressed > 0 && suppressed < 4333);
        // Nothing more to say, and a new burst is written again.
        assert!(drain(&mut limiter, 40_000_000).is_empty());
        assert!(limiter.allow(kind, 40_000_001));
    }

    #[test]
    fn kinds_are_limited_separately_and_quiet_ones_stay_quiet() {
        let mut limiter = LogLimiter::default();
        for i in 0..100 {
            limiter.allow(LineKind::ConnectionRefused, i);
        }
        assert!(limiter.allow(LineKind::AcceptFailed, 100));
        // Before the window is over: no summary yet.
        assert!(drain(&mut limiter, 9_999_999).is_empty());
        assert_eq!(
            drain(&mut limiter, 10_000_000),
            vec![(LineKind::ConnectionRefused, 90)]
        );
    }

    #[test]
    fn every_event_is_either_written_or_summarised() {
        let mut limiter = LogLimiter::default();
        let mut written = 0u64;
        let mut summarised = 0u64;
        let mut now = 0u64;
        for i in 0..10_000u64 {
            now += (i * 7919) % 9_000; // uneven gaps of up to 9 ms
            // Summaries taken now and then, as the core task does after its batches.
            if i % 97 == 0 {
                limiter.summaries(now, |_, n| summarised += n);
            }
            written += u64::from(limiter.allow(LineKind::ResumedPastCap, now));
        }
        limiter.summaries(u64::MAX, |_, n| summarised += n);
        assert_eq!(written + summarised, 10_000);
    }
}
