//! How long a running game may go without a move when the server owes it one: the
//! bound of the progress checker, derived from the scenario's CPU quota, its cost
//! model and stalls, and the server's turn settings. docs/SIMULATION.md ("Progress")
//! gives the derivation.

use wizard_core::machine::timers::WAKE_GRID_US;
use wizard_core::shell::batch::BATCH_INPUTS_MAX;
use wizard_core::vocabulary::config::Config;
use wizard_core::vocabulary::game::types::PLAYERS_MAX;

use crate::runs::scenario::Scenario;

/// The two parts of the bound: the game's own wait for a seat the server plays, and
/// the time the server thread may need to get to the move once it is due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgressBound {
    /// An AI seat's move is due at most this long after its turn began: the latest of
    /// `AI_MOVE_DELAY`, `TRICK_PAUSE` and `AI_DECISION_TIMEOUT` (its fallback).
    pub ai_wait_us: u64,
    /// From the move being due to its being applied.
    pub slack_us: u64,
}

impl ProgressBound {
    /// The bound for a game that waits on an AI seat (`ai`) and/or on a human whose
    /// `turn_seconds` runs (`turn_us` > 0): the earliest of their moves is due.
    pub fn for_wait(&self, ai: bool, turn_us: u64) -> Option<u64> {
        let ai = ai.then_some(self.ai_wait_us);
        let human = (turn_us > 0).then_some(turn_us);
        let due = match (ai, human) {
            (Some(a), Some(h)) => Some(a.min(h)),
            (a, h) => a.or(h),
        }?;
        Some(due + self.slack_us)
    }
}

/// The bound for `scenario` (resolved) and the server's `config`; `None` when the
/// scenario leaves the thread no CPU it can count on (background work of the whole
/// quota).
pub fn bound(scenario: &Scenario, config: &Config) -> Option<ProgressBound> {
    let ai_wait_us = config
        .ai_move_delay_us
        .max(config.trick_pause_us)
        .max(config.ai_decision_timeout_us);
    let quota = scenario.cpu_quota_cores.unwrap_or(1.0);
    let background = scenario
        .background
        .iter()
        .map(|b| b.share + b.amplitude.abs())
        .fold(0.0, f64::max);
    let cores = quota * (1.0 - background);
    if !cores.is_finite() || cores <= 0.01 {
        return None;
    }
    let m = &scenario.cost;
    let humans = f64::from(PLAYERS_MAX);
    // The costliest input: a move shown to six humans, with its frame read.
    let input_us = m.read_us + m.action_us + humans * (m.state_us + m.write_us);
    // What the deadlines due at one instant may add: a move in every running game, and
    // a `server_status` to every connection.
    let deadlines_us = config.active_games_max as f64 * input_us
        + config.conns_max as f64 * (m.small_us + m.write_us);
    let iteration_us =
        (m.wake_us + BATCH_INPUTS_MAX as f64 * input_us + deadlines_us) * m.speed_factor.max(0.0);
    let period_us = scenario.cfs_period_ms * 1e3;
    let stalls_us: f64 = scenario.stalls.iter().map(|s| s.ms * 1e3).sum();
    // The iteration running when the move falls due, then the next one, which handles
    // the core's deadline after its inputs; each waits at most one period for quota.
    let slack = 2.0 * iteration_us / cores + 2.0 * period_us + stalls_us + WAKE_GRID_US as f64;
    Some(ProgressBound {
        ai_wait_us,
        slack_us: slack.ceil() as u64,
    })
}
