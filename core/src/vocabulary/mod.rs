//! The vocabulary: the types and pure functions the machine and the shells share.
//!
//! [`io`] (what the world tells the core and what the core asks of it), [`wire`] (the
//! messages of PROTOCOL.md), [`config`] (every setting), [`game`] (the rules engine,
//! observations and the heuristic player), [`time`], [`rng`], [`names`], [`profile`]
//! (a profile as a store keeps it), [`shard`] (which shard a code or token names),
//! [`pool`] (the shards' shared quick-play pool), [`limiter`] (token buckets and
//! per-address rate limits) and [`stats`] (the counters and gauges the machine keeps and
//! the shells read). Nothing here imports the machine or the shell contract.

pub mod config;
pub mod figure;
pub mod game;
pub mod ids;
pub mod io;
pub mod limiter;
pub mod load;
pub mod names;
pub mod pool;
pub mod profile;
pub mod rng;
pub(crate) mod serde_str;
pub mod shard;
pub mod stats;
pub mod time;
pub mod wire;
