#!/bin/bash
# A stand-in for weir with the same CLI contract (--data-dir, --listen, the
# "weir listening on" line, signals), backed by PostgreSQL 15, to check the
# spawning test paths: WEIR_TEST_BIN=scripts/pg_as_weir.sh WEIR_TEST_PLAIN_DDL=1 cargo test
# Needs root and the postgres user. Not used by CI.
set -e
while [ $# -gt 0 ]; do case "$1" in --data-dir) DIR=$2; shift 2;; --listen) shift 2;; *) shift;; esac; done
B=/usr/lib/postgresql/15/bin
chown postgres "$DIR"
IP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
if [ ! -f "$DIR/pg/PG_VERSION" ]; then
  setpriv --reuid=postgres --regid=postgres --init-groups $B/initdb -D "$DIR/pg" -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
  setpriv --reuid=postgres --regid=postgres --init-groups $B/pg_ctl -D "$DIR/pg" -o "-p $IP -k /tmp -c listen_addresses=127.0.0.1" -w start >/dev/null
  $B/psql -h 127.0.0.1 -p $IP -U postgres -c 'CREATE DATABASE public' -c 'CREATE ROLE weir_test SUPERUSER LOGIN' postgres >/dev/null
  setpriv --reuid=postgres --regid=postgres --init-groups $B/pg_ctl -D "$DIR/pg" -w stop >/dev/null
fi
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
( for i in $(seq 100); do if $B/pg_isready -q -h 127.0.0.1 -p $PORT; then echo "weir listening on 127.0.0.1:$PORT"; exit; fi; sleep 0.1; done ) &
exec setpriv --reuid=postgres --regid=postgres --init-groups $B/postgres -D "$DIR/pg" -p $PORT -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off
