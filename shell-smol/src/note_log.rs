//! The log lines the core's notes become (`docs/OPERATIONS.md`, "Log lines to watch"):
//! one line per note worth one, at its level; those a client can cause pass through
//! the rate limit on log lines first ([`crate::log_limit`]).

use tracing::{debug, info, warn};
use wizard_core::machine::overload::LoadLevel;
use wizard_core::vocabulary::io::{FallbackReason, MoveSource, Note};

use crate::log_limit::{LineKind, LogLimiter};

/// The summary of lines [`LogLimiter`] held back.
pub fn log_suppressed(kind: LineKind, suppressed: u64) {
    warn!(
        kind = kind.name(),
        suppressed, "Suppressed {suppressed} similar lines in the last 10 s (counted in /metrics)"
    );
}

/// One log line per note worth one; the rest go to debug. Lines an attacker can cause
/// pass through `logs` first (`now_us`: the core's clock).
pub fn log_note(note: &Note, logs: &mut LogLimiter, now_us: u64) {
    let limited = match note {
        Note::ConnectionRefused { .. } => Some(LineKind::ConnectionRefused),
        Note::FloodClosed { .. } => Some(LineKind::FloodClosed),
        Note::ResumedPastCap { .. } => Some(LineKind::ResumedPastCap),
        _ => None,
    };
    if limited.is_some_and(|kind| !logs.allow(kind, now_us)) {
        return;
    }
    match note {
        Note::LevelChanged { from, to, sample } => {
            let line = format!("Load level {from} -> {to}");
            let lag_max_ms = sample.lag_us_max as f64 / 1e3;
            let lag_p99_ms = sample.lag_us_p99 as f64 / 1e3;
            let (cpu, throttled) = (sample.cpu_share, sample.throttled_share);
            if *to == LoadLevel::Normal {
                info!(lag_max_ms, lag_p99_ms, cpu, throttled, "{line}");
            } else {
                warn!(lag_max_ms, lag_p99_ms, cpu, throttled, "{line}");
            }
        }
        Note::ConnectionRefused { conn, ip, reason } => warn!(
            conn = conn.0,
            reason = reason.name(),
            "Refusing connection from {ip}: connection limit reached"
        ),
        Note::ConnectionHeld { conn, ip } => debug!(
            conn = conn.0,
            "Holding connection from {ip} over the connection limit until its hello"
        ),
        Note::ResumedPastCap { conn, ip } => info!(
            conn = conn.0,
            "Admitting a player of a running game from {ip} past the connection limit"
        ),
        Note::FloodClosed { conn, ip } => {
            warn!(conn = conn.0, "Closing connection from {ip}: message flood")
        }
        Note::BreakerOpened {
            failures,
            cooldown_us,
        } => warn!(
            "AI failed {failures} times in a row, pausing AI requests for {}s",
            cooldown_us / 1_000_000
        ),
        Note::BreakerClosed => info!("AI requests resumed"),
        // Without any AI service every AI move is a fallback: that is the setup, not an
        // event, and a line per move would cost more CPU than the move.
        Note::Fallback {
            lobby,
            seat,
            reason: reason @ FallbackReason::NoService,
        } => debug!(
            lobby = lobby.0,
            seat,
            reason = reason.name(),
            "Playing fallback move for seat {seat}: {}",
            reason.name()
        ),
        Note::Fallback {
            lobby,
            seat,
            reason,
        } => info!(
            lobby = lobby.0,
            seat,
            reason = reason.name(),
            "Playing fallback move for seat {seat}: {}",
            reason.name()
        ),
        Note::AiConnected { conn } => info!(conn = conn.0, "AI service connected"),
        Note::AiDisconnected { conn, pending } => {
            warn!(conn = conn.0, pending, "AI service disconnected")
        }
        Note::ShutdownStarted => info!("Shutdown started"),
        // One line per game at each end: a server's games can be followed in its log.
        Note::GameStarted { lobby, players } => info!(lobby = lobby.0, players, "Game started"),
        Note::GameFinished { lobby } => info!(lobby = lobby.0, "Game finished"),
        Note::MoveApplied { lobby, seat, by } => {
            let by = match by {
                MoveSource::Human => "human",
                MoveSource::Ai => "ai",
                MoveSource::Fallback => "fallback",
            };
            debug!(lobby = lobby.0, seat, by, "Move applied")
        }
        other => debug!(note = ?other, "note"),
    }
}
