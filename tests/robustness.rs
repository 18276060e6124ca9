//! No input takes the server down or poisons it (issue 6, part 5):
//! the per-query memory budget answers 53200 for every kind of large
//! allocation and 54000 for one value past 1 GB; a panic while encoding
//! results is an error response and the connection carries on.

mod common;

use common::TestServer;

fn state(e: &tokio_postgres::Error) -> String {
    common::format_error(e).1.unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_budget_answers_53200_and_54000() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::spawn(dir.path()).unwrap();
    let c = server.connect(None).await.unwrap();

    // The query that used to abort the whole process.
    let e = c.simple_query("SELECT length(repeat('x', 10000000000000))").await.unwrap_err();
    assert_eq!(state(&e), "54000", "{e}");
    assert!(common::format_error(&e).0.contains("requested length too large"), "{e}");

    c.batch_execute("CREATE TABLE m (host TEXT, ts TIMESTAMP TIME INDEX, v BIGINT, PRIMARY KEY (host))").await.unwrap();
    c.batch_execute(
        "INSERT INTO m SELECT 'h' || (g % 10), TIMESTAMP '2024-01-01' + (g || ' seconds')::interval, g FROM generate_series(1, 20000) g",
    )
    .await
    .unwrap();
    let default: String = match &c.simple_query("SHOW weir.query_memory_bytes_max").await {
        Ok(_) => panic!("the session setting is unset until SET"),
        Err(e) => state(e),
    };
    assert_eq!(default, "42704");
    let e = c.simple_query("SET weir.query_memory_bytes_max = 0").await.unwrap_err();
    assert_eq!(state(&e), "22023", "{e}");

    // 1 MB: every operator that holds rows runs out, each with 53200.
    c.batch_execute("SET weir.query_memory_bytes_max = 1000000").await.unwrap();
    let over = [
        ("sort", "SELECT g FROM generate_series(1, 300000) g ORDER BY g DESC LIMIT 200000"),
        ("hash aggregate", "SELECT g % 100000, count(*) FROM generate_series(1, 300000) g GROUP BY 1"),
        ("distinct", "SELECT count(*) FROM (SELECT DISTINCT g FROM generate_series(1, 300000) g) s"),
        ("hash join build", "SELECT count(*) FROM generate_series(1, 10) a JOIN (SELECT g FROM generate_series(1, 300000) g) b ON a = b.g"),
        ("window", "SELECT max(r) FROM (SELECT row_number() OVER (ORDER BY g) r FROM generate_series(1, 300000) g) s"),
        ("set operation", "SELECT count(*) FROM (SELECT g FROM generate_series(1, 300000) g UNION SELECT 1) s"),
        ("string_agg", "SELECT length(string_agg(repeat('x', 1000), ',')) FROM generate_series(1, 5000)"),
        ("repeat", "SELECT length(repeat('x', 5000000))"),
        ("scalar subquery", "SELECT (SELECT max(x) FROM (SELECT g AS x FROM generate_series(1, 300000) g ORDER BY 1) s)"),
    ];
    for (what, sql) in over {
        let e = c.simple_query(sql).await.expect_err(what);
        assert_eq!(state(&e), "53200", "{what}: {e}");
        let db = e.as_db_error().unwrap();
        assert_eq!(db.message(), "out of memory", "{what}");
        assert!(db.detail().unwrap_or("").contains("query_memory_bytes_max"), "{what}: {:?}", db.detail());
        // The connection carries on.
        assert_eq!(c.query_one("SELECT 1 + 1", &[]).await.unwrap().get::<_, i32>(0), 2, "{what}");
    }
    // A cross join's row pairs are checked before they are made.
    let e = c.simple_query("SELECT count(*) FROM m a, m b").await.unwrap_err();
    assert_eq!(state(&e), "53200", "{e}");
    // Streaming does not hold rows: the same input passes under the budget.
    let n: i64 = c
        .query_one("SELECT count(*) FROM generate_series(1, 300000) g WHERE g % 2 = 0", &[])
        .await
        .unwrap_or_else(|e| panic!("{:?}", common::format_error(&e)))
        .get(0);
    assert_eq!(n, 150000);
    // Results stream to the client: a result larger than the budget is not
    // collected, so it goes out whole.
    let rows = c.simple_query("SELECT g FROM generate_series(1, 300000) g").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rows.iter().filter(|m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(_))).count(), 300000);
    // Nor does a small top-k: it keeps k rows and a chunk, not its input.
    let top: i32 = c
        .query_one("SELECT g FROM generate_series(1, 300000) g ORDER BY g DESC LIMIT 1", &[])
        .await
        .unwrap_or_else(|e| panic!("{:?}", common::format_error(&e)))
        .get(0);
    assert_eq!(top, 300000);
    // Back to the server's budget (1 GiB): everything above runs.
    c.batch_execute("RESET weir.query_memory_bytes_max").await.unwrap();
    for (what, sql) in over {
        c.simple_query(sql).await.unwrap_or_else(|e| panic!("{what} under the server's budget: {e}"));
    }
    // A session cannot raise its budget past the server's.
    c.batch_execute("SET weir.query_memory_bytes_max = 100000000000000").await.unwrap();
    let e = c.simple_query("SELECT length(repeat(g::text, 400000000)) FROM generate_series(1, 3) g").await.unwrap_err();
    assert_eq!(state(&e), "53200", "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_while_encoding_is_an_error_not_a_dropped_connection() {
    // Arm the test-only failpoint in the server process.
    std::env::set_var("WEIR_FAILPOINTS", "encode_panic");
    let dir = tempfile::tempdir().unwrap();
    let mut server = TestServer::spawn(dir.path()).unwrap();
    std::env::remove_var("WEIR_FAILPOINTS");
    let c = server.connect(None).await.unwrap();
    for round in 0..3 {
        // Simple protocol.
        let e = c.simple_query("SELECT 1 AS encode_panic").await.unwrap_err();
        assert_eq!(state(&e), "XX000", "{e}");
        assert!(!e.is_closed());
        // Extended protocol.
        let e = c.query("SELECT $1::int AS encode_panic", &[&round]).await.unwrap_err();
        assert_eq!(state(&e), "XX000", "{e}");
        // The session and its lock are fine afterwards.
        assert_eq!(c.query_one("SELECT $1::int + 1", &[&round]).await.unwrap().get::<_, i32>(0), round + 1);
    }
    // Other connections too.
    let c2 = server.connect(None).await.unwrap();
    assert_eq!(c2.query_one("SELECT 7", &[]).await.unwrap().get::<_, i32>(0), 7);
    assert!(server.exited().is_none());
}

/// ALTER TABLE copies a table into new regions: an INSERT racing with it
/// either lands before the copy (and is copied), after it (into the new
/// regions), or fails with 40001 — no acknowledged row is lost with the old
/// regions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alter_table_loses_no_concurrent_insert() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::spawn(dir.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    c.batch_execute("CREATE TABLE r (id INT PRIMARY KEY, v INT)").await.unwrap();
    c.batch_execute("INSERT INTO r SELECT g, g FROM generate_series(1, 20000) g").await.unwrap();
    let w = server.connect(None).await.unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let writer = tokio::spawn(async move {
        let (mut acked, mut refused) = (Vec::new(), 0u32);
        let mut id = 100_000;
        while !stop2.load(std::sync::atomic::Ordering::SeqCst) {
            id += 1;
            match w.simple_query(&format!("INSERT INTO r (id, v) VALUES ({id}, 0)")).await {
                Ok(_) => acked.push(id),
                Err(e) => {
                    assert_eq!(state(&e), "40001", "{e}");
                    refused += 1;
                }
            }
        }
        (acked, refused)
    });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    for i in 0..6 {
        c.batch_execute(&format!("ALTER TABLE r ADD COLUMN c{i} INT DEFAULT {i}")).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (acked, refused) = writer.await.unwrap();
    assert!(!acked.is_empty(), "no insert acknowledged ({refused} refused with 40001)");
    let rows = c.query("SELECT id FROM r WHERE id > 100000", &[]).await.unwrap();
    let have: std::collections::BTreeSet<i32> = rows.iter().map(|r| r.get(0)).collect();
    let lost: Vec<i32> = acked.iter().copied().filter(|id| !have.contains(id)).collect();
    assert!(lost.is_empty(), "acknowledged inserts lost by ALTER TABLE: {lost:?}");
    let n: i64 = c.query_one("SELECT count(*) FROM r WHERE c5 = 5 AND id <= 20000", &[]).await.unwrap().get(0);
    assert_eq!(n, 20000);
}

/// A large result moves to a producer thread after its first rows
/// (`RowStream::pipelined`): rows keep their order across the hand-over,
/// an error after it reaches the client after the rows before it, a
/// portal read in pieces goes on where it stopped, and the connection
/// carries on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_results_computed_ahead_keep_order_errors_and_portals() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::spawn(dir.path()).unwrap();
    let mut c = server.connect(None).await.unwrap();
    let n = 300_000i64;
    let rows = c.query("SELECT g::bigint, g::text || 'x' FROM generate_series(1, 300000) g", &[]).await.unwrap();
    assert_eq!(rows.len() as i64, n);
    for (i, r) in rows.iter().enumerate() {
        let g: i64 = r.get(0);
        assert_eq!(g as usize, i + 1);
        assert_eq!(r.get::<_, String>(1), format!("{g}x"));
    }
    // Division by zero at row 250,000: past the hand-over.
    let msgs = c.simple_query("SELECT 1 / (g - 250000) FROM generate_series(1, 300000) g").await;
    let e = msgs.unwrap_err();
    assert_eq!(state(&e), "22012", "{e}");
    assert_eq!(c.query_one("SELECT 1 + 1", &[]).await.unwrap().get::<_, i32>(0), 2);
    // A portal read 100,000 rows at a time.
    let tx = c.transaction().await.unwrap();
    let st = tx.prepare("SELECT g::bigint FROM generate_series(1, 300000) g").await.unwrap();
    let portal = tx.bind(&st, &[]).await.unwrap();
    let mut next = 1i64;
    loop {
        let part = tx.query_portal(&portal, 100_000).await.unwrap();
        if part.is_empty() {
            break;
        }
        for r in part {
            assert_eq!(r.get::<_, i64>(0), next);
            next += 1;
        }
    }
    assert_eq!(next, n + 1);
    tx.commit().await.unwrap();
    assert_eq!(c.query_one("SELECT 2 + 2", &[]).await.unwrap().get::<_, i32>(0), 4);
}
