#!/usr/bin/env python3
"""Flow freshness and CPU per row (issue 8's measurement).

A writer inserts into `metrics(host, ts, v)` at a fixed rate (default
10,000 rows/s, a COPY of 100 rows every 10 ms) while a per-minute rollup by host
flow keeps `metrics_1m` up to date. A prober records, for sampled batches,
the time from the INSERT's acknowledgement until the sink's row for that
(host, minute) reflects the batch (its count reaches the number of rows
the writer had written for it), polling the sink every 5 ms. Prints freshness p50/p99 and the server's CPU per
row (user+sys from /proc/<pid>/stat) for ingest alone (a first phase with
no flow) and with the flow (the difference is flow maintenance, which also
counts the prober's polling queries), and the CPU of the flow scheduler
thread itself (`weir-flows`, /proc/<pid>/task/<tid>/stat): maintenance
proper.

Usage: scripts/flow_bench.py --dsn postgres://weir@127.0.0.1:5432/public --pid <weir pid>
       [--rate 10000] [--seconds 20]
"""
import argparse, datetime, os, threading, time, statistics
import psycopg

HOSTS = 50

def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(parts[11]) + int(parts[12])) / ticks

def thread_cpu_seconds(pid, name):
    total = 0.0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() != name:
                    continue
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            total += (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
        except FileNotFoundError:
            pass
    return total

def write_phase(dsn, rate, seconds, t0_minute, probe=None):
    conn = psycopg.connect(dsn, autocommit=True)
    batch = max(1, rate // 100)
    sent = 0
    start = time.time()
    n = 0
    counts = {}  # (host, minute start) -> rows written so far
    while time.time() - start < seconds:
        now_s = t0_minute + (time.time() - start)
        rows = []
        for i in range(batch):
            h = f"h{(n + i) % HOSTS}"
            ts = now_s + i * 1e-6
            rows.append((h, ts))
            key = (h, int(ts // 60) * 60)
            counts[key] = counts.get(key, 0) + 1
        # COPY: a Python client cannot keep up with 10,000 rows/s of
        # INSERT text on a loaded machine.
        data = "".join(f"{h}\t{datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime('%Y-%m-%d %H:%M:%S.%f')}\t1\n" for h, ts in rows)
        with conn.cursor().copy("COPY metrics FROM STDIN") as cp:
            cp.write(data)
        acked = time.time()
        n += batch
        sent += batch
        if probe is not None and (n // batch) % 20 == 0:
            key = (rows[-1][0], int(rows[-1][1] // 60) * 60)
            probe.append((key, counts[key], acked))
        sleep = start + sent / rate - time.time()
        if sleep > 0:
            time.sleep(sleep)
    conn.close()
    return sent

def prober(dsn, probes, results, stop):
    """Poll the whole sink (a few rows) every 5 ms and settle every pending
    probe whose (host, minute) count reached what the writer had written
    when its batch was acknowledged."""
    conn = psycopg.connect(dsn, autocommit=True)
    pending = []
    give_up = None
    while True:
        while probes:
            pending.append(probes.pop(0))
        if stop.is_set():
            give_up = give_up or time.time() + 30
            if not pending or time.time() > give_up:
                break
        if not pending:
            time.sleep(0.005)
            continue
        seen = {}
        for host, minute, cnt in conn.execute("SELECT host, minute, n FROM metrics_1m").fetchall():
            seen[(host, int(minute.replace(tzinfo=datetime.timezone.utc).timestamp()))] = cnt or 0
        now = time.time()
        left = []
        for key, want, acked in pending:
            if seen.get(key, 0) >= want:
                results.append(now - acked)
            else:
                left.append((key, want, acked))
        pending = left
        time.sleep(0.005)
    conn.close()

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--rate", type=int, default=10000)
    ap.add_argument("--seconds", type=int, default=20)
    a = ap.parse_args()
    c = psycopg.connect(a.dsn, autocommit=True)
    c.execute("DROP FLOW IF EXISTS bench_1m")
    c.execute("DROP TABLE IF EXISTS metrics_1m")
    c.execute("DROP TABLE IF EXISTS metrics")
    c.execute("CREATE TABLE metrics (host STRING, ts TIMESTAMP TIME INDEX, v DOUBLE, PRIMARY KEY (host))")
    t0 = time.time()
    # Phase 1: ingest only.
    cpu0 = cpu_seconds(a.pid)
    # A day back: these rows stay out of the minutes the prober checks.
    n1 = write_phase(a.dsn, a.rate, a.seconds, t0 - 86400)
    cpu1 = cpu_seconds(a.pid)
    ingest_us = (cpu1 - cpu0) / n1 * 1e6
    # Phase 2: with the flow.
    c.execute("CREATE FLOW bench_1m SINK TO metrics_1m WITH (backfill = false) AS "
              "SELECT host, date_trunc('minute', ts) AS minute, count(*) AS n, avg(v) AS v FROM metrics GROUP BY host, minute")
    probes, results, stop = [], [], threading.Event()
    th = threading.Thread(target=prober, args=(a.dsn, probes, results, stop))
    th.start()
    cpu2 = cpu_seconds(a.pid)
    flow0 = thread_cpu_seconds(a.pid, "weir-flows")
    n2 = write_phase(a.dsn, a.rate, a.seconds, time.time(), probes)
    flow1 = thread_cpu_seconds(a.pid, "weir-flows")
    stop.set()
    th.join()
    cpu3 = cpu_seconds(a.pid)
    total_us = (cpu3 - cpu2) / n2 * 1e6
    results.sort()
    p = lambda q: results[min(len(results) - 1, int(q * len(results)))] if results else float("nan")
    print(f"rows: ingest-only {n1} ({n1 / a.seconds:.0f}/s), with flow {n2} ({n2 / a.seconds:.0f}/s)")
    print(f"freshness: samples {len(results)}, p50 {p(0.5):.3f} s, p99 {p(0.99):.3f} s")
    print(f"server CPU per row: ingest {ingest_us:.1f} us, ingest+flow {total_us:.1f} us, flow maintenance {total_us - ingest_us:.1f} us")
    print(f"flow scheduler thread CPU per row: {(flow1 - flow0) / n2 * 1e6:.2f} us")
    c.execute("DROP FLOW bench_1m")

if __name__ == "__main__":
    main()
