//! Personal `state` messages: the lobby as its members see it and each seat's own game
//! view. The lobby part and the events are encoded once per change; only the game part
//! is encoded per seat.

use crate::game::{Event, Seat};
use crate::io::Output;
use crate::lobby::{Lobby, Occupant};
use crate::session::{LobbyId, SessionId};
use crate::time::Time;
use crate::wire::{GameView, LobbyView, PlayerView};

use super::Server;

/// Typical size of an encoded `state`, to allocate once per message.
const STATE_BYTES_TYPICAL: usize = 2048;

/// The encoded `state` message for one viewer, written into one buffer: the lobby part
/// and events come pre-encoded, the game part is encoded in place.
fn state_text(lobby_json: &str, game: Option<&GameView>, events_json: &str) -> String {
    let mut buf =
        Vec::with_capacity(STATE_BYTES_TYPICAL.max(lobby_json.len() + events_json.len() + 64));
    buf.extend_from_slice(br#"{"type":"state","lobby":"#);
    buf.extend_from_slice(lobby_json.as_bytes());
    buf.extend_from_slice(br#","game":"#);
    let encoded = match game {
        Some(view) => serde_json::to_writer(&mut buf, view).is_ok(),
        None => false,
    };
    if !encoded {
        buf.extend_from_slice(b"null");
    }
    buf.extend_from_slice(br#","events":"#);
    buf.extend_from_slice(events_json.as_bytes());
    buf.push(b'}');
    // Every piece is UTF-8 JSON, so this never fails; an empty message would be a bug.
    String::from_utf8(buf).unwrap_or_default()
}

/// The empty view: not seated anywhere.
pub(super) const EMPTY_STATE: &str = r#"{"type":"state","lobby":null,"game":null,"events":[]}"#;

impl Server {
    fn lobby_view(&self, lobby: &Lobby) -> LobbyView {
        LobbyView {
            code: lobby.code.clone(),
            status: lobby.status,
            host_id: lobby.host.clone(),
            options: lobby.options,
            players: lobby
                .seats
                .iter()
                .map(|s| PlayerView {
                    id: s.player_id.clone(),
                    name: s.name.clone(),
                    is_ai: s.is_ai(),
                    connected: match s.occupant {
                        Occupant::Ai => true,
                        Occupant::Human(id) => {
                            self.sessions.get(id).is_some_and(|x| x.conn.is_some())
                        }
                    },
                })
                .collect(),
            min_players: crate::game::types::PLAYERS_MIN,
            max_players: crate::game::types::PLAYERS_MAX,
            ai_available: self.bridge.available(),
        }
    }

    /// The game part of `state` for `seat` (`None` without a game).
    fn game_view(&self, now: Time, lobby: &Lobby, seat: Seat) -> Option<GameView> {
        let game = lobby.game.as_ref()?;
        let mut observation = game.observation(seat);
        let timing = self.timing(lobby.id);
        observation.turn_deadline_ms = observation
            .to_act
            .and_then(|s| lobby.turns.human_ms_left(s, now, &timing));
        Some(GameView {
            you: seat,
            observation,
        })
    }

    /// Sends every connected human of `lobby` (but `except`) their personal state.
    fn broadcast_filtered(
        &mut self,
        now: Time,
        lobby_id: LobbyId,
        events: &[Event],
        except: Option<SessionId>,
        out: &mut Vec<Output>,
    ) {
        let Some(lobby) = self.lobbies.get(lobby_id) else {
            return;
        };
        let lobby_json = serde_json::to_string(&self.lobby_view(lobby)).unwrap_or_default();
        let events_json = serde_json::to_string(events).unwrap_or_else(|_| "[]".to_string());
        for (seat, info) in (0u8..).zip(&lobby.seats) {
            let Occupant::Human(session) = info.occupant else {
                continue;
            };
            if Some(session) == except {
                continue;
            }
            let Some(conn) = self.sessions.get(session).and_then(|s| s.conn) else {
                continue;
            };
            let game = self.game_view(now, lobby, seat);
            out.push(Output::Send {
                conn,
                text: state_text(&lobby_json, game.as_ref(), &events_json),
                // Only a state without events may be replaced by a newer one: events
                // are not repeated, so dropping them would lose them.
                state: events.is_empty(),
            });
        }
    }

    pub(super) fn broadcast(
        &mut self,
        now: Time,
        lobby: LobbyId,
        events: &[Event],
        out: &mut Vec<Output>,
    ) {
        self.broadcast_filtered(now, lobby, events, None, out);
    }

    pub(super) fn broadcast_except(
        &mut self,
        now: Time,
        lobby: LobbyId,
        except: SessionId,
        out: &mut Vec<Output>,
    ) {
        self.broadcast_filtered(now, lobby, &[], Some(except), out);
    }

    /// Sends one session its current view (empty when not seated).
    pub(super) fn send_state(&mut self, now: Time, session: SessionId, out: &mut Vec<Output>) {
        let Some(s) = self.sessions.get(session) else {
            return;
        };
        let Some(conn) = s.conn else {
            return;
        };
        let seated = s.lobby.and_then(|id| self.lobbies.get(id)).and_then(|l| {
            let seat = l.seat_of(&s.player_id)?;
            Some((l, seat))
        });
        let text = match seated {
            Some((lobby, seat)) => {
                let lobby_json = serde_json::to_string(&self.lobby_view(lobby)).unwrap_or_default();
                state_text(&lobby_json, self.game_view(now, lobby, seat).as_ref(), "[]")
            }
            None => EMPTY_STATE.to_string(),
        };
        out.push(Output::Send {
            conn,
            text,
            state: true,
        });
    }
}
