//! The bare room's tests, through its public API: the recorded game is a whole game of
//! real frames, `wizard-bench` plays full games against the room, and the room's
//! bounds hold (a frame over the cap, connections over the cap, bad settings).

#![allow(clippy::expect_used, clippy::unwrap_used)] // a failed expectation is a failed test

use std::net::SocketAddr;
use std::time::Duration;

use async_io::{Async, Timer};
use async_tungstenite::tungstenite::Message;
use futures_lite::{FutureExt, StreamExt};
use wizard_bench_room::script::{SEATS, record};
use wizard_bench_room::{Settings, bind, serve};
use wizard_core::vocabulary::game::Event;
use wizard_core::vocabulary::wire::peek;

/// Starts a room with `settings` (its `bind` replaced by a free loopback port) on a
/// thread of its own, for the rest of the test process.
fn start_room(mut settings: Settings) -> SocketAddr {
    settings.bind = SocketAddr::from(([127, 0, 0, 1], 0));
    let listener = bind(&settings).unwrap();
    let addr = listener.get_ref().local_addr().unwrap();
    let script = record().unwrap();
    std::thread::spawn(move || serve(listener, settings, script));
    addr
}

#[test]
fn the_recorded_game_is_a_whole_game_of_real_state_frames() {
    let script = record().unwrap();
    // A game of 4 players: 15 rounds, 4 bids and 4 x round cards each.
    assert_eq!(script.steps.len(), 15 * 4 + 4 * (1..=15).sum::<usize>());
    let mut bytes = 0;
    let mut frames = 0;
    for (n, step) in script.steps.iter().enumerate() {
        for (seat, seat_frames) in step.frames.iter().enumerate() {
            // Every seat is told of the move in a state frame carrying its event.
            let state = seat_frames
                .iter()
                .rev()
                .find(|t| peek::frame_type(t) == "state")
                .unwrap_or_else(|| panic!("move {n}: no state for seat {seat}"));
            let parts = peek::state_parts(state, "").unwrap();
            let events: Vec<Event> = serde_json::from_str(parts.events).unwrap();
            assert!(
                events.iter().any(|e| e.mover() == Some(step.mover)),
                "move {n}: seat {seat}'s state does not show seat {}'s move",
                step.mover
            );
            let you = peek::turn(parts.game).map(|(you, _)| usize::from(you));
            assert_eq!(you, Some(seat), "move {n}: seat {seat} got another's view");
            bytes += seat_frames.iter().map(|f| f.len()).sum::<usize>();
            frames += seat_frames.len();
        }
    }
    // The real server's state frames of a 4-player game: about 1.5 KB.
    let mean = bytes / frames;
    assert!((1200..=1800).contains(&mean), "{mean} bytes per frame");
    assert_eq!(script.joined.len(), SEATS - 1);
    assert!(script.created.iter().any(|f| f.contains(&script.code)));
}

#[test]
fn wizard_bench_plays_whole_games_of_four_humans_against_the_room() {
    let addr = start_room(Settings::default());
    let mut s = wizard_bench::Settings::new(addr);
    s.games = 2;
    s.humans = 4;
    s.seats = 4;
    s.pacing = wizard_bench::Pacing::Full;
    s.think = Duration::ZERO;
    s.ramp = Duration::from_millis(200);
    s.warmup = Duration::from_millis(300);
    s.duration = Duration::from_secs(3);
    let report = wizard_bench::run(s).unwrap();
    let st = &report.stats;
    assert_eq!(st.lobbies, 2);
    assert!(st.games_started >= 2, "{} games started", st.games_started);
    assert!(st.moves > 0);
    // Every move is a bot's, answered by a state that shows it.
    assert!(st.human_moves > 0 && st.human_moves <= st.moves + 8);
    assert_eq!(st.games_unscored, 0);
    assert_eq!(st.refusals.honest_total(), 0);
    assert!(st.errors.is_empty(), "{:?}", st.errors);
}

type Ws = async_tungstenite::WebSocketStream<Async<std::net::TcpStream>>;

/// A websocket to the room at `addr` (`None`: refused or cut during the handshake).
async fn connect(addr: SocketAddr) -> Option<Ws> {
    let tcp = Async::<std::net::TcpStream>::connect(addr).await.ok()?;
    let url = format!("ws://{addr}/ws");
    async_tungstenite::client_async(url, tcp)
        .await
        .ok()
        .map(|(ws, _)| ws)
}

/// Whether the room ends the connection (a close frame, an error or the end) within 5 s.
async fn ends(ws: &mut Ws) -> bool {
    async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return true,
                Some(Ok(_)) => {}
            }
        }
    }
    .or(async {
        Timer::after(Duration::from_secs(5)).await;
        false
    })
    .await
}

#[test]
fn a_frame_over_the_cap_ends_the_connection() {
    let settings = Settings {
        frame_bytes_max: 1000,
        ..Settings::default()
    };
    let addr = start_room(settings);
    smol::block_on(async {
        // At the cap: served.
        let mut ws = connect(addr).await.unwrap();
        let hello = format!("{{\"type\":\"hello\",\"pad\":\"{}\"}}", "x".repeat(975));
        assert_eq!(hello.len(), 1000);
        ws.send(Message::text(hello)).await.unwrap();
        let first = ws.next().await.unwrap().unwrap();
        assert!(
            first
                .to_text()
                .unwrap()
                .starts_with("{\"type\":\"welcome\"")
        );
        // One byte over: cut.
        let hello = format!("{{\"type\":\"hello\",\"pad\":\"{}\"}}", "x".repeat(976));
        ws.send(Message::text(hello)).await.unwrap();
        assert!(ends(&mut ws).await);
    });
}

#[test]
fn connections_over_the_cap_are_closed_at_accept() {
    let settings = Settings {
        connections_max: 2,
        ..Settings::default()
    };
    let addr = start_room(settings);
    smol::block_on(async {
        let mut held = Vec::new();
        for _ in 0..2 {
            let mut ws = connect(addr).await.unwrap();
            // Served: hello is answered.
            ws.send(Message::text("{\"type\":\"hello\"}"))
                .await
                .unwrap();
            assert!(
                ws.next()
                    .await
                    .unwrap()
                    .unwrap()
                    .to_text()
                    .unwrap()
                    .contains("welcome")
            );
            held.push(ws);
        }
        let third = async { Some(connect(addr).await.is_none()) }
            .or(async {
                Timer::after(Duration::from_secs(5)).await;
                None
            })
            .await;
        assert_eq!(
            third,
            Some(true),
            "the third connection was not closed at once"
        );
    });
}

#[test]
fn settings_are_read_and_bad_values_refused() {
    /// (connections, frame bytes, queued frames), or the refused setting's name.
    type Expected = Result<(usize, usize, usize), &'static str>;
    let cases: &[(&[(&str, &str)], Expected)] = &[
        (&[], Ok((20_000, 4096, 64))),
        (
            &[("ROOM_MAX_CONNECTIONS", "10"), ("ROOM_QUEUE_FRAMES", "")],
            Ok((10, 4096, 64)),
        ),
        (
            &[("ROOM_MAX_FRAME_BYTES", "2048"), ("ROOM_QUEUE_FRAMES", "8")],
            Ok((20_000, 2048, 8)),
        ),
        (
            &[("ROOM_MAX_CONNECTIONS", "0")],
            Err("ROOM_MAX_CONNECTIONS"),
        ),
        (
            &[("ROOM_MAX_FRAME_BYTES", "big")],
            Err("ROOM_MAX_FRAME_BYTES"),
        ),
        (&[("ROOM_QUEUE_FRAMES", "-1")], Err("ROOM_QUEUE_FRAMES")),
        (&[("BIND", "nowhere")], Err("BIND")),
    ];
    for (pairs, expected) in cases {
        let got = Settings::from_pairs(pairs.iter().copied())
            .map(|s| (s.connections_max, s.frame_bytes_max, s.queue_frames))
            .map_err(|e| e.name);
        assert_eq!(&got, expected, "{pairs:?}");
    }
}

/// docs/OPERATIONS.md lists every setting the room reads.
#[test]
fn operations_doc_lists_the_room_settings() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/OPERATIONS.md"
    ))
    .unwrap();
    for name in [
        "BIND",
        "ROOM_MAX_CONNECTIONS",
        "ROOM_MAX_FRAME_BYTES",
        "ROOM_QUEUE_FRAMES",
    ] {
        assert!(
            doc.contains(&format!("| `{name}` | bench room |")),
            "docs/OPERATIONS.md has no bench room row for {name}"
        );
    }
}
