//! Connection limits, floods and shutdown over real sockets.

use async_tungstenite::tungstenite::Message;
use wizard_core::wire::{ErrorCode, ServerMessage, decode_server};

use crate::client::{TestServer, bounded, close_code, next_text, ws};

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
        let _a = ws(server.addr, "/ws", &[]).await.unwrap();
        let _b = ws(server.addr, "/ws", &[]).await.unwrap();
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
