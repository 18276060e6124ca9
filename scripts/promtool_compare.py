#!/usr/bin/env python3
"""weir's TQL against Prometheus's own PromQL engine (issue 14).

The same small series (counters with resets, a gauge with a gap longer
than the lookback, histogram buckets) are loaded into Prometheus's TSDB
(`promtool tsdb create-blocks-from openmetrics`, then a `prometheus`
server on that directory, queried over its HTTP API as `promtool query
range` does) and into weir; every query of QUERIES is run as a range query
on both and the answers are compared (same series, same steps, values
equal to 1e-9 relative).

  scripts/promtool_compare.py golden  tests/data/tql_promtool.json
      writes the data set, the queries and Prometheus's answers (needs
      promtool and prometheus: Debian's package `prometheus`)
  scripts/promtool_compare.py compare --dsn postgres://weir@127.0.0.1:5433/public
      [--golden tests/data/tql_promtool.json]
      compares weir's answers with Prometheus's (live, or from the golden
      file); `cargo test --test tql` does the same from the golden file

Times avoid the boundaries where Prometheus 2 (closed windows, Debian's
2.42) and 3 (left-open windows, which weir follows) differ: samples fall at
3 s past each 10 s, steps at 7 s past the minute.
"""
import argparse, json, math, os, random, shutil, socket, subprocess, sys, tempfile, time, urllib.parse, urllib.request

BASE = 1_699_999_980  # a multiple of 60 s
START, END, STEP = BASE + 607, BASE + 3007, 60

# (weir's query, Prometheus 2.42's spelling when it differs)
QUERIES = [
    ("req_total", None),
    ('req_total{job="api"}', None),
    ('req_total{instance=~"i[12]"}', None),
    ('req_total{instance!="i1"}', None),
    ('req_total{job!~"a.*"}', None),
    ("rate(req_total[5m])", None),
    ("irate(req_total[5m])", None),
    ("increase(req_total[3m])", None),
    ("delta(temp[5m])", None),
    ("idelta(temp[5m])", None),
    ("deriv(temp[5m])", None),
    ("resets(req_total[10m])", None),
    ("changes(temp[10m])", None),
    ("avg_over_time(temp[5m])", None),
    ("sum_over_time(temp[5m])", None),
    ("min_over_time(temp[5m])", None),
    ("max_over_time(temp[5m])", None),
    ("count_over_time(temp[5m])", None),
    ("last_over_time(temp[5m])", None),
    ("quantile_over_time(0.3, temp[5m])", None),
    ("stddev_over_time(temp[5m])", None),
    ("stdvar_over_time(temp[5m])", None),
    ("sum by (job) (rate(req_total[5m]))", None),
    ("avg without (instance) (rate(req_total[5m]))", None),
    ("count(temp)", None),
    ("min by (job) (req_total)", None),
    ("max(temp)", None),
    ("topk(2, temp)", None),
    ("bottomk(1, req_total)", None),
    ("quantile(0.75, temp)", None),
    ('count_values("v", floor(temp / 10))', None),
    ("stddev(temp)", None),
    ("stdvar by (job) (req_total)", None),
    ("histogram_quantile(0.9, sum by (le) (rate(lat_bucket[5m])))", None),
    ("histogram_quantile(0.5, rate(lat_bucket[5m]))", None),
    ("abs(temp - 20)", None),
    ("ceil(temp)", None),
    ("floor(temp)", None),
    ("round(temp, 0.5)", None),
    ("clamp(temp, 10, 20)", None),
    ("clamp_min(temp, 15)", None),
    ("clamp_max(temp, 15)", None),
    ("ln(req_total + 1)", None),
    ("exp(temp / 10)", None),
    ("sqrt(req_total)", None),
    ('label_replace(temp, "h", "$1", "host", "host-(.*)")', None),
    ('label_join(req_total, "ji", "/", "job", "instance")', None),
    ("time()", None),
    ("timestamp(temp)", None),
    ("vector(time() / 60)", None),
    ("scalar(sum(temp)) * 2", None),
    ("req_total / on (job, instance) group_left req_total", None),
    ("rate(req_total[5m]) / ignoring (instance) group_left sum without (instance) (rate(req_total[5m]))", None),
    ("temp > bool 15", None),
    ("temp > 15", None),
    ("15 < temp", None),
    ("req_total and on (instance) temp", None),
    ('req_total{job="api"} or req_total{job="batch"}', None),
    ("req_total unless on (instance) temp > 18", None),
    ("temp offset 2m", None),
    ("rate(req_total[5m] offset 3m)", None),
    (f"temp @ {BASE + 1207}", None),
    ("max_over_time(rate(req_total[2m])[10m:30s])", None),
    ("avg_over_time(temp[10m:1m])", None),
    ('absent(nope{job="x"})', None),
    ('absent(temp{host="host-a"})', None),
    ('absent_over_time(temp{host="host-b"}[2m])', None),
    ("predict_linear(temp[10m], 600)", None),
    ("double_exponential_smoothing(temp[10m], 0.5, 0.3)", "holt_winters(temp[10m], 0.5, 0.3)"),
    # Session 7: the planned path's joins, aggregations, label functions, @ and subqueries.
    ('temp{host=""}', None),
    ('temp{host!=""}', None),
    ('temp{host=~"host-(a|c)", instance!~"i9"}', None),
    ("group by (job) (req_total)", None),
    ("quantile by (job) (0.5, req_total)", None),
    ("topk by (job) (1, req_total)", None),
    ('count_values without (instance) ("k", floor(req_total / 1000))', None),
    ("stddev by (job) (rate(req_total[5m]))", None),
    ("count(req_total) by (job)", None),
    ("temp - on (instance) group_left (job) req_total", None),
    ("req_total + on (instance) group_right (job) temp", None),
    ("req_total > on (instance) temp", None),
    ("req_total > bool on (instance) temp", None),
    ("req_total - ignoring (job) req_total", None),
    ("temp * on () group_left vector(2)", None),
    ("temp - scalar(max(temp))", None),
    ("scalar(avg(temp)) < temp", None),
    ("time() - timestamp(temp)", None),
    ("2 * time() + 1", None),
    ("1 + 2 * 3", None),
    ("-temp", None),
    ("sgn(temp - 20)", None),
    ("sin(temp)", None),
    ("deg(temp)", None),
    ("hour(timestamp(temp))", None),
    ("minute()", None),
    ("req_total % 7", None),
    ("req_total ^ 0.5", None),
    ("temp atan2 10", None),
    ("sum_over_time(temp[5m] @ end())", None),
    ("rate(req_total[5m] @ start())", None),
    ("temp @ start() offset 1m", None),
    ("max_over_time(sum(rate(req_total[2m]))[10m:1m])", None),
    ("min_over_time(temp[5m:1m] offset 2m)", None),
    ("histogram_quantile(0.5, sum by (le, svc) (rate(lat_bucket[5m])))", None),
    ('label_replace(req_total, "job", "", "job", ".*")', None),
    ('label_replace(temp, "instance", "x-$1", "instance", "i(.*)")', None),
    ("absent(sum(nope))", None),
    ("sort_desc(temp)", None),
]


def dataset():
    """{metric: [(labels, [(t_ms, value)])]}: deterministic."""
    rnd = random.Random(14)
    times = [BASE + 3 + 10 * k for k in range(360)]
    out = {"req_total": [], "temp": [], "lat_bucket": []}
    for job, inst in [("api", "i1"), ("api", "i2"), ("batch", "i3")]:
        v, samples = 0.0, []
        for i, t in enumerate(times):
            v += rnd.randint(0, 20)
            if inst == "i2" and i in (100, 250):
                v = rnd.randint(0, 5)  # counter reset
            samples.append((t * 1000, v))
        out["req_total"].append(({"job": job, "instance": inst}, samples))
    for host, inst in [("host-a", "i1"), ("host-b", "i3"), ("host-c", "i9")]:
        samples = []
        for i, t in enumerate(times):
            if host == "host-b" and 120 <= i < 170:
                continue  # a gap of 500 s, longer than the lookback
            samples.append((t * 1000, round(15 + 8 * math.sin(i / 17 + len(host)) + rnd.random(), 3)))
        out["temp"].append(({"host": host, "instance": inst}, samples))
    for svc in ["s1", "s2"]:
        counts = [0.0] * 4
        rows = {le: [] for le in ["0.1", "0.5", "1", "+Inf"]}
        for t in times:
            for _ in range(rnd.randint(0, 6)):
                x = rnd.random() ** 2
                for j, le in enumerate([0.1, 0.5, 1.0, math.inf]):
                    if x <= le:
                        counts[j] += 1
            for j, le in enumerate(rows):
                rows[le].append((t * 1000, counts[j]))
        for le, samples in rows.items():
            out["lat_bucket"].append(({"svc": svc, "le": le}, samples))
    return out


def openmetrics(data, path):
    with open(path, "w") as f:
        for metric, series in data.items():
            for labels, samples in series:
                lab = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
                for t, v in samples:
                    f.write(f"{metric}{{{lab}}} {v!r} {t / 1000:.3f}\n")
        f.write("# EOF\n")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    """A prometheus server over blocks made by promtool from `data`."""

    def __init__(self, data):
        """`data`: {metric: series} as dataset() gives, or a function that
        writes an OpenMetrics file to the path it is given."""
        self.dir = tempfile.mkdtemp(prefix="weir-prom-")
        om = os.path.join(self.dir, "data.om")
        if callable(data):
            data(om)
        else:
            openmetrics(data, om)
        tsdb = os.path.join(self.dir, "tsdb")
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", om, tsdb], check=True, capture_output=True)
        cfg = os.path.join(self.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1h\nscrape_configs: []\n")
        self.port = free_port()
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={tsdb}", f"--web.listen-address=127.0.0.1:{self.port}",
             "--storage.tsdb.retention.time=100y"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "log"), "w"))
        for _ in range(120):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2)
                return
            except Exception:
                time.sleep(0.5)
        raise RuntimeError("prometheus did not become ready: " + open(os.path.join(self.dir, "log")).read()[-2000:])

    def query_range(self, q, start, end, step):
        url = f"http://127.0.0.1:{self.port}/api/v1/query_range?" + urllib.parse.urlencode(
            {"query": q, "start": start, "end": end, "step": step})
        try:
            body = json.load(urllib.request.urlopen(url, timeout=60))
        except urllib.error.HTTPError as e:
            return {"error": json.load(e).get("error", str(e))}
        res = body["data"]
        if res["resultType"] != "matrix":
            return {"error": f"result type {res['resultType']}"}
        out = []
        for s in res["result"]:
            labels = {k: v for k, v in s["metric"].items() if k != "__name__"}
            out.append({"labels": labels, "values": [[float(t), v] for t, v in s["values"]]})
        out.sort(key=lambda s: sorted(s["labels"].items()))
        return {"result": out}

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)
        shutil.rmtree(self.dir, ignore_errors=True)


def load_weir(conn, data):
    for metric, series in data.items():
        names = sorted({k for labels, _ in series for k in labels})
        conn.execute(f'DROP TABLE IF EXISTS "{metric}"')
        cols = ", ".join(f'"{n}" STRING' for n in names)
        pk = ", ".join(f'"{n}"' for n in names)
        conn.execute(f'CREATE TABLE "{metric}" (ts TIMESTAMP TIME INDEX, {cols}, val DOUBLE PRECISION, PRIMARY KEY ({pk}))')
        with conn.cursor() as cur:
            with cur.copy(f'COPY "{metric}" (ts, {pk}, val) FROM STDIN') as cp:
                for labels, samples in series:
                    for t, v in samples:
                        ts = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t // 1000)) + f".{t % 1000:03d}"
                        cp.write_row([ts] + [labels.get(n) for n in names] + [v])


def weir_query_range(conn, q, start, end, step):
    try:
        cur = conn.execute(f"TQL EVAL ({start}, {end}, '{step}s') {q}")
    except Exception as e:  # noqa: BLE001 - any server error is an answer
        return {"error": str(e).strip().splitlines()[0]}
    names = [d.name for d in cur.description]
    series = {}
    for row in cur.fetchall():
        t = row[0].replace(tzinfo=None)
        ts = (t - __import__("datetime").datetime(1970, 1, 1)).total_seconds()
        labels = {n: v for n, v in zip(names[1:-1], row[1:-1]) if v is not None}
        key = tuple(sorted(labels.items()))
        series.setdefault(key, {"labels": labels, "values": []})["values"].append([ts, row[-1]])
    out = list(series.values())
    out.sort(key=lambda s: sorted(s["labels"].items()))
    return {"result": out}


def same_value(a, b):
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def diff(want, got):
    """None when equal, else why not."""
    if "error" in want or "error" in got:
        return None if ("error" in want) == ("error" in got) else f"prometheus {want} / weir {got}"
    w = {tuple(sorted(s["labels"].items())): s["values"] for s in want["result"]}
    g = {tuple(sorted(s["labels"].items())): s["values"] for s in got["result"]}
    if set(w) != set(g):
        return f"series differ: prometheus {sorted(w)[:4]} / weir {sorted(g)[:4]}"
    for k in w:
        wv = {round(t, 3): v for t, v in w[k]}
        gv = {round(t, 3): v for t, v in g[k]}
        if set(wv) != set(gv):
            return f"{dict(k)}: steps differ: only prometheus {sorted(set(wv) - set(gv))[:3]}, only weir {sorted(set(gv) - set(wv))[:3]}"
        for t in wv:
            if not same_value(wv[t], gv[t]):
                return f"{dict(k)} at {t}: prometheus {wv[t]} / weir {gv[t]}"
    return None


def golden(path):
    data = dataset()
    prom = Prometheus(data)
    try:
        queries = []
        for q, pq in QUERIES:
            queries.append({"query": q, "prometheus_query": pq or q, "answer": prom.query_range(pq or q, START, END, STEP)})
    finally:
        prom.stop()
    version = subprocess.run(["promtool", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    doc = {
        "produced_by": f"scripts/promtool_compare.py golden ({version})",
        "range": {"start": START, "end": END, "step": STEP},
        "tables": {m: [{"labels": l, "samples": s} for l, s in series] for m, series in data.items()},
        "queries": queries,
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=0, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(queries)} answers to {path}")


def compare(dsn, golden_path):
    import psycopg
    conn = psycopg.connect(dsn, autocommit=True)
    if golden_path:
        doc = json.load(open(golden_path))
        data = {m: [(s["labels"], [tuple(x) for x in s["samples"]]) for s in series] for m, series in doc["tables"].items()}
        answers = [(q["query"], q["answer"]) for q in doc["queries"]]
        prom = None
    else:
        data = dataset()
        prom = Prometheus(data)
        answers = [(q, prom.query_range(pq or q, START, END, STEP)) for q, pq in QUERIES]
    try:
        load_weir(conn, data)
        passed = failed = 0
        for q, want in answers:
            why = diff(want, weir_query_range(conn, q, START, END, STEP))
            if why:
                failed += 1
                print(f"FAIL {q}: {why}")
            else:
                passed += 1
                print(f"ok   {q}")
        print(f"{passed} passed, {failed} failed")
        return failed == 0
    finally:
        if prom:
            prom.stop()


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("golden")
    g.add_argument("path")
    c = sub.add_parser("compare")
    c.add_argument("--dsn", required=True)
    c.add_argument("--golden")
    a = ap.parse_args()
    if a.cmd == "golden":
        golden(a.path)
    else:
        sys.exit(0 if compare(a.dsn, a.golden) else 1)


if __name__ == "__main__":
    main()
