//! Incremental flows across restarts (issue 9): after a clean stop and
//! after `kill -9` a flow resumes from its durable checkpoint and partial
//! states — the metrics of the restarted process show incremental
//! evaluations and no full recomputation — and its sink still equals its
//! query.

mod common;

use std::time::Duration;

use common::TestServer;
use tokio_postgres::Client;

async fn rows(c: &Client, sql: &str) -> Vec<String> {
    common::sorted_rows(c, sql).await
}

const QUERY: &str = "SELECT host, date_bin(INTERVAL '10 seconds', ts) AS w, count(*) AS n, sum(v) AS s, avg(v) AS a, min(v) AS lo, max(v) AS hi FROM src GROUP BY host, w";

async fn check_sink(c: &Client, what: &str) {
    c.batch_execute("ADMIN FLUSH_FLOW('f')").await.unwrap();
    let got = rows(c, "SELECT host, w, n, s, a, lo, hi FROM f_out").await;
    let want = rows(c, &format!("SELECT host, w, n, s, a, lo, hi FROM ({QUERY}) AS q")).await;
    assert!(!want.is_empty());
    assert_eq!(got, want, "{what}: the sink differs from its query");
}

async fn stats(c: &Client) -> String {
    rows(
        c,
        "SELECT mode, full_evaluations, incremental_evaluations, fallbacks FROM information_schema.flow_statistics WHERE flow_name = 'f'",
    )
    .await
    .join(";")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_resume_incrementally() {
    if common::external_url().is_some() {
        eprintln!("skipped: flows are weir's");
        return;
    }
    let data = tempfile::Builder::new().prefix("weir-flow-incr").tempdir().unwrap();
    let mut server = TestServer::spawn(data.path()).unwrap();
    let mut c = server.connect(None).await.unwrap();
    c.batch_execute("CREATE TABLE src (host STRING, ts TIMESTAMP TIME INDEX, v BIGINT, PRIMARY KEY (host)) WITH (regions = 2)")
        .await
        .unwrap();
    let mut vals = Vec::new();
    for i in 0..200 {
        vals.push(format!("('h{}', '2024-01-01 00:00:00'::timestamp + INTERVAL '{} seconds', {})", i % 5, i, i * 7 % 101));
    }
    c.batch_execute(&format!("INSERT INTO src VALUES {}", vals.join(","))).await.unwrap();
    c.batch_execute(&format!("CREATE FLOW f SINK TO f_out EVAL INTERVAL '1 hour' AS {QUERY}")).await.unwrap();
    check_sink(&c, "backfill").await;
    assert_eq!(stats(&c).await, "incremental|1|0|{\"missing_watermark\":1}");

    for (round, kill) in [(0, false), (1, true), (2, false), (3, true)] {
        // Changes, some while the flow is stopped.
        c.batch_execute(&format!(
            "INSERT INTO src VALUES ('h1', '2024-01-01 00:00:{:02}', {}), ('h9', '2024-01-01 00:03:00', 1)",
            round * 3,
            1000 + round
        ))
        .await
        .unwrap();
        c.batch_execute("ADMIN FLUSH_FLOW('f')").await.unwrap();
        c.batch_execute(&format!("DELETE FROM src WHERE host = 'h2' AND ts < '2024-01-01 00:00:{:02}'", 20 + round * 10)).await.unwrap();
        c.batch_execute("UPDATE src SET v = v + 1 WHERE host = 'h3'").await.unwrap();
        if round % 2 == 0 {
            c.batch_execute("ADMIN flush_table('src')").await.unwrap();
        }
        drop(c);
        if kill {
            server.kill9();
        } else {
            assert!(server.stop(Duration::from_secs(20)), "clean stop");
        }
        server = TestServer::spawn(data.path()).unwrap();
        c = server.connect(None).await.unwrap();
        check_sink(&c, &format!("round {round} after {}", if kill { "kill -9" } else { "a clean stop" })).await;
        // The restarted process recomputed nothing: it resumed from the
        // durable checkpoint and states, incrementally.
        assert_eq!(stats(&c).await, "incremental|0|1|{}", "round {round}");
    }
}

/// GET a path of the metrics endpoint: (status line, body).
fn http_get(port: u16, path: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (head.lines().next().unwrap_or_default().to_string(), body.to_string())
}

/// Lag is now minus the time of the oldest write the sink does not
/// reflect (not the time since the last evaluation), and the same numbers
/// are Prometheus metrics on `--metrics-listen`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_lag_and_prometheus_metrics() {
    if common::external_url().is_some() {
        eprintln!("skipped: flows are weir's");
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let data = tempfile::Builder::new().prefix("weir-flow-metrics").tempdir().unwrap();
    let listen = format!("127.0.0.1:{port}");
    // Automatic runs are held back so that the writes below stay unreflected
    // until the lag is read (on a quiet machine the flow would catch up first).
    let server =
        TestServer::spawn_with(data.path(), &[("WEIR_FAILPOINTS", "flow_scheduler_paused")], &["--metrics-listen", &listen]).unwrap();
    let c = server.connect(None).await.unwrap();
    c.batch_execute("CREATE TABLE src (host STRING, ts TIMESTAMP TIME INDEX, v BIGINT, PRIMARY KEY (host))").await.unwrap();
    c.batch_execute("INSERT INTO src VALUES ('a', '2024-01-01 00:00:01', 1)").await.unwrap();
    c.batch_execute(&format!("CREATE FLOW f SINK TO f_out EVAL INTERVAL '1 hour' AS {QUERY}")).await.unwrap();
    c.batch_execute("ADMIN FLUSH_FLOW('f')").await.unwrap();
    let lag = || async {
        c.query_one("SELECT lag_ms FROM information_schema.flow_statistics WHERE flow_name = 'f'", &[]).await.unwrap().get::<_, i64>(0)
    };
    let caught_up = std::time::Instant::now();
    assert_eq!(lag().await, 0, "caught up");
    // The oldest unreflected write comes 1.1 s after the last evaluation.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    c.batch_execute("INSERT INTO src VALUES ('a', '2024-01-01 00:00:02', 2)").await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    c.batch_execute("INSERT INTO src VALUES ('b', '2024-01-01 00:00:03', 3)").await.unwrap();
    let l = lag().await;
    let since_eval = caught_up.elapsed().as_millis() as i64;
    assert!(
        l >= 400 && l + 800 <= since_eval,
        "lag {l} ms follows the oldest unreflected write, not the last evaluation ({since_eval} ms ago)"
    );

    let (status, body) = http_get(port, "/metrics");
    assert!(status.contains("200"), "{status}");
    for want in [
        "# TYPE weir_flow_evaluations_total counter",
        "flow=\"f\"} 1\n",
        "weir_flow_fallbacks_total{",
        "reason=\"missing_watermark\"} 1",
        "weir_flow_mode{",
        "mode=\"incremental\"} 1",
        "weir_flow_lag_seconds{",
    ] {
        assert!(body.contains(want), "metrics lack {want:?}:\n{body}");
    }
    c.batch_execute("ADMIN FLUSH_FLOW('f')").await.unwrap();
    assert_eq!(lag().await, 0, "caught up again");
    let (_, body) = http_get(port, "/metrics");
    let line = body.lines().find(|l| l.starts_with("weir_flow_incremental_evaluations_total{")).unwrap_or_default().to_string();
    assert!(line.ends_with(" 1"), "one incremental evaluation: {line}\n{body}");
    let (status, _) = http_get(port, "/nothing");
    assert!(status.contains("404"), "{status}");
}
