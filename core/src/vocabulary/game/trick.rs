//! The trick rules as pure functions: which suit must be followed and who wins.

use super::card::{Card, Suit};

/// What the cards played so far ask of the next player.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lead {
    /// No card yet, or only Jesters: the next non-Jester card sets the lead.
    Open,
    /// The first non-Jester card was a Wizard: nothing has to be followed.
    Wizard,
    /// The first non-Jester card was of this suit.
    Suit(Suit),
}

/// The lead set by the cards of a trick in play order.
pub fn lead(cards: impl IntoIterator<Item = Card>) -> Lead {
    for card in cards {
        match card {
            Card::Jester(_) => continue,
            Card::Wizard(_) => return Lead::Wizard,
            Card::Suited { suit, .. } => return Lead::Suit(suit),
        }
    }
    Lead::Open
}

/// The suit a hand must follow, if any: the led suit when the hand holds it.
pub fn suit_to_follow(hand: &[Card], lead: Lead) -> Option<Suit> {
    match lead {
        Lead::Suit(suit) => hand.iter().any(|c| c.suit() == Some(suit)).then_some(suit),
        Lead::Open | Lead::Wizard => None,
    }
}

/// Whether `card` may be played from `hand` under `lead` (the card must be in the hand).
pub fn may_play(hand: &[Card], lead: Lead, card: Card) -> bool {
    match suit_to_follow(hand, lead) {
        Some(suit) => card.suit().is_none_or(|s| s == suit),
        None => true,
    }
}

/// The position (in play order) of the card that wins a trick: the first Wizard; else
/// the highest trump; else the highest card of the led suit; if all are Jesters, the
/// first. Returns `None` only for an empty trick.
pub fn winner(cards: &[Card], trump: Option<Suit>) -> Option<usize> {
    if cards.is_empty() {
        return None;
    }
    if let Some(i) = cards.iter().position(|c| c.is_wizard()) {
        return Some(i);
    }
    let led = match lead(cards.iter().copied()) {
        Lead::Suit(s) => s,
        // No Wizard and no suited card: every card is a Jester.
        Lead::Open | Lead::Wizard => return Some(0),
    };
    let key = |card: &Card| match *card {
        Card::Suited { suit, rank } if Some(suit) == trump => Some((2u8, rank)),
        Card::Suited { suit, rank } if suit == led => Some((1u8, rank)),
        _ => None,
    };
    let mut best: Option<(usize, (u8, u8))> = None;
    for (i, card) in cards.iter().enumerate() {
        if let Some(k) = key(card) {
            // Strictly greater: with a single deck no two suited cards tie, and the
            // earlier card keeps the trick if they ever did.
            if best.is_none_or(|(_, b)| k > b) {
                best = Some((i, k));
            }
        }
    }
    best.map(|(i, _)| i)
}
