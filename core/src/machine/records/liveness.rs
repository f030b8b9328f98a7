//! Which stored records a restore still needs: the same fold as `Server::restore`, kept
//! by a store so that it can append records as they come and drop the dead ones in
//! batches, without reading their bodies.
//!
//! A record is **live** while it can change what a restore rebuilds:
//! - a session's newest `session` record, until its `session_gone`;
//! - a lobby's newest `lobby` record, and the moves of that record's game, until its
//!   `lobby_gone`.
//!
//! - a profile's newest `profile` record, until its `profile_gone`.
//!
//! A `game` record (history) is neither: a store keeps it in its own table, for
//! `HISTORY_DAYS`, and counts it here not at all.
//!
//! Everything else is **dead**: older `session` and `lobby` records, the moves of an
//! earlier game (or of a lobby with no record), everything of a key before its `gone`
//! record, and the `gone` record itself. Dropping dead records never changes the
//! server a restore rebuilds (property-tested against `Server::restore`).
//!
//! [`Liveness`] is generic over what it keeps per row: a count ([`RowCount`]) for a
//! store that only needs to know when compacting pays, or the rows' sequence numbers
//! (`Vec<u64>`) for the compaction itself.

use std::collections::BTreeMap;

use super::Record;
use crate::machine::profiles;
use crate::vocabulary::ids::{LobbyId, SessionId};

/// What a record is, as a store keeps it beside its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    Session,
    SessionGone,
    Lobby,
    Move,
    LobbyGone,
    Profile,
    ProfileGone,
    /// A finished game for history: never in the restore's rows.
    Game,
}

impl RowKind {
    pub const ALL: [RowKind; 8] = [
        RowKind::Session,
        RowKind::SessionGone,
        RowKind::Lobby,
        RowKind::Move,
        RowKind::LobbyGone,
        RowKind::Profile,
        RowKind::ProfileGone,
        RowKind::Game,
    ];

    /// The stored name.
    pub fn name(self) -> &'static str {
        match self {
            RowKind::Session => "session",
            RowKind::SessionGone => "session_gone",
            RowKind::Lobby => "lobby",
            RowKind::Move => "move",
            RowKind::LobbyGone => "lobby_gone",
            RowKind::Profile => "profile",
            RowKind::ProfileGone => "profile_gone",
            RowKind::Game => "game",
        }
    }

    pub fn from_name(name: &str) -> Option<RowKind> {
        RowKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// What [`Liveness`] needs of a record: its kind, its key and its game's number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowKey {
    pub kind: RowKind,
    /// The lobby's, the session's or the profile's id (a profile's 12 hex digits as a
    /// number; a game's first 15 hex digits).
    pub id: u64,
    /// The game a `lobby` record describes or a `move` belongs to; for a `game`
    /// record, when it finished (milliseconds since the Unix epoch); 0 otherwise.
    pub game_no: u64,
}

impl Record {
    /// What a store keeps beside the body for [`Liveness`].
    pub fn row_key(&self) -> RowKey {
        let (kind, id, game_no) = match self {
            Record::Session { session, .. } => (RowKind::Session, session.0, 0),
            Record::SessionGone { session } => (RowKind::SessionGone, session.0, 0),
            Record::Lobby(l) => (RowKind::Lobby, l.lobby.0, l.game_no),
            Record::Move { lobby, game_no, .. } => (RowKind::Move, lobby.0, *game_no),
            Record::LobbyGone { lobby } => (RowKind::LobbyGone, lobby.0, 0),
            Record::Profile(p) => (RowKind::Profile, profiles::row_id(&p.id), 0),
            Record::ProfileGone { profile } => (RowKind::ProfileGone, profiles::row_id(profile), 0),
            Record::Game(g) => (RowKind::Game, super::history::row_id(&g.id), g.finished_ms),
        };
        RowKey { kind, id, game_no }
    }
}

/// Rows as [`Liveness`] keeps them.
pub trait Rows: Default + std::fmt::Debug {
    fn push(&mut self, seq: u64);
    /// Moves every row of `other` here.
    fn absorb(&mut self, other: Self);
    fn count(&self) -> u64;
}

/// Only how many rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowCount(pub u64);

impl Rows for RowCount {
    fn push(&mut self, _seq: u64) {
        self.0 += 1;
    }

    fn absorb(&mut self, other: Self) {
        self.0 += other.0;
    }

    fn count(&self) -> u64 {
        self.0
    }
}

/// The rows' sequence numbers.
impl Rows for Vec<u64> {
    fn push(&mut self, seq: u64) {
        Vec::push(self, seq);
    }

    fn absorb(&mut self, mut other: Self) {
        self.append(&mut other);
    }

    fn count(&self) -> u64 {
        self.len() as u64
    }
}

#[derive(Debug, Default)]
struct LobbyRows<R> {
    game_no: u64,
    /// Its newest `lobby` record.
    record: R,
    /// The moves of that record's game.
    moves: R,
}

/// The live rows per key, and the dead ones, of records fed in sequence order.
#[derive(Debug, Default)]
pub struct Liveness<R: Rows> {
    sessions: BTreeMap<SessionId, R>,
    lobbies: BTreeMap<LobbyId, LobbyRows<R>>,
    profiles: BTreeMap<u64, R>,
    live: u64,
    dead: R,
}

impl<R: Rows> Liveness<R> {
    /// Feeds the next record (sequence numbers rising).
    pub fn add(&mut self, seq: u64, key: RowKey) {
        match key.kind {
            RowKind::Session => {
                let mut rows = R::default();
                rows.push(seq);
                if let Some(old) = self.sessions.insert(SessionId(key.id), rows) {
                    self.kill(old);
                }
                self.live += 1;
            }
            RowKind::SessionGone => {
                if let Some(old) = self.sessions.remove(&SessionId(key.id)) {
                    self.kill(old);
                }
                self.dead.push(seq);
            }
            RowKind::Lobby => {
                let lobby = self.lobbies.entry(LobbyId(key.id)).or_default();
                let old = std::mem::take(&mut lobby.record);
                lobby.record.push(seq);
                let moves = if lobby.game_no == key.game_no {
                    R::default()
                } else {
                    lobby.game_no = key.game_no;
                    std::mem::take(&mut lobby.moves)
                };
                self.kill(old);
                self.kill(moves);
                self.live += 1;
            }
            RowKind::Move => match self.lobbies.get_mut(&LobbyId(key.id)) {
                Some(lobby) if lobby.game_no == key.game_no => {
                    lobby.moves.push(seq);
                    self.live += 1;
                }
                _ => self.dead.push(seq),
            },
            RowKind::LobbyGone => {
                if let Some(old) = self.lobbies.remove(&LobbyId(key.id)) {
                    self.kill(old.record);
                    self.kill(old.moves);
                }
                self.dead.push(seq);
            }
            RowKind::Profile => {
                let mut rows = R::default();
                rows.push(seq);
                if let Some(old) = self.profiles.insert(key.id, rows) {
                    self.kill(old);
                }
                self.live += 1;
            }
            RowKind::ProfileGone => {
                if let Some(old) = self.profiles.remove(&key.id) {
                    self.kill(old);
                }
                self.dead.push(seq);
            }
            // Kept apart by the store, neither live nor dead here.
            RowKind::Game => {}
        }
    }

    /// Live rows that die.
    fn kill(&mut self, rows: R) {
        self.live -= rows.count();
        self.dead.absorb(rows);
    }

    /// Rows a restore still needs.
    pub fn live(&self) -> u64 {
        self.live
    }

    /// Rows a restore does not need.
    pub fn dead(&self) -> &R {
        &self.dead
    }

    /// Takes the dead rows (after the store deleted them).
    pub fn take_dead(&mut self) -> R {
        std::mem::take(&mut self.dead)
    }
}
