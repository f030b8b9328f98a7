//! Circuit breaker for the AI bridge: stop asking a broken or hanging AI service.
//!
//! Layer 4 of the load control (`AI_BREAKER_FAILURES`, `AI_BREAKER_COOLDOWN`). After
//! `failures_max` real failures in a row (timeouts, lost connection, malformed or
//! illegal answers) the breaker opens for a jittered cooldown, during which AI seats
//! play the fallback move without asking. Then it lets exactly one probe request
//! through; the probe's outcome closes or re-opens it.
//!
//! Load shedding (`overloaded`/`expired` answers, the in-flight cap) is never a
//! failure: the service is healthy and answered at once, pausing it would only make
//! play worse. It is not a success either, so in `Closed` it leaves the failure count
//! as it is: a shed answer says nothing about the requests the service did accept, and
//! a service that sheds some requests at once but hangs on every one it accepts is
//! broken and must still trip the breaker. In `HalfOpen` a shed answer closes the
//! breaker, because the question the probe asks is "is the service alive", and it is.
//!
//! The breaker does not know request ids: in `HalfOpen` any reported outcome resolves
//! the probe, even a late one from a request sent before the breaker opened. That is
//! still news about the service's health, and a failure reported while `Open` is
//! ignored, so late answers never extend the cooldown.

use rand::RngExt;
use rand_chacha::ChaCha12Rng;

use crate::vocabulary::time::Time;

/// Settings of the breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BreakerConfig {
    /// `AI_BREAKER_FAILURES`: consecutive real failures that open the breaker (0 acts
    /// as 1).
    pub failures_max: u32,
    /// `AI_BREAKER_COOLDOWN`: the nominal time the breaker stays open; each opening
    /// draws its cooldown uniformly from 0.8 to 1.2 times this, so that breakers of
    /// several servers (or a restarted service's many clients) do not retry in step.
    pub cooldown_us: u64,
}

impl Default for BreakerConfig {
    /// The defaults of PROTOCOL.md section 5: 5 failures, 30 s.
    fn default() -> Self {
        BreakerConfig {
            failures_max: 5,
            cooldown_us: 30_000_000,
        }
    }
}

/// The breaker's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerState {
    /// Requests go through; `consecutive_failures` real failures since the last success.
    Closed { consecutive_failures: u32 },
    /// No requests until `until`.
    Open { until: Time },
    /// The cooldown is over; one probe request may go (or has gone) through.
    HalfOpen { probe_in_flight: bool },
}

impl BreakerState {
    pub fn name(self) -> &'static str {
        match self {
            BreakerState::Closed { .. } => "closed",
            BreakerState::Open { .. } => "open",
            BreakerState::HalfOpen { .. } => "half_open",
        }
    }
}

/// The answer of [`CircuitBreaker::admit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Send the request.
    Allowed,
    /// Send the request: it is the half-open probe, whose outcome must be reported.
    Probe,
    /// Do not ask the AI; play the fallback move.
    Refused,
}

/// The circuit breaker. See the module documentation for the rules.
#[derive(Clone, Debug)]
pub struct CircuitBreaker {
    config: BreakerConfig,
    state: BreakerState,
    rng: ChaCha12Rng,
    opened_total: u64,
    /// The latest `now` seen; earlier inputs are clamped to it.
    last: Time,
}

impl CircuitBreaker {
    /// A closed breaker; `rng` draws the cooldown jitter.
    pub fn new(config: BreakerConfig, rng: ChaCha12Rng) -> CircuitBreaker {
        CircuitBreaker {
            config,
            state: BreakerState::Closed {
                consecutive_failures: 0,
            },
            rng,
            opened_total: 0,
            last: Time::ZERO,
        }
    }

    fn clamp(&mut self, now: Time) -> Time {
        self.last = self.last.max(now);
        self.last
    }

    /// Moves `Open` to `HalfOpen` once its cooldown has passed. Returns whether it did;
    /// [`admit`](Self::admit) does this too, so calling it is only needed to notice the
    /// change at [`poll_timeout`](Self::poll_timeout).
    pub fn tick(&mut self, now: Time) -> bool {
        let now = self.clamp(now);
        match self.state {
            BreakerState::Open { until } if now >= until => {
                self.state = BreakerState::HalfOpen {
                    probe_in_flight: false,
                };
                true
            }
            _ => false,
        }
    }

    /// May a request be sent to the AI service now? A [`Admit::Probe`] must be resolved
    /// by exactly one of [`on_success`](Self::on_success),
    /// [`on_failure`](Self::on_failure) or [`on_shed`](Self::on_shed); until then every
    /// other request is refused.
    pub fn admit(&mut self, now: Time) -> Admit {
        self.tick(now);
        match self.state {
            BreakerState::Closed { .. } => Admit::Allowed,
            BreakerState::Open { .. } => Admit::Refused,
            BreakerState::HalfOpen {
                probe_in_flight: true,
            } => Admit::Refused,
            BreakerState::HalfOpen {
                probe_in_flight: false,
            } => {
                self.state = BreakerState::HalfOpen {
                    probe_in_flight: true,
                };
                Admit::Probe
            }
        }
    }

    /// The service answered with a decision: closes a half-open breaker and resets the
    /// failure count. Ignored while `Open` (a late answer does not cut the cooldown).
    pub fn on_success(&mut self, now: Time) {
        self.tick(now);
        match self.state {
            BreakerState::Closed { .. } | BreakerState::HalfOpen { .. } => self.close(),
            BreakerState::Open { .. } => {}
        }
    }

    /// A real failure: counts toward opening; re-opens a half-open breaker. Ignored
    /// while `Open`.
    pub fn on_failure(&mut self, now: Time) {
        let now = self.clamp(now);
        self.tick(now);
        match self.state {
            BreakerState::Closed {
                consecutive_failures,
            } => {
                let failures = consecutive_failures.saturating_add(1);
                if failures >= self.config.failures_max.max(1) {
                    self.open(now);
                } else {
                    self.state = BreakerState::Closed {
                        consecutive_failures: failures,
                    };
                }
            }
            BreakerState::HalfOpen { .. } => self.open(now),
            BreakerState::Open { .. } => {}
        }
    }

    /// The service shed the request (`overloaded` or `expired`): never a failure; in
    /// `Closed` the count stays as it is; in `HalfOpen` the service proved alive and
    /// the breaker closes.
    pub fn on_shed(&mut self, now: Time) {
        self.tick(now);
        match self.state {
            BreakerState::HalfOpen { .. } => self.close(),
            BreakerState::Closed { .. } | BreakerState::Open { .. } => {}
        }
    }

    fn close(&mut self) {
        self.state = BreakerState::Closed {
            consecutive_failures: 0,
        };
    }

    fn open(&mut self, now: Time) {
        let cooldown_us = self.draw_cooldown_us();
        self.state = BreakerState::Open {
            until: now.plus_us(cooldown_us),
        };
        self.opened_total = self.opened_total.saturating_add(1);
    }

    /// Uniform over the whole microseconds in [0.8, 1.2] x `cooldown_us` (never empty:
    /// it contains `cooldown_us` itself).
    fn draw_cooldown_us(&mut self) -> u64 {
        let nominal = u128::from(self.config.cooldown_us);
        let low = u64::try_from((nominal * 4).div_ceil(5)).unwrap_or(u64::MAX);
        let high = u64::try_from(nominal * 6 / 5).unwrap_or(u64::MAX);
        self.rng.random_range(low..=high)
    }

    /// When the open breaker turns half-open; `None` unless `Open`.
    pub fn poll_timeout(&self) -> Option<Time> {
        match self.state {
            BreakerState::Open { until } => Some(until),
            _ => None,
        }
    }

    pub fn state(&self) -> BreakerState {
        self.state
    }

    /// How often the breaker has opened (including re-openings after a failed probe).
    pub fn opened_total(&self) -> u64 {
        self.opened_total
    }

    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }
}
