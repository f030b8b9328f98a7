//! wizard-sim: the deterministic discrete-event simulator that drives the same
//! `wizard_core::Server` the production shell drives, with the world around it
//! simulated: a server thread with a cost model and a CPU quota, the load probe,
//! bounded queues, network latency, players, abusers and an AI service with faults.
//! docs/SIMULATION.md describes the model, the scenario format and the report.

pub mod ai;
pub mod attack;
pub mod check;
pub mod client;
pub mod client_recv;
pub mod conn_map;
pub mod cost;
pub mod cpu;
pub mod dist;
pub mod door;
pub mod executor;
pub mod expiry;
pub mod feed;
pub mod frames;
pub mod game_log;
pub mod games;
pub mod host;
pub mod leak;
pub mod lifecycle;
pub mod net;
pub mod oracle;
pub mod outbox;
pub mod phase;
pub mod play;
pub mod probe;
pub mod progress;
pub mod queue;
pub mod report;
pub mod scenario;
pub mod seat_view;
pub mod sim;
pub mod swarm;
pub mod world;
pub mod writer;

pub use report::Report;
pub use scenario::Scenario;

/// Runs `scenario` with `seed` (options left open are drawn from the seed).
pub fn run(scenario: Scenario, seed: u64) -> Result<Report, scenario::ScenarioError> {
    let resolved = scenario.resolve(seed);
    Ok(sim::Sim::new(resolved, seed)?.run())
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
