//! Who sits where: creating a lobby, joining, leaving, deleting, the host's seat rules,
//! AI seats, removing a player and the options.

use rand::Rng;

use super::AI_NAMES;
use super::Lobby;
use super::LobbyError;
use super::Occupant;
use super::SeatInfo;
use crate::vocabulary::game::AiLevel;
use crate::vocabulary::game::Options;
use crate::vocabulary::game::Seat;
use crate::vocabulary::game::types::PLAYERS_MAX;
use crate::vocabulary::ids::LobbyId;
use crate::vocabulary::ids::SessionId;
use crate::vocabulary::limiter::IpKey;
use crate::vocabulary::rng;
use crate::vocabulary::shard::CODE_ALPHABET;
use crate::vocabulary::shard::CODE_CHARS;
use crate::vocabulary::shard::ShardId;
use crate::vocabulary::wire::LobbyStatus;

use super::LobbyManager;

impl LobbyManager {
    /// A new waiting lobby with `session` as host in seat 0, charged to `owner`.
    pub fn create(
        &mut self,
        session: SessionId,
        player_id: &str,
        name: &str,
        owner: IpKey,
    ) -> Result<LobbyId, LobbyError> {
        if self.lobbies.len() >= self.lobbies_max {
            return Err(LobbyError::TooManyLobbies);
        }
        // A shard's code is its id, then random characters up to the usual length.
        let prefix = self.shard.map(ShardId::as_char);
        let code = loop {
            let random = CODE_CHARS - usize::from(prefix.is_some());
            let code: String = prefix
                .into_iter()
                .chain((0..random).map(|_| {
                    let i = (self.rng.next_u32() % 32) as usize;
                    char::from(CODE_ALPHABET.get(i).copied().unwrap_or(b'A'))
                }))
                .collect();
            if !self.by_code.contains_key(&code) {
                break code;
            }
        };
        let id = self.next_id;
        self.next_id = id.next();
        self.by_code.insert(code.clone(), id);
        let seats = vec![SeatInfo {
            player_id: player_id.to_string(),
            name: name.to_string(),
            occupant: Occupant::Human(session),
            profile: None,
            rating_change: None,
        }];
        let lobby = Lobby::new(id, code, player_id.to_string(), seats, owner);
        self.lobbies.insert(id, lobby);
        self.charge(owner, |s| s.lobbies += 1);
        Ok(id)
    }

    /// Seats `session` (shown as `player_id`) in a waiting lobby, or returns its
    /// existing seat in any lobby. Returns the seat and whether it is new. A new seat's
    /// name is made unique among the seats and `watching`, the names of the lobby's
    /// spectators.
    pub fn join(
        &mut self,
        id: LobbyId,
        session: SessionId,
        player_id: &str,
        name: &str,
        watching: &[String],
    ) -> Result<(Seat, bool), LobbyError> {
        let lobby = self
            .lobbies
            .get_mut(&id)
            .ok_or(LobbyError::NotFound("No such lobby."))?;
        if let Some(seat) = lobby.seat_of(session) {
            return Ok((seat, false));
        }
        if lobby.status != LobbyStatus::Waiting {
            return Err(LobbyError::NotAllowed("That game has already started."));
        }
        if lobby.seats.len() >= usize::from(PLAYERS_MAX) {
            return Err(LobbyError::NotAllowed("That lobby is full."));
        }
        let name = lobby.unique_name(watching, name);
        lobby.seats.push(SeatInfo {
            player_id: player_id.to_string(),
            name,
            occupant: Occupant::Human(session),
            profile: None,
            rating_change: None,
        });
        lobby.record_changed = true;
        let seat = Seat::try_from(lobby.seats.len() - 1).unwrap_or(0);
        self.reindex_table(id);
        Ok((seat, true))
    }

    /// Removes `session` from its seat (waiting) or hands the seat to the AI (playing or
    /// finished; at the default level, [`AiLevel::Strong`]), moving the host if needed.
    /// Returns true when the lobby was deleted because no human seat remains.
    pub fn leave(&mut self, id: LobbyId, session: SessionId) -> bool {
        let ai_id = format!("ai-{}", rng::hex_id(&mut self.rng, 8));
        let Some(lobby) = self.lobbies.get_mut(&id) else {
            return false;
        };
        let Some(seat) = lobby.seat_of(session) else {
            return false;
        };
        let index = usize::from(seat);
        lobby.record_changed = true;
        let left = if lobby.status == LobbyStatus::Waiting {
            lobby.seats.remove(index).player_id
        } else if let Some(info) = lobby.seats.get_mut(index) {
            info.occupant = Occupant::Ai(AiLevel::default());
            std::mem::replace(&mut info.player_id, ai_id)
        } else {
            return false;
        };
        if lobby.host == left
            && let Some(next) = lobby.seats.iter().find(|s| !s.is_ai())
        {
            lobby.host = next.player_id.clone();
        }
        if lobby.humans().next().is_none() {
            self.delete(id);
            return true;
        }
        self.reindex_table(id);
        false
    }

    /// Deletes a lobby whatever its seats (for `LOBBY_IDLE_TTL`); returns it.
    pub fn delete(&mut self, id: LobbyId) -> Option<Lobby> {
        let lobby = self.lobbies.remove(&id)?;
        self.gone.push(id);
        self.by_code.remove(&lobby.code);
        if let Some(at) = lobby.idle_key {
            self.idle.remove(&(at, id));
        }
        if let Some(k) = lobby.table_key {
            self.tables.remove(&k);
        }
        let playing = lobby.status == LobbyStatus::Playing;
        if playing && lobby.dormant {
            self.dormant -= 1;
        } else if playing {
            self.playing -= 1;
        }
        self.charge(lobby.owner, |s| {
            s.lobbies -= 1;
            s.games -= usize::from(playing);
        });
        Some(lobby)
    }

    /// The lobby, when `session` is its host and its status is `status`.
    pub(super) fn host_lobby(
        &mut self,
        id: LobbyId,
        session: SessionId,
        status: LobbyStatus,
    ) -> Result<&mut Lobby, LobbyError> {
        let lobby = self
            .lobbies
            .get_mut(&id)
            .ok_or(LobbyError::NotFound("No such lobby."))?;
        if !lobby.is_host(session) {
            return Err(LobbyError::NotAllowed("Only the host can do that."));
        }
        if lobby.status != status {
            return Err(LobbyError::NotAllowed(match status {
                LobbyStatus::Waiting => "That is only possible before the game starts.",
                LobbyStatus::Finished => "That is only possible when the game is over.",
                LobbyStatus::Playing => "That is only possible during a game.",
            }));
        }
        Ok(lobby)
    }

    /// Adds an AI seat of `level` named after a famous wizard whom no seat and none of
    /// `watching` (the lobby's spectators) is named like.
    pub fn add_ai(
        &mut self,
        id: LobbyId,
        host: SessionId,
        level: AiLevel,
        watching: &[String],
    ) -> Result<(), LobbyError> {
        let ai_id = format!("ai-{}", rng::hex_id(&mut self.rng, 8));
        let lobby = self.host_lobby(id, host, LobbyStatus::Waiting)?;
        if lobby.seats.len() >= usize::from(PLAYERS_MAX) {
            return Err(LobbyError::NotAllowed("That lobby is full."));
        }
        let base = AI_NAMES
            .iter()
            .find(|n| lobby.unique_name(watching, n) == **n)
            .copied()
            .unwrap_or("Merlin");
        let name = lobby.unique_name(watching, base);
        lobby.seats.push(SeatInfo {
            player_id: ai_id,
            name,
            occupant: Occupant::Ai(level),
            profile: None,
            rating_change: None,
        });
        lobby.record_changed = true;
        self.reindex_table(id);
        Ok(())
    }

    /// Removes the seat shown as `player_id`; returns the removed human's session, if
    /// it was one.
    pub fn remove_player(
        &mut self,
        id: LobbyId,
        host: SessionId,
        player_id: &str,
    ) -> Result<Option<SessionId>, LobbyError> {
        let lobby = self.host_lobby(id, host, LobbyStatus::Waiting)?;
        if player_id == lobby.host {
            return Err(LobbyError::NotAllowed(
                "The host cannot remove themselves; leave instead.",
            ));
        }
        let seat = lobby
            .seat_of_player(player_id)
            .ok_or(LobbyError::NotFound("No such player."))?;
        let removed = lobby.seats.remove(usize::from(seat));
        lobby.record_changed = true;
        self.reindex_table(id);
        Ok(match removed.occupant {
            Occupant::Human(s) => Some(s),
            Occupant::Ai(_) => None,
        })
    }

    pub fn set_options(
        &mut self,
        id: LobbyId,
        host: SessionId,
        options: Options,
    ) -> Result<(), LobbyError> {
        options
            .validate()
            .map_err(|_| LobbyError::Invalid("turn_seconds must be 0 or 10 to 300."))?;
        let lobby = self.host_lobby(id, host, LobbyStatus::Waiting)?;
        lobby.options = options;
        lobby.record_changed = true;
        Ok(())
    }
}
