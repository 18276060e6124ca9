//! Transaction commit tests: one unit across regions, the held record
//! decides nothing until the commit record, replay skips transactions
//! without one, ids are not reused, listeners hear one change.

use std::sync::Arc;

use parking_lot::Mutex;

use arrow::array::{AsArray, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray, UInt64Array};
use arrow::datatypes::Int64Type;

use super::*;
use crate::storage::*;

/// The region tests' table, not append-only, no TTL.
fn desc() -> RegionDescriptor {
    crate::storage::region::tests::desc(false, None)
}

fn engine(dir: &std::path::Path, fsync: bool) -> StorageEngine {
    let tuning = StorageTuning { background_interval_ms: 0, ..Default::default() };
    StorageEngine::open_tuned(dir, StorageConfig { wal_fsync: fsync, ..Default::default() }, tuning).unwrap()
}

/// New rows for a transaction: user columns plus temporary row ids.
fn puts(r: &Region, rows: &[(&str, i64, i64)]) -> RecordBatch {
    let n = rows.len() as u64;
    RecordBatch::try_new(
        r.stored_schema(),
        vec![
            Arc::new(StringArray::from_iter_values(rows.iter().map(|x| x.0))),
            Arc::new(TimestampMicrosecondArray::from_iter_values(rows.iter().map(|x| x.1)).with_timezone("+00:00")),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|x| x.2))),
            Arc::new(UInt64Array::from_iter_values(TEMP_ROWID_BASE..TEMP_ROWID_BASE + n)),
        ],
    )
    .unwrap()
}

fn values(r: &Region) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for b in r.scan(&ScanRequest::default()).unwrap() {
        let h = b.column(0).as_string::<i32>();
        let v = b.column(2).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            out.push((h.value(i).to_string(), v.value(i)));
        }
    }
    out.sort();
    out
}

fn writes(r: &Region, rows: &[(&str, i64, i64)]) -> RegionWrites {
    RegionWrites { puts: vec![puts(r, rows)], ..Default::default() }
}

#[derive(Default)]
struct Listener {
    commits: Mutex<Vec<usize>>,
}

impl WriteListener for Listener {
    fn on_write(&self, _: &WriteNotice) {
        self.commits.lock().push(1);
    }
    fn on_commit(&self, notices: &[WriteNotice]) {
        self.commits.lock().push(notices.len());
    }
}

#[test]
fn multi_region_commit_is_one_unit_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = engine(dir.path(), true);
        let l = Arc::new(Listener::default());
        e.subscribe(l.clone());
        let (a, b) = (e.open_region(region_id(1, 0), desc()).unwrap(), e.open_region(region_id(2, 0), desc()).unwrap());
        e.commit(vec![(a.clone(), writes(&a, &[("x", 1, 1), ("y", 2, 2)])), (b.clone(), writes(&b, &[("z", 3, 3)]))]).unwrap();
        assert_eq!(values(&a), vec![("x".into(), 1), ("y".into(), 2)]);
        assert_eq!(values(&b), vec![("z".into(), 3)]);
        // One change for the listener, with both regions' notices.
        assert_eq!(*l.commits.lock(), vec![2]);
        // Tombstones at seq - 1, rows at seq: a replaced identity keeps the new row.
        let old = a.scan(&ScanRequest { with_rowid: true, ..Default::default() }).unwrap();
        let x = arrow::compute::filter_record_batch(
            &old[0],
            &old[0].column(0).as_string::<i32>().iter().map(|h| Some(h == Some("x"))).collect(),
        )
        .unwrap();
        e.commit(vec![(a.clone(), RegionWrites { deletes: vec![x], puts: vec![puts(&a, &[("x", 1, 10)])], ..Default::default() })])
            .unwrap();
        assert_eq!(values(&a), vec![("x".into(), 10), ("y".into(), 2)]);
    }
    let e = engine(dir.path(), true);
    let (a, b) = (e.open_region(region_id(1, 0), desc()).unwrap(), e.open_region(region_id(2, 0), desc()).unwrap());
    assert_eq!(values(&a), vec![("x".into(), 10), ("y".into(), 2)]);
    assert_eq!(values(&b), vec![("z".into(), 3)]);
}

#[test]
fn held_records_without_a_commit_record_are_skipped_at_replay() {
    let dir = tempfile::tempdir().unwrap();
    let txn;
    {
        let e = engine(dir.path(), true);
        let (a, b) = (e.open_region(region_id(1, 0), desc()).unwrap(), e.open_region(region_id(2, 0), desc()).unwrap());
        a.write(&RecordBatch::try_new(desc().schema, puts(&a, &[("base", 0, 0)]).columns()[..3].to_vec()).unwrap()).unwrap();
        // Step 2 of the protocol without step 3: durable, held, undecided.
        txn = e.shared.txns.next_id().unwrap();
        let sa = a.append_txn(txn, &writes(&a, &[("x", 1, 1)])).unwrap();
        let sb = b.append_txn(txn, &writes(&b, &[("z", 3, 3)])).unwrap();
        assert_eq!(values(&a), vec![("base".into(), 0)], "a held record is not visible");
        assert!(a.last_seq() < sa && b.last_seq() < sb);
        // The process dies here (the engine is dropped without a decision).
    }
    let e = engine(dir.path(), true);
    let (a, b) = (e.open_region(region_id(1, 0), desc()).unwrap(), e.open_region(region_id(2, 0), desc()).unwrap());
    assert_eq!(values(&a), vec![("base".into(), 0)]);
    assert!(values(&b).is_empty());
    // Ids are never handed out again after a restart.
    let next = e.shared.txns.next_id().unwrap();
    assert!(next > txn, "transaction id {next} reused (had {txn})");
    // Later writes to the regions work and survive.
    e.commit(vec![(a.clone(), writes(&a, &[("x", 1, 5)])), (b.clone(), writes(&b, &[("z", 3, 6)]))]).unwrap();
    drop((a, b));
    drop(e);
    let e = engine(dir.path(), true);
    let (a, b) = (e.open_region(region_id(1, 0), desc()).unwrap(), e.open_region(region_id(2, 0), desc()).unwrap());
    assert_eq!(values(&a), vec![("base".into(), 0), ("x".into(), 5)]);
    assert_eq!(values(&b), vec![("z".into(), 6)]);
}

#[test]
fn writers_behind_a_held_record_wait_for_its_decision() {
    let dir = tempfile::tempdir().unwrap();
    let e = Arc::new(engine(dir.path(), false));
    let a = e.open_region(region_id(1, 0), desc()).unwrap();
    let txn = e.shared.txns.next_id().unwrap();
    let seq = a.append_txn(txn, &writes(&a, &[("x", 1, 1)])).unwrap();
    let a2 = a.clone();
    let writer = std::thread::spawn(move || {
        let b = RecordBatch::try_new(desc().schema, puts(&a2, &[("y", 2, 2)]).columns()[..3].to_vec()).unwrap();
        a2.write(&b).unwrap()
    });
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(!writer.is_finished(), "a later write was published before the held transaction was decided");
    assert!(values(&a).is_empty());
    {
        let _g = e.shared.gate.write();
        a.decide_txn(seq, false);
    }
    let wseq = writer.join().unwrap();
    assert!(wseq > seq);
    assert_eq!(values(&a), vec![("y".into(), 2)], "an aborted transaction publishes nothing");
}

#[test]
fn overlay_reads_a_transactions_own_writes_over_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path(), false);
    let a = e.open_region(region_id(1, 0), desc()).unwrap();
    let base = RecordBatch::try_new(desc().schema, puts(&a, &[("x", 1, 1), ("y", 2, 2)]).columns()[..3].to_vec()).unwrap();
    a.write(&base).unwrap();
    let snap = e.snapshot_source().take();
    a.write(&RecordBatch::try_new(desc().schema, puts(&a, &[("late", 9, 9)]).columns()[..3].to_vec()).unwrap()).unwrap();
    // Own writes: replace x, add w; the late row is after the snapshot.
    let view = ReadView::new(e.snapshot_source(), Some(snap), {
        let own = Arc::new(writes(&a, &[("x", 1, 100), ("w", 0, 7)]));
        let id = a.id;
        Some(Box::new(move || [(id, own.clone())].into_iter().collect()))
    });
    let mut req = ScanRequest::default();
    view.apply(a.id, &mut req);
    let mut got: Vec<(String, i64)> = Vec::new();
    for b in a.scan(&req).unwrap() {
        for i in 0..b.num_rows() {
            got.push((b.column(0).as_string::<i32>().value(i).to_string(), b.column(2).as_primitive::<Int64Type>().value(i)));
        }
    }
    got.sort();
    assert_eq!(got, vec![("w".into(), 7), ("x".into(), 100), ("y".into(), 2)]);
    assert_eq!(values(&a).len(), 3, "nothing of the overlay reached the region");
    assert!(values(&a).iter().all(|(h, _)| h != "w"));
}

/// An engine whose bulk loads stage files after a few rows.
fn small_engine(dir: &std::path::Path) -> StorageEngine {
    let tuning = StorageTuning { background_interval_ms: 0, ..Default::default() };
    StorageEngine::open_tuned(dir, StorageConfig { wal_fsync: true, memtable_bytes_max: 16 << 10 }, tuning).unwrap()
}

/// Rows `i in lo..hi` as (host, ts, value): 37 hosts, so later batches
/// overwrite identities of earlier ones (value = i + add).
fn load_rows(r: &Region, lo: usize, hi: usize, add: i64) -> RecordBatch {
    let rows: Vec<(String, i64, i64)> = (lo..hi).map(|i| (format!("h{}", i % 37), (i % 200) as i64, i as i64 + add)).collect();
    let refs: Vec<(&str, i64, i64)> = rows.iter().map(|(h, t, v)| (h.as_str(), *t, *v)).collect();
    puts(r, &refs)
}

/// The expected newest value per identity of `load_rows` over `lo..hi`.
fn expected(lo: usize, hi: usize, add: i64) -> Vec<(String, i64)> {
    let mut m = std::collections::BTreeMap::new();
    for i in lo..hi {
        m.insert((format!("h{}", i % 37), (i % 200) as i64), i as i64 + add);
    }
    let mut out: Vec<(String, i64)> = m.into_iter().map(|((h, _), v)| (h, v)).collect();
    out.sort();
    out
}

fn sst_files(dir: &std::path::Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            n += sst_files(&p);
        } else if p.extension().is_some_and(|x| x == "parquet") {
            n += 1;
        }
    }
    n
}

/// A load bigger than its memory bound stages SSTs: nothing is visible
/// until the commit, then all of it (later rows winning over earlier ones
/// with the same identity, across files and records), listed in the
/// manifest, and the same after a reopen; later writers waited behind it.
#[test]
fn bulk_load_stages_files_and_commits_as_one() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = small_engine(dir.path());
        let l = Arc::new(Listener::default());
        e.subscribe(l.clone());
        let a = e.open_region(region_id(1, 0), desc()).unwrap();
        let b = e.open_region(region_id(2, 0), desc()).unwrap();
        a.write(&RecordBatch::try_new(desc().schema, puts(&a, &[("base", 0, 0)]).columns()[..3].to_vec()).unwrap()).unwrap();
        let mut bulk = e.begin_bulk().unwrap();
        for k in 0..30 {
            bulk.append(&a, load_rows(&a, k * 100, k * 100 + 100, 0)).unwrap();
            bulk.append(&b, load_rows(&b, k * 50, k * 50 + 50, 1_000_000)).unwrap();
        }
        bulk.settle().unwrap();
        assert!(bulk.staged_files() >= 2, "the load stayed in memory: {bulk:?}");
        assert!(bulk.held_bytes <= 8 << 10, "{} bytes held", bulk.held_bytes);
        assert_eq!(values(&a), vec![("base".into(), 0)], "a load is invisible before its commit");
        assert!(values(&b).is_empty());
        let a2 = a.clone();
        let writer = std::thread::spawn(move || {
            a2.write(&RecordBatch::try_new(desc().schema, puts(&a2, &[("late", 7, 7)]).columns()[..3].to_vec()).unwrap()).unwrap()
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!writer.is_finished(), "a write was published ahead of the load's held sequences");
        bulk.commit().unwrap();
        writer.join().unwrap();
        let mut want_a = expected(0, 3000, 0);
        want_a.push(("base".into(), 0));
        want_a.push(("late".into(), 7));
        want_a.sort();
        assert_eq!(values(&a), want_a);
        assert_eq!(values(&b), expected(0, 1500, 1_000_000));
        // Committed files are in the manifest proper, nothing staged.
        let (staged, unlisted, files) = a.bulk_state();
        assert!(staged == 0 && unlisted == 0 && files >= 2, "{:?}", a.bulk_state());
        let commits = l.commits.lock().clone();
        assert_eq!(commits.iter().filter(|&&n| n > 1).count(), 1, "one change for the load: {commits:?}");
    }
    let e = small_engine(dir.path());
    let a = e.open_region(region_id(1, 0), desc()).unwrap();
    let b = e.open_region(region_id(2, 0), desc()).unwrap();
    assert_eq!(values(&a).len(), expected(0, 3000, 0).len() + 2);
    assert_eq!(values(&b), expected(0, 1500, 1_000_000));
    let before = values(&a);
    assert!(a.compact().unwrap() > 0);
    assert_eq!(values(&a), before);
}

/// A time-ordered load (37 hosts a tick, batches that end mid-tick) is
/// staged in files cut at tick boundaries: their time ranges are disjoint,
/// so a scan merges one file at a time. Every row is there after the
/// commit, and a tick's rows all land in one file.
#[test]
fn bulk_load_cuts_staged_files_at_time_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let e = small_engine(dir.path());
    let a = e.open_region(region_id(1, 0), desc()).unwrap();
    let rows: Vec<(String, i64, i64)> = (0..4000).map(|i| (format!("h{}", i % 37), (i / 37) as i64, i as i64)).collect();
    let mut bulk = e.begin_bulk().unwrap();
    for chunk in rows.chunks(70) {
        let refs: Vec<(&str, i64, i64)> = chunk.iter().map(|(h, t, v)| (h.as_str(), *t, *v)).collect();
        bulk.append(&a, puts(&a, &refs)).unwrap();
    }
    bulk.settle().unwrap();
    let files: Vec<(i64, i64)> = bulk.staged.iter().flat_map(|(_, f)| f.iter().map(|m| m.time_range.unwrap())).collect();
    assert!(files.len() >= 3, "{bulk:?}");
    let mut sorted = files.clone();
    sorted.sort();
    for w in sorted.windows(2) {
        assert!(w[0].1 < w[1].0, "staged files overlap: {files:?}");
    }
    bulk.commit().unwrap();
    let mut want: Vec<(String, i64)> = rows.iter().map(|(h, _, v)| (h.clone(), *v)).collect();
    want.sort();
    assert_eq!(values(&a), want);
}

/// The process dies between the load's steps. Files named in the
/// manifest without a commit record are deleted at open and nothing is
/// visible; with the commit record every row is there (installed and
/// listed by a flush at open); an aborted load leaves no file.
#[test]
fn bulk_load_survives_a_crash_only_with_its_commit_record() {
    for commit_record in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        {
            let e = small_engine(dir.path());
            let a = e.open_region(region_id(1, 0), desc()).unwrap();
            let b = e.open_region(region_id(2, 0), desc()).unwrap();
            a.write(&RecordBatch::try_new(desc().schema, puts(&a, &[("base", 0, 0)]).columns()[..3].to_vec()).unwrap()).unwrap();
            let mut bulk = e.begin_bulk().unwrap();
            for k in 0..20 {
                bulk.append(&a, load_rows(&a, k * 100, k * 100 + 100, 0)).unwrap();
                bulk.append(&b, load_rows(&b, k * 100, k * 100 + 100, 5)).unwrap();
            }
            // Steps 1 and 2 (and 3) of the commit, then the process stops.
            while !bulk.buffers.is_empty() {
                bulk.stage(0, false).unwrap();
            }
            bulk.settle().unwrap();
            for (r, seq) in &bulk.held {
                r.sync_through(*seq).unwrap();
            }
            for (r, files) in &bulk.staged {
                r.prepare_staged(bulk.txn, files).unwrap();
            }
            assert!(bulk.staged_files() >= 2);
            if commit_record {
                e.shared.txns.log_commit(bulk.txn).unwrap();
            }
            bulk.done = true;
        }
        let e = small_engine(dir.path());
        let a = e.open_region(region_id(1, 0), desc()).unwrap();
        let b = e.open_region(region_id(2, 0), desc()).unwrap();
        assert_eq!((a.bulk_state().0, b.bulk_state().0), (0, 0));
        if commit_record {
            assert_eq!(values(&a).len(), expected(0, 2000, 0).len() + 1);
            assert_eq!(values(&b), expected(0, 2000, 5));
            assert_eq!(a.bulk_state().1, 0, "open lists the installed files");
            // Writes after the installed load get later sequences.
            b.write(&RecordBatch::try_new(desc().schema, puts(&b, &[("h1", 1, -1)]).columns()[..3].to_vec()).unwrap()).unwrap();
            assert!(values(&b).contains(&("h1".into(), -1)));
        } else {
            assert_eq!(values(&a), vec![("base".into(), 0)]);
            assert!(values(&b).is_empty());
            assert_eq!(sst_files(dir.path()), 0, "the uncommitted load's files are deleted");
        }
    }
    // Aborted (dropped) mid-load: no file stays, the regions take writes.
    let dir = tempfile::tempdir().unwrap();
    let e = small_engine(dir.path());
    let a = e.open_region(region_id(1, 0), desc()).unwrap();
    let mut bulk = e.begin_bulk().unwrap();
    for k in 0..20 {
        bulk.append(&a, load_rows(&a, k * 100, k * 100 + 100, 0)).unwrap();
    }
    bulk.settle().unwrap();
    assert!(bulk.staged_files() >= 1);
    drop(bulk);
    a.write(&RecordBatch::try_new(desc().schema, puts(&a, &[("x", 1, 1)]).columns()[..3].to_vec()).unwrap()).unwrap();
    assert_eq!(values(&a), vec![("x".into(), 1)]);
    assert_eq!(sst_files(dir.path()), 0);
}

/// Files are written on a thread of their own while the load goes on:
/// a load dropped while one is being written waits for it and deletes
/// it, leaves nothing visible, and the region takes writes again.
#[test]
fn bulk_load_dropped_while_a_file_is_written_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let e = small_engine(dir.path());
    let a = e.open_region(region_id(1, 0), desc()).unwrap();
    let mut bulk = e.begin_bulk().unwrap();
    let mut k = 0;
    while bulk.writing.is_none() {
        bulk.append(&a, load_rows(&a, k * 100, k * 100 + 100, 0)).unwrap();
        k += 1;
        assert!(k < 100, "no file was started: {bulk:?}");
    }
    drop(bulk);
    assert!(values(&a).is_empty());
    assert_eq!(sst_files(dir.path()), 0, "the file written for the dropped load is deleted");
    a.write(&RecordBatch::try_new(desc().schema, puts(&a, &[("x", 1, 1)]).columns()[..3].to_vec()).unwrap()).unwrap();
    assert_eq!(values(&a), vec![("x".into(), 1)]);
}

#[test]
fn annexes_come_back_after_a_crash_and_wal_holds_keep_them_past_flushes() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = engine(dir.path(), true);
        let (a, b) = (e.open_region(region_id(1, 0), desc()).unwrap(), e.open_region(region_id(2, 0), desc()).unwrap());
        // One region: the record commits itself; an annex without rows too.
        let mut w = writes(&a, &[("x", 1, 1)]);
        w.annex = b"first".to_vec();
        a.hold_wal("me", a.last_seq() + 1);
        e.commit(vec![(a.clone(), w)]).unwrap();
        e.commit(vec![(a.clone(), RegionWrites { annex: b"second".to_vec(), ..Default::default() })]).unwrap();
        // Several regions: the annex rides on one part of the transaction.
        let mut w = writes(&a, &[("y", 2, 2)]);
        w.annex = b"third".to_vec();
        e.commit(vec![(a.clone(), w), (b.clone(), writes(&b, &[("z", 3, 3)]))]).unwrap();
        // The flush keeps the held segments (the rows go to an SST).
        a.flush().unwrap();
        assert_eq!(values(&a), vec![("x".into(), 1), ("y".into(), 2)]);
        assert!(a.take_annexes().is_empty(), "a new region recovered nothing");
    }
    let e = engine(dir.path(), true);
    let a = e.open_region(region_id(1, 0), desc()).unwrap();
    let got: Vec<Vec<u8>> = a.take_annexes().into_iter().map(|(_, x)| x).collect();
    assert_eq!(got, vec![b"first".to_vec(), b"second".to_vec(), b"third".to_vec()]);
    assert!(a.take_annexes().is_empty(), "annexes are handed out once");
    assert_eq!(values(&a), vec![("x".into(), 1), ("y".into(), 2)]);
    // Released, the next flush deletes the segments, and with them the annexes.
    a.release_wal(RECOVERED_ANNEXES);
    a.write(&RecordBatch::try_new(desc().schema, puts(&a, &[("w", 4, 4)]).columns()[..3].to_vec()).unwrap()).unwrap();
    a.flush().unwrap();
    drop(a);
    drop(e);
    let e = engine(dir.path(), true);
    let a = e.open_region(region_id(1, 0), desc()).unwrap();
    assert!(a.take_annexes().is_empty());
    assert_eq!(values(&a), vec![("w".into(), 4), ("x".into(), 1), ("y".into(), 2)]);
}
