# shellcheck shell=bash disable=SC2034
# Sourced by deploy/smoke.sh before the steps of its mode (steps.sh, shard-steps.sh): what
# both need. Uses compose, say, ok, fail, BENCH, WS_URL, BASE_URL, GAME_S, ROOT,
# COMPOSE_ARGS and SMOKE_STATE from the caller, and `metrics` (the /metrics text of the
# server the checks look at) from the steps' file.

metric_sum() { # <metric> [label regex] -> the sum of its samples (0 when none or unreachable)
	{ metrics 2>/dev/null || true; } |
		awk -v n="$1" -v f="${2:-}" '
			index($1, n) == 1 && substr($1, length(n) + 1, 1) ~ /^(\{|)$/ && (f == "" || $1 ~ f) { s += $NF }
			END { printf "%d\n", s }'
}

wait_metric_above() { # <seconds> <floor> <metric> [label regex]: until the metric exceeds floor
	local deadline=$(($(date +%s) + $1)) floor=$2 value
	shift 2
	while [ "$(date +%s)" -lt "$deadline" ]; do
		value=$(metric_sum "$@")
		[ "$value" -gt "$floor" ] && return 0
		sleep 0.5
	done
	return 1
}

bench() { # <name> <wizard-bench options...>: one run through Caddy, in the foreground
	local name=$1
	shift
	"$BENCH" run --url "$WS_URL" --history "$SMOKE_STATE/$name.jsonl" --label "smoke $name" \
		--games 1 --humans 1 --seats 6 --pacing full --ramp 0 --warmup 0 --duration "$GAME_S" "$@" \
		>"$SMOKE_STATE/$name.out" 2>&1 || { cat "$SMOKE_STATE/$name.out"; fail "wizard-bench ($name) exited non-zero"; }
}

expect() { # <name> <condition over r, the run's results> <what it means>
	if ! python3 - "$SMOKE_STATE/$1.jsonl" "$2" <<'EOF'; then
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])["results"]
# r as a global: a generator expression in the condition sees globals only.
sys.exit(0 if eval(sys.argv[2], {"r": r}) else 1)
EOF
		cat "$SMOKE_STATE/$1.out"
		fail "$1: expected $3 ($2)"
	fi
	ok "$1: $3"
}

warn_errors() { # <name>: the error replies the bot got, if any, as a warning
	# Not a failure: one run in about a dozen saw error replies to the bot's game
	# actions (a protocol race, not the deployment); the line keeps them visible.
	python3 - "$SMOKE_STATE/$1.jsonl" "$1" <<'EOF'
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])["results"]
print(f"WARN: {sys.argv[2]}: error replies to the bot: {r['errors']}" if r["errors"] else f"ok: {sys.argv[2]}: no error reply to the bot")
EOF
}

summary() { # <name>: the run's main figures on one line
	python3 - "$SMOKE_STATE/$1.jsonl" <<'EOF'
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])["results"]
a, res = r["accepted"], r.get("resume") or {}
line = (f"games started {a['games_started']}, finished {a['games_finished']}, moves {a['moves']}, "
        f"refused {r['refused']['total']}, errors {r['errors'] or 0}, move p99 {r['move_latency_ms'].get('p99')} ms")
if res:
    line += (f"; resumed {res['resumed']}, failed {res['failed']}, mismatched {res['mismatched']}, "
             f"closes {res['ended']}, resume p99 {res['latency_ms'].get('p99')} ms")
print(line)
EOF
}

service_state() { # <service> -> "running healthy", "exited ", ...
	compose ps -a --format '{{.State}} {{.Health}}' "$1" 2>/dev/null | head -1 | sed 's/ *$//'
}

check_caddy() { # Caddy serves the client and /rules, forwards /health, refuses /internal/ai
	local code body
	body=$(curl -fsS --max-time 5 "$BASE_URL/health") || fail "GET /health through Caddy failed"
	ok "GET /health through Caddy: $body"
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$BASE_URL/")
	[ "$code" = 200 ] || fail "GET / (the web client) answered $code"
	ok "GET / (the web client): 200"
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$BASE_URL/rules")
	[ "$code" = 200 ] || fail "GET /rules (the rules page) through Caddy answered $code"
	ok "GET /rules (the rules page): 200"
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$BASE_URL/internal/ai")
	[ "$code" = 403 ] || fail "GET /internal/ai through Caddy answered $code, expected 403"
	ok "GET /internal/ai through Caddy: 403"
}

step_caps() {
	say "caps: docker inspect, docker stats and the kernel's cgroup files against the compose file"
	python3 "$ROOT/deploy/smoke/caps.py" -- "${COMPOSE_ARGS[@]}" || fail "a cap is not in force as configured (above)"
}

