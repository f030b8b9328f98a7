//! Load and lifecycle: load samples, shutdown and its grace period, the deadlines fired
//! after every input, and what is published after it (`server_status`, AI availability,
//! the breaker's state).

use crate::machine::overload::breaker::BreakerState;
use crate::vocabulary::ids::ConnId;
use crate::vocabulary::io::{ConnKind, Delivery, Note, Output};
use crate::vocabulary::load::LoadSample;
use crate::vocabulary::time::Time;
use crate::vocabulary::wire::{self, CloseCode, ServerMessage};

use super::{SWEEP_INTERVAL_US, Server, Status, TimerKey};

impl Server {
    pub(super) fn on_sample(&mut self, sample: LoadSample, out: &mut Vec<Output>) {
        self.last_sample = sample;
        if let Some(change) = self.levels.observe(&sample) {
            self.counters.level_changes.bump(change.to);
            out.push(Output::Note(Note::LevelChanged {
                from: change.from,
                to: change.to,
                sample,
            }));
        }
    }

    pub(super) fn on_shutdown(&mut self, now: Time, out: &mut Vec<Output>) {
        if self.shutting_down {
            return;
        }
        self.shutting_down = true;
        out.push(Output::Note(Note::ShutdownStarted));
        if self.records.is_some() {
            // A durable store keeps every game: nothing to wait for. Every player is
            // told to come back soon (1012) and the process may exit once the shell
            // committed this pass.
            self.finish_shutdown(CloseCode::ServiceRestart, out);
            return;
        }
        self.timers.set(
            TimerKey::Shutdown,
            now.plus_us(self.config.shutdown_grace_us),
        );
    }

    /// Fires every due deadline.
    pub(super) fn run_due(&mut self, now: Time, out: &mut Vec<Output>) {
        while let Some(key) = self.timers.pop_due(now) {
            match key {
                TimerKey::Lobby(id) => self.drive(now, id, out),
                TimerKey::AiRequest(request_id) => self.on_ai_deadline(now, request_id, out),
                TimerKey::Session(id) => self.expire_session(now, id, out),
                TimerKey::Breaker => self.bridge.tick(now),
                TimerKey::Sweep => {
                    self.lobby_rate.sweep(now);
                    self.profile_rate.sweep(now);
                    self.reconnect_rate.sweep(now);
                    self.join_fail_rate.sweep(now);
                    self.spectate_rate.sweep(now);
                    self.chat_ip_rate.sweep(now);
                    self.chat_replay_rate.sweep(now);
                    self.timers
                        .set(TimerKey::Sweep, now.plus_us(SWEEP_INTERVAL_US));
                }
                TimerKey::Shutdown => self.finish_shutdown(CloseCode::ShuttingDown, out),
                TimerKey::HelloGrace(conn) => self.refuse_waiting(conn, None, out),
                TimerKey::Away(lobby) => self.on_away_due(now, lobby, out),
                TimerKey::Spectators(lobby) => self.show_spectators(now, lobby, out),
                TimerKey::QuickPlay => self.quick_play_due(now, out),
                TimerKey::Reserved(lobby) => self.reserved_due(now, lobby, out),
            }
        }
    }

    /// Whether a shutting-down server has nothing to wait for: `SHUTDOWN_GRACE` lets
    /// running games go on, so with none running (players in lobbies, or nobody) it
    /// stops at once, and as soon as the last running game ends.
    fn idle_for_shutdown(&self) -> bool {
        self.lobbies.active_games() == 0
    }

    fn finish_shutdown(&mut self, code: CloseCode, out: &mut Vec<Output>) {
        let open: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| !c.closing)
            .map(|(id, _)| *id)
            .collect();
        for conn in open {
            // The AI service is told the server is shutting down either way.
            let kind = self.conns.get(&conn).map(|c| c.kind);
            let code = if kind == Some(ConnKind::Player) {
                code
            } else {
                CloseCode::ShuttingDown
            };
            self.close(conn, code, out);
        }
        self.finished = true;
    }

    /// Publishes what changed as a consequence of the last input: the load status, AI
    /// availability and the breaker's state.
    pub(super) fn after_change(&mut self, now: Time, out: &mut Vec<Output>) {
        if self.shutting_down && !self.finished && self.idle_for_shutdown() {
            // Nobody to give the grace period to: stop now.
            self.timers.cancel(&TimerKey::Shutdown);
            self.finish_shutdown(CloseCode::ShuttingDown, out);
        }
        let available = self.bridge.available();
        if available != self.ai_was_available {
            self.ai_was_available = available;
            for id in self.lobbies.ids() {
                self.broadcast(now, id, &[], out);
            }
        }
        let breaker = self.bridge.breaker_state();
        if breaker.name() != self.breaker_was.name() {
            match breaker {
                BreakerState::Open { until } => {
                    self.counters.breaker_opened += 1;
                    out.push(Output::Note(Note::BreakerOpened {
                        failures: self.config.ai_breaker_failures_max,
                        cooldown_us: until.since_us(now),
                    }));
                }
                BreakerState::Closed { .. } => out.push(Output::Note(Note::BreakerClosed)),
                BreakerState::HalfOpen { .. } => {}
            }
        }
        self.breaker_was = breaker;
        match self.bridge.poll_timeout() {
            Some(t) => self.timers.set(TimerKey::Breaker, t),
            None => self.timers.cancel(&TimerKey::Breaker),
        }
        let status = self.current_status();
        if status != self.status {
            self.status = status;
            let targets: Vec<ConnId> = self
                .conns
                .iter()
                .filter(|(_, c)| c.session.is_some() && !c.closing && c.status_sent != Some(status))
                .map(|(id, _)| *id)
                .collect();
            for conn in targets {
                self.send_status(conn, out);
            }
        }
    }

    /// What `server_status` says now.
    fn current_status(&self) -> Status {
        Status {
            load: self.levels.level(),
            accepting_games: self.accepting_games(),
        }
    }

    pub(super) fn send_status(&mut self, conn: ConnId, out: &mut Vec<Output>) {
        let status = self.current_status();
        if let Some(c) = self.conns.get_mut(&conn) {
            c.status_sent = Some(status);
            let text = wire::encode(&ServerMessage::ServerStatus {
                load: status.load,
                accepting_games: status.accepting_games,
            });
            out.push(Output::Send {
                conn,
                text,
                delivery: Delivery::Every,
            });
        }
    }
}
