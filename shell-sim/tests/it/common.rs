//! Helpers: load a scenario from fixtures/scenarios, run it, fail with the seed and
//! the repro command when a checker fired.

use std::path::PathBuf;

use wizard_sim::runs::report::percentile;
use wizard_sim::{Report, Scenario};

pub fn scenario(name: &str) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/scenarios")
        .join(format!("{name}.json"));
    Scenario::load(&path).unwrap()
}

pub fn run(s: Scenario, seed: u64) -> Report {
    wizard_sim::run(s, seed).unwrap()
}

/// Fails with the violations, the seed and the repro command.
pub fn assert_clean(r: &Report, allow: &[&str]) {
    let bad: Vec<&String> = r
        .violations
        .iter()
        .filter(|v| !allow.iter().any(|a| v.contains(a)))
        .collect();
    assert!(
        bad.is_empty(),
        "{} seed {}: {bad:#?}\nreproduce: {}",
        r.scenario,
        r.seed,
        wizard_sim::repro(&r.scenario, r.seed)
    );
}

/// p95 of accepted `create_lobby` latency in ms, and refused count.
pub fn create_figures(r: &Report) -> (f64, usize, usize) {
    let l = r.requests.get("create_lobby").cloned().unwrap_or_default();
    (
        percentile(&l.accepted_us, 95.0) as f64 / 1e3,
        l.accepted_us.len(),
        l.refused_us.len(),
    )
}
