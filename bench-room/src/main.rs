//! `wizard-bench-room`: the bare smol + async-tungstenite room (see the library's
//! documentation). Settings come from the environment: `BIND`, `ROOM_MAX_CONNECTIONS`,
//! `ROOM_MAX_FRAME_BYTES`, `ROOM_QUEUE_FRAMES`; its only flags are `--help` and
//! `--version`. It runs until killed.

use std::io::Write as _;
use std::process::ExitCode;

const USAGE: &str = "usage: [BIND=127.0.0.1:8000] [ROOM_MAX_CONNECTIONS=N] \
[ROOM_MAX_FRAME_BYTES=N] [ROOM_QUEUE_FRAMES=N] wizard-bench-room\n       \
wizard-bench-room --help | --version\n";

fn main() -> ExitCode {
    if let Some(exit) = flags() {
        return exit;
    }
    let mut stderr = std::io::stderr();
    let env: Vec<(String, String)> = std::env::vars().collect();
    let settings = match wizard_bench_room::Settings::from_pairs(
        env.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    ) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(stderr, "wizard-bench-room: {e}");
            return ExitCode::from(2);
        }
    };
    let script = match wizard_bench_room::script::record() {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(stderr, "wizard-bench-room: {e}");
            return ExitCode::FAILURE;
        }
    };
    let listener = match wizard_bench_room::bind(&settings) {
        Ok(l) => l,
        Err(e) => {
            let _ = writeln!(
                stderr,
                "wizard-bench-room: cannot listen on {}: {e}",
                settings.bind
            );
            return ExitCode::FAILURE;
        }
    };
    let frames: usize = script
        .steps
        .iter()
        .flat_map(|s| &s.frames)
        .map(Vec::len)
        .sum();
    let bytes: usize = script
        .steps
        .iter()
        .flat_map(|s| &s.frames)
        .flatten()
        .map(|f| f.len())
        .sum();
    println!(
        "wizard-bench-room listening on {} ({} moves a game, {} bytes per move frame on average)",
        settings.bind,
        script.steps.len(),
        bytes / frames.max(1)
    );
    wizard_bench_room::serve(listener, settings, script);
    ExitCode::SUCCESS
}

/// The command line: no flags but `--help` and `--version`, read with lexopt as the
/// other binaries do; the exit status when the program should stop there.
fn flags() -> Option<ExitCode> {
    let mut stderr = std::io::stderr();
    let mut parser = lexopt::Parser::from_env();
    match parser.next() {
        Ok(None) => None,
        Ok(Some(lexopt::Arg::Short('h') | lexopt::Arg::Long("help"))) => {
            print!("{USAGE}");
            Some(ExitCode::SUCCESS)
        }
        Ok(Some(lexopt::Arg::Short('V') | lexopt::Arg::Long("version"))) => {
            println!("wizard-bench-room {}", env!("CARGO_PKG_VERSION"));
            Some(ExitCode::SUCCESS)
        }
        Ok(Some(other)) => {
            let _ = write!(stderr, "wizard-bench-room: {}\n{USAGE}", other.unexpected());
            Some(ExitCode::from(2))
        }
        Err(e) => {
            let _ = write!(stderr, "wizard-bench-room: {e}\n{USAGE}");
            Some(ExitCode::from(2))
        }
    }
}
