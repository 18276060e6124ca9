//! Prometheus-style metrics over HTTP (`metrics_listen`, off by default):
//! `GET /metrics` answers the text exposition format (0.0.4) with every
//! flow's counters and gauges of `information_schema.flow_statistics`
//! (issue 9: evaluations, incremental / full, fallbacks by reason,
//! fallback windows, min/max recomputes, rows read and written, state
//! windows, mode, lag). The numbers are read through the front door: a
//! superuser session per database runs the system table's query.
//!
//! A deliberately small HTTP/1.x responder (one request per connection,
//! `Connection: close`), not a web server. May import `sql` (sessions) and
//! `types`; only `main` starts it.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::sql::{Engine, QueryResult, Session};
use crate::types::{value_at, Value};

/// Longest request head read.
const HEAD_BYTES_MAX: usize = 8192;

/// Accept scrapes until the listener fails.
pub async fn serve(engine: Arc<Engine>, listener: TcpListener) -> std::io::Result<()> {
    loop {
        let (mut sock, _) = listener.accept().await?;
        let engine = engine.clone();
        tokio::spawn(async move {
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            let read = tokio::time::timeout(Duration::from_secs(5), async {
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < HEAD_BYTES_MAX {
                    let n = sock.read(&mut buf).await?;
                    if n == 0 {
                        break;
                    }
                    head.extend_from_slice(&buf[..n]);
                }
                Ok::<_, std::io::Error>(())
            })
            .await;
            if !matches!(read, Ok(Ok(()))) {
                return;
            }
            let line = String::from_utf8_lossy(&head).lines().next().unwrap_or_default().to_string();
            let mut parts = line.split_whitespace();
            let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            let path = target.split('?').next().unwrap_or("");
            let (status, body) = match (method, path) {
                ("GET", "/metrics") => {
                    let e = engine.clone();
                    match tokio::task::spawn_blocking(move || render(&e)).await {
                        Ok(b) => ("200 OK", b),
                        Err(_) => ("500 Internal Server Error", "metrics failed\n".to_string()),
                    }
                }
                (_, "/metrics") => ("405 Method Not Allowed", "only GET\n".to_string()),
                _ => ("404 Not Found", "see /metrics\n".to_string()),
            };
            let resp = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(resp.as_bytes()).await;
            let _ = sock.shutdown().await;
        });
    }
}

/// (name, type, help, column of the system table); counters end in `_total`.
const FLOW_METRICS: &[(&str, &str, &str, &str)] = &[
    ("weir_flow_evaluations_total", "counter", "Evaluations of the flow since the server started.", "evaluations"),
    (
        "weir_flow_incremental_evaluations_total",
        "counter",
        "Evaluations that merged the change log into partial states.",
        "incremental_evaluations",
    ),
    ("weir_flow_full_evaluations_total", "counter", "Evaluations that recomputed windows from the source.", "full_evaluations"),
    ("weir_flow_fallback_windows_total", "counter", "Windows recomputed from the source by fallbacks.", "fallback_windows"),
    (
        "weir_flow_extreme_recomputes_total",
        "counter",
        "Groups whose min / max / first / last lost its extreme to a retraction.",
        "extreme_recomputes",
    ),
    ("weir_flow_rows_read_total", "counter", "Source and change-log rows the flow's evaluations read.", "rows_read"),
    ("weir_flow_rows_written_total", "counter", "Rows written to the flow's sink.", "rows_written"),
    ("weir_flow_state_windows", "gauge", "Windows with partial state in memory.", "state_windows"),
];

const QUERY: &str = "SELECT flow_name, mode, evaluations, incremental_evaluations, full_evaluations, fallback_windows, \
     extreme_recomputes, rows_read, rows_written, state_windows, fallbacks, lag_ms FROM information_schema.flow_statistics";

/// A label value in the exposition format's escaping.
fn label(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// One row of `information_schema.flow_statistics` by column name.
type Row = Vec<(String, Value)>;

fn flow_rows(engine: &Arc<Engine>, db: &str) -> Vec<Row> {
    let mut s = Session::new(engine.clone(), db, &engine.config.superuser);
    let (results, err) = s.execute_sql(QUERY);
    if let Some(e) = err {
        tracing::warn!(database = db, error = %e.message, "metrics: cannot read flow statistics");
        return vec![];
    }
    let mut out = Vec::new();
    for r in results {
        if let QueryResult::Rows { columns, batches } = r {
            for b in &batches {
                for i in 0..b.num_rows() {
                    out.push(columns.iter().enumerate().map(|(j, c)| (c.name.clone(), value_at(b.column(j).as_ref(), i))).collect());
                }
            }
        }
    }
    out
}

fn get<'a>(row: &'a Row, name: &str) -> &'a Value {
    row.iter().find(|(n, _)| n == name).map(|(_, v)| v).unwrap_or(&Value::Null)
}

/// The whole scrape.
pub fn render(engine: &Arc<Engine>) -> String {
    let mut flows: Vec<(String, Row)> = Vec::new();
    for db in engine.catalog.databases() {
        for row in flow_rows(engine, &db) {
            flows.push((db.clone(), row));
        }
    }
    let mut out = String::new();
    let labels = |db: &str, row: &Row| {
        let name = match get(row, "flow_name") {
            Value::Text(t) => t.clone(),
            _ => String::new(),
        };
        format!("database=\"{}\",flow=\"{}\"", label(db), label(&name))
    };
    for (name, kind, help, col) in FLOW_METRICS {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (db, row) in &flows {
            if let Value::Int(v) = get(row, col) {
                let _ = writeln!(out, "{name}{{{}}} {v}", labels(db, row));
            }
        }
    }
    let _ = writeln!(out, "# HELP weir_flow_fallbacks_total Fallbacks to recomputation from the source, by reason.");
    let _ = writeln!(out, "# TYPE weir_flow_fallbacks_total counter");
    for (db, row) in &flows {
        if let Value::Text(j) = get(row, "fallbacks") {
            if let Ok(serde_json::Value::Object(m)) = serde_json::from_str::<serde_json::Value>(j) {
                for (reason, n) in m {
                    let _ = writeln!(out, "weir_flow_fallbacks_total{{{},reason=\"{}\"}} {}", labels(db, row), label(&reason), n);
                }
            }
        }
    }
    let _ = writeln!(out, "# HELP weir_flow_mode The flow's evaluation mode (1 for the current one).");
    let _ = writeln!(out, "# TYPE weir_flow_mode gauge");
    for (db, row) in &flows {
        if let Value::Text(m) = get(row, "mode") {
            let _ = writeln!(out, "weir_flow_mode{{{},mode=\"{}\"}} 1", labels(db, row), label(m));
        }
    }
    let _ = writeln!(out, "# HELP weir_flow_lag_seconds Now minus when the oldest change the sink does not reflect yet was written.");
    let _ = writeln!(out, "# TYPE weir_flow_lag_seconds gauge");
    for (db, row) in &flows {
        if let Value::Int(ms) = get(row, "lag_ms") {
            let _ = writeln!(out, "weir_flow_lag_seconds{{{}}} {}", labels(db, row), *ms as f64 / 1000.0);
        }
    }
    out
}
