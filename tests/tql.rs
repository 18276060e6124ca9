//! TQL (issue 14) through the front door, where an slt file cannot go:
//! weir's answers against Prometheus's own engine (the golden file
//! `tests/data/tql_promtool.json`, written by `scripts/promtool_compare.py
//! golden` from a Prometheus server over blocks that promtool made from
//! the same samples), and a TQL flow across a restart.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::TestServer;
use tokio_postgres::{Client, SimpleQueryMessage};

type Series = BTreeMap<Vec<(String, String)>, BTreeMap<i64, f64>>;

fn parse_float(s: &str) -> f64 {
    match s {
        "NaN" => f64::NAN,
        "Infinity" | "+Inf" => f64::INFINITY,
        "-Infinity" | "-Inf" => f64::NEG_INFINITY,
        _ => s.parse().unwrap_or_else(|_| panic!("not a number: {s}")),
    }
}

fn same(a: f64, b: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= 1e-9 * 1f64.max(a.abs()).max(b.abs())
}

/// Prometheus's answer (a matrix) as series → step (ms) → value.
fn prometheus_answer(a: &serde_json::Value) -> Series {
    let mut out = Series::new();
    for s in a["result"].as_array().expect("a matrix") {
        let labels: Vec<(String, String)> =
            s["labels"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).collect();
        let vals = s["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| ((p[0].as_f64().unwrap() * 1000.0).round() as i64, parse_float(p[1].as_str().unwrap())));
        out.insert(labels, vals.collect());
    }
    out
}

/// weir's answer: rows (the time, labels, the value, in GreptimeDB's
/// order) as series → step → value. The time column is `ts` or `time`, the
/// labels are the columns named in `labels`, the value is the other one.
async fn weir_answer(c: &Client, sql: &str, labels: &std::collections::BTreeSet<String>) -> Result<Series, String> {
    let msgs = c.simple_query(sql).await.map_err(|e| common::format_error(&e).0)?;
    let mut out = Series::new();
    for m in msgs {
        let SimpleQueryMessage::Row(r) = m else { continue };
        let names: Vec<&str> = r.columns().iter().map(|c| c.name()).collect();
        let ti = names.iter().position(|n| *n == "ts" || *n == "time").expect("a time column");
        let vi = (0..names.len()).find(|&i| i != ti && !labels.contains(names[i])).expect("a value column");
        let t = chrono::NaiveDateTime::parse_from_str(r.get(ti).unwrap(), "%Y-%m-%d %H:%M:%S%.f").unwrap().and_utc().timestamp_millis();
        let mut ls: Vec<(String, String)> = (0..names.len())
            .filter(|&i| i != ti && i != vi)
            .filter_map(|i| r.get(i).map(|v| (names[i].to_string(), v.to_string())))
            .collect();
        ls.sort();
        out.entry(ls).or_default().insert(t, parse_float(r.get(vi).unwrap()));
    }
    Ok(out)
}

fn differ(want: &Series, got: &Series) -> Option<String> {
    if want.keys().ne(got.keys()) {
        return Some(format!("series: prometheus {:?}, weir {:?}", want.keys().collect::<Vec<_>>(), got.keys().collect::<Vec<_>>()));
    }
    for (k, w) in want {
        let g = &got[k];
        if w.keys().ne(g.keys()) {
            return Some(format!("{k:?}: steps: prometheus {:?}, weir {:?}", w.keys().collect::<Vec<_>>(), g.keys().collect::<Vec<_>>()));
        }
        for (t, v) in w {
            if !same(*v, g[t]) {
                return Some(format!("{k:?} at {t}: prometheus {v}, weir {}", g[t]));
            }
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_match_prometheus() {
    if common::external_url().is_some() {
        eprintln!("skipped: TQL is weir's");
        return;
    }
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tql_promtool.json")).unwrap())
            .unwrap();
    let server = TestServer::start().unwrap();
    let c = server.connect(None).await.unwrap();
    for (metric, series) in doc["tables"].as_object().unwrap() {
        let series = series.as_array().unwrap();
        let mut names: Vec<String> = series.iter().flat_map(|s| s["labels"].as_object().unwrap().keys().cloned()).collect();
        names.sort();
        names.dedup();
        let cols: Vec<String> = names.iter().map(|n| format!("\"{n}\" STRING")).collect();
        let pk: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
        c.batch_execute(&format!(
            "CREATE TABLE \"{metric}\" (ts TIMESTAMP TIME INDEX, {}, val DOUBLE PRECISION, PRIMARY KEY ({}))",
            cols.join(", "),
            pk.join(", ")
        ))
        .await
        .unwrap();
        let mut rows: Vec<String> = Vec::new();
        for s in series {
            let labels = s["labels"].as_object().unwrap();
            let tags: Vec<String> =
                names.iter().map(|n| labels.get(n).map(|v| format!("'{}'", v.as_str().unwrap())).unwrap_or("NULL".into())).collect();
            for p in s["samples"].as_array().unwrap() {
                let (t, v) = (p[0].as_i64().unwrap(), p[1].as_f64().unwrap());
                rows.push(format!("(to_timestamp({}::float8 / 1000)::timestamp, {}, {v:?})", t, tags.join(", ")));
            }
        }
        for chunk in rows.chunks(500) {
            c.batch_execute(&format!("INSERT INTO \"{metric}\" (ts, {}, val) VALUES {}", pk.join(", "), chunk.join(", "))).await.unwrap();
        }
    }
    let r = &doc["range"];
    let (start, end, step) = (r["start"].as_i64().unwrap(), r["end"].as_i64().unwrap(), r["step"].as_i64().unwrap());
    let mut failures = Vec::new();
    let queries = doc["queries"].as_array().unwrap();
    let mut label_names = std::collections::BTreeSet::new();
    for series in doc["tables"].as_object().unwrap().values() {
        for s in series.as_array().unwrap() {
            label_names.extend(s["labels"].as_object().unwrap().keys().cloned());
        }
    }
    // Labels a query makes (label_replace, count_values…).
    for q in queries {
        for s in q["answer"]["result"].as_array().into_iter().flatten() {
            label_names.extend(s["labels"].as_object().unwrap().keys().cloned());
        }
    }
    for q in queries {
        let query = q["query"].as_str().unwrap();
        let want = prometheus_answer(&q["answer"]);
        match weir_answer(&c, &format!("TQL EVAL ({start}, {end}, '{step}s') {query}"), &label_names).await {
            Err(e) => failures.push(format!("{query}: weir: {e}")),
            Ok(got) => {
                if let Some(d) = differ(&want, &got) {
                    failures.push(format!("{query}: {d}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} queries differ from Prometheus:\n{}", failures.len(), queries.len(), failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tql_flow_survives_restart() {
    if common::external_url().is_some() {
        eprintln!("skipped: flows are weir's");
        return;
    }
    let data = tempfile::Builder::new().prefix("weir-tql-flow").tempdir().unwrap();
    let mut server = TestServer::spawn(data.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    c.batch_execute(
        "CREATE TABLE m (ts TIMESTAMP TIME INDEX, host STRING, val DOUBLE PRECISION, PRIMARY KEY (host));
         INSERT INTO m VALUES ('1970-01-01 00:00:00', 'a', 1), ('1970-01-01 00:00:05', 'a', 2), ('1970-01-01 00:00:10', 'b', 7);
         CREATE FLOW f SINK TO f_out EVAL INTERVAL '1 hour'
           AS TQL EVAL (now() - now(), now() - (now() - '10s'::interval), '5s') sum by (host) (m);
         ADMIN FLUSH_FLOW('f');",
    )
    .await
    .unwrap();
    let sink = "SELECT ts, host, \"sum(m.val)\" FROM f_out";
    let before = common::sorted_rows(&c, sink).await;
    assert_eq!(before, ["1970-01-01 00:00:00|a|1", "1970-01-01 00:00:05|a|2", "1970-01-01 00:00:10|a|2", "1970-01-01 00:00:10|b|7"]);
    let create = common::sorted_rows(&c, "SHOW CREATE FLOW f").await;
    drop(c);
    assert!(server.stop(Duration::from_secs(20)), "clean stop");
    let server = TestServer::spawn(data.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    assert_eq!(common::sorted_rows(&c, "SHOW CREATE FLOW f").await, create);
    assert_eq!(common::sorted_rows(&c, sink).await, before);
    // The flow runs after the restart: a changed source changes the sink.
    c.batch_execute("INSERT INTO m VALUES ('1970-01-01 00:00:05', 'b', 3); ADMIN FLUSH_FLOW('f');").await.unwrap();
    assert_eq!(
        common::sorted_rows(&c, sink).await,
        [
            "1970-01-01 00:00:00|a|1",
            "1970-01-01 00:00:05|a|2",
            "1970-01-01 00:00:05|b|3",
            "1970-01-01 00:00:10|a|2",
            "1970-01-01 00:00:10|b|7"
        ]
    );
}

/// EVAL INTERVAL ticks run the flow without ADMIN FLUSH_FLOW, with now()
/// the tick (whole seconds for a 1 s interval).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tql_flow_runs_on_ticks() {
    if common::external_url().is_some() {
        eprintln!("skipped: flows are weir's");
        return;
    }
    let server = TestServer::start().unwrap();
    let c = server.connect(None).await.unwrap();
    c.batch_execute(
        "CREATE TABLE m (ts TIMESTAMP TIME INDEX, host STRING, val DOUBLE PRECISION, PRIMARY KEY (host));
         INSERT INTO m VALUES (now()::timestamp, 'a', 5);
         CREATE FLOW f SINK TO f_out EVAL INTERVAL '1 second' AS TQL EVAL (now() - '5s'::interval, now(), '1s') count(m);",
    )
    .await
    .unwrap();
    let mut rows = Vec::new();
    for _ in 0..100 {
        rows = common::sorted_rows(&c, "SELECT extract(milliseconds FROM ts)::int % 1000, \"count(m.val)\" FROM f_out").await;
        if !rows.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!rows.is_empty(), "no tick wrote the sink within 10 s");
    assert!(rows.iter().all(|r| r == "0|1"), "steps on whole seconds, one series: {rows:?}");
}
