//! The simulator's integration tests: the six required scenarios of the overload
//! design (each with its assertions), honest players on a full server (coming back to
//! running games, abandoned lobbies), determinism, and a swarm batch with coverage.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a failed expectation is a failed test

mod ai_faults;
mod attack;
mod calibration;
mod checkers;
mod cli;
mod common;
mod coverage;
mod determinism;
mod door_and_frames;
mod executor;
mod limits;
mod metastability;
mod quick_play;
mod reconnect;
mod recorded;
mod restart;
mod seed_overload;
mod shell_events;
mod stalls;
mod swarm;
