# shellcheck shell=bash disable=SC2034
# Sourced by deploy/smoke.sh shards (compose.shards.yaml) once the images are built: the
# stack up and the checks on it, in order. Uses lib.sh's helpers and compose, say, ok,
# fail, BENCH, WS_URL, BASE_URL, GAME_S, POSTGRES_PASSWORD and SMOKE_STATE from the
# caller; each check prints what it found, or fails with why.

SHARDS="a b c"
# The service whose /metrics `metrics` reads (a shard's serving process): the smoke
# images have wget (the offline base image); the distroless server image has none.
METRICS_SERVICE=""

metrics() { compose exec -T "$METRICS_SERVICE" wget -qO- http://127.0.0.1:8000/metrics; }

now_ms() { date +%s%3N; }

serves() { # <service>: its wizard-server answers /health (wizard-healthcheck exits 0)
	compose exec -T "$1" /usr/local/bin/wizard-healthcheck >/dev/null 2>&1
}

serving() { # <shard a|b|c> -> the services of that shard that serve, one a line
	local p
	for p in 1 2; do
		if serves "shard_$1_$p"; then echo "shard_$1_$p"; fi
	done
}

other() { case "$1" in *_1) echo "${1%_1}_2" ;; *) echo "${1%_2}_1" ;; esac }

haproxy_status() { # <backend> <server> -> HAProxy's status of it (UP, DOWN, ...)
	compose exec -T wizard_haproxy shards.sh show 2>/dev/null | awk -v b="$1" -v s="$2" '$1 == b && $2 == s { print $3 }'
}

haproxy_is() { # <backend> <server> <status>: HAProxy counts the server so
	[ "$(haproxy_status "$1" "$2")" = "$3" ]
}

stands_by_since() { # <container id> <unix seconds>: its log says it waits for the lock since then
	docker logs --since "$2" "$1" 2>&1 | grep -q "Waiting for the store's lock"
}

wait_until() { # <seconds> <command...>: until the command succeeds (checked every 0.5 s)
	local deadline=$(($(date +%s) + $1))
	shift
	while [ "$(date +%s)" -lt "$deadline" ]; do
		"$@" && return 0
		sleep 0.5
	done
	return 1
}

one_serving() { # <shard>: exactly one of its two processes serves
	[ "$(serving "$1" | wc -l)" = 1 ]
}

step_up() {
	say "up: docker compose up -d (12 services; PostgreSQL and HAProxy healthy before what depends on them)"
	STACK_UP=1
	if ! timeout 300 docker compose "${COMPOSE_ARGS[@]}" up -d >"$SMOKE_STATE/up.log" 2>&1; then
		cat "$SMOKE_STATE/up.log"
		fail "docker compose up -d failed (a dependency not healthy, or 300 s passed)"
	fi
	# A standby is never healthy in Docker's sense (it refuses connections until it
	# serves), so `up --wait` cannot be used: every other service must become healthy.
	local svc state deadline=$(($(date +%s) + 180)) waiting
	for svc in postgres wizard_haproxy wizard_proxy wizard_ai_a wizard_ai_b wizard_ai_c; do
		while state=$(service_state "$svc") && [ "$state" != "running healthy" ]; do
			[ "$(date +%s)" -lt "$deadline" ] || fail "$svc is '$state' 180 s after up, expected 'running healthy'"
			sleep 1
		done
		ok "$svc running healthy"
	done
	say "shards: on each, exactly one process serves (/health 200) and the other stands by"
	for s in $SHARDS; do
		wait_until 60 one_serving "$s" || fail "shard ${s^^}: not exactly one serving process after 60 s: $(serving "$s" | tr '\n' ' ')"
		local cur stby
		cur=$(serving "$s")
		stby=$(other "$cur")
		state=$(service_state "$stby")
		case "$state" in "running "*) ;; *) fail "$stby (shard ${s^^}'s standby) is '$state', expected running" ;; esac
		serves "$stby" && fail "$stby answers /health while $cur serves shard ${s^^}"
		waiting=$(compose logs --no-color "$stby" 2>/dev/null | grep -c "Waiting for the store's lock" || true)
		[ "$waiting" -gt 0 ] || fail "$stby does not say it waits for the store's lock (its log: $(compose logs --no-color --tail 5 "$stby" 2>&1))"
		wait_until 15 haproxy_is "shard_${s^^}" "${s^^}_${cur##*_}" UP ||
			fail "HAProxy does not count $cur UP in shard_${s^^}"
		wait_until 15 haproxy_is "shard_${s^^}" "${s^^}_${stby##*_}" DOWN ||
			fail "HAProxy does not count the standby $stby DOWN in shard_${s^^}"
		ok "shard ${s^^}: $cur serves (docker: $(service_state "$cur"); HAProxy: UP), $stby stands by (docker: $state; HAProxy: DOWN; its log: \"Waiting for the store's lock\")"
	done
}

step_proxy() {
	say "proxy: Caddy on $BASE_URL in front of HAProxy; the AI services on HAProxy's AI port, off the store's network"
	check_caddy
	local code s
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$BASE_URL/ws/Z")
	[ "$code" = 404 ] || fail "GET /ws/Z (no such shard) through Caddy and HAProxy answered $code, expected 404"
	ok "GET /ws/Z through Caddy and HAProxy: 404 (no shard Z in shards.map)"
	for s in $SHARDS; do
		METRICS_SERVICE=$(serving "$s")
		wait_metric_above 30 0 wizard_ai_connections ||
			fail "wizard_ai_${s} is not connected to shard ${s^^} (wizard_ai_connections 0 on $METRICS_SERVICE)"
		ok "shard ${s^^}: its AI service is connected through HAProxy (wizard_ai_connections $(metric_sum wizard_ai_connections) on $METRICS_SERVICE)"
	done
	compose exec -T shard_a_1 getent hosts postgres >/dev/null 2>&1 || fail "shard_a_1 cannot resolve postgres (the store's network)"
	! compose exec -T wizard_ai_a getent hosts postgres >/dev/null 2>&1 || fail "wizard_ai_a resolves postgres: the AI services are on the store's network"
	ok "the shards reach postgres; wizard_ai_a cannot even resolve it (not on the store's network)"
}

step_password() {
	say "PostgreSQL: a password required over the network (scram-sha-256), the shards' role no superuser"
	local psql_args=(psql -h postgres -U wizard -d wizard -w -Atc) out
	# From the postgres container to its own address on the store's network: a
	# network connection, to which pg_hba.conf's host rules apply.
	if out=$(compose exec -T postgres "${psql_args[@]}" 'SELECT 1' 2>&1); then
		fail "PostgreSQL accepted a connection without a password ($out)"
	fi
	case "$out" in *"no password supplied"*) ;; *) fail "without a password, expected 'no password supplied', got: $out" ;; esac
	ok "without a password: refused ($(printf '%s' "$out" | grep -o 'fe_sendauth: no password supplied'))"
	if out=$(compose exec -T -e PGPASSWORD=not-the-password postgres "${psql_args[@]}" 'SELECT 1' 2>&1); then
		fail "PostgreSQL accepted a wrong password ($out)"
	fi
	case "$out" in *"password authentication failed"*) ;; *) fail "with a wrong password, expected 'password authentication failed', got: $out" ;; esac
	ok "with a wrong password: refused (password authentication failed)"
	out=$(compose exec -T -e PGPASSWORD="$POSTGRES_PASSWORD" postgres "${psql_args[@]}" \
		"SELECT rolsuper, (SELECT count(*) FROM wizard_records) FROM pg_roles WHERE rolname = current_user" 2>&1) ||
		fail "the right password was refused: $out"
	[ "${out%%|*}" = f ] || fail "the shards' role wizard is a superuser ($out)"
	ok "with the password: accepted; role wizard is no superuser; wizard_records holds ${out#*|} rows"
	out=$(compose exec -T postgres psql -Atc "SELECT count(*) FROM pg_hba_file_rules WHERE auth_method NOT IN ('scram-sha-256', 'peer') OR type = 'host' AND (user_name <> '{wizard}' OR database <> '{wizard}')" 2>&1) ||
		fail "pg_hba_file_rules could not be read over the local socket: $out"
	[ "$out" = 0 ] || fail "pg_hba.conf has $out rules other than the wizard role's scram-sha-256 and the local peer"
	ok "pg_hba.conf: over the network only role wizard to database wizard with scram-sha-256; no trust"
}

step_failover() {
	local victim="b" cur stby cid t_kill t_serve t_up moves_before state restarts
	say "play: 6 games through Caddy -> HAProxy (2 bots and 2 AI seats each: lobbies at /ws, joins at /ws/<shard>); shard ${victim^^}'s serving container killed (docker kill -s KILL) mid-game"
	cur=$(serving "$victim")
	stby=$(other "$cur")
	METRICS_SERVICE=$cur
	moves_before=$(metric_sum wizard_moves_total)
	bench failover --games 6 --humans 2 --seats 4 --resume 1 --shard-routes 1 \
		--resume-log "$SMOKE_STATE/resume.log" &
	BENCH_PIDS+=($!)
	wait_metric_above 45 "$((moves_before + 60))" wizard_moves_total ||
		fail "shard ${victim^^} ($cur) counted no 60 moves within 45 s: no game placed on it?"
	ok "games under way on shard ${victim^^} ($(($(metric_sum wizard_moves_total) - moves_before)) moves on $cur)"
	cid=$(compose ps -q "$cur")
	t_kill=$(now_ms)
	docker kill -s KILL "$cid" >/dev/null || fail "docker kill $cur"
	ok "docker kill -s KILL $cur (${cid:0:12})"
	# (Each probe is a `docker compose exec`, about a second on a busy machine: the
	# times below are upper bounds; the bots' own figure is the failover line below.)
	wait_until 30 serves "$stby" || fail "the standby $stby did not serve within 30 s of the kill"
	t_serve=$(now_ms)
	wait_until 15 haproxy_is "shard_${victim^^}" "${victim^^}_${stby##*_}" UP ||
		fail "HAProxy does not count $stby UP within 15 s"
	t_up=$(now_ms)
	ok "$stby serves shard ${victim^^} $((t_serve - t_kill)) ms after the kill, HAProxy counts it UP after $((t_up - t_kill)) ms"
	ok "$stby: $(compose logs --no-color "$stby" 2>/dev/null | grep -o 'Took over the shard.*' | tail -1)"
	ok "$stby: $(compose logs --no-color "$stby" 2>/dev/null | grep -o 'Store opened.*' | tail -1)"
	# A container stopped by `docker kill` counts as stopped by hand: its restart policy
	# does not start it again (a crash of the process would). Started again, it must
	# stand by behind the new owner.
	state=$(service_state "$cur")
	restarts=$(docker inspect -f '{{.RestartCount}}' "$cid")
	ok "$cur after the kill: '$state' (restarts $restarts)"
	case "$state" in "running "*) ;; *)
		compose start "$cur" >/dev/null 2>&1 || fail "docker compose start $cur"
		ok "docker compose start $cur"
		;;
	esac
	wait_until 30 stands_by_since "$cid" "$((t_kill / 1000))" ||
		fail "$cur, started again, does not stand by (no \"Waiting for the store's lock\" since the kill)"
	serves "$cur" && fail "$cur serves again while $stby owns shard ${victim^^}"
	ok "$cur stands by again (\"Waiting for the store's lock\"), $stby serves"
	wait "${BENCH_PIDS[-1]}" || fail "wizard-bench (failover) failed"
	summary failover
	python3 - "$SMOKE_STATE/failover.jsonl" <<'EOF'
import json, sys
sh = json.loads(open(sys.argv[1]).read().splitlines()[-1])["results"]["shards"]
print(f"by shard: lobbies {sh['lobbies_by_shard']}, games finished {sh['finished_by_shard']}, misrouted {sh['misrouted']}")
EOF
	expect failover 'all(r["shards"]["lobbies_by_shard"].get(s, 0) > 0 for s in "ABC")' "HAProxy placed lobbies on every shard"
	expect failover 'all(r["shards"]["finished_by_shard"].get(s, 0) > 0 for s in "ABC")' "games finished on every shard"
	expect failover 'r["shards"]["misrouted"] == 0 and (r["errors"] or {}).get("WrongShard", 0) == 0' "0 connections misrouted, no wrong_shard"
	expect failover 'r["resume"]["resumed"] >= 1 and r["resume"]["failed"] == 0' "the killed shard's bots came back into their games"
	expect failover 'r["resume"]["mismatched"] == 0' "nothing a bot had seen was lost (rounds, scores, bids, cards)"
	expect failover 'r["accepted"]["games_unscored"] == 0' "every finished game scored"
	warn_errors failover
	python3 - "$SMOKE_STATE/resume.log" "$t_kill" "${victim^^}" <<'EOF' || fail "no bot of the killed shard came back (resume log)"
import sys
kill_ms, shard = int(sys.argv[2]), sys.argv[3]
back = [int(b) for s, broke, b in (l.split() for l in open(sys.argv[1])) if s == shard and kill_ms - 200 <= int(broke) <= kill_ms + 10000]
if not back:
    sys.exit(1)
print(f"ok: failover: all {len(back)} bots of shard {shard} back in their games {max(back) - kill_ms} ms after the kill")
EOF
	METRICS_SERVICE=$stby
	wait_metric_above 5 0 wizard_games_finished_total ||
		fail "$stby finished no game after taking shard ${victim^^} over"
	ok "$stby finished $(metric_sum wizard_games_finished_total) games of shard ${victim^^} after the takeover"
}

step_secrets() {
	say "secrets: neither the store's password nor the AI secret in any container's log"
	local logs n secret
	logs=$(compose logs --no-color 2>&1)
	n=$(printf '%s\n' "$logs" | grep -cF "$POSTGRES_PASSWORD" || true)
	[ "$n" = 0 ] || fail "the store's password appears in $n log lines"
	secret=$(sed -n 's/^AI_SHARED_SECRET=//p' "$SMOKE_STATE/smoke.env")
	n=$(printf '%s\n' "$logs" | grep -cF "$secret" || true)
	[ "$n" = 0 ] || fail "the AI secret appears in $n log lines"
	n=$(printf '%s\n' "$logs" | grep -c 'postgres://wizard:\*\*\*@postgres:5432/wizard' || true)
	[ "$n" -gt 0 ] || fail "no log line shows the store's URL with its password masked (postgres://wizard:***@...)"
	ok "$(printf '%s\n' "$logs" | wc -l) log lines of $(compose ps -aq | wc -l) containers: no password, no secret; $n lines show the store as postgres://wizard:***@postgres:5432/wizard"
}

run_steps() {
	step_up
	step_proxy
	step_caps
	step_password
	step_failover
	step_secrets
}
