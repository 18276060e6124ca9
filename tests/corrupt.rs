//! A damaged SST at start-up is a clear error naming the file: no panic,
//! no silently missing data. And a table with `ttl = 'instant'` stores
//! nothing yet acknowledges writes.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::TestServer;

fn find_ssts(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            find_ssts(&p, out);
        } else if p.extension().is_some_and(|x| x == "parquet") {
            out.push(p);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_sst_stops_startup_with_the_file_name() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut server = TestServer::spawn(dir.path()).unwrap();
        let c = server.connect(None).await.unwrap();
        c.batch_execute("CREATE TABLE t (host TEXT, ts TIMESTAMP TIME INDEX, v DOUBLE PRECISION, PRIMARY KEY (host))").await.unwrap();
        c.batch_execute("INSERT INTO t VALUES ('a', '2024-01-01', 1), ('b', '2024-01-01', 2)").await.unwrap();
        c.simple_query("ADMIN flush_table('t')").await.unwrap();
        drop(c);
        assert!(server.stop(Duration::from_secs(10)), "clean stop");
    }
    let mut ssts = Vec::new();
    find_ssts(dir.path(), &mut ssts);
    assert_eq!(ssts.len(), 1, "one SST after the flush: {ssts:?}");
    // Cut the file in half.
    let bytes = std::fs::read(&ssts[0]).unwrap();
    std::fs::write(&ssts[0], &bytes[..bytes.len() / 2]).unwrap();
    let err = match TestServer::spawn(dir.path()) {
        Ok(_) => panic!("weir started on a damaged SST"),
        Err(e) => e.to_string(),
    };
    let name = ssts[0].file_name().unwrap().to_string_lossy().to_string();
    assert!(err.contains(&name), "error names the file {name}: {err}");
    assert!(!err.contains("panicked"), "no panic: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instant_ttl_acknowledges_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::spawn(dir.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    c.batch_execute("CREATE TABLE events (ts TIMESTAMP TIME INDEX, v BIGINT) WITH (ttl = 'instant')").await.unwrap();
    let n = c.execute("INSERT INTO events VALUES ('2024-01-01', 1), ('2024-01-02', 2)", &[]).await.unwrap();
    assert_eq!(n, 2);
    let r = c.query_one("SELECT count(*) FROM events", &[]).await.unwrap();
    assert_eq!(r.get::<_, i64>(0), 0);
    // The write still got a sequence: flows read instant tables from notices.
    let r = c.query_one("SELECT latest_sequence FROM information_schema.region_statistics WHERE table_name = 'events'", &[]).await.unwrap();
    assert_eq!(r.get::<_, i64>(0), 1);
}
