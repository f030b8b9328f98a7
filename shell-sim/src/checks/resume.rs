//! The restart checker: a player who comes back after the server process was killed
//! and restored from its durable store resumes with nothing it saw lost. What the
//! player last received before the kill is held against the first view after it
//! resumed its session (the same player id): the same lobby, still seated; the same
//! game unless the one it saw had finished; and in that game never behind (round,
//! bids, cards), with everything it saw still there: the bids, the cards played in
//! the round in the same order, no card in its hand that it had not (the hand only
//! shrinks within a round), and the scores of every round it saw scored.
//! A player whose session did not survive (its seat given up at `SESSION_TTL`, or a
//! session without a seat, which the store does not keep) starts afresh: not judged.

use wizard_core::vocabulary::game::Observation;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::wire::{self, GameView, LobbyStatus, LobbyView, ServerMessage};

use crate::actors::play;

/// What one player last saw before a kill.
#[derive(Clone, Debug)]
pub struct Seen {
    /// Connections from this id on belong to the restored process.
    pub floor: ConnId,
    pub player_id: String,
    pub lobby: LobbyView,
    pub game: Option<GameView>,
}

/// How a resumed view compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resumed {
    /// In the same game, judged field by field.
    SameGame,
    /// In the same lobby, its game (if any) finished and another begun or none.
    SameLobby,
}

/// Decodes the last `state` a seated player received (`None`: no lobby, or not a
/// seat of it: nothing to hold the restored process to).
pub fn seen(text: &str, player_id: &str, floor: ConnId) -> Option<Seen> {
    let Ok(ServerMessage::State {
        lobby: Some(lobby),
        game,
        ..
    }) = wire::decode_server(text)
    else {
        return None;
    };
    if !lobby.players.iter().any(|p| p.id == player_id) {
        return None;
    }
    Some(Seen {
        floor,
        player_id: player_id.to_owned(),
        lobby,
        game,
    })
}

/// Holds the first `state` after the player resumed its session against what it saw.
pub fn judge(seen: &Seen, text: &str) -> Result<Resumed, String> {
    let Ok(ServerMessage::State { lobby, game, .. }) = wire::decode_server(text) else {
        return Err("the first view after the restart does not decode".into());
    };
    let Some(lobby) = lobby else {
        return Err(format!("resumed without its lobby {}", seen.lobby.code));
    };
    if lobby.code != seen.lobby.code {
        return Err(format!(
            "resumed in lobby {} instead of {}",
            lobby.code, seen.lobby.code
        ));
    }
    if !lobby.players.iter().any(|p| p.id == seen.player_id) {
        return Err(format!("no longer seated in lobby {}", lobby.code));
    }
    let went_back = matches!(
        (seen.lobby.status, lobby.status),
        (LobbyStatus::Playing, LobbyStatus::Waiting)
            | (LobbyStatus::Finished, LobbyStatus::Playing)
    );
    let (Some(before), Some(after)) = (&seen.game, &game) else {
        if seen.game.is_some() && seen.lobby.status == LobbyStatus::Playing {
            return Err(format!("lobby {}: the running game is gone", lobby.code));
        }
        return Ok(Resumed::SameLobby);
    };
    if before.id != after.id {
        if seen.lobby.status == LobbyStatus::Playing {
            return Err(format!(
                "lobby {}: game {} was running, game {} came back",
                lobby.code, before.id, after.id
            ));
        }
        return Ok(Resumed::SameLobby);
    }
    if went_back {
        return Err(format!(
            "lobby {}: status {:?} went back to {:?}",
            lobby.code, seen.lobby.status, lobby.status
        ));
    }
    if before.you != after.you {
        return Err(format!(
            "lobby {}: seat {:?} came back as {:?}",
            lobby.code, before.you, after.you
        ));
    }
    same_game(&before.observation, &after.observation).map(|()| Resumed::SameGame)
}

/// The rules within one game: never behind, nothing seen missing.
fn same_game(before: &Observation, after: &Observation) -> Result<(), String> {
    let (p0, p1) = (play::progress(before), play::progress(after));
    if p1 < p0 {
        return Err(format!(
            "the game went back from (round, bids, cards) {p0:?} to {p1:?}"
        ));
    }
    if after.round_scores.get(..before.round_scores.len()) != Some(&before.round_scores[..]) {
        return Err(format!(
            "round scores {:?} became {:?}",
            before.round_scores, after.round_scores
        ));
    }
    if after.round != before.round {
        return Ok(());
    }
    if after.played.get(..before.played.len()) != Some(&before.played[..]) {
        return Err(format!(
            "round {}: cards played {:?} became {:?}",
            after.round, before.played, after.played
        ));
    }
    for (seat, bid) in before.bids.iter().enumerate() {
        if bid.is_some() && after.bids.get(seat) != Some(bid) {
            return Err(format!(
                "round {}: seat {seat}'s bid {bid:?} became {:?}",
                after.round,
                after.bids.get(seat)
            ));
        }
    }
    if let Some(card) = after.hand.iter().find(|c| !before.hand.contains(c)) {
        return Err(format!(
            "round {}: the hand holds {card:?}, which it did not before",
            after.round
        ));
    }
    if after.scores != before.scores {
        return Err(format!(
            "round {}: scores {:?} became {:?}",
            after.round, before.scores, after.scores
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use wizard_core::vocabulary::game::{Game, Options};

    use super::*;

    /// Seat 0's views of one game after each of its first `moves` moves.
    fn views(moves: usize) -> Vec<Observation> {
        let mut events = Vec::new();
        let mut game = Game::new(3, Options::default(), 7, &mut events).expect("a game");
        let mut out = vec![game.observation(0)];
        for _ in 0..moves {
            let seat = game.to_act().expect("someone acts");
            let action = game.legal_actions(seat)[0];
            game.apply(seat, action, &mut events).expect("a legal move");
            out.push(game.observation(0));
        }
        out
    }

    #[test]
    fn a_game_ahead_passes_and_one_behind_fails() {
        let v = views(12);
        assert!(same_game(&v[6], &v[6]).is_ok());
        assert!(same_game(&v[6], &v[12]).is_ok());
        let err = same_game(&v[12], &v[6]).expect_err("moves seen are gone");
        assert!(err.contains("went back"), "{err}");
    }

    #[test]
    fn a_card_played_differently_fails() {
        let v = views(12);
        let mut other = v[12].clone();
        if let Some(c) = other.played.first_mut() {
            *c = v[12].played[1];
        }
        assert!(!v[12].played.is_empty());
        let err = same_game(&v[12], &other).expect_err("another card in a seen place");
        assert!(err.contains("cards played"), "{err}");
    }
}
