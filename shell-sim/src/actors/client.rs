//! An honest player's client as a state machine: connect, `hello`, then by role create
//! a lobby (host, solo arrival, liveness prober) or join one (joiner), add AI seats,
//! start, play at its pace, and retry refused work with its policy. It reads the
//! server's real frames and sends real `ClientMessage`s. Every timer calls [`Client::step`],
//! which does whatever is due, so a spurious wake-up is harmless.

use std::net::IpAddr;

use rand_chacha::ChaCha12Rng;
use wizard_core::Time;
use wizard_core::vocabulary::game::Observation;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::io::ConnKind;
use wizard_core::vocabulary::wire::{self, ClientMessage, LobbyStatus};

use crate::actors::ctx::Ctx;
use crate::actors::play::{self, SentMove};
use crate::model::dist::Dist;
use crate::model::net::{Arrive, Ev, Owner};
use crate::runs::scenario::{Pace, Retry};

/// How long a player waits for any sign of its move before making it again.
pub const RECLICK_US: u64 = 3_000_000;

/// What the client is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Host {
        table: usize,
    },
    Joiner {
        table: usize,
    },
    /// Watches the table's lobby once it has a code; never acts.
    Spectator {
        table: usize,
    },
    /// An open-loop arrival: one game of its own with AI seats, then it leaves.
    Solo,
    /// The liveness phase's probe: creates one lobby.
    Prober,
    /// A quick-play player (`actors/quick.rs`): queued, seated by the server, one game.
    Quick,
}

/// New work in flight, for its latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub kind: &'static str,
    pub intended: Time,
}

/// Where a connection's frame stream stands, as the client saw it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stream {
    pub conn: Option<ConnId>,
    /// The newest frame's `seq`.
    pub seq: u64,
    /// The newest irreplaceable frame's `seq`.
    pub kept: u64,
}

/// One simulated player.
#[derive(Debug)]
pub struct Client {
    pub id: usize,
    pub role: Role,
    pub ip: IpAddr,
    pub pace: Pace,
    pub think: Dist,
    pub retry: Retry,
    pub slow_read_bytes_per_s: Option<f64>,
    pub ai_seats: u8,
    pub seats: u8,
    pub replay: bool,
    pub attempts_max: u32,
    /// Gives up on refused work after trying this long.
    pub patience_us: Option<u64>,
    pub conn: Option<ConnId>,
    hello_at: Option<Time>,
    pub token: Option<String>,
    pub(crate) player_id: Option<String>,
    pub welcomed: bool,
    pub accepting: bool,
    pub lobby: Option<wire::LobbyView>,
    /// The lobby part of the last decoded `state`, as sent.
    pub(crate) lobby_raw: String,
    pub obs: Option<Observation>,
    pub(crate) stream: Stream,
    pub(crate) latest_state: Option<String>,
    pub inflight: Option<Request>,
    pub(crate) add_ai_sent: bool,
    /// The options a host sets in its waiting room, and whether it asked for them.
    pub hidden_bids: bool,
    pub turn_seconds: u16,
    pub(crate) options_sent: bool,
    pub(crate) return_sent: bool,
    pub(crate) join_sent: bool,
    pub retry_at: Time,
    pub reconnect_at: Time,
    pub attempts: u32,
    pub act_at: Option<Time>,
    pub sent: Option<SentMove>,
    /// A move the server applied that this client has not yet seen in a state.
    pub accepted: Option<(SentMove, Time)>,
    pub(crate) progress: (u8, usize, usize),
    pub done: bool,
    pub gone: bool,
    pub in_game: bool,
    pub born: Time,
    pub rng: ChaCha12Rng,
    /// Chat lines said.
    pub(crate) chat_lines: u64,
    /// The last `state` received, whole (what a restart must not lose).
    pub(crate) last_state: Option<String>,
    /// The server process was killed: connections from this id on are the restored
    /// one's, and the first `welcome` there starts the resume check.
    pub(crate) restart_floor: Option<ConnId>,
    /// What this player saw before the kill, held against its first view after it
    /// resumed (`checks/resume.rs`).
    pub(crate) resume: Option<crate::checks::resume::Seen>,
    /// A quick-play player's plan (`actors/quick.rs`).
    pub quick: Option<crate::actors::quick::QuickPlan>,
}

impl Client {
    pub fn new(id: usize, role: Role, ip: IpAddr, rng: ChaCha12Rng, now: Time) -> Client {
        Client {
            id,
            role,
            ip,
            pace: Pace::Human,
            think: Dist::Const(500.0),
            retry: Retry::Backoff,
            slow_read_bytes_per_s: None,
            ai_seats: 0,
            seats: 4,
            replay: false,
            attempts_max: u32::MAX,
            patience_us: None,
            conn: None,
            hello_at: None,
            token: None,
            player_id: None,
            welcomed: false,
            accepting: true,
            lobby: None,
            lobby_raw: String::new(),
            obs: None,
            stream: Stream::default(),
            latest_state: None,
            inflight: None,
            add_ai_sent: false,
            hidden_bids: false,
            turn_seconds: 0,
            options_sent: false,
            return_sent: false,
            join_sent: false,
            retry_at: now,
            reconnect_at: now,
            attempts: 0,
            act_at: None,
            sent: None,
            accepted: None,
            progress: (0, 0, 0),
            done: false,
            gone: false,
            in_game: false,
            born: now,
            rng,
            chat_lines: 0,
            last_state: None,
            restart_floor: None,
            resume: None,
            quick: None,
        }
    }

    pub(crate) fn timer(&self, cx: &mut Ctx<'_>, at: Time) {
        cx.q.push(
            at,
            Ev::ClientTimer {
                client: self.id,
                generation: 0,
            },
        );
    }

    /// A line of table chat, when connected and in a lobby (a spectator's: it has no
    /// request or move in flight for an `error` to be taken for).
    pub fn chat(&mut self, cx: &mut Ctx<'_>, now: Time) {
        if self.conn.is_none() || !self.welcomed || self.lobby.is_none() {
            return;
        }
        self.chat_lines += 1;
        let text = format!("line {} from s{}", self.chat_lines, self.id);
        self.send(cx, now, &ClientMessage::Chat { text });
    }

    pub(crate) fn send(&mut self, cx: &mut Ctx<'_>, now: Time, m: &ClientMessage) {
        if let Some(conn) = self.conn {
            cx.net
                .to_server(cx.q, now, conn, Arrive::Text(wire::encode_client(m)));
        }
    }

    /// Does whatever is due now.
    pub fn step(&mut self, cx: &mut Ctx<'_>, now: Time) {
        if self.gone {
            return;
        }
        let Some(conn) = self.conn else {
            if now >= self.reconnect_at && !self.done {
                let conn =
                    cx.net
                        .open(cx.q, now, Owner::Client(self.id), self.ip, ConnKind::Player);
                self.conn = Some(conn);
                let at = now.plus_us(3 * cx.net.latency_us(conn) + 1);
                self.hello_at = Some(at);
                self.timer(cx, at);
            }
            return;
        };
        let _ = conn;
        if let Some(at) = self.hello_at {
            if now < at {
                return;
            }
            self.hello_at = None;
            let token = self.token.clone();
            self.send(
                cx,
                now,
                &ClientMessage::Hello {
                    token,
                    deltas: false,
                    profile_key: None,
                },
            );
        }
        if !self.welcomed {
            return;
        }
        if self.role == Role::Quick {
            self.step_quick(cx, now);
        } else {
            self.step_lobby(cx, now);
        }
        self.step_play(cx, now);
    }

    pub(crate) fn may_retry(&self, now: Time) -> bool {
        now >= self.retry_at && (self.accepting || self.retry != Retry::Backoff)
    }

    /// The lobby's next step by role: join or watch the table, create a lobby, set up
    /// and start the waiting room, or return to it after the game.
    fn step_lobby(&mut self, cx: &mut Ctx<'_>, now: Time) {
        if self.inflight.is_some() || self.done {
            return;
        }
        let creates = !matches!(self.role, Role::Joiner { .. } | Role::Spectator { .. });
        match (&self.lobby, self.role) {
            (None, Role::Joiner { table }) => self.join_table(cx, now, table),
            (None, Role::Spectator { table }) => self.watch_table(cx, now, table),
            (None, _) if creates && self.may_retry(now) => self.create_lobby(cx, now),
            (Some(l), _) if creates && l.status == LobbyStatus::Waiting && self.is_host() => {
                self.host_waiting_room(cx, now);
            }
            (Some(l), _)
                if l.status == LobbyStatus::Finished
                    && self.is_host()
                    && self.replay
                    && !self.return_sent =>
            {
                self.return_sent = true;
                self.send(cx, now, &ClientMessage::ReturnToLobby);
            }
            _ => {}
        }
    }

    /// A joiner asks for its table's lobby once the host has a code.
    fn join_table(&mut self, cx: &mut Ctx<'_>, now: Time, table: usize) {
        let code = cx.tables.get(table).and_then(|t| t.code.clone());
        if let Some(code) = code.filter(|_| !self.join_sent) {
            self.join_sent = true;
            let name = format!("p{}", self.id);
            self.send(cx, now, &ClientMessage::JoinLobby { code, name });
        }
    }

    /// A spectator asks to watch its table's lobby once the host has a code.
    fn watch_table(&mut self, cx: &mut Ctx<'_>, now: Time, table: usize) {
        let code = cx.tables.get(table).and_then(|t| t.code.clone());
        if let Some(code) = code.filter(|_| !self.join_sent) {
            self.join_sent = true;
            let name = format!("s{}", self.id);
            self.send(cx, now, &ClientMessage::Spectate { code, name });
        }
    }

    /// A host, an arrival or the prober asks for a lobby of its own.
    fn create_lobby(&mut self, cx: &mut Ctx<'_>, now: Time) {
        // Open-loop: the first attempt counts from the client's arrival.
        let intended = if self.attempts == 0 { self.born } else { now };
        self.inflight = Some(Request {
            kind: "create_lobby",
            intended,
        });
        let name = format!("p{}", self.id);
        self.send(
            cx,
            now,
            &ClientMessage::CreateLobby {
                name,
                public: false,
            },
        );
    }

    /// The host in its waiting room: sets its options, adds its AI seats, then starts
    /// the game once every seat is taken.
    fn host_waiting_room(&mut self, cx: &mut Ctx<'_>, now: Time) {
        let Some(l) = &self.lobby else {
            return;
        };
        let options = (l.options.hidden_bids, l.options.turn_seconds);
        if options != (self.hidden_bids, self.turn_seconds) && !self.options_sent {
            self.options_sent = true;
            let set = ClientMessage::SetOptions {
                hidden_bids: Some(self.hidden_bids),
                bid_restriction: None,
                turn_seconds: Some(self.turn_seconds),
                public: None,
            };
            self.send(cx, now, &set);
            return;
        }
        let ais = l.players.iter().filter(|p| p.is_ai).count();
        let full = l.players.len() >= usize::from(self.seats);
        if ais < usize::from(self.ai_seats) && !full {
            if !self.add_ai_sent {
                self.add_ai_sent = true;
                self.send(cx, now, &ClientMessage::AddAi { level: None });
            }
        } else if full && self.may_retry(now) {
            self.inflight = Some(Request {
                kind: "start_game",
                intended: now,
            });
            self.send(cx, now, &ClientMessage::StartGame);
        }
    }

    fn is_host(&self) -> bool {
        match (&self.lobby, &self.player_id) {
            (Some(l), Some(me)) => &l.host_id == me,
            _ => false,
        }
    }

    fn step_play(&mut self, cx: &mut Ctx<'_>, now: Time) {
        // A move that got no answer at all (the token bucket drops most messages
        // silently) is made again after a while, as a player would click again.
        if let Some(m) = self.sent
            && now.0.saturating_sub(m.sent_us) >= RECLICK_US
        {
            self.sent = None;
            self.act_at = Some(now);
        }
        let Some(at) = self.act_at else {
            return;
        };
        if now < at || self.sent.is_some() {
            return;
        }
        self.act_at = None;
        let Some(obs) = &self.obs else {
            return;
        };
        let Some(seat) = self.seat() else {
            return;
        };
        if obs.to_act != Some(seat) {
            return;
        }
        let Some(action) = play::choose(obs, &mut self.rng) else {
            return;
        };
        self.sent = Some(SentMove {
            action,
            round: obs.round,
            sent_us: now.0,
        });
        self.send(cx, now, &ClientMessage::Action { action });
        self.timer(cx, now.plus_us(RECLICK_US));
    }

    pub(crate) fn seat(&self) -> Option<u8> {
        let me = self.player_id.as_ref()?;
        let l = self.lobby.as_ref()?;
        let i = l.players.iter().position(|p| &p.id == me)?;
        u8::try_from(i).ok()
    }
}
