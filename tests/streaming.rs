//! Results stream to the client: the server's memory stays bounded while a
//! large result goes out (checked on its VmHWM, not on timing), and an error
//! in the middle of a result comes after the rows before it, as from
//! PostgreSQL.

mod common;

use futures::{pin_mut, StreamExt, TryStreamExt};

use common::TestServer;

/// Peak resident set of a process in KiB (`VmHWM`).
fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

const ROWS: i64 = 400_000;
/// The result is ~90 MB of text (and more as Arrow batches); streamed, the
/// server holds a batch at a time.
const GROWTH_MAX_KIB: u64 = 48 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_results_stream_in_bounded_memory() {
    if common::external_url().is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::spawn(dir.path()).unwrap();
    let pid = server.pid().unwrap();
    let c = server.connect(None).await.unwrap();
    assert_eq!(c.query_one("SELECT 1", &[]).await.unwrap().get::<_, i32>(0), 1);
    let before = vm_hwm_kib(pid);

    // COPY TO: the client reads and drops each chunk.
    let sql = format!("COPY (SELECT g, g * 2 AS h, repeat('x', 200) AS pad FROM generate_series(1, {ROWS}) g) TO STDOUT");
    let out = c.copy_out(sql.as_str()).await.unwrap();
    pin_mut!(out);
    let (mut bytes, mut lines) = (0usize, 0usize);
    while let Some(chunk) = out.next().await {
        let chunk = chunk.unwrap();
        bytes += chunk.len();
        lines += chunk.iter().filter(|&&b| b == b'\n').count();
    }
    assert_eq!(lines as i64, ROWS);
    assert!(bytes > 80_000_000, "{bytes} bytes");
    let after_copy = vm_hwm_kib(pid);
    assert!(after_copy - before < GROWTH_MAX_KIB, "COPY TO grew the server's peak RSS by {} KiB", after_copy - before);

    // A query through the extended protocol, read row by row.
    let sql = format!("SELECT g, repeat('y', 200) AS pad FROM generate_series(1, {ROWS}) g");
    let rows = c.query_raw(sql.as_str(), std::iter::empty::<i32>()).await.unwrap();
    pin_mut!(rows);
    let mut n = 0i64;
    while let Some(r) = rows.try_next().await.unwrap() {
        n += 1;
        assert_eq!(r.get::<_, i32>(0) as i64, n);
    }
    assert_eq!(n, ROWS);
    // And through the simple protocol (its client keeps the rows; the
    // server must not add its own copy): a smaller result.
    let r = c.simple_query("SELECT count(*) FROM generate_series(1, 100000) g").await.unwrap();
    assert!(r.iter().any(|m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(row) if row.get(0) == Some("100000"))));
    let after = vm_hwm_kib(pid);
    assert!(after - before < GROWTH_MAX_KIB, "streamed SELECT grew the server's peak RSS by {} KiB", after - before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_after_rows_as_postgres_does() {
    let server = TestServer::start().unwrap();
    let c = server.connect(None).await.unwrap();
    // Division by zero at g = 5000: the rows before it reach the client
    // first (PostgreSQL sends rows 1..4999; weir sends whole batches).
    let rows = c.query_raw("SELECT 10 / (5000 - g) AS x FROM generate_series(1, 10000) g", std::iter::empty::<i32>()).await;
    let mut got = 0;
    let err = match rows {
        Err(e) => e,
        Ok(rows) => {
            pin_mut!(rows);
            loop {
                match rows.try_next().await {
                    Ok(Some(_)) => got += 1,
                    Ok(None) => panic!("no error after {got} rows"),
                    Err(e) => break e,
                }
            }
        }
    };
    assert_eq!(common::format_error(&err).1.as_deref(), Some("22012"), "{err}");
    assert!(got > 0 && got < 5000, "{got} rows before the error");
    // Simple protocol: DataRows, then the ErrorResponse; the connection stays usable.
    let e = c.simple_query("SELECT 10 / (5000 - g) AS x FROM generate_series(1, 10000) g").await.unwrap_err();
    assert_eq!(common::format_error(&e).1.as_deref(), Some("22012"), "{e}");
    assert_eq!(c.query_one("SELECT 41 + 1", &[]).await.unwrap().get::<_, i32>(0), 42);
    // In a transaction block the error fails the block.
    c.batch_execute("BEGIN").await.unwrap();
    let e = c.simple_query("SELECT 10 / (5000 - g) AS x FROM generate_series(1, 10000) g").await.unwrap_err();
    assert_eq!(common::format_error(&e).1.as_deref(), Some("22012"), "{e}");
    let e = c.simple_query("SELECT 1").await.unwrap_err();
    assert_eq!(common::format_error(&e).1.as_deref(), Some("25P02"), "{e}");
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(c.query_one("SELECT 1", &[]).await.unwrap().get::<_, i32>(0), 1);
}
