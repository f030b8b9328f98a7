//! The `wizard-sim` command line, through the real binary: `--help` and `--version`
//! print and exit 0; an unknown flag, a missing or a bad value is refused with exit 2
//! and a message on stderr, before anything runs.

use std::process::{Command, Stdio};

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn sim(args: &[&str]) -> Ran {
    let out = Command::new(env!("CARGO_BIN_EXE_wizard-sim"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("wizard-sim runs");
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn help_and_version_print_and_exit_0() {
    for args in [&["--help"][..], &["-h"], &["help"], &["run", "--help"]] {
        let ran = sim(args);
        assert_eq!(ran.code, Some(0), "{args:?}: {}", ran.stderr);
        assert!(
            ran.stdout.starts_with("usage: wizard-sim"),
            "{args:?}: {}",
            ran.stdout
        );
    }
    let ran = sim(&["--version"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let want = format!("wizard-sim {} (", env!("CARGO_PKG_VERSION"));
    assert!(ran.stdout.starts_with(&want), "{}", ran.stdout);
}

#[test]
fn unknown_flags_and_bad_values_exit_2_without_running() {
    let refused: &[&[&str]] = &[
        // A typo that once ran with a random seed.
        &["run", "seed_overload", "--sed", "3"],
        &["run", "seed_overload", "--seed"],
        &["run", "seed_overload", "--seed", "three"],
        &["run", "seed_overload", "extra"],
        &["run"],
        &["run", "no_such_scenario", "--seed", "1"],
        &["swarm", "--seeds", "ten"],
        &["swarm", "--job", "2"],
        &["swarm", "--seeds"],
        &["walk"],
        &["--bogus"],
        &["--version", "extra"],
        &[],
    ];
    for args in refused {
        let ran = sim(args);
        assert_eq!(ran.code, Some(2), "{args:?}: {}", ran.stderr);
        assert!(
            ran.stderr.contains("wizard-sim: "),
            "{args:?}: {}",
            ran.stderr
        );
        assert!(
            ran.stderr.contains("usage: wizard-sim"),
            "{args:?}: {}",
            ran.stderr
        );
        // Nothing ran: a run prints its seed first.
        assert!(!ran.stdout.contains("seed "), "{args:?}: {}", ran.stdout);
    }
}

#[test]
fn a_documented_run_still_runs() {
    // `--print-scenario` resolves the scenario without simulating it: quick.
    let ran = sim(&["run", "attack", "--seed", "3", "--print-scenario"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let resolved: serde_json::Value = serde_json::from_str(&ran.stdout).expect("JSON");
    assert!(resolved.is_object(), "{}", ran.stdout);
}
