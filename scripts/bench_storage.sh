#!/bin/bash
# Storage benchmark: weir vs PostgreSQL 15 (and DuckDB if its Python package
# is installed or installable) on the same data and machine. Prints a
# Markdown table with weir/PG ratios. See scripts/bench_storage.py for what
# is measured.
#
# Usage: scripts/bench_storage.sh [--rows N] [--insert-rows N] [--no-build]
#                                 [--no-duckdb] [--json FILE]
#   --rows N          rows loaded with COPY (default 1000000)
#   --insert-rows N   rows loaded with 1000-row INSERTs (default 100000)
#   --no-build        do not run cargo build --release; use the existing
#                     ${CARGO_TARGET_DIR:-target}/release/weir
#   --no-duckdb       skip DuckDB
# Environment: CARGO_TARGET_DIR (respected), WEIR_BIN (use this binary, no
# build), BENCH_TIMEOUT (seconds for the measuring part, default 2400),
# PG_BIN (default /usr/lib/postgresql/15/bin).
#
# Needs root (PostgreSQL runs as the postgres user in a throwaway cluster on a
# free loopback port), python3 with psycopg 3 (installed with pip if missing).
# Exit status: 0 all measured; 3 table printed but some metric is n/a;
# anything else: failure.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROWS=1000000
INSERT_ROWS=100000
BUILD=1
PY_ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) ROWS=$2; shift 2;;
    --insert-rows) INSERT_ROWS=$2; shift 2;;
    --no-build) BUILD=0; shift;;
    --no-duckdb) PY_ARGS+=(--no-duckdb); shift;;
    --json) PY_ARGS+=(--json "$(realpath -m "$2")"); shift 2;;
    -h|--help) sed -n '2,21p' "$0"; exit 0;;
    *) echo "unknown argument: $1" >&2; exit 2;;
  esac
done
case "$ROWS$INSERT_ROWS" in *[!0-9]*) echo "--rows and --insert-rows take integers" >&2; exit 2;; esac

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR=$ROOT/$TARGET_DIR;; esac

log() { echo "[bench] $*" >&2; }

[ "$(id -u)" = 0 ] || { echo "run as root (the throwaway PostgreSQL runs as the postgres user)" >&2; exit 1; }
id postgres >/dev/null 2>&1 || { echo "no postgres user" >&2; exit 1; }
[ -x "$PG_BIN/initdb" ] || { echo "PostgreSQL binaries not found in $PG_BIN" >&2; exit 1; }

# ---- weir binary
if [ -n "${WEIR_BIN:-}" ]; then
  BIN=$WEIR_BIN
elif [ "$BUILD" = 1 ]; then
  log "cargo build --release (target dir $TARGET_DIR)"
  (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR cargo build --release --bin weir) >&2
  BIN=$TARGET_DIR/release/weir
else
  BIN=$TARGET_DIR/release/weir
fi
[ -x "$BIN" ] || { echo "weir binary not found: $BIN (drop --no-build to build it)" >&2; exit 1; }
log "weir binary: $BIN ($(stat -c '%y' "$BIN" | cut -d. -f1))"

# ---- python dependencies
if ! python3 -c 'import psycopg' 2>/dev/null; then
  log "installing psycopg[binary]"
  python3 -m pip install -q 'psycopg[binary]' >&2
fi
if [[ " ${PY_ARGS[*]:-} " != *" --no-duckdb "* ]] && ! python3 -c 'import duckdb' 2>/dev/null; then
  log "installing duckdb"
  python3 -m pip install -q duckdb >&2 || log "NOTE: pip install duckdb failed; DuckDB will be skipped"
fi

# ---- scratch space and cleanup
TMP=$(mktemp -d /tmp/weir-bench.XXXXXX)
chmod 755 "$TMP"
PGDATA=$TMP/pg
SOCK=$TMP/sock
mkdir -p "$PGDATA" "$SOCK"
chown postgres "$PGDATA" "$SOCK"
export WEIR_BENCH_PID_FILE=$TMP/weir.pid
PG_STARTED=0
as_pg() { runuser -u postgres -- "$@"; }
cleanup() {
  rc=$?
  if [ -f "$WEIR_BENCH_PID_FILE" ]; then
    pid=$(cat "$WEIR_BENCH_PID_FILE")
    if kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid" 2>/dev/null || true; sleep 1; kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  if [ "$PG_STARTED" = 1 ]; then as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1 || true; fi
  if [ "${BENCH_KEEP_TMP:-0}" = 1 ]; then log "kept $TMP"; else rm -rf "$TMP"; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- throwaway PostgreSQL (initdb defaults: fsync=on, synchronous_commit=on)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
log "initdb + start PostgreSQL on 127.0.0.1:$PORT ($PGDATA)"
as_pg "$PG_BIN/initdb" -D "$PGDATA" -A trust -U postgres -E UTF8 --locale=C.UTF-8 >"$TMP/initdb.log" 2>&1 \
  || { cat "$TMP/initdb.log" >&2; exit 1; }
as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$PGDATA/server.log" -w -t 60 \
  -o "-p $PORT -k $SOCK -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on" start >/dev/null \
  || { cat "$PGDATA/server.log" >&2; exit 1; }
PG_STARTED=1

# ---- measure
export BENCH_LOADAVG="$(cut -d' ' -f1-3 /proc/loadavg)"
log "running scripts/bench_storage.py (timeout ${BENCH_TIMEOUT:-2400} s)"
set +e
timeout --signal=TERM --kill-after=30 "${BENCH_TIMEOUT:-2400}" \
  python3 "$ROOT/scripts/bench_storage.py" --weir-bin "$BIN" --pg-port "$PORT" --tmp "$TMP" \
  --rows "$ROWS" --insert-rows "$INSERT_ROWS" ${PY_ARGS[@]+"${PY_ARGS[@]}"}
rc=$?
set -e
[ $rc = 124 ] && log "timed out after ${BENCH_TIMEOUT:-2400} s"
exit $rc
