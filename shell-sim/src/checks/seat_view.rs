//! A `state` frame's game part split into the viewer's own fields (`to_act` with
//! `turn_deadline_ms`, `hand` with `bids`, `legal_actions`) and the public rest, read
//! byte by byte at the keys the core writes in `Observation`'s order. The seats of one
//! broadcast share the public rest byte for byte, so the checkers decode and judge it
//! once per change and read only the own fields per seat. A game part that does not
//! read this way (another layout, an escape, a space) is decoded whole instead, so the
//! split saves time and changes no verdict.

use serde::Deserialize;
use wizard_core::vocabulary::game::{
    Action, Card, CompletedTrick, Observation, Options, Phase, Placing, PlayedCard, Seat, Suit,
};

/// The public part of a view: every field but the viewer's own, the same for every
/// seat (decoded without the own fields, which are read apart).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Public {
    pub players: u8,
    pub round: u8,
    pub rounds: u8,
    pub phase: Phase,
    pub dealer: Seat,
    pub trump_card: Option<Card>,
    pub trump_suit: Option<Suit>,
    pub has_bid: Vec<bool>,
    pub tricks_won: Vec<u8>,
    pub trick: Vec<PlayedCard>,
    pub last_trick: Option<CompletedTrick>,
    pub played: Vec<Card>,
    pub scores: Vec<i32>,
    pub round_scores: Vec<Vec<i32>>,
    pub options: Options,
    #[serde(default)]
    pub ranking: Option<Vec<Placing>>,
}

impl Public {
    /// The public part of a whole view.
    pub fn of(obs: Observation) -> Public {
        Public {
            players: obs.players,
            round: obs.round,
            rounds: obs.rounds,
            phase: obs.phase,
            dealer: obs.dealer,
            trump_card: obs.trump_card,
            trump_suit: obs.trump_suit,
            has_bid: obs.has_bid,
            tricks_won: obs.tricks_won,
            trick: obs.trick,
            last_trick: obs.last_trick,
            played: obs.played,
            scores: obs.scores,
            round_scores: obs.round_scores,
            options: obs.options,
            ranking: obs.ranking,
        }
    }
}

/// The viewer's own fields of a view: whose move it awaits, the hand, the bids as
/// shown to it, and the cards its legal actions would play.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Own {
    pub to_act: Option<Seat>,
    pub hand: Vec<Card>,
    pub bids: Vec<Option<u8>>,
    pub plays: Vec<Card>,
}

impl Own {
    /// The own fields of a whole view.
    pub fn of(obs: &Observation) -> Own {
        let plays = obs.legal_actions.iter().filter_map(|a| match a {
            Action::Play { card } => Some(*card),
            _ => None,
        });
        Own {
            to_act: obs.to_act,
            hand: obs.hand.clone(),
            bids: obs.bids.clone(),
            plays: plays.collect(),
        }
    }
}

/// A game part (`{"you":N,"observation":{...}}`) taken apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeatView<'a> {
    pub you: Seat,
    /// The whole observation object.
    pub observation: &'a str,
    /// The public rest, in four pieces around the own fields.
    pub public: [&'a str; 4],
    pub own: Own,
}

/// Splits `game`, or `None` when it does not read in the core's layout.
pub fn split(game: &str) -> Option<SeatView<'_>> {
    let mut c = Cursor {
        b: game.as_bytes(),
        at: 0,
    };
    c.key(b"{\"you\":")?;
    let you = c.number()??;
    // The game's public id, the same in every view of it.
    if c.key(b",\"id\":").is_some() {
        c.scalar()?;
    }
    c.key(b",\"observation\":")?;
    let start = c.at;
    let observation = game.get(start..game.len().checked_sub(1)?)?;
    if !game.ends_with('}') {
        return None;
    }
    let head = Head::read(&mut c)?;
    let (legal_at, ranking_at) = tail(game, head.has_bid_at)?;
    let o = game.get(..game.len() - 1)?;
    let plays = cards_in(o.get(legal_at..ranking_at)?.as_bytes())?;
    Some(SeatView {
        you,
        observation,
        public: [
            game.get(start..head.to_act_at)?,
            game.get(head.trump_at..head.hand_at)?,
            game.get(head.has_bid_at..legal_at)?,
            o.get(ranking_at..)?,
        ],
        own: Own {
            to_act: head.to_act,
            hand: head.hand,
            bids: head.bids,
            plays,
        },
    })
}

/// The observation's head read up to `has_bid`'s key: the own fields in it, and where
/// they lie in the game part (the public pieces end and start there).
struct Head {
    to_act_at: usize,
    to_act: Option<Seat>,
    trump_at: usize,
    hand_at: usize,
    hand: Vec<Card>,
    bids: Vec<Option<u8>>,
    has_bid_at: usize,
}

impl Head {
    /// The head, key by key as the core writes it, from the cursor at the
    /// observation's start.
    fn read(c: &mut Cursor<'_>) -> Option<Head> {
        for key in [
            &b"{\"players\":"[..],
            b",\"round\":",
            b",\"rounds\":",
            b",\"phase\":",
            b",\"dealer\":",
        ] {
            c.key(key)?;
            c.scalar()?;
        }
        c.key(b",\"to_act\":")?;
        let to_act_at = c.at;
        let to_act = c.number()?;
        c.key(b",\"turn_deadline_ms\":")?;
        c.scalar()?;
        let trump_at = c.at;
        c.key(b",\"trump_card\":")?;
        c.scalar()?;
        c.key(b",\"trump_suit\":")?;
        c.scalar()?;
        c.key(b",\"hand\":")?;
        let hand_at = c.at;
        let hand = c.cards()?;
        c.key(b",\"bids\":")?;
        let bids = c.numbers()?;
        let has_bid_at = c.at;
        c.key(b",\"has_bid\":")?;
        Some(Head {
            to_act_at,
            to_act,
            trump_at,
            hand_at,
            hand,
            bids,
            has_bid_at,
        })
    }
}

/// The tail of `game`: `legal_actions` (objects that hold no list), then `ranking`,
/// null or a list of objects that hold no list. Returns where `legal_actions`' list
/// starts and where `,"ranking":` starts, or `None` when they are not in place after
/// `has_bid_at`.
fn tail(game: &str, has_bid_at: usize) -> Option<(usize, usize)> {
    let o = game.get(..game.len() - 1)?;
    let ranking_value = match o.strip_suffix("null}") {
        Some(before) => before.len(),
        None => o.rfind('[')?,
    };
    let ranking_at = ranking_value.checked_sub(",\"ranking\":".len())?;
    let legal_at = o.get(..ranking_at)?.rfind('[')?;
    let in_place = o.get(ranking_at..ranking_value)? == ",\"ranking\":"
        && o.get(..legal_at)?.ends_with(",\"legal_actions\":")
        && legal_at > has_bid_at;
    in_place.then_some((legal_at, ranking_at))
}

impl SeatView<'_> {
    /// Whether the public rest is `text` (its four pieces one after the other).
    pub fn public_is(&self, text: &str) -> bool {
        let mut rest = text;
        for part in self.public {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        }
        rest.is_empty()
    }

    /// The public rest in one piece.
    pub fn public_text(&self) -> String {
        self.public.concat()
    }
}

/// A place in a JSON text, read forwards; every step fails on anything unexpected.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }

    /// Steps over `key` (with its quotes, comma and colon).
    fn key(&mut self, key: &[u8]) -> Option<()> {
        self.b
            .get(self.at..)?
            .starts_with(key)
            .then(|| self.at += key.len())
    }

    /// Steps over a number, `null`, `true`, `false` or a string without escapes.
    fn scalar(&mut self) -> Option<()> {
        if self.peek()? == b'"' {
            let len = string_len(self.b.get(self.at..)?)?;
            self.at += len;
        } else {
            while !matches!(self.peek()?, b',' | b'}' | b']') {
                self.at += 1;
            }
        }
        Some(())
    }

    /// A small number or `null`.
    fn number(&mut self) -> Option<Option<u8>> {
        if self.b.get(self.at..)?.starts_with(b"null") {
            self.at += 4;
            return Some(None);
        }
        let mut n: u32 = 0;
        let from = self.at;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            n = n * 10 + u32::from(d - b'0');
            self.at += 1;
        }
        (self.at > from && self.at - from <= 3)
            .then(|| u8::try_from(n).ok())?
            .map(Some)
    }

    /// A list of small numbers or nulls.
    fn numbers(&mut self) -> Option<Vec<Option<u8>>> {
        self.key(b"[")?;
        let mut out = Vec::new();
        if self.key(b"]").is_some() {
            return Some(out);
        }
        loop {
            out.push(self.number()?);
            if self.key(b"]").is_some() {
                return Some(out);
            }
            self.key(b",")?;
        }
    }

    /// A list of card codes.
    fn cards(&mut self) -> Option<Vec<Card>> {
        self.key(b"[")?;
        let mut out = Vec::new();
        if self.key(b"]").is_some() {
            return Some(out);
        }
        loop {
            let rest = self.b.get(self.at..)?;
            let len = string_len(rest)?;
            out.push(card(rest.get(1..len - 1)?)?);
            self.at += len;
            if self.key(b"]").is_some() {
                return Some(out);
            }
            self.key(b",")?;
        }
    }
}

/// The length of the string without escapes at the start of `b`, quotes included.
fn string_len(b: &[u8]) -> Option<usize> {
    if b.first() != Some(&b'"') {
        return None;
    }
    let end = b.get(1..)?.iter().position(|c| *c == b'"' || *c == b'\\')? + 1;
    (b[end] == b'"').then_some(end + 1)
}

/// Every card code among the strings of `b` (none with escapes).
fn cards_in(b: &[u8]) -> Option<Vec<Card>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'"' {
            i += 1;
            continue;
        }
        let len = string_len(&b[i..])?;
        if let Some(c) = card(&b[i + 1..i + len - 1]) {
            out.push(c);
        }
        i += len;
    }
    Some(out)
}

/// The card a code names (`h14`, `W1`, `J4`), read from its bytes.
pub fn card(s: &[u8]) -> Option<Card> {
    let (kind, digits) = s.split_first()?;
    let n = match digits {
        [d @ b'1'..=b'9'] => d - b'0',
        [b'1', d @ b'0'..=b'4'] => 10 + (d - b'0'),
        _ => return None,
    };
    let suit = match kind {
        b'c' => Suit::Clubs,
        b'd' => Suit::Diamonds,
        b'h' => Suit::Hearts,
        b's' => Suit::Spades,
        b'W' => return (1..=4).contains(&n).then_some(Card::Wizard(n)),
        b'J' => return (1..=4).contains(&n).then_some(Card::Jester(n)),
        _ => return None,
    };
    Card::suited(suit, n)
}

/// Whether `s` is a card code.
pub fn is_card_code(s: &[u8]) -> bool {
    card(s).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every card code reads back as its card; nothing else reads as one.
    #[test]
    fn card_codes() {
        for c in Card::deck() {
            assert_eq!(card(c.code().as_bytes()), Some(c));
        }
        for bad in ["h1", "h15", "h05", "W0", "W5", "J10", "x9", "", "h", "c100"] {
            assert_eq!(card(bad.as_bytes()), None, "{bad}");
        }
    }
}
