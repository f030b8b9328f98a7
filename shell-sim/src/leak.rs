//! The rules that keep a view to what its seat may know (docs/RULES.md, "What a seat
//! sees"), checked on every `state` frame the core sends a player: the hand shown is
//! the seat's own, other seats' cards appear only where played cards are shown, and a
//! hidden bid is not shown before every bid is in.
//!
//! Who holds a card is learnt from the frames themselves: a card shown in a seat's
//! hand, or played by a seat (an event, the trick on the table, the last trick), is
//! that seat's for the round ([`Owners`]); the same card claimed by two seats in one
//! round means one of them was shown the other's card.

use wizard_core::game::{Action, Card, Event, Observation, Phase, Seat};

/// No seat claimed the card yet.
const NOBODY: u8 = u8::MAX;

/// Who holds each card in one round, as far as the frames told.
#[derive(Clone, Debug)]
pub struct Owners {
    round: u8,
    seat_of: [u8; 60],
}

impl Default for Owners {
    fn default() -> Self {
        Owners {
            round: 0,
            seat_of: [NOBODY; 60],
        }
    }
}

impl Owners {
    /// A new round: every card is back in the deck.
    pub fn start_round(&mut self, round: u8) {
        self.round = round;
        self.seat_of = [NOBODY; 60];
    }

    pub fn round(&self) -> u8 {
        self.round
    }

    /// `card` is `seat`'s this round; `Err` names the other seat that had it.
    pub fn claim(&mut self, card: Card, seat: Seat) -> Result<(), Seat> {
        let Some(slot) = self.seat_of.get_mut(card.index()) else {
            return Ok(());
        };
        match *slot {
            NOBODY => {
                *slot = seat;
                Ok(())
            }
            s if s == seat => Ok(()),
            other => Err(other),
        }
    }

    /// Claims every card a batch of events shows played; starts the next round at its
    /// `round_started`.
    pub fn events(&mut self, events: &[Event], bad: &mut Vec<String>) {
        for e in events {
            match e {
                Event::RoundStarted { round, .. } => self.start_round(*round),
                Event::CardPlayed { player, card } => self.played(*card, *player, bad),
                Event::TrickCompleted { cards, .. } => {
                    for p in cards {
                        self.played(p.card, p.player, bad);
                    }
                }
                _ => {}
            }
        }
    }

    fn played(&mut self, card: Card, seat: Seat, bad: &mut Vec<String>) {
        if let Err(other) = self.claim(card, seat) {
            bad.push(format!(
                "seat {seat} played {card} in round {}, which seat {other} was shown or played",
                self.round
            ));
        }
    }

    /// Claims the cards `obs` (the view of seat `you`) shows as held or played.
    pub fn view(&mut self, obs: &Observation, you: Seat, bad: &mut Vec<String>) {
        if obs.round != self.round {
            self.start_round(obs.round);
        }
        for card in &obs.hand {
            if let Err(other) = self.claim(*card, you) {
                bad.push(format!(
                    "seat {you} was shown {card} in its hand in round {}, which is seat {other}'s",
                    obs.round
                ));
            }
        }
        let played = obs
            .trick
            .iter()
            .chain(obs.last_trick.iter().flat_map(|t| &t.cards));
        for p in played {
            self.played(p.card, p.player, bad);
        }
    }
}

/// The rules one view must keep by itself: its seat is `you`, its hand fits the round
/// and holds no card shown as played or turned, its legal plays are from its hand, and
/// under hidden bids no other seat's bid shows while bidding runs.
pub fn view_rules(obs: &Observation, you: Seat, bad: &mut Vec<String>) {
    let n = usize::from(obs.players.max(1));
    if obs.phase == Phase::Finished {
        if !obs.hand.is_empty() {
            bad.push(format!("seat {you}: a finished game shows a hand"));
        }
    } else {
        let completed = obs.played.len().saturating_sub(obs.trick.len()) / n;
        let in_trick = usize::from(obs.trick.iter().any(|p| p.player == you));
        let expected = usize::from(obs.round).saturating_sub(completed + in_trick);
        if obs.hand.len() != expected {
            bad.push(format!(
                "seat {you}: {} cards in hand in round {}, {completed} tricks played",
                obs.hand.len(),
                obs.round
            ));
        }
    }
    let public = obs.played.iter().chain(obs.trump_card.iter());
    for card in public {
        if obs.hand.contains(card) {
            bad.push(format!(
                "seat {you}: {card} is in its hand and on the table"
            ));
        }
    }
    let on_table = obs
        .trick
        .iter()
        .chain(obs.last_trick.iter().flat_map(|t| &t.cards));
    for p in on_table {
        if !obs.played.contains(&p.card) {
            bad.push(format!(
                "seat {you}: {} on the table but not played",
                p.card
            ));
        }
    }
    for a in &obs.legal_actions {
        if let Action::Play { card } = a
            && !obs.hand.contains(card)
        {
            bad.push(format!(
                "seat {you}: may play {card}, which is not in its hand"
            ));
        }
    }
    if obs.options.hidden_bids && obs.phase == Phase::Bidding {
        for (seat, bid) in (0u8..).zip(&obs.bids) {
            if seat != you && bid.is_some() {
                bad.push(format!(
                    "seat {you} sees the hidden bid {bid:?} of seat {seat} before every bid is in"
                ));
            }
        }
    }
}

/// How many cards `obs` holds in the fields that may hold cards.
pub fn cards_in_view(obs: &Observation) -> usize {
    let plays = obs
        .legal_actions
        .iter()
        .filter(|a| matches!(a, Action::Play { .. }))
        .count();
    obs.hand.len()
        + obs.played.len()
        + obs.trick.len()
        + obs.last_trick.as_ref().map_or(0, |t| t.cards.len())
        + usize::from(obs.trump_card.is_some())
        + plays
}

/// How many cards `events` hold in the fields that may hold cards.
pub fn cards_in_events(events: &[Event]) -> usize {
    events
        .iter()
        .map(|e| match e {
            Event::RoundStarted { trump_card, .. } => usize::from(trump_card.is_some()),
            Event::CardPlayed { .. } => 1,
            Event::TrickCompleted { cards, .. } => cards.len(),
            _ => 0,
        })
        .sum()
}

/// How many JSON strings in `json` are card codes (`"h14"`, `"W1"`, `"J4"`). Compared
/// with [`cards_in_view`] or [`cards_in_events`], it finds a card in a field the
/// decoder does not know (an added field would be ignored by a typed decoder).
pub fn card_strings(json: &str) -> usize {
    let b = json.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'"' {
            i += 1;
            continue;
        }
        // A string from the quote at `i` to its closing quote; a card code has no
        // escapes.
        let mut j = i + 1;
        let mut escaped = false;
        while j < b.len() && b[j] != b'"' {
            if b[j] == b'\\' {
                escaped = true;
                j += 1;
            }
            j += 1;
        }
        if !escaped && j < b.len() && is_card_code(&b[i + 1..j]) {
            n += 1;
        }
        i = j + 1;
    }
    n
}

fn is_card_code(s: &[u8]) -> bool {
    let number = |d: &[u8]| -> Option<u8> {
        if d.is_empty() || d.len() > 2 || d[0] == b'0' || !d.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(d).ok()?.parse().ok()
    };
    match s.split_first() {
        Some((b'c' | b'd' | b'h' | b's', rest)) => {
            number(rest).is_some_and(|r| (2..=14).contains(&r))
        }
        Some((b'W' | b'J', rest)) => number(rest).is_some_and(|r| (1..=4).contains(&r)),
        _ => false,
    }
}
