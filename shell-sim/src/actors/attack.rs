//! Abusers as one state machine per attack group: flooders (messages far above the
//! per-connection rate, reconnecting when cut off), lobby spammers (`create_lobby` as
//! fast as they like), connection storms (new connections from one or many
//! addresses, held open, never saying hello), fragment flooders (a text message that
//! never completes: empty continuation frames forever, reconnecting when cut off),
//! silent sockets (TCP sockets that never send a request head), slow heads (the start
//! of a head, never the rest) and code guessers (`spectate` with a new made-up lobby
//! code each time).

use std::net::{IpAddr, Ipv4Addr};

use wizard_core::Time;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::ConnKind;
use wizard_core::vocabulary::wire::{self, ClientMessage};

use crate::actors::ctx::Ctx;
use crate::model::conn_map::ConnMap;
use crate::model::net::{Arrive, Ev, Owner};
use crate::runs::scenario::{Attack, AttackKind};

/// One attack group and its open connections.
#[derive(Debug)]
pub struct Attacker {
    pub index: usize,
    pub spec: Attack,
    /// Open connections: the client's address, when it may send. A table by id (ids
    /// are handed out in order, so it iterates in the order they opened), since a
    /// silent attack holds thousands of sockets and closes one at each eviction.
    pub conns: ConnMap<(IpAddr, Time)>,
    opened: u64,
    /// Fragment flooders: frames sent per connection (the first opens the message).
    frames: ConnMap<u64>,
    pub stopped: bool,
    /// The server's `MAX_MESSAGE_BYTES`, which oversized frames exceed by one.
    pub message_bytes_max: usize,
}

/// The `n`th address of an attack group (10.200+group.x.y).
pub fn attack_ip(group: usize, n: u64, ips: u32) -> IpAddr {
    let k = if ips == 0 { n } else { n % u64::from(ips) };
    let g = u8::try_from(200 + group % 50).unwrap_or(250);
    IpAddr::V4(Ipv4Addr::new(
        10,
        g,
        u8::try_from((k >> 8) & 0xff).unwrap_or(0),
        u8::try_from(k & 0xff).unwrap_or(0),
    ))
}

/// A made-up lobby code for the `n`th guess: six characters of the codes' alphabet.
fn guessed_code(n: u64) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut k = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..6)
        .map(|_| {
            let c = ALPHABET[(k % 32) as usize];
            k /= 32;
            char::from(c)
        })
        .collect()
}

/// The `n`th wrong message of a junk sender.
fn junk(n: u64) -> Arrive {
    let texts = [
        "not json at all",
        "[1,2,3]",
        "{\"type\":\"no_such_type\"}",
        "{\"type\":\"join_lobby\",\"code\":\"ZZZZZZ\",\"name\":\"j\"}",
        "{\"type\":\"join_lobby\",\"code\":7}",
        "{\"type\":\"start_game\"}",
        "{\"type\":\"add_ai\"}",
        "{\"type\":\"set_options\",\"turn_seconds\":5}",
        "{\"type\":\"remove_player\",\"player_id\":\"abc\"}",
        "{\"type\":\"return_to_lobby\"}",
        "{\"type\":\"action\",\"action\":{\"kind\":\"bid\",\"bid\":3}}",
        "{\"type\":\"action\",\"action\":{\"kind\":\"play\",\"card\":\"x99\"}}",
        "{\"type\":\"hello\",\"token\":\"forged-token\"}",
        "{\"type\":\"create_lobby\",\"name\":\"\"}",
        "{\"type\":\"create_lobby\",\"name\":\"junk\"}",
        "{\"type\":\"leave_lobby\"}",
    ];
    let i = (n % (texts.len() as u64 + 1)) as usize;
    match texts.get(i) {
        Some(t) => Arrive::Text((*t).to_string()),
        None => Arrive::Binary,
    }
}

impl Attacker {
    pub fn new(index: usize, spec: Attack) -> Attacker {
        Attacker {
            index,
            spec,
            conns: ConnMap::default(),
            opened: 0,
            frames: ConnMap::default(),
            stopped: false,
            message_bytes_max: 65_536,
        }
    }

    fn interval_us(&self) -> u64 {
        let rate = self.spec.rate_per_s.max(0.1);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let us = (1e6 / rate) as u64;
        us.max(1)
    }

    fn open(&mut self, cx: &mut Ctx<'_>, now: Time, owner: Owner) {
        let ip = attack_ip(self.index, self.opened, self.spec.ips);
        self.opened += 1;
        if let AttackKind::Silent | AttackKind::SlowHead = self.spec.kind {
            let slow = self.spec.kind == AttackKind::SlowHead;
            let conn = cx.net.open_silent(cx.q, now, owner, ip, slow);
            self.conns.insert(conn, (ip, now));
            return;
        }
        let conn = cx.net.open(cx.q, now, owner, ip, ConnKind::Player);
        if self.spec.kind == AttackKind::Mute {
            cx.net.mute.insert(conn, ());
        }
        let ready = now.plus_us(3 * cx.net.latency_us(conn) + 1);
        if self.spec.kind != AttackKind::Storm {
            let hello = wire::encode_client(&ClientMessage::Hello {
                token: None,
                deltas: false,
                profile_key: None,
            });
            cx.q.push(
                ready,
                Ev::ServerArrive {
                    conn,
                    what: Arrive::Text(hello),
                },
            );
        }
        self.conns.insert(conn, (ip, ready.plus_us(1)));
        if self.spec.kind == AttackKind::Storm {
            let hold = crate::model::dist::ms_to_us(self.spec.hold_ms.max(1.0));
            cx.q.push(now.plus_us(hold), Ev::StormRelease { conn });
        }
    }

    /// The group's next step; reschedules itself until `to_s` or [`Attacker::stop`].
    pub fn tick(&mut self, cx: &mut Ctx<'_>, now: Time) {
        let to = Time(crate::model::dist::secs_to_us(self.spec.to_s));
        if self.stopped || now >= to {
            self.stop(cx, now);
            return;
        }
        match self.spec.kind {
            AttackKind::Storm => self.open(cx, now, Owner::Attacker(self.index)),
            AttackKind::Silent | AttackKind::SlowHead => {
                for _ in 0..self.spec.count.max(1) {
                    self.open(cx, now, Owner::Attacker(self.index));
                }
            }
            AttackKind::Fragments => {
                self.fill(cx, now);
                self.fragments(cx, now);
            }
            AttackKind::Oversized => {
                self.fill(cx, now);
                self.oversized(cx, now);
            }
            AttackKind::Mute => self.fill(cx, now),
            AttackKind::Junk => {
                self.fill(cx, now);
                self.junk(cx, now);
            }
            AttackKind::SpectateGuess => {
                self.fill(cx, now);
                self.guesses(cx, now);
            }
            AttackKind::Flood | AttackKind::LobbySpam => {
                self.fill(cx, now);
                self.flood(cx, now);
            }
        }
        let next = now.plus_us(self.interval_us());
        cx.q.push(next, Ev::Source { index: self.index });
    }

    /// Opens connections until the group holds `count` of them.
    fn fill(&mut self, cx: &mut Ctx<'_>, now: Time) {
        while self.conns.len() < self.spec.count.max(1) as usize {
            self.open(cx, now, Owner::Attacker(self.index));
        }
    }

    /// One wrong message on every ready connection of a junk sender.
    fn junk(&self, cx: &mut Ctx<'_>, now: Time) {
        let pick = self.opened.wrapping_mul(7).wrapping_add(now.0 / 1000);
        for (i, (conn, &(_, ready))) in self.conns.iter().enumerate() {
            if now >= ready {
                let what = junk(pick.wrapping_add(i as u64));
                cx.net.to_server(cx.q, now, conn, what);
            }
        }
    }

    /// One `spectate` with a made-up code on every ready connection of a code guesser.
    fn guesses(&self, cx: &mut Ctx<'_>, now: Time) {
        for (i, (conn, &(_, ready))) in self.conns.iter().enumerate() {
            if now >= ready {
                let n = (now.0 / 1000).wrapping_mul(31).wrapping_add(i as u64);
                let guess = wire::encode_client(&ClientMessage::Spectate {
                    code: guessed_code(n),
                    name: "guess".into(),
                });
                cx.net.to_server(cx.q, now, conn, Arrive::Text(guess));
            }
        }
    }

    /// One message on every ready connection of a flooder (`leave_lobby`) or a lobby
    /// spammer (`create_lobby`).
    fn flood(&self, cx: &mut Ctx<'_>, now: Time) {
        let text = if self.spec.kind == AttackKind::Flood {
            wire::encode_client(&ClientMessage::LeaveLobby)
        } else {
            wire::encode_client(&ClientMessage::CreateLobby {
                name: "spam".into(),
                public: false,
            })
        };
        for (conn, &(_, ready)) in self.conns.iter() {
            if now >= ready {
                cx.net
                    .to_server(cx.q, now, conn, Arrive::Text(text.clone()));
            }
        }
    }

    /// One frame on every ready connection of a fragment flooder: the first opens a
    /// text message without FIN, every later one is an empty continuation frame.
    fn fragments(&mut self, cx: &mut Ctx<'_>, now: Time) {
        for (conn, &(_, ready)) in self.conns.iter() {
            if now < ready {
                continue;
            }
            let n = self.frames.get(&conn).copied().unwrap_or(0);
            self.frames.insert(conn, n + 1);
            let mask = crate::host::frames::mask_for(conn, n);
            let bytes = if n == 0 {
                crate::host::frames::open_message(mask)
            } else {
                crate::host::frames::empty_continuation(mask)
            };
            cx.net.to_server(cx.q, now, conn, Arrive::Raw(bytes));
        }
    }

    /// One text frame past `MAX_MESSAGE_BYTES` on every ready connection that has not
    /// sent it yet: the frame reader fails it from its header.
    fn oversized(&mut self, cx: &mut Ctx<'_>, now: Time) {
        for (conn, &(_, ready)) in self.conns.iter() {
            if now < ready || self.frames.get(&conn).is_some() {
                continue;
            }
            self.frames.insert(conn, 1);
            let mask = crate::host::frames::mask_for(conn, 0);
            let payload = vec![b' '; self.message_bytes_max + 1];
            let bytes = crate::host::frames::client_frame(true, 1, &payload, mask);
            cx.net.to_server(cx.q, now, conn, Arrive::Raw(bytes));
        }
    }

    /// The server closed one of ours: flooders and spammers come back at once.
    pub fn closed(&mut self, cx: &mut Ctx<'_>, now: Time, conn: ConnId) {
        cx.net.to_server(cx.q, now, conn, Arrive::Close);
        self.conns.remove(&conn);
        self.frames.remove(&conn);
        cx.net.mute.remove(&conn);
    }

    /// Ends the attack: every connection is closed.
    pub fn stop(&mut self, cx: &mut Ctx<'_>, now: Time) {
        self.stopped = true;
        for (conn, _) in std::mem::take(&mut self.conns).iter() {
            cx.net.to_server(cx.q, now, conn, Arrive::Close);
        }
        self.frames = ConnMap::default();
    }

    /// A storm connection's hold time is over.
    pub fn release(&mut self, cx: &mut Ctx<'_>, now: Time, conn: ConnId) {
        if self.conns.contains_key(&conn) {
            self.closed(cx, now, conn);
        }
    }
}
