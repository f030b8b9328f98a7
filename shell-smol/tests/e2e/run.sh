#!/usr/bin/env bash
# Browser end-to-end test of the web client (see e2e.mjs): installs Debian's chromium
# and playwright-core when missing, builds wizard-server (a debug build; WIZARD_SERVER=PATH
# uses that binary instead, as .ci/run does with its release build), starts two servers on free
# loopback ports (a third on a SQLite store, started again whenever it exits, a fourth
# on its own SQLite store with no pauses for the replay scenario; and,
# when Debian's haproxy is there or can be installed, two shards behind HAProxy with
# deploy/haproxy.cfg, on one PostgreSQL store when PostgreSQL is there or can be
# installed), runs the test in headless Chromium and stops the servers.
# Screenshots and server logs go to target/e2e/. Bounded in time throughout.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="$root/target/e2e"
mkdir -p "$out"

if [ ! -x /usr/bin/chromium ]; then
  echo "e2e: installing chromium"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get update
  timeout 900 apt-get install -y chromium fonts-dejavu-core
fi

# npm ci when node_modules is missing or holds another version than the lock file.
if ! (cd "$here" && node -e '
  const want = require("./package-lock.json").packages["node_modules/playwright-core"].version;
  const have = require("./node_modules/playwright-core/package.json").version;
  process.exit(want === have ? 0 : 1);' 2>/dev/null); then
  echo "e2e: installing playwright-core (npm ci)"
  (cd "$here" && timeout 300 npm ci --no-audit --no-fund)
fi

if [ -n "${WIZARD_SERVER:-}" ]; then
  server="$(cd "$(dirname "$WIZARD_SERVER")" && pwd)/$(basename "$WIZARD_SERVER")"
  [ -x "$server" ] || { echo "e2e: WIZARD_SERVER=$WIZARD_SERVER is not an executable" >&2; exit 2; }
else
  (cd "$root" && timeout 1200 cargo build -p wizard-server --locked)
  tdir="${CARGO_TARGET_DIR:-target}"
  [[ "$tdir" = /* ]] || tdir="$root/$tdir"
  server="$tdir/debug/wizard-server"
fi

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

pids=()
pg_pid=""
durable_dir="$out/durable"
cleanup() {
  # The durable server's loop first, so that it starts no new server.
  rm -f "$durable_dir/run"
  if [ -s "$durable_dir/server.pid" ]; then pids+=("$(cat "$durable_dir/server.pid")"); fi
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  # PostgreSQL last, once the shards are gone (SIGINT: a fast shutdown).
  if [ -n "$pg_pid" ]; then
    for pid in "${pids[@]}"; do
      for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
    done
    kill -INT "$pg_pid" 2>/dev/null || true
    pids+=("$pg_pid")
  fi
  # SIGTERM lets a server close its websockets; after 10 s it is killed.
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT

# start NAME PORT VAR=value...: one server, its log in target/e2e/NAME.log
start() {
  local name="$1" port="$2"
  shift 2
  env SHUTDOWN_GRACE=1 STORE=memory "$@" BIND="127.0.0.1:$port" EMBEDDED_AI=0 LOG_LEVEL=info "$server" >"$out/$name.log" 2>&1 &
  pids+=("$!")
  wait_health "$name" "$port"
}

# wait_health NAME PORT: until the server answers /health (10 s at most).
wait_health() {
  local name="$1" port="$2"
  for _ in $(seq 1 100); do
    if node -e 'fetch(process.argv[1]).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))' \
      "http://127.0.0.1:$port/health" 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  echo "e2e: server $name did not come up; its log:" >&2
  cat "$out/$name.log" >&2
  return 1
}

game_port="$(free_port)"
busy_port="$(free_port)"
while [ "$busy_port" = "$game_port" ]; do busy_port="$(free_port)"; done

durable_port="$(free_port)"
while [ "$durable_port" = "$game_port" ] || [ "$durable_port" = "$busy_port" ]; do durable_port="$(free_port)"; done

start game "$game_port" AI_MOVE_DELAY=0 TRICK_PAUSE=0.3 MAX_ACTIVE_GAMES=1
start busy "$busy_port" LOAD_FORCE_LEVEL=overloaded MAX_CONNECTIONS_PER_IP=1
# The replay scenario's server: a whole game played quickly, kept in SQLite's history.
replay_port="$(free_port)"
while [ "$replay_port" = "$game_port" ] || [ "$replay_port" = "$busy_port" ] || [ "$replay_port" = "$durable_port" ]; do replay_port="$(free_port)"; done
rm -rf "$out/replay"
mkdir -p "$out/replay"
start replay "$replay_port" STORE="sqlite:$out/replay/wizard.db" AI_MOVE_DELAY=0 TRICK_PAUSE=0 STORE_SYNC_INTERVAL=0.2

# The durable server keeps its games in SQLite and is started again whenever it exits,
# as a container's restart policy would: the restart scenario stops it with SIGTERM
# (its pid in durable/server.pid) and the player must be back in the game unaided. The
# spectator and chat scenarios run on it too; every browser of the suite comes from
# 127.0.0.1, so the per-address chat budget (CHAT_IP_RATE) would be the whole suite's:
# it is raised here, and the per-session CHAT_RATE, which the chat scenario checks,
# stays as shipped. Likewise the open connections and new sockets per address
# (MAX_CONNECTIONS_PER_IP, SOCKET_RATE, SOCKET_BURST): the suite's browsers share one
# address, and the profile scenario's reloads, key link and fresh browsers come after
# every earlier scenario's; the busy server's scenario checks the refusal.
rm -rf "$durable_dir"
mkdir -p "$durable_dir"
touch "$durable_dir/run"
(
  while [ -e "$durable_dir/run" ]; do
    env SHUTDOWN_GRACE=1 STORE="sqlite:$durable_dir/wizard.db" AI_MOVE_DELAY=0 TRICK_PAUSE=0.3 \
      CHAT_IP_RATE=6000 CHAT_IP_BURST=6000 MAX_CONNECTIONS_PER_IP=64 SOCKET_RATE=200 SOCKET_BURST=400 \
      BIND="127.0.0.1:$durable_port" EMBEDDED_AI=0 LOG_LEVEL=info "$server" >>"$out/durable.log" 2>&1 &
    echo "$!" >"$durable_dir/server.pid"
    wait "$!" || true
  done
) &
pids+=("$!")
wait_health durable "$durable_port"

# Two shards (A, B) behind HAProxy with deploy/haproxy.cfg, for the shard scenario: when
# haproxy is missing it is installed from Debian (as root; its service is not started),
# else the scenario is skipped. Shard C and the standbys are free ports nobody listens
# on: HAProxy counts them down.
shard_url=""
if ! command -v haproxy >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "e2e: installing haproxy"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get install -y -qq haproxy >/dev/null 2>&1 || true
fi
# The shards share one PostgreSQL store when PostgreSQL is there or can be installed
# (.ci/install-postgres.sh): a server of its own in target/e2e/pg (as the postgres user
# when root, which PostgreSQL refuses to run as), so that quick play is one pool across
# the shards. Else each shard keeps its games in memory and the scenario of a table on
# the other shard is skipped (SHARD_PG empty).
shard_store=(STORE=memory)
shard_pg=""
start_pg() {
  local bin pg_dir="$out/pg" as=() port
  if ! compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null; then
    bash "$root/.ci/install-postgres.sh" >/dev/null || return 1
  fi
  bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
  rm -rf "$pg_dir"
  mkdir -p "$pg_dir"
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || return 1
    chown postgres: "$pg_dir"
    as=("$(command -v setpriv)" --reuid=postgres --regid=postgres --init-groups)
  fi
  env -i LANG=C.UTF-8 "${as[@]}" "$bin/initdb" -D "$pg_dir/data" -U postgres -A trust -E UTF8 --no-sync \
    >"$out/pg-initdb.log" 2>&1 || return 1
  port="$(free_port)"
  env -i LANG=C.UTF-8 "${as[@]}" "$bin/postgres" -D "$pg_dir/data" -p "$port" -c listen_addresses=127.0.0.1 \
    -c unix_socket_directories= >"$out/pg.log" 2>&1 &
  pg_pid="$!"
  for _ in $(seq 1 200); do
    if "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -qAt -c 'CREATE DATABASE wizard' postgres >/dev/null 2>&1; then
      shard_store=(STORE="postgres://postgres@127.0.0.1:$port/wizard" QUICK_PLAY_INTERVAL=0.2)
      shard_pg=1
      return 0
    fi
    sleep 0.1
  done
  return 1
}

if command -v haproxy >/dev/null; then
  start_pg || echo "e2e: no PostgreSQL for the shards (their stores are in memory); its log: $out/pg.log"
  hap_port="$(free_port)"
  hap_env=(HAPROXY_BIND="127.0.0.1:$hap_port" HAPROXY_SOCKET="$out/haproxy.sock" HAPROXY_MAP_DIR="$root/deploy"
    HAPROXY_AI_BIND="127.0.0.1:$(free_port)")
  for s in A B C; do
    for n in 1 2; do
      port="$(free_port)"
      if [ "$n" = 1 ] && [ "$s" != C ]; then
        start "shard_$s" "$port" SHARD_ID="$s" TRUSTED_PROXIES=127.0.0.1 "${shard_store[@]}"
      fi
      hap_env+=("SHARD_${s}_${n}=127.0.0.1:$port")
    done
  done
  env "${hap_env[@]}" haproxy -db -f "$root/deploy/haproxy.cfg" >"$out/haproxy.log" 2>&1 &
  pids+=("$!")
  # Up when both shards' routes reach their server (HAProxy answers 503 until then).
  for _ in $(seq 1 100); do
    if node -e 'Promise.all(["A","B"].map((s)=>fetch(process.argv[1]+"/ws/"+s).then((r)=>r.status)))
        .then((c)=>process.exit(c.every((x)=>x!==503)?0:1),()=>process.exit(1))' "http://127.0.0.1:$hap_port" 2>/dev/null; then
      shard_url="http://127.0.0.1:$hap_port"
      break
    fi
    sleep 0.1
  done
  [ -n "$shard_url" ] || { echo "e2e: HAProxy did not route to the shards; its log:" >&2; cat "$out/haproxy.log" >&2; exit 1; }
fi

cd "$here"
SHARD_URL="$shard_url" SHARD_PG="$shard_pg" BASE_URL="http://127.0.0.1:$game_port" BUSY_URL="http://127.0.0.1:$busy_port" OUT_DIR="$out" \
  DURABLE_URL="http://127.0.0.1:$durable_port" DURABLE_PID_FILE="$durable_dir/server.pid" \
  REPLAY_URL="http://127.0.0.1:$replay_port" \
  timeout 600 node e2e.mjs
