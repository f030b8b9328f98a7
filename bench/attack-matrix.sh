#!/usr/bin/env bash
# The attack matrix: for every row, a fresh server on loopback, honest games
# beside the attack in interleaved baseline and attack phases (wizard-bench --phases),
# then the table (attack, baseline move p99, attack move p99, ratio, health p99, honest
# refusals, stalls, RSS) from the history file.
#
#   bench/attack-matrix.sh                       # release build, the full sizes
#   SCALE=tiny BUILD=debug bench/attack-matrix.sh  # a quick check that it all runs
#
# Settings (environment): BUILD=release|debug, TARGET_DIR (default CARGO_TARGET_DIR or target),
# HISTORY (default bench/attacks.jsonl), ROWS (space-separated row names, default all),
# SCALE=full|tiny, PHASES, PHASE_S, QUICK_EVERY (seconds between two honest quick-play
# groups in the quick-play rows, default 1; smaller gives their seat p99 more samples), SERVER_CPU / BENCH_CPU (taskset CPU lists, empty =
# no pinning), ATTACK_CPU (the attack worker's CPUs, wizard-bench --attack-cpus; default
# SERVER_CPU, see docs/BENCHMARKS.md "Attacks"), SERVER_BIN (another server binary, e.g. an
# older build, against the same generator), LABEL (stored with each run).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-release}
TARGET_DIR=${TARGET_DIR:-${CARGO_TARGET_DIR:-target}}
HISTORY=${HISTORY:-bench/attacks.jsonl}
SCALE=${SCALE:-full}
LABEL=${LABEL:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
SERVER_CPU=${SERVER_CPU-0}
BENCH_CPU=${BENCH_CPU-1}
ATTACK_CPU=${ATTACK_CPU-$SERVER_CPU}
if [ "$SCALE" = tiny ]; then
  GAMES=${GAMES:-2}; PHASES=${PHASES:-1}; PHASE_S=${PHASE_S:-3}; K=10
  THINK="--think-ms 100"
else
  GAMES=${GAMES:-5}; PHASES=${PHASES:-3}; PHASE_S=${PHASE_S:-10}; K=1
  THINK="--pacing realistic"
fi
n() { echo $(( ($1 + K - 1) / K )); }   # a count scaled down for SCALE=tiny
QUICK_EVERY=${QUICK_EVERY:-1}

profile=$([ "$BUILD" = release ] && echo --release || true)
cargo build $profile -p wizard-server --bin wizard-server -p wizard-bench --bin wizard-bench \
  --target-dir "$TARGET_DIR" >&2
BIN="$TARGET_DIR/$BUILD"
SERVER_BIN=${SERVER_BIN:-$BIN/wizard-server}
pin() { if [ -n "$1" ]; then echo "taskset -c $1"; fi; }

# row name | server environment | attack arguments
ROWS_ALL=(
  "1-fragment-flood||--attack fragment-flood --attack-conns 1 --attack-count $(n 100000000)"
  "2-silent-one-address|MAX_CONNECTIONS=500|--attack silent --attack-conns $(n 660) --attack-ips 1 --attack-rate 1 --attack-count $(n 100000)"
  "2-silent-many-addresses|MAX_CONNECTIONS=500|--attack silent --attack-conns $(n 660) --attack-ips $(n 660) --attack-rate 1 --attack-count $(n 100000)"
  "2-connect-flood-one-address|MAX_CONNECTIONS=500|--attack silent --attack-conns $(n 660) --attack-ips 1 --attack-count $(n 100000)"
  "3-session-fill|MAX_SESSIONS=$(n 300) MAX_ACTIVE_GAMES=$(n 400)|--attack session-fill --attack-conns 8 --attack-ips $(n 100) --attack-count $(n 300)"
  "4-abandon-games||--attack abandon-games --attack-conns 5 --attack-ips 5 --attack-count $(n 50)"
  "5-abandon-lobbies-few|MAX_LOBBIES=$((GAMES + 5)) LOBBY_IDLE_TTL=5|--attack abandon-lobbies --attack-conns 5 --attack-ips 5 --attack-count 5"
  "5-abandon-lobbies-many|LOBBY_IDLE_TTL=5|--attack abandon-lobbies --attack-conns 20 --attack-ips $(n 200) --attack-count $(n 1000)"
  "6-ping-flood||--attack ping-flood --attack-conns $(n 100) --attack-ips $(n 20) --attack-count $(n 100000000)"
  "7-no-read||--attack no-read --attack-conns $(n 100) --attack-ips $(n 20) --attack-count $(n 1000000)"
  "8-reconnect-flood||--attack reconnect-flood --attack-conns 10 --attack-ips 1 --attack-count $(n 10000000)"
  "9-code-guess||--attack code-guess --attack-conns 20 --attack-ips $(n 20) --attack-count $(n 10000000)"
  "10-busy-retry|MAX_ACTIVE_GAMES=$GAMES|--attack busy-retry --attack-conns $(n 400) --attack-ips $(n 100) --attack-count $(n 10000000) --newcomer-lobby 0"
  "10-busy-retry-room-for-all|MAX_ACTIVE_GAMES=$GAMES MAX_CONNECTIONS=1000|--attack busy-retry --attack-conns $(n 400) --attack-ips $(n 100) --attack-count $(n 10000000) --newcomer-lobby 0"
  "11-violations||--attack violations --attack-conns 4 --attack-ips 200 --attack-count $(n 100000)"
  "12-names||--attack names --attack-conns 1"
  "13-quick-cancel||--attack quick-cancel --attack-conns 10 --attack-ips 1 --attack-count $(n 10000000) --quick-every $QUICK_EVERY"
  "13-quick-walk||--attack quick-walk --attack-conns $(n 200) --attack-ips $(n 200) --attack-count $(n 100000) --quick-every $QUICK_EVERY"
  "13-quick-walk-room-for-all|MAX_ACTIVE_GAMES=4000|--attack quick-walk --attack-conns $(n 200) --attack-ips $(n 200) --attack-count $(n 100000) --quick-every $QUICK_EVERY"
)

ulimit -n "$(ulimit -Hn)" || true
for row in "${ROWS_ALL[@]}"; do
  IFS='|' read -r name env args <<<"$row"
  if [ -n "${ROWS:-}" ] && ! tr " " "\n" <<<"$ROWS" | grep -qx -- "$name"; then continue; fi
  port=$((20000 + RANDOM % 20000))
  # shellcheck disable=SC2086
  env BIND=127.0.0.1:$port EMBEDDED_AI=0 LOG_LEVEL=warn SHUTDOWN_GRACE=0 STORE=memory $env \
    $(pin "$SERVER_CPU") "$SERVER_BIN" >"/tmp/attack-matrix-$name.log" 2>&1 &
  sp=$!
  for _ in $(seq 100); do
    curl -sf -o /dev/null "http://127.0.0.1:$port/health" && break
    sleep 0.1
  done
  echo "== $name ($env)" >&2
  # shellcheck disable=SC2086
  $(pin "$BENCH_CPU") "$BIN/wizard-bench" --url "ws://127.0.0.1:$port/ws" --server-pid "$sp" \
    --games "$GAMES" --humans 3 --seats 3 $THINK --ramp 2 --warmup 2 \
    --phases "$PHASES" --phase-duration "$PHASE_S" --stall-after 5 \
    --health-every-ms 50 --rejoin-every 5 --newcomer-every 0.5 \
    --history "$HISTORY" --label "$LABEL $name" ${ATTACK_CPU:+--attack-cpus "$ATTACK_CPU"} $args | grep -E '^(PHASE|MATRIX)' >&2 || true
  kill -TERM "$sp" 2>/dev/null || true
  wait "$sp" 2>/dev/null || true
done
"$BIN/wizard-bench" attack-table --history "$HISTORY" --last "${#ROWS_ALL[@]}"
