//! wizard-ai's integration tests: one binary, one module per area.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a failed expectation is a failed test

mod admission;
mod agents;
mod cli;
mod evaluate;
mod levels;
mod local;
mod search;
