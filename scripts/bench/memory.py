#!/usr/bin/env python3
"""Peak memory (VmHWM) of a weir server while it loads and streams big data.

Starts `--weir-bin` on a fresh data directory and, one phase at a time
(the peak is reset between phases through /proc/<pid>/clear_refs):

  copy_from   COPY cpu FROM STDIN (CSV) of --rows TSBS-shaped rows
              (--hosts hosts at 10 s ticks, 10 float fields), generated
              as it is sent, so the client holds one piece at a time
  copy_to     COPY (SELECT ... FROM generate_series(1, --series)) TO STDOUT
  select_big  SELECT * FROM cpu, read by the client a row at a time
  select_gen  SELECT ... FROM generate_series(1, --series), likewise
  idle<S>     nothing for S seconds (background flush and compaction)

and prints (and writes as JSON with --json) rows, seconds, rows/s and the
peak RSS of each phase. rows/s is only meaningful for a release binary on
a quiet machine; memory is meaningful for a debug build too.

Usage: memory.py --weir-bin PATH [--rows N] [--series N] [--phases a,b]
                 [--json FILE] [--limit-mib M]
Exit status 0; 5 when --limit-mib is given and a phase peaked above it.
Needs numpy and psycopg 3 (the TSBS bench venv has both).
"""
import argparse
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

FIELDS = ["usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
          "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"]
TAGS = ["hostname", "region", "datacenter", "rack", "os", "arch", "team", "service",
        "service_version", "service_environment"]
BASE_S = 1451606400  # 2016-01-01, TSBS's start


def proc_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def reset_peak(pid):
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def csv_pieces(rows, hosts, seed, ticks_per_piece=50):
    """The CSV in pieces of ticks_per_piece × hosts rows (time-major)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    tags = [[f"host_{h}", f"region_{h % 7}", f"dc_{h % 13}", str(h % 100), "Ubuntu16.04LTS", "x64",
             f"team_{h % 5}", str(h % 11), str(h % 3), "production"] for h in range(hosts)]
    prefix = [",".join(t) for t in tags]
    walk = rng.uniform(0.0, 100.0, size=(hosts, len(FIELDS)))
    tick = 0
    sent = 0
    while sent < rows:
        out = io.StringIO()
        for _ in range(ticks_per_piece):
            if sent >= rows:
                break
            if tick:
                walk = np.clip(walk + rng.standard_normal(size=walk.shape), 0.0, 100.0)
            ts = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(BASE_S + tick * 10))
            n = min(hosts, rows - sent)
            vals = np.round(walk[:n], 6).astype(str)
            for h in range(n):
                out.write(ts)
                out.write(",")
                out.write(prefix[h])
                out.write(",")
                out.write(",".join(vals[h]))
                out.write("\n")
            sent += n
            tick += 1
        yield out.getvalue().encode()


class Server:
    def __init__(self, binary, data_dir, log_path):
        self.logf = open(log_path, "wb")
        self.proc = subprocess.Popen([binary, "--data-dir", data_dir, "--listen", "127.0.0.1:0", "--superuser", "bench"],
                                     stdout=subprocess.PIPE, stderr=self.logf, stdin=subprocess.DEVNULL)
        box = {}
        th = threading.Thread(target=lambda: box.setdefault("l", self.proc.stdout.readline().decode()), daemon=True)
        th.start()
        th.join(120)
        line = box.get("l", "")
        if "weir listening on" not in line:
            self.stop()
            raise RuntimeError(f"weir did not start: {line!r} (log {log_path})")
        self.port = int(line.strip().rsplit(":", 1)[1])

    def connect(self):
        import psycopg
        return psycopg.connect(host="127.0.0.1", port=self.port, user="bench", dbname="public", autocommit=True,
                               connect_timeout=60)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weir-bin", required=True)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--series", type=int, default=20_000_000)
    ap.add_argument("--phases", default="copy_from,copy_to,select_big,select_gen")
    ap.add_argument("--json")
    ap.add_argument("--limit-mib", type=float)
    ap.add_argument("--seed", type=int, default=123)
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = ap.parse_args()

    results = {"rows": args.rows, "series": args.series, "phases": {}}
    gen_sql = ("SELECT g, g * 0.5 AS half, 'row ' || g AS label, g % 1000 AS k "
               f"FROM generate_series(1, {args.series}) g")
    tmp = tempfile.mkdtemp(prefix="weir-mem-")
    srv = Server(args.weir_bin, os.path.join(tmp, "data"), os.path.join(tmp, "weir.log"))
    pid = srv.proc.pid
    conn = None
    try:
        conn = srv.connect()
        cols = ["time TIMESTAMP TIME INDEX"] + [f"{t} TEXT" for t in TAGS] + [f"{f} DOUBLE PRECISION" for f in FIELDS]
        conn.execute(f"CREATE TABLE cpu ({', '.join(cols)}, PRIMARY KEY (hostname))")
        for phase in args.phases.split(","):
            reset_peak(pid)
            base = proc_kb(pid, "VmRSS")
            t0 = time.perf_counter()
            if phase == "copy_from":
                with conn.cursor() as cur:
                    with cur.copy("COPY cpu FROM STDIN WITH (FORMAT csv)") as cp:
                        for piece in csv_pieces(args.rows, args.hosts, args.seed):
                            cp.write(piece)
                    n = cur.rowcount
            elif phase == "copy_to":
                n = 0
                with conn.cursor() as cur:
                    with cur.copy(f"COPY ({gen_sql}) TO STDOUT") as cp:
                        for data in cp:
                            n += bytes(data).count(b"\n")
            elif phase in ("select_big", "select_gen"):
                sql = "SELECT * FROM cpu" if phase == "select_big" else gen_sql
                n = 0
                with conn.cursor() as cur:
                    for _ in cur.stream(sql):
                        n += 1
            elif phase.startswith("idle"):
                # Background flush and compaction only: idle<seconds>.
                time.sleep(float(phase[4:] or 10))
                n = 0
            else:
                raise SystemExit(f"unknown phase {phase}")
            secs = time.perf_counter() - t0
            r = {"rows": n, "seconds": round(secs, 2), "rows_per_s": round(n / secs),
                 "rss_before_kib": base, "peak_kib": proc_kb(pid, "VmHWM")}
            st = conn.execute("SELECT count(*), sum(sst_count), sum(compactions), sum(flushes), sum(memtable_bytes) "
                              "FROM information_schema.region_statistics WHERE table_name = 'cpu'").fetchone()
            r["regions"], r["ssts"], r["compactions"], r["flushes"], r["memtable_bytes"] = [int(x or 0) for x in st]
            results["phases"][phase] = r
            print(f"{phase}: {n} rows in {secs:.1f} s ({n / secs:,.0f} rows/s), peak RSS "
                  f"{r['peak_kib'] / 1024:.0f} MiB (before {base / 1024:.0f} MiB); ssts {r['ssts']}, "
                  f"compactions {r['compactions']}, flushes {r['flushes']}, memtable {r['memtable_bytes'] >> 20} MiB",
                  flush=True)
    finally:
        if conn is not None:
            conn.close()
        srv.stop()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"kept {tmp}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.limit_mib is not None:
        over = [p for p, r in results["phases"].items() if r["peak_kib"] / 1024 > args.limit_mib]
        if over:
            print(f"over {args.limit_mib} MiB: {', '.join(over)}", file=sys.stderr)
            sys.exit(5)


if __name__ == "__main__":
    main()
