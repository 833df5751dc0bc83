#!/usr/bin/env bash
# The service's tests (`nixl-telemetry serve`, `nixl-telemetry store`) against real
# components:
#   * PostgreSQL: Debian's `postgresql` package (installed with apt-get when
#     missing); a throw-away cluster in a temporary directory, on a free loopback
#     port, run as an unprivileged user (PostgreSQL refuses root), with a password;
#     stopped and removed on exit. Its URL goes to the tests in
#     NIXL_TELEMETRY_TEST_POSTGRES_URL. The cluster runs with
#     synchronous_commit=off: its commits do not wait for the disk (the tests kill
#     the service, never the database, so they check the same; the benchmark sets
#     the mode per connection and measures both).
#   * TAO's own client: `nvidia-tao-core==6.26.3` (--no-deps) and the `requests`
#     version it pins (what its client imports) in the project's Python environment under
#     ${XDG_CACHE_HOME:-$HOME/.cache}/nixl-telemetry/python-venv; its interpreter goes
#     to the tests in NIXL_TELEMETRY_TAO_PYTHON.
# Without these variables (a plain `cargo test`) the PostgreSQL and TAO tests say
# so and skip; the SQLite tests need nothing.
#
#   bash scripts/test-service.sh                 # every test of the service
#   bash scripts/test-service.sh --postgres-only # start the cluster, print its URL, wait
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/lib.sh
. scripts/lib.sh

pg_bin() {
    local dir
    for dir in /usr/lib/postgresql/*/bin; do
        [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && echo "$dir"
    done | sort -V | tail -n 1
}

PG_BIN="$(pg_bin)"
if [ -z "$PG_BIN" ]; then
    echo "== installing PostgreSQL (Debian's postgresql package)"
    apt_install postgresql
    PG_BIN="$(pg_bin)"
    [ -n "$PG_BIN" ] || { echo "test-service.sh: initdb is still missing after the install" >&2; exit 1; }
fi

# A free loopback port, asked of the kernel.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

PG_DIR="$(mktemp -d /tmp/nixl-telemetry-pg.XXXXXX)"
PG_PORT="$(free_port)"
PG_PASSWORD="nixl-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
# PostgreSQL refuses to run as root: the cluster belongs to an unprivileged user.
as_owner=()
if [ "$(id -u)" -eq 0 ]; then
    as_owner=(runuser -u nobody --)
    chown nobody "$PG_DIR"
fi
stop_cluster() {
    "${as_owner[@]}" "$PG_BIN/pg_ctl" stop -D "$PG_DIR/data" -m fast >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
}
trap stop_cluster EXIT

echo "== starting a throw-away PostgreSQL ($PG_BIN) on 127.0.0.1:$PG_PORT in $PG_DIR"
printf '%s\n' "$PG_PASSWORD" >"$PG_DIR/pwfile"
chmod 600 "$PG_DIR/pwfile"
[ "${#as_owner[@]}" -gt 0 ] && chown nobody "$PG_DIR/pwfile"
"${as_owner[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth=scram-sha-256 \
    --pwfile="$PG_DIR/pwfile" -E UTF8 --locale=C.UTF-8 >"$PG_DIR/initdb.log" 2>&1 || {
    cat "$PG_DIR/initdb.log" >&2
    exit 1
}
"${as_owner[@]}" "$PG_BIN/pg_ctl" start -D "$PG_DIR/data" -w -t 60 -l "$PG_DIR/server.log" \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DIR -c max_connections=200 -c synchronous_commit=off" >/dev/null || {
    cat "$PG_DIR/server.log" >&2
    exit 1
}
export NIXL_TELEMETRY_TEST_POSTGRES_URL="postgres://postgres:$PG_PASSWORD@127.0.0.1:$PG_PORT/postgres"

if [ "${1:-}" = "--postgres-only" ]; then
    echo "NIXL_TELEMETRY_TEST_POSTGRES_URL=$NIXL_TELEMETRY_TEST_POSTGRES_URL"
    echo "(Ctrl-C stops and removes the cluster)"
    while sleep 3600; do :; done
fi

# TAO's client (nvidia-tao-core --no-deps, and the requests version it pins).
# shellcheck source=scripts/python-venv.sh
. scripts/python-venv.sh
export NIXL_TELEMETRY_TAO_PYTHON="$VENV/bin/python"

echo "== service tests (SQLite, PostgreSQL, TAO's client)"
cargo test --locked -p nixl-telemetry-service
cargo test --locked -p nixl-telemetry-cli --test it serve_cli
