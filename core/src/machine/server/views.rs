//! Personal `state` messages: the lobby as its members see it and each seat's own game
//! view. The lobby part and the events are encoded once per change; only the game part
//! is encoded per seat, and once for all the lobby's spectators.

use crate::machine::lobby::{Lobby, Occupant, SeatInfo};
use crate::machine::rating::Figure;
use crate::vocabulary::game::{Event, Game, ObservationJson, Seat};
use crate::vocabulary::ids::{LobbyId, SessionId};
use crate::vocabulary::io::{Delivery, Output};
use crate::vocabulary::time::Time;
use crate::vocabulary::wire::{LobbyView, PlayerView};

use super::Server;

/// Typical size of an encoded `state`, to allocate once per message.
const STATE_BYTES_TYPICAL: usize = 2048;

/// The seat whose view is a spectator's: outside every table, so it has no hand, sees
/// no hidden bid and has no legal action ([`Game::observation`]).
const SPECTATOR_SEAT: Seat = Seat::MAX;

/// One seat's game as the `game` part of `state`: the lobby's game, its pre-encoded
/// public parts and the seat (`None` for a spectator).
struct SeatGame<'a> {
    id: &'a str,
    game: &'a Game,
    public: &'a ObservationJson,
    seat: Option<Seat>,
}

/// The encoded `state` message for one viewer, written into one buffer: the lobby part,
/// the events and the public parts of the observation come pre-encoded, only the
/// viewer's own fields are encoded here.
fn state_text(
    lobby_json: &str,
    game: Option<SeatGame<'_>>,
    deadline_ms: impl FnOnce(Option<Seat>) -> Option<u64>,
    events_json: &str,
) -> String {
    let public_len = game.as_ref().map_or(0, |g| g.public.len());
    let mut buf = String::with_capacity(
        STATE_BYTES_TYPICAL.max(lobby_json.len() + events_json.len() + public_len + 256),
    );
    buf.push_str(r#"{"type":"state","lobby":"#);
    buf.push_str(lobby_json);
    buf.push_str(r#","game":"#);
    match game {
        Some(g) => {
            // `you` first: clients that peek (`wire::peek::turn`) read it there.
            buf.push_str(r#"{"you":"#);
            match g.seat {
                Some(seat) => buf.push_str(itoa::Buffer::new().format(seat)),
                None => buf.push_str("null"),
            }
            // A game id is hex: nothing in it needs escaping.
            buf.push_str(r#","id":""#);
            buf.push_str(g.id);
            buf.push('"');
            buf.push_str(r#","observation":"#);
            let seat = g.seat.unwrap_or(SPECTATOR_SEAT);
            g.public.write_seat(g.game, seat, deadline_ms, &mut buf);
            buf.push('}');
        }
        None => buf.push_str("null"),
    }
    buf.push_str(r#","events":"#);
    buf.push_str(events_json);
    buf.push('}');
    buf
}

/// The lobby part of `state` as last sent and its JSON, reused while the lobby looks
/// the same (every move would otherwise encode it again). The server keeps one per
/// lobby shown; only this module reads or fills them.
#[derive(Debug)]
pub(super) struct LobbyViewCache {
    view: LobbyView,
    json: String,
    /// The profile registry's change mark when `view` was last found current: a seated
    /// profile not changed since shows as `view` says without looking it up.
    profiles_mark: u64,
}

/// The empty view: not seated anywhere.
pub(super) const EMPTY_STATE: &str = r#"{"type":"state","lobby":null,"game":null,"events":[]}"#;

impl Server {
    fn lobby_view(&self, lobby: &Lobby) -> LobbyView {
        LobbyView {
            code: lobby.code().to_string(),
            status: lobby.status(),
            host_id: lobby.host().to_string(),
            options: lobby.options(),
            players: lobby
                .seats()
                .iter()
                .map(|s| {
                    let profile = s.profile.as_deref().and_then(|p| self.profiles.get(p));
                    PlayerView {
                        id: s.player_id.clone(),
                        name: s.name.clone(),
                        is_ai: s.is_ai(),
                        connected: match s.occupant {
                            Occupant::Ai(_) => true,
                            Occupant::Human(id) => {
                                self.sessions.get(id).is_some_and(|x| x.conn.is_some())
                            }
                        },
                        level: s.level(),
                        profile_id: profile.map(|p| p.id.clone()),
                        rating: profile.map(|p| Figure(p.rating.shown())),
                        mu: profile.map(|p| Figure(p.rating.mu)),
                        sigma: profile.map(|p| Figure(p.rating.sigma)),
                        rating_change: profile.and(s.rating_change).map(Figure),
                    }
                })
                .collect(),
            min_players: crate::vocabulary::game::types::PLAYERS_MIN,
            max_players: crate::vocabulary::game::types::PLAYERS_MAX,
            ai_available: self.bridge.available(),
            spectators: self.spectator_names(lobby.id()),
            public: lobby.is_public(),
        }
    }

    /// Whether the cached view is what [`Server::lobby_view`] would build for `lobby`
    /// now, compared field by field without building it.
    fn lobby_view_is(&self, cache: &LobbyViewCache, lobby: &Lobby) -> bool {
        let view = &cache.view;
        view.code == lobby.code()
            && view.status == lobby.status()
            && view.host_id == lobby.host()
            && view.options == lobby.options()
            && view.public == lobby.is_public()
            && view.ai_available == self.bridge.available()
            && self.spectators_are(lobby.id(), &view.spectators)
            && view.players.len() == lobby.seats().len()
            && view.players.iter().zip(lobby.seats()).all(|(p, s)| {
                p.id == s.player_id
                    && p.name == s.name
                    && p.is_ai == s.is_ai()
                    && p.level == s.level()
                    && self.seat_profile_is(p, s, cache.profiles_mark)
                    && p.connected
                        == match s.occupant {
                            Occupant::Ai(_) => true,
                            Occupant::Human(id) => {
                                self.sessions.get(id).is_some_and(|x| x.conn.is_some())
                            }
                        }
            })
    }

    /// Whether the profile fields of `p` are what the profile seated at `s` shows now,
    /// `p` having been current when the registry's change mark was `mark`: a look-up
    /// only when the seat's profile is not the one `p` names or may have changed since
    /// (a lobby's view is checked at every move, a look-up among thousands of profiles
    /// touches memory no other move does).
    fn seat_profile_is(&self, p: &PlayerView, s: &SeatInfo, mark: u64) -> bool {
        if let (Some(shown), Some(seated)) = (&p.profile_id, &s.profile)
            && shown == seated
            && !self.profiles.changed_since(seated, mark)
        {
            return p.rating_change == s.rating_change.map(Figure);
        }
        let profile = s.profile.as_deref().and_then(|x| self.profiles.get(x));
        p.profile_id.as_deref() == profile.map(|x| x.id.as_str())
            && p.mu == profile.map(|x| Figure(x.rating.mu))
            && p.sigma == profile.map(|x| Figure(x.rating.sigma))
            && p.rating_change == profile.and(s.rating_change).map(Figure)
    }

    /// Brings the lobby part's cached JSON up to date; false without such a lobby.
    fn refresh_lobby_json(&mut self, lobby_id: LobbyId) -> bool {
        let Some(lobby) = self.lobbies.get(lobby_id) else {
            return false;
        };
        let profiles_mark = self.profiles.changes();
        let fresh = match self.lobby_views.get(&lobby_id) {
            Some(cache) if self.lobby_view_is(cache, lobby) => {
                debug_assert_eq!(cache.view, self.lobby_view(lobby), "stale lobby view");
                None
            }
            _ => Some(self.lobby_view(lobby)),
        };
        match fresh {
            Some(view) => {
                let json = serde_json::to_string(&view).unwrap_or_default();
                let cache = LobbyViewCache {
                    view,
                    json,
                    profiles_mark,
                };
                self.lobby_views.insert(lobby_id, cache);
            }
            None => {
                if let Some(cache) = self.lobby_views.get_mut(&lobby_id) {
                    cache.profiles_mark = profiles_mark;
                }
            }
        }
        true
    }

    /// The cached views of lobbies deleted during this input go with them.
    pub(super) fn release_gone_views(&mut self) {
        for lobby in self.lobbies.gone() {
            self.lobby_views.remove(lobby);
        }
    }

    /// Milliseconds left for `to_act` in `lobby` when that seat is a timed human.
    fn deadline_ms(&self, now: Time, lobby: &Lobby, to_act: Option<Seat>) -> Option<u64> {
        let timing = self.timing(lobby.id());
        to_act.and_then(|s| lobby.turns().human_ms_left(s, now, &timing))
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
        if !self.refresh_lobby_json(lobby_id) {
            return;
        }
        // Committed before anyone sees it (the shell commits a pass's records first).
        self.persist_lobby(lobby_id);
        let Some(lobby) = self.lobbies.get(lobby_id) else {
            return;
        };
        let lobby_json = self
            .lobby_views
            .get(&lobby_id)
            .map_or("null", |c| c.json.as_str());
        let events_json = serde_json::to_string(events).unwrap_or_else(|_| "[]".to_string());
        let public = lobby.game().map(Game::observation_json);
        for (seat, info) in (0u8..).zip(lobby.seats()) {
            let Occupant::Human(session) = info.occupant else {
                continue;
            };
            if Some(session) == except {
                continue;
            }
            let Some(conn) = self.sessions.get(session).and_then(|s| s.conn) else {
                continue;
            };
            #[cfg(feature = "planted-bugs")]
            if seat == 1 && crate::planted::missed_broadcast(events) {
                continue;
            }
            out.push(Output::Send {
                conn,
                text: self.seat_state(
                    now,
                    lobby,
                    lobby_json,
                    public.as_ref(),
                    Some(seat),
                    &events_json,
                ),
                delivery: state_delivery(events),
            });
        }
        let spectators = self
            .audiences
            .get(&lobby_id)
            .map(|a| a.spectators())
            .unwrap_or_default();
        let mut text = None;
        for spectator in spectators {
            let Some(conn) = self.sessions.get(spectator.session).and_then(|s| s.conn) else {
                continue;
            };
            // Every spectator sees the same view: it is encoded once.
            let text = text.get_or_insert_with(|| {
                self.seat_state(now, lobby, lobby_json, public.as_ref(), None, &events_json)
            });
            out.push(Output::Send {
                conn,
                text: text.clone(),
                delivery: state_delivery(events),
            });
        }
    }

    /// The `state` of `seat` in `lobby`, from the lobby part, the public parts of the
    /// game (when there is one) and the events, all encoded already.
    fn seat_state(
        &self,
        now: Time,
        lobby: &Lobby,
        lobby_json: &str,
        public: Option<&ObservationJson>,
        seat: Option<Seat>,
        events_json: &str,
    ) -> String {
        let id = lobby.shown_game_id().unwrap_or_default();
        let game = lobby.game().zip(public).map(|(game, public)| SeatGame {
            id: &id,
            game,
            public,
            seat,
        });
        let deadline = |to_act| self.deadline_ms(now, lobby, to_act);
        state_text(lobby_json, game, deadline, events_json)
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
        if let Some(lobby) = s.lobby {
            self.persist_lobby(lobby);
        }
        let Some(s) = self.sessions.get(session) else {
            return;
        };
        let seated = s.lobby.and_then(|id| self.lobbies.get(id)).and_then(|l| {
            let seat = l.seat_of(session)?;
            Some((l, Some(seat)))
        });
        let watching = s
            .watching
            .and_then(|id| self.lobbies.get(id))
            .map(|l| (l, None));
        let text = match seated.or(watching) {
            Some((lobby, seat)) => {
                let lobby_json = serde_json::to_string(&self.lobby_view(lobby)).unwrap_or_default();
                let public = lobby.game().map(Game::observation_json);
                self.seat_state(now, lobby, &lobby_json, public.as_ref(), seat, "[]")
            }
            None => EMPTY_STATE.to_string(),
        };
        out.push(Output::Send {
            conn,
            text,
            delivery: Delivery::Newest,
        });
    }
}

/// A state's delivery: only a state without events may be replaced by a newer one
/// (events are not repeated, so dropping them would lose them).
fn state_delivery(events: &[Event]) -> Delivery {
    #[cfg(feature = "planted-bugs")]
    if crate::planted::planted(crate::planted::Bug::EventsReplaceable) {
        return Delivery::Newest;
    }
    if events.is_empty() {
        Delivery::Newest
    } else {
        Delivery::Every
    }
}
