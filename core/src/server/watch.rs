//! Spectators and table chat (PROTOCOL.md 6.4): `spectate`, what a spectator may send,
//! `chat` with its `CHAT_RATE`, and the chat history sent to whoever joins or watches.
//!
//! A spectator is a session whose `watching` names a lobby; it holds no seat and is
//! listed in that lobby's [`Audience`]. It stops watching when it sends `leave_lobby`,
//! when its connection closes or is replaced, and when the lobby is deleted (then it
//! gets an empty `state`). Nothing of an audience is recorded for a durable store.

use crate::audience::{Audience, CHAT_CHARS_MAX};
use crate::io::{ConnId, Output};
use crate::lobby::{LobbyError, clean_name};
use crate::overload::limiter::{Rate, TokenBucket};
use crate::session::{LobbyId, SessionId};
use crate::time::{Time, US_PER_MS};
use crate::wire::{self, ClientMessage, ErrorCode, ServerMessage};

use super::Server;

/// The `error` text for a spectator's message other than `leave_lobby`, `chat`, `hello`.
const SPECTATOR_ONLY: &str = "Spectators can only chat or leave.";

impl Server {
    /// Whether `session` may send `message` now: a spectator may only leave, chat and
    /// say hello (which is refused later anyway).
    pub(super) fn spectator_may_send(&self, session: SessionId, message: &ClientMessage) -> bool {
        let watching = self
            .sessions
            .get(session)
            .is_some_and(|s| s.watching.is_some());
        !watching
            || matches!(
                message,
                ClientMessage::LeaveLobby
                    | ClientMessage::Chat { .. }
                    | ClientMessage::Hello { .. }
            )
    }

    /// The refusal of [`Server::spectator_may_send`].
    pub(super) fn spectator_refused() -> LobbyError {
        LobbyError::NotAllowed(SPECTATOR_ONLY)
    }

    /// The names of `lobby`'s spectators, in the order they came.
    pub(super) fn spectator_names(&self, lobby: LobbyId) -> Vec<String> {
        self.audiences
            .get(&lobby)
            .map(|a| a.names().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Whether `names` are `lobby`'s spectators now (for the lobby view cache).
    pub(super) fn spectators_are(&self, lobby: LobbyId, names: &[String]) -> bool {
        match self.audiences.get(&lobby) {
            Some(a) => a.names().eq(names.iter().map(String::as_str)),
            None => names.is_empty(),
        }
    }

    /// `spectate`: leaves any seat and watches the lobby with `code`.
    pub(super) fn spectate(
        &mut self,
        now: Time,
        conn: ConnId,
        session: SessionId,
        code: &str,
        name: &str,
        out: &mut Vec<Output>,
    ) -> Result<(), LobbyError> {
        let name = clean_name(name)?;
        let lobby = self
            .lobbies
            .find_code(code)
            .ok_or(LobbyError::NotFound("No lobby with that code."))?;
        let watchers = self
            .audiences
            .get(&lobby)
            .map_or(0, |a| a.spectators().len());
        if watchers >= self.config.spectators_per_lobby_max {
            return Err(LobbyError::NotAllowed(
                "That lobby has all the spectators it can take.",
            ));
        }
        // Checked before leaving the current seat, so a refusal loses nothing.
        self.leave_lobby(now, session, out);
        let Some(target) = self.lobbies.get(lobby) else {
            // Leaving deleted it: it was the session's own lobby and it was alone.
            self.send_state(now, session, out);
            return Err(LobbyError::NotFound("No lobby with that code."));
        };
        let seats = target.seats().iter().map(|s| s.name.as_str());
        let watching = self
            .audiences
            .get(&lobby)
            .into_iter()
            .flat_map(Audience::names);
        let name = crate::names::unique(seats.chain(watching), &name);
        let max = self.config.spectators_per_lobby_max;
        if !self
            .audiences
            .entry(lobby)
            .or_default()
            .add(session, name, max)
        {
            return Err(LobbyError::NotAllowed(
                "That lobby has all the spectators it can take.",
            ));
        }
        if let Some(s) = self.sessions.get_mut(session) {
            s.watching = Some(lobby);
        }
        // Everyone sees the new name; the spectator's own view is among those states.
        self.broadcast(now, lobby, &[], out);
        self.send_history(conn, lobby, out);
        Ok(())
    }

    /// Stops `session` watching, if it does, and tells the lobby (no message to the
    /// session itself).
    pub(super) fn stop_watching(&mut self, now: Time, session: SessionId, out: &mut Vec<Output>) {
        let Some(lobby) = self
            .sessions
            .get_mut(session)
            .and_then(|s| s.watching.take())
        else {
            return;
        };
        let removed = self
            .audiences
            .get_mut(&lobby)
            .is_some_and(|a| a.remove(session));
        if self.audiences.get(&lobby).is_some_and(Audience::is_empty) {
            self.audiences.remove(&lobby);
        }
        if removed {
            self.broadcast(now, lobby, &[], out);
        }
    }

    /// Sends the chat history of `lobby` to `conn`, one `chat` frame per line.
    pub(super) fn send_history(&self, conn: ConnId, lobby: LobbyId, out: &mut Vec<Output>) {
        let Some(audience) = self.audiences.get(&lobby) else {
            return;
        };
        for line in audience.history() {
            out.push(Output::Send {
                conn,
                text: line.to_string(),
                replaceable: false,
            });
        }
    }

    /// `chat`: one line to everyone in the session's lobby, seated or watching.
    pub(super) fn chat(
        &mut self,
        now: Time,
        conn: ConnId,
        session: SessionId,
        text: &str,
        out: &mut Vec<Output>,
    ) -> Result<(), LobbyError> {
        let text = crate::names::clean_text(text, CHAT_CHARS_MAX)
            .map_err(|e| LobbyError::Invalid(e.chat_message()))?;
        let (lobby, from, name) = self.chat_sender(session)?;
        let per_min = u64::from(self.config.chat_rate_per_min.max(1));
        let Some(s) = self.sessions.get_mut(session) else {
            return Ok(());
        };
        let bucket = s
            .chat_bucket
            .get_or_insert_with(|| TokenBucket::new(Rate::per_minute(per_min), per_min, now));
        if !bucket.try_take(now) {
            let wait_ms = bucket.wait_us(now).div_ceil(US_PER_MS).max(1);
            self.send_error(
                conn,
                ErrorCode::RateLimited,
                "You are chatting too fast, wait a moment.",
                Some(wait_ms),
                out,
            );
            return Ok(());
        }
        let frame = wire::encode(&ServerMessage::Chat {
            from,
            name,
            text,
            at_ms: now.as_micros() / US_PER_MS,
        });
        for to in self.lobby_conns(lobby) {
            out.push(Output::Send {
                conn: to,
                text: frame.clone(),
                replaceable: false,
            });
        }
        self.audiences.entry(lobby).or_default().push_line(frame);
        Ok(())
    }

    /// The lobby, player id and shown name of a chatting session; `not_found` when it
    /// neither sits nor watches anywhere.
    fn chat_sender(&self, session: SessionId) -> Result<(LobbyId, String, String), LobbyError> {
        let s = self
            .sessions
            .get(session)
            .ok_or(LobbyError::NotFound("No session."))?;
        if let Some(lobby) = s.watching {
            let name = self
                .audiences
                .get(&lobby)
                .and_then(|a| a.spectators().iter().find(|x| x.session == session))
                .map(|x| x.name.clone())
                .unwrap_or_else(|| s.name.clone());
            return Ok((lobby, s.player_id.clone(), name));
        }
        let (lobby, player_id) = self.lobby_of(session)?;
        let name = self
            .lobbies
            .get(lobby)
            .and_then(|l| {
                let seat = l.seat_of(&player_id)?;
                l.seats().get(usize::from(seat)).map(|x| x.name.clone())
            })
            .unwrap_or_else(|| s.name.clone());
        Ok((lobby, player_id, name))
    }

    /// The connections of everyone in `lobby`: its connected human seats, then its
    /// spectators.
    fn lobby_conns(&self, lobby: LobbyId) -> Vec<ConnId> {
        let seated = self
            .lobbies
            .get(lobby)
            .into_iter()
            .flat_map(|l| l.humans())
            .collect::<Vec<_>>();
        let watching = self
            .audiences
            .get(&lobby)
            .into_iter()
            .flat_map(|a| a.spectators().iter().map(|x| x.session));
        seated
            .into_iter()
            .chain(watching)
            .filter_map(|id| self.sessions.get(id).and_then(|s| s.conn))
            .collect()
    }

    /// The spectators of lobbies deleted during this input stop watching and get an
    /// empty `state`; their audiences go with the lobbies.
    pub(super) fn release_gone_audiences(&mut self, out: &mut Vec<Output>) {
        if self.audiences.is_empty() || self.lobbies.gone().is_empty() {
            return;
        }
        let gone: Vec<LobbyId> = self.lobbies.gone().to_vec();
        for lobby in gone {
            let Some(audience) = self.audiences.remove(&lobby) else {
                continue;
            };
            for spectator in audience.spectators() {
                let conn = self.sessions.get_mut(spectator.session).and_then(|s| {
                    s.watching = None;
                    s.conn
                });
                if let Some(conn) = conn {
                    out.push(Output::Send {
                        conn,
                        text: super::views::EMPTY_STATE.to_string(),
                        replaceable: true,
                    });
                }
            }
        }
    }

    /// Checks that every spectator's session watches its lobby and is connected, that
    /// every watching session is listed, and that audiences exist only for lobbies
    /// that exist and stay under `MAX_SPECTATORS` (for tests and the simulator).
    pub fn check_audiences(&self) -> Result<(), String> {
        for (lobby, audience) in &self.audiences {
            if self.lobbies.get(*lobby).is_none() {
                return Err(format!("audience of deleted lobby {lobby}"));
            }
            if audience.spectators().len() > self.config.spectators_per_lobby_max {
                return Err(format!("lobby {lobby}: more than MAX_SPECTATORS"));
            }
            for x in audience.spectators() {
                let ok = self
                    .sessions
                    .get(x.session)
                    .is_some_and(|s| s.watching == Some(*lobby) && s.conn.is_some());
                if !ok {
                    return Err(format!("lobby {lobby}: spectator {} is stale", x.session));
                }
            }
        }
        for id in self.sessions.ids() {
            let Some(lobby) = self.sessions.get(id).and_then(|s| s.watching) else {
                continue;
            };
            let listed = self
                .audiences
                .get(&lobby)
                .is_some_and(|a| a.spectators().iter().any(|x| x.session == id));
            if !listed {
                return Err(format!("session {id} watches lobby {lobby} unlisted"));
            }
        }
        Ok(())
    }
}
