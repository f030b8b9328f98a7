//! The `wizard-sim` command: `run <scenario> [--seed N] [--json]` prints the per-second
//! timeline and the summary of one run; `swarm --seeds N [--from S] [--jobs J]` runs
//! random scenarios (on J threads) and reports coverage. A failing run exits non-zero
//! with its seed and the one-line command that reproduces it. The command line is read
//! with `lexopt`: an unknown flag or a bad value is refused with exit 2, never ignored
//! (a mistyped `--seed` once ran with a random seed).

use std::ffi::OsString;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use wizard_sim::runs::swarm;
use wizard_sim::{Scenario, repro};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str =
    "usage: wizard-sim run <scenario name, file, or swarm:N> [--seed N] [--json] [--print-scenario]
       wizard-sim swarm [--seeds N] [--from S] [--jobs J]
       wizard-sim calibration-doc [--write]
       wizard-sim --help | --version
";

/// Exit status for a command line the simulator cannot run (the user's fault).
const EXIT_USAGE: u8 = 2;

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq)]
enum Cli {
    Run {
        name: String,
        seed: Option<u64>,
        json: bool,
        print_scenario: bool,
    },
    Swarm {
        seeds: u64,
        from: u64,
        jobs: u64,
    },
    /// Prints docs/SIMULATION.md's calibration part from the figures file, or with
    /// `write` rewrites it in place.
    CalibrationDoc {
        write: bool,
    },
    Help,
    Version,
}

/// Reads the command line (without the program name).
fn parse_cli(args: impl IntoIterator<Item = OsString>) -> Result<Cli, lexopt::Error> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(args);
    let command = match parser.next()? {
        Some(Short('h') | Long("help")) => return only(parser, Cli::Help),
        Some(Short('V') | Long("version")) => return only(parser, Cli::Version),
        Some(Value(command)) => command.string()?,
        Some(other) => return Err(other.unexpected()),
        None => return Err("a subcommand is needed (run or swarm)".into()),
    };
    match command.as_str() {
        "run" => {
            let (mut name, mut seed, mut json, mut print_scenario) = (None, None, false, false);
            while let Some(arg) = parser.next()? {
                match arg {
                    Long("seed") => seed = Some(parser.value()?.parse()?),
                    Long("json") => json = true,
                    Long("print-scenario") => print_scenario = true,
                    Short('h') | Long("help") => return Ok(Cli::Help),
                    Value(v) if name.is_none() => name = Some(v.string()?),
                    other => return Err(other.unexpected()),
                }
            }
            let name = name.ok_or("run needs a scenario: a name, a file, or swarm:N")?;
            Ok(Cli::Run {
                name,
                seed,
                json,
                print_scenario,
            })
        }
        "swarm" => {
            let (mut seeds, mut from, mut jobs) = (100, 1, 1);
            while let Some(arg) = parser.next()? {
                match arg {
                    Long("seeds") => seeds = parser.value()?.parse()?,
                    Long("from") => from = parser.value()?.parse()?,
                    Long("jobs") => jobs = parser.value()?.parse()?,
                    Short('h') | Long("help") => return Ok(Cli::Help),
                    other => return Err(other.unexpected()),
                }
            }
            Ok(Cli::Swarm { seeds, from, jobs })
        }
        "calibration-doc" => {
            let mut write = false;
            while let Some(arg) = parser.next()? {
                match arg {
                    Long("write") => write = true,
                    Short('h') | Long("help") => return Ok(Cli::Help),
                    other => return Err(other.unexpected()),
                }
            }
            Ok(Cli::CalibrationDoc { write })
        }
        "help" => only(parser, Cli::Help),
        other => Err(format!("unknown subcommand {other:?}").into()),
    }
}

/// `cli`, when nothing follows it on the command line.
fn only(mut parser: lexopt::Parser, cli: Cli) -> Result<Cli, lexopt::Error> {
    match parser.next()? {
        None => Ok(cli),
        Some(other) => Err(other.unexpected()),
    }
}

fn scenario_path(name: &str) -> PathBuf {
    let direct = PathBuf::from(name);
    if direct.exists() {
        return direct;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/scenarios");
    root.join(format!("{name}.json"))
}

/// A seed when none is given: from the clock, printed, so the run can be repeated.
fn fresh_seed() -> u64 {
    #[allow(clippy::disallowed_methods)]
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos());
    (nanos as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16
}

/// A message on stderr and exit status 2.
fn refuse(message: &str) -> ExitCode {
    let _ = write!(std::io::stderr(), "wizard-sim: {message}\n{USAGE}");
    ExitCode::from(EXIT_USAGE)
}

/// The bug `WIZARD_SIM_PLANT` names, planted in the core for every run of the process
/// (`planted-bugs.sh`). Only a build with the test-only feature `planted-bugs` has
/// them; elsewhere the variable is refused rather than ignored.
fn plant_from_env() -> Result<(), String> {
    let Ok(name) = std::env::var("WIZARD_SIM_PLANT") else {
        return Ok(());
    };
    #[cfg(feature = "planted-bugs")]
    {
        use wizard_core::planted::{Bug, plant};
        let bug = Bug::from_name(&name).ok_or_else(|| {
            let names: Vec<&str> = Bug::ALL.iter().map(|b| b.name()).collect();
            format!("WIZARD_SIM_PLANT={name}: no such bug (one of {names:?})")
        })?;
        plant(Some(bug));
        let _ = writeln!(std::io::stderr(), "wizard-sim: planted bug {name}");
        Ok(())
    }
    #[cfg(not(feature = "planted-bugs"))]
    Err(format!(
        "WIZARD_SIM_PLANT={name}: this build has no planted bugs (build with --features planted-bugs)"
    ))
}

fn main() -> ExitCode {
    if let Err(e) = plant_from_env() {
        return refuse(&e);
    }
    match parse_cli(std::env::args_os().skip(1)) {
        Ok(Cli::Help) => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Ok(Cli::Version) => {
            println!(
                "wizard-sim {} ({})",
                env!("CARGO_PKG_VERSION"),
                wizard_sim::COMMIT
            );
            ExitCode::SUCCESS
        }
        Ok(Cli::Run {
            name,
            seed,
            json,
            print_scenario,
        }) => run(&name, seed.unwrap_or_else(fresh_seed), json, print_scenario),
        Ok(Cli::Swarm { seeds, from, jobs }) => {
            let result = swarm::run_parallel(from, seeds, usize::try_from(jobs).unwrap_or(1));
            print!("{}", result.render());
            if result.failures.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Ok(Cli::CalibrationDoc { write }) => calibration_doc(write),
        Err(e) => refuse(&e.to_string()),
    }
}

/// docs/SIMULATION.md's calibration part, printed or written in place.
fn calibration_doc(write: bool) -> ExitCode {
    let c = wizard_sim::model::calibration::calibration();
    if !write {
        print!("{}", c.markdown());
        return ExitCode::SUCCESS;
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/SIMULATION.md");
    let doc = match std::fs::read_to_string(&path) {
        Ok(d) => d,
        Err(e) => return refuse(&format!("{}: {e}", path.display())),
    };
    let Some(new) = c.rewrite_doc(&doc) else {
        return refuse(&format!(
            "{}: the calibration markers are missing",
            path.display()
        ));
    };
    if let Err(e) = std::fs::write(&path, new) {
        return refuse(&format!("{}: {e}", path.display()));
    }
    println!("rewrote the calibration part of {}", path.display());
    ExitCode::SUCCESS
}

fn run(name: &str, seed: u64, json: bool, print_scenario: bool) -> ExitCode {
    let swarm_seed = name.strip_prefix("swarm:").and_then(|n| n.parse().ok());
    let loaded = match swarm_seed {
        Some(n) => Ok(swarm::scenario(n)),
        None => Scenario::load(&scenario_path(name)),
    };
    let scenario = match loaded {
        Ok(s) => s,
        Err(e) => return refuse(&format!("scenario {name:?}: {e}")),
    };
    if print_scenario {
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
        Err(e) => return refuse(&format!("scenario {name:?}: {e}")),
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
