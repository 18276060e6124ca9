//! Crash tests of transaction commit: `kill -9` during COMMIT of blocks
//! that write several regions of several tables, then a restart on the same
//! data directory; every block must be there whole or not at all.
//!
//! The server's test hook `WEIR_TEST_COMMIT_PAUSE=<step>:<ms>` holds a
//! multi-region commit at one step so the kill lands exactly there:
//! `prepared` (every region's records durable, no commit record) and
//! `logged` (commit record durable, nothing published yet). A third test
//! kills at a random moment under concurrent committing clients.
//! Weir only (needs restarts): skipped with `WEIR_TEST_URL`.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::TestServer;
use tokio_postgres::{Client, SimpleQueryMessage};

const DB: &str = "txn_crash";

async fn rows(c: &Client, sql: &str) -> Vec<Vec<String>> {
    let msgs = c.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    msgs.into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some((0..r.len()).map(|i| r.get(i).unwrap_or("NULL").to_string()).collect()),
            _ => None,
        })
        .collect()
}

async fn setup(s: &TestServer) -> Client {
    let admin = s.connect(None).await.expect("connect");
    admin.batch_execute(&format!("CREATE DATABASE {DB}")).await.unwrap();
    let c = s.connect(Some(DB)).await.unwrap();
    c.batch_execute(
        "CREATE TABLE a (host TEXT, ts TIMESTAMP TIME INDEX, txn BIGINT, PRIMARY KEY (host)) WITH (regions = 4);
         CREATE TABLE b (k TEXT, ts TIMESTAMP TIME INDEX, txn BIGINT, PRIMARY KEY (k)) WITH (regions = 3);
         INSERT INTO a VALUES ('base', '2024-01-01 00:00:00', 0);
         INSERT INTO b VALUES ('base', '2024-01-01 00:00:00', 0)",
    )
    .await
    .unwrap();
    c
}

/// One block's statements: `A_ROWS` rows of `a` on distinct hosts (so every
/// region gets some) and `B_ROWS` rows of `b`, tagged with `txn`.
const A_ROWS: usize = 12;
const B_ROWS: usize = 6;

fn block_sql(txn: u64) -> String {
    let a: Vec<String> = (0..A_ROWS).map(|i| format!("('h{txn}_{i}', '2024-01-01 00:00:{:02}', {txn})", i % 60)).collect();
    let b: Vec<String> = (0..B_ROWS).map(|i| format!("('k{txn}_{i}', '2024-01-01 00:00:00', {txn})")).collect();
    format!("INSERT INTO a VALUES {}; INSERT INTO b VALUES {}", a.join(", "), b.join(", "))
}

/// Per transaction tag: (rows in a, rows in b).
async fn counts(c: &Client) -> HashMap<u64, (usize, usize)> {
    let mut out: HashMap<u64, (usize, usize)> = HashMap::new();
    for r in rows(c, "SELECT txn, count(*) FROM a GROUP BY txn").await {
        out.entry(r[0].parse().unwrap()).or_default().0 = r[1].parse().unwrap();
    }
    for r in rows(c, "SELECT txn, count(*) FROM b GROUP BY txn").await {
        out.entry(r[0].parse().unwrap()).or_default().1 = r[1].parse().unwrap();
    }
    out
}

/// Start a block, write it, send COMMIT in the background; kill the server
/// while the commit is held at `step`; restart and return the counts.
async fn kill_at(step: &str, dir: &Path) -> HashMap<u64, (usize, usize)> {
    let pause = format!("{step}:60000");
    let mut s = TestServer::spawn_env(dir, &[("WEIR_TEST_COMMIT_PAUSE", &pause)]).unwrap();
    let _setup = setup(&s).await;
    let c = s.connect(Some(DB)).await.unwrap();
    c.batch_execute("BEGIN").await.unwrap();
    c.batch_execute(&block_sql(7)).await.unwrap();
    let commit = tokio::spawn(async move { c.batch_execute("COMMIT").await.is_ok() });
    // The commit sleeps at the step for a minute; a second is plenty to get there.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!commit.is_finished(), "COMMIT returned before the kill: the pause hook did not hold it");
    s.kill9();
    assert!(!commit.await.unwrap(), "COMMIT must not be acknowledged by a killed server");
    let s = TestServer::spawn(dir).expect("restart after kill -9");
    let c = s.connect(Some(DB)).await.unwrap_or_else(|e| panic!("connect after restart: {e}\n{}", s.log_tail()));
    counts(&c).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_before_commit_record_keeps_nothing() {
    if common::external_url().is_some() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let got = kill_at("prepared", data.path()).await;
    assert_eq!(got.get(&0), Some(&(1, 1)), "the autocommitted rows survive: {got:?}");
    assert_eq!(got.get(&7), None, "no row of the uncommitted block may survive: {got:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_after_commit_record_keeps_everything() {
    if common::external_url().is_some() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let got = kill_at("logged", data.path()).await;
    assert_eq!(got.get(&0), Some(&(1, 1)), "{got:?}");
    assert_eq!(got.get(&7), Some(&(A_ROWS, B_ROWS)), "a block with a durable commit record is there whole: {got:?}");
}

/// Clients commit multi-region blocks in a loop; the server is killed at a
/// random moment; after the restart each block is whole or absent, and every
/// acknowledged one is whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_during_concurrent_commits_is_all_or_nothing() {
    if common::external_url().is_some() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let mut s = TestServer::spawn(data.path()).unwrap();
    let _setup = setup(&s).await;
    let acked: Arc<Mutex<Vec<u64>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for client in 0..4u64 {
        let c = s.connect(Some(DB)).await.unwrap();
        let (acked, stop) = (acked.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let txn = 1000 * (client + 1) + n;
                let sql = format!("BEGIN; {}; COMMIT", block_sql(txn));
                match c.batch_execute(&sql).await {
                    Ok(()) => acked.lock().unwrap().push(txn),
                    Err(_) => return,
                }
            }
        }));
    }
    let ms = 400 + (std::process::id() as u64 * 7919) % 1200;
    tokio::time::sleep(Duration::from_millis(ms)).await;
    s.kill9();
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let acked = acked.lock().unwrap().clone();
    assert!(!acked.is_empty(), "no block committed before the kill");
    let s = TestServer::spawn(data.path()).expect("restart after kill -9");
    let c = s.connect(Some(DB)).await.unwrap_or_else(|e| panic!("connect after restart: {e}\n{}", s.log_tail()));
    let got = counts(&c).await;
    for (txn, n) in &got {
        if *txn == 0 {
            assert_eq!(*n, (1, 1));
            continue;
        }
        assert_eq!(*n, (A_ROWS, B_ROWS), "block {txn} is partly there after the crash: {n:?}");
    }
    for txn in &acked {
        assert!(got.contains_key(txn), "acknowledged block {txn} is missing after the crash");
    }
    eprintln!("{} blocks acknowledged, {} present after restart", acked.len(), got.len() - 1);
}
