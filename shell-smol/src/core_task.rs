//! The one task that owns the core [`Server`]: it waits on its inbox or the next
//! deadline, hands every queued input to the core, then routes all outputs at once.
//!
//! Batching is the point: after a wake-up the task drains every
//! input already queued before routing, so a burst of moves costs one wake-up, and each
//! connection's writer is woken once per batch and flushes once. After every batch the
//! task publishes the core's figures ([`crate::snapshot`]) for `/health`, `/ready` and
//! `/metrics`, which never enter this queue. Notes become the log lines listed in
//! `docs/OPERATIONS.md` ("Log lines to watch"); those an attacker can cause are rate
//! limited ([`crate::log_limit`]).
//!
//! With the AI service embedded ([`crate::embedded`]) the task is its transport too:
//! the core's requests go to the service's admission machine as values while routing,
//! and the workers' replies wake the task like inbox messages. An answer due at once
//! (`overloaded`) and the close of the in-process connection are fed back to the core
//! in the next pass, without waiting.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use async_channel::Receiver;
use async_io::Timer;
use futures_lite::FutureExt;
use tracing::info;
use wizard_ai::service::Answered;
use wizard_core::shell::pass::{self, Pass};
use wizard_core::shell::reply_wait::ReplyWait;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::{ConnKind, Delivery, Input, Note, Output, Router};
use wizard_core::vocabulary::wire::{AiRequest, CloseCode};
use wizard_core::{Server, Time};

use crate::deadline::Deadline;
use crate::embedded::Embedded;
use crate::log_limit::LogLimiter;
use crate::metrics::{CoreHistograms, ShellStats};
use crate::note_log::{log_note, log_suppressed};
use crate::outbox::Outbox;
use crate::snapshot::Published;

pub use wizard_core::shell::pass::{BATCH_INPUTS_MAX, INBOX_CAPACITY};
/// After shutdown, the process exits at the latest this long after the grace period.
pub const SHUTDOWN_EXTRA: Duration = Duration::from_secs(3);
/// After the core finished, how long writers get to send their close frames.
pub const CLOSE_DRAIN: Duration = Duration::from_secs(2);
/// Frames (and bytes of them) held for a commit that is not durable yet, at most
/// (the PostgreSQL store): beyond either the core task takes no new input until the
/// store catches up.
pub const HELD_FRAMES_MAX: usize = 65_536;
pub const HELD_BYTES_MAX: usize = 32 * 1024 * 1024;
/// After a shutdown, how long the last passes' frames may wait for their commits
/// before the process exits without them (what they show is not in the store; what
/// was acknowledged is).
pub const COMMIT_WAIT_MAX: Duration = Duration::from_secs(10);

/// The core task's view of the clock: [`Time`] is microseconds since `start`.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: Instant,
}

impl Clock {
    pub fn new(start: Instant) -> Clock {
        Clock { start }
    }

    pub fn now(&self) -> Time {
        Time(u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    pub fn instant(&self, t: Time) -> Instant {
        self.start + Duration::from_micros(t.0)
    }

    /// `at` on this clock (the start for an instant before it).
    pub fn at(&self, at: Instant) -> Time {
        let us = at.saturating_duration_since(self.start).as_micros();
        Time(u64::try_from(us).unwrap_or(u64::MAX))
    }
}

/// What the rest of the shell asks of the core task.
#[derive(Debug)]
pub enum CoreMsg {
    /// A websocket was upgraded; its outbound queue comes along.
    Opened {
        conn: ConnId,
        kind: ConnKind,
        ip: IpAddr,
        outbox: Arc<Outbox>,
    },
    /// A player's text frame, read off its socket at `arrived` (for
    /// `wizard_frame_answer_seconds`).
    Frame { input: Input, arrived: Instant },
    /// Any other input for the core.
    Input(Input),
}

/// Everything the core task owns.
#[derive(Debug)]
pub struct CoreTask {
    pub server: Server,
    pub clock: Clock,
    pub inbox: Receiver<CoreMsg>,
    pub shutdown: Receiver<()>,
    pub stats: Arc<ShellStats>,
    /// Where `/health`, `/ready` and `/metrics` read the core's figures.
    pub published: Arc<Published>,
    pub logs: LogLimiter,
    /// The durable store, if `STORE` names one: each pass's records are committed
    /// before its frames are sent.
    pub store: Option<crate::store::Backend>,
    /// The embedded AI service (`EMBEDDED_AI=1`), linked in process.
    pub ai: Option<Embedded>,
    /// The shards' shared quick-play pool (sharded on PostgreSQL): the core's ticket
    /// changes go there after every pass.
    #[cfg(feature = "postgres")]
    pub pool: Option<crate::store::pool::SharedPool>,
}

enum Wake {
    Msg(CoreMsg),
    /// A reply from the embedded AI service's workers.
    AiReply(Answered),
    /// Inputs the last routing produced for the core itself (see [`State::loopback`]).
    Loopback,
    Deadline,
    /// The store made a commit durable, or failed.
    Store,
    Shutdown,
    /// Every sender is gone: nothing more can happen.
    Closed,
}

struct State {
    conns: HashMap<ConnId, Arc<Outbox>>,
    out: Vec<Output>,
    /// The pass of the loop, counted: a frame handled in a pass is answered by the
    /// first frame its connection is sent in the same pass ([`Outbox::expect_answer`]).
    pass: u64,
    /// Inputs for the next pass from the in-process AI link: its at-once answers and its
    /// close. At most one per AI request or close of one pass (the core keeps at most
    /// `AI_MAX_INFLIGHT` requests pending on a connection).
    loopback: Vec<Input>,
    /// Passes whose frames wait for their records to be durable, oldest first (the
    /// PostgreSQL store's group commit). Once one waits, every later pass waits
    /// behind it, so that a connection's frames keep their order.
    held: VecDeque<Held>,
    held_frames: usize,
    held_bytes: usize,
    /// The outboxes the routing of this pass pushed to (see [`Outboxes::touched`]).
    touched: Vec<Arc<Outbox>>,
    /// The buffer the pass's frames are encoded into for the direct writes
    /// ([`Outbox::flush`]); shrunk back after a flush larger than
    /// [`SCRATCH_KEPT_BYTES`].
    scratch: Vec<u8>,
    /// The embedded AI's requests waiting for their answer, by when the core needs it:
    /// an answer wakes the core only once one is needed ([`ReplyWait`]).
    replies: ReplyWait,
}

impl State {
    /// Whether the held passes reached [`HELD_FRAMES_MAX`] or [`HELD_BYTES_MAX`].
    fn held_full(&self) -> bool {
        self.held_frames >= HELD_FRAMES_MAX || self.held_bytes >= HELD_BYTES_MAX
    }
}

/// One pass's outputs, held until its records are durable.
struct Held {
    /// The store's ticket that must be durable first.
    ticket: u64,
    pass: u64,
    outputs: Vec<Output>,
    frames: usize,
    bytes: usize,
}

/// The encoding buffer of the direct writes keeps at most this capacity between passes.
const SCRATCH_KEPT_BYTES: usize = 64 * 1024;

/// Where the core task carries out outputs: the connections' outboxes, the log and the
/// AI round-trip histogram.
struct Outboxes<'a> {
    conns: &'a HashMap<ConnId, Arc<Outbox>>,
    /// The outboxes this pass pushed frames to, each once: flushed after routing.
    touched: &'a mut Vec<Arc<Outbox>>,
    ai: Option<&'a Embedded>,
    replies: &'a mut ReplyWait,
    loopback: &'a mut Vec<Input>,
    logs: &'a mut LogLimiter,
    histograms: &'a CoreHistograms,
    now_us: u64,
    pass: u64,
}

impl Router for Outboxes<'_> {
    fn send(&mut self, conn: ConnId, text: String, delivery: Delivery) {
        if let Some(outbox) = self.conns.get(&conn)
            && outbox.push(text, delivery, self.pass)
        {
            self.touched.push(Arc::clone(outbox));
        }
    }

    fn ai_request(&mut self, conn: ConnId, request: Box<AiRequest>, needed_at: Time) {
        match self.ai.filter(|ai| ai.conn == conn) {
            Some(ai) => {
                let request_id = request.request_id();
                match ai.link.submit(*request) {
                    Some(reply) => self.loopback.push(Input::AiMessage {
                        conn,
                        reply: Ok(reply),
                        request_id: None,
                        arrived: None,
                    }),
                    None => self.replies.asked(request_id, needed_at),
                }
            }
            // Not the in-process service: the request's frame, as the core's default.
            None => self.send(
                conn,
                wizard_core::vocabulary::wire::encode_ai_request(&request),
                Delivery::Every,
            ),
        }
    }

    fn close(&mut self, conn: ConnId, code: CloseCode) {
        if let Some(outbox) = self.conns.get(&conn) {
            outbox.close(code);
        } else if self.ai.is_some_and(|ai| ai.conn == conn) {
            // No socket to close: the in-process connection is gone at once.
            self.loopback.push(Input::Closed { conn });
            self.replies.clear();
        }
    }

    fn note(&mut self, note: Note) {
        if let Note::AiAnswered { round_trip_us } = note {
            let seconds = round_trip_us as f64 / 1e6;
            self.histograms.ai_round_trip_seconds.observe(seconds);
            return;
        }
        if let Note::QuickPlaySeated { waited_us, .. } = &note {
            for us in waited_us {
                let seconds = *us as f64 / 1e6;
                self.histograms.quick_play_seat_seconds.observe(seconds);
            }
        }
        log_note(&note, self.logs, self.now_us);
    }
}

impl CoreTask {
    /// Runs until the core reports it finished after a shutdown (or the grace period
    /// plus [`SHUTDOWN_EXTRA`] passed). Fails when a commit to the store fails: the
    /// frames of that pass are not sent, and the process should exit, so that it
    /// restarts from what was committed.
    pub async fn run(mut self) -> Result<(), crate::RunError> {
        let mut st = State {
            conns: HashMap::new(),
            out: Vec::with_capacity(256),
            pass: 0,
            loopback: Vec::new(),
            held: VecDeque::new(),
            held_frames: 0,
            held_bytes: 0,
            touched: Vec::new(),
            scratch: Vec::with_capacity(4096),
            replies: ReplyWait::default(),
        };
        if let Some(conn) = self.ai.as_ref().map(|ai| ai.conn) {
            let ip = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
            let kind = ConnKind::AiInProcess;
            let now = self.clock.now();
            self.handle(now, Input::Opened { conn, kind, ip }, &mut st);
            self.published.publish(&self.server);
            let (out, pass) = (std::mem::take(&mut st.out), st.pass);
            self.route(&mut st, out, pass, now);
        }
        let mut hard_stop: Option<Instant> = None;
        let mut shutdown_open = true;
        let mut timer = Deadline::default();
        loop {
            // The core's next deadline or the embedded AI's first answer needed later,
            // on the grid; the hard stop after a shutdown; a store that retries by
            // itself says when.
            let wake_at =
                pass::next_wake(self.server.poll_timeout(), &st.replies, self.clock.now())
                    .map(|t| self.clock.instant(t));
            let retry_at = self.store.as_ref().and_then(|s| s.retry_at());
            timer.set([wake_at, hard_stop, retry_at].into_iter().flatten().min());
            // With too much held, or while the store cannot commit, nothing new is
            // taken until the store catches up: running games pause.
            let full = st.held_full() || self.store_unavailable();
            let wake = if full {
                self.wait_for_store(&mut timer, shutdown_open).await
            } else if st.loopback.is_empty() {
                let answers = st.replies.wake_on_answer(self.clock.now());
                self.wait(&mut timer, shutdown_open, answers).await
            } else {
                Wake::Loopback
            };
            ShellStats::bump(&self.stats.core_wakeups);
            st.pass += 1;
            let pass = Pass::begin(self.clock.now());
            let now = pass.now();
            let inputs_before = self.stats.core_inputs.load(Ordering::Relaxed);
            match wake {
                Wake::Msg(msg) => self.apply(now, msg, &mut st),
                Wake::AiReply(answered) => {
                    st.replies.answered(answered.reply.request_id());
                    self.ai_reply(now, answered, &mut st);
                }
                Wake::Loopback => {
                    for input in std::mem::take(&mut st.loopback) {
                        ShellStats::bump(&self.stats.core_inputs);
                        self.handle(now, input, &mut st);
                    }
                }
                Wake::Deadline => {
                    if let Some(store) = self.store.as_mut() {
                        store.retry(Instant::now(), false);
                    }
                    if !full {
                        self.handle(now, Input::Timeout, &mut st);
                    }
                }
                Wake::Store => {
                    if let Some(store) = self.store.as_mut() {
                        store.retry(Instant::now(), true);
                    }
                    if let Some(e) = self.store.as_ref().and_then(|s| s.failed()) {
                        return Err(self.store_lost(e));
                    }
                }
                Wake::Shutdown => {
                    shutdown_open = false;
                    if self.store.is_some() {
                        info!(
                            "Shutting down: games are kept in the store; closing everyone with 1012"
                        );
                    } else {
                        info!(
                            "Shutting down: refusing new games, closing everyone after the grace period"
                        );
                    }
                    self.handle(now, Input::Shutdown, &mut st);
                    let grace = Duration::from_micros(self.server.config().shutdown_grace_us);
                    hard_stop = Some(Instant::now() + grace + SHUTDOWN_EXTRA);
                }
                Wake::Closed => break,
            }
            if !full {
                let mut shell = (&mut self, &mut st);
                pass.drain(
                    &mut shell,
                    |(task, _)| task.inbox.try_recv().ok(),
                    |(task, st), now, msg| task.apply(now, msg, st),
                );
                pass.drain(
                    &mut shell,
                    |(task, _)| task.ai.as_ref()?.link.replies().try_recv().ok(),
                    |(task, st), now, answered| {
                        st.replies.answered(answered.reply.request_id());
                        task.ai_reply(now, answered, st);
                    },
                );
                if let Some(timeout) = pass.timeout(self.server.poll_timeout()) {
                    self.handle(now, timeout, &mut st);
                }
            }
            let inputs = self.stats.core_inputs.load(Ordering::Relaxed) - inputs_before;
            if inputs > 0 {
                self.stats.core.batch_inputs.observe(inputs as f64);
            }
            // Before routing: a client that sees this batch's frames and then asks
            // `/health` or `/metrics` finds them counted.
            self.published.publish(&self.server);
            self.published.publish_profiles(&mut self.server);
            #[cfg(feature = "postgres")]
            if let Some(pool) = &self.pool {
                pool.push(self.server.take_pool_changes());
            }
            // Commit before acknowledge: nothing of this pass is sent before its records
            // are in the store.
            let records = self.server.take_records();
            let mut ticket = None;
            if let (Some(store), false) = (self.store.as_mut(), records.is_empty()) {
                match store.commit(records) {
                    Ok(t) => ticket = Some(t),
                    Err(e) => {
                        st.out.clear();
                        return Err(crate::RunError::StoreFailed(e));
                    }
                }
                ShellStats::bump(&self.stats.store_commits);
            }
            self.route_or_hold(&mut st, ticket, now);
            self.release(&mut st, now);
            self.publish_store();
            if self.server.is_finished() || hard_stop.is_some_and(|h| Instant::now() >= h) {
                break;
            }
        }
        // The last passes' frames (the closes among them) once their records are in,
        // waiting [`COMMIT_WAIT_MAX`] at most: what was acknowledged is in the store
        // already, what was not is nobody's loss.
        let given_up = Instant::now() + COMMIT_WAIT_MAX;
        while !st.held.is_empty() {
            let retry_at = self.store.as_ref().and_then(|s| s.retry_at());
            timer.set(Some(retry_at.map_or(given_up, |r| r.min(given_up))));
            let wake = self.wait_for_store(&mut timer, false).await;
            if Instant::now() >= given_up {
                return Err(
                    self.store_lost(format!("no commit for {} s", COMMIT_WAIT_MAX.as_secs()))
                );
            }
            if let Some(store) = self.store.as_mut() {
                store.retry(Instant::now(), matches!(wake, Wake::Store));
            }
            if let Some(e) = self.store.as_ref().and_then(|s| s.failed()) {
                return Err(self.store_lost(e));
            }
            self.release(&mut st, self.clock.now());
        }
        self.drain_closes(&mut st).await;
        // The store's last sync happens when it is dropped, after the closes.
        drop(self.store.take());
        Ok(())
    }

    /// The store failed (or a commit took too long): nothing held is sent, and the
    /// process must exit so that a standby or a restart takes over from what was
    /// committed.
    fn store_lost(&mut self, why: String) -> crate::RunError {
        tracing::error!(error = %why, "Store lost: acknowledging nothing more, exiting");
        crate::RunError::StoreFailed(why)
    }

    /// Sends this pass's outputs now when nothing waits for the store, or holds them
    /// behind `ticket` (or behind the passes already held, in order).
    fn route_or_hold(&mut self, st: &mut State, ticket: Option<u64>, now: Time) {
        let durable = self
            .store
            .as_ref()
            .map_or(u64::MAX, |s| s.durable_through());
        let waits = ticket.is_some_and(|t| t > durable);
        if st.held.is_empty() && !waits {
            let (out, pass) = (std::mem::take(&mut st.out), st.pass);
            self.route(st, out, pass, now);
            return;
        }
        if st.out.is_empty() && ticket.is_none() {
            return;
        }
        let ticket = match ticket {
            Some(t) => t,
            None => st.held.back().map_or(0, |h| h.ticket),
        };
        let outputs = std::mem::replace(&mut st.out, Vec::with_capacity(256));
        let (mut frames, mut bytes) = (0, 0);
        for output in &outputs {
            if let Output::Send { text, .. } = output {
                frames += 1;
                bytes += text.len();
            }
        }
        st.held_frames += frames;
        st.held_bytes += bytes;
        st.held.push_back(Held {
            ticket,
            pass: st.pass,
            outputs,
            frames,
            bytes,
        });
    }

    /// Sends the held passes whose records are durable now, oldest first.
    fn release(&mut self, st: &mut State, now: Time) {
        let Some(store) = &self.store else { return };
        let durable = store.durable_through();
        while st.held.front().is_some_and(|h| h.ticket <= durable) {
            let Some(held) = st.held.pop_front() else {
                break;
            };
            st.held_frames -= held.frames;
            st.held_bytes -= held.bytes;
            self.route(st, held.outputs, held.pass, now);
        }
    }

    /// Waits for the store's next wake-up, for `timer` or for the shutdown signal
    /// (while `shutdown_open`), taking nothing else.
    async fn wait_for_store(&self, timer: &mut Deadline, shutdown_open: bool) -> Wake {
        let store = async {
            match self.store.as_ref().map(|s| s.wakes()) {
                Some(wakes) => match wakes.recv().await {
                    Ok(()) => Wake::Store,
                    Err(_) => std::future::pending().await,
                },
                None => std::future::pending().await,
            }
        };
        let timer = async {
            timer.passed().await;
            Wake::Deadline
        };
        let shutdown = async {
            if !shutdown_open {
                return std::future::pending().await;
            }
            let _ = self.shutdown.recv().await;
            Wake::Shutdown
        };
        store.or(timer).or(shutdown).await
    }

    /// Whether commits wait for the store to come back (games pause meanwhile).
    fn store_unavailable(&self) -> bool {
        self.store
            .as_ref()
            .is_some_and(|s| s.unavailable().is_some())
    }

    /// Publishes why the store does not acknowledge now, if it does not (`/ready`,
    /// `/metrics`).
    fn publish_store(&self) {
        if let Some(store) = &self.store {
            self.published
                .set_store_unavailable(store.unavailable().as_deref());
        }
    }

    /// The next reason to run: a message, `timer` (pending forever while unset), the
    /// shutdown signal, or, when `answers` (one is needed already), an answer of the
    /// embedded AI. Otherwise answers wait in the link's queue for the next pass: no
    /// listener is registered, so a worker's reply wakes nobody.
    async fn wait(&self, timer: &mut Deadline, shutdown_open: bool, answers: bool) -> Wake {
        let msg = async {
            match self.inbox.recv().await {
                Ok(msg) => Wake::Msg(msg),
                Err(_) => Wake::Closed,
            }
        };
        let timer = async {
            timer.passed().await;
            Wake::Deadline
        };
        let shutdown = async {
            if !shutdown_open {
                return std::future::pending().await;
            }
            // A trigger or a dropped handle both mean shut down.
            let _ = self.shutdown.recv().await;
            Wake::Shutdown
        };
        let ai = async {
            match self
                .ai
                .as_ref()
                .filter(|_| answers)
                .map(|ai| ai.link.replies())
            {
                Some(replies) => match replies.recv().await {
                    Ok(answered) => Wake::AiReply(answered),
                    // The workers are gone (only when the link is dropped).
                    Err(_) => std::future::pending().await,
                },
                None => std::future::pending().await,
            }
        };
        // Only a store that makes commits durable later wakes a running loop (the
        // PostgreSQL store); the SQLite store wakes only a paused one
        // (`wait_for_store`), so a pass registers no listener for it.
        let store = async {
            match self.store.as_ref().and_then(|s| s.wakes_while_running()) {
                Some(wakes) => match wakes.recv().await {
                    Ok(()) => Wake::Store,
                    Err(_) => std::future::pending().await,
                },
                None => std::future::pending().await,
            }
        };
        store.or(msg).or(ai).or(timer).or(shutdown).await
    }

    /// A reply of the embedded AI service's workers, as the core takes an AI message
    /// (its round trip ending when the worker made it).
    fn ai_reply(&mut self, now: Time, answered: Answered, st: &mut State) {
        let Some(conn) = self.ai.as_ref().map(|ai| ai.conn) else {
            return;
        };
        ShellStats::bump(&self.stats.core_inputs);
        let input = Input::AiMessage {
            conn,
            reply: Ok(answered.reply),
            request_id: None,
            arrived: Some(self.clock.at(answered.at)),
        };
        self.handle(now, input, st);
    }

    fn apply(&mut self, now: Time, msg: CoreMsg, st: &mut State) {
        ShellStats::bump(&self.stats.core_inputs);
        match msg {
            CoreMsg::Opened {
                conn,
                kind,
                ip,
                outbox,
            } => {
                st.conns.insert(conn, outbox);
                self.handle(now, Input::Opened { conn, kind, ip }, st);
            }
            CoreMsg::Frame { input, arrived } => {
                let conn = match input {
                    Input::Message { conn, .. } | Input::Undecodable { conn, .. } => Some(conn),
                    _ => None,
                };
                self.handle(now, input, st);
                if let Some(outbox) = conn.and_then(|c| st.conns.get(&c)) {
                    outbox.expect_answer(arrived, st.pass);
                }
            }
            CoreMsg::Input(input) => {
                let closed = match input {
                    Input::Closed { conn } => Some(conn),
                    _ => None,
                };
                self.handle(now, input, st);
                if let Some(conn) = closed {
                    st.conns.remove(&conn);
                }
            }
        }
    }

    /// One `Server::handle`, timed for `wizard_core_handle_seconds`.
    fn handle(&mut self, now: Time, input: Input, st: &mut State) {
        let kind = input.kind_name();
        let started = Instant::now();
        self.server.handle(now, input, &mut st.out);
        self.stats.core.handled(kind, started.elapsed());
    }

    /// Carries out `outputs` of pass `pass` (keeping the vector's allocation in
    /// `st.out` when that is empty).
    fn route(&mut self, st: &mut State, mut outputs: Vec<Output>, pass: u64, now: Time) {
        let mut into = Outboxes {
            conns: &st.conns,
            touched: &mut st.touched,
            ai: self.ai.as_ref(),
            replies: &mut st.replies,
            loopback: &mut st.loopback,
            logs: &mut self.logs,
            histograms: &self.stats.core,
            now_us: now.0,
            pass,
        };
        for output in outputs.drain(..) {
            output.route(&mut into);
        }
        // Every frame of the pass is queued: each connection's in one write.
        for outbox in st.touched.drain(..) {
            if outbox.flush(&mut st.scratch, &self.stats.core.frame_answer_seconds) {
                ShellStats::bump(&self.stats.write_handoffs);
            }
        }
        if st.scratch.capacity() > SCRATCH_KEPT_BYTES {
            st.scratch = Vec::with_capacity(4096);
        }
        if st.out.capacity() == 0 {
            st.out = outputs;
        }
        self.logs.summaries(now.0, log_suppressed);
    }

    /// After the core finished, keeps accepting `Closed` reports until every connection
    /// is gone or [`CLOSE_DRAIN`] passed, so close frames go out before the exit.
    async fn drain_closes(&mut self, st: &mut State) {
        let until = Instant::now() + CLOSE_DRAIN;
        while !st.conns.is_empty() {
            let timer = async {
                Timer::at(until).await;
                None
            };
            let msg = async { self.inbox.recv().await.ok() };
            match msg.or(timer).await {
                Some(CoreMsg::Input(Input::Closed { conn })) => {
                    st.conns.remove(&conn);
                }
                Some(CoreMsg::Opened { outbox, .. }) => {
                    outbox.close(wizard_core::vocabulary::wire::CloseCode::ShuttingDown)
                }
                Some(CoreMsg::Input(_) | CoreMsg::Frame { .. }) => {}
                None => break,
            }
        }
    }
}
