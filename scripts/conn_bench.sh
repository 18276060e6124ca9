#!/usr/bin/env bash
# Connection set-up time, pgbench -C style (a new connection per
# transaction of `SELECT 1`), for trust, SCRAM-SHA-256 and SCRAM over TLS,
# weir (release build) next to a PostgreSQL 15 started here with the same
# pg_hba rules and certificate.
#
#   scripts/conn_bench.sh [seconds-per-run]      (default 10)
#
# Needs: a release build of weir (WEIR_BIN, default
# $CARGO_TARGET_DIR/release/weir or target/release/weir), pgbench, openssl,
# PostgreSQL 15's initdb/postgres in /usr/lib/postgresql/15/bin (run as the
# `postgres` user when this script runs as root). Prints one line per
# server and method: tps (including reconnection) and pgbench's average
# connection time.
set -euo pipefail

SECS=${1:-10}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WEIR_BIN=${WEIR_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/weir}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
WEIR_PORT=${WEIR_PORT:-55801}
PG_PORT=${PG_PORT:-55802}
PW=bench-pw

[ -x "$WEIR_BIN" ] || { echo "no weir release binary at $WEIR_BIN" >&2; exit 1; }
WORK=$(mktemp -d /tmp/conn_bench.XXXXXX)
chmod 755 "$WORK"
WEIR_PID=""
cleanup() {
    [ -n "$WEIR_PID" ] && kill "$WEIR_PID" 2>/dev/null || true
    if [ -f "$WORK/pg/postmaster.pid" ]; then
        as_pg "$PGBIN/pg_ctl" -D "$WORK/pg" -m fast stop >/dev/null 2>&1 || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# A self-signed certificate for 127.0.0.1, shared by both servers.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" \
    -keyout "$WORK/server.key" -out "$WORK/server.crt" >/dev/null 2>&1
chmod 600 "$WORK/server.key"

# The same rules for both: one role per method.
cat > "$WORK/pg_hba.conf" <<EOF
host    all bench_trust 127.0.0.1/32 trust
hostnossl all bench_scram 127.0.0.1/32 scram-sha-256
hostssl all bench_tls   127.0.0.1/32 scram-sha-256
host    all all         127.0.0.1/32 trust
EOF

# weir, release build.
mkdir -p "$WORK/weir"
"$WEIR_BIN" --data-dir "$WORK/weir" --listen "127.0.0.1:$WEIR_PORT" --hba-file "$WORK/pg_hba.conf" \
    --ssl-cert-file "$WORK/server.crt" --ssl-key-file "$WORK/server.key" >"$WORK/weir.log" 2>&1 &
WEIR_PID=$!
for _ in $(seq 100); do grep -q "weir listening" "$WORK/weir.log" && break; sleep 0.1; done
grep -q "weir listening" "$WORK/weir.log" || { cat "$WORK/weir.log"; exit 1; }

# PostgreSQL 15 on its own data directory.
mkdir -p "$WORK/pg" && chown postgres "$WORK/pg" 2>/dev/null || true
cp "$WORK/server.crt" "$WORK/server.key" "$WORK/pg_hba.conf" "$WORK/pg/" 2>/dev/null || true
as_pg "$PGBIN/initdb" -D "$WORK/pg" -U postgres --auth=trust >/dev/null
cp "$WORK/pg_hba.conf" "$WORK/pg/pg_hba.conf"
cp "$WORK/server.crt" "$WORK/server.key" "$WORK/pg/"
chown postgres "$WORK/pg/"* 2>/dev/null || true
chmod 600 "$WORK/pg/server.key"
as_pg "$PGBIN/pg_ctl" -D "$WORK/pg" -l "$WORK/pg/log" -w \
    -o "-p $PG_PORT -k $WORK/pg -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key -c password_encryption=scram-sha-256" start >/dev/null

setup_roles() { # host port superuser
    for r in bench_trust bench_scram bench_tls; do
        psql -q -h 127.0.0.1 -p "$2" -U "$3" -d postgres -c "CREATE ROLE $r LOGIN PASSWORD '$PW'" >/dev/null
    done
}
setup_roles 127.0.0.1 "$WEIR_PORT" weir
setup_roles 127.0.0.1 "$PG_PORT" postgres

echo "SELECT 1;" > "$WORK/select1.sql"
run() { # name port db user sslmode
    local out tps conn
    out=$(PGPASSWORD=$PW PGSSLMODE=$5 pgbench -n -C -c 1 -T "$SECS" -f "$WORK/select1.sql" -h 127.0.0.1 -p "$2" -U "$4" "$3" 2>&1) || {
        echo "$1: pgbench failed: $out" >&2
        return
    }
    tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -1)
    conn=$(echo "$out" | sed -n 's/^average connection time = \([0-9.]*\) ms.*/\1/p')
    printf "%-26s tps %8s   average connection time %7s ms\n" "$1" "$tps" "$conn"
}

echo "connection set-up, pgbench -C, 1 client, ${SECS}s per run"
run "weir trust" "$WEIR_PORT" public bench_trust disable
run "postgresql-15 trust" "$PG_PORT" postgres bench_trust disable
run "weir scram" "$WEIR_PORT" public bench_scram disable
run "postgresql-15 scram" "$PG_PORT" postgres bench_scram disable
run "weir scram+tls" "$WEIR_PORT" public bench_tls require
run "postgresql-15 scram+tls" "$PG_PORT" postgres bench_tls require
