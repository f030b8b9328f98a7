//! The game's vocabulary shared by the engine, observations, the wire and the AI:
//! options, phases, actions, events and their serde encodings.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::card::{Card, Suit};

/// A seat index, 0-based, `0..players`.
pub type Seat = u8;

/// Fewest players a game may have.
pub const PLAYERS_MIN: u8 = 3;
/// Most players a game may have.
pub const PLAYERS_MAX: u8 = 6;
/// `turn_seconds` other than 0 must lie in this range.
pub const TURN_SECONDS_MIN: u16 = 10;
/// `turn_seconds` other than 0 must lie in this range.
pub const TURN_SECONDS_MAX: u16 = 300;

/// Who may not bid what in the last bidding position.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BidRestriction {
    /// Every bid 0..=r is allowed.
    #[default]
    None,
    /// The dealer may not make the total of bids equal the number of tricks.
    House,
    /// As `House`, but only while the dealer leads on total score, and 0 is always allowed.
    Canadian,
}

/// The per-lobby rule options (RULES.md, "Options").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Options {
    /// Everyone bids at once; bids stay hidden until all are in.
    #[serde(default)]
    pub hidden_bids: bool,
    #[serde(default)]
    pub bid_restriction: BidRestriction,
    /// 0 (off) or 10..=300: after this long the fallback acts once for a human seat.
    #[serde(default)]
    pub turn_seconds: u16,
}

/// Why a set of options cannot be used (the client's fault).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptionsError {
    TurnSecondsOutOfRange { turn_seconds: u16 },
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionsError::TurnSecondsOutOfRange { turn_seconds } => write!(
                f,
                "turn_seconds must be 0 (off) or {TURN_SECONDS_MIN} to {TURN_SECONDS_MAX}, not {turn_seconds}"
            ),
        }
    }
}

impl std::error::Error for OptionsError {}

impl Options {
    /// Checks the ranges RULES.md gives.
    pub fn validate(&self) -> Result<(), OptionsError> {
        let t = self.turn_seconds;
        if t == 0 || (TURN_SECONDS_MIN..=TURN_SECONDS_MAX).contains(&t) {
            Ok(())
        } else {
            Err(OptionsError::TurnSecondsOutOfRange { turn_seconds: t })
        }
    }
}

/// Where a round stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// A Wizard was turned: the dealer picks the trump suit.
    ChoosingTrump,
    Bidding,
    Playing,
    /// The last round is scored; nothing more happens.
    Finished,
}

/// One move by a seat, as sent on the wire: `{"kind":"bid","bid":2}`,
/// `{"kind":"play","card":"h12"}`, `{"kind":"choose_trump","suit":"hearts"}`. Decoded
/// by hand (`action_de.rs`), without serde's buffered path for tagged enums.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Action {
    Bid { bid: u8 },
    Play { card: Card },
    ChooseTrump { suit: Suit },
}

/// A card and the seat that played it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlayedCard {
    pub player: Seat,
    pub card: Card,
}

/// A finished trick: its cards in play order and who took it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletedTrick {
    pub cards: Vec<PlayedCard>,
    pub winner: Seat,
}

/// One line of the final ranking. Tied scores share a place (1, 1, 3, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placing {
    pub player: Seat,
    pub score: i32,
    pub place: u8,
}

/// What a change did, in order of occurrence (RULES.md, "Events"). Every event is
/// public: under hidden bids `bid_made` carries no value until `bids_revealed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    RoundStarted {
        round: u8,
        dealer: Seat,
        trump_card: Option<Card>,
        /// `None` for no trump, and while the dealer still chooses after a Wizard.
        trump_suit: Option<Suit>,
    },
    TrumpChosen {
        player: Seat,
        suit: Suit,
    },
    BidMade {
        player: Seat,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bid: Option<u8>,
    },
    BidsRevealed {
        bids: Vec<u8>,
    },
    CardPlayed {
        player: Seat,
        card: Card,
    },
    TrickCompleted {
        winner: Seat,
        cards: Vec<PlayedCard>,
    },
    RoundFinished {
        bids: Vec<u8>,
        tricks: Vec<u8>,
        deltas: Vec<i32>,
        scores: Vec<i32>,
    },
    GameFinished {
        scores: Vec<i32>,
        ranking: Vec<Placing>,
    },
    /// A timed-out turn was played by the fallback player (added by the server).
    Autoplayed {
        player: Seat,
    },
}

impl Event {
    /// The seat whose move this event records (a bid, a card played, a trump chosen);
    /// `None` for the events that follow from moves.
    pub fn mover(&self) -> Option<Seat> {
        match self {
            Event::BidMade { player, .. }
            | Event::CardPlayed { player, .. }
            | Event::TrumpChosen { player, .. } => Some(*player),
            _ => None,
        }
    }
}

/// Why the engine refused an action (the client's fault). The state is unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ActionError {
    /// The seat index is not at this table.
    NoSuchSeat { seat: Seat },
    /// The game is over.
    GameFinished,
    /// Another seat is to act (or, under hidden bids, this seat has already bid).
    NotYourTurn { to_act: Option<Seat> },
    /// The action is of the wrong kind for the phase (e.g. a bid while playing).
    WrongPhase { phase: Phase },
    /// Bids run from 0 to the number of cards dealt this round.
    BidOutOfRange { bid: u8, bid_max: u8 },
    /// The bid restriction forbids this bid for the last bidder.
    BidRestricted { bid: u8 },
    /// The card is not in the seat's hand.
    CardNotInHand { card: Card },
    /// The seat holds the led suit and must follow it (or play a Wizard or Jester).
    MustFollowSuit { suit: Suit },
}

impl fmt::Display for ActionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ActionError::NoSuchSeat { seat } => write!(f, "there is no seat {seat}"),
            ActionError::GameFinished => f.write_str("the game is over"),
            ActionError::NotYourTurn { to_act: Some(s) } => {
                write!(f, "not your turn: seat {s} is to act")
            }
            ActionError::NotYourTurn { to_act: None } => f.write_str("not your turn"),
            ActionError::WrongPhase { phase } => {
                let what = match phase {
                    Phase::ChoosingTrump => "the dealer is choosing trump",
                    Phase::Bidding => "players are bidding",
                    Phase::Playing => "players are playing cards",
                    Phase::Finished => "the game is over",
                };
                write!(f, "that action is not possible now: {what}")
            }
            ActionError::BidOutOfRange { bid, bid_max } => {
                write!(f, "bid {bid} is out of range: bid 0 to {bid_max}")
            }
            ActionError::BidRestricted { bid } => write!(
                f,
                "the bid restriction forbids {bid}: the total of bids may not equal the tricks"
            ),
            ActionError::CardNotInHand { card } => write!(f, "{card} is not in your hand"),
            ActionError::MustFollowSuit { suit } => {
                write!(f, "you must follow {suit} (or play a Wizard or Jester)")
            }
        }
    }
}

impl std::error::Error for ActionError {}

/// Why a game cannot be set up (the caller's fault).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetupError {
    PlayerCount { players: u8 },
    Options(OptionsError),
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetupError::PlayerCount { players } => write!(
                f,
                "a game needs {PLAYERS_MIN} to {PLAYERS_MAX} players, not {players}"
            ),
            SetupError::Options(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SetupError {}
