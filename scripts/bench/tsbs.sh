#!/bin/bash
# TSBS cpu-only benchmark: weir vs PostgreSQL 15 vs DuckDB on the same data
# and machine (see scripts/bench/tsbs.py for what is measured).
#
# Usage: scripts/bench/tsbs.sh [--hours H] [--hosts N] [--insert-rows N]
#                              [--runs N] [--engines weir,PostgreSQL,DuckDB]
#                              [--json FILE] [--no-build] [--binary-results]
#   --hours H         hours of data at 10 s ticks (default 12: 4.32 M rows
#                     with 1000 hosts); the scale flag
#   --hosts N         hosts (default 1000)
#   --insert-rows N   rows loaded by 1000-row INSERTs per session count
#                     (default 200000)
#   --runs N          measured runs per query after 1 warm-up (default 3)
#   --json FILE       where the JSON goes (default ./tsbs-result.json)
#   --no-build        use ${CARGO_TARGET_DIR:-target}/release/weir as is
#   --binary-results  weir and PostgreSQL answer in binary (psycopg binary
#                     cursors, extended protocol); default text (simple protocol)
# Environment: CARGO_TARGET_DIR (respected), WEIR_BIN (use this binary, no
# build), BENCH_PG_DSN (use this PostgreSQL instead of a throwaway cluster),
# PG_BIN (default /usr/lib/postgresql/15/bin), BENCH_VENV (default
# ~/.cache/weir-bench-venv), BENCH_KEEP_TMP=1 keeps the scratch directory.
#
# Without BENCH_PG_DSN it needs root: the throwaway PostgreSQL runs as the
# `postgres` user (initdb refuses root) on a free loopback port.
# Exit status: 0 all measured and answers agree; 3 an engine or query failed;
# 4 answers differ between engines; other: setup failure.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=1
PY_ARGS=()
JSON=$PWD/tsbs-result.json
while [ $# -gt 0 ]; do
  case "$1" in
    --hours|--hosts|--insert-rows|--runs|--engines) PY_ARGS+=("$1" "$2"); shift 2;;
    --json) JSON=$(realpath -m "$2"); shift 2;;
    --no-build) BUILD=0; shift;;
    --binary-results) PY_ARGS+=("$1"); shift;;
    -h|--help) sed -n '2,26p' "$0"; exit 0;;
    *) echo "unknown argument: $1" >&2; exit 2;;
  esac
done

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR=$ROOT/$TARGET_DIR;; esac
VENV=${BENCH_VENV:-$HOME/.cache/weir-bench-venv}

log() { echo "[tsbs] $*" >&2; }

# ---- weir binary (release)
if [ -n "${WEIR_BIN:-}" ]; then
  BIN=$WEIR_BIN
else
  if [ "$BUILD" = 1 ]; then
    log "cargo build --release (target dir $TARGET_DIR)"
    (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR cargo build --release --bin weir) >&2
  fi
  BIN=$TARGET_DIR/release/weir
fi
[ -x "$BIN" ] || { echo "weir binary not found: $BIN" >&2; exit 1; }
log "weir binary: $BIN ($(stat -c '%y' "$BIN" | cut -d. -f1))"

# ---- Python venv with what the benchmark needs
PY=$VENV/bin/python
if ! { [ -x "$PY" ] && "$PY" -c 'import duckdb, numpy, pyarrow, psycopg' 2>/dev/null; }; then
  log "creating venv $VENV (duckdb, numpy, pyarrow, psycopg)"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q 'duckdb>=1.1' 'numpy>=1.26' 'pyarrow>=15' 'psycopg[binary]>=3.1' >&2
fi

# ---- scratch space and cleanup
TMP=$(mktemp -d /tmp/weir-tsbs.XXXXXX)
chmod 755 "$TMP"
export WEIR_BENCH_PID_FILE=$TMP/weir.pid
PGDATA=$TMP/pg
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

# ---- PostgreSQL: given, or a throwaway cluster
if [ -n "${BENCH_PG_DSN:-}" ]; then
  DSN=$BENCH_PG_DSN
else
  [ "$(id -u)" = 0 ] || { echo "run as root (the throwaway PostgreSQL runs as the postgres user) or set BENCH_PG_DSN" >&2; exit 1; }
  id postgres >/dev/null 2>&1 || { echo "no postgres user; set BENCH_PG_DSN" >&2; exit 1; }
  [ -x "$PG_BIN/initdb" ] || { echo "PostgreSQL binaries not found in $PG_BIN; set PG_BIN or BENCH_PG_DSN" >&2; exit 1; }
  SOCK=$TMP/sock
  mkdir -p "$PGDATA" "$SOCK"
  chown postgres "$PGDATA" "$SOCK"
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  log "initdb + start PostgreSQL on 127.0.0.1:$PORT"
  as_pg "$PG_BIN/initdb" -D "$PGDATA" -A trust -U postgres -E UTF8 --locale=C.UTF-8 >"$TMP/initdb.log" 2>&1 \
    || { cat "$TMP/initdb.log" >&2; exit 1; }
  # fsync and synchronous_commit stay on (as weir's WAL fsync); memory and
  # WAL sizes as a PostgreSQL user would set them for a 4 M-row load.
  as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$PGDATA/server.log" -w -t 60 \
    -o "-p $PORT -k $SOCK -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on -c shared_buffers=1GB -c work_mem=64MB -c maintenance_work_mem=256MB -c max_wal_size=4GB" start >/dev/null \
    || { cat "$PGDATA/server.log" >&2; exit 1; }
  PG_STARTED=1
  DSN="host=127.0.0.1 port=$PORT user=postgres dbname=postgres"
fi

set +e
"$PY" "$ROOT/scripts/bench/tsbs.py" --weir-bin "$BIN" --pg-dsn "$DSN" --tmp "$TMP" --json "$JSON" ${PY_ARGS[@]+"${PY_ARGS[@]}"}
rc=$?
set -e
exit $rc
