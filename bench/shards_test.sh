#!/usr/bin/env bash
# The shards' test on loopback: HAProxy with deploy/haproxy.cfg in front of 3 shards (A, B,
# C), each two real wizard-server processes on one store (the one holding the store's
# lock serves, the other waits as its standby), and wizard-bench's bots: hosts create
# lobbies at /ws, guests join at /ws/<code's shard>, every bot comes back after its
# connection ends (--resume) at /ws/<token's shard>. While they play:
#
#   1. kill -9 the serving process of shard A: its standby takes over; every bot of A is
#      back in its game with nothing it saw lost (failover time: from the kill until
#      the last of A's bots is back);
#   2. shard C refuses new games (LOAD_FORCE_LEVEL=overloaded on both its processes):
#      HAProxy takes it out of /ws, new lobbies go to A and B only, C's games go on;
#   3. every shard is restarted in turn (SIGTERM; its standby takes over): no game lost;
#   4. the bots count every connection that landed on a shard not owning its code or
#      token (wrong_shard, 421, a token or lobby of another shard): 0 misrouted.
#
# Before the bots: the AI services' route through HAProxy's internal port reaches a
# shard's /internal/ai, and the players' port forwards neither /internal/ai nor /metrics.
#
# Then the proxy hop's cost: the same workload on shard A straight and through HAProxy
# (B and C drained), interleaved, PAIRS times: move latency and CPU per move of the shard
# and of HAProxy. Figures are printed; the checks above fail the script (exit 1).
#
# Settings (environment):
#   SHARD_STORE  sqlite (default: one file per shard in a scratch folder; a standby waits
#                on the file's lock) or postgres (every shard on one PostgreSQL; a standby
#                waits on the shard's advisory lock)
#   PG_URL       with postgres: the database to use; unset, a scratch PostgreSQL 15 is
#                started on loopback for the run (bench/pg_scratch.sh, Debian's package,
#                installed when missing) and stopped at the end
#   GAMES        games of the main run (default 24: 2 bot humans and 2 AI seats each)
#   PAIRS        proxy-hop pairs (default 2; 0 skips the measurement)
#   BUILD        1 (default): cargo build --release first; 0: use TARGET_DIR's binaries
#   TARGET_DIR   default CARGO_TARGET_DIR or target
# Needs haproxy (Debian's package: installed with apt-get when missing and running as
# root; its service is never started) and curl. Every process it starts is stopped on
# exit; the whole run is bounded (about 4 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

SHARD_STORE=${SHARD_STORE:-sqlite}
PG_URL=${PG_URL:-}
GAMES=${GAMES:-24}
PAIRS=${PAIRS:-2}
TARGET_DIR=${TARGET_DIR:-${CARGO_TARGET_DIR:-target}}
BIN="$TARGET_DIR/release"
SHARDS="A B C"

say() { printf '\n--- %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }
fail() {
	printf 'FAIL: %s\n' "$1" >&2
	FAILED=1
}
now_ms() { date +%s%3N; }

# deploy/shards.sh speaks to HAProxy's runtime API with socat.
if ! command -v haproxy >/dev/null || ! command -v socat >/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "installing Debian's haproxy and socat (no service is started)"
		export DEBIAN_FRONTEND=noninteractive
		# policy-rc.d 101: the package's scripts start no service.
		restore_policy=""
		if [ ! -e /usr/sbin/policy-rc.d ]; then
			printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
			chmod +x /usr/sbin/policy-rc.d
			restore_policy=1
		fi
		apt-get install -y -qq haproxy socat >/dev/null 2>&1 ||
			{ apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq haproxy socat >/dev/null 2>&1; } || true
		[ -z "$restore_policy" ] || rm -f /usr/sbin/policy-rc.d
	fi
fi
command -v haproxy >/dev/null || {
	echo "SKIPPED: haproxy is not installed (apt-get install haproxy): the shard test did not run"
	exit 0
}
command -v socat >/dev/null || {
	echo "SKIPPED: socat is not installed (apt-get install socat; deploy/shards.sh needs it): the shard test did not run"
	exit 0
}
haproxy -v | sed -n 1p

if [ "${BUILD:-1}" = 1 ]; then
	bench/build_release.sh --target-dir "$TARGET_DIR" >&2
fi
ulimit -n "$(ulimit -Hn)" || true

SCRATCH=$(mktemp -d /tmp/wizard-shards-test.XXXXXX)
declare -A PID PORT
HAP=""
PG_SCRATCH=""
FAILED=0
cleanup() {
	local p
	for p in "${PID[@]}" $HAP; do
		[ -z "$p" ] || kill -9 "$p" 2>/dev/null || true
	done
	for p in "${PID[@]}" $HAP; do
		[ -z "$p" ] || wait "$p" 2>/dev/null || true
	done
	if [ -n "$PG_SCRATCH" ]; then
		bash bench/pg_scratch.sh stop "$PG_SCRATCH"
		rm -rf "$PG_SCRATCH"
	fi
	if [ "${KEEP_SCRATCH:-0}" = 1 ]; then echo "scratch kept: $SCRATCH"; else rm -rf "$SCRATCH"; fi
}
trap cleanup EXIT

if [ "$SHARD_STORE" = postgres ] && [ -z "$PG_URL" ]; then
	# Its own folder: the postgres user cannot reach into the scratch folder (0700).
	PG_SCRATCH=$(mktemp -d /tmp/wizard-shards-pg.XXXXXX)
	rc=0
	PG_URL=$(bash bench/pg_scratch.sh start "$PG_SCRATCH") || rc=$?
	if [ "$rc" = 3 ]; then
		echo "SKIPPED: PostgreSQL is not installed and could not be (above): the shard test did not run"
		exit 0
	elif [ "$rc" != 0 ]; then
		echo "FAIL: the scratch PostgreSQL did not start (above)" >&2
		exit 1
	fi
	echo "scratch PostgreSQL: $PG_URL"
fi

BASE=$((20000 + RANDOM % 20000))
HAP_PORT=$BASE
i=0
for s in $SHARDS; do
	i=$((i + 1))
	PORT[${s}_1]=$((BASE + 10 * i + 1))
	PORT[${s}_2]=$((BASE + 10 * i + 2))
	mkdir -p "$SCRATCH/$s"
done

store_of() { # shard -> its STORE
	case "$SHARD_STORE" in
	sqlite) echo "sqlite:$SCRATCH/$1/wizard.db" ;;
	postgres) echo "$PG_URL" ;;
	*)
		echo "SHARD_STORE: sqlite or postgres, not $SHARD_STORE" >&2
		exit 2
		;;
	esac
}

# Nothing refused for capacity: the bots come from few addresses.
BIG=(MAX_ACTIVE_GAMES=20000 AI_MAX_INFLIGHT=20000 MAX_LOBBIES=20000 MAX_CONNECTIONS=20000
	MAX_CONNECTIONS_PER_IP=200 MAX_SESSIONS=40000 LOBBY_CREATE_RATE=1000 MAX_LOBBIES_PER_IP=1000
	MAX_GAMES_PER_IP=1000 RECONNECT_BURST=1000 RECONNECT_RATE=1000 SOCKET_BURST=1000 SOCKET_RATE=1000
	MESSAGE_RATE=1000 MESSAGE_BURST=1000
	# On a busy CI machine a shard could find itself overloaded and leave /ws: the level
	# is pinned (phase 2 pins C's to overloaded on purpose).
	LOAD_FORCE_LEVEL=normal)
# Quick games: a 4-seat game is 540 moves.
QUICK=(AI_MOVE_DELAY=0.02 TRICK_PAUSE=0.05)

# start SLOT [ENV...]: starts the process of slot SLOT (e.g. A_1) on its port, on its
# shard's store; returns once it listens (it serves) or says it waits for the store (a
# standby: it refuses connections until it holds the store's lock).
start() {
	local slot=$1 shard=${1%_*} n log="$SCRATCH/$1.log" lines
	shift
	touch "$log"
	# Only the new process's lines count (the slot's log holds its predecessors').
	lines=$(wc -l <"$log")
	env BIND="127.0.0.1:${PORT[$slot]}" SHARD_ID="$shard" STORE="$(store_of "$shard")" \
		EMBEDDED_AI=0 TRUSTED_PROXIES=127.0.0.1 LOG_LEVEL=info SHUTDOWN_GRACE=0 AI_SHARED_SECRET=shards-test \
		"${BIG[@]}" "${QUICK[@]}" "$@" \
		"$BIN/wizard-server" >>"$SCRATCH/$slot.log" 2>&1 &
	PID[$slot]=$!
	for n in $(seq 300); do
		if (exec 3<>"/dev/tcp/127.0.0.1/${PORT[$slot]}") 2>/dev/null; then return 0; fi
		if tail -n +"$((lines + 1))" "$log" | grep "Waiting for the store" >/dev/null; then return 0; fi
		kill -0 "${PID[$slot]}" 2>/dev/null || break
		sleep 0.1
	done
	echo "slot $slot does not listen" >&2
	tail -n 20 "$SCRATCH/$slot.log" >&2
	exit 1
}

# serving SHARD: the slot whose process answers /health (the other waits for the store).
serving() {
	local n
	for n in $(seq 100); do
		for slot in "$1_1" "$1_2"; do
			if curl -sf -m 0.3 -o /dev/null "http://127.0.0.1:${PORT[$slot]}/health"; then
				echo "$slot"
				return 0
			fi
		done
	done
	echo "no process of shard $1 answers /health" >&2
	exit 1
}
other() { case "$1" in *_1) echo "${1%_1}_2" ;; *) echo "${1%_2}_1" ;; esac }

# stop SLOT SIGNAL: signals the slot's process and reaps it; one that has not exited
# after 10 s is killed (a standby blocked on the store's lock may not see SIGTERM).
stop() {
	local pid=${PID[$1]} n state
	kill -"$2" "$pid" 2>/dev/null || true
	for n in $(seq 100); do
		state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null || echo gone)
		if [ "$state" = Z ] || [ "$state" = gone ]; then break; fi
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	# (braces: bash reports a killed job on the shell's stderr)
	{ wait "$pid"; } 2>/dev/null || true
	PID[$1]=""
}

AI_PORT=$((BASE + 1))
export HAPROXY_SOCKET="$SCRATCH/haproxy.sock" HAPROXY_MAP_DIR="$SCRATCH" HAPROXY_BIND="127.0.0.1:$HAP_PORT" \
	HAPROXY_AI_BIND="127.0.0.1:$AI_PORT"
for s in $SHARDS; do
	export "SHARD_${s}_1=127.0.0.1:${PORT[${s}_1]}" "SHARD_${s}_2=127.0.0.1:${PORT[${s}_2]}"
done
cp deploy/shards.map "$SCRATCH/shards.map"
shards() { sh deploy/shards.sh "$@"; }

# wait_new_games SHARD UP|DOWN: until both servers of SHARD in new_games are (not) UP.
wait_new_games() {
	local n up
	for n in $(seq 200); do
		up=$(shards show | awk -v s="$1" '$1 == "new_games" && index($2, s "_") == 1 && $3 ~ /^UP/ { k++ } END { print k + 0 }')
		if { [ "$2" = UP ] && [ "$up" -gt 0 ]; } || { [ "$2" = DOWN ] && [ "$up" = 0 ]; }; then return 0; fi
		sleep 0.1
	done
	echo "shard $1 not $2 in new_games" >&2
	shards show >&2
	exit 1
}

say "3 shards, each with a standby (STORE: $SHARD_STORE), and HAProxy on port $HAP_PORT"
for s in $SHARDS; do
	start "${s}_1"
	serving "$s" >/dev/null
	start "${s}_2"
done
haproxy -db -f deploy/haproxy.cfg >"$SCRATCH/haproxy.log" 2>&1 &
HAP=$!
for _ in $(seq 100); do
	[ -S "$HAPROXY_SOCKET" ] && break
	sleep 0.1
done
[ -S "$HAPROXY_SOCKET" ] || {
	cat "$SCRATCH/haproxy.log" >&2
	echo "HAProxy did not start" >&2
	exit 1
}
for s in $SHARDS; do WAIT_SECONDS=20 shards wait "$s" up; done
# HAProxy starts with every server up until its checks say otherwise: wait until the
# standbys (which refuse connections while they wait for the store) are counted down,
# so that the one serving process of each shard is all /ws balances over.
for _ in $(seq 100); do
	up=$(shards show | awk '$1 == "new_games" && $3 == "UP" && $4 !~ /\// { n++ } END { print n + 0 }')
	all=$(shards show | awk '$1 == "new_games" && $3 == "UP" { n++ } END { print n + 0 }')
	[ "$up" = 3 ] && [ "$all" = 3 ] && break
	sleep 0.1
done
shards show

# The AI services' route (compose.shards.yaml): /internal/ai/<id> on HAProxy's internal
# port reaches that shard's /internal/ai (101 with the secret, the shard's 403 without);
# the players' port never forwards /internal/ai.
upgrade() { # URL [header]: the status of a websocket upgrade
	curl -s -o /dev/null -w '%{http_code}' --max-time 2 -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
		-H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' ${2:+-H "$2"} "$1" || true
}
for case in "http://127.0.0.1:$AI_PORT/internal/ai/B|Authorization: Bearer shards-test|101" \
	"http://127.0.0.1:$AI_PORT/internal/ai/B||403" \
	"http://127.0.0.1:$AI_PORT/internal/ai/Z|Authorization: Bearer shards-test|404" \
	"http://127.0.0.1:$HAP_PORT/internal/ai|Authorization: Bearer shards-test|404" \
	"http://127.0.0.1:$HAP_PORT/internal/ai/B|Authorization: Bearer shards-test|404" \
	"http://127.0.0.1:$HAP_PORT/metrics||404"; do
	IFS='|' read -r url header want <<<"$case"
	got=$(upgrade "$url" "$header")
	if [ "$got" = "$want" ]; then echo "ok   $url ${header:+(secret) }-> $got"; else fail "$url ${header:+(secret) }-> $got, expected $want"; fi
done

# ------------------------------------------------------------ the main run

MAIN_S=100
say "the main run: $GAMES games for $MAIN_S s, bots resume and follow shard routes"
"$BIN/wizard-bench" --url "ws://127.0.0.1:$HAP_PORT/ws" --games "$GAMES" --humans 2 --seats 4 \
	--pacing realistic --think-ms 30 --duration "$MAIN_S" --ramp 3 --warmup 1 \
	--resume 1 --shard-routes 1 --resume-log "$SCRATCH/resume.log" \
	--history "$SCRATCH/main.jsonl" --label "shards main" >"$SCRATCH/main.out" 2>&1 &
BENCH=$!
T0=$(now_ms)
at() { # wait until S seconds into the main run
	local wait_ms=$(($1 * 1000 - ($(now_ms) - T0)))
	[ "$wait_ms" -le 0 ] || sleep "$(awk -v m="$wait_ms" 'BEGIN { print m / 1000 }')"
}

# 1. kill -9 the serving process of A; the killed slot comes back as the new standby.
at 15
victim=$(serving A)
say "kill -9 $victim (shard A's serving process)"
KILL_MS=$(now_ms)
stop "$victim" KILL
start "$victim"
WAIT_SECONDS=20 shards wait A up
echo "shard A served by $(serving A) again, $(($(now_ms) - KILL_MS)) ms after the kill"

# 2. C refuses new games: both its processes restarted with LOAD_FORCE_LEVEL=overloaded
# (the standby first, then the serving one: the standby takes over, overloaded).
at 30
say "shard C refuses new games (LOAD_FORCE_LEVEL=overloaded)"
c_serving=$(serving C)
c_standby=$(other "$c_serving")
stop "$c_standby" KILL
start "$c_standby" LOAD_FORCE_LEVEL=overloaded
stop "$c_serving" TERM
start "$c_serving" LOAD_FORCE_LEVEL=overloaded
WAIT_SECONDS=20 shards wait C up
wait_new_games C DOWN
moves_of() { # the moves shard $1's serving process counted
	curl -sf -m 2 "http://127.0.0.1:${PORT[$(serving "$1")]}/metrics" |
		awk '/^wizard_moves_total/ { n += $2 } END { print n + 0 }'
}
C_MOVES_0=$(moves_of C)
echo "new lobbies for 10 s while C refuses them"
"$BIN/wizard-bench" --url "ws://127.0.0.1:$HAP_PORT/ws" --games 12 --humans 2 --seats 4 \
	--pacing realistic --think-ms 30 --duration 8 --ramp 2 --warmup 0 \
	--shard-routes 1 --history "$SCRATCH/overload.jsonl" --label "shards overload" >"$SCRATCH/overload.out" 2>&1 ||
	fail "the new-lobby run during C's overload failed: $(tail -n 3 "$SCRATCH/overload.out")"
C_MOVES_1=$(moves_of C)
echo "moves on C while it refused new games: $((C_MOVES_1 - C_MOVES_0))"

# 3. Every shard restarted in turn (C without the forced level): SIGTERM, the standby
# takes over, a new standby in the freed slot.
at 50
for s in $SHARDS; do
	say "restart shard $s (SIGTERM to its serving process)"
	cur=$(serving "$s")
	stby=$(other "$cur")
	if [ "$s" = C ]; then
		stop "$stby" KILL
		start "$stby"
	fi
	stop "$cur" TERM
	start "$cur"
	WAIT_SECONDS=20 shards wait "$s" up
	sleep 8
done
wait_new_games C UP

say "waiting for the main run's end"
wait "$BENCH" || fail "the main run failed: $(tail -n 3 "$SCRATCH/main.out")"

# ------------------------------------------------------------ checks and figures

say "checks"
python3 - "$SCRATCH" "$KILL_MS" "$C_MOVES_0" "$C_MOVES_1" <<'EOF' || FAILED=1
import json, sys
scratch, kill_ms, c0, c1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
main = json.loads(open(f"{scratch}/main.jsonl").readline())
over = json.loads(open(f"{scratch}/overload.jsonl").readline())
r, o = main["results"], over["results"]
failures = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)
res, sh = r["resume"], r["shards"]
check(sh["misrouted"] == 0 and o["shards"]["misrouted"] == 0,
      f"0 misrouted connections (main {sh['misrouted']}, new lobbies {o['shards']['misrouted']}) {sh['misroutes'] + o['shards']['misroutes']}")
check(r["errors"].get("WrongShard", 0) == 0, f"no wrong_shard answer ({r['errors']})")
check(res["failed"] == 0, f"every bot whose connection ended came back to its game (failed {res['failed']}, resumed {res['resumed']}, ended {res['ended']})")
check(res["mismatched"] == 0, f"nothing a bot saw was lost ({res['mismatched']} mismatched: {res['mismatches']})")
check(r["accepted"]["games_unscored"] == 0, "every finished game has every round scored")
fin = sh["finished_by_shard"]
check(all(fin.get(s, 0) > 0 for s in "ABC"), f"games finished on every shard {fin}")
check(all(sh["lobbies_by_shard"].get(s, 0) > 0 for s in "ABC"), f"/ws placed lobbies on every shard {sh['lobbies_by_shard']}")
placed = o["shards"]["lobbies_by_shard"]
check(placed.get("C", 0) == 0 and sum(placed.values()) == o["accepted"]["lobbies"] > 0,
      f"no new lobby on C while it refused new games {placed}")
check(c1 > c0, f"C's games went on while it refused new games ({c1 - c0} moves)")
# Failover: from the kill until the last bot of A that lost its connection then was back.
events = [l.split() for l in open(f"{scratch}/resume.log")]
a_back = [int(back) for shard, broke, back in events if shard == "A" and kill_ms - 200 <= int(broke) <= kill_ms + 5000]
check(len(a_back) > 0, f"bots of A came back after the kill ({len(a_back)})")
lat = res["latency_ms"]
print()
print(f"failover (kill -9 of A's serving process until all {len(a_back)} of its bots were back): "
      f"{(max(a_back) - kill_ms) if a_back else 'n/a'} ms")
print(f"reconnect (a bot's connection ending to its first state back, {lat['count']} reconnects over "
      f"1 kill and 4 SIGTERMs, jitter 100-500 ms included): p50 {lat['p50']} p99 {lat['p99']} max {lat['max']} ms")
print(f"main run: {r['accepted']['games_finished']} games finished, {r['accepted']['moves']} moves, "
      f"move p99 {r['move_latency_ms']['p99']} ms, lobbies by shard {sh['lobbies_by_shard']}")
sys.exit(1 if failures else 0)
EOF

# ------------------------------------------------------------ the proxy hop

if [ "$PAIRS" -gt 0 ]; then
	say "the proxy hop: the same workload on shard A, straight and through HAProxy (B and C drained), $PAIRS pairs"
	shards drain B
	shards drain C
	a_slot=$(serving A)
	hap_cpu() { awk '{ print $14 + $15 }' "/proc/$HAP/stat"; }
	for pair in $(seq "$PAIRS"); do
		for via in direct haproxy; do
			url="ws://127.0.0.1:$HAP_PORT/ws"
			[ "$via" = haproxy ] || url="ws://127.0.0.1:${PORT[$a_slot]}/ws"
			h0=$(hap_cpu)
			"$BIN/wizard-bench" --url "$url" --server-pid "${PID[$a_slot]}" --games 20 --humans 2 --seats 4 \
				--pacing realistic --think-ms 30 --duration 12 --ramp 2 --warmup 2 --shard-routes 1 \
				--history "$SCRATCH/hop.jsonl" --label "hop $via" >/dev/null 2>&1 || fail "hop run $via $pair failed"
			h1=$(hap_cpu)
			echo "$via $((h1 - h0))" >>"$SCRATCH/hop_cpu.txt"
		done
	done
	python3 - "$SCRATCH" "$(getconf CLK_TCK)" <<'EOF' || FAILED=1
import json, sys
scratch, tck = sys.argv[1], int(sys.argv[2])
runs = [json.loads(l) for l in open(f"{scratch}/hop.jsonl")]
cpu = [l.split() for l in open(f"{scratch}/hop_cpu.txt")]
rows = {"direct": [], "haproxy": []}
for run, (via, ticks) in zip(runs, cpu):
    r = run["results"]
    moves = r["accepted"]["moves"]
    if moves < 100:
        print(f"(a {via} run left out: {moves} moves, refused {r['refused']})")
        continue
    hap_us = int(ticks) / tck * 1e6 / moves
    rows[via].append((r["move_latency_ms"]["p50"], r["move_latency_ms"]["p99"], r["server_cpu_us_per_move"], hap_us, moves,
                      r["shards"]["misrouted"]))
print("| route | move p50 ms | move p99 ms | shard CPU us/move | HAProxy CPU us/move | moves | misrouted |")
print("|---|---|---|---|---|---|---|")
for via, rs in rows.items():
    for x in rs:
        print(f"| {via} | {x[0]} | {x[1]} | {x[2]} | {x[3]:.1f} | {x[4]} | {x[5]} |")
mean = lambda via, i: sum(x[i] or 0 for x in rows[via]) / max(len(rows[via]), 1)
print(f"through HAProxy - straight (means): move p50 {mean('haproxy', 0) - mean('direct', 0):+.2f} ms, "
      f"p99 {mean('haproxy', 1) - mean('direct', 1):+.2f} ms; HAProxy's CPU {mean('haproxy', 3):.1f} us per move "
      f"(shard's own {mean('haproxy', 2):.1f} through it, {mean('direct', 2):.1f} straight; "
      "HAProxy's includes its health checks and its log, the shard's its whole process)")
if any(x[5] for rs in rows.values() for x in rs):
    print("FAIL misrouted connections in the hop runs")
    sys.exit(1)
EOF
	shards ready B
	shards ready C
fi

echo
uptime
if [ "$FAILED" != 0 ]; then
	echo "shards test: FAILED (logs: KEEP_SCRATCH=1 keeps $SCRATCH)"
	exit 1
fi
echo "shards test: passed"
