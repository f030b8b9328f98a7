//! wizard-sim: the deterministic discrete-event simulator that drives the same
//! `wizard_core::Server` the production shell drives, with the world around it
//! simulated: a server thread with a cost model and a CPU quota, the load probe,
//! bounded queues, network latency, players, abusers and an AI service with faults.
//! docs/SIMULATION.md describes the model, the scenario format and the report.

pub mod actors;
pub mod checks;
pub mod host;
pub mod model;
pub mod runs;

pub use runs::report::Report;
pub use runs::scenario::Scenario;

/// Runs `scenario` with `seed` (options left open are drawn from the seed).
pub fn run(scenario: Scenario, seed: u64) -> Result<Report, runs::scenario::ScenarioError> {
    let resolved = scenario.resolve(seed);
    Ok(runs::driver::Sim::new(resolved, seed)?.run())
}

/// The commit this simulator was built from (`git rev-parse --short=12 HEAD` at build
/// time; `unknown` outside a checkout).
pub const COMMIT: &str = env!("WIZARD_SIM_COMMIT");

/// The one-line command that reproduces a run: check out the commit, run the seed.
pub fn repro(scenario: &str, seed: u64) -> String {
    format!(
        "git checkout {COMMIT} && cargo run --release -p wizard-sim -- run {scenario} --seed {seed}"
    )
}
