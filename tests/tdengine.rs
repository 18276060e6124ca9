//! TDengine streams outside ADMIN FLUSH_STREAM: the background runner
//! computes windows after writes by itself, and a stream's definition and
//! progress survive a restart (windows computed before it are not computed
//! again; windows closed after it are). Polls with a deadline: it tests the
//! runner's own scheduling, which the slt files bypass.

mod common;

use std::time::{Duration, Instant};

use common::{fails, TestServer};
use tokio_postgres::{Client, SimpleQueryMessage};

async fn rows(c: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    let msgs = c.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    msgs.into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect()),
            _ => None,
        })
        .collect()
}

/// Wait (at most 30 s) until `sql`'s first value is `want`.
async fn wait_for(c: &Client, sql: &str, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = rows(c, sql).await.first().and_then(|r| r[0].clone()).unwrap_or_default();
        if got == want {
            return;
        }
        assert!(Instant::now() < deadline, "{sql}: still {got:?}, want {want:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn streams_run_in_the_background_and_survive_a_restart() {
    if common::external_url().is_some() {
        return; // TDengine's statements are weir's.
    }
    let dir = tempfile::tempdir().unwrap();
    let mut s = TestServer::spawn(dir.path()).unwrap();
    let c = s.connect(None).await.unwrap();
    c.batch_execute(
        "CREATE STABLE st (ts TIMESTAMP, v INT) TAGS (g INT);
         CREATE TABLE c1 USING st TAGS (1);
         CREATE SNODE ON DNODE 1;
         CREATE STREAM s COUNT_WINDOW(2) FROM st PARTITION BY tbname INTO out
           AS SELECT _twstart AS ts, count(*) AS n, sum(v) AS total FROM %%trows;
         INSERT INTO c1 VALUES ('2025-01-01 00:00:00', 1), ('2025-01-01 00:00:01', 2), ('2025-01-01 00:00:02', 3);",
    )
    .await
    .unwrap();
    // No ADMIN call: the runner computes the closed window after the write.
    wait_for(&c, "SELECT count(*) FROM out", "1").await;
    // A child created after the stream joins it.
    c.batch_execute("INSERT INTO c2 USING st TAGS (2) VALUES ('2025-01-01 00:00:00', 10), ('2025-01-01 00:00:05', 20)").await.unwrap();
    wait_for(&c, "SELECT count(*) FROM out", "2").await;
    drop(c);
    assert!(s.stop(Duration::from_secs(10)), "weir stops on SIGTERM");
    let s = TestServer::spawn(dir.path()).unwrap();
    let c = s.connect(None).await.unwrap();
    assert_eq!(
        rows(&c, "SELECT status FROM information_schema.ins_streams WHERE stream_name = 's'").await,
        vec![vec![Some("Running".into())]]
    );
    c.batch_execute("INSERT INTO c1 VALUES ('2025-01-01 00:00:03', 4)").await.unwrap();
    wait_for(&c, "SELECT count(*) FROM out", "3").await;
    let got = rows(&c, "SELECT tbname, n, total FROM out ORDER BY tbname, ts").await;
    let want: Vec<Vec<Option<String>>> = [["out_c1", "2", "3"], ["out_c1", "2", "7"], ["out_c2", "2", "30"]]
        .iter()
        .map(|r| r.iter().map(|v| Some(v.to_string())).collect())
        .collect();
    assert_eq!(got, want);
    // Progress survived: the first windows were computed once (their
    // digests are in the stream's state), so the counters say three.
    assert_eq!(
        rows(&c, "SELECT windows_done FROM information_schema.ins_streams WHERE stream_name = 's'").await,
        vec![vec![Some("3".into())]]
    );
}

/// An evaluation's progress is not flushed on its own: it rides in the WAL
/// record of the evaluation's output (an annex) and is put back from there
/// after a crash. kill -9 right after each evaluation: every window is
/// computed once (the counters say so) and the output is whole.
#[tokio::test(flavor = "multi_thread")]
async fn stream_progress_survives_kill9_right_after_each_evaluation() {
    if common::external_url().is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut s = TestServer::spawn(dir.path()).unwrap();
    let mut c = s.connect(None).await.unwrap();
    c.batch_execute(
        "CREATE STABLE st (ts TIMESTAMP, v INT) TAGS (g INT);
         CREATE TABLE c1 USING st TAGS (1);
         CREATE TABLE c2 USING st TAGS (2);
         CREATE SNODE ON DNODE 1;
         CREATE STREAM s COUNT_WINDOW(2) FROM st PARTITION BY tbname INTO out
           AS SELECT _twstart AS ts, count(*) AS n, sum(v) AS total FROM %%trows;",
    )
    .await
    .unwrap();
    for round in 0..6i64 {
        let t = |k: i64| format!("'2025-01-01 00:{:02}:{:02}'", round, k);
        c.batch_execute(&format!(
            "INSERT INTO c1 VALUES ({}, {round}), ({}, 1); INSERT INTO c2 VALUES ({}, 10), ({}, 20);",
            t(0),
            t(1),
            t(0),
            t(1)
        ))
        .await
        .unwrap();
        rows(&c, "ADMIN FLUSH_STREAM('s')").await;
        drop(c);
        s.kill9();
        s = TestServer::spawn(dir.path()).unwrap();
        c = s.connect(None).await.unwrap();
        let windows = (2 * (round + 1)).to_string();
        assert_eq!(
            rows(&c, "SELECT windows_done, rows_written FROM information_schema.ins_streams WHERE stream_name = 's'").await,
            vec![vec![Some(windows.clone()), Some(windows.clone())]],
            "round {round}: each window computed once"
        );
        assert_eq!(rows(&c, "SELECT count(*) FROM out").await, vec![vec![Some(windows)]]);
        assert_eq!(
            rows(&c, "SELECT sum(total) FROM out WHERE tbname = 'out_c1'").await,
            vec![vec![Some(((round + 1) * round / 2 + round + 1).to_string())]]
        );
    }
}

/// IDLE_TIMEOUT(1s) with EVENT_TYPE(IDLE|RESUME) (TDengine 3.4): a group
/// without new rows for a second of processing time computes an IDLE
/// event, its next rows a RESUME; a group kept busy stays quiet. Waits for
/// the runner (wall-clock time is the trigger).
#[tokio::test(flavor = "multi_thread")]
async fn idle_timeout_computes_idle_and_resume_events() {
    if common::external_url().is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::spawn(dir.path()).unwrap();
    let c = s.connect(None).await.unwrap();
    c.batch_execute(
        "CREATE STABLE st (ts TIMESTAMP, v INT) TAGS (g INT);
         CREATE TABLE d1 USING st TAGS (1);
         CREATE TABLE d2 USING st TAGS (2);
         CREATE SNODE ON DNODE 1;
         CREATE STREAM si SLIDING(1s) FROM st PARTITION BY tbname STREAM_OPTIONS(IDLE_TIMEOUT(1s)|EVENT_TYPE(IDLE|RESUME)) INTO oi
           AS SELECT to_timestamp(_tidlestart / 1000000000.0) AS ts, _tidleend - _tidlestart AS ns;
         INSERT INTO d1 VALUES (now(), 1); INSERT INTO d2 VALUES (now(), 1);",
    )
    .await
    .unwrap();
    // d2 gets a row every 100 ms until d1 has gone idle.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        c.batch_execute("INSERT INTO d2 VALUES (now(), 2)").await.unwrap();
        let n = rows(&c, "SELECT count(*) FROM oi").await;
        if n != vec![vec![Some("0".to_string())]] {
            break;
        }
        assert!(Instant::now() < deadline, "no IDLE event");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        rows(&c, "SELECT tag_tbname, ns >= 1000000000 FROM oi").await,
        vec![vec![Some("d1".into()), Some("t".into())]],
        "d1 went idle after at least a second; d2 did not"
    );
    // Rows again: RESUME (its idle span starts when IDLE fired: another row).
    c.batch_execute("INSERT INTO d1 VALUES (now(), 3)").await.unwrap();
    wait_for(&c, "SELECT count(*) FROM oi WHERE tag_tbname = 'd1'", "2").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn max_delay_computes_an_open_window_while_it_stays_open() {
    if common::external_url().is_some() {
        return; // TDengine's statements are weir's.
    }
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::spawn(dir.path()).unwrap();
    let c = s.connect(None).await.unwrap();
    c.batch_execute(
        "CREATE STABLE st (ts TIMESTAMP, v INT) TAGS (g INT);
         CREATE TABLE c1 USING st TAGS (1);
         CREATE SNODE ON DNODE 1;
         CREATE STREAM s INTERVAL(1h) SLIDING(1h) FROM c1 STREAM_OPTIONS(MAX_DELAY(3s)) INTO out
           AS SELECT _twstart AS ts, count(*) AS n FROM %%trows;
         INSERT INTO c1 VALUES ('2025-01-01 00:00:00', 1), ('2025-01-01 00:10:00', 2);",
    )
    .await
    .unwrap();
    // The hour never closes; 3 s of processing time after it opened the
    // runner computes it with the rows so far, and again after more rows.
    wait_for(&c, "SELECT n FROM out", "2").await;
    c.batch_execute("INSERT INTO c1 VALUES ('2025-01-01 00:20:00', 3)").await.unwrap();
    wait_for(&c, "SELECT n FROM out", "3").await;
    assert_eq!(rows(&c, "SELECT count(*) FROM out").await, vec![vec![Some("1".into())]]);
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_statements_need_database_privileges() {
    if common::external_url().is_some() {
        return; // TDengine's statements are weir's.
    }
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::spawn(dir.path()).unwrap();
    let su = s.connect(None).await.unwrap();
    su.batch_execute(
        "CREATE DATABASE sdb;
         CREATE DATABASE tdb;
         CREATE STABLE tdb.st (ts TIMESTAMP, v INT) TAGS (g INT);
         CREATE TABLE tdb.c1 USING tdb.st TAGS (1);
         CREATE SNODE ON DNODE 1;
         CREATE USER alice;",
    )
    .await
    .unwrap();
    let mut cfg = s.config(None);
    cfg.user("alice");
    let alice = common::connect(&cfg).await.unwrap();
    let create = "CREATE STREAM sdb.s INTERVAL(1m) SLIDING(1m) FROM tdb.st PARTITION BY tbname INTO sdb.out \
                  AS SELECT _twstart AS ts, count(*) AS c FROM %%trows";
    let denied = ("42501".to_string(), "Insufficient privilege for operation".to_string());
    // Write on the stream's database…
    assert_eq!(fails(&alice, create).await, denied);
    su.batch_execute("GRANT CREATE ON DATABASE sdb TO alice").await.unwrap();
    // …and read of the trigger table.
    assert_eq!(fails(&alice, create).await, denied);
    su.batch_execute("GRANT SELECT ON tdb.st TO alice").await.unwrap();
    alice.batch_execute(create).await.unwrap();
    alice.batch_execute("STOP STREAM sdb.s; START STREAM sdb.s").await.unwrap();
    // A source table the query reads needs read too.
    su.batch_execute("CREATE TABLE tdb.secret (ts TIMESTAMP TIME INDEX, v INT)").await.unwrap();
    let (code, _) = fails(
        &alice,
        "CREATE STREAM sdb.s2 INTERVAL(1m) SLIDING(1m) FROM tdb.st PARTITION BY tbname INTO sdb.out2 \
         AS SELECT _twstart AS ts, count(*) AS c FROM tdb.secret",
    )
    .await;
    assert_eq!(code, "42501");
    su.batch_execute("REVOKE CREATE ON DATABASE sdb FROM alice").await.unwrap();
    for sql in ["STOP STREAM sdb.s", "START STREAM sdb.s", "RECALCULATE STREAM sdb.s FROM '2025-01-01 00:00:00'", "DROP STREAM sdb.s"] {
        assert_eq!(fails(&alice, sql).await, denied, "{sql}");
    }
    su.batch_execute("DROP STREAM sdb.s").await.unwrap();
}

/// A local WebSocket receiver (RFC 6455 server side, enough for one text
/// message per connection): the messages it got, as JSON.
struct Receiver {
    port: u16,
    got: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
}

fn ws_receiver() -> Receiver {
    ws_receiver_tls(None)
}

/// A WebSocket receiver over TLS with the test certificates (`wss://`).
fn wss_receiver(certs: &common::TlsCerts) -> Receiver {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(certs.cert()).unwrap().map(Result::unwrap).collect();
    let key = PrivateKeyDer::from_pem_file(certs.key()).unwrap();
    let cfg = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    ws_receiver_tls(Some(std::sync::Arc::new(cfg)))
}

fn ws_receiver_tls(tls: Option<std::sync::Arc<rustls::ServerConfig>>) -> Receiver {
    use std::io::{Read, Write};
    trait Io: Read + Write {}
    impl<T: Read + Write> Io for T {}
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let out = got.clone();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(tcp) = conn else { continue };
            let mut s: Box<dyn Io> = match &tls {
                Some(cfg) => Box::new(rustls::StreamOwned::new(rustls::ServerConnection::new(cfg.clone()).unwrap(), tcp)),
                None => Box::new(tcp),
            };
            let mut head = Vec::new();
            let mut b = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                if s.read(&mut b).unwrap_or(0) == 0 {
                    break;
                }
                head.push(b[0]);
            }
            let head = String::from_utf8_lossy(&head).to_string();
            let key = head
                .split("\r\n")
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("sec-websocket-key"))
                .map(|(_, v)| v.trim().to_string())
                .unwrap_or_default();
            let d = ring::digest::digest(
                &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
                format!("{key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11").as_bytes(),
            );
            use base64::Engine;
            let accept = base64::engine::general_purpose::STANDARD.encode(d.as_ref());
            let _ = write!(
                s,
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
            );
            // Frames until close: text + continuations make one message.
            let mut msg = Vec::new();
            loop {
                let mut h = [0u8; 2];
                if s.read_exact(&mut h).is_err() {
                    break;
                }
                let (fin, op) = (h[0] & 0x80 != 0, h[0] & 0x0f);
                assert!(h[1] & 0x80 != 0, "client frames are masked");
                let mut len = (h[1] & 0x7f) as usize;
                if len == 126 {
                    let mut x = [0u8; 2];
                    s.read_exact(&mut x).unwrap();
                    len = u16::from_be_bytes(x) as usize;
                } else if len == 127 {
                    let mut x = [0u8; 8];
                    s.read_exact(&mut x).unwrap();
                    len = u64::from_be_bytes(x) as usize;
                }
                let mut mask = [0u8; 4];
                s.read_exact(&mut mask).unwrap();
                let mut p = vec![0u8; len];
                s.read_exact(&mut p).unwrap();
                for (i, x) in p.iter_mut().enumerate() {
                    *x ^= mask[i % 4];
                }
                if op == 8 {
                    let _ = s.write_all(&[0x88, 0]);
                    break;
                }
                msg.extend(p);
                if fin {
                    out.lock().unwrap().push(serde_json::from_slice(&msg).expect("a JSON message"));
                    msg.clear();
                }
            }
        }
    });
    Receiver { port, got }
}

/// The events received so far, flattened: (eventType, windowStart, result).
fn events(r: &Receiver) -> Vec<serde_json::Value> {
    let got = r.got.lock().unwrap();
    got.iter()
        .flat_map(|m| m["streams"].as_array().cloned().unwrap_or_default())
        .flat_map(|s| s["events"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn notify_delivers_tdengine_messages_over_websocket() {
    if common::external_url().is_some() {
        return;
    }
    let recv = ws_receiver();
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::spawn(dir.path()).unwrap();
    let c = s.connect(None).await.unwrap();
    c.batch_execute(&format!(
        "CREATE STABLE st (ts TIMESTAMP, v INT) TAGS (g INT);
         CREATE TABLE c1 USING st TAGS (1);
         CREATE SNODE ON DNODE 1;
         CREATE STREAM s INTERVAL(10s) SLIDING(10s) FROM st PARTITION BY tbname
           NOTIFY('ws://127.0.0.1:{}/notify') ON (WINDOW_OPEN|WINDOW_CLOSE)
           INTO out AS SELECT _twstart AS ts, count(*) AS n, sum(v) AS total FROM %%trows;
         INSERT INTO c1 VALUES ('2025-01-01 00:00:01', 1), ('2025-01-01 00:00:02', 2);",
        recv.port
    ))
    .await
    .unwrap();
    // Open: a WINDOW_OPEN for [0 s, 10 s).
    rows(&c, "ADMIN FLUSH_STREAM('s')").await;
    let ev = events(&recv);
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0]["eventType"], "WINDOW_OPEN");
    assert_eq!(ev[0]["triggerType"], "Interval");
    assert_eq!(ev[0]["windowStart"], 1735689600000i64);
    assert_eq!(ev[0]["tableName"], "out_c1");
    // A row at 12 s closes it: WINDOW_CLOSE with the result, WINDOW_OPEN of the next.
    c.batch_execute("INSERT INTO c1 VALUES ('2025-01-01 00:00:12', 4)").await.unwrap();
    rows(&c, "ADMIN FLUSH_STREAM('s')").await;
    let ev = events(&recv);
    let close: Vec<_> = ev.iter().filter(|e| e["eventType"] == "WINDOW_CLOSE").collect();
    assert_eq!(close.len(), 1, "{ev:?}");
    assert_eq!(close[0]["windowStart"], 1735689600000i64);
    assert_eq!(close[0]["windowEnd"], 1735689610000i64);
    assert_eq!(close[0]["result"]["n"], 2);
    assert_eq!(close[0]["result"]["total"], 3);
    assert_eq!(close[0]["result"]["ts"], 1735689600000i64);
    assert_eq!(close[0]["triggerId"], ev[0]["triggerId"], "the same window, the same trigger id");
    assert!(ev.iter().any(|e| e["eventType"] == "WINDOW_OPEN" && e["windowStart"] == 1735689610000i64), "{ev:?}");
    let msgs = recv.got.lock().unwrap().clone();
    assert!(msgs.iter().all(|m| m["messageId"].is_string()
        && m["timestamp"].is_i64()
        && m["streams"][0]["streamName"].as_str().is_some_and(|n| n.ends_with(".s"))));

    // No receiver: by default the events are dropped and the stream goes on;
    // with ON_FAILURE_PAUSE the evaluation fails and is retried.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = dead.local_addr().unwrap().port();
    drop(dead);
    c.batch_execute(&format!(
        "CREATE TABLE c2 USING st TAGS (2);
         CREATE STREAM s_drop COUNT_WINDOW(1) FROM c2 NOTIFY('ws://127.0.0.1:{dead_port}/') ON (WINDOW_CLOSE)
           INTO out_drop AS SELECT _twstart AS ts, count(*) AS n FROM %%trows;
         CREATE STREAM s_pause COUNT_WINDOW(1) FROM c2 NOTIFY('ws://127.0.0.1:{dead_port}/') ON (WINDOW_CLOSE) NOTIFY_OPTIONS(ON_FAILURE_PAUSE)
           INTO out_pause AS SELECT _twstart AS ts, count(*) AS n FROM %%trows;
         STOP STREAM s_drop; STOP STREAM s_pause;
         INSERT INTO c2 VALUES ('2025-01-01 00:00:00', 1);
         START STREAM s_drop; START STREAM s_pause;"
    ))
    .await
    .unwrap();
    rows(&c, "ADMIN FLUSH_STREAM('s_drop')").await;
    assert_eq!(
        rows(&c, "SELECT status, notify_dropped FROM information_schema.ins_streams WHERE stream_name = 's_drop'").await,
        vec![vec![Some("Running".to_string()), Some("1".to_string())]]
    );
    assert!(c.simple_query("ADMIN FLUSH_STREAM('s_pause')").await.is_err());
    assert_eq!(
        rows(&c, "SELECT status FROM information_schema.ins_streams WHERE stream_name = 's_pause'").await,
        vec![vec![Some("Failed".to_string())]]
    );
}

/// `wss://`: the same messages over TLS, the server's certificate checked
/// against the trust store (`SSL_CERT_FILE`: the test CA); a server the
/// store does not trust gets nothing (dropped and counted).
#[tokio::test(flavor = "multi_thread")]
async fn notify_delivers_over_wss_with_a_trusted_certificate() {
    if common::external_url().is_some() {
        return;
    }
    let Some(certs) = common::TlsCerts::make() else { return };
    let recv = wss_receiver(&certs);
    let dir = tempfile::tempdir().unwrap();
    let ca = certs.ca().display().to_string();
    let s = TestServer::spawn_env(dir.path(), &[("SSL_CERT_FILE", &ca)]).unwrap();
    let c = s.connect(None).await.unwrap();
    c.batch_execute(&format!(
        "CREATE TABLE t (ts TIMESTAMP TIME INDEX, v INT);
         CREATE SNODE ON DNODE 1;
         CREATE STREAM s COUNT_WINDOW(2) FROM t NOTIFY('wss://127.0.0.1:{p}/n') ON (WINDOW_CLOSE)
           INTO out AS SELECT _twstart AS ts, count(*) AS n, sum(v) AS total FROM %%trows;
         CREATE STREAM s_host COUNT_WINDOW(2) FROM t NOTIFY('wss://localhost:{p}/n') ON (WINDOW_CLOSE)
           INTO out_host AS SELECT _twstart AS ts, count(*) AS n FROM %%trows;
         INSERT INTO t VALUES ('2025-01-01 00:00:00', 1), ('2025-01-01 00:00:01', 2);",
        p = recv.port
    ))
    .await
    .unwrap();
    rows(&c, "ADMIN FLUSH_STREAM('s')").await;
    rows(&c, "ADMIN FLUSH_STREAM('s_host')").await;
    let ev = events(&recv);
    assert_eq!(ev.len(), 2, "{ev:?}");
    assert!(ev.iter().all(|e| e["eventType"] == "WINDOW_CLOSE"), "{ev:?}");
    assert!(ev.iter().any(|e| e["result"]["total"] == 3), "{ev:?}");

    // Another weir whose trust store lacks the test CA (it holds the
    // server's own certificate, whose issuer it cannot find): the handshake
    // fails, the event is dropped and counted.
    let dir2 = tempfile::tempdir().unwrap();
    let other_ca = certs.cert().display().to_string();
    let s2 = TestServer::spawn_env(dir2.path(), &[("SSL_CERT_FILE", &other_ca)]).unwrap();
    let c2 = s2.connect(None).await.unwrap();
    c2.batch_execute(&format!(
        "CREATE TABLE t (ts TIMESTAMP TIME INDEX, v INT);
         CREATE SNODE ON DNODE 1;
         CREATE STREAM s COUNT_WINDOW(1) FROM t NOTIFY('wss://127.0.0.1:{}/n') ON (WINDOW_CLOSE)
           INTO out AS SELECT _twstart AS ts, count(*) AS n FROM %%trows;
         INSERT INTO t VALUES ('2025-01-01 00:00:00', 1);",
        recv.port
    ))
    .await
    .unwrap();
    rows(&c2, "ADMIN FLUSH_STREAM('s')").await;
    assert_eq!(
        rows(&c2, "SELECT notify_sent, notify_dropped FROM information_schema.ins_streams WHERE stream_name = 's'").await,
        vec![vec![Some("0".to_string()), Some("1".to_string())]]
    );
    assert_eq!(events(&recv).len(), 2);
}

/// NOTIFY … WHERE over result columns: only rows it holds for are events;
/// a session undone by a late row (merged into the one before) is announced
/// as WINDOW_INVALIDATION.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_where_and_window_invalidation() {
    if common::external_url().is_some() {
        return;
    }
    let recv = ws_receiver();
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::spawn(dir.path()).unwrap();
    let c = s.connect(None).await.unwrap();
    c.batch_execute(&format!(
        "CREATE TABLE t (ts TIMESTAMP TIME INDEX, v INT);
         CREATE SNODE ON DNODE 1;
         CREATE STREAM s SESSION(ts, 10s) FROM t
           NOTIFY('ws://127.0.0.1:{}/n') ON (WINDOW_CLOSE) WHERE total > 5
           INTO out AS SELECT _twstart AS ts, count(*) AS n, sum(v) AS total FROM %%trows;
         INSERT INTO t VALUES ('2025-01-01 00:00:00', 1), ('2025-01-01 00:00:05', 2),
           ('2025-01-01 00:00:20', 4), ('2025-01-01 00:00:21', 4), ('2025-01-01 00:01:00', 1);",
        recv.port
    ))
    .await
    .unwrap();
    rows(&c, "ADMIN FLUSH_STREAM('s')").await;
    // Sessions [0, 5] (total 3) and [20, 21] (total 8) closed: only the second passes WHERE.
    let ev = events(&recv);
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0]["eventType"], "WINDOW_CLOSE");
    assert_eq!(ev[0]["result"]["total"], 8);
    assert_eq!(ev[0]["windowStart"], 1735689620000i64);
    // A late row at 12 s joins both: [20, 21] is undone, [0, 21] (total 21) closes.
    c.batch_execute("INSERT INTO t VALUES ('2025-01-01 00:00:12', 10)").await.unwrap();
    rows(&c, "ADMIN FLUSH_STREAM('s')").await;
    let ev = events(&recv).split_off(1);
    let inv: Vec<_> = ev.iter().filter(|e| e["eventType"] == "WINDOW_INVALIDATION").collect();
    assert_eq!(inv.len(), 1, "{ev:?}");
    assert_eq!(inv[0]["windowStart"], 1735689620000i64);
    assert_eq!(inv[0]["windowEnd"], 1735689621000i64);
    assert!(inv[0].get("result").is_none_or(|r| r.is_null()), "{ev:?}");
    let close: Vec<_> = ev.iter().filter(|e| e["eventType"] == "WINDOW_CLOSE").collect();
    assert_eq!(close.len(), 1, "{ev:?}");
    assert_eq!(close[0]["result"]["total"], 21);
    assert_eq!(close[0]["windowStart"], 1735689600000i64);
    assert_eq!(
        rows(&c, "SELECT ts::text, total::text FROM out ORDER BY ts").await,
        vec![vec![Some("2025-01-01 00:00:00".to_string()), Some("21".to_string())]]
    );
    // WHERE must bind over the result columns.
    let e = c
        .simple_query(&format!(
            "CREATE STREAM bad SESSION(ts, 10s) FROM t NOTIFY('ws://127.0.0.1:{}/n') ON (WINDOW_CLOSE) WHERE nosuch > 1
               INTO bad_out AS SELECT _twstart AS ts, count(*) AS n FROM %%trows",
            recv.port
        ))
        .await
        .unwrap_err();
    assert_eq!(common::format_error(&e).1.as_deref(), Some("42703"), "{e:?}");
}

/// Windows of one group's rows (second → v) as the model computes them:
/// the closed ones, as (start second, row count, sum of v).
fn model_windows(kind: &str, rows: &std::collections::BTreeMap<i64, i64>) -> Vec<(i64, i64, i64)> {
    let r: Vec<(i64, i64)> = rows.iter().map(|(t, v)| (*t, *v)).collect();
    let Some(&(max, _)) = r.last() else { return vec![] };
    let sum = |w: &[(i64, i64)]| (w[0].0, w.len() as i64, w.iter().map(|x| x.1).sum::<i64>());
    let mut out = Vec::new();
    match kind {
        // SESSION(ts, 5s): closed once the newest row is more than 5 s after its last.
        "session" => {
            let mut lo = 0;
            while lo < r.len() {
                let mut hi = lo + 1;
                while hi < r.len() && r[hi].0 - r[hi - 1].0 <= 5 {
                    hi += 1;
                }
                if max - r[hi - 1].0 > 5 {
                    out.push(sum(&r[lo..hi]));
                }
                lo = hi;
            }
        }
        // STATE_WINDOW(v): every run of equal values but the last.
        "state" => {
            let mut lo = 0;
            for i in 1..=r.len() {
                if i == r.len() || r[i].1 != r[lo].1 {
                    if i < r.len() {
                        out.push(sum(&r[lo..i]));
                    }
                    lo = i;
                }
            }
        }
        // EVENT_WINDOW(START WITH v >= 2 END WITH v = 0).
        _ => {
            let mut at = None;
            for i in 0..r.len() {
                if at.is_none() && r[i].1 >= 2 {
                    at = Some(i);
                }
                if let Some(f) = at {
                    if r[i].1 == 0 {
                        out.push(sum(&r[f..=i]));
                        at = None;
                    }
                }
            }
        }
    }
    out
}

/// The flow property test with TDengine streams: session, state, event and
/// INTERVAL windows over random in-order rows, late rows, updates and
/// deletes (with DELETE_RECALC), clean restarts and kill -9; after each
/// catch-up every stream's output equals its windows recomputed from the
/// source rows (windows merged or split by late rows and deletes leave no
/// old rows; an INTERVAL window once closed stays, its rows recounted).
/// COUNT_WINDOW and plain SLIDING (which TDengine recalculates for
/// nothing: late rows, updates and deletes are ignored) get their own
/// table of in-order rows,
/// through the same restarts; PERIOD (wall clock) must show the source's
/// current totals at its next tick.
#[tokio::test(flavor = "multi_thread")]
async fn stream_outputs_equal_their_windows_recomputed_after_random_changes_and_kill9() {
    if common::external_url().is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut server = TestServer::spawn(dir.path()).unwrap();
    let mut c = server.connect(None).await.unwrap();
    let kinds = [
        ("session", "SESSION(ts, 5s)"),
        ("state", "STATE_WINDOW(v)"),
        ("event", "EVENT_WINDOW(START WITH v >= 2 END WITH v = 0)"),
        ("interval", "INTERVAL(10s) SLIDING(10s)"),
    ];
    c.batch_execute(
        "CREATE STABLE pm (ts TIMESTAMP, v INT) TAGS (g INT); CREATE TABLE p0 USING pm TAGS (0); CREATE TABLE p1 USING pm TAGS (1);
         CREATE STABLE qm (ts TIMESTAMP, v INT) TAGS (g INT); CREATE TABLE q0 USING qm TAGS (0); CREATE TABLE q1 USING qm TAGS (1);
         CREATE SNODE ON DNODE 1;",
    )
    .await
    .unwrap();
    for (k, trig) in kinds {
        c.batch_execute(&format!(
            "CREATE STREAM s_{k} {trig} FROM pm PARTITION BY tbname STREAM_OPTIONS(DELETE_RECALC) INTO r_{k} \
             AS SELECT _twstart AS ts, count(*) AS c, coalesce(sum(v), 0) AS s FROM %%trows"
        ))
        .await
        .unwrap();
    }
    c.batch_execute(
        "CREATE STREAM s_count COUNT_WINDOW(3) FROM qm PARTITION BY tbname INTO r_count \
           AS SELECT _twstart AS ts, count(*) AS c, sum(v) AS s FROM %%trows;
         CREATE STREAM s_slide SLIDING(10s) FROM qm PARTITION BY tbname INTO r_slide \
           AS SELECT _tcurrent_ts AS ts, count(*) AS c, coalesce(sum(v), 0) AS s FROM %%trows;
         CREATE STREAM s_period PERIOD(10a) INTO r_period AS SELECT now() AS ts, count(*) AS c, coalesce(sum(v), 0) AS s FROM pm;",
    )
    .await
    .unwrap();
    // INTERVAL windows closed so far, per group (a closed window stays).
    let mut closed: Vec<std::collections::BTreeSet<i64>> = vec![Default::default(), Default::default()];
    // COUNT_WINDOW's groups: rows in order only.
    let mut counted: Vec<Vec<(i64, i64)>> = vec![vec![], vec![]];
    let mut seed: u64 = std::env::var("WEIR_TD_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x9e37_79b9_7f4a_7c15);
    let seed0 = seed;
    let mut rnd = move |n: i64| -> i64 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as i64
    };
    let mut model: Vec<std::collections::BTreeMap<i64, i64>> = vec![Default::default(), Default::default()];
    let ts = |sec: i64| format!("2025-03-01 {:02}:{:02}:{:02}", sec / 3600, sec / 60 % 60, sec % 60);
    for step in 0..60 {
        let g = rnd(2) as usize;
        let data = &mut model[g];
        let max = data.keys().next_back().copied().unwrap_or(0);
        let op = if data.len() < 4 { 0 } else { rnd(10) };
        let sql = match op {
            // In order: a few rows after the newest.
            0..=4 => {
                let mut t = max;
                let mut vals = Vec::new();
                for _ in 0..1 + rnd(4) {
                    t += 1 + rnd(8);
                    let v = rnd(4);
                    data.insert(t, v);
                    vals.push(format!("('{}', {v})", ts(t)));
                }
                format!("INSERT INTO p{g} VALUES {}", vals.join(", "))
            }
            // A late row (new or overwriting: an update).
            5 | 6 => {
                let t = rnd(max.max(1));
                let v = rnd(4);
                data.insert(t, v);
                format!("INSERT INTO p{g} VALUES ('{}', {v})", ts(t))
            }
            // An update of an existing row.
            7 => {
                let keys: Vec<i64> = data.keys().copied().collect();
                let t = keys[rnd(keys.len() as i64) as usize];
                let v = rnd(4);
                data.insert(t, v);
                format!("INSERT INTO p{g} VALUES ('{}', {v})", ts(t))
            }
            // A delete.
            _ => {
                let keys: Vec<i64> = data.keys().copied().collect();
                let t = keys[rnd(keys.len() as i64) as usize];
                data.remove(&t);
                format!("DELETE FROM pm WHERE tbname = 'p{g}' AND ts = '{}'", ts(t))
            }
        };
        c.batch_execute(&sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        if std::env::var("WEIR_TD_TRACE").is_ok() {
            eprintln!("STEP {step}: {sql}");
        }
        // INTERVAL(10s): every window from the first row's on that event
        // time has passed is closed (and stays closed).
        if let (Some(&lo), Some(&hi)) = (data.keys().next(), data.keys().next_back()) {
            let mut w = lo.div_euclid(10) * 10;
            while w + 10 <= hi {
                closed[g].insert(w);
                w += 10;
            }
        }
        // COUNT_WINDOW's table: a few rows after the newest, every step.
        let q = rnd(2) as usize;
        let mut t = counted[q].last().map(|r| r.0).unwrap_or(0);
        let mut vals = Vec::new();
        for _ in 0..1 + rnd(3) {
            t += 1 + rnd(5);
            let v = rnd(10);
            counted[q].push((t, v));
            vals.push(format!("('{}', {v})", ts(t)));
        }
        c.batch_execute(&format!("INSERT INTO q{q} VALUES {}", vals.join(", "))).await.unwrap();
        if step % 15 == 7 {
            drop(c);
            if step % 30 == 7 {
                server.kill9();
            } else {
                server.stop(Duration::from_secs(10));
            }
            server = TestServer::spawn(dir.path()).unwrap();
            c = server.connect(None).await.unwrap();
        }
        for (k, _) in kinds {
            rows(&c, &format!("ADMIN FLUSH_STREAM('s_{k}')")).await;
            let mut want = Vec::new();
            for (gi, m) in model.iter().enumerate() {
                if k == "interval" {
                    for &s in &closed[gi] {
                        let r: Vec<i64> = m.range(s..s + 10).map(|(_, v)| *v).collect();
                        want.push(vec![
                            Some(format!("p{gi}")),
                            Some(ts(s)),
                            Some(r.len().to_string()),
                            Some(r.iter().sum::<i64>().to_string()),
                        ]);
                    }
                    continue;
                }
                for (s, n, sum) in model_windows(k, m) {
                    want.push(vec![Some(format!("p{gi}")), Some(ts(s)), Some(n.to_string()), Some(sum.to_string())]);
                }
            }
            let got = rows(&c, &format!("SELECT tag_tbname, ts, c, s FROM r_{k} ORDER BY tag_tbname, ts")).await;
            assert_eq!(got, want, "stream s_{k} after step {step} ({sql}), seed {seed0}, rows {model:?}");
        }
        rows(&c, "ADMIN FLUSH_STREAM('s_count')").await;
        let mut want = Vec::new();
        for (qi, r) in counted.iter().enumerate() {
            for w in r.chunks_exact(3) {
                want.push(vec![
                    Some(format!("q{qi}")),
                    Some(ts(w[0].0)),
                    Some("3".into()),
                    Some(w.iter().map(|x| x.1).sum::<i64>().to_string()),
                ]);
            }
        }
        let got = rows(&c, "SELECT tag_tbname, ts, c, s FROM r_count ORDER BY tag_tbname, ts").await;
        assert_eq!(got, want, "stream s_count after step {step}, seed {seed0}, rows {counted:?}");
        // SLIDING(10s) over the same in-order rows: every tick T after the
        // first row's, up to the newest row, with the rows of [T - 10 s, T).
        rows(&c, "ADMIN FLUSH_STREAM('s_slide')").await;
        let mut want = Vec::new();
        for (qi, r) in counted.iter().enumerate() {
            let (Some(first), Some(last)) = (r.first(), r.last()) else { continue };
            let mut tick = first.0.div_euclid(10) * 10 + 10;
            while tick <= last.0 {
                let w: Vec<i64> = r.iter().filter(|x| x.0 >= tick - 10 && x.0 < tick).map(|x| x.1).collect();
                want.push(vec![Some(format!("q{qi}")), Some(ts(tick)), Some(w.len().to_string()), Some(w.iter().sum::<i64>().to_string())]);
                tick += 10;
            }
        }
        let got = rows(&c, "SELECT tag_tbname, ts, c, s FROM r_slide ORDER BY tag_tbname, ts").await;
        assert_eq!(got, want, "stream s_slide after step {step}, seed {seed0}, rows {counted:?}");
        // PERIOD(10a): a tick after the write shows the current totals (each
        // ADMIN call runs the tick due, if a new one is).
        let n: usize = model.iter().map(|m| m.len()).sum();
        let sum: i64 = model.iter().flat_map(|m| m.values()).sum();
        let want = vec![vec![Some(n.to_string()), Some(sum.to_string())]];
        let mut got = vec![];
        for _ in 0..200 {
            rows(&c, "ADMIN FLUSH_STREAM('s_period')").await;
            got = rows(&c, "SELECT c, s FROM r_period ORDER BY ts DESC LIMIT 1").await;
            if got == want {
                break;
            }
        }
        assert_eq!(got, want, "stream s_period after step {step}, seed {seed0}");
    }
}
