//! Websocket frames end to end: hello/welcome, oversized and binary frames, keepalive.

use std::net::TcpStream;

use async_io::Async;
use async_tungstenite::tungstenite::Message;
use futures_lite::io::{AsyncReadExt, AsyncWriteExt};
use futures_lite::{FutureExt, StreamExt};
use wizard_core::vocabulary::wire::{ServerMessage, decode_server};

use crate::client::{TestServer, bounded, close_code, next_text, ws};

#[test]
fn hello_gets_welcome_status_and_state() {
    let server = TestServer::start(&[]);
    bounded(10, async {
        let mut client = ws(server.addr, "/ws", &[]).await.unwrap();
        client
            .send(Message::text(r#"{"type":"hello","token":null}"#))
            .await
            .unwrap();
        let welcome = decode_server(&next_text(&mut client).await).unwrap();
        assert!(
            matches!(welcome, ServerMessage::Welcome { .. }),
            "{welcome:?}"
        );
        let status = decode_server(&next_text(&mut client).await).unwrap();
        assert!(
            matches!(status, ServerMessage::ServerStatus { .. }),
            "{status:?}"
        );
        let state = decode_server(&next_text(&mut client).await).unwrap();
        assert!(
            matches!(state, ServerMessage::State { lobby: None, .. }),
            "{state:?}"
        );
    });
}

#[test]
fn a_70_kib_message_closes_with_1009() {
    let server = TestServer::start(&[]);
    bounded(10, async {
        let mut client = ws(server.addr, "/ws", &[]).await.unwrap();
        let big = format!(r#"{{"type":"hello","token":"{}"}}"#, "a".repeat(70 * 1024));
        client.send(Message::text(big)).await.unwrap();
        assert_eq!(close_code(&mut client).await, 1009);
    });
}

#[test]
fn a_binary_frame_closes_with_1003() {
    let server = TestServer::start(&[]);
    bounded(10, async {
        let mut client = ws(server.addr, "/ws", &[]).await.unwrap();
        client.send(Message::binary(vec![1u8, 2, 3])).await.unwrap();
        assert_eq!(close_code(&mut client).await, 1003);
    });
}

#[test]
fn a_silent_client_is_closed_after_the_keepalive_timeout() {
    let server = TestServer::start(&[("KEEPALIVE_INTERVAL", "0.1"), ("KEEPALIVE_TIMEOUT", "0.5")]);
    bounded(10, async {
        // A raw handshake, then silence: pings go unanswered.
        let mut tcp = Async::<TcpStream>::connect(server.addr).await.unwrap();
        let request = "GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n\
                       Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
                       Sec-WebSocket-Version: 13\r\n\r\n";
        tcp.write_all(request.as_bytes()).await.unwrap();
        let started = std::time::Instant::now();
        let mut received = Vec::new();
        let _ = tcp.read_to_end(&mut received).await;
        let text = String::from_utf8_lossy(&received);
        assert!(text.starts_with("HTTP/1.1 101"), "{text}");
        // At least one ping (opcode 0x9) arrived before the close.
        assert!(
            received.windows(2).any(|w| w == [0x89, 0x00]),
            "no ping seen"
        );
        assert!(started.elapsed() >= std::time::Duration::from_millis(400));
    });
}

/// A peer heard within `KEEPALIVE_INTERVAL` is not pinged (before, every
/// connection was pinged every interval, a wake-up and a pong each); once it falls
/// silent it is pinged, and answering keeps it open.
#[test]
fn a_client_heard_within_the_interval_is_not_pinged_and_a_silent_one_is() {
    use std::time::{Duration, Instant};
    let server = TestServer::start(&[("KEEPALIVE_INTERVAL", "0.4"), ("KEEPALIVE_TIMEOUT", "2")]);
    bounded(20, async {
        let mut client = ws(server.addr, "/ws", &[]).await.unwrap();
        // Talking: a ping of our own every 150 ms (a sign of life within the message
        // rate) for 2 s, five intervals; every frame the server sends is collected.
        let talking_until = Instant::now() + Duration::from_secs(2);
        let mut pings_while_talking = 0;
        let mut pongs = 0;
        while Instant::now() < talking_until {
            client.send(Message::Ping(Vec::new().into())).await.unwrap();
            let next = Instant::now() + Duration::from_millis(150);
            loop {
                match next_before(&mut client, next).await {
                    None => break,
                    Some(Some(Ok(Message::Ping(_)))) => pings_while_talking += 1,
                    Some(Some(Ok(Message::Pong(_)))) => pongs += 1,
                    Some(Some(Ok(_))) => {}
                    other => panic!("the connection ended while talking: {other:?}"),
                }
            }
        }
        assert!(pongs >= 10, "our pings were not answered: {pongs} pongs");
        assert_eq!(pings_while_talking, 0, "a client that talks was pinged");
        // Silent now (reading only; tungstenite answers the server's pings): pinged
        // within the interval plus one grid step, and still open after the timeout.
        let silent = Instant::now();
        let mut pings = 0;
        let open_until = silent + Duration::from_millis(2500);
        while Instant::now() < open_until {
            match next_before(&mut client, open_until).await {
                None => break,
                Some(Some(Ok(Message::Ping(_)))) => {
                    if pings == 0 {
                        let waited = silent.elapsed();
                        assert!(
                            waited < Duration::from_millis(1000),
                            "first ping after {waited:?}"
                        );
                    }
                    pings += 1;
                }
                Some(Some(Ok(_))) => {}
                other => panic!("an answering client was closed: {other:?}"),
            }
        }
        assert!(pings >= 2, "{pings} pings in 2.5 s of silence");
    });
}

/// The client's next frame (`Some`, with the stream's own `None` at its end), or `None`
/// once `until` passed.
async fn next_before(
    client: &mut crate::client::Client,
    until: std::time::Instant,
) -> Option<Option<Result<Message, async_tungstenite::tungstenite::Error>>> {
    async { Some(client.next().await) }
        .or(async {
            async_io::Timer::at(until).await;
            None
        })
        .await
}
