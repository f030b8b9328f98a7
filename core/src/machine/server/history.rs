//! History as the game path makes it (PROTOCOL.md 7.4): when a game ends, its record
//! ([`HistoryRecord`]: seed, players, options, every move, final scores) joins the
//! batch of its last move and rating update, so a store keeps all of them or none.
//! Nothing is recorded with `HISTORY_DAYS` 0 or without a durable store. The record's
//! dates come from the wall clock the shell told ([`Server::set_wall_clock`]); the core
//! reads no clock.

use crate::machine::records::Record;
use crate::machine::records::history::{HistoryPlayer, HistoryRecord, encode_moves};
use crate::vocabulary::ids::LobbyId;
use crate::vocabulary::time::{Time, US_PER_MS};

use super::Server;

impl Server {
    /// Tells the core the wall clock at [`Time`] zero, milliseconds since the Unix
    /// epoch (history's dates). The simulator leaves it at 0.
    pub fn set_wall_clock(&mut self, epoch_ms: u64) {
        self.wall_epoch_ms = epoch_ms;
    }

    /// The wall clock at `now`, milliseconds since the Unix epoch.
    pub(super) fn wall_ms(&self, now: Time) -> u64 {
        self.wall_epoch_ms + now.as_micros() / US_PER_MS
    }

    /// Records the lobby's finished game for history.
    pub(super) fn record_history(&mut self, now: Time, lobby_id: LobbyId) {
        if self.records.is_none() || self.config.history_days == 0 {
            return;
        }
        let Some(lobby) = self.lobbies.get(lobby_id) else {
            return;
        };
        let (Some(game), Some(seed), Some(id)) =
            (lobby.game(), lobby.seed(), lobby.shown_game_id())
        else {
            return;
        };
        let players: Vec<HistoryPlayer> = lobby
            .seats()
            .iter()
            .map(|s| HistoryPlayer {
                name: s.name.clone(),
                profile_id: s.profile.clone(),
                is_ai: s.is_ai(),
                level: s.level(),
            })
            .collect();
        let rated = lobby.seats().iter().any(|s| {
            s.profile
                .as_ref()
                .is_some_and(|p| self.profiles.get(p).is_some())
        });
        let record = HistoryRecord {
            id,
            started_ms: lobby.started_ms(),
            finished_ms: self.wall_ms(now),
            options: lobby.options(),
            rated,
            seed,
            players,
            moves: encode_moves(lobby.log()),
            final_scores: game.scores().to_vec(),
        };
        self.counters.games_recorded += 1;
        self.persist(Record::Game(record));
    }
}
