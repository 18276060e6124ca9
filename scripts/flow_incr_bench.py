#!/usr/bin/env python3
"""Incremental flow evaluation vs full window recomputation (issue 9).

One window (a day) of N rows (default 1,000,000; 100 hosts) in `b_src`, three
flows over it — `f_inc` (incremental, the default) and `f_full` (WITH
(incremental = false): batching's recomputation of dirty windows), both
`SELECT host, date_bin('1 day', ts), count(*), sum(v), avg(v), min(v),
max(v) ... GROUP BY host, w`, and `f_inc_sum`, the same without min / max
(whose retracted extremes recompute their group). Then, separately, 1 % new rows, 1 % overwrites
and 1 % deletes (spread over the window), and after each one evaluation of
each flow (ADMIN FLUSH_FLOW), measuring wall time and the server's CPU
(user+sys from /proc/<pid>/stat), and rows read (incremental flows: from
information_schema.flow_statistics; f_full: the window's row count, which
it re-aggregates). PostgreSQL 15 recomputes the same window with the same
query over the same data (time, and its backend's CPU from /proc). Both
sinks are checked equal to the query after every step.

Usage: scripts/flow_incr_bench.py --weir-bin /work/targets/incr-rel/release/weir
       [--rows 1000000] [--pg-dsn postgres://postgres@127.0.0.1:55432/postgres]
       [--no-pg] [--json FILE]
Starts weir on a free loopback port with a temporary data directory and
stops it at the end; creates (and drops) the PostgreSQL database
`incr_bench`.
"""
import argparse, ctypes, json, os, shutil, socket, subprocess, sys, tempfile, time
import psycopg

HOSTS = 100
DAY_US = 86_400_000_000
T0 = "2024-01-01 00:00:00"
Q = ("SELECT host, date_bin(INTERVAL '1 day', ts) AS w, count(*) AS n, sum(v) AS s, avg(v) AS a, "
     "min(v) AS lo, max(v) AS hi FROM b_src GROUP BY host, w")
# Without min / max: nothing a retraction can make unmergeable.
Q_SUM = "SELECT host, date_bin(INTERVAL '1 day', ts) AS w, count(*) AS n, sum(v) AS s, avg(v) AS a FROM b_src GROUP BY host, w"
FLOWS = [("f_inc", Q, ""), ("f_inc_sum", Q_SUM, ""), ("f_full", Q, "WITH (incremental = false) ")]


_libc = ctypes.CDLL(None, use_errno=True)


def cpu_seconds(pid):
    """CPU time of process `pid` (all its threads, ended ones included), in
    seconds, to the nanosecond: its CPU-time clock (clock_getcpuclockid).
    The user + system times of /proc/<pid>/stat, the fallback, come in 10 ms
    ticks, coarser than an incremental evaluation."""
    clock = ctypes.c_int()
    if _libc.clock_getcpuclockid(pid, ctypes.byref(clock)) == 0:
        try:
            return time.clock_gettime(clock.value)
        except OSError:
            pass
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(parts[11]) + int(parts[12])) / ticks


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def ts_lit(i, n, shift_us=0):
    us = i * (DAY_US // n) + shift_us
    s, f = divmod(us, 1_000_000)
    h, r = divmod(s, 3600)
    m, sec = divmod(r, 60)
    return f"2024-01-01 {h:02d}:{m:02d}:{sec:02d}.{f:06d}"


def load(conn, n, is_pg):
    step = 10_000
    for start in range(0, n, step):
        rows = ",".join(f"('h{i % HOSTS}', '{ts_lit(i, n)}', {(i * 7919) % 1000})" for i in range(start, min(n, start + step)))
        conn.execute(f"INSERT INTO b_src VALUES {rows}")


def changes(n, kind, rnd=0):
    """Statements applying 1 % of the window as `kind`, spread over it
    (round `rnd`: other rows than the rounds before)."""
    k = n // 100
    if kind == "insert":
        # New rows between existing ones (1 + rnd µs later), every 100th row.
        rows = [f"('h{i % HOSTS}', '{ts_lit(i, n, 1 + rnd)}', {(i * 31 + rnd) % 1000})" for i in range(0, n, 100)][:k]
        return [f"INSERT INTO b_src VALUES {','.join(rows[j:j + 10000])}" for j in range(0, len(rows), 10000)]
    if kind == "overwrite":
        # Same (host, ts) as existing rows, new values, every 100th row (+50 + rnd).
        rows = [f"('h{i % HOSTS}', '{ts_lit(i, n)}', {(i * 17 + rnd) % 1000 + 1})" for i in range(50 + rnd, n, 100)][:k]
        return [f"INSERT INTO b_src VALUES {','.join(rows[j:j + 10000])}" for j in range(0, len(rows), 10000)]
    if kind == "delete":
        # 1 % of the rows, a contiguous slice of the day (round r: the r-th slice after the middle).
        lo = n // 2 + rnd * k
        hi = lo + k
        return [f"DELETE FROM b_src WHERE ts >= '{ts_lit(lo, n)}' AND ts < '{ts_lit(hi, n)}'"]
    raise ValueError(kind)


def pg_apply(conn, stmts, kind):
    for s in stmts:
        if kind == "overwrite":
            # PostgreSQL has no last-write-wins on (host, ts): upsert.
            s = s + " ON CONFLICT (host, ts) DO UPDATE SET v = excluded.v"
        conn.execute(s)


def rows_of(conn, sql):
    return sorted(tuple(str(x) for x in r) for r in conn.execute(sql).fetchall())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weir-bin", required=True)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--pg-dsn", default="postgres://postgres@127.0.0.1:55432/postgres")
    ap.add_argument("--no-pg", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--rounds", type=int, default=1,
                    help="changes and evaluations per kind; times, CPU and rows read are summed over the rounds")
    ap.add_argument("--log", help="copy the server's log here at the end (run with WEIR_LOG=weir::flow::timing=debug "
                                  "for where each evaluation's time went)")
    ap.add_argument("--perf", help="record a `perf` profile (cpu-clock, DWARF stacks) of the measured phase into this file")
    a = ap.parse_args()
    n = a.rows
    port = free_port()
    data = tempfile.mkdtemp(prefix="weir-incr-bench")
    log = open(os.path.join(data, "weir.log"), "w")
    srv = subprocess.Popen([a.weir_bin, "--data-dir", os.path.join(data, "d"), "--listen", f"127.0.0.1:{port}"],
                           stdout=log, stderr=log)
    pg = None
    try:
        dsn = f"postgres://weir@127.0.0.1:{port}/public"
        for _ in range(100):
            try:
                conn = psycopg.connect(dsn, autocommit=True)
                break
            except Exception:
                time.sleep(0.1)
        else:
            sys.exit("weir did not start")
        conn.execute("CREATE TABLE b_src (host STRING, ts TIMESTAMP TIME INDEX, v BIGINT, PRIMARY KEY (host))")
        t = time.time()
        load(conn, n, False)
        conn.execute("ADMIN flush_table('b_src')")
        print(f"weir: loaded {n} rows in {time.time() - t:.1f}s", flush=True)
        for f, q, opt in FLOWS:
            conn.execute(f"CREATE FLOW {f} SINK TO {f}_out EVAL INTERVAL '1 hour' {opt}AS {q}")
            conn.execute(f"ADMIN FLUSH_FLOW('{f}')")
        if not a.no_pg:
            admin = psycopg.connect(a.pg_dsn, autocommit=True)
            admin.execute("DROP DATABASE IF EXISTS incr_bench")
            admin.execute("CREATE DATABASE incr_bench")
            pg = psycopg.connect(a.pg_dsn.rsplit("/", 1)[0] + "/incr_bench", autocommit=True)
            pg.execute("CREATE TABLE b_src (host text, ts timestamp, v bigint, PRIMARY KEY (host, ts))")
            load(pg, n, True)
            pg.execute("VACUUM ANALYZE b_src")
            pg_pid = pg.execute("SELECT pg_backend_pid()").fetchone()[0]
        results = []
        cols = "host, w, n, s, a, lo, hi"
        stq = ("SELECT rows_read, mode, fallbacks, extreme_recomputes, rows_written "
               "FROM information_schema.flow_statistics WHERE flow_name = '{}'")
        prof = None
        if a.perf:
            # One profile of the whole measured phase (changes and
            # evaluations); `perf script` stacks through
            # flow::incremental::run are the incremental evaluations.
            prof = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "--call-graph", "dwarf,8192",
                                     "-p", str(srv.pid), "-o", a.perf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(3)
        for kind in ("insert", "overwrite", "delete"):
            r = {"change": f"1% {kind}s", "rounds": a.rounds}
            for rnd in range(a.rounds):
                stmts = changes(n, kind, rnd)
                for s in stmts:
                    conn.execute(s)
                window_rows = conn.execute("SELECT count(*) FROM b_src").fetchone()[0]
                r["window_rows"] = window_rows
                for f, q, _ in FLOWS:
                    before = conn.execute(stq.format(f)).fetchone()
                    c0, t0 = cpu_seconds(srv.pid), time.perf_counter()
                    conn.execute(f"ADMIN FLUSH_FLOW('{f}')")
                    r[f"{f}_ms"] = r.get(f"{f}_ms", 0) + (time.perf_counter() - t0) * 1000
                    r[f"{f}_cpu_ms"] = r.get(f"{f}_cpu_ms", 0) + (cpu_seconds(srv.pid) - c0) * 1000
                    st = conn.execute(stq.format(f)).fetchone()
                    r[f"{f}_rows_read"] = r.get(f"{f}_rows_read", 0) + st[0] - before[0]
                    if f != "f_full":
                        # Fallbacks: the flow's totals so far; min/max recomputes: this change kind's.
                        r[f"{f}_mode"], r[f"{f}_fallbacks"] = st[1], st[2]
                        r[f"{f}_extreme_recomputes"] = r.get(f"{f}_extreme_recomputes", 0) + st[3] - before[3]
                        r[f"{f}_rows_written"] = r.get(f"{f}_rows_written", 0) + st[4] - before[4]
                    c = cols if q == Q else "host, w, n, s, a"
                    want = rows_of(conn, f"SELECT {c} FROM ({q}) q")
                    got = rows_of(conn, f"SELECT {c} FROM {f}_out")
                    assert got == want, f"{f}: sink differs from the query after {kind}s"
                # The disabled flow's statistics do not count rows read: it
                # re-aggregates the whole window.
                r["f_full_rows_read"] = r.get("f_full_rows_read", 0) + window_rows
                if pg is not None:
                    pg_apply(pg, stmts, kind)
                    pg.execute("VACUUM ANALYZE b_src")
                    c0, t0 = cpu_seconds(pg_pid), time.perf_counter()
                    # PostgreSQL's date_bin needs an origin.
                    pg_rows = pg.execute(Q.replace("ts) AS w", "ts, TIMESTAMP '2000-01-01') AS w")).fetchall()
                    r["pg_ms"] = r.get("pg_ms", 0) + (time.perf_counter() - t0) * 1000
                    r["pg_cpu_ms"] = r.get("pg_cpu_ms", 0) + (cpu_seconds(pg_pid) - c0) * 1000
                    assert len(pg_rows) == len(want), "PostgreSQL's groups differ"
            results.append(r)
            print(json.dumps(r), flush=True)
        if prof is not None:
            prof.send_signal(2)
            prof.wait()
        print()
        print(f"Per evaluation (mean of {a.rounds} round(s)):")
        print("| change | flow | rows read | ms | CPU ms | full/this CPU | full/this time | full/this rows | min/max recomputes |")
        print("|---|---|---|---|---|---|---|---|---|")
        k = a.rounds
        for r in results:
            for f, _, _ in FLOWS:
                print(f"| {r['change']} | {f} | {r[f + '_rows_read'] / k:.0f} | {r[f + '_ms'] / k:.1f} | {r[f + '_cpu_ms'] / k:.1f} "
                      f"| {r['f_full_cpu_ms'] / max(r[f + '_cpu_ms'], 0.001):.1f}x "
                      f"| {r['f_full_ms'] / max(r[f + '_ms'], 0.001):.1f}x | {r['f_full_rows_read'] / max(r[f + '_rows_read'], 1):.1f}x "
                      f"| {r.get(f + '_extreme_recomputes', '')} |")
            if "pg_ms" in r:
                print(f"| {r['change']} | PostgreSQL query | {r['window_rows']} | {r['pg_ms'] / k:.1f} | {r['pg_cpu_ms'] / k:.1f} "
                      f"| {r['f_full_cpu_ms'] / max(r['pg_cpu_ms'], 0.001):.1f}x (full/PG) | | | |")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(results, f, indent=1)
    finally:
        if pg is not None:
            pg.close()
            admin.execute("DROP DATABASE IF EXISTS incr_bench")
        srv.terminate()
        try:
            srv.wait(30)
        except subprocess.TimeoutExpired:
            srv.kill()
        log.close()
        if a.log:
            shutil.copy(os.path.join(data, "weir.log"), a.log)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
