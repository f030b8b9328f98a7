//! wizard-core: the pure, deterministic heart of the Wizard server.
//!
//! Nothing here reads a clock, the environment, the network or OS entropy: time and
//! seeds come in as values, and every decision is a function of its inputs. The shells
//! (`wizard-server`, `wizard-sim`) carry the world in and out.
//!
//! # The drive contract
//!
//! Everything a shell calls, in one place (the shell wing, [`shell`], holds the
//! rules a shell applies around these calls):
//!
//! ```text
//! Server::new(config: Config, seed: Seed, now: Time) -> Server
//! server.handle(now: Time, input: Input, out: &mut Vec<Output>)   // appends all consequences
//! server.poll_timeout() -> Option<(Time, WakeReason)>             // next deadline and why
//! // a durable shell: records in and out
//! server.keep_records()                  server.take_records() -> Vec<Record>
//! Server::restore(config, seed, now, records) -> Result<Server, RestoreError>
//! server.set_aside()                     // the games a restore could not replay
//! server.durable_views()                // what each seat saw, as a restore must give back
//! server.set_wall_clock(epoch_ms)        // the dates history records carry
//! // a shard that keeps the shared quick-play pool
//! server.share_quick_play()              server.take_pool_changes() -> Vec<PoolChange>
//! // the getters a shell reads after a pass
//! server.health()  server.gauges()  server.counters()  server.level()
//! server.accepting_games()  server.is_finished()  server.config()
//! server.watch_profiles()  server.take_profile_changes()  // the profile pages' cache
//! server.leaderboard_json()  server.profile_json(id)
//! // one pass of the loop (shell::pass)
//! Pass::begin(now) -> Pass    pass.drain(shell, next, handle)    pass.timeout(deadline)
//! pass::next_wake(server.poll_timeout(), &reply_waits, now) -> Option<Time>
//! ```
//!
//! (The exact signatures are on [`Server`] and [`shell::pass`]; the core's tests also
//! call the checks `check_absent`, `check_audiences` and `check_quick_play`.)
//!
//! - [`Time`] is microseconds since the server's start. `now` never goes backwards (the
//!   core clamps it, and debug builds assert). A [`vocabulary::io::Input::Timeout`] may come early,
//!   late or twice: every deadline is re-checked when it fires.
//! - [`vocabulary::io::Input`] is what the world reports: a websocket opened (after the shell applied
//!   [`shell::upgrade`]'s policy), a decoded player message or an undecodable frame, a
//!   forbidden frame, an AI service message, a connection closed, a load sample, a
//!   timeout, shutdown.
//! - [`vocabulary::io::Output`] is what the core asks for: send a text frame, hand a decide request
//!   to an in-process AI service, close a connection with a code, or a [`vocabulary::io::Note`] for
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
//! # Modules: three wings
//!
//! - [`machine`]: the state machines, driven only through [`Server`]:
//!   [`machine::server`] (the top-level machine and its parts), [`machine::session`],
//!   [`machine::lobby`], [`machine::turns`], [`machine::matchmaker`],
//!   [`machine::ai_bridge`], [`machine::audience`], [`machine::profiles`],
//!   [`machine::rating`], [`machine::name_holds`], [`machine::removed`], [`machine::records`],
//!   [`machine::timers`], [`machine::overload`].
//! - [`vocabulary`]: the words the machine and the shells share, importing neither:
//!   [`vocabulary::ids`], [`vocabulary::time`], [`vocabulary::rng`],
//!   [`vocabulary::names`], [`vocabulary::shard`], [`vocabulary::game`] (the rules
//!   engine, observations, the fallback player), [`vocabulary::wire`] (the messages of
//!   PROTOCOL.md), [`vocabulary::config`] (every setting), [`vocabulary::io`] (inputs and
//!   outputs), [`vocabulary::limiter`], [`vocabulary::load`], [`vocabulary::stats`],
//!   [`vocabulary::figure`], [`vocabulary::pool`], [`vocabulary::profile`] (profiles
//!   as a store keeps them), and `vocabulary::serde_str` (the crate's own serde
//!   visitor for values read from a JSON string).
//! - [`shell`]: the contract every shell applies, never importing the machine:
//!   [`shell::pass`], [`shell::executor`], [`shell::outqueue`], [`shell::keepalive`],
//!   [`shell::reply_wait`], [`shell::upgrade`], [`shell::ws`], [`shell::door`],
//!   [`shell::probe`], [`shell::cgroup`], [`shell::readiness`].
//!
//! `core/tests/it/layers.rs` holds the wings' order: vocabulary imports neither wing,
//! the shell wing does not import the machine.
//! `core/tests/it/wings.rs` holds this list to the folders, and the drive contract above
//! to the methods of [`Server`] the shells call.

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
