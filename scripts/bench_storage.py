#!/usr/bin/env python3
"""Storage benchmark: weir vs PostgreSQL 15 (and DuckDB, if importable).

Normally run through scripts/bench_storage.sh, which builds weir, starts a
throwaway PostgreSQL and passes --pg-port. This script starts weir itself
(so it can read the server's /proc/PID/status), generates the data once,
and sends the same bytes to every engine.

Measured, per engine:
  1. COPY t FROM STDIN (text format) rows/s, in chunks of --copy-chunk rows.
  2. Multi-row INSERT rows/s (1000 rows per statement) into a second table.
  3. Bytes on disk per row of t after ingest (weir: after ADMIN flush_table;
     PostgreSQL: pg_total_relation_size after VACUUM ANALYZE; DuckDB: file
     size after CHECKPOINT).
  4. Median of 5 runs of a 1 % time-slice GROUP BY host aggregate and of a
     full-table count/avg.
  5. weir's peak RSS (VmHWM) at the end of the COPY ingest.

Exit status: 0 all metrics measured; 3 the table was printed but some metric
is n/a (the error is printed); 1 setup failure.
"""

import argparse
import datetime as dt
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import psycopg

HOSTS = 100
BASE = dt.datetime(2024, 1, 1, 0, 0, 0)
RUNS = 5

failures = []  # (engine, metric, error) for the summary


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def note_failure(engine, metric, e):
    msg = f"{type(e).__name__}: {e}".strip()
    failures.append((engine, metric, msg))
    log(f"!! {engine}: {metric} failed: {msg}")


# --------------------------------------------------------------------------
# data


def ts_text(sec):
    return (BASE + dt.timedelta(seconds=sec)).strftime("%Y-%m-%d %H:%M:%S")


def gen_rows(n, seed):
    """n rows, time-major: second 0 for host000..host099, then second 1, ...
    Yields (host, ts_text, usage_text)."""
    rnd = random.Random(seed)
    hosts = [f"host{h:03d}" for h in range(HOSTS)]
    sec_cache = {}
    for i in range(n):
        sec = i // HOSTS
        t = sec_cache.get(sec)
        if t is None:
            sec_cache.clear()
            t = sec_cache[sec] = ts_text(sec)
        yield hosts[i % HOSTS], t, f"{rnd.random() * 100:.4f}"


def copy_chunks(n, chunk):
    """COPY text-format payloads, one bytes object per chunk."""
    out, buf, k = [], [], 0
    for h, t, u in gen_rows(n, 42):
        buf.append(f"{h}\t{t}\t{u}\n")
        k += 1
        if k == chunk:
            out.append("".join(buf).encode())
            buf, k = [], 0
    if buf:
        out.append("".join(buf).encode())
    return out


def insert_statements(n, per_stmt, table):
    stmts, vals = [], []
    for h, t, u in gen_rows(n, 7):
        vals.append(f"('{h}', '{t}', {u})")
        if len(vals) == per_stmt:
            stmts.append(f"INSERT INTO {table} (host, ts, usage) VALUES " + ", ".join(vals))
            vals = []
    if vals:
        stmts.append(f"INSERT INTO {table} (host, ts, usage) VALUES " + ", ".join(vals))
    return stmts


def queries(rows):
    secs = (rows + HOSTS - 1) // HOSTS
    width = max(1, secs // 100)  # 1 % of the time range
    lo = max(0, secs // 2 - width // 2)
    x, y = ts_text(lo), ts_text(lo + width)
    slice_q = (f"SELECT host, avg(usage), count(*) FROM t WHERE ts >= TIMESTAMP '{x}' AND ts < TIMESTAMP '{y}' "
               f"GROUP BY host")
    full_q = "SELECT count(*), avg(usage) FROM t"
    return slice_q, full_q, min(rows, width * HOSTS) if lo * HOSTS < rows else 0


# --------------------------------------------------------------------------
# engines


def dir_bytes(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except FileNotFoundError:
                pass
    return total


def proc_status(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


class Weir:
    name = "weir"

    def __init__(self, binary, data_dir, log_path):
        self.data_dir = data_dir
        self.log_path = log_path
        self.logf = open(log_path, "wb")
        self.proc = subprocess.Popen([binary, "--data-dir", data_dir, "--listen", "127.0.0.1:0"],
                                     stdout=subprocess.PIPE, stderr=self.logf, stdin=subprocess.DEVNULL)
        pid_file = os.environ.get("WEIR_BENCH_PID_FILE")
        if pid_file:
            with open(pid_file, "w") as f:
                f.write(str(self.proc.pid))
        self.port = None
        box = {}

        def read():
            box["line"] = self.proc.stdout.readline().decode(errors="replace")

        th = threading.Thread(target=read, daemon=True)
        th.start()
        th.join(60)
        line = box.get("line", "")
        if "weir listening on" not in line:
            self.stop()
            raise RuntimeError(f"weir did not start (stdout: {line!r}); log tail:\n{self.log_tail()}")
        self.port = int(line.strip().rsplit(":", 1)[1])
        try:
            self.conn = psycopg.connect(host="127.0.0.1", port=self.port, user=os.environ.get("WEIR_BENCH_USER", "bench"),
                                        dbname="public", autocommit=True, connect_timeout=30)
        except Exception:
            self.stop()
            raise

    def log_tail(self, n=30):
        try:
            with open(self.log_path, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""

    def alive(self):
        return self.proc.poll() is None

    def create(self, table):
        self.conn.execute(f"CREATE TABLE {table} (host TEXT, ts TIMESTAMP TIME INDEX, usage DOUBLE PRECISION, "
                          f"PRIMARY KEY (host))")

    def after_ingest(self):
        t0 = time.perf_counter()
        self.conn.execute("ADMIN flush_table('t')")
        return time.perf_counter() - t0

    def sizes(self):
        out = {"regions": dir_bytes(os.path.join(self.data_dir, "regions")), "total": dir_bytes(self.data_dir),
               "sst": 0, "wal": 0, "sst_files": 0}
        for root, _dirs, files in os.walk(os.path.join(self.data_dir, "regions")):
            kind = os.path.basename(root)
            for f in files:
                try:
                    n = os.lstat(os.path.join(root, f)).st_size
                except FileNotFoundError:
                    continue
                if kind in ("sst", "wal"):
                    out[kind] += n
                    out["sst_files"] += kind == "sst"
        return out

    def compact(self):
        t0 = time.perf_counter()
        self.conn.execute("ADMIN compact_table('t')")
        return time.perf_counter() - t0

    def stop(self):
        if self.logf.closed:
            return
        try:
            if getattr(self, "conn", None) is not None:
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
        self.logf.close()


class Postgres:
    name = "PostgreSQL"

    def __init__(self, port):
        self.conn = psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres",
                                    autocommit=True, connect_timeout=30)
        self.settings = {k: self.conn.execute(f"SHOW {k}").fetchone()[0]
                         for k in ("server_version", "fsync", "synchronous_commit", "wal_sync_method",
                                   "full_page_writes", "shared_buffers", "max_wal_size")}

    def create(self, table):
        self.conn.execute(f"CREATE TABLE {table} (host TEXT, ts TIMESTAMP, usage DOUBLE PRECISION, "
                          f"PRIMARY KEY (host, ts))")

    def after_ingest(self):
        t0 = time.perf_counter()
        self.conn.execute("VACUUM (ANALYZE) t")
        return time.perf_counter() - t0

    def sizes(self):
        r = self.conn.execute("SELECT pg_total_relation_size('t'), pg_relation_size('t'), "
                              "pg_indexes_size('t')").fetchone()
        return {"total": r[0], "heap": r[1], "indexes": r[2]}

    def stop(self):
        self.conn.close()


class DuckConn:
    """Enough of a psycopg connection for the benchmark."""

    def __init__(self, con):
        self.con = con

    def execute(self, sql):
        self.con.execute(sql)
        return self

    def fetchall(self):
        return self.con.fetchall()

    def fetchone(self):
        return self.con.fetchone()


class Duck:
    name = "DuckDB"

    def __init__(self, duckdb, path, tmp):
        self.duckdb = duckdb
        self.path = path
        self.tmp = tmp
        self.raw = duckdb.connect(path)
        self.conn = DuckConn(self.raw)
        self.version = duckdb.__version__
        self.threads = self.raw.execute("SELECT current_setting('threads')").fetchone()[0]

    def create(self, table):
        # No primary key: DuckDB's ART index is not what it is used for; the
        # benchmark data has no duplicate keys anyway.
        self.raw.execute(f"CREATE TABLE {table} (host TEXT, ts TIMESTAMP, usage DOUBLE)")

    def after_ingest(self):
        t0 = time.perf_counter()
        self.raw.execute("CHECKPOINT")
        return time.perf_counter() - t0

    def sizes(self):
        total = os.path.getsize(self.path)
        if os.path.exists(self.path + ".wal"):
            total += os.path.getsize(self.path + ".wal")
        return {"total": total}

    def stop(self):
        self.raw.close()


# --------------------------------------------------------------------------
# measurements


def run_copy(eng, chunks, tmp):
    """Returns (seconds, per-chunk seconds)."""
    per = []
    if isinstance(eng, Duck):
        files = []
        for i, c in enumerate(chunks):
            p = os.path.join(tmp, f"chunk{i}.tsv")
            with open(p, "wb") as f:
                f.write(c)
            files.append(p)
        t_all = time.perf_counter()
        for p in files:
            t0 = time.perf_counter()
            eng.raw.execute(f"INSERT INTO t SELECT * FROM read_csv('{p}', delim='\t', header=false, "
                            f"columns={{'host': 'VARCHAR', 'ts': 'TIMESTAMP', 'usage': 'DOUBLE'}})")
            per.append(time.perf_counter() - t0)
        total = time.perf_counter() - t_all
        for p in files:
            os.unlink(p)
        return total, per
    cur = eng.conn.cursor()
    t_all = time.perf_counter()
    for c in chunks:
        t0 = time.perf_counter()
        with cur.copy("COPY t FROM STDIN") as cp:
            cp.write(c)
        per.append(time.perf_counter() - t0)
    return time.perf_counter() - t_all, per


def run_inserts(eng, stmts):
    t0 = time.perf_counter()
    for s in stmts:
        eng.conn.execute(s)
    return time.perf_counter() - t0


def count_rows(eng, table):
    return eng.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def time_query(eng, q):
    """(median seconds, all run seconds, last result)."""
    times, res = [], None
    for _ in range(RUNS):
        t0 = time.perf_counter()
        res = eng.conn.execute(q).fetchall()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, res


def norm_result(rows):
    out = []
    for r in sorted(rows, key=lambda r: tuple(str(x) for x in r)):
        out.append(tuple(float(x) if not isinstance(x, str) else x for x in r))
    return out


def same_result(a, b):
    a, b = norm_result(a), norm_result(b)
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b):
        if len(ra) != len(rb):
            return False
        for x, y in zip(ra, rb):
            if isinstance(x, str) or isinstance(y, str):
                if x != y:
                    return False
            elif abs(x - y) > 1e-6 * max(1.0, abs(x), abs(y)):
                return False
    return True


def bench_engine(eng, args, chunks, stmts, slice_q, full_q, tmp):
    m = {}
    n = args.rows

    def step(metric, fn):
        if isinstance(eng, Weir) and not eng.alive():
            note_failure(eng.name, metric, RuntimeError(f"weir is not running (exit {eng.proc.returncode}); "
                                                        f"log tail:\n{eng.log_tail()}"))
            return None
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - report and continue
            note_failure(eng.name, metric, e)
            return None

    log(f"== {eng.name}")
    if step("CREATE TABLE t", lambda: eng.create("t") or True) is None:
        return m
    log(f"   COPY {n} rows in {len(chunks)} chunks")
    r = step("COPY ingest", lambda: run_copy(eng, chunks, tmp))
    if r is not None:
        secs, per = r
        m["copy_s"] = secs
        m["copy_rows_s"] = n / secs
        m["copy_chunk_max_s"] = max(per)
        m["copy_chunk_median_s"] = statistics.median(per)
        log(f"   COPY: {secs:.2f} s, {n / secs:,.0f} rows/s; per chunk median {statistics.median(per):.3f} s, "
            f"max {max(per):.3f} s")
    if isinstance(eng, Weir):
        m["rss_hwm_after_copy"] = proc_status(eng.proc.pid, "VmHWM")
        m["rss_after_copy"] = proc_status(eng.proc.pid, "VmRSS")
        m["data_bytes_before_flush"] = dir_bytes(eng.data_dir)
    c = step("count(*) after COPY", lambda: count_rows(eng, "t"))
    if c is not None:
        m["rows_in_t"] = c
        if c != n:
            note_failure(eng.name, "row count after COPY", RuntimeError(f"expected {n} rows, found {c}"))
    r = step("flush / checkpoint / vacuum", eng.after_ingest)
    if r is not None:
        m["after_ingest_s"] = r
        log(f"   {'flush_table' if isinstance(eng, Weir) else 'VACUUM ANALYZE' if isinstance(eng, Postgres) else 'CHECKPOINT'}: {r:.2f} s")
    if isinstance(eng, Weir):
        time.sleep(0.5)
    sz = step("size on disk", eng.sizes)
    if sz is not None:
        m["sizes"] = sz
        m["bytes_per_row"] = sz["total"] / n
        if "regions" in sz:
            m["regions_bytes_per_row"] = sz["regions"] / n
        log(f"   size: {sz}")
    for key, q in (("slice", slice_q), ("full", full_q)):
        r = step(f"query {key}: {q}", lambda q=q: time_query(eng, q))
        if r is not None:
            m[f"{key}_median_s"], m[f"{key}_runs_s"], m[f"{key}_result"] = r
            log(f"   {key}: median {r[0] * 1000:.1f} ms, runs " + ", ".join(f"{t * 1000:.1f}" for t in r[1]))
    step("CREATE TABLE t2", lambda: eng.create("t2"))
    r = step("multi-row INSERT", lambda: run_inserts(eng, stmts))
    if r is not None:
        m["insert_s"] = r
        m["insert_rows_s"] = args.insert_rows / r
        log(f"   INSERT: {r:.2f} s, {args.insert_rows / r:,.0f} rows/s")
        c = step("count(*) t2", lambda: count_rows(eng, "t2"))
        if c is not None and c != args.insert_rows:
            note_failure(eng.name, "row count after INSERT", RuntimeError(f"expected {args.insert_rows}, found {c}"))
    if isinstance(eng, Weir):
        m["rss_hwm_end"] = proc_status(eng.proc.pid, "VmHWM")
        r = step("compact_table", eng.compact)
        if r is not None:
            m["compact_s"] = r
            time.sleep(0.5)
            sz = step("size after compact", eng.sizes)
            if sz is not None:
                m["sizes_after_compact"] = sz
                log(f"   after compact_table ({r:.2f} s): {sz} (includes t2)")
    return m


# --------------------------------------------------------------------------
# report


def fmt_rate(v):
    return "n/a" if v is None else f"{v:,.0f}"


def fmt_ms(v):
    return "n/a" if v is None else f"{v * 1000:,.1f}"


def fmt_num(v, d=1):
    return "n/a" if v is None else f"{v:,.{d}f}"


def fmt_mib(v):
    return "n/a" if v is None else f"{v / 1048576:,.1f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "n/a"
    return f"{a / b:.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weir-bin", required=True)
    ap.add_argument("--pg-port", type=int, required=True)
    ap.add_argument("--tmp", required=True, help="scratch directory (weir data dir, DuckDB file)")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--insert-rows", type=int, default=100_000)
    ap.add_argument("--insert-batch", type=int, default=1000)
    ap.add_argument("--copy-chunk", type=int, default=100_000)
    ap.add_argument("--no-duckdb", action="store_true")
    ap.add_argument("--json", help="also write the raw results here")
    args = ap.parse_args()
    if args.rows < HOSTS or args.insert_rows < 1:
        ap.error("--rows must be >= 100 and --insert-rows >= 1")

    duckdb = None
    duck_note = None
    if args.no_duckdb:
        duck_note = "DuckDB skipped (--no-duckdb)"
    else:
        try:
            import duckdb as _d
            duckdb = _d
        except ImportError:
            duck_note = "DuckDB skipped: the duckdb Python package is not installed (pip install duckdb)"
    if duck_note:
        log(f"NOTE: {duck_note}")

    log(f"generating {args.rows} COPY rows and {args.insert_rows} INSERT rows ...")
    t0 = time.perf_counter()
    chunks = copy_chunks(args.rows, args.copy_chunk)
    stmts = insert_statements(args.insert_rows, args.insert_batch, "t2")
    slice_q, full_q, slice_rows = queries(args.rows)
    log(f"   {time.perf_counter() - t0:.1f} s; COPY payload {sum(map(len, chunks)) / 1048576:.1f} MiB")

    results = {}
    # PostgreSQL
    pg = Postgres(args.pg_port)
    try:
        results["pg"] = bench_engine(pg, args, chunks, stmts, slice_q, full_q, args.tmp)
    finally:
        pg.stop()
    # weir
    weir_dir = os.path.join(args.tmp, "weir")
    os.makedirs(weir_dir, exist_ok=True)
    weir_crashed = False
    try:
        weir = Weir(args.weir_bin, weir_dir, os.path.join(args.tmp, "weir.log"))
    except Exception as e:  # noqa: BLE001 - still print the other engines
        note_failure("weir", "start", e)
        weir, weir_crashed = None, True
    if weir is not None:
        try:
            results["weir"] = bench_engine(weir, args, chunks, stmts, slice_q, full_q, args.tmp)
            weir_crashed = not weir.alive()
        finally:
            weir.stop()
        if weir_crashed:
            log(f"weir exited during the benchmark; log tail:\n{weir.log_tail()}")
    # DuckDB
    duck = None
    if duckdb is not None:
        try:
            duck = Duck(duckdb, os.path.join(args.tmp, "bench.duckdb"), args.tmp)
            results["duck"] = bench_engine(duck, args, chunks, stmts, slice_q, full_q, args.tmp)
        except Exception as e:  # noqa: BLE001
            note_failure("DuckDB", "setup", e)
        finally:
            if duck is not None:
                duck.stop()

    # cross-check query results against PostgreSQL
    for eng in ("weir", "duck"):
        for key in ("slice", "full"):
            a = results.get(eng, {}).get(f"{key}_result")
            b = results["pg"].get(f"{key}_result")
            if a is not None and b is not None and not same_result(a, b):
                note_failure({"weir": "weir", "duck": "DuckDB"}[eng], f"{key} query result",
                             RuntimeError(f"differs from PostgreSQL: {norm_result(a)[:3]}... vs {norm_result(b)[:3]}..."))
    sr = results["pg"].get("slice_result")
    if sr is not None:
        got = sum(int(r[2]) for r in sr)
        if got != slice_rows:
            log(f"NOTE: the 1 % slice selected {got} rows in PostgreSQL, expected {slice_rows}")

    # ---------------------------------------------------------------- table
    W, P, D = results.get("weir", {}), results["pg"], results.get("duck")
    rows = [
        ("COPY ingest, rows/s (higher is better)", "copy_rows_s", fmt_rate),
        ("COPY: slowest chunk of %d rows, s" % args.copy_chunk, "copy_chunk_max_s", lambda v: fmt_num(v, 2)),
        ("Multi-row INSERT (%d rows/stmt), rows/s" % args.insert_batch, "insert_rows_s", fmt_rate),
        ("Bytes on disk per row, total", "bytes_per_row", fmt_num),
        ("Bytes on disk per row, weir regions/ only", "regions_bytes_per_row", fmt_num),
        ("1 %% time slice GROUP BY host, median ms (%d rows)" % slice_rows, "slice_median_s", fmt_ms),
        ("Full table count(*), avg(usage), median ms", "full_median_s", fmt_ms),
        ("Flush (weir) / VACUUM ANALYZE (PG) / CHECKPOINT (DuckDB), s", "after_ingest_s", lambda v: fmt_num(v, 2)),
        ("weir peak RSS (VmHWM) after COPY ingest, MiB", "rss_hwm_after_copy", fmt_mib),
        ("weir peak RSS (VmHWM) at end, MiB", "rss_hwm_end", fmt_mib),
    ]
    hdr = "| metric | weir | PostgreSQL | weir/PG |" + (" DuckDB | weir/DuckDB |" if D is not None else "")
    sep = "|---|---:|---:|---:|" + ("---:|---:|" if D is not None else "")
    out = [hdr, sep]
    for label, key, f in rows:
        wv, pv = W.get(key), P.get(key)
        if key == "regions_bytes_per_row":
            pv = None
        line = f"| {label} | {f(wv)} | {f(pv)} | {ratio(wv, pv) if pv is not None else '–'} |"
        if D is not None:
            dv = D.get(key)
            line += f" {f(dv)} | {ratio(wv, dv) if dv is not None else '–'} |"
        out.append(line)

    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    print()
    print(f"## weir storage benchmark — {args.rows:,} rows COPY ({HOSTS} hosts, 1 s apart per host), "
          f"{args.insert_rows:,} rows INSERT")
    print()
    print("\n".join(out))
    print()
    print("Setup:")
    print(f"- machine: {os.cpu_count()} CPUs ({cpu}), {platform.platform()}, load average before start "
          f"{os.environ.get('BENCH_LOADAVG', 'n/a')}; numbers may be noisy on a shared machine")
    print(f"- PostgreSQL {pg.settings['server_version']}: fsync={pg.settings['fsync']}, "
          f"synchronous_commit={pg.settings['synchronous_commit']}, wal_sync_method={pg.settings['wal_sync_method']}, "
          f"full_page_writes={pg.settings['full_page_writes']}, shared_buffers={pg.settings['shared_buffers']}, "
          f"max_wal_size={pg.settings['max_wal_size']} (initdb defaults); table has PRIMARY KEY (host, ts); "
          f"size = pg_total_relation_size('t') (heap + PK index + TOAST/FSM/VM, excludes WAL) after VACUUM ANALYZE")
    print("- weir: default config (wal_fsync = \"always\", memtable 64 MiB); TIME INDEX ts, PRIMARY KEY (host); "
          "size = apparent bytes under the data dir after ADMIN flush_table('t') (total includes catalog/ and WAL)")
    if D is not None:
        print(f"- DuckDB {duck.version} in-process ({duck.threads} threads), file-backed, defaults; no primary key; "
              f"ingest = INSERT INTO t SELECT * FROM read_csv(<chunk file>) per {args.copy_chunk}-row chunk "
              f"(local files, no network); size = database file after CHECKPOINT")
    else:
        print(f"- {duck_note}")
    print("- client: Python psycopg %s over loopback TCP, autocommit; COPY via cursor.copy() (text format), one COPY "
          "statement (one transaction) per %d rows; queries: median of %d runs, no warm-up" %
          (psycopg.__version__, args.copy_chunk, RUNS))
    print(f"- 1 % slice query: `{slice_q}`")
    if "weir" in results:
        sz = W.get("sizes", {})
        szc = W.get("sizes_after_compact")
        extra = f"; after ADMIN compact_table('t') ({fmt_num(W.get('compact_s'), 2)} s) total " \
                f"{fmt_mib(szc['total'])} MiB, incl. t2" if szc else ""
        print(f"- weir data dir: before flush {fmt_mib(W.get('data_bytes_before_flush'))} MiB, after flush regions/ "
              f"{fmt_mib(sz.get('regions'))} MiB (SST {fmt_mib(sz.get('sst'))} MiB in {sz.get('sst_files', 'n/a')} "
              f"files, WAL {fmt_mib(sz.get('wal'))} MiB), total {fmt_mib(sz.get('total'))} MiB{extra}")
    if "sizes" in P:
        s = P["sizes"]
        print(f"- PostgreSQL t: heap {fmt_mib(s['heap'])} MiB, indexes {fmt_mib(s['indexes'])} MiB, "
              f"total {fmt_mib(s['total'])} MiB")
    if failures:
        print()
        print("Failures (metric shown as n/a):")
        for e, mtr, msg in failures:
            print(f"- {e}: {mtr}: {msg.splitlines()[0] if msg else ''}")
    if args.json:
        def clean(d):
            return {k: v for k, v in d.items() if not k.endswith("_result")}
        with open(args.json, "w") as f:
            json.dump({k: clean(v) for k, v in results.items()} | {"failures": failures}, f, indent=1, default=str)
    if weir_crashed:
        return 1
    return 3 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
