//! The keepalive rule, time-free: when a connection's writer pings its peer, when it
//! closes a silent one, and when it looks again. shell-smol's writers run it, and the
//! simulator's keepalive checks; times are on the server's clock.
//!
//! - A peer is pinged once it has been silent for `KEEPALIVE_INTERVAL` (nothing heard:
//!   no whole message, ping or pong), and again each `KEEPALIVE_INTERVAL` it stays
//!   silent after a ping. A player who sends moves, or answers the ping, is not pinged:
//!   when every connection was pinged every interval, and at 1000 paced
//!   games of 4 players those 200 pings a second (each a wake-up, a `sendto`, then the
//!   pong's wake-up and `recvfrom`) took about a third of the server's CPU.
//! - A peer silent for `KEEPALIVE_TIMEOUT` is closed.
//! - A writer looks at the first point of a grid (on the server's clock, step
//!   [`Keepalive::grid_us`]: a quarter of the interval, at most
//!   [`KEEPALIVE_GRID_US_MAX`], 250 ms) at or after the earlier of the two, so the looks of all
//!   connections due in one step share a wake-up. A ping or a close comes up to one
//!   step late, which neither needs to be exact for. The look does not move when the
//!   peer is heard (moving a timer costs a reactor notification): a look that finds the
//!   peer heard meanwhile finds nothing due and sets the next.

use crate::vocabulary::config::ShellConfig;
use crate::vocabulary::time::Time;

/// The most a keepalive look is put off to share a wake-up with other connections':
/// at most 4 wake-ups a second for every connection's looks, and the pings of many
/// idle connections spread over 4 steps a second rather than sent in one burst.
pub const KEEPALIVE_GRID_US_MAX: u64 = 250_000;

/// The two settings of the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keepalive {
    /// `KEEPALIVE_INTERVAL`: silence before a ping, and between pings.
    pub interval_us: u64,
    /// `KEEPALIVE_TIMEOUT`: silence before the close.
    pub timeout_us: u64,
}

/// What a look finds due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Due {
    /// Nothing yet: look again at [`Keepalive::next_look`].
    Nothing,
    /// Ping the peer (and remember when).
    Ping,
    /// The peer was silent for `KEEPALIVE_TIMEOUT`: close the connection.
    Close,
}

impl Keepalive {
    pub fn new(config: &ShellConfig) -> Keepalive {
        Keepalive {
            interval_us: config.keepalive_interval_us,
            timeout_us: config.keepalive_timeout_us,
        }
    }

    /// The grid's step: a quarter of the interval, at most [`KEEPALIVE_GRID_US_MAX`],
    /// at least 1 us.
    pub fn grid_us(&self) -> u64 {
        (self.interval_us / 4).clamp(1, KEEPALIVE_GRID_US_MAX)
    }

    /// What is due at `now` for a peer last heard at `heard` and last pinged at
    /// `pinged` (`None`: not since it was last heard, or never).
    pub fn due(&self, now: Time, heard: Time, pinged: Option<Time>) -> Due {
        if now.since_us(heard) >= self.timeout_us {
            Due::Close
        } else if now.since_us(last_sign(heard, pinged)) >= self.interval_us {
            Due::Ping
        } else {
            Due::Nothing
        }
    }

    /// When to look next: the first grid point at or after the earlier of the next
    /// ping and the close.
    pub fn next_look(&self, heard: Time, pinged: Option<Time>) -> Time {
        let ping = last_sign(heard, pinged).plus_us(self.interval_us);
        let close = heard.plus_us(self.timeout_us);
        let step = self.grid_us();
        Time(ping.min(close).0.div_ceil(step).saturating_mul(step))
    }
}

/// The later of the last time the peer was heard and the last ping: the next ping
/// counts from it.
fn last_sign(heard: Time, pinged: Option<Time>) -> Time {
    pinged.map_or(heard, |p| p.max(heard))
}
