//! The binary's text logs through a pipe, as `docker logs` reads them: plain text.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// Kills the server when the test ends, however it ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn text_logs_into_a_pipe_carry_no_colour_codes() {
    let mut child = Killed(
        Command::new(env!("CARGO_BIN_EXE_wizard-server"))
            .env_clear()
            .env("BIND", "127.0.0.1:0")
            .env("STORE", "memory")
            .env("EMBEDDED_AI", "0")
            .env("LOG_LEVEL", "info")
            .env("LOG_FORMAT", "text")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("wizard-server starts"),
    );
    let stdout = child.0.stdout.take().expect("piped stdout");
    let mut seen = String::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("a log line");
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("Listening") {
            break;
        }
    }
    assert!(seen.contains("Listening"), "no start-up line: {seen:?}");
    assert!(seen.contains("INFO"), "no level: {seen:?}");
    assert!(
        !seen.contains('\u{1b}'),
        "colour codes in the log: {seen:?}"
    );
}
