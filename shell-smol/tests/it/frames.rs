//! Websocket frames end to end: hello/welcome, oversized and binary frames, keepalive.

use std::net::TcpStream;

use async_io::Async;
use async_tungstenite::tungstenite::Message;
use futures_lite::io::{AsyncReadExt, AsyncWriteExt};
use wizard_core::wire::{ServerMessage, decode_server};

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
