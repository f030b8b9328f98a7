#!/usr/bin/env bash
# Memory per idle websocket: a release server, CONNS (2000) player websockets
# from 127.0.1.x addresses that each said hello and then idle; prints the server's VmRSS
# growth per connection. Figures only: nothing is asserted. The per-address bursts of
# new sockets and player connections (SOCKET_BURST, RECONNECT_BURST) are raised like
# MAX_CONNECTIONS_PER_IP: at their defaults (40, 20) each of the 20 addresses got only
# its first 20 connections in, and the RSS of the refused attempts was divided among
# those 400 (15 KiB "per connection").
set -euo pipefail
cd "$(dirname "$0")/.."
# Binaries: where cargo puts them, also with CARGO_TARGET_DIR set.
REL="${CARGO_TARGET_DIR:-target}/release"
mkdir -p target # logs and timelines go here either way
CONNS="${CONNS:-2000}"
PORT="${PORT:-$((20000 + RANDOM % 20000))}"
ulimit -n $((CONNS * 2 + 1000))

bench/build_release.sh
env BIND="127.0.0.1:$PORT" MAX_CONNECTIONS=$((CONNS + 100)) MAX_CONNECTIONS_PER_IP=100 \
    SOCKET_BURST=1000 RECONNECT_BURST=1000 \
    MAX_SESSIONS=$((CONNS * 2)) SHUTDOWN_GRACE=0 LOG_LEVEL=warn EMBEDDED_AI=0 STORE=memory \
    "$REL"/wizard-server > target/idle_memory_server.log 2>&1 &
SERVER_PID=$!
trap 'kill -TERM $SERVER_PID 2>/dev/null || true; wait $SERVER_PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$PORT/health" > /dev/null 2>&1 && break
    sleep 0.1
done
timeout 120 "$REL"/wizard-bench --url "ws://127.0.0.1:$PORT/ws" --server-pid "$SERVER_PID" \
    --idle "$CONNS" --per-ip 100 --games 0 --duration 60 --ramp 0 --warmup 0 --history none
