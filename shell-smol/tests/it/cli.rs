//! The binary's command line: `--help` and `--version` print and exit, anything else
//! is refused with exit 2 instead of starting a server that ignores it.

use std::process::{Command, Stdio};

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_wizard-server"))
        .args(args)
        .env_clear()
        // Were the flag ignored, the server would start here and the test time out.
        .env("BIND", "127.0.0.1:0")
        .env("STORE", "memory")
        .env("EMBEDDED_AI", "0")
        .stdin(Stdio::null())
        .output()
        .expect("wizard-server runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Starts the server with `env` (and `STORE=memory`, `EMBEDDED_AI=0`), its output
/// piped, and waits `secs` at most for it to exit: its output, or `None` when it still
/// runs by then (it is killed).
fn exit_within(env: &[(&str, &str)], secs: u64) -> Option<std::process::Output> {
    let child = super::durable::server_command(&[("STORE", "memory")])
        .envs(env.iter().copied())
        .spawn()
        .expect("wizard-server runs");
    let pid = child.id();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(child.wait_with_output());
    });
    let Ok(out) = done_rx.recv_timeout(std::time::Duration::from_secs(secs)) else {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        return None;
    };
    Some(out.expect("its output"))
}

#[test]
fn help_and_version_print_and_exit_and_unknown_arguments_are_refused() {
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, Some(0));
    assert!(out.starts_with("usage: wizard-server"), "{out}");
    let (code, out, _) = run(&["--version"]);
    assert_eq!(code, Some(0));
    let want = format!("wizard-server {} (", env!("CARGO_PKG_VERSION"));
    assert!(out.starts_with(&want), "{out}");
    for args in [&["--bogus"][..], &["serve"], &["--version", "extra"]] {
        let (code, _, err) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains("usage: wizard-server"), "{args:?}: {err}");
    }
}

/// The container health check has the same two flags, and refuses anything else
/// before it asks the server (exit 2, not the 1 of an unhealthy server).
#[test]
fn the_health_check_has_help_and_version_and_refuses_other_arguments() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_wizard-healthcheck"))
            .args(args)
            .env_clear()
            .env("BIND", "127.0.0.1:1")
            .stdin(Stdio::null())
            .output()
            .expect("wizard-healthcheck runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, Some(0));
    assert!(out.starts_with("usage: wizard-healthcheck"), "{out}");
    let (code, out, _) = run(&["--version"]);
    assert_eq!(code, Some(0));
    let want = format!("wizard-healthcheck {} (", env!("CARGO_PKG_VERSION"));
    assert!(out.starts_with(&want), "{out}");
    for args in [&["--bogus"][..], &["check"], &["--help", "extra"]] {
        let (code, _, err) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains("usage: wizard-healthcheck"), "{args:?}: {err}");
    }
    // Without arguments it checks: nobody listens on port 1.
    let (code, out, _) = run(&[]);
    assert_eq!(code, Some(1), "{out}");
}

/// A bad `SHARD_ID` stops start-up with exit 2 and a message naming it, like every bad
/// setting; were it accepted, the server would start and serve, and the test fails after
/// 60 s (the server is killed then).
#[test]
fn a_bad_shard_id_stops_start_up() {
    for value in ["O", "a", "AB", "1"] {
        let env = [("BIND", "127.0.0.1:0"), ("SHARD_ID", value)];
        let Some(out) = exit_within(&env, 60) else {
            panic!("SHARD_ID={value}: the server started instead of refusing the setting");
        };
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value}: {err}");
        assert!(err.contains("SHARD_ID"), "{value}: {err}");
    }
}

/// An address another process holds stops start-up at once with exit 1 and a line
/// naming `BIND` (the server used to wait 30 s for it first); the bound is far below
/// that wait.
#[test]
fn an_address_in_use_stops_start_up_at_once() {
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = holder.local_addr().unwrap();
    let started = std::time::Instant::now();
    let Some(out) = exit_within(&[("BIND", &addr.to_string())], 10) else {
        panic!("the server did not stop within 10 s on an address in use");
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("BIND"))
        .unwrap_or_else(|| panic!("no line names BIND: {text}"));
    assert!(line.contains(&addr.to_string()), "{line}");
    println!("stopped after {:?}: {line}", started.elapsed());
    drop(holder);
}
