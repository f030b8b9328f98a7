//! wizard-server's integration tests: one binary, run against `run_on` on 127.0.0.1 with
//! free ports; every test is bounded in time.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a failed expectation is a failed test

mod absent;
mod ai;
mod ai_embedded;
mod ai_service;
mod attacks;
mod bench;
mod chat_attacks;
mod cli;
mod client;
mod door;
mod durable;
mod frame_attacks;
mod frames;
mod game;
mod head_fuzz;
mod history;
mod latency;
mod limits;
mod logs;
#[cfg(feature = "postgres")]
mod postgres;
mod profile_returns;
#[cfg(feature = "postgres")]
mod profile_shards;
mod profiles;
mod proxy;
mod quick;
#[cfg(feature = "postgres")]
mod quick_shards;
mod routes;
mod shards;
mod statics;
mod store_disk;
mod store_faults;
mod watch;
