//! Playing whole games with programmatic players: used by benchmarks, calibration,
//! strength measurements and the AI's evaluation harness.

use rand::{Rng, RngExt};

use super::observation::Observation;
use super::rules::Game;
use super::types::{Action, ActionError, Event, Seat};

/// Plays `game` to its end, asking `choose` for each acting seat's action given its
/// observation. Returns the events of the game from this point on, or the first error
/// (a player that chose an illegal action).
pub fn play_out(
    game: &mut Game,
    mut choose: impl FnMut(Seat, &Observation) -> Action,
) -> Result<Vec<Event>, (Seat, Action, ActionError)> {
    let mut events = Vec::new();
    while let Some(seat) = game.next_to_act() {
        let obs = game.observation(seat);
        let action = choose(seat, &obs);
        game.apply(seat, action, &mut events)
            .map_err(|e| (seat, action, e))?;
    }
    Ok(events)
}

/// A uniformly random legal action for the seat `obs` belongs to; `None` when it may
/// not act. This is the `random` reference player.
pub fn random_action(obs: &Observation, rng: &mut impl Rng) -> Option<Action> {
    match obs.legal_actions.len() {
        0 => None,
        n => obs.legal_actions.get(rng.random_range(0..n)).copied(),
    }
}

/// Mean and half-width of a 95 % confidence interval (normal approximation).
pub fn mean_ci95(samples: &[f64]) -> (f64, f64) {
    if samples.is_empty() {
        return (0.0, 0.0);
    }
    #[allow(clippy::cast_precision_loss)]
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    if samples.len() < 2 {
        return (mean, f64::INFINITY);
    }
    let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, 1.96 * (var / n).sqrt())
}
