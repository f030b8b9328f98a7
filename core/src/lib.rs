//! wizard-core: the pure, deterministic heart of the Wizard server.
//!
//! Nothing here reads a clock, the environment, the network or OS entropy: time and
//! seeds come in as values, and every decision is a function of its inputs. The shells
//! (`wizard-server`, `wizard-sim`) carry the world in and out.
//!
//! Today the crate holds [`game`]: the complete rules engine, per-seat observations and
//! the heuristic fallback player. The server state machine that drives sessions, lobbies
//! and overload control builds on it.

pub mod game;
