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
