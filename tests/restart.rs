//! Durability across restarts: write, SIGTERM, start on the same data
//! directory, read back; and rounds of concurrent ingest ended by `kill -9`,
//! checked against a model of the acknowledged rows.
//!
//! With `WEIR_TEST_URL` (e.g. PostgreSQL) the server cannot be restarted:
//! the workloads and the model checks still run, without the restarts, on a
//! plain table (no `TIME INDEX`), to check the test itself.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::TestServer;
use tokio_postgres::{Client, SimpleQueryMessage};

const WEIR_DDL: &str = "CREATE TABLE t (host TEXT, ts TIMESTAMP TIME INDEX, v DOUBLE PRECISION, PRIMARY KEY (host))";
const PLAIN_DDL: &str = "CREATE TABLE t (host TEXT, ts TIMESTAMP, v DOUBLE PRECISION)";

/// `2024-01-01 00:00:00` plus `secs`, as PostgreSQL prints a timestamp.
fn ts(secs: i64) -> String {
    const DAYS_2000_TO_2024: i64 = 8766;
    common::timestamp_text((DAYS_2000_TO_2024 * 86_400 + secs) * 1_000_000)
}

async fn rows(c: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    let msgs = c.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    msgs.into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect()),
            _ => None,
        })
        .collect()
}

/// The time-series table for weir; a plain one when the target is an
/// external server that rejects `TIME INDEX` (PostgreSQL), or with
/// `WEIR_TEST_PLAIN_DDL=1`. Returns whether it is a time-series table.
async fn create_table(s: &TestServer, c: &Client) -> bool {
    c.batch_execute("DROP TABLE IF EXISTS t").await.unwrap();
    if std::env::var("WEIR_TEST_PLAIN_DDL").is_ok_and(|v| v == "1") {
        c.batch_execute(PLAIN_DDL).await.unwrap();
        return false;
    }
    match c.batch_execute(WEIR_DDL).await {
        Ok(()) => true,
        Err(e) if s.is_external() => {
            eprintln!("note: external server rejects TIME INDEX ({e}); using a plain table");
            c.batch_execute(PLAIN_DDL).await.unwrap();
            false
        }
        Err(e) => panic!("{WEIR_DDL}: {}", common::format_error(&e).0),
    }
}

async fn fresh_db(s: &TestServer, name: &str) -> Client {
    let admin = s.connect(None).await.expect("connect");
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name}")).await.unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
    s.connect(Some(name)).await.unwrap()
}

fn restart(s: &mut TestServer, dir: &Path) {
    let clean = s.stop(Duration::from_secs(15));
    assert!(clean, "weir did not exit within 15 s of SIGTERM\n{}", s.log_tail());
    *s = TestServer::spawn(dir).expect("restart weir on the same data dir");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_sigterm_restart_read_back() {
    let data = tempfile::tempdir().unwrap();
    let mut s = match common::external_url() {
        Some(_) => TestServer::start().unwrap(),
        None => TestServer::spawn(data.path()).unwrap(),
    };
    let external = s.is_external();
    let c = fresh_db(&s, "restart_basic").await;
    let timeseries = create_table(&s, &c).await;
    let mut values = Vec::new();
    for i in 0..200i64 {
        values.push(format!("('h{}', '{}', {})", i % 7, ts(i), i as f64 / 4.0));
    }
    for chunk in values.chunks(50) {
        let n = c.execute(&format!("INSERT INTO t VALUES {}", chunk.join(", ")), &[]).await.unwrap();
        assert_eq!(n, chunk.len() as u64);
    }
    c.batch_execute(
        "CREATE TABLE types (b BOOLEAN, s SMALLINT, i INTEGER, g BIGINT, r REAL, d DOUBLE PRECISION, \
         x TEXT, vc VARCHAR, ts TIMESTAMP)",
    )
    .await
    .unwrap();
    c.batch_execute(
        "INSERT INTO types VALUES (true, -3, 2147483647, 9223372036854775807, 1.5, -0.25, 'it''s', '', \
         '2024-02-29 12:34:56.789'), (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '2024-03-01 00:00:00')",
    )
    .await
    .unwrap();
    c.batch_execute("CREATE TABLE gone (a INTEGER); DROP TABLE gone").await.unwrap();
    drop(c);

    let check = |c: Client| async move {
        assert_eq!(
            rows(&c, "SELECT count(*), sum(v), min(ts), max(ts) FROM t").await,
            vec![vec![Some("200".to_string()), Some("4975".to_string()), Some(ts(0)), Some(ts(199))]]
        );
        assert_eq!(
            rows(&c, "SELECT host, ts, v FROM t WHERE ts = '2024-01-01 00:01:40'").await,
            vec![vec![Some("h2".into()), Some(ts(100)), Some("25".into())]]
        );
        assert_eq!(
            rows(&c, "SELECT b, s, i, g, r, d, x, vc, ts FROM types ORDER BY ts").await,
            vec![
                ["t", "-3", "2147483647", "9223372036854775807", "1.5", "-0.25", "it's", "", "2024-02-29 12:34:56.789"]
                    .iter()
                    .map(|v| Some(v.to_string()))
                    .collect::<Vec<_>>(),
                vec![None, None, None, None, None, None, None, None, Some("2024-03-01 00:00:00".into())],
            ]
        );
        assert_eq!(common::sqlstate(c.simple_query("SELECT * FROM gone").await), "42P01");
    };

    if external {
        check(s.connect(Some("restart_basic")).await.unwrap()).await;
        eprintln!("note: external server: restart skipped, data checks only");
        return;
    }
    for _ in 0..2 {
        restart(&mut s, data.path());
        check(s.connect(Some("restart_basic")).await.unwrap()).await;
    }

    if !timeseries {
        return;
    }
    // Last write wins on (primary key, time index), also across a restart.
    let c = s.connect(Some("restart_basic")).await.unwrap();
    c.batch_execute("INSERT INTO t VALUES ('h2', '2024-01-01 00:01:40', 99)").await.unwrap();
    restart(&mut s, data.path());
    let c = s.connect(Some("restart_basic")).await.unwrap();
    assert_eq!(rows(&c, "SELECT v FROM t WHERE host = 'h2' AND ts = '2024-01-01 00:01:40'").await, vec![vec![Some("99".to_string())]]);
    assert_eq!(rows(&c, "SELECT count(*) FROM t").await, vec![vec![Some("200".to_string())]]);
}

const WRITERS: usize = 4;
const ROUNDS: usize = 5;
const BATCH: i64 = 10;

/// The rows of batch `k` of writer `w` in `round`: unique keys, known values.
fn batch_rows(round: usize, w: usize, k: i64) -> Vec<(String, String, String)> {
    (0..BATCH)
        .map(|j| {
            let n = k * BATCH + j;
            let secs = round as i64 * 10_000_000 + n;
            (format!("w{w}"), ts(secs), format!("{}", round as i64 * 100_000 + n))
        })
        .collect()
}

#[derive(Default)]
struct WriterLog {
    acked: Vec<i64>,
    inflight: Option<i64>,
}

async fn writer(client: Client, round: usize, w: usize, stop: Arc<AtomicBool>, log: Arc<Mutex<WriterLog>>) {
    let mut k = 0i64;
    while !stop.load(Ordering::Relaxed) {
        let vals: Vec<String> = batch_rows(round, w, k).into_iter().map(|(h, t, v)| format!("('{h}', '{t}', {v})")).collect();
        log.lock().unwrap().inflight = Some(k);
        let r =
            tokio::time::timeout(Duration::from_secs(10), client.execute(&format!("INSERT INTO t VALUES {}", vals.join(", ")), &[])).await;
        match r {
            Ok(Ok(n)) => {
                assert_eq!(n, BATCH as u64, "INSERT of {BATCH} rows reported {n}");
                let mut l = log.lock().unwrap();
                l.acked.push(k);
                l.inflight = None;
            }
            _ => return, // killed (or hung): this batch is unacknowledged
        }
        k += 1;
    }
}

type Model = BTreeMap<(String, String), String>;

/// Every acknowledged row exactly once; an unacknowledged batch all or nothing;
/// nothing else. Adds what is now known to be stored to `model`.
async fn verify(c: &Client, model: &mut Model, round: usize, logs: &[Arc<Mutex<WriterLog>>]) {
    let mut actual: HashMap<(String, String), Vec<String>> = HashMap::new();
    for r in rows(c, "SELECT host, ts, v FROM t").await {
        let [h, t, v]: [Option<String>; 3] = r.try_into().unwrap();
        actual.entry((h.unwrap(), t.unwrap())).or_default().push(v.unwrap());
    }
    let dups: Vec<_> = actual.iter().filter(|(_, v)| v.len() > 1).take(5).collect();
    assert!(dups.is_empty(), "round {round}: duplicated rows: {dups:?}");

    let mut certain = model.clone();
    let mut maybe: Vec<Vec<(String, String, String)>> = Vec::new();
    for (w, log) in logs.iter().enumerate() {
        let l = log.lock().unwrap();
        for &k in &l.acked {
            for (h, t, v) in batch_rows(round, w, k) {
                certain.insert((h, t), v);
            }
        }
        if let Some(k) = l.inflight {
            maybe.push(batch_rows(round, w, k));
        }
    }
    for (key, v) in &certain {
        match actual.get(key) {
            None => panic!("round {round}: acknowledged row {key:?} lost ({} rows stored, {} expected)", actual.len(), certain.len()),
            Some(got) => assert_eq!(&got[0], v, "round {round}: row {key:?} has the wrong value"),
        }
    }
    let mut extra = actual.len() - certain.len();
    for batch in maybe {
        let present = batch.iter().filter(|(h, t, _)| actual.contains_key(&(h.clone(), t.clone()))).count();
        assert!(present == 0 || present == batch.len(), "round {round}: a batch was stored partially ({present} of {} rows)", batch.len());
        if present > 0 {
            for (h, t, v) in batch {
                assert_eq!(actual[&(h.clone(), t.clone())][0], v);
                certain.insert((h, t), v);
            }
            extra -= present;
        }
    }
    assert_eq!(extra, 0, "round {round}: {extra} rows that no writer sent");
    *model = certain;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_ingest_kill9_restart_loop() {
    let data = tempfile::tempdir().unwrap();
    let mut s = match common::external_url() {
        Some(_) => TestServer::start().unwrap(),
        None => TestServer::spawn(data.path()).unwrap(),
    };
    let external = s.is_external();
    {
        let c = fresh_db(&s, "restart_kill").await;
        create_table(&s, &c).await;
    }
    let mut model = Model::new();
    for round in 0..ROUNDS {
        let stop = Arc::new(AtomicBool::new(false));
        let logs: Vec<Arc<Mutex<WriterLog>>> = (0..WRITERS).map(|_| Arc::default()).collect();
        let mut tasks = Vec::new();
        for (w, log) in logs.iter().enumerate() {
            let client = s.connect(Some("restart_kill")).await.unwrap();
            tasks.push(tokio::spawn(writer(client, round, w, stop.clone(), log.clone())));
        }
        tokio::time::sleep(Duration::from_millis(300 + 150 * round as u64)).await;
        if external {
            stop.store(true, Ordering::Relaxed);
        } else {
            s.kill9();
        }
        for t in tasks {
            t.await.expect("writer panicked");
        }
        let acked: usize = logs.iter().map(|l| l.lock().unwrap().acked.len()).sum();
        assert!(acked > 0, "round {round}: no batch was acknowledged before the kill");
        if !external {
            s = TestServer::spawn(data.path()).expect("restart after kill -9");
        }
        let c = s.connect(Some("restart_kill")).await.unwrap_or_else(|e| panic!("connect after restart: {e}\n{}", s.log_tail()));
        verify(&c, &mut model, round, &logs).await;
        eprintln!("round {round}: {acked} batches acknowledged, {} rows in the model", model.len());
    }
}

/// Sequences (issue 15): sessions draw from one sequence and a SERIAL
/// column at once; `kill -9` mid-way; after the restart no value handed out
/// (acknowledged) before the kill comes again, and the values are distinct.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequences_never_repeat_after_kill9() {
    const SESSIONS: usize = 4;
    let data = tempfile::tempdir().unwrap();
    let mut s = match common::external_url() {
        Some(_) => TestServer::start().unwrap(),
        None => TestServer::spawn(data.path()).unwrap(),
    };
    let external = s.is_external();
    {
        let c = fresh_db(&s, "restart_seq").await;
        c.batch_execute("DROP TABLE IF EXISTS ser; DROP SEQUENCE IF EXISTS sq; CREATE SEQUENCE sq; CREATE TABLE ser (id bigserial, w int)")
            .await
            .unwrap();
    }
    let mut seen: Vec<i64> = Vec::new();
    let mut serial_seen: Vec<i64> = Vec::new();
    for round in 0..3 {
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for w in 0..SESSIONS {
            let client = s.connect(Some("restart_seq")).await.unwrap();
            let stop = stop.clone();
            tasks.push(tokio::spawn(async move {
                let (mut vals, mut ids) = (Vec::new(), Vec::new());
                while !stop.load(Ordering::Relaxed) {
                    match client.simple_query("SELECT nextval('sq')").await {
                        Ok(m) => vals.extend(m.iter().filter_map(|m| match m {
                            SimpleQueryMessage::Row(r) => r.get(0).and_then(|v| v.parse::<i64>().ok()),
                            _ => None,
                        })),
                        Err(_) => break,
                    }
                    match client.simple_query(&format!("INSERT INTO ser (w) VALUES ({w}) RETURNING id")).await {
                        Ok(m) => ids.extend(m.iter().filter_map(|m| match m {
                            SimpleQueryMessage::Row(r) => r.get(0).and_then(|v| v.parse::<i64>().ok()),
                            _ => None,
                        })),
                        Err(_) => break,
                    }
                }
                (vals, ids)
            }));
        }
        tokio::time::sleep(Duration::from_millis(400)).await;
        if external {
            stop.store(true, Ordering::Relaxed);
        } else {
            s.kill9();
        }
        let mut round_vals = 0;
        for t in tasks {
            let (vals, ids) = t.await.expect("session panicked");
            round_vals += vals.len();
            seen.extend(vals);
            serial_seen.extend(ids);
        }
        assert!(round_vals > 0, "round {round}: no nextval answered before the kill");
        if !external {
            s = TestServer::spawn(data.path()).expect("restart after kill -9");
        }
        for (what, v) in [("nextval", &mut seen), ("serial", &mut serial_seen)] {
            let n = v.len();
            v.sort_unstable();
            v.dedup();
            assert_eq!(v.len(), n, "round {round}: {what} handed out a value twice");
        }
        let c = s.connect(Some("restart_seq")).await.unwrap_or_else(|e| panic!("connect after restart: {e}\n{}", s.log_tail()));
        let next: i64 = rows(&c, "SELECT nextval('sq')").await[0][0].as_deref().unwrap().parse().unwrap();
        let max = *seen.iter().max().unwrap();
        assert!(next > max, "round {round}: nextval gave {next} after {max} had been handed out");
        seen.push(next);
        if let Some(&max_id) = serial_seen.iter().max() {
            let id: i64 = rows(&c, "INSERT INTO ser (w) VALUES (-1) RETURNING id").await[0][0].as_deref().unwrap().parse().unwrap();
            assert!(id > max_id, "round {round}: SERIAL gave {id} after {max_id}");
            serial_seen.push(id);
        }
        eprintln!("round {round}: {round_vals} nextvals, next after restart {next}");
    }
}

/// A view printed again after a column rename under it (`sql/alter_table.rs`,
/// `reprinted`) keeps its new SQL and definition across a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn view_rewritten_by_column_rename_survives_restart() {
    if common::external_url().is_some() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let mut s = TestServer::spawn(data.path()).unwrap();
    let c = fresh_db(&s, "restart_view").await;
    c.batch_execute(
        "CREATE TABLE a (x int, k int); CREATE TABLE b (k int, y int); \
         CREATE VIEW v AS SELECT * FROM a JOIN b USING (k); \
         INSERT INTO a VALUES (1, 2); INSERT INTO b VALUES (2, 3); \
         ALTER TABLE b RENAME k TO kk; ALTER TABLE a RENAME x TO xx",
    )
    .await
    .unwrap();
    drop(c);
    let definition = " SELECT a.k,\n    a.xx AS x,\n    b.y\n   FROM a\n     JOIN b b(k, y) USING (k);";
    for _ in 0..2 {
        restart(&mut s, data.path());
        let c = s.connect(Some("restart_view")).await.unwrap();
        assert_eq!(rows(&c, "SELECT pg_get_viewdef('v', true)").await, vec![vec![Some(definition.to_string())]]);
        assert_eq!(rows(&c, "SELECT k, x, y FROM v").await, vec![vec![Some("2".into()), Some("1".into()), Some("3".into())]]);
    }
}
