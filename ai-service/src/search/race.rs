//! The search's candidates racing over common sampled worlds, and its stopping rule.
//!
//! Every world gives each candidate still in the race one value (its rollout's score
//! change) and a weight shared by all (the world's likelihood). The race keeps, per
//! candidate, the weighted sum of its values, and per pair the weighted sum of the
//! products of their values, so the weighted mean and variance of the paired difference
//! between any two candidates still in the race are known without storing the worlds:
//! memory is fixed by the number of candidates, not of worlds.
//!
//! The rule, checked every `CHECK_EVERY_WORLDS` worlds once `worlds_min` worlds are in:
//! with `d` the weighted mean of (leader - candidate) over the common worlds and `se` its
//! standard error (weighted variance over the effective sample size `W^2 / sum w^2`),
//! the candidate leaves the race when `d > z * se`; when the value expected to be lost
//! by dropping it, `E[max(0, X)]` for `X ~ N(-d, se^2)` (how much better than the
//! leader it may in truth be, on average), is below `loss_max` points (a sequential
//! "expected opportunity cost" rule: a close call between two candidates worth about the
//! same ends without spending the budget on it, a close call with a wide spread does
//! not); or, once `tie_worlds_min` worlds are in, when every one of its values so far
//! equalled the leader's (indistinguishable: the leader, earlier in the order on a tie,
//! stands for both). The loss rule needs the two to have differed in some world, so a
//! tie is only ever dropped by the tie rule. The race is decided when one candidate is
//! left.

/// Worlds between two applications of the stopping rule.
const CHECK_EVERY_WORLDS: u32 = 8;

/// The running sums of one search's candidates.
#[derive(Debug)]
pub(super) struct Race {
    candidates: usize,
    z: f64,
    loss_max: f64,
    worlds_min: u32,
    tie_worlds_min: u32,
    worlds: u32,
    in_race: Vec<bool>,
    /// Per candidate: the weighted sum of its values and the sum of weights it got.
    sums: Vec<f64>,
    weights: Vec<f64>,
    /// Sum of weights and of squared weights over all worlds so far.
    weight_sum: f64,
    weight_sq_sum: f64,
    /// `products[i * candidates + j]` (i <= j): the weighted sum of value i times value j.
    products: Vec<f64>,
    /// The values of the current world.
    row: Vec<f64>,
}

impl Race {
    /// A race of `candidates` candidates; `z` of 0 turns the stopping rule off.
    pub(super) fn new(
        candidates: usize,
        z: f32,
        loss_max: f32,
        worlds_min: u32,
        tie_worlds_min: u32,
    ) -> Race {
        Race {
            candidates,
            z: f64::from(z),
            loss_max: f64::from(loss_max),
            worlds_min: worlds_min.max(2),
            tie_worlds_min,
            worlds: 0,
            in_race: vec![true; candidates],
            sums: vec![0.0; candidates],
            weights: vec![0.0; candidates],
            weight_sum: 0.0,
            weight_sq_sum: 0.0,
            products: if z > 0.0 {
                vec![0.0; candidates * candidates]
            } else {
                Vec::new()
            },
            row: vec![0.0; candidates],
        }
    }

    /// Adds one world of weight `weight`: `value(c)` is asked for every candidate still
    /// in the race.
    pub(super) fn world(&mut self, weight: f64, mut value: impl FnMut(usize) -> f64) {
        for c in 0..self.candidates {
            if self.in_race[c] {
                let v = value(c);
                self.row[c] = v;
                self.sums[c] += weight * v;
                self.weights[c] += weight;
            }
        }
        self.weight_sum += weight;
        self.weight_sq_sum += weight * weight;
        self.worlds += 1;
        if self.products.is_empty() {
            return;
        }
        for i in 0..self.candidates {
            if !self.in_race[i] {
                continue;
            }
            let wi = weight * self.row[i];
            for j in i..self.candidates {
                if self.in_race[j] {
                    self.products[i * self.candidates + j] += wi * self.row[j];
                }
            }
        }
        if self.worlds >= self.worlds_min && self.worlds.is_multiple_of(CHECK_EVERY_WORLDS) {
            self.drop_the_beaten();
        }
    }

    fn product(&self, i: usize, j: usize) -> f64 {
        let (a, b) = if i <= j { (i, j) } else { (j, i) };
        self.products[a * self.candidates + b]
    }

    /// Applies the stopping rule to every candidate but the leader.
    fn drop_the_beaten(&mut self) {
        let w = self.weight_sum;
        if w <= 0.0 || self.weight_sq_sum <= 0.0 {
            return;
        }
        let n_eff = w * w / self.weight_sq_sum;
        let lead = self.leader();
        for j in 0..self.candidates {
            if j == lead || !self.in_race[j] {
                continue;
            }
            let d = (self.sums[lead] - self.sums[j]) / w;
            let d_sq =
                (self.product(lead, lead) - 2.0 * self.product(lead, j) + self.product(j, j)) / w;
            let variance = (d_sq - d * d).max(0.0);
            let indistinguishable = d_sq <= 0.0 && self.worlds >= self.tie_worlds_min;
            let se = (variance / (n_eff - 1.0).max(1.0)).sqrt();
            // Worlds in which the two always scored alike tell nothing about the spread
            // of their difference: only the tie rule may drop such a candidate.
            let not_worth_it = d_sq > 0.0 && expected_gain(d, se) < self.loss_max;
            if indistinguishable || d > self.z * se || not_worth_it {
                self.in_race[j] = false;
            }
        }
    }

    /// Whether one candidate is left (with the rule off, never).
    pub(super) fn decided(&self) -> bool {
        !self.products.is_empty() && self.in_race.iter().filter(|&&r| r).count() <= 1
    }

    /// The candidate still in the race with the best mean, the earliest on a tie.
    pub(super) fn leader(&self) -> usize {
        let mut best: Option<(usize, f64)> = None;
        for c in 0..self.candidates {
            if !self.in_race[c] {
                continue;
            }
            let m = self.mean(c);
            if best.is_none_or(|(_, b)| m > b) {
                best = Some((c, m));
            }
        }
        best.map_or(0, |(c, _)| c)
    }

    /// The weighted mean value of candidate `c` over the worlds it got.
    pub(super) fn mean(&self, c: usize) -> f64 {
        match (self.sums.get(c), self.weights.get(c)) {
            (Some(&s), Some(&w)) if w > 0.0 => s / w,
            _ => 0.0,
        }
    }
}

/// How much better than the leader, on average, a candidate whose mean is `d` below
/// the leader's with standard error `se` may in truth be: `E[max(0, X)]` for
/// `X ~ N(-d, se^2)`, that is `se * pdf(d / se) - d * P(Z > d / se)`. It is the value
/// the search expects to lose by dropping the candidate now.
fn expected_gain(d: f64, se: f64) -> f64 {
    if se <= 0.0 {
        return (-d).max(0.0);
    }
    let t = d / se;
    let pdf = (-0.5 * t * t).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let upper_tail = 0.5 * libm::erfc(t / std::f64::consts::SQRT_2);
    se * pdf - d * upper_tail
}

#[cfg(test)]
mod tests {
    //! The stopping rule on made-up values: clear leads end the race, close or noisy
    //! ones do not, ties end it only after `tie_worlds_min`.

    use super::*;

    /// Runs `worlds` worlds of `values(world, candidate)` with unit weights; returns the
    /// worlds run until decided and the leader.
    fn run(race: &mut Race, worlds: u32, values: impl Fn(u32, usize) -> f64) -> (u32, usize) {
        for w in 0..worlds {
            if race.decided() {
                return (w, race.leader());
            }
            race.world(1.0, |c| values(w, c));
        }
        (worlds, race.leader())
    }

    /// A deterministic spread of values in -10..10 per world and candidate.
    fn noise(world: u32, c: usize) -> f64 {
        let x = (u64::from(world) * 7919 + c as u64 * 104_729).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        f64::from(u32::try_from((x >> 32) % 21).unwrap_or(0)) - 10.0
    }

    #[test]
    fn a_clear_lead_ends_the_race_at_the_first_check() {
        // Candidate 2 is 5 better in every world, over shared noise.
        let mut race = Race::new(4, 3.0, 0.0, 32, 128);
        let (worlds, leader) = run(&mut race, 200, |w, c| {
            noise(w, 0) + if c == 2 { 5.0 } else { 0.0 } + c as f64 * 0.1
        });
        assert_eq!((worlds, leader), (32, 2));
    }

    #[test]
    fn a_lead_within_the_noise_runs_to_the_budget() {
        // Independent noise per candidate, equal means: nothing is clear.
        let mut race = Race::new(3, 3.0, 0.0, 32, 128);
        let (worlds, _) = run(&mut race, 200, noise);
        assert_eq!(worlds, 200);
        assert!(!race.decided());
    }

    #[test]
    fn a_small_consistent_lead_is_clear_with_common_worlds() {
        // Shared noise and a 0.5 lead in every world: the paired difference has no
        // variance, so the lead is clear although the noise is 20 times larger.
        let mut race = Race::new(2, 3.0, 0.0, 32, 128);
        let (worlds, leader) = run(&mut race, 200, |w, c| {
            noise(w, 0) + if c == 1 { 0.5 } else { 0.0 }
        });
        assert_eq!((worlds, leader), (32, 1));
    }

    #[test]
    fn identical_candidates_leave_only_after_tie_worlds_min() {
        let mut race = Race::new(3, 3.0, 0.0, 32, 128);
        let (worlds, leader) = run(&mut race, 200, |w, _| noise(w, 0));
        assert_eq!((worlds, leader), (128, 0));
    }

    #[test]
    fn z_zero_never_stops_and_keeps_every_mean() {
        let mut race = Race::new(2, 0.0, 0.0, 32, 128);
        let (worlds, leader) = run(&mut race, 100, |_, c| if c == 1 { 3.0 } else { 1.0 });
        assert_eq!((worlds, leader), (100, 1));
        assert!((race.mean(0) - 1.0).abs() < 1e-12 && (race.mean(1) - 3.0).abs() < 1e-12);
    }

    #[test]
    fn expected_gain_is_the_normal_tail_mean() {
        assert!((expected_gain(0.0, 1.0) - 0.398_942).abs() < 1e-5);
        // d = se: pdf(1) - P(Z > 1) = 0.241971 - 0.158655.
        assert!((expected_gain(2.0, 2.0) - 2.0 * 0.083_316).abs() < 1e-5);
        assert!(expected_gain(3.0, 1.0) < 0.001);
        assert!(expected_gain(1.0, 0.0).abs() < 1e-12);
    }

    #[test]
    fn a_difference_too_small_to_matter_ends_the_race_with_a_loss_bound() {
        // Candidate 1 differs from 0 by +-0.5 in each world, over shared noise of +-10:
        // the z rule cannot tell them apart, but neither can be much better.
        let values = |w: u32, c: usize| noise(w, 0) + if c == 1 { noise(w, 1) * 0.05 } else { 0.0 };
        let mut race = Race::new(2, 3.0, 0.0, 32, 128);
        let (worlds, _) = run(&mut race, 200, values);
        assert_eq!(worlds, 200);
        let mut race = Race::new(2, 3.0, 0.05, 32, 128);
        let (worlds, _) = run(&mut race, 200, values);
        assert_eq!(worlds, 32);
    }

    #[test]
    fn a_loss_bound_keeps_a_noisy_race_going() {
        // Independent noise of +-10 per candidate: either may be better by points.
        let mut race = Race::new(3, 3.0, 0.05, 32, 128);
        let (worlds, _) = run(&mut race, 200, noise);
        assert_eq!(worlds, 200);
    }

    #[test]
    fn weights_count_in_the_means() {
        let mut race = Race::new(1, 0.0, 0.0, 32, 128);
        race.world(3.0, |_| 2.0);
        race.world(1.0, |_| 6.0);
        assert!((race.mean(0) - 3.0).abs() < 1e-12);
    }
}
