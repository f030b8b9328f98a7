//! Durable games: the records the server keeps for a store, and [`Server::restore`],
//! which rebuilds every session, lobby and game from them.
//!
//! The rule the shell keeps is *commit before acknowledge*: after each pass of its
//! loop it takes the pass's records ([`Server::take_records`]), commits them, and only
//! then sends the pass's frames. Records are made where players see things: every
//! `state` the server sends first records its lobby if the lobby's record changed, and
//! every move is recorded as it is applied. So nothing a player has seen can be lost.

use std::collections::{BTreeMap, BTreeSet};

use crate::machine::lobby::Occupant;
use crate::machine::profiles::ProfileRecord;
use crate::machine::records::{LobbyRecord, Record, SeatRecord};
use crate::machine::session::digest_from_hex;
use crate::vocabulary::config::Config;
use crate::vocabulary::figure::Figure;
use crate::vocabulary::game::{Action, Seat};
use crate::vocabulary::ids::{LobbyId, SessionId};
use crate::vocabulary::io::MoveSource;
use crate::vocabulary::rng::Seed;
use crate::vocabulary::time::Time;
use crate::vocabulary::wire::LobbyStatus;

use super::{Server, TimerKey};

/// Records that cannot be restored: the store's fault (or an operator's edit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreError(pub String);

impl std::fmt::Display for RestoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot restore: {}", self.0)
    }
}

/// A lobby whose records could not be replayed at a restore: set aside (its records
/// stay in the store, nothing of it is served) so that every other game is restored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetAside {
    pub lobby: LobbyId,
    pub code: String,
    /// Why it could not be restored.
    pub reason: String,
    /// Its human players, told at their next `hello`.
    pub sessions: Vec<SessionId>,
}

impl Server {
    /// The lobbies the restore set aside, with why (empty unless a game's records
    /// could not be replayed).
    pub fn set_aside(&self) -> &[SetAside] {
        &self.set_aside
    }

    /// Turns records on (a durable store): from now on every change worth keeping is
    /// recorded, for [`Server::take_records`]. Without it none are kept.
    pub fn keep_records(&mut self) {
        if self.records.is_none() {
            self.records = Some(Vec::new());
        }
    }

    /// The records made since the last call, in order: the shell commits them before
    /// it sends the frames of the same inputs.
    pub fn take_records(&mut self) -> Vec<Record> {
        self.flush_gone();
        self.records
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    pub(super) fn persist(&mut self, record: Record) {
        if let Some(records) = &mut self.records {
            records.push(record);
        }
    }

    /// Records a new session (its token's digest, never the token).
    pub(super) fn persist_session(&mut self, session: SessionId) {
        if self.records.is_none() {
            return;
        }
        let Some(s) = self.sessions.get(session) else {
            return;
        };
        let record = Record::Session {
            session,
            player_id: s.player_id.clone(),
            token_sha256: s.digest_hex(),
        };
        self.persist(record);
    }

    pub(super) fn persist_move(
        &mut self,
        lobby: LobbyId,
        seat: Seat,
        action: Action,
        by: MoveSource,
        autoplayed: bool,
    ) {
        if self.records.is_none() {
            return;
        }
        let game_no = self.lobbies.get(lobby).map_or(0, |l| l.game_no());
        self.persist(Record::Move {
            lobby,
            game_no,
            seat,
            action,
            by,
            autoplayed,
        });
    }

    /// Records the lobby if its record changed since it was last recorded (called
    /// before any `state` of it is sent).
    pub(super) fn persist_lobby(&mut self, lobby: LobbyId) {
        if self.records.is_none() {
            return;
        }
        // This runs before every `state`, and a lobby's record rarely changes: the
        // lobby's flag tells, without building the record (a dozen strings) or looking
        // up the last one.
        let Some(l) = self.lobbies.get_mut(lobby) else {
            return;
        };
        if !l.record_changed() {
            debug_assert_eq!(
                self.persisted_lobbies.get(&lobby),
                self.lobby_record(lobby).as_ref(),
                "a lobby's record changed but its flag was not set"
            );
            return;
        }
        l.mark_record_kept();
        let Some(record) = self.lobby_record(lobby) else {
            return;
        };
        if self.persisted_lobbies.get(&lobby) == Some(&record) {
            return;
        }
        self.persisted_lobbies.insert(lobby, record.clone());
        self.persist(Record::Lobby(record));
    }

    /// Sessions and lobbies forgotten since the last call become records.
    pub(super) fn flush_gone(&mut self) {
        let sessions = self.sessions.take_gone();
        let lobbies = self.lobbies.take_gone();
        if self.records.is_none() {
            return;
        }
        for session in sessions {
            self.persist(Record::SessionGone { session });
        }
        for lobby in lobbies {
            self.persisted_lobbies.remove(&lobby);
            self.persist(Record::LobbyGone { lobby });
        }
    }

    /// The lobby's record as it is now.
    pub fn lobby_record(&self, lobby: LobbyId) -> Option<LobbyRecord> {
        let l = self.lobbies.get(lobby)?;
        Some(LobbyRecord {
            lobby,
            code: l.code().to_string(),
            status: l.status(),
            host: l.host().to_string(),
            options: l.options(),
            seats: l
                .seats()
                .iter()
                .map(|s| SeatRecord {
                    player_id: s.player_id.clone(),
                    name: s.name.clone(),
                    session: match s.occupant {
                        Occupant::Human(id) => Some(id),
                        Occupant::Ai(_) => None,
                    },
                    level: s.level().unwrap_or_default(),
                    profile: s.profile.clone(),
                    rating_change: s.rating_change.map(Figure),
                })
                .collect(),
            owner: l.owner().addr(),
            game_no: l.game_no(),
            seed: l.seed(),
            game_id: l.game_id().map(str::to_owned),
            started_ms: l.started_ms(),
            public: l.is_public(),
            quick_play: l.is_quick_play(),
        })
    }

    /// What every seat of every lobby sees of its game, with the lobby's record: for
    /// comparing a restored server with the one it was restored from. Per seat, the
    /// observation as JSON (`None` before a game).
    pub fn durable_views(&self) -> Vec<(LobbyRecord, Vec<Option<String>>)> {
        self.lobbies
            .ids()
            .into_iter()
            .filter_map(|id| {
                let record = self.lobby_record(id)?;
                let l = self.lobbies.get(id)?;
                let seats = (0..l.seats().len())
                    .map(|seat| {
                        let seat = Seat::try_from(seat).ok()?;
                        let game = l.game()?;
                        serde_json::to_string(&game.observation(seat)).ok()
                    })
                    .collect();
                Some((record, seats))
            })
            .collect()
    }

    /// A server rebuilt from `records` (oldest first), started at `now` with `seed`
    /// (a fresh one: with the old seed new tokens and codes would repeat old ones).
    /// Every lobby and game is rebuilt, its game by replaying its moves through the
    /// rules engine; humans count as disconnected since `now` until they say `hello`
    /// with their token (`SESSION_TTL` starts again), AI turns and timers start afresh.
    /// Sessions without a seat are not kept (a disconnected one would be forgotten
    /// anyway). Records stay on.
    pub fn restore(
        config: Config,
        seed: Seed,
        now: Time,
        records: impl IntoIterator<Item = Record>,
    ) -> Result<Server, RestoreError> {
        let mut fold = StoredFold::default();
        for record in records {
            fold.add(record);
        }
        let mut server = Server::new(config, seed, now);
        server.keep_records();
        for profile in fold.profiles.values() {
            server.profiles.restore(profile).map_err(RestoreError)?;
        }
        server.restore_sessions(std::mem::take(&mut fold.sessions), now)?;
        let mut lost: BTreeSet<SessionId> = BTreeSet::new();
        for (id, (record, moves)) in fold.into_lobbies() {
            server.restore_lobby(id, record, &moves, &mut lost);
        }
        server.rearm_sessions(now, &lost);
        server.rearm_lobbies(now);
        Ok(server)
    }

    /// Puts back the stored sessions (player id, token digest in hex), each disconnected
    /// since `now`.
    fn restore_sessions(
        &mut self,
        sessions: BTreeMap<SessionId, (String, String)>,
        now: Time,
    ) -> Result<(), RestoreError> {
        for (id, (player_id, hex)) in sessions {
            let digest = digest_from_hex(&hex)
                .ok_or_else(|| RestoreError(format!("session {id}: bad digest")))?;
            self.sessions
                .restore(id, player_id, digest, now)
                .map_err(|_| RestoreError(format!("session {id}: taken or over MAX_SESSIONS")))?;
        }
        Ok(())
    }

    /// Puts back one stored lobby with its current game's `moves`, its humans seated
    /// again; one that cannot be replayed is set aside, its sessions added to `lost`.
    fn restore_lobby(
        &mut self,
        id: LobbyId,
        mut record: LobbyRecord,
        moves: &[(Seat, Action)],
        lost: &mut BTreeSet<SessionId>,
    ) {
        // A seat whose session is gone is played by the AI (its record was written
        // before the session's end, in the same commit).
        for seat in &mut record.seats {
            if seat.session.is_some_and(|s| self.sessions.get(s).is_none()) {
                seat.session = None;
            }
        }
        if let Err(reason) = self.lobbies.restore(&record, moves) {
            self.set_aside_lobby(id, &record, reason, lost);
            return;
        }
        for seat in &record.seats {
            if let Some(s) = seat.session.and_then(|s| self.sessions.get_mut(s)) {
                s.lobby = Some(id);
                s.name = seat.name.clone();
            }
        }
        if let Some(r) = self.lobby_record(id) {
            self.persisted_lobbies.insert(id, r);
        }
        if let Some(l) = self.lobbies.get_mut(id) {
            l.mark_record_kept();
        }
    }

    /// Sets aside a lobby whose game cannot be replayed, so that it does not keep the
    /// others from coming back: its players told, its id not reused, its sessions
    /// added to `lost`.
    fn set_aside_lobby(
        &mut self,
        id: LobbyId,
        record: &LobbyRecord,
        reason: String,
        lost: &mut BTreeSet<SessionId>,
    ) {
        self.lobbies.reserve_id(id);
        let sessions: Vec<SessionId> = record.seats.iter().filter_map(|s| s.session).collect();
        for session in &sessions {
            if let Some(s) = self.sessions.get_mut(*session) {
                s.lost_lobby = Some(record.code.clone());
            }
        }
        lost.extend(&sessions);
        self.set_aside.push(SetAside {
            lobby: id,
            code: record.code.clone(),
            reason,
            sessions,
        });
    }

    /// Starts `SESSION_TTL` afresh at `now` for every seated session and every one of
    /// a lobby set aside (`lost`), and drops the others.
    fn rearm_sessions(&mut self, now: Time, lost: &BTreeSet<SessionId>) {
        let ids: Vec<SessionId> = self.sessions.ids().collect();
        for session in ids {
            let seated = self.sessions.get(session).and_then(|s| s.lobby).is_some();
            if seated || lost.contains(&session) {
                let ttl = self.config.session_ttl_us;
                self.timers
                    .set(TimerKey::Session(session), now.plus_us(ttl));
                self.sync_evictable(session);
            } else {
                self.sessions.remove(session);
            }
        }
    }

    /// Starts every restored lobby's away clock at `now`, and drives each playing one
    /// at once.
    fn rearm_lobbies(&mut self, now: Time) {
        let mut out = Vec::new();
        for lobby in self.lobbies.ids() {
            self.sync_away(now, lobby, &mut out);
            let playing = self
                .lobbies
                .get(lobby)
                .is_some_and(|l| l.status() == LobbyStatus::Playing);
            if playing {
                // Driven at once: turns start afresh, AI seats are asked again.
                self.timers.set(TimerKey::Lobby(lobby), now);
            }
        }
        // Nobody is connected yet: what restoring would send goes nowhere.
        drop(out);
    }
}

/// The stored records folded to what a restore rebuilds: the sessions not gone, each
/// lobby's newest record, the moves of each lobby's games, the profiles not gone.
#[derive(Default)]
struct StoredFold {
    /// Session id to (player id, token digest in hex).
    sessions: BTreeMap<SessionId, (String, String)>,
    lobbies: BTreeMap<LobbyId, LobbyRecord>,
    /// Moves by lobby and game, whatever lobby record came before them: a store that
    /// compacted keeps only a lobby's newest record, which may come after the moves of
    /// its game (a seat turned AI mid-game writes one), so a move is the current
    /// game's when its number matches the newest record's (`records::liveness`).
    moves: BTreeMap<(LobbyId, u64), Vec<(Seat, Action)>>,
    profiles: BTreeMap<String, ProfileRecord>,
}

impl StoredFold {
    /// Folds in the next record (records come oldest first).
    fn add(&mut self, record: Record) {
        match record {
            Record::Session {
                session,
                player_id,
                token_sha256,
            } => {
                self.sessions.insert(session, (player_id, token_sha256));
            }
            Record::SessionGone { session } => {
                self.sessions.remove(&session);
            }
            Record::Lobby(l) => {
                // An earlier game's moves are not needed any more.
                self.moves
                    .retain(|(lobby, game_no), _| *lobby != l.lobby || *game_no >= l.game_no);
                self.lobbies.insert(l.lobby, l);
            }
            Record::Move {
                lobby,
                game_no,
                seat,
                action,
                ..
            } => {
                let current = self
                    .lobbies
                    .get(&lobby)
                    .is_none_or(|l| l.game_no <= game_no);
                if current {
                    self.moves
                        .entry((lobby, game_no))
                        .or_default()
                        .push((seat, action));
                }
            }
            Record::LobbyGone { lobby } => {
                self.lobbies.remove(&lobby);
                self.moves.retain(|(l, _), _| *l != lobby);
            }
            Record::Profile(p) => {
                self.profiles.insert(p.id.clone(), p);
            }
            Record::ProfileGone { profile } => {
                self.profiles.remove(&profile);
            }
            // History: nothing a restore rebuilds.
            Record::Game(_) => {}
        }
    }

    /// Each lobby's newest record with the moves of its current game, by id.
    fn into_lobbies(mut self) -> BTreeMap<LobbyId, (LobbyRecord, Vec<(Seat, Action)>)> {
        self.lobbies
            .into_iter()
            .map(|(id, record)| {
                let game = self.moves.remove(&(id, record.game_no)).unwrap_or_default();
                (id, (record, game))
            })
            .collect()
    }
}
