//! Profiles and ratings as players meet them (PROTOCOL.md 7.1 and 7.3): `create_profile`
//! (at most `PROFILE_CREATE_RATE` per address per hour), the `profile_key` of `hello`
//! (a failed one counts against `JOIN_FAIL_RATE`, the budget of unknown lobby codes,
//! and once that is empty no key from the address is even looked at), `delete_profile`,
//! the profile a seat rates, and the rating update when a rated game ends.
//!
//! A game is rated when at least one seat holds a profile. Every seat takes part in the
//! update: a profile with its rating, an AI seat with its level's fixed rating
//! ([`rating::ai_rating`]), a guest with a new player's rating; only the profiles'
//! ratings are kept. A profile whose player left plays on as an AI seat and is rated
//! by that seat's final score. The update's records follow the game's last move in the
//! same batch, so a store commits both or neither, and a restore, which replays moves
//! without running this, never rates a game twice.

use crate::machine::lobby::{LobbyError, Occupant, clean_name};
use crate::machine::name_holds::Hold;
use crate::machine::profiles::{CreateError, Profile};
use crate::machine::rating::{self, Figure, Rating};
use crate::machine::records::Record;
use crate::vocabulary::ids::ConnId;
use crate::vocabulary::ids::{LobbyId, SessionId};
use crate::vocabulary::io::{Delivery, Output};
use crate::vocabulary::profile::SharedProfiles;
use crate::vocabulary::stats::RequestRefusal;
use crate::vocabulary::time::Time;
use crate::vocabulary::wire::{self, ErrorCode, LobbyStatus, ProfileView, ServerMessage};

use super::Server;

impl Server {
    /// The profile registry (for `/profiles/<id>` and `/leaderboard`).
    pub fn profiles(&self) -> &crate::machine::profiles::ProfileRegistry {
        &self.profiles
    }

    /// The `profile` part of `welcome`.
    pub(super) fn profile_view(profile: &Profile) -> ProfileView {
        ProfileView {
            id: profile.id.clone(),
            name: profile.name.clone(),
            rating: Figure(profile.rating.shown()),
            mu: Figure(profile.rating.mu),
            sigma: Figure(profile.rating.sigma),
            games: profile.games,
        }
    }

    /// Signs `session` in with `key` from `conn`'s address: the profile, or `None` (no
    /// key, an unknown one, or the address out of guesses; never an error).
    pub(super) fn sign_in(
        &mut self,
        now: Time,
        conn: ConnId,
        session: SessionId,
        key: Option<&str>,
    ) -> Option<ProfileView> {
        let key = key?;
        let ip = self.conn_ip(conn);
        if ip.is_some_and(|ip| self.join_fail_rate.available(&ip, now) == 0) {
            self.counters
                .requests_refused
                .bump(RequestRefusal::JoinFailRate);
            return None;
        }
        let Some(profile) = self.profiles.find_by_key(key) else {
            self.guess_failed(now, ip);
            return None;
        };
        let view = Server::profile_view(profile);
        let id = profile.id.clone();
        if let Some(s) = self.sessions.get_mut(session) {
            s.profile = Some(id);
        }
        Some(view)
    }

    pub(super) fn create_profile(
        &mut self,
        now: Time,
        conn: ConnId,
        session: SessionId,
        name: &str,
        out: &mut Vec<Output>,
    ) -> Result<(), LobbyError> {
        let name = clean_name(name)?;
        if self.profiles.name_taken(&name, None) {
            return Err(LobbyError::NotAllowed("That profile name is taken."));
        }
        if self.name_held(conn, &name, out)? {
            return Ok(());
        }
        let Some(ip) = self.conn_ip(conn) else {
            return Ok(());
        };
        if !self.profile_rate.try_take(&ip, now) {
            let wait_ms = self.profile_rate.wait_us(&ip, now).div_ceil(1000);
            self.counters
                .requests_refused
                .bump(RequestRefusal::ProfileRate);
            self.send_error(
                conn,
                ErrorCode::RateLimited,
                "Too many new profiles from your address, try again later.",
                Some(wait_ms),
                out,
            );
            return Ok(());
        }
        let (profile, key) = match self.profiles.create(&name) {
            Ok(created) => created,
            Err(CreateError::NameTaken) => {
                return Err(LobbyError::NotAllowed("That profile name is taken."));
            }
            Err(CreateError::Full) => {
                self.counters
                    .requests_refused
                    .bump(RequestRefusal::MaxProfiles);
                self.send_error(
                    conn,
                    ErrorCode::Busy,
                    "The server has too many profiles right now.",
                    None,
                    out,
                );
                return Ok(());
            }
        };
        self.persist_profile(&profile.id);
        self.profile_changed(&profile.id);
        if let Some(s) = self.sessions.get_mut(session) {
            s.profile = Some(profile.id.clone());
        }
        let view = Server::profile_view(&profile);
        let text = wire::encode(&ServerMessage::Profile {
            id: view.id,
            key,
            name: view.name,
            rating: view.rating,
            mu: view.mu,
            sigma: view.sigma,
            games: view.games,
        });
        out.push(Output::Send {
            conn,
            text,
            delivery: Delivery::Every,
        });
        self.seat_signed_in(now, session, out);
        Ok(())
    }

    /// Whether the shared store's claims stop `name`'s creation: `Err` when another
    /// shard's creation holds it, `Ok(true)` once `busy` is answered because the store
    /// left it unchecked.
    fn name_held(
        &mut self,
        conn: ConnId,
        name: &str,
        out: &mut Vec<Output>,
    ) -> Result<bool, LobbyError> {
        match self.name_holds.hold(name) {
            Some(Hold::Elsewhere) => Err(LobbyError::NotAllowed("That profile name is taken.")),
            Some(Hold::Unchecked) => {
                self.send_error(
                    conn,
                    ErrorCode::Busy,
                    "Profile names cannot be checked right now, try again.",
                    Some(NAME_UNCHECKED_RETRY_MS),
                    out,
                );
                Ok(true)
            }
            None => Ok(false),
        }
    }

    pub(super) fn delete_profile(
        &mut self,
        now: Time,
        conn: ConnId,
        session: SessionId,
        out: &mut Vec<Output>,
    ) -> Result<(), LobbyError> {
        let Some(id) = self
            .sessions
            .get_mut(session)
            .and_then(|s| s.profile.take())
        else {
            return Err(LobbyError::NotAllowed(
                "You are not signed in to a profile.",
            ));
        };
        self.profile_changed(&id);
        if self.profiles.delete(&id) && self.records.is_some() {
            self.persist(Record::ProfileGone {
                profile: id.clone(),
            });
        }
        // Other sessions signed in with it are guests from now on.
        for other in self.sessions.ids().collect::<Vec<_>>() {
            if let Some(s) = self.sessions.get_mut(other)
                && s.profile.as_deref() == Some(id.as_str())
            {
                s.profile = None;
            }
        }
        let text = wire::encode(&ServerMessage::ProfileDeleted { id });
        out.push(Output::Send {
            conn,
            text,
            delivery: Delivery::Every,
        });
        self.seat_signed_in(now, session, out);
        Ok(())
    }

    /// Whether `session` may take a seat in `lobby`: not when its profile already rates
    /// another seat there (one profile, one seat per table).
    pub(super) fn profile_may_sit(&self, session: SessionId, lobby: LobbyId) -> bool {
        let Some(s) = self.sessions.get(session) else {
            return true;
        };
        let Some(profile) = s.profile.as_deref() else {
            return true;
        };
        self.lobbies.get(lobby).is_none_or(|l| {
            l.seats().iter().all(|seat| {
                seat.occupant == Occupant::Human(session)
                    || seat.profile.as_deref() != Some(profile)
            })
        })
    }

    /// The session's seat in a waiting lobby rates the profile it is signed in with now
    /// (or none), unless another seat there rates that profile.
    pub(super) fn seat_signed_in(&mut self, now: Time, session: SessionId, out: &mut Vec<Output>) {
        let Some(s) = self.sessions.get(session) else {
            return;
        };
        let Some(lobby_id) = s.lobby else {
            return;
        };
        let profile = s.profile.clone();
        let Some(lobby) = self.lobbies.get(lobby_id) else {
            return;
        };
        if lobby.status() != LobbyStatus::Waiting {
            return;
        }
        let Some(seat) = lobby.seat_of(session) else {
            return;
        };
        let profile = profile.filter(|_| self.profile_may_sit(session, lobby_id));
        self.lobbies.set_seat_profile(lobby_id, seat, profile);
        self.broadcast(now, lobby_id, &[], out);
    }

    /// After a `hello`: the session's seat in a waiting lobby rates the profile this
    /// hello signed in with, so a player back without a key sits there as a guest (and
    /// with it, as the profile again). Nothing changes when the seat already does.
    pub(super) fn seat_follows_sign_in(
        &mut self,
        now: Time,
        session: SessionId,
        out: &mut Vec<Output>,
    ) {
        let Some(s) = self.sessions.get(session) else {
            return;
        };
        let Some(lobby) = s.lobby.and_then(|id| self.lobbies.get(id)) else {
            return;
        };
        if lobby.status() != LobbyStatus::Waiting {
            return;
        }
        let wanted = s
            .profile
            .clone()
            .filter(|_| self.profile_may_sit(session, lobby.id()));
        let Some(seat) = lobby.seat_of(session) else {
            return;
        };
        let held = lobby
            .seats()
            .get(usize::from(seat))
            .and_then(|x| x.profile.clone());
        if held != wanted {
            self.seat_signed_in(now, session, out);
        }
    }

    /// Rates the lobby's finished game if a seat holds a profile: each profile's new
    /// rating is recorded and each profile seat shows its change.
    pub(super) fn rate_game(&mut self, lobby_id: LobbyId) {
        let Some(lobby) = self.lobbies.get(lobby_id) else {
            return;
        };
        let Some(game) = lobby.game() else {
            return;
        };
        let seats: Vec<Option<String>> = lobby
            .seats()
            .iter()
            .map(|s| s.profile.clone().filter(|p| self.profiles.get(p).is_some()))
            .collect();
        if seats.iter().all(Option::is_none) {
            return;
        }
        let before: Vec<Rating> = lobby
            .seats()
            .iter()
            .zip(&seats)
            .map(|(seat, profile)| match (profile, seat.level()) {
                (Some(p), _) => self.profiles.get(p).map_or(Rating::NEW, |p| p.rating),
                (None, Some(level)) => rating::ai_rating(level),
                (None, None) => Rating::NEW,
            })
            .collect();
        let scores: Vec<i64> = game.scores().iter().map(|&s| i64::from(s)).collect();
        let after = rating::rate(&before, &scores);
        let mut changes = vec![None; seats.len()];
        for (i, profile) in seats.iter().enumerate() {
            let (Some(p), Some(old), Some(new)) = (profile, before.get(i), after.get(i)) else {
                continue;
            };
            self.profiles.rated(p, *new);
            changes[i] = Some(((new.shown() - old.shown()) * 100.0).round() / 100.0);
            self.persist_profile(p);
            self.profile_changed(p);
        }
        self.counters.games_rated += 1;
        self.lobbies.set_rating_changes(lobby_id, &changes);
    }

    /// What the deployment's shared store holds about the profiles a connection's next
    /// message names (profiles across shards): each profile newer than this server's
    /// copy is taken (and recorded, so that a restart still rates its seats), and the
    /// one asked for by its key digest and no longer there was deleted on another
    /// shard: it is forgotten here too. The claim of a `create_profile`'s name holds it
    /// or frees it ([`crate::machine::name_holds::NameHolds`]).
    pub(super) fn learn_profiles(&mut self, news: &SharedProfiles) {
        if let Some(claim) = &news.names {
            self.name_holds.learn(claim);
        }
        for record in &news.found {
            if self.profiles.learn(record) {
                self.persist_profile(&record.id);
                self.profile_changed(&record.id);
            }
        }
        let Some(asked) = &news.asked_key_sha256 else {
            return;
        };
        if news.found.iter().any(|r| r.key_sha256 == *asked) {
            return;
        }
        let Some(id) = self.profiles.id_by_digest(asked).map(str::to_owned) else {
            return;
        };
        self.profiles.delete(&id);
        self.profile_changed(&id);
        if self.records.is_some() {
            self.persist(Record::ProfileGone { profile: id });
        }
    }

    /// Records a profile as it now is.
    fn persist_profile(&mut self, id: &str) {
        if self.records.is_none() {
            return;
        }
        if let Some(record) = self.profiles.record(id) {
            self.persist(Record::Profile(record));
        }
    }
}

/// The wait a `busy` answer suggests when the shared store left a profile name unchecked.
pub const NAME_UNCHECKED_RETRY_MS: u64 = 2_000;

/// Profiles on a leaderboard need this many rated games.
pub const LEADERBOARD_GAMES_MIN: u32 = 5;
/// Profiles a leaderboard lists at most.
pub const LEADERBOARD_PROFILES_MAX: usize = 100;

impl Server {
    /// From now on, remember which profiles change (created, rated, deleted) until
    /// [`Server::take_profile_changes`]; every existing profile counts as changed once.
    /// A shell that publishes `/profiles/<id>` calls it once.
    pub fn watch_profiles(&mut self) {
        self.profile_changes = Some(self.profiles.iter().map(|p| p.id.clone()).collect());
    }

    /// The ids of the profiles changed since the last call (at most `PROFILES_MAX` plus
    /// those deleted meanwhile).
    pub fn take_profile_changes(&mut self) -> Vec<String> {
        self.profile_changes
            .as_mut()
            .map(|c| std::mem::take(c).into_iter().collect())
            .unwrap_or_default()
    }

    pub(super) fn profile_changed(&mut self, id: &str) {
        if let Some(c) = &mut self.profile_changes {
            c.insert(id.to_owned());
        }
    }

    /// The `/profiles/<id>` body: `{id, name, rating, mu, sigma, games, recent_games}`
    /// (`recent_games` is empty: finished games are not kept yet).
    pub fn profile_json(&self, id: &str) -> Option<String> {
        let p = self.profiles.get(id)?;
        Some(
            serde_json::json!({
                "id": p.id,
                "name": p.name,
                "rating": p.rating.shown(),
                "mu": p.rating.mu,
                "sigma": p.rating.sigma,
                "games": p.games,
                "recent_games": [],
            })
            .to_string(),
        )
    }

    /// The `/leaderboard` body: the best [`LEADERBOARD_PROFILES_MAX`] profiles by shown
    /// rating with at least [`LEADERBOARD_GAMES_MIN`] rated games (ties by id), and the
    /// AI levels' fixed ratings.
    pub fn leaderboard_json(&self) -> String {
        let mut ranked: Vec<&Profile> = self
            .profiles
            .iter()
            .filter(|p| p.games >= LEADERBOARD_GAMES_MIN)
            .collect();
        let order = |a: &&Profile, b: &&Profile| {
            b.rating
                .shown()
                .total_cmp(&a.rating.shown())
                .then_with(|| a.id.cmp(&b.id))
        };
        if ranked.len() > LEADERBOARD_PROFILES_MAX {
            ranked.select_nth_unstable_by(LEADERBOARD_PROFILES_MAX, order);
            ranked.truncate(LEADERBOARD_PROFILES_MAX);
        }
        ranked.sort_by(order);
        let profiles: Vec<serde_json::Value> = ranked
            .iter()
            .map(|p| {
                serde_json::json!({
                    "id": p.id,
                    "name": p.name,
                    "rating": p.rating.shown(),
                    "mu": p.rating.mu,
                    "sigma": p.rating.sigma,
                    "games": p.games,
                })
            })
            .collect();
        let ai = |r: Rating| serde_json::json!({"mu": r.mu, "sigma": r.sigma});
        serde_json::json!({
            "profiles": profiles,
            "ai": {
                "easy": ai(rating::AI_EASY),
                "normal": ai(rating::AI_NORMAL),
                "strong": ai(rating::AI_STRONG),
            },
        })
        .to_string()
    }
}
