#!/usr/bin/env bash
# Start (or find already running) the PostgreSQL cluster the PostgreSQL tier of the tests uses, on loopback only,
# and print its URL on stdout. Idempotent: a cluster already answering on the port is used as it is.
#   eval "$(tools/postgres-test-server.sh --export)"   # sets CCAGENT_TEST_PG_URL for the tests
# Needs Debian's `postgresql` package (.ci/run installs it). Test-only: trust authentication, loopback only.
# CCAGENT_PG_DIR (default /var/tmp/ccagent-test-pg) and CCAGENT_PG_PORT (default 55432) move it.
set -euo pipefail

dir="${CCAGENT_PG_DIR:-/var/tmp/ccagent-test-pg}"
port="${CCAGENT_PG_PORT:-55432}"
url="postgres://postgres@127.0.0.1:${port}/postgres"

bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
if [ -z "$bin" ] || [ ! -x "$bin/pg_ctl" ]; then
  echo "postgres-test-server: PostgreSQL is not installed (apt-get install postgresql)" >&2
  exit 1
fi

# initdb and the server refuse to run as root: run them as the `postgres` user the Debian package creates.
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if ! "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
  if [ ! -f "$dir/PG_VERSION" ]; then
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
    chmod 700 "$dir"
    as_owner "$bin/initdb" -D "$dir" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
  fi
  as_owner "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir -c max_connections=200" \
    start >/dev/null
fi

if [ "${1:-}" = "--export" ]; then
  echo "export CCAGENT_TEST_PG_URL=$url"
else
  echo "$url"
fi
