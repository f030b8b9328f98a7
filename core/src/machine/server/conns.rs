//! Player and AI connections: opening (the connection limits and `RECONNECT_RATE`,
//! holding a connection over either until its `hello`), the per-connection token
//! bucket, and closing.

use std::net::IpAddr;

use crate::vocabulary::ids::ConnId;
use crate::vocabulary::io::{ConnKind, FallbackReason, Note, Output, RefuseReason};
use crate::vocabulary::limiter::{IpKey, TokenBucket};
use crate::vocabulary::time::{Time, US_PER_MS};
use crate::vocabulary::wire::{CloseCode, ErrorCode, LobbyStatus};

use super::{Conn, HELLO_GRACE_US, Server, TimerKey};
use crate::vocabulary::limiter::rate_from;

/// A dropped message is answered with `rate_limited` the first time and then once
/// every this many drops (PROTOCOL.md section 2): the sender learns it is throttled
/// without a reply per dropped message.
const RATE_LIMITED_REPLY_EVERY: u32 = 10;

impl Server {
    pub(super) fn on_opened(
        &mut self,
        now: Time,
        conn: ConnId,
        kind: ConnKind,
        ip: IpAddr,
        out: &mut Vec<Output>,
    ) {
        let burst = u64::from(self.config.message_burst.max(1));
        let mut entry = Conn {
            kind,
            ip,
            session: None,
            bucket: TokenBucket::new(
                rate_from(self.config.message_rate_per_sec, 1_000_000),
                burst,
                now,
            ),
            drops: 0,
            status_sent: None,
            closing: false,
            counted: false,
            waiting: None,
            deltas: None,
        };
        let key = IpKey::new(ip);
        let refusal = match kind {
            ConnKind::Player => match self.limiter.try_open(conn, key) {
                // Over the address's reconnect rate it is held uncounted like one over
                // MAX_CONNECTIONS: a returning player of a running game still gets in.
                Ok(()) if !self.reconnect_rate.try_take(&key, now) => {
                    self.limiter.close(conn);
                    entry.waiting = Some(RefuseReason::Reconnects);
                    None
                }
                Ok(()) => {
                    entry.counted = true;
                    None
                }
                // It may be a player of a running game coming back: its `hello` tells.
                Err(RefuseReason::Total) if !self.limiter.ip_full(key) => {
                    entry.waiting = Some(RefuseReason::Total);
                    None
                }
                // The limiter refuses with `Total` or `PerIp` only.
                Err(_) => Some(RefuseReason::PerIp),
            },
            ConnKind::Ai | ConnKind::AiInProcess => {
                (!self.bridge.connect(conn)).then_some(RefuseReason::AiConnections)
            }
        };
        let waiting = entry.waiting.is_some();
        self.conns.insert(conn, entry);
        match refusal {
            None if waiting => {
                self.timers
                    .set(TimerKey::HelloGrace(conn), now.plus_us(HELLO_GRACE_US));
                out.push(Output::Note(Note::ConnectionHeld { conn, ip }));
            }
            None => {
                self.counters.connections_opened += 1;
                if kind.is_ai() {
                    out.push(Output::Note(Note::AiConnected { conn }));
                }
            }
            Some(reason) => self.refuse_connection(conn, ip, reason, out),
        }
    }

    pub(super) fn refuse_connection(
        &mut self,
        conn: ConnId,
        ip: IpAddr,
        reason: RefuseReason,
        out: &mut Vec<Output>,
    ) {
        self.counters.connections_refused.bump(reason);
        out.push(Output::Note(Note::ConnectionRefused { conn, ip, reason }));
        if self
            .conns
            .get(&conn)
            .is_some_and(|c| c.kind == ConnKind::Player)
        {
            let (message, retry_after_ms) = match reason {
                RefuseReason::Reconnects => (
                    "Too many new connections from your address. Try again in a moment.",
                    Some(
                        self.reconnect_rate
                            .wait_us(&IpKey::new(ip), self.now)
                            .div_ceil(US_PER_MS)
                            .max(1),
                    ),
                ),
                // A connection limit, whatever the load level: the floor applies.
                _ => (
                    "The server is full right now. Try again in a moment.",
                    Some(self.busy_retry_after_ms(false)),
                ),
            };
            self.send_error(conn, ErrorCode::Busy, message, retry_after_ms, out);
        }
        self.close(conn, CloseCode::ConnectionLimit, out);
    }

    /// Refuses a held connection (`busy`, then 1013), for `reason` or else the reason
    /// it was held for.
    pub(super) fn refuse_waiting(
        &mut self,
        conn: ConnId,
        reason: Option<RefuseReason>,
        out: &mut Vec<Output>,
    ) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let Some(held) = c.waiting.take() else {
            return;
        };
        let reason = reason.unwrap_or(held);
        let ip = c.ip;
        self.timers.cancel(&TimerKey::HelloGrace(conn));
        self.refuse_connection(conn, ip, reason, out);
    }

    /// A held connection said `hello`: a player of a running game (dormant or not)
    /// coming back is admitted past the cap or rate (its game must go on); anyone else
    /// is refused. Returns whether it was admitted.
    pub(super) fn admit_waiting(
        &mut self,
        conn: ConnId,
        token: Option<&str>,
        out: &mut Vec<Output>,
    ) -> bool {
        let Some((ip, held)) = self.conns.get(&conn).map(|c| (c.ip, c.waiting)) else {
            return false;
        };
        let in_running_game = token
            .and_then(|t| self.sessions.find_by_token(t))
            .and_then(|id| self.sessions.get(id))
            .and_then(|s| s.lobby)
            .and_then(|id| self.lobbies.get(id))
            .is_some_and(|l| l.status() == LobbyStatus::Playing);
        if !in_running_game {
            self.refuse_waiting(conn, None, out);
            return false;
        }
        match self.limiter.try_open_past_total(conn, IpKey::new(ip)) {
            Ok(()) => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.waiting = None;
                    c.counted = true;
                }
                self.timers.cancel(&TimerKey::HelloGrace(conn));
                self.counters.connections_opened += 1;
                if held == Some(RefuseReason::Reconnects) {
                    out.push(Output::Note(Note::ResumedPastRate { conn, ip }));
                } else {
                    self.counters.resumed_past_cap += 1;
                    out.push(Output::Note(Note::ResumedPastCap { conn, ip }));
                }
                true
            }
            Err(_) => {
                self.refuse_waiting(conn, Some(RefuseReason::PerIp), out);
                false
            }
        }
    }

    /// The per-connection token bucket: true when the frame may be handled.
    pub(super) fn admit_frame(&mut self, now: Time, conn: ConnId, out: &mut Vec<Output>) -> bool {
        let violations_max = self.config.rate_violations_max;
        let Some(c) = self.conns.get_mut(&conn) else {
            return false;
        };
        if c.closing || c.kind != ConnKind::Player {
            return false;
        }
        if c.bucket.try_take(now) {
            self.counters.messages += 1;
            return true;
        }
        c.drops += 1;
        let drops = c.drops;
        let ip = c.ip;
        self.counters.messages_dropped += 1;
        if drops >= violations_max {
            out.push(Output::Note(Note::FloodClosed { conn, ip }));
            self.send_error(
                conn,
                ErrorCode::RateLimited,
                "Message flood: closing.",
                None,
                out,
            );
            self.close(conn, CloseCode::MessageFlood, out);
        } else if drops == 1 || drops.is_multiple_of(RATE_LIMITED_REPLY_EVERY) {
            let wait_ms = self
                .conns
                .get(&conn)
                .map_or(0, |c| c.bucket.wait_us(now).div_ceil(US_PER_MS));
            self.send_error(
                conn,
                ErrorCode::RateLimited,
                "Too many messages, slow down.",
                Some(wait_ms),
                out,
            );
        }
        false
    }

    /// The shell's frame budget ([`crate::shell::ws::FrameBudget`]) found the connection
    /// flooding with frames the core never sees: the same note and `rate_limited`
    /// as a message flood; the caller closes with 1008.
    pub(super) fn frame_flood(&mut self, conn: ConnId, out: &mut Vec<Output>) {
        let Some(c) = self.conns.get(&conn).filter(|c| !c.closing) else {
            return;
        };
        let (ip, kind) = (c.ip, c.kind);
        out.push(Output::Note(Note::FloodClosed { conn, ip }));
        if kind == ConnKind::Player {
            self.send_error(
                conn,
                ErrorCode::RateLimited,
                "Frame flood: closing.",
                None,
                out,
            );
        }
    }

    pub(super) fn close(&mut self, conn: ConnId, code: CloseCode, out: &mut Vec<Output>) {
        if let Some(c) = self.conns.get_mut(&conn) {
            if c.closing {
                return;
            }
            c.closing = true;
            self.counters.closes.bump(code);
            out.push(Output::Close { conn, code });
        }
    }

    pub(super) fn on_closed(&mut self, now: Time, conn: ConnId, out: &mut Vec<Output>) {
        let Some(c) = self.conns.remove(&conn) else {
            return;
        };
        if c.counted {
            self.limiter.close(conn);
        }
        if c.waiting.is_some() {
            self.timers.cancel(&TimerKey::HelloGrace(conn));
        }
        match c.kind {
            ConnKind::Ai | ConnKind::AiInProcess => {
                let lost = self.bridge.disconnect(now, conn);
                out.push(Output::Note(Note::AiDisconnected {
                    conn,
                    pending: u32::try_from(lost.len()).unwrap_or(u32::MAX),
                }));
                for (request_id, pending) in lost {
                    self.timers.cancel(&TimerKey::AiRequest(request_id));
                    self.fallback_for(now, request_id, pending, FallbackReason::Disconnected, out);
                }
            }
            ConnKind::Player => {
                if let Some(session) = c.session {
                    if self
                        .sessions
                        .get(session)
                        .is_some_and(|s| s.conn == Some(conn))
                    {
                        self.stop_watching(now, session, out);
                        self.drop_ticket(session);
                    }
                    self.session_disconnected(now, session, conn, out);
                }
            }
        }
    }
}
