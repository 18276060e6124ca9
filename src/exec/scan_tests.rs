//! `TableScanExecutor` over real regions in a temp dir (no storage mocks):
//! several regions, memtable and SST data, projections, empty regions and
//! batches cut to `max_rows`.

use std::sync::Arc;

use super::TableScanExecutor;
use crate::exec::mock::*;
use crate::exec::plan::arrow_schema;
use crate::storage::{RegionDescriptor, ScanRequest, StorageConfig, StorageEngine, StorageTuning};
use crate::types::SqlType::*;
use crate::types::Value;

fn open(dir: &std::path::Path) -> (StorageEngine, Vec<Arc<crate::storage::Region>>) {
    let tuning = StorageTuning { background_interval_ms: 0, sst_row_group_rows_max: 2, ..Default::default() };
    let engine = StorageEngine::open_tuned(dir, StorageConfig { wal_fsync: false, ..Default::default() }, tuning).unwrap();
    let cols = columns(&[("host", Text), ("ts", TimestampTz), ("v", Int8)]);
    let desc = RegionDescriptor {
        table_name: "cpu".into(),
        schema: arrow_schema(&cols),
        primary_key: vec![0],
        time_index: Some(1),
        append_mode: false,
        ttl_ms: None,
    };
    let regions = (1..=3).map(|id| engine.open_region(id, desc.clone()).unwrap()).collect();
    (engine, regions)
}

fn row(host: &str, ts: i64, v: i64) -> Vec<Value> {
    vec![txt(host), Value::Timestamp(ts), int(v)]
}

#[test]
fn scans_every_region_with_projection_and_max_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (_engine, regions) = open(dir.path());
    let cols = columns(&[("host", Text), ("ts", TimestampTz), ("v", Int8)]);
    // Region 1: flushed to an SST (row groups of 2) plus a newer memtable version.
    regions[0].write(&batch(&cols, &[row("a", 1_000_000, 1), row("a", 2_000_000, 2), row("b", 1_000_000, 3)])).unwrap();
    regions[0].flush().unwrap();
    regions[0].write(&batch(&cols, &[row("a", 2_000_000, 20)])).unwrap();
    // Region 2 stays empty; region 3 is in the memtable only.
    regions[2].write(&batch(&cols, &[row("c", 5_000_000, 5), row("d", 6_000_000, 6)])).unwrap();
    let all = || crate::exec::plan::Regions(regions.clone(), vec![]);
    for max_rows in [1, 2, 1024] {
        let mut s = TableScanExecutor::new(all().0, all().1, ScanRequest::default(), &cols);
        assert_eq!(
            sorted(run(&mut s, max_rows).unwrap()),
            rows(&[
                &["a", "1970-01-01 00:00:01", "1"],
                &["a", "1970-01-01 00:00:02", "20"],
                &["b", "1970-01-01 00:00:01", "3"],
                &["c", "1970-01-01 00:00:05", "5"],
                &["d", "1970-01-01 00:00:06", "6"],
            ]),
            "max_rows {max_rows}"
        );
    }
    // Projection (v, host) under the plan's own names.
    let out = columns(&[("value", Int8), ("h", Text)]);
    let req = ScanRequest { projection: Some(vec![2, 0]), ..Default::default() };
    let mut s = TableScanExecutor::new(all().0, all().1, req, &out);
    assert_eq!(sorted(run(&mut s, 2).unwrap()), rows(&[&["1", "a"], &["20", "a"], &["3", "b"], &["5", "c"], &["6", "d"]]));
    // Batches never exceed max_rows.
    let mut s = TableScanExecutor::new(all().0, all().1, ScanRequest::default(), &cols);
    loop {
        let r = crate::exec::BatchExecutor::next_batch(&mut s, 2).unwrap();
        assert!(r.batch.num_rows() <= 2);
        if r.is_drained {
            break;
        }
    }
}

#[test]
fn empty_regions_and_no_regions_drain_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (_engine, regions) = open(dir.path());
    let cols = columns(&[("host", Text), ("ts", TimestampTz), ("v", Int8)]);
    let mut s = TableScanExecutor::new(regions, vec![], ScanRequest::default(), &cols);
    assert!(run(&mut s, 1024).unwrap().is_empty());
    let mut s = TableScanExecutor::new(vec![], vec![], ScanRequest::default(), &cols);
    assert!(run(&mut s, 1024).unwrap().is_empty());
}
