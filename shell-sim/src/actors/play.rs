//! What a simulated player does at the table: pick a move from its own view (the
//! shipped heuristic, sometimes a random legal move), and tell whether a later view
//! shows a move it made (the checkers' "no accepted move lost").

use rand::RngExt;
use rand_chacha::ChaCha12Rng;
use wizard_core::vocabulary::game::{Action, Event, Observation, Phase, bot, selfplay};

/// A move the player sent, as it saw the game then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentMove {
    pub action: Action,
    pub round: u8,
    pub sent_us: u64,
}

/// The player's choice for `obs` (mostly the heuristic, one in ten random).
pub fn choose(obs: &Observation, rng: &mut ChaCha12Rng) -> Option<Action> {
    if rng.random_range(0..10) == 0 {
        selfplay::random_action(obs, rng)
    } else {
        bot::decide(obs, rng)
    }
}

/// Whether `obs` (seen by `seat`) shows `m` applied.
pub fn reflects(obs: &Observation, seat: u8, m: &SentMove) -> bool {
    if obs.round != m.round || obs.phase == Phase::Finished {
        return true;
    }
    match m.action {
        Action::Bid { .. } => obs.has_bid.get(usize::from(seat)).copied().unwrap_or(false),
        Action::Play { card } => !obs.hand.contains(&card),
        Action::ChooseTrump { .. } => obs.phase != Phase::ChoosingTrump,
    }
}

/// Whether `event` is `m`, made by `seat`.
pub fn shows(event: &Event, seat: u8, m: &SentMove) -> bool {
    match (event, m.action) {
        (Event::CardPlayed { player, card }, Action::Play { card: mine }) => {
            *player == seat && *card == mine
        }
        (Event::BidMade { player, .. }, Action::Bid { .. })
        | (Event::TrumpChosen { player, .. }, Action::ChooseTrump { .. }) => *player == seat,
        _ => false,
    }
}

/// How far a game has come, as one seat sees it: (round, bids made, cards played).
/// Within one game it never goes back; a new game starts again at round 1.
pub fn progress(obs: &Observation) -> (u8, usize, usize) {
    let bids = obs.has_bid.iter().filter(|b| **b).count();
    (obs.round, bids, obs.played.len())
}

#[cfg(test)]
mod tests {
    use wizard_core::vocabulary::game::{Card, Suit};

    use super::*;

    #[test]
    fn a_move_shows_as_its_own_event_only() {
        let card: Card = "c12".parse().unwrap();
        let other: Card = "c11".parse().unwrap();
        let m = |action| SentMove {
            action,
            round: 3,
            sent_us: 0,
        };
        let play = m(Action::Play { card });
        assert!(shows(&Event::CardPlayed { player: 1, card }, 1, &play));
        assert!(!shows(&Event::CardPlayed { player: 2, card }, 1, &play));
        assert!(!shows(
            &Event::CardPlayed {
                player: 1,
                card: other
            },
            1,
            &play
        ));
        let bid = m(Action::Bid { bid: 2 });
        assert!(shows(
            &Event::BidMade {
                player: 1,
                bid: None
            },
            1,
            &bid
        ));
        assert!(!shows(
            &Event::BidMade {
                player: 0,
                bid: Some(2)
            },
            1,
            &bid
        ));
        assert!(!shows(&Event::CardPlayed { player: 1, card }, 1, &bid));
        let trump = m(Action::ChooseTrump { suit: Suit::Hearts });
        let chosen = Event::TrumpChosen {
            player: 1,
            suit: Suit::Hearts,
        };
        assert!(shows(&chosen, 1, &trump));
        assert!(!shows(&chosen, 0, &trump));
    }
}
