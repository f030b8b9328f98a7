//! A connection's bounded outbound queue: the core task pushes frames and close
//! requests, the connection's writer takes everything queued at once. The queueing rule
//! is the core's [`OutQueue`] (a newer `state` replaces a queued one the core marked
//! replaceable; a queue over its message or byte limit is overflowed, which ends the
//! connection); this file adds the lock and the writer's wake-up.
//!
//! The connection's reader uses it too, for the frames it answers itself: the pong to
//! the newest ping (one slot: a newer ping's payload replaces an unsent one, so pongs
//! cannot pile up) and the answer to the peer's close frame.

use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Poll, Waker};
use std::time::Instant;

use wizard_core::outqueue::{OutQueue, Pushed};
use wizard_core::wire::CloseCode;
use wizard_core::ws::Control;

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

    /// Whether a wake-up is pending (for tests).
    pub fn is_pending(&self) -> bool {
        self.0.lock().pending
    }
}

/// What the writer took from the queue.
#[derive(Debug, Default)]
pub struct Batch {
    pub frames: Vec<String>,
    pub close: Option<CloseCode>,
    pub overflowed: bool,
    pub pong: Option<Control>,
    pub echo: Option<Option<u16>>,
    /// When the frame these frames answer arrived (see [`Outbox::expect_answer`]).
    pub answer_since: Option<Instant>,
}

impl Outbox {
    /// A new queue and the handle its writer waits on.
    pub fn new(messages_max: usize, bytes_max: usize) -> (Arc<Outbox>, Woken) {
        let outbox = Arc::new(Outbox {
            queue: Mutex::new(Queue {
                out: OutQueue::new(messages_max, bytes_max),
                pong: None,
                echo: None,
                pending: false,
                waker: None,
                due: None,
                answer_since: None,
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

    /// Queues a frame by the core's rule ([`OutQueue::push`]): a replaceable one
    /// replaces the one queued before it; past a limit the connection is overflowed.
    /// `pass` is the core task's pass that sends it (see [`Outbox::expect_answer`]).
    pub fn push(&self, text: String, replaceable: bool, pass: u64) {
        let waker = {
            let mut q = self.lock();
            if q.out.push(text, replaceable, ()) == Pushed::Refused {
                return;
            }
            if let Some((arrived, p)) = q.due
                && p == pass
            {
                q.due = None;
                // An answer not yet written is older: it keeps its place.
                q.answer_since.get_or_insert(arrived);
            }
            Outbox::mark(&mut q)
        };
        if let Some(waker) = waker {
            waker.wake();
        }
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

    /// Takes everything queued.
    pub fn take(&self) -> Batch {
        let mut q = self.lock();
        let frames = q.out.take_all();
        Batch {
            frames: frames.into_iter().map(|f| f.text).collect(),
            close: q.out.close_code(),
            overflowed: q.out.overflowed(),
            pong: q.pong.take(),
            echo: q.echo,
            answer_since: q.answer_since.take(),
        }
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
    use super::*;

    #[test]
    fn nothing_is_queued_after_close() {
        let (outbox, woken) = Outbox::new(10, 1000);
        outbox.push("a".into(), false, 1);
        outbox.close(CloseCode::ShuttingDown);
        outbox.push("b".into(), false, 1);
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
        outbox.push("broadcast".into(), false, 1);
        outbox.expect_answer(early, 2);
        outbox.expect_answer(late, 2);
        outbox.push("answer".into(), false, 2);
        outbox.push("more".into(), false, 2);
        assert_eq!(outbox.take().answer_since, Some(early));
        // A pass that sent nothing: the frame had no answer, later frames are not one.
        outbox.expect_answer(late, 3);
        outbox.push("later".into(), false, 4);
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
