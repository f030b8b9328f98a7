#!/usr/bin/env bash
# System calls and wake-ups per move at full speed, 4 humans per game (full speed). For
# each server binary (LABEL=PATH), RUNS times, interleaved: the server plays the "Full
# speed" command of docs/BENCHMARKS.md (`taskset -c $SERVER_CPUS`) against wizard-bench
# (`taskset -c $BENCH_CPUS`, GAMES games). After the ramp and warm-up come three
# windows of WINDOW seconds each, every count divided by the moves applied in its
# window (`wizard_moves_total`):
#   1. nothing attached: server CPU (utime+stime) and context switches (voluntary and
#      not, all threads) per move;
#   2. `perf stat` on the system call tracepoints (cheap: the server's batching does not
#      change): all calls, futex, epoll_pwait, sendto, recvfrom, read, write, epoll_ctl,
#      timerfd_settime;
#   3. `strace -c -f` (slows the server, so moves batch more).
# Figures only: nothing is asserted. Usage:
#   bench/wake_counts.sh base=/tmp/base/wizard-server new=target/release/wizard-server
# Env: BENCH (the wizard-bench binary), GAMES (100), WINDOW (6), RUNS (2),
# SERVER_CPUS (0), BENCH_CPUS (1), SERVER_ENV (extra K=V settings).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH="${BENCH:-${CARGO_TARGET_DIR:-target}/release/wizard-bench}"
GAMES="${GAMES:-100}"
WINDOW="${WINDOW:-6}"
RUNS="${RUNS:-2}"
SERVER_CPUS="${SERVER_CPUS:-0}"
BENCH_CPUS="${BENCH_CPUS:-1}"
BIG="MAX_ACTIVE_GAMES=20000 AI_MAX_INFLIGHT=20000 MAX_LOBBIES=20000 MAX_CONNECTIONS=20000 \
MAX_CONNECTIONS_PER_IP=100 MAX_SESSIONS=40000 LOBBY_CREATE_RATE=1000 \
MAX_LOBBIES_PER_IP=1000 MAX_GAMES_PER_IP=1000 RECONNECT_BURST=1000 SOCKET_BURST=1000"
FULL="AI_MOVE_DELAY=0 TRICK_PAUSE=0 MESSAGE_RATE=100000 MESSAGE_BURST=100000"
ulimit -n 20000 || true
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

moves() { curl -fsS "http://127.0.0.1:$1/metrics" | awk '/^wizard_moves_total/ { s += $2 } END { print s + 0 }'; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
switches() { cat /proc/"$1"/task/*/status | awk '/^voluntary_ctxt/ { v += $2 } /^nonvoluntary_ctxt/ { n += $2 } END { print v, n }'; }

one_run() {
    local label="$1" bin="$2" port=$((20000 + RANDOM % 20000))
    # shellcheck disable=SC2086
    env BIND="127.0.0.1:$port" EMBEDDED_AI=0 LOG_LEVEL=warn SHUTDOWN_GRACE=0 STORE=memory \
        $BIG $FULL ${SERVER_ENV:-} taskset -c "$SERVER_CPUS" "$bin" > "$TMP/server.log" 2>&1 &
    local sp=$!
    for _ in $(seq 100); do
        curl -fsS "http://127.0.0.1:$port/health" > /dev/null 2>&1 && break
        sleep 0.1
    done
    taskset -c "$BENCH_CPUS" "$BENCH" --url "ws://127.0.0.1:$port/ws" --games "$GAMES" --humans 4 \
        --pacing full --duration $((3 * WINDOW + 15)) --ramp 2 --warmup 3 --history none \
        > "$TMP/bench.log" 2>&1 &
    local bp=$!
    sleep 6
    local hz m0 c0 s0 m1 c1 s1
    hz=$(getconf CLK_TCK)
    m0=$(moves "$port"); c0=$(cpu_ticks "$sp"); s0=$(switches "$sp")
    sleep "$WINDOW"
    m1=$(moves "$port"); c1=$(cpu_ticks "$sp"); s1=$(switches "$sp")
    read -r v0 n0 <<< "$s0"; read -r v1 n1 <<< "$s1"
    local dm=$((m1 - m0))
    m0=$(moves "$port")
    perf stat -x, -p "$sp" -e raw_syscalls:sys_enter -e syscalls:sys_enter_futex \
        -e syscalls:sys_enter_epoll_pwait -e syscalls:sys_enter_sendto \
        -e syscalls:sys_enter_recvfrom -e syscalls:sys_enter_read -e syscalls:sys_enter_write \
        -e syscalls:sys_enter_epoll_ctl -e syscalls:sys_enter_timerfd_settime \
        -o "$TMP/perf.csv" -- sleep "$WINDOW" || true
    m1=$(moves "$port")
    local pm=$((m1 - m0))
    m0=$(moves "$port")
    timeout -s INT "$WINDOW" strace -c -f -p "$sp" -o "$TMP/strace.txt" > /dev/null 2>&1 || true
    m1=$(moves "$port")
    local sm=$((m1 - m0))
    kill -TERM "$sp" 2> /dev/null || true
    wait "$sp" 2> /dev/null || true
    kill "$bp" 2> /dev/null || true
    wait "$bp" 2> /dev/null || true
    python3 - "$label" "$dm" "$((c1 - c0))" "$hz" "$((v1 - v0))" "$((n1 - n0))" "$pm" "$TMP/perf.csv" "$sm" "$TMP/strace.txt" "$WINDOW" << 'PY'
import sys
label, dm, ticks, hz, vol, nonvol, pm, perf, sm, strace, window = sys.argv[1:]
dm, ticks, hz, vol, nonvol, pm, sm, window = map(float, (dm, ticks, hz, vol, nonvol, pm, sm, window))
out = [label, "moves/s %.0f" % (dm / window), "cpu/move %.1f us" % (ticks / hz * 1e6 / max(dm, 1)),
       "ctxsw/move %.2f vol %.2f nonvol" % (vol / max(dm, 1), nonvol / max(dm, 1))]
per = []
for line in open(perf):
    f = line.strip().split(",")
    if len(f) > 2 and f[0].replace(".", "").isdigit():
        name = f[2].split(":")[-1].replace("sys_enter_", "").replace("sys_enter", "all")
        per.append("%s %.2f" % (name, float(f[0]) / max(pm, 1)))
out.append("perf (%.0f moves/s): " % (pm / window) + ", ".join(per))
calls = {}
for line in open(strace):
    f = line.split()
    if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
        calls[f[-1]] = int(f[3])
total = sum(calls.values())
top = sorted(calls.items(), key=lambda kv: -kv[1])[:8]
out.append("strace (%.0f moves/s): all %.2f; " % (sm / window, total / max(sm, 1)) +
           ", ".join("%s %.2f" % (k, v / max(sm, 1)) for k, v in top))
print(" | ".join(out), flush=True)
PY
}

for _ in $(seq "$RUNS"); do
    for pair in "$@"; do
        one_run "${pair%%=*}" "${pair#*=}"
    done
done
