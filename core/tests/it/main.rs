//! wizard-core's integration tests: one binary, one module per area.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a failed expectation is a failed test

mod absent;
mod ai_transports;
mod bot;
mod cards;
mod cgroup;
mod config;
mod delta_bytes;
mod deltas;
mod docs_links;
mod door;
mod driver;
mod durable;
mod game_props;
mod golden;
mod history;
mod keepalive;
mod layers;
mod levels;
mod limits;
mod long_functions;
mod matchmaker;
mod names;
mod outqueue;
mod pass;
mod probe;
mod profiles;
mod quick;
mod rating;
mod reply_wait;
mod retry;
mod rules;
mod server_game;
mod server_props;
mod shards;
mod transcripts;
mod upgrade;
mod watch;
mod wings;
mod wire;
mod ws;
mod ws_props;
