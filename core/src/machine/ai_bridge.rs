//! The AI bridge: which AI service connections exist, which decision requests wait on
//! them, and the circuit breaker that stops asking a broken service.
//!
//! It decides whether to ask at all (a connection with room, a closed breaker) and
//! classifies every answer. A timeout, a lost connection, a malformed or illegal answer,
//! an `internal` error or an unknown request id is a real failure and counts for the
//! breaker; `overloaded` and `expired` are load shedding by a healthy service and do
//! not. In every case other than a valid decision the fallback player moves.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;

use rand_chacha::ChaCha12Rng;

use crate::machine::overload::breaker::{Admit, BreakerConfig, BreakerState, CircuitBreaker};
use crate::machine::session::LobbyId;
use crate::vocabulary::game::{Action, Seat};
use crate::vocabulary::io::{ConnId, DecidedBy, FallbackReason};
use crate::vocabulary::time::Time;
use crate::vocabulary::wire::{AiErrorCode, AiReply};

/// Most AI service connections at once (a deployment runs one or a few services).
pub const AI_CONNECTIONS_MAX: usize = 16;
/// Request ids remembered after their deadline passed, so a late answer is not counted
/// as a second failure.
const EXPIRED_REMEMBERED_MAX: usize = 1024;

/// A request waiting for its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    pub conn: ConnId,
    pub lobby: LobbyId,
    pub game_no: u64,
    pub seat: Seat,
    pub deadline: Time,
    /// When it was asked, for the round trip ([`crate::vocabulary::io::Note::AiAnswered`]).
    pub sent: Time,
    pub probe: bool,
}

/// Whether to ask the service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ask {
    /// Send request `request_id` on `conn`, due by `deadline`.
    Send {
        conn: ConnId,
        request_id: u64,
        deadline: Time,
    },
    /// Do not ask; the fallback moves.
    Fallback(FallbackReason),
}

/// What an answer means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// A decision to validate (then report it with [`AiBridge::settle`]).
    Decision {
        request_id: u64,
        pending: Pending,
        action: Action,
        /// The agent the reply names.
        by: DecidedBy,
    },
    /// The request failed or was shed: the fallback moves for it.
    Fallback {
        request_id: u64,
        pending: Pending,
        reason: FallbackReason,
    },
    /// A broken answer that names no request we wait for (counted as a failure), or a
    /// late answer to a request already given up on (ignored).
    Nothing,
}

/// The AI connections, pending requests and breaker.
#[derive(Debug)]
pub struct AiBridge {
    conns: BTreeMap<ConnId, u32>,
    pending: BTreeMap<u64, Pending>,
    expired: VecDeque<u64>,
    expired_set: BTreeSet<u64>,
    next_request: u64,
    cursor: Option<ConnId>,
    breaker: CircuitBreaker,
    inflight_max: u32,
    timeout_us: u64,
}

impl AiBridge {
    pub fn new(
        breaker: BreakerConfig,
        rng: ChaCha12Rng,
        inflight_max: u32,
        timeout_us: u64,
    ) -> Self {
        AiBridge {
            conns: BTreeMap::new(),
            pending: BTreeMap::new(),
            expired: VecDeque::new(),
            expired_set: BTreeSet::new(),
            next_request: 1,
            cursor: None,
            breaker: CircuitBreaker::new(breaker, rng),
            inflight_max: inflight_max.max(1),
            timeout_us,
        }
    }

    /// Registers a service connection; false when [`AI_CONNECTIONS_MAX`] are open.
    pub fn connect(&mut self, conn: ConnId) -> bool {
        if self.conns.len() >= AI_CONNECTIONS_MAX && !self.conns.contains_key(&conn) {
            return false;
        }
        self.conns.entry(conn).or_insert(0);
        true
    }

    pub fn is_ai(&self, conn: ConnId) -> bool {
        self.conns.contains_key(&conn)
    }

    /// Forgets a connection; its pending requests fail (each is a real failure).
    pub fn disconnect(&mut self, now: Time, conn: ConnId) -> Vec<(u64, Pending)> {
        if self.conns.remove(&conn).is_none() {
            return Vec::new();
        }
        let lost: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.conn == conn)
            .map(|(id, _)| *id)
            .collect();
        lost.into_iter()
            .filter_map(|id| {
                let p = self.pending.remove(&id)?;
                self.breaker.on_failure(now);
                self.remember_expired(id);
                Some((id, p))
            })
            .collect()
    }

    pub fn available(&self) -> bool {
        !self.conns.is_empty()
    }

    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    pub fn breaker_state(&self) -> BreakerState {
        self.breaker.state()
    }

    /// Whether a probe request is waiting (at most one ever is).
    pub fn probes_pending(&self) -> usize {
        self.pending.values().filter(|p| p.probe).count()
    }

    /// Decides whether to ask for `seat`'s move in `lobby`'s game `game_no`.
    pub fn ask(&mut self, now: Time, lobby: LobbyId, game_no: u64, seat: Seat) -> Ask {
        if self.conns.is_empty() {
            return Ask::Fallback(FallbackReason::NoService);
        }
        // Round robin from the connection after the last one used, skipping full ones.
        let after = self.cursor.unwrap_or(ConnId(0));
        let inflight_max = self.inflight_max;
        let pick = self
            .conns
            .range((Bound::Excluded(after), Bound::Unbounded))
            .chain(self.conns.range(..=after))
            .find(|(_, n)| **n < inflight_max)
            .map(|(c, _)| *c);
        let Some(conn) = pick else {
            return Ask::Fallback(FallbackReason::InflightCap);
        };
        let probe = match self.breaker.admit(now) {
            Admit::Allowed => false,
            Admit::Probe => true,
            Admit::Refused => return Ask::Fallback(FallbackReason::BreakerOpen),
        };
        self.cursor = Some(conn);
        if let Some(n) = self.conns.get_mut(&conn) {
            *n += 1;
        }
        let request_id = self.next_request;
        self.next_request += 1;
        let deadline = now.plus_us(self.timeout_us);
        self.pending.insert(
            request_id,
            Pending {
                conn,
                lobby,
                game_no,
                seat,
                deadline,
                sent: now,
                probe,
            },
        );
        Ask::Send {
            conn,
            request_id,
            deadline,
        }
    }

    fn take(&mut self, request_id: u64) -> Option<Pending> {
        let p = self.pending.remove(&request_id)?;
        if let Some(n) = self.conns.get_mut(&p.conn) {
            *n = n.saturating_sub(1);
        }
        Some(p)
    }

    fn remember_expired(&mut self, request_id: u64) {
        if self.expired.len() >= EXPIRED_REMEMBERED_MAX
            && let Some(old) = self.expired.pop_front()
        {
            self.expired_set.remove(&old);
        }
        self.expired.push_back(request_id);
        self.expired_set.insert(request_id);
    }

    /// A request's deadline passed: a real failure if it was still pending.
    pub fn deadline(&mut self, now: Time, request_id: u64) -> Option<Pending> {
        let pending = self.pending.get(&request_id)?;
        if pending.deadline > now {
            return None;
        }
        let p = self.take(request_id)?;
        self.breaker.on_failure(now);
        self.remember_expired(request_id);
        Some(p)
    }

    /// Classifies a message from the service on `conn`. `peeked` is the request id read
    /// from a message that did not decode.
    pub fn answer(
        &mut self,
        now: Time,
        conn: ConnId,
        reply: Result<AiReply, ()>,
        peeked: Option<u64>,
    ) -> Answer {
        let request_id = match &reply {
            Ok(r) => Some(r.request_id()),
            Err(()) => peeked,
        };
        let known = request_id.filter(|id| self.pending.get(id).is_some_and(|p| p.conn == conn));
        let Some(request_id) = known else {
            if request_id.is_some_and(|id| self.expired_set.contains(&id)) {
                return Answer::Nothing;
            }
            // Garbage or an id we never sent on this connection: the service is broken.
            self.breaker.on_failure(now);
            return Answer::Nothing;
        };
        let Some(pending) = self.take(request_id) else {
            return Answer::Nothing;
        };
        let reason = match reply {
            Ok(AiReply::Decision { action, agent, .. }) => {
                return Answer::Decision {
                    request_id,
                    pending,
                    action,
                    by: DecidedBy::from_agent_name(&agent),
                };
            }
            Ok(AiReply::Error { code, .. }) => match code {
                AiErrorCode::Overloaded => FallbackReason::Overloaded,
                AiErrorCode::Expired => FallbackReason::Expired,
                AiErrorCode::Internal => FallbackReason::Internal,
            },
            Err(()) => FallbackReason::Malformed,
        };
        self.settle(now, reason_outcome(reason));
        Answer::Fallback {
            request_id,
            pending,
            reason,
        }
    }

    /// Reports how a request ended, for the breaker.
    pub fn settle(&mut self, now: Time, outcome: Outcome) {
        match outcome {
            Outcome::Success => self.breaker.on_success(now),
            Outcome::Failure => self.breaker.on_failure(now),
            Outcome::Shed => self.breaker.on_shed(now),
        }
    }

    /// The breaker's next deadline (end of cooldown).
    pub fn poll_timeout(&self) -> Option<Time> {
        self.breaker.poll_timeout()
    }

    /// Moves the breaker from open to half-open when its cooldown ended.
    pub fn tick(&mut self, now: Time) {
        self.breaker.tick(now);
    }
}

/// How a request ended, for the breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Failure,
    Shed,
}

/// The breaker outcome of a fallback reason.
pub fn reason_outcome(reason: FallbackReason) -> Outcome {
    if reason.is_failure() {
        Outcome::Failure
    } else {
        Outcome::Shed
    }
}
