//! What the absent hold, over real sockets: sessions evicted at MAX_SESSIONS, games
//! left by everyone go dormant and wake for their player, idle lobbies go, per-address
//! caps on lobbies, and per-address rates for reconnects and unknown join codes.
//! Nothing sleeps: every wait is for a message the server pushes, within `bounded`.

use std::net::SocketAddr;

use wizard_core::vocabulary::wire::{ClientMessage, ErrorCode, LobbyStatus, ServerMessage};

use crate::client::{
    Player, TestServer, View, bounded, close_code, http, local, my_move, next_message, send,
    ws_from,
};

/// Says hello from `from` and returns the player, the `accepting_games` its
/// `server_status` carried, and the `state` that followed.
async fn hello_from(addr: SocketAddr, from: u8, token: Option<&str>) -> (Player, bool, View) {
    Player::hello_with_status(ws_from(addr, local(from)).await, token).await
}

/// The `error` the next message must be, with its `retry_after_ms`.
async fn error_of(ws: &mut crate::client::Client) -> (ErrorCode, Option<u64>) {
    match next_message(ws).await {
        ServerMessage::Error {
            code,
            retry_after_ms,
            ..
        } => (code, retry_after_ms),
        other => panic!("expected an error, got {other:?}"),
    }
}

/// Reads until a `server_status` says new games are accepted again.
async fn until_accepting(player: &mut Player) {
    loop {
        if let ServerMessage::ServerStatus {
            accepting_games: true,
            ..
        } = player.next().await
        {
            return;
        }
    }
}

/// Asks `/metrics` every 20 ms until it counts `n` idle lobbies.
async fn until_idle_lobbies(addr: SocketAddr, n: u64) {
    let line = format!("wizard_idle_lobbies {n}\n");
    loop {
        let (_, metrics) = http(addr, "GET", "/metrics", &[]).await;
        if metrics.contains(&line) {
            return;
        }
        smol::Timer::after(std::time::Duration::from_millis(20)).await;
    }
}

/// Creates a lobby with two AI seats and starts its game.
async fn start_with_ai(player: &mut Player, name: &str) -> String {
    let code = player.create_lobby(name).await;
    player.add_ai(2).await;
    player.add_ai(3).await;
    player.start_game().await;
    code
}

/// Waits until `watcher`'s view of its lobby shows `id` offline (or gone).
async fn until_offline(watcher: &mut Player, id: &str) {
    watcher
        .state_where(|v| {
            v.lobby
                .as_ref()
                .is_some_and(|l| l.players.iter().all(|p| p.id != id || !p.connected))
        })
        .await;
}

#[test]
fn at_max_sessions_a_new_player_evicts_a_session_that_holds_no_running_game() {
    let server = TestServer::start(&[("MAX_SESSIONS", "4"), ("AI_MOVE_DELAY", "60")]);
    let addr = server.addr;
    bounded(10, async {
        // Wes hosts a running game with Ann in it; Ann leaves: she keeps her seat.
        let (mut wes, ..) = hello_from(addr, 2, None).await;
        let (mut ann, ..) = hello_from(addr, 3, None).await;
        let code = wes.create_lobby("Wes").await;
        ann.join_lobby(&code, "Ann").await;
        wes.add_ai(3).await;
        wes.start_game().await;
        let ann_id = ann.id.clone();
        drop(ann);
        until_offline(&mut wes, &ann_id).await;
        // Bob leaves a waiting lobby Cy stays in: his session holds no running game.
        let (mut bob, ..) = hello_from(addr, 4, None).await;
        let (mut cy, ..) = hello_from(addr, 5, None).await;
        let code = bob.create_lobby("Bob").await;
        cy.join_lobby(&code, "Cy").await;
        let bob_id = bob.id.clone();
        drop(bob);
        until_offline(&mut cy, &bob_id).await;
        // Four sessions: a new player takes Bob's place...
        let (new, ..) = hello_from(addr, 6, None).await;
        assert_eq!(new.id.len(), 12);
        let view = cy
            .state_where(|v| v.lobby.as_ref().is_some_and(|l| l.players.len() == 1))
            .await;
        assert!(view.lobby.unwrap().players.iter().all(|p| p.id != bob_id));
        // ...and the next one is refused: Ann's seat in a running game is kept.
        let mut late = ws_from(addr, local(7)).await;
        send(
            &mut late,
            &ClientMessage::Hello {
                token: None,
                deltas: false,
                profile_key: None,
            },
        )
        .await;
        assert_eq!(error_of(&mut late).await.0, ErrorCode::Busy);
        assert_eq!(close_code(&mut late).await, 1013);
    });
}

#[test]
fn games_left_by_everyone_go_dormant_free_their_slot_and_wake_for_their_player() {
    let server = TestServer::start(&[
        ("MAX_ACTIVE_GAMES", "2"),
        ("ABANDONED_GAME_TTL", "0.3"),
        ("AI_MOVE_DELAY", "0"),
        ("TRICK_PAUSE", "0"),
    ]);
    let addr = server.addr;
    bounded(15, async {
        let (mut ann, ..) = hello_from(addr, 2, None).await;
        let (mut bob, ..) = hello_from(addr, 3, None).await;
        start_with_ai(&mut ann, "Ann").await;
        start_with_ai(&mut bob, "Bob").await;
        let (mut wes, accepting, _) = hello_from(addr, 4, None).await;
        assert!(!accepting, "MAX_ACTIVE_GAMES is full");
        wes.send(ClientMessage::CreateLobby {
            name: "Wes".into(),
            public: false,
        })
        .await;
        assert_eq!(wes.next_error().await, ErrorCode::Busy);
        let ann_token = ann.token.clone();
        drop(ann);
        drop(bob);
        // Once a game is dormant its slot is free: Wes is told, and plays.
        until_accepting(&mut wes).await;
        start_with_ai(&mut wes, "Wes").await;
        // Ann comes back to her game, which runs again (past MAX_ACTIVE_GAMES if need
        // be) and goes on from where it stood: she makes two moves.
        let (mut ann, _, mut view) = hello_from(addr, 2, Some(&ann_token)).await;
        let lobby = view.lobby.clone().unwrap();
        assert_eq!(lobby.status, LobbyStatus::Playing);
        let mut played = 0;
        while played < 2 {
            match my_move(&view) {
                Some(action) => {
                    ann.send(ClientMessage::Action { action }).await;
                    view = ann.next_state_no_error().await;
                    played += 1;
                }
                None => view = ann.next_state().await,
            }
        }
        let (_, health) = http(addr, "GET", "/health", &[]).await;
        assert!(health.contains(r#""active_games":2"#), "{health}");
    });
}

#[test]
fn idle_lobbies_give_way_at_max_lobbies_and_health_says_when_it_is_full() {
    // The load level held at normal: on a loaded test machine an overloaded probe
    // would also say "not accepting", and this test is about MAX_LOBBIES alone.
    let server = TestServer::start(&[("MAX_LOBBIES", "2"), ("LOAD_FORCE_LEVEL", "normal")]);
    let addr = server.addr;
    bounded(10, async {
        let (mut ann, ..) = hello_from(addr, 2, None).await;
        let (mut bob, ..) = hello_from(addr, 3, None).await;
        let code = ann.create_lobby("Ann").await;
        bob.create_lobby("Bob").await;
        // /health and create_lobby agree: MAX_LOBBIES is full.
        let (_, health) = http(addr, "GET", "/health", &[]).await;
        assert!(health.contains(r#""accepting_games":false"#), "{health}");
        let (mut wes, accepting, _) = hello_from(addr, 4, None).await;
        assert!(!accepting);
        wes.send(ClientMessage::CreateLobby {
            name: "Wes".into(),
            public: false,
        })
        .await;
        assert_eq!(wes.next_error().await, ErrorCode::Busy);
        // Ann and then Bob leave: their lobbies are idle, which a new lobby may replace.
        // One after the other as the server sees it (two sockets closed together may
        // be read in either order): Ann's lobby is idle once Wes is told new games are
        // accepted again, Bob's once /metrics counts two idle lobbies.
        drop(ann);
        until_accepting(&mut wes).await;
        drop(bob);
        until_idle_lobbies(addr, 2).await;
        wes.create_lobby("Wes").await;
        // Ann's lobby, idle longest, gave way.
        let (mut cy, ..) = hello_from(addr, 5, None).await;
        cy.send(ClientMessage::JoinLobby {
            code,
            name: "Cy".into(),
        })
        .await;
        assert_eq!(cy.next_error().await, ErrorCode::NotFound);
    });
}

#[test]
fn lobbies_are_capped_per_address() {
    let server = TestServer::start(&[("MAX_LOBBIES_PER_IP", "1")]);
    let addr = server.addr;
    bounded(10, async {
        let (mut ann, ..) = hello_from(addr, 2, None).await;
        let (mut bob, ..) = hello_from(addr, 2, None).await;
        let (mut cy, ..) = hello_from(addr, 3, None).await;
        ann.create_lobby("Ann").await;
        bob.send(ClientMessage::CreateLobby {
            name: "Bob".into(),
            public: false,
        })
        .await;
        assert_eq!(bob.next_error().await, ErrorCode::Busy);
        cy.create_lobby("Cy").await;
    });
}

#[test]
fn reconnects_are_rate_limited_per_address_but_a_running_game_player_gets_in() {
    let server = TestServer::start(&[
        ("RECONNECT_RATE", "1"),
        ("RECONNECT_BURST", "3"),
        ("AI_MOVE_DELAY", "60"),
    ]);
    let addr = server.addr;
    bounded(10, async {
        let (mut ann, ..) = hello_from(addr, 2, None).await;
        start_with_ai(&mut ann, "Ann").await;
        let token = ann.token.clone();
        let _b = hello_from(addr, 2, None).await;
        let _c = hello_from(addr, 2, None).await;
        // The fourth connection from this address in a minute is a new player: refused.
        let mut d = ws_from(addr, local(2)).await;
        send(
            &mut d,
            &ClientMessage::Hello {
                token: None,
                deltas: false,
                profile_key: None,
            },
        )
        .await;
        let (code, retry_after_ms) = error_of(&mut d).await;
        assert_eq!(code, ErrorCode::Busy);
        assert!(
            retry_after_ms.is_some_and(|ms| ms > 0),
            "{retry_after_ms:?}"
        );
        assert_eq!(close_code(&mut d).await, 1013);
        // Ann, back to her running game, is let in over the rate.
        drop(ann);
        let (_, _, view) = hello_from(addr, 2, Some(&token)).await;
        assert_eq!(view.lobby.unwrap().status, LobbyStatus::Playing);
        // Another address is not affected.
        hello_from(addr, 3, None).await;
    });
}

#[test]
fn unknown_join_codes_are_rate_limited_per_address() {
    let server = TestServer::start(&[("JOIN_FAIL_RATE", "1"), ("JOIN_FAIL_BURST", "3")]);
    let addr = server.addr;
    bounded(10, async {
        let (mut ann, ..) = hello_from(addr, 2, None).await;
        let code = ann.create_lobby("Ann").await;
        let (mut guesser, ..) = hello_from(addr, 3, None).await;
        let guess = |code: &str| ClientMessage::JoinLobby {
            code: code.into(),
            name: "Guess".into(),
        };
        for _ in 0..3 {
            guesser.send(guess("ZZZZZZ")).await;
            assert_eq!(error_of(&mut guesser.ws).await.0, ErrorCode::NotFound);
        }
        // Out of guesses: even the right code tells nothing now.
        guesser.send(guess(&code)).await;
        let (error, retry_after_ms) = error_of(&mut guesser.ws).await;
        assert_eq!(error, ErrorCode::RateLimited);
        assert!(
            retry_after_ms.is_some_and(|ms| ms > 0),
            "{retry_after_ms:?}"
        );
        // Another address joins with the code.
        let (mut cy, ..) = hello_from(addr, 4, None).await;
        cy.join_lobby(&code, "Cy").await;
    });
}
