//! The `wizard-sim` command: `run <scenario> [--seed N] [--json]` prints the per-second
//! timeline and the summary of one run; `swarm --seeds N [--from S] [--jobs J]` runs
//! random scenarios (on J threads) and reports coverage. A failing run exits non-zero
//! with its seed and the one-line command that reproduces it.

use std::path::PathBuf;
use std::process::ExitCode;

use wizard_sim::{Scenario, repro, swarm};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn usage() -> ExitCode {
    println!(
        "usage: wizard-sim run <scenario name, file, or swarm:N> [--seed N] [--json] [--print-scenario]"
    );
    println!("       wizard-sim swarm [--seeds N] [--from S] [--jobs J]");
    ExitCode::from(2)
}

fn scenario_path(name: &str) -> PathBuf {
    let direct = PathBuf::from(name);
    if direct.exists() {
        return direct;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/scenarios");
    root.join(format!("{name}.json"))
}

fn flag(args: &[String], name: &str) -> Option<u64> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1)?.parse().ok()
}

/// A seed when none is given: from the clock, printed, so the run can be repeated.
fn fresh_seed() -> u64 {
    #[allow(clippy::disallowed_methods)]
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos());
    (nanos as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("run") => {
            let Some(name) = args.get(1) else {
                return usage();
            };
            let seed = flag(&args, "--seed").unwrap_or_else(fresh_seed);
            let path = scenario_path(name);
            let swarm_seed = name.strip_prefix("swarm:").and_then(|n| n.parse().ok());
            let loaded = match swarm_seed {
                Some(n) => Ok(swarm::scenario(n)),
                None => Scenario::load(&path),
            };
            let scenario = match loaded {
                Ok(s) => s,
                Err(e) => {
                    println!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            let json = args.iter().any(|a| a == "--json");
            if args.iter().any(|a| a == "--print-scenario") {
                let resolved = scenario.clone().resolve(seed);
                match serde_json::to_string_pretty(&resolved) {
                    Ok(text) => println!("{text}"),
                    Err(e) => println!("error: {e}"),
                }
                return ExitCode::SUCCESS;
            }
            if !json {
                println!("seed {seed}");
            }
            let report = match wizard_sim::run(scenario, seed) {
                Ok(r) => r,
                Err(e) => {
                    println!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            if json {
                match serde_json::to_string_pretty(&report) {
                    Ok(text) => println!("{text}"),
                    Err(e) => println!("error: {e}"),
                }
            } else {
                print!("{}", report.render());
            }
            if report.passed() {
                ExitCode::SUCCESS
            } else {
                println!("seed {seed} failed; reproduce with: {}", repro(name, seed));
                ExitCode::FAILURE
            }
        }
        Some("swarm") => {
            let seeds = flag(&args, "--seeds").unwrap_or(100);
            let from = flag(&args, "--from").unwrap_or(1);
            let jobs = flag(&args, "--jobs").unwrap_or(1);
            let result = swarm::run_parallel(from, seeds, usize::try_from(jobs).unwrap_or(1));
            print!("{}", result.render());
            if result.failures.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        _ => usage(),
    }
}
