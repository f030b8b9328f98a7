//! The game state machine: deals, trump, bidding, tricks, scoring and the end of the
//! game. Every transition of a game lives in this file.
//!
//! `apply` either changes the state and appends events, or returns an [`ActionError`]
//! and changes nothing: every check runs before the first mutation.

use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha12Rng;

use super::card::{Card, DECK_SIZE, Suit};
use super::trick::{self, Lead};
use super::types::{
    Action, ActionError, BidRestriction, CompletedTrick, Event, Options, PLAYERS_MAX, PLAYERS_MIN,
    Phase, Placing, PlayedCard, Seat, SetupError,
};

/// A game of Wizard at one table. Cheap to clone (a few small vectors), which the AI
/// uses to roll positions out.
#[derive(Clone, Debug)]
pub struct Game {
    pub(super) options: Options,
    pub(super) players: u8,
    pub(super) rounds: u8,
    pub(super) round: u8,
    pub(super) dealer: Seat,
    pub(super) phase: Phase,
    /// The seat to act in the sequential phases (trump choice, open bidding, play).
    pub(super) to_act: Seat,
    pub(super) hands: Vec<Vec<Card>>,
    /// The cards neither dealt nor turned this round.
    pub(super) undealt: Vec<Card>,
    pub(super) trump_card: Option<Card>,
    pub(super) trump_suit: Option<Suit>,
    pub(super) bids: Vec<Option<u8>>,
    pub(super) tricks_won: Vec<u8>,
    pub(super) trick: Vec<PlayedCard>,
    pub(super) leader: Seat,
    pub(super) last_trick: Option<CompletedTrick>,
    pub(super) played: Vec<Card>,
    pub(super) scores: Vec<i32>,
    pub(super) round_scores: Vec<Vec<i32>>,
    pub(super) ranking: Option<Vec<Placing>>,
    rng: ChaCha12Rng,
}

/// Points for a round: `20 + 10·t` when the bid is met, else `-10·|t - b|`.
pub fn round_score(bid: u8, tricks: u8) -> i32 {
    if bid == tricks {
        20 + 10 * i32::from(tricks)
    } else {
        -10 * (i32::from(tricks) - i32::from(bid)).abs()
    }
}

/// Number of rounds for a player count: the deck is dealt out in the last round.
pub fn rounds_for(players: u8) -> u8 {
    // DECK_SIZE (60) fits in u8; players is checked to be 3..=6 before use.
    (DECK_SIZE as u8) / players.max(1)
}

/// The final ranking: by score, highest first; equal scores share a place.
pub fn ranking(scores: &[i32]) -> Vec<Placing> {
    let mut order: Vec<(Seat, i32)> = (0u8..).zip(scores.iter().copied()).collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut placings: Vec<Placing> = Vec::with_capacity(order.len());
    for (i, &(player, score)) in (1u8..).zip(order.iter()) {
        let place = match placings.last() {
            Some(prev) if prev.score == score => prev.place,
            _ => i,
        };
        placings.push(Placing {
            player,
            score,
            place,
        });
    }
    placings
}

impl Game {
    /// A new game; deals round 1 and appends its `round_started` event. All randomness
    /// (first dealer, every shuffle) comes from a `ChaCha12Rng` seeded with `seed`.
    pub fn new(
        players: u8,
        options: Options,
        seed: u64,
        events: &mut Vec<Event>,
    ) -> Result<Game, SetupError> {
        if !(PLAYERS_MIN..=PLAYERS_MAX).contains(&players) {
            return Err(SetupError::PlayerCount { players });
        }
        options.validate().map_err(SetupError::Options)?;
        let mut rng = ChaCha12Rng::seed_from_u64(seed);
        let n = usize::from(players);
        let first_dealer = rng.random_range(0..players);
        let mut game = Game {
            options,
            players,
            rounds: rounds_for(players),
            round: 0,
            // start_round advances the dealer, so begin one seat to the right.
            dealer: (first_dealer + players - 1) % players,
            phase: Phase::Bidding,
            to_act: 0,
            hands: vec![Vec::new(); n],
            undealt: Vec::new(),
            trump_card: None,
            trump_suit: None,
            bids: vec![None; n],
            tricks_won: vec![0; n],
            trick: Vec::with_capacity(n),
            leader: 0,
            last_trick: None,
            played: Vec::new(),
            scores: vec![0; n],
            round_scores: Vec::new(),
            ranking: None,
            rng,
        };
        game.start_round(events);
        Ok(game)
    }

    pub fn players(&self) -> u8 {
        self.players
    }

    pub fn options(&self) -> Options {
        self.options
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The current round, 1-based.
    pub fn round(&self) -> u8 {
        self.round
    }

    pub fn rounds(&self) -> u8 {
        self.rounds
    }

    pub fn dealer(&self) -> Seat {
        self.dealer
    }

    pub fn scores(&self) -> &[i32] {
        &self.scores
    }

    pub fn trump_suit(&self) -> Option<Suit> {
        self.trump_suit
    }

    /// A seat's hand in deal order (for the server and tests; players see observations).
    pub fn hand(&self, seat: Seat) -> &[Card] {
        self.hands.get(usize::from(seat)).map_or(&[], Vec::as_slice)
    }

    /// The cards of the current trick in play order.
    pub fn trick(&self) -> &[PlayedCard] {
        &self.trick
    }

    /// Cards neither dealt nor turned this round.
    pub fn undealt(&self) -> &[Card] {
        &self.undealt
    }

    /// The turned card of this round, if any card was left to turn.
    pub fn trump_card(&self) -> Option<Card> {
        self.trump_card
    }

    /// Every card played this round, in order.
    pub fn played(&self) -> &[Card] {
        &self.played
    }

    /// Tricks taken this round per seat.
    pub fn tricks_won(&self) -> &[u8] {
        &self.tricks_won
    }

    /// Bids of this round per seat (the engine's full knowledge, not a player's view).
    pub fn bids(&self) -> &[Option<u8>] {
        &self.bids
    }

    /// Score change per round so far, one row per finished round.
    pub fn round_scores(&self) -> &[Vec<i32>] {
        &self.round_scores
    }

    /// The final ranking once the game is finished.
    pub fn ranking(&self) -> Option<&[Placing]> {
        self.ranking.as_deref()
    }

    /// Whether `seat` may act now.
    pub fn awaits(&self, seat: Seat) -> bool {
        match self.phase {
            Phase::Finished => false,
            Phase::Bidding if self.options.hidden_bids => self
                .bids
                .get(usize::from(seat))
                .is_some_and(|b| b.is_none()),
            _ => seat == self.to_act,
        }
    }

    /// The seats that may act now, in seat order (several only under hidden bids).
    pub fn seats_to_act(&self) -> impl Iterator<Item = Seat> + '_ {
        (0..self.players).filter(|&s| self.awaits(s))
    }

    /// The lowest seat that may act now, if any (a convenience for drivers that move
    /// one seat at a time).
    pub fn next_to_act(&self) -> Option<Seat> {
        (0..self.players).find(|&s| self.awaits(s))
    }

    /// The single seat whose action is awaited in the sequential phases; `None` when
    /// finished or while hidden bids are collected from everyone at once.
    pub fn to_act(&self) -> Option<Seat> {
        match self.phase {
            Phase::Finished => None,
            Phase::Bidding if self.options.hidden_bids => None,
            _ => Some(self.to_act),
        }
    }

    /// Every action `seat` may take now; empty when it may not act.
    pub fn legal_actions(&self, seat: Seat) -> Vec<Action> {
        if !self.awaits(seat) {
            return Vec::new();
        }
        match self.phase {
            Phase::Finished => Vec::new(),
            Phase::ChoosingTrump => Suit::ALL
                .into_iter()
                .map(|suit| Action::ChooseTrump { suit })
                .collect(),
            Phase::Bidding => {
                let forbidden = self.forbidden_bid(seat);
                (0..=self.round)
                    .filter(|&b| Some(b) != forbidden)
                    .map(|bid| Action::Bid { bid })
                    .collect()
            }
            Phase::Playing => {
                let hand = self.hand(seat);
                let follow = trick::suit_to_follow(hand, self.current_lead());
                hand.iter()
                    .copied()
                    .filter(|c| match follow {
                        Some(suit) => c.suit().is_none_or(|s| s == suit),
                        None => true,
                    })
                    .map(|card| Action::Play { card })
                    .collect()
            }
        }
    }

    /// Applies `action` by `seat`, appending what happened to `events`. On error the
    /// game is unchanged.
    pub fn apply(
        &mut self,
        seat: Seat,
        action: Action,
        events: &mut Vec<Event>,
    ) -> Result<(), ActionError> {
        self.check(seat, action)?;
        match action {
            Action::ChooseTrump { suit } => self.choose_trump(seat, suit, events),
            Action::Bid { bid } => self.bid(seat, bid, events),
            Action::Play { card } => self.play(seat, card, events),
        }
        Ok(())
    }

    /// Every reason to refuse `action`, checked without changing anything.
    pub fn check(&self, seat: Seat, action: Action) -> Result<(), ActionError> {
        if seat >= self.players {
            return Err(ActionError::NoSuchSeat { seat });
        }
        if self.phase == Phase::Finished {
            return Err(ActionError::GameFinished);
        }
        let wanted = match action {
            Action::ChooseTrump { .. } => Phase::ChoosingTrump,
            Action::Bid { .. } => Phase::Bidding,
            Action::Play { .. } => Phase::Playing,
        };
        if wanted != self.phase {
            return Err(ActionError::WrongPhase { phase: self.phase });
        }
        if !self.awaits(seat) {
            return Err(ActionError::NotYourTurn {
                to_act: self.to_act(),
            });
        }
        match action {
            Action::ChooseTrump { .. } => Ok(()),
            Action::Bid { bid } if bid > self.round => Err(ActionError::BidOutOfRange {
                bid,
                bid_max: self.round,
            }),
            Action::Bid { bid } if Some(bid) == self.forbidden_bid(seat) => {
                Err(ActionError::BidRestricted { bid })
            }
            Action::Bid { .. } => Ok(()),
            Action::Play { card } => {
                let hand = self.hand(seat);
                if !hand.contains(&card) {
                    return Err(ActionError::CardNotInHand { card });
                }
                match trick::suit_to_follow(hand, self.current_lead()) {
                    Some(suit) if card.suit().is_some_and(|s| s != suit) => {
                        Err(ActionError::MustFollowSuit { suit })
                    }
                    _ => Ok(()),
                }
            }
        }
    }

    fn current_lead(&self) -> Lead {
        trick::lead(self.trick.iter().map(|p| p.card))
    }

    /// The bid the restriction forbids `seat` right now, if any. Only the last bidder
    /// of open bidding (the dealer) is ever restricted.
    pub fn forbidden_bid(&self, seat: Seat) -> Option<u8> {
        if self.options.hidden_bids || self.phase != Phase::Bidding || seat != self.dealer {
            return None;
        }
        let others: u32 = self
            .bids
            .iter()
            .flatten()
            .map(|&b| u32::from(b))
            .sum::<u32>();
        let forbidden = u32::from(self.round).checked_sub(others)?;
        let forbidden = u8::try_from(forbidden).ok()?;
        match self.options.bid_restriction {
            BidRestriction::None => None,
            BidRestriction::House => Some(forbidden),
            BidRestriction::Canadian => {
                let dealer_score = self.scores.get(usize::from(seat)).copied()?;
                let leads = (0u8..)
                    .zip(&self.scores)
                    .all(|(s, &score)| s == seat || score < dealer_score);
                (leads && forbidden != 0).then_some(forbidden)
            }
        }
    }

    fn next_seat(&self, seat: Seat) -> Seat {
        (seat + 1) % self.players
    }

    fn start_round(&mut self, events: &mut Vec<Event>) {
        self.round += 1;
        self.dealer = self.next_seat(self.dealer);
        let mut deck = Card::deck();
        deck.shuffle(&mut self.rng);
        let first = self.next_seat(self.dealer);
        for i in 0..self.players {
            let seat = usize::from((first + i) % self.players);
            let start = deck.len().saturating_sub(usize::from(self.round));
            let cards = deck.split_off(start);
            if let Some(hand) = self.hands.get_mut(seat) {
                *hand = cards;
            }
        }
        self.trump_card = deck.pop();
        self.undealt = deck;
        self.trump_suit = self.trump_card.and_then(Card::suit);
        self.bids.iter_mut().for_each(|b| *b = None);
        self.tricks_won.iter_mut().for_each(|t| *t = 0);
        self.trick.clear();
        self.played.clear();
        self.last_trick = None;
        self.leader = first;
        if self.trump_card.is_some_and(Card::is_wizard) {
            self.phase = Phase::ChoosingTrump;
            self.to_act = self.dealer;
        } else {
            self.phase = Phase::Bidding;
            self.to_act = first;
        }
        events.push(Event::RoundStarted {
            round: self.round,
            dealer: self.dealer,
            trump_card: self.trump_card,
            trump_suit: self.trump_suit,
        });
    }

    fn choose_trump(&mut self, seat: Seat, suit: Suit, events: &mut Vec<Event>) {
        self.trump_suit = Some(suit);
        self.phase = Phase::Bidding;
        self.to_act = self.next_seat(self.dealer);
        events.push(Event::TrumpChosen { player: seat, suit });
    }

    fn bid(&mut self, seat: Seat, bid: u8, events: &mut Vec<Event>) {
        if let Some(slot) = self.bids.get_mut(usize::from(seat)) {
            *slot = Some(bid);
        }
        let hidden = self.options.hidden_bids;
        events.push(Event::BidMade {
            player: seat,
            bid: (!hidden).then_some(bid),
        });
        if self.bids.iter().all(Option::is_some) {
            if hidden {
                events.push(Event::BidsRevealed {
                    bids: self.bids.iter().map(|b| b.unwrap_or(0)).collect(),
                });
            }
            self.phase = Phase::Playing;
            self.to_act = self.leader;
        } else {
            self.to_act = self.next_seat(seat);
        }
    }

    fn play(&mut self, seat: Seat, card: Card, events: &mut Vec<Event>) {
        if let Some(hand) = self.hands.get_mut(usize::from(seat)) {
            hand.retain(|&c| c != card);
        }
        self.trick.push(PlayedCard { player: seat, card });
        self.played.push(card);
        events.push(Event::CardPlayed { player: seat, card });
        if self.trick.len() < usize::from(self.players) {
            self.to_act = self.next_seat(seat);
            return;
        }
        let cards: Vec<Card> = self.trick.iter().map(|p| p.card).collect();
        let position = trick::winner(&cards, self.trump_suit).unwrap_or(0);
        let winner = self.trick.get(position).map_or(self.leader, |p| p.player);
        if let Some(t) = self.tricks_won.get_mut(usize::from(winner)) {
            *t += 1;
        }
        let completed = CompletedTrick {
            cards: std::mem::take(&mut self.trick),
            winner,
        };
        events.push(Event::TrickCompleted {
            winner,
            cards: completed.cards.clone(),
        });
        #[cfg(feature = "planted-bugs")]
        crate::planted::lost_event(events, &self.tricks_won);
        self.last_trick = Some(completed);
        self.leader = winner;
        self.to_act = winner;
        if self.hands.iter().all(Vec::is_empty) {
            self.finish_round(events);
        }
    }

    fn finish_round(&mut self, events: &mut Vec<Event>) {
        let bids: Vec<u8> = self.bids.iter().map(|b| b.unwrap_or(0)).collect();
        let deltas: Vec<i32> = bids
            .iter()
            .zip(&self.tricks_won)
            .map(|(&b, &t)| round_score(b, t))
            .collect();
        #[cfg(feature = "planted-bugs")]
        let deltas = crate::planted::wrong_score(deltas, &bids, &self.tricks_won);
        for (score, delta) in self.scores.iter_mut().zip(&deltas) {
            *score += delta;
        }
        self.round_scores.push(deltas.clone());
        events.push(Event::RoundFinished {
            bids,
            tricks: self.tricks_won.clone(),
            deltas,
            scores: self.scores.clone(),
        });
        if self.round >= self.rounds {
            self.phase = Phase::Finished;
            let placings = ranking(&self.scores);
            events.push(Event::GameFinished {
                scores: self.scores.clone(),
                ranking: placings.clone(),
            });
            self.ranking = Some(placings);
        } else {
            self.start_round(events);
        }
    }
}
