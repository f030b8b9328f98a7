//! wizard-ai: the AI agents and the AI service's admission machine.
//!
//! - [`agent`]: the [`agent::Agent`] trait and the `random`, `heuristic` and `search`
//!   agents, with the decision budget and the per-decision RNG;
//! - [`search`]: determinized Monte Carlo search over sampled hidden hands with
//!   heuristic rollouts of the round (the strong agent);
//! - [`admission`]: the pure, clock-injected machine that bounds workers and queue,
//!   drops expired requests and degrades to the heuristic under load;
//! - [`evaluate`]: duplicate-format tournaments between agents (`wizard-ai evaluate`).
//!
//! The cheap heuristic the service degrades to lives in `wizard_core::vocabulary::game::bot`, where
//! the server uses it as its fallback too. The websocket client (`wizard-ai serve`) and
//! the server's embedded mode build on these modules.

pub mod admission;
pub mod agent;
pub mod evaluate;
pub mod levels;
#[cfg(feature = "service")]
pub mod logging;
pub mod search;
#[cfg(feature = "service")]
pub mod service;
