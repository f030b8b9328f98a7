//! What a run reports: the per-second timeline, request and move latencies, refusals,
//! violations, coverage facts and the trace hash (FNV-1a over every handled input and
//! every output), rendered as text or JSON.

use std::collections::BTreeMap;

use serde::Serialize;
use wizard_core::Time;
use wizard_core::vocabulary::wire::ErrorCode;

/// One second of the timeline.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Second {
    pub t_s: u64,
    pub level: &'static str,
    pub lag_max_ms: f64,
    pub lag_p99_ms: f64,
    pub cpu: f64,
    pub throttled: f64,
    pub active_games: u64,
    pub moves: u64,
    pub busy: u64,
    pub rate_limited: u64,
    pub conn_refused: u64,
    pub closed_1008: u64,
    pub closed_1013: u64,
    pub lobbies_created: u64,
    pub connections: u64,
    pub ai_fallbacks: u64,
    pub breaker: &'static str,
}

/// Latencies of one kind of request, split by answer.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Latencies {
    pub accepted_us: Vec<u64>,
    pub refused_us: Vec<u64>,
}

/// Everything a run found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub scenario: String,
    pub seed: u64,
    pub duration_s: f64,
    pub timeline: Vec<Second>,
    pub requests: BTreeMap<&'static str, Latencies>,
    pub move_latency_us: Vec<u64>,
    pub moves_refused_busy: u64,
    pub violations: Vec<String>,
    pub violations_total: u64,
    /// (time in s, from, to)
    pub level_changes: Vec<(f64, &'static str, &'static str)>,
    pub prober_success_s: Option<f64>,
    pub lobby_accepted_s: Vec<f64>,
    pub heal_s: f64,
    pub coverage: BTreeMap<String, u64>,
    pub trace_hash: u64,
    pub events: u64,
    pub inputs: u64,
    pub wall_ms: f64,
    pub counters: BTreeMap<String, u64>,
    pub games_stalled: u64,
    /// Requests the AI service answered with an action it knew to be illegal (the
    /// checkers' ground truth for the breaker).
    #[serde(skip)]
    pub ai_illegal: std::collections::BTreeSet<u64>,
    /// The latest an AI request was resolved after its deadline.
    pub ai_deadline_overshoot_us_max: u64,
}

pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// One step of the trace hash over `bytes`: FNV-1a's prime on eight-byte words, in
/// four independent lanes so the multiplications overlap (the trace is hashed over
/// every output, so this was once the simulator's hottest loop).
pub fn fnv(h: u64, bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut lanes = [h, h ^ 0x9e37_79b9_7f4a_7c15, h.rotate_left(17), !h];
    let word = |c: &[u8]| {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        u64::from_le_bytes(w)
    };
    let mut blocks = bytes.chunks_exact(32);
    for b in &mut blocks {
        for (lane, c) in lanes.iter_mut().zip(b.chunks_exact(8)) {
            *lane = (*lane ^ word(c)).wrapping_mul(PRIME);
            *lane ^= *lane >> 29;
        }
    }
    let mut h = lanes
        .iter()
        .fold(0u64, |acc, l| (acc ^ l).wrapping_mul(PRIME).rotate_left(23));
    let mut words = blocks.remainder().chunks_exact(8);
    for c in &mut words {
        h = (h ^ word(c)).wrapping_mul(PRIME);
        h ^= h >> 29;
    }
    for b in words.remainder() {
        h = (h ^ u64::from(*b)).wrapping_mul(PRIME);
    }
    h ^ bytes.len() as u64
}

impl Report {
    pub fn violation(&mut self, now: Time, what: String) {
        self.violations_total += 1;
        if self.violations.len() < 50 {
            self.violations
                .push(format!("t={:.3}s {what}", now.0 as f64 / 1e6));
        }
    }

    pub fn request(
        &mut self,
        kind: &'static str,
        accepted: bool,
        latency_us: u64,
        _code: ErrorCode,
    ) {
        let l = self.requests.entry(kind).or_default();
        if accepted {
            l.accepted_us.push(latency_us);
        } else {
            l.refused_us.push(latency_us);
        }
    }

    pub fn move_refused(&mut self, code: ErrorCode) {
        if code == ErrorCode::Busy {
            self.moves_refused_busy += 1;
            self.violations_total += 1;
            if self.violations.len() < 50 {
                self.violations
                    .push("a move in a running game was refused busy".into());
            }
        }
    }

    pub fn move_latency(&mut self, us: u64) {
        self.move_latency_us.push(us);
    }

    pub fn prober_success(&mut self, now: Time) {
        if self.prober_success_s.is_none() {
            self.prober_success_s = Some(now.0 as f64 / 1e6);
        }
    }

    pub fn hash(&mut self, bytes: &[u8]) {
        self.trace_hash = fnv(self.trace_hash, bytes);
    }

    pub fn cover(&mut self, what: &str) {
        *self.coverage.entry(what.to_string()).or_insert(0) += 1;
    }

    /// The first time the level became `level`, in seconds.
    pub fn first_level(&self, level: &str) -> Option<f64> {
        self.level_changes
            .iter()
            .find(|(_, _, to)| *to == level)
            .map(|(t, _, _)| *t)
    }

    /// The last time the level became `normal`.
    pub fn last_normal(&self) -> Option<f64> {
        self.level_changes
            .iter()
            .rev()
            .find(|(_, _, to)| *to == "normal")
            .map(|(t, _, _)| *t)
    }

    pub fn passed(&self) -> bool {
        self.violations_total == 0
    }

    /// The timeline and summary as text.
    pub fn render(&self) -> String {
        let mut s = String::new();
        s.push_str(&format!(
            "scenario {} seed {} ({:.0} s simulated in {:.0} ms, {:.0}x real time)\n",
            self.scenario,
            self.seed,
            self.duration_s,
            self.wall_ms,
            self.duration_s * 1000.0 / self.wall_ms.max(0.001)
        ));
        s.push_str("   t level       lag_max  lag_p99   cpu  thr  games moves  busy ratel crefu 1008 1013 lobbies conns fallb breaker\n");
        for r in &self.timeline {
            s.push_str(&format!(
                "{:4} {:<10} {:7.1} {:8.1} {:5.2} {:4.2} {:6} {:5} {:5} {:5} {:5} {:4} {:4} {:7} {:5} {:5} {}\n",
                r.t_s, r.level, r.lag_max_ms, r.lag_p99_ms, r.cpu, r.throttled, r.active_games,
                r.moves, r.busy, r.rate_limited, r.conn_refused, r.closed_1008, r.closed_1013,
                r.lobbies_created, r.connections, r.ai_fallbacks, r.breaker
            ));
        }
        s.push_str("level changes:");
        for (t, from, to) in &self.level_changes {
            s.push_str(&format!(" {t:.2}s {from}->{to};"));
        }
        s.push('\n');
        for (kind, l) in &self.requests {
            s.push_str(&format!(
                "{kind}: accepted {} (p95 {:.1} ms), refused {} (p95 {:.1} ms)\n",
                l.accepted_us.len(),
                percentile(&l.accepted_us, 95.0) as f64 / 1e3,
                l.refused_us.len(),
                percentile(&l.refused_us, 95.0) as f64 / 1e3
            ));
        }
        s.push_str(&format!(
            "move latency: n {} p50 {:.1} ms p99 {:.1} ms\n",
            self.move_latency_us.len(),
            percentile(&self.move_latency_us, 50.0) as f64 / 1e3,
            percentile(&self.move_latency_us, 99.0) as f64 / 1e3
        ));
        s.push_str(&format!("counters: {:?}\n", self.counters));
        s.push_str(&format!("coverage: {:?}\n", self.coverage));
        if let Some(t) = self.prober_success_s {
            s.push_str(&format!(
                "liveness: healed at {:.1}s, new lobby accepted at {t:.2}s\n",
                self.heal_s
            ));
        }
        s.push_str(&format!("trace hash {:016x}\n", self.trace_hash));
        if self.passed() {
            s.push_str("PASS\n");
        } else {
            s.push_str(&format!("FAIL: {} violations\n", self.violations_total));
            for v in &self.violations {
                s.push_str(&format!("  {v}\n"));
            }
        }
        s
    }
}

/// Nearest-rank percentile (0 for no samples).
pub fn percentile(values: &[u64], p: f64) -> u64 {
    if values.is_empty() {
        return 0;
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v.get(rank.clamp(1, v.len()) - 1).copied().unwrap_or(0)
}
