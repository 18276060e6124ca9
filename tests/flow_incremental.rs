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
