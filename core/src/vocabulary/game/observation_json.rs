//! Every seat's observation as JSON at once: the public parts are encoded once per
//! change and each seat's own parts (hand, bids, seat to act, legal actions) are
//! spliced in, byte for byte what encoding that seat's [`Observation`] would give.
//!
//! A move in a game of four humans sends four personal views; encoding the public
//! three quarters of each view once is what makes that cheap (docs/BENCHMARKS.md).

use serde::Serialize;

use super::card::{Card, DECK_SIZE};
use super::rules::Game;
use super::types::{Action, CompletedTrick, PlayedCard, Seat};

#[cfg(doc)]
use super::observation::Observation;

/// The public parts of the observations of one game state, pre-encoded: the text
/// between the personal fields of an encoded [`Observation`]. Everything is written
/// into `String`s, so a finished view needs no UTF-8 check.
#[derive(Clone, Debug)]
pub struct ObservationJson {
    /// `{"players":…,"dealer":…,"to_act":`
    head: String,
    /// `,"trump_card":…,"trump_suit":…,"hand":`
    trump: String,
    /// `,"has_bid":…,"options":…,"legal_actions":`
    public: String,
    /// `,"ranking":…}`
    tail: String,
}

fn key(buf: &mut String, name: &str) {
    buf.push_str(",\"");
    buf.push_str(name);
    buf.push_str("\":");
}

/// Any serializable value, through `scratch` (used for the public parts only, once
/// per change).
fn value<T: Serialize + ?Sized>(buf: &mut String, scratch: &mut Vec<u8>, v: &T) {
    scratch.clear();
    // Writing our own plain types into a Vec cannot fail, and serde_json writes UTF-8.
    match serde_json::to_writer(&mut *scratch, v) {
        Ok(()) => buf.push_str(std::str::from_utf8(scratch).unwrap_or("null")),
        Err(_) => buf.push_str("null"),
    }
}

/// An integer, through `itoa` as serde_json writes it (the formatting machinery is
/// several times slower, and a view has dozens of numbers).
fn number(buf: &mut String, n: impl itoa::Integer) {
    buf.push_str(itoa::Buffer::new().format(n));
}

fn number_or_null(buf: &mut String, n: Option<impl itoa::Integer>) {
    match n {
        Some(n) => number(buf, n),
        None => buf.push_str("null"),
    }
}

/// Cards are the most frequent values in a view; their codes need no escaping, so
/// they are written directly instead of through serde's string escaper.
fn card(buf: &mut String, c: Card) {
    buf.push('"');
    buf.push_str(c.code());
    buf.push('"');
}

/// A JSON array of `items`, each written by `write`.
fn list<T: Copy>(buf: &mut String, items: &[T], write: impl Fn(&mut String, T)) {
    buf.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            buf.push(',');
        }
        write(buf, *item);
    }
    buf.push(']');
}

fn cards(buf: &mut String, cs: &[Card]) {
    list(buf, cs, card);
}

fn played(buf: &mut String, ps: &[PlayedCard]) {
    list(buf, ps, |buf, p| {
        buf.push_str("{\"player\":");
        number(buf, p.player);
        buf.push_str(",\"card\":");
        card(buf, p.card);
        buf.push('}');
    });
}

fn last_trick(buf: &mut String, t: Option<&CompletedTrick>) {
    let Some(t) = t else {
        buf.push_str("null");
        return;
    };
    buf.push_str("{\"cards\":");
    played(buf, &t.cards);
    buf.push_str(",\"winner\":");
    number(buf, t.winner);
    buf.push('}');
}

fn actions(buf: &mut String, actions: &[Action]) {
    list(buf, actions, |buf, a| {
        match a {
            Action::Bid { bid } => {
                buf.push_str("{\"kind\":\"bid\",\"bid\":");
                number(buf, bid);
            }
            Action::Play { card: c } => {
                buf.push_str("{\"kind\":\"play\",\"card\":");
                card(buf, c);
            }
            Action::ChooseTrump { suit } => {
                // Suit names are plain lowercase words: nothing to escape.
                buf.push_str("{\"kind\":\"choose_trump\",\"suit\":\"");
                buf.push_str(suit.name());
                buf.push('"');
            }
        }
        buf.push('}');
    });
}

impl Game {
    /// The public parts of every seat's observation in the current state.
    pub fn observation_json(&self) -> ObservationJson {
        let scratch = &mut Vec::with_capacity(64);
        let mut head = String::with_capacity(96);
        head.push_str("{\"players\":");
        value(&mut head, scratch, &self.players);
        for (name, v) in [("round", self.round), ("rounds", self.rounds)] {
            key(&mut head, name);
            value(&mut head, scratch, &v);
        }
        key(&mut head, "phase");
        value(&mut head, scratch, &self.phase);
        key(&mut head, "dealer");
        value(&mut head, scratch, &self.dealer);
        key(&mut head, "to_act");

        let mut trump = String::with_capacity(64);
        key(&mut trump, "trump_card");
        match self.trump_card {
            Some(c) => card(&mut trump, c),
            None => trump.push_str("null"),
        }
        key(&mut trump, "trump_suit");
        value(&mut trump, scratch, &self.trump_suit);
        key(&mut trump, "hand");

        let mut public = String::with_capacity(512);
        key(&mut public, "has_bid");
        list(&mut public, &self.bids, |buf, b| {
            buf.push_str(if b.is_some() { "true" } else { "false" });
        });
        key(&mut public, "tricks_won");
        value(&mut public, scratch, &self.tricks_won);
        key(&mut public, "trick");
        played(&mut public, &self.trick);
        key(&mut public, "leader");
        value(&mut public, scratch, &self.leader);
        key(&mut public, "last_trick");
        last_trick(&mut public, self.last_trick.as_ref());
        key(&mut public, "played");
        cards(&mut public, &self.played);
        key(&mut public, "scores");
        value(&mut public, scratch, &self.scores);
        key(&mut public, "round_scores");
        value(&mut public, scratch, &self.round_scores);
        key(&mut public, "options");
        value(&mut public, scratch, &self.options);
        key(&mut public, "legal_actions");

        let mut tail = String::with_capacity(128);
        key(&mut tail, "ranking");
        value(&mut tail, scratch, &self.ranking);
        tail.push('}');
        ObservationJson {
            head,
            trump,
            public,
            tail,
        }
    }
}

impl ObservationJson {
    /// Appends `seat`'s observation of `game` (the state `self` was made from) to
    /// `buf`. `turn_deadline_ms` gives the field of that name for the seat to act as
    /// this seat sees it.
    pub fn write_seat(
        &self,
        game: &Game,
        seat: Seat,
        turn_deadline_ms: impl FnOnce(Option<Seat>) -> Option<u64>,
        buf: &mut String,
    ) {
        let to_act = game.to_act_for(seat);
        buf.push_str(&self.head);
        number_or_null(buf, to_act);
        key(buf, "turn_deadline_ms");
        number_or_null(buf, turn_deadline_ms(to_act));
        buf.push_str(&self.trump);
        let mut hand = [Card::Jester(0); DECK_SIZE];
        let own = game.hand(seat);
        #[cfg(feature = "planted-bugs")]
        let leaked = crate::planted::hand_leak(game, seat);
        #[cfg(feature = "planted-bugs")]
        let own = leaked.as_deref().unwrap_or(own);
        let n = own.len().min(hand.len());
        hand[..n].copy_from_slice(&own[..n]);
        hand[..n].sort_unstable();
        cards(buf, &hand[..n]);
        key(buf, "bids");
        let hidden = game.bids_hidden();
        #[cfg(feature = "planted-bugs")]
        let hidden = hidden && !crate::planted::planted(crate::planted::Bug::HiddenBidLeak);
        buf.push('[');
        for (s, b) in (0u8..).zip(&game.bids) {
            if s > 0 {
                buf.push(',');
            }
            number_or_null(buf, b.filter(|_| !hidden || s == seat));
        }
        buf.push(']');
        buf.push_str(&self.public);
        actions(buf, &game.legal_actions(seat));
        buf.push_str(&self.tail);
    }

    /// Bytes of the public parts, to size buffers.
    pub fn len(&self) -> usize {
        self.head.len() + self.trump.len() + self.public.len() + self.tail.len()
    }

    /// Never true: there is always a public part.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
