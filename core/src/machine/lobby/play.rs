//! A lobby's game: starting it, applying its moves, its public id, the profiles and
//! rating changes of its seats, and going back to the lobby after it.

use super::LobbyError;
use crate::machine::turns::TurnBook;
use crate::vocabulary::game::Action;
use crate::vocabulary::game::Event;
use crate::vocabulary::game::Game;
use crate::vocabulary::game::Phase;
use crate::vocabulary::game::Seat;
use crate::vocabulary::game::types::PLAYERS_MAX;
use crate::vocabulary::game::types::PLAYERS_MIN;
use crate::vocabulary::ids::LobbyId;
use crate::vocabulary::ids::SessionId;
use crate::vocabulary::wire::LobbyStatus;

use super::LobbyManager;

impl LobbyManager {
    /// Checks that `host` may start the game now (admission is the caller's check).
    pub fn can_start(&self, id: LobbyId, host: SessionId) -> Result<(), LobbyError> {
        let lobby = self
            .lobbies
            .get(&id)
            .ok_or(LobbyError::NotFound("No such lobby."))?;
        if !lobby.is_host(host) {
            return Err(LobbyError::NotAllowed("Only the host can do that."));
        }
        if lobby.status != LobbyStatus::Waiting {
            return Err(LobbyError::NotAllowed(
                "That is only possible before the game starts.",
            ));
        }
        let n = lobby.seats.len();
        if n < usize::from(PLAYERS_MIN) || n > usize::from(PLAYERS_MAX) {
            return Err(LobbyError::NotAllowed("A game needs 3 to 6 players."));
        }
        Ok(())
    }

    /// Starts the game with `seed`, appending its first events.
    pub fn start(
        &mut self,
        id: LobbyId,
        host: SessionId,
        seed: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), LobbyError> {
        self.can_start(id, host)?;
        let lobby = self
            .lobbies
            .get_mut(&id)
            .ok_or(LobbyError::NotFound("No such lobby."))?;
        let players = u8::try_from(lobby.seats.len()).unwrap_or(0);
        let game = Game::new(players, lobby.options, seed, events)
            .map_err(|_| LobbyError::NotAllowed("A game needs 3 to 6 players."))?;
        lobby.game = Some(game);
        lobby.game_no += 1;
        lobby.seed = Some(seed);
        lobby.moves = 0;
        lobby.log.clear();
        lobby.status = LobbyStatus::Playing;
        lobby.record_changed = true;
        lobby.turns = TurnBook::default();
        lobby.dormant = false;
        let owner = lobby.owner;
        self.playing += 1;
        self.charge(owner, |s| s.games += 1);
        self.reindex_idle(id);
        self.reindex_table(id);
        Ok(())
    }

    /// Applies a move to the lobby's game; marks the lobby finished when the game ends.
    pub fn apply(
        &mut self,
        id: LobbyId,
        seat: Seat,
        action: Action,
        events: &mut Vec<Event>,
    ) -> Result<(), LobbyError> {
        let lobby = self
            .lobbies
            .get_mut(&id)
            .ok_or(LobbyError::NotFound("No such lobby."))?;
        if lobby.status != LobbyStatus::Playing {
            return Err(LobbyError::NotAllowed(
                "There is no game running in this lobby.",
            ));
        }
        let game = lobby
            .game
            .as_mut()
            .ok_or(LobbyError::NotAllowed("No game."))?;
        game.apply(seat, action, events)
            .map_err(LobbyError::Illegal)?;
        lobby.moves += 1;
        lobby.log.push((seat, action));
        if game.phase() == Phase::Finished {
            lobby.status = LobbyStatus::Finished;
            lobby.record_changed = true;
            let owner = lobby.owner;
            if lobby.dormant {
                lobby.dormant = false;
                self.dormant -= 1;
            } else {
                self.playing -= 1;
            }
            self.charge(owner, |s| s.games -= 1);
            self.reindex_idle(id);
            self.reindex_table(id);
        }
        Ok(())
    }

    /// Names the game just started (`state.game.id`) and when it started
    /// (milliseconds since the Unix epoch).
    pub fn set_game_id(&mut self, id: LobbyId, game_id: String, started_ms: u64) {
        if let Some(lobby) = self.lobbies.get_mut(&id) {
            lobby.game_id = Some(game_id);
            lobby.started_ms = started_ms;
            lobby.record_changed = true;
        }
    }

    /// Ties `seat` to `profile` (or to none).
    pub fn set_seat_profile(&mut self, id: LobbyId, seat: Seat, profile: Option<String>) {
        if let Some(info) = self
            .lobbies
            .get_mut(&id)
            .and_then(|l| l.seats.get_mut(usize::from(seat)))
            && info.profile != profile
        {
            info.profile = profile;
            info.rating_change = None;
            if let Some(l) = self.lobbies.get_mut(&id) {
                l.record_changed = true;
            }
        }
    }

    /// Shows each seat's rating change after a rated game (`None` for unrated seats).
    pub fn set_rating_changes(&mut self, id: LobbyId, changes: &[Option<f64>]) {
        if let Some(lobby) = self.lobbies.get_mut(&id) {
            for (seat, change) in lobby.seats.iter_mut().zip(changes) {
                seat.rating_change = *change;
            }
            // The finished game's record keeps the changes (a restart shows them).
            lobby.record_changed = true;
        }
    }

    /// Back to the waiting room after a finished game.
    pub fn return_to_lobby(&mut self, id: LobbyId, host: SessionId) -> Result<(), LobbyError> {
        let lobby = self.host_lobby(id, host, LobbyStatus::Finished)?;
        lobby.status = LobbyStatus::Waiting;
        lobby.record_changed = true;
        lobby.game = None;
        lobby.seed = None;
        lobby.game_id = None;
        for seat in &mut lobby.seats {
            seat.rating_change = None;
            if seat.is_ai() {
                seat.profile = None;
            }
        }
        lobby.moves = 0;
        lobby.log = Vec::new();
        lobby.started_ms = 0;
        lobby.turns = TurnBook::default();
        self.reindex_idle(id);
        self.reindex_table(id);
        Ok(())
    }
}
