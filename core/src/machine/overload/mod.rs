//! Overload control sub-machines: load levels, the connection limiter, the AI
//! service's circuit breaker and the retry advice. The load level itself and the
//! probe's sample are vocabulary ([`crate::vocabulary::load`]).
//!
//! Each sub-machine is a plain struct that takes `now` and returns a decision; only the
//! server turns decisions into outputs.

pub mod breaker;
pub mod connections;
pub mod level;
pub mod retry;
