//! Connection limits, floods and shutdown over real sockets.

use std::time::{Duration, Instant};

use async_tungstenite::tungstenite::Message;
use futures_lite::io::AsyncWriteExt;
use wizard_core::vocabulary::wire::{ClientMessage, ErrorCode, ServerMessage, decode_server};

use crate::client::{
    Player, TestServer, bounded, client_frame, close_code, http, local, metric, my_move, next_text,
    raw_hello, send, tcp_from, vm_rss_kib, ws, ws_from,
};

fn error_code(text: &str) -> Option<ErrorCode> {
    match decode_server(text) {
        Ok(ServerMessage::Error { code, .. }) => Some(code),
        _ => None,
    }
}

#[test]
fn the_connection_past_the_per_ip_limit_gets_busy_then_1013() {
    let server = TestServer::start(&[("MAX_CONNECTIONS_PER_IP", "2")]);
    bounded(10, async {
        // Admitted connections say hello first: a finished handshake does not mean the
        // core has counted the connection yet, and admission is in the core's order.
        let _a = Player::hello(server.addr, None).await;
        let _b = Player::hello(server.addr, None).await;
        let mut c = ws(server.addr, "/ws", &[]).await.unwrap();
        assert_eq!(error_code(&next_text(&mut c).await), Some(ErrorCode::Busy));
        assert_eq!(close_code(&mut c).await, 1013);
    });
}

#[test]
fn a_flood_gets_rate_limited_then_1008() {
    let server = TestServer::start(&[
        ("MESSAGE_RATE", "1"),
        ("MESSAGE_BURST", "1"),
        ("MAX_RATE_VIOLATIONS", "5"),
    ]);
    bounded(10, async {
        let mut client = ws(server.addr, "/ws", &[]).await.unwrap();
        for _ in 0..20 {
            let hello = Message::text(r#"{"type":"hello","token":null}"#);
            if client.send(hello).await.is_err() {
                break;
            }
        }
        let mut limited = false;
        let code = loop {
            match futures_lite::StreamExt::next(&mut client).await {
                Some(Ok(Message::Text(text))) => {
                    limited |= error_code(text.as_str()) == Some(ErrorCode::RateLimited)
                }
                Some(Ok(Message::Close(frame))) => break frame.map_or(0, |f| u16::from(f.code)),
                Some(Ok(_)) => {}
                _ => break 0,
            }
        };
        assert!(limited, "no rate_limited error before the close");
        assert_eq!(code, 1008);
    });
}

#[test]
fn shutdown_closes_everyone_with_1001() {
    let server = TestServer::start(&[]);
    bounded(10, async {
        let mut client = ws(server.addr, "/ws", &[]).await.unwrap();
        client
            .send(Message::text(r#"{"type":"hello","token":null}"#))
            .await
            .unwrap();
        next_text(&mut client).await;
        server.shutdown();
        assert_eq!(close_code(&mut client).await, 1001);
    });
    assert!(server.join(5), "run_on did not return after shutdown");
}

#[test]
fn per_ip_limits_count_each_address_separately() {
    let server = TestServer::start(&[("MAX_CONNECTIONS_PER_IP", "2")]);
    let addr = server.addr;
    bounded(10, async {
        let _a = Player::hello_on(ws_from(addr, local(2)).await, None).await;
        let _b = Player::hello_on(ws_from(addr, local(2)).await, None).await;
        let mut c = ws_from(addr, local(2)).await;
        assert_eq!(error_code(&next_text(&mut c).await), Some(ErrorCode::Busy));
        assert_eq!(close_code(&mut c).await, 1013);
        // Other addresses are not affected.
        for n in [3, 4] {
            let ws = ws_from(addr, local(n)).await;
            let (player, _) = Player::hello_on(ws, None).await;
            assert_eq!(player.id.len(), 12);
        }
        let ws = ws_from(addr, local(3)).await;
        Player::hello_on(ws, None).await;
    });
}

#[test]
fn lobby_creation_is_rate_limited_per_ip() {
    let server = TestServer::start(&[("LOBBY_CREATE_RATE", "2")]);
    let addr = server.addr;
    bounded(10, async {
        let (mut a, _) = Player::hello_on(ws_from(addr, local(2)).await, None).await;
        a.create_lobby("Ann").await;
        a.create_lobby("Ann").await;
        a.send(ClientMessage::CreateLobby {
            name: "Ann".into(),
            public: false,
        })
        .await;
        let ServerMessage::Error {
            code,
            retry_after_ms,
            ..
        } = a.next().await
        else {
            panic!("no error");
        };
        assert_eq!(code, ErrorCode::RateLimited);
        assert!(retry_after_ms.is_some_and(|ms| ms > 0));
        // Another connection from the same address shares the limit...
        let (mut b, _) = Player::hello_on(ws_from(addr, local(2)).await, None).await;
        b.send(ClientMessage::CreateLobby {
            name: "Bob".into(),
            public: false,
        })
        .await;
        assert_eq!(b.next_error().await, ErrorCode::RateLimited);
        // ...another address does not.
        let (mut c, _) = Player::hello_on(ws_from(addr, local(3)).await, None).await;
        c.create_lobby("Cy").await;
    });
}

#[test]
fn forced_overload_refuses_new_lobbies_but_not_joining_or_resuming() {
    let server = TestServer::start(&[("LOAD_FORCE_LEVEL", "overloaded")]);
    let addr = server.addr;
    bounded(10, async {
        let mut ws = ws(addr, "/ws", &[]).await.unwrap();
        let hello = r#"{"type":"hello","token":null}"#;
        ws.send(Message::text(hello)).await.unwrap();
        next_text(&mut ws).await; // welcome
        let status = decode_server(&next_text(&mut ws).await).unwrap();
        assert!(
            matches!(
                status,
                ServerMessage::ServerStatus {
                    accepting_games: false,
                    ..
                }
            ),
            "{status:?}"
        );
        drop(ws);
        let (mut a, _) = Player::hello(addr, None).await;
        a.send(ClientMessage::CreateLobby {
            name: "Ann".into(),
            public: false,
        })
        .await;
        assert_eq!(a.next_error().await, ErrorCode::Busy);
        // Joining is never refused for load: an unknown code is just not found.
        a.send(ClientMessage::JoinLobby {
            code: "ABCDEF".into(),
            name: "Ann".into(),
        })
        .await;
        assert_eq!(a.next_error().await, ErrorCode::NotFound);
        // Resuming a session works.
        let (again, _) = Player::hello(addr, Some(&a.token)).await;
        assert_eq!(again.id, a.id);
        let (_, health) = http(addr, "GET", "/health", &[]).await;
        assert!(health.contains(r#""load":"overloaded""#), "{health}");
        assert!(health.contains(r#""status":"ok""#), "{health}");
    });
}

#[test]
fn past_max_active_games_a_start_is_busy_while_running_games_and_joins_go_on() {
    let server = TestServer::start(&[
        ("MAX_ACTIVE_GAMES", "1"),
        ("AI_MOVE_DELAY", "0"),
        ("TRICK_PAUSE", "0"),
    ]);
    let addr = server.addr;
    bounded(10, async {
        let (mut a, _) = Player::hello(addr, None).await;
        let (mut b, _) = Player::hello(addr, None).await;
        let (mut c, _) = Player::hello(addr, None).await;
        a.create_lobby("Ann").await;
        let code_b = b.create_lobby("Bob").await;
        for host in [&mut a, &mut b] {
            host.add_ai(2).await;
            host.add_ai(3).await;
        }
        let mut view = a.start_game().await;
        b.send(ClientMessage::StartGame).await;
        assert_eq!(b.next_error().await, ErrorCode::Busy);
        // `b`'s lobby still takes players: joining is never refused for load.
        c.join_lobby(&code_b, "Cy").await;
        // The running game's moves work: `a` plays a few of its turns.
        let mut moves = 0;
        while moves < 5 {
            if let Some(action) = my_move(&view) {
                a.send(ClientMessage::Action { action }).await;
                moves += 1;
            }
            view = a.next_state().await;
        }
        let obs = &view.game.unwrap().observation;
        assert!(obs.round >= 2, "the game moved on: {obs:?}");
    });
}

#[test]
fn a_client_that_stops_reading_is_cut_and_costs_no_memory() {
    let server = TestServer::start(&[
        ("WRITE_TIMEOUT", "1"),
        ("MESSAGE_RATE", "1000000"),
        ("MESSAGE_BURST", "1000000"),
        ("MAX_RATE_VIOLATIONS", "1000000"),
    ]);
    let addr = server.addr;
    bounded(60, async {
        // The reader says hello over a raw socket, then only writes: every message it
        // sends makes the server answer with a `state` of its lobby (~400 bytes) and an
        // error, none of which it reads.
        let mut tcp = tcp_from(addr, local(5));
        raw_hello(&mut tcp).await;
        tcp.write_all(&client_frame(r#"{"type":"create_lobby","name":"Slow"}"#))
            .await
            .unwrap();
        let toggles: Vec<u8> = (0..1000)
            .flat_map(|i| {
                let text = format!(r#"{{"type":"set_options","hidden_bids":{}}}"#, i % 2 == 0);
                let mut bytes = client_frame(&text);
                bytes.extend(client_frame(r#"{"type":"start_game"}"#));
                bytes
            })
            .collect();
        let before = vm_rss_kib();
        let started = Instant::now();
        let mut sent = 0usize;
        // Write until the server cuts the connection.
        while tcp.write_all(&toggles).await.is_ok() {
            sent += 2000;
            assert!(started.elapsed() < Duration::from_secs(40), "never cut");
        }
        let grown = vm_rss_kib().saturating_sub(before);
        // Each pair of messages asked for about 500 bytes of answers. The server cuts
        // the reader once its queue overflows or a write blocks past WRITE_TIMEOUT, so
        // how much was asked before that depends on the kernel's socket buffers; what
        // must hold is that memory did not follow what was asked.
        let asked_kib = sent * 250 / 1024;
        println!("asked {asked_kib} KiB before the cut, RSS grew {grown} KiB");
        // With SO_SNDBUF bounded (SOCKET_SEND_BUFFER_BYTES) the cut comes after a few
        // MiB: still far more than any growth allowed below.
        assert!(asked_kib > 2 * 1024, "only {asked_kib} KiB asked for");
        assert!(
            grown < 16 * 1024 && grown < asked_kib as u64 / 2,
            "RSS grew {grown} KiB while {asked_kib} KiB were asked for"
        );
        let (_, health) = http(addr, "GET", "/health", &[]).await;
        assert!(health.contains(r#""connections":0"#), "{health}");
        let slow = crate::client::metric(addr, "wizard_slow_readers_total").await;
        assert_eq!(slow, 1.0);
    });
}

/// Says hello as a new player from `from` until the server has room (a refusal is
/// `busy` and 1013 at the hello while `MAX_CONNECTIONS` is taken).
async fn hello_when_room(addr: std::net::SocketAddr, from: std::net::IpAddr) -> Player {
    loop {
        let mut ws = ws_from(addr, from).await;
        send(
            &mut ws,
            &ClientMessage::Hello {
                token: None,
                deltas: false,
                profile_key: None,
            },
        )
        .await;
        let first = next_text(&mut ws).await;
        if error_code(&first) == Some(ErrorCode::Busy) {
            assert_eq!(close_code(&mut ws).await, 1013);
            continue;
        }
        let Ok(ServerMessage::Welcome {
            player_id, token, ..
        }) = decode_server(&first)
        else {
            panic!("neither welcome nor busy: {first}");
        };
        return Player {
            ws,
            id: player_id,
            token,
        };
    }
}

#[test]
fn a_player_of_a_running_game_gets_back_in_when_the_server_is_full() {
    let server = TestServer::start(&[("MAX_CONNECTIONS", "1"), ("AI_MOVE_DELAY", "60")]);
    let addr = server.addr;
    bounded(20, async {
        let (mut ann, _) = Player::hello_on(ws_from(addr, local(2)).await, None).await;
        ann.create_lobby("Ann").await;
        ann.add_ai(2).await;
        ann.add_ai(3).await;
        ann.start_game().await;
        let Player { ws, id, token } = ann;
        drop(ws);
        // Bob takes the only slot once Ann's connection is gone.
        let _bob = hello_when_room(addr, local(3)).await;
        // A new player is refused at its hello...
        let mut cat = ws_from(addr, local(4)).await;
        send(
            &mut cat,
            &ClientMessage::Hello {
                token: None,
                deltas: false,
                profile_key: None,
            },
        )
        .await;
        assert_eq!(
            error_code(&next_text(&mut cat).await),
            Some(ErrorCode::Busy)
        );
        assert_eq!(close_code(&mut cat).await, 1013);
        // ...but Ann, whose game is running, comes back past the limit.
        let (ann, view) = Player::hello_on(ws_from(addr, local(2)).await, Some(&token)).await;
        assert_eq!(ann.id, id, "same player");
        assert!(view.game.is_some(), "the game view is restored");
        assert_eq!(metric(addr, "wizard_resumed_past_cap_total").await, 1.0);
    });
}
