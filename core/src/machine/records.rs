//! Durable records: what the core asks a store to keep so that a restart loses no game
//! (`Output::Persist`), and the versioned form they are stored in.
//!
//! Records are game-level facts, never raw inputs: a newer binary replays them through
//! its own rules engine and gets the same games. Each record names the lobby or the
//! session it belongs to, so a store can forget a lobby's or a session's records once
//! a restore no longer needs them ([`liveness`]), and restore time follows the live
//! games, not the history:
//! - [`Record::Session`]: a session exists (its player id and the SHA-256 digest of its
//!   token, never the token);
//! - [`Record::Lobby`]: a lobby as it now is, everything but its game's moves: code,
//!   status, host, options, seats (an AI seat with its level), creator's address, the
//!   current game's number and seed. Written whenever one of those changes, so the newest one of a lobby
//!   supersedes the older ones;
//! - [`Record::Move`]: a move applied to the lobby's current game, with its seat,
//!   action and who made it (human, AI or fallback, autoplay included);
//! - [`Record::Profile`]: a profile as it now is (name, key digest, rating, games);
//!   written when it is created and after each rated game, the newest superseding the
//!   older ones; the rating update after a game is in the same batch as the game's
//!   last move, so a store commits both or neither;
//! - [`Record::SessionGone`], [`Record::LobbyGone`], [`Record::ProfileGone`]:
//!   forgotten, with their records;
//! - [`Record::Game`]: a finished game as history keeps it ([`history`]), in the same
//!   batch as its last move. A store keeps it apart from the other records, for
//!   `HISTORY_DAYS`, and a restore does not read it.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

mod compact_move;
pub mod history;
pub mod liveness;

use crate::machine::profiles::ProfileRecord;
use crate::vocabulary::figure::Figure;
use crate::vocabulary::game::{Action, AiLevel, Options, Seat};
use crate::vocabulary::ids::{LobbyId, SessionId};
use crate::vocabulary::io::MoveSource;
use crate::vocabulary::wire::LobbyStatus;
use history::HistoryRecord;

/// How [`Record::encode`]'s text of a record other than a move begins.
const CURRENT_PREFIX: &str = "{\"v\":2,";

/// The version this build writes. A reader accepts every version it knows how to read,
/// and refuses the others with [`RecordError::Version`]:
/// - 1: every record an object, `{"v":1,"type":...}`;
/// - 2: the same objects with `"v":2`, except moves, which are compact arrays
///   (`[2,"m",...]`, [`compact_move`]): a restore decodes a few times faster.
///
/// A store may hold both: version 1 rows stay as they were written, and new rows are
/// version 2. Nothing is rewritten.
pub const RECORD_VERSION: u32 = 2;

/// The versions this build reads.
const READABLE_VERSIONS: [u32; 2] = [1, 2];

/// One seat of a [`Record::Lobby`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatRecord {
    pub player_id: String,
    pub name: String,
    /// The human's session; `None` for an AI seat.
    pub session: Option<SessionId>,
    /// An AI seat's level (PROTOCOL.md section 6.5); left out when `strong`, so a
    /// record written before levels existed reads as a `strong` seat. Ignored for a
    /// human.
    #[serde(default, skip_serializing_if = "AiLevel::is_strong")]
    pub level: AiLevel,
    /// The profile rated by this seat's final score (also once it plays on as an AI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// After a rated game: how much it changed this seat's shown rating, kept so that
    /// the finished game's `state` shows it again after a restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating_change: Option<Figure>,
}

/// A lobby as the players see it, with what a restore needs besides.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LobbyRecord {
    pub lobby: LobbyId,
    pub code: String,
    pub status: LobbyStatus,
    /// The host's player id.
    pub host: String,
    pub options: Options,
    pub seats: Vec<SeatRecord>,
    /// The address the lobby is charged to (an IPv6 one is its /64 prefix).
    pub owner: IpAddr,
    /// Games started in this lobby; the moves of game `game_no` follow.
    pub game_no: u64,
    /// The current game's seed (while playing or finished).
    pub seed: Option<u64>,
    /// The current game's public id (while playing or finished).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub game_id: Option<String>,
    /// When the current game started, milliseconds since the Unix epoch (left out
    /// when not known: 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub started_ms: u64,
    /// Listed by `list_tables`; left out when false, so older records read as private.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub public: bool,
    /// Seated by the quick-play matchmaker; left out when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quick_play: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A fact to keep.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    Session {
        session: SessionId,
        player_id: String,
        /// SHA-256 of the token's bytes, in lower-case hex.
        token_sha256: String,
    },
    SessionGone {
        session: SessionId,
    },
    Lobby(LobbyRecord),
    Move {
        lobby: LobbyId,
        game_no: u64,
        seat: Seat,
        action: Action,
        by: MoveSource,
        /// Played for a human whose `turn_seconds` ran out.
        #[serde(default)]
        autoplayed: bool,
    },
    LobbyGone {
        lobby: LobbyId,
    },
    Profile(ProfileRecord),
    ProfileGone {
        profile: String,
    },
    /// A finished game for history (`HISTORY_DAYS`); a restore does not need it.
    Game(HistoryRecord),
}

impl Record {
    /// The stored text: `[2,"m",...]` for a move, `{"v":2,"type":...}` otherwise.
    pub fn encode(&self) -> String {
        let mut text = Vec::with_capacity(40);
        self.encode_into(&mut text);
        // Both forms are JSON, which is UTF-8.
        String::from_utf8(text).unwrap_or_default()
    }

    /// Appends [`Record::encode`]'s text to `out` (a store's frame is built this way,
    /// without a string per record).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        if let Record::Move {
            lobby,
            game_no,
            seat,
            action,
            by,
            autoplayed,
        } = *self
        {
            compact_move::encode_into(out, lobby, game_no, seat, action, by, autoplayed);
            return;
        }
        #[derive(Serialize)]
        struct VersionedRef<'a> {
            v: u32,
            #[serde(flatten)]
            record: &'a Record,
        }
        let versioned = VersionedRef {
            v: RECORD_VERSION,
            record: self,
        };
        // Serializing these types into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, &versioned);
    }

    /// Reads a stored text of a version this build knows.
    pub fn decode(text: &str) -> Result<Record, RecordError> {
        #[derive(Deserialize)]
        struct Version {
            v: u32,
        }
        // What this build writes begins with its version: one parse, not two (a
        // restore reads millions).
        if text.starts_with(compact_move::PREFIX) {
            return compact_move::decode(text);
        }
        if let Some(rest) = text.strip_prefix('[') {
            // A compact record of another version, or not a record.
            return Err(match rest.split(',').next().map(str::parse::<u32>) {
                Some(Ok(v)) if !READABLE_VERSIONS.contains(&v) => RecordError::Version(v),
                _ => RecordError::Malformed(format!("not a compact move: {text}")),
            });
        }
        if text.starts_with(CURRENT_PREFIX) {
            return serde_json::from_str(text).map_err(|e| RecordError::Malformed(e.to_string()));
        }
        let version: Version =
            serde_json::from_str(text).map_err(|e| RecordError::Malformed(e.to_string()))?;
        if !READABLE_VERSIONS.contains(&version.v) {
            return Err(RecordError::Version(version.v));
        }
        // The version is a field beside the record's own, which the record ignores.
        // Versions 1 and 2 share the object form.
        serde_json::from_str(text).map_err(|e| RecordError::Malformed(e.to_string()))
    }
}

/// The records of `games` running games halfway through, as a store holds them: each
/// with 1 human and 3 AI seats, the first 7 of 15 rounds and a half played by the
/// heuristic player (seeded, so always the same). For measuring stores and restores.
pub fn halfway_games(games: u64) -> Vec<Record> {
    use rand::SeedableRng;

    let mut records = Vec::new();
    let mut rng = rand_chacha::ChaCha12Rng::seed_from_u64(1);
    for g in 0..games {
        let seed = g * 7919 + 13;
        records.push(halfway_session(g));
        records.push(halfway_lobby(g, seed));
        halfway_moves(g, seed, &mut rng, &mut records);
    }
    records
}

/// The session of game `g`'s one human, as [`halfway_games`] stores it.
fn halfway_session(g: u64) -> Record {
    use sha2::Digest as _;

    let session = g + 1;
    Record::Session {
        session: SessionId(session),
        player_id: format!("{session:012x}"),
        token_sha256: sha2::Sha256::digest(session.to_le_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    }
}

/// The playing lobby of game `g` with game seed `seed`: its human in seat 0, three
/// strong AI seats.
fn halfway_lobby(g: u64, seed: u64) -> Record {
    let session = g + 1;
    let seats = (0..4)
        .map(|s| SeatRecord {
            player_id: if s == 0 {
                format!("{session:012x}")
            } else {
                format!("ai-{g:08x}{s}")
            },
            name: format!("P{s}"),
            session: (s == 0).then_some(SessionId(session)),
            level: AiLevel::Strong,
            profile: None,
            rating_change: None,
        })
        .collect();
    Record::Lobby(LobbyRecord {
        lobby: LobbyId(g + 1),
        code: format!("{:06}", g),
        status: LobbyStatus::Playing,
        host: format!("{session:012x}"),
        options: Options::default(),
        seats,
        owner: IpAddr::from([10, (g >> 16) as u8, (g >> 8) as u8, g as u8]),
        game_no: 1,
        seed: Some(seed),
        game_id: None,
        started_ms: 0,
        public: false,
        quick_play: false,
    })
}

/// The moves of game `g`'s first 7 rounds and a half, played by the heuristic player
/// drawing from `rng`, appended to `records`.
fn halfway_moves(g: u64, seed: u64, rng: &mut rand_chacha::ChaCha12Rng, records: &mut Vec<Record>) {
    use crate::vocabulary::game::{Game, bot};

    let mut events = Vec::new();
    let Ok(mut game) = Game::new(4, Options::default(), seed, &mut events) else {
        return;
    };
    // A 4-player game has 15 rounds: play the first 7 and a half.
    while u32::from(game.round()) * 2 <= u32::from(game.rounds()) + 1 {
        let Some(seat) = game.next_to_act() else {
            break;
        };
        let Some(action) = bot::decide(&game.observation(seat), rng) else {
            break;
        };
        if game.apply(seat, action, &mut events).is_err() {
            break;
        }
        events.clear();
        records.push(Record::Move {
            lobby: LobbyId(g + 1),
            game_no: 1,
            seat,
            action,
            by: if seat == 0 {
                MoveSource::Human
            } else {
                MoveSource::Ai
            },
            autoplayed: false,
        });
    }
}

/// A stored record this build cannot read (the store's or the operator's fault).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// Written by a version this build does not know.
    Version(u32),
    /// Not a record.
    Malformed(String),
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::Version(v) => write!(
                f,
                "record version {v}, this build reads versions 1 to {RECORD_VERSION}"
            ),
            RecordError::Malformed(e) => write!(f, "malformed record: {e}"),
        }
    }
}
