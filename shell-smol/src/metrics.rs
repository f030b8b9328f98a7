//! `GET /metrics`: the core's counters and gauges and the shell's own counters in the
//! Prometheus/OpenMetrics text format, through `prometheus-client`.
//!
//! The core keeps absolute counts; the core task publishes a copy after every batch
//! ([`crate::snapshot`]), and each scrape copies that into the registry (counters
//! advance by the difference, gauges are set), then encodes it. The registry sits
//! behind one mutex that only scrapes take.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;
use wizard_core::vocabulary::load::LoadLevel;
use wizard_core::vocabulary::stats::{Counters, Counts, Gauges, Tally};

/// The content type of [`Metrics::render`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

type Labels = [(&'static str, &'static str); 1];
/// The labels of `wizard_quick_play_groups`: table size and AI seats.
type GroupLabels = [(&'static str, &'static str); 2];
/// Label values of the table sizes and AI seats (`quick_play_groups`).
const DIGITS: [&str; 7] = ["0", "1", "2", "3", "4", "5", "6"];

/// What only the shell sees: HTTP traffic, handshakes, slow readers. Shared by the
/// connection tasks (atomics), read at scrape time.
#[derive(Debug, Default)]
pub struct ShellStats {
    /// Passes of the core loop whose records were committed to the store.
    pub store_commits: AtomicU64,
    /// TCP connections accepted.
    pub tcp_accepted: AtomicU64,
    /// TCP connections closed at once because even the reserve slots were taken.
    pub tcp_refused: AtomicU64,
    /// Requests answered 503 because the TCP cap was reached.
    pub http_unavailable: AtomicU64,
    /// `/games/<id>` requests refused by `GAMES_RATE`.
    pub http_rate_limited: AtomicU64,
    /// Connections that did not send a request head within `HANDSHAKE_TIMEOUT`.
    pub handshake_timeouts: AtomicU64,
    /// Upgrades refused by the upgrade policy (403, 400, 426).
    pub upgrades_refused: AtomicU64,
    /// Connections cut because they did not drain within `WRITE_TIMEOUT` or overflowed
    /// their outbound queue.
    pub slow_readers: AtomicU64,
    /// Direct writes of the core task that left bytes for the connection's writer (the
    /// socket's send buffer was full).
    pub write_handoffs: AtomicU64,
    /// Connections closed because nothing arrived for `KEEPALIVE_TIMEOUT`.
    pub keepalive_timeouts: AtomicU64,
    /// Sockets that sent nothing within `FIRST_BYTE_TIMEOUT`.
    pub first_byte_timeouts: AtomicU64,
    /// Sockets that had not sent their request head, cut to make room for a new one.
    pub tcp_evicted: AtomicU64,
    /// Request heads answered 400 or 431 (malformed, too large, too many headers).
    pub bad_requests: AtomicU64,
    /// Sockets refused at the door for `SOCKET_RATE` (also counted in `tcp_refused`).
    pub tcp_rate_limited: AtomicU64,
    /// Sockets admitted over `SOCKET_RATE` into the probe lane (`/health`, `/metrics`
    /// and `/ready` only).
    pub tcp_probe_lane: AtomicU64,
    /// Frames dropped by the per-frame budget (pings not answered, fragments of
    /// abandoned messages), added when their connection ends.
    pub frames_dropped: AtomicU64,
    /// Inputs handled by the core task, and wake-ups (their ratio is the batch size).
    pub core_inputs: AtomicU64,
    pub core_wakeups: AtomicU64,
    /// The core task's time per input and inputs per pass.
    pub core: CoreHistograms,
    /// The SQLite store's counts and file, once it is open.
    pub store: std::sync::OnceLock<crate::store::metrics::StoreSource>,
}

/// A histogram family's constructor.
type NewHistogram = fn() -> Histogram;

/// Time the core's `handle` took, per input kind (1 us to 0.5 s).
fn handle_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-6, 2.0, 20))
}

/// Latencies players and the AI see, from sub-millisecond to seconds: 50 us to 6.6 s
/// in 18 doubling buckets.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(50e-6, 2.0, 18))
}

/// The shell's histograms, observed on the core task's thread and (the frame answers)
/// by the connection tasks, read at scrape time.
#[derive(Clone, Debug)]
pub struct CoreHistograms {
    /// `wizard_core_handle_seconds{input}`: one `Server::handle` call.
    pub handle_seconds: Family<Labels, Histogram, NewHistogram>,
    /// `wizard_core_batch_inputs`: inputs from the inbox handled in one pass of the loop
    /// (1 to `BATCH_INPUTS_MAX` + 1; a pass woken by a deadline alone is not counted).
    pub batch_inputs: Histogram,
    /// `wizard_frame_answer_seconds`: from a player's frame read off its socket to the
    /// first byte written to that socket of the first frame the core sent it in the
    /// pass that handled the frame (see `conn.rs`).
    pub frame_answer_seconds: Histogram,
    /// `wizard_quick_play_seat_seconds`: from a quick-play ticket joining the pool to
    /// its player seated at a table.
    pub quick_play_seat_seconds: Histogram,
    /// `wizard_ai_round_trip_seconds`: from the pass that sent a decision request to
    /// the AI service to the pass that read its answer (a decision or an error).
    pub ai_round_trip_seconds: Histogram,
}

impl Default for CoreHistograms {
    fn default() -> CoreHistograms {
        CoreHistograms {
            handle_seconds: Family::new_with_constructor(handle_histogram),
            batch_inputs: Histogram::new(exponential_buckets(1.0, 2.0, 11)),
            frame_answer_seconds: latency_histogram(),
            ai_round_trip_seconds: latency_histogram(),
            // 10 ms to about 2.9 minutes: at once, a pass, QUICK_PLAY_WAIT and beyond.
            quick_play_seat_seconds: Histogram::new(exponential_buckets(0.01, 2.0, 15)),
        }
    }
}

impl CoreHistograms {
    /// Records one `handle` of an input of `kind` that took `took`.
    pub fn handled(&self, kind: &'static str, took: std::time::Duration) {
        self.handle_seconds
            .get_or_create(&[("input", kind)])
            .observe(took.as_secs_f64());
    }
}

impl ShellStats {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The commit this binary was built from (`build.rs`; `unknown` outside a checkout
/// unless `WIZARD_COMMIT` was set at build time).
pub const COMMIT: &str = env!("WIZARD_COMMIT");
/// This build's version.
pub const VERSION: &str = wizard_core::VERSION;

/// The registry and its metrics.
#[derive(Debug)]
pub struct Metrics {
    /// The root: the standard `process_*` metrics, and `wizard_*` in a sub-registry.
    registry: Registry,
    process: crate::process::ProcessMetrics,
    counters: Vec<(&'static str, Counter)>,
    families: Vec<(&'static str, Family<Labels, Counter>)>,
    gauges: Vec<(&'static str, Gauge)>,
    ratios: Vec<(&'static str, Gauge<f64, std::sync::atomic::AtomicU64>)>,
    store: crate::store::metrics::StoreMetrics,
    quick_play_groups: Family<GroupLabels, Counter>,
}

const COUNTERS: &[(&str, &str)] = &[
    (
        "connections_opened",
        "Websocket connections accepted by the core",
    ),
    (
        "resumed_past_cap",
        "Players of running games admitted past MAX_CONNECTIONS when they came back",
    ),
    ("messages", "Client messages handled"),
    (
        "messages_dropped",
        "Client messages dropped by the rate limiter",
    ),
    ("games_started", "Games started"),
    ("games_finished", "Games finished"),
    (
        "games_rated",
        "Finished games that updated profiles' ratings",
    ),
    (
        "games_recorded",
        "Finished games recorded for history (HISTORY_DAYS)",
    ),
    ("lobbies_created", "Lobbies created"),
    ("ai_requests", "Decision requests sent to the AI service"),
    ("breaker_opened", "Times the AI circuit breaker opened"),
    ("sessions_expired", "Sessions expired"),
    (
        "sessions_evicted",
        "Disconnected sessions outside running games forgotten at MAX_SESSIONS",
    ),
    ("tcp_accepted", "TCP connections accepted"),
    (
        "tcp_refused",
        "TCP connections closed at once: every slot, or the address's share, taken",
    ),
    (
        "http_unavailable",
        "HTTP requests answered 503: connection cap reached",
    ),
    (
        "http_rate_limited",
        "GET /games/<id> requests answered 429: the address's GAMES_RATE spent",
    ),
    (
        "handshake_timeouts",
        "Connections closed for not completing the handshake in time",
    ),
    ("upgrades_refused", "Websocket upgrades refused by policy"),
    (
        "slow_readers",
        "Connections cut for not draining their outbound queue",
    ),
    (
        "write_handoffs",
        "Direct writes of the core task that left bytes for the connection's writer: a full socket buffer",
    ),
    (
        "keepalive_timeouts",
        "Connections closed after the keepalive timeout",
    ),
    ("core_inputs", "Inputs handled by the core task"),
    ("core_wakeups", "Wake-ups of the core task"),
    (
        "first_byte_timeouts",
        "Connections closed for sending nothing within FIRST_BYTE_TIMEOUT",
    ),
    (
        "tcp_evicted",
        "Sockets without a request head cut to make room for a new socket",
    ),
    (
        "bad_requests",
        "Request heads answered 400 or 431: malformed or too large",
    ),
    (
        "games_dormant",
        "Running games put to sleep after ABANDONED_GAME_TTL with no human connected",
    ),
    ("games_woken", "Dormant games woken by a returning human"),
    (
        "tcp_rate_limited",
        "Sockets closed at once for exceeding SOCKET_RATE from their address",
    ),
    (
        "tcp_probe_lane",
        "Sockets over SOCKET_RATE admitted to the probe lane (health, ready, metrics only)",
    ),
    (
        "frames_dropped",
        "Frames dropped by the per-frame budget, counted when their connection ends",
    ),
    (
        "lobbies_idle_deleted",
        "Lobbies without a running game deleted after LOBBY_IDLE_TTL with no human",
    ),
    (
        "lobbies_evicted",
        "Idle lobbies deleted at MAX_LOBBIES to make room for a new one",
    ),
    (
        "store_commits",
        "Passes of the core loop whose records were committed to the store before their frames were sent",
    ),
    (
        "quick_play_queued",
        "Quick-play tickets taken into the pool",
    ),
    (
        "quick_play_cancelled",
        "Quick-play tickets taken out without a seat (cancelled, left, disconnected)",
    ),
    ("tables_listed", "list_tables requests answered"),
];

const FAMILIES: &[(&str, &str, &str)] = &[
    (
        "connections_refused",
        "Connections refused by the core",
        "reason",
    ),
    ("closes", "Close frames the core asked for", "code"),
    ("errors", "Error replies sent", "code"),
    ("moves", "Moves applied to games", "by"),
    (
        "fallbacks",
        "Moves made by the fallback instead of the AI",
        "reason",
    ),
    (
        "ai_decisions",
        "AI moves applied, by the agent of the AI service that decided them",
        "agent",
    ),
    (
        "level_changes",
        "Load level changes, by level entered",
        "level",
    ),
    (
        "requests_refused",
        "Lobby requests refused by a per-address or capacity rule",
        "reason",
    ),
    (
        "quick_play_refused",
        "quick_play refused with busy, and quick-play tables that could not be seated",
        "reason",
    ),
];

const GAUGES: &[(&str, &str)] = &[
    ("connections", "Open websocket connections"),
    ("player_connections", "Open player connections"),
    ("sessions", "Sessions"),
    ("lobbies", "Lobbies"),
    ("active_games", "Running games (dormant ones not counted)"),
    (
        "dormant_games",
        "Running games asleep until a human of theirs comes back",
    ),
    (
        "evictable_sessions",
        "Disconnected sessions a new player may evict at MAX_SESSIONS",
    ),
    (
        "idle_lobbies",
        "Lobbies with no running game and no human connected (MAX_LOBBIES may replace them)",
    ),
    ("accepting_games", "1 while new games are admitted"),
    ("load_level", "Load level: 0 normal, 1 busy, 2 overloaded"),
    ("ai_connections", "AI service connections"),
    ("ai_pending", "AI requests waiting for an answer"),
    (
        "ai_breaker_open",
        "1 while the AI circuit breaker is not closed",
    ),
    (
        "ip_table_entries",
        "Entries in the fullest per-IP table (lobby creation, reconnects, failed join codes)",
    ),
    ("shutting_down", "1 after SIGTERM"),
    (
        "quick_play_tickets",
        "Quick-play tickets waiting in the pool",
    ),
    ("tcp_open", "Open TCP connections"),
];

const RATIOS: &[(&str, &str)] = &[
    (
        "loop_lag_seconds_max",
        "Largest event-loop lag in the last sample",
    ),
    (
        "loop_lag_seconds_p99",
        "99th percentile event-loop lag in the last sample",
    ),
    (
        "cpu_share",
        "Process CPU as a share of the CPU quota (capped at one core)",
    ),
    (
        "throttled_share",
        "Share of CFS periods throttled in the last sample",
    ),
];

impl Metrics {
    /// The registry, with `core`'s histograms (observed elsewhere) in it.
    pub fn new(core: &CoreHistograms) -> Metrics {
        let mut root = Registry::default();
        let process = crate::process::ProcessMetrics::register(&mut root);
        let registry = root.sub_registry_with_prefix("wizard");
        registry.register(
            "core_handle_seconds",
            "time the core took to handle one input, by input kind",
            core.handle_seconds.clone(),
        );
        for kind in wizard_core::vocabulary::io::Input::KIND_NAMES {
            drop(core.handle_seconds.get_or_create(&[("input", kind)]));
        }
        registry.register(
            "core_batch_inputs",
            "inputs from the inbox the core task handled in one pass",
            core.batch_inputs.clone(),
        );
        registry.register(
            "frame_answer_seconds",
            "time from a player's frame arriving to the first byte of the core's answer written to its socket",
            core.frame_answer_seconds.clone(),
        );
        registry.register(
            "ai_round_trip_seconds",
            "time from a decision request sent to the AI service to its answer arriving",
            core.ai_round_trip_seconds.clone(),
        );
        registry.register(
            "quick_play_seat_seconds",
            "time from a quick-play ticket joining the pool to its player seated",
            core.quick_play_seat_seconds.clone(),
        );
        let quick_play_groups = Family::<GroupLabels, Counter>::default();
        registry.register(
            "quick_play_groups",
            "Tables quick play seated, by table size and AI seats",
            quick_play_groups.clone(),
        );
        // `wizard_build_info{version,commit} 1`.
        registry.register(
            "build",
            "the running build: its version and the commit it was built from",
            Info::new(vec![("version", VERSION), ("commit", COMMIT)]),
        );
        let store = crate::store::metrics::StoreMetrics::register(registry);
        let counters = COUNTERS
            .iter()
            .map(|(name, help)| {
                let c = Counter::default();
                registry.register(*name, *help, c.clone());
                (*name, c)
            })
            .collect();
        let families = FAMILIES
            .iter()
            .map(|(name, help, _)| {
                let f = Family::<Labels, Counter>::default();
                registry.register(*name, *help, f.clone());
                (*name, f)
            })
            .collect();
        let gauges = GAUGES
            .iter()
            .map(|(name, help)| {
                let g = Gauge::default();
                registry.register(*name, *help, g.clone());
                (*name, g)
            })
            .collect();
        let ratios = RATIOS
            .iter()
            .map(|(name, help)| {
                let g = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
                registry.register(*name, *help, g.clone());
                (*name, g)
            })
            .collect();
        Metrics {
            registry: root,
            process,
            counters,
            families,
            gauges,
            ratios,
            store,
            quick_play_groups,
        }
    }

    /// Copies the current figures in and encodes the registry.
    pub fn render(
        &mut self,
        c: &Counters,
        g: &Gauges,
        shell: &ShellStats,
        tcp_open: usize,
        store_unavailable: bool,
    ) -> String {
        let relaxed = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let absolute: [(&str, u64); 38] = [
            ("connections_opened", c.connections_opened),
            ("resumed_past_cap", c.resumed_past_cap),
            ("messages", c.messages),
            ("messages_dropped", c.messages_dropped),
            ("games_started", c.games_started),
            ("games_finished", c.games_finished),
            ("games_rated", c.games_rated),
            ("games_recorded", c.games_recorded),
            ("lobbies_created", c.lobbies_created),
            ("ai_requests", c.ai_requests),
            ("breaker_opened", c.breaker_opened),
            ("sessions_expired", c.sessions_expired),
            ("sessions_evicted", c.sessions_evicted),
            ("tcp_accepted", relaxed(&shell.tcp_accepted)),
            ("tcp_refused", relaxed(&shell.tcp_refused)),
            ("http_unavailable", relaxed(&shell.http_unavailable)),
            ("http_rate_limited", relaxed(&shell.http_rate_limited)),
            ("handshake_timeouts", relaxed(&shell.handshake_timeouts)),
            ("upgrades_refused", relaxed(&shell.upgrades_refused)),
            ("slow_readers", relaxed(&shell.slow_readers)),
            ("write_handoffs", relaxed(&shell.write_handoffs)),
            ("keepalive_timeouts", relaxed(&shell.keepalive_timeouts)),
            ("core_inputs", relaxed(&shell.core_inputs)),
            ("core_wakeups", relaxed(&shell.core_wakeups)),
            ("first_byte_timeouts", relaxed(&shell.first_byte_timeouts)),
            ("tcp_evicted", relaxed(&shell.tcp_evicted)),
            ("bad_requests", relaxed(&shell.bad_requests)),
            ("games_dormant", c.games_dormant),
            ("games_woken", c.games_woken),
            ("lobbies_idle_deleted", c.lobbies_idle_deleted),
            ("lobbies_evicted", c.lobbies_evicted),
            ("store_commits", relaxed(&shell.store_commits)),
            ("frames_dropped", relaxed(&shell.frames_dropped)),
            ("tcp_rate_limited", relaxed(&shell.tcp_rate_limited)),
            ("tcp_probe_lane", relaxed(&shell.tcp_probe_lane)),
            ("quick_play_queued", c.quick_play_queued),
            ("quick_play_cancelled", c.quick_play_cancelled),
            ("tables_listed", c.tables_listed),
        ];
        for (name, value) in absolute {
            if let Some((_, counter)) = self.counters.iter().find(|(n, _)| *n == name) {
                advance(counter, value);
            }
        }
        fn by_name<E: Tally>(counts: &Counts<E>) -> Vec<(&'static str, u64)> {
            counts.iter().map(|(e, n)| (e.name(), n)).collect()
        }
        let family_values: [(&str, Vec<(&'static str, u64)>); 9] = [
            ("connections_refused", by_name(&c.connections_refused)),
            ("closes", by_name(&c.closes)),
            ("errors", by_name(&c.errors)),
            ("moves", by_name(&c.moves)),
            ("fallbacks", by_name(&c.fallbacks)),
            ("ai_decisions", by_name(&c.ai_decisions)),
            ("level_changes", by_name(&c.level_changes)),
            ("requests_refused", by_name(&c.requests_refused)),
            ("quick_play_refused", by_name(&c.quick_play_refused)),
        ];
        for (name, values) in family_values {
            let label = FAMILIES
                .iter()
                .find(|(n, _, _)| *n == name)
                .map(|(_, _, l)| *l);
            let family = self.families.iter().find(|(n, _)| *n == name);
            if let (Some(label), Some((_, family))) = (label, family) {
                for (key, value) in values {
                    advance(&family.get_or_create(&[(label, key)]), value);
                }
            }
        }
        let level = match g.level {
            LoadLevel::Normal => 0,
            LoadLevel::Busy => 1,
            LoadLevel::Overloaded => 2,
        };
        for (size, row) in c.quick_play_groups.iter().enumerate() {
            let seats = DIGITS.get(size + 3).copied().unwrap_or("6");
            // A table of n seats has 0 to n - 1 AI seats.
            for (ai, value) in row.iter().enumerate().take(size + 3) {
                let ai = DIGITS.get(ai).copied().unwrap_or("6");
                let labels = [("seats", seats), ("ai", ai)];
                advance(&self.quick_play_groups.get_or_create(&labels), *value);
            }
        }
        let gauge_values: [(&str, u64); 17] = [
            ("connections", g.connections),
            ("player_connections", g.player_connections),
            ("sessions", g.sessions),
            ("lobbies", g.lobbies),
            ("active_games", g.active_games),
            ("dormant_games", g.dormant_games),
            ("evictable_sessions", g.evictable_sessions),
            ("idle_lobbies", g.idle_lobbies),
            ("accepting_games", u64::from(g.accepting_games)),
            ("load_level", level),
            ("ai_connections", g.ai_connections),
            ("ai_pending", g.ai_pending),
            ("ai_breaker_open", u64::from(g.breaker != "closed")),
            ("ip_table_entries", g.ip_table_entries),
            ("shutting_down", u64::from(g.shutting_down)),
            ("tcp_open", tcp_open as u64),
            ("quick_play_tickets", g.quick_play_tickets),
        ];
        for (name, value) in gauge_values {
            if let Some((_, gauge)) = self.gauges.iter().find(|(n, _)| *n == name) {
                gauge.set(i64::try_from(value).unwrap_or(i64::MAX));
            }
        }
        let s = &g.last_sample;
        let ratio_values: [(&str, f64); 4] = [
            ("loop_lag_seconds_max", s.lag_us_max as f64 / 1e6),
            ("loop_lag_seconds_p99", s.lag_us_p99 as f64 / 1e6),
            ("cpu_share", s.cpu_share),
            ("throttled_share", s.throttled_share),
        ];
        for (name, value) in ratio_values {
            if let Some((_, gauge)) = self.ratios.iter().find(|(n, _)| *n == name) {
                gauge.set(value);
            }
        }
        self.process.update();
        self.store
            .update(&mut self.registry, shell.store.get(), store_unavailable);
        let mut text = String::with_capacity(4096);
        if encode(&mut text, &self.registry).is_err() {
            // Writing to a String cannot fail; keep the exposition well-formed anyway.
            text.clear();
            let _ = writeln!(text, "# EOF");
        }
        text
    }
}

/// Moves a counter up to an absolute value (counters never go down).
fn advance(counter: &Counter, value: u64) {
    let current = counter.get();
    if value > current {
        counter.inc_by(value - current);
    }
}
