#!/usr/bin/env bash
# Wall time of one scenario under two simulator builds, runs interleaved so that both
# see the same machine noise: prints each build's minimum and median wall time and the
# trace hashes (a change that only makes the simulator faster keeps the hash).
# Usage: compare_speed.sh BASE_BINARY NEW_BINARY [SCENARIO] [RUNS] [SEED]
# e.g. build the old commit with CARGO_TARGET_DIR=/tmp/base, then
#   bench/compare_speed.sh /tmp/base/release/wizard-sim \
#     target/release/wizard-sim fixtures/scenarios/speed_500.json 9
# Figures only: nothing is asserted.
set -euo pipefail
cd "$(dirname "$0")/.."

BASE="${1:?base binary}"
NEW="${2:?new binary}"
SCENARIO="${3:-fixtures/scenarios/speed_500.json}"
RUNS="${4:-7}"
SEED="${5:-1}"

wall_and_hash() {
  "$1" run "$SCENARIO" --seed "$SEED" --json |
    python3 -c 'import json, sys; d = json.load(sys.stdin); print("%.1f %x" % (d["wall_ms"], d["trace_hash"]))'
}

base_runs=$(mktemp)
new_runs=$(mktemp)
trap 'rm -f "$base_runs" "$new_runs"' EXIT
for _ in $(seq "$RUNS"); do
  wall_and_hash "$BASE" >>"$base_runs"
  wall_and_hash "$NEW" >>"$new_runs"
done
for pair in "base:$base_runs" "new:$new_runs"; do
  name=${pair%%:*}
  file=${pair#*:}
  sort -n "$file" | awk -v name="$name" '{ wall[NR] = $1; hash[$2] = 1 }
    END {
      hashes = ""; for (h in hash) hashes = hashes " " h
      printf "%-5s min %.1f ms  median %.1f ms  trace hash%s\n", name, wall[1], wall[int((NR + 1) / 2)], hashes
    }'
done
