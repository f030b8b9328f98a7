#!/usr/bin/env bash
# A/B of two wizard-server builds with EMBEDDED_AI=1, interleaved (old, new, old, new):
# the server pinned to CPU 0, the generator to CPU 1, paced games of 1 human + 3 AI.
# Expects /tmp/h17-bin/wizard-server-old, -new and wizard-bench (release builds).
# Prints the server's AI metrics after each run. Figures only: nothing is asserted.
# Usage: [GAMES=1000] [TAG=x] bench/embedded_ai_ab.sh AGENT ROUNDS
set -u
AGENT=$1; ROUNDS=$2; TAG=${TAG:-}
ulimit -n 20000
BIG="MAX_ACTIVE_GAMES=20000 AI_MAX_INFLIGHT=20000 MAX_LOBBIES=20000 MAX_CONNECTIONS=20000 MAX_CONNECTIONS_PER_IP=100 MAX_SESSIONS=40000 LOBBY_CREATE_RATE=1000 MAX_LOBBIES_PER_IP=1000 MAX_GAMES_PER_IP=1000 RECONNECT_BURST=1000 SOCKET_BURST=1000"
for r in $(seq "$ROUNDS"); do
  for build in old new; do
    PORT=$((20000 + RANDOM % 20000))
    env BIND=127.0.0.1:$PORT EMBEDDED_AI=1 AI_AGENT=$AGENT LOG_LEVEL=warn SHUTDOWN_GRACE=0 $BIG \
      taskset -c 0 /tmp/h17-bin/wizard-server-$build >/tmp/h17-server-$build.log 2>&1 &
    SP=$!
    for _ in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:$PORT/health && break; sleep 0.1; done
    echo "== round $r build $build agent $AGENT load $(cut -d' ' -f1-3 /proc/loadavg)"
    taskset -c 1 /tmp/h17-bin/wizard-bench --url ws://127.0.0.1:$PORT/ws --server-pid $SP \
      --games ${GAMES:-1000} --humans 1 --pacing realistic --duration 20 --ramp 10 --warmup 5 \
      --history /tmp/h17-history.jsonl --label "h17-inproc $build $AGENT g${GAMES:-1000} r$r$TAG" > /tmp/h17-bench-$AGENT-$build-$r$TAG.out 2>&1
    curl -s http://127.0.0.1:$PORT/metrics | grep -E '^wizard_(moves_total|fallbacks_total|ai_round_trip_seconds_(count|sum))' | grep -v ' 0$'
    kill -TERM $SP; wait $SP
  done
done
