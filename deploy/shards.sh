#!/bin/sh
# Drains, readies and adds Wizard shards in a running HAProxy through its runtime API
# (the admin socket of deploy/haproxy.cfg), without a reload (deploy/README.md, "Shards").
#
#   shards.sh show                  every server: backend, name, status, connections
#   shards.sh drain ID              no new lobby on shard ID (backend new_games: state
#                                   drain); its players keep playing through /ws/ID
#   shards.sh ready ID              shard ID takes new lobbies again
#   shards.sh add ID ADDR1 ADDR2    a new shard: its two processes (ADDR2 the standby,
#                                   host:port) in a spare backend, /ws/ID mapped to it,
#                                   both in new_games
#   shards.sh wait ID up|down       until shard ID's backend has a server up (or none)
#
# Settings (environment): HAPROXY_SOCKET (default /run/haproxy/admin.sock), HAPROXY_MAP_DIR
# (default /etc/haproxy: where shards.map is; `add` also appends its line there when the
# file is writable, so that a restart keeps the route), WAIT_SECONDS (wait: default 30).
# Talks to the socket with socat. A runtime change is lost when HAProxy restarts: add the
# new shard's servers to haproxy.cfg too (deploy/README.md says how).
set -eu

SOCKET=${HAPROXY_SOCKET:-/run/haproxy/admin.sock}
MAP="${HAPROXY_MAP_DIR:-/etc/haproxy}/shards.map"
# The same check settings as haproxy.cfg's default-server (dynamic servers do not take
# default-server's).
CHECK="check inter 500ms fastinter 250ms downinter 250ms fall 2 rise 1 observe layer4 error-limit 1 on-error mark-down"

usage() {
	sed -n '4,12p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

api() { # one runtime API command; its answer on stdout
	printf '%s\n' "$*" | socat -t 5 - "UNIX-CONNECT:$SOCKET"
}

api_ok() { # a command whose answer must be empty or say it worked
	out=$(api "$@")
	case "$out" in
	"" | *"New server registered"* | *"Health check enabled"*) ;;
	*)
		printf 'shards.sh: "%s": %s\n' "$*" "$out" >&2
		exit 1
		;;
	esac
}

valid_id() {
	case "$1" in
	[ABCDEFGHJKLMNPQRSTUVWXYZ23456789]) ;;
	*)
		echo "shards.sh: $1 is not one character of the lobby-code alphabet" >&2
		exit 2
		;;
	esac
}

# The servers of new_games that belong to shard $1 (named ID_1, ID_2).
new_game_servers() {
	api "show stat" | awk -F, -v id="$1" '$1 == "new_games" && index($2, id "_") == 1 { print $2 }'
}

set_state() { # shard state
	found=0
	for server in $(new_game_servers "$1"); do
		api_ok "set server new_games/$server state $2"
		found=1
	done
	[ "$found" = 1 ] || {
		echo "shards.sh: no server of shard $1 in new_games" >&2
		exit 1
	}
	echo "shard $1: new_games $2"
}

# The backend /ws/$1 is mapped to (empty when none).
owner_backend() {
	api "show map $MAP" | awk -v key="/ws/$1" '$2 == key { print $3 }'
}

add_server() { # backend name addr [backup]
	api_ok "add server $1/$2 $3 $CHECK ${4:-}"
	api_ok "enable health $1/$2"
	api_ok "enable server $1/$2"
}

cmd=${1:-}
case "$cmd" in
show)
	api "show stat" | awk -F, 'NR == 1 { next } NF > 18 && $2 != "FRONTEND" && $2 != "BACKEND" { printf "%-10s %-6s %-6s %s\n", $1, $2, $18, $5 }'
	;;
drain | ready)
	[ $# = 2 ] || usage
	valid_id "$2"
	set_state "$2" "$cmd"
	;;
add)
	[ $# = 4 ] || usage
	id=$2
	valid_id "$id"
	if [ -n "$(owner_backend "$id")" ]; then
		echo "shards.sh: /ws/$id is already routed (to $(owner_backend "$id"))" >&2
		exit 1
	fi
	used=$(api "show map $MAP" | awk '{ print $3 }')
	spare=""
	for b in spare_1 spare_2 spare_3; do
		case " $(echo "$used" | tr '\n' ' ') " in
		*" $b "*) ;;
		*)
			spare=$b
			break
			;;
		esac
	done
	[ -n "$spare" ] || {
		echo "shards.sh: no spare backend left (haproxy.cfg: add spare_N, then reload)" >&2
		exit 1
	}
	add_server "$spare" "${id}_1" "$3"
	add_server "$spare" "${id}_2" "$4" backup
	add_server new_games "${id}_1" "$3"
	add_server new_games "${id}_2" "$4"
	api_ok "add map $MAP /ws/$id $spare"
	if [ -w "$MAP" ]; then
		printf '/ws/%s %s\n' "$id" "$spare" >>"$MAP"
	fi
	echo "shard $id: /ws/$id -> $spare ($3, standby $4), in new_games"
	;;
wait)
	[ $# = 3 ] || usage
	valid_id "$2"
	backend=$(owner_backend "$2")
	[ -n "$backend" ] || {
		echo "shards.sh: /ws/$2 is not routed" >&2
		exit 1
	}
	tries=$((${WAIT_SECONDS:-30} * 10))
	while [ "$tries" -gt 0 ]; do
		up=$(api "show stat" | awk -F, -v b="$backend" '$1 == b && $2 != "BACKEND" && $18 ~ /^UP/ { n++ } END { print n + 0 }')
		if { [ "$3" = up ] && [ "$up" -gt 0 ]; } || { [ "$3" = down ] && [ "$up" = 0 ]; }; then
			echo "shard $2: $3"
			exit 0
		fi
		tries=$((tries - 1))
		sleep 0.1
	done
	echo "shards.sh: shard $2 not $3 after ${WAIT_SECONDS:-30} s" >&2
	exit 1
	;;
*) usage ;;
esac
