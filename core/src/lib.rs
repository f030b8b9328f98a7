//! wizard-core: the pure, deterministic heart of the Wizard server.
//!
//! Nothing here reads a clock, the environment, the network or OS entropy: time and
//! seeds come in as values, and every decision is a function of its inputs. The shells
//! (`wizard-server`, `wizard-sim`) carry the world in and out.
//!
//! # The drive contract
//!
//! ```text
//! Server::new(config: Config, seed: Seed, now: Time) -> Server
//! server.handle(now: Time, input: Input, out: &mut Vec<Output>)   // appends all consequences
//! server.poll_timeout() -> Option<(Time, WakeReason)>             // next deadline and why
//! ```
//!
//! - [`Time`] is microseconds since the server's start. `now` never goes backwards (the
//!   core clamps it, and debug builds assert). A [`io::Input::Timeout`] may come early,
//!   late or twice: every deadline is re-checked when it fires.
//! - [`io::Input`] is what the world reports: a websocket opened (after the shell applied
//!   [`upgrade`]'s policy), a decoded player message or an undecodable frame, a
//!   forbidden frame, an AI service message, a connection closed, a load sample, a
//!   timeout, shutdown.
//! - [`io::Output`] is what the core asks for: send a text frame, hand a decide request
//!   to an in-process AI service, close a connection with a code, or a [`io::Note`] for
//!   logs and metrics.
//! - `handle` cannot fail: client misbehaviour becomes an `error` message or a close.
//!
//! A shell's loop, in outline:
//!
//! ```
//! use wizard_core::vocabulary::{config::Config, io::{Input, Output}, rng::Seed};
//! use wizard_core::{Server, Time};
//!
//! let mut server = Server::new(Config::default(), Seed::from_u64(7), Time::ZERO);
//! let mut out = Vec::new();
//! let mut now = Time::ZERO;
//! // Each turn of the loop: wait for an input or the next deadline, then handle it.
//! for _ in 0..3 {
//!     let input = match server.poll_timeout() {
//!         Some((deadline, _why)) => { now = now.max(deadline); Input::Timeout }
//!         None => break,
//!     };
//!     server.handle(now, input, &mut out);
//!     for output in out.drain(..) {
//!         match output {
//!             Output::Send { .. } => { /* queue the frame on its connection */ }
//!             Output::AiRequest { .. } => { /* only to an in-process AI service */ }
//!             Output::Close { .. } => { /* close after queued frames */ }
//!             Output::Note(_) => { /* log, count */ }
//!         }
//!     }
//! }
//! ```
//!
//! # Modules
//!
//! - [`server`]: the top-level machine; [`session`], [`lobby`], [`turns`],
//!   [`ai_bridge`] are its sub-machines, and [`overload`] holds the rate limiters,
//!   connection limiter, load levels, circuit breaker and cgroup parsers.
//! - [`game`]: the rules engine, observations and the heuristic fallback player.
//! - [`wire`]: the messages of PROTOCOL.md; [`config`]: every setting; [`upgrade`]: the
//!   HTTP routing and upgrade policy; [`shard`]: which shard a code or token names;
//!   [`time`], [`rng`], [`timers`], [`stats`].
//! - [`ws`]: the websocket frame layer (decoder, encoder, per-frame budget).

pub mod machine;
#[cfg(feature = "planted-bugs")]
pub mod planted;
pub mod shell;
pub mod vocabulary;
#[cfg(all(feature = "planted-bugs", not(debug_assertions)))]
compile_error!("the planted-bugs feature is for test builds only, never a release build");

pub use machine::server::Server;

/// This build's version (the workspace's), as `/health` and `--version` show it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub use vocabulary::time::Time;
