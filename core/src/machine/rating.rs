//! Ratings: the Weng-Lin Bayesian update with the Bradley-Terry full pairing (Weng and
//! Lin 2011, Algorithm 1), each seat a team of one, as PROTOCOL.md section 7.3 fixes it.
//!
//! A rating is a normal belief `(mu, sigma)` about a player's skill. After a game every
//! seat is compared with every other seat: the update moves `mu` by how much better or
//! worse the seat did than the model expected against each opponent, and shrinks
//! `sigma` by how much the game told about it. The parameters are fixed so that any
//! correct implementation gives the same numbers: `mu0 = 25`, `sigma0 = 25/3`,
//! `beta = 25/6`, `kappa = 0.0001`, `gamma = sigma / c`, no additive dynamics
//! (`tau = 0`). Seats are ranked by their final score, higher first; equal scores share
//! a rank (a draw between them).
//!
//! Pure arithmetic on `f64` in a fixed order: the same inputs give the same bits on
//! every machine that follows IEEE 754 (no fused multiply-add is asked for).

use serde::{Deserialize, Serialize};

/// A new player's mean skill.
pub const MU0: f64 = 25.0;
/// A new player's uncertainty.
pub const SIGMA0: f64 = 25.0 / 3.0;
/// The spread of one game's performance around the skill.
pub const BETA: f64 = 25.0 / 6.0;
/// The floor of the factor that shrinks a variance, so a sigma never reaches 0.
pub const KAPPA: f64 = 0.0001;

/// A skill belief.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rating {
    pub mu: f64,
    pub sigma: f64,
}

impl Default for Rating {
    fn default() -> Self {
        Rating::NEW
    }
}

impl Rating {
    /// A new player's rating.
    pub const NEW: Rating = Rating {
        mu: MU0,
        sigma: SIGMA0,
    };

    /// The rating shown to players: the conservative ordinal `mu - 3 sigma`, rounded to
    /// hundredths (`round(100 * (mu - 3 sigma)) / 100`, halves away from zero).
    pub fn shown(self) -> f64 {
        (100.0 * (self.mu - 3.0 * self.sigma)).round() / 100.0
    }
}

/// The ratings after one game: `before[i]` is seat `i`'s rating, `scores[i]` its final
/// score. Seats whose rating is fixed (AI levels) are rated like the others here; the
/// caller keeps their old rating. Fewer than two seats, or slices of different lengths,
/// change nothing.
pub fn rate(before: &[Rating], scores: &[i64]) -> Vec<Rating> {
    let n = before.len();
    if n < 2 || scores.len() != n {
        return before.to_vec();
    }
    let two_beta_sq = 2.0 * BETA * BETA;
    before
        .iter()
        .enumerate()
        .map(|(i, me)| {
            let my_var = me.sigma * me.sigma;
            let mut omega = 0.0;
            let mut delta = 0.0;
            for (q, them) in before.iter().enumerate() {
                if q == i {
                    continue;
                }
                let c = (my_var + them.sigma * them.sigma + two_beta_sq).sqrt();
                let p_me = 1.0 / (1.0 + ((them.mu - me.mu) / c).exp());
                let p_them = 1.0 / (1.0 + ((me.mu - them.mu) / c).exp());
                let outcome = match scores[i].cmp(&scores[q]) {
                    std::cmp::Ordering::Greater => 1.0,
                    std::cmp::Ordering::Equal => 0.5,
                    std::cmp::Ordering::Less => 0.0,
                };
                let var_over_c = my_var / c;
                omega += var_over_c * (outcome - p_me);
                let gamma = me.sigma / c;
                delta += gamma * var_over_c / c * p_me * p_them;
            }
            Rating {
                mu: me.mu + omega,
                sigma: me.sigma * (1.0 - delta).max(KAPPA).sqrt(),
            }
        })
        .collect()
}

pub use crate::vocabulary::figure::Figure;

/// The fixed rating of an AI level, which its seats take part in every update with
/// and which no game changes. Measured by self-play with this model
/// (`wizard-ai rate-levels`, docs/AI.md): the mean over 5 runs of 1000 games of one
/// seat per level, each run's final `(mu, sigma)`.
pub fn ai_rating(level: crate::vocabulary::game::AiLevel) -> Rating {
    use crate::vocabulary::game::AiLevel;
    match level {
        AiLevel::Easy => AI_EASY,
        AiLevel::Normal => AI_NORMAL,
        AiLevel::Strong => AI_STRONG,
    }
}

/// The `easy` level's fixed rating.
pub const AI_EASY: Rating = Rating {
    mu: 16.22,
    sigma: 0.87,
};
/// The `normal` level's fixed rating.
pub const AI_NORMAL: Rating = Rating {
    mu: 20.55,
    sigma: 0.83,
};
/// The `strong` level's fixed rating.
pub const AI_STRONG: Rating = Rating {
    mu: 35.42,
    sigma: 1.14,
};
