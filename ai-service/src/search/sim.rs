//! A compact copy of one round of the rules, for rollouts: hands are 60-bit masks and
//! every player is a copy of the core's heuristic (`wizard_core::vocabulary::game::bot`), so one
//! rollout of a round costs microseconds instead of the tens that cloning a `Game` and
//! building an `Observation` per move would.
//!
//! It is deliberately not a second rules engine for the server: it covers one round only
//! (no deal, no later rounds) and is checked against `Game` (built with
//! `Game::from_world`) by the integration tests: every rollout move is legal in the
//! engine, is the core heuristic's decision in the engine's view, and the round ends
//! with the same score changes. The heuristic copy breaks ties (cards of equal power)
//! by the lowest card index where the core's heuristic asks its RNG.

use wizard_core::vocabulary::game::bot::Params;
use wizard_core::vocabulary::game::round_score;
use wizard_core::vocabulary::game::{Action, BidRestriction, Card, Observation, Phase, Seat, Suit};

/// A set of cards, bit `Card::index()`.
pub(crate) type Mask = u64;

/// Most seats at a table.
pub(crate) const SEATS_MAX: usize = 6;
const WIZARDS: Mask = 0xF << 52;
const JESTERS: Mask = 0xF << 56;
/// Every card of the deck.
pub(crate) const DECK: Mask = (1 << 60) - 1;

/// The cards of one suit.
pub(crate) fn suit_mask(suit: Suit) -> Mask {
    0x1FFF << (13 * suit.index())
}

/// The mask of one card.
pub(crate) fn bit(card: Card) -> Mask {
    1 << card.index()
}

/// The cards of a mask, lowest index first.
pub(crate) fn cards(mut mask: Mask) -> impl Iterator<Item = Card> {
    std::iter::from_fn(move || {
        if mask == 0 {
            return None;
        }
        let i = mask.trailing_zeros();
        mask &= mask - 1;
        Card::from_index(i as usize)
    })
}

/// The cards of the suit of each card index (none for Wizards and Jesters).
const SUIT_OF: [Mask; 60] = {
    let mut t = [0; 60];
    let mut i = 0;
    while i < 52 {
        t[i] = 0x1FFF << (13 * (i / 13));
        i += 1;
    }
    t
};

/// The index of the lowest card of a non-empty mask.
fn lowest_bit(mask: Mask) -> u32 {
    mask.trailing_zeros()
}

/// The ranks (bit `rank - 2`) present in any suit of `mask` (suited cards only).
fn rank_union(mask: Mask) -> u64 {
    (mask | mask >> 13 | mask >> 26 | mask >> 39) & 0x1FFF
}

/// The index of the card of rank bit `rank` in the lowest suit of `mask` that has it
/// (the lowest index among the cards of that rank).
fn first_suit_with(mask: Mask, rank: u32) -> u32 {
    let same_rank = mask & (0x0008_0040_0200_1000_u64 >> (12 - rank));
    lowest_bit(same_rank)
}

/// The heuristic's tuning for one round, its trick-probability table read out per card
/// index once per search (`BidTable::get` classifies each card on every call): the
/// expected tricks of a hand are the same sums of the same numbers in the same order.
#[derive(Clone, Debug)]
pub(crate) struct Heuristic {
    aggression: f32,
    bid_pressure: f32,
    /// `odds[t][i]`: the table's probability that card index `i` takes a trick, `t` 0
    /// without trump, `1 + Suit::index()` with that trump.
    odds: [[f32; 60]; 5],
}

impl Heuristic {
    /// The table of `params` for a round of `round` cards at `players` seats.
    pub(crate) fn new(params: &Params<'_>, players: u8, round: u8) -> Heuristic {
        let mut odds = [[0.0; 60]; 5];
        for (t, row) in odds.iter_mut().enumerate() {
            let trump = t.checked_sub(1).map(|s| Suit::ALL[s]);
            for c in cards(DECK) {
                row[c.index()] = params.table.get(players, trump, round, c);
            }
        }
        Heuristic {
            aggression: params.aggression,
            bid_pressure: params.bid_pressure,
            odds,
        }
    }

    /// The heuristic's expected tricks for `hand` under `trump`.
    fn expected_tricks(&self, hand: Mask, trump: Option<Suit>) -> f32 {
        let row = &self.odds[trump.map_or(0, |s| 1 + s.index())];
        indices(hand).map(|i| row[i as usize]).sum()
    }
}

/// The card indices of a mask, lowest first.
fn indices(mut mask: Mask) -> impl Iterator<Item = u32> {
    std::iter::from_fn(move || {
        if mask == 0 {
            return None;
        }
        let i = mask.trailing_zeros();
        mask &= mask - 1;
        Some(i)
    })
}

/// Where a simulated round stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    ChoosingTrump,
    Bidding,
    Playing,
    Done,
}

/// One round in progress. `Copy`, so a rollout starts with a plain copy.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sim {
    players: u8,
    round: u8,
    dealer: Seat,
    hidden_bids: bool,
    restriction: BidRestriction,
    stage: Stage,
    trump: Option<Suit>,
    /// The cards of the trump suit (none without trump).
    trumps: Mask,
    to_act: Seat,
    pub(crate) hands: [Mask; SEATS_MAX],
    pub(crate) bids: [Option<u8>; SEATS_MAX],
    tricks: [u8; SEATS_MAX],
    trick_len: u8,
    /// Whether the current trick has no card but Jesters yet (the lead is open).
    open: bool,
    /// The cards of the suit the current trick's cards make the others follow (none
    /// while the lead is open or after a Wizard led): kept as cards are played.
    follow: Mask,
    /// The position in the current trick of the card taking it so far.
    win_pos: u8,
    /// The cards that would take the current trick if played now (every card when it
    /// is empty): the trick's winner is kept incrementally, never recomputed.
    beats: Mask,
    leader: Seat,
    scores: [i32; SEATS_MAX],
}

impl Sim {
    /// The public part of the position `obs` shows; hands and hidden bids are filled in
    /// per sampled world. `None` when the observation does not fit (more than six
    /// seats, a finished game).
    pub(crate) fn from_observation(obs: &Observation) -> Option<Sim> {
        let n = usize::from(obs.players);
        if n > SEATS_MAX || obs.trick.len() >= n.max(1) {
            return None;
        }
        let stage = match obs.phase {
            Phase::ChoosingTrump => Stage::ChoosingTrump,
            Phase::Bidding => Stage::Bidding,
            Phase::Playing => Stage::Playing,
            Phase::Finished => return None,
        };
        let mut sim = Sim {
            players: obs.players,
            round: obs.round,
            dealer: obs.dealer,
            hidden_bids: obs.options.hidden_bids,
            restriction: obs.options.bid_restriction,
            stage,
            trump: obs.trump_suit,
            trumps: obs.trump_suit.map_or(0, suit_mask),
            to_act: obs.to_act.unwrap_or(obs.leader),
            hands: [0; SEATS_MAX],
            bids: [None; SEATS_MAX],
            tricks: [0; SEATS_MAX],
            trick_len: 0,
            open: true,
            follow: 0,
            win_pos: 0,
            beats: DECK,
            leader: obs.leader,
            scores: [0; SEATS_MAX],
        };
        for i in 0..n {
            sim.bids[i] = obs.bids.get(i).copied().flatten();
            sim.tricks[i] = obs.tricks_won.get(i).copied().unwrap_or(0);
            sim.scores[i] = obs.scores.get(i).copied().unwrap_or(0);
        }
        for p in &obs.trick {
            sim.add_to_trick(p.card.index() as u32);
        }
        Some(sim)
    }

    pub(crate) fn players(&self) -> u8 {
        self.players
    }

    pub(crate) fn stage(&self) -> Stage {
        self.stage
    }

    /// The seat after `seat` (a compare, not a division: this runs on every card).
    fn next(&self, seat: Seat) -> Seat {
        self.wrap(seat + 1)
    }

    /// `seat` taken modulo the table for `seat < 2 * players`.
    fn wrap(&self, seat: Seat) -> Seat {
        if seat >= self.players {
            seat - self.players
        } else {
            seat
        }
    }

    /// The seat that acts next; under hidden bids the first seat without a bid from the
    /// dealer's left (they bid at once, so any order is a valid one).
    fn actor(&self) -> Seat {
        if self.stage == Stage::Bidding && self.hidden_bids {
            let mut seat = self.next(self.dealer);
            for _ in 0..self.players {
                if self.bids[usize::from(seat)].is_none() {
                    return seat;
                }
                seat = self.next(seat);
            }
        }
        self.to_act
    }

    /// Adds the card of index `i` to the current trick: the lead, the winner so far and
    /// the cards that would beat it, by the rules of `trick::winner` (the first Wizard;
    /// else the highest trump; else the highest card of the led suit; with only Jesters,
    /// the first). Works on card indices: rollouts never build a `Card`.
    fn add_to_trick(&mut self, i: u32) {
        let card = 1u64 << i;
        if self.open && card & JESTERS == 0 {
            self.open = false;
            // No suit for a Wizard: nothing to follow.
            self.follow = SUIT_OF[i as usize];
        }
        if self.beats & card != 0 {
            self.win_pos = self.trick_len;
            let above = SUIT_OF[i as usize] & !((card << 1) - 1);
            self.beats = if card & WIZARDS != 0 {
                0
            } else if card & JESTERS != 0 {
                DECK & !JESTERS
            } else if card & self.trumps != 0 {
                WIZARDS | above
            } else {
                WIZARDS | self.trumps | above
            };
        }
        self.trick_len += 1;
    }

    /// The cards `seat` may play now.
    pub(crate) fn legal_mask(&self, seat: Seat) -> Mask {
        let hand = self.hands[usize::from(seat)];
        if hand & self.follow != 0 {
            hand & (self.follow | WIZARDS | JESTERS)
        } else {
            hand
        }
    }

    /// The bid the restriction forbids `seat`, as `Game::forbidden_bid`.
    fn forbidden_bid(&self, seat: Seat) -> Option<u8> {
        if self.hidden_bids || self.stage != Stage::Bidding || seat != self.dealer {
            return None;
        }
        let others: u32 = self.bids.iter().flatten().map(|&b| u32::from(b)).sum();
        let forbidden = u8::try_from(u32::from(self.round).checked_sub(others)?).ok()?;
        match self.restriction {
            BidRestriction::None => None,
            BidRestriction::House => Some(forbidden),
            BidRestriction::Canadian => {
                let mine = self.scores[usize::from(seat)];
                let leads =
                    (0..self.players).all(|s| s == seat || self.scores[usize::from(s)] < mine);
                (leads && forbidden != 0).then_some(forbidden)
            }
        }
    }

    /// Applies an action the caller knows to be legal (the root's candidates come from
    /// the engine's `legal_actions`, the rollout's from this module's own rules).
    pub(crate) fn apply(&mut self, seat: Seat, action: Action) {
        match action {
            Action::ChooseTrump { suit } => {
                self.trump = Some(suit);
                self.trumps = suit_mask(suit);
                self.stage = Stage::Bidding;
                self.to_act = self.next(self.dealer);
            }
            Action::Bid { bid } => {
                self.bids[usize::from(seat)] = Some(bid);
                let n = usize::from(self.players);
                if self.bids[..n].iter().all(Option::is_some) {
                    self.stage = Stage::Playing;
                    self.to_act = self.leader;
                } else {
                    self.to_act = self.next(seat);
                }
            }
            Action::Play { card } => self.play(seat, card.index() as u32),
        }
    }

    /// Plays the card of index `i` from `seat`'s hand.
    #[inline(always)]
    fn play(&mut self, seat: Seat, i: u32) {
        self.hands[usize::from(seat)] &= !(1u64 << i);
        self.add_to_trick(i);
        if self.trick_len < self.players {
            self.to_act = self.next(seat);
            return;
        }
        let len = usize::from(self.players);
        let winner = self.wrap(self.leader + self.win_pos);
        self.tricks[usize::from(winner)] += 1;
        self.trick_len = 0;
        self.open = true;
        self.follow = 0;
        self.win_pos = 0;
        self.beats = DECK;
        self.leader = winner;
        self.to_act = winner;
        if self.hands[..len].iter().all(|&h| h == 0) {
            self.stage = Stage::Done;
        }
    }

    /// The heuristic's next action and who makes it; `None` once the round is done.
    pub(crate) fn heuristic_step(&self, h: &Heuristic) -> Option<(Seat, Action)> {
        let seat = self.actor();
        let action = match self.stage {
            Stage::Done => return None,
            Stage::ChoosingTrump => Action::ChooseTrump {
                suit: self.heuristic_trump(seat, h),
            },
            Stage::Bidding => Action::Bid {
                bid: self.heuristic_bid(seat, h),
            },
            Stage::Playing => Action::Play {
                card: self.heuristic_card(seat)?,
            },
        };
        Some((seat, action))
    }

    /// Plays the round to its end with every seat played by the heuristic.
    pub(crate) fn roll_out(&mut self, h: &Heuristic) {
        // A round has at most 1 + 6 bids + 60 cards of actions; the bound only guards
        // against a bug looping forever.
        for _ in 0..128 {
            if self.stage == Stage::Playing {
                let seat = self.to_act;
                match self.heuristic_card_index(seat) {
                    Some(i) => self.play(seat, i),
                    None => return,
                }
                continue;
            }
            match self.heuristic_step(h) {
                Some((seat, action)) => self.apply(seat, action),
                None => return,
            }
        }
    }

    /// The round's score change of `seat` once the round is done.
    pub(crate) fn delta(&self, seat: Seat) -> i32 {
        let s = usize::from(seat);
        round_score(self.bids[s].unwrap_or(0), self.tricks[s])
    }

    /// The heuristic's table for this round.
    pub(crate) fn heuristic(&self, params: &Params<'_>) -> Heuristic {
        Heuristic::new(params, self.players, self.round)
    }

    fn heuristic_trump(&self, seat: Seat, h: &Heuristic) -> Suit {
        let hand = self.hands[usize::from(seat)];
        let mut best = (f32::NEG_INFINITY, Suit::Clubs);
        for suit in Suit::ALL {
            let v = h.expected_tricks(hand, Some(suit));
            if v > best.0 {
                best = (v, suit);
            }
        }
        best.1
    }

    /// The heuristic's continuous bid estimate for `seat`, before rounding.
    pub(crate) fn bid_estimate(&self, seat: Seat, h: &Heuristic) -> f32 {
        let round = f32::from(self.round);
        let mut known = 0u8;
        let mut claimed = 0u32;
        if !self.hidden_bids {
            for s in 0..self.players {
                if let (true, Some(b)) = (s != seat, self.bids[usize::from(s)]) {
                    known += 1;
                    claimed += u32::from(b);
                }
            }
        }
        let share = round * f32::from(known) / f32::from(self.players);
        #[allow(clippy::cast_precision_loss)]
        let pressure = claimed as f32 - share;
        let estimate = h.expected_tricks(self.hands[usize::from(seat)], self.trump);
        (estimate - h.bid_pressure * pressure + h.aggression).clamp(0.0, round)
    }

    /// The nearest legal bid to `estimate` (the lower one on a tie).
    pub(crate) fn nearest_bid(&self, seat: Seat, estimate: f32) -> u8 {
        let forbidden = self.forbidden_bid(seat);
        (0..=self.round)
            .filter(|&b| Some(b) != forbidden)
            .min_by(|&a, &b| {
                let da = (f32::from(a) - estimate).abs();
                let db = (f32::from(b) - estimate).abs();
                da.total_cmp(&db).then(a.cmp(&b))
            })
            .unwrap_or(0)
    }

    pub(crate) fn heuristic_bid(&self, seat: Seat, h: &Heuristic) -> u8 {
        self.nearest_bid(seat, self.bid_estimate(seat, h))
    }

    /// The card of `mask` with the highest (or lowest) power, ties to the lowest index,
    /// where power ranks Jesters, then plain suits by rank, then trumps by rank, then
    /// Wizards (the core heuristic's order), found with mask operations.
    fn pick(&self, mask: Mask, highest: bool) -> Option<u32> {
        if mask == 0 {
            return None;
        }
        let trumps = self.trumps;
        let plain = mask & !(WIZARDS | JESTERS | trumps);
        let index = if highest {
            if mask & WIZARDS != 0 {
                lowest_bit(mask & WIZARDS)
            } else if mask & trumps != 0 {
                63 - (mask & trumps).leading_zeros()
            } else if plain != 0 {
                first_suit_with(plain, 63 - rank_union(plain).leading_zeros())
            } else {
                lowest_bit(mask & JESTERS)
            }
        } else if mask & JESTERS != 0 {
            lowest_bit(mask & JESTERS)
        } else if plain != 0 {
            first_suit_with(plain, rank_union(plain).trailing_zeros())
        } else if mask & trumps != 0 {
            lowest_bit(mask & trumps)
        } else {
            lowest_bit(mask & WIZARDS)
        };
        Some(index)
    }

    /// The heuristic's card for `seat` (the core's `choose_card`).
    pub(crate) fn heuristic_card(&self, seat: Seat) -> Option<Card> {
        Card::from_index(self.heuristic_card_index(seat)? as usize)
    }

    /// The index of the heuristic's card for `seat`.
    #[inline(always)]
    fn heuristic_card_index(&self, seat: Seat) -> Option<u32> {
        let s = usize::from(seat);
        let legal = self.legal_mask(seat);
        let want = self.bids[s].unwrap_or(0) > self.tricks[s];
        let plain_or = |m: Mask| if m & !JESTERS != 0 { m & !JESTERS } else { m };
        if self.trick_len == 0 {
            return if want {
                self.pick(legal, true)
            } else {
                self.pick(plain_or(legal), false)
            };
        }
        let winners = legal & self.beats;
        let losers = legal & !winners;
        if want {
            if winners == 0 {
                self.pick(plain_or(losers), false)
            } else {
                self.pick(winners, false)
            }
        } else if losers & !JESTERS != 0 {
            self.pick(losers & !JESTERS, true)
        } else if losers != 0 {
            self.pick(losers, false)
        } else {
            self.pick(winners, false)
        }
    }
}

#[cfg(test)]
mod tests {
    //! The mask shortcuts against the rules they replace: the kept trick winner and
    //! `beats` against `trick::winner`, and `pick` against ranking by power.

    use super::*;
    use proptest::prelude::*;
    use wizard_core::vocabulary::game::trick::{self, Lead};

    fn sim(players: u8, trump: Option<Suit>) -> Sim {
        Sim {
            players,
            round: 1,
            dealer: 0,
            hidden_bids: false,
            restriction: BidRestriction::None,
            stage: Stage::Playing,
            trump,
            trumps: trump.map_or(0, suit_mask),
            to_act: 0,
            hands: [0; SEATS_MAX],
            bids: [None; SEATS_MAX],
            tricks: [0; SEATS_MAX],
            trick_len: 0,
            open: true,
            follow: 0,
            win_pos: 0,
            beats: DECK,
            leader: 0,
            scores: [0; SEATS_MAX],
        }
    }

    impl Sim {
        /// The lead the kept `open` and `follow` stand for.
        fn lead(&self) -> Lead {
            match cards(self.follow).next().and_then(Card::suit) {
                Some(suit) => Lead::Suit(suit),
                None if self.open => Lead::Open,
                None => Lead::Wizard,
            }
        }
    }

    fn power(card: Card, trump: Option<Suit>) -> u8 {
        match card {
            Card::Wizard(_) => 100,
            Card::Jester(_) => 0,
            Card::Suited { suit, rank } if Some(suit) == trump => 40 + rank,
            Card::Suited { rank, .. } => rank,
        }
    }

    /// The first card of the highest (or lowest) power, lowest index first.
    fn pick_by_power(mask: Mask, trump: Option<Suit>, highest: bool) -> Option<Card> {
        let mut best: Option<(u8, Card)> = None;
        for c in cards(mask) {
            let p = power(c, trump);
            if best.is_none_or(|(b, _)| if highest { p > b } else { p < b }) {
                best = Some((p, c));
            }
        }
        best.map(|(_, c)| c)
    }

    /// Distinct cards of a trick, drawn mostly from Wizards, Jesters and two suits so
    /// that ties, all-Jester tricks and late Wizards are common.
    fn trick_cards() -> impl Strategy<Value = Vec<Card>> {
        proptest::sample::subsequence((0usize..60).collect::<Vec<_>>(), 1..=6)
            .prop_shuffle()
            .prop_map(|v| v.into_iter().filter_map(Card::from_index).collect())
    }

    fn biased_cards() -> impl Strategy<Value = Vec<Card>> {
        let pool: Vec<usize> = (0..4).chain(13..17).chain(52..60).collect();
        proptest::sample::subsequence(pool, 1..=6)
            .prop_shuffle()
            .prop_map(|v| v.into_iter().filter_map(Card::from_index).collect())
    }

    fn trump() -> impl Strategy<Value = Option<Suit>> {
        prop_oneof![Just(None), (0usize..4).prop_map(|i| Some(Suit::ALL[i]))]
    }

    fn check_trick(cards: &[Card], trump: Option<Suit>) -> Result<(), TestCaseError> {
        let mut s = sim(6, trump);
        for (i, &c) in cards.iter().enumerate() {
            s.add_to_trick(c.index() as u32);
            let played = &cards[..=i];
            prop_assert_eq!(Some(usize::from(s.win_pos)), trick::winner(played, trump));
            prop_assert_eq!(s.lead(), trick::lead(played.iter().copied()));
            for next in super::cards(DECK) {
                if played.contains(&next) {
                    continue;
                }
                let mut longer = played.to_vec();
                longer.push(next);
                let takes = trick::winner(&longer, trump) == Some(played.len());
                prop_assert_eq!(
                    s.beats & bit(next) != 0,
                    takes,
                    "{:?} after {:?}",
                    next,
                    played
                );
            }
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn the_kept_winner_and_beats_follow_trick_winner(cards in trick_cards(), trump in trump()) {
            check_trick(&cards, trump)?;
        }

        #[test]
        fn the_kept_winner_follows_trick_winner_with_many_wizards_and_jesters(
            cards in biased_cards(),
            trump in trump(),
        ) {
            check_trick(&cards, trump)?;
        }

        #[test]
        fn the_read_out_table_sums_as_the_bid_table(
            hand in 0u64..(1 << 60),
            players in 3u8..=6,
            round in 1u8..=20,
            trump in trump(),
        ) {
            let params = Params::default();
            let h = Heuristic::new(&params, players, round);
            let by_card: f32 = cards(hand).map(|c| params.table.get(players, trump, round, c)).sum();
            prop_assert_eq!(h.expected_tricks(hand, trump).to_bits(), by_card.to_bits());
        }

        #[test]
        fn pick_is_the_first_card_of_extreme_power(mask in 0u64..(1 << 60), trump in trump(), highest: bool) {
            let s = sim(4, trump);
            let picked = s.pick(mask, highest).and_then(|i| Card::from_index(i as usize));
            prop_assert_eq!(picked, pick_by_power(mask, trump, highest));
        }

        #[test]
        fn pick_breaks_ties_like_power_order(
            idx in proptest::sample::subsequence((0usize..60).collect::<Vec<_>>(), 0..=8),
            trump in trump(),
            highest: bool,
        ) {
            let mask = idx.iter().fold(0, |m, &i| m | 1u64 << i);
            let s = sim(4, trump);
            let picked = s.pick(mask, highest).and_then(|i| Card::from_index(i as usize));
            prop_assert_eq!(picked, pick_by_power(mask, trump, highest));
        }
    }
}
