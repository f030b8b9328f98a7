//! Running games: human moves, AI turns through the bridge, the fallback player, and
//! the timing of AI moves (`AI_MOVE_DELAY`, `TRICK_PAUSE`) and of `turn_seconds`.

use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;

use crate::machine::ai_bridge::{Answer, Ask, Outcome, Pending};
use crate::machine::lobby::{LobbyError, Occupant};
use crate::machine::turns::{Decider, TurnState, TurnTiming};
use crate::vocabulary::game::level::{self, AiLevel};
use crate::vocabulary::game::{Action, Event, Observation, Phase, Seat};
use crate::vocabulary::ids::ConnId;
use crate::vocabulary::ids::{LobbyId, SessionId};
use crate::vocabulary::io::{
    ConnKind, DecidedBy, Delivery, FallbackReason, MoveSource, Note, Output,
};
use crate::vocabulary::time::Time;
use crate::vocabulary::wire::{self, AiReply, AiRequest, LobbyStatus};

use super::{Server, TimerKey};

/// A bound on moves applied in one drive (a whole game has at most 60 x 6 + 60 + 20).
const DRIVE_MOVES_MAX: usize = 1024;

impl Server {
    /// The lobby's turn timing: `AI_MOVE_DELAY`, its `turn_seconds`, and at a
    /// quick-play table, from when each disconnected human counts as away
    /// (`QUICK_PLAY_AWAY` after the disconnection): strangers do not wait for a player
    /// who walked away.
    pub(super) fn timing(&self, lobby: LobbyId) -> TurnTiming {
        let Some(l) = self.lobbies.get(lobby) else {
            return TurnTiming::new(self.config.ai_move_delay_us, 0);
        };
        let turn_us = u64::from(l.options().turn_seconds) * 1_000_000;
        let mut timing = TurnTiming::new(self.config.ai_move_delay_us, turn_us);
        if !l.is_quick_play() {
            return timing;
        }
        for (slot, seat) in timing.away_from.iter_mut().zip(l.seats()) {
            let Occupant::Human(session) = seat.occupant else {
                continue;
            };
            *slot = self
                .sessions
                .get(session)
                .filter(|s| s.conn.is_none())
                .and_then(|s| s.disconnected_at)
                .map(|at| at.plus_us(self.config.quick_play_away_us));
        }
        timing
    }

    pub(super) fn human_move(
        &mut self,
        now: Time,
        session: SessionId,
        action: Action,
        out: &mut Vec<Output>,
    ) -> Result<(), LobbyError> {
        let lobby = self.lobby_of(session)?;
        let seat = self
            .lobbies
            .get(lobby)
            .and_then(|l| l.seat_of(session))
            .ok_or(LobbyError::NotFound("You have no seat in this lobby."))?;
        let mut events = Vec::new();
        self.lobbies.apply(lobby, seat, action, &mut events)?;
        self.persist_move(lobby, seat, action, MoveSource::Human, false);
        self.after_move(now, lobby, seat, MoveSource::Human, events, out);
        self.drive(now, lobby, out);
        Ok(())
    }

    /// Bookkeeping and broadcast after any applied move.
    fn after_move(
        &mut self,
        now: Time,
        lobby: LobbyId,
        seat: Seat,
        by: MoveSource,
        events: Vec<Event>,
        out: &mut Vec<Output>,
    ) {
        let trick_pause = self.config.trick_pause_us;
        let finished = events
            .iter()
            .any(|e| matches!(e, Event::GameFinished { .. }));
        if let Some(l) = self.lobbies.get_mut(lobby) {
            l.finish_turn(seat);
            if events
                .iter()
                .any(|e| matches!(e, Event::TrickCompleted { .. }))
            {
                l.pause_turns_until(now.plus_us(trick_pause));
            }
        }
        self.counters.moves.bump(by);
        out.push(Output::Note(Note::MoveApplied { lobby, seat, by }));
        if finished {
            self.counters.games_finished += 1;
            // The ratings' records follow the last move's, in the same batch.
            self.rate_game(lobby);
            // History after the ratings: the game's record says whether it was rated.
            self.record_history(now, lobby);
            out.push(Output::Note(Note::GameFinished { lobby }));
            // Its disconnected humans no longer hold a seat in a running game.
            self.sync_lobby_evictable(lobby);
        }
        // Start the next turns first, so the views carry their `turn_deadline_ms`.
        self.sync_turns(now, lobby);
        self.broadcast(now, lobby, &events, out);
    }

    /// Brings the lobby's turn book in line with the seats the game awaits now.
    pub(super) fn sync_turns(&mut self, now: Time, lobby: LobbyId) {
        if let Some(l) = self.lobbies.get_mut(lobby) {
            l.sync_turns(now);
        }
    }

    /// Moves a lobby's game forward: starts turns, asks the AI, applies AI moves whose
    /// time has come and plays for humans whose turn ran out; then sets the lobby's
    /// timer for the next thing due.
    pub(super) fn drive(&mut self, now: Time, lobby: LobbyId, out: &mut Vec<Output>) {
        for _ in 0..DRIVE_MOVES_MAX {
            let timing = self.timing(lobby);
            let Some(l) = self.lobbies.get_mut(lobby) else {
                self.timers.cancel(&TimerKey::Lobby(lobby));
                return;
            };
            // A dormant game waits for a human of its own; nothing moves meanwhile.
            if l.game().is_none() || l.status() != LobbyStatus::Playing || l.is_dormant() {
                l.clear_turns();
                self.timers.cancel(&TimerKey::Lobby(lobby));
                return;
            }
            self.sync_turns(now, lobby);
            let Some(l) = self.lobbies.get(lobby) else {
                return;
            };
            for seat in l.turns().to_ask() {
                self.ask_ai(now, lobby, seat, out);
            }
            let Some(l) = self.lobbies.get(lobby) else {
                return;
            };
            let Some((seat, turn)) = l.turns().due(now, &timing) else {
                match l.turns().next_due(&timing) {
                    Some(t) => self.timers.set(TimerKey::Lobby(lobby), t),
                    None => self.timers.cancel(&TimerKey::Lobby(lobby)),
                }
                return;
            };
            let (action, by, autoplayed) = match turn.state {
                TurnState::Decided { action, by } => (Some(action), by, false),
                _ => (None, Decider::Fallback(FallbackReason::TurnTimeout), true),
            };
            self.play_turn(now, lobby, seat, action, by, autoplayed, out);
        }
    }

    /// Applies one due move (re-validated: a stale decision is replaced by the fallback).
    #[allow(clippy::too_many_arguments)]
    fn play_turn(
        &mut self,
        now: Time,
        lobby: LobbyId,
        seat: Seat,
        action: Option<Action>,
        by: Decider,
        autoplayed: bool,
        out: &mut Vec<Output>,
    ) {
        let Some(game) = self.lobbies.get(lobby).and_then(|l| l.game()) else {
            return;
        };
        let legal = action.filter(|a| game.check(seat, *a).is_ok());
        let (action, by) = match (legal, action) {
            (Some(a), _) => (a, by),
            // A move decided earlier that is no longer legal: the fallback's instead.
            (None, Some(_)) => match self.fallback_action(lobby, seat) {
                Some(a) => (a, Decider::Fallback(FallbackReason::Illegal)),
                None => return,
            },
            // Nothing decided (a human's turn ran out): the fallback's, for `by`'s reason.
            (None, None) => match self.fallback_action(lobby, seat) {
                Some(a) => (a, by),
                None => return,
            },
        };
        let mut events = Vec::new();
        if autoplayed {
            events.push(Event::Autoplayed { player: seat });
        }
        if self
            .lobbies
            .apply(lobby, seat, action, &mut events)
            .is_err()
        {
            return;
        }
        let source = match by {
            Decider::Ai => MoveSource::Ai,
            Decider::Fallback(reason) => {
                self.counters.fallbacks.bump(reason);
                out.push(Output::Note(Note::Fallback {
                    lobby,
                    seat,
                    reason,
                }));
                MoveSource::Fallback
            }
        };
        self.persist_move(lobby, seat, action, source, autoplayed);
        self.after_move(now, lobby, seat, source, events, out);
    }

    /// The fallback's move for `seat`, from that seat's own view: the easy player for
    /// an easy AI seat, the heuristic for any other seat (a timed-out human included).
    /// Its randomness comes from the game's seed and which of the seat's decisions this
    /// is ([`decision_stream`]), so a restored server plays the same fallback moves as
    /// the one before it, whenever it decides.
    fn fallback_action(&mut self, lobby: LobbyId, seat: Seat) -> Option<Action> {
        let l = self.lobbies.get(lobby)?;
        let game = l.game()?;
        let obs = game.observation(seat);
        let level = seat_level(l, seat).unwrap_or(AiLevel::Normal);
        let mut rng = ChaCha12Rng::seed_from_u64(l.seed().unwrap_or_default());
        rng.set_stream(decision_stream(&obs, seat));
        level::fallback(level, &obs, &mut rng).or_else(|| obs.legal_actions.first().copied())
    }

    /// Asks the AI service for `seat`'s move, or decides with the fallback at once.
    fn ask_ai(&mut self, now: Time, lobby: LobbyId, seat: Seat, out: &mut Vec<Output>) {
        let Some(l) = self.lobbies.get(lobby) else {
            return;
        };
        let game_no = l.game_no();
        match self.bridge.ask(now, lobby, game_no, seat) {
            Ask::Send {
                conn,
                request_id,
                deadline,
            } => {
                let Some(observation) = l.game().map(|g| g.observation(seat)) else {
                    return;
                };
                let level = seat_level(l, seat).unwrap_or_default();
                let timeout_s = self.config.ai_decision_timeout_us as f64 / 1e6;
                let request = AiRequest::Decide {
                    request_id,
                    observation,
                    timeout: timeout_s,
                    level,
                };
                // The in-process service takes the value itself; a websocket its JSON.
                let in_process = self
                    .conns
                    .get(&conn)
                    .is_some_and(|c| c.kind == ConnKind::AiInProcess);
                // The move waits for its delay (or a trick's pause) anyway: an answer
                // that comes sooner is read when it is needed.
                let timing = self.timing(lobby);
                let needed_at = l
                    .turns()
                    .turns
                    .get(&seat)
                    .map_or(now, |t| l.turns().ready_at(t, &timing))
                    .min(deadline);
                out.push(if in_process {
                    Output::AiRequest {
                        conn,
                        request: Box::new(request),
                        needed_at,
                    }
                } else {
                    Output::Send {
                        conn,
                        text: wire::encode_ai_request(&request),
                        delivery: Delivery::Every,
                    }
                });
                self.counters.ai_requests += 1;
                self.timers.set(TimerKey::AiRequest(request_id), deadline);
                if let Some(l) = self.lobbies.get_mut(lobby) {
                    l.turn_asked(seat, request_id);
                }
            }
            Ask::Fallback(reason) => {
                let action = self.fallback_action(lobby, seat);
                if let (Some(action), Some(l)) = (action, self.lobbies.get_mut(lobby)) {
                    l.decide_turn(seat, None, action, Decider::Fallback(reason));
                }
            }
        }
    }

    /// A message from the AI service.
    pub(super) fn on_ai_message(
        &mut self,
        now: Time,
        conn: ConnId,
        reply: Result<AiReply, ()>,
        peeked: Option<u64>,
        arrived: Option<Time>,
        out: &mut Vec<Output>,
    ) {
        if !self.bridge.is_ai(conn) {
            return;
        }
        let answer = self.bridge.answer(now, conn, reply, peeked);
        if let Answer::Decision { pending, .. } | Answer::Fallback { pending, .. } = &answer {
            let arrived = arrived.map_or(now, |t| t.min(now));
            out.push(Output::Note(Note::AiAnswered {
                round_trip_us: arrived.since_us(pending.sent),
            }));
        }
        match answer {
            Answer::Decision {
                request_id,
                pending,
                action,
                by,
            } => {
                self.timers.cancel(&TimerKey::AiRequest(request_id));
                self.on_ai_decision(now, request_id, pending, action, by, out);
            }
            Answer::Fallback {
                request_id,
                pending,
                reason,
            } => {
                self.timers.cancel(&TimerKey::AiRequest(request_id));
                self.fallback_for(now, request_id, pending, reason, out);
            }
            Answer::Nothing => {}
        }
    }

    fn on_ai_decision(
        &mut self,
        now: Time,
        request_id: u64,
        pending: Pending,
        action: Action,
        by: DecidedBy,
        out: &mut Vec<Output>,
    ) {
        let current = self.lobbies.get(pending.lobby).filter(|l| {
            l.game_no() == pending.game_no && l.turns().seat_asked(request_id) == Some(pending.seat)
        });
        let Some(l) = current else {
            // The game moved on (the host returned to the lobby, the lobby was deleted):
            // the service did its job, the answer is simply no longer needed.
            self.bridge.settle(now, Outcome::Success);
            return;
        };
        let legal = l
            .game()
            .is_some_and(|g| g.check(pending.seat, action).is_ok());
        if legal {
            self.bridge.settle(now, Outcome::Success);
            self.counters.ai_decisions.bump(by);
            if let Some(l) = self.lobbies.get_mut(pending.lobby) {
                l.decide_turn(pending.seat, Some(request_id), action, Decider::Ai);
            }
            self.drive(now, pending.lobby, out);
        } else {
            self.bridge.settle(now, Outcome::Failure);
            self.fallback_for(now, request_id, pending, FallbackReason::Illegal, out);
        }
    }

    /// The fallback decides for a request that will get no usable answer.
    pub(super) fn fallback_for(
        &mut self,
        now: Time,
        request_id: u64,
        pending: Pending,
        reason: FallbackReason,
        out: &mut Vec<Output>,
    ) {
        let current = self.lobbies.get(pending.lobby).is_some_and(|l| {
            l.game_no() == pending.game_no && l.turns().seat_asked(request_id) == Some(pending.seat)
        });
        if !current {
            return;
        }
        if let Some(action) = self.fallback_action(pending.lobby, pending.seat)
            && let Some(l) = self.lobbies.get_mut(pending.lobby)
        {
            l.decide_turn(
                pending.seat,
                Some(request_id),
                action,
                Decider::Fallback(reason),
            );
        }
        self.drive(now, pending.lobby, out);
    }

    pub(super) fn on_ai_deadline(&mut self, now: Time, request_id: u64, out: &mut Vec<Output>) {
        if let Some(pending) = self.bridge.deadline(now, request_id) {
            self.fallback_for(now, request_id, pending, FallbackReason::Timeout, out);
        }
    }
}

/// Names one decision of `seat` in its game: the round, the phase and the cards left in
/// the seat's hand (a play takes one), so no two decisions of a seat share it. It does
/// not depend on other seats' moves: under hidden bids every seat bids at once, and
/// whether a human's bid came before or after an AI seat's decision (a restored server
/// asks again) must not change that decision.
fn decision_stream(obs: &Observation, seat: Seat) -> u64 {
    let phase: u64 = match obs.phase {
        Phase::ChoosingTrump => 0,
        Phase::Bidding => 1,
        Phase::Playing => 2,
        Phase::Finished => 3,
    };
    (u64::from(obs.round) << 24) | (phase << 16) | ((obs.hand.len() as u64) << 8) | u64::from(seat)
}

/// The level of `seat` when it is an AI seat.
fn seat_level(lobby: &crate::machine::lobby::Lobby, seat: Seat) -> Option<AiLevel> {
    lobby.seats().get(usize::from(seat)).and_then(|s| s.level())
}
