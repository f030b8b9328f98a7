//! Building a [`Game`] at an arbitrary position from one seat's [`Observation`] plus a
//! guess at what that seat cannot see: the other hands, the undealt deck and any bids
//! still hidden. The AI's search samples such "worlds" and rolls them out with
//! [`Game::apply`]; the constructor lives in the core because it needs the private
//! fields of [`Game`].
//!
//! It is not a sampler: choosing hidden cards consistent with what a seat has seen
//! (suits it showed out of, likely bids) is the caller's job. It only refuses worlds
//! the engine could not have produced.
//!
//! Invariants of a world built by [`Game::from_world`] (checked, else [`WorldError`]):
//! - every one of the 60 cards is in exactly one place: a hand, `played`, the turned
//!   card or the undealt deck;
//! - the viewer's hand is exactly the observation's hand;
//! - every seat holds `round - tricks completed` cards, one fewer when it already
//!   played to the current trick, and the undealt deck holds what the deal left;
//! - the current trick is the tail of `played`, was played in seat order from the
//!   leader, and the seat to act is the next one;
//! - every seat that has bid has a bid (public in the observation or supplied as a
//!   hidden bid), and no other seat has one.
//!
//! Given those, the world is equal to the real game in everything the viewer can
//! observe: `world.observation(viewer) == obs` (apart from `turn_deadline_ms`, which the
//! engine never sets) and, when the guess is the truth, every other seat's observation
//! too. One detail: the engine lists legal plays in hand order, which observations do
//! not show (they sort the hand); give the viewer's hand with its legal cards first, in
//! the order `obs.legal_actions` lists them (or in the true deal order) for the lists to
//! match as well. Later rounds are shuffled by a generator seeded from `seed`, so a world agrees
//! with the real game only up to the end of the current round.

use std::fmt;

use super::card::{Card, DECK_SIZE};
use super::observation::Observation;
use super::rules::{Game, rounds_for};
use super::types::{PLAYERS_MAX, PLAYERS_MIN, Phase, Seat};

/// What the viewer cannot see, one guess of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hidden {
    /// Every seat's hand, indexed by seat; the viewer's entry must equal `obs.hand` (in
    /// any order).
    pub hands: Vec<Vec<Card>>,
    /// The cards neither dealt nor turned this round.
    pub undealt: Vec<Card>,
    /// Bids the viewer cannot see yet (hidden bids): `Some` exactly for the seats that
    /// have bid while the observation shows no value. May be empty when there are none.
    pub bids: Vec<Option<u8>>,
}

/// Why an observation and a guess do not make a position the engine could reach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorldError {
    PlayerCount {
        players: u8,
    },
    /// The observation's options are invalid.
    Options,
    /// `rounds` or `round` do not fit the player count.
    Rounds {
        round: u8,
        rounds: u8,
    },
    /// A per-seat vector of the observation or the guess has the wrong length.
    SeatVector {
        field: &'static str,
        len: usize,
    },
    ViewerOutOfRange {
        viewer: Seat,
    },
    /// The viewer's hand in the guess differs from the observation's.
    ViewerHand,
    /// A seat (or the undealt deck, `seat: None`) holds the wrong number of cards.
    CardCount {
        seat: Option<Seat>,
        cards_expected: usize,
        cards_got: usize,
    },
    /// A card is in two places, or in none.
    Deck {
        card: Card,
    },
    /// The current trick, the leader and the seat to act do not fit together.
    Trick,
    /// A seat has bid without a known bid, or a bid is given for a seat that has not.
    Bid {
        seat: Seat,
    },
}

impl fmt::Display for WorldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorldError::PlayerCount { players } => write!(f, "{players} players is not a game"),
            WorldError::Options => f.write_str("the options are invalid"),
            WorldError::Rounds { round, rounds } => write!(f, "round {round} of {rounds} is wrong"),
            WorldError::SeatVector { field, len } => write!(f, "{field} has {len} entries"),
            WorldError::ViewerOutOfRange { viewer } => write!(f, "viewer {viewer} is no seat"),
            WorldError::ViewerHand => f.write_str("the viewer's hand differs from its view"),
            WorldError::CardCount {
                seat,
                cards_expected,
                cards_got,
            } => {
                let whose = seat.map_or("the undealt deck".to_owned(), |s| format!("seat {s}"));
                write!(f, "{whose} holds {cards_got} cards, not {cards_expected}")
            }
            WorldError::Deck { card } => write!(f, "{card} is not in exactly one place"),
            WorldError::Trick => f.write_str("the trick, leader and seat to act disagree"),
            WorldError::Bid { seat } => write!(f, "seat {seat}'s bid does not fit has_bid"),
        }
    }
}

impl std::error::Error for WorldError {}

impl Game {
    /// The position `obs` (the view of `viewer`) shows, with `hidden` filling in what
    /// the viewer cannot see. See the module doc for the invariants it checks; `seed`
    /// seeds the shuffles of later rounds.
    pub fn from_world(
        obs: &Observation,
        viewer: Seat,
        hidden: &Hidden,
        seed: u64,
    ) -> Result<Game, WorldError> {
        let players = obs.players;
        if !(PLAYERS_MIN..=PLAYERS_MAX).contains(&players) {
            return Err(WorldError::PlayerCount { players });
        }
        let n = usize::from(players);
        if obs.rounds != rounds_for(players) || obs.round == 0 || obs.round > obs.rounds {
            return Err(WorldError::Rounds {
                round: obs.round,
                rounds: obs.rounds,
            });
        }
        if viewer >= players {
            return Err(WorldError::ViewerOutOfRange { viewer });
        }
        for (field, len) in [
            ("bids", obs.bids.len()),
            ("has_bid", obs.has_bid.len()),
            ("tricks_won", obs.tricks_won.len()),
            ("scores", obs.scores.len()),
            ("hidden.hands", hidden.hands.len()),
        ] {
            if len != n {
                return Err(WorldError::SeatVector { field, len });
            }
        }
        if !hidden.bids.is_empty() && hidden.bids.len() != n {
            return Err(WorldError::SeatVector {
                field: "hidden.bids",
                len: hidden.bids.len(),
            });
        }
        if let Some(row) = obs.round_scores.iter().find(|r| r.len() != n) {
            return Err(WorldError::SeatVector {
                field: "round_scores",
                len: row.len(),
            });
        }
        check_trick(obs)?;
        check_cards(obs, viewer, hidden)?;
        let bids = merge_bids(obs, hidden)?;
        // The generator is private to the rules module: take a fresh game's (seeded
        // from `seed`) and overwrite every other field.
        let fresh = Game::new(players, obs.options, seed, &mut Vec::new())
            .map_err(|_| WorldError::Options)?;
        let mut game = fresh;
        game.options = obs.options;
        game.players = players;
        game.rounds = obs.rounds;
        game.round = obs.round;
        game.dealer = obs.dealer;
        game.phase = obs.phase;
        game.to_act = to_act_field(obs);
        game.hands = hidden.hands.clone();
        game.undealt = hidden.undealt.clone();
        game.trump_card = obs.trump_card;
        game.trump_suit = obs.trump_suit;
        game.bids = bids;
        game.tricks_won = obs.tricks_won.clone();
        game.trick = obs.trick.clone();
        game.leader = obs.leader;
        game.last_trick = obs.last_trick.clone();
        game.played = obs.played.clone();
        game.scores = obs.scores.clone();
        game.round_scores = obs.round_scores.clone();
        game.ranking = obs.ranking.clone();
        Ok(game)
    }
}

/// The engine's `to_act` field: the observed seat in the sequential phases. While
/// hidden bids are collected it is unobservable; the leader is as good as any.
fn to_act_field(obs: &Observation) -> Seat {
    match (obs.phase, obs.to_act) {
        (Phase::Bidding, _) if obs.options.hidden_bids => obs.leader,
        (_, Some(s)) => s,
        (_, None) => obs.leader,
    }
}

/// Completed tricks this round: every trick has one winner.
fn tricks_completed(obs: &Observation) -> usize {
    obs.tricks_won.iter().map(|&t| usize::from(t)).sum()
}

fn check_trick(obs: &Observation) -> Result<(), WorldError> {
    let n = usize::from(obs.players);
    let completed = tricks_completed(obs);
    let trick_cards: Vec<Card> = obs.trick.iter().map(|p| p.card).collect();
    let in_order = (0u8..)
        .zip(&obs.trick)
        .all(|(i, p)| p.player == (obs.leader + i) % obs.players);
    let fits = obs.leader < obs.players
        && obs.trick.len() < n
        && completed <= usize::from(obs.round)
        && obs.played.len() == completed * n + obs.trick.len()
        && obs.played.ends_with(&trick_cards)
        && in_order;
    let to_act_fits = match obs.phase {
        Phase::Playing => {
            let next = u8::try_from(obs.trick.len())
                .map_or(obs.leader, |len| (obs.leader + len) % obs.players);
            obs.to_act == Some(next)
        }
        Phase::ChoosingTrump => obs.to_act == Some(obs.dealer) && obs.played.is_empty(),
        Phase::Bidding => obs.played.is_empty(),
        Phase::Finished => true,
    };
    if fits && to_act_fits {
        Ok(())
    } else {
        Err(WorldError::Trick)
    }
}

fn check_cards(obs: &Observation, viewer: Seat, hidden: &Hidden) -> Result<(), WorldError> {
    let mut own: Vec<Card> = hidden
        .hands
        .get(usize::from(viewer))
        .cloned()
        .unwrap_or_default();
    own.sort_unstable();
    let mut seen = obs.hand.clone();
    seen.sort_unstable();
    if own != seen {
        return Err(WorldError::ViewerHand);
    }
    let completed = tricks_completed(obs);
    for (seat, hand) in (0u8..).zip(&hidden.hands) {
        let in_trick = obs.trick.iter().any(|p| p.player == seat);
        let cards_expected = usize::from(obs.round)
            .saturating_sub(completed)
            .saturating_sub(usize::from(in_trick));
        if hand.len() != cards_expected {
            return Err(WorldError::CardCount {
                seat: Some(seat),
                cards_expected,
                cards_got: hand.len(),
            });
        }
    }
    let dealt = usize::from(obs.players) * usize::from(obs.round);
    let undealt_expected = DECK_SIZE
        .saturating_sub(dealt)
        .saturating_sub(usize::from(obs.trump_card.is_some()));
    if hidden.undealt.len() != undealt_expected {
        return Err(WorldError::CardCount {
            seat: None,
            cards_expected: undealt_expected,
            cards_got: hidden.undealt.len(),
        });
    }
    let mut places = [0u8; DECK_SIZE];
    let all = hidden
        .hands
        .iter()
        .flatten()
        .chain(&obs.played)
        .chain(obs.trump_card.iter())
        .chain(&hidden.undealt);
    for card in all {
        if let Some(slot) = places.get_mut(card.index()) {
            *slot += 1;
        }
    }
    match (0..DECK_SIZE).find(|&i| places.get(i) != Some(&1)) {
        None => Ok(()),
        Some(i) => Err(WorldError::Deck {
            card: Card::from_index(i).unwrap_or(Card::Jester(1)),
        }),
    }
}

/// The engine's bids: public ones from the view, hidden ones from the guess.
fn merge_bids(obs: &Observation, hidden: &Hidden) -> Result<Vec<Option<u8>>, WorldError> {
    let mut bids = Vec::with_capacity(obs.bids.len());
    for (seat, (&public, &has_bid)) in (0u8..).zip(obs.bids.iter().zip(&obs.has_bid)) {
        let guess = hidden.bids.get(usize::from(seat)).copied().flatten();
        let bid = match (has_bid, public, guess) {
            (true, Some(b), None) => Some(b),
            (true, None, Some(b)) if b <= obs.round => Some(b),
            (false, None, None) => None,
            _ => return Err(WorldError::Bid { seat }),
        };
        bids.push(bid);
    }
    Ok(bids)
}

#[cfg(test)]
mod tests {
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha12Rng;

    use super::*;
    use crate::vocabulary::game::bot;
    use crate::vocabulary::game::types::{BidRestriction, Event, Options};

    /// The truth as a guess: real hands, undealt deck and the bids the view hides.
    fn truth(game: &Game, viewer: Seat) -> Hidden {
        let obs = game.observation(viewer);
        Hidden {
            hands: game.hands.clone(),
            undealt: game.undealt.clone(),
            bids: (0..game.bids.len())
                .map(|s| {
                    let shown = obs.bids.get(s).copied().flatten();
                    game.bids
                        .get(s)
                        .copied()
                        .flatten()
                        .filter(|_| shown.is_none())
                })
                .collect(),
        }
    }

    fn options(i: u64) -> Options {
        Options {
            hidden_bids: i % 2 == 1,
            bid_restriction: [
                BidRestriction::None,
                BidRestriction::House,
                BidRestriction::Canadian,
            ][usize::try_from(i / 2 % 3).unwrap()],
            turn_seconds: 0,
        }
    }

    /// Plays `game` and `world` in lockstep to the end of the round with the heuristic
    /// and checks that they stay equal in every observable way.
    fn lockstep(game: &mut Game, world: &mut Game, rng: &mut ChaCha12Rng) {
        let round = game.round;
        while game.round == round {
            let Some(seat) = game.next_to_act() else {
                break;
            };
            for s in 0..game.players {
                assert_eq!(game.observation(s), world.observation(s));
            }
            let action = bot::decide(&game.observation(seat), rng).unwrap();
            let (mut e1, mut e2) = (Vec::new(), Vec::new());
            game.apply(seat, action, &mut e1).unwrap();
            world.apply(seat, action, &mut e2).unwrap();
            // The next round's deal comes from a different generator.
            let cut = |e: &[Event]| -> Vec<Event> {
                e.iter()
                    .take_while(|x| !matches!(x, Event::RoundStarted { .. }))
                    .cloned()
                    .collect()
            };
            assert_eq!(cut(&e1), cut(&e2));
        }
    }

    #[test]
    fn true_worlds_equal_the_game_and_roll_out_alike() {
        let mut rng = ChaCha12Rng::seed_from_u64(7);
        for i in 0..120u64 {
            let players = 3 + u8::try_from(i % 4).unwrap();
            let mut game = Game::new(players, options(i), i, &mut Vec::new()).unwrap();
            // Random play to a random point of a random round.
            let steps = rng.random_range(0..200);
            for _ in 0..steps {
                let Some(seat) = game.next_to_act() else {
                    break;
                };
                let legal = game.legal_actions(seat);
                let a = legal[rng.random_range(0..legal.len())];
                game.apply(seat, a, &mut Vec::new()).unwrap();
            }
            if game.phase == Phase::Finished {
                continue;
            }
            for viewer in 0..players {
                let obs = game.observation(viewer);
                let mut world = Game::from_world(&obs, viewer, &truth(&game, viewer), i).unwrap();
                assert_eq!(world.observation(viewer), obs);
                lockstep(&mut game.clone(), &mut world, &mut rng.clone());
            }
        }
    }

    #[test]
    fn refuses_impossible_worlds() {
        let mut game = Game::new(4, Options::default(), 3, &mut Vec::new()).unwrap();
        for _ in 0..6 {
            let seat = game.next_to_act().unwrap();
            let a = game.legal_actions(seat)[0];
            game.apply(seat, a, &mut Vec::new()).unwrap();
        }
        let viewer = game.next_to_act().unwrap();
        let obs = game.observation(viewer);
        let good = truth(&game, viewer);
        assert!(Game::from_world(&obs, viewer, &good, 0).is_ok());

        let mut swapped = good.clone();
        let other = usize::from((viewer + 1) % 4);
        let (a, b) = (swapped.hands[other][0], swapped.undealt[0]);
        swapped.hands[other][0] = b;
        swapped.undealt[0] = a;
        assert!(Game::from_world(&obs, viewer, &swapped, 0).is_ok());

        let mut dup = good.clone();
        dup.undealt[0] = dup.hands[other][0];
        assert!(matches!(
            Game::from_world(&obs, viewer, &dup, 0),
            Err(WorldError::Deck { .. })
        ));
        let mut short = good.clone();
        let moved = short.hands[other].pop().unwrap();
        short.undealt.push(moved);
        assert!(matches!(
            Game::from_world(&obs, viewer, &short, 0),
            Err(WorldError::CardCount { .. })
        ));
        let mut mine = good.clone();
        let v = usize::from(viewer);
        let (a, b) = (mine.hands[v][0], mine.hands[other][0]);
        mine.hands[v][0] = b;
        mine.hands[other][0] = a;
        assert_eq!(
            Game::from_world(&obs, viewer, &mine, 0).unwrap_err(),
            WorldError::ViewerHand
        );
        let mut bid = good;
        bid.bids = vec![Some(0); 4];
        assert!(matches!(
            Game::from_world(&obs, viewer, &bid, 0),
            Err(WorldError::Bid { .. })
        ));
    }
}
