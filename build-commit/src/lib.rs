//! Build scripts' helper: the commit a crate is built from, as a compile-time variable.
//!
//! The server prints it in `--version` and `wizard_build_info`; the simulator puts it in
//! a failure's repro line (seed plus commit). Both build scripts call [`emit`], so the
//! rule of when to look again is written once.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// Sets `cargo:rustc-env={var}` to the short commit of HEAD (12 hex digits), or to the
/// build environment's `{var}` when `from_env` and it is set (an image built from a
/// copied tree has no `.git`), else `unknown`; and asks cargo to run the build script
/// again when HEAD moves: HEAD itself (a checkout), the branch it points at (a commit)
/// and `packed-refs`, only paths that exist (a missing one would rerun it every build).
pub fn emit(var: &str, from_env: bool) {
    let given = if from_env {
        println!("cargo:rerun-if-env-changed={var}");
        std::env::var(var).ok().filter(|c| !c.is_empty())
    } else {
        None
    };
    let commit = given
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env={var}={commit}");
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&["rev-parse", "--git-path", &branch]));
    }
    watched.push(git(&["rev-parse", "--git-path", "packed-refs"]));
    for path in watched.into_iter().flatten() {
        if Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
