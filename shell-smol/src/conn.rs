//! One websocket connection after its upgrade: a reader and a writer driven together in
//! one task, draining the bounded outbound queue the core task fills (`outbox.rs`).
//!
//! The reader reads the socket into a small buffer and feeds the core's pure frame
//! reader ([`FrameReader`]: the RFC 6455 decoder and the per-frame budget). Complete
//! text messages are decoded with the core's pure decoders and forwarded to the core
//! task's inbox; an admitted ping leaves its pong in the outbox's single pong slot; a
//! violation or a frame flood becomes [`Input::BadFrame`] and the reader stops, leaving
//! the writer to send the close frame the core asks for; the peer's close frame is
//! answered by the writer, and the connection ends. The reader yields to the executor
//! after [`READ_FRAMES_PER_YIELD`] frames or [`READ_BYTES_PER_YIELD`] bytes.
//!
//! The writer wakes when the core task queued something, encodes every queued frame with
//! the core's encoder and writes them in one write, pings a peer silent for
//! `KEEPALIVE_INTERVAL` and closes one silent for `KEEPALIVE_TIMEOUT` (the core's
//! rule, `wizard_core::shell::keepalive`, on a grid the connections share), and cuts a
//! connection whose batch does not drain within `WRITE_TIMEOUT` or whose queue
//! overflows. The time from a player's frame read off the socket to the first byte of
//! its answer written (`wizard_frame_answer_seconds`) is taken here: the reader stamps
//! the frame, the core task marks the first frame it sends in the pass that handled it
//! ([`Outbox::expect_answer`]), the writer observes. The task reports [`Input::Closed`]
//! exactly once, however it ends. Nothing here decides policy: the core does.

use std::io::{ErrorKind, Read as _};
use std::net::{Shutdown, TcpStream};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_channel::{SendError, Sender, TrySendError};
use async_io::{Async, Timer};
use futures_lite::FutureExt;
use futures_lite::io::{AsyncReadExt, AsyncWriteExt};
use prometheus_client::metrics::histogram::Histogram;
use wizard_core::Time;
use wizard_core::shell::keepalive::{Due, Keepalive};
use wizard_core::shell::ws::{FrameReader, Read, encode};
use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::{ConnKind, Input};
use wizard_core::vocabulary::wire::CloseCode;

use crate::core_task::{Clock, CoreMsg};
use crate::deadline::Deadline;
use crate::metrics::ShellStats;
use crate::outbox::{Batch, Outbox, Woken};
use crate::store::{Directory, Pending};

/// Read buffer per connection: small, because an idle connection should cost little.
pub const READ_BUFFER_BYTES: usize = 1024;
/// How much a reader does before yielding to the executor: the core's constants, which
/// the simulator's readers yield by too.
pub use wizard_core::shell::executor::{READ_BYTES_PER_YIELD, READ_FRAMES_PER_YIELD};
/// Input a closing connection reads and discards at most while it lingers (and as
/// much again after a violation, before its close frame): enough for what an honest
/// client has in flight, little for a flooder, whose every connection would otherwise
/// make the server read tens of KiB of junk.
pub const LINGER_BYTES_MAX: usize = 16 * 1024;
/// The buffer a closing connection discards input into (allocated only while closing):
/// 4 reads of it reach [`LINGER_BYTES_MAX`].
const LINGER_READ_BYTES: usize = 4 * 1024;
/// How long a closing connection waits for the peer's close or end of stream.
pub const LINGER: Duration = Duration::from_secs(1);

/// The settings one connection task needs, and its reading state (on the heap: every
/// byte of the task's future is paid per idle connection).
#[derive(Debug)]
pub struct ConnParams {
    pub conn: ConnId,
    pub kind: ConnKind,
    read: Box<ReadState>,
    pub keepalive: Keepalive,
    /// The server's clock, which the keepalive's grid is on.
    pub clock: Clock,
    pub write_timeout: Duration,
}

impl ConnParams {
    pub fn new(config: &Config, clock: Clock, conn: ConnId, kind: ConnKind) -> ConnParams {
        ConnParams {
            conn,
            kind,
            read: Box::new(ReadState {
                // The reader's clock starts with the connection (see `LastHeard::now`).
                reader: FrameReader::new(config, Time::ZERO),
                buf: vec![0; READ_BUFFER_BYTES],
                start: 0,
                end: 0,
                read_at: Instant::now(),
                drained: false,
                directory: None,
            }),
            keepalive: Keepalive::new(&config.shell),
            clock,
            write_timeout: Duration::from_micros(config.shell.write_timeout_us),
        }
    }

    /// Profile lookups in the store every shard shares (the PostgreSQL store only),
    /// kept with the reading state on the heap.
    pub fn set_directory(&mut self, directory: Option<Arc<Directory>>) {
        self.read.directory = directory;
    }
}

/// The reader's state: the frame reader and the bytes read but not yet decoded
/// (`buf[start..end]`).
#[derive(Debug)]
struct ReadState {
    reader: FrameReader,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// When `buf` was last filled from the socket: the arrival of the frames in it.
    read_at: Instant,
    /// The last read filled less than `buf`: the socket was empty (see [`read_some`]).
    drained: bool,
    /// Profile lookups in the store every shard shares (the PostgreSQL store only).
    directory: Option<Arc<Directory>>,
}

impl ReadState {
    /// Puts the bytes the HTTP reader read past the upgrade request first.
    fn set_leftover(&mut self, leftover: Vec<u8>) {
        if leftover.is_empty() {
            return;
        }
        self.end = leftover.len();
        self.start = 0;
        self.read_at = Instant::now();
        self.buf = leftover;
        if self.buf.len() < READ_BUFFER_BYTES {
            self.buf.resize(READ_BUFFER_BYTES, 0);
        }
    }

    /// Back to a buffer of [`READ_BUFFER_BYTES`] once a large leftover is decoded.
    fn shrink(&mut self) {
        if self.buf.len() > READ_BUFFER_BYTES {
            self.buf = vec![0; READ_BUFFER_BYTES];
        }
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
    /// The reader found a violation or a flood and the core did not close in time.
    BadFrame,
    /// No sign of life for `KEEPALIVE_TIMEOUT`.
    KeepaliveTimeout,
    /// A batch did not drain within `WRITE_TIMEOUT`.
    WriteTimeout,
    /// The outbound queue overflowed.
    Overflow,
    /// The core task is gone.
    CoreGone,
}

/// When the peer last showed a sign of life ([`Read::proves_life`]), shared by the
/// reader (writes) and the writer (reads) of one task; an atomic only because the task
/// must be `Send`. Its base is also the frame budget's clock.
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

    /// Now, on the connection's clock.
    fn now(&self) -> Time {
        Time(u64::try_from(self.base.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    fn touch(&self) {
        self.since_base_us
            .store(self.now().as_micros(), std::sync::atomic::Ordering::Relaxed);
    }

    fn get(&self) -> Instant {
        let us = self
            .since_base_us
            .load(std::sync::atomic::Ordering::Relaxed);
        self.base + Duration::from_micros(us)
    }
}

/// What the reader and the writer share.
#[derive(Clone, Copy)]
struct Links<'a> {
    tcp: &'a Async<TcpStream>,
    outbox: &'a Outbox,
    last_heard: &'a LastHeard,
    t: Timing,
    /// Where the writer times the answers to the player's frames.
    frame_answer: &'a Histogram,
}

/// Runs an upgraded connection until it ends, then reports [`Input::Closed`]; the
/// caller lingers ([`linger`]) and closes the socket. The core already got
/// [`CoreMsg::Opened`] with `outbox`.
pub async fn run(
    tcp: Arc<Async<TcpStream>>,
    leftover: Vec<u8>,
    outbox: Arc<Outbox>,
    woken: Woken,
    inbox: Sender<CoreMsg>,
    stats: Arc<ShellStats>,
    p: ConnParams,
) -> End {
    let last_heard = LastHeard::new();
    let t = Timing::from(&p);
    let (conn, kind) = (p.conn, p.kind);
    let mut read = p.read;
    read.set_leftover(leftover);
    let links = Links {
        tcp: &tcp,
        outbox: &outbox,
        last_heard: &last_heard,
        t,
        frame_answer: &stats.core.frame_answer_seconds,
    };
    // Built in place: futures bound to locals and then moved into `or` would take room
    // twice in this task's future (rustc does not overlap moved-from locals).
    let end = read_loop(links, &mut read, &inbox, conn, kind)
        .or(write_loop(links, &woken))
        .await;
    // The core task writes nothing more to this socket (and holds no handle of it).
    outbox.detach();
    match end {
        End::KeepaliveTimeout => ShellStats::bump(&stats.keepalive_timeouts),
        End::WriteTimeout | End::Overflow => ShellStats::bump(&stats.slow_readers),
        _ => {}
    }
    let drops = u64::from(read.reader.budget().drops());
    stats
        .frames_dropped
        .fetch_add(drops, std::sync::atomic::Ordering::Relaxed);
    let _ = inbox.send(CoreMsg::Input(Input::Closed { conn })).await;
    end
}

/// Half-closes and reads until the peer closes too (or [`LINGER`] passes, or
/// [`LINGER_BYTES_MAX`] were read), so that a close frame is not destroyed by a reset
/// caused by unread input. The bounds are checked in the loop itself: a client that
/// keeps sending keeps every read ready, so a timer raced against the loop would never
/// get its turn, and the task would hold its executor thread for as long as the client
/// floods.
pub async fn linger(tcp: &Async<TcpStream>) {
    let _ = tcp.get_ref().shutdown(Shutdown::Write);
    let until = Instant::now() + LINGER;
    let drain = async {
        // On the heap: a closing connection needs it, an idle one should not carry it.
        let mut sink = vec![0u8; LINGER_READ_BYTES];
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
    keepalive: Keepalive,
    clock: Clock,
    write_timeout: Duration,
}

impl From<&ConnParams> for Timing {
    fn from(p: &ConnParams) -> Timing {
        Timing {
            keepalive: p.keepalive,
            clock: p.clock,
            write_timeout: p.write_timeout,
        }
    }
}

/// Reads what the socket has into `buf`, waiting for the reactor when it has nothing.
/// Waiting (not reading) is what a re-poll does: the reader and the writer share one
/// task, so every batch the writer sends polls the reader too, and a read attempt at
/// each such poll would cost a `recvfrom` that fails with EAGAIN.
///
/// `drained`: the last read filled less than its buffer, so the socket was empty then;
/// the reader waits for the reactor's readiness before it reads, instead of a read that
/// would fail with EAGAIN (one `recvfrom` per frame received). Bytes that
/// arrived meanwhile are not missed: async-io re-arms the socket's one-shot epoll
/// registration when the wait starts, and epoll reports a socket that is readable then.
async fn read_some(
    tcp: &Async<TcpStream>,
    buf: &mut [u8],
    drained: bool,
) -> std::io::Result<usize> {
    if drained {
        tcp.readable().await?;
    }
    loop {
        match tcp.get_ref().read(buf) {
            Err(e) if e.kind() == ErrorKind::WouldBlock => tcp.readable().await?,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            result => return result,
        }
    }
}

async fn read_loop(
    links: Links<'_>,
    st: &mut ReadState,
    inbox: &Sender<CoreMsg>,
    conn: ConnId,
    kind: ConnKind,
) -> End {
    match read_frames(links, st, inbox, conn, kind).await {
        Ok(never) => match never {},
        Err(end) => end,
    }
}

/// The reader's wait after a frame: room in the core's inbox, or a profile lookup.
type Wait<'a> = Pin<Box<dyn Future<Output = Result<(), SendError<CoreMsg>>> + Send + 'a>>;

/// What the reader does after a frame: wait (for room in the core's inbox, or a profile
/// lookup and then room), then stop.
struct Step<'a> {
    wait: Option<Wait<'a>>,
    stop: Option<End>,
}

/// Forwards a profile lookup's answer (if it came in time) and then the message it
/// was made for.
async fn after_lookup(
    inbox: &Sender<CoreMsg>,
    pending: Pending,
    msg: CoreMsg,
) -> Result<(), SendError<CoreMsg>> {
    if let Some(news) = pending.news().await {
        inbox
            .send(CoreMsg::Input(Input::SharedProfiles(news)))
            .await?;
    }
    inbox.send(msg).await
}

impl Step<'_> {
    const NEXT: Step<'static> = Step {
        wait: None,
        stop: None,
    };
}

/// The reader's loop; it only ends with an [`End`] (the `Err`), so that `?` can end it.
async fn read_frames(
    links: Links<'_>,
    st: &mut ReadState,
    inbox: &Sender<CoreMsg>,
    conn: ConnId,
    kind: ConnKind,
) -> Result<std::convert::Infallible, End> {
    let mut frames_since_yield = 0u32;
    let mut bytes_since_yield = 0usize;
    loop {
        if st.start == st.end {
            // A client that keeps sending would keep this loop ready forever: yield now
            // and then, so the connection's own writer (and every other task on this
            // executor thread) still runs while it floods.
            if bytes_since_yield >= READ_BYTES_PER_YIELD {
                (frames_since_yield, bytes_since_yield) = (0, 0);
                futures_lite::future::yield_now().await;
            }
            st.shrink();
            let drained = std::mem::take(&mut st.drained);
            match read_some(links.tcp, &mut st.buf, drained).await {
                Ok(0) | Err(_) => return Err(End::Peer),
                Ok(n) => {
                    (st.start, st.end, st.read_at) = (0, n, Instant::now());
                    st.drained = n < st.buf.len();
                }
            }
            bytes_since_yield += st.end;
        }
        // Scoped so that nothing of the frame stays in this future across an await.
        let step = {
            let now = links.last_heard.now();
            let (used, read) = st.reader.read(now, &st.buf[st.start..st.end]);
            st.start += used;
            let Some(read) = read else { continue };
            if read.proves_life() {
                links.last_heard.touch();
            }
            on_frame(
                read,
                links,
                inbox,
                conn,
                kind,
                st.read_at,
                st.directory.as_deref(),
            )?
        };
        if let Some(wait) = step.wait
            && wait.await.is_err()
        {
            return Err(End::CoreGone);
        }
        if let Some(end) = step.stop {
            // Reading is over; the writer sends the close. Meanwhile notice the peer
            // leaving, so that its connection does not hold its slot for long.
            let wait = links.t.write_timeout.saturating_add(LINGER);
            return Err(Box::pin(discard_until_eof(links.tcp, end, wait)).await);
        }
        frames_since_yield += 1;
        if frames_since_yield >= READ_FRAMES_PER_YIELD {
            (frames_since_yield, bytes_since_yield) = (0, 0);
            futures_lite::future::yield_now().await;
        }
    }
}

/// What the reader does with one frame read: forward it to the core (with the wait
/// for room in its inbox when full), answer a ping, or stop reading. A player's frame
/// is timed from `arrived`.
fn on_frame<'i>(
    read: Read,
    links: Links<'_>,
    inbox: &'i Sender<CoreMsg>,
    conn: ConnId,
    kind: ConnKind,
    arrived: Instant,
    directory: Option<&Directory>,
) -> Result<Step<'i>, End> {
    Ok(match read {
        Read::Text(text) => {
            let input = Input::from_text(conn, kind, &text);
            // A profile named by a player's message is looked up in the store every
            // shard shares; the core hears the answer first.
            let pending = match (&input, directory) {
                (Input::Message { message, .. }, Some(d)) if kind == ConnKind::Player => {
                    d.lookup(message)
                }
                _ => None,
            };
            // A player's frame is timed to its answer; the AI's answers go to
            // players, not back on its socket.
            let msg = match kind {
                ConnKind::Player => CoreMsg::Frame { input, arrived },
                ConnKind::Ai | ConnKind::AiInProcess => CoreMsg::Input(input),
            };
            match pending {
                Some(pending) => Step {
                    wait: Some(Box::pin(after_lookup(inbox, pending, msg))),
                    stop: None,
                },
                None => Step {
                    wait: try_forward(inbox, msg)?,
                    stop: None,
                },
            }
        }
        Read::Ping(payload) => {
            links.outbox.pong(payload);
            Step::NEXT
        }
        Read::Pong | Read::Fragment | Read::Dropped => Step::NEXT,
        // The writer answers and ends the task.
        Read::Close(code) => {
            links.outbox.peer_closed(code);
            Step {
                wait: None,
                stop: Some(End::Peer),
            }
        }
        // Stop reading; the writer sends the close the core asks for.
        Read::Fail(frame) => Step {
            wait: try_forward(inbox, CoreMsg::Input(Input::BadFrame { conn, frame }))?,
            stop: Some(End::BadFrame),
        },
    })
}

/// Reads and discards until the peer's end of stream (then [`End::Peer`]), for at most
/// `limit` and [`LINGER_BYTES_MAX`] bytes (then `end`).
async fn discard_until_eof(tcp: &Async<TcpStream>, end: End, limit: Duration) -> End {
    let drain = async {
        let mut read_total = 0usize;
        // Closing only: a larger buffer than the connection's own, so that a flooder's
        // input is discarded in a few reads.
        let mut sink = vec![0u8; LINGER_READ_BYTES];
        while read_total < LINGER_BYTES_MAX {
            match read_some(tcp, &mut sink, false).await {
                Ok(0) | Err(_) => return End::Peer,
                Ok(n) => read_total += n,
            }
        }
        std::future::pending().await
    };
    drain
        .or(async {
            Timer::after(limit).await;
            end
        })
        .await
}

/// Hands `msg` to the core task. Waiting for room in a full inbox is rare: the wait
/// is returned boxed, so that it does not enlarge every idle connection's task.
fn try_forward<'a>(inbox: &'a Sender<CoreMsg>, msg: CoreMsg) -> Result<Option<Wait<'a>>, End> {
    match inbox.try_send(msg) {
        Ok(()) => Ok(None),
        Err(TrySendError::Closed(_)) => Err(End::CoreGone),
        Err(TrySendError::Full(msg)) => Ok(Some(Box::pin(inbox.send(msg)))),
    }
}

enum Wake {
    Work,
    Timer,
}

/// How a written batch ends the connection, if it does.
enum Finish {
    /// The core's close went out.
    Closed(CloseCode),
    /// The peer's close was answered.
    Answered,
}

async fn write_loop(links: Links<'_>, woken: &Woken) -> End {
    let t = links.t;
    // The last ping not answered yet (`Keepalive::due` forgets it once the peer is
    // heard after it).
    let mut pinged: Option<Time> = None;
    // One timer, set only when it is not (it fired): a look that finds the peer heard
    // meanwhile sets the next one. Moving it at every message heard would cost a
    // reactor notification each time.
    let mut timer = Deadline::default();
    loop {
        if !timer.is_set() {
            let heard = t.clock.at(links.last_heard.get());
            let look = t.keepalive.next_look(heard, pinged);
            timer.set(Some(t.clock.instant(look)));
        }
        let wake = async {
            woken.wait().await;
            Wake::Work
        }
        .or(async {
            timer.passed().await;
            Wake::Timer
        })
        .await;
        let mut ping = false;
        if let Wake::Timer = wake {
            let now = t.clock.now();
            let heard = t.clock.at(links.last_heard.get());
            match t.keepalive.due(now, heard, pinged) {
                Due::Close => return End::KeepaliveTimeout,
                Due::Nothing => continue,
                Due::Ping => {
                    pinged = Some(now);
                    ping = true;
                }
            }
        }
        // The socket is the writer's from `take` to `written`: the core task's direct
        // writes wait (its frames stay queued, and it wakes this writer again).
        // Scoped: the batch does not stay in this future while it is written.
        let (bytes, finish, answer) = {
            let batch = links.outbox.take();
            if batch.overflowed {
                return End::Overflow;
            }
            let (bytes, finish) = encode_batch(batch, ping);
            (
                bytes,
                finish.0,
                finish.1.map(|since| (since, links.frame_answer)),
            )
        };
        let sent =
            bytes.is_empty() || write_within(t.write_timeout, links.tcp, bytes, answer).await;
        links.outbox.written();
        if !sent {
            return End::WriteTimeout;
        }
        match finish {
            Some(Finish::Closed(code)) => {
                Box::pin(await_peer_close(links, woken)).await;
                return End::Closed(code);
            }
            Some(Finish::Answered) => return End::Peer,
            None => {}
        }
    }
}

/// Gives the peer a moment to answer with its close: the close handshake is over once
/// the reader saw the peer's (it wakes this writer), else after [`LINGER`]. Waiting for
/// the peer's end of stream instead held every connection, and a durable shutdown's
/// exit, for `LINGER` after a browser had answered.
async fn await_peer_close(links: Links<'_>, woken: &Woken) {
    let answered = async {
        while !links.outbox.peer_has_closed() {
            woken.wait().await;
        }
    };
    let linger = async {
        Timer::after(LINGER).await;
    };
    Box::pin(answered.or(linger)).await;
}

/// Every frame of `batch` in one buffer: first the bytes an earlier write left (a frame
/// cut in the middle must be finished), then the ping (`ping`) and the pong (control
/// frames may go between messages), then the text frames, then the close (the core's,
/// or the answer to the peer's). Also returns how the batch ends the connection and
/// when the frame its first text frame answers arrived.
fn encode_batch(batch: Batch, ping: bool) -> (Vec<u8>, (Option<Finish>, Option<Instant>)) {
    let frames_bytes: usize = batch
        .frames
        .iter()
        .map(|f| encode::frame_len(f.len()))
        .sum();
    let mut bytes = batch.unsent;
    bytes.reserve(frames_bytes + 3 * encode::frame_len(125));
    if ping {
        encode::ping(&mut bytes, &[]);
    }
    if let Some(pong) = batch.pong.filter(|_| batch.echo.is_none()) {
        encode::pong(&mut bytes, pong.as_bytes());
    }
    for text in &batch.frames {
        encode::text(&mut bytes, text);
    }
    let finish = if let Some(code) = batch.close {
        encode::close(&mut bytes, Some(code.code()), code.reason());
        Some(Finish::Closed(code))
    } else if let Some(code) = batch.echo {
        encode::close(&mut bytes, code, "");
        Some(Finish::Answered)
    } else {
        None
    };
    (bytes, (finish, batch.answer_since))
}

/// Writes `bytes` within `limit`; false on error or timeout. With `answer`, the
/// batch carries the answer to a frame that arrived at `.0`: the time to the batch's
/// first byte written is observed in `.1` (the answer is at most a few frames behind
/// it, in the same write). The writing future is boxed: it lives only while a batch
/// goes out, and inline it would enlarge every idle connection's task.
async fn write_within(
    limit: Duration,
    tcp: &Async<TcpStream>,
    bytes: Vec<u8>,
    answer: Option<(Instant, &Histogram)>,
) -> bool {
    let send = async move {
        let mut writer = tcp;
        let mut written = 0;
        if let Some((since, histogram)) = answer {
            match writer.write(&bytes).await {
                Ok(n) if n > 0 => written = n,
                _ => return false,
            }
            histogram.observe(since.elapsed().as_secs_f64());
        }
        writer.write_all(&bytes[written..]).await.is_ok()
    };
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
        // Every byte of this future is paid per open connection (the bound: <= 8 KiB per
        // idle websocket in all). It was 1792 bytes before the writer's and the reader's
        // transient states were boxed; 1200 with the core's frame reader.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let tcp = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let tcp = Arc::new(Async::new(tcp).unwrap());
        let config = Config::from_pairs(Vec::<(&str, &str)>::new()).unwrap();
        let (inbox, _rx) = async_channel::bounded(1);
        let (outbox, woken) = Outbox::new(10, 1000);
        let clock = Clock::new(Instant::now());
        let params = ConnParams::new(&config, clock, ConnId(1), ConnKind::Player);
        let stats = Arc::new(ShellStats::default());
        let task = run(tcp, Vec::new(), outbox, woken, inbox, stats, params);
        let size = std::mem::size_of_val(&task);
        assert!(size <= 1280, "connection future grew to {size} bytes");
        // And on the heap, for as long as the connection lives: the frame reader and
        // its read buffer (docs/OPERATIONS.md, "Memory per connection").
        let heap = std::mem::size_of::<ReadState>() + READ_BUFFER_BYTES;
        assert!(heap <= 1536, "reading state grew to {heap} bytes");
    }
}
