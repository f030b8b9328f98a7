//! The agents that decide for an AI seat: `random`, `heuristic` (the core's fallback
//! player, optionally re-tuned; the `normal` level), `easy` (the core's easy player,
//! the `easy` level) and `search` (see [`crate::search`]; the `strong` level's default).
//!
//! Every agent decides from an [`Observation`] alone, within a [`Budget`], with an RNG
//! the caller seeds. Given the same observation, an iteration-bounded budget and an RNG
//! from [`decision_rng`] with the same (seed, seat, decision index), an agent makes the
//! same decision: only a deadline (wall clock) makes a decision depend on the machine.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;
use wizard_core::vocabulary::config::AiAgent;
use wizard_core::vocabulary::game::bot::{self, BidTable, Params};
use wizard_core::vocabulary::game::{Action, Observation, Seat, level, selfplay};
use wizard_core::vocabulary::wire::{AiErrorCode, AiReply};

use crate::search::{self, SearchConfig};

/// How much an agent may spend on one decision; whichever limit comes first ends it.
/// Agents that cannot use more time (random, heuristic) ignore it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    /// Wall-clock instant by which the decision must be made.
    pub deadline: Option<Instant>,
    /// Most iterations (for the search: sampled worlds).
    pub iterations_max: Option<u32>,
}

impl Budget {
    /// At most `iterations_max` iterations, no deadline: deterministic.
    pub fn iterations(iterations_max: u32) -> Budget {
        Budget {
            deadline: None,
            iterations_max: Some(iterations_max),
        }
    }

    /// Until `time` from now.
    pub fn time(time: Duration) -> Budget {
        Budget {
            deadline: Some(Instant::now() + time),
            iterations_max: None,
        }
    }
}

/// Why an agent made no decision (the caller's fault: there was nothing to decide).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentError {
    /// The observation lists no legal action: the seat is not to act.
    NoLegalAction,
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentError::NoLegalAction => f.write_str("the observation lists no legal action"),
        }
    }
}

impl std::error::Error for AgentError {}

/// A player for an AI seat.
pub trait Agent: fmt::Debug + Send + Sync {
    /// The name the AI reply's `agent` field carries (`search`, `heuristic`, `random`).
    fn name(&self) -> &'static str;

    /// A legal action for the seat `obs` belongs to. Never an action outside
    /// `obs.legal_actions`.
    fn decide(
        &self,
        obs: &Observation,
        budget: &Budget,
        rng: &mut ChaCha12Rng,
    ) -> Result<Action, AgentError>;
}

/// The RNG for one decision: a pure function of the game's seed, the seat and the index
/// of the decision in the game, so replays decide alike.
pub fn decision_rng(seed: u64, seat: Seat, decision_index: u64) -> ChaCha12Rng {
    let mut x = seed ^ (u64::from(seat) << 56) ^ decision_index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    // splitmix64 finaliser, so neighbouring indices give unrelated streams.
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ChaCha12Rng::seed_from_u64(x ^ (x >> 31))
}

/// Uniformly random legal actions: the weakest reference.
#[derive(Clone, Copy, Debug, Default)]
pub struct RandomAgent;

impl Agent for RandomAgent {
    fn name(&self) -> &'static str {
        "random"
    }

    fn decide(
        &self,
        obs: &Observation,
        _: &Budget,
        rng: &mut ChaCha12Rng,
    ) -> Result<Action, AgentError> {
        selfplay::random_action(obs, rng).ok_or(AgentError::NoLegalAction)
    }
}

/// The core's heuristic, with its tuning as data so variants can be compared.
#[derive(Clone, Debug)]
pub struct HeuristicAgent {
    table: BidTable,
    aggression: f32,
    bid_pressure: f32,
}

impl Default for HeuristicAgent {
    fn default() -> HeuristicAgent {
        let p = Params::default();
        HeuristicAgent {
            table: p.table.clone(),
            aggression: p.aggression,
            bid_pressure: p.bid_pressure,
        }
    }
}

impl HeuristicAgent {
    /// The shipped heuristic with other bidding: `aggression` is added to the expected
    /// tricks, `bid_pressure` weighs earlier bids, and every probability of the bid
    /// table is multiplied by `table_scale` (clamped to 0..=1).
    pub fn variant(aggression: f32, bid_pressure: f32, table_scale: f32) -> HeuristicAgent {
        let mut agent = HeuristicAgent {
            aggression,
            bid_pressure,
            ..HeuristicAgent::default()
        };
        agent
            .table
            .p
            .iter_mut()
            .flatten()
            .flatten()
            .flatten()
            .for_each(|p| *p = (*p * table_scale).clamp(0.0, 1.0));
        agent
    }
}

impl Agent for HeuristicAgent {
    fn name(&self) -> &'static str {
        "heuristic"
    }

    fn decide(
        &self,
        obs: &Observation,
        _: &Budget,
        rng: &mut ChaCha12Rng,
    ) -> Result<Action, AgentError> {
        let params = Params {
            table: &self.table,
            aggression: self.aggression,
            bid_pressure: self.bid_pressure,
        };
        bot::decide_with(&params, obs, rng).ok_or(AgentError::NoLegalAction)
    }
}

/// The `easy` level: the core's heuristic misjudging on purpose
/// ([`wizard_core::vocabulary::game::level`]), the same player the server falls back to for an
/// easy seat.
#[derive(Clone, Copy, Debug, Default)]
pub struct EasyAgent;

impl Agent for EasyAgent {
    fn name(&self) -> &'static str {
        "easy"
    }

    fn decide(
        &self,
        obs: &Observation,
        _: &Budget,
        rng: &mut ChaCha12Rng,
    ) -> Result<Action, AgentError> {
        level::decide_easy(&Params::default(), obs, rng).ok_or(AgentError::NoLegalAction)
    }
}

/// The determinized Monte Carlo search.
#[derive(Clone, Copy, Debug, Default)]
pub struct SearchAgent {
    pub config: SearchConfig,
}

impl Agent for SearchAgent {
    fn name(&self) -> &'static str {
        "search"
    }

    fn decide(
        &self,
        obs: &Observation,
        budget: &Budget,
        rng: &mut ChaCha12Rng,
    ) -> Result<Action, AgentError> {
        search::search(obs, budget, &self.config, rng)
            .map(|outcome| outcome.action)
            .map_err(|_| AgentError::NoLegalAction)
    }
}

/// An agent by name with its settings: `random`, `easy`, `heuristic` (also `normal`),
/// `variant` (the heuristic bidding differently: aggression 0.3, bid pressure 0.1,
/// table x0.9), `heuristic:aggression=A,pressure=P,scale=S`, `search`,
/// `search:window=W,sigma=S,opp=O,loss=L` (`loss`: [`SearchConfig::stop_loss`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AgentSpec {
    Random,
    Easy,
    Heuristic {
        aggression: f32,
        bid_pressure: f32,
        table_scale: f32,
    },
    Search(SearchConfig),
}

/// Why an agent spec does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentSpecError {
    pub input: String,
}

impl fmt::Display for AgentSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown agent {:?}: expected random, easy, heuristic[:aggression=A,pressure=P,scale=S] (or normal), variant or search[:window=W,sigma=S,opp=O,loss=L]",
            self.input
        )
    }
}

impl std::error::Error for AgentSpecError {}

impl FromStr for AgentSpec {
    type Err = AgentSpecError;

    fn from_str(s: &str) -> Result<AgentSpec, AgentSpecError> {
        let err = || AgentSpecError {
            input: s.to_owned(),
        };
        let (name, settings) = s.split_once(':').unwrap_or((s, ""));
        let mut pairs = Vec::new();
        for kv in settings.split(',').filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(err)?;
            let v: f32 = v.parse().map_err(|_| err())?;
            pairs.push((k, v));
        }
        let default_heuristic = Params::default();
        let mut spec = match name {
            "random" => AgentSpec::Random,
            "easy" => AgentSpec::Easy,
            "heuristic" | "normal" => AgentSpec::Heuristic {
                aggression: default_heuristic.aggression,
                bid_pressure: default_heuristic.bid_pressure,
                table_scale: 1.0,
            },
            "variant" => AgentSpec::Heuristic {
                aggression: 0.3,
                bid_pressure: 0.1,
                table_scale: 0.9,
            },
            "search" => AgentSpec::Search(SearchConfig::default()),
            _ => return Err(err()),
        };
        for (k, v) in pairs {
            match (&mut spec, k) {
                (AgentSpec::Heuristic { aggression, .. }, "aggression") => *aggression = v,
                (AgentSpec::Heuristic { bid_pressure, .. }, "pressure") => *bid_pressure = v,
                (AgentSpec::Heuristic { table_scale, .. }, "scale") => *table_scale = v,
                (AgentSpec::Search(c), "window") => c.bid_window = v,
                (AgentSpec::Search(c), "sigma") => c.bid_sigma = v,
                (AgentSpec::Search(c), "opp") => c.opponent_weight = v,
                (AgentSpec::Search(c), "loss") => c.stop_loss = v,
                _ => return Err(err()),
            }
        }
        Ok(spec)
    }
}

impl From<AiAgent> for AgentSpec {
    fn from(agent: AiAgent) -> AgentSpec {
        match agent {
            AiAgent::Search => AgentSpec::Search(SearchConfig::default()),
            AiAgent::Heuristic => AgentSpec::Heuristic {
                aggression: Params::default().aggression,
                bid_pressure: Params::default().bid_pressure,
                table_scale: 1.0,
            },
            AiAgent::Random => AgentSpec::Random,
        }
    }
}

impl AgentSpec {
    /// The agent this spec describes.
    pub fn build(&self) -> Box<dyn Agent> {
        match *self {
            AgentSpec::Random => Box::new(RandomAgent),
            AgentSpec::Easy => Box::new(EasyAgent),
            AgentSpec::Heuristic {
                aggression,
                bid_pressure,
                table_scale,
            } => Box::new(HeuristicAgent::variant(
                aggression,
                bid_pressure,
                table_scale,
            )),
            AgentSpec::Search(config) => Box::new(SearchAgent { config }),
        }
    }
}

/// The reply to one decide request computed by `agent`: a decision naming the agent
/// that made it, or an `internal` error when there was nothing to decide. An action
/// outside `obs.legal_actions` (which no agent here returns) is replaced by the
/// fallback's, named as such, so the server never receives an illegal move.
pub fn answer(
    request_id: u64,
    obs: &Observation,
    agent: &dyn Agent,
    fallback: &dyn Agent,
    budget: &Budget,
    rng: &mut ChaCha12Rng,
) -> AiReply {
    let decided = agent
        .decide(obs, budget, rng)
        .map(|action| (action, agent.name()))
        .and_then(|(action, name)| {
            if obs.legal_actions.contains(&action) {
                Ok((action, name))
            } else {
                fallback
                    .decide(obs, budget, rng)
                    .map(|a| (a, fallback.name()))
            }
        });
    match decided {
        Ok((action, name)) => AiReply::Decision {
            request_id,
            action,
            agent: name.to_owned(),
        },
        Err(e) => AiReply::Error {
            request_id,
            code: AiErrorCode::Internal,
            message: e.to_string(),
        },
    }
}
