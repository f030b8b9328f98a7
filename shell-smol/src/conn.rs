//! One websocket connection after its upgrade: a reader and a writer driven together in
//! one task, draining the bounded outbound queue the core task fills (`outbox.rs`).
//!
//! The reader decodes each text frame with the core's pure decoders and forwards it to
//! the core task's inbox; binary and oversized frames become [`Input::BadFrame`] and the
//! reader stops, leaving the writer to send the close frame the core asks for. The
//! writer wakes when the core task queued something, writes every queued frame and
//! flushes once, pings every `KEEPALIVE_INTERVAL`, closes a connection that sent nothing
//! for `KEEPALIVE_TIMEOUT`, and cuts a connection whose batch does not drain within
//! `WRITE_TIMEOUT` or whose queue overflows. The task reports [`Input::Closed`] exactly
//! once, however it ends. Nothing here decides policy: the core does.

use std::net::{Shutdown, TcpStream};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use async_channel::{Sender, TrySendError};
use async_io::{Async, Timer};
use async_tungstenite::WebSocketStream;
use async_tungstenite::tungstenite::error::{CapacityError, Error as WsError};
use async_tungstenite::tungstenite::protocol::frame::CloseFrame;
use async_tungstenite::tungstenite::protocol::frame::coding::CloseCode as WsCloseCode;
use async_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use async_tungstenite::tungstenite::{Message, Utf8Bytes};
use futures_lite::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use futures_lite::{FutureExt, StreamExt};
use futures_util::SinkExt;
use wizard_core::config::Config;
use wizard_core::io::{BadFrame, ConnId, ConnKind, Input};
use wizard_core::wire::{CloseCode, decode_ai_reply, decode_client, peek_request_id};

use crate::core_task::CoreMsg;
use crate::deadline::Deadline;
use crate::metrics::ShellStats;
use crate::outbox::{Outbox, Woken};

/// Read buffer per connection: small, because an idle connection should cost little
/// (tungstenite's default of 128 KiB made about 141 KB per connection).
pub const READ_BUFFER_BYTES: usize = 1024;
/// Frames are collected up to this size before tungstenite writes them out; `flush`
/// writes everything regardless.
pub const WRITE_BUFFER_BYTES: usize = 8 * 1024;
/// Frames a reader handles before yielding to the executor.
pub const READ_FRAMES_PER_YIELD: u32 = 16;
/// Input a closing connection reads and discards at most while it lingers.
pub const LINGER_BYTES_MAX: usize = 64 * 1024;
/// How long a closing connection waits for the peer's close or end of stream.
pub const LINGER: Duration = Duration::from_secs(1);
/// The websocket settings for a server connection under `config`.
pub fn ws_config(config: &Config) -> WebSocketConfig {
    let max = config.message_bytes_max;
    WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER_BYTES)
        .write_buffer_size(WRITE_BUFFER_BYTES)
        .max_write_buffer_size(
            config
                .outbound_queue_bytes_max
                .saturating_add(WRITE_BUFFER_BYTES)
                .saturating_add(max),
        )
        .max_message_size(Some(max))
        .max_frame_size(Some(max))
}

/// The settings one connection task needs.
#[derive(Clone, Copy, Debug)]
pub struct ConnParams {
    pub conn: ConnId,
    pub kind: ConnKind,
    pub ws: WebSocketConfig,
    pub keepalive_interval: Duration,
    pub keepalive_timeout: Duration,
    pub write_timeout: Duration,
}

impl ConnParams {
    pub fn new(config: &Config, conn: ConnId, kind: ConnKind) -> ConnParams {
        ConnParams {
            conn,
            kind,
            ws: ws_config(config),
            keepalive_interval: Duration::from_micros(config.keepalive_interval_us),
            keepalive_timeout: Duration::from_micros(config.keepalive_timeout_us),
            write_timeout: Duration::from_micros(config.write_timeout_us),
        }
    }
}

// ---------------------------------------------------------------------------------------
// The socket shared between the websocket and the lingering close
// ---------------------------------------------------------------------------------------

/// A TCP stream the websocket reads and writes while the task keeps a second handle to
/// shut it down and drain it at the end.
#[derive(Debug)]
pub struct SharedTcp {
    tcp: Arc<Async<TcpStream>>,
    /// The last read found nothing: the next one waits for the reactor to report the
    /// socket readable. The reader and the writer share one task, so every batch of
    /// frames the writer sends also polls the reader; without this, each such poll cost
    /// a `recvfrom` that failed with EAGAIN (async-io reads first and asks after).
    drained: bool,
}

impl SharedTcp {
    pub fn new(tcp: Arc<Async<TcpStream>>) -> SharedTcp {
        SharedTcp {
            tcp,
            drained: false,
        }
    }
}

impl AsyncRead for SharedTcp {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<std::io::Result<usize>> {
        loop {
            if self.drained {
                match self.tcp.poll_readable(cx) {
                    Poll::Ready(Ok(())) => self.drained = false,
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => return Poll::Pending,
                }
            }
            match std::io::Read::read(&mut self.tcp.get_ref(), buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => self.drained = true,
                result => return Poll::Ready(result),
            }
        }
    }
}

impl AsyncWrite for SharedTcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut &*self.tcp).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut &*self.tcp).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut &*self.tcp).poll_close(cx)
    }
}

// ---------------------------------------------------------------------------------------
// The connection task
// ---------------------------------------------------------------------------------------

/// How a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The peer closed (close frame or end of stream) or the transport failed.
    Peer,
    /// The core asked for a close and the close frame went out.
    Closed(CloseCode),
    /// The reader sent a forbidden frame and the core did not close in time.
    BadFrame,
    /// Nothing arrived for `KEEPALIVE_TIMEOUT`.
    KeepaliveTimeout,
    /// A batch did not drain within `WRITE_TIMEOUT`.
    WriteTimeout,
    /// The outbound queue overflowed.
    Overflow,
    /// The core task is gone.
    CoreGone,
}

type Ws = WebSocketStream<SharedTcp>;

/// When the peer last sent a frame, shared by the reader (writes) and the writer (reads)
/// of one task; an atomic only because the task must be `Send`.
#[derive(Debug)]
struct LastHeard {
    base: Instant,
    since_base_us: std::sync::atomic::AtomicU64,
}

impl LastHeard {
    fn new() -> LastHeard {
        LastHeard {
            base: Instant::now(),
            since_base_us: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let us = u64::try_from(self.base.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.since_base_us
            .store(us, std::sync::atomic::Ordering::Relaxed);
    }

    fn get(&self) -> Instant {
        let us = self
            .since_base_us
            .load(std::sync::atomic::Ordering::Relaxed);
        self.base + Duration::from_micros(us)
    }
}

/// Runs an upgraded connection until it ends, then reports [`Input::Closed`]. The core
/// already got [`CoreMsg::Opened`] with `outbox`.
pub async fn run(
    tcp: Arc<Async<TcpStream>>,
    leftover: Vec<u8>,
    outbox: Arc<Outbox>,
    woken: Woken,
    inbox: Sender<CoreMsg>,
    stats: Arc<ShellStats>,
    p: ConnParams,
) -> End {
    let stream = SharedTcp::new(Arc::clone(&tcp));
    let ws: Ws = if leftover.is_empty() {
        WebSocketStream::from_raw_socket(stream, Role::Server, Some(p.ws)).await
    } else {
        WebSocketStream::from_partially_read(stream, leftover, Role::Server, Some(p.ws)).await
    };
    let (mut tx, mut rx) = ws.split();
    let last_heard = LastHeard::new();
    let t = Timing::from(&p);
    // Built in place: futures bound to locals and then moved into `or` would take room
    // twice in this task's future (rustc does not overlap moved-from locals).
    let end = read_loop(&mut rx, &inbox, &last_heard, p.conn, p.kind, t)
        .or(write_loop(&mut tx, &outbox, &woken, &last_heard, t))
        .await;
    match end {
        End::KeepaliveTimeout => ShellStats::bump(&stats.keepalive_timeouts),
        End::WriteTimeout | End::Overflow => ShellStats::bump(&stats.slow_readers),
        _ => {}
    }
    let _ = inbox
        .send(CoreMsg::Input(Input::Closed { conn: p.conn }))
        .await;
    drop((tx, rx));
    linger(&tcp).await;
    end
}

/// Half-closes and reads until the peer closes too (or [`LINGER`] passes, or
/// [`LINGER_BYTES_MAX`] were read), so that a close frame is not destroyed by a reset
/// caused by unread input. The bounds are checked in the loop itself: a client that
/// keeps sending keeps every read ready, so a timer raced against the loop would never
/// get its turn, and the task would hold its executor thread for as long as the client
/// floods.
async fn linger(tcp: &Async<TcpStream>) {
    let _ = tcp.get_ref().shutdown(Shutdown::Write);
    let until = Instant::now() + LINGER;
    let drain = async {
        // On the heap: a closing connection needs it, an idle one should not carry it.
        let mut sink = vec![0u8; 512];
        let mut reader = tcp;
        let mut read_total = 0usize;
        while let Ok(n) = reader.read(&mut sink).await {
            read_total += n;
            if n == 0 || read_total >= LINGER_BYTES_MAX || Instant::now() >= until {
                break;
            }
        }
    };
    let timeout = async {
        Timer::at(until).await;
    };
    drain.or(timeout).await;
}

/// The durations the reader and the writer need (not the whole [`ConnParams`]: every
/// byte of the connection task's future is paid per idle connection).
#[derive(Clone, Copy, Debug)]
struct Timing {
    keepalive_interval: Duration,
    keepalive_timeout: Duration,
    write_timeout: Duration,
}

impl From<&ConnParams> for Timing {
    fn from(p: &ConnParams) -> Timing {
        Timing {
            keepalive_interval: p.keepalive_interval,
            keepalive_timeout: p.keepalive_timeout,
            write_timeout: p.write_timeout,
        }
    }
}

async fn read_loop(
    rx: &mut async_tungstenite::WebSocketReceiver<SharedTcp>,
    inbox: &Sender<CoreMsg>,
    last_heard: &LastHeard,
    conn: ConnId,
    kind: ConnKind,
    t: Timing,
) -> End {
    let mut frames_since_yield = 0u32;
    loop {
        // A client that keeps sending would keep this loop ready forever: yield now and
        // then, so the connection's own writer (and every other task on this executor
        // thread) still runs while it floods.
        frames_since_yield += 1;
        if frames_since_yield >= READ_FRAMES_PER_YIELD {
            frames_since_yield = 0;
            futures_lite::future::yield_now().await;
        }
        let frame = match rx.next().await {
            None => return End::Peer,
            Some(Ok(message)) => {
                last_heard.touch();
                match message {
                    Message::Text(text) => Some(decode(conn, kind, &text)),
                    Message::Binary(_) => Some(Input::BadFrame {
                        conn,
                        frame: BadFrame::Binary,
                    }),
                    // Pings are answered by tungstenite; pongs and closes only prove life.
                    Message::Ping(_) | Message::Pong(_) | Message::Close(_) | Message::Frame(_) => {
                        None
                    }
                }
            }
            Some(Err(WsError::Capacity(CapacityError::MessageTooLong { .. }))) => {
                Some(Input::BadFrame {
                    conn,
                    frame: BadFrame::TooLarge,
                })
            }
            Some(Err(_)) => return End::Peer,
        };
        let Some(input) = frame else { continue };
        let bad = matches!(input, Input::BadFrame { .. });
        // Waiting for room in a full inbox is rare: boxed, so that the wait does not
        // enlarge every idle connection's task.
        match inbox.try_send(CoreMsg::Input(input)) {
            Ok(()) => {}
            Err(TrySendError::Closed(_)) => return End::CoreGone,
            Err(TrySendError::Full(msg)) => {
                if Box::pin(inbox.send(msg)).await.is_err() {
                    return End::CoreGone;
                }
            }
        }
        if bad {
            // Stop reading; the writer sends the close the core asks for.
            Box::pin(Timer::after(t.write_timeout.saturating_add(LINGER))).await;
            return End::BadFrame;
        }
    }
}

fn decode(conn: ConnId, kind: ConnKind, text: &str) -> Input {
    match kind {
        ConnKind::Player => match decode_client(text) {
            Ok(message) => Input::Message { conn, message },
            Err(error) => Input::Undecodable { conn, error },
        },
        ConnKind::Ai => {
            let reply = decode_ai_reply(text);
            let request_id = match &reply {
                Ok(r) => Some(r.request_id()),
                Err(_) => peek_request_id(text),
            };
            Input::AiMessage {
                conn,
                reply,
                request_id,
            }
        }
    }
}

enum Wake {
    Work,
    Timer,
}

async fn write_loop(
    tx: &mut async_tungstenite::WebSocketSender<SharedTcp>,
    outbox: &Outbox,
    woken: &Woken,
    last_heard: &LastHeard,
    t: Timing,
) -> End {
    let mut next_ping = Instant::now() + t.keepalive_interval;
    // One timer, moved only when the deadline moves (at pings, or when the peer has
    // been silent for long), not one per batch of frames.
    let mut timer = Deadline::default();
    loop {
        let silent_until = last_heard.get() + t.keepalive_timeout;
        timer.set(Some(next_ping.min(silent_until)));
        let wake = async {
            woken.wait().await;
            Wake::Work
        }
        .or(async {
            timer.passed().await;
            Wake::Timer
        })
        .await;
        match wake {
            Wake::Timer => {
                let now = Instant::now();
                if now >= last_heard.get() + t.keepalive_timeout {
                    return End::KeepaliveTimeout;
                }
                if now >= next_ping {
                    next_ping = now + t.keepalive_interval;
                    if !send_within(t.write_timeout, tx, Vec::new(), Ping::Yes).await {
                        return End::WriteTimeout;
                    }
                }
            }
            Wake::Work => {
                let batch = outbox.take();
                if batch.overflowed {
                    return End::Overflow;
                }
                if !send_within(t.write_timeout, tx, batch.frames, Ping::No).await {
                    return End::WriteTimeout;
                }
                if let Some(code) = batch.close {
                    if !close_within(t.write_timeout, tx, code).await {
                        return End::WriteTimeout;
                    }
                    // Give the peer a moment to answer with its close; the reader ends
                    // the task first when it does.
                    Box::pin(Timer::after(LINGER)).await;
                    return End::Closed(code);
                }
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ping {
    Yes,
    No,
}

/// Writes every frame, plus a ping when asked, then flushes once, within `limit`. False
/// on error or timeout. The sending future is boxed: it lives only while a batch goes
/// out, and inline it would enlarge every idle connection's task.
async fn send_within(
    limit: Duration,
    tx: &mut async_tungstenite::WebSocketSender<SharedTcp>,
    frames: Vec<String>,
    ping: Ping,
) -> bool {
    let send = async move {
        for text in frames {
            if tx.feed(Message::text(text)).await.is_err() {
                return false;
            }
        }
        if ping == Ping::Yes && tx.feed(Message::Ping(Default::default())).await.is_err() {
            return false;
        }
        tx.flush().await.is_ok()
    };
    Box::pin(within(limit, send)).await
}

/// Sends the close frame for `code` within `limit` (boxed like [`send_within`]).
async fn close_within(
    limit: Duration,
    tx: &mut async_tungstenite::WebSocketSender<SharedTcp>,
    code: CloseCode,
) -> bool {
    let frame = CloseFrame {
        code: WsCloseCode::from(code.code()),
        reason: Utf8Bytes::from_static(code.reason()),
    };
    let send = async move { tx.send(Message::Close(Some(frame))).await.is_ok() };
    Box::pin(within(limit, send)).await
}

/// Runs `f` for at most `limit`; false when it failed or ran out of time.
async fn within(limit: Duration, f: impl Future<Output = bool>) -> bool {
    f.or(async {
        Timer::after(limit).await;
        false
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_connection_task_stays_small() {
        // Every byte of this future is paid per open connection (issue 4: <= 8 KiB per
        // idle websocket in all). It was 1792 bytes before the writer's and the reader's
        // transient states were boxed.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let tcp = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let tcp = Arc::new(Async::new(tcp).unwrap());
        let config = Config::from_pairs(Vec::<(&str, &str)>::new()).unwrap();
        let (inbox, _rx) = async_channel::bounded(1);
        let (outbox, woken) = Outbox::new(10, 1000);
        let params = ConnParams::new(&config, 1, ConnKind::Player);
        let stats = Arc::new(ShellStats::default());
        let task = run(tcp, Vec::new(), outbox, woken, inbox, stats, params);
        let size = std::mem::size_of_val(&task);
        assert!(size <= 1280, "connection future grew to {size} bytes");
    }
}
