#!/usr/bin/env python3
"""TSBS-shaped aggregation queries against a running weir, for executor work
until scripts/bench/ lands: cpu-only data (HOSTS hosts x TICKS 10 s ticks,
10 usage fields as clamped random walks, fixed seed), loaded by COPY in
chunks, flushed and compacted, then each query 1 warm-up + RUNS measured
runs; prints the median and min-max in ms.

Usage: tsbs_agg_bench.py --dsn postgresql://weir@127.0.0.1:PORT/public
                         [--hosts 1000] [--ticks 4320] [--runs 3] [--no-load]
                         [--only NAME] [--loop SECONDS]
(--loop: run the one --only query repeatedly for that long, for perf.)
"""
import argparse
import io
import statistics
import time

import numpy as np
import pandas as pd
import psycopg

FIELDS = ["usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
          "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"]
START = np.datetime64("2016-01-01T00:00:00")


def ts(seconds):
    return str(START + np.timedelta64(int(seconds), "s")).replace("T", " ")


def queries(ticks):
    end = ticks * 10
    h = 3600
    eight = ", ".join(f"'host_{i}'" for i in (9, 18, 27, 36, 45, 54, 63, 72))
    five = ", ".join(f"max({f})" for f in FIELDS[:5])
    allmax = ", ".join(f"max({f})" for f in FIELDS)
    allavg = ", ".join(f"avg({f})" for f in FIELDS)
    return {
        "single-groupby-1-1-1": f"SELECT date_trunc('minute', time) AS minute, max(usage_user) FROM cpu "
        f"WHERE hostname IN ('host_249') AND time >= '{ts(2*h)}' AND time < '{ts(3*h)}' GROUP BY minute ORDER BY minute",
        "single-groupby-5-8-1": f"SELECT date_trunc('minute', time) AS minute, {five} FROM cpu "
        f"WHERE hostname IN ({eight}) AND time >= '{ts(2*h)}' AND time < '{ts(3*h)}' GROUP BY minute ORDER BY minute",
        "cpu-max-all-8": f"SELECT date_trunc('hour', time) AS hour, {allmax} FROM cpu "
        f"WHERE hostname IN ({eight}) AND time >= '{ts(h)}' AND time < '{ts(9*h)}' GROUP BY hour ORDER BY hour",
        "double-groupby-all": f"SELECT date_trunc('hour', time) AS hour, hostname, {allavg} FROM cpu "
        f"WHERE time >= '{ts(0)}' AND time < '{ts(end)}' GROUP BY hour, hostname ORDER BY hour, hostname",
        "high-cpu-all": f"SELECT * FROM cpu WHERE usage_user > 90.0 AND time >= '{ts(0)}' AND time < '{ts(end)}'",
        "groupby-orderby-limit": f"SELECT date_trunc('minute', time) AS minute, max(usage_user) FROM cpu "
        f"WHERE time < '{ts(end - 1800)}' GROUP BY minute ORDER BY minute DESC LIMIT 5",
        "lastpoint": "SELECT DISTINCT ON (hostname) * FROM cpu ORDER BY hostname, time DESC",
    }


def load(conn, hosts, ticks):
    conn.execute("DROP TABLE IF EXISTS cpu")
    cols = ", ".join(f"{f} DOUBLE PRECISION" for f in FIELDS)
    conn.execute(f"CREATE TABLE cpu (hostname TEXT, region TEXT, datacenter TEXT, time TIMESTAMP TIME INDEX, {cols}, "
                 "PRIMARY KEY (hostname))")
    rng = np.random.default_rng(42)
    vals = rng.uniform(0, 100, size=(hosts, len(FIELDS)))
    names = np.array([f"host_{i}" for i in range(hosts)])
    regions = np.array([f"region_{i % 9}" for i in range(hosts)])
    dcs = np.array([f"dc_{i % 3}" for i in range(hosts)])
    t0 = time.time()
    chunk_ticks = max(1, 200_000 // hosts)
    for c0 in range(0, ticks, chunk_ticks):
        tick_range = range(c0, min(ticks, c0 + chunk_ticks))
        blocks = []
        for t in tick_range:
            vals = np.clip(vals + rng.normal(0, 1, size=vals.shape), 0, 100)
            blocks.append(vals)
        k = len(blocks)
        df = pd.DataFrame(np.concatenate(blocks), columns=FIELDS)
        df.insert(0, "time", np.repeat([ts(t * 10) for t in tick_range], hosts))
        df.insert(0, "datacenter", np.tile(dcs, k))
        df.insert(0, "region", np.tile(regions, k))
        df.insert(0, "hostname", np.tile(names, k))
        with conn.cursor().copy("COPY cpu FROM STDIN WITH (FORMAT csv)") as cp:
            cp.write(df.to_csv(header=False, index=False, float_format="%.4f"))
    print(f"loaded {hosts * ticks} rows in {time.time() - t0:.1f} s")
    conn.execute("ADMIN flush_table('cpu')")
    conn.execute("ADMIN compact_table('cpu')")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--ticks", type=int, default=4320)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-load", action="store_true")
    ap.add_argument("--only")
    ap.add_argument("--loop", type=float)
    a = ap.parse_args()
    conn = psycopg.connect(a.dsn, autocommit=True)
    if not a.no_load:
        load(conn, a.hosts, a.ticks)
    for name, q in queries(a.ticks).items():
        if a.only and name != a.only:
            continue
        if a.loop:
            end = time.time() + a.loop
            n = 0
            while time.time() < end:
                conn.execute(q).fetchall()
                n += 1
            print(f"{name}: {n} runs in {a.loop} s")
            continue
        conn.execute(q).fetchall()
        times = []
        rows = 0
        for _ in range(a.runs):
            t = time.perf_counter()
            rows = len(conn.execute(q).fetchall())
            times.append((time.perf_counter() - t) * 1000)
        print(f"{name:24} median {statistics.median(times):9.1f} ms  (min {min(times):.1f}, max {max(times):.1f}; {rows} rows)")


if __name__ == "__main__":
    main()
