//! Raw websocket over TCP for the attacks that a well-behaved client library cannot
//! send: a hand-written upgrade, hand-built frames (any FIN, RSV, opcode, mask, length)
//! and a reader that finds the server's close code or HTTP status.

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use async_io::{Async, Timer};
use futures_lite::FutureExt;
use futures_lite::io::{AsyncReadExt, AsyncWriteExt};

pub type Tcp = Async<TcpStream>;

/// A valid upgrade request for `path` (the key is RFC 6455's sample nonce).
pub fn upgrade_request(path: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\n\r\n"
    )
}

/// One client frame. `mask` none sends it unmasked (a protocol violation from a client).
pub fn frame(fin: bool, rsv: u8, opcode: u8, mask: Option<[u8; 4]>, payload: &[u8]) -> Vec<u8> {
    let first = u8::from(fin) << 7 | (rsv & 0x7) << 4 | (opcode & 0xf);
    let mut f = Vec::new();
    wizard_core::shell::ws::encode::client_frame(&mut f, first, mask, payload);
    f
}

/// A masked, final text frame (mask 0: the payload goes as is).
pub fn text(payload: &str) -> Vec<u8> {
    frame(true, 0, 0x1, Some([0; 4]), payload.as_bytes())
}

pub const HELLO: &str = r#"{"type":"hello","token":null}"#;

/// A TCP connection from `from` (any 127.x address on Linux), bounded by `within`.
pub async fn tcp(addr: SocketAddr, from: IpAddr, within: Duration) -> Option<Tcp> {
    tcp_with(addr, from, within, None).await
}

/// [`tcp`] with a fixed receive buffer of `recv_bytes` (see `net::tcp_from_with`).
pub async fn tcp_with(
    addr: SocketAddr,
    from: IpAddr,
    within: Duration,
    recv_bytes: Option<usize>,
) -> Option<Tcp> {
    let connect = super::net::tcp_from_with(addr, from, recv_bytes);
    let tcp = async { connect.await.ok() }
        .or(async {
            Timer::after(within).await;
            None
        })
        .await?;
    let _ = tcp.get_ref().set_nodelay(true);
    Some(tcp)
}

/// Writes `bytes` unless `until` passes first; false when the write failed (the server
/// cut the connection) or timed out.
pub async fn write(tcp: &mut Tcp, bytes: &[u8], until: Instant) -> bool {
    async { tcp.write_all(bytes).await.is_ok() }
        .or(async {
            Timer::at(until).await;
            false
        })
        .await
}

/// Sends `request` and reads the response head; its HTTP status (0: closed without
/// one, `None`: nothing by `until`).
pub async fn request_status(tcp: &mut Tcp, request: &[u8], until: Instant) -> Option<u16> {
    if !write(tcp, request, until).await {
        return Some(0);
    }
    read_status(tcp, until).await
}

/// Reads up to the end of an HTTP response head and returns its status.
pub async fn read_status(tcp: &mut Tcp, until: Instant) -> Option<u16> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1];
    loop {
        let read = async { Some(tcp.read(&mut buf).await) }
            .or(async {
                Timer::at(until).await;
                None
            })
            .await?;
        match read {
            Ok(1) => head.push(buf[0]),
            _ => return Some(status_of(&head)),
        }
        if head.ends_with(b"\r\n\r\n") || head.len() > 16 * 1024 {
            return Some(status_of(&head));
        }
    }
}

fn status_of(head: &[u8]) -> u16 {
    String::from_utf8_lossy(head)
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Opens a raw websocket: TCP from `from` (with a fixed receive buffer of `recv_bytes`
/// when set: a client that reads little), the upgrade, and the 101 head read.
pub async fn open_with(
    addr: SocketAddr,
    path: &str,
    from: IpAddr,
    until: Instant,
    recv_bytes: Option<usize>,
) -> Result<Tcp, u16> {
    let within = until.saturating_duration_since(Instant::now());
    let mut tcp = tcp_with(addr, from, within, recv_bytes).await.ok_or(0u16)?;
    match request_status(&mut tcp, upgrade_request(path).as_bytes(), until).await {
        Some(101) => Ok(tcp),
        Some(status) => Err(status),
        None => Err(0),
    }
}

/// How the server ended a raw connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// A close frame with this code (0: a close frame without a code).
    Close(u16),
    /// The connection ended without a close frame (a client sees 1006).
    Dropped,
    /// Still open at the deadline.
    Open,
}

impl Ending {
    pub fn name(self) -> String {
        match self {
            Ending::Close(code) => format!("close {code}"),
            Ending::Dropped => "dropped (1006)".into(),
            Ending::Open => "none (still open)".into(),
        }
    }
}

/// Reads server frames, keeping a partial frame between calls.
#[derive(Debug, Default)]
pub struct Reader {
    buf: Vec<u8>,
    /// Text frames read so far (kept only while `keep_texts`).
    pub texts: Vec<String>,
    pub keep_texts: bool,
}

impl Reader {
    /// A reader that keeps the text frames it passes.
    pub fn keeping_texts() -> Reader {
        Reader {
            keep_texts: true,
            ..Reader::default()
        }
    }

    /// Reads until a close frame, the end of the stream or `until` (`Open`). With
    /// `until` now, takes only what has already arrived.
    pub async fn ending(&mut self, tcp: &mut Tcp, until: Instant) -> Ending {
        let mut chunk = [0u8; 4096];
        loop {
            while let Some((opcode, payload, used)) = parse_server_frame(&self.buf) {
                match opcode {
                    0x8 => {
                        let code = match payload.get(..2) {
                            Some(c) => u16::from_be_bytes([c[0], c[1]]),
                            None => 0,
                        };
                        return Ending::Close(code);
                    }
                    0x1 if self.keep_texts => self
                        .texts
                        .push(String::from_utf8_lossy(payload).into_owned()),
                    _ => {}
                }
                self.buf.drain(..used);
            }
            let read = async { Some(tcp.read(&mut chunk).await) }
                .or(async {
                    Timer::at(until).await;
                    None
                })
                .await;
            match read {
                None => return Ending::Open,
                Some(Ok(0)) | Some(Err(_)) => return Ending::Dropped,
                Some(Ok(n)) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

/// One whole unmasked server frame at the start of `buf`: opcode, payload, bytes used.
fn parse_server_frame(buf: &[u8]) -> Option<(u8, &[u8], usize)> {
    let b0 = *buf.first()?;
    let b1 = *buf.get(1)?;
    let (len, at) = match b1 & 0x7f {
        126 => (u16::from_be_bytes([*buf.get(2)?, *buf.get(3)?]) as usize, 4),
        127 => {
            let bytes: [u8; 8] = buf.get(2..10)?.try_into().ok()?;
            (usize::try_from(u64::from_be_bytes(bytes)).ok()?, 10)
        }
        n => (n as usize, 2usize),
    };
    let payload = buf.get(at..at.checked_add(len)?)?;
    Some((b0 & 0xf, payload, at + len))
}
