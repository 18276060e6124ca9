//! Transaction behaviour that needs more than one statement stream or the
//! server's life cycle: `pg_stat_activity` states, a dropped connection
//! discarding its block, `idle_in_transaction_session_timeout` (FATAL
//! 25P03), and the buffer limit (53400). Weir only: skipped with
//! `WEIR_TEST_URL` where a part is weir's (the config file).

mod common;

use std::time::{Duration, Instant};

use common::TestServer;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

async fn one(c: &Client, sql: &str) -> Option<String> {
    let msgs = c.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    msgs.into_iter().find_map(|m| match m {
        SimpleQueryMessage::Row(r) => Some(r.get(0).map(str::to_string).unwrap_or_else(|| "NULL".into())),
        _ => None,
    })
}

async fn state_of(watcher: &Client, pid: &str) -> Option<String> {
    one(watcher, &format!("SELECT state FROM pg_stat_activity WHERE pid = {pid}")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activity_states_and_dropped_connections() {
    let s = TestServer::start().unwrap();
    let admin = s.connect(None).await.unwrap();
    admin.batch_execute("DROP TABLE IF EXISTS txn_act; CREATE TABLE txn_act (a INTEGER)").await.unwrap();
    let c = s.connect(None).await.unwrap();
    let pid = one(&c, "SELECT pg_backend_pid()").await.unwrap();
    assert_eq!(state_of(&admin, &pid).await.as_deref(), Some("idle"));
    c.batch_execute("BEGIN; INSERT INTO txn_act VALUES (1)").await.unwrap();
    assert_eq!(state_of(&admin, &pid).await.as_deref(), Some("idle in transaction"));
    assert!(c.batch_execute("SELECT 1 / 0").await.is_err());
    assert_eq!(state_of(&admin, &pid).await.as_deref(), Some("idle in transaction (aborted)"));
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(state_of(&admin, &pid).await.as_deref(), Some("idle"));

    // A connection that goes away in the middle of a block leaves nothing.
    c.batch_execute("BEGIN; INSERT INTO txn_act VALUES (2)").await.unwrap();
    drop(c);
    let deadline = Instant::now() + Duration::from_secs(10);
    while state_of(&admin, &pid).await.is_some() {
        assert!(Instant::now() < deadline, "session {pid} still listed after its connection closed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(one(&admin, "SELECT count(*) FROM txn_act").await.as_deref(), Some("0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_in_transaction_timeout_ends_the_session() {
    let s = TestServer::start().unwrap();
    let admin = s.connect(None).await.unwrap();
    admin.batch_execute("DROP TABLE IF EXISTS txn_idle; CREATE TABLE txn_idle (a INTEGER)").await.unwrap();
    let (c, conn) = s.config(None).connect(NoTls).await.unwrap();
    let conn = tokio::spawn(conn);
    c.batch_execute("SET idle_in_transaction_session_timeout = 300").await.unwrap();
    // Idle outside a block: nothing happens.
    tokio::time::sleep(Duration::from_millis(600)).await;
    c.batch_execute("BEGIN; INSERT INTO txn_idle VALUES (1)").await.unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let ended = tokio::time::timeout(Duration::from_secs(10), conn).await.expect("the connection did not end").unwrap();
    let e = ended.expect_err("the server ends the connection with an error");
    let code = e.as_db_error().map(|d| (d.code().code().to_string(), d.severity().to_string(), d.message().to_string()));
    assert_eq!(code, Some(("25P03".into(), "FATAL".into(), "terminating connection due to idle-in-transaction timeout".into())), "{e}");
    assert!(c.batch_execute("SELECT 1").await.is_err());
    // The block was discarded.
    assert_eq!(one(&admin, "SELECT count(*) FROM txn_idle").await.as_deref(), Some("0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffer_limit_fails_the_statement_with_53400() {
    if common::external_url().is_some() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let conf = data.path().join("weir.toml");
    std::fs::write(&conf, "[storage]\ntxn_buffer_bytes_max = 65536\n").unwrap();
    let s = TestServer::spawn_with(&data.path().join("data"), &[], &["--config", conf.to_str().unwrap()]).unwrap();
    let c = s.connect(None).await.unwrap();
    c.batch_execute("CREATE TABLE txn_big (a INTEGER, b TEXT)").await.unwrap();
    c.batch_execute("BEGIN; INSERT INTO txn_big VALUES (1, 'small')").await.unwrap();
    let err = c
        .batch_execute("INSERT INTO txn_big SELECT g, repeat('x', 100) FROM generate_series(1, 5000) AS g")
        .await
        .expect_err("a block past txn_buffer_bytes_max must fail");
    assert_eq!(err.code().map(|c| c.code()), Some("53400"), "{err:?}");
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(one(&c, "SELECT count(*) FROM txn_big").await.as_deref(), Some("0"));
    // The same rows outside a block are not limited by it.
    c.batch_execute("INSERT INTO txn_big SELECT g, repeat('x', 100) FROM generate_series(1, 5000) AS g").await.unwrap();
    assert_eq!(one(&c, "SELECT count(*) FROM txn_big").await.as_deref(), Some("5000"));
}
