//! The AI levels' ratings, measured by self-play with the players' own rating model.
//!
//! Each game seats one AI of each level (`easy`, `normal`, `strong`) at a 3-seat table,
//! their seat order cycling through the 6 orders so no level keeps the first lead. The
//! levels' ratings are the model's variables: they start at `(mu0, sigma0)` and after
//! every game are updated by `wizard_core::machine::rating::rate` from the final scores, exactly
//! as a player's rating would be. After N games each level's `(mu, sigma)` is the
//! posterior the model gives; `sigma` is its standard deviation, so `mu +- 1.96 sigma`
//! is a 95 % interval. The strong level is the search agent with the service's worlds
//! budget ([`SEARCH_WORLDS_MAX`] sampled worlds, no deadline), so a run is deterministic
//! for its seed.

use serde::Serialize;
use wizard_core::machine::rating::{self, Rating};
use wizard_core::vocabulary::game::{AiLevel, Game, Options, SetupError};

use crate::agent::{Agent, AgentSpec, Budget, decision_rng};

/// The sampled worlds of a strong decision (the service's budget).
pub const SEARCH_WORLDS_MAX: u32 = 200;

/// The seat orders of one level each, cycled game by game.
const ORDERS: [[AiLevel; 3]; 6] = {
    use AiLevel::{Easy, Normal, Strong};
    [
        [Easy, Normal, Strong],
        [Easy, Strong, Normal],
        [Normal, Easy, Strong],
        [Normal, Strong, Easy],
        [Strong, Easy, Normal],
        [Strong, Normal, Easy],
    ]
};

/// The levels in the order of [`LevelRatings::ratings`].
pub const LEVELS: [AiLevel; 3] = [AiLevel::Easy, AiLevel::Normal, AiLevel::Strong];

/// The outcome of a run.
#[derive(Clone, Debug, Serialize)]
pub struct LevelRatings {
    pub games: u32,
    pub seed: u64,
    /// `easy`, `normal`, `strong`.
    pub ratings: [Rating; 3],
    /// Games each level finished first in, a shared first place as a share.
    pub wins: [f64; 3],
}

/// Why a run stopped (an agent's bug or a rules setup the engine refuses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LevelsError {
    Setup(SetupError),
    Agent(String),
}

impl std::fmt::Display for LevelsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LevelsError::Setup(e) => write!(f, "game setup: {e:?}"),
            LevelsError::Agent(e) => write!(f, "agent: {e}"),
        }
    }
}

fn index(level: AiLevel) -> usize {
    match level {
        AiLevel::Easy => 0,
        AiLevel::Normal => 1,
        AiLevel::Strong => 2,
    }
}

/// Plays `games` games and rates the levels; `progress` hears every tenth of the run.
pub fn rate_levels(
    games: u32,
    seed: u64,
    mut progress: impl FnMut(&LevelRatings),
) -> Result<LevelRatings, LevelsError> {
    let agents: [Box<dyn Agent>; 3] = [
        AgentSpec::Easy.build(),
        "normal"
            .parse::<AgentSpec>()
            .map_err(|e| LevelsError::Agent(e.to_string()))?
            .build(),
        "search"
            .parse::<AgentSpec>()
            .map_err(|e| LevelsError::Agent(e.to_string()))?
            .build(),
    ];
    let mut out = LevelRatings {
        games: 0,
        seed,
        ratings: [Rating::NEW; 3],
        wins: [0.0; 3],
    };
    let budget = Budget::iterations(SEARCH_WORLDS_MAX);
    for g in 0..games {
        let order = ORDERS[(g as usize) % ORDERS.len()];
        let game_seed = seed.wrapping_mul(1_000_003).wrapping_add(u64::from(g));
        let mut events = Vec::new();
        let mut game =
            Game::new(3, Options::default(), game_seed, &mut events).map_err(LevelsError::Setup)?;
        let mut decisions = [0u64; 3];
        while let Some(seat) = game.next_to_act() {
            let s = usize::from(seat);
            let agent = &agents[index(order[s])];
            let mut rng = decision_rng(game_seed, seat, decisions[s]);
            decisions[s] += 1;
            let action = agent
                .decide(&game.observation(seat), &budget, &mut rng)
                .map_err(|e| LevelsError::Agent(e.to_string()))?;
            game.apply(seat, action, &mut events)
                .map_err(|e| LevelsError::Agent(format!("illegal {action:?}: {e}")))?;
            events.clear();
        }
        let scores: Vec<i64> = game.scores().iter().map(|&s| i64::from(s)).collect();
        let before: Vec<Rating> = order.iter().map(|&l| out.ratings[index(l)]).collect();
        let after = rating::rate(&before, &scores);
        let best = scores.iter().copied().max().unwrap_or(0);
        let sharing = scores.iter().filter(|&&s| s == best).count().max(1);
        for (s, &level) in order.iter().enumerate() {
            out.ratings[index(level)] = after[s];
            if scores[s] == best {
                #[allow(clippy::cast_precision_loss)]
                let share = 1.0 / sharing as f64;
                out.wins[index(level)] += share;
            }
        }
        out.games = g + 1;
        if (g + 1) % (games / 10).max(1) == 0 {
            progress(&out);
        }
    }
    Ok(out)
}

/// The run as lines for people: each level's `(mu, sigma)`, its 95 % interval for mu,
/// the shown rating and the share of games won.
pub fn render_text(r: &LevelRatings) -> String {
    let mut text = format!(
        "{} games of easy, normal and strong, seed {}\n",
        r.games, r.seed
    );
    for (level, (rating, wins)) in LEVELS.iter().zip(r.ratings.iter().zip(r.wins)) {
        text.push_str(&format!(
            "{:<7} mu {:>7.3}  sigma {:.3}  mu 95% [{:.2}, {:.2}]  shown {:>6.2}  won {:.1}%\n",
            level.name(),
            rating.mu,
            rating.sigma,
            rating.mu - 1.96 * rating.sigma,
            rating.mu + 1.96 * rating.sigma,
            rating.shown(),
            100.0 * wins / f64::from(r.games.max(1)),
        ));
    }
    text
}
