#!/usr/bin/env python3
"""TDengine stream measurements (issue 13).

1. Latency: a writer COPYs into supertable `meters` (ts, v, tbname, gid) at
   --rate rows/s spread over --tables child tables (event time = wall
   time), while stream `s_lat INTERVAL(1m) SLIDING(1m) FROM meters PARTITION
   BY tbname` writes one row per (child, minute) into `meters_1m`. For each
   minute the writer notes when the first batch at or past the minute's end
   was acknowledged (that write closes every child's window); a prober polls
   `SELECT ts, count(*) FROM meters_1m GROUP BY ts` every 50 ms and charges
   each new output row the time since that acknowledgement. Prints the
   writer's achieved rate (over the writing time only), then p50/p99/max
   per window and over every (child, window) row of the full windows (the
   first window, which began before the writer, is reported apart: it also
   creates the 1,000 output subtables). --interval sets the window (1m,
   the issue's; 10s gives many windows quickly); the default --seconds
   covers at least 3 full windows.
2. Recalculation: --hours of history at 10 s resolution for every child of
   `rc`, a stream created over it (history recorded, not computed), then
   `RECALCULATE STREAM … FROM start TO end`; prints the time until
   information_schema.ins_stream_recalculates says Finished.

   With --weir-bin (a weir started here on a fresh data directory) it also
   prints the server's resident memory: at the start of RECALCULATE, the
   most seen while it ran (sampled every 0.2 s) and the process's peak.

Usage: scripts/tdengine_bench.py --dsn postgres://weir@127.0.0.1:5439/public | --weir-bin PATH
       [--rate 10000] [--tables 1000] [--seconds N] [--interval 1m] [--hours 1] [--only latency|recalc]
"""
import argparse, datetime, functools, os, socket, subprocess, sys, tempfile, threading, time, statistics
print = functools.partial(print, flush=True)
import psycopg

def fmt(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime('%Y-%m-%d %H:%M:%S.%f')

def setup(conn, stable, tables):
    conn.execute(f"CREATE STABLE {stable} (ts TIMESTAMP, v INT) TAGS (gid INT)")
    for lo in range(0, tables, 200):
        parts = " ".join(f"{stable}_t{i} USING {stable} TAGS ({i % 10})" for i in range(lo, min(tables, lo + 200)))
        conn.execute(f"CREATE TABLE {parts}")

def latency(dsn, rate, tables, seconds, interval):
    step = {"s": 1, "m": 60}[interval[-1]] * int(interval[:-1])
    conn = psycopg.connect(dsn, autocommit=True)
    setup(conn, "meters", tables)
    conn.execute(f"CREATE STREAM s_lat INTERVAL({interval}) SLIDING({interval}) FROM meters PARTITION BY tbname INTO meters_1m "
                 "AS SELECT _twstart AS ts, count(*) AS c, avg(v) AS v FROM %%trows")
    closed_at = {}   # window start (epoch s) -> ack time of the write that closed it
    stop = threading.Event()
    lat = {}         # window start -> latencies of its (child, window) rows

    def prober():
        pc = psycopg.connect(dsn, autocommit=True)
        seen = {}
        while not stop.is_set() or time.time() < stop_deadline[0]:
            now = time.time()
            for ts, n in pc.execute("SELECT ts, count(*) FROM meters_1m GROUP BY ts").fetchall():
                w = int(ts.replace(tzinfo=datetime.timezone.utc).timestamp())
                new = n - seen.get(w, 0)
                if new > 0 and w in closed_at:
                    lat.setdefault(w, []).extend([now - closed_at[w]] * new)
                seen[w] = n
            time.sleep(0.05)
        pc.close()

    stop_deadline = [float("inf")]
    th = threading.Thread(target=prober)
    th.start()
    batch = max(1, rate // 10)   # a COPY every 100 ms
    start = time.time()
    sent = 0
    n = 0
    last_minute = None
    while time.time() - start < seconds:
        now = time.time()
        data = "".join(f"{fmt(now + i * 1e-6)}\t1\tmeters_t{(n + i) % tables}\t{((n + i) % tables) % 10}\n" for i in range(batch))
        with conn.cursor().copy("COPY meters (ts, v, tbname, gid) FROM STDIN") as cp:
            cp.write(data)
        acked = time.time()
        minute = int(now // step) * step
        if last_minute is not None and minute != last_minute:
            closed_at[last_minute] = acked
        last_minute = minute
        n += batch
        sent += batch
        sleep = start + sent / rate - time.time()
        if sleep > 0:
            time.sleep(sleep)
    wrote = time.time() - start
    stop_deadline[0] = time.time() + 60
    stop.set()
    th.join()
    conn.execute("DROP STREAM s_lat")
    conn.close()
    return sent, wrote, lat, int(start // step) * step

SERVER_PID = None

def rss_kb(key="VmRSS"):
    """The weir process's resident memory in kB (VmRSS, or VmHWM: its peak)."""
    if SERVER_PID is None:
        return None
    try:
        with open(f"/proc/{SERVER_PID}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None

def recalc(dsn, tables, hours):
    conn = psycopg.connect(dsn, autocommit=True)
    setup(conn, "rc", tables)
    t0 = 1735689600  # 2025-01-01 00:00:00
    rows = 0
    for h in range(hours):
        for lo in range(0, tables, 100):
            data = []
            for i in range(lo, min(tables, lo + 100)):
                for k in range(360):
                    data.append(f"{fmt(t0 + h * 3600 + k * 10)}\t{k}\trc_t{i}\t{i % 10}\n")
            with conn.cursor().copy("COPY rc (ts, v, tbname, gid) FROM STDIN") as cp:
                cp.write("".join(data))
            rows += len(data)
    # One more row per child an hour later closes the last window.
    data = "".join(f"{fmt(t0 + hours * 3600 + 60)}\t0\trc_t{i}\t{i % 10}\n" for i in range(tables))
    with conn.cursor().copy("COPY rc (ts, v, tbname, gid) FROM STDIN") as cp:
        cp.write(data)
    conn.execute("CREATE STREAM s_rc INTERVAL(1m) SLIDING(1m) FROM rc PARTITION BY tbname INTO rc_1m "
                 "AS SELECT _twstart AS ts, count(*) AS c, sum(v) AS s FROM %%trows")
    rss_before = rss_kb()
    rss_max = rss_before or 0
    start = time.time()
    conn.execute(f"RECALCULATE STREAM s_rc FROM '{fmt(t0)}' TO '{fmt(t0 + hours * 3600)}'")
    while True:
        r = conn.execute("SELECT status FROM information_schema.ins_stream_recalculates WHERE stream_name = 's_rc'").fetchone()
        rss_max = max(rss_max, rss_kb() or 0)
        if r and r[0] in ("Finished", "Failed"):
            break
        time.sleep(0.2)
    took = time.time() - start
    if rss_before is not None:
        print(f"recalculate: weir RSS {rss_before / 1024:.0f} MB at the start, at most {rss_max / 1024:.0f} MB while it ran; "
              f"process peak (VmHWM, load included) {rss_kb('VmHWM') / 1024:.0f} MB")
    out = conn.execute("SELECT count(*) FROM rc_1m").fetchone()[0]
    conn.close()
    return rows, took, r[0], out

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", help="a running weir")
    ap.add_argument("--weir-bin", help="start this weir binary on a fresh data directory instead")
    ap.add_argument("--rate", type=int, default=10000)
    ap.add_argument("--tables", type=int, default=1000)
    ap.add_argument("--seconds", type=int, help="how long the writer writes (default: 3 full windows and a bit)")
    ap.add_argument("--interval", default="1m", help="the stream's INTERVAL and SLIDING (e.g. 1m, 10s)")
    ap.add_argument("--hours", type=int, default=1)
    ap.add_argument("--only", choices=["latency", "recalc"], help="run one of the two measurements")
    a = ap.parse_args()
    srv = None
    if a.weir_bin:
        global SERVER_PID
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        data = tempfile.mkdtemp(prefix="weir-td-bench")
        log = open(os.path.join(data, "weir.log"), "w")
        srv = subprocess.Popen([a.weir_bin, "--data-dir", os.path.join(data, "d"), "--listen", f"127.0.0.1:{port}"],
                               stdout=log, stderr=log)
        SERVER_PID = srv.pid
        a.dsn = f"postgres://weir@127.0.0.1:{port}/public"
        for _ in range(300):
            try:
                psycopg.connect(a.dsn, autocommit=True).close()
                break
            except Exception:
                time.sleep(0.1)
        else:
            sys.exit("weir did not start")
    elif not a.dsn:
        sys.exit("--dsn or --weir-bin is required")
    try:
        run(a)
    finally:
        if srv is not None:
            srv.terminate()
            srv.wait()
            import shutil
            shutil.rmtree(data, ignore_errors=True)

def run(a):
    conn = psycopg.connect(a.dsn, autocommit=True)
    try:
        conn.execute("CREATE SNODE ON DNODE 1")
    except psycopg.Error:
        pass
    conn.close()
    if a.only != "recalc":
        latency_report(a)
    if a.only != "latency":
        rows, took, status, out = recalc(a.dsn, a.tables, a.hours)
        print(f"recalculate: {a.hours} h x {a.tables} child tables at 10 s ({rows} rows, {out} output rows): {status} in {took:.1f} s")

def pct(v, p):
    return v[max(0, min(len(v) - 1, int(round(len(v) * p)) - 1))]

def latency_report(a):
    step = {"s": 1, "m": 60}[a.interval[-1]] * int(a.interval[:-1])
    seconds = a.seconds or 4 * step + 15
    sent, secs, lat, first = latency(a.dsn, a.rate, a.tables, seconds, a.interval)
    print(f"latency: INTERVAL({a.interval}) SLIDING({a.interval}) PARTITION BY tbname; writer {sent} rows in {secs:.1f} s "
          f"({sent / secs:.0f} rows/s, asked {a.rate}) over {a.tables} child tables")
    full = []
    for w in sorted(lat):
        v = sorted(lat[w])
        tag = "first (partial) window" if w == first else "window"
        print(f"  {tag} {fmt(w)[:19]}: {len(v)} rows, p50 {statistics.median(v) * 1000:.0f} ms, "
              f"p99 {pct(v, 0.99) * 1000:.0f} ms, max {v[-1] * 1000:.0f} ms")
        if w != first:
            full.extend(v)
    if full:
        full.sort()
        print(f"  full windows: {len(full)} (child, window) rows: write-to-output p50 {statistics.median(full) * 1000:.0f} ms, "
              f"p99 {pct(full, 0.99) * 1000:.0f} ms, max {full[-1] * 1000:.0f} ms")
    else:
        print("  no full window measured")

if __name__ == "__main__":
    main()
