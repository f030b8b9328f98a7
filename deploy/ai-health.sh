#!/bin/sh
# Health check of the wizard_ai container (the service has no HTTP port of its own):
# healthy when a wizard-ai process runs and holds an established TCP connection to the
# port of AI_SERVER_URL, i.e. it is connected to the server and can take decisions.
# Exit 0 healthy, 1 not.
#
# WIZARD_PROC_ROOT (default /proc) exists for deploy/validate.sh's tests.
set -eu

proc="${WIZARD_PROC_ROOT:-/proc}"
url="${AI_SERVER_URL:-ws://127.0.0.1:8000/internal/ai}"

hostport=${url#*://}
hostport=${hostport%%/*}
case "$hostport" in
*\]) port="" ;;
*:*) port=${hostport##*:} ;;
*) port="" ;;
esac
if [ -z "$port" ]; then
	case "$url" in
	wss://*) port=443 ;;
	*) port=80 ;;
	esac
fi

running=no
for comm in "$proc"/[0-9]*/comm; do
	[ -r "$comm" ] || continue
	if [ "$(cat "$comm" 2>/dev/null)" = "wizard-ai" ]; then
		running=yes
		break
	fi
done
if [ "$running" != yes ]; then
	echo "unhealthy: no wizard-ai process"
	exit 1
fi

hex=$(printf '%04X' "$port")
# /proc/net/tcp{,6}: "sl local rem st ...", rem ends in :PORT (hex), st 01 = ESTABLISHED.
if cat "$proc/net/tcp" "$proc/net/tcp6" 2>/dev/null |
	awk -v p=":$hex" 'substr($3, length($3) - 4) == p && $4 == "01" { found = 1 } END { exit !found }'; then
	echo "ok"
	exit 0
fi
echo "unhealthy: not connected to port $port of the server"
exit 1
