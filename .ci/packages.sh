#!/usr/bin/env bash
# Installs, in one apt-get run, the Debian packages that later steps of .ci/run would
# each install when missing: PostgreSQL (the store's tests, the shard test), Chromium
# and its font (the browser test), HAProxy, socat and Caddy (the shard test, e2e,
# validate), debootstrap and docker.io (the compose smoke test). .ci/run starts it in the
# background at its beginning, so the downloads overlap the first compile steps, and
# waits for it before the first step that needs a package. Only what is missing is
# installed; no service is started (a policy-rc.d refuses them while it runs, and
# PostgreSQL's package creates no cluster). Where it cannot install (not root, no
# apt-get, no network) it says so and exits non-zero: each step then installs (or
# skips) by itself, as it does without this script. Bounded: 15 minutes.
set -uo pipefail

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
	echo "packages: not root or no apt-get; each step installs what it can by itself"
	exit 1
fi

want=()
compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null || want+=(postgresql)
[ -x /usr/bin/chromium ] || want+=(chromium fonts-dejavu-core)
command -v haproxy >/dev/null || want+=(haproxy)
command -v socat >/dev/null || want+=(socat)
command -v caddy >/dev/null || want+=(caddy)
command -v debootstrap >/dev/null || want+=(debootstrap)
command -v dockerd >/dev/null || want+=(docker.io)
if [ "${#want[@]}" = 0 ]; then
	echo "packages: everything is installed already"
	exit 0
fi

export DEBIAN_FRONTEND=noninteractive
mkdir -p /etc/postgresql-common/createcluster.d
echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/wizard-tests.conf
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# .ci/packages.sh: no service starts while it installs\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	own_policy=1
fi
trap '[ "$own_policy" = 1 ] && rm -f "$policy"' EXIT

echo "packages: installing ${want[*]}"
start=$(date +%s)
if ! timeout 900 apt-get install -y -qq "${want[@]}" >/tmp/ci-packages.log 2>&1; then
	timeout 300 apt-get update -qq >>/tmp/ci-packages.log 2>&1 || true
	if ! timeout 900 apt-get install -y -qq "${want[@]}" >>/tmp/ci-packages.log 2>&1; then
		tail -20 /tmp/ci-packages.log
		echo "packages: apt-get install failed (log: /tmp/ci-packages.log); the steps install by themselves"
		exit 1
	fi
fi
echo "packages: installed in $(($(date +%s) - start)) s"
