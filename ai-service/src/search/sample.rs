//! What a seat knows about the hidden cards, and sampling hands consistent with it.
//!
//! Known from the observation: the own hand, every card played this round, the turned
//! card (also a Wizard or Jester: it is out of play), how many cards each seat still
//! holds, and the suits each seat has shown out of. The observation lists `played` in
//! order but names the player only for the current and the last trick; the rest is
//! recovered exactly by replaying the round: the first trick is led from the dealer's
//! left and the winner of each trick (computed with the trump suit) leads the next.
//! That replay is checked against the observation's leader, current trick and last
//! trick; if they disagree (a malformed view), only the voids shown in those two
//! tricks are used. Nothing else is lost for the current round. Earlier rounds are not
//! used at all (the view keeps only their scores), nor is the dealer's choice of trump
//! after a turned Wizard, beyond what the dealer's bid says.
//!
//! Opponents' public bids are used by weighting each sample by how well the heuristic's
//! bid estimate for the sampled hand matches the bid made (a Gaussian in the distance).

use rand::Rng;
use rand::seq::SliceRandom;
use wizard_core::vocabulary::game::{Card, Observation, Seat, Suit, trick};

use super::sim::{DECK, Heuristic, Mask, SEATS_MAX, Sim, bit, suit_mask};

/// Why an observation cannot be searched (the heuristic then decides).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KnowledgeError {
    /// The observation is not for a seat to act, or has more seats than a table.
    NotToAct,
    /// The card counts do not add up (a malformed observation).
    CardCount,
}

/// Everything the viewer knows about where the unseen cards are.
#[derive(Clone, Debug)]
pub(crate) struct Knowledge {
    pub(crate) viewer: Seat,
    players: u8,
    own: Mask,
    /// Cards neither in the own hand, played, nor turned.
    unknown: Mask,
    /// The indices of the `unknown` cards, lowest first: every sample's pool starts
    /// as a copy of them (no `Card` is built per sample).
    unknown_indices: Vec<u8>,
    /// Cards each seat still holds (the viewer's entry is its own hand's size).
    sizes: [u8; SEATS_MAX],
    /// Suits each seat is known to lack, bit `Suit::index()`.
    voids: [u8; SEATS_MAX],
    /// Whether the voids came from a full, consistent replay of the round.
    pub(crate) replayed: bool,
    /// The cards each seat has played this round (known only after a replay).
    played_by: [Mask; SEATS_MAX],
    /// Seats in the order the samplers fill them: most constrained first.
    order: [Seat; SEATS_MAX],
}

impl Knowledge {
    pub(crate) fn new(obs: &Observation) -> Result<Knowledge, KnowledgeError> {
        let viewer = obs.to_act.ok_or(KnowledgeError::NotToAct)?;
        let n = usize::from(obs.players);
        if n > SEATS_MAX || usize::from(viewer) >= n || obs.players == 0 {
            return Err(KnowledgeError::NotToAct);
        }
        let own = obs.hand.iter().fold(0, |m, &c| m | bit(c));
        let seen = obs
            .played
            .iter()
            .chain(obs.trump_card.iter())
            .fold(own, |m, &c| m | bit(c));
        let unknown = DECK & !seen;
        let completed: usize = obs.tricks_won.iter().map(|&t| usize::from(t)).sum();
        let mut sizes = [0u8; SEATS_MAX];
        for (seat, size) in (0u8..obs.players).zip(sizes.iter_mut()) {
            let in_trick = obs.trick.iter().any(|p| p.player == seat);
            let held = usize::from(obs.round)
                .saturating_sub(completed)
                .saturating_sub(usize::from(in_trick));
            *size = u8::try_from(held).map_err(|_| KnowledgeError::CardCount)?;
        }
        if usize::from(sizes[usize::from(viewer)]) != obs.hand.len() {
            return Err(KnowledgeError::CardCount);
        }
        let others: u32 = (0..n)
            .filter(|&s| s != usize::from(viewer))
            .map(|s| u32::from(sizes[s]))
            .sum();
        if others > unknown.count_ones() {
            return Err(KnowledgeError::CardCount);
        }
        let (voids, played_by, replayed) = match replay(obs) {
            Some(r) => (r.voids, r.played_by, true),
            None => (shown_voids(obs), [0; SEATS_MAX], false),
        };
        let mut order = [0u8; SEATS_MAX];
        let mut seats: Vec<Seat> = (0..obs.players).filter(|&s| s != viewer).collect();
        seats.sort_by_key(|&s| std::cmp::Reverse(voids[usize::from(s)].count_ones()));
        for (slot, s) in order.iter_mut().zip(seats) {
            *slot = s;
        }
        let unknown_indices = (0u8..60).filter(|&i| unknown & 1 << i != 0).collect();
        Ok(Knowledge {
            viewer,
            players: obs.players,
            own,
            unknown,
            unknown_indices,
            sizes,
            voids,
            replayed,
            played_by,
            order,
        })
    }

    /// The cards the viewer has not seen: in the other seats' hands or undealt.
    pub(crate) fn unknown(&self) -> Mask {
        self.unknown
    }

    /// Suits `seat` is known to lack.
    pub(crate) fn voids(&self, seat: Seat) -> u8 {
        self.voids.get(usize::from(seat)).copied().unwrap_or(0)
    }

    /// Deals the unknown cards to the other seats into `hands` (the rest stays undealt).
    /// Respects every known void when it can in a few attempts; otherwise (rare, late
    /// in the last round) deals ignoring voids so the search still has a world.
    /// Returns whether the voids were respected. `pool` is scratch space the caller
    /// keeps between samples (the card indices of at most the 60 cards of the deck),
    /// so sampling allocates only the first time.
    pub(crate) fn sample(
        &self,
        rng: &mut impl Rng,
        hands: &mut [Mask; SEATS_MAX],
        pool: &mut Vec<u8>,
    ) -> bool {
        pool.clear();
        pool.extend_from_slice(&self.unknown_indices);
        for attempt in 0..8 {
            pool.shuffle(rng);
            if self.deal(pool, hands, attempt < 7) {
                return attempt < 7;
            }
        }
        false
    }

    /// Deals the shuffled `pool` (card indices) in order: each seat of `order` takes
    /// the first cards it may hold that no earlier seat took.
    fn deal(&self, pool: &[u8], hands: &mut [Mask; SEATS_MAX], respect_voids: bool) -> bool {
        *hands = [0; SEATS_MAX];
        hands[usize::from(self.viewer)] = self.own;
        // The cards no seat may take any more: those taken, and for the seat being dealt
        // the suits it lacks.
        let mut taken: Mask = 0;
        let others = usize::from(self.players.saturating_sub(1));
        for &seat in self.order.iter().take(others) {
            let s = usize::from(seat);
            let mut need = self.sizes[s];
            if need == 0 {
                continue;
            }
            let void = if respect_voids { self.voids[s] } else { 0 };
            let refused = Suit::ALL
                .iter()
                .filter(|x| void & void_bit(**x) != 0)
                .fold(taken, |m, &x| m | suit_mask(x));
            let mut hand: Mask = 0;
            for &i in pool {
                let c = 1u64 << i;
                if refused & c == 0 {
                    hand |= c;
                    need -= 1;
                    if need == 0 {
                        break;
                    }
                }
            }
            if need > 0 {
                return false;
            }
            hands[s] = hand;
            taken |= hand;
        }
        true
    }

    /// Log-likelihood weight of a sampled world: how close the heuristic's bid estimate
    /// for each opponent's sampled hand, as dealt (what it still holds plus what it has
    /// played), comes to the bid it made. `sigma` is the spread in tricks; 0 turns
    /// weighting off, and so does a failed replay once cards were played (the dealt
    /// hands are then unknown).
    pub(crate) fn log_weight(
        &self,
        obs: &Observation,
        world: &Sim,
        h: &Heuristic,
        sigma: f32,
    ) -> f32 {
        if sigma <= 0.0 || (!self.replayed && !obs.played.is_empty()) {
            return 0.0;
        }
        let mut log_w = 0.0;
        // Replay the bidding in order so each opponent sees the bids made before it.
        let mut replay = *world;
        replay.bids = [None; SEATS_MAX];
        for (hand, played) in replay.hands.iter_mut().zip(self.played_by) {
            *hand |= played;
        }
        let mut seat = (obs.dealer + 1) % self.players;
        for _ in 0..self.players {
            let Some(made) = obs.bids.get(usize::from(seat)).copied().flatten() else {
                break;
            };
            if seat != self.viewer {
                let estimate = replay.bid_estimate(seat, h);
                let d = (estimate - f32::from(made)).abs();
                // Being within half a trick is what a heuristic bidder would do exactly.
                let excess = (d - 0.5).max(0.0);
                log_w -= excess * excess / (2.0 * sigma * sigma);
            }
            replay.bids[usize::from(seat)] = Some(made);
            seat = (seat + 1) % self.players;
        }
        log_w
    }
}

fn void_bit(suit: Suit) -> u8 {
    1 << suit.index()
}

/// Voids shown by the cards of one trick played in order from `leader`.
fn trick_voids(cards: &[Card], leader: Seat, players: u8, voids: &mut [u8; SEATS_MAX]) {
    let mut led: Option<Suit> = None;
    for (i, &c) in (0u8..).zip(cards) {
        let seat = usize::from((leader + i) % players);
        match trick::lead(cards[..usize::from(i)].iter().copied()) {
            trick::Lead::Suit(s) => led = Some(s),
            trick::Lead::Open | trick::Lead::Wizard => {}
        }
        if let (Some(s), Some(cs)) = (led, c.suit())
            && cs != s
            && let Some(v) = voids.get_mut(seat)
        {
            *v |= void_bit(s);
        }
    }
}

/// What replaying the round shows: each seat's voids and the cards it played.
struct Replay {
    voids: [u8; SEATS_MAX],
    played_by: [Mask; SEATS_MAX],
}

/// Marks the cards of one trick played in order from `leader` as played by their seats.
fn mark_played(cards: &[Card], leader: Seat, players: u8, played_by: &mut [Mask; SEATS_MAX]) {
    for (i, &c) in (0u8..).zip(cards) {
        if let Some(m) = played_by.get_mut(usize::from((leader + i) % players)) {
            *m |= bit(c);
        }
    }
}

/// Replays every trick of the round; `None` if the replay disagrees with the
/// observation.
fn replay(obs: &Observation) -> Option<Replay> {
    let n = usize::from(obs.players);
    let mut voids = [0u8; SEATS_MAX];
    let mut played_by = [0; SEATS_MAX];
    let mut leader = (obs.dealer + 1) % obs.players;
    let mut last: Option<(Vec<Card>, Seat, Seat)> = None;
    let mut chunks = obs.played.chunks_exact(n);
    for chunk in chunks.by_ref() {
        trick_voids(chunk, leader, obs.players, &mut voids);
        mark_played(chunk, leader, obs.players, &mut played_by);
        let winner_pos = trick::winner(chunk, obs.trump_suit)?;
        let winner = (leader + u8::try_from(winner_pos).ok()?) % obs.players;
        last = Some((chunk.to_vec(), leader, winner));
        leader = winner;
    }
    let rest = chunks.remainder();
    let current_ok = leader == obs.leader
        && rest.len() == obs.trick.len()
        && (0u8..)
            .zip(&obs.trick)
            .zip(rest)
            .all(|((i, p), &c)| p.card == c && p.player == (leader + i) % obs.players);
    let last_ok = match (&last, &obs.last_trick) {
        (None, None) => true,
        (Some((cards, first, winner)), Some(t)) => {
            t.winner == *winner
                && t.cards.first().map(|p| p.player) == Some(*first)
                && t.cards.iter().map(|p| p.card).eq(cards.iter().copied())
        }
        _ => false,
    };
    if !(current_ok && last_ok) {
        return None;
    }
    trick_voids(rest, leader, obs.players, &mut voids);
    mark_played(rest, leader, obs.players, &mut played_by);
    Some(Replay { voids, played_by })
}

/// Voids shown in the current and the last trick only (the fallback).
fn shown_voids(obs: &Observation) -> [u8; SEATS_MAX] {
    let mut voids = [0u8; SEATS_MAX];
    let tricks = obs
        .last_trick
        .iter()
        .map(|t| t.cards.as_slice())
        .chain(std::iter::once(obs.trick.as_slice()));
    for t in tricks {
        let cards: Vec<Card> = t.iter().map(|p| p.card).collect();
        if let Some(first) = t.first() {
            trick_voids(&cards, first.player, obs.players, &mut voids);
        }
    }
    voids
}

/// Suits-per-seat helper for tests: every card of `hand` respects `voids`.
pub(crate) fn respects(hand: Mask, voids: u8) -> bool {
    Suit::ALL
        .into_iter()
        .all(|s| voids & void_bit(s) == 0 || hand & suit_mask(s) == 0)
}

#[cfg(test)]
mod tests {
    //! The mask deal against the straightforward one it replaced (cards in pool order,
    //! each seat taking the first it may hold): the same hands from the same pool, so
    //! the same worlds from the same RNG.

    use super::*;
    use proptest::prelude::*;
    use wizard_core::vocabulary::game::Card;

    /// The deal as written before masks: `Card`s, a suit test per card.
    fn deal_by_cards(k: &Knowledge, pool: &[u8], respect_voids: bool) -> Option<[Mask; SEATS_MAX]> {
        let mut hands = [0; SEATS_MAX];
        hands[usize::from(k.viewer)] = k.own;
        let mut taken: Mask = 0;
        for &seat in k.order.iter().take(usize::from(k.players - 1)) {
            let s = usize::from(seat);
            let mut need = k.sizes[s];
            let void = if respect_voids { k.voids[s] } else { 0 };
            for c in pool
                .iter()
                .filter_map(|&i| Card::from_index(usize::from(i)))
            {
                if need == 0 {
                    break;
                }
                let lacks = c.suit().is_some_and(|x| void & (1 << x.index()) != 0);
                if taken & bit(c) == 0 && !lacks {
                    taken |= bit(c);
                    hands[s] |= bit(c);
                    need -= 1;
                }
            }
            if need > 0 {
                return None;
            }
        }
        Some(hands)
    }

    fn knowledge() -> impl Strategy<Value = (Knowledge, Vec<u8>)> {
        (
            3u8..=6,
            0u64..(1 << 60),
            any::<[u8; SEATS_MAX]>(),
            any::<[u8; SEATS_MAX]>(),
        )
            .prop_flat_map(|(players, unknown, sizes, voids)| {
                let indices: Vec<u8> = (0u8..60).filter(|&i| unknown & 1 << i != 0).collect();
                let n = indices.len().max(1);
                let mut k = Knowledge {
                    viewer: 0,
                    players,
                    own: DECK & !unknown & 0xFFF,
                    unknown,
                    unknown_indices: indices.clone(),
                    sizes: [0; SEATS_MAX],
                    voids: [0; SEATS_MAX],
                    replayed: true,
                    played_by: [0; SEATS_MAX],
                    order: [0; SEATS_MAX],
                };
                for s in 1..usize::from(players) {
                    // Hands small enough to fit most of the time, large enough to fail
                    // now and then.
                    k.sizes[s] =
                        sizes[s] % u8::try_from(n / usize::from(players - 1) + 2).unwrap_or(2);
                    k.voids[s] = voids[s] & voids[s] >> 4 & 0xF;
                    k.order[s - 1] = u8::try_from(s).unwrap_or(1);
                }
                (Just(k), Just(indices).prop_shuffle())
            })
    }

    proptest! {
        #[test]
        fn the_mask_deal_is_the_card_deal((k, pool) in knowledge(), respect_voids: bool) {
            let mut hands = [0; SEATS_MAX];
            let dealt = k.deal(&pool, &mut hands, respect_voids);
            let expected = deal_by_cards(&k, &pool, respect_voids);
            prop_assert_eq!(dealt, expected.is_some());
            if let Some(e) = expected {
                prop_assert_eq!(hands, e);
            }
        }
    }
}
