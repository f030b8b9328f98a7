#!/usr/bin/env bash
# Context switches and CPU per move (what batching saves): the release server plays
# MOVES moves at full speed (30 games, 1 human + 2 AI seats, `wizard-bench overload`),
# once without a quota and once in a cgroup limited to 15 % of one CPU, and reports
# /proc/<pid>/status voluntary/nonvoluntary_ctxt_switches and /proc/<pid>/stat
# utime+stime per move. The load level is pinned to normal so that games keep
# restarting under the quota. EMBEDDED_AI (0) chooses who plays the AI seats: 0 the
# core's fallback (the shell's own cost), 1 the AI workers inside the server.
# Figures only: nothing is asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
# Binaries: where cargo puts them, also with CARGO_TARGET_DIR set.
REL="${CARGO_TARGET_DIR:-target}/release"
mkdir -p target # logs and timelines go here either way

MOVES="${MOVES:-50000}"
GAMES="${GAMES:-30}"
QUOTA_PERCENT="${QUOTA_PERCENT:-15}"
EMBEDDED_AI="${EMBEDDED_AI:-0}"
PERIOD_US=100000
QUOTA_US=$((PERIOD_US * QUOTA_PERCENT / 100))

skip() {
    echo "SKIP the run under a quota: $*"
    exit 0
}

# shellcheck source=bench/cgroup_lib.sh
source bench/cgroup_lib.sh

bench/build_release.sh

run() {
    local label="$1" port=$((20000 + RANDOM % 20000))
    (
        if [[ -n "$CG" ]]; then echo "$BASHPID" > "$CG/cgroup.procs"; fi
        exec env BIND="127.0.0.1:$port" AI_MOVE_DELAY=0 TRICK_PAUSE=0 EMBEDDED_AI="$EMBEDDED_AI" \
            MESSAGE_RATE=100000 MESSAGE_BURST=100000 LOAD_FORCE_LEVEL=normal \
            SHUTDOWN_GRACE=0 LOG_LEVEL=warn STORE=memory "$REL"/wizard-server
    ) > "target/ctx_switches_server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 100); do
        curl -fsS "http://127.0.0.1:$port/health" > /dev/null 2>&1 && break
        sleep 0.1
    done
    printf '%-22s ' "$label:"
    timeout 300 "$REL"/wizard-bench overload --addr "127.0.0.1:$port" \
        --games "$GAMES" --moves "$MOVES" --pid "$SERVER_PID"
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" || true
    SERVER_PID=""
}

CG=""
run "no quota"
make_cgroup
run "quota $QUOTA_PERCENT % of one CPU"
