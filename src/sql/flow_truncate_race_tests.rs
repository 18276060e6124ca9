//! A source of a flow replaced while the flow evaluates (the flake of
//! sql-tests/flow/truncate.slt:150 in sessions 10, 11 and 14: the sink kept
//! rows of the truncated table). An evaluation planned its query, then a
//! TRUNCATE gave the source new regions, then the evaluation read the new
//! regions' sequences as its progress while its plan recomputed the sink
//! from the old rows: the sink held rows no source had, and later runs saw
//! nothing to redo. The failpoint hook `flow_planned:<flow>` acts at
//! exactly that point.

use std::sync::Arc;

use arrow::array::Array;

use super::{Engine, QueryResult, Session};

fn engine(dir: &std::path::Path) -> Arc<Engine> {
    let config = crate::config::Config { data_dir: dir.to_string_lossy().into_owned(), ..Default::default() };
    Engine::open(config).expect("open engine")
}

fn session(e: &Arc<Engine>) -> Session {
    Session::new(e.clone(), "public", &e.config.superuser)
}

fn exec(s: &mut Session, sql: &str) -> Vec<QueryResult> {
    let (r, err) = s.execute_sql(sql);
    if let Some(e) = err {
        panic!("{sql}: {}", e.message);
    }
    r
}

/// The first column of a one-row text result.
fn text(s: &mut Session, sql: &str) -> String {
    for r in exec(s, sql) {
        if let QueryResult::Rows { batches, .. } = r {
            let b = batches.iter().find(|b| b.num_rows() > 0).expect("a row");
            let col = arrow::compute::cast(b.column(0), &arrow::datatypes::DataType::Utf8).expect("cast to text");
            let col = col.as_any().downcast_ref::<arrow::array::StringArray>().expect("text");
            return if col.is_valid(0) { col.value(0).to_string() } else { "NULL".into() };
        }
    }
    panic!("{sql}: no rows");
}

/// An engine with `table` (rows a, b), a map flow over it flushed, and a
/// row c written since.
fn setup(table: &str, flow: &str) -> (tempfile::TempDir, Arc<Engine>, Session) {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = engine(dir.path());
    let mut s = session(&e);
    exec(&mut s, &format!("CREATE TABLE {table} (host STRING, ts TIMESTAMP TIME INDEX, v BIGINT, PRIMARY KEY (host)) WITH (regions = 2)"));
    exec(&mut s, &format!("INSERT INTO {table} VALUES ('a', '2024-01-01 00:00:10', 1), ('b', '2024-01-01 00:01:10', 2)"));
    exec(&mut s, &format!("CREATE FLOW {flow} SINK TO {flow}_out AS SELECT host, ts, v * 2 AS v2 FROM {table}"));
    exec(&mut s, &format!("ADMIN FLUSH_FLOW('{flow}')"));
    assert_eq!(text(&mut s, &sink_rows(flow)), "a=2,b=4");
    exec(&mut s, &format!("INSERT INTO {table} VALUES ('c', '2024-01-01 00:02:10', 3)"));
    (dir, e, s)
}

fn sink_rows(flow: &str) -> String {
    format!("SELECT coalesce(string_agg(host || '=' || v2::text, ',' ORDER BY host), '') FROM {flow}_out")
}

/// The source dropped and created again (new table id, new regions)
/// between planning and reading: the evaluation plans again and reads the
/// new table. Without that, the sink held a=2,b=4,c=6 after the flush.
#[test]
fn a_source_replaced_while_a_flow_plans_leaves_no_old_rows_in_the_sink() {
    let (_dir, e, mut s) = setup("race_src", "race_map");
    // The next evaluation (this flush, or a scheduled run just before it)
    // plans, then the source is replaced and written before it reads.
    let other = e.clone();
    crate::failpoint::set_hook("flow_planned:race_map", move || {
        let mut s2 = session(&other);
        exec(&mut s2, "DROP TABLE race_src");
        exec(&mut s2, "CREATE TABLE race_src (host STRING, ts TIMESTAMP TIME INDEX, v BIGINT, PRIMARY KEY (host)) WITH (regions = 2)");
        exec(&mut s2, "INSERT INTO race_src VALUES ('z', '2024-01-01 00:09:10', 26)");
    });
    exec(&mut s, "ADMIN FLUSH_FLOW('race_map')");
    assert_eq!(text(&mut s, "SELECT count(*) FROM race_src WHERE host = 'z'"), "1", "the hook ran");
    // After the flush the sink is the query over the source as it is.
    assert_eq!(text(&mut s, &sink_rows("race_map")), "z=52");
    exec(&mut s, "DELETE FROM race_src");
    exec(&mut s, "ADMIN FLUSH_FLOW('race_map')");
    assert_eq!(text(&mut s, &sink_rows("race_map")), "");
    e.flows.stop();
}

/// A TRUNCATE that arrives while a flow over the table evaluates waits for
/// the evaluation to end (which then wrote the sink as of before the
/// TRUNCATE), and the evaluation after it sees the new table.
#[test]
fn truncate_waits_for_a_running_evaluation() {
    let (_dir, e, mut s) = setup("wait_src", "wait_map");
    let (waiting_tx, waiting_rx) = std::sync::mpsc::channel::<()>();
    crate::failpoint::set_hook("flow_readers_excluded:wait_src", move || {
        let _ = waiting_tx.send(());
    });
    let truncate: Arc<parking_lot::Mutex<Option<std::thread::JoinHandle<()>>>> = Default::default();
    let (other, slot) = (e.clone(), truncate.clone());
    crate::failpoint::set_hook("flow_planned:wait_map", move || {
        // In another session while this evaluation runs: TRUNCATE, then a row.
        *slot.lock() = Some(std::thread::spawn(move || {
            let mut s2 = session(&other);
            exec(&mut s2, "TRUNCATE wait_src");
            exec(&mut s2, "INSERT INTO wait_src VALUES ('z', '2024-01-01 00:09:10', 26)");
        }));
        // The TRUNCATE reached the flows' exclusion (a guard against a
        // hang, not a delay: it arrives at once).
        waiting_rx.recv_timeout(std::time::Duration::from_secs(60)).expect("TRUNCATE asks for the flow's evaluation to end");
    });
    exec(&mut s, "ADMIN FLUSH_FLOW('wait_map')");
    let t = truncate.lock().take().expect("the hook ran");
    t.join().expect("TRUNCATE and INSERT");
    // Whichever evaluation the hook was in saw the table before the
    // TRUNCATE; the one after it sees the new table only.
    exec(&mut s, "ADMIN FLUSH_FLOW('wait_map')");
    assert_eq!(text(&mut s, &sink_rows("wait_map")), "z=52");
    e.flows.stop();
}
