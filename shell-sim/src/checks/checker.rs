//! The checkers: after every input the core handled, the promises are checked against
//! what went in and what came out, with shadow models where the rule needs memory (the
//! load levels' rule table, the breaker's failure count, per-IP token buckets). A
//! broken promise becomes a violation in the report; the run then fails.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use wizard_core::machine::ai_bridge::AI_CONNECTIONS_MAX;
use wizard_core::machine::overload::level::{
    LevelState, LoadThresholds, SampleClass, classify, next_level,
};
use wizard_core::shell::door::Door;
use wizard_core::shell::door::TcpCaps;
use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::ids::LobbyId;
use wizard_core::vocabulary::io::{BadFrame, ConnKind, Input, MoveSource, Note, Output};
use wizard_core::vocabulary::load::LoadSample;
use wizard_core::vocabulary::stats::Gauges;
use wizard_core::vocabulary::wire::{self, AiErrorCode, AiReply};
use wizard_core::{Server, Time};

use crate::checks::games::Games;
use crate::host::core_task::{Handled, Observer};
use crate::model::conn_map::ConnMap;
use crate::runs::report::Report;

/// Memory of the checkers.
#[derive(Debug, Default)]
pub struct Checker {
    thresholds: Option<LoadThresholds>,
    forced: bool,
    conns_per_ip_max: usize,
    /// The door's caps (`Door::for_config`), as the host's door has them.
    door_caps: Option<TcpCaps>,
    level: LevelState,
    /// Every load sample the core handled, with the time it came and its class: the
    /// liveness check asks what kept the level up after healing.
    pub samples: Vec<(Time, SampleClass, LoadSample)>,
    conn_ip: ConnMap<(IpAddr, bool)>,
    open_per_ip: BTreeMap<IpAddr, usize>,
    /// (opened at, messages accepted)
    conn_msgs: ConnMap<(Time, u64)>,
    /// (first create attempt, lobbies created)
    lobby_per_ip: BTreeMap<IpAddr, (Time, u64)>,
    ai_conns: BTreeSet<ConnId>,
    /// The embedded service's in-process link: held by the core, but no socket.
    in_process: BTreeSet<ConnId>,
    ai_pending: BTreeMap<u64, (Time, ConnId)>,
    ai_expired: BTreeSet<u64>,
    failures: u32,
    breaker_prev: &'static str,
    /// Connections whose action the core applied in the last loop iteration.
    pub accepted_moves: Vec<ConnId>,
    /// Running games and the time of their last move.
    pub running: BTreeMap<LobbyId, Time>,
    /// Dormant games a returning human woke, awake since: each may take a game past
    /// `MAX_ACTIVE_GAMES` (a returning player's game always plays on).
    woken: BTreeSet<LobbyId>,
    pub moves_per_lobby: BTreeMap<LobbyId, u64>,
    /// Which connection started each game.
    pub started_by: BTreeMap<LobbyId, ConnId>,
    /// Lobbies deleted while their game ran (judged at the end, by who started them).
    pub deleted_running: Vec<(Time, LobbyId)>,
    /// What the players of each game are shown (`games.rs`).
    pub games: Games,
    /// The quick-play pool's shadow (`quick.rs`).
    pub quick: crate::checks::quick::Quick,
}

/// The checkers and the report seen together by the host.
#[derive(Debug)]
pub struct Observers<'a> {
    pub check: &'a mut Checker,
    pub report: &'a mut Report,
}

fn per_sec(rate_per_s: f64, us: u64) -> f64 {
    rate_per_s * us as f64 / 1e6
}

impl Checker {
    /// The server process was killed: every shadow of its state (levels, breaker,
    /// connections, buckets, AI requests, games) starts again with the restored one,
    /// which knows only what its store kept. What the run judges at its end stays.
    pub fn restarted(&mut self) {
        let fresh = Checker {
            samples: std::mem::take(&mut self.samples),
            deleted_running: std::mem::take(&mut self.deleted_running),
            // Lobby ids survive the restore: a game an abuser started before the kill
            // is still its (swarm seed 523: its restored lobby deleted once no human
            // was left).
            started_by: std::mem::take(&mut self.started_by),
            games: self.games.restarted(),
            quick: self.quick.restarted(),
            ..Checker::default()
        };
        *self = fresh;
    }

    /// The thresholds the level rule runs with (known after the first input).
    pub fn thresholds(&self) -> Option<LoadThresholds> {
        self.thresholds
    }

    fn config_thresholds(c: &Config) -> LoadThresholds {
        LoadThresholds {
            lag_busy_us: c.load_lag_busy_us,
            lag_overload_us: c.load_lag_overload_us,
            lag_severe_us: c.load_lag_severe_us,
            cpu_busy_share: c.load_cpu_busy_share,
            cpu_overload_share: c.load_cpu_overload_share,
            throttle_overload_share: c.load_throttle_overload_share,
            overload_samples: c.load_overload_samples,
            recover_samples: c.load_recover_samples,
        }
    }

    fn on_open(&mut self, r: &mut Report, h: &Handled, input: &Input, out: &[Output]) {
        let Input::Opened { conn, kind, ip } = *input else {
            return;
        };
        let now = h.now;
        let refused = out.iter().any(|o| {
            matches!(o, Output::Note(Note::ConnectionRefused { conn: c2, .. }
                | Note::ConnectionHeld { conn: c2, .. }) if *c2 == conn)
        });
        // (A held connection counts once its hello resumes a running game's player.)
        let counted = !refused && kind == ConnKind::Player;
        self.conn_ip.insert(conn, (ip, counted));
        self.conn_msgs.insert(conn, (now, 0));
        if counted {
            self.count_open(r, now, ip);
        }
        if !refused && kind.is_ai() {
            self.ai_conns.insert(conn);
        }
        if !refused && kind == ConnKind::AiInProcess {
            self.in_process.insert(conn);
        }
    }

    /// One more counted connection from `ip`, within `MAX_CONNECTIONS_PER_IP`.
    fn count_open(&mut self, r: &mut Report, now: Time, ip: IpAddr) {
        let n = self.open_per_ip.entry(ip).or_insert(0);
        *n += 1;
        if *n > self.conns_per_ip_max {
            r.violation(now, format!("{n} connections open from {ip}"));
        }
    }

    fn on_close(&mut self, now: Time, conn: ConnId) {
        if let Some((ip, true)) = self.conn_ip.remove(&conn)
            && let Some(n) = self.open_per_ip.get_mut(&ip)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.open_per_ip.remove(&ip);
            }
        }
        self.conn_msgs.remove(&conn);
        self.in_process.remove(&conn);
        if self.ai_conns.remove(&conn) {
            let lost: Vec<u64> = self
                .ai_pending
                .iter()
                .filter(|(_, (_, c))| *c == conn)
                .map(|(id, _)| *id)
                .collect();
            for id in lost {
                self.ai_pending.remove(&id);
                self.ai_expired.insert(id);
                self.failure();
            }
        }
        let _ = now;
    }

    fn failure(&mut self) {
        if self.breaker_prev != "open" {
            self.failures += 1;
        }
    }

    /// A client's message the core handled: within its connection's and its address's
    /// buckets, answered exactly once, and a move applied at most once, never refused
    /// `busy`.
    fn on_message(
        &mut self,
        r: &mut Report,
        h: &Handled,
        c: &Config,
        conn: ConnId,
        out: &[Output],
    ) {
        let now = h.now;
        let ip = self.conn_ip.get(&conn).map(|(ip, _)| *ip);
        self.judge_message_rate(r, h, c, conn);
        if h.message == Some("create_lobby")
            && let Some(ip) = ip
        {
            self.judge_lobby_rate(r, h, c, ip, out);
        }
        if h.dropped || h.messages_accepted == 0 {
            return;
        }
        let Answers {
            errors,
            answers,
            states,
            busy,
        } = Answers::to(conn, out);
        // Exactly one outcome: an `error` (and no new view), or what the message did;
        // `cancel_quick_play` is answered by nothing (PROTOCOL.md 7.2).
        let silent = h.message == Some("cancel_quick_play");
        if errors > 1 || (answers == 0 && !silent) || (errors == 1 && states > 0) {
            r.violation(
                now,
                format!(
                    "conn {conn}: {:?} got {answers} answers, {errors} errors, {states} states",
                    h.message
                ),
            );
        }
        if h.message == Some("action") {
            self.judge_action(r, now, conn, out, busy);
        }
    }

    /// The messages accepted on `conn` stay within `MESSAGE_BURST` and `MESSAGE_RATE`
    /// since it opened.
    fn judge_message_rate(&mut self, r: &mut Report, h: &Handled, c: &Config, conn: ConnId) {
        let now = h.now;
        if let Some((opened, accepted)) = self.conn_msgs.get_mut(&conn) {
            *accepted += h.messages_accepted;
            let allowed = f64::from(c.message_burst)
                + per_sec(c.message_rate_per_sec, now.since_us(*opened))
                + 1.0;
            if *accepted as f64 > allowed {
                r.violation(
                    now,
                    format!("conn {conn}: {accepted} messages accepted, allowed {allowed:.0}"),
                );
            }
        }
    }

    /// The lobbies created from `ip` stay within the lobby creation rate (per minute)
    /// since its first attempt.
    fn judge_lobby_rate(
        &mut self,
        r: &mut Report,
        h: &Handled,
        c: &Config,
        ip: IpAddr,
        out: &[Output],
    ) {
        let now = h.now;
        // The quick-play tables the same `handle` call seated (the matchmaker's
        // deadline) are no lobby of this address.
        let seated = out
            .iter()
            .filter(|o| matches!(o, Output::Note(Note::QuickPlaySeated { .. })))
            .count() as u64;
        let e = self.lobby_per_ip.entry(ip).or_insert((now, 0));
        e.1 += h.lobbies_created.saturating_sub(seated);
        let burst = c.lobby_create_rate_per_min.ceil().max(1.0);
        let allowed = burst + per_sec(c.lobby_create_rate_per_min / 60.0, now.since_us(e.0)) + 1.0;
        if e.1 as f64 > allowed {
            r.violation(
                now,
                format!("{ip}: {} lobbies created, allowed {allowed:.1}", e.1),
            );
        }
    }

    /// An `action` from `conn` is applied at most once, and never refused `busy`.
    fn judge_action(
        &mut self,
        r: &mut Report,
        now: Time,
        conn: ConnId,
        out: &[Output],
        busy: bool,
    ) {
        let human = out
            .iter()
            .filter(|o| {
                matches!(
                    o,
                    Output::Note(Note::MoveApplied {
                        by: MoveSource::Human,
                        ..
                    })
                )
            })
            .count();
        if human > 1 {
            r.violation(
                now,
                format!("conn {conn}: one action applied {human} times"),
            );
        }
        if human == 1 {
            self.accepted_moves.push(conn);
        }
        if busy {
            r.violation(now, format!("conn {conn}: a move was refused busy"));
        }
    }

    fn on_ai_message(&mut self, r: &Report, h: &Handled, input: &Input) {
        let Input::AiMessage { conn, reply, .. } = input else {
            return;
        };
        let known = h
            .ai_request_id
            .filter(|id| self.ai_pending.get(id).is_some_and(|(_, c)| c == conn));
        let Some(id) = known else {
            if !h
                .ai_request_id
                .is_some_and(|id| self.ai_expired.contains(&id))
            {
                self.failure();
            }
            return;
        };
        self.ai_pending.remove(&id);
        self.ai_expired.insert(id);
        let illegal = r.ai_illegal.contains(&id);
        match reply {
            Ok(AiReply::Decision { .. }) if !illegal => self.failures = 0,
            Ok(AiReply::Error { code, .. }) if code.is_shedding() => {}
            Ok(AiReply::Error {
                code: AiErrorCode::Internal,
                ..
            })
            | Ok(_)
            | Err(_) => self.failure(),
        }
    }

    /// After every input: AI requests past their deadline, new AI requests, the
    /// breaker's transitions and every gauge within its cap.
    fn after(&mut self, r: &mut Report, h: &Handled, server: &Server, out: &[Output]) {
        let c = server.config();
        let now = h.now;
        self.expire_requests(r, now);
        self.track_requests(now, c, out);
        let g = server.gauges();
        self.judge_breaker(r, now, c, &g);
        if g.ai_probes_pending > 1 {
            r.violation(now, format!("{} half-open probes", g.ai_probes_pending));
        }
        self.judge_caps(r, now, server, &g);
    }

    /// AI requests whose deadline passed are failures, answered or not later.
    fn expire_requests(&mut self, r: &mut Report, now: Time) {
        let due: Vec<u64> = self
            .ai_pending
            .iter()
            .filter(|(_, (deadline, _))| *deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            if let Some((deadline, _)) = self.ai_pending.get(&id) {
                r.ai_deadline_overshoot_us_max =
                    r.ai_deadline_overshoot_us_max.max(now.since_us(*deadline));
            }
            self.ai_pending.remove(&id);
            self.ai_expired.insert(id);
            self.failure();
        }
    }

    /// The AI requests in `out`, pending until their deadline.
    fn track_requests(&mut self, now: Time, c: &Config, out: &[Output]) {
        for o in out {
            // A request leaves as a frame, or as a value to the in-process service.
            let asked = match o {
                Output::Send { conn, text, .. } => {
                    wire::peek_request_id(text).map(|id| (*conn, id))
                }
                Output::AiRequest { conn, request, .. } => {
                    let wizard_core::vocabulary::wire::AiRequest::Decide { request_id, .. } =
                        **request;
                    Some((*conn, request_id))
                }
                _ => None,
            };
            if let Some((conn, id)) = asked
                && self.ai_conns.contains(&conn)
            {
                self.ai_pending
                    .insert(id, (now.plus_us(c.ai_decision_timeout_us), conn));
            }
        }
    }

    /// The breaker opens only after `AI_BREAKER_FAILURES` failures (one, half-open).
    fn judge_breaker(&mut self, r: &mut Report, now: Time, c: &Config, g: &Gauges) {
        if g.breaker != self.breaker_prev {
            match (self.breaker_prev, g.breaker) {
                ("half_open", "open") if self.failures < 1 => {
                    r.violation(now, "breaker re-opened without a failure".into())
                }
                ("closed", "open") if self.failures < c.ai_breaker_failures_max.max(1) => r
                    .violation(
                        now,
                        format!("breaker opened after {} failures", self.failures),
                    ),
                _ => {}
            }
            if g.breaker == "half_open" {
                r.cover("breaker_half_open");
            }
            self.failures = 0;
            self.breaker_prev = g.breaker;
        }
    }

    /// Every table the core holds within its cap.
    fn judge_caps(&self, r: &mut Report, now: Time, server: &Server, g: &Gauges) {
        let c = server.config();
        let door_cap = self.door_caps.map_or(0, |caps| caps.cap as u64);
        let caps = [
            // Every connection the core holds came through a full slot of the door,
            // refused players waiting for their 1013 included.
            (
                "connections",
                g.connections.saturating_sub(self.in_process.len() as u64),
                door_cap,
            ),
            // Players of running games coming back may pass `MAX_CONNECTIONS`.
            (
                "player connections",
                g.player_connections,
                c.conns_max as u64 + server.counters().resumed_past_cap,
            ),
            (
                "ai connections",
                g.ai_connections,
                AI_CONNECTIONS_MAX as u64,
            ),
            ("sessions", g.sessions, c.sessions_max as u64),
            ("lobbies", g.lobbies, c.lobbies_max as u64),
            (
                "active games",
                g.active_games,
                c.active_games_max as u64 + self.woken.len() as u64,
            ),
            (
                "ip table",
                g.ip_table_entries,
                c.ip_table_entries_max as u64,
            ),
            (
                "ai pending",
                g.ai_pending,
                c.ai_inflight_max as u64 * g.ai_connections,
            ),
        ];
        for (what, v, cap) in caps {
            if v > cap {
                r.violation(now, format!("{what} {v} over its cap {cap}"));
            }
        }
    }

    fn notes(&mut self, r: &mut Report, now: Time, out: &[Output]) {
        // A seat given up at `SESSION_TTL` or by eviction at `MAX_SESSIONS` turns AI, and
        // a game left with no human is deleted (ARCHITECTURE.md, "What the absent hold");
        // the deletion follows the note in the same outputs.
        let mut seat_given_up = false;
        for o in out {
            let Output::Note(n) = o else { continue };
            match n {
                // ... and a dormant game may make room for a new lobby at MAX_LOBBIES.
                Note::SessionExpired | Note::SessionEvicted | Note::LobbyIdle { .. } => {
                    seat_given_up = true
                }
                Note::LevelChanged { from, to, .. } => {
                    r.level_changes
                        .push((now.0 as f64 / 1e6, from.name(), to.name()));
                    r.cover(&format!("level_{}", to.name()));
                }
                Note::ConnectionRefused { reason, .. } => {
                    r.cover(&format!("conn_refused_{}", reason.name()))
                }
                Note::FloodClosed { .. } => r.cover("close_1008"),
                Note::ResumedPastCap { conn, ip } => {
                    self.conn_ip.insert(*conn, (*ip, true));
                    self.count_open(r, now, *ip);
                }
                Note::Refused { code, .. } => r.cover(&format!("refused_{}", code.name())),
                Note::BreakerOpened { .. } => r.cover("breaker_opened"),
                Note::BreakerClosed => r.cover("breaker_closed"),
                Note::Fallback { reason, .. } => r.cover(&format!("fallback_{}", reason.name())),
                Note::GameStarted { lobby, .. } => {
                    self.running.insert(*lobby, now);
                }
                Note::MoveApplied { lobby, .. } => {
                    self.running.insert(*lobby, now);
                    *self.moves_per_lobby.entry(*lobby).or_insert(0) += 1;
                }
                Note::GameFinished { lobby } => {
                    self.running.remove(lobby);
                    self.woken.remove(lobby);
                }
                Note::GameWoken { lobby } => {
                    self.woken.insert(*lobby);
                }
                Note::GameDormant { lobby } => {
                    self.woken.remove(lobby);
                }
                // The guard forgets the lobby either way.
                Note::LobbyDeleted { lobby } => {
                    self.woken.remove(lobby);
                    if self.running.remove(lobby).is_some() && !seat_given_up {
                        self.deleted_running.push((now, *lobby));
                    }
                }
                _ => {}
            }
        }
    }
}

/// What the core sent `conn` in answer to its message, deadlines' work left out.
#[derive(Debug, Default)]
struct Answers {
    errors: u32,
    answers: u32,
    states: u32,
    /// One of the errors was `busy`.
    busy: bool,
}

impl Answers {
    /// The answers to `conn` in `out`. The answer to the message comes first; what the
    /// deadlines due in the same `handle` call did comes after, starting with the first
    /// AI or fallback move or the first expired session (their broadcasts are no second
    /// answer to this message). A view after the message's `error` is no answer either:
    /// a refused message's handling ends there, and a deadline's broadcast may follow
    /// without a note (the spectators' list shown at `SPECTATORS_STATE_INTERVAL`: swarm
    /// seed 621); a second `error` still counts.
    fn to(conn: ConnId, out: &[Output]) -> Answers {
        let mut a = Answers::default();
        let answer = out.iter().take_while(|o| {
            !matches!(
                o,
                Output::Note(
                    Note::MoveApplied {
                        by: MoveSource::Ai | MoveSource::Fallback,
                        ..
                    } | Note::SessionExpired
                )
            )
        });
        for o in answer {
            match o {
                Output::Send { conn: c2, text, .. } if *c2 == conn => {
                    a.answers += 1;
                    if text.starts_with("{\"type\":\"error\"") {
                        a.errors += 1;
                        a.busy |= text.contains("\"code\":\"busy\"");
                    } else if text.starts_with("{\"type\":\"state\"") && a.errors == 0 {
                        a.states += 1;
                    }
                }
                Output::Close { conn: c2, .. } if *c2 == conn => a.answers += 1,
                _ => {}
            }
        }
        a
    }
}

/// Every output folded into the run's trace hash, and each close sent covered.
fn hash_outputs(r: &mut Report, h: &Handled, out: &[Output]) {
    r.hash(&h.now.0.to_le_bytes());
    r.hash(&h.conn.map_or(0, |c| c.0).to_le_bytes());
    for o in out {
        match o {
            Output::Send { conn, text, .. } => {
                r.hash(&conn.0.to_le_bytes());
                r.hash(text.as_bytes());
            }
            // The simulator opens no in-process AI; hashed as its frame would be.
            Output::AiRequest { conn, request, .. } => {
                r.hash(&conn.0.to_le_bytes());
                r.hash(wizard_core::vocabulary::wire::encode_ai_request(request).as_bytes());
            }
            Output::Close { conn, code } => {
                r.hash(&conn.0.to_le_bytes());
                r.hash(&code.code().to_le_bytes());
                r.cover(&format!("close_sent_{}", code.code()));
            }
            Output::Note(_) => {}
        }
    }
}

impl Checker {
    /// What the players of each game are shown, and their sessions' expiry.
    fn watch_games(&mut self, r: &mut Report, h: &Handled, input: &Input, out: &[Output]) {
        self.games.input(input);
        self.games.expiry.input(h.now, input);
        self.games.expiry.evicting = out
            .iter()
            .any(|o| matches!(o, Output::Note(Note::SessionEvicted)));
        for o in out {
            self.games.output(r, h.now, o);
        }
        self.games.chat(r, h.now, input, out);
        self.games.sweep(r, h.now, false);
    }

    /// The configuration's thresholds and caps, learnt from the first input.
    fn learn_config(&mut self, c: &Config) {
        if self.thresholds.is_none() {
            self.thresholds = Some(Checker::config_thresholds(c));
            self.forced = c.load_force_level.is_some();
            self.conns_per_ip_max = c.conns_per_ip_max;
            self.door_caps = Some(Door::for_config(c).caps());
            self.breaker_prev = "closed";
        }
    }

    /// A load sample: the level the core holds is the one the rule table gives, unless
    /// a level is forced.
    fn on_sample(&mut self, r: &mut Report, now: Time, sample: &LoadSample, server: &Server) {
        if let Some(t) = &self.thresholds {
            let class = classify(t, sample);
            self.samples.push((now, class, *sample));
            self.level = next_level(t, self.level, class);
            if !self.forced && self.level.level != server.level() {
                r.violation(
                    now,
                    format!(
                        "level {} but the rule table says {}",
                        server.level(),
                        self.level.level
                    ),
                );
            }
        }
    }

    /// The connection whose `start_game` started a game, for each game it started.
    fn note_starter(&mut self, h: &Handled, out: &[Output]) {
        if let (Some("start_game"), Some(conn)) = (h.message, h.conn) {
            for o in out {
                if let Output::Note(Note::GameStarted { lobby, .. }) = o {
                    self.started_by.insert(*lobby, conn);
                }
            }
        }
    }
}

impl Observer for Observers<'_> {
    fn handled(&mut self, h: &Handled, input: &Input, out: &[Output], server: &Server) {
        let (k, r) = (&mut *self.check, &mut *self.report);
        hash_outputs(r, h, out);
        k.watch_games(r, h, input, out);
        let c = server.config();
        k.learn_config(c);
        match input {
            Input::Opened { .. } => k.on_open(r, h, input, out),
            Input::Closed { conn } => k.on_close(h.now, *conn),
            Input::Message { conn, .. } | Input::Undecodable { conn, .. } => {
                k.on_message(r, h, c, *conn, out)
            }
            Input::AiMessage { .. } => k.on_ai_message(r, h, input),
            Input::BadFrame {
                conn,
                frame: BadFrame::Flood,
            } => {
                // The frame reader's flood ends in 1008, as a message flood does.
                let closed = out.iter().any(|o| {
                    matches!(o, Output::Close { conn: c2, code } if c2 == conn && code.code() == 1008)
                });
                if closed {
                    r.cover("frame_flood_closed");
                }
            }
            Input::LoadSample(sample) => k.on_sample(r, h.now, sample, server),
            _ => {}
        }
        let deleted_before = k.deleted_running.len();
        k.notes(r, h.now, out);
        if h.message == Some("quick_play") {
            // Asking for a table leaves the running game for good (PROTOCOL.md 7.2): a
            // lobby its last human left so is deleted by the rule, no lost game.
            k.deleted_running.truncate(deleted_before);
        }
        k.note_starter(h, out);
        k.after(r, h, server, out);
        k.quick.handled(r, h, input, out, server);
    }
}
