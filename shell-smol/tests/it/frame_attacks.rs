//! The frame layer against the real server over raw TCP (attack rows 1, 6 and 11):
//! every protocol violation gets a close frame with its RFC 6455 code, the peer's close
//! is answered, empty continuations and ping floods are cut by the frame budget, and an
//! honest player beside the attackers still plays.

use std::net::{SocketAddr, TcpStream};

use async_io::Async;
use futures_lite::FutureExt;
use futures_lite::io::{AsyncReadExt, AsyncWriteExt};
use wizard_core::vocabulary::wire::{ErrorCode, ServerMessage, decode_server};

use crate::client::{Player, TestServer, bounded, metric};

const TEXT: u8 = 0x1;
const BINARY: u8 = 0x2;
const CONT: u8 = 0x0;
const CLOSE: u8 = 0x8;
const PING: u8 = 0x9;
const MASK: [u8; 4] = [0xa1, 0x5e, 0x07, 0x99];

/// A client frame; `first` is the whole first byte, `mask` false sends it unmasked.
fn raw(first: u8, mask: bool, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    wizard_core::shell::ws::encode::client_frame(&mut out, first, mask.then_some(MASK), payload);
    out
}

fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    raw(u8::from(fin) << 7 | opcode, true, payload)
}

/// What the server sent until its close frame or the end of the stream.
#[derive(Debug, Default)]
struct Heard {
    texts: Vec<String>,
    pongs: usize,
    /// The close frame's payload: `Some(None)` for an empty one.
    close: Option<Option<u16>>,
}

/// A websocket opened by hand over TCP.
struct Raw {
    tcp: Async<TcpStream>,
    buf: Vec<u8>,
}

impl Raw {
    async fn open(addr: SocketAddr) -> Raw {
        let mut tcp = Async::<TcpStream>::connect(addr).await.unwrap();
        let request = "GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n\
                       Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
                       Sec-WebSocket-Version: 13\r\n\r\n";
        tcp.write_all(request.as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 1024];
        let end = loop {
            if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            let n = tcp.read(&mut chunk).await.unwrap();
            assert!(n > 0, "closed during the handshake");
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        buf.drain(..end);
        Raw { tcp, buf }
    }

    async fn send(&mut self, bytes: &[u8]) {
        // The server may close while we write: that is what the tests wait for.
        let _ = self.tcp.write_all(bytes).await;
    }

    /// One complete server frame from `buf`, if there is one: (first byte, payload).
    fn parse(&mut self) -> Option<(u8, Vec<u8>)> {
        let b = &self.buf;
        if b.len() < 2 {
            return None;
        }
        assert_eq!(b[1] & 0x80, 0, "server frames are unmasked");
        let (len, head) = match b[1] & 0x7F {
            126 if b.len() >= 4 => (usize::from(u16::from_be_bytes([b[2], b[3]])), 4),
            127 if b.len() >= 10 => (
                usize::try_from(u64::from_be_bytes(b[2..10].try_into().unwrap())).unwrap(),
                10,
            ),
            126 | 127 => return None,
            n => (usize::from(n), 2),
        };
        if b.len() < head + len {
            return None;
        }
        let first = b[0];
        let payload = b[head..head + len].to_vec();
        self.buf.drain(..head + len);
        Some((first, payload))
    }

    /// Reads frames until the server's close frame or the end of the stream.
    async fn until_close(&mut self) -> Heard {
        let mut heard = Heard::default();
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            while let Some((first, payload)) = self.parse() {
                assert_eq!(first & 0xF0, 0x80, "a final frame without reserved bits");
                match first & 0x0F {
                    0x1 => heard.texts.push(String::from_utf8(payload).unwrap()),
                    0x9 => {} // the server's keepalive ping
                    0xA => heard.pongs += 1,
                    0x8 => {
                        let code = (payload.len() >= 2)
                            .then(|| u16::from_be_bytes([payload[0], payload[1]]));
                        heard.close = Some(code);
                        return heard;
                    }
                    op => panic!("unexpected opcode {op}"),
                }
            }
            match self.tcp.read(&mut chunk).await {
                Ok(0) | Err(_) => return heard,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

/// Opens a connection, sends `bytes` and returns the server's close code.
async fn close_code_after(addr: SocketAddr, bytes: &[u8]) -> Option<Option<u16>> {
    let mut ws = Raw::open(addr).await;
    ws.send(bytes).await;
    ws.until_close().await.close
}

#[test]
fn every_protocol_violation_gets_a_close_frame_with_its_code() {
    let server = TestServer::start(&[]);
    let mut oversize = vec![0x81, 0x80 | 127, 0, 0, 0, 0, 0, 0x10, 0, 0]; // 1 MiB
    oversize.extend_from_slice(&MASK);
    let mut close_999 = frame(true, CLOSE, &999u16.to_be_bytes());
    close_999.extend(frame(true, TEXT, b"after the close"));
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("invalid UTF-8", frame(true, TEXT, b"{\"type\":\xff}"), 1007),
        ("UTF-8 cut at the end", frame(true, TEXT, b"\xe2\x82"), 1007),
        (
            "close reason not UTF-8",
            frame(true, CLOSE, b"\x03\xe8\xff"),
            1007,
        ),
        ("reserved bits", raw(0xC1, true, b"{}"), 1002),
        ("unmasked client frame", raw(0x81, false, b"{}"), 1002),
        ("fragmented control frame", frame(false, PING, b""), 1002),
        ("unknown opcode", frame(true, 0x3, b""), 1002),
        (
            "control payload over 125",
            frame(true, PING, &[0; 126]),
            1002,
        ),
        ("close code 999", close_999, 1002),
        ("close of one byte", frame(true, CLOSE, &[3]), 1002),
        ("continuation first", frame(true, CONT, b"x"), 1002),
        ("oversize header", oversize, 1009),
        ("binary", frame(true, BINARY, b"\x01"), 1003),
    ];
    bounded(30, async {
        for (name, bytes, code) in cases {
            let close = close_code_after(server.addr, &bytes).await;
            assert_eq!(close, Some(Some(code)), "{name}");
        }
    });
}

#[test]
fn the_peers_close_is_answered_with_its_code() {
    let server = TestServer::start(&[]);
    bounded(20, async {
        for code in [1000u16, 1001, 3000, 4999] {
            let mut payload = code.to_be_bytes().to_vec();
            payload.extend_from_slice("bye ✓".as_bytes());
            let close = close_code_after(server.addr, &frame(true, CLOSE, &payload)).await;
            assert_eq!(close, Some(Some(code)));
        }
        let empty = close_code_after(server.addr, &frame(true, CLOSE, b"")).await;
        assert_eq!(empty, Some(None));
    });
}

/// Attack row 1: a text frame without FIN, then empty continuations.
fn empty_continuations(count: usize) -> Vec<u8> {
    let mut bytes = frame(false, TEXT, b"{");
    for _ in 0..count {
        bytes.extend(frame(false, CONT, b""));
    }
    bytes
}

#[test]
fn empty_continuations_are_closed_as_a_flood_within_the_budget() {
    // MESSAGE_BURST 30 + MAX_RATE_VIOLATIONS 50: the 81st fragment at the latest.
    let server = TestServer::start(&[]);
    bounded(20, async {
        let mut ws = Raw::open(server.addr).await;
        ws.send(&empty_continuations(100)).await;
        let heard = ws.until_close().await;
        assert_eq!(heard.close, Some(Some(1008)), "{heard:?}");
        let errors: Vec<ServerMessage> = heard
            .texts
            .iter()
            .map(|t| decode_server(t).unwrap())
            .collect();
        assert!(
            matches!(
                errors.as_slice(),
                [ServerMessage::Error {
                    code: ErrorCode::RateLimited,
                    ..
                }]
            ),
            "{errors:?}"
        );
    });
}

#[test]
fn a_ping_flood_from_a_client_that_never_reads_is_cut_at_the_budget() {
    // Attack row 6. Each client writes all its pings before reading anything.
    let server = TestServer::start(&[]);
    bounded(30, async {
        let pings: Vec<u8> = (0..5000).flat_map(|_| frame(true, PING, b"0123")).collect();
        let mut clients = Vec::new();
        for _ in 0..8 {
            let mut ws = Raw::open(server.addr).await;
            ws.send(&pings).await;
            clients.push(ws);
        }
        for mut ws in clients {
            let heard = ws.until_close().await;
            assert_eq!(heard.close, Some(Some(1008)), "{heard:?}");
            // At most MESSAGE_BURST pings were answered: nothing piled up.
            assert!(heard.pongs <= 30, "{} pongs", heard.pongs);
        }
        // Every dropped ping is counted once its connection has ended (each of the 8
        // dropped MAX_RATE_VIOLATIONS - 1 before the flood close, and the last one).
        let wanted = 8.0 * 50.0;
        while metric(server.addr, "wizard_frames_dropped_total").await < wanted {
            async_io::Timer::after(std::time::Duration::from_millis(20)).await;
        }
    });
}

/// Attacks the server over and over: a row-1 flood, then a ping flood.
async fn attack_forever(addr: SocketAddr) {
    let pings: Vec<u8> = (0..200).flat_map(|_| frame(true, PING, b"")).collect();
    loop {
        for bytes in [empty_continuations(200), pings.clone()] {
            let close = close_code_after(addr, &bytes).await;
            assert_eq!(close, Some(Some(1008)));
        }
    }
}

#[test]
fn an_honest_player_plays_beside_the_attackers() {
    let server = TestServer::start(&[]);
    bounded(60, async {
        let honest = async {
            let (mut host, _) = Player::hello(server.addr, None).await;
            host.create_lobby("Host").await;
            host.add_ai(2).await;
            host.add_ai(3).await;
            let view = host.start_game().await;
            assert!(view.game.is_some());
            // A few more round trips while the attacks go on.
            for _ in 0..5 {
                host.send(wizard_core::vocabulary::wire::ClientMessage::StartGame)
                    .await;
                assert_eq!(host.next_error().await, ErrorCode::NotAllowed);
            }
        };
        let attackers = attack_forever(server.addr)
            .or(attack_forever(server.addr))
            .or(attack_forever(server.addr));
        honest.or(attackers).await;
    });
}
