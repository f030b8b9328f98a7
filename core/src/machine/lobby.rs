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

use crate::machine::turns::{AI_MOVE_SPREAD_US_MAX, Decider, TurnBook};
use crate::vocabulary::game::types::PLAYERS_MAX;
use crate::vocabulary::game::{Action, ActionError, AiLevel, Game, Options, Seat};
use crate::vocabulary::ids::{LobbyId, SessionId};
use crate::vocabulary::limiter::IpKey;
use crate::vocabulary::shard::{CODE_CHARS, ShardId};
use crate::vocabulary::time::Time;
use crate::vocabulary::wire::{ErrorCode, LobbyStatus};

mod index;
mod play;
mod seats;

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
    /// The id the seat is shown and recorded with: its player's (kept when the AI
    /// plays on for a player), or `ai-xxxxxxxx`. Lookups by a session go through
    /// [`Occupant::Human`] instead.
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
    /// The current game's moves in order, for its history record at the end.
    log: Vec<(Seat, Action)>,
    /// When the current game started, milliseconds since the Unix epoch (while
    /// playing or finished; 0 when not known).
    started_ms: u64,
    /// Whose turn is running since when, and what the AI has decided.
    turns: TurnBook,
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
    /// Listed by `list_tables` (PROTOCOL.md 7.2); set through
    /// [`LobbyManager::set_public`].
    public: bool,
    /// Its key in the manager's index of public tables, while it is in it.
    table_key: Option<TableKey>,
    /// Seated by the quick-play matchmaker: nobody chose this table, so once all its
    /// humans are gone its game sleeps at once (`server/absent.rs`); set through
    /// [`LobbyManager::set_quick_play`].
    quick_play: bool,
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
            log: Vec::new(),
            started_ms: 0,
            turns: TurnBook::default(),
            owner,
            away_since: None,
            idle_key: None,
            dormant: false,
            public: false,
            table_key: None,
            quick_play: false,
            record_changed: true,
        }
    }

    /// Whether `list_tables` lists it (while waiting with a free seat, or running).
    pub fn is_public(&self) -> bool {
        self.public
    }

    /// Whether the quick-play matchmaker seated it.
    pub fn is_quick_play(&self) -> bool {
        self.quick_play
    }

    /// Where the index of public tables should hold it now.
    fn wanted_table_key(&self) -> Option<TableKey> {
        if !self.public {
            return None;
        }
        match self.status {
            LobbyStatus::Waiting if self.seats.len() < usize::from(PLAYERS_MAX) => {
                let taken = u8::try_from(self.seats.len()).unwrap_or(PLAYERS_MAX);
                Some(TableKey::Open(PLAYERS_MAX - taken, self.id))
            }
            LobbyStatus::Playing => Some(TableKey::Running(self.id)),
            _ => None,
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

    /// The current game's moves in order.
    pub fn log(&self) -> &[(Seat, Action)] {
        &self.log
    }

    /// When the current game started, milliseconds since the Unix epoch.
    pub fn started_ms(&self) -> u64 {
        self.started_ms
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

    /// A lobby whose humans are all disconnected and whose game, if one runs, is
    /// dormant: the kind `MAX_LOBBIES` may delete for a new one.
    pub fn is_idle(&self) -> bool {
        (self.status != LobbyStatus::Playing || self.dormant) && self.away_since.is_some()
    }

    /// The seat `session` holds as a human. A seat the AI plays on for a player keeps
    /// the player's id ([`SeatInfo::player_id`]) but no session.
    pub fn seat_of(&self, session: SessionId) -> Option<Seat> {
        self.seats
            .iter()
            .position(|s| s.occupant == Occupant::Human(session))
            .and_then(|i| Seat::try_from(i).ok())
    }

    /// The seat shown with `player_id` (a client names seats by it).
    pub fn seat_of_player(&self, player_id: &str) -> Option<Seat> {
        self.seats
            .iter()
            .position(|s| s.player_id == player_id)
            .and_then(|i| Seat::try_from(i).ok())
    }

    /// The session in the host's seat, when a human sits there.
    pub fn host_session(&self) -> Option<SessionId> {
        let seat = self.seat_of_player(&self.host)?;
        match self.seats.get(usize::from(seat))?.occupant {
            Occupant::Human(session) => Some(session),
            Occupant::Ai(_) => None,
        }
    }

    /// Whether `session` sits in the host's seat.
    pub fn is_host(&self, session: SessionId) -> bool {
        self.seat_of(session)
            .and_then(|s| self.seats.get(usize::from(s)))
            .is_some_and(|s| s.player_id == self.host)
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

/// A public lobby's place in the index `list_tables` reads: open tables (waiting with
/// a free seat) by free seats, fewest first, then running ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TableKey {
    /// Waiting, with this many free seats.
    Open(u8, LobbyId),
    Running(LobbyId),
}

/// At most this many tables in one `tables` answer.
pub const TABLES_LISTED_MAX: usize = 50;

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
    /// The public tables `list_tables` shows: open ones first (fewest free seats
    /// first), then running ones; one entry at most per lobby.
    tables: BTreeSet<TableKey>,
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
            tables: BTreeSet::new(),
            rng,
            shard,
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
        self.reindex_idle(id);
    }

    /// Marks the lobby as seated by the quick-play matchmaker (kept in its record).
    pub fn set_quick_play(&mut self, id: LobbyId) {
        if let Some(lobby) = self.lobbies.get_mut(&id)
            && !lobby.quick_play
        {
            lobby.quick_play = true;
            lobby.record_changed = true;
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

    /// Whether a new lobby fits under `MAX_LOBBIES` once `session` has left `current`
    /// (leaving deletes a lobby when it was its last human).
    pub fn has_room(&self, current: Option<LobbyId>, session: SessionId) -> bool {
        self.has_room_for_new() || self.is_sole_human(current, session)
    }

    /// Whether `session` is the only human of `lobby` (leaving would delete it).
    pub fn is_sole_human(&self, lobby: Option<LobbyId>, session: SessionId) -> bool {
        lobby
            .and_then(|id| self.lobbies.get(&id))
            .is_some_and(|l| l.humans().all(|h| h == session))
    }
}
