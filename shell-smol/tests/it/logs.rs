//! The binary's text logs through a pipe, as `docker logs` reads them: plain text.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

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
        super::durable::server_command(&[
            ("BIND", "127.0.0.1:0"),
            ("STORE", "memory"),
            ("LOG_LEVEL", "info"),
            ("LOG_FORMAT", "text"),
        ])
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

/// A game's start and its end each make one line at the default level, with its lobby:
/// an operator can follow a server's games in its log.
#[test]
fn a_games_start_and_end_are_logged() {
    use super::client::{Player, bounded, my_move};
    use super::durable::{Process, TempDir};
    use wizard_core::vocabulary::wire::ClientMessage;

    let dir = TempDir::made();
    let log = dir.0.join("server.log");
    let env = [
        ("LOG_LEVEL", "info"),
        ("AI_MOVE_DELAY", "0"),
        ("TRICK_PAUSE", "0"),
    ];
    let server = Process::start_env("memory", super::proxy::free_port(), &log, &env);
    bounded(120, async {
        let (mut ann, _) = Player::hello(server.addr, None).await;
        ann.create_lobby("Ann").await;
        for seats in 2..=6 {
            ann.add_ai(seats).await;
        }
        let mut view = ann.start_game().await;
        loop {
            let over = view
                .game
                .as_ref()
                .is_some_and(|g| g.observation.ranking.is_some());
            if over {
                break;
            }
            if let Some(action) = my_move(&view) {
                ann.send(ClientMessage::Action { action }).await;
            }
            view = ann.next_state().await;
        }
    });
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let line = |what: &str| {
        text.lines()
            .filter(|l| l.contains(what) && l.contains("INFO") && l.contains("lobby=1"))
            .count()
    };
    assert_eq!(line("Game started"), 1, "{text}");
    assert_eq!(line("Game finished"), 1, "{text}");
}
