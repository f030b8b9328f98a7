//! The `wizard-ai` command line, through the real binary: `--help` and `--version`
//! print and exit 0; an unknown subcommand or flag, a missing or a bad value is refused
//! with exit 2 and a message on stderr; `serve` takes no flags (its settings are
//! environment variables).

use std::process::{Command, Stdio};

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn ai(args: &[&str]) -> Ran {
    let out = Command::new(env!("CARGO_BIN_EXE_wizard-ai"))
        .args(args)
        .env_clear()
        // Were `serve` to start, it would connect nowhere and retry forever: the test
        // would hang instead of passing.
        .env("AI_SERVER_URL", "ws://127.0.0.1:9/internal/ai")
        .env("AI_SHARED_SECRET", "test")
        .stdin(Stdio::null())
        .output()
        .expect("wizard-ai runs");
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn help_and_version_print_and_exit_0() {
    for args in [&["--help"][..], &["-h"], &["help"]] {
        let ran = ai(args);
        assert_eq!(ran.code, Some(0), "{args:?}: {}", ran.stderr);
        assert!(ran.stdout.starts_with("usage:"), "{args:?}: {}", ran.stdout);
        assert!(
            ran.stdout.contains("wizard-ai serve"),
            "{args:?}: {}",
            ran.stdout
        );
    }
    let ran = ai(&["--version"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(
        ran.stdout,
        format!("wizard-ai {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn unknown_flags_and_bad_values_exit_2() {
    let refused: &[&[&str]] = &[
        &["serve", "--workers", "4"],
        &["serve", "extra"],
        &["evaluate", "--bogus", "1"],
        &["evaluate", "--deal-set", "1"],
        &["evaluate", "--deal-sets"],
        &["evaluate", "--deal-sets", "many"],
        &["evaluate", "--players", "4,x"],
        &["evaluate", "--rules", "strange"],
        &["evaluate", "--candidate", "nobody"],
        &["evaluate", "--time-ms", "-1"],
        &["evaluate", "stray"],
        &["evaluate", "-j"],
        &["train"],
        &["--bogus"],
        &["--version", "extra"],
        &[],
    ];
    for args in refused {
        let ran = ai(args);
        assert_eq!(ran.code, Some(2), "{args:?}: {}{}", ran.stdout, ran.stderr);
        assert!(
            ran.stderr.starts_with("wizard-ai: "),
            "{args:?}: {}",
            ran.stderr
        );
        assert!(ran.stdout.is_empty(), "{args:?}: {}", ran.stdout);
    }
}

#[test]
fn a_documented_evaluation_still_runs() {
    let ran = ai(&[
        "evaluate",
        "--players",
        "3",
        "--deal-sets",
        "1",
        "--candidate",
        "random",
        "--reference",
        "heuristic",
        "--rules=house",
        "--seed",
        "7",
        "--json",
    ]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let report: serde_json::Value = serde_json::from_str(&ran.stdout).expect("JSON");
    assert_eq!(report["candidate"], "random");
    assert_eq!(report["rules"], "house");
    assert_eq!(report["seed"], 7);
}
