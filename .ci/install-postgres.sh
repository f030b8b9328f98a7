#!/usr/bin/env bash
# Installs PostgreSQL's server (Debian's package: 15 on bookworm) when it is missing, for
# the PostgreSQL store's tests (shell-smol/tests/it/postgres.rs), which start their own
# server from /usr/lib/postgresql/N/bin in a temporary folder. Needs root and apt-get;
# exits non-zero (and the tests then print "skipped: ...") where it cannot install.
set -euo pipefail
if compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null; then
	exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
	echo "install-postgres: not root or no apt-get; cannot install PostgreSQL" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# The package's own cluster is not needed (the tests make theirs): do not start one.
mkdir -p /etc/postgresql-common/createcluster.d
echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/wizard-tests.conf
log=$(mktemp)
if ! timeout 900 apt-get install -y -qq postgresql >"$log" 2>&1; then
	timeout 600 apt-get update -qq >>"$log" 2>&1 || true
	if ! timeout 900 apt-get install -y -qq postgresql >>"$log" 2>&1; then
		tail -20 "$log" >&2
		exit 1
	fi
fi
rm -f "$log"
compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null
