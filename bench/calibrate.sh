#!/usr/bin/env bash
# The calibration: measures the real server at the calibration points under a real CPU
# quota (bench/cpu_quota_test.sh, which drives it with `wizard-bench overload`), with
# the AI embedded and off and the default store (SQLite), fits the simulator's cost
# figures to it (bench/calibrate_fit.py) and writes them, with the commit measured, to
# fixtures/sim-calibration.json, the one file the simulator reads them from; then
# regenerates docs/SIMULATION.md's calibration table from it and sets each point's
# timelines side by side (bench/calibrate.py). Run on a quiet machine, then commit the
# file and the doc. The points: "QUOTA_PERCENT GAMES AI_SEATS", each a pair of
# scenarios fixtures/scenarios/calib_<quota>_<games>_ai<0|1>.json. Each point is measured
# RUNS times, the rounds interleaved (every point once, then again), and the fit takes
# each point's medians, so that a run the host disturbed moves nothing.
# Env: POINTS ("15 30 3;30 60 3;25 40 2;50 90 3"), RUNS (3), LOAD_SECS (12), RECOVER_SECS
# (20): shorter loads only to try the script (the scenarios load for 12 s).
# Output: target/calibrate/<point>.real.<run>.{txt,log} for each run,
# target/calibrate/<point>.md (the median run beside the simulator) for each point, and
# a summary on stdout (every run's figures, the medians, the simulator's, a verdict).
set -euo pipefail
cd "$(dirname "$0")/.."
REL="${CARGO_TARGET_DIR:-target}/release"
POINTS="${POINTS:-15 30 3;30 60 3;25 40 2;50 90 3}"
LOAD_SECS="${LOAD_SECS:-12}"
RECOVER_SECS="${RECOVER_SECS:-20}"
RUNS="${RUNS:-3}"
bench/build_release.sh >&2
OUT=target/calibrate
mkdir -p "$OUT"
STORE_DIR=$(mktemp -d)
trap 'rm -rf "$STORE_DIR"' EXIT
rm -f "$OUT"/calib_*
names=()
declare -A ai_seats
IFS=';' read -ra points <<< "$POINTS"
for point in "${points[@]}"; do
    read -r quota games ais <<< "$point"
    names+=("calib_${quota}_${games}_ai0" "calib_${quota}_${games}_ai1")
    ai_seats[${quota}_$games]=$ais
done
for run in $(seq 1 "$RUNS"); do
    for name in "${names[@]}"; do
        IFS=_ read -r _ quota games ai <<< "$name"
        ai=${ai#ai}
        ais=${ai_seats[${quota}_$games]}
        echo "== $name, run $run of $RUNS (load average $(cut -d' ' -f1-3 /proc/loadavg))"
        rm -rf "${STORE_DIR:?}"/*
        QUOTA_PERCENT=$quota GAMES=$games AI_SEATS=$ais EMBEDDED_AI=$ai \
            LOAD_SECS=$LOAD_SECS RECOVER_SECS=$RECOVER_SECS STORE="sqlite:$STORE_DIR/wizard.db" \
            bench/cpu_quota_test.sh > "$OUT/$name.real.$run.log" 2>&1 || true
        cp target/cpu_quota_timeline.txt "$OUT/$name.real.$run.txt"
    done
done
python3 bench/calibrate_fit.py "$OUT" "$REL/wizard-sim" "$LOAD_SECS" "${names[@]}"
cargo run --release -q -p wizard-sim -- calibration-doc --write
for name in "${names[@]}"; do
    # The median run (calibrate_fit.py copies it to <point>.real.txt) beside the simulator.
    python3 bench/calibrate.py "$OUT/$name.real.txt" "$OUT/$name.sim.txt" "$LOAD_SECS" > "$OUT/$name.md"
    echo "== $name"
    tail -3 "$OUT/$name.md"
done
