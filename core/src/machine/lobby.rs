//! The lobby manager: lobbies, their seats, host rules, options, and the game each one
//! runs. Every lobby transition lives here; the server turns results into messages.
//!
//! Seats are never removed or reordered while a game runs, so a seat index is the
//! player index in the game. A lobby is deleted as soon as no human seat remains.
//!
//! Each lobby is charged to the address ([`IpKey`]) of the session that created it, for
//! `MAX_LOBBIES_PER_IP` and `MAX_GAMES_PER_IP`; the per-address counts hold one entry
//! per address with at least one lobby, so they are bounded by `MAX_LOBBIES`. A
//! dormant game (see ARCHITECTURE.md, "What the absent hold") still counts for its
//! address and `MAX_LOBBIES`, but not for `MAX_ACTIVE_GAMES`.

use std::collections::{BTreeMap, BTreeSet};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng;

use crate::machine::server::LobbyViewCache;
use crate::machine::session::{LobbyId, SessionId};
use crate::machine::turns::{AI_MOVE_SPREAD_US_MAX, Decider, TurnBook};
use crate::vocabulary::game::types::{PLAYERS_MAX, PLAYERS_MIN};
use crate::vocabulary::game::{Action, ActionError, AiLevel, Event, Game, Options, Phase, Seat};
use crate::vocabulary::limiter::IpKey;
use crate::vocabulary::rng;
use crate::vocabulary::shard::ShardId;
use crate::vocabulary::time::Time;
use crate::vocabulary::wire::{ErrorCode, LobbyStatus};

/// Characters of lobby codes (no 0/O/1/I).
pub const CODE_ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
/// Length of a lobby code.
pub const CODE_CHARS: usize = 6;
pub use crate::vocabulary::names::NAME_CHARS_MAX;
/// Names of AI seats, in the order they are used.
pub const AI_NAMES: [&str; 12] = [
    "Merlin",
    "Morgana",
    "Gandalf",
    "Circe",
    "Prospero",
    "Radagast",
    "Medea",
    "Elminster",
    "Rincewind",
    "Ged",
    "Saruman",
    "Baba Yaga",
];

/// Who sits in a seat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Occupant {
    Human(SessionId),
    /// An AI seat and how well it plays.
    Ai(AiLevel),
}

/// One place at the table.
#[derive(Clone, Debug)]
pub struct SeatInfo {
    /// The session's player id, or `ai-xxxxxxxx`.
    pub player_id: String,
    pub name: String,
    pub occupant: Occupant,
    /// The profile this seat rates (PROTOCOL.md 7.1): set when a signed-in session
    /// takes the seat, kept when the seat plays on as an AI.
    pub profile: Option<String>,
    /// The change of the profile's shown rating by the lobby's last rated game.
    pub rating_change: Option<f64>,
}

impl SeatInfo {
    pub fn is_ai(&self) -> bool {
        self.level().is_some()
    }

    /// An AI seat's level; `None` for a human.
    pub fn level(&self) -> Option<AiLevel> {
        match self.occupant {
            Occupant::Ai(level) => Some(level),
            Occupant::Human(_) => None,
        }
    }
}

/// A lobby and, while playing or finished, its game. Its fields change only through
/// the [`LobbyManager`] (which keeps its counts and indexes in line) and the turn
/// methods below.
#[derive(Debug)]
pub struct Lobby {
    id: LobbyId,
    code: String,
    status: LobbyStatus,
    /// The host's player id.
    host: String,
    options: Options,
    seats: Vec<SeatInfo>,
    game: Option<Game>,
    /// Counts games started in this lobby, so late answers for an old game are ignored.
    game_no: u64,
    /// The current game's seed (while playing or finished).
    seed: Option<u64>,
    /// The current game's public id (while playing or finished).
    game_id: Option<String>,
    /// Moves applied to the current game.
    moves: u64,
    /// Whose turn is running since when, and what the AI has decided.
    turns: TurnBook,
    /// The lobby part of `state` as last sent (`server/views.rs` reads and fills it).
    view_cache: LobbyViewCache,
    /// The address of the session that created the lobby, charged for it.
    owner: IpKey,
    /// Since when every human seat's session has been disconnected (None while one is
    /// connected). Set through [`LobbyManager::set_away`], which keeps the idle index.
    away_since: Option<Time>,
    /// Its key in the manager's idle index, while it is in it.
    idle_key: Option<Time>,
    /// A running game left by all its humans for `ABANDONED_GAME_TTL`: it makes no
    /// moves and does not count against `MAX_ACTIVE_GAMES` until one of them returns.
    dormant: bool,
    /// Whether what the lobby's record holds (its status, host, options, seats, game
    /// number and seed) may have changed since the server last recorded it: every
    /// method that changes one of them sets it, so that the server need not compare
    /// the whole record before every `state`.
    record_changed: bool,
}

impl Lobby {
    fn new(id: LobbyId, code: String, host: String, seats: Vec<SeatInfo>, owner: IpKey) -> Lobby {
        Lobby {
            id,
            code,
            status: LobbyStatus::Waiting,
            host,
            options: Options::default(),
            seats,
            game: None,
            game_no: 0,
            seed: None,
            game_id: None,
            moves: 0,
            turns: TurnBook::default(),
            view_cache: LobbyViewCache::default(),
            owner,
            away_since: None,
            idle_key: None,
            dormant: false,
            record_changed: true,
        }
    }

    pub fn id(&self) -> LobbyId {
        self.id
    }

    /// The join code (upper case).
    pub fn code(&self) -> &str {
        &self.code
    }

    pub fn status(&self) -> LobbyStatus {
        self.status
    }

    /// The host's player id.
    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn options(&self) -> Options {
        self.options
    }

    /// The seats in order: a seat's index is its player index in the game.
    pub fn seats(&self) -> &[SeatInfo] {
        &self.seats
    }

    /// The current game (while playing or finished).
    pub fn game(&self) -> Option<&Game> {
        self.game.as_ref()
    }

    /// Games started in this lobby: the current game's number.
    pub fn game_no(&self) -> u64 {
        self.game_no
    }

    /// The current game's seed (while playing or finished).
    pub fn seed(&self) -> Option<u64> {
        self.seed
    }

    /// The current game's public id as recorded (while playing or finished).
    pub fn game_id(&self) -> Option<&str> {
        self.game_id.as_deref()
    }

    /// The id `state.game.id` shows: the recorded one, or for a game recorded before
    /// games had ids, one derived from its secret seed (SHA-256 of the seed, the lobby
    /// and the game's number; 80 bits, as unguessable as the seed).
    pub fn shown_game_id(&self) -> Option<String> {
        if let Some(id) = &self.game_id {
            return Some(id.clone());
        }
        use sha2::{Digest as _, Sha256};
        let seed = self.seed?;
        let mut h = Sha256::new();
        h.update(b"wizard game id");
        h.update(seed.to_le_bytes());
        h.update(self.id.0.to_le_bytes());
        h.update(self.game_no.to_le_bytes());
        Some(
            h.finalize()[..10]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        )
    }

    /// Moves applied to the current game.
    pub fn moves(&self) -> u64 {
        self.moves
    }

    /// Whose turn is running since when, and what the AI has decided.
    pub fn turns(&self) -> &TurnBook {
        &self.turns
    }

    /// The address the lobby is charged to.
    pub fn owner(&self) -> IpKey {
        self.owner
    }

    /// Whether the lobby's record may have changed since [`Lobby::mark_record_kept`].
    pub fn record_changed(&self) -> bool {
        self.record_changed
    }

    /// The server recorded the lobby as it is now.
    pub(crate) fn mark_record_kept(&mut self) {
        self.record_changed = false;
    }

    /// Whether its running game is dormant (see [`LobbyManager::set_dormant`]).
    pub fn is_dormant(&self) -> bool {
        self.dormant
    }

    /// The lobby part of `state` as last sent, for `server/views.rs`.
    pub(crate) fn view_cache(&self) -> &LobbyViewCache {
        &self.view_cache
    }

    /// Keeps `cache` as the lobby part of `state` last sent.
    pub(crate) fn replace_view_cache(&mut self, cache: LobbyViewCache) {
        self.view_cache = cache;
    }

    /// Brings the turn book in line with the seats the running game awaits now; a
    /// no-op without a running game.
    pub fn sync_turns(&mut self, now: Time) {
        let Some(game) = self
            .game
            .as_ref()
            .filter(|_| self.status == LobbyStatus::Playing)
        else {
            return;
        };
        let awaited: Vec<(Seat, bool)> = game
            .seats_to_act()
            .map(|s| (s, self.seats.get(usize::from(s)).is_some_and(|i| i.is_ai())))
            .collect();
        // Drawn from the game's seed on a stream of its own per move (the fallback
        // player draws from stream `moves`), so a replay spreads the same.
        let (seed, moves) = (self.seed.unwrap_or_default(), self.moves);
        self.turns.sync(now, &awaited, |seat| {
            let mut rng = ChaCha12Rng::seed_from_u64(seed);
            rng.set_stream((1 << 63) | (moves << 3) | u64::from(seat));
            rng.next_u64() % (AI_MOVE_SPREAD_US_MAX + 1)
        });
    }

    /// `seat` moved: its turn is over.
    pub fn finish_turn(&mut self, seat: Seat) {
        self.turns.finish(seat);
    }

    /// No AI move before `until` (a trick was completed).
    pub fn pause_turns_until(&mut self, until: Time) {
        self.turns.pause_until = until;
    }

    /// Drops every running turn (no game running, or a dormant one).
    pub fn clear_turns(&mut self) {
        self.turns.clear();
    }

    /// The AI service was asked for `seat`'s move with `request_id`.
    pub fn turn_asked(&mut self, seat: Seat, request_id: u64) {
        self.turns.asked(seat, request_id);
    }

    /// Records a decision for `seat`'s turn ([`TurnBook::decide`]); false for a stale
    /// one.
    pub fn decide_turn(
        &mut self,
        seat: Seat,
        request_id: Option<u64>,
        action: Action,
        by: Decider,
    ) -> bool {
        self.turns.decide(seat, request_id, action, by)
    }

    /// Since when every human seat's session has been disconnected (None while one is
    /// connected).
    pub fn away_since(&self) -> Option<Time> {
        self.away_since
    }

    /// A lobby without a running game whose humans are all disconnected: the kind
    /// `MAX_LOBBIES` may delete for a new one.
    pub fn is_idle(&self) -> bool {
        self.status != LobbyStatus::Playing && self.away_since.is_some()
    }

    pub fn seat_of(&self, player_id: &str) -> Option<Seat> {
        self.seats
            .iter()
            .position(|s| s.player_id == player_id)
            .and_then(|i| Seat::try_from(i).ok())
    }

    /// Sessions of the human seats, in seat order.
    pub fn humans(&self) -> impl Iterator<Item = SessionId> + '_ {
        self.seats.iter().filter_map(|s| match s.occupant {
            Occupant::Human(id) => Some(id),
            Occupant::Ai(_) => None,
        })
    }

    /// `wanted`, or `wanted (2)`, `wanted (3)`... when a seat's name or one of
    /// `watching` (the lobby's spectators) looks the same ([`crate::vocabulary::names::unique`]).
    fn unique_name(&self, watching: &[String], wanted: &str) -> String {
        let seats = self.seats.iter().map(|s| s.name.as_str());
        crate::vocabulary::names::unique(seats.chain(watching.iter().map(String::as_str)), wanted)
    }
}

/// Why a lobby operation was refused (the client's fault, or capacity).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LobbyError {
    NotFound(&'static str),
    NotAllowed(&'static str),
    Invalid(&'static str),
    /// `MAX_LOBBIES` lobbies exist.
    TooManyLobbies,
    Illegal(ActionError),
}

impl LobbyError {
    pub fn code(&self) -> ErrorCode {
        match self {
            LobbyError::NotFound(_) => ErrorCode::NotFound,
            LobbyError::NotAllowed(_) => ErrorCode::NotAllowed,
            LobbyError::Invalid(_) => ErrorCode::Invalid,
            LobbyError::TooManyLobbies => ErrorCode::Busy,
            LobbyError::Illegal(_) => ErrorCode::IllegalAction,
        }
    }

    pub fn message(&self) -> String {
        match self {
            LobbyError::NotFound(m) | LobbyError::NotAllowed(m) | LobbyError::Invalid(m) => {
                (*m).to_string()
            }
            LobbyError::TooManyLobbies => "The server has too many lobbies right now.".into(),
            LobbyError::Illegal(e) => e.to_string(),
        }
    }
}

/// Cleans and checks a player name ([`crate::vocabulary::names::clean`]).
pub fn clean_name(raw: &str) -> Result<String, LobbyError> {
    crate::vocabulary::names::clean(raw).map_err(|e| LobbyError::Invalid(e.name_message()))
}

/// What one address is charged for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IpShare {
    /// Lobbies it created that exist (any status).
    pub lobbies: usize,
    /// Of those, the ones with a game running (dormant or not).
    pub games: usize,
}

/// All lobbies, by id and by code.
#[derive(Debug)]
pub struct LobbyManager {
    lobbies: BTreeMap<LobbyId, Lobby>,
    by_code: BTreeMap<String, LobbyId>,
    next_id: LobbyId,
    lobbies_max: usize,
    /// Running games that are not dormant.
    playing: usize,
    dormant: usize,
    per_ip: BTreeMap<IpKey, IpShare>,
    /// `(away_since, id)` of the idle lobbies ([`Lobby::is_idle`]), idle longest first.
    idle: BTreeSet<(Time, LobbyId)>,
    /// Lobbies deleted since [`LobbyManager::take_gone`] was last called.
    gone: Vec<LobbyId>,
    rng: ChaCha12Rng,
    /// The server's `SHARD_ID`: the first character of every code it creates.
    shard: Option<ShardId>,
}

impl LobbyManager {
    pub fn new(lobbies_max: usize, rng: ChaCha12Rng, shard: Option<ShardId>) -> Self {
        LobbyManager {
            lobbies: BTreeMap::new(),
            by_code: BTreeMap::new(),
            next_id: LobbyId(1),
            lobbies_max,
            playing: 0,
            dormant: 0,
            per_ip: BTreeMap::new(),
            idle: BTreeSet::new(),
            gone: Vec::new(),
            rng,
            shard,
        }
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
        let seats: Vec<SeatInfo> = record
            .seats
            .iter()
            .map(|s| SeatInfo {
                player_id: s.player_id.clone(),
                name: s.name.clone(),
                occupant: s.session.map_or(Occupant::Ai(s.level), Occupant::Human),
                profile: s.profile.clone(),
                rating_change: None,
            })
            .collect();
        if seats.is_empty() || seats.len() > usize::from(PLAYERS_MAX) {
            return Err(format!("lobby {id}: {} seats", seats.len()));
        }
        let mut status = record.status;
        let game = match (status, record.seed) {
            (LobbyStatus::Waiting, _) => None,
            (_, None) => return Err(format!("lobby {id}: a game without a seed")),
            (_, Some(seed)) => {
                let players = u8::try_from(seats.len()).unwrap_or(0);
                let mut events = Vec::new();
                let mut game = Game::new(players, record.options, seed, &mut events)
                    .map_err(|e| format!("lobby {id}: {e:?}"))?;
                for (i, (seat, action)) in moves.iter().enumerate() {
                    game.apply(*seat, *action, &mut events)
                        .map_err(|e| format!("lobby {id}: move {i}: {e}"))?;
                    events.clear();
                }
                // The finishing move and the finished lobby are committed together;
                // the game itself is the authority anyway.
                if game.phase() == Phase::Finished {
                    status = LobbyStatus::Finished;
                }
                Some(game)
            }
        };
        let owner = IpKey::new(record.owner);
        let playing = status == LobbyStatus::Playing;
        self.by_code.insert(code.clone(), id);
        let mut lobby = Lobby::new(id, code, record.host.clone(), seats, owner);
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
        self.lobbies.insert(id, lobby);
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
    fn reindex_idle(&mut self, id: LobbyId) {
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

    pub fn get(&self, id: LobbyId) -> Option<&Lobby> {
        self.lobbies.get(&id)
    }

    pub fn get_mut(&mut self, id: LobbyId) -> Option<&mut Lobby> {
        self.lobbies.get_mut(&id)
    }

    pub fn len(&self) -> usize {
        self.lobbies.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lobbies.is_empty()
    }

    /// Lobbies whose game is running (not finished) and not dormant.
    pub fn active_games(&self) -> usize {
        self.playing
    }

    /// Running games that are dormant.
    pub fn dormant_games(&self) -> usize {
        self.dormant
    }

    /// What `ip` is charged for now.
    pub fn share_of(&self, ip: &IpKey) -> IpShare {
        self.per_ip.get(ip).copied().unwrap_or_default()
    }

    /// Addresses charged for at least one lobby (at most `MAX_LOBBIES`).
    pub fn ips_charged(&self) -> usize {
        self.per_ip.len()
    }

    /// Whether `lobbies_max` lobbies exist.
    pub fn is_full(&self) -> bool {
        self.lobbies.len() >= self.lobbies_max
    }

    /// Whether a new lobby fits, counting the idle ones as room (one would be deleted
    /// for it).
    pub fn has_room_for_new(&self) -> bool {
        !self.is_full() || !self.idle.is_empty()
    }

    fn charge(&mut self, ip: IpKey, f: impl FnOnce(&mut IpShare)) {
        let share = self.per_ip.entry(ip).or_default();
        f(share);
        if share.lobbies == 0 {
            self.per_ip.remove(&ip);
        }
    }

    /// Puts a running game to sleep or wakes it; a no-op for anything else.
    pub fn set_dormant(&mut self, id: LobbyId, dormant: bool) {
        let Some(lobby) = self.lobbies.get_mut(&id) else {
            return;
        };
        if lobby.status != LobbyStatus::Playing || lobby.dormant == dormant {
            return;
        }
        lobby.dormant = dormant;
        if dormant {
            self.playing -= 1;
            self.dormant += 1;
        } else {
            self.playing += 1;
            self.dormant -= 1;
        }
    }

    pub fn ids(&self) -> Vec<LobbyId> {
        self.lobbies.keys().copied().collect()
    }

    /// The lobby with this code; codes are case-insensitive.
    pub fn find_code(&self, code: &str) -> Option<LobbyId> {
        if code.len() > CODE_CHARS * 4 {
            return None;
        }
        self.by_code.get(&code.trim().to_ascii_uppercase()).copied()
    }

    /// Whether a new lobby fits under `MAX_LOBBIES` once `player_id` has left `current`
    /// (leaving deletes a lobby when it was its last human).
    pub fn has_room(&self, current: Option<LobbyId>, player_id: &str) -> bool {
        self.has_room_for_new() || self.is_sole_human(current, player_id)
    }

    /// Whether `player_id` is the only human of `lobby` (leaving would delete it).
    pub fn is_sole_human(&self, lobby: Option<LobbyId>, player_id: &str) -> bool {
        lobby.and_then(|id| self.lobbies.get(&id)).is_some_and(|l| {
            l.seats
                .iter()
                .all(|s| s.is_ai() || s.player_id == player_id)
        })
    }

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

    /// Seats `session` in a waiting lobby, or returns its existing seat in any lobby.
    /// Returns the seat and whether it is new. A new seat's name is made unique among
    /// the seats and `watching`, the names of the lobby's spectators.
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
        if let Some(seat) = lobby.seat_of(player_id) {
            if let Some(info) = lobby.seats.get_mut(usize::from(seat)) {
                info.occupant = Occupant::Human(session);
                lobby.record_changed = true;
            }
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
        Ok((Seat::try_from(lobby.seats.len() - 1).unwrap_or(0), true))
    }

    /// Removes `player_id` from its seat (waiting) or hands the seat to the AI (playing or
    /// finished; at the default level, [`AiLevel::Strong`]), moving the host if needed. Returns true when the lobby was deleted
    /// because no human seat remains.
    pub fn leave(&mut self, id: LobbyId, player_id: &str) -> bool {
        let ai_id = format!("ai-{}", rng::hex_id(&mut self.rng, 8));
        let Some(lobby) = self.lobbies.get_mut(&id) else {
            return false;
        };
        let Some(seat) = lobby.seat_of(player_id) else {
            return false;
        };
        let index = usize::from(seat);
        lobby.record_changed = true;
        if lobby.status == LobbyStatus::Waiting {
            lobby.seats.remove(index);
        } else if let Some(info) = lobby.seats.get_mut(index) {
            info.occupant = Occupant::Ai(AiLevel::default());
            info.player_id = ai_id;
        }
        if lobby.host == player_id
            && let Some(next) = lobby.seats.iter().find(|s| !s.is_ai())
        {
            lobby.host = next.player_id.clone();
        }
        if lobby.humans().next().is_none() {
            self.delete(id);
            return true;
        }
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

    fn host_lobby(
        &mut self,
        id: LobbyId,
        player_id: &str,
        status: LobbyStatus,
    ) -> Result<&mut Lobby, LobbyError> {
        let lobby = self
            .lobbies
            .get_mut(&id)
            .ok_or(LobbyError::NotFound("No such lobby."))?;
        if lobby.host != player_id {
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
        host: &str,
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
        Ok(())
    }

    /// Removes a seat; returns the removed human's session, if it was one.
    pub fn remove_player(
        &mut self,
        id: LobbyId,
        host: &str,
        player_id: &str,
    ) -> Result<Option<SessionId>, LobbyError> {
        let lobby = self.host_lobby(id, host, LobbyStatus::Waiting)?;
        if player_id == host {
            return Err(LobbyError::NotAllowed(
                "The host cannot remove themselves; leave instead.",
            ));
        }
        let seat = lobby
            .seat_of(player_id)
            .ok_or(LobbyError::NotFound("No such player."))?;
        let removed = lobby.seats.remove(usize::from(seat));
        lobby.record_changed = true;
        Ok(match removed.occupant {
            Occupant::Human(s) => Some(s),
            Occupant::Ai(_) => None,
        })
    }

    pub fn set_options(
        &mut self,
        id: LobbyId,
        host: &str,
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

    /// Checks that `host` may start the game now (admission is the caller's check).
    pub fn can_start(&self, id: LobbyId, host: &str) -> Result<(), LobbyError> {
        let lobby = self
            .lobbies
            .get(&id)
            .ok_or(LobbyError::NotFound("No such lobby."))?;
        if lobby.host != host {
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
        host: &str,
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
        lobby.status = LobbyStatus::Playing;
        lobby.record_changed = true;
        lobby.turns = TurnBook::default();
        lobby.dormant = false;
        let owner = lobby.owner;
        self.playing += 1;
        self.charge(owner, |s| s.games += 1);
        self.reindex_idle(id);
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
        }
        Ok(())
    }

    /// Names the game just started (`state.game.id`).
    pub fn set_game_id(&mut self, id: LobbyId, game_id: String) {
        if let Some(lobby) = self.lobbies.get_mut(&id) {
            lobby.game_id = Some(game_id);
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
        }
    }

    /// Back to the waiting room after a finished game.
    pub fn return_to_lobby(&mut self, id: LobbyId, host: &str) -> Result<(), LobbyError> {
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
        lobby.turns = TurnBook::default();
        self.reindex_idle(id);
        Ok(())
    }
}
