# shellcheck shell=bash disable=SC2034
# Sourced by deploy/smoke.sh (compose.yaml) once the images are built: the stack up and
# the checks on it, in order. Uses lib.sh's helpers and compose, say, ok, fail, BENCH,
# WS_URL, BASE_URL, GAME_S and SMOKE_STATE from the caller; each check prints what it
# found, or fails with why.

metrics() { compose exec -T wizard_proxy wget -qO- http://wizard_server:8000/metrics; }

step_up() {
	say "up: docker compose up --wait (all three healthy; caps, health checks, depends_on)"
	STACK_UP=1
	if ! compose up -d --wait --wait-timeout 180 >"$SMOKE_STATE/up.log" 2>&1; then
		cat "$SMOKE_STATE/up.log"
		fail "docker compose up: not every container became healthy within 180 s"
	fi
	local svc state
	for svc in wizard_server wizard_ai wizard_proxy; do
		state=$(service_state "$svc")
		[ "$state" = "running healthy" ] || fail "$svc is '$state', expected 'running healthy'"
		ok "$svc running healthy"
	done
}

step_proxy() {
	say "proxy: Caddy on $BASE_URL serves the client, proxies /health, refuses /internal"
	check_caddy
	wait_metric_above 30 0 wizard_ai_connections || fail "the AI service is not connected to the server (wizard_ai_connections 0)"
	ok "the AI service is connected (wizard_ai_connections $(metric_sum wizard_ai_connections))"
}

wait_game_finished() { # <seconds> <games finished before>: until the server counts one more
	wait_metric_above "$1" "$2" wizard_games_finished_total
}

step_play() {
	say "play: a game through Caddy (1 bot, 5 AI seats), the AI container killed mid-game"
	local ai_before fb_before finished_before ai fb t_kill state
	ai_before=$(metric_sum wizard_moves_total 'by="ai"')
	fb_before=$(metric_sum wizard_fallbacks_total)
	finished_before=$(metric_sum wizard_games_finished_total)
	bench play &
	BENCH_PIDS+=($!)
	wait_metric_above 30 "$((ai_before + 30))" wizard_moves_total 'by="ai"' ||
		fail "the AI service made no 30 moves within 30 s (wizard_moves_total{by=\"ai\"})"
	ai=$(($(metric_sum wizard_moves_total 'by="ai"') - ai_before))
	fb=$(($(metric_sum wizard_fallbacks_total) - fb_before))
	[ "$fb" = 0 ] || fail "the fallback made $fb moves while the AI service was up"
	ok "the AI service plays: $ai moves, none by the fallback"
	[ "$(metric_sum wizard_games_finished_total)" = "$finished_before" ] ||
		fail "the game finished before the AI could be killed: raise the seats or slow it down"
	compose kill -s SIGKILL wizard_ai >/dev/null 2>&1 || fail "docker compose kill wizard_ai"
	t_kill=$(date +%s)
	ok "wizard_ai killed (SIGKILL) mid-game"
	wait_game_finished "$GAME_S" "$finished_before" || fail "the game did not finish within $GAME_S s of the AI's death"
	fb=$(($(metric_sum wizard_fallbacks_total) - fb_before))
	[ "$fb" -gt 0 ] || fail "no fallback move after the AI was killed (wizard_fallbacks_total did not grow)"
	state=$(service_state wizard_ai)
	ok "the game finished $(($(date +%s) - t_kill)) s after the kill; the fallback made $fb moves (by reason: $(fallback_reasons)); wizard_ai is '$state'"
	wait "${BENCH_PIDS[-1]}" || fail "wizard-bench (play) failed"
	summary play
	expect play 'r["accepted"]["games_finished"] >= 1' "the bot saw its game to the end"
	expect play 'r["accepted"]["games_unscored"] == 0' "every finished game scored"
	warn_errors play
	expect play 'r["refused"]["total"] == r["refused"]["rate_limited"]' "nothing refused (a move held back by the rate limit is resent)"
}

fallback_reasons() { # the fallback counters that are not zero, as reason=count
	{ metrics 2>/dev/null || true; } | awk '/^wizard_fallbacks_total\{/ && $NF > 0 { sub(/^wizard_fallbacks_total\{reason="/, "", $1); sub(/"\}$/, "", $1); printf "%s%s=%d", sep, $1, $NF; sep = ", " }'
}

step_restart_server() {
	say "server restarted mid-game: a new container on the same volume, the bot resumes with its token"
	local moves_before old_id new_id state t_up
	moves_before=$(metric_sum wizard_moves_total)
	old_id=$(compose ps -q wizard_server)
	bench restart --resume 1 &
	BENCH_PIDS+=($!)
	wait_metric_above 20 "$((moves_before + 30))" wizard_moves_total || fail "the game did not start within 20 s"
	ok "game under way ($(($(metric_sum wizard_moves_total) - moves_before)) moves): recreating wizard_server"
	compose up -d --no-deps --force-recreate --wait --wait-timeout 60 wizard_server >"$SMOKE_STATE/recreate.log" 2>&1 ||
		{ cat "$SMOKE_STATE/recreate.log"; fail "wizard_server did not come back healthy within 60 s"; }
	t_up=$(date +%s)
	new_id=$(compose ps -q wizard_server)
	{ [ -n "$new_id" ] && [ "$new_id" != "$old_id" ]; } || fail "wizard_server was not recreated ($old_id -> $new_id)"
	ok "wizard_server recreated (${old_id:0:12} -> ${new_id:0:12}) and healthy; $(compose logs --no-color wizard_server 2>/dev/null | grep -o 'Restored records=.*' | tail -1)"
	# The new server's counters start at zero: a game it finishes is the restored one
	# (the bot plays its games one after the other).
	wait_game_finished "$GAME_S" 0 || fail "the restored game did not finish within $GAME_S s on the new server"
	ok "the restored game finished on the new server, $(($(date +%s) - t_up)) s after it was up"
	wait "${BENCH_PIDS[-1]}" || fail "wizard-bench (restart) failed"
	summary restart
	expect restart 'r["resume"]["ended"].get("1012", 0) >= 1' "the server closed the bot with 1012 (service restart)"
	expect restart 'r["resume"]["resumed"] >= 1 and r["resume"]["failed"] == 0' "the bot came back into its game with its token"
	expect restart 'r["resume"]["mismatched"] == 0' "nothing the bot had seen was lost (rounds, scores, bids, cards)"
	expect restart 'r["accepted"]["games_unscored"] == 0' "every finished game scored"
	warn_errors restart
	state=$(service_state wizard_proxy)
	[ "$state" = "running healthy" ] || fail "wizard_proxy is '$state' after the server's restart"
	ok "wizard_proxy still running healthy"
}

run_steps() {
	step_up
	step_proxy
	step_caps
	step_play
	step_restart_server
}
