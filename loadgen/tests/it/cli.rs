//! The `wizard-bench` command line, through the real binary: `--help` and `--version`
//! print and exit 0; an unknown flag, a flag without its value, a bad value or a stray
//! word is refused with exit 2 and a message on stderr, before any connection is made.

use std::process::{Command, Stdio};

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn bench(args: &[&str]) -> Ran {
    let out = Command::new(env!("CARGO_BIN_EXE_wizard-bench"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("wizard-bench runs");
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn help_and_version_print_and_exit_0() {
    for args in [
        &["--help"][..],
        &["-h"],
        &["run", "--help"],
        &["table", "--help"],
    ] {
        let ran = bench(args);
        assert_eq!(ran.code, Some(0), "{args:?}: {}", ran.stderr);
        assert!(
            ran.stdout.starts_with("usage: wizard-bench"),
            "{args:?}: {}",
            ran.stdout
        );
        assert!(
            ran.stdout.contains("wizard-bench overload"),
            "{}",
            ran.stdout
        );
    }
    let ran = bench(&["overload", "--help"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(
        ran.stdout.starts_with("usage: wizard-bench overload"),
        "{}",
        ran.stdout
    );
    let ran = bench(&["--version"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(
        ran.stdout,
        format!("wizard-bench {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn unknown_flags_and_bad_values_exit_2() {
    // Port 9 (discard) on loopback: were an argument ignored, the run would fail to
    // connect (exit 1), not exit 2.
    let url = "ws://127.0.0.1:9/ws";
    let refused: &[&[&str]] = &[
        &["--url", url, "--gmaes", "3"],
        &["--url", url, "--games"],
        &["--url", url, "--games", "three"],
        &["--url", url, "--pacing", "slow"],
        &["--url", url, "--think-jitter-ms", "x"],
        &["--url", url, "--attack", "nonsense"],
        &["--url", url, "--duration", "-5"],
        &["--url", url, "stray"],
        &["--url", url, "-g", "3"],
        &["run", "--url", "http://127.0.0.1:9/ws"],
        &["table", "--last", "x"],
        &["compare", "--games", "3"],
        &["attack-table", "--history"],
        &["overload", "--addr", "127.0.0.1:9", "--gmaes", "3"],
        &["overload", "--addr", "nowhere"],
        &["overload", "--addr", "127.0.0.1:9", "--ai", "9"],
        &["overload", "--games"],
        &["reads", "--rate", "100"],
        &["reads", "--addr", "127.0.0.1:9", "--rate", "0"],
        &["reads", "--addr", "127.0.0.1:9", "--rtae", "100"],
        &["reads", "--addr", "127.0.0.1:9", "--addrs", "0"],
        &[
            "reads",
            "--addr",
            "127.0.0.1:9",
            "--rate",
            "100000",
            "--duration",
            "100000",
        ],
    ];
    for args in refused {
        let ran = bench(args);
        assert_eq!(ran.code, Some(2), "{args:?}: {}{}", ran.stdout, ran.stderr);
        assert!(
            ran.stderr.starts_with("wizard-bench"),
            "{args:?}: {}",
            ran.stderr
        );
        assert!(
            ran.stderr.contains("usage: wizard-bench"),
            "{args:?}: {}",
            ran.stderr
        );
    }
}

#[test]
fn a_documented_table_still_reads_its_history() {
    let dir = std::env::temp_dir().join(format!("wizard-bench-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let history = dir.join("empty.jsonl");
    std::fs::write(&history, "").unwrap();
    let path = history.to_str().unwrap();
    for command in ["table", "compare", "attack-table"] {
        let ran = bench(&[command, "--history", path, "--last", "6"]);
        assert_ne!(ran.code, Some(2), "{command}: {}", ran.stderr);
        let ran = bench(&[command, &format!("--history={path}")]);
        assert_ne!(ran.code, Some(2), "{command}: {}", ran.stderr);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_think_jitter_flag_is_taken() {
    // Accepted, the run goes on to connect to port 9 and fails there (exit 1), where an
    // unknown flag exits 2 before connecting. Its history line goes to a scratch file,
    // not to the repository's.
    let url = "ws://127.0.0.1:9/ws";
    let dir = std::env::temp_dir().join(format!("wizard-bench-jitter-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let history = dir.join("history.jsonl");
    let ran = bench(&[
        "--history",
        history.to_str().unwrap(),
        "--url",
        url,
        "--think-jitter-ms",
        "500",
        "--duration",
        "1",
        "--ramp",
        "0",
        "--warmup",
        "0",
    ]);
    assert_ne!(ran.code, Some(2), "{}{}", ran.stdout, ran.stderr);
    assert!(
        !ran.stderr.contains("usage: wizard-bench"),
        "{}",
        ran.stderr
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_quick_play_flags_are_checked_before_anything_runs() {
    let url = "ws://127.0.0.1:9/ws";
    let ran = bench(&["--url", url, "--quick-every", "soon"]);
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(ran.stderr.contains("--quick-every"), "{}", ran.stderr);
    for attack in ["quick-cancel", "quick-walk"] {
        let ran = bench(&["--url", url, "--attack", attack, "--attack-count", "x"]);
        assert_eq!(ran.code, Some(2), "{attack}: {}", ran.stderr);
        assert!(
            !ran.stderr.contains("--attack:"),
            "{attack}: {}",
            ran.stderr
        );
    }
    // The killed shard must be one of the players' shards, and named with its pid.
    let ran = bench(&["quick", "--addr", "A=127.0.0.1:9", "--kill", "B=1"]);
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(ran.stderr.contains("no shard \"B\""), "{}", ran.stderr);
    let ran = bench(&["quick", "--addr", "A=127.0.0.1:9", "--kill", "A"]);
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(ran.stderr.contains("--kill: ID=PID"), "{}", ran.stderr);
}
