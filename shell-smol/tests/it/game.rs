//! Whole games and sessions over real websockets: a 20-round game with an AI seat played
//! by the fallback, keepalive and offline seats, reconnecting, a second tab, leaving a
//! running game.

use std::net::SocketAddr;

use futures_lite::future::zip;
use wizard_core::vocabulary::game::{Event, Phase};
use wizard_core::vocabulary::wire::{ClientMessage, ErrorCode};

use crate::client::{Player, TestServer, View, bounded, close_code, metric, my_move};

/// Fast games: no pauses, AI seats played by the fallback at once, and a message rate
/// that lets a human move as fast as the server answers.
const FAST: &[(&str, &str)] = &[
    ("AI_MOVE_DELAY", "0"),
    ("TRICK_PAUSE", "0"),
    ("MESSAGE_RATE", "1000"),
    ("MESSAGE_BURST", "1000"),
];

/// Two humans (the host first) and one AI seat in a started game.
async fn three_seat_game(addr: SocketAddr) -> (Player, Player, View, View) {
    let (mut a, _) = Player::hello(addr, None).await;
    let (mut b, _) = Player::hello(addr, None).await;
    let code = a.create_lobby("Ann").await;
    b.join_lobby(&code, "Bob").await;
    a.add_ai(3).await;
    let view_a = a.start_game().await;
    let view_b = b.state_where(|v| v.game.is_some()).await;
    (a, b, view_a, view_b)
}

/// Plays every turn of `player` with its first legal action until the game is over;
/// returns every event seen and the last view.
async fn play_out(player: &mut Player, first: View) -> (Vec<Event>, View) {
    let mut events = first.events.clone();
    let mut view = first;
    loop {
        let finished = view
            .game
            .as_ref()
            .is_some_and(|g| g.observation.phase == Phase::Finished);
        if finished {
            return (events, view);
        }
        if let Some(action) = my_move(&view) {
            player.send(ClientMessage::Action { action }).await;
        }
        view = player.next_state_no_error().await;
        events.extend(view.events.iter().cloned());
    }
}

#[test]
fn a_20_round_game_between_two_humans_and_an_ai_seat() {
    let server = TestServer::start(FAST);
    let addr = server.addr;
    bounded(60, async {
        let (mut a, mut b, view_a, view_b) = three_seat_game(addr).await;
        assert_eq!(view_a.game.as_ref().unwrap().observation.rounds, 20);
        let ((events_a, last_a), (events_b, last_b)) =
            zip(play_out(&mut a, view_a), play_out(&mut b, view_b)).await;
        for (events, last) in [(&events_a, &last_a), (&events_b, &last_b)] {
            let rounds: Vec<_> = events
                .iter()
                .filter_map(|e| match e {
                    Event::RoundFinished { deltas, scores, .. } => Some((deltas, scores)),
                    _ => None,
                })
                .collect();
            assert_eq!(rounds.len(), 20, "every round's result arrives once");
            let mut sums = vec![0i32; 3];
            for (deltas, scores) in &rounds {
                for (sum, delta) in sums.iter_mut().zip(deltas.iter()) {
                    *sum += delta;
                }
                assert_eq!(&sums, *scores, "running scores are the sum of the deltas");
            }
            let finished: Vec<_> = events
                .iter()
                .filter_map(|e| match e {
                    Event::GameFinished { scores, ranking } => Some((scores, ranking)),
                    _ => None,
                })
                .collect();
            assert_eq!(finished.len(), 1);
            let (scores, ranking) = finished[0];
            assert_eq!(scores, &sums);
            let obs = &last.game.as_ref().unwrap().observation;
            assert_eq!(obs.scores, sums);
            assert_eq!(obs.round_scores.len(), 20);
            assert_eq!(ranking.len(), 3);
            for placing in ranking {
                assert_eq!(placing.score, sums[usize::from(placing.player)]);
            }
            let plays = events
                .iter()
                .filter(|e| matches!(e, Event::CardPlayed { .. }))
                .count();
            assert_eq!(plays, 3 * (1..=20).sum::<usize>(), "every card played once");
        }
        assert_eq!(events_a, events_b, "both humans saw the same events");
        assert!(metric(addr, "wizard_moves_total{by=\"fallback\"}").await > 0.0);
        assert_eq!(metric(addr, "wizard_games_finished_total").await, 1.0);
    });
}

#[test]
fn a_client_that_stops_answering_pings_is_closed_and_shown_offline() {
    let server = TestServer::start(&[("KEEPALIVE_INTERVAL", "0.1"), ("KEEPALIVE_TIMEOUT", "0.5")]);
    let addr = server.addr;
    bounded(10, async {
        let (mut a, _) = Player::hello(addr, None).await;
        let (mut b, _) = Player::hello(addr, None).await;
        let code = a.create_lobby("Ann").await;
        b.join_lobby(&code, "Bob").await;
        // `b` no longer reads, so its pings go unanswered; `a` keeps reading (and so
        // answering pings) and sees `b` go offline.
        let started = std::time::Instant::now();
        let b_id = b.id.clone();
        let view = a
            .state_where(|v| {
                v.lobby
                    .as_ref()
                    .is_some_and(|l| l.players.iter().any(|p| p.id == b_id && !p.connected))
            })
            .await;
        assert!(started.elapsed() >= std::time::Duration::from_millis(400));
        assert_eq!(view.lobby.unwrap().players.len(), 2, "the seat stays");
        // The server closed `b`'s connection (no close code: it just stopped hearing).
        let _ = close_code(&mut b.ws).await;
        assert_eq!(metric(addr, "wizard_keepalive_timeouts_total").await, 1.0);
    });
}

#[test]
fn reconnecting_by_token_mid_game_restores_the_full_view() {
    let server = TestServer::start(FAST);
    let addr = server.addr;
    bounded(20, async {
        let (mut a, b, view_a, _) = three_seat_game(addr).await;
        // Play `a`'s turns until it is `b`'s turn: nothing moves while `b` is away.
        let b_seat = 1;
        let mut view = view_a;
        loop {
            let obs = &view.game.as_ref().unwrap().observation;
            if obs.to_act == Some(b_seat) {
                break;
            }
            if let Some(action) = my_move(&view) {
                a.send(ClientMessage::Action { action }).await;
            }
            view = a.next_state().await;
        }
        let Player { ws, id, token } = b;
        drop(ws);
        let b_id = id.clone();
        a.state_where(|v| {
            v.lobby
                .as_ref()
                .is_some_and(|l| l.players.iter().any(|p| p.id == b_id && !p.connected))
        })
        .await;
        let (mut b, back) = Player::hello(addr, Some(&token)).await;
        assert_eq!(b.id, id, "same player");
        let lobby = back.lobby.as_ref().expect("still seated");
        assert!(lobby.players.iter().all(|p| p.connected));
        let game = back.game.as_ref().expect("the game view is restored");
        assert_eq!(game.you, Some(b_seat));
        let obs = &game.observation;
        let a_obs = &view.game.as_ref().unwrap().observation;
        assert_eq!(obs.to_act, Some(b_seat));
        assert_eq!((obs.round, obs.phase), (a_obs.round, a_obs.phase));
        // It is `b`'s turn, so `b` played one card per completed trick of the round.
        let tricks: u8 = obs.tricks_won.iter().sum();
        assert_eq!(obs.hand.len(), usize::from(obs.round - tricks));
        assert_eq!(obs.scores, a_obs.scores);
        assert!(!obs.legal_actions.is_empty());
        // And the game goes on from there.
        let action = my_move(&back).unwrap();
        b.send(ClientMessage::Action { action }).await;
        let after = b.next_state().await;
        assert!(!after.events.is_empty(), "the move was applied");
    });
}

#[test]
fn a_second_tab_takes_over_the_session_with_4000() {
    let server = TestServer::start(FAST);
    let addr = server.addr;
    bounded(20, async {
        let (_a, mut b, _, view_b) = three_seat_game(addr).await;
        let (mut tab, view) = Player::hello(addr, Some(&b.token.clone())).await;
        assert_eq!(tab.id, b.id);
        assert_eq!(
            view.game.as_ref().map(|g| g.you),
            view_b.game.as_ref().map(|g| g.you)
        );
        assert_eq!(b.next_error().await, ErrorCode::SessionReplaced);
        assert_eq!(close_code(&mut b.ws).await, 4000);
        // The new tab plays on.
        tab.send(ClientMessage::LeaveLobby).await;
        let left = tab.next_state().await;
        assert!(left.lobby.is_none());
    });
}

#[test]
fn leaving_mid_game_turns_the_seat_into_ai_and_moves_the_host() {
    let server = TestServer::start(FAST);
    let addr = server.addr;
    bounded(20, async {
        let (mut a, mut b, view_a, _) = three_seat_game(addr).await;
        let a_lobby = view_a.lobby.unwrap();
        assert_eq!(a_lobby.host_id, a.id);
        a.send(ClientMessage::LeaveLobby).await;
        let left = a.state_where(|v| v.lobby.is_none()).await;
        assert!(left.game.is_none());
        // Seat 0 was `a`'s: it becomes an AI seat (with an AI's id) under the same name.
        let view = b
            .state_where(|v| {
                v.lobby
                    .as_ref()
                    .is_some_and(|l| l.players.first().is_some_and(|p| p.is_ai))
            })
            .await;
        let lobby = view.lobby.as_ref().unwrap();
        assert_eq!(lobby.host_id, b.id, "the host moved to the remaining human");
        assert_eq!(lobby.players.len(), 3);
        assert!(lobby.players.iter().all(|p| p.id != a.id));
        assert_eq!(lobby.players[0].name, "Ann", "the AI seat keeps the name");
        // The game goes on: `b` plays to the end with the fallback in two seats.
        let (_, last) = play_out(&mut b, view).await;
        let obs = &last.game.unwrap().observation;
        assert_eq!(obs.round_scores.len(), 20);
        // `a` is no longer seated: a new hello shows nothing.
        let (_, again) = Player::hello(addr, Some(&a.token)).await;
        assert!(again.lobby.is_none() && again.game.is_none());
    });
}
