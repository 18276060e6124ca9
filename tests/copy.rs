//! COPY FROM STDIN: text and CSV, all or nothing, the connection usable
//! after a bad payload, and the data durable across a restart; COPY TO
//! STDOUT; `db.table` names. Large multi-row INSERTs of literals (parsed
//! by the scanner of `parser/values.rs`) store what the parser's path does.

mod common;

use common::TestServer;
use futures::SinkExt;
use tokio_postgres::Client;

async fn copy(c: &Client, sql: &str, data: &str) -> Result<u64, tokio_postgres::Error> {
    // Keep the statement alive until the copy ends: tokio-postgres closes a
    // dropped statement with a Close message, and pgwire refuses messages
    // other than CopyData/CopyDone/CopyFail/Sync/Flush during COPY.
    let st = c.prepare(sql).await?;
    let sink = c.copy_in(&st).await?;
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from(data.to_string())).await?;
    let n = sink.finish().await;
    drop(st);
    n
}

async fn count(c: &Client, sql: &str) -> i64 {
    c.query_one(sql, &[]).await.unwrap().get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_text_and_csv_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::spawn(dir.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    c.batch_execute("CREATE TABLE cp (host TEXT, ts TIMESTAMP TIME INDEX, v DOUBLE PRECISION, PRIMARY KEY (host))").await.unwrap();

    let n = copy(&c, "COPY cp FROM STDIN", "a\t2024-01-01 00:00:00\t1.5\nb\t2024-01-01 00:00:01\t\\N\n").await.unwrap();
    assert_eq!(n, 2);
    let n = copy(&c, "COPY cp (host, ts, v) FROM STDIN WITH (FORMAT csv, HEADER true)", "host,ts,v\n\"c,d\",2024-01-01 00:00:02,3\n")
        .await
        .unwrap();
    assert_eq!(n, 1);
    // PostgreSQL's grammar reads `FROM STDOUT` as the client's stream too.
    let n = copy(&c, "COPY cp FROM STDOUT", "e\t2024-01-01 00:00:04\t2\n").await.unwrap();
    assert_eq!(n, 1);
    c.batch_execute("DELETE FROM cp WHERE host = 'e'").await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM cp").await, 3);
    let v: Option<f64> = c.query_one("SELECT v FROM cp WHERE host = 'b'", &[]).await.unwrap().get(0);
    assert_eq!(v, None);

    // One bad row: nothing of the payload is written, and the error says where.
    let e = copy(&c, "COPY cp FROM STDIN", "x\t2024-01-01 00:00:03\t1\ny\tnot a time\t2\n").await.unwrap_err();
    let (msg, state) = common::format_error(&e);
    assert_eq!(state.as_deref(), Some("22007"), "{msg}");
    assert_eq!(count(&c, "SELECT count(*) FROM cp").await, 3);
    // Wrong column count.
    let e = copy(&c, "COPY cp FROM STDIN", "x\t2024-01-01 00:00:03\n").await.unwrap_err();
    assert_eq!(common::format_error(&e).1.as_deref(), Some("22P04"));
    // The connection still works; missing tables are 42P01.
    let e = c.batch_execute("COPY nope FROM STDIN").await.unwrap_err();
    assert_eq!(common::format_error(&e).1.as_deref(), Some("42P01"));
    assert_eq!(count(&c, "SELECT count(*) FROM cp").await, 3);

    // 10k rows in one COPY.
    let mut data = String::new();
    for i in 0..10_000 {
        data.push_str(&format!("h{}\t2024-01-02 00:00:{:02}.{:06}\t{i}\n", i % 10, i % 60, i));
    }
    assert_eq!(copy(&c, "COPY cp FROM STDIN", &data).await.unwrap(), 10_000);
    assert_eq!(count(&c, "SELECT count(*) FROM cp").await, 10_003);

    // COPY TO STDOUT, text and CSV, from a table and from a query.
    let out = copy_out(&c, "COPY (SELECT host, v FROM cp WHERE host IN ('a', 'b') ORDER BY host) TO STDOUT").await;
    assert_eq!(out, "a\t1.5\nb\t\\N\n");
    let out = copy_out(&c, "COPY (SELECT host FROM cp WHERE host = 'c,d') TO STDOUT WITH (FORMAT csv, HEADER true)").await;
    assert_eq!(out, "host\n\"c,d\"\n");
    let out = copy_out(&c, "COPY cp TO STDOUT").await;
    assert_eq!(out.lines().count(), 10_003);

    // Another database's table by db.table, in and out; a column list.
    c.batch_execute(
        "DROP DATABASE IF EXISTS cp_other; CREATE DATABASE cp_other; \
         CREATE TABLE cp_other.t (h TEXT, ts TIMESTAMP TIME INDEX, v INTEGER, PRIMARY KEY (h))",
    )
    .await
    .unwrap();
    assert_eq!(copy(&c, "COPY cp_other.t FROM STDIN", "z\t2024-01-01 00:00:00\t5\n").await.unwrap(), 1);
    assert_eq!(copy_out(&c, "COPY cp_other.t (v, h) TO STDOUT").await, "5\tz\n");
    assert_eq!(count(&c, "SELECT count(*) FROM cp_other.t").await, 1);
    // TIMESTAMP(p) columns are rounded on COPY as on INSERT.
    c.batch_execute("CREATE TABLE cp_other.p (ts TIMESTAMP(0) TIME INDEX)").await.unwrap();
    assert_eq!(copy(&c, "COPY cp_other.p FROM STDIN", "2024-01-01 00:00:00.6\n").await.unwrap(), 1);
    assert_eq!(copy_out(&c, "COPY cp_other.p TO STDOUT").await, "2024-01-01 00:00:01\n");
    let e = c.batch_execute("COPY cp_other.t (nope) TO STDOUT").await.unwrap_err();
    assert_eq!(common::format_error(&e).1.as_deref(), Some("42703"));
    drop(c);
    drop(server);
}

async fn copy_out(c: &Client, sql: &str) -> String {
    use futures::StreamExt;
    let st = c.prepare(sql).await.unwrap();
    let stream = c.copy_out(&st).await.unwrap();
    futures::pin_mut!(stream);
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
        out.extend_from_slice(&chunk.unwrap());
    }
    String::from_utf8(out).unwrap()
}

fn rows(n: usize, bad_at: Option<usize>) -> String {
    let mut data = String::with_capacity(n * 40);
    for i in 0..n {
        if Some(i) == bad_at {
            data.push_str("bad\tnot a time\t1\n");
        } else {
            data.push_str(&format!("h{}\t2024-01-01 00:00:00.{:06}\t{i}\n", i % 7, i % 1_000_000));
        }
    }
    data
}

/// A bad row late in a payload of many chunks (each already written as a
/// held record when the error comes): nothing is visible, the table stays
/// writable (the held records were released), and a restart replays none
/// of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_of_many_chunks_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = TestServer::spawn(dir.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    // Three regions: each chunk is routed, so the load spans regions.
    c.batch_execute("CREATE TABLE big (host TEXT, ts TIMESTAMP TIME INDEX, v DOUBLE PRECISION, PRIMARY KEY (host)) WITH (regions = 3)")
        .await
        .unwrap();
    let n = 300_000; // > 4 chunks of 65,536 rows
    let e = copy(&c, "COPY big FROM STDIN", &rows(n, Some(n - 10))).await.unwrap_err();
    let (msg, state) = common::format_error(&e);
    assert_eq!(state.as_deref(), Some("22007"), "{msg}");
    assert_eq!(count(&c, "SELECT count(*) FROM big").await, 0);
    // Writers of the region are not stuck behind the dropped load.
    c.batch_execute("INSERT INTO big VALUES ('x', '2024-01-02 00:00:00', 1)").await.unwrap();
    assert_eq!(copy(&c, "COPY big FROM STDIN", &rows(n, None)).await.unwrap(), n as u64);
    assert_eq!(count(&c, "SELECT count(*) FROM big").await, n as i64 + 1);
    // Inside a block, the COPY's rows leave with the block.
    c.batch_execute("BEGIN").await.unwrap();
    assert_eq!(copy(&c, "COPY big FROM STDIN", &rows(1000, None).replace("h", "blk")).await.unwrap(), 1000);
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM big").await, n as i64 + 1);
    drop(c);
    server.stop(std::time::Duration::from_secs(10));
    let server = TestServer::spawn(dir.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM big").await, n as i64 + 1);
    assert_eq!(count(&c, "SELECT count(*) FROM big WHERE host = 'bad'").await, 0);
}

fn wal_bytes(dir: &std::path::Path) -> u64 {
    fn walk(p: &std::path::Path, out: &mut u64) {
        if let Ok(rd) = std::fs::read_dir(p) {
            for e in rd.flatten() {
                let path = e.path();
                if path.is_dir() {
                    walk(&path, out);
                } else if path.extension().is_some_and(|x| x == "log") && path.to_string_lossy().contains("region_") {
                    *out += e.metadata().map(|m| m.len()).unwrap_or(0);
                }
            }
        }
    }
    let mut n = 0;
    walk(dir, &mut n);
    n
}

fn commit_log_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir.join("regions").join("txn"))
        .map(|rd| rd.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum())
        .unwrap_or(0)
}

/// `kill -9` while a COPY is being sent (chunks already in the WAL, no
/// commit record): after the restart none of its rows exist; a COPY killed
/// after its commit record is there whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_killed_midway_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = TestServer::spawn(dir.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    c.batch_execute("CREATE TABLE k (host TEXT, ts TIMESTAMP TIME INDEX, v DOUBLE PRECISION, PRIMARY KEY (host))").await.unwrap();
    assert_eq!(copy(&c, "COPY k FROM STDIN", &rows(10, None)).await.unwrap(), 10);
    let before = wal_bytes(dir.path());
    let st = c.prepare("COPY k FROM STDIN").await.unwrap();
    let sink = c.copy_in::<_, bytes::Bytes>(&st).await.unwrap();
    futures::pin_mut!(sink);
    let data = rows(200_000, None);
    sink.send(bytes::Bytes::from(data)).await.unwrap();
    // Wait until chunks of the open COPY are in the WAL.
    let t0 = std::time::Instant::now();
    while wal_bytes(dir.path()) < before + 4_000_000 {
        assert!(t0.elapsed() < std::time::Duration::from_secs(60), "the COPY's chunks never reached the WAL");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    server.kill9();
    drop(sink);
    drop(st);
    drop(c);
    let mut server = TestServer::spawn(dir.path()).expect("restart after kill -9");
    let c = server.connect(None).await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM k").await, 10, "a COPY without its commit record is not replayed");
    c.batch_execute("INSERT INTO k VALUES ('after', '2024-01-03 00:00:00', 1)").await.unwrap();
    drop(c);
    server.stop(std::time::Duration::from_secs(10));

    // Killed after the commit record, before publishing: all of it. The
    // commit log growing says the COPY reached its commit point.
    let mut server = TestServer::spawn_env(dir.path(), &[("WEIR_TEST_COMMIT_PAUSE", "logged:60000")]).unwrap();
    let c = server.connect(None).await.unwrap();
    let log_before = commit_log_bytes(dir.path());
    let copying = tokio::spawn(async move { copy(&c, "COPY k FROM STDIN", &rows(100_000, None).replace('h', "z")).await.is_ok() });
    let t0 = std::time::Instant::now();
    while commit_log_bytes(dir.path()) <= log_before {
        assert!(t0.elapsed() < std::time::Duration::from_secs(120), "the COPY never wrote its commit record");
        assert!(!copying.is_finished(), "COPY ended without a commit record");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(!copying.is_finished(), "COPY returned before the kill: the pause hook did not hold it");
    server.kill9();
    assert!(!copying.await.unwrap(), "a killed server cannot acknowledge the COPY");
    let server = TestServer::spawn(dir.path()).expect("restart after kill -9");
    let c = server.connect(None).await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM k WHERE host LIKE 'z%'").await, 100_000);
    assert_eq!(count(&c, "SELECT count(*) FROM k").await, 100_011);
}

fn parquet_files(dir: &std::path::Path) -> i64 {
    fn walk(p: &std::path::Path, out: &mut i64) {
        if let Ok(rd) = std::fs::read_dir(p) {
            for e in rd.flatten() {
                let path = e.path();
                if path.is_dir() {
                    walk(&path, out);
                } else if path.extension().is_some_and(|x| x == "parquet") {
                    *out += 1;
                }
            }
        }
    }
    let mut n = 0;
    walk(&dir.join("regions"), &mut n);
    n
}

/// A server whose COPY loads stage SST files after about half a MiB of
/// rows (`memtable_bytes_max` = 1 MiB), so big loads take the staged path.
fn spawn_small(dir: &std::path::Path, conf: &std::path::Path, env: &[(&str, &str)]) -> TestServer {
    std::fs::write(conf, "[storage]\nmemtable_bytes_max = 1048576\n").unwrap();
    TestServer::spawn_with(dir, env, &["--config", conf.to_str().unwrap()]).expect("server starts")
}

/// SSTs on disk equal the SSTs the regions list: no staged file leaks.
async fn assert_no_stray_files(c: &Client, dir: &std::path::Path) {
    let listed = c
        .query_one("SELECT sum(sst_count)::bigint FROM information_schema.region_statistics WHERE table_name = 'big'", &[])
        .await
        .unwrap()
        .get::<_, Option<i64>>(0)
        .unwrap_or(0);
    assert_eq!(parquet_files(dir), listed, "files on disk vs files the regions list");
}

/// COPY loads bigger than their memory bound are written as staged SSTs
/// during the load and stay all or nothing: a bad row late in the data
/// leaves nothing (after a restart too, no file left behind); a good load
/// is there whole and survives a restart; `kill -9` mid-load loses the
/// load and nothing else; `kill -9` after the commit record keeps all of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_staged_in_files_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let conf_dir = tempfile::tempdir().unwrap();
    let conf = conf_dir.path().join("weir.toml");
    let mut server = spawn_small(dir.path(), &conf, &[]);
    let c = server.connect(None).await.unwrap();
    c.batch_execute("CREATE TABLE big (host TEXT, ts TIMESTAMP TIME INDEX, v DOUBLE PRECISION, PRIMARY KEY (host)) WITH (regions = 2)")
        .await
        .unwrap();
    let n = 200_000;
    let e = copy(&c, "COPY big FROM STDIN", &rows(n, Some(n - 10))).await.unwrap_err();
    assert_eq!(common::format_error(&e).1.as_deref(), Some("22007"));
    assert_eq!(count(&c, "SELECT count(*) FROM big").await, 0);
    c.batch_execute("INSERT INTO big VALUES ('x', '2024-01-02 00:00:00', 1)").await.unwrap();
    assert_eq!(copy(&c, "COPY big FROM STDIN", &rows(n, None)).await.unwrap(), n as u64);
    assert_eq!(count(&c, "SELECT count(*) FROM big").await, n as i64 + 1);
    assert_eq!(count(&c, "SELECT count(*) FROM big WHERE v = 199999").await, 1);
    assert!(parquet_files(dir.path()) >= 2, "the load was not staged in files");
    drop(c);
    server.stop(std::time::Duration::from_secs(10));
    let mut server = spawn_small(dir.path(), &conf, &[]);
    let c = server.connect(None).await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM big").await, n as i64 + 1);
    assert_eq!(count(&c, "SELECT count(*) FROM big WHERE host = 'bad'").await, 0);
    assert_no_stray_files(&c, dir.path()).await;

    // kill -9 while staged files of an open COPY are on disk.
    let files_before = parquet_files(dir.path());
    let st = c.prepare("COPY big FROM STDIN").await.unwrap();
    let sink = c.copy_in::<_, bytes::Bytes>(&st).await.unwrap();
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from(rows(300_000, None).replace('h', "k"))).await.unwrap();
    let t0 = std::time::Instant::now();
    while parquet_files(dir.path()) < files_before + 2 {
        assert!(t0.elapsed() < std::time::Duration::from_secs(120), "the COPY never staged a file");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    server.kill9();
    drop(sink);
    drop(st);
    drop(c);
    let mut server = spawn_small(dir.path(), &conf, &[]);
    let c = server.connect(None).await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM big").await, n as i64 + 1, "a killed COPY left rows");
    assert_no_stray_files(&c, dir.path()).await;
    drop(c);
    server.stop(std::time::Duration::from_secs(10));

    // kill -9 after the commit record, before the files are published.
    let mut server = spawn_small(dir.path(), &conf, &[("WEIR_TEST_COMMIT_PAUSE", "logged:60000")]);
    let c = server.connect(None).await.unwrap();
    let log_before = commit_log_bytes(dir.path());
    let copying = tokio::spawn(async move { copy(&c, "COPY big FROM STDIN", &rows(150_000, None).replace('h', "z")).await.is_ok() });
    let t0 = std::time::Instant::now();
    while commit_log_bytes(dir.path()) <= log_before {
        assert!(t0.elapsed() < std::time::Duration::from_secs(120), "the COPY never wrote its commit record");
        assert!(!copying.is_finished(), "COPY ended without a commit record");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    server.kill9();
    assert!(!copying.await.unwrap(), "a killed server cannot acknowledge the COPY");
    let mut server = spawn_small(dir.path(), &conf, &[]);
    let c = server.connect(None).await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM big WHERE host LIKE 'z%'").await, 150_000);
    assert_eq!(count(&c, "SELECT count(*) FROM big").await, n as i64 + 150_001);
    assert_no_stray_files(&c, dir.path()).await;
    drop(c);
    server.stop(std::time::Duration::from_secs(10));
}

/// A DATE in PostgreSQL's binary form: days since 2000-01-01.
#[derive(Debug)]
struct PgDate(i32);

impl tokio_postgres::types::ToSql for PgDate {
    fn to_sql(
        &self,
        _: &tokio_postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(&self.0.to_be_bytes());
        Ok(tokio_postgres::types::IsNull::No)
    }
    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        *ty == tokio_postgres::types::Type::DATE
    }
    tokio_postgres::types::to_sql_checked!();
}

/// COPY FROM STDIN (FORMAT binary) as tokio-postgres's BinaryCopyInWriter
/// (and pgx's CopyFrom) send it: every scalar type, NULLs, an array; a bad
/// signature and a wrong field count are 22P04 and write nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_binary_format() {
    use tokio_postgres::binary_copy::BinaryCopyInWriter;
    use tokio_postgres::types::{ToSql, Type};
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::spawn(dir.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    c.batch_execute(
        "CREATE TABLE cpb (host TEXT, ts TIMESTAMP TIME INDEX, v DOUBLE PRECISION, n BIGINT, i INT, s SMALLINT, f REAL, ok BOOLEAN, \
         d DATE, a INT[], PRIMARY KEY (host))",
    )
    .await
    .unwrap();
    let st = c.prepare("COPY cpb (host, ts, v, n, i, s, f, ok, d, a) FROM STDIN (FORMAT binary)").await.unwrap();
    let sink = c.copy_in(&st).await.unwrap();
    let types = [
        Type::TEXT,
        Type::TIMESTAMP,
        Type::FLOAT8,
        Type::INT8,
        Type::INT4,
        Type::INT2,
        Type::FLOAT4,
        Type::BOOL,
        Type::DATE,
        Type::INT4_ARRAY,
    ];
    let writer = BinaryCopyInWriter::new(sink, &types);
    futures::pin_mut!(writer);
    let ts = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_704_067_200); // 2024-01-01
    let none: Option<i64> = None;
    for k in 0..1000i64 {
        let host = format!("h{k:04}");
        let t = ts + std::time::Duration::from_secs(k as u64);
        let v = k as f64 / 2.0;
        let i = k as i32 - 500;
        let s = (k % 100) as i16;
        let f = k as f32 / 4.0;
        let ok = k % 2 == 0;
        let d = PgDate(8766 + (k as i32 % 30)); // 2024-01-01 + k % 30 days
        let a = vec![Some(k as i32), None, Some(7)];
        let n: &(dyn ToSql + Sync) = if k == 3 { &none } else { &k };
        let row: [&(dyn ToSql + Sync); 10] = [&host, &t, &v, n, &i, &s, &f, &ok, &d, &a];
        writer.as_mut().write(&row).await.unwrap();
    }
    assert_eq!(writer.finish().await.unwrap(), 1000);
    drop(st);
    let r = c.query_one("SELECT host, ts::text, v, n, i, s, f, ok, d::text, a::text FROM cpb WHERE host = 'h0003'", &[]).await.unwrap();
    assert_eq!(r.get::<_, String>(1), "2024-01-01 00:00:03");
    assert_eq!(r.get::<_, f64>(2), 1.5);
    assert_eq!(r.get::<_, Option<i64>>(3), None);
    assert_eq!((r.get::<_, i32>(4), r.get::<_, i16>(5), r.get::<_, f32>(6), r.get::<_, bool>(7)), (-497, 3, 0.75, false));
    assert_eq!(r.get::<_, String>(8), "2024-01-04");
    assert_eq!(r.get::<_, String>(9), "{3,NULL,7}");
    assert_eq!(count(&c, "SELECT count(*) FROM cpb").await, 1000);

    // Text where binary is expected: PostgreSQL's error, nothing written.
    let e = copy(&c, "COPY cpb FROM STDIN (FORMAT binary)", "x\t2024-01-01 00:00:03\n").await.unwrap_err();
    let db = e.as_db_error().expect("a server error");
    assert_eq!((db.code().code(), db.message()), ("22P04", "COPY file signature not recognized"));
    // A row with one field of ten.
    let mut data = b"PGCOPY\n\xff\r\n\0".to_vec();
    data.extend(0i32.to_be_bytes());
    data.extend(0i32.to_be_bytes());
    data.extend(1i16.to_be_bytes());
    data.extend(1i32.to_be_bytes());
    data.extend(b"z");
    let st = c.prepare("COPY cpb FROM STDIN (FORMAT binary)").await.unwrap();
    let sink = c.copy_in::<_, bytes::Bytes>(&st).await.unwrap();
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from(data)).await.unwrap();
    let e = sink.finish().await.unwrap_err();
    drop(st);
    assert_eq!(common::format_error(&e).1.as_deref(), Some("22P04"), "{e}");
    assert_eq!(count(&c, "SELECT count(*) FROM cpb").await, 1000);
}

/// A binary COPY payload: header, the records (each a list of fields,
/// None for NULL) and the trailer, as PostgreSQL's format has it.
fn binary_payload(records: &[Vec<Option<&[u8]>>]) -> bytes::Bytes {
    let mut data = b"PGCOPY\n\xff\r\n\0".to_vec();
    data.extend(0i32.to_be_bytes());
    data.extend(0i32.to_be_bytes());
    for r in records {
        data.extend((r.len() as i16).to_be_bytes());
        for f in r {
            match f {
                Some(b) => {
                    data.extend((b.len() as i32).to_be_bytes());
                    data.extend(*b);
                }
                None => data.extend((-1i32).to_be_bytes()),
            }
        }
    }
    data.extend((-1i16).to_be_bytes());
    bytes::Bytes::from(data)
}

/// COPY TO STDOUT (FORMAT binary) as tokio-postgres's BinaryCopyOutStream
/// (psycopg's `read_row`, pgx) reads it: every scalar type, NULLs, an array,
/// a query source; the bytes are PostgreSQL 15's for the same rows. A
/// malformed binary field is PostgreSQL's error: bytes left over 22P03,
/// too few 08P01, text that is not UTF-8 22021; in a Bind 22P03 names the
/// parameter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_binary_out_and_malformed_fields() {
    use tokio_postgres::binary_copy::BinaryCopyOutStream;
    use tokio_postgres::types::Type;
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::spawn(dir.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    c.batch_execute(
        "CREATE TABLE cpo (host TEXT, ts TIMESTAMP TIME INDEX, v DOUBLE PRECISION, n BIGINT, i INT, s SMALLINT, f REAL, ok BOOLEAN, \
         d DATE, a INT[], PRIMARY KEY (host));
         INSERT INTO cpo VALUES ('a', '2024-01-01 00:00:01', 1.5, NULL, -7, 3, 0.25, true, '2024-01-04', '{1,NULL,3}'),
                                ('b', '2024-01-01 00:00:02', NULL, 9000000000, 7, -3, NULL, false, NULL, NULL)",
    )
    .await
    .unwrap();
    let types = [
        Type::TEXT,
        Type::TIMESTAMP,
        Type::FLOAT8,
        Type::INT8,
        Type::INT4,
        Type::INT2,
        Type::FLOAT4,
        Type::BOOL,
        Type::DATE,
        Type::INT4_ARRAY,
    ];
    let out = c.copy_out("COPY (SELECT * FROM cpo ORDER BY host) TO STDOUT (FORMAT binary)").await.unwrap();
    let rows = BinaryCopyOutStream::new(out, &types);
    futures::pin_mut!(rows);
    let mut got = Vec::new();
    while let Some(r) = futures::StreamExt::next(&mut rows).await {
        let r = r.unwrap();
        got.push((
            r.get::<String>(0),
            r.get::<std::time::SystemTime>(1),
            r.get::<Option<f64>>(2),
            r.get::<Option<i64>>(3),
            r.get::<i32>(4),
            r.get::<i16>(5),
            r.get::<Option<f32>>(6),
            r.get::<bool>(7),
            r.get::<Option<Vec<Option<i32>>>>(9),
        ));
    }
    let ts = |s: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_704_067_200 + s);
    assert_eq!(
        got,
        [
            ("a".into(), ts(1), Some(1.5), None, -7, 3, Some(0.25), true, Some(vec![Some(1), None, Some(3)])),
            ("b".into(), ts(2), None, Some(9_000_000_000), 7, -3, None, false, None),
        ]
    );
    // The exact bytes, as PostgreSQL 15 sends them for (1, 'a'), (NULL, 'b').
    let out = c.copy_out("COPY (SELECT * FROM (VALUES (1::int4, 'a'::text), (NULL::int4, 'b'::text)) v (i, t)) TO STDOUT BINARY").await;
    let mut bytes = Vec::new();
    let out = out.unwrap();
    futures::pin_mut!(out);
    while let Some(chunk) = futures::StreamExt::next(&mut out).await {
        bytes.extend_from_slice(&chunk.unwrap());
    }
    let pg = "5047434f50590aff0d0a0000000000000000000002000000040000000100000001610002ffffffff0000000162ffff";
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, pg);
    // No rows: the header and the trailer, in one message as PostgreSQL sends them.
    let out = c.copy_out("COPY (SELECT * FROM cpo WHERE host = 'none') TO STDOUT (FORMAT binary)").await.unwrap();
    let rows = BinaryCopyOutStream::new(out, &types);
    futures::pin_mut!(rows);
    assert!(futures::StreamExt::next(&mut rows).await.is_none());
    // Binary with text options is refused, as PostgreSQL does.
    let e = c.batch_execute("COPY cpo TO STDOUT (FORMAT binary, HEADER true)").await.unwrap_err();
    assert_eq!(common::format_error(&e).1.as_deref(), Some("42601"), "{e}");

    // Malformed fields in COPY FROM: nothing written, PostgreSQL's codes.
    c.batch_execute("CREATE TABLE cpm (i INT, t TEXT)").await.unwrap();
    let cases: [(&[u8], &[u8], &str, &str); 3] = [
        (b"\0\0\0\x01\0\0", b"x", "22P03", "incorrect binary data format"),
        (b"\0\x01", b"x", "08P01", "insufficient data left in message"),
        (b"\0\0\0\x01", b"\xff\xfe", "22021", "invalid byte sequence for encoding \"UTF8\": 0xff"),
    ];
    for (i, t, state, msg) in cases {
        let st = c.prepare("COPY cpm FROM STDIN (FORMAT binary)").await.unwrap();
        let sink = c.copy_in::<_, bytes::Bytes>(&st).await.unwrap();
        futures::pin_mut!(sink);
        sink.send(binary_payload(&[vec![Some(b"\0\0\0\x02"), Some(b"ok")], vec![Some(i), Some(t)]])).await.unwrap();
        let e = sink.finish().await.unwrap_err();
        drop(st);
        let db = e.as_db_error().expect("a server error");
        assert_eq!((db.code().code(), db.message()), (state, msg));
        assert_eq!(count(&c, "SELECT count(*) FROM cpm").await, 0);
    }
    // A Bind parameter with bytes left over.
    let st = c.prepare_typed("SELECT $1::int4", &[Type::INT4]).await.unwrap();
    struct Raw(&'static [u8]);
    impl std::fmt::Debug for Raw {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Raw")
        }
    }
    impl tokio_postgres::types::ToSql for Raw {
        fn to_sql(
            &self,
            _: &Type,
            out: &mut bytes::BytesMut,
        ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
            out.extend_from_slice(self.0);
            Ok(tokio_postgres::types::IsNull::No)
        }
        fn accepts(_: &Type) -> bool {
            true
        }
        tokio_postgres::types::to_sql_checked!();
    }
    let e = c.query(&st, &[&Raw(b"\0\0\0\x01\0\0")]).await.unwrap_err();
    let db = e.as_db_error().expect("a server error");
    assert_eq!((db.code().code(), db.message()), ("22P03", "incorrect binary data format in bind parameter 1"));
    assert_eq!(count(&c, "SELECT count(*) FROM cpm").await, 0);
}

/// Rows of every literal kind, in one INSERT large enough for the scanner
/// and in the same INSERT with a comment (the parser's path): the tables
/// read back the same. A bad cell or row fails the statement whole, with
/// the parser's path's error, and the connection carries on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_literal_insert_matches_the_parser_path() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::spawn(dir.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    for t in ["fast", "slow"] {
        c.batch_execute(&format!(
            "CREATE TABLE {t} (host TEXT, ts TIMESTAMP TIME INDEX, v DOUBLE PRECISION, n BIGINT, b BOOLEAN, note TEXT, PRIMARY KEY (host))"
        ))
        .await
        .unwrap();
    }
    let rows: Vec<String> = (0..600)
        .map(|i| {
            let v = match i % 4 {
                0 => format!("{}.25", i),
                1 => format!("-{}e-2", i),
                2 => "NULL".to_string(),
                _ => format!("{}", i),
            };
            let note = if i % 3 == 0 { "NULL".to_string() } else { format!("'it''s #{i}, (ok)'") };
            format!(
                "('h{}', '2024-01-01 00:{:02}:{:02}', {v}, -{i}, {}, {note})",
                i % 7,
                i / 60,
                i % 60,
                if i % 2 == 0 { "true" } else { "FALSE" }
            )
        })
        .collect();
    let body = rows.join(",\n");
    c.batch_execute(&format!("INSERT INTO fast VALUES {body};")).await.unwrap();
    c.batch_execute(&format!("INSERT INTO slow VALUES {body} -- the parser's path")).await.unwrap();
    let read = |t: &'static str| {
        let c = &c;
        async move {
            let rows = c.simple_query(&format!("SELECT * FROM {t} ORDER BY host, ts")).await.unwrap();
            rows.iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => {
                        Some((0..r.len()).map(|k| r.get(k).map(str::to_string)).collect::<Vec<_>>())
                    }
                    _ => None,
                })
                .collect::<Vec<_>>()
        }
    };
    let fast = read("fast").await;
    assert_eq!(fast.len(), 600);
    assert_eq!(fast, read("slow").await);

    // A bad timestamp in the last row, a short row: nothing is written.
    for (bad, state) in [("('x', 'not a time', 1, 1, true, 'x')", "22007"), ("('x', '2024-01-02 00:00:00', 1)", "42601")] {
        let sql = format!("INSERT INTO fast (host, ts, v, n, b, note) VALUES {body}, {bad}");
        let e = c.batch_execute(&sql).await.unwrap_err();
        let slow = c.batch_execute(&format!("{sql} -- the parser's path")).await.unwrap_err();
        assert_eq!(common::format_error(&e), common::format_error(&slow));
        assert_eq!(common::format_error(&e).1.as_deref(), Some(state), "{}", common::format_error(&e).0);
    }
    assert_eq!(count(&c, "SELECT count(*) FROM fast").await, 600);
}
