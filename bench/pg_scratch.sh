#!/usr/bin/env bash
# A scratch PostgreSQL for the scripts that need one (bench/shards_test.sh, and by hand
# bench/durable.sh with PG_URL): Debian's server programs (installed by
# .ci/install-postgres.sh when missing), `initdb` into DIR, listening on loopback only,
# trust authentication for loopback (a throw-away server no other host can reach), as
# the postgres user when run as root (PostgreSQL refuses root).
#
#   bench/pg_scratch.sh start DIR [PORT]   prints the STORE URL of database `wizard`
#   bench/pg_scratch.sh stop DIR           fast shutdown, waits for the exit
#
# PORT: default a free one from 30000-39999. DIR must be reachable by the postgres user
# (as root it is chowned to it; e.g. a fresh `mktemp -d` under /tmp). Exits 3 where
# PostgreSQL is not installed and cannot be, 1 where it fails to start (the reason on
# stderr).
set -euo pipefail
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || {
	echo "usage: $0 start|stop DIR [PORT]" >&2
	exit 2
}
here=$(cd "$(dirname "$0")/.." && pwd)

bin_dir() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	[ -n "$d" ] && [ -x "$d/postgres" ] && echo "$d"
}
as_pg() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
start)
	bin=$(bin_dir) || { bash "$here/.ci/install-postgres.sh" >&2 && bin=$(bin_dir); } || {
		echo "pg_scratch: PostgreSQL is not installed and could not be" >&2
		exit 3
	}
	port=${3:-}
	if [ -z "$port" ]; then
		for _ in $(seq 50); do
			port=$((30000 + RANDOM % 10000))
			(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
		done
	fi
	mkdir -p "$dir"
	[ "$(id -u)" != 0 ] || chown postgres: "$dir"
	as_pg env -i LANG=C.UTF-8 "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 || {
		tail -n 20 "$dir/initdb.log" >&2
		exit 1
	}
	as_pg env -i LANG=C.UTF-8 "$bin/pg_ctl" -D "$dir/data" -l "$dir/data/postgres.log" -w -t 60 \
		-o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=''" start >/dev/null || {
		tail -n 20 "$dir/data/postgres.log" >&2
		exit 1
	}
	echo "$port" >"$dir/port"
	as_pg env -i "$bin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -c "CREATE DATABASE wizard" >/dev/null
	echo "postgres://postgres@127.0.0.1:$port/wizard"
	;;
stop)
	bin=$(bin_dir) || exit 0
	[ -d "$dir/data" ] || exit 0
	as_pg env -i "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null 2>&1 || true
	;;
*)
	echo "usage: $0 start|stop DIR [PORT]" >&2
	exit 2
	;;
esac
