//! The shards' shared quick-play pool (PROTOCOL.md 7.2, shards), as the core sees it.
//!
//! A shell that keeps the pool in PostgreSQL calls [`Server::share_quick_play`] once;
//! from then on the matchmaker only holds this shard's tickets (one per session, the
//! same bounds and the same reasons to drop them) and never forms a group here. Every
//! change of a ticket is handed to the shell ([`Server::take_pool_changes`]), which
//! writes it to the pool; the shell forms groups from the tickets of every shard with
//! the matchmaker's own rule and hands each back as an [`Input::Pool`]:
//!
//! - [`PoolEvent::Formed`]: a group with tickets of this shard. Its players here are
//!   seated in a new lobby; the seats of its players on other shards are kept for
//!   them, and AI players fill the rest. The lobby answers [`PoolChange::Seated`] with
//!   its code, which the shell passes on to those players' shards. A kept seat holds
//!   the table for at most `QUICK_PLAY_JOIN_WAIT`: once every kept seat is taken, or
//!   the wait runs out (the empty kept seats then going to `normal` AI players), the
//!   table turns public and its game starts. A group none of whose players here still
//!   waits (or that cannot be seated: not accepting games) answers
//!   [`PoolChange::Refused`], and its players of other shards go back to the pool.
//! - [`PoolEvent::Matched`]: another shard seated this session's ticket; the player
//!   receives `matched {code, shard}` and joins there as with any foreign code.
//!
//! [`Input::Pool`]: crate::vocabulary::io::Input::Pool

use std::collections::BTreeMap;

use crate::machine::matchmaker::{Group, QueueError, Ticket, rating_milli};
use crate::vocabulary::game::AiLevel;
use crate::vocabulary::game::types::PLAYERS_MIN;
use crate::vocabulary::ids::{LobbyId, SessionId};
use crate::vocabulary::io::{Delivery, Output};
use crate::vocabulary::pool::{PoolChange, PoolEvent};
use crate::vocabulary::time::Time;
use crate::vocabulary::wire::{self, ServerMessage};

use super::{Server, TimerKey};

/// The core's part of the shared pool.
#[derive(Debug, Default)]
pub(super) struct SharedPool {
    /// Changes not yet taken by the shell: at most one a ticket change, taken after
    /// every pass.
    changes: Vec<PoolChange>,
    /// Lobbies formed here that keep seats for players of other shards: how many are
    /// still empty. One entry at most per existing lobby, each for at most
    /// `QUICK_PLAY_JOIN_WAIT`.
    reserved: BTreeMap<LobbyId, u8>,
}

impl Server {
    /// From now on, quick-play groups are formed by the shards' shared pool that the
    /// shell keeps: see the module documentation. A sharded shell calls it once, before
    /// any input.
    pub fn share_quick_play(&mut self) {
        self.shared = Some(SharedPool::default());
    }

    /// The ticket changes since the last call, in order, for the shell to write to the
    /// shared pool (nothing unless [`Server::share_quick_play`] was called).
    pub fn take_pool_changes(&mut self) -> Vec<PoolChange> {
        self.shared
            .as_mut()
            .map(|p| std::mem::take(&mut p.changes))
            .unwrap_or_default()
    }

    /// Lobbies that still keep seats for players of other shards.
    pub fn reserved_tables(&self) -> usize {
        self.shared.as_ref().map_or(0, |p| p.reserved.len())
    }

    pub(super) fn pool_changed(&mut self, change: PoolChange) {
        if let Some(p) = &mut self.shared {
            p.changes.push(change);
        }
    }

    /// Keeps the session's ticket for the shared pool (its place in time kept when it
    /// had one) and tells the shell.
    pub(super) fn hold_shared_ticket(
        &mut self,
        now: Time,
        session: SessionId,
        seats: u8,
        rating: f64,
    ) -> Result<Time, QueueError> {
        let since = self.matchmaker.ticket(session).map_or(now, |t| t.since);
        let ticket = Ticket {
            key: session,
            seats,
            rating_milli: rating_milli(rating),
            since,
        };
        self.matchmaker.hold(ticket)?;
        self.pool_changed(PoolChange::Put {
            session,
            seats,
            rating_milli: ticket.rating_milli,
        });
        Ok(since)
    }

    pub(super) fn on_pool(&mut self, now: Time, event: PoolEvent, out: &mut Vec<Output>) {
        if self.shared.is_none() {
            return;
        }
        match event {
            PoolEvent::Formed {
                group,
                seats,
                local,
                remote,
            } => self.seat_shared_group(now, group, seats, &local, remote, out),
            PoolEvent::Matched {
                session,
                code,
                shard,
            } => {
                // A ticket taken meanwhile (cancelled, left, closed) is told nothing:
                // its kept seat goes to an AI player after `QUICK_PLAY_JOIN_WAIT`.
                if self.matchmaker.cancel(session).is_none() {
                    return;
                }
                let Some(conn) = self.sessions.get(session).and_then(|s| s.conn) else {
                    return;
                };
                let text = wire::encode(&ServerMessage::Matched {
                    code,
                    shard: shard.as_str().to_owned(),
                });
                out.push(Output::Send {
                    conn,
                    text,
                    delivery: Delivery::Every,
                });
            }
        }
    }

    /// Seats a group formed by the shared pool: see the module documentation.
    fn seat_shared_group(
        &mut self,
        now: Time,
        group: u64,
        seats: u8,
        local: &[SessionId],
        remote: u8,
        out: &mut Vec<Output>,
    ) {
        let players: Vec<Ticket<SessionId>> = local
            .iter()
            .filter_map(|s| self.matchmaker.cancel(*s))
            .collect();
        // The pool took them out already; a ticket put back meanwhile goes too.
        for t in &players {
            self.pool_changed(PoolChange::Drop { session: t.key });
        }
        let formed = Group {
            seats,
            players,
            waited_out: false,
        };
        let lobby = if formed.players.is_empty() {
            None
        } else {
            self.seat_group(now, formed, remote, out)
        };
        let Some(lobby) = lobby else {
            self.pool_changed(PoolChange::Refused { group });
            return;
        };
        let code = self
            .lobbies
            .get(lobby)
            .map(|l| l.code().to_owned())
            .unwrap_or_default();
        self.pool_changed(PoolChange::Seated { group, code });
        if remote > 0 {
            if let Some(p) = &mut self.shared {
                p.reserved.insert(lobby, remote);
            }
            self.timers.set(
                TimerKey::Reserved(lobby),
                now.plus_us(self.config.quick_play_join_wait_us),
            );
        }
    }

    /// A new player sat at `lobby`: if it keeps seats for other shards' players, one
    /// fewer is kept, and with none left the game starts.
    pub(super) fn reserved_seat_taken(&mut self, now: Time, lobby: LobbyId, out: &mut Vec<Output>) {
        let Some(p) = &mut self.shared else {
            return;
        };
        let Some(left) = p.reserved.get_mut(&lobby) else {
            return;
        };
        *left = left.saturating_sub(1);
        if *left == 0 {
            self.reserved_due(now, lobby, out);
        }
    }

    /// The lobby keeps no seat any longer: AI players take the empty kept seats, the
    /// table turns public and its game starts (if a human still sits there).
    pub(super) fn reserved_due(&mut self, now: Time, lobby: LobbyId, out: &mut Vec<Output>) {
        self.timers.cancel(&TimerKey::Reserved(lobby));
        let Some(left) = self.shared.as_mut().and_then(|p| p.reserved.remove(&lobby)) else {
            return;
        };
        let Some(l) = self.lobbies.get(lobby) else {
            return;
        };
        if l.status() != wire::LobbyStatus::Waiting || l.seats().iter().all(|s| s.is_ai()) {
            return;
        }
        let Some(host) = l.host_session() else {
            return;
        };
        let short = usize::from(PLAYERS_MIN).saturating_sub(l.seats().len());
        for _ in 0..usize::from(left).max(short) {
            let _ = self.lobbies.add_ai(lobby, host, AiLevel::Normal, &[]);
        }
        self.lobbies.set_public(lobby, true);
        if self.begin_game(now, lobby, host, out).is_err() {
            self.broadcast(now, lobby, &[], out);
        }
    }
}
