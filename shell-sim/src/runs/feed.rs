//! How the world's events reach their actors: frames to players, the AI service or
//! (slowly) a slow reader, other work on the server thread, and the sources that
//! spawn attacks and open-loop arrivals.

use wizard_core::Time;
use wizard_core::vocabulary::io::ConnId;

use crate::actors::client::Role;
use crate::actors::ctx::Ctx;
use crate::host::outbox::Frame;
use crate::model::dist::{Dist, secs_to_us};
use crate::model::net::{Ev, Owner};
use crate::runs::driver::{Sim, client_ip, read_us};

impl Sim {
    pub(crate) fn deliver(&mut self, now: Time, conn: ConnId, frames: Vec<Frame>) {
        let owner = self.net.owner.get(&conn).copied();
        let slow = match owner {
            Some(Owner::Client(i)) => self.clients.get(i).and_then(|c| c.slow_read_bytes_per_s),
            _ => None,
        };
        if let Some(rate) = slow.filter(|_| !self.healed) {
            let sock = self.slow.entry(conn).or_default();
            sock.frames.extend(frames);
            if !sock.reading
                && let Some(f) = sock.frames.front()
            {
                sock.reading = true;
                let bytes = f.text.len();
                self.q.push(
                    now.plus_us(read_us(bytes, rate)),
                    Ev::SlowRead { conn, bytes },
                );
            }
            return;
        }
        let bytes: usize = frames.iter().map(|f| f.text.len()).sum();
        self.host.consumed(&mut self.q, &self.net, now, conn, bytes);
        let mut cx = Ctx {
            q: &mut self.q,
            net: &mut self.net,
            report: &mut self.report,
            tables: &mut self.tables,
        };
        match owner {
            Some(Owner::Client(i)) => {
                if let Some(c) = self.clients.get_mut(i) {
                    c.deliver(&mut cx, now, conn, frames);
                }
            }
            Some(Owner::Ai) => {
                if let Some(ai) = &mut self.ai {
                    let texts = frames.into_iter().map(|f| f.text).collect();
                    ai.deliver(&mut cx, now, conn, texts);
                }
            }
            _ => {}
        }
    }

    pub(crate) fn slow_read(&mut self, now: Time, conn: ConnId, bytes: usize) {
        let Some(sock) = self.slow.get_mut(&conn) else {
            return;
        };
        let frame = sock.frames.pop_front();
        sock.reading = false;
        let next = sock.frames.front().map(|f| f.text.len());
        self.host.consumed(&mut self.q, &self.net, now, conn, bytes);
        let rate = match self.net.owner.get(&conn) {
            Some(Owner::Client(i)) => self.clients.get(*i).and_then(|c| c.slow_read_bytes_per_s),
            _ => None,
        };
        if let (Some(n), Some(rate)) = (next, rate) {
            if let Some(sock) = self.slow.get_mut(&conn) {
                sock.reading = true;
            }
            self.q.push(
                now.plus_us(read_us(n, rate)),
                Ev::SlowRead { conn, bytes: n },
            );
        }
        if let (Some(f), Some(Owner::Client(i))) = (frame, self.net.owner.get(&conn).copied()) {
            let mut cx = Ctx {
                q: &mut self.q,
                net: &mut self.net,
                report: &mut self.report,
                tables: &mut self.tables,
            };
            if let Some(c) = self.clients.get_mut(i) {
                c.deliver(&mut cx, now, conn, vec![f]);
            }
        }
    }

    pub(crate) fn background(&mut self, now: Time, index: usize) {
        let Some(b) = self.scenario.background.get(index).cloned() else {
            return;
        };
        if self.healed || now >= Time(secs_to_us(b.to_s)) {
            return;
        }
        let chunk_us = 10_000u64;
        let phase_up = b.period_s > 0.0
            && ((now.0 as f64 / 1e6 / (b.period_s / 2.0)).floor() as u64).is_multiple_of(2);
        let share = b.share + if phase_up { b.amplitude } else { -b.amplitude };
        let quota = self.host.cpu.quota_cores();
        let work = (share.max(0.0) * quota * chunk_us as f64).round() as u64;
        self.host.burn(now, work);
        self.q.push(now.plus_us(chunk_us), Ev::Background { index });
    }

    pub(crate) fn source(&mut self, now: Time, index: usize) {
        let mut cx = Ctx {
            q: &mut self.q,
            net: &mut self.net,
            report: &mut self.report,
            tables: &mut self.tables,
        };
        if let Some(a) = self.attackers.get_mut(index) {
            if self.healed {
                a.stop(&mut cx, now);
            } else {
                a.tick(&mut cx, now);
            }
            return;
        }
        let i = index - self.attackers.len();
        let Some(spec) = self.arrivals.get(i).cloned() else {
            return;
        };
        if self.healed || now >= Time(secs_to_us(spec.to_s)) {
            return;
        }
        let n = self.clients.len() as u64;
        let ip = client_ip(90 + i, n, spec.ips);
        let id = self.new_client(Role::Solo, ip, now);
        let c = &mut self.clients[id];
        c.pace = spec.pace;
        c.retry = spec.retry;
        c.ai_seats = spec.ai_seats.max(2);
        c.seats = 1 + c.ai_seats;
        c.attempts_max = spec.attempts_max.max(1);
        c.patience_us = (spec.patience_s > 0.0).then(|| secs_to_us(spec.patience_s));
        let gap = Dist::Exp(1000.0 / spec.rate_per_s.max(0.001))
            .sample_us(&mut self.rng)
            .max(1);
        self.q.push(now.plus_us(gap), Ev::Source { index });
    }
}
