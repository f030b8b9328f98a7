//! Spectators and table chat (PROTOCOL.md 6.4): `spectate`, what a spectator may send,
//! `chat` with its budgets, the chat history sent to whoever joins or watches, and the
//! players a host removed, kept out for a while.
//!
//! A spectator is a session whose `watching` names a lobby; it holds no seat and is
//! listed in that lobby's [`Audience`]. It stops watching when it sends `leave_lobby`,
//! when its connection closes or is replaced, and when the lobby is deleted (then it
//! gets an empty `state`). Nothing of an audience is recorded for a durable store.
//!
//! What one address can make the server do through them is bounded: a `spectate` with
//! an unknown code counts against `JOIN_FAIL_RATE` like a `join_lobby` (either finds a
//! lobby), every `spectate` of a lobby against `SPECTATE_RATE` (each one and each leave
//! sends every member a `state`), a chat line against `CHAT_RATE` per session,
//! `CHAT_IP_RATE` per address (a new session does not renew it) and, for a spectator's
//! line, `CHAT_LOBBY_RATE` per lobby (seats are at most six, each under `CHAT_RATE`), and
//! a history replay against `CHAT_REPLAY_RATE` per address and `CHAT_HISTORY_BYTES`.

use crate::machine::audience::{Audience, CHAT_CHARS_MAX};
use crate::machine::lobby::{LobbyError, clean_name};
use crate::machine::removed::RemovedPlayer;
use crate::vocabulary::ids::ConnId;
use crate::vocabulary::ids::{LobbyId, SessionId};
use crate::vocabulary::io::{Delivery, Output};
use crate::vocabulary::limiter::{IpKey, Rate, TokenBucket};
use crate::vocabulary::shard::{elsewhere, owner_of};
use crate::vocabulary::stats::RequestRefusal;
use crate::vocabulary::time::{Time, US_PER_MS};
use crate::vocabulary::wire::{self, ClientMessage, ErrorCode, ServerMessage};

use super::{Server, TimerKey};
use crate::vocabulary::limiter::rate_from;

/// The `error` text for a lobby the session's player (or address) was removed from.
const REMOVED_FROM: &str = "The host removed you from this lobby.";

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
                    | ClientMessage::Resync
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

    /// The address key of `conn`, if it is open.
    pub(super) fn conn_ip(&self, conn: ConnId) -> Option<IpKey> {
        self.conns.get(&conn).map(|c| IpKey::new(c.ip))
    }

    /// `JOIN_FAIL_RATE` for a `join_lobby` or `spectate` from `ip`: true (and
    /// `rate_limited` sent) when the address is out of failed guesses, whatever the
    /// code, so that the answer tells a guesser nothing until the bucket refills.
    pub(super) fn out_of_guesses(
        &mut self,
        now: Time,
        conn: ConnId,
        ip: Option<IpKey>,
        out: &mut Vec<Output>,
    ) -> bool {
        let Some(ip) = ip.filter(|ip| self.join_fail_rate.available(ip, now) == 0) else {
            return false;
        };
        let wait_ms = self.join_fail_rate.wait_us(&ip, now).div_ceil(1000).max(1);
        self.counters
            .requests_refused
            .bump(RequestRefusal::JoinFailRate);
        self.send_error(
            conn,
            ErrorCode::RateLimited,
            "Too many unknown lobby codes from your address, wait a moment.",
            Some(wait_ms),
            out,
        );
        true
    }

    /// A failed guess of a lobby code from `ip` (`JOIN_FAIL_RATE`).
    pub(super) fn guess_failed(&mut self, now: Time, ip: Option<IpKey>) {
        if let Some(ip) = ip {
            self.join_fail_rate.try_take(&ip, now);
        }
    }

    /// The lobby a `join_lobby` or `spectate` names by `code`, asked from `ip`:
    /// `Ok(None)` when the answer is sent already (the address is out of guesses, or
    /// the code is another shard's: that shard has the table, and it is no failed
    /// guess; a code this shard holds is served whatever its first character, a lobby
    /// from before the server had a `SHARD_ID`), `not_found` (a failed guess) when no
    /// lobby has it.
    pub(super) fn lobby_by_code(
        &mut self,
        now: Time,
        conn: ConnId,
        ip: Option<IpKey>,
        code: &str,
        out: &mut Vec<Output>,
    ) -> Result<Option<LobbyId>, LobbyError> {
        if self.out_of_guesses(now, conn, ip, out) {
            return Ok(None);
        }
        if let Some(lobby) = self.lobbies.find_code(code) {
            return Ok(Some(lobby));
        }
        if let Some(owner) = elsewhere(self.config.shard, owner_of(code)) {
            self.send_wrong_shard(conn, owner, out);
            return Ok(None);
        }
        self.guess_failed(now, ip);
        Err(LobbyError::NotFound("No lobby with that code."))
    }

    /// Whether the host of `lobby` removed `session`'s player, or a player at `ip`,
    /// less than `REMOVED_PLAYER_TTL` ago.
    pub(super) fn kept_out(
        &self,
        now: Time,
        lobby: LobbyId,
        session: SessionId,
        ip: Option<IpKey>,
    ) -> bool {
        self.removed.get(&lobby).is_some_and(|r| {
            let player_id = self.sessions.get(session).map(|s| s.player_id.as_str());
            r.keeps_out(now, player_id.unwrap_or_default(), ip)
        })
    }

    /// The host of `lobby` removed `player_id`, connected from `ip` (if it was): kept
    /// out for `REMOVED_PLAYER_TTL`.
    pub(super) fn keep_out(
        &mut self,
        now: Time,
        lobby: LobbyId,
        player_id: String,
        ip: Option<IpKey>,
    ) {
        let max = self.config.removed_players_max;
        let until = now.plus_us(self.config.removed_player_ttl_us);
        let removed = self.removed.entry(lobby).or_default();
        removed.add(
            now,
            RemovedPlayer {
                player_id,
                ip,
                until,
            },
            max,
        );
        if removed.is_empty() {
            self.removed.remove(&lobby);
        }
    }

    /// The removed players of lobbies deleted during this input are forgotten, and so
    /// is when their spectators were last shown.
    pub(super) fn release_gone_removed(&mut self) {
        if self.removed.is_empty() && self.spectators_shown.is_empty() {
            return;
        }
        let gone: Vec<LobbyId> = self.lobbies.gone().to_vec();
        for lobby in gone {
            self.removed.remove(&lobby);
            if self.spectators_shown.remove(&lobby).is_some() {
                self.timers.cancel(&TimerKey::Spectators(lobby));
            }
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
        let ip = self.conn_ip(conn);
        let Some(lobby) = self.lobby_by_code(now, conn, ip, code, out)? else {
            return Ok(());
        };
        if let Some(ip) = ip
            && !self.spectate_rate.try_take(&ip, now)
        {
            let wait_ms = self.spectate_rate.wait_us(&ip, now).div_ceil(1000).max(1);
            self.counters
                .requests_refused
                .bump(RequestRefusal::SpectateRate);
            self.send_error(
                conn,
                ErrorCode::RateLimited,
                "Too many spectate requests from your address, wait a moment.",
                Some(wait_ms),
                out,
            );
            return Ok(());
        }
        if self.kept_out(now, lobby, session, ip) {
            return Err(LobbyError::NotAllowed(REMOVED_FROM));
        }
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
        let name = crate::vocabulary::names::unique(seats.chain(watching), &name);
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
        // Everyone sees the new name (now, or with the next changes of the list); the
        // spectator's own view is among those states, or comes now by itself.
        if !self.spectators_changed(now, lobby, out) {
            self.send_state(now, session, out);
        }
        self.send_history(now, conn, lobby, out);
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
            self.spectators_changed(now, lobby, out);
        }
    }

    /// `lobby`'s spectators changed: its members get a state now, unless one showed a
    /// change of the list less than `SPECTATORS_STATE_INTERVAL` ago; then they get one
    /// when the interval is over, with every change made meanwhile. Returns whether the
    /// states went out now.
    fn spectators_changed(&mut self, now: Time, lobby: LobbyId, out: &mut Vec<Output>) -> bool {
        let key = TimerKey::Spectators(lobby);
        if self.timers.at(&key).is_some() {
            return false;
        }
        let next = self
            .spectators_shown
            .get(&lobby)
            .map(|at| at.plus_us(self.config.spectators_state_interval_us));
        match next {
            Some(next) if now < next => {
                self.timers.set(key, next);
                false
            }
            _ => {
                self.show_spectators(now, lobby, out);
                true
            }
        }
    }

    /// Sends `lobby`'s members a state that shows its spectators as they are now.
    pub(super) fn show_spectators(&mut self, now: Time, lobby: LobbyId, out: &mut Vec<Output>) {
        self.timers.cancel(&TimerKey::Spectators(lobby));
        if self.lobbies.get(lobby).is_none() {
            return;
        }
        self.spectators_shown.insert(lobby, now);
        self.broadcast(now, lobby, &[], out);
    }

    /// Sends the chat history of `lobby` to `conn`, one `chat` frame per line: the
    /// newest lines that fit in `CHAT_HISTORY_BYTES`, after a `chat_gap` note counting
    /// those left out; only the note once the address is past `CHAT_REPLAY_RATE`.
    pub(super) fn send_history(
        &mut self,
        now: Time,
        conn: ConnId,
        lobby: LobbyId,
        out: &mut Vec<Output>,
    ) {
        if self
            .audiences
            .get(&lobby)
            .is_none_or(|a| a.history_len() == 0)
        {
            return;
        }
        let replay = self
            .conn_ip(conn)
            .is_none_or(|ip| self.chat_replay_rate.try_take(&ip, now));
        let bytes_max = if replay {
            self.config.chat_history_bytes_max
        } else {
            0
        };
        let Some(audience) = self.audiences.get(&lobby) else {
            return;
        };
        let (skipped, lines) = audience.replay(bytes_max);
        if skipped > 0 {
            out.push(Output::Send {
                conn,
                text: wire::encode(&ServerMessage::ChatGap {
                    missed: u32::try_from(skipped).unwrap_or(u32::MAX),
                }),
                delivery: Delivery::Every,
            });
        }
        for line in lines {
            out.push(Output::Send {
                conn,
                text: line.to_string(),
                delivery: Delivery::Chat,
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
        let text = crate::vocabulary::names::clean_text(text, CHAT_CHARS_MAX)
            .map_err(|e| LobbyError::Invalid(e.chat_message()))?;
        let (lobby, from, name) = self.chat_sender(session)?;
        if !self.take_chat_budgets(now, conn, session, lobby, out) {
            return Ok(());
        }
        let frame = wire::encode(&ServerMessage::Chat {
            from,
            name,
            text,
            at_ms: now.as_micros() / US_PER_MS,
        });
        #[cfg(feature = "planted-bugs")]
        let first = out.len();
        for to in self.lobby_conns(lobby) {
            out.push(Output::Send {
                conn: to,
                text: frame.clone(),
                delivery: Delivery::Chat,
            });
        }
        #[cfg(feature = "planted-bugs")]
        crate::planted::chat_lost(out, first);
        self.audiences.entry(lobby).or_default().push_line(frame);
        Ok(())
    }

    /// Takes one line from each budget of a chat line by `session` on `conn` in
    /// `lobby`: `CHAT_RATE` (the session), `CHAT_IP_RATE` (its address) and, for a
    /// spectator, `CHAT_LOBBY_RATE` (the lobby). When one is empty, nothing is taken and
    /// the line gets `rate_limited` with the longest wait of those empty; false then.
    fn take_chat_budgets(
        &mut self,
        now: Time,
        conn: ConnId,
        session: SessionId,
        lobby: LobbyId,
        out: &mut Vec<Output>,
    ) -> bool {
        let per_min = u64::from(self.config.chat_rate_per_min.max(1));
        let lobby_rate = rate_from(self.config.chat_lobby_rate_per_min, 60_000_000);
        let lobby_burst = u64::from(self.config.chat_lobby_burst.max(1));
        let ip = self.conn_ip(conn);
        let Some(s) = self.sessions.get_mut(session) else {
            return false;
        };
        let spectator = s.watching.is_some();
        let mine = s
            .chat_bucket
            .get_or_insert_with(|| TokenBucket::new(Rate::per_minute(per_min), per_min, now));
        // (refusal, wait) of each empty budget, the session's first.
        let mut empty: Vec<(Option<RequestRefusal>, u64)> = Vec::new();
        if mine.available(now) == 0 {
            empty.push((None, mine.wait_us(now)));
        }
        if let Some(ip) = ip
            && self.chat_ip_rate.available(&ip, now) == 0
        {
            let wait_us = self.chat_ip_rate.wait_us(&ip, now);
            empty.push((Some(RequestRefusal::ChatIpRate), wait_us));
        }
        // A spectator's lobby has an audience: it is listed there.
        if spectator && let Some(audience) = self.audiences.get_mut(&lobby) {
            let shared = audience
                .spectator_chat
                .get_or_insert_with(|| TokenBucket::new(lobby_rate, lobby_burst, now));
            if shared.available(now) == 0 {
                empty.push((Some(RequestRefusal::ChatLobbyRate), shared.wait_us(now)));
            }
        }
        if let Some(&(refusal, wait_us)) = empty.iter().max_by_key(|(_, wait)| *wait) {
            let message = match refusal {
                None => "You are chatting too fast, wait a moment.",
                Some(RequestRefusal::ChatIpRate) => {
                    "Too many chat messages from your address, wait a moment."
                }
                Some(_) => "The spectators of this table are chatting too fast, wait a moment.",
            };
            if let Some(refusal) = refusal {
                self.counters.requests_refused.bump(refusal);
            }
            let wait_ms = wait_us.div_ceil(US_PER_MS).max(1);
            self.send_error(conn, ErrorCode::RateLimited, message, Some(wait_ms), out);
            return false;
        }
        if spectator
            && let Some(shared) = self
                .audiences
                .get_mut(&lobby)
                .and_then(|a| a.spectator_chat.as_mut())
        {
            shared.try_take(now);
        }
        if let Some(ip) = ip {
            self.chat_ip_rate.try_take(&ip, now);
        }
        if let Some(mine) = self
            .sessions
            .get_mut(session)
            .and_then(|s| s.chat_bucket.as_mut())
        {
            mine.try_take(now);
        }
        true
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
        let lobby = self.lobby_of(session)?;
        let name = self
            .lobbies
            .get(lobby)
            .and_then(|l| {
                let seat = l.seat_of(session)?;
                l.seats().get(usize::from(seat)).map(|x| x.name.clone())
            })
            .unwrap_or_else(|| s.name.clone());
        Ok((lobby, s.player_id.clone(), name))
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
                        delivery: Delivery::Newest,
                    });
                }
            }
        }
    }

    /// Checks that every spectator's session watches its lobby and is connected, that
    /// every watching session is listed, that audiences exist only for lobbies that
    /// exist and stay under `MAX_SPECTATORS`, and that removed players are remembered
    /// only for lobbies that exist, at most `REMOVED_PLAYERS_MAX` each (for tests and
    /// the simulator).
    pub fn check_audiences(&self) -> Result<(), String> {
        for lobby in self.spectators_shown.keys() {
            if self.lobbies.get(*lobby).is_none() {
                return Err(format!("spectators shown of deleted lobby {lobby}"));
            }
        }
        for (lobby, removed) in &self.removed {
            if self.lobbies.get(*lobby).is_none() {
                return Err(format!("removed players of deleted lobby {lobby}"));
            }
            if removed.len() > self.config.removed_players_max {
                return Err(format!("lobby {lobby}: more than REMOVED_PLAYERS_MAX"));
            }
        }
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
