#!/usr/bin/env bash
# A/B of two wizard-server builds with EMBEDDED_AI=1, interleaved (old, new, old, new):
# the server pinned to CPU 0, the generator to CPU 1, paced games of 1 human + 3 AI.
# Prints the server's AI metrics after each run. Figures only: nothing is asserted.
#
#   OLD=/path/wizard-server-old NEW=/path/wizard-server-new bench/embedded_ai_ab.sh AGENT ROUNDS
#
# Settings (environment): OLD, NEW (the two server binaries, required), BENCH (the
# generator, default ${CARGO_TARGET_DIR:-target}/release/wizard-bench), GAMES (1000),
# TAG (appended to the history label), HISTORY (default bench/history.jsonl). Logs and
# outputs go to a fresh scratch folder, printed at the start and kept.
set -euo pipefail
cd "$(dirname "$0")/.."
AGENT=${1:?usage: OLD=... NEW=... $0 AGENT ROUNDS}
ROUNDS=${2:?usage: OLD=... NEW=... $0 AGENT ROUNDS}
TAG=${TAG:-}
GAMES=${GAMES:-1000}
BENCH=${BENCH:-${CARGO_TARGET_DIR:-target}/release/wizard-bench}
HISTORY=${HISTORY:-bench/history.jsonl}
declare -A SERVER=([old]=${OLD:?set OLD to the old server binary} [new]=${NEW:?set NEW to the new server binary})
SCRATCH=$(mktemp -d /tmp/wizard-embedded-ab.XXXXXX)
echo "logs and outputs in $SCRATCH"
SP=""
trap '[ -z "$SP" ] || kill -9 "$SP" 2>/dev/null || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
ulimit -n 20000 || true
BIG="MAX_ACTIVE_GAMES=20000 AI_MAX_INFLIGHT=20000 MAX_LOBBIES=20000 MAX_CONNECTIONS=20000 MAX_CONNECTIONS_PER_IP=100 MAX_SESSIONS=40000 LOBBY_CREATE_RATE=1000 MAX_LOBBIES_PER_IP=1000 MAX_GAMES_PER_IP=1000 RECONNECT_BURST=1000 SOCKET_BURST=1000"
for r in $(seq "$ROUNDS"); do
  for build in old new; do
    PORT=$((20000 + RANDOM % 20000))
    # shellcheck disable=SC2086
    env BIND=127.0.0.1:$PORT EMBEDDED_AI=1 AI_AGENT="$AGENT" LOG_LEVEL=warn SHUTDOWN_GRACE=0 $BIG \
      taskset -c 0 "${SERVER[$build]}" >"$SCRATCH/server-$build-$r.log" 2>&1 &
    SP=$!
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/health" && break; sleep 0.1; done
    echo "== round $r build $build agent $AGENT load $(cut -d' ' -f1-3 /proc/loadavg)"
    taskset -c 1 "$BENCH" --url "ws://127.0.0.1:$PORT/ws" --server-pid "$SP" \
      --games "$GAMES" --humans 1 --pacing realistic --duration 20 --ramp 10 --warmup 5 \
      --history "$HISTORY" --label "embedded-ab $build $AGENT g$GAMES r$r$TAG" >"$SCRATCH/bench-$AGENT-$build-$r$TAG.out" 2>&1 || true
    curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^wizard_(moves_total|fallbacks_total|ai_decisions_total|ai_round_trip_seconds_(count|sum))' | grep -v ' 0$' || true
    kill -TERM "$SP"
    wait "$SP" || true
    SP=""
  done
done
