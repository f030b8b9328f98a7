//! The players a lobby's host removed (`remove_player`, PROTOCOL.md "Spectators and
//! table chat"): kept out of that lobby for `REMOVED_PLAYER_TTL`, by player id and by
//! the address they were connected from, at most `REMOVED_PLAYERS_MAX` per lobby. In
//! memory only, like a lobby's audience: a restart forgets them, and so does the
//! lobby's deletion.
//!
//! This module is plain bookkeeping; the server decides (`server/watch.rs`).

use std::collections::VecDeque;

use crate::vocabulary::limiter::IpKey;
use crate::vocabulary::time::Time;

/// One player a lobby's host removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemovedPlayer {
    pub player_id: String,
    /// The address it was connected from when removed (none when it was away).
    pub ip: Option<IpKey>,
    /// Kept out until then (`REMOVED_PLAYER_TTL` after the removal).
    pub until: Time,
}

/// The players one lobby's host removed, kept out of it (`join_lobby`, `spectate`) by
/// player id and by address until their time runs out: at most `removed_max`, the one
/// removed longest ago forgotten first.
#[derive(Clone, Debug, Default)]
pub struct Removed {
    /// Oldest removal first.
    players: VecDeque<RemovedPlayer>,
}

impl Removed {
    /// Remembers `player` (replacing an earlier removal of the same player id), keeping
    /// at most `removed_max` entries; those whose time ran out by `now` are forgotten.
    pub fn add(&mut self, now: Time, player: RemovedPlayer, removed_max: usize) {
        self.forget_until(now);
        self.players.retain(|p| p.player_id != player.player_id);
        if removed_max == 0 || player.until <= now {
            return;
        }
        while self.players.len() >= removed_max {
            self.players.pop_front();
        }
        self.players.push_back(player);
    }

    /// Whether `player_id`, or a player at `ip`, is kept out at `now`.
    pub fn keeps_out(&self, now: Time, player_id: &str, ip: Option<IpKey>) -> bool {
        self.players
            .iter()
            .any(|p| p.until > now && (p.player_id == player_id || (ip.is_some() && p.ip == ip)))
    }

    /// Forgets the removals whose time ran out by `now`.
    pub fn forget_until(&mut self, now: Time) {
        self.players.retain(|p| p.until > now);
    }

    pub fn len(&self) -> usize {
        self.players.len()
    }

    pub fn is_empty(&self) -> bool {
        self.players.is_empty()
    }
}
