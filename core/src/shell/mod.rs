//! The shell contract: what every shell (the production server, the simulator, a new
//! one) calls besides [`crate::Server`] itself.
//!
//! - [`batch`]: the bounds of one pass of the core loop (inputs per pass, inbox size).
//! - [`executor`]: which task class runs next on a server thread, and for how long.
//! - [`outqueue`]: each connection's bounded queue of outgoing frames.
//! - [`keepalive`]: when to ping a quiet connection and when to give it up.
//! - [`reply_wait`]: how long a shell waits for an in-process AI reply.
//! - [`upgrade`]: the HTTP routing and websocket upgrade policy.
//! - [`ws`]: the websocket frame layer (decoder, encoder, per-frame budget).
//! - [`door`]: which accepted sockets the shell may hold, before any HTTP work.
//! - [`probe`], [`cgroup`]: the load probe's arithmetic and the cgroup parsers.
//! - [`readiness`]: the `/ready` verdict from the server's gauges.

pub mod batch;
pub mod cgroup;
pub mod door;
pub mod executor;
pub mod keepalive;
pub mod outqueue;
pub mod probe;
pub mod readiness;
pub mod reply_wait;
pub mod upgrade;
pub mod ws;
