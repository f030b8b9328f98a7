//! The `wizard-server` binary: settings from the environment, logging, OS-entropy seed,
//! the address bound (not listening yet; an address in use ends the start at once
//! unless `BIND_WAIT` says to wait for it), the
//! store opened and restored ([`wizard_server::open_store`]; a standby waits there for
//! its shard), SIGTERM/SIGINT as graceful shutdown, then [`wizard_server::run_opened`],
//! with the AI service embedded in process when `EMBEDDED_AI=1`.

use std::net::TcpListener;
use std::process::ExitCode;

use async_signal::{Signal, Signals};
use futures_lite::StreamExt;
use tracing::{error, info, warn};
use wizard_core::vocabulary::config::{AiServiceConfig, Config};
use wizard_core::vocabulary::rng::Seed;
use wizard_server::embedded;

/// Exit status for a bad setting.
const EXIT_CONFIG: u8 = 2;
/// Exit status for any other start-up failure, and for a store lost while serving
/// (so that a supervisor restarts the process, or a standby takes over).
const EXIT_START: u8 = 1;

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq)]
enum Cli {
    Serve,
    Help,
    Version,
}

const USAGE: &str = "usage: wizard-server [--help] [--version]

Runs the Wizard game server. Every setting is an environment variable (BIND,
STORE, EMBEDDED_AI, MAX_CONNECTIONS, ...): see docs/OPERATIONS.md, \"Settings\".
";

/// Reads the command line: the server takes no arguments besides `--help` and
/// `--version`; anything else is an error (exit 2), not silently ignored.
fn parse_cli(args: impl IntoIterator<Item = std::ffi::OsString>) -> Result<Cli, lexopt::Error> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(args);
    let cli = match parser.next()? {
        None => return Ok(Cli::Serve),
        Some(Short('h') | Long("help")) => Cli::Help,
        Some(Short('V') | Long("version")) => Cli::Version,
        Some(other) => return Err(other.unexpected()),
    };
    match parser.next()? {
        None => Ok(cli),
        Some(other) => Err(other.unexpected()),
    }
}

#[allow(clippy::print_stdout)]
fn main() -> ExitCode {
    match parse_cli(std::env::args_os().skip(1)) {
        Ok(Cli::Serve) => serve(),
        Ok(Cli::Help) => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Ok(Cli::Version) => {
            println!(
                "wizard-server {} ({})",
                wizard_server::metrics::VERSION,
                wizard_server::metrics::COMMIT
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail_early(&format!("{e}\n{USAGE}")),
    }
}

/// Runs the server: its settings, the address, the store, the signals, then serving;
/// returns the exit status.
fn serve() -> ExitCode {
    let Start {
        config,
        embedded_ai,
        seed,
    } = match start() {
        Ok(start) => start,
        Err(status) => return status,
    };
    // The address first, so that one in use is said before any store work; bound, not
    // listening: a standby then waits for its shard's lock, and listens (answers
    // `/health`) only once it owns the shard and restored its games.
    let wait = std::time::Duration::from_micros(config.shell.bind_wait_us);
    let listener = match bind(config.shell.bind, wait) {
        Ok(listener) => listener,
        Err(e) => {
            error!(bind = %config.shell.bind, error = %e, "cannot bind the address BIND names");
            return ExitCode::from(EXIT_START);
        }
    };
    let opened = match wizard_server::open_store(&config, seed) {
        Ok(opened) => opened,
        Err(e) => {
            error!(error = %e, "server failed");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let shutdown = match on_signals() {
        Ok(shutdown) => shutdown,
        Err(status) => return status,
    };
    exit_status(wizard_server::run_opened(
        opened,
        config,
        embedded_ai,
        listener,
        shutdown,
    ))
}

/// What the server starts from: its settings, the embedded AI service's when
/// `EMBEDDED_AI=1`, and the root seed.
struct Start {
    config: Config,
    embedded_ai: Option<AiServiceConfig>,
    seed: Seed,
}

/// Reads the settings from the environment, starts logging, draws the seed and locks
/// the embedded AI service's route; the exit status when one of them fails.
fn start() -> Result<Start, ExitCode> {
    // Variables that are not UTF-8 cannot be ours; skip them rather than panic.
    let env: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let pairs = || env.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    let mut config =
        Config::from_pairs(pairs()).map_err(|e| fail_early(&format!("bad setting {e}")))?;
    let ai_config = AiServiceConfig::from_pairs(pairs())
        .map_err(|e| fail_early(&format!("bad setting {e}")))?;
    init_logging(&config).map_err(|message| fail_early(&message))?;
    let seed = os_seed().map_err(|e| {
        error!(error = %e, "no OS entropy for the seed");
        ExitCode::from(EXIT_START)
    })?;
    let embedded_ai = config.shell.embedded_ai.then_some(ai_config);
    if embedded_ai.is_some()
        && let Err(e) = embedded::lock_ai_route(&mut config)
    {
        error!(error = %e, "cannot start the embedded AI service");
        return Err(ExitCode::from(EXIT_START));
    }
    Ok(Start {
        config,
        embedded_ai,
        seed,
    })
}

/// The graceful shutdown: resolves at the first SIGTERM or SIGINT; the exit status when
/// the handlers cannot be installed.
fn on_signals() -> Result<impl Future<Output = ()> + Send + 'static, ExitCode> {
    let signals = Signals::new([Signal::Term, Signal::Int]).map_err(|e| {
        error!(error = %e, "cannot install signal handlers");
        ExitCode::from(EXIT_START)
    })?;
    Ok(async move {
        let mut signals = signals;
        if let Some(Ok(signal)) = signals.next().await {
            info!(?signal, "Signal received");
        }
    })
}

/// The exit status of a server that ran: a store that cannot be opened is a setting
/// to fix, like a bad variable; any other failure asks for a restart.
fn exit_status(result: Result<(), wizard_server::RunError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ wizard_server::RunError::Store(_)) => {
            error!(error = %e, "server failed");
            ExitCode::from(EXIT_CONFIG)
        }
        Err(e) => {
            error!(error = %e, "server failed");
            ExitCode::from(EXIT_START)
        }
    }
}

/// Reports a start-up error before logging exists: stderr is all there is.
#[allow(clippy::print_stderr)]
fn fail_early(message: &str) -> ExitCode {
    eprintln!("wizard-server: {message}");
    ExitCode::from(EXIT_CONFIG)
}

fn init_logging(config: &Config) -> Result<(), String> {
    wizard_ai::logging::init(&config.shell.log_level, config.shell.log_format)
}

/// The root seed from OS entropy; never logged (it would reveal session tokens).
fn os_seed() -> Result<Seed, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(Seed(bytes))
}

/// How often a server waiting for its address (`BIND_WAIT`) tries again.
const BIND_RETRY: std::time::Duration = std::time::Duration::from_millis(50);

/// Binds `addr`. An address another process holds fails at once (the server says so
/// and exits: a supervisor that restarts it, or an operator, sees why at once), unless
/// `wait` (`BIND_WAIT`) is set: a deploy that starts the new process on the same host
/// before the old one is gone waits for it, saying so at once. The socket does not
/// listen yet: the server listens once its store is open (`wizard_server::run_with`),
/// so that a process waiting for the store's lock (a standby, or a new process during
/// a deploy) refuses connections instead of holding them unanswered in its accept
/// queue, and a proxy in front sends players to the process that serves.
fn bind(addr: std::net::SocketAddr, wait: std::time::Duration) -> std::io::Result<TcpListener> {
    let until = std::time::Instant::now() + wait;
    let mut said = false;
    loop {
        match bind_socket(addr) {
            Err(e)
                if e.kind() == std::io::ErrorKind::AddrInUse
                    && std::time::Instant::now() < until =>
            {
                if !said {
                    warn!(bind = %addr, "Waiting for the address BIND names (another process holds it)");
                    said = true;
                }
                std::thread::sleep(BIND_RETRY);
            }
            result => return result,
        }
    }
}

/// A TCP socket bound to `addr` that does not listen. `SO_REUSEADDR` is set, as std's
/// `TcpListener::bind` sets it.
fn bind_socket(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType, socket_with, sockopt};
    let family = if addr.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let fd = socket_with(family, SocketType::STREAM, SocketFlags::CLOEXEC, None)?;
    sockopt::set_socket_reuseaddr(&fd, true)?;
    rustix::net::bind(&fd, &addr)?;
    Ok(TcpListener::from(fd))
}
