//! Seed 001 over SQL: incremental reads past a per-region sequence, fences
//! and their errors, and watermarks after successful queries only.

mod common;

use common::TestServer;
use tokio_postgres::{Client, SimpleQueryMessage};

async fn rows(c: &Client, sql: &str) -> Vec<Vec<String>> {
    c.simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some((0..r.len()).map(|i| r.get(i).unwrap_or("NULL").to_string()).collect()),
            _ => None,
        })
        .collect()
}

async fn state(c: &Client, sql: &str) -> String {
    match c.simple_query(sql).await {
        Ok(_) => "ok".into(),
        Err(e) => common::format_error(&e).1.unwrap_or_default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incremental_reads_fences_and_watermarks() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::spawn(dir.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    c.batch_execute("CREATE TABLE src (host TEXT, ts TIMESTAMP TIME INDEX, v BIGINT, PRIMARY KEY (host))").await.unwrap();
    c.batch_execute("INSERT INTO src VALUES ('a', '2024-01-01 00:00:00', 1)").await.unwrap();
    c.batch_execute("INSERT INTO src VALUES ('b', '2024-01-01 00:00:00', 2)").await.unwrap();
    let r = rows(&c, "SELECT region_id, latest_sequence FROM information_schema.region_statistics WHERE table_name = 'src'").await;
    let region = r[0][0].clone();
    assert_eq!(r[0][1], "2");

    // A full query with watermarks: the checkpoint to continue from.
    c.batch_execute("SET flow.return_region_seq = true").await.unwrap();
    assert_eq!(rows(&c, "SELECT count(*) FROM src").await, vec![vec!["2".to_string()]]);
    assert_eq!(rows(&c, "SHOW flow.region_seqs").await[0][0], format!("{{\"{region}\":2}}"));

    // Only rows written after sequence 2.
    c.batch_execute("INSERT INTO src VALUES ('c', '2024-01-01 00:00:00', 3)").await.unwrap();
    c.batch_execute(&format!("SET flow.incremental_after_seqs = '{{\"{region}\": 2}}'")).await.unwrap();
    assert_eq!(rows(&c, "SELECT host, v FROM src").await, vec![vec!["c".to_string(), "3".to_string()]]);
    assert_eq!(rows(&c, "SHOW flow.region_seqs").await[0][0], format!("{{\"{region}\":3}}"));
    // String sequence values are accepted too.
    c.batch_execute(&format!("SET flow.incremental_after_seqs = '{{\"{region}\": \"1\"}}'")).await.unwrap();
    assert_eq!(rows(&c, "SELECT count(*) FROM src").await, vec![vec!["2".to_string()]]);

    // memtable_only: fine before a flush, stale after it.
    c.batch_execute("SET flow.incremental_mode = 'MEMTABLE_ONLY'").await.unwrap();
    assert_eq!(rows(&c, "SELECT count(*) FROM src").await, vec![vec!["2".to_string()]]);
    rows(&c, "ADMIN flush_table('src')").await;
    assert_eq!(state(&c, "SELECT count(*) FROM src").await, "WR001");
    // A failed query leaves no watermark.
    assert_eq!(rows(&c, "SHOW flow.region_seqs").await[0][0], "");
    // Exact mode serves the same range across the flush.
    c.batch_execute("RESET flow.incremental_mode").await.unwrap();
    assert_eq!(rows(&c, "SELECT count(*) FROM src").await, vec![vec!["2".to_string()]]);

    // Validation.
    assert_eq!(state(&c, "SET flow.incremental_mode = 'everything'").await, "22023");
    assert_eq!(state(&c, "SET flow.incremental_after_seqs = 'not json'").await, "22023");
    assert_eq!(state(&c, "SET flow.incremental_after_seqs = '{\"x\": 1}'").await, "22023");
    assert_eq!(state(&c, "SET flow.incremental_after_seqs = '{\"1\": [1]}'").await, "22023");
    // Every scanned region needs an entry: never a silent full read.
    c.batch_execute("CREATE TABLE other (ts TIMESTAMP TIME INDEX, v INTEGER)").await.unwrap();
    assert_eq!(state(&c, "SELECT count(*) FROM other").await, "22023");
    // No keys: an ordinary query.
    c.batch_execute("RESET flow.incremental_after_seqs; RESET flow.return_region_seq").await.unwrap();
    assert_eq!(rows(&c, "SELECT count(*) FROM src").await, vec![vec!["3".to_string()]]);
    drop(c);
    drop(server);
}
