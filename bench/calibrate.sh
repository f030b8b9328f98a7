#!/usr/bin/env bash
# The calibration points: the real server under a real CPU quota
# (bench/cpu_quota_test.sh) and the simulator's scenario of the same workload
# (fixtures/scenarios/calib_*.json), side by side (bench/calibrate.py): 15 % of a core
# with 30 games and 30 % with 60 games, each game 1 human at full speed and 3 AI seats,
# with EMBEDDED_AI 0 and 1. Run on a quiet machine. Figures only: nothing is asserted.
# Output: target/calibrate/<point>.md for each point, and a summary on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
REL="${CARGO_TARGET_DIR:-target}/release"
bench/build_release.sh >&2
OUT=target/calibrate
mkdir -p "$OUT"
for point in "15 30" "30 60"; do
    set -- $point
    for ai in 0 1; do
        name="calib_$1_$2_ai$ai"
        echo "== $name (load average $(cut -d' ' -f1-3 /proc/loadavg))"
        QUOTA_PERCENT=$1 GAMES=$2 AI_SEATS=3 EMBEDDED_AI=$ai bench/cpu_quota_test.sh \
            > "$OUT/$name.real.log" 2>&1 || true
        cp target/cpu_quota_timeline.txt "$OUT/$name.real.txt"
        "$REL"/wizard-sim run "fixtures/scenarios/$name.json" --seed 1 > "$OUT/$name.sim.txt" 2>&1 || true
        python3 bench/calibrate.py "$OUT/$name.real.txt" "$OUT/$name.sim.txt" 12 > "$OUT/$name.md"
        tail -3 "$OUT/$name.md"
    done
done
