//! A bot's way back after the server restarted or crashed (`--resume`): reconnecting
//! with its token after 100-500 ms of jitter, as PROTOCOL.md 6.1 asks of clients, and
//! the check that its game, once back, still holds everything the bot had seen.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use async_io::Timer;
use wizard_core::vocabulary::game::Phase;
use wizard_core::vocabulary::wire::{ClientMessage, ErrorCode, GameView, ServerMessage};

use super::Ctx;
use super::absent::{Answer, answer};
use super::game::{open_at, send};
use super::net::Ws;

/// The first wait before reconnecting, and the spread added to it (PROTOCOL.md 6.1:
/// 100-500 ms with jitter, so that a whole server's players do not come back at once).
const WAIT_MS_MIN: u64 = 100;
const WAIT_MS_SPREAD: u64 = 400;

/// A wait in 100-500 ms for bot `index`'s `attempt`-th try: a hash, so that runs are
/// repeatable and bots spread evenly.
pub(super) fn jitter(index: usize, attempt: u32) -> Duration {
    let mut x = (index as u64) ^ (u64::from(attempt) << 40) ^ 0x9e37_79b9_7f4a_7c15;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    Duration::from_millis(WAIT_MS_MIN + x % (WAIT_MS_SPREAD + 1))
}

/// Reconnects bot `index` from `from` with `token` until it is welcomed (then the
/// socket, whose next frame is the bot's `state`), trying again after a new jitter
/// whenever the server is not there yet or refuses, until the run ends.
pub(super) async fn reconnect(ctx: &Ctx, from: IpAddr, token: &str, index: usize) -> Option<Ws> {
    for attempt in 0u32.. {
        Timer::after(jitter(index, attempt)).await;
        if Instant::now() >= ctx.deadline {
            return None;
        }
        let path = super::shards::route(ctx, Some(token));
        let Some(mut ws) = open_at(ctx, from, false, &path).await else {
            continue;
        };
        let hello = ClientMessage::Hello {
            token: Some(token.to_owned()),
            deltas: ctx.settings.deltas,
            profile_key: None,
        };
        if !send(&mut ws, &hello).await {
            continue;
        }
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            match answer(&mut ws, until).await {
                Answer::Message(ServerMessage::Welcome { .. }) => {
                    ctx.stats.borrow_mut().welcomed += 1;
                    return Some(ws);
                }
                Answer::Message(ServerMessage::Error {
                    code: ErrorCode::Busy,
                    ..
                }) => {
                    ctx.stats.borrow_mut().refusals.busy_connection += 1;
                    break;
                }
                Answer::Message(ServerMessage::Error { code, .. }) => {
                    if code == ErrorCode::WrongShard {
                        super::shards::misrouted(ctx, format!("resume: wrong_shard at {path}"));
                    }
                    let mut st = ctx.stats.borrow_mut();
                    *st.errors.entry(format!("resume {code:?}")).or_default() += 1;
                    break;
                }
                Answer::Message(_) => {}
                Answer::Closed(_) | Answer::Timeout => break,
            }
        }
        ctx.stats.borrow_mut().closed();
    }
    None
}

/// Whether the game part `after` (a `state`'s `game`, as sent) holds everything the
/// game part `before` showed (anything may follow a finished game: the host may have
/// started the next one): the same or a later round, every finished round's score
/// unchanged, and within the same round every card seen played still played in that
/// order, every bid and the trump seen still there, and no card back in the bot's
/// hand. `Err` says what was lost.
pub(super) fn continues(before: &str, after: &str) -> Result<(), String> {
    let parse = |text: &str| {
        serde_json::from_str::<Option<GameView>>(text)
            .ok()
            .flatten()
    };
    let (b, a) = match (parse(before), parse(after)) {
        (Some(b), Some(a)) => (b.observation, a.observation),
        (Some(b), None) if b.observation.phase != Phase::Finished => {
            return Err(format!("the game of round {} is gone", b.observation.round));
        }
        _ => return Ok(()),
    };
    if b.phase == Phase::Finished {
        // The host may have started the next game meanwhile.
        return Ok(());
    }
    if b.round == b.rounds && a.round_scores.len() < b.round_scores.len() {
        // The last round was being played: the game may have ended before the crash
        // without this bot seeing it (its frames were still on their way) while the
        // host saw it and started the next game, which begins with fewer rounds
        // scored. A lobby starts a game only after the last one finished.
        return Ok(());
    }
    if !a.round_scores.starts_with(&b.round_scores) {
        return Err(format!(
            "finished rounds' scores changed: {:?} then {:?}",
            b.round_scores, a.round_scores
        ));
    }
    if a.round < b.round {
        return Err(format!("round {} then round {}", b.round, a.round));
    }
    if a.round > b.round {
        return Ok(());
    }
    if !a.played.starts_with(&b.played) {
        return Err(format!(
            "round {}: cards played {:?} then {:?}",
            b.round, b.played, a.played
        ));
    }
    let lost_bid = b
        .bids
        .iter()
        .zip(&a.bids)
        .any(|(seen, now)| seen.is_some() && seen != now);
    let lost_has_bid = b
        .has_bid
        .iter()
        .zip(&a.has_bid)
        .any(|(seen, now)| *seen && !now);
    if lost_bid || lost_has_bid {
        return Err(format!(
            "round {}: bids {:?} then {:?}",
            b.round, b.bids, a.bids
        ));
    }
    if b.trump_suit.is_some() && a.trump_suit != b.trump_suit {
        return Err(format!(
            "round {}: trump {:?} then {:?}",
            b.round, b.trump_suit, a.trump_suit
        ));
    }
    if let Some(card) = a.hand.iter().find(|c| !b.hand.contains(c)) {
        return Err(format!("round {}: {card:?} came back to the hand", b.round));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wizard_core::vocabulary::game::{Game, Options};

    /// Seat 0's game part, as the server sends it, after each of the first `moves`
    /// moves of a 3-player game (the first legal action each time).
    fn views(moves: usize) -> Vec<String> {
        let mut events = Vec::new();
        let mut game = Game::new(3, Options::default(), 5, &mut events).unwrap();
        let mut out = Vec::new();
        for _ in 0..moves {
            let view = GameView {
                id: String::new(),
                you: Some(0),
                observation: game.observation(0),
            };
            out.push(serde_json::to_string(&Some(view)).unwrap());
            let (seat, action) = (0..3u8)
                .find_map(|s| game.observation(s).legal_actions.first().map(|a| (s, *a)))
                .unwrap();
            game.apply(seat, action, &mut events).unwrap();
        }
        out
    }

    #[test]
    fn a_later_view_continues_and_an_earlier_one_does_not() {
        let v = views(60);
        for later in 1..v.len() {
            for earlier in 0..later {
                assert_eq!(
                    continues(&v[earlier], &v[later]),
                    Ok(()),
                    "{earlier} {later}"
                );
                // Going back loses something seen, except where two views are alike
                // (a move that did not change what seat 0 sees of its round).
                if v[earlier] != v[later] {
                    assert!(
                        continues(&v[later], &v[earlier]).is_err(),
                        "view {later} then view {earlier} passed"
                    );
                }
            }
        }
    }

    #[test]
    fn a_finished_game_may_give_way_to_the_next_one() {
        let mut events = Vec::new();
        let mut game = Game::new(3, Options::default(), 5, &mut events).unwrap();
        while game.observation(0).phase != Phase::Finished {
            let (seat, action) = (0..3u8)
                .find_map(|s| game.observation(s).legal_actions.first().map(|a| (s, *a)))
                .unwrap();
            game.apply(seat, action, &mut events).unwrap();
        }
        let view = |g: &Game| {
            let v = GameView {
                id: String::new(),
                you: Some(0),
                observation: g.observation(0),
            };
            serde_json::to_string(&Some(v)).unwrap()
        };
        let finished = view(&game);
        let next = view(&Game::new(3, Options::default(), 6, &mut events).unwrap());
        assert_eq!(continues(&finished, &next), Ok(()));
        assert_eq!(continues(&finished, "null"), Ok(()));
        // A running game that starts over is a loss.
        let v = views(80);
        assert!(continues(&v[79], &next).is_err());
        // In its last round, it may have finished unseen and given way to the next.
        let mut game = Game::new(3, Options::default(), 5, &mut events).unwrap();
        while game.observation(0).round < game.observation(0).rounds {
            let (seat, action) = (0..3u8)
                .find_map(|s| game.observation(s).legal_actions.first().map(|a| (s, *a)))
                .unwrap();
            game.apply(seat, action, &mut events).unwrap();
        }
        assert_eq!(continues(&view(&game), &next), Ok(()));
    }

    #[test]
    fn a_running_game_that_is_gone_is_lost_and_no_game_is_no_loss() {
        let v = views(2);
        assert!(continues(&v[1], "null").is_err());
        assert_eq!(continues("null", &v[1]), Ok(()));
        assert_eq!(continues("null", "null"), Ok(()));
    }

    #[test]
    fn jitter_stays_in_100_to_500_ms_and_spreads() {
        let waits: Vec<u64> = (0..1000).map(|i| jitter(i, 0).as_millis() as u64).collect();
        assert!(waits.iter().all(|w| (100..=500).contains(w)));
        let below_300 = waits.iter().filter(|w| **w < 300).count();
        assert!(
            (400..600).contains(&below_300),
            "{below_300} of 1000 below 300 ms"
        );
    }
}
