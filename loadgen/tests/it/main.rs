//! wizard-bench's integration tests: one binary, one module per area.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a failed expectation is a failed test

mod cli;
mod think;
