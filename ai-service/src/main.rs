//! The `wizard-ai` binary: one subcommand per job. `serve` runs the AI service (the
//! websocket client of the server's `/internal/ai`, settings from the environment);
//! `evaluate` runs a duplicate-format tournament between agents. The command line is
//! read with `lexopt`: an unknown flag or a bad value is refused with exit 2.

use std::fmt;
use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use wizard_ai::agent::AgentSpecError;
use wizard_ai::evaluate::{self, EvalConfig, EvalError};
use wizard_ai::levels;
use wizard_ai::service::{self, ServiceOptions};
use wizard_core::vocabulary::config::AiServiceConfig;
use wizard_core::vocabulary::game::{BidRestriction, Options};

const USAGE: &str = "usage:
  wizard-ai serve
    connects to AI_SERVER_URL with AI_SHARED_SECRET and answers decide requests with
    AI_WORKERS threads (AI_AGENT, AI_MAX_QUEUE, AI_DEGRADE_QUEUE, LOG_LEVEL, LOG_FORMAT)
  wizard-ai evaluate [options]
    --players LIST      player counts, e.g. 4 or 3,4,5,6 (default 4)
    --deal-sets N       deal sets per player count; each is played once per seat (default 100)
    --candidate AGENT   the agent measured (default search)
    --reference AGENT   an agent for the other seats; repeat to cycle several (default heuristic)
    --time-ms MS        wall-clock budget per decision
    --iterations N      iteration budget per decision (search: sampled worlds)
    --rules PRESET      default | house | canadian | hidden (default default)
    --seed N            seed of the deal sets (default 1)
    --json              print the report as JSON
  wizard-ai rate-levels [--games N] [--seed N] [--json]
    rates the AI levels easy, normal and strong by self-play with the players' rating
    model (one of each level per 3-seat game; default 3000 games, seed 1)
  wizard-ai --help | --version
  agents: random, easy, heuristic[:aggression=A,pressure=P,scale=S] (or normal), variant, search[:window=W,sigma=S,opp=O]";

/// A command line the binary cannot run (the user's fault: exit 2), or an evaluation
/// that failed (exit 1).
#[derive(Debug)]
enum CliError {
    Usage(String),
    Agent(AgentSpecError),
    Eval(EvalError),
    Json(serde_json::Error),
}

impl CliError {
    fn exit_code(&self) -> ExitCode {
        match self {
            CliError::Usage(_)
            | CliError::Agent(_)
            | CliError::Eval(EvalError::Setup(_) | EvalError::NoReferences) => {
                ExitCode::from(EXIT_USAGE)
            }
            CliError::Eval(EvalError::Agent { .. }) | CliError::Json(_) => ExitCode::FAILURE,
        }
    }
}

impl From<lexopt::Error> for CliError {
    fn from(e: lexopt::Error) -> CliError {
        CliError::Usage(e.to_string())
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) => write!(f, "{m}\n{USAGE}"),
            CliError::Agent(e) => e.fmt(f),
            CliError::Eval(e) => e.fmt(f),
            CliError::Json(e) => e.fmt(f),
        }
    }
}

/// Exit status for a command line the binary cannot run.
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let result = run(lexopt::Parser::from_env());
    match result {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "wizard-ai: {e}");
            e.exit_code()
        }
    }
}

/// Reads the subcommand and runs it. Settings of `serve` are environment variables,
/// so it takes no flags.
fn run(mut parser: lexopt::Parser) -> Result<ExitCode, CliError> {
    use lexopt::prelude::*;
    let command = match parser.next()? {
        Some(Short('h') | Long("help")) => {
            nothing_more(&mut parser)?;
            println!("{USAGE}");
            return Ok(ExitCode::SUCCESS);
        }
        Some(Short('V') | Long("version")) => {
            nothing_more(&mut parser)?;
            println!("wizard-ai {}", env!("CARGO_PKG_VERSION"));
            return Ok(ExitCode::SUCCESS);
        }
        Some(Value(command)) => command.string()?,
        Some(other) => return Err(other.unexpected().into()),
        None => return Err(CliError::Usage("a subcommand is needed".to_owned())),
    };
    match command.as_str() {
        "serve" => {
            nothing_more(&mut parser)?;
            Ok(run_serve())
        }
        "evaluate" => {
            let (config, json) = evaluate_args(&mut parser)?;
            run_evaluate(&config, json)?;
            Ok(ExitCode::SUCCESS)
        }
        "rate-levels" => {
            run_rate_levels(&mut parser)?;
            Ok(ExitCode::SUCCESS)
        }
        "help" => {
            nothing_more(&mut parser)?;
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        other => Err(CliError::Usage(format!("unknown subcommand {other:?}"))),
    }
}

/// `rate-levels`: plays the games, printing progress to stderr and the outcome to stdout.
fn run_rate_levels(parser: &mut lexopt::Parser) -> Result<(), CliError> {
    use lexopt::prelude::*;
    let (mut games, mut seed, mut json) = (3000u32, 1u64, false);
    while let Some(arg) = parser.next()? {
        match arg {
            Long("json") => json = true,
            Long("games") => games = number(&parser.value()?.string()?, "--games")?,
            Long("seed") => seed = number(&parser.value()?.string()?, "--seed")?,
            other => return Err(other.unexpected().into()),
        }
    }
    let outcome = levels::rate_levels(games, seed, |r| {
        let _ = write!(std::io::stderr(), "{}", levels::render_text(r));
    })
    .map_err(|e| CliError::Usage(e.to_string()))?;
    if json {
        println!("{}", serde_json::to_string(&outcome).unwrap_or_default());
    } else {
        print!("{}", levels::render_text(&outcome));
    }
    Ok(())
}

/// Refuses anything left on the command line.
fn nothing_more(parser: &mut lexopt::Parser) -> Result<(), CliError> {
    match parser.next()? {
        None => Ok(()),
        Some(other) => Err(other.unexpected().into()),
    }
}

/// Exit status for a bad setting.
const EXIT_CONFIG: u8 = 2;

/// Runs the AI service until the process is stopped. It holds no state worth saving:
/// the server treats a lost connection as failed requests and plays the fallback.
fn run_serve() -> ExitCode {
    let env: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let config =
        match AiServiceConfig::from_pairs(env.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
            Ok(config) => config,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "wizard-ai: bad setting {e}");
                return ExitCode::from(EXIT_CONFIG);
            }
        };
    if let Err(message) = init_logging(&config) {
        let _ = writeln!(std::io::stderr(), "wizard-ai: {message}");
        return ExitCode::from(EXIT_CONFIG);
    }
    let mut seed = [0u8; 8];
    if let Err(e) = getrandom::fill(&mut seed) {
        let _ = writeln!(std::io::stderr(), "wizard-ai: no OS entropy: {e}");
        return ExitCode::FAILURE;
    }
    tracing::info!(
        url = %config.server_url,
        workers = config.workers,
        agent = config.agent.name(),
        "Starting the AI service"
    );
    let options = ServiceOptions {
        worker_nice: 0,
        seed: u64::from_le_bytes(seed),
    };
    smol::block_on(service::run(config, options, std::future::pending::<()>()));
    ExitCode::SUCCESS
}

fn init_logging(config: &AiServiceConfig) -> Result<(), String> {
    wizard_ai::logging::init(&config.log_level, config.log_format)
}

fn number<T: std::str::FromStr>(text: &str, name: &str) -> Result<T, CliError> {
    text.parse()
        .map_err(|_| CliError::Usage(format!("{name}: {text:?} is not a valid number")))
}

fn rules(preset: &str) -> Result<Options, CliError> {
    let mut o = Options::default();
    match preset {
        "default" => {}
        "house" => o.bid_restriction = BidRestriction::House,
        "canadian" => o.bid_restriction = BidRestriction::Canadian,
        "hidden" => o.hidden_bids = true,
        _ => return Err(CliError::Usage(format!("unknown rules preset {preset:?}"))),
    }
    Ok(o)
}

/// The options of `evaluate`, and whether to print JSON.
fn evaluate_args(parser: &mut lexopt::Parser) -> Result<(EvalConfig, bool), CliError> {
    use lexopt::prelude::*;
    let mut config = EvalConfig {
        players: vec![4],
        options: Options::default(),
        rules: "default".to_owned(),
        deal_sets: 100,
        seed: 1,
        candidate: "search".parse().map_err(CliError::Agent)?,
        candidate_name: "search".to_owned(),
        references: Vec::new(),
        reference_names: Vec::new(),
        time_per_decision: None,
        iterations_max: None,
    };
    let mut json = false;
    while let Some(arg) = parser.next()? {
        let flag = match arg {
            Long("json") => {
                json = true;
                continue;
            }
            Long(flag) => format!("--{flag}"),
            other => return Err(other.unexpected().into()),
        };
        let flag = flag.as_str();
        let known = [
            "--players",
            "--deal-sets",
            "--candidate",
            "--reference",
            "--time-ms",
            "--iterations",
            "--rules",
            "--seed",
        ];
        if !known.contains(&flag) {
            return Err(CliError::Usage(format!("unknown option {flag:?}")));
        }
        let v = parser.value()?.string()?;
        let v = v.as_str();
        match flag {
            "--players" => {
                config.players = v
                    .split(',')
                    .map(|p| number::<u8>(p, flag))
                    .collect::<Result<_, _>>()?;
            }
            "--deal-sets" => config.deal_sets = number(v, flag)?,
            "--candidate" => {
                config.candidate = v.parse().map_err(CliError::Agent)?;
                v.clone_into(&mut config.candidate_name);
            }
            "--reference" => {
                config.references.push(v.parse().map_err(CliError::Agent)?);
                config.reference_names.push(v.to_owned());
            }
            "--time-ms" => {
                let ms: f64 = number(v, flag)?;
                if !(ms.is_finite() && ms > 0.0) {
                    return Err(CliError::Usage(format!("{flag} must be positive")));
                }
                config.time_per_decision = Some(Duration::from_secs_f64(ms / 1000.0));
            }
            "--iterations" => config.iterations_max = Some(number(v, flag)?),
            "--rules" => {
                config.options = rules(v)?;
                v.clone_into(&mut config.rules);
            }
            _ => config.seed = number(v, flag)?,
        }
    }
    if config.references.is_empty() {
        config
            .references
            .push("heuristic".parse().map_err(CliError::Agent)?);
        config.reference_names.push("heuristic".to_owned());
    }
    Ok((config, json))
}

fn run_evaluate(config: &EvalConfig, json: bool) -> Result<(), CliError> {
    let report = evaluate::evaluate(config, |line| {
        let _ = writeln!(std::io::stderr(), "{line}");
    })
    .map_err(CliError::Eval)?;
    if json {
        let text = serde_json::to_string_pretty(&report).map_err(CliError::Json)?;
        println!("{text}");
    } else {
        print!("{}", evaluate::render_text(&report));
    }
    Ok(())
}
