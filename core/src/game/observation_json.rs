//! Every seat's observation as JSON at once: the public parts are encoded once per
//! change and each seat's own parts (hand, bids, seat to act, legal actions) are
//! spliced in, byte for byte what encoding that seat's [`Observation`] would give.
//!
//! A move in a game of four humans sends four personal views; encoding the public
//! three quarters of each view once is what makes that cheap (docs/BENCHMARKS.md).

use std::io::Write;

use serde::Serialize;

use super::card::{Card, DECK_SIZE};
use super::rules::Game;
use super::types::{Action, CompletedTrick, PlayedCard, Seat};

#[cfg(doc)]
use super::observation::Observation;

/// The public parts of the observations of one game state, pre-encoded: the text
/// between the personal fields of an encoded [`Observation`].
#[derive(Clone, Debug)]
pub struct ObservationJson {
    /// `{"players":…,"dealer":…,"to_act":`
    head: Vec<u8>,
    /// `,"trump_card":…,"trump_suit":…,"hand":`
    trump: Vec<u8>,
    /// `,"has_bid":…,"options":…,"legal_actions":`
    public: Vec<u8>,
    /// `,"ranking":…}`
    tail: Vec<u8>,
}

fn key(buf: &mut Vec<u8>, name: &str) {
    buf.push(b',');
    buf.push(b'"');
    buf.extend_from_slice(name.as_bytes());
    buf.extend_from_slice(b"\":");
}

fn value<T: Serialize + ?Sized>(buf: &mut Vec<u8>, v: &T) {
    // Writing our own plain types into a Vec cannot fail.
    if serde_json::to_writer(&mut *buf, v).is_err() {
        buf.extend_from_slice(b"null");
    }
}

fn number(buf: &mut Vec<u8>, n: impl std::fmt::Display) {
    // Writing into a Vec cannot fail.
    let _ = write!(buf, "{n}");
}

/// Cards are the most frequent values in a view; their codes need no escaping, so
/// they are written directly instead of through serde's string escaper.
fn card(buf: &mut Vec<u8>, c: Card) {
    buf.push(b'"');
    buf.extend_from_slice(c.code().as_bytes());
    buf.push(b'"');
}

/// A JSON array of `items`, each written by `write`.
fn list<T: Copy>(buf: &mut Vec<u8>, items: &[T], write: impl Fn(&mut Vec<u8>, T)) {
    buf.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        write(buf, *item);
    }
    buf.push(b']');
}

fn cards(buf: &mut Vec<u8>, cs: &[Card]) {
    list(buf, cs, card);
}

fn played(buf: &mut Vec<u8>, ps: &[PlayedCard]) {
    list(buf, ps, |buf, p| {
        buf.extend_from_slice(b"{\"player\":");
        number(buf, p.player);
        buf.extend_from_slice(b",\"card\":");
        card(buf, p.card);
        buf.push(b'}');
    });
}

fn last_trick(buf: &mut Vec<u8>, t: Option<&CompletedTrick>) {
    let Some(t) = t else {
        buf.extend_from_slice(b"null");
        return;
    };
    buf.extend_from_slice(b"{\"cards\":");
    played(buf, &t.cards);
    buf.extend_from_slice(b",\"winner\":");
    number(buf, t.winner);
    buf.push(b'}');
}

fn actions(buf: &mut Vec<u8>, actions: &[Action]) {
    list(buf, actions, |buf, a| {
        match a {
            Action::Bid { bid } => {
                buf.extend_from_slice(b"{\"kind\":\"bid\",\"bid\":");
                number(buf, bid);
            }
            Action::Play { card: c } => {
                buf.extend_from_slice(b"{\"kind\":\"play\",\"card\":");
                card(buf, c);
            }
            Action::ChooseTrump { suit } => {
                buf.extend_from_slice(b"{\"kind\":\"choose_trump\",\"suit\":");
                value(buf, &suit);
            }
        }
        buf.push(b'}');
    });
}

impl Game {
    /// The public parts of every seat's observation in the current state.
    pub fn observation_json(&self) -> ObservationJson {
        let mut head = Vec::with_capacity(96);
        head.extend_from_slice(b"{\"players\":");
        value(&mut head, &self.players);
        for (name, v) in [("round", self.round), ("rounds", self.rounds)] {
            key(&mut head, name);
            value(&mut head, &v);
        }
        key(&mut head, "phase");
        value(&mut head, &self.phase);
        key(&mut head, "dealer");
        value(&mut head, &self.dealer);
        key(&mut head, "to_act");

        let mut trump = Vec::with_capacity(64);
        key(&mut trump, "trump_card");
        match self.trump_card {
            Some(c) => card(&mut trump, c),
            None => trump.extend_from_slice(b"null"),
        }
        key(&mut trump, "trump_suit");
        value(&mut trump, &self.trump_suit);
        key(&mut trump, "hand");

        let mut public = Vec::with_capacity(512);
        key(&mut public, "has_bid");
        list(&mut public, &self.bids, |buf, b| {
            buf.extend_from_slice(if b.is_some() { b"true" } else { b"false" });
        });
        key(&mut public, "tricks_won");
        value(&mut public, &self.tricks_won);
        key(&mut public, "trick");
        played(&mut public, &self.trick);
        key(&mut public, "leader");
        value(&mut public, &self.leader);
        key(&mut public, "last_trick");
        last_trick(&mut public, self.last_trick.as_ref());
        key(&mut public, "played");
        cards(&mut public, &self.played);
        key(&mut public, "scores");
        value(&mut public, &self.scores);
        key(&mut public, "round_scores");
        value(&mut public, &self.round_scores);
        key(&mut public, "options");
        value(&mut public, &self.options);
        key(&mut public, "legal_actions");

        let mut tail = Vec::with_capacity(128);
        key(&mut tail, "ranking");
        value(&mut tail, &self.ranking);
        tail.push(b'}');
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
        buf: &mut Vec<u8>,
    ) {
        let to_act = game.to_act_for(seat);
        buf.extend_from_slice(&self.head);
        value(buf, &to_act);
        key(buf, "turn_deadline_ms");
        value(buf, &turn_deadline_ms(to_act));
        buf.extend_from_slice(&self.trump);
        let mut hand = [Card::Jester(0); DECK_SIZE];
        let own = game.hand(seat);
        let n = own.len().min(hand.len());
        hand[..n].copy_from_slice(&own[..n]);
        hand[..n].sort_unstable();
        cards(buf, &hand[..n]);
        key(buf, "bids");
        let hidden = game.bids_hidden();
        buf.push(b'[');
        for (s, b) in (0u8..).zip(&game.bids) {
            if s > 0 {
                buf.push(b',');
            }
            match b {
                Some(b) if !hidden || s == seat => value(buf, b),
                _ => buf.extend_from_slice(b"null"),
            }
        }
        buf.push(b']');
        buf.extend_from_slice(&self.public);
        actions(buf, &game.legal_actions(seat));
        buf.extend_from_slice(&self.tail);
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
