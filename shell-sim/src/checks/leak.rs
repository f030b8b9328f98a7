//! The rules that keep a view to what its seat may know (docs/RULES.md, "What a seat
//! sees"), checked on every `state` frame the core sends a player: the hand shown is
//! the seat's own, other seats' cards appear only where played cards are shown, and a
//! hidden bid is not shown before every bid is in. A spectator's view (`you` null,
//! PROTOCOL.md 6.4) shows no hand, no legal action and no hidden bid at all.
//!
//! Who holds a card is learnt from the frames themselves: a card shown in a seat's
//! hand, or played by a seat (an event, the trick on the table, the last trick), is
//! that seat's for the round ([`Owners`]); the same card claimed by two seats in one
//! round means one of them was shown the other's card.

use wizard_core::vocabulary::game::{Card, Event, Phase, Seat};

use crate::checks::seat_view::{Own, Public, is_card_code};

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

    /// Claims the cards the public part of a view shows played (the trick on the
    /// table, the last trick); a view of a new round starts it.
    pub fn view_public(&mut self, obs: &Public, bad: &mut Vec<String>) {
        if obs.round != self.round {
            self.start_round(obs.round);
        }
        let played = obs
            .trick
            .iter()
            .chain(obs.last_trick.iter().flat_map(|t| &t.cards));
        for p in played {
            self.played(p.card, p.player, bad);
        }
    }

    /// Claims the cards of seat `you`'s hand.
    pub fn view_hand(&mut self, hand: &[Card], you: Seat, bad: &mut Vec<String>) {
        for card in hand {
            if let Err(other) = self.claim(*card, you) {
                bad.push(format!(
                    "seat {you} was shown {card} in its hand in round {}, which is seat {other}'s",
                    self.round
                ));
            }
        }
    }
}

/// The rules of a view's public part: the cards on the table are cards played.
pub fn public_rules(obs: &Public, bad: &mut Vec<String>) {
    let on_table = obs
        .trick
        .iter()
        .chain(obs.last_trick.iter().flat_map(|t| &t.cards));
    for p in on_table {
        if !obs.played.contains(&p.card) {
            bad.push(format!("{} on the table but not played", p.card));
        }
    }
    if let Some(card) = obs.trump_card.filter(|c| obs.played.contains(c)) {
        bad.push(format!("the turned card {card} was played"));
    }
}

/// The rules of seat `you`'s own fields (`own`) in a view whose public part is `obs`:
/// its hand fits the round and holds no card shown as played or turned, its legal
/// plays are from its hand, and under hidden bids no other seat's bid shows while
/// bidding runs.
pub fn own_rules(obs: &Public, own: &Own, you: Seat, bad: &mut Vec<String>) {
    let n = usize::from(obs.players.max(1));
    if obs.phase == Phase::Finished {
        if !own.hand.is_empty() {
            bad.push(format!("seat {you}: a finished game shows a hand"));
        }
    } else {
        let completed = obs.played.len().saturating_sub(obs.trick.len()) / n;
        let in_trick = usize::from(obs.trick.iter().any(|p| p.player == you));
        let expected = usize::from(obs.round).saturating_sub(completed + in_trick);
        if own.hand.len() != expected {
            bad.push(format!(
                "seat {you}: {} cards in hand in round {}, {completed} tricks played",
                own.hand.len(),
                obs.round
            ));
        }
    }
    for card in obs.played.iter().chain(obs.trump_card.iter()) {
        if own.hand.contains(card) {
            bad.push(format!(
                "seat {you}: {card} is in its hand and on the table"
            ));
        }
    }
    for card in &own.plays {
        if !own.hand.contains(card) {
            bad.push(format!(
                "seat {you}: may play {card}, which is not in its hand"
            ));
        }
    }
    if obs.options.hidden_bids && obs.phase == Phase::Bidding {
        for (seat, bid) in (0u8..).zip(&own.bids) {
            if seat != you && bid.is_some() {
                bad.push(format!(
                    "seat {you} sees the hidden bid {bid:?} of seat {seat} before every bid is in"
                ));
            }
        }
    }
}

/// The rules of a spectator's own fields (`you` null): no hand, nothing it may play or
/// bid, and under hidden bids no bid at all while bidding runs.
pub fn spectator_rules(obs: &Public, own: &Own, bad: &mut Vec<String>) {
    if !own.hand.is_empty() {
        bad.push(format!(
            "a spectator was shown a hand of {} cards in round {}",
            own.hand.len(),
            obs.round
        ));
    }
    if !own.plays.is_empty() {
        bad.push("a spectator was offered cards to play".into());
    }
    if obs.options.hidden_bids && obs.phase == Phase::Bidding {
        for (seat, bid) in (0u8..).zip(&own.bids) {
            if bid.is_some() {
                bad.push(format!(
                    "a spectator sees the hidden bid {bid:?} of seat {seat} before every bid is in"
                ));
            }
        }
    }
}

/// How many cards the public part of a view holds in the fields that may hold cards.
pub fn cards_in_public(obs: &Public) -> usize {
    obs.played.len()
        + obs.trick.len()
        + obs.last_trick.as_ref().map_or(0, |t| t.cards.len())
        + usize::from(obs.trump_card.is_some())
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
/// with [`cards_in_public`] or [`cards_in_events`], it finds a card in a field the
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
        // A string from the quote at `i` to the next quote not escaped.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Card codes are counted as whole strings, never inside another string.
    #[test]
    fn card_strings_counts_whole_strings() {
        let cases = [
            (r#"{"a":"h14","c":["W1","J4"]}"#, 3),
            (r#"{"b":"x\"h2\"","d":"\\","e":"s2"}"#, 1),
            (r#"{"h14":1,"f":"h140","g":"h1","k":"J5"}"#, 1),
            (r#""c2"#, 0),
            ("", 0),
        ];
        for (json, n) in cases {
            assert_eq!(card_strings(json), n, "{json}");
        }
    }
}
