//! The receiving half of the player's client machine ([`Client`]): frames from the
//! server (`welcome`, `server_status`, `error`, the newest `state`), what they mean for
//! the requests and moves in flight, retries with the group's policy, and the
//! connection's end.

use rand::RngExt;
use wizard_core::Time;
use wizard_core::vocabulary::game::Event;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::wire::{
    self, CloseCode, ErrorCode, GameView, LobbyStatus, LobbyView, ServerMessage, peek,
};

use crate::actors::client::{Client, Request, Role, Stream};
use crate::actors::ctx::Ctx;
use crate::actors::play;
use crate::host::outbox::Frame;
use crate::model::net::{Arrive, Ev};
use crate::runs::scenario::{Pace, Retry};

impl Client {
    /// Frames arrived on `conn`.
    pub fn deliver(&mut self, cx: &mut Ctx<'_>, now: Time, conn: ConnId, frames: Vec<Frame>) {
        if self.conn != Some(conn) {
            return;
        }
        for Frame {
            text,
            seq,
            kept_before,
            lossy,
        } in frames
        {
            self.check_stream(cx, now, conn, seq, kept_before, lossy);
            if peek::frame_type(&text) == "state" {
                if self.resume.is_some() {
                    self.judge_resume(cx, now, &text);
                }
                if self.accepted.is_some() {
                    self.confirm_from_events(cx, now, &text);
                }
                self.latest_state = Some(text);
                continue;
            }
            match wire::decode_server(&text) {
                Ok(ServerMessage::Welcome {
                    player_id, token, ..
                }) => {
                    self.resumed(cx, conn, &player_id);
                    self.welcomed = true;
                    self.player_id = Some(player_id);
                    self.token = Some(token);
                    if self.attempts_max == u32::MAX || self.attempts == 0 {
                        self.attempts = 0;
                    }
                }
                Ok(ServerMessage::ServerStatus {
                    accepting_games, ..
                }) => self.accepting = accepting_games,
                Ok(ServerMessage::Error {
                    code,
                    retry_after_ms,
                    ..
                }) => self.on_error(cx, now, code, retry_after_ms),
                // Chat lines gave way in this slow reader's queue: the note counts them.
                Ok(ServerMessage::ChatGap { .. }) => cx.report.cover("chat_gap"),
                Ok(ServerMessage::Queued { .. }) => self.on_queued(cx, now),
                Ok(
                    ServerMessage::State { .. }
                    | ServerMessage::Delta { .. }
                    | ServerMessage::Chat { .. }
                    | ServerMessage::Profile { .. }
                    | ServerMessage::ProfileDeleted { .. }
                    | ServerMessage::Matched { .. }
                    | ServerMessage::Tables { .. },
                )
                | Err(_) => {}
            }
        }
        if let Some(text) = self.latest_state.take() {
            self.on_state(cx, now, &text);
            self.last_state = Some(text);
        }
        self.step(cx, now);
    }

    /// A `welcome` on `conn`: the first on the restored process's side of a kill starts
    /// the resume check when the session survived (the same player id).
    fn resumed(&mut self, cx: &mut Ctx<'_>, conn: ConnId, player_id: &str) {
        let Some(floor) = self.restart_floor.filter(|f| conn >= *f) else {
            return;
        };
        self.restart_floor = None;
        if self.player_id.as_deref() != Some(player_id) {
            cx.report.cover("restart_session_new");
            return;
        }
        self.resume = self
            .last_state
            .as_deref()
            .and_then(|text| crate::checks::resume::seen(text, player_id, floor));
    }

    /// The first view after a resume, against what the player saw before the kill.
    fn judge_resume(&mut self, cx: &mut Ctx<'_>, now: Time, text: &str) {
        let Some(seen) = self.resume.take() else {
            return;
        };
        match crate::checks::resume::judge(&seen, text) {
            Ok(crate::checks::resume::Resumed::SameGame) => cx.report.cover("restart_resumed"),
            Ok(crate::checks::resume::Resumed::SameLobby) => {
                cx.report.cover("restart_resumed_lobby");
            }
            Err(why) => cx
                .report
                .violation(now, format!("client {}: after the restart: {why}", self.id)),
        }
    }

    /// Frames on one connection arrive in the order the core sent them, each once, and
    /// every frame the core marked `Every` arrives (a `state` with events carries
    /// moves: losing or reordering one would lose or reorder a move).
    fn check_stream(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Time,
        conn: ConnId,
        seq: u64,
        kept_before: u64,
        lossy: bool,
    ) {
        if self.stream.conn != Some(conn) {
            self.stream = Stream {
                conn: Some(conn),
                ..Stream::default()
            };
        }
        let s = &mut self.stream;
        if seq <= s.seq {
            cx.report.violation(
                now,
                format!(
                    "client {}: frame {seq} after frame {} on conn {conn}",
                    self.id, s.seq
                ),
            );
        } else if kept_before != s.kept {
            cx.report.violation(
                now,
                format!(
                    "client {}: frame {seq} follows frame {kept_before}, but the last \
                     irreplaceable frame seen on conn {conn} is {}",
                    self.id, s.kept
                ),
            );
        }
        s.seq = s.seq.max(seq);
        if !lossy {
            s.kept = seq;
        }
    }

    fn on_error(&mut self, cx: &mut Ctx<'_>, now: Time, code: ErrorCode, retry_ms: Option<u64>) {
        match code {
            ErrorCode::Busy | ErrorCode::RateLimited | ErrorCode::NotAllowed => {
                let Some(req) = self.inflight.take() else {
                    if self.sent.take().is_some() {
                        cx.report.move_refused(code);
                        // Try the move again when the server says we may.
                        let at = now.plus_us(retry_ms.unwrap_or(100).max(1) * 1000);
                        self.act_at = Some(at);
                        self.timer(cx, at);
                    }
                    return;
                };
                cx.report
                    .request(req.kind, false, now.since_us(req.intended), code);
                self.attempts += 1;
                let impatient = self
                    .patience_us
                    .is_some_and(|p| now.since_us(self.born) > p);
                if self.attempts >= self.attempts_max || self.retry == Retry::None || impatient {
                    self.give_up(cx, now);
                    return;
                }
                self.retry_at = now.plus_us(self.backoff_us());
                self.timer(cx, self.retry_at);
            }
            ErrorCode::IllegalAction | ErrorCode::NotFound => {
                // Our view was stale; the next state tells us what to do.
                if self.sent.take().is_some() {
                    let at = now.plus_us(100_000);
                    self.act_at = Some(at);
                    self.timer(cx, at);
                }
                self.join_sent = false;
                self.add_ai_sent = false;
            }
            _ => {}
        }
    }

    fn backoff_us(&mut self) -> u64 {
        match self.retry {
            Retry::Naive => self.rng.random_range(20_000..50_000),
            _ => {
                let cap = 30_000_000u64;
                let exp = 1_000_000u64.saturating_mul(1 << self.attempts.min(5).saturating_sub(1));
                self.rng.random_range(0..=exp.min(cap)) + 250_000
            }
        }
    }

    fn give_up(&mut self, cx: &mut Ctx<'_>, now: Time) {
        self.done = true;
        if matches!(self.role, Role::Solo | Role::Quick) {
            self.leave(cx, now);
        }
    }

    /// Closes the connection from the client's side.
    pub fn leave(&mut self, cx: &mut Ctx<'_>, now: Time) {
        if let Some(conn) = self.conn.take() {
            cx.net.to_server(cx.q, now, conn, Arrive::Close);
        }
        self.gone = true;
        self.welcomed = false;
    }

    /// A move the server applied shows up as its event in the next `state` with events
    /// (every seat gets those; none is ever replaced or dropped).
    fn confirm_from_events(&mut self, cx: &mut Ctx<'_>, now: Time, text: &str) {
        let (Some((m, _)), Some(seat)) = (self.accepted, self.seat()) else {
            return;
        };
        let Some(parts) = peek::state_parts(text, &self.lobby_raw).filter(|p| p.events != "[]")
        else {
            return;
        };
        match serde_json::from_str::<Vec<Event>>(parts.events) {
            Ok(events) if events.iter().any(|e| play::shows(e, seat, &m)) => {
                self.accepted = None;
                if self.sent == Some(m) {
                    self.sent = None;
                }
                cx.report.move_latency(now.0.saturating_sub(m.sent_us));
            }
            Ok(_) => {}
            Err(_) => cx
                .report
                .violation(now, format!("client {}: undecodable events", self.id)),
        }
    }

    /// The newest `state` of a delivery: decoded when this seat may have to act on
    /// it, then what it means for the request in flight and the client's lobby.
    fn on_state(&mut self, cx: &mut Ctx<'_>, now: Time, text: &str) {
        let Some(parts) = peek::state_parts(text, &self.lobby_raw) else {
            cx.report
                .violation(now, format!("client {}: undecodable state", self.id));
            return;
        };
        if !self.must_decode(parts.game) {
            // A newer view exists in which this seat has nothing to do: the one held is
            // outdated and must not be acted on.
            self.obs = None;
            return;
        }
        if !self.decode_lobby(cx, now, &parts) {
            return;
        }
        let Ok(game) = serde_json::from_str::<Option<GameView>>(parts.game) else {
            cx.report
                .violation(now, format!("client {}: undecodable game", self.id));
            return;
        };
        let lobby = self.lobby.take();
        self.in_game = lobby
            .as_ref()
            .is_some_and(|l| l.status == LobbyStatus::Playing);
        if let (Some(req), Some(l)) = (self.inflight, &lobby) {
            self.settle_request(cx, now, req, l);
        }
        if lobby
            .as_ref()
            .is_none_or(|l| l.status != LobbyStatus::Finished)
        {
            self.return_sent = false;
        }
        self.add_ai_sent = false;
        if matches!(self.role, Role::Solo | Role::Quick)
            && lobby
                .as_ref()
                .is_some_and(|l| l.status == LobbyStatus::Finished)
        {
            self.done = true;
            self.leave(cx, now);
        }
        self.lobby = lobby;
        self.obs = game.map(|g| g.observation);
        self.after_view(cx, now);
    }

    /// Whether a view with `game` as its game part must be decoded: unless this seat is
    /// in a running game with nothing in flight and another seat to act.
    fn must_decode(&self, game: &str) -> bool {
        // (A move still unconfirmed here missed its event, e.g. across a reconnect: the
        // view must show it instead.)
        self.lobby.is_none()
            || self.accepted.is_some()
            || self.inflight.is_some()
            || !self.in_game
            || match peek::turn(game) {
                Some((you, Some(to_act))) => to_act == you,
                _ => true,
            }
    }

    /// Decodes the lobby part when it changed (it changes rarely: joins, status);
    /// `false` when it is undecodable.
    fn decode_lobby(&mut self, cx: &mut Ctx<'_>, now: Time, parts: &peek::StateParts<'_>) -> bool {
        let lobby_raw = parts.lobby;
        // (`self.lobby` may have been forgotten since, when the connection ended.)
        if !parts.lobby_known || (self.lobby.is_none() && lobby_raw != "null") {
            match serde_json::from_str::<Option<LobbyView>>(lobby_raw) {
                Ok(l) => self.lobby = l,
                Err(_) => {
                    cx.report
                        .violation(now, format!("client {}: undecodable lobby", self.id));
                    return false;
                }
            }
            self.lobby_raw.clear();
            self.lobby_raw.push_str(lobby_raw);
        }
        true
    }

    /// The request in flight, `req`, is done when lobby `l` shows it: a host then
    /// hands its lobby's code to its table's members, and the prober is done.
    fn settle_request(&mut self, cx: &mut Ctx<'_>, now: Time, req: Request, l: &LobbyView) {
        let done = match req.kind {
            "create_lobby" => self.player_id.as_ref() == Some(&l.host_id),
            _ => l.status != LobbyStatus::Waiting,
        };
        if !done {
            return;
        }
        self.inflight = None;
        self.attempts = 0;
        cx.report
            .request(req.kind, true, now.since_us(req.intended), ErrorCode::Busy);
        if let Role::Host { table } = self.role
            && let Some(t) = cx.tables.get_mut(table)
            && t.code.as_ref() != Some(&l.code)
        {
            t.code = Some(l.code.clone());
            for &j in &t.members {
                cx.q.push(
                    now.plus_us(1000),
                    Ev::ClientTimer {
                        client: j,
                        generation: 0,
                    },
                );
            }
        }
        if self.role == Role::Prober {
            cx.report.prober_success(now);
            self.done = true;
        }
    }

    fn after_view(&mut self, cx: &mut Ctx<'_>, now: Time) {
        let Some(obs) = &self.obs else {
            self.sent = None;
            return;
        };
        let Some(seat) = self.seat() else {
            return;
        };
        let p = play::progress(obs);
        if p < self.progress && p.0 >= self.progress.0 && p.0 > 1 {
            cx.report.violation(
                now,
                format!(
                    "client {}: view went back {:?} -> {p:?}",
                    self.id, self.progress
                ),
            );
        }
        self.progress = p;
        if let Some((m, _)) = self.accepted
            && play::reflects(obs, seat, &m)
        {
            self.accepted = None;
            cx.report.move_latency(now.0.saturating_sub(m.sent_us));
        }
        if let Some(m) = self.sent
            && play::reflects(obs, seat, &m)
        {
            self.sent = None;
        }
        if obs.to_act == Some(seat) && self.sent.is_none() && self.act_at.is_none() {
            let think = match self.pace {
                Pace::Full => 0,
                Pace::Human => self.think.sample_us(&mut self.rng),
            };
            let at = now.plus_us(think);
            self.act_at = Some(at);
            self.timer(cx, at);
        }
    }

    /// The server closed the connection (`None`: dropped without a close frame).
    pub fn closed(&mut self, cx: &mut Ctx<'_>, now: Time, conn: ConnId, code: Option<CloseCode>) {
        if self.conn != Some(conn) {
            return;
        }
        cx.net.to_server(cx.q, now, conn, Arrive::Close);
        self.conn = None;
        self.welcomed = false;
        self.inflight = None;
        self.sent = None;
        self.act_at = None;
        self.join_sent = false;
        if self.in_game && matches!(code, Some(CloseCode::ConnectionLimit)) {
            cx.report.violation(
                now,
                format!("client {}: closed 1013 in a running game", self.id),
            );
        }
        let delay = match (code, self.retry) {
            (_, Retry::None) if code.is_some() => {
                self.gone = true;
                return;
            }
            (_, Retry::Naive) => self.rng.random_range(20_000..50_000),
            (Some(CloseCode::ConnectionLimit | CloseCode::MessageFlood), _) => {
                self.attempts += 1;
                15_000_000u64 << self.attempts.min(3).saturating_sub(1)
            }
            _ => self.rng.random_range(500_000..1_500_000),
        };
        if self.role == Role::Solo && self.lobby.is_some() && !self.in_game {
            self.lobby = None;
        }
        self.reconnect_at = now.plus_us(delay);
        self.timer(cx, self.reconnect_at);
    }

    /// Opens a second connection with the token at once, leaving the first open (a
    /// second tab, a phone after a laptop): the server replaces the older one.
    pub fn take_over(&mut self, cx: &mut Ctx<'_>, now: Time) {
        if self.conn.take().is_some() {
            self.welcomed = false;
            self.sent = None;
            self.act_at = None;
            self.reconnect_at = now;
            self.timer(cx, now);
        }
    }

    /// Drops the connection on purpose and resumes after `after_us` with the token.
    pub fn drop_and_resume(&mut self, cx: &mut Ctx<'_>, now: Time, after_us: u64) {
        if let Some(conn) = self.conn.take() {
            cx.net.to_server(cx.q, now, conn, Arrive::Close);
            self.welcomed = false;
            self.sent = None;
            self.act_at = None;
            self.reconnect_at = now.plus_us(after_us);
            self.timer(cx, self.reconnect_at);
        }
    }
}
