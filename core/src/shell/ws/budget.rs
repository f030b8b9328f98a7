//! The per-frame budget and the frame reader built on it.
//!
//! The rule: the core's per-connection bucket (`Server::admit_frame`) charges complete
//! messages; [`FrameBudget`] charges every frame the core never sees as a message:
//! pings, pongs, and each frame of a message after its first (empty ones included). It
//! is a [`TokenBucket`] with the same `MESSAGE_RATE` and `MESSAGE_BURST`, kept apart
//! from the core's so that neither kind of traffic can spend the other's tokens. A frame
//! without a token is dropped (a ping is not answered, a fragment abandons its message)
//! and counts one violation; at `MAX_RATE_VIOLATIONS` the connection is flooding and is
//! closed with 1008.

use super::decode::{Control, Decoder, Event, Limits};
use crate::machine::server::rate_from;
use crate::vocabulary::config::Config;
use crate::vocabulary::io::BadFrame;
use crate::vocabulary::limiter::TokenBucket;
use crate::vocabulary::time::Time;

/// What [`FrameBudget::charge`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Charge {
    /// The frame had a token.
    Pass,
    /// No token: drop the frame; one more violation.
    Drop,
    /// No token and `MAX_RATE_VIOLATIONS` reached: close with 1008.
    Flood,
}

/// One connection's frame budget (see the module documentation).
#[derive(Clone, Debug)]
pub struct FrameBudget {
    bucket: TokenBucket,
    drops: u32,
    drops_max: u32,
}

impl FrameBudget {
    /// A full budget at `now` with `MESSAGE_RATE`, `MESSAGE_BURST` and
    /// `MAX_RATE_VIOLATIONS` from `config`.
    pub fn new(config: &Config, now: Time) -> FrameBudget {
        FrameBudget {
            bucket: TokenBucket::new(
                rate_from(config.message_rate_per_sec, 1_000_000),
                u64::from(config.message_burst.max(1)),
                now,
            ),
            drops: 0,
            drops_max: config.rate_violations_max.max(1),
        }
    }

    /// Charges one frame at `now`.
    pub fn charge(&mut self, now: Time) -> Charge {
        if self.bucket.try_take(now) {
            return Charge::Pass;
        }
        self.drops = self.drops.saturating_add(1);
        if self.drops >= self.drops_max {
            Charge::Flood
        } else {
            Charge::Drop
        }
    }

    /// Frames dropped so far.
    pub fn drops(&self) -> u32 {
        self.drops
    }
}

/// What a [`FrameReader`] made of the bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Read {
    /// A complete text message, for the core (which charges it with its own bucket).
    Text(String),
    /// A ping within the budget: answer with a pong carrying this payload. A pong not
    /// yet sent may be replaced by the newest one (RFC 6455 section 5.5.3).
    Ping(Control),
    /// A pong within the budget.
    Pong,
    /// A fragment within the budget: nothing to do.
    Fragment,
    /// A frame dropped by the budget (a ping not answered, or a fragment whose message
    /// is now abandoned).
    Dropped,
    /// The peer's valid close frame: answer with a close frame with this code and end.
    Close(Option<u16>),
    /// A violation or a flood: report it to the core, which closes with its code.
    Fail(BadFrame),
}

impl Read {
    /// Whether this frame counts as a sign of life for `KEEPALIVE_TIMEOUT`: a complete
    /// message, or a ping or pong within the budget. Fragments do not, so a message that
    /// never completes cannot keep a connection open by itself.
    pub fn proves_life(&self) -> bool {
        matches!(self, Read::Text(_) | Read::Ping(_) | Read::Pong)
    }
}

/// The decoder and the frame budget of one connection: bytes in, [`Read`]s out.
#[derive(Clone, Debug)]
pub struct FrameReader {
    decoder: Decoder,
    budget: FrameBudget,
}

impl FrameReader {
    pub fn new(config: &Config, now: Time) -> FrameReader {
        FrameReader {
            decoder: Decoder::new(Limits::from_config(config)),
            budget: FrameBudget::new(config, now),
        }
    }

    /// Like [`Decoder::decode`]: reads from `input` until one [`Read`] or the end of
    /// `input`, and returns the bytes used. Without a `Read`, all of `input` was used.
    pub fn read(&mut self, now: Time, input: &[u8]) -> (usize, Option<Read>) {
        let (used, event) = self.decoder.decode(input);
        let read = event.map(|event| match event {
            Event::Text(text) => Read::Text(text),
            Event::Continuation => self.charge(now, Read::Fragment),
            Event::Ping(payload) => self.charge(now, Read::Ping(payload)),
            Event::Pong(_) => self.charge(now, Read::Pong),
            Event::Close { code, .. } => Read::Close(code),
            Event::Fail(bad) => Read::Fail(bad),
        });
        (used, read)
    }

    fn charge(&mut self, now: Time, passed: Read) -> Read {
        match self.budget.charge(now) {
            Charge::Pass => passed,
            Charge::Drop => {
                if passed == Read::Fragment {
                    self.decoder.abandon_message();
                }
                Read::Dropped
            }
            Charge::Flood => {
                self.decoder.stop();
                Read::Fail(BadFrame::Flood)
            }
        }
    }

    /// Whether reading is over (a violation, a flood or a close frame).
    pub fn is_done(&self) -> bool {
        self.decoder.is_done()
    }

    /// Heap bytes held now (the message being assembled).
    pub fn heap_bytes(&self) -> usize {
        self.decoder.heap_bytes()
    }

    pub fn budget(&self) -> &FrameBudget {
        &self.budget
    }
}
