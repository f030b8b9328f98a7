#!/usr/bin/env bash
# What profiles, ratings and history cost the running server (figures only: nothing is
# asserted). Each run is a fresh release server on a fresh SQLite store, pinned to
# SERVER_CPU (0), and `wizard-bench` on BENCH_CPU (1); the load average is printed
# before every run and with the results.
#
#   bench/hist_measure.sh ab      # CPU per move, profiles and history on against off
#   bench/hist_measure.sh side    # the same, both servers at once (not in "all")
#   bench/hist_measure.sh reads   # /games/<id>, /profiles/<id>, /leaderboard latency
#   bench/hist_measure.sh         # both
#
# ab: GAMES (1000) paced games of 4 humans (1.5 s think), PAIRS (2) pairs interleaved
#   on, off, on, off ...: "on" every bot a profile (`--profiles 1`, so each game is
#   rated) and the default HISTORY_DAYS; "off" guests only and HISTORY_DAYS=0. Server
#   CPU (utime + stime from /proc/PID/stat) per move applied over the measured window;
#   each pair's ratio on / off, and their mean. A paced game lasts about 13 minutes, so
#   no game ends in a window: the end's cost (rating update, history record and its
#   write) is measured apart (`cargo bench -p wizard-core --bench game_end`,
#   `history_size --write-runs`) and spread over a game's 540 moves by hand.
# side: ab's two servers at once, both on SERVER_CPU, each with its own generator on
#   BENCH_CPU, a fresh pair of servers per pair: a guest of the machine slowing one
#   slows both in the same seconds, so each pair's ratio is free of the drift.
# reads: profiles and finished games made first (SEED_GAMES games of 4 profile bots at
#   full speed for SEED_S seconds), then `wizard-bench reads` at READ_RATE (100)
#   requests a second over the three routes from READ_ADDRS (200) loopback addresses
#   (the default SOCKET_RATE and GAMES_RATE refuse none) for DURATION seconds: once
#   with nothing else running, then while GAMES paced games of 4 profile bots play.
#
# Settings (environment): DURATION (measured window, s, default 30), PAIRS, GAMES,
# ON_HISTORY_DAYS (the on side's HISTORY_DAYS, default 90; 0: profiles alone),
# SEED_GAMES (20), SEED_S (15), READ_RATE, READ_ADDRS, TARGET_DIR (CARGO_TARGET_DIR or
# target), SERVER / BENCH (binaries; default TARGET_DIR/release/...), HISTORY (one JSON
# line per run, default bench/history_cost.jsonl), LABEL (default the commit),
# SERVER_CPU / BENCH_CPU (taskset CPU lists; empty: not pinned). Build first with
# bench/build_release.sh. Time: about PAIRS x 2 x (DURATION + 20) s for ab, 3 x
# DURATION + SEED_S + 40 s for reads. Everything it starts is stopped on exit.
#
# The server runs with EMBEDDED_AI=0, TRICK_PAUSE=0 (as the measure table's 4-human rows),
# the limits raised so that nothing is refused (bench/perf17.sh's BIG) and
# PROFILE_CREATE_RATE=100000 (each address makes 8 profiles a run).
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=${1:-all}
DURATION=${DURATION:-30}
PAIRS=${PAIRS:-2}
GAMES=${GAMES:-1000}
SEED_GAMES=${SEED_GAMES:-20}
SEED_S=${SEED_S:-15}
READ_RATE=${READ_RATE:-100}
READ_ADDRS=${READ_ADDRS:-200}
ON_HISTORY_DAYS=${ON_HISTORY_DAYS:-90}
TARGET_DIR=${TARGET_DIR:-${CARGO_TARGET_DIR:-target}}
SERVER=${SERVER:-$TARGET_DIR/release/wizard-server}
BENCH=${BENCH:-$TARGET_DIR/release/wizard-bench}
HISTORY=${HISTORY:-bench/history_cost.jsonl}
LABEL=${LABEL:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
SERVER_CPU=${SERVER_CPU-0}
BENCH_CPU=${BENCH_CPU-1}
for f in "$SERVER" "$BENCH"; do
  [ -x "$f" ] || { echo "hist_measure: no executable $f (bench/build_release.sh builds it)" >&2; exit 2; }
done
case $MODE in ab | side | reads | all) ;; *) echo "usage: bench/hist_measure.sh [ab|side|reads|all]" >&2; exit 2 ;; esac
pin() { if [ -n "$1" ]; then echo "taskset -c $1"; fi; }
ulimit -n "$(ulimit -Hn)" || true
mkdir -p "$(dirname "$HISTORY")"

BIG="LOAD_FORCE_LEVEL=normal MAX_ACTIVE_GAMES=20000 AI_MAX_INFLIGHT=20000 MAX_LOBBIES=20000 MAX_CONNECTIONS=20000 \
MAX_CONNECTIONS_PER_IP=100 MAX_SESSIONS=40000 LOBBY_CREATE_RATE=1000 \
MAX_LOBBIES_PER_IP=1000 MAX_GAMES_PER_IP=1000 RECONNECT_BURST=1000 SOCKET_BURST=1000 \
EMBEDDED_AI=0 AI_MOVE_DELAY=0 TRICK_PAUSE=0 MESSAGE_RATE=100000 MESSAGE_BURST=100000 \
PROFILE_CREATE_RATE=100000"

SCRATCH=$(mktemp -d /tmp/hist-measure.XXXXXX)
SP=""
BG=""
stop_server() {
  if [ -n "$SP" ] && kill -0 "$SP" 2>/dev/null; then
    kill -TERM "$SP" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SP" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SP" 2>/dev/null || true
  fi
  if [ -n "$SP" ]; then wait "$SP" 2>/dev/null || true; fi
  SP=""
}
SP_OFF=""
finish() {
  if [ -n "$BG" ]; then kill -TERM "$BG" 2>/dev/null || true; fi
  stop_server
  SP=$SP_OFF
  stop_server
  rm -rf "$SCRATCH"
}
trap finish EXIT
trap "exit 130" INT
trap "exit 143" TERM

load() { cut -d' ' -f1-3 /proc/loadavg; }

# start ENV...: a server on a fresh SQLite store in $SCRATCH/$STORE_DIR (pid in SP, port
# in PORT), waited for.
start() {
  PORT=$((20000 + RANDOM % 20000))
  local dir=$SCRATCH/${STORE_DIR:-store}
  rm -rf "$dir"
  # shellcheck disable=SC2046,SC2086
  (exec env BIND=127.0.0.1:$PORT LOG_LEVEL=warn SHUTDOWN_GRACE=0 STORE=sqlite:$dir/wizard.db \
    $BIG "$@" $(pin "$SERVER_CPU") "$SERVER") >>"$SCRATCH/server.log" 2>&1 &
  SP=$!
  for _ in $(seq 300); do
    curl -sf -o /dev/null "http://127.0.0.1:$PORT/health" && return 0
    kill -0 "$SP" 2>/dev/null || break
    sleep 0.1
  done
  echo "hist_measure: the server did not come up on port $PORT" >&2
  tail -20 "$SCRATCH/server.log" >&2
  return 1
}

# games LABEL PROFILES [ARGS...]: GAMES paced games of 4 humans against the running
# server, one JSON line appended to runs.jsonl.
games() {
  local label=$1 profiles=$2
  shift 2
  # shellcheck disable=SC2046
  $(pin "$BENCH_CPU") "$BENCH" --url "ws://127.0.0.1:$PORT/ws" --server-pid "$SP" \
    --games "$GAMES" --humans 4 --seats 4 --pacing realistic --duration "$DURATION" \
    --ramp 10 --warmup 5 --profiles "$profiles" --history "$SCRATCH/runs.jsonl" \
    --label "$LABEL $label" "$@" >"$SCRATCH/$label.out"
}

# keep KIND JSON: one line of the history file, with the run's context.
keep() {
  python3 - "$1" "$2" "$LABEL" "$(load)" >>"$HISTORY" <<'EOF'
import json, sys, time
kind, body, label, load = sys.argv[1:5]
print(json.dumps({"ts": int(time.time()), "kind": kind, "label": label,
                  "load": [float(x) for x in load.split()], **json.loads(body)}))
EOF
}

if [ "$MODE" = ab ] || [ "$MODE" = all ]; then
  : >"$SCRATCH/runs.jsonl"
  for pair in $(seq "$PAIRS"); do
    for side in on off; do
      echo "ab pair $pair $side: load $(load)" >&2
      if [ $side = on ]; then start HISTORY_DAYS="$ON_HISTORY_DAYS"; else start HISTORY_DAYS=0; fi
      games "ab-$side-$pair" "$([ $side = on ] && echo 1 || echo 0)"
      stop_server
    done
  done
  echo "ab done: load $(load)" >&2
fi
if [ "$MODE" = side ]; then
  : >"$SCRATCH/runs.jsonl"
  for pair in $(seq "$PAIRS"); do
    echo "side pair $pair: load $(load)" >&2
    STORE_DIR=off start HISTORY_DAYS=0
    SP_OFF=$SP PORT_OFF=$PORT
    STORE_DIR=on start HISTORY_DAYS="$ON_HISTORY_DAYS"
    SP_ON=$SP PORT_ON=$PORT
    SP=$SP_OFF PORT=$PORT_OFF games "side-off-$pair" 0 &
    G_OFF=$!
    games "side-on-$pair" 1
    wait "$G_OFF"
    stop_server
    SP=$SP_OFF
    stop_server
    SP_OFF=""
  done
  echo "side done: load $(load)" >&2
fi
if [ "$MODE" != reads ]; then
  KIND=$([ "$MODE" = side ] && echo side || echo ab)
  SUMMARY=$(python3 - "$SCRATCH/runs.jsonl" "$KIND" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
kind = sys.argv[2]
def side(r): return r["settings"]["label"].split()[-1]
us = {side(r): r["results"]["server_cpu_us_per_move"] for r in runs}
pct = {side(r): r["server"].get("cpu_percent_of_core") for r in runs}
moves = {side(r): r["results"]["accepted"]["moves"] for r in runs}
pairs = sorted({s.split("-")[-1] for s in us})
ratios = [us[f"{kind}-on-{p}"] / us[f"{kind}-off-{p}"] for p in pairs]
two_se = 2 * statistics.stdev(ratios) / len(ratios) ** 0.5 if len(ratios) > 1 else None
out = {"us_per_move": us, "cpu_percent_of_core": pct, "moves": moves,
       "ratios_on_off": [round(x, 3) for x in ratios],
       "ratio_mean": round(statistics.mean(ratios), 3),
       "ratio_two_se": None if two_se is None else round(two_se, 3)}
print(json.dumps(out))
EOF
)
  echo "$KIND: $SUMMARY"
  keep "profiles_history_$KIND" "${SUMMARY%\}}, \"on_history_days\": $ON_HISTORY_DAYS}"
fi

if [ "$MODE" = reads ] || [ "$MODE" = all ]; then
  echo "reads: load $(load)" >&2
  start
  # Profiles with rated games, and finished games, to read.
  # shellcheck disable=SC2046
  $(pin "$BENCH_CPU") "$BENCH" --url "ws://127.0.0.1:$PORT/ws" --games "$SEED_GAMES" \
    --humans 4 --seats 4 --pacing full --duration "$SEED_S" --ramp 1 --warmup 0 \
    --profiles 1 --history none >"$SCRATCH/seed.out"
  sleep 3 # the writer's next fold (STORE_SYNC_INTERVAL) puts the last games in the history
  READ="--addr 127.0.0.1:$PORT --rate $READ_RATE --duration $DURATION --addrs $READ_ADDRS"
  # shellcheck disable=SC2046,SC2086
  ALONE=$($(pin "$BENCH_CPU") "$BENCH" reads $READ)
  echo "reads alone: $ALONE"
  keep reads_alone "$ALONE"
  echo "reads while $GAMES games play: load $(load)" >&2
  DURATION=$((DURATION + 20)) games "reads-games" 1 &
  BG=$!
  sleep 15 # the games' ramp and warm-up
  # shellcheck disable=SC2046,SC2086
  BUSY=$($(pin "$BENCH_CPU") "$BENCH" reads $READ)
  wait "$BG"
  BG=""
  # The games' own figures beside the reads': moves, move latency, server CPU.
  BUSY=$(python3 - "$SCRATCH/runs.jsonl" "$BUSY" <<'EOF'
import json, sys
r = json.loads(open(sys.argv[1]).readlines()[-1])
lat = r["results"]["move_latency_ms"]
games = {"moves_per_s": r["results"]["accepted"]["moves_per_s"],
         "move_p50_ms": lat["p50"], "move_p99_ms": lat["p99"], "move_max_ms": lat["max"],
         "server_cpu_percent_of_core": r["server"].get("cpu_percent_of_core")}
print(json.dumps({**json.loads(sys.argv[2]), "games_meanwhile": games}))
EOF
)
  echo "reads while $GAMES games play: $BUSY"
  keep "reads_with_${GAMES}_games" "$BUSY"
  stop_server
fi
echo "load at the end: $(load)"
