#!/usr/bin/env python3
"""Streaming-mode measurements (issue 11).

1. Throughput of one epoch (single-threaded: rows/s per core):
   - aggregation: N rows COPYed into a `ttl = 'instant'` table `ev`
     (1,000 hosts) wait in the flow (EVAL INTERVAL '1 hour' keeps the
     scheduler away), then one ADMIN FLUSH_FLOW runs them as one epoch
     (count / sum / avg / max per host); timed.
   - join: `orders` (N rows) joined with `items` (1,000 rows) on item, a
     streaming flow created over the loaded tables; its first epoch (a
     snapshot of both, arrangements built, N sink rows written) timed,
     then an epoch of N/4 more orders.
2. Latency from write acknowledgement to sink at a steady rate (default
   10,000 rows/s: a COPY of 100 rows every 10 ms, each batch its own id):
   for an aggregation over an instant source (count per batch id) and a
   join of stored tables; a prober polls the sink every 5 ms and settles
   every 10th batch when all its rows are there. Epochs close on the
   server's `[stream] barrier_interval_ms` (default 1000 ms): p99 should
   stay under twice that.
3. State bytes per group and barrier commit time: from
   information_schema.flow_operators after the throughput epochs (state
   rows / bytes of the aggregation and join, the last barrier's time), and
   over all epochs from the server log when run with
   WEIR_LOG=info,weir::flow::streaming=debug (the `streaming epoch` lines).

Throughput is reported against wall time and against the server's CPU
time over the epoch (user + system from /proc/<pid>/stat: rows/s per
core even on a loaded machine); the latter needs the server's pid, known
when the script starts the server itself (--weir-bin, a temporary data
directory, the log captured for the barrier times) or given (--weir-pid).

Usage: scripts/stream_bench.py --dsn postgres://weir@127.0.0.1:5432/public
       [--rows 200000] [--rate 10000] [--seconds 15] [--log weir.stderr]
       [--weir-pid PID]
   or: scripts/stream_bench.py --weir-bin target/release/weir [...]
"""
import argparse, datetime, os, re, socket, subprocess, tempfile, threading, time
import psycopg

WEIR_PID = None

def cpu_seconds():
    """User + system CPU seconds of the server so far (None: unknown)."""
    if WEIR_PID is None:
        return None
    with open(f"/proc/{WEIR_PID}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")

def timed(c, sql):
    """Run sql: (wall seconds, server CPU seconds or None)."""
    c0, s = cpu_seconds(), time.time()
    c.execute(sql)
    e = time.time() - s
    c1 = cpu_seconds()
    return e, (c1 - c0 if c0 is not None else None)

def ts_text(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime('%Y-%m-%d %H:%M:%S.%f')

def copy_rows(conn, table, lines):
    with conn.cursor().copy(f"COPY {table} FROM STDIN") as cp:
        for i in range(0, len(lines), 10000):
            cp.write("".join(lines[i:i + 10000]))

def throughput(c, rows):
    out = {}
    c.execute("CREATE TABLE ev (host STRING, ts TIMESTAMP TIME INDEX, v DOUBLE, PRIMARY KEY (host)) WITH (ttl = 'instant')")
    c.execute("CREATE FLOW b_agg SINK TO b_agg_out EVAL INTERVAL '1 hour' AS "
              "SELECT host, count(*) AS n, sum(v) AS s, avg(v) AS a, max(v) AS mx FROM ev GROUP BY host")
    t0 = time.time() - 86400
    lines = [f"h{i % 1000}\t{ts_text(t0 + i * 1e-3)}\t{i % 97}\n" for i in range(rows)]
    copy_rows(c, "ev", lines)
    e, cpu = timed(c, "ADMIN FLUSH_FLOW('b_agg')")
    n = c.execute("SELECT sum(n) FROM b_agg_out").fetchone()[0]
    assert n == rows, (n, rows)
    out["agg"] = (rows, e, cpu)
    c.execute("CREATE TABLE orders (oid STRING, ts TIMESTAMP TIME INDEX, item STRING, qty BIGINT, PRIMARY KEY (oid))")
    c.execute("CREATE TABLE items (item STRING, ts TIMESTAMP TIME INDEX, price BIGINT, PRIMARY KEY (item))")
    copy_rows(c, "items", [f"i{i}\t2000-01-01 00:00:00\t{i % 13}\n" for i in range(1000)])
    copy_rows(c, "orders", [f"o{i % 5000}\t{ts_text(t0 + i * 1e-3)}\ti{i % 1000}\t{i % 7}\n" for i in range(rows)])
    c0, s = cpu_seconds(), time.time()
    c.execute("CREATE FLOW b_join SINK TO b_join_out AS SELECT o.oid, o.ts, o.item, o.qty * i.price AS amount FROM orders o JOIN items i ON o.item = i.item")
    c.execute("ADMIN FLUSH_FLOW('b_join')")
    e = time.time() - s
    cpu = cpu_seconds() - c0 if c0 is not None else None
    n = c.execute("SELECT count(*) FROM b_join_out").fetchone()[0]
    assert n == rows, (n, rows)
    out["join_first"] = (rows + 1000, e, cpu)
    more = rows // 4
    copy_rows(c, "orders", [f"o{i % 5000}\t{ts_text(t0 + 1000 + i * 1e-3)}\ti{i % 1000}\t{i % 7}\n" for i in range(more)])
    e, cpu = timed(c, "ADMIN FLUSH_FLOW('b_join')")
    out["join_next"] = (more, e, cpu)
    ops = c.execute("SELECT flow_name, operator, state_rows, state_bytes, cache_hits, cache_misses, barrier_ms "
                    "FROM information_schema.flow_operators WHERE flow_name IN ('b_agg', 'b_join') "
                    "AND operator IN ('hash_agg', 'join') ORDER BY flow_name").fetchall()
    for f, op, rows_, bytes_, hits, misses, barrier in ops:
        per = bytes_ / rows_ if rows_ else float("nan")
        print(f"state {f} {op}: {rows_} rows, {bytes_} bytes ({per:.0f} B/row), cache {hits} hits / {misses} misses, "
              f"last barrier {barrier:.1f} ms")
    for f in ("b_agg", "b_join"):
        c.execute(f"DROP FLOW {f}")
    return out

def latency(dsn, c, rate, seconds, kind):
    if kind == "agg":
        c.execute("CREATE TABLE lev (batch STRING, ts TIMESTAMP TIME INDEX, v DOUBLE, PRIMARY KEY (batch)) WITH (ttl = 'instant')")
        c.execute("CREATE FLOW l_agg SINK TO l_agg_out AS SELECT batch, count(*) AS n, max(v) AS mx FROM lev GROUP BY batch")
        table, probe_sql = "lev", "SELECT batch, n FROM l_agg_out"
    else:
        c.execute("CREATE TABLE lorders (batch STRING, ts TIMESTAMP TIME INDEX, item STRING, PRIMARY KEY (batch))")
        c.execute("CREATE TABLE litems (item STRING, ts TIMESTAMP TIME INDEX, price BIGINT, PRIMARY KEY (item))")
        copy_rows(c, "litems", [f"i{i}\t2000-01-01 00:00:00\t{i}\n" for i in range(100)])
        c.execute("CREATE FLOW l_join SINK TO l_join_out AS SELECT o.batch, o.ts, i.price FROM lorders o JOIN litems i ON o.item = i.item")
        table, probe_sql = "lorders", "SELECT batch, count(*) FROM l_join_out GROUP BY batch"
    batch = max(1, rate // 100)
    probes, results, stop = [], [], threading.Event()

    def prober():
        conn = psycopg.connect(dsn, autocommit=True)
        pending, give_up = [], None
        while True:
            while probes:
                pending.append(probes.pop(0))
            if stop.is_set():
                give_up = give_up or time.time() + 30
                if not pending or time.time() > give_up:
                    break
            if pending:
                seen = dict(conn.execute(probe_sql).fetchall())
                now = time.time()
                left = []
                for b, acked in pending:
                    if (seen.get(b) or 0) >= batch:
                        results.append(now - acked)
                    else:
                        left.append((b, acked))
                pending = left
            time.sleep(0.005)
        conn.close()

    th = threading.Thread(target=prober)
    th.start()
    w = psycopg.connect(dsn, autocommit=True)
    start, sent, k = time.time(), 0, 0
    while time.time() - start < seconds:
        now = time.time()
        b = f"b{k}"
        if kind == "agg":
            data = "".join(f"{b}\t{ts_text(now + i * 1e-6)}\t{i}\n" for i in range(batch))
        else:
            data = "".join(f"{b}\t{ts_text(now + i * 1e-6)}\ti{i % 100}\n" for i in range(batch))
        with w.cursor().copy(f"COPY {table} FROM STDIN") as cp:
            cp.write(data)
        acked = time.time()
        if k % 10 == 0:
            probes.append((b, acked))
        k += 1
        sent += batch
        sleep = start + sent / rate - time.time()
        if sleep > 0:
            time.sleep(sleep)
    elapsed = time.time() - start
    stop.set()
    th.join()
    results.sort()
    p = lambda q: results[min(len(results) - 1, int(q * len(results)))] if results else float("nan")
    return sent / elapsed, len(results), p(0.5), p(0.99)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn")
    ap.add_argument("--weir-bin", help="start this server binary (temporary data dir, debug log for barrier times)")
    ap.add_argument("--weir-pid", type=int, help="the server's pid (CPU time per epoch)")
    ap.add_argument("--rows", type=int, default=200000)
    ap.add_argument("--rate", type=int, default=10000)
    ap.add_argument("--seconds", type=int, default=15)
    ap.add_argument("--log")
    a = ap.parse_args()
    if a.weir_bin:
        # Throughput on a server whose scheduler is paused (failpoint
        # flow_scheduler_paused): the rows wait for the one timed epoch,
        # which ADMIN FLUSH_FLOW runs. Latency on a fresh server whose
        # barriers close epochs.
        a.log = a.log or os.path.join(tempfile.mkdtemp(prefix="stream-bench-"), "weir.stderr")
        server = start(a, {"WEIR_FAILPOINTS": "flow_scheduler_paused"}, a.log + ".throughput")
        try:
            run(a, throughput_only=True)
        finally:
            server.kill()
            server.wait()
        server = start(a, {}, a.log)
        try:
            run(a, latency_only=True)
        finally:
            server.kill()
            server.wait()
        return
    global WEIR_PID
    WEIR_PID = a.weir_pid
    if not a.dsn:
        ap.error("--dsn or --weir-bin")
    run(a)

def start(a, env_extra, log):
    """Start --weir-bin on a free port over a new data directory."""
    global WEIR_PID
    data = tempfile.mkdtemp(prefix="stream-bench-")
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    env = dict(os.environ, WEIR_LOG="info,weir::flow::streaming=debug", **env_extra)
    server = subprocess.Popen([a.weir_bin, "--data-dir", os.path.join(data, "d"), "--listen", f"127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=open(log, "w"), env=env)
    a.dsn = f"postgres://weir@127.0.0.1:{port}/public"
    WEIR_PID = server.pid
    for _ in range(100):
        try:
            psycopg.connect(a.dsn).close()
            break
        except Exception:
            time.sleep(0.1)
    return server

def run(a, throughput_only=False, latency_only=False):
    c = psycopg.connect(a.dsn, autocommit=True)
    t = {} if latency_only else throughput(c, a.rows)
    for k, (n, e, cpu) in t.items():
        per_core = f", {n / cpu:,.0f} rows per server CPU-second ({cpu:.3f} s CPU)" if cpu else ""
        print(f"throughput {k}: {n} rows in {e:.3f} s = {n / e:,.0f} rows/s wall (one epoch){per_core}")
    for kind in () if throughput_only else ("agg", "join"):
        r, n, p50, p99 = latency(a.dsn, c, a.rate, a.seconds, kind)
        print(f"latency {kind}: {r:,.0f} rows/s written, {n} probes, write->sink p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms")
    if a.log and not throughput_only:
        commits, per_group = [], []
        logs = [a.log] + [a.log + ".throughput"] * os.path.exists(a.log + ".throughput")
        for line in (l for f in logs for l in open(f, errors="replace")):
            if "streaming epoch" not in line:
                continue
            line = re.sub(r"\x1b\[[0-9;]*m", "", line)
            m = re.search(r"commit_us=(\d+)", line)
            if m:
                commits.append(int(m.group(1)))
            m = re.search(r"flow=b_agg .*state_bytes=(\d+)", line)
            if m:
                per_group.append(int(m.group(1)) / 1000)
        commits.sort()
        if commits:
            q = lambda x: commits[min(len(commits) - 1, int(x * len(commits)))]
            print(f"barrier commit: {len(commits)} epochs, p50 {q(0.5) / 1000:.2f} ms, p99 {q(0.99) / 1000:.2f} ms, max {commits[-1] / 1000:.2f} ms")
        if per_group:
            print(f"state bytes per group (b_agg, 1,000 groups, count/sum/avg/max over append-only input): {per_group[-1]:.0f}")

if __name__ == "__main__":
    main()
