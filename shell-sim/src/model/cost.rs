//! The cost model: how much CPU time the server thread spends on each piece of work.
//!
//! Core figures come from the core's criterion benchmarks on the development machine
//! (`cargo bench -p wizard-core --bench server`/`--bench game`): a move in a game of
//! four humans with its four personal states took 4.8 us, of which about 1.8 us is the
//! move and 0.75 us each state (the share of `broadcast_filtered` in a profile of the
//! same run); a message dropped by the flood limiter 34 ns; a `hello` 0.48 us with its
//! outputs; an observation built (0.33 us) and encoded (1.0 us) for the AI service.
//! (The core has since got to 3.2 us per move; the model keeps the figures it was
//! calibrated with.) The figures fitted against the real server (a frame read and
//! written, the fallback player's move, the embedded AI's decisions, the idle floor)
//! are read from the calibration file (`model/calibration.rs`,
//! `fixtures/sim-calibration.json`), which `bench/calibrate.sh` rewrites; the file's
//! commit says when they were measured. The model under-counts wake-ups at low
//! load (the real server's CPU per move is 60 us at 1000 paced games, mostly per
//! wake-up), which matters little for overload, where the loop is busy and batches.
//! `speed_factor` scales everything: 2.0 models a machine twice as slow.
//!
//! Two costs are not per input. The idle floor, the idle server's CPU a second
//! (wake-ups of every thread), charged to the quota in every CFS period (`cpu.rs`).
//! And the embedded AI (`EMBEDDED_AI=1`): its workers run in the server's process, so
//! each decision's CPU comes out of the server's quota, one figure for a decision of
//! the primary agent (`search`) and one for a decision degraded to the heuristic; a
//! worker thread computes a decision in that CPU time, at one core's speed, beside the
//! event loop (`actors/ai.rs`). The core thread's own share of each answer, its
//! wake-up by the answer and the link, is a third figure
//! (`ai_embedded_answer_us`), charged in the pass that takes the answer. All three
//! are calibration figures.
//!
//! A durable store (a scenario whose `STORE` is not `memory`) adds, per record (a move
//! makes 1.002 of them), 0.05 us on the core thread and 1.7 us of the writer thread's
//! fold and sync, charged to the quota: `cargo bench -p wizard-server --bench store`
//! (`store_second`: 1000 moves in commits of 3, then a fold and sync, 1.62 to 1.99 ms
//! of the process's CPU; the committing thread's own share 48.6 to 53.6 us) and `cargo
//! bench -p wizard-core --bench server` (a move with records kept and taken against
//! without: the same within 0.1 us), three runs each on 3 December 2026.

use serde::{Deserialize, Serialize};

/// CPU microseconds per unit of work, at `speed_factor` 1.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CostModel {
    pub speed_factor: f64,
    /// One wake-up of the event loop (epoll, timers, executor).
    pub wake_us: f64,
    /// Accepting a connection and its HTTP upgrade.
    pub open_us: f64,
    /// Tearing a connection down.
    pub close_us: f64,
    /// Reading one frame: websocket parsing and JSON decoding in the reader task.
    pub read_us: f64,
    /// Writing one frame: websocket framing and the share of a write syscall.
    pub write_us: f64,
    /// Core: a player message that the token bucket dropped.
    pub dropped_us: f64,
    /// Core: `hello` (a new session, without its outputs).
    pub hello_us: f64,
    /// Core: a move's rules work, without its outputs.
    pub action_us: f64,
    /// Core: any other player message, without its outputs.
    pub message_us: f64,
    /// Core: an AI reply, a close, a timeout, a load sample.
    pub other_us: f64,
    /// Core: building and encoding one `state` output.
    pub state_us: f64,
    /// Core: building and encoding one `decide` request for the AI service.
    pub ai_request_us: f64,
    /// Core: encoding one small output (`error`, `server_status`, `welcome`).
    pub small_us: f64,
    /// The idle server's CPU a second (wake-ups of every thread), charged to the quota;
    /// not scaled by `speed_factor` (a measured figure). Null: the calibration's figure
    /// for the server with the embedded AI or without ([`CostModel::idle_floor_us_per_s`]).
    pub idle_floor_us_per_s: Option<f64>,
    /// One decision of the embedded service's primary agent (`search`), charged to the
    /// quota (`EMBEDDED_AI=1`): the mean over a game's decisions; a decision's own is
    /// this times [`search_round_weight`] of its round.
    pub ai_embedded_us: f64,
    /// One decision the embedded service degraded to the heuristic, charged likewise.
    pub ai_embedded_heuristic_us: f64,
    /// Core: taking one answer of the embedded service from the in-process link, on
    /// the core thread: the core task's wake-up by the answer, which every answer
    /// needed at once gets (`wizard_core::shell::reply_wait`), and the link's share.
    pub ai_embedded_answer_us: f64,
    /// Core: the fallback player deciding one move (its heuristic on the seat's
    /// observation), on top of the move's own work.
    pub fallback_move_us: f64,
    /// A durable store (`STORE` not `memory`), on the core thread, per record: the
    /// core building it and the commit copying it into the journal, before the pass's
    /// frames go out.
    pub store_record_us: f64,
    /// The store's writer thread folding one record into SQLite and syncing, charged
    /// to the quota (another thread of the process, like the embedded AI).
    pub store_fold_us: f64,
}

impl Default for CostModel {
    /// The criterion figures above, and the fitted ones from the calibration file.
    fn default() -> Self {
        let fitted = crate::model::calibration::calibration().figures;
        CostModel {
            speed_factor: 1.0,
            wake_us: 4.0,
            open_us: 40.0,
            close_us: 8.0,
            read_us: fitted.read_us,
            write_us: fitted.write_us,
            dropped_us: 0.04,
            hello_us: 0.3,
            action_us: 1.8,
            message_us: 1.0,
            other_us: 0.5,
            state_us: 0.75,
            ai_request_us: 1.5,
            small_us: 0.2,
            idle_floor_us_per_s: None,
            ai_embedded_us: fitted.ai_embedded_us,
            ai_embedded_heuristic_us: fitted.ai_embedded_heuristic_us,
            ai_embedded_answer_us: fitted.ai_embedded_answer_us,
            fallback_move_us: fitted.fallback_move_us,
            store_record_us: 0.05,
            store_fold_us: 1.7,
        }
    }
}

impl CostModel {
    /// The idle floor of a server with the embedded AI's workers (`ai_on`) or without:
    /// the scenario's figure, else the calibration's.
    pub fn idle_floor_us_per_s(&self, ai_on: bool) -> f64 {
        let fitted = crate::model::calibration::calibration().figures;
        self.idle_floor_us_per_s.unwrap_or(if ai_on {
            fitted.idle_floor_ai_on_us_per_s
        } else {
            fitted.idle_floor_ai_off_us_per_s
        })
    }
}

/// How much a `search` decision in round `round` of `rounds` costs against the mean
/// decision of a game: `(0.1 + f) / (0.1 + (2 rounds + 1) / (3 rounds))`, `f` the share
/// of the game played (`round / rounds`). A search samples worlds of the seats' hands
/// and plays them out, so its cost grows with the cards in hand: the `search` agent at
/// its default budget took 32 us a decision in round 1 and 271 us in round 20 of a
/// 3-player game, 29 us in round 1 and 264 us in round 15 of a 4-player one
/// (`search_cost --by-round`, `ai-service/examples/search_cost.rs`, on 7 December
/// 2026), about `0.1 + f` times the same figure. A round has about `round` decisions
/// per seat, so the mean of `f` over a game's decisions is `(2 rounds + 1) / (3
/// rounds)`, and the weights of a whole game average 1. All the games of an overload
/// start together and reach their long rounds together, which slows the real server
/// down before they end; a flat figure missed it by a second at the calibration
/// points.
pub fn search_round_weight(round: u8, rounds: u8) -> f64 {
    let rounds = f64::from(rounds.max(1));
    let f = f64::from(round.max(1)).min(rounds) / rounds;
    let mean = (2.0 * rounds + 1.0) / (3.0 * rounds);
    (0.1 + f) / (0.1 + mean)
}

/// The kind of a handled input, for its base cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkKind {
    Open,
    Close,
    Dropped,
    Hello,
    Action,
    Message,
    Other,
}

/// The frames one handled input sent, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    pub frames: usize,
    pub states: usize,
    pub ai_requests: usize,
    pub smalls: usize,
}

impl CostModel {
    /// CPU time of one handled input that sent `sent` (the reader's and writers' shell
    /// costs are added separately).
    pub fn core_us(&self, kind: WorkKind, sent: Sent) -> f64 {
        let base = match kind {
            WorkKind::Open => self.open_us,
            WorkKind::Close => self.close_us,
            WorkKind::Dropped => self.dropped_us,
            WorkKind::Hello => self.hello_us,
            WorkKind::Action => self.action_us,
            WorkKind::Message => self.message_us,
            WorkKind::Other => self.other_us,
        };
        base + self.state_us * sent.states as f64
            + self.ai_request_us * sent.ai_requests as f64
            + self.small_us * sent.smalls as f64
    }

    /// Scales modelled microseconds by the speed factor into whole microseconds.
    pub fn scaled_us(&self, us: f64) -> u64 {
        let v = us * self.speed_factor.max(0.0);
        if v.is_finite() && v > 0.0 {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let r = v.round() as u64;
            r
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::search_round_weight;

    #[test]
    fn a_games_search_weights_average_one_and_grow_with_the_round() {
        // A round has about `round` decisions per seat: weighted so, a whole game's
        // weights average 1, for every game length the rules allow (3 to 6 players).
        for rounds in [10u8, 12, 15, 20] {
            let (mut sum, mut decisions) = (0.0, 0.0);
            for round in 1..=rounds {
                sum += f64::from(round) * search_round_weight(round, rounds);
                decisions += f64::from(round);
            }
            let mean = sum / decisions;
            assert!((mean - 1.0).abs() < 1e-9, "{rounds} rounds: mean {mean}");
            let (first, last) = (
                search_round_weight(1, rounds),
                search_round_weight(rounds, rounds),
            );
            assert!(
                first < 0.3 && last > 1.3,
                "{rounds} rounds: {first} to {last}"
            );
            assert!(
                (1..rounds).all(|r| {
                    search_round_weight(r, rounds) < search_round_weight(r + 1, rounds)
                })
            );
        }
    }
}
