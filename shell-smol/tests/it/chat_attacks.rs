//! Abuse of spectating and chat against the real server over loopback websockets
//! (PROTOCOL.md 6.4): guessing codes with `spectate`, renewing the chat budget by
//! reconnecting, a chat burst to a seated player on a slow link, spectate/leave churn and
//! the history replay, and a removed player coming straight back. Every attacker comes
//! from its own 127.0.0.x address; each test is bounded in messages and in time, and
//! waits for answers, never for time.

use std::net::{IpAddr, SocketAddr, TcpStream};

use async_io::Async;
use async_tungstenite::tungstenite::client::IntoClientRequest;
use wizard_core::vocabulary::wire::{ClientMessage, ErrorCode, ServerMessage};

use crate::client::{Client, Player, TestServer, View, bounded, local, ws_from};

/// Settings every test here starts from: no message limiter in the way.
const BASE: &[(&str, &str)] = &[
    ("MESSAGE_RATE", "1000"),
    ("MESSAGE_BURST", "1000"),
    ("RECONNECT_RATE", "1000"),
    ("RECONNECT_BURST", "1000"),
];

fn start(pairs: &[(&str, &str)]) -> TestServer {
    let mut all = BASE.to_vec();
    all.extend_from_slice(pairs);
    TestServer::start(&all)
}

/// A player who said hello from `from`.
async fn player_from(addr: SocketAddr, from: IpAddr) -> Player {
    Player::hello_on(ws_from(addr, from).await, None).await.0
}

/// A player websocket from `from` whose kernel receive buffer is held at about `bytes`
/// (no autotuning): a client on a slow link, while it does not read.
async fn ws_small_window(addr: SocketAddr, from: IpAddr, bytes: usize) -> Client {
    use rustix::net::{AddressFamily, SocketType, bind, connect, socket, sockopt};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    sockopt::set_socket_recv_buffer_size(&fd, bytes).unwrap();
    bind(&fd, &SocketAddr::new(from, 0)).unwrap();
    connect(&fd, &addr).unwrap();
    let tcp = Async::new(TcpStream::from(fd)).unwrap();
    let request = format!("ws://{addr}/ws").into_client_request().unwrap();
    let (ws, _) = async_tungstenite::client_async(request, tcp).await.unwrap();
    ws
}

/// The answer to a `spectate`: the state that shows the lobby, or the error's code.
async fn spectate(player: &mut Player, code: &str) -> Result<View, (ErrorCode, Option<u64>)> {
    player
        .send(ClientMessage::Spectate {
            code: code.into(),
            name: "Zoe".into(),
        })
        .await;
    loop {
        match player.next().await {
            ServerMessage::State {
                lobby: Some(lobby),
                game,
                events,
            } => {
                return Ok(View {
                    lobby: Some(lobby),
                    game,
                    events,
                });
            }
            ServerMessage::Error {
                code,
                retry_after_ms,
                ..
            } => return Err((code, retry_after_ms)),
            _ => {}
        }
    }
}

/// The answer to a `join_lobby`: the state that shows the player seated, or the
/// error's code.
async fn join(player: &mut Player, code: &str, name: &str) -> Result<View, ErrorCode> {
    player
        .send(ClientMessage::JoinLobby {
            code: code.into(),
            name: name.into(),
        })
        .await;
    loop {
        match player.next().await {
            ServerMessage::State {
                lobby: Some(lobby),
                game,
                events,
            } if lobby.players.iter().any(|p| p.id == player.id) => {
                return Ok(View {
                    lobby: Some(lobby),
                    game,
                    events,
                });
            }
            ServerMessage::Error { code, .. } => return Err(code),
            _ => {}
        }
    }
}

/// Leaves and reads up to the empty state.
async fn leave(player: &mut Player) {
    player.send(ClientMessage::LeaveLobby).await;
    player.state_where(|v| v.lobby.is_none()).await;
}

/// Sends a chat line and reads up to its answer: true when it came back as a `chat`
/// from `player` with `text`, false on `rate_limited` (which must say when to retry).
async fn chat(player: &mut Player, text: &str) -> bool {
    player.send(ClientMessage::Chat { text: text.into() }).await;
    loop {
        match player.next().await {
            ServerMessage::Chat { from, text: t, .. } if from == player.id && t == text => {
                return true;
            }
            ServerMessage::Error {
                code,
                retry_after_ms,
                ..
            } => {
                assert_eq!(code, ErrorCode::RateLimited);
                assert!(retry_after_ms.is_some_and(|ms| ms > 0), "no retry_after_ms");
                return false;
            }
            _ => {}
        }
    }
}

/// The host sends `end` and reads up to it: the chat lines and `state`s it received
/// before (the lines by sender).
async fn drain_until_end(host: &mut Player) -> (Vec<(String, String)>, usize) {
    host.send(ClientMessage::Chat { text: "end".into() }).await;
    let (mut lines, mut states) = (Vec::new(), 0);
    loop {
        match host.next().await {
            ServerMessage::Chat { from, text, .. } if from == host.id && text == "end" => {
                return (lines, states);
            }
            ServerMessage::Chat { from, text, .. } => lines.push((from, text)),
            ServerMessage::State { .. } => states += 1,
            ServerMessage::Error { code, message, .. } => {
                panic!("host refused: {code:?} {message}")
            }
            _ => {}
        }
    }
}

/// A host at 127.0.0.1 with a lobby; its code.
async fn host_with_lobby(addr: SocketAddr) -> (Player, String) {
    let mut host = player_from(addr, local(1)).await;
    let code = host.create_lobby("Ann").await;
    (host, code)
}

#[test]
fn guessing_codes_with_spectate_spends_the_join_fail_budget() {
    let server = start(&[("JOIN_FAIL_BURST", "5"), ("JOIN_FAIL_RATE", "1")]);
    let addr = server.addr;
    bounded(30, async {
        let (_host, code) = host_with_lobby(addr).await;
        let mut guesser = player_from(addr, local(2)).await;
        let (mut not_found, mut limited) = (0, 0);
        for i in 0..40u32 {
            let guess = format!(
                "ZZZZ{}{}",
                (b'2' + (i % 8) as u8) as char,
                (b'A' + (i / 8) as u8) as char
            );
            assert_ne!(guess, code);
            match spectate(&mut guesser, &guess).await {
                Err((ErrorCode::NotFound, _)) => not_found += 1,
                Err((ErrorCode::RateLimited, Some(ms))) if ms > 0 => limited += 1,
                other => panic!("guess {guess}: {:?}", other.map(|_| "watching")),
            }
        }
        assert_eq!(
            (not_found, limited),
            (5, 35),
            "spectate bypassed JOIN_FAIL_RATE"
        );
        // Out of guesses, the real code answers like a wrong one; join_lobby too.
        let real = spectate(&mut guesser, &code).await;
        assert!(
            matches!(real, Err((ErrorCode::RateLimited, _))),
            "the real code"
        );
        guesser
            .send(ClientMessage::JoinLobby {
                code: code.clone(),
                name: "Zoe".into(),
            })
            .await;
        assert_eq!(guesser.next_error().await, ErrorCode::RateLimited);
        // Another address watches.
        let mut other = player_from(addr, local(3)).await;
        assert!(spectate(&mut other, &code).await.is_ok());
    });
}

#[test]
fn reconnecting_does_not_renew_the_chat_budget() {
    let server = start(&[
        ("CHAT_RATE", "5"),
        ("CHAT_IP_BURST", "8"),
        ("CHAT_IP_RATE", "1"),
        ("SPECTATE_BURST", "100"),
    ]);
    let addr = server.addr;
    bounded(30, async {
        let (mut host, code) = host_with_lobby(addr).await;
        // Four sessions in a row from one address, each within its own CHAT_RATE.
        let mut sent = 0;
        let mut attackers = Vec::new();
        for k in 0..4 {
            let mut spammer = player_from(addr, local(4)).await;
            spectate(&mut spammer, &code).await.expect("watching");
            for i in 0..5 {
                if chat(&mut spammer, &format!("spam {k} {i}")).await {
                    sent += 1;
                }
            }
            attackers.push(spammer.id.clone());
            drop(spammer);
        }
        assert_eq!(sent, 8, "CHAT_IP_BURST lines in all, not 4 x CHAT_RATE");
        let (lines, _) = drain_until_end(&mut host).await;
        let spam = lines
            .iter()
            .filter(|(from, _)| attackers.contains(from))
            .count();
        assert_eq!(spam, 8, "the seat received {spam} lines");
    });
}

#[test]
fn spectators_from_two_addresses_share_one_lobby_budget_and_the_seats_keep_theirs() {
    let server = start(&[
        ("CHAT_RATE", "100"),
        ("CHAT_IP_BURST", "100"),
        ("CHAT_LOBBY_BURST", "10"),
        ("CHAT_LOBBY_RATE", "1"),
    ]);
    let addr = server.addr;
    bounded(30, async {
        let (mut host, code) = host_with_lobby(addr).await;
        let mut sent = 0;
        for k in 0..4u8 {
            let mut watcher = player_from(addr, local(5 + k % 2)).await;
            spectate(&mut watcher, &code).await.expect("watching");
            for i in 0..10 {
                if chat(&mut watcher, &format!("w{k} {i}")).await {
                    sent += 1;
                }
            }
        }
        assert_eq!(sent, 10, "the lobby's spectators share CHAT_LOBBY_BURST");
        let (lines, _) = drain_until_end(&mut host).await;
        assert_eq!(lines.len(), 10);
        // The seat still chats.
        assert!(chat(&mut host, "the host speaks").await);
    });
}

#[test]
fn a_chat_burst_never_costs_a_seated_player_on_a_slow_link_its_connection() {
    const LINES: usize = 400;
    let server = start(&[
        ("CHAT_RATE", "1000"),
        ("CHAT_IP_BURST", "1000"),
        ("CHAT_IP_RATE", "100000"),
        ("CHAT_LOBBY_BURST", "1000"),
        ("CHAT_LOBBY_RATE", "100000"),
        ("SOCKET_SEND_BUFFER_BYTES", "4096"),
        ("OUTBOUND_QUEUE_MESSAGES", "64"),
        ("OUTBOUND_QUEUE_CHAT_MESSAGES", "32"),
    ]);
    let addr = server.addr;
    bounded(60, async {
        let (mut host, code) = host_with_lobby(addr).await;
        // Bo sits at the table behind a small receive window.
        let ws = ws_small_window(addr, local(7), 4096).await;
        let (mut bo, _) = Player::hello_on(ws, None).await;
        bo.join_lobby(&code, "Bo").await;
        host.state_where(|v| v.lobby.as_ref().is_some_and(|l| l.players.len() == 2))
            .await;
        // A spectator sends its lines one by one (each answered), while Bo reads
        // nothing: 400 lines of about 300 bytes, far more than Bo's window and queue.
        let mut spammer = player_from(addr, local(8)).await;
        spectate(&mut spammer, &code).await.expect("watching");
        let pad = "x".repeat(190);
        for i in 0..LINES {
            assert!(
                chat(&mut spammer, &format!("{i:03} {pad}")).await,
                "line {i}"
            );
        }
        // A change of the table after the burst: Bo must still get it.
        host.send(ClientMessage::AddAi { level: None }).await;
        // Now Bo reads: every line arrived or was counted in a gap note, then the state.
        let (mut lines, mut missed) = (0usize, 0usize);
        loop {
            match bo.next().await {
                ServerMessage::Chat { from, .. } if from == spammer.id => lines += 1,
                ServerMessage::ChatGap { missed: m } => missed += m as usize,
                ServerMessage::State {
                    lobby: Some(lobby), ..
                } if lobby.players.len() == 3 => {
                    assert!(lobby.players.iter().any(|p| p.id == bo.id && p.connected));
                    break;
                }
                ServerMessage::Error { code, message, .. } => panic!("{code:?} {message}"),
                _ => {}
            }
        }
        println!("slow seat: {lines} lines read, {missed} missed, connection kept");
        assert!(
            missed > 0,
            "Bo read all {lines} lines: its link was not slow"
        );
        assert_eq!(lines + missed, LINES, "{lines} lines and {missed} missed");
        // Bo is still at the table and its connection works both ways.
        assert!(chat(&mut bo, "still here").await);
    });
}

#[test]
fn spectate_and_leave_churn_from_one_address_is_budgeted() {
    let server = start(&[("SPECTATE_BURST", "3"), ("SPECTATE_RATE", "1")]);
    let addr = server.addr;
    bounded(30, async {
        let (mut host, code) = host_with_lobby(addr).await;
        let mut churner = player_from(addr, local(9)).await;
        let (mut watched, mut limited) = (0, 0);
        for _ in 0..20 {
            match spectate(&mut churner, &code).await {
                Ok(_) => {
                    watched += 1;
                    leave(&mut churner).await;
                }
                Err((ErrorCode::RateLimited, Some(ms))) if ms > 0 => limited += 1,
                Err(e) => panic!("{e:?}"),
            }
        }
        assert_eq!((watched, limited), (3, 17));
        // Six changes of the list; the members see them together at most twice a
        // second (SPECTATORS_STATE_INTERVAL), never one state per change of 20.
        let (_, states) = drain_until_end(&mut host).await;
        assert!((1..=6).contains(&states), "{states} states");
    });
}

#[test]
fn the_history_replay_is_bounded_in_bytes_and_per_address() {
    let server = start(&[
        ("CHAT_RATE", "100"),
        ("CHAT_IP_BURST", "100"),
        ("CHAT_HISTORY_BYTES", "4096"),
        ("CHAT_REPLAY_BURST", "2"),
        ("CHAT_REPLAY_RATE", "1"),
    ]);
    let addr = server.addr;
    bounded(30, async {
        let (mut host, code) = host_with_lobby(addr).await;
        let pad = "x".repeat(190);
        for i in 0..50 {
            assert!(chat(&mut host, &format!("{i:02} {pad}")).await);
        }
        let mut watcher = player_from(addr, local(10)).await;
        for round in 0..3 {
            spectate(&mut watcher, &code).await.expect("watching");
            // The replay follows the state; the leave's empty state ends it.
            watcher.send(ClientMessage::LeaveLobby).await;
            let (mut bytes, mut lines, mut missed, mut newest) = (0, 0, 0, String::new());
            loop {
                match watcher.next().await {
                    ServerMessage::Chat { text, .. } => {
                        bytes += text.len();
                        lines += 1;
                        newest = text;
                    }
                    ServerMessage::ChatGap { missed: m } => missed += m,
                    ServerMessage::State { lobby: None, .. } => break,
                    _ => {}
                }
            }
            println!("replay {round}: {lines} lines, {bytes} bytes of text, {missed} missed");
            if round < 2 {
                assert!(
                    lines > 0 && bytes <= 4096,
                    "round {round}: {lines} lines, {bytes} B"
                );
                assert_eq!(lines + missed as usize, 50, "round {round}");
                assert!(newest.starts_with("49 "), "the newest lines: {newest:.3}");
            } else {
                assert_eq!(
                    (lines, missed),
                    (0, 50),
                    "past CHAT_REPLAY_BURST: the note only"
                );
            }
        }
    });
}

#[test]
fn a_removed_player_cannot_come_straight_back() {
    let server = start(&[("REMOVED_PLAYER_TTL", "600")]);
    let addr = server.addr;
    bounded(30, async {
        let (mut host, code) = host_with_lobby(addr).await;
        let mut bo = player_from(addr, local(11)).await;
        bo.join_lobby(&code, "Bo").await;
        host.send(ClientMessage::RemovePlayer {
            player_id: bo.id.clone(),
        })
        .await;
        assert_eq!(bo.next_error().await, ErrorCode::Removed);
        bo.state_where(|v| v.lobby.is_none()).await;
        let rejoined = join(&mut bo, &code, "Bo").await.map(|_| "seated");
        assert_eq!(rejoined, Err(ErrorCode::NotAllowed), "re-join");
        let watched = spectate(&mut bo, &code).await.map(|_| "watching");
        assert_eq!(watched.map_err(|e| e.0), Err(ErrorCode::NotAllowed));
        // A fresh session from the same address fares no better.
        let mut again = player_from(addr, local(11)).await;
        let joined = join(&mut again, &code, "Bo").await.map(|_| "seated");
        assert_eq!(joined, Err(ErrorCode::NotAllowed), "new session");
        // Someone else joins.
        let mut cy = player_from(addr, local(12)).await;
        let view = join(&mut cy, &code, "Cy")
            .await
            .expect("someone else joins");
        let names: Vec<_> = view
            .lobby
            .unwrap()
            .players
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(names, ["Ann", "Cy"]);
    });
}

#[test]
fn spectate_churn_from_many_addresses_reaches_the_members_twice_a_second_at_most() {
    let server = start(&[("SPECTATORS_STATE_INTERVAL", "0.5")]);
    let addr = server.addr;
    bounded(30, async {
        let (mut host, code) = host_with_lobby(addr).await;
        let started = std::time::Instant::now();
        // Ten addresses, each within its SPECTATE_BURST: 60 changes of the list.
        for k in 0..10u8 {
            let mut churner = player_from(addr, local(20 + k)).await;
            for _ in 0..3 {
                spectate(&mut churner, &code).await.expect("watching");
                leave(&mut churner).await;
            }
        }
        let (_, states) = drain_until_end(&mut host).await;
        let intervals = started.elapsed().as_secs_f64() / 0.5;
        println!("60 changes of the list: {states} states to the host in {intervals:.2} intervals");
        assert!(
            (states as f64) <= intervals.ceil() + 1.0,
            "{states} states in {intervals:.1} intervals of 0.5 s"
        );
        assert!(states >= 1, "the members never saw a spectator");
    });
}
