//! The shell's own endings of a connection and of the process, as shell-smol has them:
//! `KEEPALIVE_TIMEOUT` (a peer not heard from, not even a pong, is dropped),
//! `WRITE_TIMEOUT` (a write blocked that long drops the reader), and SIGTERM (the core
//! gets `Input::Shutdown`; a durable store's records are taken after every pass; once
//! the core is finished the process exits and new sockets are refused).
//!
//! Honest peers answer pings (browsers do it without the page), so only connections
//! marked mute in the network are watched for the keepalive, by the core's rule
//! (`wizard_core::shell::keepalive`: pings after `KEEPALIVE_INTERVAL` of silence, the close
//! after `KEEPALIVE_TIMEOUT`, looks on a shared grid); the pings themselves are part of
//! the idle floor (`cost.rs`). Dropped connections get no close frame: their
//! peers see the end of the stream.

use wizard_core::Time;
use wizard_core::shell::keepalive::{Due, Keepalive};
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::Input;

use crate::host::core_task::Host;
use crate::model::net::{Arrive, Ev, Net};
use crate::model::queue::EventQueue;

impl Host {
    /// Before a socket's arrival is read: a process that has exited refuses new sockets
    /// (the peer sees its connection end), and a mute connection's frames count as life.
    /// Returns whether the arrival is consumed.
    pub(crate) fn gone(
        &mut self,
        q: &mut EventQueue<Ev>,
        net: &Net,
        now: Time,
        conn: ConnId,
        what: &Arrive,
    ) -> bool {
        match what {
            Arrive::Open { .. } | Arrive::Silent { .. }
                if self.finished_at.is_some() || self.down || conn < self.dead_below =>
            {
                if self.finished_at.is_some() {
                    self.refused_after_exit += 1;
                } else {
                    self.refused_while_down += 1;
                }
                let lat = net.latency_us(conn);
                q.push(now.plus_us(lat), Ev::ClientClosed { conn, code: None });
                true
            }
            // A killed process's connection: nothing reads it any more.
            _ if conn < self.dead_below => true,
            Arrive::Text(_) | Arrive::Raw(_) | Arrive::Binary => {
                if let Some((heard, _)) = self.last_heard.get_mut(&conn) {
                    *heard = now;
                }
                false
            }
            _ => false,
        }
    }

    /// A new connection: a mute one is watched by the keepalive rule
    /// (`wizard_core::shell::keepalive`), looked at when the real writer would look.
    pub(crate) fn watch_keepalive(
        &mut self,
        q: &mut EventQueue<Ev>,
        net: &Net,
        now: Time,
        conn: ConnId,
    ) {
        if net.mute.contains_key(&conn) {
            self.last_heard.insert(conn, (now, None));
            let rule = Keepalive::new(&self.server.config().shell);
            q.push(rule.next_look(now, None), Ev::KeepaliveCheck { conn });
        }
    }

    /// A mute connection's keepalive look: dropped once silent for `KEEPALIVE_TIMEOUT`;
    /// a ping due is remembered (the mute peer never answers it; pings cost nothing
    /// here beyond the idle floor).
    pub fn keepalive_check(&mut self, q: &mut EventQueue<Ev>, net: &Net, now: Time, conn: ConnId) {
        let Some((heard, pinged)) = self.last_heard.get(&conn).copied() else {
            return;
        };
        let rule = Keepalive::new(&self.server.config().shell);
        if !self.outboxes.contains_key(&conn) {
            self.last_heard.remove(&conn);
            return;
        }
        let pinged = match rule.due(now, heard, pinged) {
            Due::Close => {
                self.last_heard.remove(&conn);
                self.keepalive_timeouts += 1;
                self.drop_conn(q, net, now, conn);
                return;
            }
            Due::Ping => Some(now),
            Due::Nothing => pinged,
        };
        self.last_heard.insert(conn, (heard, pinged));
        q.push(rule.next_look(heard, pinged), Ev::KeepaliveCheck { conn });
    }

    /// A write that is blocked (frames queued behind a full window) since `since`.
    pub(crate) fn write_blocked(&mut self, q: &mut EventQueue<Ev>, since: Time, conn: ConnId) {
        let timeout = self.server.config().shell.write_timeout_us;
        q.push(since.plus_us(timeout), Ev::WriteTimeout { conn });
    }

    /// A blocked write's deadline: the reader is dropped when it is still blocked.
    pub fn write_timeout(&mut self, q: &mut EventQueue<Ev>, net: &Net, now: Time, conn: ConnId) {
        let timeout = self.server.config().shell.write_timeout_us;
        let Some(since) = self.outboxes.get(&conn).and_then(|o| o.blocked_since) else {
            return;
        };
        if now.since_us(since) >= timeout {
            self.write_timeouts += 1;
            self.drop_conn(q, net, now, conn);
        } else {
            self.write_blocked(q, since, conn);
        }
    }

    /// The shell ends a connection without a close frame: its writer stops, the peer
    /// sees the end of the stream, the core hears `Closed`.
    pub(crate) fn drop_conn(&mut self, q: &mut EventQueue<Ev>, net: &Net, now: Time, conn: ConnId) {
        if self.outboxes.remove(&conn).is_none() {
            return;
        }
        let lat = net.latency_us(conn);
        q.push(now.plus_us(lat), Ev::ClientClosed { conn, code: None });
        self.enqueue(Input::Closed { conn });
        self.wake(q, now);
    }

    /// SIGTERM: the core is told; the loop handles it with its next pass.
    pub fn shutdown(&mut self, q: &mut EventQueue<Ev>, now: Time) {
        self.enqueue(Input::Shutdown);
        self.wake(q, now);
    }

    /// Takes the records of the pass that started at `now`, as the real shell takes
    /// them after every pass, durable or not (without a durable store there are none).
    /// With a durable store returns the commit's modelled CPU on the core thread, to be
    /// run before the pass's frames go out (commit before acknowledge), and charges the
    /// writer's fold to the quota (in whole microseconds, the rest carried over).
    pub(crate) fn take_records(&mut self, now: Time) -> f64 {
        let taken = self.server.take_records();
        let records = taken.len();
        if !self.durable || records == 0 {
            return 0.0;
        }
        if self.journal.is_some() {
            self.pending_records = taken;
        }
        self.store_commits += 1;
        self.store_records += records as u64;
        let cost = self.cost;
        self.fold_us_owed += cost.store_fold_us * cost.speed_factor.max(0.0) * records as f64;
        if self.fold_us_owed >= 1.0 {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let whole = self.fold_us_owed.floor() as u64;
            self.cpu.charge(now, whole);
            self.fold_us_owed -= whole as f64;
        }
        cost.store_record_us * records as f64
    }

    /// The pass that started at `start` ran until `end`, its commit within it: its
    /// records are in the store from `end` on (a kill before that loses them, and the
    /// pass's frames with them, which go out only at `end`).
    pub(crate) fn commit(&mut self, start: Time, end: Time) {
        self.last_pass = (start, end);
        if let Some(journal) = &mut self.journal
            && !self.pending_records.is_empty()
        {
            journal.push((end, std::mem::take(&mut self.pending_records)));
        }
    }

    /// After every pass, which ran until `end`: a finished core ends the process.
    pub(crate) fn after_pass(&mut self, end: Time) {
        if self.finished_at.is_none() && self.server.is_finished() {
            self.finished_at = Some(end);
        }
    }
}
