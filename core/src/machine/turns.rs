//! The turn book of one lobby: whose turn runs since when, what the AI (or fallback)
//! has decided for AI seats, and when the next move may be applied.
//!
//! The book decides timing only: an AI move is applied no earlier than `AI_MOVE_DELAY`
//! after its turn began and `TRICK_PAUSE` after the last completed trick, plus the
//! turn's spread ([`AI_MOVE_SPREAD_US_MAX`]); a human's turn runs out after
//! `turn_seconds`, and the turn of a human the server counts as away (a quick-play
//! player disconnected for `QUICK_PLAY_AWAY`) as soon as an AI seat's would be
//! applied. The server asks for decisions and applies moves.

use std::collections::BTreeMap;

use crate::vocabulary::game::types::PLAYERS_MAX;
use crate::vocabulary::game::{Action, Seat};
use crate::vocabulary::time::Time;
use crate::vocabulary::time::WAKE_GRID_US;

/// A delayed AI move waits a further 0 to this many microseconds, drawn for each turn
/// from the game's seed (two steps of the wake grid).
///
/// Without it, games stay in step: the shells wake for deadlines on the grid
/// ([`crate::vocabulary::time::wake_at`]), so the AI moves of games that fall due in the same step
/// are applied together, the next turns of those games start together, and with the
/// same delays they fall due together again; every step in which the groups meet merges
/// them further. After a minute of 1000 paced games a tenth of the steps carried 9 or
/// more AI requests at once, and the AI service degraded the excess to the heuristic
/// (`AI_DEGRADE_QUEUE`) although it had time for them all. A spread of two steps sends
/// each move to one of two or three steps at random, which keeps groups from forming;
/// the moves still share wake-ups, and 10 ms on a pause of 0.8 s is not seen at the
/// table. A move with no delay (`AI_MOVE_DELAY` 0, no pause) is not spread.
pub const AI_MOVE_SPREAD_US_MAX: u64 = 2 * WAKE_GRID_US;

/// How a decided AI move came about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decider {
    /// The AI service's answer.
    Ai,
    /// The fallback player (with the reason, for logs and metrics).
    Fallback(crate::vocabulary::io::FallbackReason),
}

/// Where one awaited seat's turn stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnState {
    /// A human's turn (possibly with a `turn_seconds` deadline).
    Human,
    /// An AI seat that has not been asked yet.
    AiToAsk,
    /// An AI seat waiting for the service's answer to this request.
    AiAsked { request_id: u64 },
    /// The move is known and waits for its time.
    Decided { action: Action, by: Decider },
}

/// One awaited seat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Turn {
    pub started: Time,
    pub state: TurnState,
    /// This turn's share of [`AI_MOVE_SPREAD_US_MAX`] (0 for a human's).
    pub spread_us: u64,
}

/// The turns of one lobby.
#[derive(Clone, Debug, Default)]
pub struct TurnBook {
    pub turns: BTreeMap<Seat, Turn>,
    /// No AI move before this instant (set by a completed trick).
    pub pause_until: Time,
}

/// Timing settings of the book.
#[derive(Clone, Copy, Debug)]
pub struct TurnTiming {
    pub ai_move_delay_us: u64,
    /// 0 = humans are waited for without limit.
    pub turn_us: u64,
    /// Per seat, from when its human's turns are played for them (away), if ever.
    pub away_from: [Option<Time>; PLAYERS_MAX as usize],
}

impl TurnTiming {
    /// No seat away.
    pub fn new(ai_move_delay_us: u64, turn_us: u64) -> TurnTiming {
        TurnTiming {
            ai_move_delay_us,
            turn_us,
            away_from: [None; PLAYERS_MAX as usize],
        }
    }
}

impl TurnBook {
    /// Brings the book in line with the seats awaited now: new turns start at `now`,
    /// turns of seats no longer awaited are dropped, and a seat whose occupant changed
    /// kind (a human left and the AI took over) restarts as that kind. A new AI turn
    /// takes `spread_us(seat)` (at most [`AI_MOVE_SPREAD_US_MAX`]).
    pub fn sync(
        &mut self,
        now: Time,
        awaited: &[(Seat, bool)],
        mut spread_us: impl FnMut(Seat) -> u64,
    ) {
        self.turns
            .retain(|seat, _| awaited.iter().any(|(s, _)| s == seat));
        for &(seat, is_ai) in awaited {
            let fresh = |spread: &mut dyn FnMut(Seat) -> u64| Turn {
                started: now,
                state: if is_ai {
                    TurnState::AiToAsk
                } else {
                    TurnState::Human
                },
                spread_us: if is_ai {
                    spread(seat).min(AI_MOVE_SPREAD_US_MAX)
                } else {
                    0
                },
            };
            match self.turns.get(&seat) {
                Some(t) if (t.state != TurnState::Human) == is_ai => {}
                _ => {
                    let turn = fresh(&mut spread_us);
                    self.turns.insert(seat, turn);
                }
            }
        }
    }

    /// Ends `seat`'s turn (its move was applied).
    pub fn finish(&mut self, seat: Seat) {
        self.turns.remove(&seat);
    }

    pub fn clear(&mut self) {
        self.turns.clear();
        self.pause_until = Time::ZERO;
    }

    /// When a decided AI move may be applied: after the delay and the pause, plus the
    /// turn's spread when there is either.
    pub fn ready_at(&self, turn: &Turn, timing: &TurnTiming) -> Time {
        let base = turn
            .started
            .plus_us(timing.ai_move_delay_us)
            .max(self.pause_until);
        if base > turn.started {
            base.plus_us(turn.spread_us)
        } else {
            base
        }
    }

    /// When a human's turn runs out, if `turn_seconds` is on (what `turn_deadline_ms`
    /// shows).
    pub fn human_deadline(turn: &Turn, timing: &TurnTiming) -> Option<Time> {
        (timing.turn_us > 0).then(|| turn.started.plus_us(timing.turn_us))
    }

    /// When a human's turn is played for them: at the deadline, or once the seat is
    /// away and an AI seat's move would be due (`AI_MOVE_DELAY` after the turn began,
    /// pauses and spread left out), whichever comes first.
    fn human_due(seat: Seat, turn: &Turn, timing: &TurnTiming) -> Option<Time> {
        let away = timing
            .away_from
            .get(usize::from(seat))
            .copied()
            .flatten()
            .map(|from| from.max(turn.started.plus_us(timing.ai_move_delay_us)));
        match (Self::human_deadline(turn, timing), away) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next instant something is due in this lobby.
    pub fn next_due(&self, timing: &TurnTiming) -> Option<Time> {
        self.turns
            .iter()
            .filter_map(|(&seat, t)| match t.state {
                TurnState::Decided { .. } => Some(self.ready_at(t, timing)),
                TurnState::Human => Self::human_due(seat, t, timing),
                TurnState::AiToAsk => Some(t.started),
                TurnState::AiAsked { .. } => None,
            })
            .min()
    }

    /// The lowest seat whose move is due at `now`: a decided AI move whose time has come,
    /// or a human whose turn ran out.
    pub fn due(&self, now: Time, timing: &TurnTiming) -> Option<(Seat, Turn)> {
        self.turns
            .iter()
            .find(|(seat, t)| match t.state {
                TurnState::Decided { .. } => self.ready_at(t, timing) <= now,
                TurnState::Human => Self::human_due(**seat, t, timing).is_some_and(|d| d <= now),
                TurnState::AiToAsk | TurnState::AiAsked { .. } => false,
            })
            .map(|(s, t)| (*s, *t))
    }

    /// Seats that still have to be asked.
    pub fn to_ask(&self) -> Vec<Seat> {
        self.turns
            .iter()
            .filter(|(_, t)| t.state == TurnState::AiToAsk)
            .map(|(s, _)| *s)
            .collect()
    }

    /// Records a decision for `seat` if it still waits for `request_id` (or, with
    /// `None`, has not been asked). Returns false for a stale decision.
    pub fn decide(
        &mut self,
        seat: Seat,
        request_id: Option<u64>,
        action: Action,
        by: Decider,
    ) -> bool {
        let Some(turn) = self.turns.get_mut(&seat) else {
            return false;
        };
        let matches = match (turn.state, request_id) {
            (TurnState::AiAsked { request_id: r }, Some(id)) => r == id,
            (TurnState::AiToAsk, None) => true,
            _ => false,
        };
        if matches {
            turn.state = TurnState::Decided { action, by };
        }
        matches
    }

    pub fn asked(&mut self, seat: Seat, request_id: u64) {
        if let Some(turn) = self.turns.get_mut(&seat) {
            turn.state = TurnState::AiAsked { request_id };
        }
    }

    /// The seat waiting for `request_id`, if any.
    pub fn seat_asked(&self, request_id: u64) -> Option<Seat> {
        self.turns
            .iter()
            .find(|(_, t)| t.state == TurnState::AiAsked { request_id })
            .map(|(s, _)| *s)
    }

    /// Milliseconds left in a human's turn at `now`, for `turn_deadline_ms`.
    pub fn human_ms_left(&self, seat: Seat, now: Time, timing: &TurnTiming) -> Option<u64> {
        let turn = self.turns.get(&seat)?;
        if turn.state != TurnState::Human {
            return None;
        }
        Self::human_deadline(turn, timing).map(|d| d.since_us(now) / 1000)
    }
}
