//! A connection's bounded outbound queue: the core task pushes frames and close
//! requests, and after each pass writes what it queued straight to the socket when it
//! can ([`Outbox::flush`]); the connection's writer takes over what the socket did not
//! take at once, closes, pongs and pings. The queueing rule is the core's [`OutQueue`]
//! (a newer `state` replaces a queued one the core marked `Newest`; chat lines give way,
//! oldest first, for a `chat_gap` note; a queue over its message or byte limit is
//! overflowed, which ends the connection); this file adds the lock, the socket's
//! ownership and the writer's wake-up.
//!
//! One side writes to the socket at a time, under this lock: the core task only while
//! it holds the lock for one non-blocking write, and only when the writer is not
//! writing and no bytes of an earlier write wait ([`Queue::unsent`]); the writer marks
//! itself busy while it writes outside the lock. So frames reach the socket in the
//! order they were queued, and a partial write is finished before anything else goes.
//! A frame routed to a connection whose queue was empty therefore costs one `sendto` on
//! the core task's thread and no wake-up of the writer; the writer is woken
//! only when bytes remain (a full socket buffer), for a close, an overflow or a pong.
//!
//! The connection's reader uses it too, for the frames it answers itself: the pong to
//! the newest ping (one slot: a newer ping's payload replaces an unsent one, so pongs
//! cannot pile up) and the answer to the peer's close frame.

use std::io::Write as _;
use std::net::TcpStream;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Poll, Waker};
use std::time::Instant;

use async_io::Async;
use prometheus_client::metrics::histogram::Histogram;
use wizard_core::shell::outqueue::{Delivery, OutQueue, Pushed};
use wizard_core::shell::ws::{Control, encode};
use wizard_core::vocabulary::wire::CloseCode;

#[derive(Debug)]
struct Queue {
    /// The text frames, their limits, the close asked for, the overflow.
    out: OutQueue<()>,
    /// The pong to send: only the newest ping is answered.
    pong: Option<Control>,
    /// The peer sent a close frame: answer with this code (`None`: an empty close).
    echo: Option<Option<u16>>,
    /// Something changed since the writer last looked: one wake-up stands for any
    /// number of pushes.
    pending: bool,
    /// The writer waiting for `pending` (a waker slot instead of a channel: no
    /// allocation per connection).
    waker: Option<Waker>,
    /// A frame of this connection the core handled in pass `.1`, read off the socket
    /// at `.0`: the first frame pushed in that pass is its answer.
    due: Option<(Instant, u64)>,
    /// When the frame answered by a queued frame arrived, for the writer to time the
    /// answer (`wizard_frame_answer_seconds`).
    answer_since: Option<Instant>,
    /// The socket, for the core task's direct writes: set once the 101 went out
    /// ([`Outbox::attach`]), taken when the connection's task ends ([`Outbox::detach`]),
    /// so that the core task never writes before the handshake or after the close, and
    /// never holds the last handle of a socket (closing it is the door's work).
    socket: Option<Arc<Async<TcpStream>>>,
    /// Encoded bytes taken from the queue that the socket did not take yet: the writer
    /// sends them before anything else. At most one flush's frames, so within the
    /// queue's byte bound plus framing.
    unsent: Vec<u8>,
    /// The writer is writing outside the lock ([`Outbox::take`] until
    /// [`Outbox::written`]): the core task leaves the socket to it.
    writer_busy: bool,
    /// The core task's pass that last pushed a frame here (see [`Outbox::push`]).
    pushed_pass: Option<u64>,
}

/// A connection's bounded outbound queue, filled by the core task, drained by the
/// connection's writer.
#[derive(Debug)]
pub struct Outbox {
    queue: Mutex<Queue>,
}

/// The writer's end of an [`Outbox`]: waits until something was queued.
#[derive(Debug)]
pub struct Woken(Arc<Outbox>);

impl Woken {
    /// Resolves once something was queued (or a close asked for) since the last call.
    pub fn wait(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| {
            let mut q = self.0.lock();
            if std::mem::take(&mut q.pending) {
                return Poll::Ready(());
            }
            if !q.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                q.waker = Some(cx.waker().clone());
            }
            Poll::Pending
        })
    }

    /// Whether a wake-up is pending.
    #[cfg(test)]
    pub fn is_pending(&self) -> bool {
        self.0.lock().pending
    }
}

/// What the writer took from the queue.
#[derive(Debug, Default)]
pub struct Batch {
    /// Bytes of an earlier write the socket did not take: they go first.
    pub unsent: Vec<u8>,
    pub frames: Vec<String>,
    pub close: Option<CloseCode>,
    pub overflowed: bool,
    pub pong: Option<Control>,
    pub echo: Option<Option<u16>>,
    /// When the frame these frames answer arrived (see [`Outbox::expect_answer`]).
    pub answer_since: Option<Instant>,
}

impl Outbox {
    /// A new queue bounded by `messages_max` frames and `bytes_max` bytes, and the
    /// handle its writer waits on.
    pub fn new(messages_max: usize, bytes_max: usize) -> (Arc<Outbox>, Woken) {
        Outbox::with_queue(OutQueue::new(messages_max, bytes_max))
    }

    /// A new outbox around `out` (e.g. with its chat bound), and the handle its writer
    /// waits on.
    pub fn with_queue(out: OutQueue<()>) -> (Arc<Outbox>, Woken) {
        let outbox = Arc::new(Outbox {
            queue: Mutex::new(Queue {
                out,
                pong: None,
                echo: None,
                pending: false,
                waker: None,
                due: None,
                answer_since: None,
                socket: None,
                unsent: Vec::new(),
                writer_busy: false,
                pushed_pass: None,
            }),
        });
        (Arc::clone(&outbox), Woken(outbox))
    }

    /// Marks the queue changed and takes the waiting writer's waker (woken by the
    /// caller after the lock is released).
    fn mark(q: &mut Queue) -> Option<Waker> {
        q.pending = true;
        q.waker.take()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        // A panic while holding this lock leaves a consistent queue: keep going.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The core task handled a frame of this connection that arrived at `arrived`, in
    /// its pass number `pass`: the first frame pushed in the same pass answers it. A
    /// pass that sends the connection nothing leaves the frame unanswered (a message
    /// the rate limiter dropped), and it is not timed: a frame pushed in a later pass
    /// answers something else. Of several frames handled in one pass, the first times
    /// the answer.
    pub fn expect_answer(&self, arrived: Instant, pass: u64) {
        let mut q = self.lock();
        if q.due.is_none_or(|(_, p)| p != pass) {
            q.due = Some((arrived, pass));
        }
    }

    /// Queues a frame by the core's rule ([`OutQueue::push`]): a `Newest` one replaces
    /// the one queued before it, chat lines give way; past a limit the connection is
    /// overflowed.
    /// `pass` is the core task's pass that sends it (see [`Outbox::expect_answer`]).
    /// Nothing is written and nobody is woken: the core task calls [`Outbox::flush`]
    /// once per pass for every outbox for which this returned true (the first push of
    /// `pass`).
    pub fn push(&self, text: String, delivery: Delivery, pass: u64) -> bool {
        let mut q = self.lock();
        if q.out.push(text, delivery, ()) == Pushed::Refused {
            return false;
        }
        if let Some((arrived, p)) = q.due
            && p == pass
        {
            q.due = None;
            // An answer not yet written is older: it keeps its place.
            q.answer_since.get_or_insert(arrived);
        }
        q.pushed_pass.replace(pass) != Some(pass)
    }

    /// After a pass of the core task: writes every frame queued here in one
    /// non-blocking write on the caller's thread, when the socket is attached, the
    /// writer idle and nothing of an earlier write waits. Bytes the socket does not take
    /// (a full send buffer), a close, an overflow, or a writer busy: the writer is woken
    /// and sends them (within `WRITE_TIMEOUT`, as it does every batch). `scratch` is the
    /// caller's encoding buffer, reused across flushes; `answer` times the answer to a
    /// player's frame at its first byte written. Returns whether the writer was handed
    /// bytes of a partial write.
    pub fn flush(&self, scratch: &mut Vec<u8>, answer: &Histogram) -> bool {
        let mut handed_off = false;
        let waker = {
            let mut q = self.lock();
            let direct = q.socket.is_some()
                && !q.writer_busy
                && q.unsent.is_empty()
                && q.out.accepting()
                && q.echo.is_none();
            if !direct {
                Outbox::mark(&mut q)
            } else if q.out.is_empty() {
                None
            } else {
                scratch.clear();
                for frame in q.out.take_all() {
                    encode::text(scratch, &frame.text);
                }
                let written = match q.socket.as_ref().map(|s| s.get_ref().write(scratch)) {
                    Some(Ok(n)) => n,
                    // Full (EAGAIN), interrupted, or failed: the writer tries it and
                    // ends the connection on an error, as with any of its writes.
                    _ => 0,
                };
                if written > 0
                    && let Some(since) = q.answer_since.take()
                {
                    answer.observe(since.elapsed().as_secs_f64());
                }
                if written < scratch.len() {
                    q.unsent.extend_from_slice(&scratch[written..]);
                    handed_off = true;
                    Outbox::mark(&mut q)
                } else {
                    None
                }
            }
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        handed_off
    }

    /// The 101 went out: the core task may write to `socket` from now on.
    pub fn attach(&self, socket: Arc<Async<TcpStream>>) {
        self.lock().socket = Some(socket);
    }

    /// The connection's task ended: the core task writes nothing more.
    pub fn detach(&self) {
        let socket = self.lock().socket.take();
        drop(socket);
    }

    /// Asks the writer to send a close frame after the frames already queued.
    pub fn close(&self, code: CloseCode) {
        let waker = {
            let mut q = self.lock();
            q.out.close(code);
            Outbox::mark(&mut q)
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Asks the writer to answer a ping with `payload`, replacing a pong not yet sent.
    pub fn pong(&self, payload: Control) {
        let waker = {
            let mut q = self.lock();
            if q.out.close_code().is_some() || q.echo.is_some() {
                return;
            }
            q.pong = Some(payload);
            Outbox::mark(&mut q)
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The peer sent a close frame with `code`: the writer answers it and ends (unless
    /// the core asked for a close first, which then goes out instead).
    pub fn peer_closed(&self, code: Option<u16>) {
        let waker = {
            let mut q = self.lock();
            if q.echo.is_none() {
                q.echo = Some(code);
            }
            Outbox::mark(&mut q)
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Whether the peer's close frame arrived.
    pub fn peer_has_closed(&self) -> bool {
        self.lock().echo.is_some()
    }

    /// Takes everything queued, for the writer, which owns the socket until it calls
    /// [`Outbox::written`].
    pub fn take(&self) -> Batch {
        let mut q = self.lock();
        q.writer_busy = true;
        let frames = q.out.take_all();
        Batch {
            unsent: std::mem::take(&mut q.unsent),
            frames: frames.into_iter().map(|f| f.text).collect(),
            close: q.out.close_code(),
            overflowed: q.out.overflowed(),
            pong: q.pong.take(),
            echo: q.echo,
            answer_since: q.answer_since.take(),
        }
    }

    /// The writer finished writing what it took: the core task may write again.
    pub fn written(&self) {
        self.lock().writer_busy = false;
    }

    /// Frames and bytes queued now.
    pub fn len(&self) -> (usize, usize) {
        self.lock().out.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len().0 == 0
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;
    use std::net::TcpListener;

    use futures_lite::io::AsyncWriteExt;

    use super::*;

    /// A connected pair: the server's end (non-blocking, send buffer bounded to
    /// `send_bytes`) and the peer's (blocking; its receive buffer left as the kernel
    /// sizes it: a small one makes TCP probe a zero window for seconds).
    fn pair(send_bytes: usize) -> (Arc<Async<TcpStream>>, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let peer = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        rustix::net::sockopt::set_socket_send_buffer_size(&server, send_bytes).unwrap();
        (Arc::new(Async::new(server).unwrap()), peer)
    }

    fn encoded(texts: &[&str]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for text in texts {
            encode::text(&mut bytes, text);
        }
        bytes
    }

    fn histogram() -> Histogram {
        Histogram::new([1.0])
    }

    /// Reads exactly `len` bytes from the peer.
    fn read_exactly(peer: &mut TcpStream, len: usize) -> Vec<u8> {
        let mut bytes = vec![0; len];
        peer.read_exact(&mut bytes).unwrap();
        bytes
    }

    #[test]
    fn an_idle_outbox_stays_small() {
        // Paid per open connection (docs/OPERATIONS.md, "Memory per connection").
        let size = std::mem::size_of::<Outbox>();
        assert!(size <= 320, "the outbox grew to {size} bytes");
    }

    #[test]
    fn a_pass_writes_every_frame_it_queued_in_one_write_and_wakes_nobody() {
        let (tcp, mut peer) = pair(65536);
        let (outbox, woken) = Outbox::new(10, 100_000);
        outbox.attach(tcp);
        // Only the first push of a pass asks for a flush.
        assert!(outbox.push("a".into(), Delivery::Every, 1));
        assert!(!outbox.push("b".into(), Delivery::Every, 1));
        assert!(!outbox.flush(&mut Vec::new(), &histogram()));
        assert!(!woken.is_pending(), "the writer was woken");
        assert!(outbox.is_empty());
        assert_eq!(read_exactly(&mut peer, 6), encoded(&["a", "b"]));
        assert!(outbox.push("c".into(), Delivery::Every, 2));
    }

    #[test]
    fn before_the_upgrade_and_while_the_writer_writes_the_writer_is_woken() {
        let (tcp, mut peer) = pair(65536);
        let (outbox, woken) = Outbox::new(10, 100_000);
        // Not attached yet: the 101 may not be out.
        outbox.push("a".into(), Delivery::Every, 1);
        outbox.flush(&mut Vec::new(), &histogram());
        assert!(woken.is_pending());
        assert_eq!(outbox.take().frames, ["a"]);
        outbox.written();
        // The writer is writing: the core task leaves the frame queued for it.
        outbox.attach(tcp);
        let batch = outbox.take();
        assert!(batch.frames.is_empty());
        outbox.push("b".into(), Delivery::Every, 2);
        outbox.flush(&mut Vec::new(), &histogram());
        assert_eq!(outbox.len().0, 1);
        outbox.written();
        outbox.push("c".into(), Delivery::Every, 3);
        outbox.flush(&mut Vec::new(), &histogram());
        assert_eq!(read_exactly(&mut peer, 6), encoded(&["b", "c"]));
    }

    #[test]
    fn a_partial_write_is_finished_by_the_writer_before_anything_else() {
        let (tcp, mut peer) = pair(4096);
        let (outbox, woken) = Outbox::new(1000, 10_000_000);
        outbox.attach(Arc::clone(&tcp));
        // 2.5 MB: more than the send buffer and the peer's receive buffer hold.
        let big: Vec<String> = (0..64u8)
            .map(|i| char::from(b'A' + i % 26).to_string().repeat(40_000))
            .collect();
        for text in &big {
            outbox.push(text.clone(), Delivery::Every, 1);
        }
        // The peer reads nothing yet: the socket takes part of the pass's bytes.
        assert!(
            outbox.flush(&mut Vec::new(), &histogram()),
            "no partial write"
        );
        assert!(woken.is_pending());
        // A later pass: its frame waits behind the unsent bytes.
        outbox.push("after".into(), Delivery::Every, 2);
        assert!(!outbox.flush(&mut Vec::new(), &histogram()));
        let batch = outbox.take();
        assert!(!batch.unsent.is_empty());
        assert_eq!(batch.frames, ["after"]);
        let mut rest = batch.unsent;
        rest.extend(encoded(&["after"]));
        let mut texts: Vec<&str> = big.iter().map(String::as_str).collect();
        texts.push("after");
        let expected = encoded(&texts);
        let reader =
            std::thread::spawn(move || read_exactly(&mut peer, expected.len()) == expected);
        smol::block_on(async { (&*tcp).write_all(&rest).await }).unwrap();
        outbox.written();
        assert!(reader.join().unwrap(), "the peer read other bytes");
    }

    #[test]
    fn nothing_is_queued_after_close() {
        let (outbox, woken) = Outbox::new(10, 1000);
        outbox.push("a".into(), Delivery::Every, 1);
        outbox.close(CloseCode::ShuttingDown);
        outbox.push("b".into(), Delivery::Every, 1);
        outbox.close(CloseCode::MessageFlood);
        let batch = outbox.take();
        assert_eq!(batch.frames, ["a"]);
        assert_eq!(batch.close, Some(CloseCode::ShuttingDown));
        assert!(woken.is_pending());
    }

    #[test]
    fn a_frame_is_answered_by_the_first_push_of_the_pass_that_handled_it() {
        let (outbox, _woken) = Outbox::new(10, 1000);
        let (early, late) = (Instant::now(), Instant::now());
        // Pushed before the frame was handled: not its answer.
        outbox.push("broadcast".into(), Delivery::Every, 1);
        outbox.expect_answer(early, 2);
        outbox.expect_answer(late, 2);
        outbox.push("answer".into(), Delivery::Every, 2);
        outbox.push("more".into(), Delivery::Every, 2);
        assert_eq!(outbox.take().answer_since, Some(early));
        // A pass that sent nothing: the frame had no answer, later frames are not one.
        outbox.expect_answer(late, 3);
        outbox.push("later".into(), Delivery::Every, 4);
        assert_eq!(outbox.take().answer_since, None);
    }

    #[test]
    fn only_the_newest_pong_waits() {
        let (outbox, woken) = Outbox::new(10, 1000);
        for i in 0..100u8 {
            outbox.pong(Control::new(&[i]).unwrap());
        }
        assert!(woken.is_pending());
        let batch = outbox.take();
        assert_eq!(batch.pong.map(|p| p.as_bytes().to_vec()), Some(vec![99]));
        assert_eq!(outbox.take().pong, None);
        outbox.peer_closed(Some(1000));
        outbox.pong(Control::EMPTY);
        let batch = outbox.take();
        assert_eq!((batch.pong, batch.echo), (None, Some(Some(1000))));
    }
}
