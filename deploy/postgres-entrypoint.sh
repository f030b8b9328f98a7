#!/bin/sh
# Entrypoint of the postgres image (Dockerfile.postgres, compose.shards.yaml): runs as
# the postgres user. On the first start (no PG_VERSION in PGDATA, a fresh volume) it
# initialises the cluster:
#   - superuser `postgres` without a password: it can only log in over the local socket
#     (peer: `docker compose exec postgres psql`), never over the network;
#   - role POSTGRES_USER (LOGIN, not a superuser: a compromised shard cannot run
#     programs through COPY ... PROGRAM) with POSTGRES_PASSWORD, stored as a
#     scram-sha-256 verifier, owning database POSTGRES_DB;
#   - pg_hba.conf: over the network only that role, only to that database, only with
#     the password (scram-sha-256); nothing else, and no `trust` anywhere.
# The password reaches psql through its environment (\getenv), never a command line, and the
# session that sets it logs no statement, even a failed one. Later starts keep the
# cluster as it is: to change the password, ALTER ROLE in psql, then the shards' STORE.
# Then runs the command (postgres) listening on every address of the container.
set -eu

: "${PGDATA:=/var/lib/postgresql/data}"
user=${POSTGRES_USER:-wizard}
db=${POSTGRES_DB:-wizard}

say() { echo "postgres-entrypoint: $*" >&2; }

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	if [ -z "${POSTGRES_PASSWORD:-}" ]; then
		say "POSTGRES_PASSWORD is empty: set it in deploy/.env (e.g. openssl rand -hex 32)"
		exit 1
	fi
	say "initialising a new cluster in $PGDATA (role $user, database $db)"
	initdb --pgdata="$PGDATA" --username=postgres --encoding=UTF8 --locale=C.UTF-8 \
		--auth-local=peer --auth-host=scram-sha-256 >/dev/null
	cat >"$PGDATA/pg_hba.conf" <<HBA
# Written by postgres-entrypoint.sh (deploy/Dockerfile.postgres).
# TYPE  DATABASE  USER      ADDRESS    METHOD
local   all       postgres             peer
host    $db       $user     0.0.0.0/0  scram-sha-256
host    $db       $user     ::/0       scram-sha-256
HBA
	cat >>"$PGDATA/postgresql.conf" <<CONF

# postgres-entrypoint.sh
listen_addresses = '*'
unix_socket_directories = '${PGHOST:-/tmp}'
password_encryption = scram-sha-256
CONF
	# A server on a private socket only (no TCP; the health check, which asks the usual
	# socket, stays unhealthy meanwhile) to create the role and the database.
	sock=$(mktemp -d)
	pg_ctl --pgdata="$PGDATA" --wait --silent \
		--options="-c listen_addresses='' -c unix_socket_directories='$sock'" start >/dev/null
	psql --no-psqlrc --quiet --set=ON_ERROR_STOP=1 --host="$sock" --username=postgres --dbname=postgres \
		--set=role="$user" --set=db="$db" <<'SQL'
\getenv pw POSTGRES_PASSWORD
SET log_min_error_statement = panic;
SET log_statement = none;
CREATE ROLE :"role" LOGIN PASSWORD :'pw';
CREATE DATABASE :"db" OWNER :"role";
SQL
	pg_ctl --pgdata="$PGDATA" --wait --silent stop >/dev/null
	rmdir "$sock"
	say "cluster ready"
fi
exec "$@"
