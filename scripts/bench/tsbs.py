#!/usr/bin/env python3
"""TSBS cpu-only benchmark: weir vs PostgreSQL 15 vs DuckDB, side by side.

Run it through scripts/bench/tsbs.sh, which builds weir (release), creates
the Python venv (duckdb, numpy, pyarrow, psycopg), starts a throwaway
PostgreSQL cluster and calls this program.

What it does (fixed seed, so every run sees the same bytes):
  1. generates TSBS cpu-only data: --hosts hosts (default 1000) with TSBS's
     fixed tag set (hostname, region, datacenter, rack, os, arch, team,
     service, service_version, service_environment), one row per host every
     10 s for --hours hours (default 12: 4.32 M rows), the 10 usage_* fields
     as random walks (step N(0, 1)) clamped to [0, 100], emitted as the walk's
     integer part, as TSBS does (pkg/data/usecases/devops/cpu.go writes every
     cpu field through ToPointAllInt64, i.e. int64(walk)); the columns stay
     DOUBLE PRECISION, as in TSBS's TimescaleDB schema;
  2. loads it: COPY FROM STDIN (CSV) into weir and PostgreSQL, read_csv into
     DuckDB; then multi-row INSERTs of 1000 rows (--insert-rows rows) with 1
     and with 2 sessions into weir and PostgreSQL;
  3. weir: ADMIN FLUSH_TABLE + ADMIN COMPACT_TABLE; PostgreSQL: VACUUM
     ANALYZE (TSBS's two indexes were created before the load, as TSBS
     does); DuckDB: CHECKPOINT. Bytes on disk per row of `cpu`;
  4. runs the 15 TSBS query types, written as a PostgreSQL user writes them
     (same text on every engine), 1 warm-up + --runs measured runs each,
     timing the query and the fetch of every row;
  5. cross-checks every query's answer between engines (floats to 1e-9
     relative) and exits non-zero on a mismatch;
  6. flow freshness: a continuous per-minute, per-host aggregate of `cpu`
     (weir: CREATE FLOW; PostgreSQL: a materialized view; DuckDB: a table
     made by CREATE TABLE AS), created over the loaded rows (backfill), then
     --fresh-rounds rounds of writes — the next 10 s tick of every host and
     --fresh-late UPDATEs of random old rows (late data) — each followed by
     a refresh (ADMIN FLUSH_FLOW / REFRESH MATERIALIZED VIEW / CREATE OR
     REPLACE TABLE AS), timed from the first write to the refresh's end;
     then 3 rounds of new ticks where weir refreshes by itself (its
     background lag: the time until the sink shows the tick without being
     asked). The three sinks are cross-checked at the end;
  7. prints a Markdown table and writes --json.

DuckDB runs in a child process (this program with --duck-worker) so its
peak RSS is its own.
"""

import argparse
import datetime as dt
import json
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time

START = dt.datetime(2016, 1, 1, 0, 0, 0)  # TSBS's default start
TICK_S = 10
FIELDS = ["usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait", "usage_irq", "usage_softirq",
          "usage_steal", "usage_guest", "usage_guest_nice"]
TAGS = ["hostname", "region", "datacenter", "rack", "os", "arch", "team", "service", "service_version",
        "service_environment"]
# TSBS's fixed choices (pkg/data/usecases/devops/host.go).
REGIONS = {
    "us-east-1": ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"],
    "us-west-1": ["us-west-1a", "us-west-1b"],
    "us-west-2": ["us-west-2a", "us-west-2b", "us-west-2c"],
    "eu-west-1": ["eu-west-1a", "eu-west-1b", "eu-west-1c"],
    "eu-central-1": ["eu-central-1a", "eu-central-1b"],
    "ap-southeast-1": ["ap-southeast-1a", "ap-southeast-1b"],
    "ap-southeast-2": ["ap-southeast-2a", "ap-southeast-2b"],
    "ap-northeast-1": ["ap-northeast-1a", "ap-northeast-1c"],
    "sa-east-1": ["sa-east-1a", "sa-east-1b", "sa-east-1c"],
}
OSES = ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"]
ARCHES = ["x64", "x86"]
TEAMS = ["SF", "NYC", "LON", "CHI"]
ENVS = ["production", "staging", "test"]

COLUMNS = ["time"] + TAGS + FIELDS


def log(msg):
    print(f"[tsbs] {msg}", file=sys.stderr, flush=True)


def ts_text(t):
    return t.strftime("%Y-%m-%d %H:%M:%S")


# --------------------------------------------------------------------------
# data


def host_tags(hosts, rnd):
    out = []
    regions = list(REGIONS)
    for h in range(hosts):
        region = rnd.choice(regions)
        out.append([f"host_{h}", region, rnd.choice(REGIONS[region]), str(rnd.randrange(100)), rnd.choice(OSES),
                    rnd.choice(ARCHES), rnd.choice(TEAMS), str(rnd.randrange(20)), str(rnd.randrange(2)),
                    rnd.choice(ENVS)])
    return out


def generate(path, hosts, ticks, seed):
    """Writes the CSV (no header, COLUMNS order, time-major as TSBS emits it)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv

    rnd = random.Random(seed)
    tags = host_tags(hosts, rnd)
    rng = np.random.default_rng(seed)
    walk = rng.uniform(0.0, 100.0, size=(hosts, len(FIELDS)))
    vals = np.empty((ticks, hosts, len(FIELDS)), dtype=np.float64)
    for t in range(ticks):
        if t:
            walk = np.clip(walk + rng.standard_normal(size=walk.shape), 0.0, 100.0)
        # The walk keeps its fraction; the emitted value is int64(walk), as TSBS's
        # ToPointAllInt64 (truncation toward zero, values 0..100).
        vals[t] = np.trunc(walk)
    n = ticks * hosts
    vals = vals.reshape(n, len(FIELDS))
    host_idx = np.tile(np.arange(hosts, dtype=np.int32), ticks)
    secs = np.repeat(np.arange(ticks, dtype=np.int64) * TICK_S, hosts)
    base = int(START.replace(tzinfo=dt.timezone.utc).timestamp())
    cols = {"time": pa.array((secs + base).astype("datetime64[s]"))}
    for k, name in enumerate(TAGS):
        dictionary = pa.array([t[k] for t in tags])
        cols[name] = pa.DictionaryArray.from_arrays(pa.array(host_idx), dictionary).cast(pa.string())
    for k, name in enumerate(FIELDS):
        cols[name] = pa.array(vals[:, k])
    table = pa.table(cols)
    opts = pcsv.WriteOptions(include_header=False, quoting_style="none", batch_size=65536)
    pcsv.write_csv(table, path, opts)
    return n


def csv_lines(path, limit):
    out = []
    with open(path) as f:
        for line in f:
            if len(out) >= limit:
                break
            out.append(line.rstrip("\n"))
    return out


def insert_statements(lines, table, per_stmt=1000):
    ntags = len(TAGS)
    stmts, vals = [], []
    for line in lines:
        p = line.split(",")
        vals.append("('" + p[0] + "', " + ", ".join("'" + x + "'" for x in p[1:1 + ntags]) + ", " +
                    ", ".join(p[1 + ntags:]) + ")")
        if len(vals) == per_stmt:
            stmts.append(f"INSERT INTO {table} VALUES " + ", ".join(vals))
            vals = []
    if vals:
        stmts.append(f"INSERT INTO {table} VALUES " + ", ".join(vals))
    return stmts


# --------------------------------------------------------------------------
# queries (TSBS devops/cpu-only query types, as plain PostgreSQL SQL)


def queries(hosts, hours, seed):
    rnd = random.Random(seed + 1)
    end = START + dt.timedelta(hours=hours)

    def window(span):
        span = min(span, end - START)
        room = int((end - START - span).total_seconds())
        # TSBS picks random starts; round to the minute for readable text.
        s = START + dt.timedelta(seconds=(rnd.randrange(room + 1) // 60) * 60)
        return ts_text(s), ts_text(s + span)

    def host_list(n):
        return ", ".join(f"'host_{h}'" for h in sorted(rnd.sample(range(hosts), min(n, hosts))))

    def agg_list(fn, m, alias):
        return ", ".join(f"{fn}({f}) AS {alias}_{f}" for f in FIELDS[:m])

    out = []
    for metrics, nhosts, span_h in [(1, 1, 1), (1, 1, 12), (1, 8, 1), (5, 1, 1), (5, 1, 12), (5, 8, 1)]:
        lo, hi = window(dt.timedelta(hours=span_h))
        out.append((f"single-groupby-{metrics}-{nhosts}-{span_h}",
                    f"SELECT date_trunc('minute', time) AS minute, {agg_list('max', metrics, 'max')} FROM cpu "
                    f"WHERE hostname IN ({host_list(nhosts)}) AND time >= '{lo}' AND time < '{hi}' "
                    f"GROUP BY minute ORDER BY minute", True))
    for nhosts in (1, 8):
        lo, hi = window(dt.timedelta(hours=8))
        out.append((f"cpu-max-all-{nhosts}",
                    f"SELECT date_trunc('hour', time) AS hour, {agg_list('max', 10, 'max')} FROM cpu "
                    f"WHERE hostname IN ({host_list(nhosts)}) AND time >= '{lo}' AND time < '{hi}' "
                    f"GROUP BY hour ORDER BY hour", True))
    for label, metrics in (("1", 1), ("5", 5), ("all", 10)):
        lo, hi = window(dt.timedelta(hours=12))
        out.append((f"double-groupby-{label}",
                    f"SELECT date_trunc('hour', time) AS hour, hostname, {agg_list('avg', metrics, 'mean')} FROM cpu "
                    f"WHERE time >= '{lo}' AND time < '{hi}' GROUP BY hour, hostname ORDER BY hour, hostname", True))
    for label, nhosts in (("1", 1), ("all", 0)):
        lo, hi = window(dt.timedelta(hours=12))
        host_cond = f" AND hostname IN ({host_list(nhosts)})" if nhosts else ""
        out.append((f"high-cpu-{label}",
                    f"SELECT * FROM cpu WHERE usage_user > 90.0 AND time >= '{lo}' AND time < '{hi}'{host_cond}",
                    False))
    out.append(("lastpoint", "SELECT DISTINCT ON (hostname) * FROM cpu ORDER BY hostname, time DESC", True))
    lo, _ = window(dt.timedelta(hours=0))
    out.append(("groupby-orderby-limit",
                f"SELECT date_trunc('minute', time) AS minute, max(usage_user) FROM cpu WHERE time < '{lo}' "
                f"GROUP BY minute ORDER BY minute DESC LIMIT 5", True))
    return out


def norm_value(v):
    if isinstance(v, dt.datetime):
        return v.replace(tzinfo=None).isoformat(sep=" ")
    if isinstance(v, float):
        return v
    if v is None:
        return None
    if isinstance(v, int) or hasattr(v, "as_integer_ratio"):
        return float(v)
    return str(v)


def norm_rows(rows, ordered):
    out = [[norm_value(v) for v in r] for r in rows]
    if not ordered:
        out.sort(key=lambda r: [("" if x is None else str(x)) for x in r])
    return out


def same_value(a, b):
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
    return a == b


def diff_rows(a, b):
    """None when equal, else a description of the first difference."""
    if len(a) != len(b):
        return f"{len(a)} rows vs {len(b)} rows"
    for i, (ra, rb) in enumerate(zip(a, b)):
        if len(ra) != len(rb) or not all(same_value(x, y) for x, y in zip(ra, rb)):
            return f"row {i}: {ra} vs {rb}"
    return None


def time_query(run, sql, runs):
    """1 warm-up + runs measured; returns (seconds list, last rows)."""
    rows = run(sql)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        rows = run(sql)
        times.append(time.perf_counter() - t0)
    return times, rows


# --------------------------------------------------------------------------
# helpers


def dir_bytes(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except FileNotFoundError:
                pass
    return total


def proc_kb(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def copy_file(conn, sql, path, piece=1 << 20):
    with conn.cursor() as cur:
        with cur.copy(sql) as cp:
            with open(path, "rb") as f:
                while True:
                    b = f.read(piece)
                    if not b:
                        break
                    cp.write(b)
        return cur.rowcount


def run_inserts(connect, stmts, sessions):
    """Sends stmts over `sessions` connections at once; returns seconds."""
    conns = [connect() for _ in range(sessions)]
    parts = [stmts[i::sessions] for i in range(sessions)]
    errors = []

    def work(c, part):
        try:
            for s in part:
                c.execute(s)
        except Exception as e:  # reported after the join
            errors.append(e)

    threads = [threading.Thread(target=work, args=(c, p)) for c, p in zip(conns, parts)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.perf_counter() - t0
    for c in conns:
        c.close()
    if errors:
        raise errors[0]
    return secs


# --------------------------------------------------------------------------
# engines


def weir_ddl(table):
    cols = ["time TIMESTAMP TIME INDEX"] + [f"{t} TEXT" for t in TAGS] + [f"{f} DOUBLE PRECISION" for f in FIELDS]
    return f"CREATE TABLE {table} ({', '.join(cols)}, PRIMARY KEY (hostname))"


def pg_ddl(table):
    cols = ["time TIMESTAMP NOT NULL"] + [f"{t} TEXT" for t in TAGS] + [f"{f} DOUBLE PRECISION" for f in FIELDS]
    return [f"CREATE TABLE {table} ({', '.join(cols)})",
            # TSBS's two indexes (timescaledb loader: partition index and time index).
            f"CREATE INDEX {table}_hostname_time_idx ON {table} (hostname, time DESC)",
            f"CREATE INDEX {table}_time_idx ON {table} (time DESC)"]


class Weir:
    name = "weir"

    def __init__(self, binary, data_dir, log_path, pid_file):
        import psycopg
        self.psycopg = psycopg
        self.data_dir = data_dir
        self.logf = open(log_path, "wb")
        self.log_path = log_path
        self.proc = subprocess.Popen([binary, "--data-dir", data_dir, "--listen", "127.0.0.1:0", "--superuser", "bench"],
                                     stdout=subprocess.PIPE, stderr=self.logf, stdin=subprocess.DEVNULL)
        if pid_file:
            with open(pid_file, "w") as f:
                f.write(str(self.proc.pid))
        box = {}
        th = threading.Thread(target=lambda: box.setdefault("l", self.proc.stdout.readline().decode()), daemon=True)
        th.start()
        th.join(60)
        line = box.get("l", "")
        if "weir listening on" not in line:
            self.stop()
            raise RuntimeError(f"weir did not start: {line!r}")
        self.port = int(line.strip().rsplit(":", 1)[1])
        self.conn = self.connect()

    def connect(self):
        return self.psycopg.connect(host="127.0.0.1", port=self.port, user="bench", dbname="public", autocommit=True,
                                    connect_timeout=30)

    def rss(self):
        return {"VmHWM": proc_kb(self.proc.pid, "VmHWM"), "VmRSS": proc_kb(self.proc.pid, "VmRSS")}

    def stop(self):
        try:
            self.conn.close()
        except Exception:
            pass
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# --------------------------------------------------------------------------
# flow freshness

FRESH_SQL = ("SELECT date_trunc('minute', time) AS minute, hostname, max(usage_user) AS max_user, "
             "avg(usage_system) AS avg_system, count(*) AS n FROM cpu GROUP BY minute, hostname")
FRESH_READ = "SELECT minute, hostname, max_user, avg_system, n FROM cpu_1m ORDER BY minute, hostname"
FRESH_LAG_ROUNDS = 3


def fresh_rounds(hosts, ticks, seed, rounds, late):
    """The writes of each freshness round: an INSERT of the next tick of
    every host (the hosts' tags as generated), then `late` UPDATEs of random
    old rows; the last FRESH_LAG_ROUNDS rounds have no late rows. Returns
    [(statements, time of the new tick)]."""
    tags = host_tags(hosts, random.Random(seed))
    rnd = random.Random(seed + 7)
    out = []
    for r in range(rounds + FRESH_LAG_ROUNDS):
        t = START + dt.timedelta(seconds=(ticks + r) * TICK_S)
        vals = [f"('{ts_text(t)}', " + ", ".join(f"'{x}'" for x in tags[h]) + ", " +
                ", ".join(str(rnd.randrange(101)) for _ in FIELDS) + ")" for h in range(hosts)]
        stmts = ["INSERT INTO cpu VALUES " + ", ".join(vals)]
        for _ in range(late if r < rounds else 0):
            old = START + dt.timedelta(seconds=rnd.randrange(ticks) * TICK_S)
            stmts.append(f"UPDATE cpu SET usage_user = {rnd.randrange(101)}, usage_system = {rnd.randrange(101)} "
                         f"WHERE hostname = 'host_{rnd.randrange(hosts)}' AND time = '{ts_text(old)}'")
        out.append((stmts, ts_text(t)))
    return out


def freshness(execute, create, refresh, rounds, nrounds, wait_for=None):
    """Backfill, then the rounds: each round's writes and refresh are timed
    together. With `wait_for`, the last rounds are not refreshed: the time
    until wait_for(tick) holds is the engine's own lag."""
    out = {}
    t0 = time.perf_counter()
    create()
    out["backfill_seconds"] = time.perf_counter() - t0
    out["round_seconds"], out["lag_seconds"] = [], []
    for i, (stmts, tick) in enumerate(rounds):
        t0 = time.perf_counter()
        for s in stmts:
            execute(s)
        if i >= nrounds and wait_for is not None:
            deadline = t0 + 120
            while not wait_for(tick):
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"the sink did not show the tick {tick} within 120 s")
                time.sleep(0.002)
            out["lag_seconds"].append(time.perf_counter() - t0)
        else:
            refresh()
            out["round_seconds"].append(time.perf_counter() - t0)
    return out


def fresh_log(engine, f):
    lag = f" , own lag median {statistics.median(f['lag_seconds']) * 1e3:.0f} ms" if f.get("lag_seconds") else ""
    log(f"{engine}: freshness: backfill {f['backfill_seconds']:.2f} s, write + refresh median "
        f"{statistics.median(f['round_seconds']) * 1e3:.0f} ms{lag}")


def run_sql(conn, binary=False):
    """The query method of both wire-protocol engines (same client call for
    weir and PostgreSQL): psycopg's simple protocol with text results, or
    with --binary-results the extended protocol asking for binary ones."""
    def run(sql):
        with conn.cursor(binary=binary) as cur:
            cur.execute(sql)
            return cur.fetchall()
    return run


def bench_weir(args, csv_path, nrows, ins_stmts, qs, res):
    e = Weir(args.weir_bin, os.path.join(args.tmp, "weir-data"), os.path.join(args.tmp, "weir.log"),
             os.environ.get("WEIR_BENCH_PID_FILE"))
    out = res["engines"]["weir"] = {"ingest": {}, "queries": {}}
    try:
        e.conn.execute(weir_ddl("cpu"))
        log("weir: COPY")
        t0 = time.perf_counter()
        n = copy_file(e.conn, "COPY cpu FROM STDIN WITH (FORMAT csv)", csv_path)
        secs = time.perf_counter() - t0
        out["ingest"]["copy"] = {"rows": n, "seconds": secs, "rows_per_s": n / secs}
        out["rss_after_copy"] = e.rss()
        log(f"weir: COPY {n} rows in {secs:.1f} s ({n / secs:,.0f} rows/s), VmHWM {out['rss_after_copy']['VmHWM']}")
        if n != nrows:
            raise RuntimeError(f"weir COPY reported {n} rows, expected {nrows}")
        t0 = time.perf_counter()
        e.conn.execute("ADMIN FLUSH_TABLE('cpu')")
        e.conn.execute("ADMIN COMPACT_TABLE('cpu')")
        out["flush_compact_seconds"] = time.perf_counter() - t0
        disk = dir_bytes(os.path.join(e.data_dir, "regions"))
        out["disk_bytes"] = disk
        out["bytes_per_row"] = disk / nrows
        for sessions in (1, 2):
            table = f"cpu_ins{sessions}"
            e.conn.execute(weir_ddl(table))
            stmts = [s.replace("INSERT INTO cpu_ins ", f"INSERT INTO {table} ", 1) for s in ins_stmts]
            log(f"weir: multi-row INSERT, {sessions} session(s)")
            secs = run_inserts(e.connect, stmts, sessions)
            rows = e.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            out["ingest"][f"insert_{sessions}_session"] = {"rows": rows, "seconds": secs, "rows_per_s": rows / secs}
            log(f"weir: INSERT x{sessions}: {rows} rows in {secs:.1f} s ({rows / secs:,.0f} rows/s)")
        out["rss_after_ingest"] = e.rss()
        run = run_sql(e.conn, args.binary_results)
        for name, sql, ordered in qs:
            try:
                times, rows = time_query(run, sql, args.runs)
            except Exception as ex:  # one query's error does not end the engine's run
                out["queries"][name] = {"error": f"{type(ex).__name__}: {ex}".splitlines()[0]}
                res["query_errors"].append(f"weir: {name}: {out['queries'][name]['error']}")
                log(f"!! weir: {name}: {out['queries'][name]['error']}")
                continue
            out["queries"][name] = {"times": times, "rows": len(rows)}
            res["answers"].setdefault(name, {})["weir"] = norm_rows(rows, ordered)
            log(f"weir: {name}: median {statistics.median(times) * 1e3:.1f} ms, {len(rows)} rows")
        if args.fresh_rounds > 0:
            c = e.conn

            def sink_has(tick):
                want = c.execute(f"SELECT count(*) FROM cpu WHERE time >= date_trunc('minute', TIMESTAMP '{tick}') "
                                 f"AND time <= '{tick}'").fetchone()[0]
                got = c.execute(f"SELECT sum(n) FROM cpu_1m WHERE minute = date_trunc('minute', TIMESTAMP '{tick}')").fetchone()[0]
                return got == want

            log("weir: flow freshness")
            f = freshness(c.execute,
                          lambda: (c.execute(f"CREATE FLOW cpu_1m_flow SINK TO cpu_1m AS {FRESH_SQL}"),
                                   c.execute("ADMIN FLUSH_FLOW('cpu_1m_flow')")),
                          lambda: c.execute("ADMIN FLUSH_FLOW('cpu_1m_flow')"), res["fresh"], args.fresh_rounds, sink_has)
            out["freshness"] = f
            fresh_log("weir", f)
            res["answers"].setdefault("flow sink", {})["weir"] = norm_rows(c.execute(FRESH_READ).fetchall(), True)
        out["rss_end"] = e.rss()
    finally:
        e.stop()


def bench_pg(args, csv_path, nrows, ins_stmts, qs, res):
    import psycopg
    dsn = args.pg_dsn

    def connect():
        return psycopg.connect(dsn, autocommit=True)

    conn = connect()
    out = res["engines"]["PostgreSQL"] = {"ingest": {}, "queries": {}}
    out["settings"] = {k: conn.execute(f"SHOW {k}").fetchone()[0]
                       for k in ("server_version", "fsync", "synchronous_commit", "shared_buffers", "work_mem",
                                 "max_parallel_workers_per_gather")}
    pids = set()

    def note_pid(c):
        pids.add(c.execute("SELECT pg_backend_pid()").fetchone()[0])

    def peak():
        vals = [proc_kb(p, "VmHWM") for p in pids]
        vals = [v for v in vals if v is not None]
        return max(vals) if vals else None

    note_pid(conn)
    for t in ("cpu", "cpu_ins1", "cpu_ins2"):
        conn.execute(f"DROP TABLE IF EXISTS {t} CASCADE")
    for s in pg_ddl("cpu"):
        conn.execute(s)
    log("PostgreSQL: COPY")
    t0 = time.perf_counter()
    n = copy_file(conn, "COPY cpu FROM STDIN WITH (FORMAT csv)", csv_path)
    secs = time.perf_counter() - t0
    out["ingest"]["copy"] = {"rows": n, "seconds": secs, "rows_per_s": n / secs}
    log(f"PostgreSQL: COPY {n} rows in {secs:.1f} s ({n / secs:,.0f} rows/s)")
    conn.execute("VACUUM ANALYZE cpu")
    out["disk_bytes"] = conn.execute("SELECT pg_total_relation_size('cpu')").fetchone()[0]
    out["bytes_per_row"] = out["disk_bytes"] / nrows
    for sessions in (1, 2):
        table = f"cpu_ins{sessions}"
        for s in pg_ddl(table):
            conn.execute(s)
        stmts = [s.replace("INSERT INTO cpu_ins ", f"INSERT INTO {table} ", 1) for s in ins_stmts]
        log(f"PostgreSQL: multi-row INSERT, {sessions} session(s)")

        def connect_noted():
            c = connect()
            note_pid(c)
            return c

        secs = run_inserts(connect_noted, stmts, sessions)
        rows = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        out["ingest"][f"insert_{sessions}_session"] = {"rows": rows, "seconds": secs, "rows_per_s": rows / secs}
        log(f"PostgreSQL: INSERT x{sessions}: {rows} rows in {secs:.1f} s ({rows / secs:,.0f} rows/s)")
    out["rss_after_ingest"] = {"VmHWM": peak()}
    run = run_sql(conn, args.binary_results)
    for name, sql, ordered in qs:
        try:
            times, rows = time_query(run, sql, args.runs)
        except Exception as ex:
            out["queries"][name] = {"error": f"{type(ex).__name__}: {ex}".splitlines()[0]}
            res["query_errors"].append(f"PostgreSQL: {name}: {out['queries'][name]['error']}")
            log(f"!! PostgreSQL: {name}: {out['queries'][name]['error']}")
            continue
        out["queries"][name] = {"times": times, "rows": len(rows)}
        res["answers"].setdefault(name, {})["PostgreSQL"] = norm_rows(rows, ordered)
        log(f"PostgreSQL: {name}: median {statistics.median(times) * 1e3:.1f} ms, {len(rows)} rows")
    if args.fresh_rounds > 0:
        log("PostgreSQL: flow freshness (materialized view)")
        conn.execute("DROP MATERIALIZED VIEW IF EXISTS cpu_1m")
        f = freshness(conn.execute, lambda: conn.execute(f"CREATE MATERIALIZED VIEW cpu_1m AS {FRESH_SQL}"),
                      lambda: conn.execute("REFRESH MATERIALIZED VIEW cpu_1m"), res["fresh"], args.fresh_rounds)
        out["freshness"] = f
        fresh_log("PostgreSQL", f)
        res["answers"].setdefault("flow sink", {})["PostgreSQL"] = norm_rows(conn.execute(FRESH_READ).fetchall(), True)
        conn.execute("DROP MATERIALIZED VIEW IF EXISTS cpu_1m")
    out["rss_end"] = {"VmHWM": peak(), "note": "largest VmHWM of the benchmark's backends (shared buffers count)"}
    for t in ("cpu_ins1", "cpu_ins2"):
        conn.execute(f"DROP TABLE IF EXISTS {t}")
    conn.close()


def duck_worker(spec_path):
    """Child process: load into DuckDB, run the queries, write results."""
    import duckdb
    spec = json.load(open(spec_path))
    out = {"ingest": {}, "queries": {}, "version": duckdb.__version__}
    answers = {}
    db = spec["db"]
    con = duckdb.connect(db)
    out["threads"] = con.execute("SELECT current_setting('threads')").fetchone()[0]
    cols = ["time TIMESTAMP NOT NULL"] + [f"{t} VARCHAR" for t in TAGS] + [f"{f} DOUBLE" for f in FIELDS]
    con.execute(f"CREATE TABLE cpu ({', '.join(cols)})")
    colspec = "{" + ", ".join(f"'{c}': '{'TIMESTAMP' if c == 'time' else ('VARCHAR' if c in TAGS else 'DOUBLE')}'"
                              for c in COLUMNS) + "}"
    t0 = time.perf_counter()
    con.execute(f"INSERT INTO cpu SELECT * FROM read_csv('{spec['csv']}', header=false, delim=',', "
                f"columns={colspec})")
    con.execute("CHECKPOINT")
    secs = time.perf_counter() - t0
    n = con.execute("SELECT count(*) FROM cpu").fetchone()[0]
    out["ingest"]["copy"] = {"rows": n, "seconds": secs, "rows_per_s": n / secs, "method": "read_csv + CHECKPOINT"}
    size = os.path.getsize(db) + (os.path.getsize(db + ".wal") if os.path.exists(db + ".wal") else 0)
    out["disk_bytes"] = size
    out["bytes_per_row"] = size / max(n, 1)
    out["rss_after_ingest"] = {"VmHWM": proc_kb(os.getpid(), "VmHWM")}

    def run(sql):
        return con.execute(sql).fetchall()

    for name, sql, ordered in spec["queries"]:
        try:
            times, rows = time_query(run, sql, spec["runs"])
        except Exception as e:
            out["queries"][name] = {"error": f"{type(e).__name__}: {e}"}
            continue
        out["queries"][name] = {"times": times, "rows": len(rows)}
        answers[name] = norm_rows(rows, ordered)
    if spec["fresh_rounds"] > 0:
        out["freshness"] = freshness(con.execute, lambda: con.execute(f"CREATE TABLE cpu_1m AS {FRESH_SQL}"),
                                     lambda: con.execute(f"CREATE OR REPLACE TABLE cpu_1m AS {FRESH_SQL}"),
                                     spec["fresh"], spec["fresh_rounds"])
        answers["flow sink"] = norm_rows(con.execute(FRESH_READ).fetchall(), True)
    out["rss_end"] = {"VmHWM": proc_kb(os.getpid(), "VmHWM")}
    con.close()
    json.dump({"result": out, "answers": answers}, open(spec["out"], "w"))


def bench_duck(args, csv_path, qs, res):
    spec = {"db": os.path.join(args.tmp, "duck.db"), "csv": csv_path, "queries": qs, "runs": args.runs,
            "out": os.path.join(args.tmp, "duck.json"), "fresh": res["fresh"], "fresh_rounds": args.fresh_rounds}
    with open(os.path.join(args.tmp, "duck-spec.json"), "w") as f:
        json.dump(spec, f)
    log("DuckDB: load and queries (child process)")
    subprocess.run([sys.executable, __file__, "--duck-worker", os.path.join(args.tmp, "duck-spec.json")], check=True)
    d = json.load(open(spec["out"]))
    res["engines"]["DuckDB"] = d["result"]
    for name, rows in d["answers"].items():
        res["answers"].setdefault(name, {})["DuckDB"] = rows
    for name, q in d["result"]["queries"].items():
        if "error" in q:
            res["query_errors"].append(f"DuckDB: {name}: {q['error']}")
        if "times" in q:
            log(f"DuckDB: {name}: median {statistics.median(q['times']) * 1e3:.1f} ms, {q['rows']} rows")
        else:
            log(f"DuckDB: {name}: {q['error']}")
    if "freshness" in d["result"]:
        fresh_log("DuckDB", d["result"]["freshness"])


# --------------------------------------------------------------------------
# report


def fmt_ms(t):
    return f"{t * 1e3:.1f}" if t < 10 else f"{t * 1e3:.0f}"


def fmt_bytes(b):
    return "n/a" if b is None else f"{b / 2**20:.0f} MiB"


def report(res, qs):
    engines = [e for e in ("weir", "PostgreSQL", "DuckDB") if e in res["engines"]]
    lines = []
    lines.append(f"TSBS cpu-only: {res['rows']:,} rows ({res['hosts']} hosts x {res['ticks']} ticks of 10 s), "
                 f"median of {res['runs']} runs after 1 warm-up; times in ms (min-max)")
    lines.append("")
    head = "| query | " + " | ".join(f"{e} ms" for e in engines)
    peers = [e for e in engines if e != "weir"]
    if "weir" in engines:
        head += " | " + " | ".join(f"weir / {p}" for p in peers)
    lines.append(head + " |")
    lines.append("|---|" + "---:|" * (len(engines) + (len(peers) if "weir" in engines else 0)))
    for name, _sql, _o in qs:
        cells, med = [], {}
        for e in engines:
            q = res["engines"][e]["queries"].get(name, {})
            if "times" in q:
                t = q["times"]
                med[e] = statistics.median(t)
                cells.append(f"{fmt_ms(med[e])} ({fmt_ms(min(t))}-{fmt_ms(max(t))})")
            else:
                cells.append("error" if q else "n/a")
        if "weir" in engines:
            for p in peers:
                cells.append(f"{med['weir'] / med[p]:.2f}x" if "weir" in med and p in med and med[p] > 0 else "n/a")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| ingest | " + " | ".join(f"{e} rows/s" for e in engines) + " |")
    lines.append("|---|" + "---:|" * len(engines))
    for method in ("copy", "insert_1_session", "insert_2_session"):
        cells = []
        for e in engines:
            m = res["engines"][e]["ingest"].get(method)
            cells.append(f"{m['rows_per_s']:,.0f}" if m else "n/a")
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    if any("freshness" in res["engines"][e] for e in engines):
        lines.append("")
        lines.append("| flow freshness (per-minute, per-host aggregate) | " + " | ".join(engines) + " |")
        lines.append("|---|" + "---:|" * len(engines))
        rows = [("backfill over the loaded rows, s", lambda f: f"{f['backfill_seconds']:.2f}"),
                (f"write a tick of every host + {res.get('fresh_late', 0)} late UPDATEs, then refresh: median ms (min-max)",
                 lambda f: f"{fmt_ms(statistics.median(f['round_seconds']))} ({fmt_ms(min(f['round_seconds']))}-"
                           f"{fmt_ms(max(f['round_seconds']))})"),
                ("write a tick, sink shows it with no refresh asked: median ms",
                 lambda f: fmt_ms(statistics.median(f["lag_seconds"])) if f.get("lag_seconds") else "n/a")]
        for label, cell in rows:
            cells = [cell(res["engines"][e]["freshness"]) if "freshness" in res["engines"][e] else "n/a" for e in engines]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| engine | bytes on disk / row | peak RSS after ingest | peak RSS at end |")
    lines.append("|---|---:|---:|---:|")
    for e in engines:
        r = res["engines"][e]
        bpr = r.get("bytes_per_row")
        lines.append(f"| {e} | {'n/a' if bpr is None else f'{bpr:.1f}'} | "
                     f"{fmt_bytes((r.get('rss_after_ingest') or {}).get('VmHWM'))} | "
                     f"{fmt_bytes((r.get('rss_end') or {}).get('VmHWM'))} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duck-worker")
    ap.add_argument("--weir-bin")
    ap.add_argument("--pg-dsn")
    ap.add_argument("--tmp")
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--hours", type=float, default=12.0, help="hours of data (scale); 12 h = 4.32 M rows")
    ap.add_argument("--insert-rows", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=123)
    ap.add_argument("--engines", default="weir,PostgreSQL,DuckDB")
    ap.add_argument("--binary-results", action="store_true",
                    help="weir and PostgreSQL send results in binary (psycopg binary cursors); default text")
    ap.add_argument("--json", default="tsbs-result.json")
    ap.add_argument("--fresh-rounds", type=int, default=5, help="flow freshness rounds with late rows (0: none)")
    ap.add_argument("--fresh-late", type=int, default=20, help="late UPDATEs per freshness round")
    args = ap.parse_args()
    if args.duck_worker:
        duck_worker(args.duck_worker)
        return 0
    engines = args.engines.split(",")
    ticks = int(round(args.hours * 3600 / TICK_S))
    t_all = time.perf_counter()
    csv_path = os.path.join(args.tmp, "cpu.csv")
    log(f"generating {args.hosts} hosts x {ticks} ticks (seed {args.seed}) -> {csv_path}")
    t0 = time.perf_counter()
    nrows = generate(csv_path, args.hosts, ticks, args.seed)
    log(f"generated {nrows:,} rows, {os.path.getsize(csv_path) / 2**20:.0f} MiB, in {time.perf_counter() - t0:.1f} s")
    ins_stmts = insert_statements(csv_lines(csv_path, args.insert_rows), "cpu_ins")
    qs = queries(args.hosts, args.hours, args.seed)
    fresh = fresh_rounds(args.hosts, ticks, args.seed, args.fresh_rounds, args.fresh_late) if args.fresh_rounds > 0 else []
    res = {"fresh": fresh, "fresh_late": args.fresh_late, "rows": nrows, "hosts": args.hosts, "ticks": ticks, "runs": args.runs, "seed": args.seed,
           "insert_rows": min(args.insert_rows, nrows), "results": "binary" if args.binary_results else "text", "started": dt.datetime.utcnow().isoformat() + "Z",
           "loadavg_start": open("/proc/loadavg").read().split()[:3], "engines": {}, "answers": {},
           "queries": [{"name": n, "sql": s} for n, s, _ in qs], "query_errors": []}
    failures = []
    for e, fn in (("weir", lambda: bench_weir(args, csv_path, nrows, ins_stmts, qs, res)),
                  ("PostgreSQL", lambda: bench_pg(args, csv_path, nrows, ins_stmts, qs, res)),
                  ("DuckDB", lambda: bench_duck(args, csv_path, qs, res))):
        if e not in engines:
            continue
        try:
            fn()
        except Exception as ex:
            log(f"!! {e} failed: {type(ex).__name__}: {ex}")
            failures.append(f"{e}: {type(ex).__name__}: {ex}")
    # cross-check
    mismatches = []
    for name, by_engine in res["answers"].items():
        names = sorted(by_engine)
        for i in range(1, len(names)):
            d = diff_rows(by_engine[names[0]], by_engine[names[i]])
            if d:
                mismatches.append(f"{name}: {names[0]} vs {names[i]}: {d[:300]}")
    res["mismatches"] = mismatches
    answers = res.pop("answers")
    res.pop("fresh")
    res["answer_rows"] = {n: {e: len(r) for e, r in a.items()} for n, a in answers.items()}
    res["seconds_total"] = time.perf_counter() - t_all
    res["failures"] = failures
    table = report(res, qs)
    res["table"] = table
    with open(args.json, "w") as f:
        json.dump(res, f, indent=1)
    print(table)
    log(f"JSON written to {args.json}; total {res['seconds_total']:.0f} s")
    if mismatches:
        log("!! ANSWERS DIFFER BETWEEN ENGINES:")
        for m in mismatches:
            log("   " + m)
        return 4
    if res["query_errors"]:
        log("!! queries that failed:")
        for m in res["query_errors"]:
            log("   " + m)
    if failures or res["query_errors"]:
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
