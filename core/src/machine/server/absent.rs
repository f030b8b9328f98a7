//! What players who are gone may hold, and for how long (ARCHITECTURE.md, "What the
//! absent hold"):
//!
//! - a session without a connection: kept `SESSION_TTL` while seated, forgotten at once
//!   otherwise; at `MAX_SESSIONS` one is evicted for a new player, found through an
//!   index: first those not seated in a running game that someone plays (dormant
//!   games' seats count as free), then those seated in a running game whose humans are
//!   all disconnected; within a class, the one disconnected longest. A session whose
//!   game still has a connected human is never evicted;
//! - a lobby without a running game whose humans are all disconnected: deleted with
//!   their sessions after `LOBBY_IDLE_TTL`, or sooner at `MAX_LOBBIES` when a new
//!   lobby needs the room (the one idle longest goes);
//! - a running game whose humans are all disconnected: dormant after
//!   `ABANDONED_GAME_TTL` (no moves, no `MAX_ACTIVE_GAMES` slot) until one comes back;
//!   a game the quick-play matchmaker seated goes dormant at once. A dormant game
//!   counts as idle for `MAX_LOBBIES`: a new lobby may take its place (deleted with
//!   its sessions, unfinished and unrated).

use crate::machine::session::Evict;
use crate::vocabulary::ids::ConnId;
use crate::vocabulary::ids::{LobbyId, SessionId};
use crate::vocabulary::io::{Note, Output};
use crate::vocabulary::time::Time;
use crate::vocabulary::wire::LobbyStatus;

use super::{Server, TimerKey};

impl Server {
    /// The session's connection closed: seated sessions wait `SESSION_TTL` for a
    /// reconnect; others are forgotten at once (they hold nothing worth keeping).
    pub(super) fn session_disconnected(
        &mut self,
        now: Time,
        session: SessionId,
        conn: ConnId,
        out: &mut Vec<Output>,
    ) {
        let Some(s) = self.sessions.get_mut(session) else {
            return;
        };
        if s.conn != Some(conn) {
            return;
        }
        s.conn = None;
        s.disconnected_at = Some(now);
        match s.lobby {
            Some(lobby) => {
                self.timers.set(
                    TimerKey::Session(session),
                    now.plus_us(self.config.session_ttl_us),
                );
                self.sync_evictable(session);
                self.sync_away(now, lobby, out);
                self.wake_for_away_turns(now, lobby);
                self.broadcast(now, lobby, &[], out);
            }
            None => {
                self.sessions.remove(session);
            }
        }
    }

    /// At a running quick-play table, the lobby's timer no later than when the player
    /// who just disconnected counts as away (`QUICK_PLAY_AWAY`), so that their turns
    /// are then played for them (`Server::timing`); an earlier wake-up finds nothing
    /// due and sets the next.
    fn wake_for_away_turns(&mut self, now: Time, lobby: LobbyId) {
        let running = self.lobbies.get(lobby).is_some_and(|l| {
            l.is_quick_play() && l.status() == LobbyStatus::Playing && !l.is_dormant()
        });
        if !running {
            return;
        }
        let away = now.plus_us(self.config.quick_play_away_us);
        if self
            .timers
            .at(&TimerKey::Lobby(lobby))
            .is_none_or(|at| at > away)
        {
            self.timers.set(TimerKey::Lobby(lobby), away);
        }
    }

    /// Whether, and how readily, a session may be evicted at `MAX_SESSIONS`. Only a
    /// disconnected one may: first if it holds no seat in a running game that someone
    /// plays (a dormant game's players have all been gone for `ABANDONED_GAME_TTL`),
    /// then if every human of its running game is disconnected too. At capacity a
    /// present player comes first: the evicted seat turns AI, and a game left with no
    /// human is deleted, which frees its `MAX_ACTIVE_GAMES` slot as well.
    fn evictable(&self, session: SessionId) -> Option<Evict> {
        let s = self.sessions.get(session)?;
        if s.conn.is_some() {
            return None;
        }
        let Some(l) = s.lobby.and_then(|l| self.lobbies.get(l)) else {
            return Some(Evict::Free);
        };
        if l.status() != LobbyStatus::Playing || l.is_dormant() {
            Some(Evict::Free)
        } else if l.away_since().is_some() {
            Some(Evict::AwayGame)
        } else {
            None
        }
    }

    /// Brings the session's entry in the evictable index in line with [`Self::evictable`].
    pub(super) fn sync_evictable(&mut self, session: SessionId) {
        let class = self.evictable(session);
        self.sessions.set_evictable(session, class);
    }

    /// The same for every human of a lobby whose status changed.
    pub(super) fn sync_lobby_evictable(&mut self, lobby: LobbyId) {
        let humans: Vec<SessionId> = self
            .lobbies
            .get(lobby)
            .map(|l| l.humans().collect())
            .unwrap_or_default();
        for session in humans {
            self.sync_evictable(session);
        }
    }

    /// Forgets the evictable session disconnected longest (its seat is given up as if
    /// it had left). Returns whether one went.
    pub(super) fn evict_idle_session(&mut self, now: Time, out: &mut Vec<Output>) -> bool {
        let Some(id) = self.sessions.first_evictable() else {
            return false;
        };
        debug_assert!(
            self.evictable(id).is_some(),
            "session {id} indexed but not evictable"
        );
        self.timers.cancel(&TimerKey::Session(id));
        self.leave_lobby(now, id, out);
        self.sessions.remove(id);
        self.counters.sessions_evicted += 1;
        out.push(Output::Note(Note::SessionEvicted));
        true
    }

    /// Forgets a disconnected session that holds nothing (no lobby).
    pub(super) fn forget_session(&mut self, session: SessionId) {
        self.drop_ticket(session);
        self.timers.cancel(&TimerKey::Session(session));
        self.sessions.remove(session);
    }

    pub(super) fn expire_session(&mut self, now: Time, session: SessionId, out: &mut Vec<Output>) {
        let Some(s) = self.sessions.get(session) else {
            return;
        };
        let due = s
            .disconnected_at
            .is_some_and(|t| t.plus_us(self.config.session_ttl_us) <= now);
        if s.conn.is_some() || !due {
            return;
        }
        // The note first: it marks where the expiry's outputs begin (the views of the
        // seat given up), so that a shell or a checker can tell them from the answer to
        // the input whose `handle` call the deadline came due in.
        out.push(Output::Note(Note::SessionExpired));
        self.counters.sessions_expired += 1;
        self.leave_lobby(now, session, out);
        self.sessions.remove(session);
    }

    /// Whether every human seat of the lobby belongs to a disconnected session.
    fn all_humans_away(&self, lobby: LobbyId) -> bool {
        self.lobbies.get(lobby).is_some_and(|l| {
            l.humans()
                .all(|id| self.sessions.get(id).is_none_or(|s| s.conn.is_none()))
        })
    }

    /// How long a lobby in `status` may stay with all its humans away: a game the
    /// quick-play matchmaker seated sleeps at once (nobody chose that table, and a
    /// player who queues and walks away must not hold a game slot or the AI's time).
    fn away_ttl_us(&self, status: LobbyStatus, quick_play: bool) -> u64 {
        match status {
            LobbyStatus::Playing if quick_play => 0,
            LobbyStatus::Playing => self.config.abandoned_game_ttl_us,
            LobbyStatus::Waiting | LobbyStatus::Finished => self.config.lobby_idle_ttl_us,
        }
    }

    /// Called whenever a human of the lobby connects, disconnects or leaves: starts
    /// the away clock when the last one is gone, stops it (and wakes a dormant game)
    /// when one is back.
    pub(super) fn sync_away(&mut self, now: Time, lobby: LobbyId, out: &mut Vec<Output>) {
        let away = self.all_humans_away(lobby);
        let Some(l) = self.lobbies.get(lobby) else {
            return;
        };
        let (was_away, status, dormant) = (l.away_since(), l.status(), l.is_dormant());
        let quick_play = l.is_quick_play();
        if !away {
            self.timers.cancel(&TimerKey::Away(lobby));
            if was_away.is_some() {
                self.lobbies.set_away(lobby, None);
                self.sync_lobby_evictable(lobby);
            }
            if dormant {
                self.lobbies.set_dormant(lobby, false);
                self.sync_lobby_evictable(lobby);
                self.counters.games_woken += 1;
                out.push(Output::Note(Note::GameWoken { lobby }));
                // Driven once this input's own replies are out (turns start afresh).
                self.timers.set(TimerKey::Lobby(lobby), now);
            }
            return;
        }
        let since = match was_away {
            Some(since) => since,
            None => {
                self.lobbies.set_away(lobby, Some(now));
                // Its sessions may now give way at MAX_SESSIONS.
                self.sync_lobby_evictable(lobby);
                now
            }
        };
        if dormant {
            // Asleep until a human returns or their sessions expire.
            self.timers.cancel(&TimerKey::Away(lobby));
            return;
        }
        let due = since.plus_us(self.away_ttl_us(status, quick_play));
        self.timers.set(TimerKey::Away(lobby), due);
    }

    /// The away clock of a lobby ran out: a running game goes dormant, anything else
    /// is deleted with its sessions. Rechecked here, since the lobby may have changed.
    pub(super) fn on_away_due(&mut self, now: Time, lobby: LobbyId, out: &mut Vec<Output>) {
        let Some(l) = self.lobbies.get(lobby) else {
            return;
        };
        let (since, status, dormant) = (l.away_since(), l.status(), l.is_dormant());
        let quick_play = l.is_quick_play();
        let Some(since) = since.filter(|_| !dormant && self.all_humans_away(lobby)) else {
            self.sync_away(now, lobby, out);
            return;
        };
        // A game that finished while everyone was away gets LOBBY_IDLE_TTL in all.
        let due = since.plus_us(self.away_ttl_us(status, quick_play));
        if now < due {
            self.timers.set(TimerKey::Away(lobby), due);
            return;
        }
        match status {
            LobbyStatus::Playing => self.make_dormant(lobby, out),
            LobbyStatus::Waiting | LobbyStatus::Finished => {
                self.counters.lobbies_idle_deleted += 1;
                self.delete_idle(lobby, out);
            }
        }
    }

    /// Puts a running game to sleep: no turns, no AI requests, no timer, no slot of
    /// `MAX_ACTIVE_GAMES`. Late AI answers find no turn waiting and are dropped.
    fn make_dormant(&mut self, lobby: LobbyId, out: &mut Vec<Output>) {
        self.lobbies.set_dormant(lobby, true);
        self.sync_lobby_evictable(lobby);
        if let Some(l) = self.lobbies.get_mut(lobby) {
            l.clear_turns();
        }
        self.timers.cancel(&TimerKey::Lobby(lobby));
        self.counters.games_dormant += 1;
        out.push(Output::Note(Note::GameDormant { lobby }));
    }

    /// At `MAX_LOBBIES`, deletes the lobby idle longest (no running game, every human
    /// disconnected) to make room for a new one. Returns whether one went.
    pub(super) fn evict_idle_lobby(&mut self, out: &mut Vec<Output>) -> bool {
        let Some(lobby) = self.lobbies.first_idle() else {
            return false;
        };
        self.timers.cancel(&TimerKey::Away(lobby));
        self.delete_idle(lobby, out);
        self.counters.lobbies_evicted += 1;
        true
    }

    /// Deletes a lobby nobody is connected to, and its humans' sessions.
    fn delete_idle(&mut self, lobby: LobbyId, out: &mut Vec<Output>) {
        let Some(l) = self.lobbies.delete(lobby) else {
            return;
        };
        self.timers.cancel(&TimerKey::Lobby(lobby));
        let mut forgotten = 0u32;
        for session in l.humans() {
            if self.sessions.get(session).is_some_and(|s| s.conn.is_none()) {
                self.forget_session(session);
                forgotten += 1;
            }
        }
        out.push(Output::Note(Note::LobbyIdle {
            lobby,
            sessions: forgotten,
        }));
        out.push(Output::Note(Note::LobbyDeleted { lobby }));
    }

    /// Checks the bookkeeping of this module against a recount from scratch: the
    /// evictable index, the away clocks, the dormant and per-address counts. For tests
    /// and the simulator; O(sessions + lobbies).
    pub fn check_absent(&self) -> Result<(), String> {
        for id in self.sessions.ids() {
            if self.sessions.evict_class(id) != self.evictable(id) {
                return Err(format!("session {id}: evictable index is stale"));
            }
        }
        let mut playing = 0;
        let mut dormant = 0;
        let mut shares = std::collections::BTreeMap::new();
        for id in self.lobbies.ids() {
            let Some(l) = self.lobbies.get(id) else {
                continue;
            };
            let running = l.status() == LobbyStatus::Playing;
            playing += usize::from(running && !l.is_dormant());
            dormant += usize::from(running && l.is_dormant());
            let share: &mut (usize, usize) = shares.entry(l.owner()).or_default();
            share.0 += 1;
            share.1 += usize::from(running);
            let away = self.all_humans_away(id);
            if away != l.away_since().is_some() {
                return Err(format!("lobby {id}: away_since {:?}", l.away_since()));
            }
            if l.is_dormant() && (!away || !running) {
                return Err(format!("lobby {id}: dormant with a human present"));
            }
            let clock = self.timers.at(&TimerKey::Away(id)).is_some();
            if clock != (away && !l.is_dormant()) {
                return Err(format!("lobby {id}: away clock set {clock}"));
            }
        }
        if (playing, dormant) != (self.lobbies.active_games(), self.lobbies.dormant_games()) {
            return Err(format!("games: recount {playing} + {dormant} dormant"));
        }
        for (ip, (lobbies, games)) in &shares {
            let s = self.lobbies.share_of(ip);
            if (s.lobbies, s.games) != (*lobbies, *games) {
                return Err(format!("{ip}: share {s:?}, recount {lobbies} {games}"));
            }
        }
        if shares.len() != self.lobbies.ips_charged() {
            return Err("per-address table has entries without lobbies".into());
        }
        self.lobbies.check_idle()
    }
}
