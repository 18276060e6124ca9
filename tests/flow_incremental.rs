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

const Q: &str =
    "SELECT host, date_bin(INTERVAL '10 seconds', ts) AS w, sum(v) AS s, max(v) AS hi FROM ch GROUP BY host, w HAVING sum(v) < 100";

/// Evaluate `f_ch`; its sink must equal its query.
async fn step(c: &Client, what: &str) {
    c.batch_execute("ADMIN FLUSH_FLOW('f_ch')").await.unwrap();
    let got = rows(c, "SELECT host, w, s, hi FROM f_ch_out").await;
    let want = rows(c, &format!("SELECT host, w, s, hi FROM ({Q}) AS q")).await;
    assert_eq!(got, want, "{what}: the sink differs from its query");
}

/// When `f_ch` last wrote the sink row of `host` in the first window.
async fn update_at(c: &Client, host: &str) -> String {
    c.query_one(&format!("SELECT update_at::text FROM f_ch_out WHERE host = '{host}' AND w = '2024-01-01 00:00:00'"), &[])
        .await
        .unwrap()
        .get::<_, String>(0)
}

/// `rows_written, rows_deleted, rows_unchanged, plans_made` of flow `name`.
async fn counts(c: &Client, name: &str) -> (i64, i64, i64, i64) {
    let r = c
        .query_one(
            "SELECT rows_written, rows_deleted, rows_unchanged, plans_made FROM information_schema.flow_statistics WHERE flow_name = $1",
            &[&name],
        )
        .await
        .unwrap();
    (r.get(0), r.get(1), r.get(2), r.get(3))
}

/// An incremental flow plans once and keeps its plans until a definition
/// changes (any DDL moves the catalog's schema version); an evaluation
/// writes only the sink rows whose group's output changed (deletes the rows
/// of groups gone or filtered out by HAVING), and a group it did not
/// change keeps its `update_at`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_plans_and_only_changed_rows_written() {
    if common::external_url().is_some() {
        eprintln!("skipped: flows are weir's");
        return;
    }
    let data = tempfile::Builder::new().prefix("weir-flow-changed").tempdir().unwrap();
    let mut server = TestServer::spawn_with(data.path(), &[("WEIR_FAILPOINTS", "flow_scheduler_paused")], &[]).unwrap();
    let mut c = server.connect(None).await.unwrap();
    c.batch_execute("CREATE TABLE ch (host STRING, ts TIMESTAMP TIME INDEX, v BIGINT, PRIMARY KEY (host))").await.unwrap();
    c.batch_execute("INSERT INTO ch VALUES ('a', '2024-01-01 00:00:01', 1), ('b', '2024-01-01 00:00:02', 2), ('c', '2024-01-01 00:00:03', 3), ('a', '2024-01-01 00:00:11', 4)")
        .await
        .unwrap();
    c.batch_execute(&format!("CREATE FLOW f_ch SINK TO f_ch_out EVAL INTERVAL '1 hour' AS {Q}")).await.unwrap();
    step(&c, "backfill").await;
    assert_eq!(counts(&c, "f_ch").await, (4, 0, 0, 1));
    let b_written = update_at(&c, "b").await;
    tokio::time::sleep(Duration::from_millis(20)).await;

    // One group changes: one row written, the window's others left alone.
    c.batch_execute("INSERT INTO ch VALUES ('a', '2024-01-01 00:00:04', 10)").await.unwrap();
    step(&c, "a changed").await;
    assert_eq!(counts(&c, "f_ch").await, (5, 0, 0, 1));
    assert_eq!(update_at(&c, "b").await, b_written, "b was not rewritten");
    assert_ne!(update_at(&c, "a").await, b_written, "a was rewritten");

    // An overwrite with the same value: the group's output is the same.
    c.batch_execute("INSERT INTO ch VALUES ('b', '2024-01-01 00:00:02', 2)").await.unwrap();
    step(&c, "b overwritten with itself").await;
    assert_eq!(counts(&c, "f_ch").await, (5, 0, 1, 1));

    // HAVING filters c out now; b's rows are all gone: two rows deleted.
    c.batch_execute("INSERT INTO ch VALUES ('c', '2024-01-01 00:00:05', 200)").await.unwrap();
    c.batch_execute("DELETE FROM ch WHERE host = 'b'").await.unwrap();
    step(&c, "c filtered, b gone").await;
    assert_eq!(counts(&c, "f_ch").await, (5, 2, 1, 1));

    // Many evaluations, one plan.
    for i in 0..5 {
        c.batch_execute(&format!("INSERT INTO ch VALUES ('d', '2024-01-01 00:00:{:02}', {i})", 20 + i)).await.unwrap();
        step(&c, "d").await;
    }
    assert_eq!(counts(&c, "f_ch").await.3, 1, "the plans are kept");

    // A definition changes (here: another table): the flow plans again, once.
    c.batch_execute("CREATE TABLE unrelated (ts TIMESTAMP TIME INDEX, x BIGINT)").await.unwrap();
    c.batch_execute("INSERT INTO ch VALUES ('d', '2024-01-01 00:00:29', 1)").await.unwrap();
    step(&c, "after DDL").await;
    c.batch_execute("INSERT INTO ch VALUES ('d', '2024-01-01 00:00:28', 1)").await.unwrap();
    step(&c, "after DDL, again").await;
    assert_eq!(counts(&c, "f_ch").await.3, 2, "planned again once after the DDL");

    // The source recreated under the same name with another layout: the
    // kept plan (which read the old table) is not used.
    c.batch_execute("DROP TABLE ch").await.unwrap();
    c.batch_execute("CREATE TABLE ch (ts TIMESTAMP TIME INDEX, host STRING, extra DOUBLE, v BIGINT, PRIMARY KEY (host))").await.unwrap();
    c.batch_execute("INSERT INTO ch VALUES ('2024-01-01 00:00:01', 'a', 0.5, 7)").await.unwrap();
    step(&c, "source recreated").await;

    // After a restart the first evaluation compares with what the sink holds.
    drop(c);
    server.kill9();
    server = TestServer::spawn_with(data.path(), &[("WEIR_FAILPOINTS", "flow_scheduler_paused")], &[]).unwrap();
    c = server.connect(None).await.unwrap();
    c.batch_execute("INSERT INTO ch VALUES ('2024-01-01 00:00:02', 'e', 0.5, 1)").await.unwrap();
    step(&c, "after kill -9").await;
    let (written, _, unchanged, plans) = counts(&c, "f_ch").await;
    assert_eq!((written, unchanged, plans), (1, 1, 1), "only e's row is new; a's row is the same");
}

/// Versions a flow's checkpoint needs compacted away (the flow's hold is
/// switched off by a failpoint): the change log since the checkpoint can no
/// longer be read exactly, so the flow falls back to a full snapshot with
/// the reason `snapshot_expired`, and its sink is still its query.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compacted_versions_fall_back_as_snapshot_expired() {
    if common::external_url().is_some() {
        eprintln!("skipped: flows are weir's");
        return;
    }
    let data = tempfile::Builder::new().prefix("weir-flow-expired").tempdir().unwrap();
    let server = TestServer::spawn_with(data.path(), &[("WEIR_FAILPOINTS", "flow_scheduler_paused,flow_no_version_hold")], &[]).unwrap();
    let c = server.connect(None).await.unwrap();
    c.batch_execute("CREATE TABLE se (ts TIMESTAMP TIME INDEX, v BIGINT)").await.unwrap();
    c.batch_execute("INSERT INTO se VALUES ('2024-01-01 00:00:01', 1), ('2024-01-01 00:00:11', 5)").await.unwrap();
    const SE: &str = "SELECT date_bin(INTERVAL '10 seconds', ts) AS w, sum(v) AS s, min(v) AS lo FROM se GROUP BY w";
    c.batch_execute(&format!("CREATE FLOW f_se SINK TO f_se_out EVAL INTERVAL '1 hour' AS {SE}")).await.unwrap();
    c.batch_execute("ADMIN FLUSH_FLOW('f_se')").await.unwrap();
    for v in [2, 3] {
        c.batch_execute(&format!("INSERT INTO se VALUES ('2024-01-01 00:00:01', {v})")).await.unwrap();
        c.batch_execute("ADMIN flush_table('se')").await.unwrap();
    }
    c.batch_execute("ADMIN compact_table('se')").await.unwrap();
    c.batch_execute("ADMIN FLUSH_FLOW('f_se')").await.unwrap();
    let got = rows(&c, "SELECT w, s, lo FROM f_se_out").await;
    let want = rows(&c, &format!("SELECT w, s, lo FROM ({SE}) AS q")).await;
    assert_eq!(got, want, "the sink equals its query after the fallback");
    let st = rows(&c, "SELECT mode, fallbacks FROM information_schema.flow_statistics WHERE flow_name = 'f_se'").await.join(";");
    assert_eq!(st, "incremental|{\"missing_watermark\":1,\"snapshot_expired\":1}");
}

const SW: &str = "SELECT host, date_bin(INTERVAL '10 seconds', ts) AS w, count(*) AS n, sum(v) AS s FROM sw GROUP BY host, w";

/// `full_evaluations, fallbacks` of flow `name`.
async fn fallbacks(c: &Client, name: &str) -> String {
    rows(c, &format!("SELECT full_evaluations, fallbacks FROM information_schema.flow_statistics WHERE flow_name = '{name}'"))
        .await
        .join(";")
}

/// Whether `sink` equals the query within `secs` seconds, without ADMIN
/// FLUSH_FLOW (the scheduler runs the flow).
async fn repaired_within(c: &Client, sink: &str, secs: u64) -> bool {
    let want = rows(c, &format!("SELECT host, w, n, s FROM ({SW}) AS q")).await;
    let t = std::time::Instant::now();
    while t.elapsed() < Duration::from_secs(secs) {
        if rows(c, &format!("SELECT host, w, n, s FROM {sink}")).await == want {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// A write by someone else into an incremental flow's sink schedules the
/// flow: the window it touched is replaced from the partial states soon
/// after (no source change, no ADMIN FLUSH_FLOW, an EVAL INTERVAL tick an
/// hour away), for EVAL INTERVAL and adaptive flows alike; the flow's own
/// sink writes schedule nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sink_writes_schedule_a_repair() {
    if common::external_url().is_some() {
        eprintln!("skipped: flows are weir's");
        return;
    }
    let data = tempfile::Builder::new().prefix("weir-flow-sinkw").tempdir().unwrap();
    let server = TestServer::spawn(data.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    c.batch_execute("CREATE TABLE sw (host STRING, ts TIMESTAMP TIME INDEX, v BIGINT, PRIMARY KEY (host))").await.unwrap();
    c.batch_execute(
        "INSERT INTO sw VALUES ('a', '2024-01-01 00:00:01', 1), ('b', '2024-01-01 00:00:02', 2), ('a', '2024-01-01 00:00:11', 4)",
    )
    .await
    .unwrap();
    c.batch_execute(&format!("CREATE FLOW f_tick SINK TO f_tick_out EVAL INTERVAL '1 hour' AS {SW}")).await.unwrap();
    c.batch_execute(&format!("CREATE FLOW f_adapt SINK TO f_adapt_out AS {SW}")).await.unwrap();
    c.batch_execute("ADMIN FLUSH_FLOW('f_tick')").await.unwrap();
    assert!(repaired_within(&c, "f_adapt_out", 30).await, "the adaptive flow backfills");
    c.batch_execute("ADMIN FLUSH_FLOW('f_adapt')").await.unwrap();
    let evals = || async {
        rows(
            &c,
            "SELECT flow_name, evaluations FROM information_schema.flow_statistics WHERE flow_name IN ('f_tick', 'f_adapt') ORDER BY 1",
        )
        .await
        .join(";")
    };
    // The flows' own writes do not schedule them again.
    let before = evals().await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(evals().await, before, "no evaluation without a change");
    for sink in ["f_tick_out", "f_adapt_out"] {
        // A wrong value for a group, and a row of a group the query lacks.
        c.batch_execute(&format!(
            "INSERT INTO {sink} (host, w, n, s) VALUES ('a', '2024-01-01 00:00:00', 7, 70), ('z', '2024-01-01 00:00:10', 1, 1)"
        ))
        .await
        .unwrap();
        assert!(repaired_within(&c, sink, 30).await, "{sink} is repaired without FLUSH_FLOW");
    }
    // Each repaired its window from the states: no full recomputation.
    for f in ["f_tick", "f_adapt"] {
        assert_eq!(fallbacks(&c, f).await, "1|{\"missing_watermark\":1,\"sink_written\":1}", "{f}");
    }
}

/// The sink versions an incremental flow reads past are held again at
/// start-up: a compaction of the sink after a restart, before the flow's
/// first evaluation, does not force a whole-sink recompute (only the
/// window others wrote is replaced).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sink_holds_are_placed_at_start_up() {
    if common::external_url().is_some() {
        eprintln!("skipped: flows are weir's");
        return;
    }
    let data = tempfile::Builder::new().prefix("weir-flow-sinkhold").tempdir().unwrap();
    let env = [("WEIR_FAILPOINTS", "flow_scheduler_paused")];
    let mut server = TestServer::spawn_with(data.path(), &env, &[]).unwrap();
    let mut c = server.connect(None).await.unwrap();
    c.batch_execute("CREATE TABLE sw (host STRING, ts TIMESTAMP TIME INDEX, v BIGINT, PRIMARY KEY (host))").await.unwrap();
    c.batch_execute("INSERT INTO sw VALUES ('a', '2024-01-01 00:00:01', 1), ('b', '2024-01-01 00:00:12', 2)").await.unwrap();
    c.batch_execute(&format!("CREATE FLOW f_h SINK TO f_h_out EVAL INTERVAL '1 hour' AS {SW}")).await.unwrap();
    c.batch_execute("ADMIN FLUSH_FLOW('f_h')").await.unwrap();
    c.batch_execute("ADMIN flush_table('f_h_out')").await.unwrap();
    c.batch_execute("INSERT INTO f_h_out (host, w, n, s) VALUES ('a', '2024-01-01 00:00:00', 9, 9)").await.unwrap();
    c.batch_execute("ADMIN flush_table('f_h_out')").await.unwrap();
    drop(c);
    assert!(server.stop(Duration::from_secs(20)), "clean stop");
    server = TestServer::spawn_with(data.path(), &env, &[]).unwrap();
    c = server.connect(None).await.unwrap();
    c.batch_execute("ADMIN compact_table('f_h_out')").await.unwrap();
    c.batch_execute("ADMIN FLUSH_FLOW('f_h')").await.unwrap();
    let got = rows(&c, "SELECT host, w, n, s FROM f_h_out").await;
    let want = rows(&c, &format!("SELECT host, w, n, s FROM ({SW}) AS q")).await;
    assert_eq!(got, want, "the sink equals its query");
    assert_eq!(fallbacks(&c, "f_h").await, "0|{\"sink_written\":1}", "one window repaired, no full recomputation");
}
