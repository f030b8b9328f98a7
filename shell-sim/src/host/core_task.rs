//! The simulated shell around the real `wizard_core::Server`: the core task's loop
//! (wake, drain up to `BATCH_INPUTS_MAX` inputs at one `now`, route every output), the
//! bounded inbox whose full state makes readers wait, the per-connection outboxes, the
//! load probe, and one server thread whose CPU time comes from the cost model and is
//! metered by the CFS quota. The thread's turns go to the core task, the probe and the
//! accept path as shell-smol's executor gives them (`executor.rs`). Lag is not injected
//! anywhere: the probe wakes late exactly when the thread was busy or throttled.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr};

use wizard_core::machine::records::Record;
use wizard_core::shell::door::Door;
use wizard_core::shell::pass::{self, Pass};
use wizard_core::shell::reply_wait::ReplyWait;
use wizard_core::shell::ws::FrameReader;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::{ConnKind, Delivery, Input, MoveSource, Output};
use wizard_core::vocabulary::wire::{AiReply, ClientMessage};
use wizard_core::{Server, Time};

use crate::host::executor::{Executor, Turn};
use crate::host::outbox::Outbox;
use crate::host::probe::Probe;
use crate::model::conn_map::ConnMap;
use crate::model::cost::{CostModel, Sent, WorkKind};
use crate::model::cpu::Cpu;
use crate::model::net::{Arrive, Ev, Net};
use crate::model::queue::EventQueue;

pub use wizard_core::shell::pass::{BATCH_INPUTS_MAX, INBOX_CAPACITY};

/// What one handled input was, for the checkers and the report.
#[derive(Clone, Copy, Debug)]
pub struct Handled {
    pub now: Time,
    pub conn: Option<ConnId>,
    pub kind: WorkKind,
    /// For player messages: the message type; for AI messages: whether it decoded.
    pub message: Option<&'static str>,
    pub ai_decoded: Option<bool>,
    pub ai_request_id: Option<u64>,
    pub is_sample: bool,
    pub is_timeout: bool,
    /// The token bucket dropped it.
    pub dropped: bool,
    /// Messages the core accepted past the token bucket with this input.
    pub messages_accepted: u64,
    pub lobbies_created: u64,
}

/// Sees every handled input with its outputs, before they are routed.
pub trait Observer {
    fn handled(&mut self, h: &Handled, input: &Input, out: &[Output], server: &Server);
}

/// The simulated shell.
#[derive(Debug)]
pub struct Host {
    pub server: Server,
    pub cpu: Cpu,
    pub cost: CostModel,
    inbox: VecDeque<Input>,
    /// Inputs whose readers wait for room in the inbox.
    blocked: VecDeque<Input>,
    pub inbox_len_max: usize,
    pub outboxes: ConnMap<Outbox>,
    kinds: ConnMap<ConnKind>,
    /// The embedded AI service's in-process link (`EMBEDDED_AI=1`), while it is open.
    pub(crate) in_process: Option<ConnId>,
    /// Its requests waiting for their answer, by when the core needs it, and the
    /// answers that came before that and wait for the core's next pass, as in
    /// shell-smol's core task ([`ReplyWait`]).
    pub(crate) replies: ReplyWait,
    held_replies: VecDeque<Input>,
    pub thread_free_at: Time,
    /// The core task has inputs or a due deadline.
    core_ready: bool,
    /// The thread's other tasks and whose turn it is.
    pub exec: Executor,
    timer_scheduled: Option<Time>,
    probe: Probe,
    pub probe_intended: Time,
    out: Vec<Output>,
    /// Each outbox's limits: frames, bytes, chat lines.
    queue_limits: (usize, usize, usize),
    window_bytes: usize,
    /// Handled inputs (for the report's speed figures).
    pub inputs_handled: u64,
    /// Connections dropped because their outbox overflowed (slow readers).
    pub overflows: u64,
    /// Queued `state`s without events replaced by a newer one (slow readers).
    pub states_replaced: u64,
    /// The shell's door (the core's `overload::door::Door`): every socket it holds.
    pub door: Door,
    /// Sockets admitted that never sent their request head (silent and slow-head
    /// attackers).
    pub(crate) silent: ConnMap<()>,
    /// The frame readers of connections that send raw frame bytes.
    pub(crate) readers: ConnMap<FrameReader>,
    /// Upgrades answered HTTP 503 (a reserve slot: the socket cap is reached) and
    /// sockets the door refused, closed at once.
    pub http_503: u64,
    pub tcp_dropped: u64,
    /// Waiting sockets the door evicted to make room, and silent sockets closed at
    /// `FIRST_BYTE_TIMEOUT`.
    pub tcp_evicted: u64,
    pub first_byte_timeouts: u64,
    /// The most sockets the door held at once.
    pub sockets_open_max: usize,
    /// Honest players' sockets (simulated clients) refused or answered 503.
    pub honest_refused: u64,
    /// Frame floods the readers reported (`Read::Fail(BadFrame::Flood)`).
    pub frame_floods: u64,
    /// Broken door and routing promises, for the report (see `door.rs`, `writer.rs`).
    pub door_violations: Vec<(Time, String)>,
    /// When a mute connection was last heard from, and last pinged (`lifecycle.rs`).
    pub(crate) last_heard: ConnMap<(Time, Option<Time>)>,
    /// Connections closed at `KEEPALIVE_TIMEOUT` and at `WRITE_TIMEOUT`.
    pub keepalive_timeouts: u64,
    pub write_timeouts: u64,
    /// The core keeps records for a durable store; the shell takes them every pass.
    pub durable: bool,
    /// Commits to the durable store (passes that made records), and their records.
    pub store_commits: u64,
    pub store_records: u64,
    /// The writer's modelled fold CPU not yet charged (under a microsecond).
    pub(crate) fold_us_owed: f64,
    /// The durable store as a restart finds it (`restart.rs`): every pass's records with
    /// the time their commit ended, kept only when the scenario restarts the process.
    pub(crate) journal: Option<Vec<(Time, Vec<Record>)>>,
    /// The records of the pass being run, committed at its end.
    pub(crate) pending_records: Vec<Record>,
    /// The last pass: when it started and when its CPU time (commit included) ended.
    pub(crate) last_pass: (Time, Time),
    /// The process was killed and is not back yet: nothing runs, sockets are refused.
    pub down: bool,
    /// Connections below this id belonged to a killed process: their frames reach no one.
    pub(crate) dead_below: ConnId,
    /// Times the process was killed and started again on its store.
    pub restarts: u64,
    /// Sockets that reached a killed process, or one not started again yet.
    pub refused_while_down: u64,
    /// Samples the probe took.
    pub probe_samples: u64,
    /// The core finished its shutdown: the process is gone.
    pub finished_at: Option<Time>,
    /// Sockets refused because the process was gone.
    pub refused_after_exit: u64,
}

impl Host {
    pub fn new(server: Server, cpu: Cpu, cost: CostModel, window_bytes: usize) -> Host {
        let interval = server.config().load_sample_interval_us;
        let messages_max = server.config().shell.outbound_queue_messages_max;
        let bytes_max = server.config().shell.outbound_queue_bytes_max;
        let chat_max = server.config().shell.outbound_queue_chat_messages_max;
        let door = Door::for_config(server.config());
        let mut probe = Probe::new(interval, Time::ZERO, cpu.stat());
        let first = probe.next_sleep_us();
        let backlog =
            usize::try_from(server.config().shell.listen_backlog_max).unwrap_or(usize::MAX);
        let exec = Executor::new(backlog);
        Host {
            server,
            cpu,
            cost,
            inbox: VecDeque::new(),
            blocked: VecDeque::new(),
            inbox_len_max: 0,
            outboxes: ConnMap::default(),
            kinds: ConnMap::default(),
            in_process: None,
            replies: ReplyWait::default(),
            held_replies: VecDeque::new(),
            thread_free_at: Time::ZERO,
            core_ready: false,
            exec,
            timer_scheduled: None,
            probe,
            probe_intended: Time(first),
            out: Vec::with_capacity(256),
            queue_limits: (messages_max, bytes_max, chat_max),
            window_bytes,
            inputs_handled: 0,
            overflows: 0,
            states_replaced: 0,
            door,
            silent: ConnMap::default(),
            readers: ConnMap::default(),
            http_503: 0,
            tcp_dropped: 0,
            tcp_evicted: 0,
            first_byte_timeouts: 0,
            sockets_open_max: 0,
            honest_refused: 0,
            frame_floods: 0,
            door_violations: Vec::new(),
            last_heard: ConnMap::default(),
            keepalive_timeouts: 0,
            write_timeouts: 0,
            durable: false,
            store_commits: 0,
            store_records: 0,
            fold_us_owed: 0.0,
            journal: None,
            pending_records: Vec::new(),
            last_pass: (Time::ZERO, Time::ZERO),
            down: false,
            dead_below: ConnId(0),
            restarts: 0,
            refused_while_down: 0,
            probe_samples: 0,
            finished_at: None,
            refused_after_exit: 0,
        }
    }

    /// Schedules the first probe wake-up and core deadline.
    pub fn start(&mut self, q: &mut EventQueue<Ev>) {
        q.push(self.probe_intended, Ev::ProbeWake);
        self.schedule_timer(q, Time::ZERO);
    }

    pub fn inbox_len(&self) -> usize {
        self.inbox.len()
    }

    /// Every connection whose reader task runs.
    pub(crate) fn kinds_held(&self) -> Vec<ConnId> {
        self.kinds.iter().map(|(c, _)| c).collect()
    }

    /// A killed process's queues and tasks (`restart.rs`): all gone.
    pub(crate) fn clear_queues(&mut self) {
        self.inbox.clear();
        self.blocked.clear();
        self.held_replies.clear();
        self.outboxes = ConnMap::default();
        self.kinds = ConnMap::default();
        self.core_ready = false;
        self.timer_scheduled = None;
    }

    /// A new process's load probe, first awake one sleep after `now`.
    pub(crate) fn new_probe(&mut self, mut probe: Probe, now: Time) {
        self.probe_intended = now.plus_us(probe.next_sleep_us());
        self.probe = probe;
    }

    /// The kind of `conn` while the core holds it (its reader task runs).
    pub(crate) fn kind(&self, conn: ConnId) -> Option<ConnKind> {
        self.kinds.get(&conn).copied()
    }

    /// A socket opened: the door admits it, and the request head is read at once (a
    /// real client sends it within milliseconds). A refusal or a reserve slot fails the
    /// upgrade, and the core never hears of the connection (`None`).
    fn opened(
        &mut self,
        q: &mut EventQueue<Ev>,
        net: &Net,
        now: Time,
        conn: ConnId,
        ip: IpAddr,
        kind: ConnKind,
    ) -> Option<Input> {
        if !self.admit_open(q, net, now, conn, ip) {
            return None;
        }
        self.kinds.insert(conn, kind);
        self.watch_keepalive(q, net, now, conn);
        self.outboxes
            .insert(conn, Outbox::new(self.queue_limits, self.window_bytes));
        Some(Input::Opened { conn, kind, ip })
    }

    /// The embedded service's link opened: no socket, so no door, no outbox and no
    /// keepalive (the real core task opens it before it listens).
    fn opened_in_process(&mut self, net: &Net, conn: ConnId) -> Input {
        let kind = ConnKind::AiInProcess;
        let ip = net
            .ip
            .get(&conn)
            .copied()
            .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
        self.kinds.insert(conn, kind);
        self.in_process = Some(conn);
        Input::Opened { conn, kind, ip }
    }

    /// A reply of the embedded service, as a value. An answer the core cannot use yet
    /// waits for its next pass and wakes nobody (`None`).
    fn ai_reply(
        &mut self,
        q: &mut EventQueue<Ev>,
        now: Time,
        conn: ConnId,
        reply: AiReply,
    ) -> Option<Input> {
        let input = Input::AiMessage {
            conn,
            reply: Ok(reply),
            request_id: None,
            arrived: Some(now),
        };
        if !self.replies.wake_on_answer(now) {
            self.held_replies.push_back(input);
            self.schedule_timer(q, now);
            return None;
        }
        if let Input::AiMessage { reply: Ok(r), .. } = &input {
            self.replies.answered(r.request_id());
        }
        Some(input)
    }

    /// A frame reached the server: the reader task decodes it into the inbox.
    pub fn arrive(
        &mut self,
        q: &mut EventQueue<Ev>,
        net: &Net,
        now: Time,
        conn: ConnId,
        what: Arrive,
    ) {
        if self.gone(q, net, now, conn, &what) {
            return;
        }
        let input = match what {
            Arrive::Open { ip, kind } => match self.opened(q, net, now, conn, ip, kind) {
                Some(input) => input,
                None => return,
            },
            Arrive::OpenInProcess => self.opened_in_process(net, conn),
            // A reply that comes back after the link is gone (the process stopped).
            Arrive::AiReply(_) if self.in_process != Some(conn) => return,
            Arrive::AiReply(reply) => match self.ai_reply(q, now, conn, *reply) {
                Some(input) => input,
                None => return,
            },
            Arrive::Silent { ip, slow } => {
                return self.accept_silent(q, net, now, conn, ip, slow);
            }
            Arrive::Close if self.silent.remove(&conn).is_some() => {
                self.door.close(conn.0);
                return;
            }
            // A socket the shell never took, or whose reader is gone already.
            Arrive::Close if !self.kinds.contains_key(&conn) => return,
            Arrive::Close => Input::Closed { conn },
            Arrive::Binary => Input::BadFrame {
                conn,
                frame: wizard_core::vocabulary::io::BadFrame::Binary,
            },
            Arrive::Text(text) => match self.decode_text(conn, &text) {
                Some(input) => input,
                // The reader is gone already.
                None => return,
            },
            Arrive::Raw(bytes) => return self.arrive_raw(q, now, conn, &bytes),
        };
        self.enqueue(input);
        self.wake(q, now);
    }

    pub(crate) fn enqueue(&mut self, input: Input) {
        if self.inbox.len() < INBOX_CAPACITY && self.blocked.is_empty() {
            self.inbox.push_back(input);
        } else {
            self.blocked.push_back(input);
        }
        self.inbox_len_max = self.inbox_len_max.max(self.inbox.len());
    }

    /// The core task has work: a pass runs at its turn (never once the process is gone).
    pub fn wake(&mut self, q: &mut EventQueue<Ev>, now: Time) {
        if self.finished_at.is_some() || self.down {
            return;
        }
        self.core_ready = true;
        self.kick(q, now);
    }

    /// Makes sure the thread takes its next turn as soon as it is free.
    pub(crate) fn kick(&mut self, q: &mut EventQueue<Ev>, now: Time) {
        let at = now.max(self.thread_free_at);
        if self.exec.scheduled.is_some_and(|t| t <= at) {
            return;
        }
        self.exec.scheduled = Some(at);
        q.push(at, Ev::LoopRun);
    }

    /// A door task (the accept path's work on one socket) of `us` CPU microseconds.
    pub(crate) fn door_work(&mut self, q: &mut EventQueue<Ev>, now: Time, us: u64) {
        self.exec.door(us);
        self.kick(q, now);
    }

    pub(crate) fn schedule_timer(&mut self, q: &mut EventQueue<Ev>, now: Time) {
        if self.finished_at.is_some() || self.down {
            return;
        }
        if let Some(at) = pass::next_wake(self.server.poll_timeout(), &self.replies, now)
            && self.timer_scheduled != Some(at)
        {
            self.timer_scheduled = Some(at);
            q.push(at, Ev::CoreTimer);
        }
    }

    /// The core's deadline event.
    pub fn core_timer(&mut self, q: &mut EventQueue<Ev>, now: Time) {
        if self.timer_scheduled == Some(now) {
            self.timer_scheduled = None;
        }
        let answer_due = !self.held_replies.is_empty() && self.replies.wake_on_answer(now);
        if answer_due || pass::due(self.server.poll_timeout(), now) {
            self.wake(q, now);
        } else {
            self.schedule_timer(q, now);
        }
    }

    /// The thread is blocked without using CPU (a stall).
    pub fn stall(&mut self, now: Time, us: u64) {
        self.thread_free_at = self.thread_free_at.max(now).plus_us(us);
    }

    /// Other work that blocks the thread while it uses `us` of CPU (`background`).
    pub fn burn(&mut self, now: Time, us: u64) {
        let start = self.thread_free_at.max(now);
        self.thread_free_at = self.cpu.run(start, us);
    }

    /// The probe's timer fired: its task is ready.
    pub fn probe_wake(&mut self, q: &mut EventQueue<Ev>, now: Time) {
        if now < self.probe_intended {
            return;
        }
        self.exec.probe();
        self.kick(q, now);
    }

    /// The probe's turn: it measures how late it woke.
    fn probe_run(&mut self, q: &mut EventQueue<Ev>, now: Time) {
        let quota = self.cpu.quota_cores();
        if let Some(sample) =
            self.probe
                .woke(self.probe_intended, now, self.cpu.stat_at(now), quota)
        {
            self.probe_samples += 1;
            self.enqueue(Input::LoadSample(sample));
            self.wake(q, now);
        }
        self.probe_intended = now.plus_us(self.probe.next_sleep_us());
        q.push(self.probe_intended, Ev::ProbeWake);
    }

    /// The thread's next turn at `now`, when it is free: a pass of the core task's loop,
    /// or one tick of a task (`executor.rs`).
    pub fn run_loop(
        &mut self,
        q: &mut EventQueue<Ev>,
        net: &Net,
        now: Time,
        observer: &mut dyn Observer,
    ) {
        if self.exec.scheduled == Some(now) {
            self.exec.scheduled = None;
        }
        if self.thread_free_at > now {
            self.kick(q, now);
            return;
        }
        match self.exec.next(self.core_ready) {
            Turn::Core => self.core_pass(q, net, now, observer),
            Turn::Probe => self.probe_run(q, now),
            Turn::Read(frames) => {
                let us = self.cost.scaled_us(frames as f64 * self.cost.read_us);
                self.thread_free_at = self.cpu.run(now, us);
            }
            Turn::Door(us) => self.thread_free_at = self.cpu.run(now, us),
            Turn::Idle => {}
        }
        if self.core_ready || self.exec.has_tasks() {
            self.kick(q, self.thread_free_at.max(now));
        }
    }

    /// One pass of the core task's loop at `now`.
    fn core_pass(
        &mut self,
        q: &mut EventQueue<Ev>,
        net: &Net,
        now: Time,
        observer: &mut dyn Observer,
    ) {
        self.core_ready = false;
        let mut cpu_us = self.cost.wake_us;
        let mut routed: Vec<Output> = Vec::new();
        // Every pass reads the answers that waited for it.
        for input in self.held_replies.drain(..) {
            if let Input::AiMessage { reply: Ok(r), .. } = &input {
                self.replies.answered(r.request_id());
            }
            self.inbox.push_back(input);
        }
        let pass = Pass::begin(now);
        pass.drain(
            self,
            |host| host.inbox.pop_front(),
            |host, now, input| cpu_us += host.handle(now, input, &mut routed, observer),
        );
        if let Some(timeout) = pass.timeout(self.server.poll_timeout()) {
            cpu_us += self.handle(now, timeout, &mut routed, observer);
        }
        while self.inbox.len() < INBOX_CAPACITY {
            let Some(input) = self.blocked.pop_front() else {
                break;
            };
            self.inbox.push_back(input);
        }
        self.inbox_len_max = self.inbox_len_max.max(self.inbox.len());
        cpu_us += self.take_records(now);
        let end = self.cpu.run(now, self.cost.scaled_us(cpu_us));
        self.thread_free_at = end;
        self.commit(now, end);
        self.after_pass(end);
        self.route(q, net, end, routed);
        self.core_ready |= !self.inbox.is_empty();
        self.schedule_timer(q, end);
    }

    /// What `input` is, for the checkers and the cost model (its counts are filled in
    /// once handled), and the CPU microseconds its reader spent on it.
    fn describe(&self, now: Time, input: &Input) -> (Handled, f64) {
        let mut h = Handled {
            now,
            conn: None,
            kind: WorkKind::Other,
            message: None,
            ai_decoded: None,
            ai_request_id: None,
            is_sample: false,
            is_timeout: false,
            dropped: false,
            messages_accepted: 0,
            lobbies_created: 0,
        };
        let mut read = 0.0;
        match input {
            Input::Opened { conn, .. } => (h.conn, h.kind) = (Some(*conn), WorkKind::Open),
            Input::Closed { conn } => (h.conn, h.kind) = (Some(*conn), WorkKind::Close),
            Input::Message { conn, message } => {
                h.conn = Some(*conn);
                h.message = Some(message.type_name());
                h.kind = match message {
                    ClientMessage::Hello { .. } => WorkKind::Hello,
                    ClientMessage::Action { .. } => WorkKind::Action,
                    _ => WorkKind::Message,
                };
                read = self.cost.read_us;
            }
            Input::Undecodable { conn, .. } | Input::BadFrame { conn, .. } => {
                (h.conn, h.kind, read) = (Some(*conn), WorkKind::Message, self.cost.read_us);
            }
            Input::AiMessage {
                conn,
                reply,
                request_id,
                ..
            } => {
                h.conn = Some(*conn);
                h.ai_decoded = Some(reply.is_ok());
                h.ai_request_id = match reply {
                    Ok(r) => Some(r.request_id()),
                    Err(_) => *request_id,
                };
                // A reply over the in-process link is a value: nothing to read, but
                // the core thread's share of the answer (its wake-up, the link).
                read = if self.in_process == Some(*conn) {
                    self.cost.ai_embedded_answer_us
                } else {
                    self.cost.read_us
                };
            }
            Input::LoadSample(_) => h.is_sample = true,
            Input::Timeout => h.is_timeout = true,
            Input::Shutdown | Input::SharedProfiles(_) | Input::Pool(_) => {}
        }
        (h, read)
    }

    /// What the outputs of the input just handled send, by kind, for the cost model.
    fn sent(&self) -> Sent {
        let mut sent = Sent::default();
        for o in &self.out {
            if let Output::AiRequest { .. } = o {
                // Built like a websocket request's observation, but never framed.
                sent.ai_requests += 1;
                continue;
            }
            if let Output::Send {
                conn,
                text,
                delivery,
            } = o
            {
                sent.frames += 1;
                if self.kinds.get(conn) == Some(&ConnKind::Ai) {
                    sent.ai_requests += 1;
                } else if *delivery == Delivery::Newest || text.len() > 512 {
                    sent.states += 1;
                } else {
                    sent.smalls += 1;
                }
            }
        }
        sent
    }

    /// The core let `conn` go: its outbox, reader and door slot (or the in-process
    /// link) go too.
    fn forget(&mut self, conn: ConnId) {
        if self.kinds.remove(&conn).is_some() {
            self.outboxes.remove(&conn);
            self.readers.remove(&conn);
            if self.in_process == Some(conn) {
                self.in_process = None;
            } else {
                self.door.close(conn.0);
            }
        }
    }

    /// Handles one input; returns its modelled CPU microseconds.
    fn handle(
        &mut self,
        now: Time,
        input: Input,
        routed: &mut Vec<Output>,
        observer: &mut dyn Observer,
    ) -> f64 {
        let before = self.server.counters();
        let (dropped0, messages0, lobbies0) = (
            before.messages_dropped,
            before.messages,
            before.lobbies_created,
        );
        let fallback0 = before.moves.get(MoveSource::Fallback);
        let (mut h, read) = self.describe(now, &input);
        let closed = match &input {
            Input::Closed { conn } => Some(*conn),
            _ => None,
        };
        self.out.clear();
        self.server.handle(now, input.clone(), &mut self.out);
        self.inputs_handled += 1;
        let after = self.server.counters();
        h.dropped = after.messages_dropped > dropped0;
        h.messages_accepted = after.messages.saturating_sub(messages0);
        h.lobbies_created = after.lobbies_created.saturating_sub(lobbies0);
        if h.dropped {
            h.kind = WorkKind::Dropped;
        }
        observer.handled(&h, &input, &self.out, &self.server);
        let sent = self.sent();
        if let Some(conn) = closed {
            self.forget(conn);
        }
        routed.append(&mut self.out);
        let fallbacks = self
            .server
            .counters()
            .moves
            .get(MoveSource::Fallback)
            .saturating_sub(fallback0);
        read + self.cost.core_us(h.kind, sent)
            + self.cost.write_us * sent.frames as f64
            + self.cost.fallback_move_us * fallbacks as f64
    }
}
