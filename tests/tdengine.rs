//! TDengine streams outside ADMIN FLUSH_STREAM: the background runner
//! computes windows after writes by itself, and a stream's definition and
//! progress survive a restart (windows computed before it are not computed
//! again; windows closed after it are). Polls with a deadline: it tests the
//! runner's own scheduling, which the slt files bypass.

mod common;

use std::time::{Duration, Instant};

use common::TestServer;
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

/// The SQLSTATE and message of a failing statement.
async fn fails(c: &Client, sql: &str) -> (String, String) {
    match c.simple_query(sql).await {
        Ok(_) => panic!("{sql} succeeded"),
        Err(e) => {
            let d = e.as_db_error().unwrap_or_else(|| panic!("{sql}: {e}"));
            (d.code().code().to_string(), d.message().to_string())
        }
    }
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
