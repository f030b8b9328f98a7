#!/usr/bin/env bash
# The figures for durable games, release builds on loopback (figures only:
# nothing is asserted; the tests assert the behaviour).
#
#   bench/durable.sh cost      # CPU per move and move latency, STORE=sqlite against
#                              # STORE=memory, runs interleaved (memory, sqlite, then
#                              # sqlite, memory, ...), at 1000 paced games and at full speed
#   bench/durable.sh restart   # 1000 paced games with --resume while the server is
#                              # stopped with SIGTERM and killed with kill -9, each time
#                              # restarted on the same store: from a bot's connection
#                              # ending to its first state back in its game
#   bench/durable.sh counts    # per thread of the server, per move, over the same window
#                              # of each paced run (memory, sqlite, then sqlite, memory, ...): CPU time,
#                              # system calls, context switches and page faults, counted
#                              # by `perf stat --per-thread` (software events: they count
#                              # on a VM without hardware counters), moves from /metrics
#   bench/durable.sh side      # CPU per move, STORE=memory and STORE=sqlite side by side:
#                              # both servers at once on the same CPU, each driven by its
#                              # own generator (both on the other CPU) with the same
#                              # workload, so that each round's two figures share the
#                              # host's conditions (another guest slowing the CPU slows
#                              # both); ROUNDS rounds (default 6), the start order
#                              # alternating, at 1000 paced games (KINDS as for cost)
#   bench/durable.sh all
#
# With PG_URL (e.g. postgres://postgres@127.0.0.1:5432/wizard_bench, a database the
# run may empty: it drops its table wizard_records before each run) cost also runs
# STORE=postgres in each round (memory, sqlite, postgres, ...) and prints PostgreSQL's
# commits per second (pg_stat_database.xact_commit over the run; needs psql).
#
# Settings (environment): PAIRS (cost: interleaved pairs per kind, default 3), KINDS
# (cost: "paced full" by default, or one of them), GAMES
# (default 1000), RESTARTS (restart: rounds of one SIGTERM and one kill -9, default 2),
# TARGET_DIR (default CARGO_TARGET_DIR or target), HISTORY (default bench/durable.jsonl),
# LABEL (default the commit), WINDOW (counts: seconds counted, default 15; they begin
# after the ramp and the warm-up), BUILD (0: use the binaries already in TARGET_DIR, built
# from another commit; say which in LABEL), SERVER_CPU / BENCH_CPU (taskset CPU lists, default 0 / 1).
set -euo pipefail
cd "$(dirname "$0")/.."

WHAT=${1:-all}
PAIRS=${PAIRS:-3}
GAMES=${GAMES:-1000}
RESTARTS=${RESTARTS:-2}
KINDS=${KINDS:-paced full}
TARGET_DIR=${TARGET_DIR:-${CARGO_TARGET_DIR:-target}}
HISTORY=${HISTORY:-bench/durable.jsonl}
LABEL=${LABEL:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
SERVER_CPU=${SERVER_CPU-0}
PG_URL=${PG_URL:-}
STORES="memory sqlite"
if [ -n "$PG_URL" ]; then STORES="memory sqlite postgres"; fi
BENCH_CPU=${BENCH_CPU-1}

if [ "${BUILD:-1}" = 1 ]; then
  bench/build_release.sh --target-dir "$TARGET_DIR" >&2
fi
BIN="$TARGET_DIR/release"
pin() { if [ -n "$1" ]; then echo "taskset -c $1"; fi; }
ulimit -n "$(ulimit -Hn)" || true

# Nothing refused: the bots come from few addresses (as in docs/BENCHMARKS.md).
BIG="MAX_ACTIVE_GAMES=20000 AI_MAX_INFLIGHT=20000 MAX_LOBBIES=20000 MAX_CONNECTIONS=20000 \
MAX_CONNECTIONS_PER_IP=100 MAX_SESSIONS=40000 LOBBY_CREATE_RATE=1000 \
MAX_LOBBIES_PER_IP=1000 MAX_GAMES_PER_IP=1000 RECONNECT_BURST=1000 SOCKET_BURST=1000"
FULL="AI_MOVE_DELAY=0 TRICK_PAUSE=0 MESSAGE_RATE=100000 MESSAGE_BURST=100000"
PACED_ARGS="--games $GAMES --humans 1 --seats 4 --pacing realistic --duration 30 --ramp 10 --warmup 5"
FULL_ARGS="--games 100 --humans 4 --pacing full --duration 20 --ramp 2 --warmup 3"

SCRATCH=$(mktemp -d /tmp/wizard-durable-bench.XXXXXX)
SP=""
SIDE_PIDS=""
cleanup() {
  if [ -n "$SP" ]; then kill -9 "$SP" 2>/dev/null || true; fi
  for p in $SIDE_PIDS; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$SCRATCH"
}
trap cleanup EXIT

# start_server PORT STORE ENV...: starts wizard-server in the background (its pid in SP)
# and waits for /health.
start_server() {
  local port=$1 store=$2
  shift 2
  # shellcheck disable=SC2046,SC2086
  env BIND=127.0.0.1:$port EMBEDDED_AI=0 LOG_LEVEL=info SHUTDOWN_GRACE=0 STORE=$store "$@" \
    $(pin "$SERVER_CPU") "$BIN/wizard-server" >>"$SCRATCH/server.log" 2>&1 &
  SP=$!
  for _ in $(seq 300); do
    curl -sf -o /dev/null "http://127.0.0.1:$port/health" && return 0
    sleep 0.1
  done
  echo "no /health on port $port" >&2
  tail -20 "$SCRATCH/server.log" >&2
  return 1
}

# fresh_store STORE: empties what a run on STORE writes to (a fresh SQLite folder, the
# PostgreSQL table dropped) and prints the STORE setting for the server.
fresh_store() {
  case "$1" in
    sqlite)
      rm -rf "$SCRATCH/store"
      mkdir -p "$SCRATCH/store"
      echo "sqlite:$SCRATCH/store/wizard.db"
      ;;
    postgres)
      psql "$PG_URL" -qc "DROP TABLE IF EXISTS wizard_records" >/dev/null
      echo "$PG_URL"
      ;;
    *) echo "$1" ;;
  esac
}

# One measured run: run STORE KIND SERVER_ENV BENCH_ARGS
run() {
  local store=$1 kind=$2 env=$3 args=$4 port=$((20000 + RANDOM % 20000)) spec
  spec=$(fresh_store "$store")
  local commits0=0 started
  if [ "$store" = postgres ]; then
    commits0=$(psql "$PG_URL" -tAc "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
  fi
  started=$(date +%s.%N)
  # shellcheck disable=SC2086
  start_server "$port" "$spec" $env
  echo "== $kind, STORE=$store" >&2
  # shellcheck disable=SC2086
  $(pin "$BENCH_CPU") "$BIN/wizard-bench" --url "ws://127.0.0.1:$port/ws" --server-pid "$SP" \
    $args --history "$HISTORY" --label "$LABEL durable $kind $store" >/dev/null
  if [ "$store" = sqlite ]; then
    du -k "$SCRATCH/store" | tail -1 | awk -v k="$kind" '{ printf "   store folder after the %s run: %d KiB\n", k, $1 }' >&2
  fi
  if [ "$store" = postgres ]; then
    local commits
    commits=$(psql "$PG_URL" -tAc "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
    python3 -c "import sys; c, s = int(sys.argv[1]), float(sys.argv[2]); print(f'   PostgreSQL commits: {c} in {s:.1f} s of server life, {c / s:.0f} per second', file=sys.stderr)" \
      "$((commits - commits0))" "$(echo "$(date +%s.%N) - $started" | bc)"
  fi
  kill -TERM "$SP"
  wait "$SP" 2>/dev/null || true
  SP=""
}

# The stores in the order pair N runs them: reversed in every second pair, so that
# neither store always runs first (a run can leave the machine warmer or busier).
stores_of_pair() {
  if (($1 % 2 == 1)); then echo "$STORES"; else echo "$STORES" | tr ' ' '\n' | tac | tr '\n' ' '; fi
}

cost() {
  local n0 n
  n0=$(wc -l <"$HISTORY" 2>/dev/null || echo 0)
  for pair in $(seq "$PAIRS"); do
    if [[ " $KINDS " = *" paced "* ]]; then
      for store in $(stores_of_pair "$pair"); do run "$store" paced "$BIG" "$PACED_ARGS"; done
    fi
    if [[ " $KINDS " = *" full "* ]]; then
      for store in $(stores_of_pair "$pair"); do run "$store" full "$BIG $FULL" "$FULL_ARGS"; done
    fi
  done
  n=$(wc -l <"$HISTORY")
  tail -n $((n - n0)) "$HISTORY" | python3 -c '
import json, statistics, sys
rows = {}
for line in sys.stdin:
    d = json.loads(line)
    label = d["settings"]["label"].split()
    kind, store = label[-2], label[-1]
    r = d["results"]
    rows.setdefault(kind, {}).setdefault(store, []).append((
        r["server_cpu_us_per_move"], r["move_latency_ms"]["p99"],
        d["server"].get("cpu_percent_of_core"), r["accepted"]["moves"]))
print("| kind | store | CPU us per move (each run) | move p99 ms (each run) | server CPU % | moves |")
print("|---|---|---|---|---|---|")
for kind, stores in rows.items():
    for store, runs in stores.items():
        f = lambda i: ", ".join(str(x[i]) for x in runs)
        print(f"| {kind} | {store} | {f(0)} | {f(1)} | {f(2)} | {f(3)} |")
    mean = lambda s, i: sum(x[i] for x in stores[s]) / len(stores[s])
    for durable in ("sqlite", "postgres"):
        if "memory" in stores and durable in stores:
            cpu = mean(durable, 0) / mean("memory", 0)
            p99 = mean(durable, 1) - mean("memory", 1)
            print(f"| {kind} | {durable} / memory (means) | {cpu:.3f} | {p99:+.2f} ms | | |")
            # Pair by pair (runs are recorded in pair order): the median is robust to
            # one run that another guest of the host slowed down.
            ratios = [d[0] / m[0] for d, m in zip(stores[durable], stores["memory"])]
            each = ", ".join(f"{r:.2f}" for r in ratios)
            print(f"| {kind} | {durable} / memory (median of the pairs) | "
                  f"{statistics.median(ratios):.3f} ({each}) | | | |")
'
}

restart() {
  local port=$((20000 + RANDOM % 20000)) spec="sqlite:$SCRATCH/restart/wizard.db" bp n0 n
  mkdir -p "$SCRATCH/restart"
  local duration=$((40 + 20 * 2 * RESTARTS))
  n0=$(wc -l <"$HISTORY" 2>/dev/null || echo 0)
  # shellcheck disable=SC2086
  start_server "$port" "$spec" $BIG
  # shellcheck disable=SC2086
  $(pin "$BENCH_CPU") "$BIN/wizard-bench" --url "ws://127.0.0.1:$port/ws" \
    --games "$GAMES" --humans 1 --seats 4 --pacing realistic --duration "$duration" \
    --ramp 10 --warmup 5 --resume 1 \
    --history "$HISTORY" --label "$LABEL durable restart $GAMES games" >/dev/null &
  bp=$!
  sleep 30 # every game set up and playing
  for r in $(seq "$RESTARTS"); do
    for how in TERM KILL; do
      echo "== restart $r: SIG$how, then a new server on the same store" >&2
      kill -"$how" "$SP"
      # With SIGTERM the old process may still be stopping: the new one waits for the
      # store's lock, then restores and listens.
      local old=$SP
      # shellcheck disable=SC2086
      start_server "$port" "$spec" $BIG
      wait "$old" 2>/dev/null || true
      sleep 15
    done
  done
  wait "$bp" || true
  grep '"Restored"\|Restored' "$SCRATCH/server.log" | sed -e 's/^/   /' >&2 || true
  kill -TERM "$SP"
  wait "$SP" 2>/dev/null || true
  SP=""
  n=$(wc -l <"$HISTORY")
  tail -n $((n - n0)) "$HISTORY" | python3 -c '
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    r = d["results"]
    print(json.dumps({"label": d["settings"]["label"], "resume": r["resume"],
                      "moves": r["accepted"]["moves"],
                      "games_finished": r["accepted"]["games_finished"],
                      "games_unscored": r["accepted"]["games_unscored"],
                      "move_latency_ms": r["move_latency_ms"]}, indent=1))
'
}

# The moves the server applied so far (its /metrics).
moves_so_far() {
  curl -sf "http://127.0.0.1:$1/metrics" |
    awk '/^wizard_moves_total/ { n += $NF } END { printf "%d\n", n }'
}

# The hypervisor's steal time on the server's CPU so far (jiffies, /proc/stat; of all
# CPUs when SERVER_CPU is not one CPU): time the VM's CPU was running another guest.
steal_jiffies() {
  local line=cpu
  if [[ "$SERVER_CPU" =~ ^[0-9]+$ ]]; then line="cpu$SERVER_CPU"; fi
  awk -v l="$line" '$1 == l { print $9 + 0 }' /proc/stat
}

counts() {
  local window=${WINDOW:-15} out="$SCRATCH/counts.txt"
  : >"$out"
  : >"$SCRATCH/steal.txt"
  for pair in $(seq "$PAIRS"); do
    for store in $(stores_of_pair "$pair"); do
      local port=$((20000 + RANDOM % 20000)) spec bp m0 m1
      spec=$(fresh_store "$store")
      # shellcheck disable=SC2086
      start_server "$port" "$spec" $BIG
      # shellcheck disable=SC2086
      $(pin "$BENCH_CPU") "$BIN/wizard-bench" --url "ws://127.0.0.1:$port/ws" \
        $PACED_ARGS --history "$SCRATCH/counts-history.jsonl" >/dev/null &
      bp=$!
      sleep 15 # the ramp and the warm-up
      m0=$(moves_so_far "$port")
      s0=$(steal_jiffies)
      perf stat --per-thread -x, -e task-clock,context-switches,page-faults,raw_syscalls:sys_enter \
        -p "$SP" -o "$SCRATCH/perf.txt" -- sleep "$window" 2>/dev/null
      m1=$(moves_so_far "$port")
      s1=$(steal_jiffies)
      echo "$pair $store $((s1 - s0)) $window" >>"$SCRATCH/steal.txt"
      echo "== pair $pair, STORE=$store: $((m1 - m0)) moves in $window s; load: $(cut -d' ' -f1-3 /proc/loadavg); steal $((s1 - s0)) jiffies" >&2
      awk -F, -v store="$store" -v pair="$pair" -v moves=$((m1 - m0)) \
        'NF > 3 && $1 !~ /^#/ { print pair, store, moves, $1, $2, $4 }' "$SCRATCH/perf.txt" >>"$out"
      wait "$bp" || true
      kill -TERM "$SP"
      wait "$SP" 2>/dev/null || true
      SP=""
    done
  done
  python3 - "$out" "$SCRATCH/steal.txt" "$(getconf CLK_TCK)" <<'PY'
import collections, re, statistics, sys
# pair store moves thread value event
runs = collections.defaultdict(lambda: collections.defaultdict(float))
moves = {}
for line in open(sys.argv[1]):
    pair, store, n, thread, value, event = line.split(None, 5)
    event = event.strip()
    try:
        value = float(value)
    except ValueError:
        continue
    # One row per thread name: executors and helpers of the same kind together.
    name = re.sub(r"-[0-9]+$", "", thread)
    name = re.sub(r"-\d+$", "", name)
    runs[(pair, store)][(name, event)] += value
    moves[(pair, store)] = int(n)
events = ["task-clock", "raw_syscalls:sys_enter", "context-switches", "page-faults"]
unit = {"task-clock": ("us CPU", 1e3), "raw_syscalls:sys_enter": ("syscalls", 1),
        "context-switches": ("switches", 1), "page-faults": ("faults", 1)}
threads = sorted({t for r in runs.values() for (t, _) in r})
print("| pair | store | moves | thread | " + " | ".join(unit[e][0] + " per move" for e in events) + " |")
print("|---|---|---|---|" + "---|" * len(events))
for key in sorted(runs):
    r, n = runs[key], moves[key] or 1
    for t in threads + ["all"]:
        vals = []
        for e in events:
            v = sum(x for (tt, ee), x in r.items() if ee == e and (t == "all" or tt == t))
            vals.append(f"{v / unit[e][1] / n:.2f}" if e != "task-clock" else f"{v * 1e3 / n:.1f}")
        print(f"| {key[0]} | {key[1]} | {n} | {t} | " + " | ".join(vals) + " |")
# The whole server's CPU per move, per run, and the summaries. On a shared VM a run's
# CPU time can be inflated by other guests (not always visible as steal), never
# deflated: the minimum over the runs and the median of the pairs' ratios are the
# robust figures; the mean is printed beside them.
steal = {}
for line in open(sys.argv[2]):
    pair, store, jiffies, window = line.split()
    steal[(pair, store)] = 100.0 * int(jiffies) / int(sys.argv[3]) / float(window)
cpu = {k: r_task / (moves[k] or 1) * 1e3
       for k, r in runs.items()
       for r_task in [sum(x for (t, e), x in r.items() if e == "task-clock")]}
stores = sorted({s for (_, s) in cpu}, key=lambda s: (s != "memory", s))
print()
print("| store | all threads us CPU per move, each pair | steal % of the server's CPU, each pair | min | median | mean |")
print("|---|---|---|---|---|---|")
for s in stores:
    keys = sorted((k for k in cpu if k[1] == s), key=lambda k: int(k[0]))
    v = [cpu[k] for k in keys]
    st = ", ".join(f"{steal.get(k, 0):.1f}" for k in keys)
    print(f"| {s} | {', '.join(f'{x:.1f}' for x in v)} | {st} | {min(v):.1f} | "
          f"{statistics.median(v):.1f} | {statistics.mean(v):.1f} |")
base = {k[0]: x for k, x in cpu.items() if k[1] == "memory"}
for s in stores:
    if s == "memory":
        continue
    mine = {k[0]: x for k, x in cpu.items() if k[1] == s}
    ratios = [mine[p] / base[p] for p in sorted(mine, key=int) if p in base]
    if not ratios:
        continue
    print(f"\n{s} / memory: ratio of the minimums {min(mine.values()) / min(base.values()):.3f}, "
          f"median of the pairs' ratios {statistics.median(ratios):.3f}, "
          f"ratio of the means {statistics.mean(mine.values()) / statistics.mean(base.values()):.3f} "
          f"(pairs' ratios: {', '.join(f'{r:.2f}' for r in ratios)})")
PY
}

# side: both stores at once, each with its own generator; per round the ratio of the
# two servers' CPU per move over the same window.
side() {
  local rounds=${ROUNDS:-6} n0 n
  n0=$(wc -l <"$HISTORY" 2>/dev/null || echo 0)
  for round in $(seq "$rounds"); do
    for kind in $KINDS; do
      local env=$BIG args=$PACED_ARGS bps=""
      if [ "$kind" = full ]; then env="$BIG $FULL" args=$FULL_ARGS; fi
      SIDE_PIDS=""
      declare -A port_of pid_of
      for store in $(stores_of_pair "$round"); do
        local port=$((20000 + RANDOM % 20000)) spec
        spec=$(fresh_store "$store")
        # shellcheck disable=SC2086
        start_server "$port" "$spec" $env
        port_of[$store]=$port
        pid_of[$store]=$SP
        SIDE_PIDS="$SIDE_PIDS $SP"
        SP=""
      done
      echo "== round $round, $kind: $STORES side by side; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
      for store in $(stores_of_pair "$round"); do
        # shellcheck disable=SC2086
        $(pin "$BENCH_CPU") "$BIN/wizard-bench" --url "ws://127.0.0.1:${port_of[$store]}/ws" \
          --server-pid "${pid_of[$store]}" $args --history "$SCRATCH/side.jsonl" \
          --label "$LABEL durable side-$round $kind $store" >/dev/null &
        bps="$bps $!"
      done
      for bp in $bps; do wait "$bp" || true; done
      for p in $SIDE_PIDS; do kill -TERM "$p" 2>/dev/null || true; done
      for p in $SIDE_PIDS; do wait "$p" 2>/dev/null || true; done
      SIDE_PIDS=""
    done
  done
  cat "$SCRATCH/side.jsonl" >>"$HISTORY"
  n=$(wc -l <"$HISTORY")
  tail -n $((n - n0)) "$HISTORY" | python3 -c '
import json, sys
sys.path.insert(0, "bench")
from ratios import summary
rows = {}
for line in sys.stdin:
    d = json.loads(line)
    label = d["settings"]["label"].split()
    round_, kind, store = label[-3], label[-2], label[-1]
    r = d["results"]
    rows.setdefault(kind, {}).setdefault(round_, {})[store] = (
        r["server_cpu_us_per_move"], r["move_latency_ms"]["p99"], r["accepted"]["moves"])
for kind, rounds in rows.items():
    print(f"| {kind} round | memory us a move | sqlite us a move | sqlite / memory | p99 ms memory, sqlite | moves |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for rnd in sorted(rounds, key=lambda x: int(x.split("-")[1])):
        m, s = rounds[rnd].get("memory"), rounds[rnd].get("sqlite")
        if not (m and s):
            continue
        ratios.append(s[0] / m[0])
        print(f"| {rnd} | {m[0]} | {s[0]} | {ratios[-1]:.3f} | {m[1]}, {s[1]} | {m[2]}, {s[2]} |")
    if ratios:
        print("\n" + summary(ratios, f"{kind}: sqlite / memory", "round") + "\n")
'
}

case "$WHAT" in
  cost) cost ;;
  counts) counts ;;
  restart) restart ;;
  side) side ;;
  all) cost; restart ;;
  *) echo "usage: bench/durable.sh cost|counts|side|restart|all" >&2; exit 2 ;;
esac
