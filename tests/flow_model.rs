//! Property test of flows: random inserts, late rows, overwrites, deletes,
//! TRUNCATE, table flushes and compactions, clean restarts and `kill -9`,
//! rows written into sinks by others,
//! with several flows at once (windowed aggregates with and without
//! HAVING, hop windows, a map/filter flow, a whole-query flow and a flow
//! over another flow's sink). After `ADMIN FLUSH_FLOW` every sink must equal its query run
//! directly over the source. Seeded (WEIR_FLOW_SEED), so a failure
//! replays; the seed is printed.

mod common;

use std::time::Duration;

use common::TestServer;
use tokio_postgres::Client;

/// xorshift64*: deterministic, no extra crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

async fn rows(c: &Client, sql: &str) -> Vec<String> {
    common::sorted_rows(c, sql).await
}

/// (flow, sink, sink columns compared, the query).
const FLOWS: &[(&str, &str, &str, &str)] = &[
    (
        "m_sum",
        "m_sum_out",
        "host, w, s, c",
        "SELECT host, date_bin(INTERVAL '10 seconds', ts) AS w, sum(v) AS s, count(*) AS c FROM src GROUP BY host, w",
    ),
    (
        "m_having",
        "m_having_out",
        "w, mx",
        "SELECT date_bin(INTERVAL '1 minute', ts) AS w, max(v) AS mx FROM src GROUP BY w HAVING count(*) > 3",
    ),
    (
        "m_hop",
        "m_hop_out",
        "host, w, s, c",
        "SELECT host, hop(ts, INTERVAL '10 seconds', INTERVAL '30 seconds') AS w, sum(v) AS s, count(*) AS c FROM src GROUP BY host, w",
    ),
    // Float sum / avg: merged through exact sums (quarter values, so the
    // direct query's own float additions are exact and the comparison is
    // equality).
    (
        "m_favg",
        "m_favg_out",
        "host, w, a, s",
        "SELECT host, date_bin(INTERVAL '10 seconds', ts) AS w, avg(f) AS a, sum(f) AS s FROM src GROUP BY host, w",
    ),
    ("m_map", "m_map_out", "host, ts, v2", "SELECT host, ts, v * 2 AS v2 FROM src WHERE v % 3 <> 0"),
    ("m_total", "m_total_out", "n, total", "SELECT count(*) AS n, sum(v) AS total FROM src"),
    // Nested: reads m_sum's sink, so it is flushed after m_sum.
    ("m_nested", "m_nested_out", "m, total", "SELECT date_bin(INTERVAL '1 minute', w) AS m, sum(s) AS total FROM m_sum_out GROUP BY m"),
];

async fn setup(c: &Client) {
    c.batch_execute("CREATE TABLE src (host STRING, ts TIMESTAMP TIME INDEX, v BIGINT, f DOUBLE, PRIMARY KEY (host)) WITH (regions = 2)")
        .await
        .unwrap();
    for (name, sink, _, q) in FLOWS {
        let eval = if *name == "m_total" { "EVAL INTERVAL '1 hour' " } else { "" };
        c.batch_execute(&format!("CREATE FLOW {name} SINK TO {sink} {eval}AS {q}")).await.unwrap();
    }
}

async fn check(c: &Client, round: usize) {
    for (name, _, _, _) in FLOWS {
        c.batch_execute(&format!("ADMIN FLUSH_FLOW('{name}')")).await.unwrap();
    }
    for (name, sink, cols, q) in FLOWS {
        let got = rows(c, &format!("SELECT {cols} FROM {sink}")).await;
        let want = rows(c, &format!("SELECT {cols} FROM ({q}) AS q")).await;
        assert_eq!(got, want, "round {round}: sink of flow {name} differs from its query");
    }
}

fn ts(sec: u64) -> String {
    format!("'2024-01-01 00:00:00'::timestamp + INTERVAL '{sec} seconds'")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sinks_equal_their_queries() {
    if common::external_url().is_some() {
        eprintln!("skipped: flows are weir's");
        return;
    }
    let seed: u64 = std::env::var("WEIR_FLOW_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_f10e);
    let rounds: usize = std::env::var("WEIR_FLOW_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(14);
    eprintln!("flow_model: seed {seed}, {rounds} rounds");
    let mut rng = Rng(seed | 1);
    let data = tempfile::Builder::new().prefix("weir-flow-model").tempdir().unwrap();
    let mut server = TestServer::spawn(data.path()).unwrap();
    let mut c = server.connect(None).await.unwrap();
    setup(&c).await;
    let hosts = ["a", "b", "c", "d"];
    for round in 0..rounds {
        let ops = 3 + rng.below(5);
        for _ in 0..ops {
            match rng.below(11) {
                0..=4 => {
                    // Inserts; some late (old timestamps), some overwrite.
                    let n = 1 + rng.below(20);
                    let vals: Vec<String> = (0..n)
                        .map(|_| {
                            let h = hosts[rng.below(4) as usize];
                            let sec = rng.below(300);
                            let v = rng.below(100) as i64 - 20;
                            format!("('{h}', {}, {v}, {})", ts(sec), v as f64 / 4.0)
                        })
                        .collect();
                    // One statement per row keeps duplicates inside a statement out of the question.
                    for v in vals {
                        c.batch_execute(&format!("INSERT INTO src VALUES {v}")).await.unwrap();
                    }
                }
                5 => {
                    let h = hosts[rng.below(4) as usize];
                    let lo = rng.below(300);
                    c.batch_execute(&format!(
                        "DELETE FROM src WHERE host = '{h}' AND ts >= {} AND ts < {}",
                        ts(lo),
                        ts(lo + rng.below(60))
                    ))
                    .await
                    .unwrap();
                }
                6 => {
                    c.batch_execute(&format!("UPDATE src SET v = v + 1, f = f + 0.25 WHERE ts < {}", ts(rng.below(300)))).await.unwrap();
                }
                7 => {
                    c.batch_execute("ADMIN flush_table('src')").await.unwrap();
                }
                8 => {
                    c.batch_execute("ADMIN flush_table('src')").await.unwrap();
                    c.batch_execute("ADMIN compact_table('src')").await.unwrap();
                }
                9 if rng.below(4) == 0 => {
                    // Rows leave without retractions.
                    c.batch_execute("TRUNCATE TABLE src").await.unwrap();
                }
                10 => {
                    // Others write into incremental flows' sinks: a row of no
                    // group, an overwrite, a delete. The flows repair them.
                    let h = hosts[rng.below(4) as usize];
                    c.batch_execute(&format!(
                        "INSERT INTO m_sum_out (host, w, s, c) VALUES ('zz', {}, 1, 1); \
                         UPDATE m_sum_out SET s = s + 1000 WHERE host = '{h}'; DELETE FROM m_favg_out WHERE host = '{h}'",
                        ts(rng.below(30) * 10)
                    ))
                    .await
                    .unwrap();
                }
                _ => {
                    let (name, ..) = FLOWS[rng.below(FLOWS.len() as u64) as usize];
                    c.batch_execute(&format!("ADMIN FLUSH_FLOW('{name}')")).await.unwrap();
                }
            }
        }
        match rng.below(4) {
            0 => {
                drop(c);
                assert!(server.stop(Duration::from_secs(20)), "clean stop");
                server = TestServer::spawn(data.path()).unwrap();
                c = server.connect(None).await.unwrap();
            }
            1 => {
                drop(c);
                server.kill9();
                server = TestServer::spawn(data.path()).unwrap();
                c = server.connect(None).await.unwrap();
            }
            _ => {}
        }
        check(&c, round).await;
    }
    // The comparison was not vacuous.
    let n = rows(&c, "SELECT count(*) FROM m_sum_out").await;
    assert_ne!(n, vec!["0".to_string()], "the workload left the sink empty");
    eprintln!("flow_model: m_sum_out has {} rows", n[0]);
    // Incremental evaluation was on (issue 9): the windowed aggregate flows
    // merged deltas into partial states.
    let modes = rows(
        &c,
        "SELECT flow_name, mode, reason FROM information_schema.flow_statistics WHERE flow_name IN ('m_sum', 'm_having', 'm_nested', 'm_favg')",
    )
    .await;
    assert_eq!(modes, vec!["m_favg|incremental|NULL", "m_having|incremental|NULL", "m_nested|incremental|NULL", "m_sum|incremental|NULL"]);
    // Flushes and compactions never took the versions a checkpoint needs
    // (the flows hold them): no snapshot_expired fallback since the last
    // start (statistics live in memory).
    let expired =
        rows(&c, "SELECT flow_name, fallbacks FROM information_schema.flow_statistics WHERE fallbacks LIKE '%snapshot_expired%'").await;
    assert!(expired.is_empty(), "versions held against compaction: {expired:?}");
}

/// A backfill in several batches that crashes after its first batch
/// resumes at the next one after the restart: no window is computed twice
/// (windows_done ends at the number of windows, not more) and the sink is
/// complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_resumes_after_a_crash() {
    if common::external_url().is_some() {
        eprintln!("skipped: flows are weir's");
        return;
    }
    let data = tempfile::Builder::new().prefix("weir-flow-backfill").tempdir().unwrap();
    let mut server = TestServer::spawn(data.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    c.batch_execute("CREATE TABLE bsrc (host STRING, ts TIMESTAMP TIME INDEX, v BIGINT, PRIMARY KEY (host))").await.unwrap();
    c.batch_execute(
        "INSERT INTO bsrc SELECT 'h' || (g % 5), '2024-01-01 00:00:00'::timestamp + g * INTERVAL '1 minute', g FROM generate_series(0, 999) AS g",
    )
    .await
    .unwrap();
    drop(c);
    assert!(server.stop(Duration::from_secs(20)), "clean stop");
    // The flow's first batch (64 of 1,000 windows) commits, then the process aborts.
    let mut server = TestServer::spawn_env(data.path(), &[("WEIR_FAILPOINTS", "flow_crash_after_batch")]).unwrap();
    let c = server.connect(None).await.unwrap();
    let q = "SELECT date_bin(INTERVAL '1 minute', ts) AS m, sum(v) AS s, count(*) AS n FROM bsrc GROUP BY m";
    // Batching's multi-batch backfill (an incremental flow backfills with
    // one snapshot, committed at once).
    let _ = c.batch_execute(&format!("CREATE FLOW bf SINK TO bf_out WITH (incremental = false) AS {q}")).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while server.exited().is_none() {
        assert!(std::time::Instant::now() < deadline, "the failpoint did not fire\n{}", server.log_tail());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(c);
    let server = TestServer::spawn(data.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    c.batch_execute("ADMIN FLUSH_FLOW('bf')").await.unwrap();
    let progress =
        rows(&c, "SELECT windows_done, backfill_done, backfill_total FROM information_schema.flows WHERE flow_name = 'bf'").await;
    assert_eq!(progress, vec!["1000|1000|1000".to_string()], "the backfill resumed where it stopped");
    let got = rows(&c, "SELECT m, s, n FROM bf_out").await;
    let want = rows(&c, &format!("SELECT m, s, n FROM ({q}) AS q")).await;
    assert_eq!(got.len(), 1000);
    assert_eq!(got, want, "the sink equals its query after the resumed backfill");
}

/// TRUNCATE, and a source dropped and created again (while the server is
/// down), give the source a new table id: after the flow runs,
/// information_schema.flows names the current id, and it stays so across
/// restarts (clean and kill -9). DROP FLOW right after a run leaves no
/// flow behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_ids_follow_truncate_and_recreate_across_restarts() {
    if common::external_url().is_some() {
        eprintln!("skipped: flows are weir's");
        return;
    }
    let data = tempfile::Builder::new().prefix("weir-flow-ids").tempdir().unwrap();
    let mut server = TestServer::spawn(data.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    c.batch_execute("CREATE TABLE isrc (host STRING, ts TIMESTAMP TIME INDEX, v BIGINT, PRIMARY KEY (host))").await.unwrap();
    c.batch_execute("INSERT INTO isrc VALUES ('a', '2024-01-01 00:00:10', 1), ('b', '2024-01-01 00:01:10', 2)").await.unwrap();
    c.batch_execute("CREATE FLOW iflow SINK TO iflow_out AS SELECT host, date_bin(INTERVAL '1 minute', ts) AS m, sum(v) AS s FROM isrc GROUP BY host, m")
        .await
        .unwrap();
    let ids_current = "SELECT f.source_table_ids = '[' || (c.oid - 16384)::text || ']' FROM information_schema.flows f, pg_class c \
                       WHERE f.flow_name = 'iflow' AND c.relname = 'isrc'";
    let sink_equals = "SELECT (SELECT count(*) FROM iflow_out) = (SELECT count(*) FROM (SELECT host, date_bin(INTERVAL '1 minute', ts) AS m FROM isrc GROUP BY host, m) q)";
    c.batch_execute("ADMIN FLUSH_FLOW('iflow')").await.unwrap();
    assert_eq!(rows(&c, ids_current).await, vec!["t"]);
    let before = rows(&c, "SELECT source_table_ids FROM information_schema.flows WHERE flow_name = 'iflow'").await;
    c.batch_execute("TRUNCATE TABLE isrc").await.unwrap();
    c.batch_execute("INSERT INTO isrc VALUES ('c', '2024-01-01 00:02:10', 3)").await.unwrap();
    c.batch_execute("ADMIN FLUSH_FLOW('iflow')").await.unwrap();
    assert_eq!(rows(&c, ids_current).await, vec!["t"], "the id after TRUNCATE");
    assert_ne!(rows(&c, "SELECT source_table_ids FROM information_schema.flows WHERE flow_name = 'iflow'").await, before);
    assert_eq!(rows(&c, sink_equals).await, vec!["t"]);
    drop(c);
    // Clean restart: the recorded id is durable.
    assert!(server.stop(Duration::from_secs(20)), "clean stop");
    let mut server = TestServer::spawn(data.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    assert_eq!(rows(&c, ids_current).await, vec!["t"], "the id after a restart");
    // Dropped and created again, then kill -9 before the flow runs.
    c.batch_execute("DROP TABLE isrc").await.unwrap();
    c.batch_execute("CREATE TABLE isrc (host STRING, ts TIMESTAMP TIME INDEX, v BIGINT, PRIMARY KEY (host))").await.unwrap();
    c.batch_execute("INSERT INTO isrc VALUES ('d', '2024-01-01 00:03:10', 4), ('e', '2024-01-01 00:04:10', 5)").await.unwrap();
    drop(c);
    server.kill9();
    let server = TestServer::spawn(data.path()).unwrap();
    let c = server.connect(None).await.unwrap();
    c.batch_execute("ADMIN FLUSH_FLOW('iflow')").await.unwrap();
    assert_eq!(rows(&c, ids_current).await, vec!["t"], "the id of the table created again");
    assert_eq!(rows(&c, sink_equals).await, vec!["t"]);
    assert_eq!(rows(&c, "SELECT host FROM iflow_out").await, vec!["d", "e"]);
    // Writes keep the scheduler busy with the flow while it is dropped:
    // no run writes the definition back afterwards.
    c.batch_execute("INSERT INTO isrc VALUES ('f', '2024-01-01 00:05:10', 6)").await.unwrap();
    c.batch_execute("TRUNCATE TABLE isrc").await.unwrap();
    c.batch_execute("INSERT INTO isrc VALUES ('g', '2024-01-01 00:06:10', 7)").await.unwrap();
    c.batch_execute("DROP FLOW iflow").await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rows(&c, "SELECT count(*) FROM information_schema.flows WHERE flow_name = 'iflow'").await, vec!["0"]);
    c.batch_execute("CREATE FLOW iflow SINK TO iflow_out AS SELECT host, date_bin(INTERVAL '1 minute', ts) AS m, sum(v) AS s FROM isrc GROUP BY host, m")
        .await
        .unwrap();
}
