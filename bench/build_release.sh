#!/usr/bin/env bash
# The one release build every script uses: all of the workspace's binaries, in one
# cargo command, so that each script after the first finds them built (the same
# packages give the same features; a build of fewer packages could unify features
# differently and compile the dependencies again). Extra arguments go to cargo
# (e.g. --target-dir DIR, --quiet). Binaries: ${CARGO_TARGET_DIR:-target}/release.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo build --release --locked --workspace --bins "$@"
