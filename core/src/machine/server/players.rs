//! Player messages: `hello` and sessions, lobby membership and host actions, and the
//! admission rules for new games.

use crate::machine::lobby::{LobbyError, clean_name};
use crate::vocabulary::ids::ConnId;
use crate::vocabulary::ids::{LobbyId, SessionId};
use crate::vocabulary::io::{Delivery, Note, Output, RefuseReason};
use crate::vocabulary::limiter::IpKey;
use crate::vocabulary::rng;
use crate::vocabulary::shard::{elsewhere, token_owner};
use crate::vocabulary::stats::RequestRefusal;
use crate::vocabulary::time::Time;
use crate::vocabulary::wire::{ClientMessage, CloseCode, ErrorCode, ProfileView, ServerMessage};

use super::{Server, TimerKey};

/// Hex characters of a game's public id (80 bits).
pub const GAME_ID_CHARS: usize = 20;

const BUSY_MESSAGE: &str = "The server is busy. Try again in a moment.";

impl Server {
    pub(super) fn on_message(
        &mut self,
        now: Time,
        conn: ConnId,
        message: ClientMessage,
        out: &mut Vec<Output>,
    ) {
        if self.conns.get(&conn).is_some_and(|c| c.waiting.is_some()) {
            let admitted = match &message {
                ClientMessage::Hello { token, .. } => {
                    self.admit_waiting(conn, token.as_deref(), out)
                }
                _ => {
                    self.refuse_waiting(conn, None, out);
                    false
                }
            };
            if !admitted {
                return;
            }
        }
        let session = self.conns.get(&conn).and_then(|c| c.session);
        let Some(session) = session else {
            if let ClientMessage::Hello {
                token,
                profile_key,
                deltas,
            } = message
            {
                self.set_deltas(conn, deltas);
                let key = profile_key.as_ref().map(|k| k.0.as_str());
                self.hello(now, conn, token.as_deref(), key, out);
            } else {
                self.send_error(
                    conn,
                    ErrorCode::HelloRequired,
                    super::HELLO_FIRST,
                    None,
                    out,
                );
            }
            return;
        };
        if !self.spectator_may_send(session, &message) {
            let e = Server::spectator_refused();
            self.send_error(conn, e.code(), &e.message(), None, out);
            return;
        }
        if matches!(
            message,
            ClientMessage::CreateLobby { .. }
                | ClientMessage::JoinLobby { .. }
                | ClientMessage::Spectate { .. }
                | ClientMessage::Resync
        ) {
            // The full `state` that a join and a resync send (PROTOCOL.md 7.5).
            self.send_full_next(conn);
        }
        let result = match message {
            ClientMessage::Hello { .. } => Err(LobbyError::NotAllowed("Already said hello.")),
            ClientMessage::Resync => {
                self.send_state(now, session, out);
                Ok(())
            }
            ClientMessage::Spectate { code, name } => {
                self.drop_ticket(session);
                self.spectate(now, conn, session, &code, &name, out)
            }
            ClientMessage::Chat { text } => self.chat(now, conn, session, &text, out),
            ClientMessage::CreateProfile { name } => {
                self.create_profile(now, conn, session, &name, out)
            }
            ClientMessage::DeleteProfile => self.delete_profile(now, conn, session, out),
            ClientMessage::CreateLobby { name, public } => {
                self.drop_ticket(session);
                self.create_lobby(now, conn, session, &name, public, out)
            }
            ClientMessage::JoinLobby { code, name } => {
                self.drop_ticket(session);
                self.join_lobby(now, conn, session, &code, &name, out)
            }
            ClientMessage::QuickPlay { name, seats } => {
                self.quick_play(now, conn, session, &name, seats, out)
            }
            ClientMessage::CancelQuickPlay => {
                self.drop_ticket(session);
                Ok(())
            }
            ClientMessage::ListTables { running } => {
                self.list_tables(now, conn, running, out);
                Ok(())
            }
            ClientMessage::LeaveLobby => {
                self.drop_ticket(session);
                self.stop_watching(now, session, out);
                self.leave_lobby(now, session, out);
                self.send_state(now, session, out);
                Ok(())
            }
            ClientMessage::AddAi { level } => {
                self.host_action(now, session, out, |s, lobby, host| {
                    let watching = s.spectator_names(lobby);
                    s.lobbies
                        .add_ai(lobby, host, level.unwrap_or_default(), &watching)
                })
            }
            ClientMessage::RemovePlayer { player_id } => {
                self.remove_player(now, session, &player_id, out)
            }
            ClientMessage::SetOptions {
                hidden_bids,
                bid_restriction,
                turn_seconds,
                public,
            } => self.host_action(now, session, out, |s, lobby, host| {
                let mut options = s
                    .lobbies
                    .get(lobby)
                    .map(|l| l.options())
                    .unwrap_or_default();
                if let Some(v) = hidden_bids {
                    options.hidden_bids = v;
                }
                if let Some(v) = bid_restriction {
                    options.bid_restriction = v;
                }
                if let Some(v) = turn_seconds {
                    options.turn_seconds = v;
                }
                s.lobbies.set_options(lobby, host, options)?;
                if let Some(v) = public {
                    s.lobbies.set_public(lobby, v);
                }
                Ok(())
            }),
            ClientMessage::StartGame => self.start_game(now, conn, session, out),
            ClientMessage::Action { action } => self.human_move(now, session, action, out),
            ClientMessage::ReturnToLobby => {
                self.host_action(now, session, out, |s, lobby, host| {
                    s.lobbies.return_to_lobby(lobby, host)
                })
            }
        };
        if let Err(e) = result {
            self.send_error(conn, e.code(), &e.message(), None, out);
        }
    }

    fn hello(
        &mut self,
        now: Time,
        conn: ConnId,
        token: Option<&str>,
        profile_key: Option<&str>,
        out: &mut Vec<Output>,
    ) {
        let known = token.and_then(|t| self.sessions.find_by_token(t));
        // Another shard's token: its session is there, so no new one is made here.
        let foreign = token.and_then(|t| elsewhere(self.config.shard, token_owner(t)));
        if let (None, Some(owner)) = (known, foreign) {
            self.send_wrong_shard(conn, owner, out);
            return;
        }
        let (session, token) = match known {
            Some(id) => {
                self.resume(now, id, conn, out);
                // Spectating belongs to a connection: a new one starts without it.
                self.stop_watching(now, id, out);
                // The registry keeps no token: the welcome repeats the one presented,
                // which it recognised (so it is exactly a token this server issued).
                (id, token.unwrap_or_default().to_owned())
            }
            None => match self.new_session(now, conn, out) {
                Some(created) => created,
                None => return,
            },
        };
        self.bind_session(conn, session);
        let profile = self.sign_in(now, conn, session, profile_key);
        self.seat_follows_sign_in(now, session, out);
        self.send_welcome(conn, session, token, profile, out);
        self.send_after_hello(now, conn, session, known.is_some(), out);
    }

    /// A new session for a `hello` without a known token, with its token; at
    /// `MAX_SESSIONS` an idle session may make room, else the connection is refused
    /// (`None`).
    fn new_session(
        &mut self,
        now: Time,
        conn: ConnId,
        out: &mut Vec<Output>,
    ) -> Option<(SessionId, String)> {
        let created = self.sessions.create().or_else(|full| {
            // At MAX_SESSIONS a player who left a lobby that is not playing makes
            // room (abandoned lobbies must not lock new players out for the TTL).
            if self.evict_idle_session(now, out) {
                self.sessions.create()
            } else {
                Err(full)
            }
        });
        match created {
            Ok(created) => {
                self.persist_session(created.id);
                Some((created.id, created.token))
            }
            Err(_) => {
                let ip = self.conns.get(&conn).map(|c| c.ip);
                if let Some(ip) = ip {
                    self.refuse_connection(conn, ip, RefuseReason::Sessions, out);
                }
                None
            }
        }
    }

    /// Ties `session` and `conn` to each other: the session connected, not evictable,
    /// and a guest until the hello's key signs it in.
    fn bind_session(&mut self, conn: ConnId, session: SessionId) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.session = Some(session);
        }
        if let Some(s) = self.sessions.get_mut(session) {
            s.conn = Some(conn);
            s.disconnected_at = None;
            self.sessions.set_evictable(session, None);
        }
        if let Some(s) = self.sessions.get_mut(session) {
            // Signed in by this hello's key only: none, and it is a guest.
            s.profile = None;
        }
    }

    /// The `welcome` of a hello: the session's player id, `token`, name, the shard and
    /// the `profile` signed in with.
    fn send_welcome(
        &mut self,
        conn: ConnId,
        session: SessionId,
        token: String,
        profile: Option<ProfileView>,
        out: &mut Vec<Output>,
    ) {
        if let Some(s) = self.sessions.get(session) {
            let welcome = crate::vocabulary::wire::encode(&ServerMessage::Welcome {
                player_id: s.player_id.clone(),
                token,
                name: s.name.clone(),
                shard: self.config.shard.map(|s| s.to_string()),
                profile,
            });
            out.push(Output::Send {
                conn,
                text: welcome,
                delivery: Delivery::Every,
            });
        }
    }

    /// What follows a `welcome`: the status, the session's `state` and its lobby's
    /// chat history, a game lost at a restore, and (for a `resumed` session) its lobby
    /// told that it is back.
    fn send_after_hello(
        &mut self,
        now: Time,
        conn: ConnId,
        session: SessionId,
        resumed: bool,
        out: &mut Vec<Output>,
    ) {
        self.send_status(conn, out);
        let lobby = self.sessions.get(session).and_then(|s| s.lobby);
        if let Some(lobby) = lobby {
            // A human of a dormant game is back: it runs again before the views go out.
            self.sync_away(now, lobby, out);
        }
        self.send_state(now, session, out);
        if let Some(lobby) = lobby {
            self.send_history(now, conn, lobby, out);
        }
        let lost = self
            .sessions
            .get_mut(session)
            .and_then(|s| s.lost_lobby.take());
        if let Some(code) = lost {
            let message = format!(
                "Your game in lobby {code} could not be restored after the server restarted. It is kept aside for the operator; please start a new one."
            );
            self.send_error(conn, ErrorCode::NotFound, &message, None, out);
        }
        if resumed && let Some(lobby) = lobby {
            self.broadcast_except(now, lobby, session, out);
        }
    }

    /// A known token on a new connection: the old connection (if any) is replaced.
    fn resume(&mut self, _now: Time, session: SessionId, conn: ConnId, out: &mut Vec<Output>) {
        self.timers.cancel(&TimerKey::Session(session));
        let old = self.sessions.get(session).and_then(|s| s.conn);
        if let Some(old) = old.filter(|&o| o != conn) {
            // The ticket belonged to the connection that is replaced.
            self.drop_ticket(session);
            if let Some(c) = self.conns.get_mut(&old) {
                c.session = None;
            }
            self.send_error(
                old,
                ErrorCode::SessionReplaced,
                "This game was opened in another window.",
                None,
                out,
            );
            self.close(old, CloseCode::SessionReplaced, out);
        }
    }

    /// Admission for new games: false (and `busy` sent) when not accepting.
    fn admit_new_game(&mut self, conn: ConnId, out: &mut Vec<Output>) -> bool {
        if self.games_admitted() {
            return true;
        }
        self.send_error(conn, ErrorCode::Busy, BUSY_MESSAGE, None, out);
        false
    }

    /// A `busy` for a per-address cap or `MAX_LOBBIES`, counted by `reason`.
    fn refuse_request(
        &mut self,
        conn: ConnId,
        reason: RequestRefusal,
        message: &str,
        out: &mut Vec<Output>,
    ) {
        self.counters.requests_refused.bump(reason);
        self.send_error(conn, ErrorCode::Busy, message, None, out);
    }

    fn create_lobby(
        &mut self,
        now: Time,
        conn: ConnId,
        session: SessionId,
        name: &str,
        public: bool,
        out: &mut Vec<Output>,
    ) -> Result<(), LobbyError> {
        let name = clean_name(name)?;
        if !self.admit_new_game(conn, out) {
            return Ok(());
        }
        let current = self.sessions.get(session).and_then(|s| s.lobby);
        if !self.lobbies.has_room(current, session) {
            // Refused before leaving the current lobby, so the refusal loses nothing.
            self.counters
                .requests_refused
                .bump(RequestRefusal::MaxLobbies);
            return Err(LobbyError::TooManyLobbies);
        }
        let Some(ip) = self.conns.get(&conn).map(|c| IpKey::new(c.ip)) else {
            return Ok(());
        };
        // Leaving a lobby of this address that would then be deleted frees its share.
        let freed = current
            .and_then(|id| self.lobbies.get(id))
            .is_some_and(|l| l.owner() == ip)
            && self.lobbies.is_sole_human(current, session);
        let owned = self.lobbies.share_of(&ip).lobbies - usize::from(freed);
        if owned >= self.config.lobbies_per_ip_max {
            self.refuse_request(
                conn,
                RequestRefusal::LobbiesPerIp,
                "Too many lobbies from your address right now.",
                out,
            );
            return Ok(());
        }
        if !self.lobby_rate.try_take(&ip, now) {
            let wait_ms = self.lobby_rate.wait_us(&ip, now).div_ceil(1000);
            self.send_error(
                conn,
                ErrorCode::RateLimited,
                "Too many new lobbies from your address, wait a moment.",
                Some(wait_ms),
                out,
            );
            return Ok(());
        }
        self.leave_lobby(now, session, out);
        if self.lobbies.is_full() {
            // has_room said an idle lobby may make room: the one idle longest goes.
            self.evict_idle_lobby(out);
        }
        let player_id = self.player_id(session);
        let lobby = self.lobbies.create(session, &player_id, &name, ip)?;
        self.lobbies.set_public(lobby, public);
        self.counters.lobbies_created += 1;
        if let Some(s) = self.sessions.get_mut(session) {
            s.lobby = Some(lobby);
            s.name = name;
        }
        let profile = self.sessions.get(session).and_then(|s| s.profile.clone());
        self.lobbies.set_seat_profile(lobby, 0, profile);
        self.broadcast(now, lobby, &[], out);
        Ok(())
    }

    fn join_lobby(
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
        // Check before leaving the current lobby, so a refused join loses nothing.
        let target = self
            .lobbies
            .get(lobby)
            .ok_or(LobbyError::NotFound("No lobby with that code."))?;
        if target.seat_of(session).is_none() {
            if self.kept_out(now, lobby, session, ip) {
                return Err(LobbyError::NotAllowed(
                    "The host removed you from this lobby.",
                ));
            }
            if target.status() != crate::vocabulary::wire::LobbyStatus::Waiting {
                return Err(LobbyError::NotAllowed("That game has already started."));
            }
            if target.seats().len() >= usize::from(crate::vocabulary::game::types::PLAYERS_MAX) {
                return Err(LobbyError::NotAllowed("That lobby is full."));
            }
            if !self.profile_may_sit(session, lobby) {
                return Err(LobbyError::NotAllowed(
                    "Your profile already has a seat at this table.",
                ));
            }
        }
        let current = self.sessions.get(session).and_then(|s| s.lobby);
        if current.is_some_and(|c| c != lobby) {
            self.leave_lobby(now, session, out);
        }
        let watching = self.spectator_names(lobby);
        let player_id = self.player_id(session);
        let (seat, new) = self
            .lobbies
            .join(lobby, session, &player_id, &name, &watching)?;
        if new {
            let profile = self.sessions.get(session).and_then(|s| s.profile.clone());
            self.lobbies.set_seat_profile(lobby, seat, profile);
        }
        if let Some(s) = self.sessions.get_mut(session) {
            s.lobby = Some(lobby);
            s.name = name;
        }
        // A human is present again: the lobby's away clock stops.
        self.sync_away(now, lobby, out);
        self.broadcast(now, lobby, &[], out);
        self.send_history(now, conn, lobby, out);
        if new {
            self.reserved_seat_taken(now, lobby, out);
        }
        Ok(())
    }

    /// Leaves the session's lobby, if any (no message to the session itself).
    pub(super) fn leave_lobby(&mut self, now: Time, session: SessionId, out: &mut Vec<Output>) {
        let Some(lobby) = self.sessions.get_mut(session).and_then(|s| s.lobby.take()) else {
            return;
        };
        self.sessions.set_evictable(session, None);
        if self.lobbies.leave(lobby, session) {
            self.timers.cancel(&TimerKey::Lobby(lobby));
            self.timers.cancel(&TimerKey::Away(lobby));
            out.push(Output::Note(Note::LobbyDeleted { lobby }));
        } else {
            self.sync_away(now, lobby, out);
            self.broadcast(now, lobby, &[], out);
            self.drive(now, lobby, out);
        }
    }

    fn remove_player(
        &mut self,
        now: Time,
        session: SessionId,
        player_id: &str,
        out: &mut Vec<Output>,
    ) -> Result<(), LobbyError> {
        let lobby = self.lobby_of(session)?;
        let removed = self.lobbies.remove_player(lobby, session, player_id)?;
        if let Some(removed) = removed {
            let conn = self.sessions.get_mut(removed).and_then(|s| {
                s.lobby = None;
                s.conn
            });
            // Kept out for a while, by player id and by the address it was at.
            let ip = conn.and_then(|c| self.conn_ip(c));
            self.keep_out(now, lobby, player_id.to_owned(), ip);
            if conn.is_none() {
                // Disconnected and seated nowhere now: it holds nothing worth keeping.
                self.forget_session(removed);
            }
            if let Some(conn) = conn {
                self.send_error(
                    conn,
                    ErrorCode::Removed,
                    "The host removed you from the lobby.",
                    None,
                    out,
                );
                self.send_state(now, removed, out);
            }
        }
        self.broadcast(now, lobby, &[], out);
        Ok(())
    }

    fn start_game(
        &mut self,
        now: Time,
        conn: ConnId,
        session: SessionId,
        out: &mut Vec<Output>,
    ) -> Result<(), LobbyError> {
        let lobby = self.lobby_of(session)?;
        self.lobbies.can_start(lobby, session)?;
        if !self.admit_new_game(conn, out) {
            return Ok(());
        }
        let owner = self.lobbies.get(lobby).map(|l| l.owner());
        if let Some(owner) = owner
            && self.lobbies.share_of(&owner).games >= self.config.games_per_ip_max
        {
            self.refuse_request(
                conn,
                RequestRefusal::GamesPerIp,
                "Too many games from your address right now.",
                out,
            );
            return Ok(());
        }
        self.begin_game(now, lobby, session, out)
    }

    /// Starts the lobby's game (its checks and admission done) and shows it.
    pub(super) fn begin_game(
        &mut self,
        now: Time,
        lobby: LobbyId,
        host: SessionId,
        out: &mut Vec<Output>,
    ) -> Result<(), LobbyError> {
        let seed = rand::Rng::next_u64(&mut self.game_seeds);
        let mut events = Vec::new();
        self.lobbies.start(lobby, host, seed, &mut events)?;
        // 80 random bits, apart from the seed's stream: an id tells nothing of the deal.
        let game_id = rng::hex_id(&mut self.game_ids, GAME_ID_CHARS);
        let started_ms = self.wall_ms(now);
        self.lobbies.set_game_id(lobby, game_id, started_ms);
        self.counters.games_started += 1;
        let players = self
            .lobbies
            .get(lobby)
            .map_or(0, |l| u8::try_from(l.seats().len()).unwrap_or(0));
        out.push(Output::Note(Note::GameStarted { lobby, players }));
        // Its disconnected humans now hold a seat in a running game.
        self.sync_lobby_evictable(lobby);
        self.sync_turns(now, lobby);
        self.broadcast(now, lobby, &events, out);
        self.drive(now, lobby, out);
        Ok(())
    }

    /// Runs a host-only lobby operation and broadcasts the result.
    fn host_action(
        &mut self,
        now: Time,
        session: SessionId,
        out: &mut Vec<Output>,
        op: impl FnOnce(&mut Server, LobbyId, SessionId) -> Result<(), LobbyError>,
    ) -> Result<(), LobbyError> {
        let lobby = self.lobby_of(session)?;
        op(self, lobby, session)?;
        self.broadcast(now, lobby, &[], out);
        Ok(())
    }

    /// The session's lobby, or `not_found` when it is in none.
    pub(super) fn lobby_of(&self, session: SessionId) -> Result<LobbyId, LobbyError> {
        self.sessions
            .get(session)
            .ok_or(LobbyError::NotFound("No session."))?
            .lobby
            .ok_or(LobbyError::NotFound("You are not in a lobby."))
    }

    pub(super) fn player_id(&self, session: SessionId) -> String {
        self.sessions
            .get(session)
            .map(|s| s.player_id.clone())
            .unwrap_or_default()
    }
}
