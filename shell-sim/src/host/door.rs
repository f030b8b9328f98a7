//! The simulated shell's door: every socket goes through the core's pure
//! `wizard_core::shell::door::Door`, as in shell-smol/src/limits.rs. An honest
//! socket is admitted and has its request head read at once (the real server reads it
//! within milliseconds); a silent socket is only admitted, and holds its slot until
//! `FIRST_BYTE_TIMEOUT` or until the door evicts it for a newer socket. A refused
//! socket is closed at once; a socket admitted to a reserve slot is a failed upgrade
//! (HTTP 503). Either way the core never hears of it.

use std::net::IpAddr;

use wizard_core::Time;
use wizard_core::shell::door::{Mode, PROBE_LANE_SOCKETS_MAX, PROBE_LANE_SOCKETS_PER_IP_MAX};
use wizard_core::vocabulary::ids::ConnId;

use crate::host::core_task::Host;
use crate::model::net::{Ev, Net, Owner};
use crate::model::queue::EventQueue;

impl Host {
    /// The door for an honest socket (a websocket upgrade): whether the upgrade may
    /// reach the core.
    pub(crate) fn admit_open(
        &mut self,
        q: &mut EventQueue<Ev>,
        net: &Net,
        now: Time,
        conn: ConnId,
        ip: IpAddr,
    ) -> bool {
        let admitted = match self.door.admit(conn.0, ip, now) {
            Ok(admit) => {
                self.evict(q, net, now, admit.evicted);
                // No trusted proxy in the simulator: the peer is the client.
                let head = self.door.head_read(conn.0, ip);
                if admit.mode == Mode::Full && head.is_ok() {
                    self.check_door(now, ip);
                    return true;
                }
                self.door.close(conn.0);
                true
            }
            Err(_) => false,
        };
        if admitted {
            self.http_503 += 1;
        } else {
            self.tcp_dropped += 1;
        }
        if matches!(net.owner.get(&conn), Some(Owner::Client(_))) {
            self.honest_refused += 1;
        }
        // The refusal is the accept path's work, at its turn; past a full accept queue
        // the kernel refused the socket before the server saw it.
        if self.exec.backlog_room() {
            self.door_work(q, now, self.cost.scaled_us(self.cost.close_us));
        } else {
            self.exec.backlog_refused += 1;
        }
        q.push(
            now.plus_us(net.latency_us(conn)),
            Ev::ClientClosed { conn, code: None },
        );
        false
    }

    /// A socket that will never send its head (`slow`: it sends the start of one at
    /// once, which the shell reads and tells the door, `Door::slow`, and never the
    /// rest). Accepting it, arming its timer and closing it cost about as much as
    /// closing a connection (`close_us`), a door task. The kernel refuses it when the
    /// accept queue (`LISTEN_BACKLOG`) is full.
    pub(crate) fn accept_silent(
        &mut self,
        q: &mut EventQueue<Ev>,
        net: &Net,
        now: Time,
        conn: ConnId,
        ip: IpAddr,
        slow: bool,
    ) {
        if !self.exec.backlog_room() {
            self.exec.backlog_refused += 1;
            q.push(
                now.plus_us(net.latency_us(conn)),
                Ev::ClientClosed { conn, code: None },
            );
            return;
        }
        self.door_work(q, now, self.cost.scaled_us(self.cost.close_us));
        match self.door.admit(conn.0, ip, now) {
            Ok(admit) => {
                self.evict(q, net, now, admit.evicted);
                self.silent.insert(conn, ());
                self.check_door(now, ip);
                let shell = &self.server.config().shell;
                let timeout = if slow {
                    self.door.slow(conn.0);
                    shell.handshake_timeout_us
                } else {
                    shell.first_byte_timeout_us
                };
                q.push(now.plus_us(timeout), Ev::FirstByteTimeout { conn });
            }
            Err(_) => {
                self.tcp_dropped += 1;
                q.push(
                    now.plus_us(net.latency_us(conn)),
                    Ev::ClientClosed { conn, code: None },
                );
            }
        }
    }

    /// The door made room by evicting socket `victim` (it forgot it already): the shell
    /// cuts the socket, and its owner sees it closed. The simulator numbers a socket
    /// with its connection's id.
    fn evict(&mut self, q: &mut EventQueue<Ev>, net: &Net, now: Time, victim: Option<u64>) {
        let Some(victim) = victim.map(ConnId) else {
            return;
        };
        self.tcp_evicted += 1;
        if self.silent.remove(&victim).is_none() {
            self.door_violations.push((
                now,
                format!("the door evicted socket {victim}, which had sent its head"),
            ));
        }
        q.push(
            now.plus_us(net.latency_us(victim)),
            Ev::ClientClosed {
                conn: victim,
                code: None,
            },
        );
    }

    /// A silent socket's `FIRST_BYTE_TIMEOUT` is over (unless it is gone already).
    pub fn first_byte_timeout(
        &mut self,
        q: &mut EventQueue<Ev>,
        net: &Net,
        now: Time,
        conn: ConnId,
    ) {
        if self.silent.remove(&conn).is_none() {
            return;
        }
        self.door.close(conn.0);
        self.first_byte_timeouts += 1;
        self.door_work(q, now, self.cost.scaled_us(self.cost.close_us));
        q.push(
            now.plus_us(net.latency_us(conn)),
            Ev::ClientClosed { conn, code: None },
        );
    }

    /// The door's bounds after admitting a socket from `ip`: all sockets within the
    /// hard cap (and the probe lane), the address within its share (and its lane
    /// share), the core's connections within the cap.
    fn check_door(&mut self, now: Time, ip: IpAddr) {
        let caps = self.door.caps();
        let share = self.door.sockets_per_ip_max();
        let (open, mine) = (self.door.open(), self.door.open_for(ip));
        self.sockets_open_max = self.sockets_open_max.max(open);
        let open_max = caps.hard_cap + PROBE_LANE_SOCKETS_MAX;
        if open > open_max || self.door.open_in(Mode::Probe) > PROBE_LANE_SOCKETS_MAX {
            self.door_violations.push((
                now,
                format!(
                    "{open} sockets open, hard cap {} and the lane",
                    caps.hard_cap
                ),
            ));
        }
        if mine > share || self.door.lane_for(ip) > PROBE_LANE_SOCKETS_PER_IP_MAX {
            self.door_violations
                .push((now, format!("{mine} sockets open from {ip}, share {share}")));
        }
        if self.door.open_in(Mode::Full) > caps.cap {
            self.door_violations
                .push((now, format!("full sockets over the cap {}", caps.cap)));
        }
    }
}
