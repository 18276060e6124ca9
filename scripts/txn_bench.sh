#!/usr/bin/env bash
# Single-row INSERT throughput, pgbench-style: 8 clients, each INSERT its
# own statement, in autocommit vs blocks of 10 and 100 (BEGIN ... COMMIT).
# Prints rows/s per mode. Works against weir and PostgreSQL alike.
#   scripts/txn_bench.sh HOST PORT USER DB [SECONDS]
# e.g. scripts/txn_bench.sh 127.0.0.1 5433 weir public 10
#      scripts/txn_bench.sh 127.0.0.1 55432 postgres postgres 10
set -euo pipefail
host=$1 port=$2 user=$3 db=$4 secs=${5:-10} clients=${CLIENTS:-8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
psql -q -h "$host" -p "$port" -U "$user" "$db" -c "DROP TABLE IF EXISTS bench_txn" -c "CREATE TABLE bench_txn (client INTEGER, id BIGINT, ts TIMESTAMP)" >/dev/null
insert='INSERT INTO bench_txn VALUES (:client_id, :id, now());'
for n in 1 10 100; do
    f="$tmp/rows$n.sql"
    [ "$n" -gt 1 ] && echo "BEGIN;" > "$f" || : > "$f"
    for _ in $(seq "$n"); do
        echo '\set id random(1, 1000000000)' >> "$f"
        echo "$insert" >> "$f"
    done
    [ "$n" -gt 1 ] && echo "COMMIT;" >> "$f"
done
for n in 1 10 100; do
    out=$(pgbench -n -M simple -h "$host" -p "$port" -U "$user" -c "$clients" -j "$clients" -T "$secs" -f "$tmp/rows$n.sql" "$db" 2>&1)
    tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -1)
    if [ -z "$tps" ]; then echo "$out" >&2; exit 1; fi
    mode=$([ "$n" -eq 1 ] && echo "autocommit" || echo "$n-row blocks")
    awk -v m="$mode" -v t="$tps" -v n="$n" 'BEGIN { printf "%-15s %10.0f rows/s  (%.1f commits/s)\n", m, t * n, t }'
done
rows=$(psql -At -h "$host" -p "$port" -U "$user" "$db" -c "SELECT count(*) FROM bench_txn")
echo "rows in bench_txn: $rows"
