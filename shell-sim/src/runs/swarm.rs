//! Swarm testing: random scenarios drawn from a seed (which actors exist, how many,
//! which faults, CPU quota, latency), short runs, and the coverage of "sometimes"
//! facts across the batch: each level reached, each refusal, 1008 and 1013 sent, the
//! breaker's full cycle, AI degradation for both reasons.

use std::collections::BTreeMap;

use rand::RngExt;
use rand_chacha::ChaCha12Rng;

use crate::model::dist::{Dist, fork};
use crate::runs::scenario::{
    AiFault, AiFaultKind, AiSpec, Arrivals, Attack, AttackKind, Pace, Restart, Retry, Scenario,
    Tables,
};

/// The coverage facts a swarm batch must reach.
pub const COVERAGE_REQUIRED: &[&str] = &[
    "level_busy",
    "level_overloaded",
    "level_normal",
    "refused_busy",
    "refused_rate_limited",
    "conn_refused_per_ip",
    "conn_refused_total",
    "conn_refused_ai_connections",
    "socket_cap",
    "fallback_inflight_cap",
    "resumed_past_cap",
    "close_sent_1008",
    "close_sent_1013",
    "breaker_opened",
    "breaker_half_open",
    "breaker_closed",
    "degraded_queue",
    "degraded_slow",
    "outbox_overflow",
    // Attack rows 1 and 2: the core's frame reader and door, as the shell uses them.
    "frame_flood_closed",
    "socket_evicted",
    "socket_first_byte_timeout",
    // The view checkers' rules for hidden bids and turn timers at work.
    "views_hidden_bids",
    "views_spectators",
    // Each rule of the view checkers put to work: a list compared across seats, a
    // connection joining a running game, hands shown, tricks, rounds and games
    // recomputed by the oracle; and the outbound queue replacing a `state` without
    // events for a slow reader (the client's stream check then holds that no `state`
    // with events was lost).
    "event_list_shared",
    "view_joined_midgame",
    "views_hands",
    "oracle_trick_judged",
    "oracle_round_scored",
    "oracle_game_ranked",
    "outbox_state_replaced",
    // Chat lines checked across a lobby's seats and spectators (three or more), lines
    // giving way in a slow reader's queue, and lobbies with several spectators.
    "chat_checked",
    "chat_spread",
    "chat_gap",
    "spectators_many",
    "autoplayed",
    "progress_turn_timer",
    // The shell's own work on the quota, and its own endings of a connection and of
    // the process.
    "ai_embedded",
    // The process killed and restored from its store, and a player resuming in the
    // game it played, judged against what it saw before the kill.
    "restart",
    "restart_resumed",
    "close_sent_4000",
    "close_sent_1009",
    "keepalive_timeout",
    "write_timeout",
    "close_sent_1001",
    "close_sent_1012",
    "process_exited",
    // Players who walk away: their sessions expire after SESSION_TTL.
    "session_expired",
    // Quick play (`checks/quick.rs`): tables of players and tables filled with AI
    // seats after QUICK_PLAY_WAIT, tickets cancelled, players walking away while
    // queued, `quick_play` refused `busy`.
    "quick_seated_full",
    "quick_seated_with_ai",
    "quick_cancelled",
    "quick_walked_away",
    "quick_refused_busy",
];

/// A random scenario for `seed`. The draws of the main stream come in a fixed order
/// (each part below draws after the one before it); the later parts draw from streams
/// of their own, so that adding one changes none of the draws before it.
pub fn scenario(seed: u64) -> Scenario {
    let mut r = fork(seed, 0x5A5A);
    let mut s = base(&mut r, seed);
    let pace = pace(&mut r, &mut s);
    s.tables.push(first_tables(&mut r, pace));
    if let Some(t) = s.tables.first_mut()
        && t.humans + t.ai_seats < 3
    {
        t.ai_seats = 3 - t.humans;
    }
    arrivals(&mut r, &mut s);
    attacks(&mut r, &mut s);
    ai_service(&mut r, &mut s);
    stall(&mut r, &mut s);
    tight_caps(&mut r, &mut s);
    ai_caps(&mut r, &mut s);
    door_and_frames(seed, &mut s);
    table_options(seed, &mut s);
    shell_events(seed, &mut s);
    walk_aways(seed, &mut s);
    spectators(seed, &mut s);
    chat(seed, &mut s);
    restarts(seed, &mut s);
    crate::runs::quick::swarm_draw(seed, &mut s);
    s
}

/// The run's length, the server's settings every swarm run shares, the machine's
/// speed, and sometimes small outboxes, AI seats moving without delay and a quick
/// breaker.
fn base(r: &mut ChaCha12Rng, seed: u64) -> Scenario {
    let mut s = Scenario {
        name: format!("swarm-{seed}"),
        duration_s: r.random_range(5.0..12.0),
        liveness_s: 16.0,
        cpu_quota_cores: None,
        latency_ms: None,
        ..Scenario::default()
    };
    s.env.insert("MAX_CONNECTIONS_PER_IP".into(), "40".into());
    // The attacks here are aimed at the connection caps and the message bucket:
    // RECONNECT_RATE would refuse their reconnects (uncounted) before any cap is hit.
    s.env.insert("RECONNECT_RATE".into(), "100000".into());
    s.env.insert("RECONNECT_BURST".into(), "100000".into());
    s.cost.speed_factor = [0.5, 1.0, 1.0, 2.0, 4.0][r.random_range(0..5)];
    if r.random_bool(0.3) {
        // Small outboxes, so that slow readers overflow theirs within a short run.
        s.env.insert("OUTBOUND_QUEUE_MESSAGES".into(), "16".into());
        s.window_bytes = 8 * 1024;
    }
    if r.random_bool(0.5) {
        s.env.insert("AI_MOVE_DELAY".into(), "0".into());
        s.env.insert("TRICK_PAUSE".into(), "0".into());
    }
    if r.random_bool(0.5) {
        s.env.insert("AI_BREAKER_COOLDOWN".into(), "3".into());
        s.env.insert("AI_DECISION_TIMEOUT".into(), "1".into());
    }
    s
}

/// The scripted players' pace; at full speed, a message bucket they never empty.
fn pace(r: &mut ChaCha12Rng, s: &mut Scenario) -> Pace {
    let pace = if r.random_bool(0.4) {
        Pace::Full
    } else {
        Pace::Human
    };
    if pace == Pace::Full {
        s.env.insert("MESSAGE_RATE".into(), "1000".into());
        s.env.insert("MESSAGE_BURST".into(), "1000".into());
    }
    pace
}

/// The first group of tables: how many, their seats, retry policy, addresses, slow
/// readers and reconnectors.
fn first_tables(r: &mut ChaCha12Rng, pace: Pace) -> Tables {
    Tables {
        count: r.random_range(1..10),
        humans: r.random_range(1..5),
        ai_seats: r.random_range(0..3),
        pace,
        think_ms: None,
        spread_s: 1.0,
        replay: r.random_bool(0.5),
        retry: if r.random_bool(0.5) {
            Retry::Backoff
        } else {
            Retry::Naive
        },
        ips: r.random_range(0..3),
        slow_readers: r.random_range(0..2),
        slow_read_bytes_per_s: 300.0,
        reconnectors: r.random_range(0..2),
        reconnect_every_s: 4.0,
        ..Tables::default()
    }
}

/// Sometimes open-loop arrivals at full speed for the whole fault phase.
fn arrivals(r: &mut ChaCha12Rng, s: &mut Scenario) {
    if r.random_bool(0.4) {
        s.arrivals.push(Arrivals {
            rate_per_s: r.random_range(1.0..8.0),
            from_s: 0.5,
            to_s: s.duration_s,
            ai_seats: 3,
            pace: Pace::Full,
            retry: if r.random_bool(0.5) {
                Retry::Backoff
            } else {
                Retry::Naive
            },
            attempts_max: 5,
            patience_s: 20.0,
            ips: 0,
        });
    }
}

/// Each of the flood, lobby spam, storm and junk attacks, each drawn on its own.
fn attacks(r: &mut ChaCha12Rng, s: &mut Scenario) {
    let end = s.duration_s;
    for kind in [
        AttackKind::Flood,
        AttackKind::LobbySpam,
        AttackKind::Storm,
        AttackKind::Junk,
    ] {
        if r.random_bool(0.35) {
            s.attacks.push(Attack {
                kind,
                count: r.random_range(1..6),
                rate_per_s: r.random_range(5.0..100.0),
                from_s: r.random_range(0.0..end / 2.0),
                to_s: end,
                ips: r.random_range(1..4),
                hold_ms: 2000.0,
            });
        }
    }
}

/// Most of the time an AI service (then every table has an AI seat), its workers and
/// queue, sometimes a slow primary agent and one fault of a drawn kind.
fn ai_service(r: &mut ChaCha12Rng, s: &mut Scenario) {
    let end = s.duration_s;
    if r.random_bool(0.7) {
        let mut ai = AiSpec {
            workers: r.random_range(1..3),
            queue_max: r.random_range(2..64),
            degrade_queue_min: r.random_range(0..6),
            ..AiSpec::default()
        };
        if r.random_bool(0.3) {
            ai.primary_ms = Some(Dist::Lognormal([r.random_range(100.0..900.0), 0.3]));
        }
        let kinds = [
            AiFaultKind::BlackHole,
            AiFaultKind::Crash,
            AiFaultKind::Garbage,
            AiFaultKind::Illegal,
            AiFaultKind::Slow,
            AiFaultKind::Overloaded,
            AiFaultKind::Internal,
            AiFaultKind::Flapping,
        ];
        if r.random_bool(0.7) {
            let kind = kinds[r.random_range(0..kinds.len())];
            let from = r.random_range(0.0..end / 2.0);
            ai.faults.push(AiFault {
                kind,
                from_s: from,
                to_s: r.random_range(from + 1.0..end.max(from + 2.0)),
                factor: if kind == AiFaultKind::Slow { 10.0 } else { 1.5 },
            });
        }
        s.ai = Some(ai);
        for t in &mut s.tables {
            t.ai_seats = t.ai_seats.max(1);
        }
    }
}

/// Sometimes one stall of the server's loop.
fn stall(r: &mut ChaCha12Rng, s: &mut Scenario) {
    if r.random_bool(0.2) {
        s.stalls.push(crate::runs::scenario::Stall {
            at_s: r.random_range(1.0..s.duration_s),
            ms: r.random_range(100.0..1500.0),
        });
    }
}

/// Tight caps, drawn after the parts above so that their draws stay as they were: a
/// storm against a small `MAX_CONNECTIONS` (refused in the core, then at the shell's
/// socket cap) and a small `MAX_SESSIONS`. Without arrivals: they would fill the table
/// with honest players, whom the liveness prober could not pass.
fn tight_caps(r: &mut ChaCha12Rng, s: &mut Scenario) {
    let end = s.duration_s;
    if r.random_bool(0.25) {
        s.arrivals.clear();
        let players: u32 = s.tables.iter().map(|t| u32::from(t.humans) * t.count).sum();
        let room = players + r.random_range(8..24u32);
        s.env.insert("MAX_CONNECTIONS".into(), room.to_string());
        s.env
            .insert("MAX_CONNECTIONS_PER_IP".into(), room.to_string());
        s.env.insert(
            "MAX_SESSIONS".into(),
            (room + r.random_range(0..8)).to_string(),
        );
        s.attacks.push(Attack {
            kind: AttackKind::Storm,
            count: 1,
            rate_per_s: r.random_range(30.0..120.0),
            from_s: r.random_range(0.0..end / 2.0),
            to_s: end,
            ips: r.random_range(1..40),
            hold_ms: 2000.0,
        });
    }
}

/// The AI service's tight caps, drawn after the other caps: too many AI connections,
/// and a one-request in-flight cap.
fn ai_caps(r: &mut ChaCha12Rng, s: &mut Scenario) {
    if let Some(ai) = &mut s.ai
        && r.random_bool(0.15)
    {
        ai.connections = r.random_range(17..20);
    }
    if s.ai.is_some() && r.random_bool(0.2) {
        s.env.insert("AI_MAX_INFLIGHT".into(), "1".into());
    }
}

/// Restarts, from a stream of their own so that every draw above stays as it was: in
/// one scenario of six the process is killed once or twice during the fault phase,
/// down for 0.2 to 2 s, and restored from its durable store (`STORE` set; not where a
/// SIGTERM with the memory store was drawn, whose 1001 endings it would change).
fn restarts(seed: u64, s: &mut Scenario) {
    let mut r = fork(seed, 0x4E57);
    if !r.random_bool(1.0 / 6.0) || (s.shutdown_at_s > 0.0 && !s.durable()) {
        return;
    }
    s.env.insert("STORE".into(), "sqlite:wizard-sim.db".into());
    let end = s.duration_s.max(2.0);
    let mut at_s = r.random_range(1.0..end - 0.5);
    for _ in 0..r.random_range(1..3) {
        let down_s = r.random_range(0.2..2.0);
        s.restarts.push(Restart { at_s, down_s });
        at_s += down_s + r.random_range(1.0..5.0);
        if at_s >= end {
            break;
        }
    }
}

/// Crowds and chat, from a stream of their own so that every draw above stays as it
/// was: half of the watched table groups get 2 to 4 spectators a table, and half of
/// them chat, a line every 1 to 4 s each (`CHAT_RATE` allows a burst of 20, then one
/// every 3 s: beyond, a line is refused `rate_limited`), which
/// every seat and spectator of the lobby receives; in a slow reader's queue the lines
/// give way (`chat_gap`), past a small `OUTBOUND_QUEUE_CHAT_MESSAGES` behind a small
/// socket window half the time.
fn chat(seed: u64, s: &mut Scenario) {
    let mut r = fork(seed, 0xC4A7);
    let mut slow_chat = false;
    for t in &mut s.tables {
        if t.spectators == 0 {
            continue;
        }
        if r.random_bool(0.5) {
            t.spectators_each = r.random_range(2..5);
        }
        if r.random_bool(0.5) {
            t.chat_every_s = r.random_range(1.0..4.0);
            slow_chat |= t.slow_readers > 0;
        }
    }
    if slow_chat && r.random_bool(0.5) {
        let lines = r.random_range(2..5u32);
        s.env
            .insert("OUTBOUND_QUEUE_CHAT_MESSAGES".into(), lines.to_string());
        // A reader slow enough, behind a window small enough, for its queue to hold
        // frames within a short run.
        s.window_bytes = s.window_bytes.min(4 * 1024);
        for t in &mut s.tables {
            t.slow_read_bytes_per_s = t.slow_read_bytes_per_s.min(100.0);
        }
    }
}

/// Players who walk away (close and never return), from a stream of their own so that
/// every draw above stays as it was: the second player of some tables of the first
/// group with two humans or more, with a `SESSION_TTL` of a few seconds, so that their
/// sessions expire within the run and the expiry checker (`expiry.rs`) judges them.
/// The TTL stays above the 0.5 to 1.5 s an honest player takes to come back after a
/// dropped connection.
fn walk_aways(seed: u64, s: &mut Scenario) {
    let mut r = fork(seed, 0x3A1C);
    if !r.random_bool(0.25) {
        return;
    }
    let ttl_s = r.random_range(3..8u32);
    let at_s = r.random_range(0.5..s.duration_s.max(1.0));
    let Some(t) = s
        .tables
        .iter_mut()
        .find(|t| t.humans >= 2 && t.count > t.slow_readers + t.reconnectors + t.takeovers)
    else {
        return;
    };
    let free = t.count - (t.slow_readers + t.reconnectors + t.takeovers);
    t.walk_aways = r.random_range(1..=free);
    t.walk_away_s = at_s;
    s.env.insert("SESSION_TTL".into(), ttl_s.to_string());
}

/// What the shell around the core does, from a stream of its own so that every draw
/// above stays as it was: the AI service inside the server's process (its CPU on the
/// server's quota) or apart; takeovers (a second connection with the token); oversized
/// frames; mute connections that the shell drops at `KEEPALIVE_TIMEOUT`; a short
/// `WRITE_TIMEOUT` for slow readers; and SIGTERM after the liveness verdicts (with a
/// short `SHUTDOWN_GRACE`, half the time with a durable store). Embedded only on a machine as fast as the development
/// one or faster: on one four times slower, at a tenth of a core, the idle floor and
/// AI seats moving without delay take the whole quota for as long as their games last
/// (seed 10: overloaded to the end), an overload the liveness promise does not cover.
fn shell_events(seed: u64, s: &mut Scenario) {
    let mut r = fork(seed, 0x5E11);
    let embedded = r.random_bool(0.5) && s.cost.speed_factor <= 1.0;
    s.env.insert(
        "EMBEDDED_AI".into(),
        if embedded { "1" } else { "0" }.into(),
    );
    let end = s.duration_s;
    // Not under the tight caps above: a second connection per takeover, on top of a
    // `MAX_CONNECTIONS` sized for the players, left the liveness prober no room (seed
    // 7163), an overload the liveness promise does not cover.
    if r.random_bool(0.3)
        && !s.env.contains_key("MAX_CONNECTIONS")
        && let Some(t) = s.tables.first_mut()
    {
        t.takeovers = t.count;
    }
    if r.random_bool(0.2) {
        s.attacks.push(Attack {
            kind: AttackKind::Oversized,
            count: r.random_range(1..4),
            rate_per_s: r.random_range(2.0..20.0),
            from_s: r.random_range(0.0..end / 2.0),
            to_s: end,
            ips: r.random_range(1..3),
            hold_ms: 0.0,
        });
    }
    if r.random_bool(0.2) {
        s.env.insert("KEEPALIVE_INTERVAL".into(), "1".into());
        s.env.insert(
            "KEEPALIVE_TIMEOUT".into(),
            r.random_range(2..5u32).to_string(),
        );
        s.attacks.push(Attack {
            kind: AttackKind::Mute,
            count: r.random_range(1..4),
            rate_per_s: r.random_range(1.0..5.0),
            from_s: r.random_range(0.0..end / 2.0),
            to_s: end,
            ips: r.random_range(1..3),
            hold_ms: 0.0,
        });
    }
    if s.tables.iter().any(|t| t.slow_readers > 0) && r.random_bool(0.4) {
        // Slow enough to block a write for a second behind a small window.
        s.env.insert("WRITE_TIMEOUT".into(), "1".into());
        s.window_bytes = 4096;
        for t in &mut s.tables {
            t.slow_read_bytes_per_s = 50.0;
        }
    }
    if r.random_bool(0.15) {
        // After the verdicts at 15 s of liveness: 1.5 s of it left, then the grace.
        s.liveness_s += 4.0;
        s.shutdown_at_s = end + 16.5;
        s.env.insert("SHUTDOWN_GRACE".into(), "2".into());
        if r.random_bool(0.5) {
            s.env.insert("STORE".into(), "sqlite:wizard-sim.db".into());
        }
    }
}

/// Spectators, from a stream of their own so that every draw above stays as
/// it was: half of the table groups have some of their tables watched. Not under the
/// tight caps: sized for the players, `MAX_CONNECTIONS` and `MAX_SESSIONS` left no room
/// for the spectators and the liveness prober (seeds 46, 135, 195), an overload the
/// promises do not cover.
fn spectators(seed: u64, s: &mut Scenario) {
    let mut r = fork(seed, 0x5EC7);
    if s.env.contains_key("MAX_CONNECTIONS") || s.env.contains_key("MAX_SESSIONS") {
        return;
    }
    for t in &mut s.tables {
        if r.random_bool(0.5) {
            t.spectators = r.random_range(1..=t.count.max(1));
        }
    }
}

/// Lobby options, from a stream of their own so that every draw above stays as it was:
/// hidden bids (the views' rules on bids) and a turn timer (the fallback playing for a
/// slow or absent human, which the progress checker then holds to its bound), half of
/// the time with players slow enough to run out of it.
fn table_options(seed: u64, s: &mut Scenario) {
    let mut r = fork(seed, 0x0B75);
    for t in &mut s.tables {
        t.hidden_bids = r.random_bool(0.3);
        if r.random_bool(0.3) {
            t.turn_seconds = r.random_range(10..15);
            if r.random_bool(0.5) {
                t.think_ms = Some(Dist::Lognormal([6000.0, 0.6]));
            }
        }
    }
}

/// Attack rows 1 and 2, drawn from a stream of their own so that every draw above
/// stays as it was: fragment flooders (cut by the frame budget with 1008, or at
/// `MESSAGE_FRAGMENTS_MAX` with 1009 when a full-pace run raised `MESSAGE_RATE`), and
/// silent sockets from one address (churning its share), a few or many (filling the
/// door under tight caps), slow enough at times to reach `FIRST_BYTE_TIMEOUT`.
fn door_and_frames(seed: u64, s: &mut Scenario) {
    let mut r = fork(seed, 0x14D0);
    let end = s.duration_s;
    if r.random_bool(0.3) {
        s.attacks.push(Attack {
            kind: AttackKind::Fragments,
            count: r.random_range(1..6),
            rate_per_s: r.random_range(50.0..300.0),
            from_s: r.random_range(0.0..end / 2.0),
            to_s: end,
            ips: r.random_range(1..4),
            hold_ms: 0.0,
        });
    }
    if r.random_bool(0.3) {
        let ips = [1, r.random_range(2..10), r.random_range(50..400)][r.random_range(0..3)];
        s.attacks.push(Attack {
            kind: AttackKind::Silent,
            count: r.random_range(1..4),
            rate_per_s: r.random_range(2.0..300.0),
            from_s: r.random_range(0.0..end / 2.0),
            to_s: end,
            ips,
            hold_ms: 0.0,
        });
    }
}

/// A failed seed.
#[derive(Clone, Debug)]
pub struct Failure {
    pub seed: u64,
    pub violations: Vec<String>,
}

/// The result of a batch. It does not depend on how many threads ran it (only
/// `wall_ms` and `elapsed_ms` do): seeds are merged in order.
#[derive(Clone, Debug, Default)]
pub struct SwarmResult {
    pub runs: u64,
    pub failures: Vec<Failure>,
    pub coverage: BTreeMap<String, u64>,
    /// The first seed that reached each fact: a run to replay to see it at work.
    pub first_seed: BTreeMap<String, u64>,
    /// The runs' own wall time, summed.
    pub wall_ms: f64,
    /// The batch's wall time (less than `wall_ms` when threads share the seeds).
    pub elapsed_ms: f64,
    pub jobs: usize,
    pub simulated_s: f64,
    /// The runs' trace hashes folded in seed order: the same code and seeds give the
    /// same hash, so a change meant only to make the simulator faster keeps it.
    pub trace_hash: u64,
}

/// What one seed gave: the parts of its report a batch keeps (a whole report per seed
/// would hold every latency of 10 000 runs).
#[derive(Debug)]
struct Outcome {
    seed: u64,
    simulated_s: f64,
    report: Result<Summary, String>,
}

#[derive(Debug)]
struct Summary {
    wall_ms: f64,
    trace_hash: u64,
    coverage: Vec<String>,
    /// Empty when the run passed.
    violations: Vec<String>,
}

impl Summary {
    fn of(r: crate::Report) -> Summary {
        let violations = if r.passed() {
            Vec::new()
        } else if r.violations.is_empty() {
            vec!["failed without a violation listed".to_string()]
        } else {
            r.violations
        };
        Summary {
            wall_ms: r.wall_ms,
            trace_hash: r.trace_hash,
            coverage: r.coverage.into_keys().collect(),
            violations,
        }
    }
}

impl SwarmResult {
    /// Required coverage facts that no run reached.
    pub fn missing(&self) -> Vec<&'static str> {
        COVERAGE_REQUIRED
            .iter()
            .copied()
            .filter(|k| !self.coverage.contains_key(*k))
            .collect()
    }

    pub fn render(&self) -> String {
        let mut s = format!(
            "swarm: {} runs, {} failed, {:.0} s simulated in {:.0} ms ({} threads, {:.0} ms of runs), trace hash {:016x}\n",
            self.runs,
            self.failures.len(),
            self.simulated_s,
            self.elapsed_ms,
            self.jobs,
            self.wall_ms,
            self.trace_hash
        );
        s.push_str("coverage (runs reaching each fact, the first seed that did):\n");
        for (k, v) in &self.coverage {
            let first = self.first_seed.get(k).copied().unwrap_or(0);
            s.push_str(&format!("  {k}: {v} (seed {first})\n"));
        }
        s.push_str(&format!(
            "missing required coverage: {:?}\n",
            self.missing()
        ));
        for f in &self.failures {
            s.push_str(&format!(
                "seed {} failed: {:?}\n  reproduce: {}\n",
                f.seed,
                f.violations,
                crate::repro(&format!("swarm:{}", f.seed), f.seed)
            ));
        }
        s
    }

    /// Adds one seed's outcome (seeds must come in order, for the trace hash).
    fn add(&mut self, o: Outcome) {
        self.simulated_s += o.simulated_s;
        let report = match o.report {
            Ok(r) => r,
            Err(e) => {
                self.failures.push(Failure {
                    seed: o.seed,
                    violations: vec![e],
                });
                return;
            }
        };
        self.runs += 1;
        self.wall_ms += report.wall_ms;
        self.trace_hash =
            crate::runs::report::fnv(self.trace_hash ^ o.seed, &report.trace_hash.to_le_bytes());
        for k in report.coverage {
            self.first_seed.entry(k.clone()).or_insert(o.seed);
            *self.coverage.entry(k).or_insert(0) += 1;
        }
        if !report.violations.is_empty() {
            self.failures.push(Failure {
                seed: o.seed,
                violations: report.violations,
            });
        }
    }
}

/// Runs one seed's scenario; a panic (a broken assertion in the core or the
/// simulator) is a failure of that seed, not the end of the batch.
fn run_seed(seed: u64) -> Outcome {
    let sc = scenario(seed);
    let simulated_s = sc.duration_s + sc.liveness_s;
    let run = std::panic::catch_unwind(|| {
        crate::run(sc, seed)
            .map(Summary::of)
            .map_err(|e| e.to_string())
    });
    let report = match run {
        Ok(outcome) => outcome,
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            Err(format!("panicked: {what}"))
        }
    };
    Outcome {
        seed,
        simulated_s,
        report,
    }
}

/// Runs `count` swarm seeds from `from`.
pub fn run(from: u64, count: u64) -> SwarmResult {
    run_parallel(from, count, 1)
}

/// Runs `count` swarm seeds from `from` on `jobs` threads, each taking the next seed
/// not yet taken. Every run is a single-threaded pure function of its seed, so the
/// result is the one [`run`] gives; only the wall time shrinks.
pub fn run_parallel(from: u64, count: u64, jobs: usize) -> SwarmResult {
    use std::sync::atomic::{AtomicU64, Ordering};
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    let end = from.saturating_add(count);
    let next = AtomicU64::new(from);
    let take = || {
        let mut done = Vec::new();
        loop {
            let seed = next.fetch_add(1, Ordering::Relaxed);
            if seed >= end {
                return done;
            }
            done.push(run_seed(seed));
        }
    };
    let jobs = jobs.max(1);
    let mut outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let threads: Vec<_> = (1..jobs).map(|_| s.spawn(take)).collect();
        let mut all = take();
        for t in threads {
            // `run_seed` catches the runs' panics: any other is the batch's own bug.
            match t.join() {
                Ok(mut done) => all.append(&mut done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    outcomes.sort_by_key(|o| o.seed);
    let mut result = SwarmResult {
        jobs,
        ..SwarmResult::default()
    };
    for o in outcomes {
        result.add(o);
    }
    result.elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    result
}
