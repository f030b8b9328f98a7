//! Cards, suits and their wire encoding (`"h14"`, `"W1"`, `"J1"`, `"hearts"`).
//!
//! Wizards and Jesters are their own kinds of card, never a suit with a special rank,
//! so no rule can mistake a Wizard for "the highest heart".

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Number of cards in the deck: 4 suits x 13 ranks, 4 Wizards, 4 Jesters.
pub const DECK_SIZE: usize = 60;
/// Lowest suited rank (the two).
pub const RANK_MIN: u8 = 2;
/// Highest suited rank (the ace).
pub const RANK_MAX: u8 = 14;
/// Wizards and Jesters are numbered 1 to this.
pub const SPECIAL_COPIES: u8 = 4;

/// One of the four suits. Wizards and Jesters have none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Suit {
    Clubs,
    Diamonds,
    Hearts,
    Spades,
}

impl Suit {
    /// All suits in their canonical order.
    pub const ALL: [Suit; 4] = [Suit::Clubs, Suit::Diamonds, Suit::Hearts, Suit::Spades];

    /// The full word used on the wire: `clubs`, `diamonds`, `hearts`, `spades`.
    pub fn name(self) -> &'static str {
        match self {
            Suit::Clubs => "clubs",
            Suit::Diamonds => "diamonds",
            Suit::Hearts => "hearts",
            Suit::Spades => "spades",
        }
    }

    /// The letter that starts a suited card's code.
    pub fn letter(self) -> char {
        match self {
            Suit::Clubs => 'c',
            Suit::Diamonds => 'd',
            Suit::Hearts => 'h',
            Suit::Spades => 's',
        }
    }

    /// Position in [`Suit::ALL`], for tables indexed by suit.
    pub fn index(self) -> usize {
        self as usize
    }

    fn from_letter(letter: char) -> Option<Suit> {
        Suit::ALL.into_iter().find(|s| s.letter() == letter)
    }
}

impl fmt::Display for Suit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a string is not a suit (the client's fault).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuitParseError {
    pub input: String,
}

impl fmt::Display for SuitParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown suit {:?}: expected clubs, diamonds, hearts or spades",
            self.input
        )
    }
}

impl std::error::Error for SuitParseError {}

impl FromStr for Suit {
    type Err = SuitParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Suit::ALL
            .into_iter()
            .find(|suit| suit.name() == s)
            .ok_or_else(|| SuitParseError {
                input: truncate_for_error(s),
            })
    }
}

/// A playing card. Construct suited cards with [`Card::suited`], which checks the rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Card {
    /// A suited card with rank 2..=14 (11 jack, 12 queen, 13 king, 14 ace).
    Suited { suit: Suit, rank: u8 },
    /// Wizard number 1..=4: beats everything; the first one played wins the trick.
    Wizard(u8),
    /// Jester number 1..=4: loses to everything unless every card is a Jester.
    Jester(u8),
}

impl Card {
    /// A suited card, or `None` when the rank is outside 2..=14.
    pub fn suited(suit: Suit, rank: u8) -> Option<Card> {
        (RANK_MIN..=RANK_MAX)
            .contains(&rank)
            .then_some(Card::Suited { suit, rank })
    }

    /// The suit of a suited card; Wizards and Jesters have none.
    pub fn suit(self) -> Option<Suit> {
        match self {
            Card::Suited { suit, .. } => Some(suit),
            Card::Wizard(_) | Card::Jester(_) => None,
        }
    }

    pub fn is_wizard(self) -> bool {
        matches!(self, Card::Wizard(_))
    }

    pub fn is_jester(self) -> bool {
        matches!(self, Card::Jester(_))
    }

    /// A dense index 0..60: suited cards suit-major, then Wizards, then Jesters.
    /// Useful for bit sets of cards.
    pub fn index(self) -> usize {
        match self {
            Card::Suited { suit, rank } => {
                suit.index() * 13 + usize::from(rank.saturating_sub(RANK_MIN))
            }
            Card::Wizard(n) => 52 + usize::from(n.saturating_sub(1)),
            Card::Jester(n) => 56 + usize::from(n.saturating_sub(1)),
        }
    }

    /// The card with the given [`Card::index`], or `None` outside 0..60.
    pub fn from_index(index: usize) -> Option<Card> {
        let small = u8::try_from(index).ok()?;
        match small {
            0..=51 => Card::suited(Suit::ALL[usize::from(small / 13)], small % 13 + RANK_MIN),
            52..=55 => Some(Card::Wizard(small - 51)),
            56..=59 => Some(Card::Jester(small - 55)),
            _ => None,
        }
    }

    /// The wire code: `"h14"`, `"W1"`, `"J3"`.
    pub fn code(self) -> &'static str {
        CODES.get(self.index()).copied().unwrap_or("?")
    }

    /// The whole deck in index order.
    pub fn deck() -> Vec<Card> {
        (0..DECK_SIZE).filter_map(Card::from_index).collect()
    }
}

/// The wire code of every card, by [`Card::index`].
const CODES: [&str; DECK_SIZE] = [
    "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10", "c11", "c12", "c13", "c14", "d2", "d3",
    "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13", "d14", "h2", "h3", "h4", "h5",
    "h6", "h7", "h8", "h9", "h10", "h11", "h12", "h13", "h14", "s2", "s3", "s4", "s5", "s6", "s7",
    "s8", "s9", "s10", "s11", "s12", "s13", "s14", "W1", "W2", "W3", "W4", "J1", "J2", "J3", "J4",
];

impl fmt::Display for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// Why a string is not a card code (the client's fault).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CardParseError {
    /// The string is empty.
    Empty,
    /// The first character is none of `c d h s W J`.
    UnknownKind { input: String },
    /// The number after the kind letter is missing, not a number, or out of range
    /// (2..=14 for suited cards, 1..=4 for Wizards and Jesters).
    BadNumber { input: String },
}

impl fmt::Display for CardParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CardParseError::Empty => f.write_str("empty card code"),
            CardParseError::UnknownKind { input } => write!(
                f,
                "unknown card {input:?}: a card starts with c, d, h, s, W or J"
            ),
            CardParseError::BadNumber { input } => write!(
                f,
                "unknown card {input:?}: suited ranks are 2 to 14, Wizards and Jesters 1 to 4"
            ),
        }
    }
}

impl std::error::Error for CardParseError {}

impl FromStr for Card {
    type Err = CardParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut chars = s.chars();
        let kind = chars.next().ok_or(CardParseError::Empty)?;
        let number = chars.as_str();
        let bad_number = || CardParseError::BadNumber {
            input: truncate_for_error(s),
        };
        // Only plain decimal digits: "h+5", "h05" and "h 5" are junk, not aliases.
        if number.is_empty()
            || number.len() > 2
            || number.starts_with('0')
            || !number.bytes().all(|b| b.is_ascii_digit())
        {
            return match kind {
                'c' | 'd' | 'h' | 's' | 'W' | 'J' => Err(bad_number()),
                _ => Err(CardParseError::UnknownKind {
                    input: truncate_for_error(s),
                }),
            };
        }
        let value: u8 = number.parse().map_err(|_| bad_number())?;
        let special = |make: fn(u8) -> Card| {
            (1..=SPECIAL_COPIES)
                .contains(&value)
                .then(|| make(value))
                .ok_or_else(bad_number)
        };
        match kind {
            'W' => special(Card::Wizard),
            'J' => special(Card::Jester),
            letter => match Suit::from_letter(letter) {
                Some(suit) => Card::suited(suit, value).ok_or_else(bad_number),
                None => Err(CardParseError::UnknownKind {
                    input: truncate_for_error(s),
                }),
            },
        }
    }
}

/// Echoing client input in errors is useful, echoing megabytes is not.
fn truncate_for_error(s: &str) -> String {
    const ECHO_CHARS_MAX: usize = 16;
    s.chars().take(ECHO_CHARS_MAX).collect()
}

impl Serialize for Card {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.code())
    }
}

impl<'de> Deserialize<'de> for Card {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::vocabulary::serde_str::deserialize_with(deserializer, "a string", str::parse)
    }
}

impl Serialize for Suit {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Suit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::vocabulary::serde_str::deserialize_with(deserializer, "a string", str::parse)
    }
}
