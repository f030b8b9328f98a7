//! The lobby manager's indexes: the public tables `list_tables` reads, the idle
//! lobbies by age, the lobbies deleted since the server last looked, and restoring
//! lobbies from durable records.

use super::Lobby;
use super::Occupant;
use super::SeatInfo;
use super::{TABLES_LISTED_MAX, TableKey};
use crate::vocabulary::game::Action;
use crate::vocabulary::game::Game;
use crate::vocabulary::game::Phase;
use crate::vocabulary::game::Seat;
use crate::vocabulary::game::types::PLAYERS_MAX;
use crate::vocabulary::ids::LobbyId;
use crate::vocabulary::limiter::IpKey;
use crate::vocabulary::time::Time;
use crate::vocabulary::wire::LobbyStatus;
use std::collections::BTreeSet;

use super::LobbyManager;

impl LobbyManager {
    /// Brings the lobby's entry in the index of public tables in line with its state.
    pub(super) fn reindex_table(&mut self, id: LobbyId) {
        let Some(lobby) = self.lobbies.get_mut(&id) else {
            return;
        };
        let wanted = lobby.wanted_table_key();
        if wanted == lobby.table_key {
            return;
        }
        if let Some(old) = lobby.table_key.take() {
            self.tables.remove(&old);
        }
        if let Some(new) = wanted {
            self.tables.insert(new);
        }
        lobby.table_key = wanted;
    }

    /// Makes the lobby public or not (listed by `list_tables`).
    pub fn set_public(&mut self, id: LobbyId, public: bool) {
        if let Some(lobby) = self.lobbies.get_mut(&id)
            && lobby.public != public
        {
            lobby.public = public;
            lobby.record_changed = true;
        }
        self.reindex_table(id);
    }

    /// The public tables to list: open ones (fewest free seats first), then, with
    /// `running`, running ones; at most [`TABLES_LISTED_MAX`]. Reads the index only.
    pub fn tables(&self, running: bool) -> impl Iterator<Item = &Lobby> + '_ {
        self.tables
            .iter()
            .take_while(move |k| running || matches!(k, TableKey::Open(..)))
            .filter_map(|k| match k {
                TableKey::Open(_, id) | TableKey::Running(id) => self.lobbies.get(id),
            })
            .take(TABLES_LISTED_MAX)
    }

    /// Checks the index of public tables against the lobbies (for tests).
    pub fn check_tables(&self) -> Result<(), String> {
        let mut listed = 0;
        for lobby in self.lobbies.values() {
            let wanted = lobby.wanted_table_key();
            if wanted != lobby.table_key {
                return Err(format!(
                    "lobby {}: table key {:?}, wants {wanted:?}",
                    lobby.id, lobby.table_key
                ));
            }
            if let Some(k) = wanted {
                listed += 1;
                if !self.tables.contains(&k) {
                    return Err(format!("lobby {}: not in the index", lobby.id));
                }
            }
        }
        if listed != self.tables.len() {
            return Err(format!("{} indexed, {listed} public", self.tables.len()));
        }
        Ok(())
    }

    /// Lobbies deleted since [`LobbyManager::take_gone`] was last called, in order.
    pub fn gone(&self) -> &[LobbyId] {
        &self.gone
    }

    /// The lobbies deleted since the last call, in order.
    pub fn take_gone(&mut self) -> Vec<LobbyId> {
        std::mem::take(&mut self.gone)
    }

    /// Puts back a lobby read from a store, its game rebuilt by replaying `moves`
    /// through the rules engine. Human seats are `sessions` (which must be restored
    /// already). A record that does not fit (an id or code taken, an impossible game,
    /// a move the rules refuse) is the store's fault.
    pub fn restore(
        &mut self,
        record: &crate::machine::records::LobbyRecord,
        moves: &[(Seat, Action)],
    ) -> Result<(), String> {
        let id = record.lobby;
        let code = record.code.trim().to_ascii_uppercase();
        if self.lobbies.contains_key(&id) || self.by_code.contains_key(&code) {
            return Err(format!("lobby {id}: id or code {code} taken"));
        }
        if self.lobbies.len() >= self.lobbies_max {
            return Err(format!("lobby {id}: over MAX_LOBBIES"));
        }
        let seats = restored_seats(record);
        if seats.is_empty() || seats.len() > usize::from(PLAYERS_MAX) {
            return Err(format!("lobby {id}: {} seats", seats.len()));
        }
        let (game, status) = replayed_game(record, seats.len(), moves)?;
        let owner = IpKey::new(record.owner);
        let playing = status == LobbyStatus::Playing;
        self.by_code.insert(code.clone(), id);
        let lobby = restored_lobby(record, code, seats, owner, (game, status), moves);
        self.lobbies.insert(id, lobby);
        self.reindex_table(id);
        self.next_id = self.next_id.max(id.next());
        self.playing += usize::from(playing);
        self.charge(owner, |s| {
            s.lobbies += 1;
            s.games += usize::from(playing);
        });
        Ok(())
    }

    /// Keeps `id` from being given to a new lobby (a lobby set aside at a restore: its
    /// records are still in the store).
    pub fn reserve_id(&mut self, id: LobbyId) {
        self.next_id = self.next_id.max(id.next());
    }

    /// Sets since when the lobby's humans are all away (None: one is connected).
    pub fn set_away(&mut self, id: LobbyId, since: Option<Time>) {
        if let Some(lobby) = self.lobbies.get_mut(&id) {
            lobby.away_since = since;
        }
        self.reindex_idle(id);
    }

    /// Brings the lobby's entry in the idle index in line with [`Lobby::is_idle`].
    pub(super) fn reindex_idle(&mut self, id: LobbyId) {
        let Some(lobby) = self.lobbies.get_mut(&id) else {
            return;
        };
        let key = if lobby.is_idle() {
            lobby.away_since
        } else {
            None
        };
        if lobby.idle_key == key {
            return;
        }
        if let Some(old) = lobby.idle_key.take() {
            self.idle.remove(&(old, id));
        }
        if let Some(at) = key {
            lobby.idle_key = Some(at);
            self.idle.insert((at, id));
        }
    }

    /// The idle lobby that has been idle longest.
    pub fn first_idle(&self) -> Option<LobbyId> {
        self.idle.first().map(|(_, id)| *id)
    }

    /// Idle lobbies ([`Lobby::is_idle`]).
    pub fn idle_len(&self) -> usize {
        self.idle.len()
    }

    /// Whether the idle index holds exactly the idle lobbies. For tests; O(lobbies).
    pub fn check_idle(&self) -> Result<(), String> {
        let recount: BTreeSet<(Time, LobbyId)> = self
            .lobbies
            .values()
            .filter(|l| l.is_idle())
            .filter_map(|l| l.away_since.map(|t| (t, l.id)))
            .collect();
        if recount == self.idle {
            Ok(())
        } else {
            Err(format!("idle index {:?}, recount {recount:?}", self.idle))
        }
    }
}

/// The seats of a stored lobby: a seat with a session is that human's, any other the
/// AI's at its stored level.
fn restored_seats(record: &crate::machine::records::LobbyRecord) -> Vec<SeatInfo> {
    record
        .seats
        .iter()
        .map(|s| SeatInfo {
            player_id: s.player_id.clone(),
            name: s.name.clone(),
            occupant: s.session.map_or(Occupant::Ai(s.level), Occupant::Human),
            profile: s.profile.clone(),
            rating_change: s.rating_change.map(|f| f.0),
        })
        .collect()
}

/// A stored lobby's game rebuilt by replaying `moves` through the rules engine (none
/// while the lobby waits), with the lobby's status: finished if the game is.
fn replayed_game(
    record: &crate::machine::records::LobbyRecord,
    seats_len: usize,
    moves: &[(Seat, Action)],
) -> Result<(Option<Game>, LobbyStatus), String> {
    let id = record.lobby;
    let seed = match (record.status, record.seed) {
        (LobbyStatus::Waiting, _) => return Ok((None, LobbyStatus::Waiting)),
        (_, None) => return Err(format!("lobby {id}: a game without a seed")),
        (_, Some(seed)) => seed,
    };
    let players = u8::try_from(seats_len).unwrap_or(0);
    let mut events = Vec::new();
    let mut game = Game::new(players, record.options, seed, &mut events)
        .map_err(|e| format!("lobby {id}: {e:?}"))?;
    for (i, (seat, action)) in moves.iter().enumerate() {
        game.apply(*seat, *action, &mut events)
            .map_err(|e| format!("lobby {id}: move {i}: {e}"))?;
        events.clear();
    }
    // The finishing move and the finished lobby are committed together; the game
    // itself is the authority anyway.
    let status = if game.phase() == Phase::Finished {
        LobbyStatus::Finished
    } else {
        record.status
    };
    Ok((Some(game), status))
}

/// The lobby a stored record describes, its game and status already replayed: what a
/// waiting lobby keeps of a game (seed, game id, log, start) is left out.
fn restored_lobby(
    record: &crate::machine::records::LobbyRecord,
    code: String,
    seats: Vec<SeatInfo>,
    owner: IpKey,
    (game, status): (Option<Game>, LobbyStatus),
    moves: &[(Seat, Action)],
) -> Lobby {
    let mut lobby = Lobby::new(record.lobby, code, record.host.clone(), seats, owner);
    lobby.status = status;
    lobby.options = record.options;
    lobby.game = game;
    lobby.game_no = record.game_no;
    lobby.seed = record.seed.filter(|_| status != LobbyStatus::Waiting);
    lobby.game_id = record
        .game_id
        .clone()
        .filter(|_| status != LobbyStatus::Waiting);
    lobby.moves = moves.len() as u64;
    if status != LobbyStatus::Waiting {
        lobby.log = moves.to_vec();
        lobby.started_ms = record.started_ms;
    }
    lobby.public = record.public;
    lobby.quick_play = record.quick_play;
    lobby
}
