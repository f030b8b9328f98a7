#!/usr/bin/env bash
# Quick play across two shards on one scratch PostgreSQL 15: N players queue for tables
# of 3 over shards A and B at once (wizard-bench quick), and shard A's process gets
# `kill -9` KILL_MS after they queued, while tables form. Prints each shard's players
# seated (every player of B seated: no ticket lost; a player of B told `matched` to a
# table of A counts as lost if A died before it was seated) and the tickets left in
# the shared pool once B's players are done (0: none outlived its player).
#
#   bench/quick_kill.sh                      # N=300 KILL_MS=50, release build
#   N=3000 KILL_MS=200 bench/quick_kill.sh
#
# Settings (environment): N, KILL_MS, RUNS (default 1), BUILD=1 (cargo build --release
# first; 0: use TARGET_DIR's binaries), TARGET_DIR (default CARGO_TARGET_DIR or target),
# PG_URL (a server to use, each run on a new database of its own; unset:
# bench/pg_scratch.sh starts one and stops it at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-300}
KILL_MS=${KILL_MS:-50}
RUNS=${RUNS:-1}
TARGET_DIR=${TARGET_DIR:-${CARGO_TARGET_DIR:-target}}
BIN="$TARGET_DIR/release"
if [ "${BUILD:-1}" = 1 ]; then
	cargo build --release -p wizard-server --bin wizard-server -p wizard-bench --bin wizard-bench \
		--target-dir "$TARGET_DIR" >&2
fi

scratch=$(mktemp -d)
chmod 755 "$scratch" # the postgres user reaches its data folder inside
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	[ -n "${PG_URL_SET:-}" ] || bash bench/pg_scratch.sh stop "$scratch/pg" || true
	rm -rf "$scratch"
}
trap cleanup EXIT
PG_URL_SET=${PG_URL:-}
PG_URL=${PG_URL:-$(bash bench/pg_scratch.sh start "$scratch/pg")}
psql_q() { psql "$URL" -Atqc "$1" 2>/dev/null || echo "?"; }

free_port() { echo $((20000 + RANDOM % 20000)); }
ulimit -n "$(ulimit -Hn)" || true
for run in $(seq "$RUNS"); do
	# A fresh database per run: nothing of an earlier run is restored.
	db="quick_kill_$$_$run"
	psql "${PG_URL%/*}/postgres" -qc "CREATE DATABASE $db" >/dev/null
	URL="${PG_URL%/*}/$db"
	declare -A port pid
	for id in A B; do
		port[$id]=$(free_port)
		env BIND=127.0.0.1:${port[$id]} SHARD_ID=$id STORE="$URL" EMBEDDED_AI=0 LOG_LEVEL=warn \
			SHUTDOWN_GRACE=0 MAX_CONNECTIONS=8000 MAX_LOBBIES=4000 MAX_ACTIVE_GAMES=4000 \
			MAX_GAMES_PER_IP=1000 MESSAGE_RATE=1000 MESSAGE_BURST=1000 \
			"$BIN/wizard-server" >"$scratch/$id.log" 2>&1 &
		pid[$id]=$!
		pids+=("${pid[$id]}")
	done
	for id in A B; do
		for _ in $(seq 100); do
			curl -sf -o /dev/null "http://127.0.0.1:${port[$id]}/ready" && break
			sleep 0.1
		done
	done
	echo "== run $run: N=$N, kill -9 of shard A ${KILL_MS} ms after the players queued"
	"$BIN/wizard-bench" quick --addr "A=127.0.0.1:${port[A]}" --addr "B=127.0.0.1:${port[B]}" \
		--players "$N" --seats 3 --kill "A=${pid[A]}" --kill-after-ms "$KILL_MS" || true
	# B's own tickets are gone with its players; A's go once A's lease runs out.
	for _ in $(seq 100); do
		[ "$(psql_q "SELECT count(*) FROM wizard_quick_tickets WHERE shard = 'B'")" = 0 ] && break
		sleep 0.1
	done
	echo "tickets of B left in the pool: $(psql_q "SELECT count(*) FROM wizard_quick_tickets WHERE shard = 'B'")"
	kill -TERM "${pid[B]}" 2>/dev/null || true
	wait "${pid[B]}" 2>/dev/null || true
	wait "${pid[A]}" 2>/dev/null || true
done
