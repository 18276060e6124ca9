//! CancelRequest stops a running statement with 57014 and the connection
//! keeps working; statement_timeout does the same on its own.

mod common;

use std::time::{Duration, Instant};

use common::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_request_and_statement_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::spawn(dir.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    let token = c.cancel_token();
    let watcher = server.connect(None).await.unwrap();
    let started = Instant::now();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        // The running statement is visible in pg_stat_activity first.
        let rows = watcher
            .query("SELECT query, state FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%generate_series%' AND pid <> pg_backend_pid()", &[])
            .await
            .unwrap();
        assert_eq!(rows.len(), 1, "the long statement shows as active");
        token.cancel_query(tokio_postgres::NoTls).await.unwrap();
    });
    let e = c.simple_query("SELECT count(*) FROM generate_series(1, 2000000000) s").await.unwrap_err();
    canceller.await.unwrap();
    assert_eq!(common::format_error(&e).1.as_deref(), Some("57014"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(20), "cancel took {:?}", started.elapsed());
    // The next statement is not cancelled by the old request.
    let r = c.query_one("SELECT 41 + 1", &[]).await.unwrap();
    assert_eq!(r.get::<_, i32>(0), 42);

    c.batch_execute("SET statement_timeout = '200ms'").await.unwrap();
    let e = c.simple_query("SELECT count(*) FROM generate_series(1, 2000000000) s").await.unwrap_err();
    assert_eq!(common::format_error(&e).1.as_deref(), Some("57014"), "{e}");
    c.batch_execute("RESET statement_timeout").await.unwrap();
    assert_eq!(c.query_one("SELECT 1", &[]).await.unwrap().get::<_, i32>(0), 1);
}
