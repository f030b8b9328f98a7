//! Server and AI service settings (PROTOCOL.md section 5), parsed from (name, value) pairs.
//!
//! The shells read the environment and hand every pair to [`Config::from_pairs`] or
//! [`AiServiceConfig::from_pairs`]; this module never reads it itself. Unknown names are
//! ignored, an empty value means "use the default", surrounding whitespace is ignored,
//! and anything else that does not parse or is out of range is a [`ConfigError`] naming
//! the variable. Durations are given in seconds (fractions allowed) and stored as `_us`.
//! [`SETTINGS`] lists every variable with its default, for docs and deployment checks.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

use crate::overload::LoadLevel;
use crate::time::US_PER_SEC;

/// Which program reads a setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Component {
    Server,
    AiService,
}

/// One environment variable: its name, its default as it would be written, who reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    pub name: &'static str,
    /// The default, written as a value of the variable ("" = empty).
    pub default: &'static str,
    pub component: Component,
    pub meaning: &'static str,
}

const fn server(name: &'static str, default: &'static str, meaning: &'static str) -> Setting {
    Setting {
        name,
        default,
        component: Component::Server,
        meaning,
    }
}

const fn ai(name: &'static str, default: &'static str, meaning: &'static str) -> Setting {
    Setting {
        name,
        default,
        component: Component::AiService,
        meaning,
    }
}

/// Every variable [`Config`] and [`AiServiceConfig`] read, with its default.
///
/// `AI_SHARED_SECRET` appears once per component because both programs need it.
#[rustfmt::skip]
pub const SETTINGS: &[Setting] = &[
    server("BIND", "0.0.0.0:8000", "address and port the server listens on"),
    server("ALLOWED_ORIGINS", "", "comma-separated origins allowed to open /ws (empty = all)"),
    server("TRUSTED_PROXIES", "", "comma-separated IPs or CIDRs whose X-Forwarded-For is believed"),
    server("AI_SHARED_SECRET", "", "secret the AI service must present (empty = no auth, dev only)"),
    server("EMBEDDED_AI", "1", "1/true: run AI workers inside the server; 0/false: external AI service"),
    server("SESSION_TTL", "1800", "seconds a disconnected session is kept for reconnecting"),
    server("MAX_LOBBIES", "1000", "lobbies that may exist at once"),
    server("MAX_CONNECTIONS", "500", "open player connections in total"),
    server("MAX_CONNECTIONS_PER_IP", "10", "open player connections per client IP"),
    server("MESSAGE_RATE", "10", "messages per second a connection may send on average"),
    server("MESSAGE_BURST", "30", "messages a connection may send in a burst (at least 1)"),
    server("MAX_RATE_VIOLATIONS", "50", "dropped messages after which a connection is closed with 1008"),
    server("LOBBY_CREATE_RATE", "10", "lobbies one client IP may create per minute"),
    server("MAX_ACTIVE_GAMES", "50", "running games; beyond this new games are refused"),
    server("AI_MOVE_DELAY", "0.8", "seconds an AI player waits before its move is shown"),
    server("TRICK_PAUSE", "1.8", "seconds a completed trick stays on the table"),
    server("AI_DECISION_TIMEOUT", "5", "seconds the server waits for an AI decision"),
    server("AI_MAX_INFLIGHT", "64", "AI requests waiting at once before moves are played without asking"),
    server("AI_BREAKER_FAILURES", "5", "real AI failures in a row that open the circuit breaker"),
    server("AI_BREAKER_COOLDOWN", "30", "seconds the AI is not asked after the breaker opens"),
    server("LOAD_SAMPLE_INTERVAL", "1", "seconds between load samples"),
    server("LOAD_LAG_BUSY", "0.1", "loop lag in seconds that makes a sample busy"),
    server("LOAD_LAG_OVERLOAD", "0.25", "loop lag in seconds that makes a sample overloaded"),
    server("LOAD_LAG_SEVERE", "1", "loop lag in seconds that makes one sample enough to overload"),
    server("LOAD_CPU_BUSY", "0.7", "share of the CPU quota (0..1) that makes a sample busy"),
    server("LOAD_CPU_OVERLOAD", "0.9", "share of the CPU quota (0..1) that makes a sample overloaded"),
    server("LOAD_THROTTLE_OVERLOAD", "0.5", "share of throttled periods (0..1) that makes a sample overloaded"),
    server("LOAD_OVERLOAD_SAMPLES", "3", "overloaded samples in a row that enter the overloaded level"),
    server("LOAD_RECOVER_SAMPLES", "10", "calmer samples in a row that leave busy or overloaded"),
    server("LOAD_FORCE_LEVEL", "", "pin the load level to normal, busy or overloaded (empty = measure)"),
    server("KEEPALIVE_INTERVAL", "20", "seconds between pings on an idle connection"),
    server("KEEPALIVE_TIMEOUT", "60", "seconds without any frame after which a connection is closed"),
    server("SHUTDOWN_GRACE", "10", "seconds running games may go on after SIGTERM before closing with 1001"),
    server("LOG_LEVEL", "info", "log filter, e.g. info or debug"),
    server("LOG_FORMAT", "text", "log line format: text or json"),
    server("HANDSHAKE_TIMEOUT", "10", "seconds a new connection has to finish the HTTP/WebSocket handshake"),
    server("WRITE_TIMEOUT", "10", "seconds a send may stay blocked before the reader is disconnected"),
    server("MAX_MESSAGE_BYTES", "65536", "largest incoming message in bytes; larger closes with 1009"),
    server("OUTBOUND_QUEUE_MESSAGES", "256", "messages queued for one connection before it is disconnected"),
    server("OUTBOUND_QUEUE_BYTES", "1048576", "bytes queued for one connection before it is disconnected"),
    server("IP_TABLE_MAX", "10000", "entries in each per-IP table (connections, lobby creation)"),
    server("MAX_SESSIONS", "5000", "sessions kept in the session registry"),
    ai("AI_SERVER_URL", "ws://127.0.0.1:8000/internal/ai", "server endpoint the AI service connects to"),
    ai("AI_SHARED_SECRET", "", "secret presented to the server (must match the server's)"),
    ai("AI_WORKERS", "1", "decisions computed at the same time"),
    ai("AI_MAX_QUEUE", "64", "requests in progress before refusing with overloaded"),
    ai("AI_DEGRADE_QUEUE", "8", "other waiting requests from which the heuristic decides instead"),
    ai("AI_AGENT", "search", "primary agent: search, heuristic or random"),
    ai("LOG_LEVEL", "info", "log filter, e.g. info or debug"),
    ai("LOG_FORMAT", "text", "log line format: text or json"),
];

/// A value that does not parse or is out of range, naming its variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub variable: &'static str,
    pub value: String,
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {:?} {}", self.variable, self.value, self.reason)
    }
}

impl std::error::Error for ConfigError {}

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// The AI service's primary agent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AiAgent {
    #[default]
    Search,
    Heuristic,
    Random,
}

/// Everything the server reads from its environment.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub bind: SocketAddr,
    /// Origins allowed to open `/ws`, without trailing slash; empty = all.
    pub allowed_origins: Vec<String>,
    pub trusted_proxies: Vec<IpCidr>,
    /// Empty = AI connections are not authenticated (dev only).
    pub ai_shared_secret: String,
    pub embedded_ai: bool,
    pub session_ttl_us: u64,
    pub lobbies_max: usize,
    pub conns_max: usize,
    pub conns_per_ip_max: usize,
    pub message_rate_per_sec: f64,
    pub message_burst: u32,
    pub rate_violations_max: u32,
    pub lobby_create_rate_per_min: f64,
    pub active_games_max: usize,
    pub ai_move_delay_us: u64,
    pub trick_pause_us: u64,
    pub ai_decision_timeout_us: u64,
    pub ai_inflight_max: usize,
    pub ai_breaker_failures_max: u32,
    pub ai_breaker_cooldown_us: u64,
    pub load_sample_interval_us: u64,
    pub load_lag_busy_us: u64,
    pub load_lag_overload_us: u64,
    pub load_lag_severe_us: u64,
    /// Shares of the CPU quota, 0..=1.
    pub load_cpu_busy_share: f64,
    pub load_cpu_overload_share: f64,
    /// Share of CFS periods throttled, 0..=1.
    pub load_throttle_overload_share: f64,
    pub load_overload_samples: u32,
    pub load_recover_samples: u32,
    pub load_force_level: Option<LoadLevel>,
    pub keepalive_interval_us: u64,
    pub keepalive_timeout_us: u64,
    pub shutdown_grace_us: u64,
    pub log_level: String,
    pub log_format: LogFormat,
    pub handshake_timeout_us: u64,
    pub write_timeout_us: u64,
    pub message_bytes_max: usize,
    pub outbound_queue_messages_max: usize,
    pub outbound_queue_bytes_max: usize,
    pub ip_table_entries_max: usize,
    pub sessions_max: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            bind: SocketAddr::from(([0, 0, 0, 0], 8000)),
            allowed_origins: Vec::new(),
            trusted_proxies: Vec::new(),
            ai_shared_secret: String::new(),
            embedded_ai: true,
            session_ttl_us: 1800 * US_PER_SEC,
            lobbies_max: 1000,
            conns_max: 500,
            conns_per_ip_max: 10,
            message_rate_per_sec: 10.0,
            message_burst: 30,
            rate_violations_max: 50,
            lobby_create_rate_per_min: 10.0,
            active_games_max: 50,
            ai_move_delay_us: 800_000,
            trick_pause_us: 1_800_000,
            ai_decision_timeout_us: 5 * US_PER_SEC,
            ai_inflight_max: 64,
            ai_breaker_failures_max: 5,
            ai_breaker_cooldown_us: 30 * US_PER_SEC,
            load_sample_interval_us: US_PER_SEC,
            load_lag_busy_us: 100_000,
            load_lag_overload_us: 250_000,
            load_lag_severe_us: US_PER_SEC,
            load_cpu_busy_share: 0.7,
            load_cpu_overload_share: 0.9,
            load_throttle_overload_share: 0.5,
            load_overload_samples: 3,
            load_recover_samples: 10,
            load_force_level: None,
            keepalive_interval_us: 20 * US_PER_SEC,
            keepalive_timeout_us: 60 * US_PER_SEC,
            shutdown_grace_us: 10 * US_PER_SEC,
            log_level: "info".to_owned(),
            log_format: LogFormat::Text,
            handshake_timeout_us: 10 * US_PER_SEC,
            write_timeout_us: 10 * US_PER_SEC,
            message_bytes_max: 65_536,
            outbound_queue_messages_max: 256,
            outbound_queue_bytes_max: 1_048_576,
            ip_table_entries_max: 10_000,
            sessions_max: 5_000,
        }
    }
}

impl Config {
    /// Reads the server's variables from `pairs` (typically the whole environment).
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Config, ConfigError> {
        let mut c = Config::default();
        for (name, text) in pairs {
            let Some(v) = Raw::find(Component::Server, name, text) else {
                continue;
            };
            match v.name {
                "BIND" => c.bind = v.parsed("is not an address like 0.0.0.0:8000")?,
                "ALLOWED_ORIGINS" => c.allowed_origins = v.origins()?,
                "TRUSTED_PROXIES" => c.trusted_proxies = v.cidrs()?,
                "AI_SHARED_SECRET" => c.ai_shared_secret = v.text.to_owned(),
                "EMBEDDED_AI" => c.embedded_ai = v.flag()?,
                "SESSION_TTL" => c.session_ttl_us = v.duration_us(1)?,
                "MAX_LOBBIES" => c.lobbies_max = v.count(1)?,
                "MAX_CONNECTIONS" => c.conns_max = v.count(1)?,
                "MAX_CONNECTIONS_PER_IP" => c.conns_per_ip_max = v.count(1)?,
                "MESSAGE_RATE" => c.message_rate_per_sec = v.rate()?,
                "MESSAGE_BURST" => c.message_burst = v.count(1)?,
                "MAX_RATE_VIOLATIONS" => c.rate_violations_max = v.count(1)?,
                "LOBBY_CREATE_RATE" => c.lobby_create_rate_per_min = v.rate()?,
                "MAX_ACTIVE_GAMES" => c.active_games_max = v.count(1)?,
                "AI_MOVE_DELAY" => c.ai_move_delay_us = v.duration_us(0)?,
                "TRICK_PAUSE" => c.trick_pause_us = v.duration_us(0)?,
                "AI_DECISION_TIMEOUT" => c.ai_decision_timeout_us = v.duration_us(1)?,
                "AI_MAX_INFLIGHT" => c.ai_inflight_max = v.count(1)?,
                "AI_BREAKER_FAILURES" => c.ai_breaker_failures_max = v.count(1)?,
                "AI_BREAKER_COOLDOWN" => c.ai_breaker_cooldown_us = v.duration_us(1)?,
                "LOAD_SAMPLE_INTERVAL" => c.load_sample_interval_us = v.duration_us(1)?,
                "LOAD_LAG_BUSY" => c.load_lag_busy_us = v.duration_us(1)?,
                "LOAD_LAG_OVERLOAD" => c.load_lag_overload_us = v.duration_us(1)?,
                "LOAD_LAG_SEVERE" => c.load_lag_severe_us = v.duration_us(1)?,
                "LOAD_CPU_BUSY" => c.load_cpu_busy_share = v.share()?,
                "LOAD_CPU_OVERLOAD" => c.load_cpu_overload_share = v.share()?,
                "LOAD_THROTTLE_OVERLOAD" => c.load_throttle_overload_share = v.share()?,
                "LOAD_OVERLOAD_SAMPLES" => c.load_overload_samples = v.count(1)?,
                "LOAD_RECOVER_SAMPLES" => c.load_recover_samples = v.count(1)?,
                "LOAD_FORCE_LEVEL" => {
                    c.load_force_level = Some(v.parsed("is not normal, busy or overloaded")?)
                }
                "KEEPALIVE_INTERVAL" => c.keepalive_interval_us = v.duration_us(1)?,
                "KEEPALIVE_TIMEOUT" => c.keepalive_timeout_us = v.duration_us(1)?,
                "SHUTDOWN_GRACE" => c.shutdown_grace_us = v.duration_us(0)?,
                "LOG_LEVEL" => c.log_level = v.text.to_owned(),
                "LOG_FORMAT" => c.log_format = v.parsed("is not text or json")?,
                "HANDSHAKE_TIMEOUT" => c.handshake_timeout_us = v.duration_us(1)?,
                "WRITE_TIMEOUT" => c.write_timeout_us = v.duration_us(1)?,
                "MAX_MESSAGE_BYTES" => c.message_bytes_max = v.count(1)?,
                "OUTBOUND_QUEUE_MESSAGES" => c.outbound_queue_messages_max = v.count(1)?,
                "OUTBOUND_QUEUE_BYTES" => c.outbound_queue_bytes_max = v.count(1)?,
                "IP_TABLE_MAX" => c.ip_table_entries_max = v.count(1)?,
                "MAX_SESSIONS" => c.sessions_max = v.count(1)?,
                _ => {} // every SETTINGS name has an arm; the tests check that
            }
        }
        c.check_order()?;
        Ok(c)
    }

    /// Checks between variables: thresholds must rise from busy to severe.
    fn check_order(&self) -> Result<(), ConfigError> {
        if self.load_lag_busy_us > self.load_lag_overload_us {
            return Err(order_error(
                "LOAD_LAG_BUSY",
                format_secs(self.load_lag_busy_us),
                "LOAD_LAG_OVERLOAD",
                format_secs(self.load_lag_overload_us),
            ));
        }
        if self.load_lag_overload_us > self.load_lag_severe_us {
            return Err(order_error(
                "LOAD_LAG_OVERLOAD",
                format_secs(self.load_lag_overload_us),
                "LOAD_LAG_SEVERE",
                format_secs(self.load_lag_severe_us),
            ));
        }
        if self.load_cpu_busy_share > self.load_cpu_overload_share {
            let (busy, overload) = (self.load_cpu_busy_share, self.load_cpu_overload_share);
            return Err(order_error(
                "LOAD_CPU_BUSY",
                busy.to_string(),
                "LOAD_CPU_OVERLOAD",
                overload.to_string(),
            ));
        }
        if self.keepalive_interval_us >= self.keepalive_timeout_us {
            return Err(ConfigError {
                variable: "KEEPALIVE_INTERVAL",
                value: format_secs(self.keepalive_interval_us),
                reason: format!(
                    "must be less than KEEPALIVE_TIMEOUT ({})",
                    format_secs(self.keepalive_timeout_us)
                ),
            });
        }
        Ok(())
    }
}

fn order_error(
    variable: &'static str,
    value: String,
    other: &str,
    other_value: String,
) -> ConfigError {
    ConfigError {
        variable,
        value,
        reason: format!("must not exceed {other} ({other_value})"),
    }
}

/// Seconds as text for error messages, without trailing zeros.
fn format_secs(us: u64) -> String {
    let text = format!("{}.{:06}", us / US_PER_SEC, us % US_PER_SEC);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Everything the AI service reads from its environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AiServiceConfig {
    /// `ws://` or `wss://` URL of the server's `/internal/ai` endpoint.
    pub server_url: String,
    pub shared_secret: String,
    pub workers: usize,
    /// Requests in progress (waiting and computing) before refusing with `overloaded`.
    pub queue_max: usize,
    /// From this many other waiting requests, the heuristic decides.
    pub degrade_queue_min: usize,
    pub agent: AiAgent,
    pub log_level: String,
    pub log_format: LogFormat,
}

impl Default for AiServiceConfig {
    fn default() -> AiServiceConfig {
        AiServiceConfig {
            server_url: "ws://127.0.0.1:8000/internal/ai".to_owned(),
            shared_secret: String::new(),
            workers: 1,
            queue_max: 64,
            degrade_queue_min: 8,
            agent: AiAgent::Search,
            log_level: "info".to_owned(),
            log_format: LogFormat::Text,
        }
    }
}

impl AiServiceConfig {
    /// Reads the AI service's variables from `pairs` (typically the whole environment).
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<AiServiceConfig, ConfigError> {
        let mut c = AiServiceConfig::default();
        for (name, text) in pairs {
            let Some(v) = Raw::find(Component::AiService, name, text) else {
                continue;
            };
            match v.name {
                "AI_SERVER_URL" => c.server_url = v.ws_url()?,
                "AI_SHARED_SECRET" => c.shared_secret = v.text.to_owned(),
                "AI_WORKERS" => c.workers = v.count(1)?,
                "AI_MAX_QUEUE" => c.queue_max = v.count(1)?,
                "AI_DEGRADE_QUEUE" => c.degrade_queue_min = v.count(0)?,
                "AI_AGENT" => c.agent = v.parsed("is not search, heuristic or random")?,
                "LOG_LEVEL" => c.log_level = v.text.to_owned(),
                "LOG_FORMAT" => c.log_format = v.parsed("is not text or json")?,
                _ => {}
            }
        }
        Ok(c)
    }
}

impl FromStr for LogFormat {
    type Err = ();
    fn from_str(s: &str) -> Result<LogFormat, ()> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(()),
        }
    }
}

impl FromStr for AiAgent {
    type Err = ();
    fn from_str(s: &str) -> Result<AiAgent, ()> {
        match s {
            "search" => Ok(AiAgent::Search),
            "heuristic" => Ok(AiAgent::Heuristic),
            "random" => Ok(AiAgent::Random),
            _ => Err(()),
        }
    }
}

impl AiAgent {
    pub fn name(self) -> &'static str {
        match self {
            AiAgent::Search => "search",
            AiAgent::Heuristic => "heuristic",
            AiAgent::Random => "random",
        }
    }
}

/// Longest duration accepted, in seconds: about 31 years, far inside `u64` microseconds
/// and exact in `f64`.
const DURATION_SECS_MAX: f64 = 1e9;

/// One known, non-empty value on its way to a field.
struct Raw<'a> {
    name: &'static str,
    text: &'a str,
}

impl<'a> Raw<'a> {
    /// The setting `name` of `component` with a non-empty value, if it is one.
    fn find(component: Component, name: &str, text: &'a str) -> Option<Raw<'a>> {
        let setting = SETTINGS
            .iter()
            .find(|s| s.component == component && s.name == name)?;
        let text = text.trim();
        (!text.is_empty()).then_some(Raw {
            name: setting.name,
            text,
        })
    }

    fn error(&self, reason: impl Into<String>) -> ConfigError {
        ConfigError {
            variable: self.name,
            value: self.text.to_owned(),
            reason: reason.into(),
        }
    }

    fn parsed<T: FromStr>(&self, reason: &str) -> Result<T, ConfigError> {
        self.text.parse().map_err(|_| self.error(reason))
    }

    /// A whole number of at least `min`.
    fn count<T: TryFrom<u64>>(&self, min: u64) -> Result<T, ConfigError> {
        let n: u64 = match self.text.parse() {
            Ok(n) => n,
            Err(_) if self.text.bytes().all(|b| b.is_ascii_digit()) => {
                return Err(self.error("is too large"));
            }
            Err(_) => return Err(self.error("is not a whole number")),
        };
        if n < min {
            return Err(self.error(format!("must be at least {min}")));
        }
        T::try_from(n).map_err(|_| self.error("is too large"))
    }

    /// Seconds (fractions allowed) as microseconds, at least `min_us`.
    fn duration_us(&self, min_us: u64) -> Result<u64, ConfigError> {
        let secs = self.number("is not a number of seconds")?;
        if secs < 0.0 {
            return Err(self.error("must not be negative"));
        }
        if secs > DURATION_SECS_MAX {
            return Err(self.error(format!("is too large (at most {DURATION_SECS_MAX} s)")));
        }
        // At most 1e15 after scaling, so the cast neither saturates nor loses precision.
        let us = (secs * US_PER_SEC as f64).round() as u64;
        if us < min_us {
            return Err(self.error("must be greater than 0"));
        }
        Ok(us)
    }

    /// A rate per second or minute: finite and greater than 0.
    fn rate(&self) -> Result<f64, ConfigError> {
        let rate = self.number("is not a number")?;
        if rate <= 0.0 {
            return Err(self.error("must be greater than 0"));
        }
        Ok(rate)
    }

    /// A share between 0 and 1 inclusive.
    fn share(&self) -> Result<f64, ConfigError> {
        let share = self.number("is not a number")?;
        if !(0.0..=1.0).contains(&share) {
            return Err(self.error("must be between 0 and 1"));
        }
        Ok(share)
    }

    fn number(&self, reason: &str) -> Result<f64, ConfigError> {
        match self.text.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(x),
            _ => Err(self.error(reason)),
        }
    }

    fn flag(&self) -> Result<bool, ConfigError> {
        match self.text.to_ascii_lowercase().as_str() {
            "1" | "true" => Ok(true),
            "0" | "false" => Ok(false),
            _ => Err(self.error("is not 1, 0, true or false")),
        }
    }

    /// Comma-separated origins like `https://example.com`; empty items are skipped.
    fn origins(&self) -> Result<Vec<String>, ConfigError> {
        let mut origins = Vec::new();
        for item in self
            .text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let origin = item.strip_suffix('/').unwrap_or(item);
            let host = origin.split_once("://").map_or("", |(_, host)| host);
            if host.is_empty() || host.contains('/') || origin.contains(char::is_whitespace) {
                return Err(self.error(format!(
                    "has {item:?}, which is not an origin like https://example.com"
                )));
            }
            origins.push(origin.to_owned());
        }
        Ok(origins)
    }

    fn cidrs(&self) -> Result<Vec<IpCidr>, ConfigError> {
        let items = self
            .text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty());
        items
            .map(|item| {
                item.parse()
                    .map_err(|e| self.error(format!("has {item:?}: {e}")))
            })
            .collect()
    }

    fn ws_url(&self) -> Result<String, ConfigError> {
        let rest = self
            .text
            .strip_prefix("ws://")
            .or_else(|| self.text.strip_prefix("wss://"));
        match rest {
            Some(rest) if !rest.is_empty() && !rest.starts_with('/') => Ok(self.text.to_owned()),
            _ => Err(self.error("is not a ws:// or wss:// URL")),
        }
    }
}

/// An IP network: an address and a prefix length, e.g. `10.0.0.0/8` or `fd00::/8`.
///
/// A bare address is a network of one. Host bits below the prefix are cleared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IpCidr {
    network: IpAddr,
    prefix_len: u8,
}

/// Text that is not an IP address or CIDR.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IpCidrError {
    BadAddress,
    BadPrefix,
}

impl fmt::Display for IpCidrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IpCidrError::BadAddress => "not an IP address or CIDR",
            IpCidrError::BadPrefix => {
                "prefix length out of range (0..=32 for IPv4, 0..=128 for IPv6)"
            }
        })
    }
}

impl std::error::Error for IpCidrError {}

impl IpCidr {
    pub fn new(addr: IpAddr, prefix_len: u8) -> Result<IpCidr, IpCidrError> {
        let network = match addr {
            IpAddr::V4(a) if prefix_len <= 32 => {
                IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask_v4(prefix_len)))
            }
            IpAddr::V6(a) if prefix_len <= 128 => {
                IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask_v6(prefix_len)))
            }
            _ => return Err(IpCidrError::BadPrefix),
        };
        Ok(IpCidr {
            network,
            prefix_len,
        })
    }

    pub fn network(&self) -> IpAddr {
        self.network
    }

    pub fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    /// Whether `ip` is in this network. IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`)
    /// match IPv4 networks, since dual-stack sockets report IPv4 peers that way.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            IpAddr::V4(_) => ip,
        };
        match (self.network, ip) {
            (IpAddr::V4(net), IpAddr::V4(a)) => {
                u32::from(a) & mask_v4(self.prefix_len) == u32::from(net)
            }
            (IpAddr::V6(net), IpAddr::V6(a)) => {
                u128::from(a) & mask_v6(self.prefix_len) == u128::from(net)
            }
            _ => false,
        }
    }
}

fn mask_v4(prefix_len: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(prefix_len.min(32)))
        .unwrap_or(0)
}

fn mask_v6(prefix_len: u8) -> u128 {
    u128::MAX
        .checked_shl(128 - u32::from(prefix_len.min(128)))
        .unwrap_or(0)
}

impl FromStr for IpCidr {
    type Err = IpCidrError;

    fn from_str(s: &str) -> Result<IpCidr, IpCidrError> {
        let (addr, prefix) = match s.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (s, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| IpCidrError::BadAddress)?;
        let full = if addr.is_ipv4() { 32 } else { 128 };
        let prefix_len = match prefix {
            None => full,
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                p.parse().map_err(|_| IpCidrError::BadPrefix)?
            }
            Some(_) => return Err(IpCidrError::BadPrefix),
        };
        IpCidr::new(addr, prefix_len)
    }
}

impl fmt::Display for IpCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix_len)
    }
}
