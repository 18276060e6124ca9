//! LISTEN / NOTIFY through the front door with tokio-postgres: a listener
//! receives NotificationResponse messages asynchronously while idle (it
//! sends nothing), with the sender's pid, in order, after the sender's
//! commit only, once per identical channel and payload of a transaction;
//! a listener inside a block gets them after its block ends. Runs against
//! PostgreSQL too (`WEIR_TEST_URL`), which is how these expectations were
//! checked. Then TDengine stream events on a `pg://channel` NOTIFY target.

mod common;

use std::time::Duration;

use common::TestServer;
use futures::StreamExt;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio_postgres::{AsyncMessage, Client, NoTls, Notification};

/// A client whose notifications arrive on a channel.
async fn listener(s: &TestServer) -> (Client, UnboundedReceiver<Notification>) {
    let (client, mut conn) = s.config(None).connect(NoTls).await.unwrap();
    let (tx, rx) = unbounded_channel();
    tokio::spawn(async move {
        let mut msgs = futures::stream::poll_fn(move |cx| conn.poll_message(cx));
        while let Some(m) = msgs.next().await {
            match m {
                Ok(AsyncMessage::Notification(n)) => {
                    let _ = tx.send(n);
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    });
    (client, rx)
}

async fn pid(c: &Client) -> i32 {
    c.query_one("SELECT pg_backend_pid()", &[]).await.unwrap().get(0)
}

/// The next notification within 10 s: (channel, payload, pid).
async fn next(rx: &mut UnboundedReceiver<Notification>) -> (String, String, i32) {
    let n = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.expect("a notification within 10 s").expect("connection open");
    (n.channel().to_string(), n.payload().to_string(), n.process_id())
}

/// Nothing arrives for a while.
async fn none(rx: &mut UnboundedReceiver<Notification>) {
    if let Ok(Some(n)) = tokio::time::timeout(Duration::from_millis(400), rx.recv()).await {
        panic!("unexpected notification {:?} {:?}", n.channel(), n.payload());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn listeners_get_committed_notifications_while_idle() {
    let s = TestServer::start().unwrap();
    let (a, mut rx) = listener(&s).await;
    let (b, _brx) = listener(&s).await;
    let (apid, bpid) = (pid(&a).await, pid(&b).await);
    // Unquoted names fold to lower case, as identifiers do.
    a.batch_execute("LISTEN Ch1; LISTEN \"Ch2\"").await.unwrap();

    // Delivered to an idle listener that sends nothing, with the sender's pid.
    b.batch_execute("NOTIFY ch1, 'p1'").await.unwrap();
    assert_eq!(next(&mut rx).await, ("ch1".into(), "p1".into(), bpid));
    b.batch_execute("NOTIFY \"Ch2\"; NOTIFY ch2, 'other channel'").await.unwrap();
    assert_eq!(next(&mut rx).await, ("Ch2".into(), "".into(), bpid));
    b.query("SELECT pg_notify('ch1', 'via ' || x) FROM (VALUES ('a'), ('b')) v(x)", &[]).await.unwrap();
    assert_eq!(next(&mut rx).await.1, "via a");
    assert_eq!(next(&mut rx).await.1, "via b");
    none(&mut rx).await;

    // A block: nothing before COMMIT; identical notifications once, in order.
    b.batch_execute("BEGIN; NOTIFY ch1, 'x'; NOTIFY ch1, 'y'; NOTIFY ch1, 'x'; SELECT pg_notify('ch1', 'y'); NOTIFY ch1, 'z'")
        .await
        .unwrap();
    none(&mut rx).await;
    b.batch_execute("COMMIT").await.unwrap();
    for want in ["x", "y", "z"] {
        assert_eq!(next(&mut rx).await, ("ch1".into(), want.into(), bpid));
    }
    // ROLLBACK drops them; so does ROLLBACK TO SAVEPOINT for the ones after it.
    b.batch_execute("BEGIN; NOTIFY ch1, 'gone'; ROLLBACK").await.unwrap();
    b.batch_execute("BEGIN; NOTIFY ch1, 'kept'; SAVEPOINT s; NOTIFY ch1, 'undone'; ROLLBACK TO SAVEPOINT s; COMMIT").await.unwrap();
    assert_eq!(next(&mut rx).await.1, "kept");
    none(&mut rx).await;
    // A failed statement outside a block sends nothing it queued.
    assert!(b.batch_execute("SELECT pg_notify('ch1', 'failed'), 1 / 0").await.is_err());
    none(&mut rx).await;

    // A listener inside a block gets them when its block ends.
    a.batch_execute("BEGIN").await.unwrap();
    b.batch_execute("NOTIFY ch1, 'while a was busy'").await.unwrap();
    none(&mut rx).await;
    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(next(&mut rx).await.1, "while a was busy");

    // Its own notifications, with its own pid.
    a.batch_execute("NOTIFY ch1, 'self'").await.unwrap();
    assert_eq!(next(&mut rx).await, ("ch1".into(), "self".into(), apid));

    // LISTEN in a rolled-back block never takes effect; UNLISTEN does.
    a.batch_execute("BEGIN; LISTEN ch3; ROLLBACK; UNLISTEN ch1").await.unwrap();
    b.batch_execute("NOTIFY ch3, 'no'; NOTIFY ch1, 'no'; NOTIFY \"Ch2\", 'yes'").await.unwrap();
    assert_eq!(next(&mut rx).await, ("Ch2".into(), "yes".into(), bpid));
    a.batch_execute("UNLISTEN *").await.unwrap();
    b.batch_execute("NOTIFY \"Ch2\", 'no'").await.unwrap();
    none(&mut rx).await;

    // The longest payload PostgreSQL allows goes through whole.
    a.batch_execute("LISTEN big").await.unwrap();
    b.query("SELECT pg_notify('big', repeat('x', 7999))", &[]).await.unwrap();
    assert_eq!(next(&mut rx).await.1.len(), 7999);
    // Many notifications queue for a listener and arrive in order.
    b.batch_execute("BEGIN").await.unwrap();
    for i in 0..500 {
        b.batch_execute(&format!("NOTIFY big, '{i}'")).await.unwrap();
    }
    b.batch_execute("COMMIT").await.unwrap();
    for i in 0..500 {
        assert_eq!(next(&mut rx).await.1, i.to_string());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_window_events_arrive_on_a_postgres_channel() {
    if common::external_url().is_some() {
        return; // TDengine's statements are weir's.
    }
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::spawn(dir.path()).unwrap();
    let (c, mut rx) = listener(&s).await;
    c.batch_execute(
        "CREATE TABLE t (ts TIMESTAMP TIME INDEX, v INT);
         CREATE SNODE ON DNODE 1;
         CREATE STREAM s INTERVAL(10s) SLIDING(10s) FROM t
           NOTIFY('pg://td_events') ON (WINDOW_OPEN|WINDOW_CLOSE)
           INTO out AS SELECT _twstart AS ts, count(*) AS n, sum(v) AS total FROM %%trows;
         LISTEN td_events;
         INSERT INTO t VALUES ('2025-01-01 00:00:01', 1), ('2025-01-01 00:00:05', 2), ('2025-01-01 00:00:12', 4);",
    )
    .await
    .unwrap();
    c.batch_execute("ADMIN FLUSH_STREAM('s')").await.unwrap();
    let mut events = Vec::new();
    while events.len() < 3 {
        let (channel, payload, pid) = next(&mut rx).await;
        assert_eq!((channel.as_str(), pid), ("td_events", 0));
        let m: serde_json::Value = serde_json::from_str(&payload).unwrap();
        assert_eq!(m["streams"][0]["streamName"], "public.s", "{m}");
        assert!(m["messageId"].is_string(), "{m}");
        events.extend(m["streams"][0]["events"].as_array().unwrap().iter().cloned());
    }
    let kinds: Vec<(&str, i64)> =
        events.iter().map(|e| (e["eventType"].as_str().unwrap(), e["windowStart"].as_i64().unwrap() - 1735689600000)).collect();
    // [0, 10 s) opens and closes (its result with it); [10 s, 20 s) opens.
    assert!(
        kinds.contains(&("WINDOW_OPEN", 0)) && kinds.contains(&("WINDOW_CLOSE", 0)) && kinds.contains(&("WINDOW_OPEN", 10_000)),
        "{events:?}"
    );
    let close = events.iter().find(|e| e["eventType"] == "WINDOW_CLOSE").unwrap();
    assert_eq!(close["result"]["total"], 3, "{close}");
    assert_eq!(close["triggerType"], "Interval");
    // The stream counts them as sent.
    let sent: i64 =
        c.query_one("SELECT notify_sent FROM information_schema.ins_streams WHERE stream_name = 's'", &[]).await.unwrap().get(0);
    assert_eq!(sent, 3);
    // A channel name PostgreSQL would refuse is refused at CREATE STREAM.
    let e = c
        .simple_query(
            "CREATE STREAM bad INTERVAL(10s) SLIDING(10s) FROM t NOTIFY('pg://') INTO o2 AS SELECT _twstart AS ts, count(*) FROM %%trows",
        )
        .await
        .unwrap_err();
    assert_eq!(common::format_error(&e).1.as_deref(), Some("22023"), "{e:?}");
}
