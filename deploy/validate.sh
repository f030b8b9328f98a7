#!/usr/bin/env bash
# Validates the compose deployment without a Docker engine (CI runs this: .ci/run).
#
#  1. deploy/compose.yaml and deploy/compose.shards.yaml against the Compose JSON schema
#     (deploy/compose-spec/compose-spec.json, vendored with its licence: see the README
#     there) with the jsonschema library, then the semantic checks of
#     deploy/validate_compose.py (caps, health checks, environment vs. config.rs SETTINGS,
#     networks, .env.example, Dockerfiles) and their self-test.
#  2. The AI image's shell scripts: syntax, worker sizing from the CPU cap, health check.
#  3. Monitoring: `promtool check rules` on deploy/prometheus/alerts.yml and `promtool
#     check config` on the scrape example (Debian's prometheus package, unpacked under
#     target/ when promtool is missing); then deploy/check_metrics.py starts the real
#     wizard-server on loopback and checks that every metric the Grafana dashboard and the
#     alert rules name is one it exposes, that every alert's runbook is a row of the
#     tuning table, that the dashboard's queries parse, and its self-test.
#  4. deploy/Caddyfile: `caddy fmt` and `caddy validate` (Debian's caddy, installed when
#     missing) for the default, a domain and the plain-HTTP test address.
#  5. The native test: Caddy with deploy/Caddyfile in front of the real wizard-server on
#     loopback (shell-smol/tests/it/proxy.rs).
#  6. deploy/haproxy.cfg (compose.shards.yaml's HAProxy): `haproxy -c` with the compose
#     defaults and with loopback addresses (Debian's haproxy; skipped when it is not
#     installed: bench/shards_test.sh installs it and runs it for real), and the syntax of
#     deploy/shards.sh and deploy/haproxy-health.sh. Step 1 also checks
#     deploy/compose.shards.yaml.
#
# Python packages go to a venv under target/ (created when missing). Exit status is
# non-zero when any check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SCHEMA="$ROOT/deploy/compose-spec/compose-spec.json"
VENV="$ROOT/target/deploy-venv"
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

say() { printf '\n--- %s\n' "$1"; }
fail() {
	printf 'FAIL: %s\n' "$1" >&2
	exit 1
}

# ------------------------------------------------------------ 1. compose.yaml

say "compose.yaml: schema and semantic checks"
[ -f "$SCHEMA" ] || fail "no Compose schema at $SCHEMA (deploy/compose-spec/README.md)"
if ! "$VENV/bin/python" -c 'import jsonschema, yaml' 2>/dev/null; then
	echo "installing jsonschema and PyYAML into $VENV"
	rm -rf "$VENV"
	python3 -m venv "$VENV"
	"$VENV/bin/pip" install --quiet --disable-pip-version-check \
		'jsonschema==4.26.0' 'PyYAML==6.0.2'
fi
"$VENV/bin/python" deploy/validate_compose.py "$ROOT" "$SCHEMA"

# ------------------------------------------------------------ 2. AI image scripts

say "AI image scripts: syntax, AI_WORKERS from the CPU cap, health check"
for script in deploy/ai-entrypoint.sh deploy/ai-health.sh; do
	sh -n "$script"
	if command -v dash >/dev/null; then dash -n "$script"; fi
	[ -x "$script" ] || fail "$script is not executable"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

workers() { # <cgroup files as name=content ...> -> the AI_WORKERS the entrypoint sets
	local dir="$tmp/cg$RANDOM"
	mkdir -p "$dir"
	for pair in "$@"; do
		mkdir -p "$(dirname "$dir/${pair%%=*}")"
		printf '%s\n' "${pair#*=}" >"$dir/${pair%%=*}"
	done
	AI_WORKERS="" WIZARD_CGROUP_ROOT="$dir" sh deploy/ai-entrypoint.sh sh -c 'printf %s "$AI_WORKERS"' 2>/dev/null
}
expect_workers() { # <expected> <cgroup files ...>
	local want=$1 got
	shift
	got=$(workers "$@")
	[ "$got" = "$want" ] || fail "ai-entrypoint.sh: $* gave AI_WORKERS=$got, expected $want"
}
expect_workers 1 "cpu.max=100000 100000"            # AI_CPUS=1.0 (the default)
expect_workers 2 "cpu.max=150000 100000"            # 1.5 rounds to 2
expect_workers 1 "cpu.max=25000 100000"             # below one CPU: still one worker
expect_workers 4 "cpu.max=400000 100000"            # AI_CPUS=4
expect_workers "$(nproc)" "cpu.max=max 100000"      # no cap: the CPUs it may use
expect_workers 3 "cpu/cpu.cfs_quota_us=300000" "cpu/cpu.cfs_period_us=100000" # cgroup v1
kept=$(AI_WORKERS=7 WIZARD_CGROUP_ROOT="$tmp/none" sh deploy/ai-entrypoint.sh sh -c 'printf %s "$AI_WORKERS"')
[ "$kept" = 7 ] || fail "ai-entrypoint.sh overrode AI_WORKERS=7 with $kept"
echo "ai-entrypoint.sh: AI_WORKERS from cpu.max (v2) and cfs quota (v1), rounded, at least 1; explicit value kept"

fakeproc() { # <dir> <comm> <tcp line> : a fake /proc with one process and one socket
	mkdir -p "$1/1" "$1/net"
	printf '%s\n' "$2" >"$1/1/comm"
	printf '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n' >"$1/net/tcp"
	[ -z "$3" ] || printf '%s\n' "$3" >>"$1/net/tcp"
	: >"$1/net/tcp6"
}
health() { WIZARD_PROC_ROOT="$1" AI_SERVER_URL="ws://wizard_server:8000/internal/ai" sh deploy/ai-health.sh >/dev/null; }
connected='   0: 0300110A:A1B2 0200110A:1F40 01 00000000:00000000 00:00000000 00000000 10001 0 1 1 0'
listening='   0: 0300110A:A1B2 0200110A:1F40 0A 00000000:00000000 00:00000000 00000000 10001 0 1 1 0'
other_port='   0: 0300110A:A1B2 0200110A:1F41 01 00000000:00000000 00:00000000 00000000 10001 0 1 1 0'
fakeproc "$tmp/p1" wizard-ai "$connected"
health "$tmp/p1" || fail "ai-health.sh: connected wizard-ai reported unhealthy"
fakeproc "$tmp/p2" wizard-ai ""
! health "$tmp/p2" || fail "ai-health.sh: wizard-ai without a connection reported healthy"
fakeproc "$tmp/p3" sleep "$connected"
! health "$tmp/p3" || fail "ai-health.sh: no wizard-ai process reported healthy"
fakeproc "$tmp/p4" wizard-ai "$listening"
! health "$tmp/p4" || fail "ai-health.sh: a socket not ESTABLISHED counted as connected"
fakeproc "$tmp/p5" wizard-ai "$other_port"
! health "$tmp/p5" || fail "ai-health.sh: a connection to another port counted"
echo "ai-health.sh: healthy only with a wizard-ai process connected to the server's port"

# ------------------------------------------------------------ 3. monitoring

say "monitoring: promtool check rules and check config"
PROMTOOL_DIR="$ROOT/target/promtool"
promtool=$(command -v promtool || true)
[ -n "$promtool" ] || [ ! -x "$PROMTOOL_DIR/promtool" ] || promtool="$PROMTOOL_DIR/promtool"
if [ -z "$promtool" ] && command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then
	# Unpacked rather than installed: installing the package would also start a
	# Prometheus daemon. promtool needs nothing but libc.
	echo "unpacking promtool from Debian's prometheus package into $PROMTOOL_DIR"
	debs="$tmp/debs"
	mkdir -p "$debs"
	fetch_deb() { (cd "$debs" && apt-get download -qq prometheus >/dev/null 2>&1); }
	fetch_deb || { [ "$(id -u)" = 0 ] && apt-get update -qq >/dev/null 2>&1 && fetch_deb; } || true
	deb=$(ls "$debs"/prometheus_*.deb 2>/dev/null | head -n 1)
	if [ -n "$deb" ] && dpkg-deb -x "$deb" "$debs/root" && [ -x "$debs/root/usr/bin/promtool" ]; then
		mkdir -p "$PROMTOOL_DIR"
		cp "$debs/root/usr/bin/promtool" "$PROMTOOL_DIR/promtool"
		promtool="$PROMTOOL_DIR/promtool"
	fi
fi
promtool_args=()
if [ -n "$promtool" ]; then
	"$promtool" --version 2>&1 | head -n 1
	"$promtool" check rules deploy/prometheus/alerts.yml
	"$promtool" test rules deploy/prometheus/alerts_test.yml
	"$promtool" check config deploy/prometheus/prometheus.yml
	promtool_args=(--promtool "$promtool")
else
	echo "SKIPPED: promtool could not be installed (Debian's prometheus package): promtool check"
	echo "SKIPPED: rules and check config, and the PromQL syntax of the dashboard's queries"
fi

say "monitoring: the dashboard's and the alerts' metrics against the real server's /metrics"
# WIZARD_SERVER=PATH: that binary (.ci/run passes its release build); else a debug build.
if [ -n "${WIZARD_SERVER:-}" ]; then
	server_bin=$WIZARD_SERVER
else
	cargo build --locked -p wizard-server --bin wizard-server
	server_bin="${CARGO_TARGET_DIR:-target}/debug/wizard-server"
fi
[ -x "$server_bin" ] || fail "no wizard-server executable at $server_bin"
"$VENV/bin/python" deploy/check_metrics.py "$ROOT" \
	--server "$server_bin" "${promtool_args[@]}" --self-test

# ------------------------------------------------------------ 6. haproxy.cfg
# (before the Caddy steps, which end the script early when caddy cannot be installed)

say "haproxy.cfg: haproxy -c; shards.sh and haproxy-health.sh syntax"
for script in deploy/shards.sh deploy/haproxy-health.sh; do
	sh -n "$script"
	if command -v dash >/dev/null; then dash -n "$script"; fi
	[ -x "$script" ] || fail "$script is not executable"
done
if command -v haproxy >/dev/null; then
	haproxy -v | sed -n 1p
	# With compose's names (unresolvable here: HAProxy starts with them disabled, as in
	# compose before the shards' containers exist) and with loopback addresses.
	for addrs in compose loopback; do
		hap_env=(HAPROXY_SOCKET="$tmp/haproxy.sock" HAPROXY_MAP_DIR="$ROOT/deploy")
		if [ "$addrs" = loopback ]; then
			port=18100
			for s in A B C; do
				hap_env+=("SHARD_${s}_1=127.0.0.1:$((port += 1))" "SHARD_${s}_2=127.0.0.1:$((port += 1))")
			done
		fi
		if ! out=$(env "${hap_env[@]}" haproxy -c -f deploy/haproxy.cfg 2>&1); then
			printf '%s\n' "$out"
			fail "haproxy -c -f deploy/haproxy.cfg ($addrs addresses)"
		fi
		if [ "$addrs" = loopback ] && printf '%s\n' "$out" | grep WARNING >/dev/null; then
			printf '%s\n' "$out"
			fail "haproxy -c warns ($addrs addresses)"
		fi
		echo "haproxy -c: valid ($addrs addresses)"
	done
else
	echo "SKIPPED: haproxy is not installed (apt-get install haproxy): haproxy -c"
fi

# ------------------------------------------------------------ 4. Caddyfile

say "Caddyfile: caddy fmt and caddy validate"
if ! command -v caddy >/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "installing Debian's caddy"
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y -qq caddy >/dev/null 2>&1 ||
			{ apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq caddy >/dev/null 2>&1; } || true
	fi
fi
if ! command -v caddy >/dev/null; then
	echo "SKIPPED: caddy could not be installed (apt-get install caddy): the Caddyfile checks"
	echo "SKIPPED: and the native proxy test did not run"
	exit 0
fi
caddy version
caddy_home="$tmp/caddy"
mkdir -p "$caddy_home"
caddy_env=(env -u SITE_ADDRESS HOME="$caddy_home" XDG_DATA_HOME="$caddy_home/data" XDG_CONFIG_HOME="$caddy_home/config")
"${caddy_env[@]}" caddy fmt deploy/Caddyfile >"$tmp/Caddyfile.fmt"
diff -u deploy/Caddyfile "$tmp/Caddyfile.fmt" || fail "deploy/Caddyfile is not formatted as caddy fmt writes it"
for site in "" "game.example.com" "http://:18080"; do
	site_env=() # unset: the Caddyfile's default (an empty value would be no address at all)
	[ -z "$site" ] || site_env=(SITE_ADDRESS="$site")
	if ! out=$("${caddy_env[@]}" "${site_env[@]}" CADDY_ADMIN=off \
		caddy validate --config deploy/Caddyfile --adapter caddyfile 2>&1); then
		printf '%s\n' "$out"
		fail "caddy validate (SITE_ADDRESS=${site:-default})"
	fi
	if printf '%s\n' "$out" | grep -q '"level":"warn"'; then
		printf '%s\n' "$out" | grep '"level":"warn"'
		fail "caddy validate warns (SITE_ADDRESS=${site:-default})"
	fi
	echo "caddy validate: valid, no warnings (SITE_ADDRESS=${site:-default: localhost})"
done

# ------------------------------------------------------------ 5. native proxy test

say "Caddy in front of the real wizard-server on loopback"
# --workspace, as the README's test command: the same features, so the test binary the
# tests step built is reused (with -p wizard-server alone cargo would build it again).
WIZARD_REQUIRE_CADDY=1 cargo test --locked --workspace --test it proxy:: -- --test-threads=1

say "deploy: all checks passed"
