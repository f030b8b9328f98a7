#!/usr/bin/env bash
# The measure table against the bare room in one run (figures only: nothing is asserted). Each row runs
# two servers interleaved (A, B, A, B, ...), each run a fresh process, the server pinned
# to SERVER_CPU (0) and `wizard-bench` to BENCH_CPU (1); the load average is printed
# before every run and with the table.
#
#   bench/perf17.sh                            # A = wizard-server, B = the bare room
#   A=/old/wizard-server B=/new/wizard-server bench/perf17.sh   # before / after
#
# Rows (ROWS, default "full paced quota search"):
#   full    server CPU per move at full speed, 4 humans per game (FULL_GAMES games,
#           default 100): each side's, and A / B
#   paced   1000 paced games of 4 humans (PACED_GAMES; 1.5 s think): server CPU (% of
#           one core) and move p99, from the same runs
#   quota   moves/s with the server in a cgroup of QUOTA_PERCENT (15) % of one CPU,
#           QUOTA_GAMES (30) games of 4 humans at full speed (bench/cgroup_lib.sh;
#           skipped with a message when no cgroup can be made)
#   search  the default configuration (EMBEDDED_AI=1, the default AI_AGENT, the default
#           store): 1000 paced games of 1 human + 3 AI; server CPU, and from /metrics the
#           moves by the AI and by the fallback, and the share decided by `search` when
#           the server exports moves by agent. Only for wizard-server binaries (the room
#           plays no AI): with the room as B, A alone.
#   side-full, side-paced, side-search  (not in the default ROWS) the full, paced or
#           search row's workload (side-search: both servers in the default
#           configuration, each side's AI decisions by agent printed too)
#           with A and B running at the same time, both on SERVER_CPU, each driven by
#           its own generator on BENCH_CPU (the order of starting alternates by pair):
#           another guest slowing the VM slows both in the same seconds, so each pair's
#           ratio A / B (CPU per move) is free of it; the script prints every pair's
#           ratio, their mean with two standard errors, and their median. Each side
#           carries the other's load on its CPU, so absolute CPU and p99 figures are
#           the alone rows'.
#   syscalls  (not in the default ROWS) the full row's workload with `strace -c -f`
#           attached to the server for the window: system calls per move, by call.
#           strace slows the server, so its CPU figures are not kept; the counts are
#           what the run is for, and they do not depend on the machine's load.
#
# Settings (environment): DURATION (measured window per run, s, default 20), PAIRS
# (interleaved pairs per row, default 2), ROWS, FULL_GAMES, PACED_GAMES, QUOTA_GAMES,
# QUOTA_PERCENT, SEARCH_GAMES (1000), STORE (memory: the store of the 4-human rows;
# `sqlite` for a fresh SQLite file), SEARCH_STORE (sqlite: the default configuration's),
# BUILD (1: build the release binaries first; 0: use those in TARGET_DIR and A/B as
# given), TARGET_DIR (CARGO_TARGET_DIR or target), A / B (binaries; default
# TARGET_DIR/release/wizard-server and wizard-bench-room), BENCH (the generator, default
# TARGET_DIR/release/wizard-bench), HISTORY (one JSON line per
# run, default bench/perf17.jsonl), LABEL (default the commit), SERVER_CPU / BENCH_CPU
# (taskset CPU lists, default 0 / 1; empty: not pinned), A_ARGS / B_ARGS (extra
# generator arguments for A's and B's runs, e.g. A_ARGS="--deltas 1" B_ARGS="--deltas 0"
# with A = B: one server with and without state deltas).
#
# Time: each run lasts ramp + warm-up + DURATION + up to 5 s (full and quota: 5 s +
# DURATION; paced and search: 15 s + DURATION); the whole script about
# PAIRS x (2 x (3 x DURATION + 25) + DURATION + 15) s plus the builds. Everything it
# starts is stopped on exit (a server by its pid, the cgroup removed).
#
# The 4-human rows run wizard-server with EMBEDDED_AI=0 (no AI seats to play) and
# TRICK_PAUSE=0 (the room replays no pauses, so both sides see the same moves per
# second); the room speaks only what `wizard-bench --humans 4 --seats 4` uses
# (bench-room/src/lib.rs).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-20}
PAIRS=${PAIRS:-2}
ROWS=${ROWS:-full paced quota search}
FULL_GAMES=${FULL_GAMES:-100}
PACED_GAMES=${PACED_GAMES:-1000}
QUOTA_GAMES=${QUOTA_GAMES:-30}
QUOTA_PERCENT=${QUOTA_PERCENT:-15}
SEARCH_GAMES=${SEARCH_GAMES:-1000}
STORE=${STORE:-memory}
SEARCH_STORE=${SEARCH_STORE:-sqlite}
# THINK_JITTER_MS: the paced rows' bots draw each think time within this much of 1.5 s
# (wizard-bench --think-jitter-ms; default 0, every bot thinks exactly 1.5 s).
JITTER="--think-jitter-ms ${THINK_JITTER_MS:-0}"
TARGET_DIR=${TARGET_DIR:-${CARGO_TARGET_DIR:-target}}
HISTORY=${HISTORY:-bench/perf17.jsonl}
LABEL=${LABEL:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
SERVER_CPU=${SERVER_CPU-0}
BENCH_CPU=${BENCH_CPU-1}
RUN_ID="perf17-${LABEL// /_}-$(date -u +%Y%m%dT%H%M%S)"

if [ "${BUILD:-1}" = 1 ]; then
  bench/build_release.sh --target-dir "$TARGET_DIR" >&2
fi
BIN="$TARGET_DIR/release"
A=${A:-$BIN/wizard-server}
B=${B:-$BIN/wizard-bench-room}
BENCH=${BENCH:-$BIN/wizard-bench}
for f in "$A" "$B" "$BENCH"; do
  [ -x "$f" ] || { echo "perf17: no executable $f (BUILD=1 builds it)" >&2; exit 2; }
done
# A binary is the room when it says so (it refuses arguments with its usage line).
is_room() { "$1" --help 2>&1 | grep -q wizard-bench-room; }
mkdir -p "$(dirname "$HISTORY")"
pin() { if [ -n "$1" ]; then echo "taskset -c $1"; fi; }
ulimit -n "$(ulimit -Hn)" || true

# Nothing refused: the bots come from few addresses (as in docs/BENCHMARKS.md), and the
# load level stays normal, so that a busy machine's lag does not turn games away (this
# measures what a move costs, not admission).
BIG="LOAD_FORCE_LEVEL=normal MAX_ACTIVE_GAMES=20000 AI_MAX_INFLIGHT=20000 MAX_LOBBIES=20000 MAX_CONNECTIONS=20000 \
MAX_CONNECTIONS_PER_IP=100 MAX_SESSIONS=40000 LOBBY_CREATE_RATE=1000 \
MAX_LOBBIES_PER_IP=1000 MAX_GAMES_PER_IP=1000 RECONNECT_BURST=1000 SOCKET_BURST=1000"
HUMANS="EMBEDDED_AI=0 AI_MOVE_DELAY=0 TRICK_PAUSE=0 MESSAGE_RATE=100000 MESSAGE_BURST=100000"

SCRATCH=$(mktemp -d /tmp/perf17.XXXXXX)
SP=""
TRACER=""
# shellcheck source=bench/cgroup_lib.sh
source bench/cgroup_lib.sh # make_cgroup, and cleanup() for SERVER_PID and CG
CG=""
# The quota's cgroup, made in a subshell so that a skip (no cgroup here) ends only the
# quota row: prints its path, or nothing.
quota_cgroup() {
  (
    skip() {
      echo "perf17: quota row skipped: $*" >&2
      if [ -n "$CG" ]; then rmdir "$CG" 2>/dev/null || true; fi
      exit 1
    }
    trap - EXIT INT TERM
    make_cgroup >&2 && echo "$CG"
  ) || true
}
stop_server() {
  if [ -n "$SP" ] && kill -0 "$SP" 2>/dev/null; then
    kill -TERM "$SP" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SP" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SP" 2>/dev/null || true
  fi
  if [ -n "$SP" ]; then wait "$SP" 2>/dev/null || true; fi
  SP=""
  SERVER_PID=""
}
SIDE_PIDS=""
finish() {
  if [ -n "$TRACER" ]; then kill -INT "$TRACER" 2>/dev/null || true; fi
  for p in $SIDE_PIDS; do kill -TERM "$p" 2>/dev/null || true; done
  stop_server
  cleanup
  rm -rf "$SCRATCH"
}
trap finish EXIT
trap "exit 130" INT
trap "exit 143" TERM

load() { cut -d' ' -f1-3 /proc/loadavg; }

# start BINARY PORT CGROUP ENV...: starts a server or the room in the background (pid in
# SP), inside CGROUP when set, and waits until it answers.
start() {
  local bin=$1 port=$2 cg=$3 room=0
  shift 3
  if is_room "$bin"; then room=1; fi
  (
    if [ -n "$cg" ]; then echo "$BASHPID" >"$cg/cgroup.procs"; fi
    # shellcheck disable=SC2046
    exec env BIND=127.0.0.1:$port LOG_LEVEL=warn SHUTDOWN_GRACE=0 "$@" $(pin "$SERVER_CPU") "$bin"
  ) >>"$SCRATCH/server.log" 2>&1 &
  SP=$!
  SERVER_PID=$SP
  for _ in $(seq 300); do
    if [ $room = 1 ]; then
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    else
      curl -sf -o /dev/null "http://127.0.0.1:$port/health" && return 0
    fi
    kill -0 "$SP" 2>/dev/null || break
    sleep 0.1
  done
  echo "perf17: $bin did not come up on port $port" >&2
  tail -20 "$SCRATCH/server.log" >&2
  return 1
}

# agents_line PORT LABEL: the server's moves and AI decisions by agent, from its
# /metrics, as one JSON line in search.jsonl.
agents_line() {
  curl -sf "http://127.0.0.1:$1/metrics" >"$SCRATCH/metrics" || : >"$SCRATCH/metrics"
  python3 - "$SCRATCH/metrics" "$2" >>"$SCRATCH/search.jsonl" <<'EOF'
import json, re, sys
moves, agents, fallbacks = {}, {}, {}
for line in open(sys.argv[1]):
    if line.startswith("#"):
        continue
    m = re.match(r'wizard_moves(?:_total)?\{by="(\w+)"\} (\S+)', line)
    if m:
        moves[m.group(1)] = float(m.group(2))
    # Decisions by agent, if the server exports them (any family with an agent label).
    m = re.match(r'(wizard_\w+)\{[^}]*agent="(\w+)"[^}]*\} (\S+)', line)
    if m:
        agents[m.group(2)] = agents.get(m.group(2), 0) + float(m.group(3))
    m = re.match(r'wizard_fallbacks_total\{reason="(\w+)"\} (\S+)', line)
    if m and float(m.group(2)) > 0:
        fallbacks[m.group(1)] = float(m.group(2))
print(json.dumps({"label": sys.argv[2], "moves": moves, "agents": agents, "fallbacks": fallbacks}))
EOF
}

# run ROW SIDE BINARY CGROUP "ENV" BENCH_ARGS...: one measured run, its JSON line in
# HISTORY labelled "RUN_ID ROW SIDE".
run() {
  local row=$1 side=$2 bin=$3 cg=$4 env=$5 port=$((20000 + RANDOM % 20000))
  shift 5
  local extra=${A_ARGS:-}
  if [ "$side" = B ]; then extra=${B_ARGS:-}; fi
  # shellcheck disable=SC2086
  start "$bin" "$port" "$cg" $env
  echo "== $row $side $(basename "$bin") load $(load)" >&2
  TRACER=""
  if [ "$row" = syscalls ]; then
    # From the end of the ramp and warm-up (5 s) for the window; SIGINT detaches
    # strace, which then writes its counts.
    (
      sleep 5
      exec timeout -s INT "$DURATION" strace -c -f -p "$SP" -o "$SCRATCH/strace"
    ) 2>/dev/null &
    TRACER=$!
  fi
  # shellcheck disable=SC2046
  timeout $((DURATION + 120)) $(pin "$BENCH_CPU") "$BENCH" --url "ws://127.0.0.1:$port/ws" \
    --server-pid "$SP" --history "$HISTORY" --label "$RUN_ID $row $side" "$@" $extra \
    >"$SCRATCH/bench.out" 2>&1 || { echo "perf17: wizard-bench failed:" >&2; tail -5 "$SCRATCH/bench.out" >&2; }
  if [ -n "$TRACER" ]; then
    wait "$TRACER" || true
    TRACER=""
    python3 - "$SCRATCH/strace" "$RUN_ID $row $side" >>"$SCRATCH/syscalls.jsonl" <<'EOF'
import json, sys
calls = {}
try:
    lines = open(sys.argv[1]).read().splitlines()
except OSError:
    lines = []
for line in lines:
    f = line.split()
    # % time, seconds, usecs/call, calls, [errors], name; not the header, rules, total.
    if len(f) >= 5 and f[-1] not in ("total", "syscall") and f[3].isdigit():
        calls[f[-1]] = int(f[3])
print(json.dumps({"label": sys.argv[2], "calls": calls}))
EOF
    rm -f "$SCRATCH/strace"
  fi
  if [ "$row" = search ]; then agents_line "$port" "$RUN_ID $row $side"; fi
  stop_server
}

# store_env STORE [NAME]: the setting for a fresh store (NAME: its own directory, for
# two servers at once).
store_env() {
  if [ "$1" = sqlite ]; then
    rm -rf "$SCRATCH/store${2:-}"
    echo "STORE=sqlite:$SCRATCH/store${2:-}/wizard.db"
  else
    echo "STORE=memory"
  fi
}

# env_for SIDE_BINARY "EXTRA": the room ignores the server's settings; give it none.
env_for() { if is_room "$1"; then echo ""; else echo "$BIG $2"; fi; }

# side_pair ROW PAIR: A and B at once on SERVER_CPU, each with its own generator on
# BENCH_CPU; their JSON lines go to HISTORY, A's first.
side_pair() {
  local row=$1 pair=$2 order="A B" args side bin port bps=""
  case $row in
    side-full) args="--games $FULL_GAMES --humans 4 --seats 4 --pacing full --duration $DURATION --ramp 2 --warmup 3" ;;
    side-paced) args="--games $PACED_GAMES --humans 4 --seats 4 --pacing realistic $JITTER --duration $DURATION --ramp 10 --warmup 5" ;;
    side-search) args="--games $SEARCH_GAMES --humans 1 --seats 4 --pacing realistic $JITTER --duration $DURATION --ramp 10 --warmup 5" ;;
  esac
  local env_side
  if [ $((pair % 2)) = 0 ]; then order="B A"; fi
  declare -A port_of pid_of
  for side in $order; do
    bin=$A
    if [ "$side" = B ]; then bin=$B; fi
    port=$((20000 + RANDOM % 20000))
    if [ "$row" = side-search ]; then
      env_side="$BIG $(store_env "$SEARCH_STORE" "-$side")"
    else
      env_side=$(env_for "$bin" "$HUMANS $(store_env "$STORE" "-$side")")
    fi
    # shellcheck disable=SC2086
    start "$bin" "$port" "" $env_side
    port_of[$side]=$port
    pid_of[$side]=$SP
    SIDE_PIDS="$SIDE_PIDS $SP"
    SP=""
    SERVER_PID=""
  done
  echo "== $row pair $pair (started $order) load $(load)" >&2
  for side in $order; do
    local extra=${A_ARGS:-}
    if [ "$side" = B ]; then extra=${B_ARGS:-}; fi
    # shellcheck disable=SC2086
    timeout $((DURATION + 120)) $(pin "$BENCH_CPU") "$BENCH" --url "ws://127.0.0.1:${port_of[$side]}/ws" \
      --server-pid "${pid_of[$side]}" --history "$SCRATCH/side-$side.jsonl" --label "$RUN_ID $row $side" $args $extra \
      >"$SCRATCH/bench-$side.out" 2>&1 &
    bps="$bps $!"
  done
  for p in $bps; do wait "$p" || echo "perf17: a generator of $row pair $pair failed" >&2; done
  if [ "$row" = side-search ]; then
    for side in A B; do agents_line "${port_of[$side]}" "$RUN_ID $row $side"; done
  fi
  for p in $SIDE_PIDS; do kill -TERM "$p" 2>/dev/null || true; done
  for p in $SIDE_PIDS; do wait "$p" 2>/dev/null || true; done
  SIDE_PIDS=""
  for side in A B; do
    if [ -f "$SCRATCH/side-$side.jsonl" ]; then cat "$SCRATCH/side-$side.jsonl" >>"$HISTORY"; fi
    rm -f "$SCRATCH/side-$side.jsonl"
  done
}

echo "perf17: A=$A B=$B, $PAIRS pairs, DURATION=$DURATION s, rows: $ROWS; load $(load); nproc $(nproc)" >&2
for row in $ROWS; do
  case $row in
    full | paced | search) ;;
    side-full | side-paced | side-search)
      for pair in $(seq "$PAIRS"); do side_pair "$row" "$pair"; done
      continue
      ;;
    syscalls) command -v strace >/dev/null || { echo "perf17: no strace, syscalls row skipped" >&2; continue; } ;;
    quota)
      PERIOD_US=100000
      QUOTA_US=$((PERIOD_US * QUOTA_PERCENT / 100))
      if [ -z "$CG" ]; then CG=$(quota_cgroup); fi
      [ -n "$CG" ] || continue
      echo "perf17: cgroup $CG: $QUOTA_US us per $PERIOD_US us" >&2
      ;;
    *) echo "perf17: unknown row $row" >&2; exit 2 ;;
  esac
  for pair in $(seq "$PAIRS"); do
    for side in A B; do
      bin=$A
      if [ $side = B ]; then bin=$B; fi
      case $row in
        syscalls)
          run syscalls $side "$bin" "" "$(env_for "$bin" "$HUMANS $(store_env "$STORE")")" \
            --games "$FULL_GAMES" --humans 4 --seats 4 --pacing full --duration "$DURATION" --ramp 2 --warmup 3
          ;;
        full)
          run full $side "$bin" "" "$(env_for "$bin" "$HUMANS $(store_env "$STORE")")" \
            --games "$FULL_GAMES" --humans 4 --seats 4 --pacing full --duration "$DURATION" --ramp 2 --warmup 3
          ;;
        paced)
          run paced $side "$bin" "" "$(env_for "$bin" "$HUMANS $(store_env "$STORE")")" \
            --games "$PACED_GAMES" --humans 4 --seats 4 --pacing realistic $JITTER --duration "$DURATION" --ramp 10 --warmup 5
          ;;
        quota)
          run quota $side "$bin" "$CG" "$(env_for "$bin" "$HUMANS $(store_env "$STORE")")" \
            --games "$QUOTA_GAMES" --humans 4 --seats 4 --pacing full --duration "$DURATION" --ramp 2 --warmup 3
          ;;
        search)
          if is_room "$bin"; then continue; fi
          run search $side "$bin" "" "$BIG $(store_env "$SEARCH_STORE")" \
            --games "$SEARCH_GAMES" --humans 1 --seats 4 --pacing realistic $JITTER --duration "$DURATION" --ramp 10 --warmup 5
          ;;
      esac
    done
  done
done

echo "load at the end: $(load)" >&2
touch "$SCRATCH/search.jsonl" "$SCRATCH/syscalls.jsonl"
python3 - "$HISTORY" "$RUN_ID" "$SCRATCH/search.jsonl" "$A" "$B" "$LABEL" "$(load)" "$SCRATCH/syscalls.jsonl" <<'EOF'
import json, sys
history, run_id, search_file, a, b, label, load, syscalls_file = sys.argv[1:9]
runs = {}
for line in open(history):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    lab = d.get("settings", {}).get("label", "")
    if not lab.startswith(run_id + " "):
        continue
    _, row, side = lab.split(" ")
    runs.setdefault((row, side), []).append(d)
search = {}
side_search = {}
for line in open(search_file):
    d = json.loads(line)
    _, row, side = d["label"].split(" ")
    (side_search if row == "side-search" else search).setdefault(side, []).append(d)

def vals(row, side, f):
    return [f(d) for d in runs.get((row, side), [])]

def res(d):
    return d["results"]

def cpu_pct(d):
    return (d.get("server") or {}).get("cpu_percent_of_core")

def fmt(xs, unit="", nd=1):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return ", ".join(f"{x:.{nd}f}" for x in xs) + unit

def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None

def ratio(row, f):
    ma, mb = mean(vals(row, "A", f)), mean(vals(row, "B", f))
    return f"{ma / mb:.2f}" if ma and mb else "-"

rows = []
us = lambda d: res(d).get("server_cpu_us_per_move")
rows.append(("server CPU per move, full speed, 4 humans (us)", fmt(vals("full", "A", us)), fmt(vals("full", "B", us)), ratio("full", us)))
mps_core = lambda d: res(d).get("moves_per_core_second")
rows.append(("moves per core-second, full speed", fmt(vals("full", "A", mps_core), nd=0), fmt(vals("full", "B", mps_core), nd=0), ratio("full", mps_core)))
rows.append(("CPU for paced games of 4 humans (% of one core)", fmt(vals("paced", "A", cpu_pct), " %", 2), fmt(vals("paced", "B", cpu_pct), " %", 2), ratio("paced", cpu_pct)))
p99 = lambda d: res(d)["move_latency_ms"]["p99"]
rows.append(("move p99 at paced games of 4 humans (ms)", fmt(vals("paced", "A", p99), nd=2), fmt(vals("paced", "B", p99), nd=2), ratio("paced", p99)))
mps = lambda d: res(d)["accepted"]["moves_per_s"]
rows.append(("moves/s, paced 4 humans", fmt(vals("paced", "A", mps), nd=0), fmt(vals("paced", "B", mps), nd=0), ratio("paced", mps)))
rows.append(("moves/s at the quota, 4 humans", fmt(vals("quota", "A", mps), nd=0), fmt(vals("quota", "B", mps), nd=0), ratio("quota", mps)))
rows.append(("default config, paced 1 human + 3 AI: server CPU", fmt(vals("search", "A", cpu_pct), " %", 2), fmt(vals("search", "B", cpu_pct), " %", 2), ratio("search", cpu_pct)))
rows.append(("default config: CPU per move (us)", fmt(vals("search", "A", us)), fmt(vals("search", "B", us)), ratio("search", us)))

def ai_share(side, lines=search):
    out = []
    for d in lines.get(side, []):
        m, ag = d["moves"], d["agents"]
        ai, fb = m.get("ai", 0), m.get("fallback", 0)
        part = f"AI {ai:.0f} / fallback {fb:.0f}"
        if d.get("fallbacks"):
            part += " (" + ", ".join(f"{k} {v:.0f}" for k, v in sorted(d["fallbacks"].items())) + ")"
        if ag:
            total = sum(ag.values()) + fb
            part += f", search {100 * ag.get('search', 0) / total:.1f} %" if total else ""
        else:
            part += f" (AI {100 * ai / (ai + fb):.1f} %; no moves by agent in /metrics)" if ai + fb else ""
        out.append(part)
    return "; ".join(out) or "-"

rows.append(("default config: AI moves (server's whole life)", ai_share("A"), ai_share("B"), ""))
print(f"\nthe measure table, {label}, run {run_id}; load average at the end {load}")
print(f"A = {a}\nB = {b}\n")
print("| figure | A | B | A / B (means) |")
print("|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
# System calls per move (moves from the same run's generator line).
traced = {}
for line in open(syscalls_file):
    d = json.loads(line)
    _, row, side = d["label"].split(" ")
    traced.setdefault(side, []).append(d["calls"])
if traced:
    names = {}
    for side, runs_calls in traced.items():
        for calls in runs_calls:
            for n, c in calls.items():
                names[n] = names.get(n, 0) + c
    top = sorted(names, key=lambda n: -names[n])[:8]
    def per_move(side, name=None):
        out = []
        for calls, d in zip(traced.get(side, []), runs.get(("syscalls", side), [])):
            moves = res(d)["accepted"]["moves"]
            n = sum(calls.values()) if name is None else calls.get(name, 0)
            out.append(n / moves if moves else None)
        return out
    def r(name):
        ma, mb = mean(per_move("A", name)), mean(per_move("B", name))
        return f"{ma / mb:.2f}" if ma and mb else "-"
    print("\n| system calls per move (strace -c -f, full speed, 4 humans) | A | B | A / B |")
    print("|---|---|---|---|")
    print(f"| all | {fmt(per_move('A'), nd=2)} | {fmt(per_move('B'), nd=2)} | {r(None)} |")
    for n in top:
        print(f"| `{n}` | {fmt(per_move('A', n), nd=2)} | {fmt(per_move('B', n), nd=2)} | {r(n)} |")

# Side by side: each pair's A / B, then their mean, two standard errors and median.
sys.path.insert(0, "bench")
from ratios import summary
for row, name, f in (("side-full", "server CPU per move, full speed, 4 humans (us)", us),
                     ("side-paced", "server CPU per move, paced 4 humans (us)", us),
                     ("side-search", "server CPU per move, default config, paced 1 human + 3 AI (us)", us)):
    pa, pb = vals(row, "A", f), vals(row, "B", f)
    if not pa or not pb:
        continue
    ratios = [x / y for x, y in zip(pa, pb) if x and y]
    print(f"\n| {row}: pair | {name}: A | B | A / B | move p99 ms A, B | moves A, B |")
    print("|---|---|---|---|---|---|")
    for i, (da, db) in enumerate(zip(runs[(row, "A")], runs[(row, "B")])):
        print(f"| {i + 1} | {f(da)} | {f(db)} | {f(da) / f(db):.3f} | {p99(da)}, {p99(db)} | "
              f"{res(da)['accepted']['moves']}, {res(db)['accepted']['moves']} |")
    if ratios:
        print("\n" + summary(ratios, f"{row}: A / B", "pair"))
    if row == "side-search":
        for side in "AB":
            print(f"\nside-search {side}, CPU % of a core: {fmt(vals(row, side, cpu_pct), ' %', 2)}; "
                  f"AI moves (server's whole life): {ai_share(side, side_search)}")

refused = [(k, res(d)["refused"]["total"], res(d).get("errors")) for k, ds in runs.items() for d in ds
           if res(d)["refused"]["total"] or res(d).get("errors")]
if refused:
    print("\nruns with refusals or errors:", refused)
EOF
