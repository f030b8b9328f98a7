//! Public tables and quick play against the real server: a table seated by quick play
//! is restored after a restart like any lobby (its tickets are not), and the attacks
//! on the pool: one address queueing and cancelling in a loop, many sessions queueing
//! and walking away. No ticket outlives its player and none holds a seat.

use std::net::SocketAddr;

use wizard_core::vocabulary::wire::{ClientMessage, ErrorCode, ServerMessage};

use super::client::{Player, TestServer, View, bounded, local, metric, ws_from};
use super::durable::{TempDir, play};

fn quick(name: &str, seats: u8) -> ClientMessage {
    ClientMessage::QuickPlay {
        name: name.to_owned(),
        seats: Some(seats),
    }
}

/// Reads up to the `queued` answer; panics on an `error`.
async fn queued(p: &mut Player) -> u64 {
    loop {
        match p.next().await {
            ServerMessage::Queued { since_ms } => return since_ms,
            ServerMessage::Error { code, message, .. } => panic!("refused: {code:?} {message}"),
            _ => {}
        }
    }
}

/// Reads up to the state of a running game.
async fn seated(p: &mut Player) -> View {
    p.state_where(|v| v.game.is_some()).await
}

/// Polls `/metrics` until `series` reads `value` (each poll a request the server
/// answers, nothing slept), for at most the caller's `bounded` time.
async fn metric_reaches(addr: SocketAddr, series: &str, value: f64) {
    while metric(addr, series).await != value {}
}

#[test]
fn a_table_seated_by_quick_play_is_restored_after_a_restart_its_tickets_are_not() {
    let dir = TempDir::new();
    let store = dir.store();
    let env = [
        ("STORE", store.as_str()),
        ("MESSAGE_RATE", "1000"),
        ("MESSAGE_BURST", "1000"),
    ];
    let server = TestServer::start(&env);
    let (mut players, before, code, waiting) = bounded(30, async {
        let mut players = Vec::new();
        for name in ["Ann", "Bob", "Cat"] {
            let (mut p, _) = Player::hello(server.addr, None).await;
            p.send(quick(name, 3)).await;
            players.push(p);
        }
        let mut seen = Vec::new();
        let mut code = String::new();
        for p in players.iter_mut() {
            let v = seated(p).await;
            let lobby = v.lobby.expect("a lobby");
            assert!(lobby.public, "quick-play tables are public");
            assert_eq!(lobby.players.len(), 3);
            assert!(
                lobby.players.iter().all(|s| !s.is_ai),
                "three humans, no AI"
            );
            code = lobby.code;
            seen.push(v.game.expect("a game").observation);
        }
        play(&mut players, &mut seen, 4).await;
        // A fourth player waits for a table of 6 when the server stops.
        let (mut dan, _) = Player::hello(server.addr, None).await;
        dan.send(quick("Dan", 6)).await;
        queued(&mut dan).await;
        assert_eq!(metric(server.addr, "wizard_quick_play_tickets").await, 1.0);
        (players, seen, code, dan)
    });
    server.shutdown();
    assert!(server.join(10), "the server did not stop");
    drop(waiting);
    let server = TestServer::start(&env);
    bounded(30, async {
        for (i, p) in players.iter_mut().enumerate() {
            let (back, view) = Player::hello(server.addr, Some(&p.token)).await;
            assert_eq!(back.id, p.id, "the same player");
            let lobby = view.lobby.expect("back at the table");
            assert_eq!(lobby.code, code);
            assert!(lobby.public, "still public");
            let after = view.game.expect("back in the game").observation;
            assert_eq!(after, before[i], "the game where it stood");
            *p = back;
        }
        // The ticket was lost with the restart: the pool is empty.
        assert_eq!(metric(server.addr, "wizard_quick_play_tickets").await, 0.0);
    });
}

#[test]
fn one_address_queueing_and_cancelling_in_a_loop_holds_nothing_and_honest_players_are_seated() {
    let server = TestServer::start(&[
        ("MESSAGE_RATE", "1000"),
        ("MESSAGE_BURST", "1000"),
        ("QUICK_PLAY_WAIT", "30"),
    ]);
    bounded(60, async {
        let (mut churn, _) = Player::hello(server.addr, None).await;
        // 200 rounds of queue and cancel, each ticket for the table size honest
        // players want too; each answer read before the next round.
        for _ in 0..200 {
            churn.send(quick("Churn", 3)).await;
            queued(&mut churn).await;
            churn.send(ClientMessage::CancelQuickPlay).await;
        }
        churn
            .send(ClientMessage::ListTables { running: false })
            .await;
        // The cancels were handled before the list (one connection, in order).
        loop {
            match churn.next().await {
                ServerMessage::Tables { .. } => break,
                ServerMessage::State { lobby: Some(_), .. } => panic!("the churner was seated"),
                _ => {}
            }
        }
        assert_eq!(metric(server.addr, "wizard_quick_play_tickets").await, 0.0);
        assert_eq!(
            metric(server.addr, "wizard_quick_play_cancelled_total").await,
            200.0
        );
        // Honest players who come now are seated together at once, without the churner.
        let mut honest = Vec::new();
        for name in ["Ann", "Bob", "Cat"] {
            let (mut p, _) = Player::hello(server.addr, None).await;
            p.send(quick(name, 3)).await;
            honest.push(p);
        }
        for p in honest.iter_mut() {
            let v = seated(p).await;
            let names: Vec<String> = v
                .lobby
                .unwrap()
                .players
                .into_iter()
                .map(|s| s.name)
                .collect();
            assert_eq!(names, ["Ann", "Bob", "Cat"]);
        }
        assert_eq!(metric(server.addr, "wizard_lobbies").await, 1.0);
    });
}

#[test]
fn many_sessions_queueing_and_walking_away_leave_no_ticket_and_hold_no_seat() {
    let server = TestServer::start(&[
        ("MESSAGE_RATE", "1000"),
        ("MESSAGE_BURST", "1000"),
        // Longer than the test may take: no ticket goes by waiting out.
        ("QUICK_PLAY_WAIT", "60"),
        ("RECONNECT_BURST", "100"),
        // The test polls /metrics from one address as fast as it is answered.
        ("SOCKET_RATE", "100000"),
        ("SOCKET_BURST", "100000"),
    ]);
    bounded(20, async {
        // 40 sessions from 8 addresses queue for tables of 6, then close.
        let mut walkers = Vec::new();
        for n in 0..40u8 {
            let ws = ws_from(server.addr, local(10 + n % 8)).await;
            let (mut p, _) = Player::hello_on(ws, None).await;
            p.send(quick("Walker", 6)).await;
            queued(&mut p).await;
            walkers.push(p);
        }
        // Tables of 6 of equal ratings form as their tickets settle: 36 seated, 4 wait.
        metric_reaches(server.addr, "wizard_games_started_total", 6.0).await;
        assert_eq!(metric(server.addr, "wizard_quick_play_tickets").await, 4.0);
        drop(walkers);
        // Their tickets go with their connections, long before QUICK_PLAY_WAIT.
        metric_reaches(server.addr, "wizard_quick_play_tickets", 0.0).await;
        // Six honest players who come now are seated together: no seat of their table
        // is held by anyone who walked away.
        let mut honest = Vec::new();
        for n in 0..6 {
            let (mut p, _) = Player::hello(server.addr, None).await;
            p.send(quick(&format!("P{n}"), 6)).await;
            honest.push(p);
        }
        for p in honest.iter_mut() {
            let lobby = seated(p).await.lobby.unwrap();
            let names: Vec<&str> = lobby.players.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, ["P0", "P1", "P2", "P3", "P4", "P5"]);
        }
        assert_eq!(metric(server.addr, "wizard_games_started_total").await, 7.0);
    });
}

#[test]
fn quick_play_is_busy_while_the_server_does_not_accept_games() {
    let server = TestServer::start(&[("LOAD_FORCE_LEVEL", "overloaded")]);
    bounded(30, async {
        let (mut ann, _) = Player::hello(server.addr, None).await;
        ann.send(quick("Ann", 4)).await;
        loop {
            match ann.next().await {
                ServerMessage::Error {
                    code,
                    retry_after_ms,
                    ..
                } => {
                    assert_eq!(code, ErrorCode::Busy);
                    assert!(retry_after_ms.is_some_and(|ms| ms > 0));
                    break;
                }
                ServerMessage::Queued { .. } => panic!("queued while overloaded"),
                _ => {}
            }
        }
        assert_eq!(metric(server.addr, "wizard_quick_play_tickets").await, 0.0);
        let refused = metric(
            server.addr,
            "wizard_quick_play_refused_total{reason=\"not_accepting\"}",
        )
        .await;
        assert_eq!(refused, 1.0);
    });
}
