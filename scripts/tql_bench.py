#!/usr/bin/env python3
"""TQL vs SQL on TSBS-shaped data (issue 14's measurement).

Loads `cpu_usage_user(hostname TAG, ts TIME INDEX, usage_user)` — a TSBS
cpu-only metric as GreptimeDB's Prometheus layout has it: HOSTS hosts, one
sample every 10 s over HOURS hours, a growing counter with noise — with
COPY, then times (best of 3):

  TQL  TQL EVAL (start, end, '60s') sum by (hostname) (rate(cpu_usage_user[5m]))
  SQL  the same shape in SQL: per host and minute, the change over the
       minute's samples per second, summed by host

Usage: scripts/tql_bench.py --dsn postgres://weir@127.0.0.1:5432/public
       [--hosts 1000] [--hours 12] [--skip-load] [--prometheus]
"""
import argparse, io, os, random, sys, time
import psycopg


def samples(hosts, hours):
    """(host, seconds, value) of every sample, host by host."""
    rnd = random.Random(14)
    for h in range(hosts):
        v = 0.0
        for i in range(hours * 360):
            v += rnd.random() * 10
            yield h, i * 10, round(v, 3)


def prometheus(hosts, hours, q, end, n=3):
    """The same samples in Prometheus (promtool-made blocks), the same
    query as a range query: best of n (seconds) and the points returned."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from promtool_compare import Prometheus

    def write(path):
        with open(path, "w") as f:
            for h, s, v in samples(hosts, hours):
                f.write(f'cpu_usage_user{{hostname="host_{h}"}} {v} {s}\n')
            f.write("# EOF\n")

    t0 = time.time()
    prom = Prometheus(write)
    print(f"prometheus: blocks built and server ready in {time.time() - t0:.1f} s")
    try:
        times, points = [], 0
        for _ in range(n):
            t = time.time()
            r = prom.query_range(q, 300, end, 60)
            times.append(time.time() - t)
            points = sum(len(s["values"]) for s in r.get("result", []))
        return min(times), points
    finally:
        prom.stop()


def load(conn, hosts, hours):
    conn.execute("DROP TABLE IF EXISTS cpu_usage_user")
    conn.execute("CREATE TABLE cpu_usage_user (hostname TEXT, ts TIMESTAMP TIME INDEX, usage_user DOUBLE PRECISION, PRIMARY KEY (hostname))")
    t0 = time.time()
    with conn.cursor() as cur:
        buf, n = io.StringIO(), 0
        for h, s, v in samples(hosts, hours):
            buf.write(f"host_{h}\t1970-01-01 {s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}\t{v:.3f}\n")
            n += 1
            if n % 200_000 == 0:
                with cur.copy("COPY cpu_usage_user FROM STDIN") as cp:
                    cp.write(buf.getvalue())
                buf = io.StringIO()
        with cur.copy("COPY cpu_usage_user FROM STDIN") as cp:
            cp.write(buf.getvalue())
    print(f"loaded {n} rows in {time.time() - t0:.1f} s")


def best(conn, sql, n=3):
    times, rows = [], 0
    for _ in range(n):
        t = time.time()
        rows = len(conn.execute(sql).fetchall())
        times.append(time.time() - t)
    return min(times), rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--hours", type=int, default=12)
    ap.add_argument("--skip-load", action="store_true")
    ap.add_argument("--prometheus", action="store_true", help="also time Prometheus (promtool and prometheus installed)")
    a = ap.parse_args()
    conn = psycopg.connect(a.dsn, autocommit=True)
    if not a.skip_load:
        load(conn, a.hosts, a.hours)
    end = a.hours * 3600
    tql = f"TQL EVAL (300, {end}, '60s') sum by (hostname) (rate(cpu_usage_user[5m]))"
    sql = ("SELECT hostname, date_bin('60 seconds', ts, '1970-01-01') AS t, "
           "(max(usage_user) - min(usage_user)) / 60 AS r FROM cpu_usage_user "
           "GROUP BY hostname, date_bin('60 seconds', ts, '1970-01-01')")
    for name, q in (("TQL", tql), ("SQL", sql)):
        s, rows = best(conn, q)
        print(f"{name}: {s * 1000:.0f} ms, {rows} rows   {q}")
    if a.prometheus:
        q = "sum by (hostname) (rate(cpu_usage_user[5m]))"
        s, points = prometheus(a.hosts, a.hours, q, end)
        print(f"Prometheus: {s * 1000:.0f} ms, {points} points   query_range {q} start=300 end={end} step=60")


if __name__ == "__main__":
    main()
