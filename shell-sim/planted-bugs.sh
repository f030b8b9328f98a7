#!/usr/bin/env bash
# The planted-bug check: builds the simulator with the core's test-only feature
# `planted-bugs` (a debug build: the core refuses the feature in a release one), then
# for each planted bug (core/src/planted.rs) runs the swarm's first seeds in chunks and
# shows that some seed fails, naming the first one and its first violation. A bug no
# seed up to SEEDS (200) catches fails the check. With nothing planted the hooks do
# nothing, and the CI's swarm test holds that 200 seeds pass.
#   shell-sim/planted-bugs.sh [bug ...]      (default: all eight)
# Env: SEEDS (200), CHUNK (seeds per swarm call, 20), JOBS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS=${SEEDS:-200}
CHUNK=${CHUNK:-20}
JOBS=${JOBS:-2}
BUGS=("$@")
[ ${#BUGS[@]} -gt 0 ] || BUGS=(wrong_score lost_event missed_broadcast hand_leak hidden_bid_leak events_replaceable chat_lost lost_commit)
cargo build -p wizard-sim --features planted-bugs --locked
BIN="${CARGO_TARGET_DIR:-target}/debug/wizard-sim"
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

# First failing seed in 1..SEEDS with bug $1 planted (empty: none), or nothing.
first_failure() {
  local from=1 n
  while [ "$from" -le "$SEEDS" ]; do
    n=$(( SEEDS - from + 1 < CHUNK ? SEEDS - from + 1 : CHUNK ))
    if ! WIZARD_SIM_PLANT=$1 "$BIN" swarm --seeds "$n" --from "$from" --jobs "$JOBS" >"$LOG" 2>&1; then
      grep -q " runs, [1-9][0-9]* failed" "$LOG" || { cat "$LOG" >&2; echo "the swarm did not run" >&2; return; }
      sed -n 's/^seed \([0-9]*\) failed.*/\1/p' "$LOG" | head -1
      return
    fi
    from=$(( from + n ))
  done
}

status=0
for bug in "${BUGS[@]}"; do
  seed=$(first_failure "$bug")
  if [ -z "$seed" ]; then
    echo "planted $bug: NOT caught by seeds 1..$SEEDS"
    status=1
  else
    echo "planted $bug: caught (first failing seed $seed): $(grep -m1 "^seed $seed failed" "$LOG" | cut -c1-240)"
  fi
done
exit $status
