//! Scenario files (`fixtures/scenarios/*.json`): the world around the server, its CPU,
//! its settings and its faults. Every field has a default; an option left out (`null`)
//! that matters is drawn from the run's seed by [`Scenario::resolve`] (swarm testing).
//! docs/SIMULATION.md documents the format.

use std::collections::BTreeMap;
use std::path::Path;

use rand::RngExt;
use serde::{Deserialize, Serialize};

use crate::model::cost::CostModel;
use crate::model::dist::{Dist, fork};

/// How fast a client moves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pace {
    /// As soon as its turn comes (a script, a bot).
    Full,
    /// After a think time.
    #[default]
    Human,
}

/// What a client does when new work (`create_lobby`, `start_game`, a connection) is
/// refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Retry {
    /// The shipped client: waits for `accepting_games`, then jittered exponential
    /// backoff from 1 s up to 30 s; 15/30/60 s after a 1013.
    #[default]
    Backoff,
    /// Retries after 20-50 ms, whatever the answer said.
    Naive,
    /// Gives up.
    None,
}

/// A group of tables: `count` lobbies of `humans` clients (the first is the host) and
/// `ai_seats` AI seats, playing one game or, with `replay`, game after game.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Tables {
    pub count: u32,
    pub humans: u8,
    pub ai_seats: u8,
    pub pace: Pace,
    /// Think time of human-paced clients (drawn when null).
    pub think_ms: Option<Dist>,
    /// Tables start spread over this many seconds.
    pub spread_s: f64,
    pub start_s: f64,
    pub replay: bool,
    pub retry: Retry,
    /// Distinct client addresses; 0 gives every client its own.
    pub ips: u32,
    /// Tables with one client reading at `slow_read_bytes_per_s`.
    pub slow_readers: u32,
    pub slow_read_bytes_per_s: f64,
    /// Tables whose second player drops and resumes with its token this often.
    pub reconnectors: u32,
    pub reconnect_every_s: f64,
    /// Tables whose second player opens a second connection with its token this often
    /// (`reconnect_every_s`) without closing the first: a takeover, which closes the
    /// older connection with `session_replaced` and 4000.
    pub takeovers: u32,
    /// Tables whose second player walks away `walk_away_s` after the table's start: it
    /// closes its connection and never comes back, so its session expires after
    /// `SESSION_TTL` (its seat turns AI in a game, goes in a waiting room).
    pub walk_aways: u32,
    pub walk_away_s: f64,
    /// The lobby options the host sets before starting: hidden bids, and a turn timer
    /// (0: none; else 10 to 300 s).
    pub hidden_bids: bool,
    pub turn_seconds: u16,
    /// Tables watched by spectators (PROTOCOL.md 6.4): clients that send `spectate`
    /// with the table's code and never play, so that the view checkers judge
    /// spectators' frames too; `spectators_each` of them per table (0 counts as 1).
    pub spectators: u32,
    pub spectators_each: u32,
    /// Each spectator says a line of table chat this often (0: never), which every
    /// seat and spectator of the lobby receives (`chat` checkers).
    pub chat_every_s: f64,
}

/// Open-loop arrivals of new games: each arrival is a new client that connects, says
/// hello, creates a lobby, adds `ai_seats` AIs and starts, whatever the server's pace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Arrivals {
    pub rate_per_s: f64,
    pub from_s: f64,
    pub to_s: f64,
    pub ai_seats: u8,
    pub pace: Pace,
    pub retry: Retry,
    /// Give up on a refused game after this many attempts.
    pub attempts_max: u32,
    /// Or when its game has not started this many seconds after it arrived, refused
    /// again or still waiting for `accepting_games` (0: no limit).
    pub patience_s: f64,
    pub ips: u32,
}

/// Quick-play players (PROTOCOL.md 7.2): `count` clients arriving evenly over
/// `spread_s` from `from_s` (a storm when the spread is short), each asking
/// `quick_play` for a table of `seats_min` to `seats_max` seats and playing the game it
/// is seated at, then leaving. While queued, a `cancel` share of them sends
/// `cancel_quick_play` (and queues again `requeue_s` later, at most) and a `walk_away`
/// share closes its connection for good, each after waiting up to `leave_after_s`.
/// Refused (`busy`), they retry with their policy, up to `attempts_max` times.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QuickPlay {
    pub count: u32,
    pub from_s: f64,
    pub spread_s: f64,
    pub seats_min: u8,
    pub seats_max: u8,
    pub pace: Pace,
    /// Think time of human-paced players (null: 500 ms).
    pub think_ms: Option<Dist>,
    pub retry: Retry,
    /// Give up after this many refusals (0: never).
    pub attempts_max: u32,
    /// Shares of the players that cancel, and that walk away, while queued.
    pub cancel: f64,
    pub walk_away: f64,
    pub leave_after_s: f64,
    pub requeue_s: f64,
    /// Distinct addresses; 0 gives every player its own.
    pub ips: u32,
}

/// Abusers: flooders (messages as fast as `rate_per_s`), lobby spammers
/// (`create_lobby` at `rate_per_s`), connection storms (`rate_per_s` new connections,
/// each held `hold_ms`), fragment flooders (`count` connections, each sending one
/// empty continuation frame at `rate_per_s`), silent sockets (`count` new sockets at
/// `rate_per_s` that never send a request head) and slow heads (the same, with the
/// start of a head).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Attack {
    pub kind: AttackKind,
    pub count: u32,
    pub rate_per_s: f64,
    pub from_s: f64,
    pub to_s: f64,
    pub ips: u32,
    pub hold_ms: f64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttackKind {
    #[default]
    Flood,
    LobbySpam,
    Storm,
    /// Every kind of wrong message: not JSON, unknown types, bad fields, lobby
    /// operations out of place, moves out of turn, binary frames.
    Junk,
    /// Attack row 1: after `hello`, a text frame without FIN, then empty
    /// continuation frames forever (read by the core's `ws::FrameReader`).
    Fragments,
    /// Attack row 2: TCP sockets that never send a request head (the core's
    /// `overload::door::Door` and `FIRST_BYTE_TIMEOUT`).
    Silent,
    /// Like `Silent`, but each socket sends the start of a head at once and never the
    /// rest (a slowloris): the door cuts them first (`Door::slow`), else they hold their
    /// slot until `HANDSHAKE_TIMEOUT`.
    SlowHead,
    /// After `hello`, one text frame larger than `MAX_MESSAGE_BYTES` (the core's
    /// `ws::FrameReader` fails it: 1009); cut off, they come back.
    Oversized,
    /// After `hello`, nothing at all, not even a pong: the shell closes them at
    /// `KEEPALIVE_TIMEOUT`; cut off, they come back.
    Mute,
    /// After `hello`, `spectate` with a new guessed lobby code each time: the core
    /// counts each unknown code against `JOIN_FAIL_RATE`, like a failed `join_lobby`.
    SpectateGuess,
}

/// The AI service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AiSpec {
    pub connections: u32,
    pub workers: usize,
    pub queue_max: usize,
    pub degrade_queue_min: usize,
    /// The primary agent's decision time (drawn when null).
    pub primary_ms: Option<Dist>,
    pub heuristic_ms: Dist,
    pub faults: Vec<AiFault>,
}

impl Default for AiSpec {
    fn default() -> Self {
        AiSpec {
            connections: 1,
            workers: 1,
            queue_max: 64,
            degrade_queue_min: 8,
            primary_ms: None,
            heuristic_ms: Dist::Uniform([0.2, 1.0]),
            faults: Vec::new(),
        }
    }
}

/// A fault of the AI service between `from_s` and `to_s`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AiFault {
    pub kind: AiFaultKind,
    pub from_s: f64,
    pub to_s: f64,
    /// `slow`: how many times slower; `flapping`: seconds up and down.
    pub factor: f64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AiFaultKind {
    /// Reads requests and never answers.
    #[default]
    BlackHole,
    /// Drops its connections at `from_s` and stays away until `to_s`.
    Crash,
    /// Answers with frames that are not valid messages.
    Garbage,
    /// Answers with actions the rules refuse.
    Illegal,
    /// Decides `factor` times slower.
    Slow,
    /// Answers every request `overloaded` at once.
    Overloaded,
    /// Answers `internal`.
    Internal,
    /// Disconnects and reconnects every `factor` seconds.
    Flapping,
}

impl AiFaultKind {
    /// Whether the fault can happen to a service linked in process (`EMBEDDED_AI=1`):
    /// it can hang, refuse, fail, run slow or answer illegal moves, but it cannot
    /// crash or flap apart from the server, nor send bytes that are not a message.
    pub fn in_process(self) -> bool {
        !matches!(
            self,
            AiFaultKind::Crash | AiFaultKind::Flapping | AiFaultKind::Garbage
        )
    }
}

/// A blocked event loop (a long synchronous call) at `at_s` for `ms`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Stall {
    pub at_s: f64,
    pub ms: f64,
}

/// Other work on the server thread: `share` of the quota, plus `amplitude` in a square
/// wave of `period_s`, between `from_s` and `to_s`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Background {
    pub from_s: f64,
    pub to_s: f64,
    pub share: f64,
    pub amplitude: f64,
    pub period_s: f64,
}

/// The server process killed (`kill -9`) at `at_s` and started again `down_s` later on
/// its durable store: what was committed before the kill is restored, everything in
/// flight is lost, and clients come back with their tokens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Restart {
    pub at_s: f64,
    pub down_s: f64,
}

impl Default for Restart {
    fn default() -> Self {
        Restart {
            at_s: 0.0,
            down_s: 0.5,
        }
    }
}

/// A whole scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    /// The fault phase, in seconds.
    pub duration_s: f64,
    /// The healed liveness phase after it (0: none).
    pub liveness_s: f64,
    /// Server settings by their environment variable names (PROTOCOL.md section 5).
    pub env: BTreeMap<String, String>,
    /// The CPU quota in cores (null: drawn; use 1 for no quota).
    pub cpu_quota_cores: Option<f64>,
    pub cfs_period_ms: f64,
    pub cost: CostModel,
    /// One-way network latency per connection (drawn when null).
    pub latency_ms: Option<Dist>,
    /// The peer's receive window: bytes in flight before the writer must wait.
    pub window_bytes: usize,
    pub tables: Vec<Tables>,
    pub arrivals: Vec<Arrivals>,
    /// Quick-play players (absent from files that have none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub quick_play: Vec<QuickPlay>,
    pub attacks: Vec<Attack>,
    pub ai: Option<AiSpec>,
    pub stalls: Vec<Stall>,
    pub background: Vec<Background>,
    /// SIGTERM at this second (0: none): the shell hands the core `Input::Shutdown`;
    /// with `STORE` set to a durable store in `env` the core closes every player with
    /// 1012 at once, else running games go on for `SHUTDOWN_GRACE` and then 1001. Once
    /// the core is finished the process is gone: new sockets are refused.
    pub shutdown_at_s: f64,
    /// Kills and restarts of the server process (a durable `STORE` in `env` is needed).
    pub restarts: Vec<Restart>,
    /// Every game running at a restart must finish by the end of the run (for
    /// scenarios whose games are short enough).
    pub restart_games_finish: bool,
    /// Seconds allowed in the liveness phase to admit a new lobby.
    pub heal_within_s: f64,
    /// Seconds allowed in the liveness phase to reach `normal`.
    pub normal_within_s: f64,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            name: String::new(),
            description: String::new(),
            duration_s: 30.0,
            liveness_s: 20.0,
            env: BTreeMap::new(),
            cpu_quota_cores: Some(1.0),
            cfs_period_ms: 100.0,
            cost: CostModel::default(),
            latency_ms: Some(Dist::Uniform([0.5, 5.0])),
            window_bytes: 64 * 1024,
            tables: Vec::new(),
            arrivals: Vec::new(),
            quick_play: Vec::new(),
            attacks: Vec::new(),
            ai: None,
            stalls: Vec::new(),
            background: Vec::new(),
            shutdown_at_s: 0.0,
            restarts: Vec::new(),
            restart_games_finish: false,
            heal_within_s: 15.0,
            normal_within_s: 15.0,
        }
    }
}

/// A scenario file that could not be read.
#[derive(Debug)]
pub struct ScenarioError(pub String);

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScenarioError {}

impl Scenario {
    /// Reads a scenario file (JSON).
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScenarioError(format!("{}: {e}", path.display())))?;
        Scenario::parse(&text).map_err(|e| ScenarioError(format!("{}: {}", path.display(), e.0)))
    }

    pub fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        serde_json::from_str(text).map_err(|e| ScenarioError(e.to_string()))
    }

    /// Fills every option left open with a value drawn from `seed`.
    pub fn resolve(mut self, seed: u64) -> Scenario {
        let mut rng = fork(seed, 0x5CE7);
        if self.cpu_quota_cores.is_none() {
            let choices = [0.1, 0.15, 0.25, 0.5, 1.0];
            self.cpu_quota_cores = choices.get(rng.random_range(0..choices.len())).copied();
        }
        if self.latency_ms.is_none() {
            let base = 0.2 + 20.0 * rng.random::<f64>();
            self.latency_ms = Some(Dist::Uniform([base / 2.0, base]));
        }
        for t in &mut self.tables {
            if t.think_ms.is_none() {
                let median = 300.0 + 2000.0 * rng.random::<f64>();
                t.think_ms = Some(Dist::Lognormal([median, 0.5]));
            }
        }
        if let Some(ai) = &mut self.ai
            && ai.primary_ms.is_none()
        {
            let median = 5.0 + 200.0 * rng.random::<f64>();
            ai.primary_ms = Some(Dist::Lognormal([median, 0.4]));
        }
        self
    }

    /// Whether the server has a durable store (`STORE` set to anything but `memory`; the
    /// simulator's default is memory, the server's SQLite).
    pub fn durable(&self) -> bool {
        self.env.get("STORE").is_some_and(|s| s != "memory")
    }

    /// The server configuration: defaults overridden by `env`.
    pub fn config(&self) -> Result<wizard_core::vocabulary::config::Config, ScenarioError> {
        if !self.restarts.is_empty() && !self.durable() {
            return Err(ScenarioError(
                "restarts need a durable store (`STORE` other than `memory` in `env`)".into(),
            ));
        }
        wizard_core::vocabulary::config::Config::from_pairs(
            self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        )
        .map_err(|e| ScenarioError(format!("env: {e}")))
    }
}
