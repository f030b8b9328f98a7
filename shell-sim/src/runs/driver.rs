//! The simulation: builds the world from a scenario and a seed, then pops events in
//! (time, sequence) order and hands each to its actor. Timeline ticks, healing and the
//! final checks live in `phase.rs`.

use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr};

use rand::RngExt;
use rand_chacha::ChaCha12Rng;
use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::ids::LobbyId;
use wizard_core::vocabulary::rng::Seed;
use wizard_core::vocabulary::stats::Counters;
use wizard_core::vocabulary::wire::{CloseCode, LobbyStatus};
use wizard_core::{Server, Time};

use crate::actors::ai::AiService;
use crate::actors::attack::Attacker;
use crate::actors::client::{Client, Role};
use crate::actors::ctx::{Ctx, TableInfo};
use crate::checks::checker::{Checker, Observers};
use crate::host::core_task::Host;
use crate::model::cpu::Cpu;
use crate::model::dist::{Dist, fork, ms_to_us, secs_to_us};
use crate::model::net::{Ev, Net, Owner};
use crate::model::queue::EventQueue;
use crate::runs::report::{FNV_OFFSET, Report};
use crate::runs::scenario::{Arrivals, Scenario, ScenarioError, Tables};

/// A slow reader's socket: frames waiting to be read.
#[derive(Debug, Default)]
pub struct SlowSock {
    pub frames: VecDeque<crate::host::outbox::Frame>,
    pub reading: bool,
}

/// The whole simulated world.
#[derive(Debug)]
pub struct Sim {
    pub scenario: Scenario,
    pub seed: u64,
    pub host: Host,
    pub q: EventQueue<Ev>,
    pub net: Net,
    pub clients: Vec<Client>,
    pub tables: Vec<TableInfo>,
    pub attackers: Vec<Attacker>,
    pub arrivals: Vec<Arrivals>,
    pub ai: Option<AiService>,
    pub check: Checker,
    pub report: Report,
    pub slow: BTreeMap<ConnId, SlowSock>,
    pub reconnect_every_us: BTreeMap<usize, u64>,
    /// Spectators that chat, and how often.
    pub chat_every_us: BTreeMap<usize, u64>,
    pub prev_counters: Counters,
    pub healed: bool,
    pub heal_snapshot: BTreeMap<LobbyId, u64>,
    pub end: Time,
    pub(crate) rng: ChaCha12Rng,
    pub events: u64,
    /// The AI service runs inside the server's process (`EMBEDDED_AI=1`): its
    /// decisions' CPU comes out of the server's quota.
    pub ai_embedded: bool,
    pub ai_embedded_decisions: u64,
    /// Clients that take their session over from a second connection instead of
    /// dropping and resuming.
    pub takeovers: BTreeMap<usize, ()>,
    /// The counters of every process killed so far (`restart.rs`).
    pub killed_counters: Vec<Counters>,
    /// Games running at a kill, by lobby code: their game's id.
    pub restart_games: BTreeMap<String, String>,
}

pub(crate) fn client_ip(group: usize, n: u64, ips: u32) -> IpAddr {
    let k = if ips == 0 { n } else { n % u64::from(ips) };
    IpAddr::V4(Ipv4Addr::new(
        10,
        u8::try_from(1 + group % 100).unwrap_or(1),
        u8::try_from((k >> 8) & 0xff).unwrap_or(0),
        u8::try_from(k & 0xff).unwrap_or(0),
    ))
}

/// The address of the spectator of table `t` of group `group`: `10.201.x.y` and up,
/// apart from the players' `10.1.x.y` to `10.100.x.y` ([`client_ip`]).
fn spectator_ip(group: usize, t: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(
        10,
        u8::try_from(201 + group % 50).unwrap_or(201),
        u8::try_from((t >> 8) & 0xff).unwrap_or(0),
        u8::try_from(t & 0xff).unwrap_or(0),
    ))
}

impl Sim {
    /// The simulated process of `scenario`: its server (keeping records when the
    /// scenario names a durable store) on a CPU with the measured idle floor. Also
    /// says whether the AI runs embedded.
    fn host_for(scenario: &Scenario, config: &Config, seed: u64) -> (Host, bool) {
        let mut server = Server::new(config.clone(), Seed::from_u64(seed), Time::ZERO);
        // A durable store only when the scenario names one: the simulator's default is
        // memory (the server's is SQLite).
        let durable = scenario.durable();
        if durable {
            server.keep_records();
        }
        // The floor is the real server's, measured: `speed_factor` does not scale it (a
        // scenario of a slower machine sets its own). Scaled, at four times slower and a
        // tenth of a core it would read 58 % of the quota idle, busy for good.
        let ai_embedded = scenario.ai.is_some() && config.shell.embedded_ai;
        let floor_us_per_s = scenario
            .cost
            .idle_floor_us_per_s(ai_embedded)
            .max(0.0)
            .round() as u64;
        let cpu = Cpu::new(
            scenario.cpu_quota_cores,
            ms_to_us(scenario.cfs_period_ms),
            floor_us_per_s,
        );
        let mut host = Host::new(server, cpu, scenario.cost, scenario.window_bytes);
        host.durable = durable;
        (host, ai_embedded)
    }

    /// Builds the world of `scenario` (already resolved) for `seed`.
    pub fn new(scenario: Scenario, seed: u64) -> Result<Sim, ScenarioError> {
        let config = scenario.config()?;
        let progress = crate::checks::progress::bound(&scenario, &config);
        let (host, ai_embedded) = Sim::host_for(&scenario, &config, seed);
        let latency = scenario.latency_ms.unwrap_or(Dist::Const(1.0));
        let end = Time(secs_to_us(scenario.duration_s + scenario.liveness_s));
        let report = Report {
            scenario: scenario.name.clone(),
            seed,
            duration_s: scenario.duration_s + scenario.liveness_s,
            trace_hash: FNV_OFFSET,
            heal_s: scenario.duration_s,
            ..Report::default()
        };
        let ai = scenario
            .ai
            .clone()
            .map(|spec| AiService::new(spec, fork(seed, 3), ai_embedded));
        let mut sim = Sim {
            host,
            q: EventQueue::default(),
            net: Net::new(latency, fork(seed, 1)),
            clients: Vec::new(),
            tables: Vec::new(),
            attackers: Vec::new(),
            arrivals: scenario.arrivals.clone(),
            ai,
            check: Checker::default(),
            report,
            slow: BTreeMap::new(),
            reconnect_every_us: BTreeMap::new(),
            chat_every_us: BTreeMap::new(),
            prev_counters: Counters::default(),
            healed: false,
            heal_snapshot: BTreeMap::new(),
            end,
            rng: fork(seed, 2),
            events: 0,
            ai_embedded,
            ai_embedded_decisions: 0,
            takeovers: BTreeMap::new(),
            killed_counters: Vec::new(),
            restart_games: BTreeMap::new(),
            seed,
            scenario,
        };
        sim.check.games = crate::checks::games::Games::new(progress);
        sim.check.games.expiry =
            crate::checks::expiry::Expiry::new(config.session_ttl_us, progress.map(|p| p.slack_us));
        sim.populate();
        sim.populate_quick();
        sim.check.quick = crate::checks::quick::Quick::new(progress.map(|p| p.slack_us));
        Ok(sim)
    }

    pub(crate) fn new_client(&mut self, role: Role, ip: IpAddr, at: Time) -> usize {
        let id = self.clients.len();
        let rng = fork(self.seed, 1000 + id as u64);
        self.clients.push(Client::new(id, role, ip, rng, at));
        self.q.push(
            at,
            Ev::ClientTimer {
                client: id,
                generation: 0,
            },
        );
        id
    }

    /// Every actor of the scenario and every scheduled event: the tables' players and
    /// spectators, the attackers and arrivals, stalls, background work, the timeline's
    /// seconds, healing, shutdown, restarts and the end.
    fn populate(&mut self) {
        let groups = self.scenario.tables.clone();
        let mut n = 0u64;
        for (g, spec) in groups.iter().enumerate() {
            for t in 0..spec.count {
                let table = self.tables.len();
                self.tables.push(TableInfo::default());
                let spread = spec.spread_s * f64::from(t) / f64::from(spec.count.max(1));
                let jitter = self.rng.random_range(0..10_000);
                let at = Time(secs_to_us(spec.start_s + spread) + jitter);
                for seat in 0..spec.humans.max(1) {
                    let ip = client_ip(g, n, spec.ips);
                    n += 1;
                    self.seat_player(spec, table, t, seat, ip, at);
                }
                self.seat_spectators(g, spec, table, t, at);
            }
        }
        self.schedule_sources();
        self.schedule_timeline();
        self.schedule_restarts();
        self.q.push(self.end, Ev::End);
    }

    /// The player of `seat` (0: the host) at table `t` of group `spec`, table `table`
    /// of the run, arriving at `at`: its pace and policy, and whether it reads slowly,
    /// takes over, reconnects or walks away.
    fn seat_player(&mut self, spec: &Tables, table: usize, t: u32, seat: u8, ip: IpAddr, at: Time) {
        let role = if seat == 0 {
            Role::Host { table }
        } else {
            Role::Joiner { table }
        };
        let id = self.new_client(role, ip, at);
        let c = &mut self.clients[id];
        c.pace = spec.pace;
        c.think = spec.think_ms.unwrap_or(Dist::Const(500.0));
        c.retry = spec.retry;
        c.ai_seats = spec.ai_seats;
        c.hidden_bids = spec.hidden_bids;
        c.turn_seconds = spec.turn_seconds;
        c.seats = spec.humans.max(1) + spec.ai_seats;
        c.replay = spec.replay;
        if seat == 1 && t < spec.slow_readers {
            c.slow_read_bytes_per_s = Some(spec.slow_read_bytes_per_s.max(1.0));
        }
        let takeover_from = spec.slow_readers + spec.reconnectors;
        if seat == 1 && t >= takeover_from && t < takeover_from + spec.takeovers {
            self.takeovers.insert(id, ());
        }
        if seat == 1 && t >= spec.slow_readers && t < takeover_from + spec.takeovers {
            let every = secs_to_us(spec.reconnect_every_s.max(1.0));
            self.reconnect_every_us.insert(id, every);
            self.q.push(at.plus_us(every), Ev::Reconnect { client: id });
        }
        let walk_from = takeover_from + spec.takeovers;
        if seat == 1 && t >= walk_from && t < walk_from + spec.walk_aways {
            let walk_at = at.plus_us(secs_to_us(spec.walk_away_s.max(0.0)));
            self.q.push(walk_at, Ev::WalkAway { client: id });
        }
        if seat > 0 {
            self.tables[table].members.push(id);
        }
    }

    /// The spectators of table `t` of group `g` (`spec`), table `table` of the run,
    /// arriving at `at`, and their chat.
    fn seat_spectators(&mut self, g: usize, spec: &Tables, table: usize, t: u32, at: Time) {
        let each = spec.spectators_each.max(1);
        let watchers = if t < spec.spectators { each } else { 0 };
        for k in 0..watchers {
            // No draw, and an address of its own outside the players' ranges,
            // so that it takes nothing of their per-address caps; every other
            // client stays as it was (spectators come only where asked).
            let ip = spectator_ip(g, t * each + k);
            let id = self.new_client(Role::Spectator { table }, ip, at);
            self.clients[id].pace = spec.pace;
            if spec.chat_every_s > 0.0 {
                // Spread over the period by the spectator's place, no draw.
                let every = secs_to_us(spec.chat_every_s);
                let first = every * u64::from(k + 1) / u64::from(each);
                self.chat_every_us.insert(id, every);
                self.q.push(at.plus_us(first), Ev::Chat { client: id });
            }
        }
    }

    /// The attackers, each with its first step, the arrivals' first steps, the stalls
    /// and the background work.
    fn schedule_sources(&mut self) {
        for (i, a) in self.scenario.attacks.clone().into_iter().enumerate() {
            self.q
                .push(Time(secs_to_us(a.from_s)), Ev::Source { index: i });
            let mut attacker = Attacker::new(i, a);
            attacker.message_bytes_max = self.host.server.config().message_bytes_max;
            self.attackers.push(attacker);
        }
        let base = self.attackers.len();
        for (i, a) in self.arrivals.iter().enumerate() {
            self.q
                .push(Time(secs_to_us(a.from_s)), Ev::Source { index: base + i });
        }
        for s in &self.scenario.stalls {
            self.q
                .push(Time(secs_to_us(s.at_s)), Ev::Stall { us: ms_to_us(s.ms) });
        }
        for (i, b) in self.scenario.background.iter().enumerate() {
            self.q
                .push(Time(secs_to_us(b.from_s)), Ev::Background { index: i });
        }
    }

    /// The timeline's seconds, healing at the end of the fault phase and the shutdown.
    fn schedule_timeline(&mut self) {
        let mut t = 1;
        while Time(secs_to_us(f64::from(t))) <= self.end {
            self.q.push(Time(secs_to_us(f64::from(t))), Ev::Tick);
            t += 1;
        }
        if self.scenario.liveness_s > 0.0 {
            self.q
                .push(Time(secs_to_us(self.scenario.duration_s)), Ev::Heal);
        }
        if self.scenario.shutdown_at_s > 0.0 {
            self.q
                .push(Time(secs_to_us(self.scenario.shutdown_at_s)), Ev::Shutdown);
        }
    }

    /// Runs to the end; returns the report.
    pub fn run(mut self) -> Report {
        #[allow(clippy::disallowed_methods)]
        let started = std::time::Instant::now();
        self.host.start(&mut self.q);
        if let Some(ai) = &mut self.ai {
            let mut cx = Ctx {
                q: &mut self.q,
                net: &mut self.net,
                report: &mut self.report,
                tables: &mut self.tables,
            };
            ai.start(&mut cx, Time::ZERO);
        }
        while let Some((now, ev)) = self.q.pop() {
            self.events += 1;
            if matches!(ev, Ev::End) {
                self.finish(now);
                break;
            }
            self.dispatch(now, ev);
        }
        self.report.events = self.events;
        self.report.inputs = self.host.inputs_handled;
        self.report.wall_ms = started.elapsed().as_secs_f64() * 1e3;
        self.report
    }

    fn dispatch(&mut self, now: Time, ev: Ev) {
        let mut cx = Ctx {
            q: &mut self.q,
            net: &mut self.net,
            report: &mut self.report,
            tables: &mut self.tables,
        };
        match ev {
            Ev::ServerArrive { conn, what } => self.host.arrive(cx.q, cx.net, now, conn, what),
            Ev::LoopRun => {
                let mut obs = Observers {
                    check: &mut self.check,
                    report: cx.report,
                };
                self.host.run_loop(cx.q, cx.net, now, &mut obs);
                for conn in self.check.accepted_moves.drain(..) {
                    if let Some(Owner::Client(i)) = self.net.owner.get(&conn).copied()
                        && let Some(c) = self.clients.get_mut(i)
                    {
                        c.accepted = c.sent.map(|m| (m, now));
                    }
                }
                if self.host.inbox_len() > crate::host::core_task::INBOX_CAPACITY {
                    self.report.violation(now, "inbox over its capacity".into());
                }
            }
            Ev::CoreTimer => self.host.core_timer(cx.q, now),
            Ev::ProbeWake => self.host.probe_wake(cx.q, now),
            Ev::Stall { us } => self.host.stall(now, us),
            Ev::Background { index } => self.background(now, index),
            Ev::Deliver { conn, frames } => self.deliver(now, conn, frames),
            Ev::SlowRead { conn, bytes } => self.slow_read(now, conn, bytes),
            Ev::AiInProcess { conn, request } => {
                if let Some(ai) = &mut self.ai {
                    ai.process_cpu = Some(process_cpu(&self.host));
                    ai.deliver_in_process(&mut cx, now, conn, *request);
                }
            }
            Ev::ClientClosed { conn, code } => match cx.net.owner.get(&conn).copied() {
                Some(Owner::Client(i)) => {
                    if let Some(c) = self.clients.get_mut(i) {
                        // 1013 is refused only to a player of a running game: one whose
                        // session is gone (given up at `SESSION_TTL`, or evicted at
                        // `MAX_SESSIONS`: "its token stops working") is a new player,
                        // and past `MAX_CONNECTIONS` "a token of no running game" gets
                        // 1013 (PROTOCOL.md, "Connection limits"). Its last view may still
                        // show the game: what counts is whether the server seats it.
                        if code == Some(CloseCode::ConnectionLimit)
                            && c.in_game
                            && !seated_in_running_game(&self.host.server, c.player_id.as_deref())
                        {
                            c.in_game = false;
                        }
                        c.closed(&mut cx, now, conn, code);
                    }
                }
                Some(Owner::Ai) => {
                    if let Some(ai) = &mut self.ai {
                        ai.closed(&mut cx, now, conn);
                    }
                }
                Some(Owner::Attacker(i)) => {
                    if let Some(a) = self.attackers.get_mut(i) {
                        a.closed(&mut cx, now, conn);
                    }
                }
                None => {}
            },
            Ev::ClientTimer { client, .. } => {
                if let Some(c) = self.clients.get_mut(client) {
                    c.step(&mut cx, now);
                }
            }
            Ev::Source { index } => self.source(now, index),
            Ev::StormRelease { conn } => {
                if let Some(Owner::Attacker(i)) = cx.net.owner.get(&conn).copied()
                    && let Some(a) = self.attackers.get_mut(i)
                {
                    a.release(&mut cx, now, conn);
                }
            }
            Ev::FirstByteTimeout { conn } => self.host.first_byte_timeout(cx.q, cx.net, now, conn),
            Ev::KeepaliveCheck { conn } => self.host.keepalive_check(cx.q, cx.net, now, conn),
            Ev::WriteTimeout { conn } => self.host.write_timeout(cx.q, cx.net, now, conn),
            Ev::Shutdown => self.host.shutdown(cx.q, now),
            Ev::Crash { .. } => self.crash(now),
            Ev::ComeBack { index } => self.come_back(now, index),
            Ev::AiDone {
                request_id,
                agent,
                took_us,
                cpu_us,
                ..
            } => {
                if let Some(ai) = &mut self.ai {
                    if self.ai_embedded {
                        ai.process_cpu = Some(process_cpu(&self.host));
                    }
                    ai.done(&mut cx, now, request_id, agent, took_us);
                    if self.ai_embedded {
                        self.host.cpu.charge(now, cpu_us);
                        self.ai_embedded_decisions += 1;
                    }
                }
            }
            Ev::AiFault { index, start } => {
                if let Some(ai) = &mut self.ai {
                    ai.fault_edge(&mut cx, now, index, start);
                }
            }
            Ev::AiConnect => {
                if let Some(ai) = &mut self.ai {
                    ai.connect(&mut cx, now);
                }
            }
            Ev::Reconnect { client } => {
                let every = self.reconnect_every_us.get(&client).copied();
                if let (Some(c), Some(every)) = (self.clients.get_mut(client), every) {
                    if self.healed {
                    } else if self.takeovers.contains_key(&client) {
                        c.take_over(&mut cx, now);
                    } else {
                        c.drop_and_resume(&mut cx, now, 500_000);
                    }
                    cx.q.push(now.plus_us(every), Ev::Reconnect { client });
                }
            }
            Ev::WalkAway { client } => {
                let Some(c) = self.clients.get_mut(client) else {
                    return;
                };
                match (c.conn, c.player_id.clone()) {
                    (Some(conn), Some(id)) if c.welcomed => {
                        self.check.games.expiry.walked(conn, &id);
                        c.leave(&mut cx, now);
                    }
                    // Between connections: it walks away once it is back.
                    _ if !c.gone => cx.q.push(now.plus_us(1_000_000), Ev::WalkAway { client }),
                    _ => {}
                }
            }
            Ev::Chat { client } => {
                let every = self.chat_every_us.get(&client).copied();
                if let (Some(c), Some(every)) = (self.clients.get_mut(client), every)
                    && !c.gone
                {
                    c.chat(&mut cx, now);
                    cx.q.push(now.plus_us(every), Ev::Chat { client });
                }
            }
            Ev::Tick => self.tick(now),
            Ev::Heal => self.heal(now),
            Ev::End => {}
        }
    }
}

/// Whether `player_id` holds a human seat (its session kept) in a running game of
/// `server`.
fn seated_in_running_game(server: &Server, player_id: Option<&str>) -> bool {
    let Some(player_id) = player_id else {
        return false;
    };
    server.durable_views().iter().any(|(record, _)| {
        record.status == LobbyStatus::Playing
            && record
                .seats
                .iter()
                .any(|s| s.player_id == player_id && s.session.is_some())
    })
}

/// The server's CPU as the embedded AI's workers find it (`actors/ai.rs`).
fn process_cpu(host: &Host) -> crate::actors::ai::ProcessCpu {
    let cost = &host.cost;
    crate::actors::ai::ProcessCpu {
        cpu: host.cpu.clone(),
        search_us: cost.scaled_us(cost.ai_embedded_us),
        heuristic_us: cost.scaled_us(cost.ai_embedded_heuristic_us),
    }
}

pub(crate) fn read_us(bytes: usize, rate_bytes_per_s: f64) -> u64 {
    ((bytes as f64 / rate_bytes_per_s.max(1.0)) * 1e6)
        .round()
        .max(1.0) as u64
}
