//! The checkers' own scorer: who takes a trick, what a round scores and who places
//! where, written again from the rules (docs/RULES.md, "Playing" and "Scoring") instead
//! of calling the engine, and an [`Oracle`] that follows one game through its events
//! and says where the core's events and views disagree with it.
//!
//! The oracle knows a game from its start (every event seen) or from a resync with a
//! view (after a stretch nobody saw: then the view's totals, bids and tricks are taken
//! as given and everything after them is recomputed).

use wizard_core::vocabulary::game::{Card, Event, Phase, Placing, Seat, Suit};

use crate::checks::seat_view::{Own, Public};

/// The seat that takes a trick of `cards` (in play order) when `trump` is trump: the
/// first Wizard; else the highest trump; else the highest card of the suit led (the
/// first card that is not a Jester); else, every card a Jester, the first one.
pub fn trick_winner(cards: &[(Seat, Card)], trump: Option<Suit>) -> Option<Seat> {
    if let Some((seat, _)) = cards.iter().find(|(_, c)| matches!(c, Card::Wizard(_))) {
        return Some(*seat);
    }
    let highest = |wanted: Suit| {
        cards
            .iter()
            .filter_map(|(seat, c)| match c {
                Card::Suited { suit, rank } if *suit == wanted => Some((*rank, *seat)),
                _ => None,
            })
            .max()
            .map(|(_, seat)| seat)
    };
    let led = cards.iter().find_map(|(_, c)| match c {
        Card::Suited { suit, .. } => Some(*suit),
        _ => None,
    });
    trump
        .and_then(highest)
        .or_else(|| led.and_then(highest))
        .or_else(|| cards.first().map(|(seat, _)| *seat))
}

/// Cards with their seats, as `seat:code` (`2:h14 3:W1`).
fn show(cards: &[(Seat, Card)]) -> String {
    let shown: Vec<String> = cards.iter().map(|(s, c)| format!("{s}:{c}")).collect();
    shown.join(" ")
}

/// A round's points: the bid met scores 20 and 10 a trick, a miss costs 10 a trick of
/// difference.
pub fn points(bid: u8, tricks: u8) -> i32 {
    let (b, t) = (i32::from(bid), i32::from(tricks));
    if b == t {
        20 + 10 * t
    } else {
        -10 * (t - b).abs()
    }
}

/// Each seat's place: one more than the number of seats with a higher total, so equal
/// totals share a place.
pub fn places(scores: &[i32]) -> Vec<u8> {
    scores
        .iter()
        .map(|s| {
            let above = scores.iter().filter(|o| *o > s).count();
            u8::try_from(above + 1).unwrap_or(u8::MAX)
        })
        .collect()
}

/// Whether `ranking` lists every seat once, best first, with its total and place.
pub fn ranking_is(ranking: &[Placing], scores: &[i32]) -> bool {
    let want = places(scores);
    ranking.len() == scores.len()
        && ranking.windows(2).all(|w| w[0].place <= w[1].place)
        && (0..scores.len()).all(|seat| {
            let mine: Vec<&Placing> = ranking
                .iter()
                .filter(|p| usize::from(p.player) == seat)
                .collect();
            matches!(mine.as_slice(), [p] if p.score == scores[seat] && p.place == want[seat])
        })
}

/// One game as the oracle follows it. `None` fields are unknown (not seen since a
/// resync); a rule that needs them is not judged.
#[derive(Clone, Debug)]
pub struct Oracle {
    players: usize,
    rounds: u8,
    hidden_bids: bool,
    /// Totals after the finished rounds, and each finished round's points.
    scores: Option<Vec<i32>>,
    round_scores: Option<Vec<Vec<i32>>>,
    round: Option<u8>,
    dealer: Option<Seat>,
    /// The round's trump (`Some(None)`: no trump), its bids, `bid_made` events, tricks
    /// taken and the trick on the table.
    trump: Option<Option<Suit>>,
    bids: Vec<Option<u8>>,
    bids_made: Option<usize>,
    tricks: Option<Vec<u8>>,
    trick: Option<Vec<(Seat, Card)>>,
    /// The last round whose `round_finished` came.
    finished_round: Option<u8>,
}

impl Oracle {
    /// A game seen from its start: no points yet.
    pub fn new(players: u8, rounds: u8, hidden_bids: bool) -> Oracle {
        let n = usize::from(players);
        Oracle {
            players: n,
            rounds,
            hidden_bids,
            scores: Some(vec![0; n]),
            round_scores: Some(Vec::new()),
            round: None,
            dealer: None,
            trump: None,
            bids: vec![None; n],
            bids_made: Some(0),
            tricks: None,
            trick: None,
            finished_round: Some(0),
        }
    }

    /// A game picked up from a view (`obs`, with the own fields `own` of seat `you`)
    /// after a stretch nobody saw: its public state is taken as given.
    pub fn resync(obs: &Public, own: &Own, you: Seat) -> Oracle {
        let n = usize::from(obs.players);
        let mut bids = own.bids.clone();
        bids.resize(n, None);
        let hidden_now = obs.options.hidden_bids && obs.phase == Phase::Bidding;
        if hidden_now && let Some(b) = bids.get_mut(usize::from(you)) {
            // Its own hidden bid: the others learn it with `bids_revealed`.
            *b = None;
        }
        let finished = obs.phase == Phase::Finished;
        Oracle {
            players: n,
            rounds: obs.rounds,
            hidden_bids: obs.options.hidden_bids,
            scores: Some(obs.scores.clone()),
            round_scores: Some(obs.round_scores.clone()),
            round: Some(obs.round),
            dealer: Some(obs.dealer),
            trump: Some(obs.trump_suit),
            bids,
            bids_made: Some(obs.has_bid.iter().filter(|b| **b).count()),
            tricks: Some(obs.tricks_won.clone()),
            trick: Some(obs.trick.iter().map(|p| (p.player, p.card)).collect()),
            finished_round: Some(if finished {
                obs.round
            } else {
                obs.round.saturating_sub(1)
            }),
        }
    }

    /// Follows one event; every disagreement goes into `bad`.
    pub fn event(&mut self, e: &Event, bad: &mut Vec<String>) {
        match e {
            Event::RoundStarted {
                round,
                dealer,
                trump_card,
                trump_suit,
            } => self.round_started(*round, *dealer, *trump_card, *trump_suit, bad),
            Event::TrumpChosen { player, suit } => {
                if self.dealer.is_some_and(|d| d != *player) {
                    bad.push(format!("trump chosen by seat {player}, not the dealer"));
                }
                self.trump = Some(Some(*suit));
            }
            Event::BidMade { player, bid } => {
                match (self.hidden_bids, bid) {
                    (true, Some(b)) => bad.push(format!(
                        "hidden bid of seat {player} ({b}) shown in its bid_made"
                    )),
                    (false, None) => bad.push(format!("open bid of seat {player} without value")),
                    _ => {}
                }
                if let (Some(b), Some(slot)) = (bid, self.bids.get_mut(usize::from(*player))) {
                    *slot = Some(*b);
                }
                self.bids_made = self.bids_made.map(|n| n + 1);
            }
            Event::BidsRevealed { bids } => {
                if let Some(made) = self.bids_made.filter(|m| *m != self.players) {
                    bad.push(format!(
                        "bids revealed after {made} of {} bids",
                        self.players
                    ));
                }
                self.bids = bids.iter().map(|b| Some(*b)).collect();
            }
            Event::CardPlayed { player, card } => {
                if let Some(t) = &mut self.trick {
                    t.push((*player, *card));
                }
            }
            Event::TrickCompleted { winner, cards } => self.trick_completed(*winner, cards, bad),
            Event::RoundFinished {
                bids,
                tricks,
                deltas,
                scores,
            } => self.round_finished(bids, tricks, deltas, scores, bad),
            Event::GameFinished { scores, ranking } => {
                if self.round != Some(self.rounds) || self.finished_round != Some(self.rounds) {
                    bad.push(format!(
                        "game finished in round {:?} of {} (last round finished: {:?})",
                        self.round, self.rounds, self.finished_round
                    ));
                }
                if self.scores.as_ref().is_some_and(|s| s != scores) {
                    bad.push(format!(
                        "game_finished scores {scores:?}, the oracle has {:?}",
                        self.scores
                    ));
                }
                if !ranking_is(ranking, scores) {
                    bad.push(format!("ranking {ranking:?} for scores {scores:?}"));
                }
            }
            Event::Autoplayed { .. } => {}
        }
    }

    fn round_started(
        &mut self,
        round: u8,
        dealer: Seat,
        trump_card: Option<Card>,
        trump_suit: Option<Suit>,
        bad: &mut Vec<String>,
    ) {
        if let Some(r) = self.round
            && (round != r + 1 || self.finished_round != Some(r))
        {
            bad.push(format!(
                "round {round} started after round {r} (finished: {:?})",
                self.finished_round
            ));
        }
        if round == 0 || round > self.rounds {
            bad.push(format!("round {round} of {}", self.rounds));
        }
        if let (Some(d), Some(_)) = (self.dealer, self.round)
            && usize::from(dealer) != (usize::from(d) + 1) % self.players.max(1)
        {
            bad.push(format!("dealer {dealer} after dealer {d}"));
        }
        // The last round deals the whole deck, so nothing is left to turn.
        let expected = match trump_card {
            Some(Card::Suited { suit, .. }) => Some(suit),
            _ => None,
        };
        if trump_suit != expected || trump_card.is_none() != (round == self.rounds) {
            bad.push(format!(
                "round {round}: turned {trump_card:?} but trump {trump_suit:?}"
            ));
        }
        self.round = Some(round);
        self.dealer = Some(dealer);
        self.trump = Some(trump_suit);
        self.bids = vec![None; self.players];
        self.bids_made = Some(0);
        self.tricks = Some(vec![0; self.players]);
        self.trick = Some(Vec::new());
    }

    fn trick_completed(
        &mut self,
        winner: Seat,
        cards: &[wizard_core::vocabulary::game::PlayedCard],
        bad: &mut Vec<String>,
    ) {
        let cards: Vec<(Seat, Card)> = cards.iter().map(|p| (p.player, p.card)).collect();
        if let Some(t) = self.trick.as_ref().filter(|t| **t != cards) {
            bad.push(format!(
                "trick_completed [{}] but the cards played were [{}]",
                show(&cards),
                show(t)
            ));
        }
        let taker = self.trump.and_then(|trump| trick_winner(&cards, trump));
        if let (Some(trump), Some(t)) = (self.trump, taker)
            && t != winner
        {
            bad.push(format!(
                "trick [{}] with trump {trump:?} went to seat {winner}, the rules say seat {t}",
                show(&cards)
            ));
        }
        if let (Some(tricks), Some(t)) = (&mut self.tricks, taker.or(Some(winner)))
            && let Some(n) = tricks.get_mut(usize::from(t))
        {
            *n += 1;
        }
        self.trick = Some(Vec::new());
    }

    fn round_finished(
        &mut self,
        bids: &[u8],
        tricks: &[u8],
        deltas: &[i32],
        scores: &[i32],
        bad: &mut Vec<String>,
    ) {
        let known_bids: Option<Vec<u8>> = self.bids.iter().copied().collect();
        if known_bids.as_ref().is_some_and(|b| b != bids) {
            bad.push(format!("round_finished bids {bids:?}, seen {known_bids:?}"));
        }
        if self.tricks.as_ref().is_some_and(|t| t != tricks) {
            bad.push(format!(
                "round_finished tricks {tricks:?}, counted {:?}",
                self.tricks
            ));
        }
        // The points follow from what the oracle saw, or from the event's own bids and
        // tricks when it saw too little.
        let bids = known_bids.unwrap_or_else(|| bids.to_vec());
        let tricks = self.tricks.clone().unwrap_or_else(|| tricks.to_vec());
        let mine: Vec<i32> = bids
            .iter()
            .zip(&tricks)
            .map(|(b, t)| points(*b, *t))
            .collect();
        if mine != deltas {
            bad.push(format!(
                "round {:?} scored {deltas:?}, the rules say {mine:?}",
                self.round
            ));
        }
        if let Some(s) = &mut self.scores {
            for (total, d) in s.iter_mut().zip(&mine) {
                *total += d;
            }
            if s != scores {
                bad.push(format!(
                    "round_finished totals {scores:?}, the oracle has {s:?}"
                ));
            }
        }
        if let Some(rs) = &mut self.round_scores {
            rs.push(mine);
        }
        self.finished_round = self.round;
    }

    /// Where the public part of a view disagrees with the oracle.
    pub fn check_public(&self, obs: &Public, bad: &mut Vec<String>) {
        if self.round.is_some_and(|r| r != obs.round) {
            bad.push(format!(
                "view in round {}, the oracle in {:?}",
                obs.round, self.round
            ));
            return;
        }
        if self.scores.as_ref().is_some_and(|s| *s != obs.scores) {
            bad.push(format!(
                "view shows totals {:?}, the oracle has {:?}",
                obs.scores, self.scores
            ));
        }
        if self
            .round_scores
            .as_ref()
            .is_some_and(|rs| *rs != obs.round_scores)
        {
            bad.push(format!(
                "view shows round scores {:?}, the oracle has {:?}",
                obs.round_scores, self.round_scores
            ));
        }
        if self.tricks.as_ref().is_some_and(|t| *t != obs.tricks_won) {
            bad.push(format!(
                "view shows tricks {:?}, the oracle counted {:?}",
                obs.tricks_won, self.tricks
            ));
        }
        if obs.phase == Phase::Finished {
            let ok = match (&obs.ranking, &self.scores) {
                (Some(r), Some(s)) => ranking_is(r, s),
                (None, _) => false,
                (Some(_), None) => true,
            };
            if !ok {
                bad.push(format!("finished view ranks {:?}", obs.ranking));
            }
        }
    }

    /// Where the bids seat `you` is shown disagree with the oracle (its own hidden bid
    /// aside: the others learn it with `bids_revealed`).
    pub fn check_bids(&self, obs: &Public, own: &Own, you: Seat, bad: &mut Vec<String>) {
        let own_hidden = self.hidden_bids && obs.phase == Phase::Bidding;
        for (seat, (shown, known)) in (0u8..).zip(own.bids.iter().zip(&self.bids)) {
            if shown.is_some() && shown != known && !(own_hidden && seat == you) {
                bad.push(format!(
                    "view shows bid {shown:?} of seat {seat}, seen {known:?}"
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(code: &str) -> Card {
        code.parse().unwrap_or(Card::Jester(1))
    }

    /// The test vectors of the contract (trick winners, scores).
    #[test]
    fn the_contracts_vectors() {
        let cases: &[(&[&str], Option<Suit>, u8)] = &[
            (&["h5", "h9"], Some(Suit::Clubs), 1),
            (&["h5", "s13"], Some(Suit::Clubs), 0),
            (&["h13", "c2"], Some(Suit::Clubs), 1),
            (&["h13", "W1", "W2"], Some(Suit::Clubs), 1),
            (&["W1", "c13", "W2"], Some(Suit::Clubs), 0),
            (&["J1", "J2", "J3"], Some(Suit::Clubs), 0),
            (&["J1", "s2", "s9"], None, 2),
            (&["J1", "s2", "h13"], None, 1),
            (&["J1", "J2", "d2"], Some(Suit::Clubs), 2),
            (&["J1", "W1", "h13"], Some(Suit::Hearts), 1),
            (&["s7", "s12", "h3"], None, 1),
        ];
        for (cards, trump, want) in cases {
            let played: Vec<(Seat, Card)> = (0u8..).zip(cards.iter().map(|s| c(s))).collect();
            assert_eq!(trick_winner(&played, *trump), Some(*want), "{cards:?}");
        }
        let scores = [(0, 0, 20), (3, 3, 50), (2, 5, -30), (4, 1, -30)];
        for (b, t, p) in scores {
            assert_eq!(points(b, t), p, "bid {b} took {t}");
        }
        assert_eq!(places(&[50, 30, 30, -10]), vec![1, 2, 2, 4]);
    }
}
