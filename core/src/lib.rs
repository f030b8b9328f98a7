//! wizard-core: the pure, deterministic heart of the Wizard server.
//!
//! Nothing here reads a clock, the environment, the network or OS entropy: time and
//! seeds come in as values, and every decision is a function of its inputs. The shells
//! (`wizard-server`, `wizard-sim`) carry the world in and out.
//!
//! - [`game`]: the complete rules engine, per-seat observations and the heuristic
//!   fallback player.
//! - [`overload`]: the sub-machines of overload control (rate limiters, connection
//!   limiter, load levels, circuit breaker) and the pure cgroup parsers.
//! - [`config`]: every setting of PROTOCOL.md section 5, parsed from (name, value) pairs.
//! - [`wire`]: the messages of PROTOCOL.md as serde types.
//! - [`time`]: the injected clock type.

pub mod config;
pub mod game;
pub mod overload;
pub mod time;
pub mod wire;

pub use time::Time;
