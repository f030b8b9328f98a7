//! Public tables and quick play (PROTOCOL.md 7.2): `list_tables` from the lobby
//! manager's index of public tables, and the quick-play pool (`core/src/machine/matchmaker.rs`)
//! driven like the other sub-machines: tickets in on `quick_play`, out on
//! `cancel_quick_play`, on leaving or going to another lobby, on the connection
//! closing or being replaced; its wake-up in the timer set; the tables it forms
//! created here with their players seated and their games started.

use crate::machine::lobby::{LobbyError, clean_name};
use crate::machine::matchmaker::{Group, QueueError, RATING_DEFAULT, SEATS_DEFAULT};
use crate::vocabulary::game::AiLevel;
use crate::vocabulary::game::types::{PLAYERS_MAX, PLAYERS_MIN};
use crate::vocabulary::ids::{ConnId, LobbyId, SessionId};
use crate::vocabulary::io::{Delivery, Note, Output};
use crate::vocabulary::pool::PoolChange;
use crate::vocabulary::stats::{QuickPlayRefusal, RequestRefusal};
use crate::vocabulary::time::{Time, US_PER_MS};
use crate::vocabulary::wire::{self, ErrorCode, ServerMessage, TableView};

use super::{Server, TimerKey};

const NOT_ACCEPTING: &str =
    "The server is not starting new games right now. Try again in a moment.";

const POOL_FULL: &str = "Too many players are waiting for a table. Try again in a moment.";

impl Server {
    /// `list_tables`: the public tables, open ones first, within `LIST_TABLES_RATE`.
    pub(super) fn list_tables(
        &mut self,
        now: Time,
        conn: ConnId,
        running: bool,
        out: &mut Vec<Output>,
    ) {
        if let Some(ip) = self.conn_ip(conn)
            && !self.list_tables_rate.try_take(&ip, now)
        {
            let wait_ms = self
                .list_tables_rate
                .wait_us(&ip, now)
                .div_ceil(1000)
                .max(1);
            self.counters
                .requests_refused
                .bump(RequestRefusal::ListTablesRate);
            self.send_error(
                conn,
                ErrorCode::RateLimited,
                "Too many table lists from your address, wait a moment.",
                Some(wait_ms),
                out,
            );
            return;
        }
        let tables: Vec<TableView> = self
            .lobbies
            .tables(running)
            .map(|l| TableView {
                code: l.code().to_owned(),
                host: l
                    .seat_of_player(l.host())
                    .and_then(|s| l.seats().get(usize::from(s)))
                    .map(|s| s.name.clone())
                    .unwrap_or_default(),
                seats: u8::try_from(l.seats().len()).unwrap_or(PLAYERS_MAX),
                max_seats: PLAYERS_MAX,
                options: l.options(),
                status: l.status(),
                // Ratings come with profiles: until then no table is rated.
                rated: false,
                rating: None,
            })
            .collect();
        self.counters.tables_listed += 1;
        let text = wire::encode(&ServerMessage::Tables { tables });
        out.push(Output::Send {
            conn,
            text,
            delivery: Delivery::Every,
        });
    }

    /// The rating the pool groups `session` by: the default for every player until
    /// profiles give one.
    fn quick_play_rating(&self, _session: SessionId) -> f64 {
        RATING_DEFAULT
    }

    /// `quick_play`: a ticket in the pool (replacing the session's own), `queued`, and
    /// the table it completes seated at once.
    pub(super) fn quick_play(
        &mut self,
        now: Time,
        conn: ConnId,
        session: SessionId,
        name: &str,
        seats: Option<u8>,
        out: &mut Vec<Output>,
    ) -> Result<(), LobbyError> {
        let name = clean_name(name)?;
        let seats = seats.unwrap_or(SEATS_DEFAULT);
        if !(PLAYERS_MIN..=PLAYERS_MAX).contains(&seats) {
            return Err(LobbyError::Invalid("seats must be 3 to 6."));
        }
        if self.quick_play_refused(conn, session, out) {
            return Ok(());
        }
        self.leave_for_quick_play(now, session, name, out);
        self.enqueue_quick_play(now, conn, session, seats, out)
    }

    /// Whether a `quick_play` is refused (and `busy` sent): while not accepting games
    /// (the session's ticket dropped too), past `MAX_GAMES_PER_IP`, or with the pool
    /// full and no ticket of the session's to replace.
    fn quick_play_refused(
        &mut self,
        conn: ConnId,
        session: SessionId,
        out: &mut Vec<Output>,
    ) -> bool {
        if !self.accepting_games() {
            // No ticket is kept while not accepting games, not even an older one.
            self.drop_ticket(session);
            self.refuse_quick_play(conn, QuickPlayRefusal::NotAccepting, NOT_ACCEPTING, out);
            return true;
        }
        let ip = self.conn_ip(conn);
        if let Some(ip) = ip
            && self.lobbies.share_of(&ip).games >= self.config.games_per_ip_max
        {
            self.refuse_quick_play(
                conn,
                QuickPlayRefusal::GamesPerIp,
                "Too many games from your address right now.",
                out,
            );
            return true;
        }
        let queued = self.matchmaker.ticket(session).is_some();
        if !queued && self.matchmaker.len() >= self.matchmaker.config().tickets_max {
            self.refuse_quick_play(conn, QuickPlayRefusal::PoolFull, POOL_FULL, out);
            return true;
        }
        false
    }

    /// Waiting for a table is being nowhere else: the current lobby is left (a running
    /// game's seat goes to the AI), watching stops, and the session takes `name`.
    fn leave_for_quick_play(
        &mut self,
        now: Time,
        session: SessionId,
        name: String,
        out: &mut Vec<Output>,
    ) {
        self.stop_watching(now, session, out);
        let seated = self.sessions.get(session).and_then(|s| s.lobby).is_some();
        self.leave_lobby(now, session, out);
        if seated {
            self.send_state(now, session, out);
        }
        if let Some(s) = self.sessions.get_mut(session) {
            s.name = name;
        }
    }

    /// The session's ticket for a table of `seats` put in the pool (or held for the
    /// shards' shared pool), `queued` sent, and the groups it completes seated.
    fn enqueue_quick_play(
        &mut self,
        now: Time,
        conn: ConnId,
        session: SessionId,
        seats: u8,
        out: &mut Vec<Output>,
    ) -> Result<(), LobbyError> {
        let rating = self.quick_play_rating(session);
        let mut groups = Vec::new();
        let queued = if self.shared.is_some() {
            self.hold_shared_ticket(now, session, seats, rating)
        } else {
            self.matchmaker
                .enqueue(now, session, seats, rating, &mut groups)
        };
        match queued {
            Ok(since) => {
                self.counters.quick_play_queued += 1;
                let text = wire::encode(&ServerMessage::Queued {
                    since_ms: since.as_micros() / US_PER_MS,
                });
                out.push(Output::Send {
                    conn,
                    text,
                    delivery: Delivery::Every,
                });
            }
            Err(QueueError::BadSeats) => return Err(LobbyError::Invalid("seats must be 3 to 6.")),
            Err(QueueError::Full) => {
                self.refuse_quick_play(conn, QuickPlayRefusal::PoolFull, POOL_FULL, out);
                return Ok(());
            }
        }
        for group in groups {
            self.seat_group(now, group, 0, out);
        }
        Ok(())
    }

    /// `busy` for a `quick_play`, counted by `reason`.
    fn refuse_quick_play(
        &mut self,
        conn: ConnId,
        reason: QuickPlayRefusal,
        message: &str,
        out: &mut Vec<Output>,
    ) {
        self.counters.quick_play_refused.bump(reason);
        self.send_error(conn, ErrorCode::Busy, message, None, out);
    }

    /// Takes the session's ticket out of the pool, if it holds one (cancelled, left,
    /// gone elsewhere, disconnected).
    pub(super) fn drop_ticket(&mut self, session: SessionId) {
        if self.matchmaker.cancel(session).is_some() {
            self.counters.quick_play_cancelled += 1;
            self.pool_changed(PoolChange::Drop { session });
        }
    }

    /// The matchmaker's wake-up is due: the groups it forms are seated.
    pub(super) fn quick_play_due(&mut self, now: Time, out: &mut Vec<Output>) {
        let mut groups = Vec::new();
        self.matchmaker.poll(now, &mut groups);
        for group in groups {
            self.seat_group(now, group, 0, out);
        }
    }

    /// Puts the matchmaker's next wake-up in the timer set.
    pub(super) fn sync_quick_play_timer(&mut self) {
        // With the shards' shared pool, groups are formed there, never here.
        let wake = self
            .matchmaker
            .next_wake()
            .filter(|_| self.shared.is_none());
        match wake {
            Some(at) if self.timers.at(&TimerKey::QuickPlay) != Some(at) => {
                self.timers.set(TimerKey::QuickPlay, at);
            }
            Some(_) => {}
            None => self.timers.cancel(&TimerKey::QuickPlay),
        }
    }

    /// Creates the group's lobby with its players seated (the oldest ticket hosts),
    /// fills the free seats with `normal` AI players, makes it public and starts its
    /// game; each player receives the lobby's `state`. With `reserved` seats kept for
    /// players of other shards, the lobby waits for them instead (`server/shared.rs`).
    /// When games are no longer accepted, its players are told `busy` instead and hold
    /// no ticket. Returns the lobby, if made.
    pub(super) fn seat_group(
        &mut self,
        now: Time,
        group: Group<SessionId>,
        reserved: u8,
        out: &mut Vec<Output>,
    ) -> Option<LobbyId> {
        let players = self.group_players(&group);
        let host = players.first()?.session;
        let lobby = self.open_group_lobby(&players, out)?;
        self.lobbies.set_quick_play(lobby);
        self.seat_group_players(lobby, &players);
        let ai = self.fill_group_with_ai(lobby, host, group.ai_seats().saturating_sub(reserved));
        self.count_quick_play_group(group.seats, ai);
        out.push(Output::Note(Note::QuickPlaySeated {
            lobby,
            humans: u8::try_from(players.len()).unwrap_or(PLAYERS_MAX),
            ai,
            waited_us: group
                .players
                .iter()
                .map(|t| now.since_us(t.since))
                .collect(),
        }));
        if reserved > 0 {
            self.broadcast(now, lobby, &[], out);
            return Some(lobby);
        }
        self.lobbies.set_public(lobby, true);
        if self.begin_game(now, lobby, host, out).is_err() {
            // Cannot happen with 3 to 6 seats; the players still see their lobby.
            self.broadcast(now, lobby, &[], out);
        }
        Some(lobby)
    }

    /// The group's players still known and connected, oldest ticket first.
    fn group_players(&self, group: &Group<SessionId>) -> Vec<GroupPlayer> {
        group
            .players
            .iter()
            .filter_map(|t| {
                let s = self.sessions.get(t.key)?;
                Some(GroupPlayer {
                    session: t.key,
                    conn: s.conn?,
                    player_id: s.player_id.clone(),
                    name: s.name.clone(),
                })
            })
            .collect()
    }

    /// A new lobby hosted by the first of `players`, or `busy` to each of them (and no
    /// lobby) while games are not admitted or no lobby can be made.
    fn open_group_lobby(
        &mut self,
        players: &[GroupPlayer],
        out: &mut Vec<Output>,
    ) -> Option<LobbyId> {
        let host = players.first()?;
        let room = self.lobbies.has_room_for_new();
        let owner = self.conn_ip(host.conn);
        let (true, true, Some(owner)) = (self.games_admitted(), room, owner) else {
            for p in players {
                self.counters
                    .quick_play_refused
                    .bump(QuickPlayRefusal::GroupRefused);
                self.send_error(p.conn, ErrorCode::Busy, NOT_ACCEPTING, None, out);
            }
            return None;
        };
        if self.lobbies.is_full() {
            self.evict_idle_lobby(out);
        }
        let Ok(lobby) = self
            .lobbies
            .create(host.session, &host.player_id, &host.name, owner)
        else {
            for p in players {
                self.send_error(p.conn, ErrorCode::Busy, NOT_ACCEPTING, None, out);
            }
            return None;
        };
        self.counters.lobbies_created += 1;
        Some(lobby)
    }

    /// The host (the first of `players`, already seated by the lobby's creation) and
    /// the others joined to `lobby`, each session pointing at it.
    fn seat_group_players(&mut self, lobby: LobbyId, players: &[GroupPlayer]) {
        let Some(host) = players.first() else {
            return;
        };
        if let Some(s) = self.sessions.get_mut(host.session) {
            s.lobby = Some(lobby);
        }
        for p in players.iter().skip(1) {
            if self
                .lobbies
                .join(lobby, p.session, &p.player_id, &p.name, &[])
                .is_ok()
                && let Some(s) = self.sessions.get_mut(p.session)
            {
                s.lobby = Some(lobby);
            }
        }
    }

    /// Adds `ai` `normal` AI players to `lobby` after its humans, as `host`; returns
    /// `ai`.
    fn fill_group_with_ai(&mut self, lobby: LobbyId, host: SessionId, ai: u8) -> u8 {
        let humans = self.lobbies.get(lobby).map_or(0, |l| l.seats().len());
        for _ in humans..humans + usize::from(ai) {
            let _ = self.lobbies.add_ai(lobby, host, AiLevel::Normal, &[]);
        }
        ai
    }

    /// Counts a table of `seats` formed with `ai` AI seats.
    fn count_quick_play_group(&mut self, seats: u8, ai: u8) {
        let size = usize::from(seats.saturating_sub(PLAYERS_MIN));
        if let Some(n) = self
            .counters
            .quick_play_groups
            .get_mut(size)
            .and_then(|row| row.get_mut(usize::from(ai)))
        {
            *n += 1;
        }
    }
}

/// One player of a group the pool formed, as its table is made: still known and
/// connected.
struct GroupPlayer {
    session: SessionId,
    conn: ConnId,
    player_id: String,
    name: String,
}

impl Server {
    /// Checks the quick-play pool and the index of public tables (for tests): the
    /// pool's indexes, every ticket of a session that is connected and seated nowhere,
    /// every public lobby indexed where its state says.
    pub fn check_quick_play(&self) -> Result<(), String> {
        self.matchmaker.check()?;
        self.lobbies.check_tables()?;
        for t in self.matchmaker.tickets() {
            let Some(s) = self.sessions.get(t.key) else {
                return Err(format!("ticket of a forgotten session {:?}", t.key));
            };
            if s.conn.is_none() {
                return Err(format!("ticket of a disconnected session {:?}", t.key));
            }
            if s.lobby.is_some() {
                return Err(format!("ticket of a seated session {:?}", t.key));
            }
        }
        Ok(())
    }
}
