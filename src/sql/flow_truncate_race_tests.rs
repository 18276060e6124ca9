//! A TRUNCATE of a flow's source while the flow evaluates (the flake of
//! sql-tests/flow/truncate.slt:150 in sessions 10, 11 and 14: the sink kept
//! rows of the truncated table). An evaluation planned its query, then a
//! TRUNCATE gave the source new regions, then the evaluation read the new
//! regions' sequences as its progress while its plan recomputed the sink
//! from the old rows: the sink held rows no source had, and later runs saw
//! nothing to redo. The failpoint hook `flow_planned:<flow>` runs the
//! TRUNCATE at exactly that point.

use std::sync::Arc;

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

use arrow::array::Array;

#[test]
fn truncate_while_a_flow_plans_leaves_no_old_rows_in_the_sink() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = engine(dir.path());
    let mut s = session(&e);
    exec(&mut s, "CREATE TABLE race_src (host STRING, ts TIMESTAMP TIME INDEX, v BIGINT, PRIMARY KEY (host)) WITH (regions = 2)");
    exec(&mut s, "INSERT INTO race_src VALUES ('a', '2024-01-01 00:00:10', 1), ('b', '2024-01-01 00:01:10', 2)");
    exec(&mut s, "CREATE FLOW race_map SINK TO race_map_out AS SELECT host, ts, v * 2 AS v2 FROM race_src");
    exec(&mut s, "ADMIN FLUSH_FLOW('race_map')");
    let all = "SELECT coalesce(string_agg(host || '=' || v2::text, ',' ORDER BY host), '') FROM race_map_out";
    assert_eq!(text(&mut s, all), "a=2,b=4");
    exec(&mut s, "INSERT INTO race_src VALUES ('c', '2024-01-01 00:02:10', 3)");
    // The next evaluation (this flush, or a scheduled run just before it)
    // plans, then the source is truncated and written before it reads.
    let other = e.clone();
    crate::failpoint::set_hook("flow_planned:race_map", move || {
        let mut s2 = session(&other);
        exec(&mut s2, "TRUNCATE race_src");
        exec(&mut s2, "INSERT INTO race_src VALUES ('z', '2024-01-01 00:09:10', 26)");
    });
    exec(&mut s, "ADMIN FLUSH_FLOW('race_map')");
    assert_eq!(text(&mut s, "SELECT count(*) FROM race_src WHERE host = 'z'"), "1", "the hook ran");
    // After the flush the sink is the query over the source as it is.
    assert_eq!(text(&mut s, all), "z=52");
    exec(&mut s, "DELETE FROM race_src");
    exec(&mut s, "ADMIN FLUSH_FLOW('race_map')");
    assert_eq!(text(&mut s, all), "");
    e.flows.stop();
}
